"""hod_dynamics: inverse dynamics of URDF robots and its time derivatives of any order.

What a user of the dynamics needs is importable from here::

    import hod_dynamics as hd
    model = hd.RobotModel.from_urdf("robot.urdf")
    tau = hd.inverse_dynamics(model, q, qd, qdd)          # (..., n)
    jets = hd.time_derivatives(model, qjet, order=2)      # (..., 3, n): tau, tau', tau''
    loop = hd.RobotModel.from_urdf("linkage.urdf", loops="urdf", actuated_joints=["crank"])
    jets = hd.time_derivatives(loop, yjet, order=2)       # (..., 3, na): tau_a and its derivatives
    qdd = hd.forward_dynamics(model, q, qd, tau)          # (..., n)
    J = hd.frame_jacobian(model, q, "tool_link")          # (..., 6, n), rows (omega, v)

The rest lives in wings, each a subpackage with a short face, imported by name: :mod:`.model`
(URDF, the model, inertial parameters, shipped robots), :mod:`.algorithms` (every algorithm of
the dynamics, the partials and the regressors), :mod:`.feedforward` (trajectories, feedforward,
SEA/VSA motor references), :mod:`.recordings` (bags and the fit of recorded positions),
:mod:`.replay` (recorded joint states against the model), :mod:`.identification`,
:mod:`.fleet` (many recordings), :mod:`.cli` (the command line) and :mod:`.ros` (the nodes).

Names and module paths of earlier releases still work for one release, with a
:class:`~hod_dynamics.errors.HodDynamicsDeprecationWarning` naming the new place.
:class:`Trajectory` and :func:`load_trajectory` (scipy) are imported on first use, and so is
``hd.analyze_bags`` (the analysis of many recordings, outside ``__all__``).
"""

from .algorithms.crba import kinetic_energy, mass_matrix
from .algorithms.dynamics import inverse_dynamics, time_derivatives
from .algorithms.eom import coriolis_matrix, gravity_torques
from .algorithms.floating import time_derivatives_floating
from .algorithms.forward import forward_dynamics
from .algorithms.friction import FrictionModel, load_friction
from .algorithms.kinematics import frame_jacobian, frame_pose
from .algorithms.loop_dynamics import constrained_dynamics
from .algorithms.partials import id_partials
from .algorithms.regressors import regressor, regressor_time_derivatives
from .algorithms.second_partials import id_second_partials
from .deprecation import install_moved_modules, module_getattr
from .errors import HodDynamicsError, HodDynamicsWarning, InputError, ModelError, TrajectoryError
from .model.loop_model import LoopModel
from .model.robot_model import RobotModel, inertial_parameters
from .model.robots import load_robot, robot_path, shipped_robots

__version__ = "0.1.0"

__all__ = [
    "RobotModel", "LoopModel", "load_robot", "robot_path", "shipped_robots",
    "inverse_dynamics", "time_derivatives", "time_derivatives_floating", "constrained_dynamics", "forward_dynamics",
    "mass_matrix", "kinetic_energy", "gravity_torques", "coriolis_matrix",
    "id_partials", "id_second_partials",
    "frame_pose", "frame_jacobian",
    "FrictionModel", "load_friction", "Trajectory", "load_trajectory",
    "inertial_parameters", "regressor", "regressor_time_derivatives",
    "HodDynamicsError", "InputError", "ModelError", "TrajectoryError", "HodDynamicsWarning",
]

WINGS = ("model", "algorithms", "feedforward", "recordings", "replay", "identification", "fleet", "cli", "ros")

# imported on first use: scipy's splines cost more than the rest of the package together (the
# wings and the other modules too: hd.replay, hd.units)
_LAZY = {"Trajectory": "hod_dynamics.feedforward.trajectory:Trajectory",
         "load_trajectory": "hod_dynamics.feedforward.trajectory:load_trajectory",
         "analyze_bags": "hod_dynamics.fleet.run:analyze_bags"}

