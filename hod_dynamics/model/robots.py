"""Files shipped with the package: robot models (URDF) and trajectories under
``hod_dynamics/data/``, configurations (YAML) in the package's ``config/`` folder.

``config/`` sits beside ``launch/`` as in every ament package: in a source checkout at the top
of the repository, and once installed (``colcon build`` or a non-editable ``pip install``) in
``<prefix>/share/hod_dynamics/config``, where launch files find it too. A colcon or pip install
also copies the URDFs to ``share/hod_dynamics/urdf``.

- ``planar_2r``: the planar 2R robot of Müller and Kumar 2021, sec. 6.1 (point masses at the
  link ends).
- ``iiwa14``: the KUKA LBR iiwa 14 R820 of Müller and Kumar 2021, sec. 6.2, with identified
  inertias.
- ``solo12``: the Solo 12 quadruped (Open Dynamic Robot Initiative; from example-robot-data,
  BSD 3-Clause), the floating-base example: ``load_robot("solo12", floating_base=True)``.

Wherever a URDF file or a configuration file is expected (``hod-dynamics info``, ``--urdf``, the
node's ``urdf_path``, :func:`hod_dynamics.load_actuators`), the name of a shipped one works too.
"""

import os
import site
import sys
import warnings

from ..errors import HodDynamicsWarning, InputError, ModelError, URDFExtensionWarning

PACKAGE = "hod_dynamics"
_HERE = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))  # the package folder
DATA = os.path.join(_HERE, "data")
_DIR = os.path.join(DATA, "urdf")
_KINDS = {"urdf": ".urdf", "config": ".yaml", "trajectories": ".yaml"}


def _config_candidates():
    """Folders that may hold the shipped configurations, most specific first.

    A source checkout (``package.xml`` beside this package) has them at its top; an install
    puts them in ``<prefix>/share/hod_dynamics/config``, where ``<prefix>`` is the folder the
    package's ``lib/pythonX.Y/site-packages`` hangs from (colcon's install prefix, the venv of
    a pip install, ``~/.local`` for ``pip install --user``), so the share folder of the copy
    that is imported wins over other installs. The interpreter's prefixes and the ament index
    (``AMENT_PREFIX_PATH``) come last."""
    top = os.path.dirname(_HERE)
    if os.path.isfile(os.path.join(top, "package.xml")):
        yield os.path.join(top, "config")
    share = os.path.join("share", PACKAGE, "config")
    parent = top
    for _ in range(4):  # site-packages -> pythonX.Y -> lib -> prefix (dist-packages: one fewer)
        parent = os.path.dirname(parent)
        yield os.path.join(parent, share)
    for prefix in (sys.prefix, sys.base_prefix, getattr(site, "USER_BASE", None) or ""):
        yield os.path.join(prefix, share)
    for prefix in os.environ.get("AMENT_PREFIX_PATH", "").split(os.pathsep):
        if prefix:
            yield os.path.join(prefix, share)


def config_dir():
    """The folder of the shipped configurations (see :func:`_config_candidates`). Raises
    InputError naming the places looked at when none holds them (an editable install whose
    source folder moved, or a copy of the package without its data files)."""
    looked = []
    for folder in _config_candidates():
        if os.path.isfile(os.path.join(folder, "feedforward.yaml")):
            return folder
        looked.append(folder)
    raise InputError(f"the shipped configuration files of {PACKAGE} are missing (looked in "
                     f"{', '.join(dict.fromkeys(looked))}): reinstall the package with "
                     "`pip install .` (not editable from a copy without config/) or `colcon build`")


def _folder(kind):
    if kind not in _KINDS:
        raise InputError(f"shipped data kinds are {sorted(_KINDS)}, got {kind!r}")
    return config_dir() if kind == "config" else os.path.join(DATA, kind)


def share_path(kind, name=None):
    """Path of shipped data: ``share_path("config")`` a kind's folder (``"urdf"``, ``"config"``,
    ``"trajectories"``), ``share_path("config", "actuators_sea")`` one file (the extension may be
    left out). Raises InputError naming what is available."""
    folder = _folder(kind)
    if name is None:
        return folder
    ext = _KINDS[kind]
    path = os.path.join(folder, name if name.endswith(ext) else name + ext)
    if not os.path.isfile(path):
        raise InputError(f"no shipped {kind} file '{name}'; available: {shipped(kind)}")
    return path


def shipped(kind):
    """Names (without extension) of the shipped files of ``kind`` (see :func:`share_path`)."""
    ext = _KINDS[kind]
    return sorted(f[:-len(ext)] for f in os.listdir(_folder(kind)) if f.endswith(ext))


