"""``demo_trajectory_publisher`` (node ``hod_demo_trajectory``): publishes a waypoint trajectory
(a shipped demo or a YAML file) as trajectory_msgs/JointTrajectory for the feedforward node.

Parameters: see PARAMETERS. It publishes only once a subscriber exists: the feedforward node
subscribes to ``~/trajectory`` only when it is ready to serve, so this waits for readiness. The
message's header stamp is zero, so the receiver starts it on arrival.
"""


from rclpy.node import Node
from trajectory_msgs.msg import JointTrajectory

from ..errors import HodDynamicsError
from ..feedforward.trajectory import load_trajectory
from .conversions import trajectory_msg
from .parameters import Spec, declare, value_of
from .process import StartupError, exit_process, run

PARAMETERS = (
    Spec("trajectory", "string", "iiwa14_demo", "shipped trajectory name or waypoint YAML file"),
    Spec("topic", "string", "/hod_feedforward/trajectory", "where to publish"),
    Spec("period", "double", 0.0, "republish period (0: once)", "s", range=(0.0, 86400.0)),
)


class DemoTrajectoryPublisher(Node):
    """Publishes the waypoints of a trajectory file once or periodically."""

    def __init__(self, **kwargs):
        super().__init__("hod_demo_trajectory", **kwargs)
        declare(self, PARAMETERS)
        p = {spec.name: value_of(self, spec) for spec in PARAMETERS}
        try:
            traj = load_trajectory(p["trajectory"])
        except (HodDynamicsError, OSError) as exc:
            raise StartupError(f"parameter trajectory: {exc}") from None
        t = traj.waypoint_times
        self.message = trajectory_msg(traj.joint_names, t, traj(t))
        self.publisher = self.create_publisher(JointTrajectory, p["topic"], 10)
        self.sent = 0
        self.period = p["period"]
        self.get_logger().info(f"waiting for the subscriber on {self.publisher.topic_name} (the feedforward "
                               "node subscribes once it is ready)")
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
    exit_process(main())
