"""Robot models shipped with the package (URDF files under ``hod_dynamics/data/urdf``; a colcon
or pip install also copies them to ``share/hod_dynamics/urdf``).

- ``planar_2r``: the planar 2R robot of seed 000 sec. 6.1 (point masses at the link ends).
- ``iiwa14``: the KUKA LBR iiwa 14 R820 of seed 000 sec. 6.2 with identified inertias.
- ``solo12``: the Solo 12 quadruped (Open Dynamic Robot Initiative; from example-robot-data,
  BSD 3-Clause), the floating-base example: ``load_robot("solo12", floating_base=True)``.
"""

import os

from .errors import ModelError

_DIR = os.path.join(os.path.dirname(os.path.abspath(__file__)), "data", "urdf")


def shipped_robots():
    """Names of the shipped robot models."""
    return sorted(f[:-5] for f in os.listdir(_DIR) if f.endswith(".urdf"))


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
