"""hod_dynamics: inverse dynamics of URDF robots and its time derivatives of any order.

What a user of the dynamics needs is importable from here::

    import hod_dynamics as hd
    model = hd.RobotModel.from_urdf("robot.urdf")
    tau = hd.inverse_dynamics(model, q, qd, qdd)          # (..., n)
    jets = hd.time_derivatives(model, qjet, order=2)      # (..., 3, n): tau, tau', tau''
    qdd = hd.forward_dynamics(model, q, qd, tau)          # (..., n)
    J = hd.frame_jacobian(model, q, "tool_link")          # (..., 6, n), rows (omega, v)

The applications built on it are modules of their own, imported by name:
:mod:`hod_dynamics.trajectory_feedforward` (feedforward along a trajectory, CSV and NPZ export),
:mod:`hod_dynamics.actuators` (motor references of elastic joints), :mod:`hod_dynamics.bag` and
:mod:`hod_dynamics.analysis` (recorded joint states), :mod:`hod_dynamics.closed_form` (the
closed-form terms and their derivatives), :mod:`hod_dynamics.floating` (floating bases).

Names of earlier releases that moved into those modules still work here for one release,
with a :class:`~hod_dynamics.errors.HodDynamicsDeprecationWarning` naming the new place.
:class:`Trajectory` and :func:`load_trajectory` (scipy) are imported on first use, and so is
``hd.analyze_bags`` (the analysis of many recordings, :mod:`hod_dynamics.fleet`; an application
layer, outside ``__all__``).
"""

from . import floating  # noqa: F401  hd.floating
from .crba import kinetic_energy, mass_matrix
from .deprecation import module_getattr
from .dynamics import inverse_dynamics, time_derivatives
from .eom import coriolis_matrix, gravity_torques
from .errors import HodDynamicsError, HodDynamicsWarning, InputError, ModelError, TrajectoryError
from .floating import time_derivatives_floating
from .forward import forward_dynamics
from .friction import FrictionModel, load_friction
from .inertia import inertial_parameters
from .kinematics import frame_jacobian, frame_pose
from .model import RobotModel
from .partials import id_partials
from .regressors import regressor, regressor_time_derivatives
from .second_partials import (SecondPartialsData, id_partials_directional, id_second_order_rate,
                              id_second_partials)
from .robots import load_robot, robot_path, shipped_robots

__version__ = "0.1.0"

__all__ = [
    "RobotModel", "load_robot", "robot_path", "shipped_robots",
    "inverse_dynamics", "time_derivatives", "time_derivatives_floating", "forward_dynamics",
    "mass_matrix", "kinetic_energy", "gravity_torques", "coriolis_matrix",
    "id_partials", "id_partials_directional", "id_second_order_rate", "id_second_partials",
    "SecondPartialsData",
    "frame_pose", "frame_jacobian",
    "FrictionModel", "load_friction", "Trajectory", "load_trajectory",
    "inertial_parameters", "regressor", "regressor_time_derivatives",
    "HodDynamicsError", "InputError", "ModelError", "TrajectoryError", "HodDynamicsWarning",
]

# imported on first use: scipy's splines cost more than the rest of the package together
_LAZY = {"Trajectory": "hod_dynamics.trajectory:Trajectory",
         "load_trajectory": "hod_dynamics.trajectory:load_trajectory",
         "analyze_bags": "hod_dynamics.fleet:analyze_bags"}
_LAZY.update({name: f"hod_dynamics.{name}" for name in (
    "actuators", "analysis", "backend", "bag", "base_parameters", "cli", "closed_form", "crba", "dispatch",
    "dynamics", "effort_trajectory", "eom", "errors", "excitation", "fleet", "fleet_inputs", "fleet_table", "forward",
    "friction", "identification", "inertia", "jets", "joint_fit", "kinematics", "model", "msgfields",
    "paper_examples", "partials", "plots", "position_noise", "recursive", "reference_stream", "regressors", "robots",
    "second_partials", "smoothing", "spatial", "timebase", "trajectory", "trajectory_feedforward", "trends", "units",
    "urdf", "urdf_schema", "urdf_writer", "validation", "yamlfile")})

# the names of earlier releases, kept for one release: application layers and families
_MOVED = {
    "Frame": "hod_dynamics.model:Frame",
    "coriolis_matrix_derivatives": "hod_dynamics.closed_form:coriolis_matrix_derivatives",
    "external_wrench_derivatives": "hod_dynamics.closed_form:external_wrench_derivatives",
    "gravity_derivatives": "hod_dynamics.closed_form:gravity_derivatives",
    "mass_matrix_derivatives": "hod_dynamics.closed_form:mass_matrix_derivatives",
    "ActuatorSet": "hod_dynamics.actuators:ActuatorSet",
    "AntagonisticExponential": "hod_dynamics.actuators:AntagonisticExponential",
    "CubicSpring": "hod_dynamics.actuators:CubicSpring",
    "Rigid": "hod_dynamics.actuators:Rigid",
    "SEA": "hod_dynamics.actuators:SEA",
    "VSA": "hod_dynamics.actuators:VSA",
    "load_actuators": "hod_dynamics.actuators:load_actuators",
    "FeedforwardResult": "hod_dynamics.trajectory_feedforward:FeedforwardResult",
    "feedforward": "hod_dynamics.trajectory_feedforward:feedforward",
    "save_csv": "hod_dynamics.trajectory_feedforward:save_csv",
    "LimitReport": "hod_dynamics.trajectory:LimitReport",
    "LimitViolation": "hod_dynamics.trajectory:LimitViolation",
    "shipped_trajectories": "hod_dynamics.trajectory:shipped_trajectories",
    "share_path": "hod_dynamics.robots:share_path",
    "BagAnalysis": "hod_dynamics.analysis:BagAnalysis",
    "analyze_joint_states": "hod_dynamics.analysis:analyze_joint_states",
    "write_report": "hod_dynamics.analysis:write_report",
    "JointStates": "hod_dynamics.bag:JointStates",
    "read_joint_states": "hod_dynamics.bag:read_joint_states",
    "save_friction": "hod_dynamics.friction:save_friction",
}

__getattr__ = module_getattr(__name__, _MOVED, _LAZY, globals())


def __dir__():
    return sorted(set(globals()) | set(_LAZY))
