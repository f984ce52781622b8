"""hod_dynamics: inverse dynamics of URDF robots and its time derivatives of any order.

The public API (everything a user needs is importable from here)::

    import hod_dynamics as hd
    model = hd.RobotModel.from_urdf("robot.urdf")
    tau = hd.inverse_dynamics(model, q, qd, qdd)          # (..., n)
    jets = hd.time_derivatives(model, qjet, order=2)      # (..., 3, n): tau, tau', tau''
    qdd = hd.forward_dynamics(model, q, qd, tau)          # (..., n)
    J = hd.frame_jacobian(model, q, "tool_link")          # (..., 6, n), rows (omega, v)
"""

from .analysis import BagAnalysis, analyze_joint_states, write_report
from .actuators import (SEA, VSA, ActuatorSet, AntagonisticExponential, CubicSpring, Rigid,
                        load_actuators)
from .closed_form import (coriolis_matrix_derivatives, external_wrench_derivatives,
                          gravity_derivatives, mass_matrix_derivatives)
from .crba import kinetic_energy, mass_matrix
from .bag import JointStates, read_joint_states
from .dynamics import inverse_dynamics, time_derivatives
from .eom import coriolis_matrix, gravity_torques
from .errors import (HodDynamicsError, HodDynamicsWarning, InputError, KernelCompileWarning, ModelError,
                     TrajectoryError)
from .trajectory_feedforward import FeedforwardResult, feedforward, save_csv
from .forward import forward_dynamics
from .friction import FrictionModel, load_friction, save_friction
from .kinematics import frame_jacobian, frame_pose
from .model import Frame, RobotModel
from .partials import (SecondPartialsData, id_partials, id_partials_directional,
                       id_second_order_rate, id_second_partials)
from .robots import load_robot, robot_path, share_path, shipped_robots
from .trajectory import (LimitReport, LimitViolation, Trajectory, load_trajectory,
                         shipped_trajectories)
from . import floating, paper_examples  # noqa: F401  re-exported: hd.floating, hd.paper_examples

__version__ = "0.1.0"

__all__ = [
    "Frame", "HodDynamicsError", "HodDynamicsWarning", "InputError", "KernelCompileWarning", "ModelError",
    "RobotModel", "TrajectoryError",
    "coriolis_matrix_derivatives", "external_wrench_derivatives", "gravity_derivatives",
    "mass_matrix_derivatives",
    "SecondPartialsData", "id_partials", "id_partials_directional", "id_second_order_rate",
    "id_second_partials",
    "coriolis_matrix", "forward_dynamics", "frame_jacobian", "frame_pose", "gravity_torques",
    "inverse_dynamics", "kinetic_energy", "load_robot", "mass_matrix", "robot_path",
    "shipped_robots", "time_derivatives",
    "ActuatorSet", "AntagonisticExponential", "CubicSpring", "FeedforwardResult", "LimitReport",
    "LimitViolation", "Rigid", "SEA", "Trajectory", "VSA", "feedforward", "load_actuators",
    "load_trajectory", "save_csv", "share_path", "shipped_trajectories",
    "BagAnalysis", "JointStates", "analyze_joint_states", "read_joint_states", "write_report",
    "FrictionModel", "load_friction", "save_friction",
]
