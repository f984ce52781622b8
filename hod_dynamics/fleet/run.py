"""Many recordings: every bag of a fleet analysed as :func:`~hod_dynamics.replay.bag_report.analyze_bag`
analyses one, on local processes or a Dask cluster, gathered into one table.

A bag is one task. A worker reads the bag (a local path, or an fsspec URL copied to its own
disk first), analyses it, writes the outputs of ``analyze-bag`` into a staging folder and
renames that folder to ``out/<bag>/`` when everything is written, with ``fleet_rows.json``
(the bag's rows of the table) inside: a folder named after a bag is always complete, and a
worker killed while writing leaves only staging debris, removed by the next run. Only the
rows (a few hundred bytes a joint) travel back. The driver gathers them into
``out/fleet.parquet``: one row per bag and joint (:data:`~hod_dynamics.fleet.table.COLUMNS`), or
one row per bag that could not be analysed, its ``status`` the one-line error. Which bags and
models: :mod:`hod_dynamics.fleet.inputs`; the table: :mod:`hod_dynamics.fleet.table`; its
trends: :mod:`hod_dynamics.fleet.trends`.

The engine is Dask distributed: without a client, a ``LocalCluster`` of worker processes on
this machine (its scheduler on 127.0.0.1, no dashboard); with one, the cluster it is connected
to. A worker that dies (killed, out of memory) has its tasks run again on the others by the
scheduler; a bag whose workers died too often (Dask's ``allowed-failures``) gets a row saying
so and is tried again by the next run.

A run with an ``out`` folder of an earlier run skips the bags whose folder holds rows made
with the same settings from the same file (size and modification time); ``force=True`` redoes
them. Bags that failed on their input (a corrupt file, joints missing, ...) count as done;
bags that failed for another reason (a dead worker, a network error) are tried again.

Longer than 500 lines: the driver (skips, the table's rewrites, Ctrl-C) and the task a worker
runs share one folder protocol (staging, rows written last, debris removed) and one engine
setup (threads, compile notices, warm-up); kept in one place so that protocol reads whole.
"""

import contextlib
import json
import os
import shutil
import time
import uuid
from dataclasses import dataclass, field
from typing import Optional

import numpy as np

from ..errors import HodDynamicsError, InputError
from .inputs import Robot, bag_names, bag_stamp, expand_bags, joint_units, local_bag, robots_for
from .table import (COLUMNS, TABLE, error_row, one_line, read_table, require, rows_to_frame, table_rows,
                    table_to_arrow, write_table)

ROWS = "fleet_rows.json"       # in out/<bag>/, written last: the bag's outputs are complete
STAGING = ".staging"           # out/.staging/: bags being written
LOCK = ".analyze-bags.lock"    # one run at a time per output folder
TABLE_EVERY = 30.0             # s: the driver rewrites the table at most this often during a run


# -- what a run is given ------------------------------------------------------------------------
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


# -- the models: one, or a mapping from bag-name pattern to a model -----------------------------


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
        with local_bag(task.path) as local, _compile_notices_to_worker_log():
            report = _analyse(local, task, staging, options)
        rows = table_rows(report, task)
    except Exception as exc:                   # noqa: BLE001  every fault of a bag becomes its row
        status = one_line(exc)
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
    from ..replay.bag_report import analyze_bag
    from ..replay.notes import lock_notes

    robot = task.robot
    return analyze_bag(local, robot.model, staging, joint_states=options.joint_states, time_base=options.time_base,
                       order=options.order, smoothing=options.smoothing, friction=robot.friction,
                       plots=options.plots and _has_matplotlib(), derived_bag=options.derived_bag,
                       samples=options.samples_csv,
                       check=lambda states: lock_notes(dict(robot.locked), states.joint_names),
                       title=f"{robot.name}: {task.name}")


def _has_matplotlib():
    try:
        import matplotlib  # noqa: F401
    except ImportError:
        return False
    return True


