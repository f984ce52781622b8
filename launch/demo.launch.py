"""Everything from the package alone: the shipped KUKA iiwa 14 model with series-elastic
actuators (config/actuators_sea.yaml), the feedforward node, and the shipped demo trajectory
republished every ``period`` seconds.

    ros2 launch hod_dynamics demo.launch.py
    ros2 topic echo /hod_feedforward/motor_reference

Arguments: ``actuators`` (actuator YAML file or shipped name, default ``actuators_sea``),
``period`` (s, default 10.0), ``use_sim_time`` (true or false, default false). The demo
publisher sends its first trajectory once the node is ready (subscribed to ~/trajectory). An
argument this file does not have, a ``use_sim_time`` other than true or false, a ``period``
that is not a number or an ``actuators`` that names no file stops the launch (status 1),
naming the argument; both nodes are required: if one exits with an error, the launch shuts
down (status 1).
"""

from launch import LaunchDescription
from launch.actions import DeclareLaunchArgument, OpaqueFunction
from launch.substitutions import LaunchConfiguration
from launch_ros.actions import Node

from hod_dynamics.ros.launch_support import (boolean_argument, check_arguments, existing_file, flag, number,
                                             required)

ARGUMENTS = [
    DeclareLaunchArgument("actuators", default_value="actuators_sea", description="actuator config"),
    DeclareLaunchArgument("period", default_value="10.0", description="republish period (s)"),
    boolean_argument("use_sim_time", "false", "follow /clock"),
]


def _nodes(context):
    check_arguments(context, __file__, [a.name for a in ARGUMENTS])
    actuators = existing_file("actuators", LaunchConfiguration("actuators").perform(context), "config", ".yaml")
    period = number(context, "period", "s")
    sim = flag(context, "use_sim_time")
    feedforward = Node(package="hod_dynamics", executable="feedforward_node", name="hod_feedforward",
                       output="screen",
                       parameters=[existing_file("config", "feedforward", "config", ".yaml"),
                                   {"urdf_path": existing_file("urdf", "iiwa14", "urdf", ".urdf"),
                                    "actuators": actuators, "use_sim_time": sim}])
    publisher = Node(package="hod_dynamics", executable="demo_trajectory_publisher",
                     name="hod_demo_trajectory", output="screen",
                     parameters=[{"trajectory": "iiwa14_demo", "topic": "/hod_feedforward/trajectory",
                                  "period": period, "use_sim_time": sim}])
    return required(feedforward, "hod_feedforward") + required(publisher, "hod_demo_trajectory")


def generate_launch_description():
    return LaunchDescription(ARGUMENTS + [OpaqueFunction(function=_nodes)])
