"""Many recordings: every bag of a fleet analysed as :func:`~hod_dynamics.analysis.analyze_bag`
analyses one, on local processes or a Dask cluster, gathered into one table.

A bag is one task. A worker reads the bag (a local path, or an fsspec URL copied to its own
disk first), analyses it, writes the outputs of ``analyze-bag`` into a staging folder and
renames that folder to ``out/<bag>/`` when everything is written, with ``fleet_rows.json``
(the bag's rows of the table) inside: a folder named after a bag is always complete, and a
worker killed while writing leaves only staging debris, removed by the next run. Only the
rows (a few hundred bytes a joint) travel back. The driver gathers them into
``out/fleet.parquet``: one row per bag and joint (:data:`COLUMNS`), or one row per bag that
could not be analysed, its ``status`` the one-line error.

The engine is Dask distributed: without a client, a ``LocalCluster`` of worker processes on
this machine (its scheduler on 127.0.0.1, no dashboard); with one, the cluster it is connected
to. A worker that dies (killed, out of memory) has its tasks run again on the others by the
scheduler; a bag whose workers died too often (Dask's ``allowed-failures``) gets a row saying
so and is tried again by the next run.

A run with an ``out`` folder of an earlier run skips the bags whose folder holds rows made
with the same settings from the same file (size and modification time); ``force=True`` redoes
them. Bags that failed on their input (a corrupt file, joints missing, ...) count as done;
bags that failed for another reason (a dead worker, a network error) are tried again.
"""

import contextlib
import fnmatch
import glob
import hashlib
import json
import os
import pickle
import posixpath
import shutil
import time
import uuid
from dataclasses import dataclass, field
from typing import Optional

import numpy as np

from .errors import HodDynamicsError, InputError

TABLE = "fleet.parquet"
ROWS = "fleet_rows.json"       # in out/<bag>/, written last: the bag's outputs are complete
STAGING = ".staging"           # out/.staging/: bags being written
LOCK = ".analyze-bags.lock"    # one run at a time per output folder
BAG_SUFFIXES = (".mcap", ".db3", ".bag")
TABLE_EVERY = 30.0             # s: the driver rewrites the table at most this often during a run
FRICTION_KEYS = ("coulomb", "viscous", "offset")

#: The table's columns: (name, pyarrow type name, meaning).
COLUMNS = (
    ("bag", "string", "the bag's name: its output folder out/<bag>/"),
    ("path", "string", "the bag as given (path or URL)"),
    ("robot", "string", "the robot: the model's name, or the name the --urdf mapping gives"),
    ("joint", "string", "the model joint (null in the row of a bag that could not be analysed)"),
    ("start", "timestamp[ns, UTC]", "time of the first sample (the recording's clock, as UTC)"),
    ("duration_s", "float64", "first to last sample, s"),
    ("samples", "int64", "samples analysed"),
    ("residual_rms", "float64", "RMS of model tau (with friction when used) - measured effort, N m or N"),
    ("rigid_residual_rms", "float64", "the same for the rigid-body model alone"),
    ("effort_rms", "float64", "RMS of the measured effort"),
    ("effort_range", "float64", "max - min of the measured effort"),
    ("coulomb", "float64", "friction: Coulomb level (fitted or given), N m or N"),
    ("coulomb_se", "float64", "its standard error (fitted friction only)"),
    ("viscous", "float64", "friction: viscous coefficient, N m s/rad or N s/m"),
    ("viscous_se", "float64", "its standard error"),
    ("offset", "float64", "friction: constant offset, N m or N"),
    ("offset_se", "float64", "its standard error"),
    ("status", "string", "ok, or the one-line error of the bag"),
    ("time_base", "string", "the sample times used: grid, header, receive or index"),
    ("notes", "string", "the analysis's notes, '; '-separated"),
)


# -- what a run is given ------------------------------------------------------------------------
@dataclass(frozen=True)
class Robot:
    """The model a group of bags is analysed with: ``model`` (:class:`RobotModel`), ``name``
    (the table's ``robot``), ``source`` (where the model came from, for the messages) and
    ``friction`` (None, ``"fit"``, ``"urdf"`` or a :class:`~hod_dynamics.friction.FrictionModel`)."""

    model: object
    name: str
    source: str
    friction: object = None

    def fingerprint(self):
        """A digest of everything about this robot that changes a bag's outputs."""
        return hashlib.sha256(pickle.dumps((self.model, self.name, self.friction), protocol=4)).hexdigest()