def _is_bare_name(source):
    """A string that is a plain name (no path separator, no XML or YAML text)."""
    return (isinstance(source, str) and source and os.sep not in source
            and not any(c in source for c in "<:{\n"))


def urdf_source(source):
    """``source`` as given (a URDF file, URDF text) unless it is the name of a shipped robot
    that is not also a file in the working folder: then that robot's URDF path. Raises
    ModelError for a plain name that is neither a file nor a shipped robot."""
    if _is_bare_name(source) and not os.path.exists(source):
        name = source[:-5] if source.endswith(".urdf") else source
        if name in shipped_robots():
            return robot_path(name)
        raise ModelError(f"URDF file not found: '{source}', and no shipped robot has that name "
                         f"(shipped: {', '.join(shipped_robots())})")
    return source


def config_source(source):
    """``source`` as given (a YAML file, YAML text, a mapping) unless it is the name of a shipped
    configuration (``actuators_sea``, ``actuators_vsa``, ``feedforward``) that is not also a file
    in the working folder: then that file's path."""
    if _is_bare_name(source) and not os.path.exists(source):
        name = source[:-5] if source.endswith(".yaml") else source
        if name in shipped("config"):
            return share_path("config", name)
    return source


# shipped models whose base is free in use (a legged robot): read as they are, their root link
# is fixed to the world
FLOATING_BASE = {"solo12"}


def shipped_robots():
    """Names of the shipped robot models."""
    return shipped("urdf")


def robot_path(name):
    """Absolute path of the URDF of a shipped robot (see :func:`shipped_robots`)."""
    path = os.path.join(_DIR, f"{name}.urdf")
    if not os.path.isfile(path):
        raise ModelError(f"no shipped robot '{name}'; available: {shipped_robots()}")
    return path


def load_robot(name, **kwargs):
    """:class:`RobotModel` of a shipped robot; keyword arguments go to ``from_urdf``."""
    from .robot_model import RobotModel

    return RobotModel.from_urdf(robot_path(name), **kwargs)


def model_from_description(source, *, root_link=None, tip_links=None, locked_joints=None,
                           gravity=(0.0, 0.0, -9.81), strict=True, inertia_check="warn",
                           xacro_args=None, floating_base=False, extensions=True, loops=None,
                           actuated_joints=None, assembly=None):
    """A :class:`RobotModel` from a robot description and the options a program takes, and the
    notes of its reading: what the command line and the nodes build their model with.

    ``source``: a URDF or xacro file, URDF or xacro text, or the name of a shipped robot
    (:func:`urdf_source`). ``root_link`` and ``tip_links``: empty means not given (as a
    program's empty option or parameter does); the other options as for
    :meth:`RobotModel.from_urdf`, ``locked_joints`` a mapping ``{joint: position}`` and
    ``xacro_args`` ``{name: value}`` (:func:`hod_dynamics.model.urdf.xacro_args_from_strings` reads
    the ``name:=value`` form). ``loops`` (``"urdf"``, a closure file), ``actuated_joints``
    (names; empty means not given) and ``assembly`` (``{joint: position}``; empty means not
    given): a mechanism with loops, a :class:`~hod_dynamics.model.loop_model.LoopModel` (see
    :meth:`RobotModel.from_urdf`).

    Returns ``(model, notes)``: ``notes`` the messages of the
    :class:`~hod_dynamics.errors.HodDynamicsWarning` s of the reading, in order (what
    ``strict=False`` read past, inertias that are not positive semi-definite, negative
    ``<dynamics>`` values, and with ``extensions`` the extensions of URDF read past,
    :class:`~hod_dynamics.errors.URDFExtensionWarning`), for the program to print or log; other
    warnings go on as usual. Raises ModelError naming the fault.
    """
    from .robot_model import RobotModel

    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always", HodDynamicsWarning)
        model = RobotModel.from_urdf(urdf_source(source), root_link=root_link or None,
                                     tip_links=tip_links or None, locked_joints=locked_joints,
                                     gravity=gravity, strict=strict, inertia_check=inertia_check,
                                     xacro_args=xacro_args, floating_base=floating_base,
                                     loops=loops or None, actuated_joints=list(actuated_joints or ()) or None,
                                     assembly=dict(assembly) if assembly else None)
    notes = [str(w.message) for w in caught if issubclass(w.category, HodDynamicsWarning)
             and (extensions or not issubclass(w.category, URDFExtensionWarning))]
    for w in caught:  # anything else goes on as usual
        if not issubclass(w.category, HodDynamicsWarning):
            warnings.warn_explicit(w.message, w.category, w.filename, w.lineno)
    return model, notes
