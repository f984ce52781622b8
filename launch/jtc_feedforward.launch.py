"""The hod_feedforward node feeding ros2_control's joint_trajectory_controller: every planned
trajectory (on ``/hod_feedforward/trajectory``) goes to the controller resampled with the
inverse-dynamics torque in ``effort`` at every point (``~/trajectory_with_effort``, remapped to
``<controller>/joint_trajectory``), and every goal of the node's FollowJointTrajectory action
(MoveIt's) to the controller's (``<controller>/follow_joint_trajectory``), joined from the robot's
state on ``joint_states``. The names are relative: with ``namespace:=robot2`` they are the
controller's and the driver's in ``/robot2``.

    ros2 launch hod_dynamics jtc_feedforward.launch.py urdf:=iiwa14
    ros2 topic pub --once /hod_feedforward/trajectory trajectory_msgs/msg/JointTrajectory "..."

The controller itself is the robot's: config/jtc_iiwa14_effort.yaml (command interface
``effort``: the controller's PID plus this effort as feedforward) and
config/jtc_iiwa14_position_effort.yaml (``position, effort``: positions to the position
interface, this effort passed through) show both setups for the shipped iiwa14, to load with the
robot's controller_manager. Send trajectories to this node, not to the controller: the
controller then gets each one once, with its torques.

Arguments: those of feedforward.launch.py (``urdf``, ``xacro_args``, ``config``, ``actuators``,
``friction``, ``namespace``, ``use_sim_time``) and ``controller`` (the joint_trajectory_controller's
name, default ``joint_trajectory_controller``). An argument this file does not have stops the
launch (status 1), naming it.
"""

import os

from launch import LaunchDescription
from launch.actions import DeclareLaunchArgument, GroupAction, IncludeLaunchDescription, OpaqueFunction
from launch.launch_description_sources import PythonLaunchDescriptionSource
from launch.substitutions import LaunchConfiguration
from launch_ros.actions import SetParameter, SetRemap

from hod_dynamics.ros.launch_support import check_arguments

FEEDFORWARD = os.path.join(os.path.dirname(os.path.abspath(__file__)), "feedforward.launch.py")
PASSED = ["urdf", "xacro_args", "config", "actuators", "friction", "namespace", "use_sim_time"]  # its own
ARGUMENTS = [DeclareLaunchArgument("controller", default_value="joint_trajectory_controller",
                                   description="name of the joint_trajectory_controller to feed")]


def generate_launch_description():
    check = OpaqueFunction(function=lambda context: check_arguments(
        context, __file__, PASSED + [a.name for a in ARGUMENTS]))
    controller = LaunchConfiguration("controller")
    to_controller = SetRemap(src="~/trajectory_with_effort", dst=[controller, "/joint_trajectory"])
    action = SetParameter(name="controller_action", value=[controller, "/follow_joint_trajectory"])
    states = SetParameter(name="joint_states_topic", value="joint_states")
    return LaunchDescription(ARGUMENTS + [check, GroupAction([
        to_controller, action, states, IncludeLaunchDescription(PythonLaunchDescriptionSource(FEEDFORWARD))])])