@dataclass(frozen=True)
class BagTask:
    """One bag: ``path`` (local path or URL), ``name`` (its folder out/<name>), ``robot``
    (:class:`Robot`, None when no pattern of the mapping matches: ``error`` says so),
    ``stamp`` (size and modification time of the file, for the skip rule), ``settings``
    (JSON-ready: everything that changes its outputs)."""

    path: str
    name: str
    robot: Optional[Robot]
    stamp: dict
    settings: dict
    error: Optional[str] = None


@dataclass(frozen=True)
class Options:
    """The per-bag options of :func:`analyze_bags` (see there), the same for every bag."""

    order: int = 2
    time_base: str = "auto"
    joint_states: Optional[str] = None
    plots: bool = True
    derived_bag: bool = True
    samples_csv: bool = True
    smoothing: Optional[float] = None

    def settings(self):
        return dict(order=self.order, time_base=self.time_base, joint_states=self.joint_states, plots=self.plots,
                    derived_bag=self.derived_bag, samples_csv=self.samples_csv, smoothing=self.smoothing)


def is_url(path):
    """True for an fsspec URL (``s3://...``, ``file://...``, chained ``zip://x::file://y``)."""
    return "://" in str(path) or "::" in str(path)


def expand_bags(patterns):
    """The bags named by ``patterns``: paths, URLs and glob patterns of either (``*``, ``?``,
    ``[...]``, ``**``). A pattern's matches are kept when they are bags (a file ending in .mcap,
    .db3 or .bag, or a rosbag2 folder holding metadata.yaml) and sorted; named paths are kept as
    they are. Duplicates are dropped, the order kept. Raises InputError for a pattern that
    matches no bag or a local path that does not exist."""
    bags, seen = [], set()
    for pattern in [os.fspath(p) for p in patterns]:
        if is_url(pattern):
            found = _expand_url(pattern)
        elif glob.has_magic(pattern):
            found = sorted(p for p in glob.glob(os.path.expanduser(pattern), recursive=True) if _looks_like_bag(p))
        else:
            path = os.path.expanduser(pattern)
            if not os.path.exists(path):
                raise InputError(f"bag '{pattern}' does not exist")
            found = [path]
        if not found:
            raise InputError(f"no bag matches '{pattern}' (a bag is a .mcap, .db3 or .bag file or a rosbag2 "
                             "folder with metadata.yaml)")
        for path in found:
            key = path if is_url(path) else os.path.abspath(path)
            if key not in seen:
                seen.add(key)
                bags.append(path)
    return bags


def _looks_like_bag(path):
    if os.path.isdir(path):
        return os.path.isfile(os.path.join(path, "metadata.yaml"))
    return path.endswith(BAG_SUFFIXES)


def _expand_url(url):
    fsspec = _fsspec()
    if not glob.has_magic(url):
        return [url]
    fs, _, paths = fsspec.core.get_fs_token_paths(url)
    protocol = fs.protocol[0] if isinstance(fs.protocol, (tuple, list)) else fs.protocol
    return sorted(p if is_url(p) else f"{protocol}://{p}" for p in paths
                  if p.endswith(BAG_SUFFIXES) or fs.isfile(posixpath.join(p, "metadata.yaml")))


def _fsspec():
    try:
        import fsspec
    except ImportError:
        raise InputError("URLs of bags need fsspec: pip install fsspec (Dask distributed brings it)") from None
    return fsspec


def bag_names(paths):
    """A folder name for each bag (same order): the file name without its suffix (the folder
    name of a rosbag2 folder); where names collide, the parent folders' names joined with
    ``__`` before it, as many as make them unique. Characters other than letters, digits,
    ``.``, ``-``, ``_`` become ``_``."""
    parts = [[_clean(c) for c in _components(p)] for p in paths]
    depth = [1] * len(paths)
    while True:
        names = ["__".join(reversed(c[:d])) for c, d in zip(parts, depth)]
        clash = {n for n in names if names.count(n) > 1}
        grow = [i for i, n in enumerate(names) if n in clash and depth[i] < len(parts[i])]
        if not grow:
            break
        for i in grow:
            depth[i] += 1
    counts = {}
    for i, n in enumerate(names):   # still equal (the same name given twice by two routes)
        if names.count(n) > 1:
            counts[n] = counts.get(n, 0) + 1
            names[i] = f"{n}__{counts[n]}"
    return names


def _components(path):
    """Path components, last first, the bag suffix removed from the last."""
    text = str(path).split("::")[0] if "::" in str(path) else str(path)
    text = text.split("://", 1)[-1].rstrip("/\\")
    comps = [c for c in text.replace("\\", "/").split("/") if c not in ("", ".")][::-1] or ["bag"]
    for suffix in BAG_SUFFIXES:
        if comps[0].endswith(suffix) and len(comps[0]) > len(suffix):
            comps[0] = comps[0][:-len(suffix)]
    return comps