def _dask_worker():
    """The Dask worker running this task, or None (in the caller's process)."""
    try:
        from distributed import get_worker

        return get_worker()
    except (ImportError, ValueError):
        return None


def _compile_notices_to_worker_log():
    """A kernel compile's notice (a worker's first bag, numba's cache cold) is about the process:
    on a Dask worker it goes to the worker's log, never into the bag's notes (the table must not
    depend on which worker compiled). In the caller's process, the caller's routing stays."""
    if _dask_worker() is None:
        return contextlib.nullcontext()
    import logging

    from ..kernels.backend import compile_notices

    return compile_notices(logging.getLogger("distributed.worker").info)


def _limit_threads():
    """One share of this machine's CPUs for the dynamics of a task: the CPUs divided among
    the tasks a Dask worker runs at once (unless HOD_DYNAMICS_THREADS says otherwise)."""
    from ..kernels.backend import THREADS_ENV_VAR

    worker = _dask_worker()
    if os.environ.get(THREADS_ENV_VAR) or worker is None:
        return                                   # set, or not on a Dask worker
    slots = getattr(getattr(worker, "state", None), "nthreads", 1)
    cpus = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count() or 1
    os.environ[THREADS_ENV_VAR] = str(max(1, cpus // max(1, slots)))


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
    """Analyse every bag of ``paths`` as :func:`~hod_dynamics.replay.bag_report.analyze_bag` does, in
    parallel, and return the fleet table: one row per bag and joint (:data:`COLUMNS`).

    ``paths``: bags, URLs (fsspec: ``s3://...`` with s3fs installed, ``file://...``,
    ``zip://bag.mcap::file:///data/bags.zip``) and glob patterns (see :func:`expand_bags`);
    ``model_or_urdf``: a :class:`RobotModel`, a URDF path or shipped robot's name, or a mapping
    from bag-name pattern to those for a fleet of mixed robots (see :func:`robots_for`);
    ``out``: the output folder (None: the table only, nothing written). Per bag
    ``out/<bag>/`` gets the outputs of ``analyze-bag`` (written by the worker) and
    ``fleet_rows.json``; ``out`` gets ``fleet.parquet``, and with ``trends`` ``trends.png`` (with ``plots``)
    and ``fleet_summary.txt`` (see :mod:`hod_dynamics.fleet.trends`; ``false_alarm``,
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
    from ..recordings.timebase import MODES

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
    tasks = [_task(path, name, robot, options, _version()) for path, name, robot in zip(bags, names, robots)]
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

            write_trend_report(frame, out, false_alarm=false_alarm, change=drift_change, plot=bool(plots),
                               units=joint_units(r for r in robots if r is not None))
    if as_arrow:
        return table_to_arrow(frame)
    return frame


def _version():
    """The installed package's version (part of the settings a bag's rows were made with)."""
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version("hod_dynamics")
    except PackageNotFoundError:
        return "not installed"


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
        _warm_up(tasks, options)
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
        # the client's own loop: a client made with set_as_default=False (as the command line
        # makes it) is no default client, and as_completed without a loop looks for one
        for future in as_completed(list(futures), loop=client.loop):
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
    from ..kernels.backend import THREADS_ENV_VAR, compute_threads

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
    """Compile (or load) the kernels the analysis runs once here, before the first bag (a compile
    announced here, not in a bag's notes), so that the workers load them from numba's cache:
    the dynamics of each model and the fit's band solves."""
    from ..algorithms.dispatch import announce_fit_compiles, prepare_compiled_kernels
    from ..recordings.joint_fit import prepare_fit_kernels

    seen = set()
    for task in tasks:
        model = None if task.robot is None else task.robot.model
        if model is not None and id(model) not in seen:
            seen.add(id(model))
            try:
                prepare_compiled_kernels(model, max(options.order, 0))
            except HodDynamicsError:     # numba missing: the workers run the numpy path
                return
    announce_fit_compiles()
    prepare_fit_kernels()


# -- the table ----------------------------------------------------------------------------------


