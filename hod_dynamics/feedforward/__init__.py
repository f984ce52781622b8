"""Feedforward along a planned motion: trajectories through waypoints, the inverse dynamics and
its derivatives along them, the motor references of series-elastic and variable-stiffness
actuators (flatness), trajectories for a controller that interpolates effort, and the rules of
a feedforward stream.

Modules: :mod:`~.trajectory`, :mod:`~.trajectory_feedforward`, :mod:`~.actuators`,
:mod:`~.effort_trajectory`, :mod:`~.reference_stream`. The names below are imported on first use.
``hod_dynamics.feedforward(...)``, the function of an earlier release, can still be called for
one release (it warns): use :func:`hod_dynamics.feedforward.feedforward`.
"""

import sys

from ..deprecation import CallableFace, module_getattr

_FACE = {"Trajectory": "trajectory", "load_trajectory": "trajectory", "shipped_trajectories": "trajectory",
         "LimitReport": "trajectory", "LimitViolation": "trajectory",
         "feedforward": "trajectory_feedforward", "FeedforwardResult": "trajectory_feedforward",
         "save_csv": "trajectory_feedforward", "save_npz": "trajectory_feedforward",
         "ActuatorSet": "actuators", "Rigid": "actuators", "SEA": "actuators", "VSA": "actuators",
         "CubicSpring": "actuators", "AntagonisticExponential": "actuators", "load_actuators": "actuators",
         "EffortTrajectory": "effort_trajectory",
         "ReferenceStream": "reference_stream"}
__all__ = list(_FACE)
__getattr__ = module_getattr(__name__, {}, {n: f"{__name__}.{m}:{n}" for n, m in _FACE.items()}, globals())
sys.modules[__name__].__class__ = CallableFace