def _clean(name):
    out = "".join(c if c.isalnum() or c in "._-" else "_" for c in name)
    return "_" + out if out.startswith(".") else out


def bag_stamp(path):
    """{"size": bytes, "mtime": ns or a remote store's stamp} of a bag (a folder: the sum of
    its files' sizes and their latest time); {} when it cannot be read (then the bag is always
    redone)."""
    try:
        if is_url(path):
            fs, inner = _fsspec().core.url_to_fs(path)
            info = fs.info(inner)
            stamp = info.get("mtime") or info.get("LastModified") or info.get("ETag") or info.get("created")
            return {"size": int(info.get("size") or 0), "mtime": str(stamp)}
        if os.path.isdir(path):
            size, latest = 0, 0
            for root, _, files in os.walk(path):
                for f in files:
                    st = os.stat(os.path.join(root, f))
                    size, latest = size + st.st_size, max(latest, st.st_mtime_ns)
            return {"size": size, "mtime": str(latest)}
        st = os.stat(path)
        return {"size": st.st_size, "mtime": str(st.st_mtime_ns)}
    except (OSError, ValueError, ImportError, HodDynamicsError):
        return {}


# -- the models: one, or a mapping from bag-name pattern to a model -----------------------------
def robots_for(model_or_urdf, names, paths, *, friction=None, model_kwargs=None):
    """The :class:`Robot` of each bag (same order as ``names``; None where no pattern matches).

    ``model_or_urdf``: a :class:`RobotModel`, a URDF/xacro path or a shipped robot's name, or a
    mapping from bag-name pattern (fnmatch: ``arm07_*``; a pattern with ``/`` is matched
    against the path) to any of those or to ``{"urdf": ..., "robot": name}``; the first pattern
    that matches a bag wins; a YAML file holding such a mapping. ``friction``: None, ``"fit"``,
    ``"urdf"`` or a friction file / mapping (loaded for each model here, so that its faults
    show before any bag is read). ``model_kwargs``: options of :meth:`RobotModel.from_urdf`.
    Raises ModelError / InputError for a model or a friction file that cannot be loaded.
    """
    entries = _mapping_entries(model_or_urdf)
    loaded = {}
    robots = []
    for name, path in zip(names, paths):
        choice = next((entry for pattern, entry in entries if _matches(pattern, name, path)), None)
        if choice is None:
            robots.append(None)
            continue
        key = id(choice)
        if key not in loaded:
            loaded[key] = _robot(choice, friction, model_kwargs or {})
        robots.append(loaded[key])
    return robots


def _mapping_entries(spec):
    """[(pattern, entry)] of a model spec; entry: a RobotModel, a URDF source, or a dict."""
    from .model import RobotModel

    if isinstance(spec, (str, os.PathLike)) and str(spec).endswith((".yaml", ".yml")) and os.path.isfile(spec):
        from .yamlfile import read_mapping

        mapping = read_mapping(spec, InputError, "the --urdf mapping")
        base = os.path.dirname(os.path.abspath(spec))
        return [(str(p), _relative_to(entry, base)) for p, entry in mapping.items()]
    if isinstance(spec, dict):
        return [(str(p), entry) for p, entry in spec.items()]
    if isinstance(spec, (RobotModel, str, os.PathLike)):
        return [("*", spec)]
    raise InputError(f"model_or_urdf must be a RobotModel, a URDF path, a shipped robot's name or a mapping "
                     f"from bag-name pattern to those, got {type(spec).__name__}")


def _relative_to(entry, base):
    """A URDF path of a YAML mapping, relative to the YAML file's folder."""
    def resolve(p):
        p = str(p)
        candidate = os.path.join(base, os.path.expanduser(p))
        return candidate if not os.path.isabs(p) and os.path.exists(candidate) else p

    if isinstance(entry, dict):
        return dict(entry, urdf=resolve(entry["urdf"])) if "urdf" in entry else entry
    return resolve(entry)


def _matches(pattern, name, path):
    if "/" in pattern:
        return fnmatch.fnmatchcase(str(path), pattern) or fnmatch.fnmatchcase(str(path), "*/" + pattern)
    return fnmatch.fnmatchcase(name, pattern)


