"""The inputs of a fleet run (:mod:`hod_dynamics.fleet`): which bags (paths, glob patterns,
fsspec URLs), the folder name of each, the stamp that says whether a bag changed, the model each
is analysed with (one, or a mapping from bag-name pattern to a model for a fleet of mixed
robots), and a local copy of a bag that lives behind a URL.
"""

import contextlib
import fnmatch
import glob
import hashlib
import os
import pickle
import posixpath
from dataclasses import dataclass

from ..errors import HodDynamicsError, InputError

BAG_SUFFIXES = (".mcap", ".db3", ".bag")


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


@dataclass(frozen=True)
class Robot:
    """The model a group of bags is analysed with: ``model`` (:class:`RobotModel`), ``name``
    (the table's ``robot``), ``source`` (where the model came from, for the messages),
    ``friction`` (None, ``"fit"``, ``"urdf"`` or a :class:`~hod_dynamics.algorithms.friction.FrictionModel`)
    and ``locked`` (``((joint, position), ...)``: the joints locked when the model was built
    from its URDF, for the note on a bag that records one)."""

    model: object
    name: str
    source: str
    friction: object = None
    locked: tuple = ()

    def fingerprint(self):
        """A digest of everything about this robot that changes a bag's outputs."""
        return hashlib.sha256(pickle.dumps((self.model, self.name, self.friction, self.locked), protocol=4)).hexdigest()


def robots_for(model_or_urdf, names, paths, *, friction=None, model_kwargs=None):
    """The :class:`Robot` of each bag (same order as ``names``; None where no pattern matches).

    ``model_or_urdf``: a :class:`RobotModel`, a URDF/xacro path or a shipped robot's name, or a
    mapping from bag-name pattern (fnmatch: ``arm07_*``; a pattern with ``/`` is matched
    against the path) to any of those or to ``{"urdf": ..., "robot": name}``; the first pattern
    that matches a bag wins; a YAML file holding such a mapping. ``friction``: None, ``"fit"``,
    ``"urdf"`` or a friction file / mapping (loaded for each model here, so that its faults
    show before any bag is read). ``model_kwargs``: options of :meth:`RobotModel.from_urdf`.
    Raises ModelError / InputError for a model or a friction file that cannot be loaded, and
    InputError when no pattern matches any bag.
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
    if names and all(r is None for r in robots):
        # nothing would be analysed: a run that "succeeds" with 0 bags hides a mistyped pattern
        shown = ", ".join(f"'{n}'" for n in names[:5]) + (f" and {len(names) - 5} more" if len(names) > 5 else "")
        raise InputError(f"no pattern of the --urdf mapping ({', '.join(repr(p) for p, _ in entries)}) matches any "
                         f"of the {len(names)} bags ({shown}); a pattern is matched against the bag's name "
                         "(fnmatch: 'arm07_*'), or its path when the pattern holds a '/'")
    return robots


def _mapping_entries(spec):
    """[(pattern, entry)] of a model spec; entry: a RobotModel, a URDF source, or a dict."""
    from ..model.robot_model import RobotModel

    if isinstance(spec, (str, os.PathLike)) and str(spec).endswith((".yaml", ".yml")) and os.path.isfile(spec):
        from ..yamlfile import read_mapping

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
    from ..algorithms.friction import FrictionModel, load_friction
    from ..model.robot_model import RobotModel
    from ..model.robots import urdf_source

    robot_name = None
    if isinstance(entry, dict):
        unknown = set(entry) - {"urdf", "robot"}
        if "urdf" not in entry or unknown:
            raise InputError(f"a mapping entry of --urdf takes 'urdf' and optionally 'robot', got {sorted(entry)}")
        robot_name, entry = entry.get("robot"), entry["urdf"]
    locked = ()
    if isinstance(entry, RobotModel):
        model, source = entry, "given"
    else:
        model, source = RobotModel.from_urdf(urdf_source(os.fspath(entry)), **model_kwargs), os.fspath(entry)
        locked = tuple((model_kwargs.get("locked_joints") or {}).items())
    if friction is None or (isinstance(friction, str) and friction in ("fit", "urdf")):
        fric = friction
    elif isinstance(friction, FrictionModel):
        fric = friction
    else:
        fric = load_friction(friction, model)
    return Robot(model, str(robot_name or model.name), source, fric, locked)


@contextlib.contextmanager
def local_bag(path):
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


def joint_units(robots):
    """{(robot name, joint): (force unit, viscous coefficient unit)} of the given :class:`Robot` s."""
    from ..units import friction_units

    return {(robot.name, joint): friction_units(kind) for robot in robots
            for joint, kind in zip(robot.model.joint_names, robot.model.joint_types)}
