"""The hod_feedforward node next to a robot driver.

    ros2 launch hod_dynamics feedforward.launch.py urdf:=/path/robot.urdf actuators:=actuators_sea

Arguments: ``urdf`` (URDF or xacro file; empty: the node reads /robot_description),
``xacro_args`` (xacro arguments ``name:=value`` separated by spaces), ``config``
(parameter YAML, default share/hod_dynamics/config/feedforward.yaml), ``actuators`` (actuator
YAML file, or the name of one in share/hod_dynamics/config such as ``actuators_sea``; empty:
rigid joints), ``friction`` (``urdf`` or a friction YAML file such as analyze-bag's friction.yaml;
empty: no friction), ``namespace``, ``use_sim_time`` (true or false: follow /clock, e.g. with
``ros2 bag play --clock``).

An argument this file does not have, a ``use_sim_time`` other than true or false, or a
``urdf``, ``config``, ``actuators`` or ``friction`` that names no file stops the launch before
the node starts (status 1), naming the argument; the node is required: if it exits with an
error, the launch shuts down (status 1). ``jtc_feedforward.launch.py`` includes this file.
"""

from launch import LaunchDescription
from launch.actions import DeclareLaunchArgument, OpaqueFunction
from launch.substitutions import LaunchConfiguration
from launch_ros.actions import Node

from hod_dynamics.ros.launch_support import boolean_argument, check_arguments, existing_file, flag, required

ARGUMENTS = [
    DeclareLaunchArgument("urdf", default_value="", description="URDF or xacro file (empty: /robot_description)"),
    DeclareLaunchArgument("xacro_args", default_value="", description="xacro arguments name:=value, space-separated"),
    DeclareLaunchArgument("config", default_value="feedforward", description="parameter YAML file or shipped name"),
    DeclareLaunchArgument("actuators", default_value="", description="actuator YAML file or shipped name (empty: rigid)"),
    DeclareLaunchArgument("friction", default_value="",
                          description="joint friction: urdf, a friction YAML file (e.g. analyze-bag's friction.yaml) "
                                      "or shipped name (empty: none)"),
    DeclareLaunchArgument("namespace", default_value="", description="namespace of the node"),
    boolean_argument("use_sim_time", "false", "follow /clock"),
]


def _feedforward_node(context):
    check_arguments(context, __file__, [a.name for a in ARGUMENTS])
    actuators = LaunchConfiguration("actuators").perform(context)
    params = {"use_sim_time": flag(context, "use_sim_time"),
              "actuators": existing_file("actuators", actuators, "config", ".yaml")}
    friction = LaunchConfiguration("friction").perform(context)
    params["friction"] = friction if friction in ("", "urdf") else existing_file("friction", friction, "config",
                                                                                 ".yaml")
    urdf = existing_file("urdf", LaunchConfiguration("urdf").perform(context), "urdf", ".urdf")
    if urdf:
        params["urdf_path"] = urdf
    xacro_args = LaunchConfiguration("xacro_args").perform(context).split()
    if xacro_args:
        params["xacro_args"] = xacro_args
    config = LaunchConfiguration("config").perform(context) or "feedforward"
    config = existing_file("config", config, "config", ".yaml")
    node = Node(package="hod_dynamics", executable="feedforward_node", name="hod_feedforward",
                namespace=LaunchConfiguration("namespace"), output="screen", parameters=[config, params])
    return required(node, "hod_feedforward")


def generate_launch_description():
    return LaunchDescription(ARGUMENTS + [OpaqueFunction(function=_feedforward_node)])