def _robot(entry, friction, model_kwargs):
    from .friction import FrictionModel, load_friction
    from .model import RobotModel
    from .robots import urdf_source

    robot_name = None
    if isinstance(entry, dict):
        unknown = set(entry) - {"urdf", "robot"}
        if "urdf" not in entry or unknown:
            raise InputError(f"a mapping entry of --urdf takes 'urdf' and optionally 'robot', got {sorted(entry)}")
        robot_name, entry = entry.get("robot"), entry["urdf"]
    if isinstance(entry, RobotModel):
        model, source = entry, "given"
    else:
        model, source = RobotModel.from_urdf(urdf_source(os.fspath(entry)), **model_kwargs), os.fspath(entry)
    if friction is None or (isinstance(friction, str) and friction in ("fit", "urdf")):
        fric = friction
    elif isinstance(friction, FrictionModel):
        fric = friction
    else:
        fric = load_friction(friction, model)
    return Robot(model, str(robot_name or model.name), source, fric)


# -- one bag, on a worker -----------------------------------------------------------------------
def analyse_task(task, out, options):
    """Analyse one bag (runs on a worker): its outputs into ``out/<bag>/`` (with ``out``) and its
    rows. Returns {"name", "rows", "final": the rows stand for this file and settings,
    "seconds"}. Never raises for the bag's faults: they become its row."""
    clock = time.perf_counter()
    _limit_threads()
    if task.error is not None:
        return {"name": task.name, "rows": [error_row(task, task.error)], "final": True,
                "seconds": time.perf_counter() - clock}
    staging = None if out is None else os.path.join(out, STAGING, f"{task.name}-{uuid.uuid4().hex}")
    if staging is not None:
        os.makedirs(staging)
    final, local = True, None
    try:
        with _local_bag(task.path) as local:
            report = _analyse(local, task, staging, options)
        rows = table_rows(report, task)
    except Exception as exc:                   # noqa: BLE001  every fault of a bag becomes its row
        status = _one_line(exc)
        if local is not None and local != task.path:   # a URL's temporary copy: name the URL
            status = status.replace(local, str(task.path))
        rows = [error_row(task, status)]
        final = isinstance(exc, HodDynamicsError)      # the input's fault: the same again next time;
                                                       # anything else is tried again by the next run
    if out is not None:
        if final:
            _publish(out, task, staging, rows)
        else:
            shutil.rmtree(staging, ignore_errors=True)
    return {"name": task.name, "rows": rows, "final": final, "seconds": time.perf_counter() - clock}


def _analyse(local, task, staging, options):
    from .analysis import analyze_bag

    robot = task.robot
    return analyze_bag(local, robot.model, staging, joint_states=options.joint_states, time_base=options.time_base,
                       order=options.order, smoothing=options.smoothing, friction=robot.friction,
                       plots=options.plots and _has_matplotlib(), derived_bag=options.derived_bag,
                       samples=options.samples_csv,
                       title=f"{robot.name}: {task.name}")


def _has_matplotlib():
    try:
        import matplotlib  # noqa: F401
    except ImportError:
        return False
    return True


