"""``demo_trajectory_publisher`` (node ``hod_demo_trajectory``): publishes a waypoint trajectory
(a shipped demo or a YAML file) as trajectory_msgs/JointTrajectory for the feedforward node.

Parameters: ``trajectory`` (string, shipped name or YAML path, default ``iiwa14_demo``),
``topic`` (string, default ``/hod_feedforward/trajectory``), ``period`` (double, s: republish
every period; 0 publishes once). It waits for a subscriber before the first message; the
message's header stamp is zero, so the receiver starts it on arrival.
"""

import sys

from rcl_interfaces.msg import ParameterDescriptor
from rclpy.node import Node
from trajectory_msgs.msg import JointTrajectory

from ..trajectory import load_trajectory
from .conversions import trajectory_msg
from .process import run


class DemoTrajectoryPublisher(Node):
    """Publishes the waypoints of a trajectory file once or periodically."""

    def __init__(self, **kwargs):
        super().__init__("hod_demo_trajectory", **kwargs)
        self.declare_parameter("trajectory", "iiwa14_demo", ParameterDescriptor(
            description="shipped trajectory name or YAML file", read_only=True))
        self.declare_parameter("topic", "/hod_feedforward/trajectory", ParameterDescriptor(
            description="where to publish", read_only=True))
        self.declare_parameter("period", 0.0, ParameterDescriptor(
            description="republish period in s (0: once)", read_only=True))
        traj = load_trajectory(self.get_parameter("trajectory").value)
        t = traj.waypoint_times
        self.message = trajectory_msg(traj.joint_names, t, traj(t))
        self.publisher = self.create_publisher(JointTrajectory, self.get_parameter("topic").value, 10)
        self.sent = 0
        self.period = self.get_parameter("period").value
        self.timer = self.create_timer(0.1, self._maybe_publish)  # until a subscriber shows up

    def _maybe_publish(self):
        if self.publisher.get_subscription_count() == 0:
            return
        self.publisher.publish(self.message)
        self.sent += 1
        self.get_logger().info(f"published trajectory {self.sent} ({len(self.message.points)} waypoints, "
                               f"{self.message.points[-1].time_from_start.sec} s)")
        if self.sent == 1:  # the polling timer is done: none, or one at the republish period
            self.destroy_timer(self.timer)
            if self.period > 0:
                self.timer = self.create_timer(self.period, self._maybe_publish)


def main(args=None):
    """Entry point of ``ros2 run hod_dynamics demo_trajectory_publisher``; returns the exit code."""
    return run(DemoTrajectoryPublisher, "hod_demo_trajectory", args)


if __name__ == "__main__":
    sys.exit(main())
