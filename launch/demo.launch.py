"""Everything from the package alone: the shipped KUKA iiwa 14 model with series-elastic
actuators (config/actuators_sea.yaml), the feedforward node, and the shipped demo trajectory
republished every ``period`` seconds.

    ros2 launch hod_dynamics demo.launch.py
    ros2 topic echo /hod_feedforward/motor_reference

Arguments: ``actuators`` (actuator YAML file or shipped name, default ``actuators_sea``),
``period`` (s, default 10.0), ``use_sim_time`` (default false). The demo publisher sends its
first trajectory once the node is ready (subscribed to ~/trajectory). An ``actuators`` that
names no file stops the launch (status 1); both nodes are required: if one exits with an
error, the launch shuts down (status 1).
"""

from launch import LaunchDescription
from launch.actions import DeclareLaunchArgument, OpaqueFunction
from launch.substitutions import LaunchConfiguration
from launch_ros.actions import Node

from hod_dynamics.ros.launch_support import existing_file, required


def _nodes(context):
    actuators = existing_file("actuators", LaunchConfiguration("actuators").perform(context), "config", ".yaml")
    sim = LaunchConfiguration("use_sim_time").perform(context).lower() in ("1", "true")
    feedforward = Node(package="hod_dynamics", executable="feedforward_node", name="hod_feedforward",
                       output="screen",
                       parameters=[existing_file("config", "feedforward", "config", ".yaml"),
                                   {"urdf_path": existing_file("urdf", "iiwa14", "urdf", ".urdf"),
                                    "actuators": actuators, "use_sim_time": sim}])
    publisher = Node(package="hod_dynamics", executable="demo_trajectory_publisher",
                     name="hod_demo_trajectory", output="screen",
                     parameters=[{"trajectory": "iiwa14_demo", "topic": "/hod_feedforward/trajectory",
                                  "period": float(LaunchConfiguration("period").perform(context)),
                                  "use_sim_time": sim}])
    return required(feedforward, "hod_feedforward") + required(publisher, "hod_demo_trajectory")


def generate_launch_description():
    return LaunchDescription([
        DeclareLaunchArgument("actuators", default_value="actuators_sea", description="actuator config"),
        DeclareLaunchArgument("period", default_value="10.0", description="republish period (s)"),
        DeclareLaunchArgument("use_sim_time", default_value="false", description="follow /clock"),
        OpaqueFunction(function=_nodes),
    ])