def _limit_threads():
    """One share of this machine's CPUs for the dynamics of a task: the CPUs divided among
    the tasks a Dask worker runs at once (unless HOD_DYNAMICS_THREADS says otherwise)."""
    from .backend import THREADS_ENV_VAR

    if os.environ.get(THREADS_ENV_VAR):
        return
    try:
        from distributed import get_worker

        slots = get_worker().state.nthreads
    except (ImportError, ValueError, AttributeError):
        return                                   # not on a Dask worker
    cpus = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count() or 1
    os.environ[THREADS_ENV_VAR] = str(max(1, cpus // max(1, slots)))


@contextlib.contextmanager
def _local_bag(path):
    """A local path of the bag: the path itself, or a temporary copy of a URL's file or folder
    (rosbags reads local files)."""
    if not is_url(path):
        yield path
        return
    fs, inner = _fsspec().core.url_to_fs(path)
    if "file" in (fs.protocol if isinstance(fs.protocol, (tuple, list)) else (fs.protocol,)):
        yield inner
        return
    import tempfile

    with tempfile.TemporaryDirectory(prefix="hod-dynamics-bag-") as tmp:
        target = os.path.join(tmp, posixpath.basename(inner.rstrip("/")) or "bag")
        try:
            if fs.isdir(inner):
                fs.get(inner.rstrip("/") + "/", target + "/", recursive=True)
            else:
                fs.get(inner, target)
        except FileNotFoundError:
            raise InputError(f"bag '{path}' does not exist") from None
        yield target


def _one_line(exc):
    text = " ".join(str(exc).split())
    if isinstance(exc, HodDynamicsError):
        return text
    if isinstance(exc, MemoryError):
        return "out of memory while analysing this bag"
    return f"{type(exc).__name__}: {text}" if text else type(exc).__name__


def error_row(task, error):
    """The row of a bag that could not be analysed: ``status`` the one-line error."""
    row = {name: None for name, _, _ in COLUMNS}
    row.update(bag=task.name, path=str(task.path), robot=None if task.robot is None else task.robot.name,
               status=error if isinstance(error, str) else _one_line(error))
    return row


def table_rows(report, task):
    """The rows of one analysed bag (:class:`~hod_dynamics.analysis.BagReport`), one per model
    joint: JSON-ready (``start`` in ns since the Unix epoch)."""
    a = report.analysis
    summary = a.summary()
    nan = float("nan")
    fit = a.friction_fit or {}
    base = summary.get("time_base", {}).get("source")
    notes = "; ".join(list(a.notes) + list(report.warnings)) or None
    rows = []
    for j, joint in enumerate(a.joint_names):
        e = summary["joints"][joint]
        row = dict(bag=task.name, path=str(task.path), robot=task.robot.name, joint=joint,
                   start=int(a.states.sample_stamps_ns[0]), duration_s=summary["duration"],
                   samples=summary["n_samples"], residual_rms=e.get("residual_rms", nan),
                   rigid_residual_rms=e.get("rigid_residual_rms", e.get("residual_rms", nan)),
                   effort_rms=e.get("measured_rms", nan), effort_range=e.get("measured_range", nan),
                   status="ok", time_base=base or task.settings["options"]["time_base"], notes=notes)
        for key in FRICTION_KEYS:
            row[key] = nan if a.friction is None else float(getattr(a.friction, key)[j])
            row[f"{key}_se"] = fit.get(joint, {}).get(f"{key}_se", nan)
        rows.append({name: row.get(name) for name, _, _ in COLUMNS})
    return rows


def _publish(out, task, staging, rows):
    """Make ``out/<bag>/`` the complete staging folder, its rows written last. A staging folder
    that is gone (the run was interrupted and cleaned up meanwhile) publishes nothing."""
    if not os.path.isdir(staging):
        return
    payload = {"bag": task.name, "path": str(task.path), "stamp": task.stamp, "settings": task.settings,
               "rows": rows}
    _write_json(os.path.join(staging, ROWS), payload)
    final = os.path.join(out, task.name)
    old = None
    if os.path.lexists(final):
        old = os.path.join(out, STAGING, f"{task.name}-old-{uuid.uuid4().hex}")
        os.replace(final, old)
    os.replace(staging, final)
    if old is not None:
        shutil.rmtree(old, ignore_errors=True)


def _write_json(path, payload):
    tmp = f"{path}.{uuid.uuid4().hex}.tmp"
    with open(tmp, "w", encoding="utf-8") as fh:
        json.dump(payload, fh)        # NaN as NaN: Python's json reads it back
    os.replace(tmp, path)


def completed_rows(out, task):
    """The rows an earlier run left in ``out/<bag>/`` for this file and these settings, or None."""
    try:
        with open(os.path.join(out, task.name, ROWS), encoding="utf-8") as fh:
            payload = json.load(fh)
    except (OSError, ValueError):
        return None
    if payload.get("settings") != task.settings or payload.get("stamp") != task.stamp or not task.stamp:
        return None
    return payload.get("rows")


# -- the run ------------------------------------------------------------------------------------
@dataclass
class Progress:
    """What :func:`analyze_bags` tells its ``progress`` callback after each bag: ``done`` /
    ``total`` bags (skipped ones included), ``skipped`` (complete from an earlier run),
    ``analysed`` (this run), ``failed`` (rows with an error), ``elapsed`` s since the first task
    was submitted, ``name`` and ``status`` of the bag just finished (None for the first call,
    made before any task runs)."""

    total: int
    done: int = 0
    skipped: int = 0
    analysed: int = 0
    failed: int = 0
    elapsed: float = 0.0
    name: Optional[str] = None
    status: Optional[str] = None
    seconds: float = 0.0
    started: float = field(default_factory=time.perf_counter, repr=False)

    @property
    def rate(self):
        """Bags analysed per minute in this run (skipped ones do not count)."""
        return 60.0 * self.analysed / self.elapsed if self.elapsed > 0 and self.analysed else float("nan")

    @property
    def eta(self):
        """Seconds until every bag is done at the current rate (NaN before the first)."""
        return 60.0 * (self.total - self.done) / self.rate if self.rate > 0 else float("nan")


def analyze_bags(paths, model_or_urdf, out=None, *, friction=None, time_base="auto", order=2, joint_states=None,
                 smoothing=None, plots=True, derived_bag=True, samples_csv=True, workers=None, client=None, force=False,
                 progress=None, trends=True, false_alarm=None, drift_change=None, model_kwargs=None,
                 as_arrow=False):
    """Analyse every bag of ``paths`` as :func:`~hod_dynamics.analysis.analyze_bag` does, in
    parallel, and return the fleet table: one row per bag and joint (:data:`COLUMNS`).

    ``paths``: bags, URLs (fsspec: ``s3://...`` with s3fs installed, ``file://...``,
    ``zip://bag.mcap::file:///data/bags.zip``) and glob patterns (see :func:`expand_bags`);
    ``model_or_urdf``: a :class:`RobotModel`, a URDF path or shipped robot's name, or a mapping
    from bag-name pattern to those for a fleet of mixed robots (see :func:`robots_for`);
    ``out``: the output folder (None: the table only, nothing written). Per bag
    ``out/<bag>/`` gets the outputs of ``analyze-bag`` (written by the worker) and
    ``fleet_rows.json``; ``out`` gets ``fleet.parquet``, and with ``trends`` ``trends.png``
    and ``fleet_summary.txt`` (see :mod:`hod_dynamics.trends`; ``false_alarm``,
    ``drift_change`` its thresholds).

    ``friction``: None, ``"fit"``, ``"urdf"`` or a friction file / mapping; ``time_base``,
    ``order``, ``joint_states``, ``smoothing``, ``plots``, ``derived_bag``, ``samples_csv``
    (``samples`` there): as for ``analyze_bag``. ``client``: a ``distributed.Client`` to run on (its cluster); None
    starts a ``LocalCluster`` of ``workers`` processes (default: the CPUs of this machine) on
    127.0.0.1 for the run; ``workers=0`` runs the bags one after another in this process (no
    Dask; for debugging). ``force``: redo bags whose outputs an earlier run completed.
    ``progress(p)``: called with a :class:`Progress` after each bag. ``model_kwargs``: options
    of :meth:`RobotModel.from_urdf` (``root_link``, ``locked_joints``, ...).

    Returns a pandas DataFrame (``as_arrow``: a pyarrow Table). On KeyboardInterrupt the
    tasks are cancelled, the table of the bags finished so far is written, and the interrupt
    is raised again. Raises InputError / ModelError for inputs that fail before any bag is
    read (no bag matches, a model or friction file that cannot be loaded, an output folder
    another run is using).
    """
    from . import __version__
    from .timebase import MODES

    require(workers == 0 or client is not None)
    if time_base not in MODES:
        raise InputError(f"time base must be one of {list(MODES)}, got {time_base!r}")
    if workers is not None and (isinstance(workers, bool) or not isinstance(workers, (int, np.integer))
                                or workers < 0):
        raise InputError(f"workers must be an integer >= 0, got {workers!r}")
    if client is not None and workers is not None:
        raise InputError("give workers (a local cluster) or client (an existing cluster), not both")
    options = Options(order=order, time_base=time_base, joint_states=joint_states, plots=bool(plots),
                      derived_bag=bool(derived_bag), samples_csv=bool(samples_csv), smoothing=smoothing)
    bags = expand_bags([paths] if isinstance(paths, (str, os.PathLike)) else list(paths))
    names = bag_names(bags)
    robots = robots_for(model_or_urdf, names, bags, friction=friction, model_kwargs=model_kwargs)
    tasks = [_task(path, name, robot, options, __version__) for path, name, robot in zip(bags, names, robots)]
    with _output_lock(out):
        rows, todo, state = _previous(out, tasks, force)
        table = _Table(out, tasks, rows)
        try:
            _report(progress, state)
            for result in _run(todo, out, options, workers, client):
                rows[result["name"]] = result["rows"]
                state.done += 1
                state.analysed += 1
                state.failed += result["rows"][0]["status"] != "ok"
                state.elapsed = time.perf_counter() - state.started
                state.name, state.status = result["name"], result["rows"][0]["status"]
                state.seconds = result.get("seconds", 0.0)
                _report(progress, state)
                table.maybe_write()
        finally:                    # also after an interrupt: the table of every bag complete on disk
            table.collect_published()
            frame = table.write()
        if out is not None and trends:
            from .trends import write_trend_report

            write_trend_report(frame, out, false_alarm=false_alarm, change=drift_change,
                               units=_joint_units(r for r in robots if r is not None))
    if as_arrow:
        return table_to_arrow(frame)
    return frame


def _task(path, name, robot, options, version):
    if robot is None:
        return BagTask(path, name, None, {}, {}, error=f"no pattern of the --urdf mapping matches bag '{name}'")
    settings = {"version": version, "robot": robot.fingerprint(), "options": options.settings()}
    return BagTask(path, name, robot, bag_stamp(path), settings)


def _report(progress, state):
    if progress is not None:
        progress(state)


def _previous(out, tasks, force):
    """Rows of bags an earlier run completed (unless ``force``), the tasks left, the progress."""
    rows, todo = {}, []
    for task in tasks:
        done = None if out is None or force or task.error is not None else completed_rows(out, task)
        if done is not None:
            rows[task.name] = done
        else:
            todo.append(task)
    state = Progress(total=len(tasks), done=len(rows), skipped=len(rows),
                     failed=sum(r[0]["status"] != "ok" for r in rows.values()))
    return rows, todo, state


@contextlib.contextmanager
def _output_lock(out):
    """Hold ``out``/.analyze-bags.lock for the run (one run per folder); remove staging debris
    of earlier runs (a worker killed while writing)."""
    if out is None:
        yield
        return
    import fcntl

    try:
        os.makedirs(out, exist_ok=True)
    except OSError as exc:
        raise InputError(f"output folder '{out}': cannot create it ({exc.strerror or exc})") from None
    fh = open(os.path.join(out, LOCK), "a+")
    try:
        try:
            fcntl.flock(fh, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError:
            raise InputError(f"output folder '{out}' is in use by another analyze-bags run; wait for it, or "
                             "choose another folder") from None
        shutil.rmtree(os.path.join(out, STAGING), ignore_errors=True)
        try:
            yield
        finally:            # also after an interrupt: the tasks are cancelled, their debris goes
            shutil.rmtree(os.path.join(out, STAGING), ignore_errors=True)
    finally:
        fh.close()


class _Table:
    """The fleet table of a run, rewritten (atomically) as bags finish."""

    def __init__(self, out, tasks, rows):
        self.out, self.tasks, self.rows = out, tasks, rows
        self.last = time.perf_counter()

    def frame(self):
        rows = [row for task in self.tasks for row in self.rows.get(task.name, ())]
        return rows_to_frame(rows)

    def collect_published(self):
        """Add the rows of bags whose folders were completed but whose results did not reach
        this run (it was interrupted meanwhile)."""
        if self.out is None:
            return
        for task in self.tasks:
            if task.name not in self.rows and task.error is None:
                done = completed_rows(self.out, task)
                if done is not None:
                    self.rows[task.name] = done

    def maybe_write(self):
        if self.out is not None and time.perf_counter() - self.last > TABLE_EVERY:
            self.write()

    def write(self):
        frame = self.frame()
        if self.out is not None:
            write_table(frame, os.path.join(self.out, TABLE))
        self.last = time.perf_counter()
        return frame


def _run(tasks, out, options, workers, client):
    """Yield the result of each task as it finishes (see :func:`analyse_task`)."""
    if not tasks:
        return
    if workers == 0:
        for task in tasks:
            yield analyse_task(task, out, options)
        return
    if client is not None:
        yield from _run_on(client, tasks, out, options)
        return
    _warm_up(tasks, options)
    with local_cluster(workers) as own:
        yield from _run_on(own, tasks, out, options)


def _run_on(client, tasks, out, options):
    from distributed import as_completed

    futures = {client.submit(analyse_task, task, out, options, key=f"analyse-bag-{task.name}-{uuid.uuid4().hex}",
                             pure=False): task for task in tasks}
    try:
        for future in as_completed(list(futures)):
            task = futures[future]
            try:
                yield future.result()
            except Exception as exc:   # noqa: BLE001  a dead worker (KilledWorker) or a lost task
                yield {"name": task.name, "rows": [error_row(task, _task_failure(exc))], "final": False}
            finally:
                future.release()
    finally:
        client.cancel([f for f in futures if not f.done()])


def _task_failure(exc):
    name = type(exc).__name__
    if name == "KilledWorker":
        return ("the Dask workers analysing this bag died (killed, or out of memory) as often as the scheduler "
                "allows (distributed.scheduler.allowed-failures); not analysed, the next run tries again")
    return f"the task failed on the cluster ({name}: {' '.join(str(exc).split())})"


def local_cluster(workers=None):
    """A context manager: a ``distributed.Client`` of a new ``LocalCluster`` on this machine:
    ``workers`` processes (default: the CPUs this process may run on), one task each, the
    scheduler on 127.0.0.1, no dashboard; each worker's dynamics use its share of the CPUs
    (``HOD_DYNAMICS_THREADS``)."""
    from .backend import THREADS_ENV_VAR, compute_threads

    try:
        from distributed import Client, LocalCluster
    except ImportError:
        raise InputError("analysing bags in parallel needs Dask distributed: pip install 'dask[distributed]' pandas "
                         "(the fleet extra), or workers=0 for one bag after another") from None
    cpus = compute_threads()
    workers = cpus if workers is None else workers
    env = {THREADS_ENV_VAR: os.environ.get(THREADS_ENV_VAR) or str(max(1, cpus // workers))}

    @contextlib.contextmanager
    def run():
        cluster = LocalCluster(n_workers=workers, threads_per_worker=1, processes=True, host="127.0.0.1",
                               dashboard_address=None, env=env, silence_logs=50, preload=[__name__])
        try:
            with Client(cluster) as client:
                yield client
        finally:
            cluster.close()

    return run()


def dask_setup(worker):
    """Dask's preload hook, run by each worker of :func:`local_cluster` as it starts: a
    terminal's Ctrl-C reaches the whole process group, and the run's driver stops it and closes
    the cluster; the workers ignore SIGINT rather than each printing a traceback."""
    import signal
    import threading

    if threading.current_thread() is threading.main_thread():
        signal.signal(signal.SIGINT, signal.SIG_IGN)


def _warm_up(tasks, options):
    """Compile (or load) the kernels the analysis runs once here, so that the workers load them
    from numba's disk cache instead of each compiling them."""
    from .dispatch import prepare_compiled_kernels

    seen = set()
    for task in tasks:
        model = None if task.robot is None else task.robot.model
        if model is not None and id(model) not in seen:
            seen.add(id(model))
            try:
                prepare_compiled_kernels(model, max(options.order, 0))
            except HodDynamicsError:     # numba missing: the workers run the numpy path
                return


def _joint_units(robots):
    from .units import friction_units

    units = {}
    for robot in robots:
        for joint, kind in zip(robot.model.joint_names, robot.model.joint_types):
            units[(robot.name, joint)] = friction_units(kind)
    return units


# -- the table ----------------------------------------------------------------------------------
def require(serial=False):
    """Raise InputError naming what the fleet analysis lacks (pandas; Dask distributed unless
    ``serial``: the bags run in this process or on a client given), and how to install it."""
    import importlib.util

    needed = ["pandas"] + ([] if serial else ["distributed"])
    missing = [name for name in needed if importlib.util.find_spec(name) is None]
    if missing:
        names = " and ".join("Dask distributed" if m == "distributed" else m for m in missing)
        raise InputError(f"analysing many bags needs {names}: pip install 'dask[distributed]' pandas (the "
                         "fleet extra of hod_dynamics)")


def _pandas():
    try:
        import pandas
    except ImportError:
        raise InputError("the fleet table needs pandas: pip install pandas (with Dask distributed, the fleet "
                         "extra)") from None
    return pandas


def arrow_schema():
    """The pyarrow schema of the table (:data:`COLUMNS`)."""
    import pyarrow as pa

    types = {"string": pa.string(), "float64": pa.float64(), "int64": pa.int64(),
             "timestamp[ns, UTC]": pa.timestamp("ns", tz="UTC")}
    return pa.schema([pa.field(name, types[kind]) for name, kind, _ in COLUMNS])


def rows_to_frame(rows):
    """A pandas DataFrame of table rows (dicts; ``start`` in ns since the epoch)."""
    pd = _pandas()
    return _normalised(pd.DataFrame(rows, columns=[name for name, _, _ in COLUMNS]))


def _normalised(frame):
    """The table's dtypes, whatever made the frame: UTC datetimes, nullable integers, floats,
    strings as Python objects with None where missing."""
    pd = _pandas()
    if not isinstance(frame["start"].dtype, pd.DatetimeTZDtype):
        frame["start"] = pd.to_datetime(frame["start"].astype("Int64"), unit="ns", utc=True)
    frame["samples"] = frame["samples"].astype("Int64")
    for name, kind, _ in COLUMNS:
        if kind == "float64":
            frame[name] = frame[name].astype(float)
        elif kind == "string":
            frame[name] = frame[name].astype(object).where(frame[name].notna(), None)
    return frame


def table_to_arrow(frame):
    import pyarrow as pa

    return pa.Table.from_pandas(frame, schema=arrow_schema(), preserve_index=False)


def write_table(frame, path):
    """Write the table as Parquet (pyarrow), atomically: a reader sees the old table or the new."""
    import pyarrow.parquet as pq

    tmp = f"{path}.{uuid.uuid4().hex}.tmp"
    pq.write_table(table_to_arrow(frame), tmp)
    os.replace(tmp, path)
    return path


def read_table(path):
    """The fleet table of ``path`` (a fleet.parquet, or the folder holding it) as a DataFrame."""
    import pyarrow.parquet as pq

    if os.path.isdir(path):
        path = os.path.join(path, TABLE)
    _pandas()
    return _normalised(pq.read_table(path).to_pandas())
