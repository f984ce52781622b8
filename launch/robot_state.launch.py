"""Publish a robot model on /robot_description (transient local) with robot_state_publisher.

    ros2 launch hod_dynamics robot_state.launch.py robot:=iiwa14
    ros2 launch hod_dynamics robot_state.launch.py urdf:=/path/to/robot.urdf
    ros2 launch hod_dynamics robot_state.launch.py urdf:=/path/to/robot.urdf.xacro xacro_args:="prefix:=left_"

Arguments: ``robot`` (a model shipped in share/hod_dynamics/urdf: iiwa14, planar_2r; default
iiwa14), ``urdf`` (a URDF or xacro file that overrides ``robot``), ``xacro_args`` (xacro
arguments ``name:=value`` separated by spaces; a ``.xacro`` file is expanded with the xacro
package), ``namespace``, ``use_sim_time``.
The hod_dynamics nodes read their model from this topic when no parameter gives one.
"""

import os

from ament_index_python.packages import get_package_share_directory
from launch import LaunchDescription
from launch.actions import DeclareLaunchArgument, OpaqueFunction
from launch.substitutions import LaunchConfiguration
from launch_ros.actions import Node

from hod_dynamics.urdf import read_urdf_text, xacro_args_from_strings


def _robot_state_publisher(context):
    urdf = LaunchConfiguration("urdf").perform(context)
    if not urdf:
        robot = LaunchConfiguration("robot").perform(context)
        urdf = os.path.join(get_package_share_directory("hod_dynamics"), "urdf", f"{robot}.urdf")
    xacro_args = xacro_args_from_strings(LaunchConfiguration("xacro_args").perform(context).split(),
                                         "launch argument xacro_args")
    description = read_urdf_text(urdf, xacro_args=xacro_args)  # a .xacro is expanded
    use_sim_time = LaunchConfiguration("use_sim_time").perform(context).lower() in ("1", "true")
    return [Node(package="robot_state_publisher", executable="robot_state_publisher",
                 namespace=LaunchConfiguration("namespace"), output="screen",
                 parameters=[{"robot_description": description, "use_sim_time": use_sim_time}])]


def generate_launch_description():
    return LaunchDescription([
        DeclareLaunchArgument("robot", default_value="iiwa14",
                              description="shipped robot model (iiwa14, planar_2r)"),
        DeclareLaunchArgument("urdf", default_value="", description="URDF or xacro file; overrides robot"),
        DeclareLaunchArgument("xacro_args", default_value="", description="xacro arguments name:=value, space-separated"),
        DeclareLaunchArgument("namespace", default_value="", description="namespace of the node"),
        DeclareLaunchArgument("use_sim_time", default_value="false", description="follow /clock"),
        OpaqueFunction(function=_robot_state_publisher),
    ])
