"""Files shipped with the package: robot models (URDF), configurations (YAML) and trajectories,
under ``hod_dynamics/data/`` (a colcon or pip install also copies the URDFs and configurations to
``share/hod_dynamics/urdf`` and ``share/hod_dynamics/config``, where launch files find them).

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

from .errors import InputError, ModelError

DATA = os.path.join(os.path.dirname(os.path.abspath(__file__)), "data")
_DIR = os.path.join(DATA, "urdf")
_KINDS = {"urdf": ".urdf", "config": ".yaml", "trajectories": ".yaml"}


def share_path(kind=None, name=None):
    """Path of shipped data: ``share_path()`` the data folder, ``share_path("config")`` a kind's
    folder (``"urdf"``, ``"config"``, ``"trajectories"``), ``share_path("config", "actuators_sea")``
    one file (the extension may be left out). Raises InputError naming what is available."""
    if kind is None:
        return DATA
    if kind not in _KINDS:
        raise InputError(f"shipped data kinds are {sorted(_KINDS)}, got {kind!r}")
    folder = os.path.join(DATA, kind)
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
    return sorted(f[:-len(ext)] for f in os.listdir(os.path.join(DATA, kind)) if f.endswith(ext))


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
    from .model import RobotModel

    return RobotModel.from_urdf(robot_path(name), **kwargs)