# module paths of the release before the wings: {old path: the modules that hold its names now}
_OLD_MODULES = {f"hod_dynamics.{old}": tuple(f"hod_dynamics.{new}" for new in news) for old, news in {
    "spatial": ("model.spatial",), "urdf_schema": ("model.urdf_schema",), "urdf": ("model.urdf",),
    "inertia": ("model.inertia", "model.robot_model"), "validation": ("model.validation", "arrays"),
    "robots": ("model.robots",), "urdf_writer": ("model.urdf_writer",), "paper_examples": ("model.paper_examples",),
    "msgfields": ("recordings.msgfields",), "timebase": ("recordings.timebase",),
    "bag": ("recordings.bag", "recordings.bag_writer"), "smoothing": ("recordings.smoothing",),
    "joint_fit": ("recordings.joint_fit",), "position_noise": ("recordings.position_noise",),
    "backend": ("kernels.backend",), "jets": ("algorithms.jets",), "recursive": ("algorithms.recursive",),
    "dispatch": ("algorithms.dispatch",), "closed_form": ("algorithms.closed_form",), "crba": ("algorithms.crba",),
    "partials": ("algorithms.partials", "algorithms.world_frame"), "second_partials": ("algorithms.second_partials",),
    "floating": ("algorithms.floating",), "kinematics": ("algorithms.kinematics",),
    "friction": ("algorithms.friction",), "regressors": ("algorithms.regressors",),
    "dynamics": ("algorithms.dynamics",), "eom": ("algorithms.eom",), "forward": ("algorithms.forward",),
    "trajectory": ("feedforward.trajectory",), "actuators": ("feedforward.actuators",),
    "trajectory_feedforward": ("feedforward.trajectory_feedforward",),
    "effort_trajectory": ("feedforward.effort_trajectory",), "reference_stream": ("feedforward.reference_stream",),
    "base_parameters": ("identification.base_parameters",), "excitation": ("identification.excitation",),
    "analysis": ("replay.analysis", "replay.error_estimate", "replay.notes", "replay.report", "replay.bag_report",
                 "algorithms.friction"),
    "fleet_inputs": ("fleet.inputs",), "fleet_table": ("fleet.table",), "trends": ("fleet.trends",),
}.items()}
install_moved_modules(_OLD_MODULES)

# the names of earlier releases, kept for one release: application layers and families (the
# old module paths as attributes, hd.analysis, through _OLD_MODULES)
_MOVED = {
    "Frame": "hod_dynamics.model:Frame",
    "SecondPartialsData": "hod_dynamics.algorithms.second_partials:SecondPartialsData",
    "id_partials_directional": "hod_dynamics.algorithms.second_partials:id_partials_directional",
    "id_second_order_rate": "hod_dynamics.algorithms.second_partials:id_second_order_rate",
    "coriolis_matrix_derivatives": "hod_dynamics.algorithms.closed_form:coriolis_matrix_derivatives",
    "external_wrench_derivatives": "hod_dynamics.algorithms.closed_form:external_wrench_derivatives",
    "gravity_derivatives": "hod_dynamics.algorithms.closed_form:gravity_derivatives",
    "mass_matrix_derivatives": "hod_dynamics.algorithms.closed_form:mass_matrix_derivatives",
    "ActuatorSet": "hod_dynamics.feedforward.actuators:ActuatorSet",
    "AntagonisticExponential": "hod_dynamics.feedforward.actuators:AntagonisticExponential",
    "CubicSpring": "hod_dynamics.feedforward.actuators:CubicSpring",
    "Rigid": "hod_dynamics.feedforward.actuators:Rigid",
    "SEA": "hod_dynamics.feedforward.actuators:SEA",
    "VSA": "hod_dynamics.feedforward.actuators:VSA",
    "load_actuators": "hod_dynamics.feedforward.actuators:load_actuators",
    "FeedforwardResult": "hod_dynamics.feedforward.trajectory_feedforward:FeedforwardResult",
    "save_csv": "hod_dynamics.feedforward.trajectory_feedforward:save_csv",
    "LimitReport": "hod_dynamics.feedforward.trajectory:LimitReport",
    "LimitViolation": "hod_dynamics.feedforward.trajectory:LimitViolation",
    "shipped_trajectories": "hod_dynamics.feedforward.trajectory:shipped_trajectories",
    "share_path": "hod_dynamics.model.robots:share_path",
    "BagAnalysis": "hod_dynamics.replay.analysis:BagAnalysis",
    "analyze_joint_states": "hod_dynamics.replay.analysis:analyze_joint_states",
    "write_report": "hod_dynamics.replay.report:write_report",
    "JointStates": "hod_dynamics.recordings.bag:JointStates",
    "read_joint_states": "hod_dynamics.recordings.bag:read_joint_states",
    "save_friction": "hod_dynamics.algorithms.friction:save_friction",
}

__getattr__ = module_getattr(__name__, _MOVED, _LAZY, globals(), _OLD_MODULES)


def __dir__():
    return sorted(__all__ + ["__version__"])
