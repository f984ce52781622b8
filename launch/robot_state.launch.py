"""Publish a robot model on /robot_description (transient local) with robot_state_publisher.

    ros2 launch hod_dynamics robot_state.launch.py robot:=iiwa14
    ros2 launch hod_dynamics robot_state.launch.py urdf:=/path/to/robot.urdf
    ros2 launch hod_dynamics robot_state.launch.py urdf:=/path/to/robot.urdf.xacro xacro_args:="prefix:=left_"

Arguments: ``robot`` (a model shipped in share/hod_dynamics/urdf: iiwa14, planar_2r, solo12;
default iiwa14), ``urdf`` (a URDF or xacro file that overrides ``robot``), ``xacro_args`` (xacro
arguments ``name:=value`` separated by spaces; a ``.xacro`` file is expanded with the xacro
package), ``namespace``, ``use_sim_time`` (true or false).
The hod_dynamics nodes read their model from this topic when no parameter gives one.

Needs the ``robot_state_publisher`` package (``sudo apt install ros-<distro>-robot-state-publisher``),
which only this launch file uses: it is not a dependency of hod_dynamics, and the launch stops
with that line when it is missing. An argument this file does not have, a ``use_sim_time`` other
than true or false, or a ``robot``/``urdf`` that names no file stops the launch (status 1),
naming the argument; robot_state_publisher is required: if it exits with an error, the launch
shuts down (status 1).
"""

from launch import LaunchDescription
from launch.actions import DeclareLaunchArgument, OpaqueFunction
from launch.substitutions import LaunchConfiguration
from launch_ros.actions import Node

from hod_dynamics.ros.launch_support import (boolean_argument, check_arguments, existing_file, flag, required,
                                             required_package)
from hod_dynamics.model.urdf import read_urdf_text, xacro_args_from_strings

ARGUMENTS = [
    DeclareLaunchArgument("robot", default_value="iiwa14", description="shipped robot model (iiwa14, planar_2r, solo12)"),
    DeclareLaunchArgument("urdf", default_value="", description="URDF or xacro file; overrides robot"),
    DeclareLaunchArgument("xacro_args", default_value="", description="xacro arguments name:=value, space-separated"),
    DeclareLaunchArgument("namespace", default_value="", description="namespace of the node"),
    boolean_argument("use_sim_time", "false", "follow /clock"),
]


def _robot_state_publisher(context):
    check_arguments(context, __file__, [a.name for a in ARGUMENTS])
    required_package("robot_state_publisher", "ros-$ROS_DISTRO-robot-state-publisher")
    urdf = (existing_file("urdf", LaunchConfiguration("urdf").perform(context), "urdf", ".urdf")
            or existing_file("robot", LaunchConfiguration("robot").perform(context), "urdf", ".urdf"))
    xacro_args = xacro_args_from_strings(LaunchConfiguration("xacro_args").perform(context).split(),
                                         "launch argument xacro_args")
    description = read_urdf_text(urdf, xacro_args=xacro_args)  # a .xacro is expanded
    node = Node(package="robot_state_publisher", executable="robot_state_publisher",
                namespace=LaunchConfiguration("namespace"), output="screen",
                parameters=[{"robot_description": description, "use_sim_time": flag(context, "use_sim_time")}])
    return required(node, "robot_state_publisher")


def generate_launch_description():
    return LaunchDescription(ARGUMENTS + [OpaqueFunction(function=_robot_state_publisher)])
