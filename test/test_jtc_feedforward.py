"""~/trajectory_with_effort as joint_trajectory_controller receives it: a subscriber playing the
controller's role (its topic, remapped as jtc_feedforward.launch.py does; its linear
interpolation of effort between points) finds the exact tau within the stated error over the
whole trajectory. Real rclpy over DDS on loopback."""

import numpy as np
import pytest

from ros_harness import context, feedforward_node, harness, wait_for  # noqa: F401 (fixtures)

import hod_dynamics as hd  # noqa: E402
from hod_dynamics.ros.conversions import array_from_multiarray, to_seconds, trajectory_msg  # noqa: E402
from builtin_interfaces.msg import Time  # noqa: E402
from std_msgs.msg import Float64MultiArray  # noqa: E402
from trajectory_msgs.msg import JointTrajectory  # noqa: E402

from test_effort_trajectory import jtc_effort  # noqa: E402  (the controller's rule, from its source)

NS = "/hod_feedforward"
CONTROLLER_TOPIC = "/joint_trajectory_controller/joint_trajectory"
TO_CONTROLLER = ["--ros-args", "-r", f"~/trajectory_with_effort:={CONTROLLER_TOPIC}"]


def demo_waypoints():
    """The shipped iiwa14 demo's waypoints (8 s, rest to rest)."""
    traj = hd.load_trajectory("iiwa14_demo")
    t = traj.waypoint_times
    return list(traj.joint_names), t, traj(t)


@pytest.mark.parametrize("rate", [100.0, 25.0])
def test_the_controller_interpolating_effort_finds_tau_within_the_stated_error(harness, rate):
    node = feedforward_node(harness, cli_args=TO_CONTROLLER, effort_trajectory_rate=rate, publish_rate=50.0)
    model = node.model
    received = harness.collect(JointTrajectory, CONTROLLER_TOPIC)
    derivatives = harness.collect(Float64MultiArray, f"{NS}/trajectory_derivatives")
    wait_for(lambda: node.pub_points.get_subscription_count() and node.pub_points_d.get_subscription_count(),
             15, "the controller's subscription")
    pub = harness.publisher(JointTrajectory, f"{NS}/trajectory")
    names, times, pos = demo_waypoints()
    order = [6, 2, 0, 4, 1, 3, 5]  # any joint order in
    msg = trajectory_msg([names[i] for i in order], times, pos[:, order], stamp=Time(sec=2_000_000_000, nanosec=5))
    pub.publish(msg)
    wait_for(lambda: received and derivatives, 20, "the trajectory with effort")
    got = received[-1]
    assert (got.header.stamp.sec, got.header.stamp.nanosec) == (2_000_000_000, 5)  # the planner's start time
    assert list(got.joint_names) == list(model.joint_names)
    t = np.array([to_seconds(p.time_from_start) for p in got.points])
    grid = np.arange(0, int(round(times[-1] * rate)) + 1) / rate
    np.testing.assert_allclose(t, np.union1d(grid, times), rtol=0, atol=1e-9)  # the grid and the waypoints
    q = np.array([[p.positions, p.velocities, p.accelerations] for p in got.points])
    effort = np.array([p.effort for p in got.points])

    # the oracle: the same spline built here, its exact tau on a dense grid (1 kHz, as a
    # controller samples) and at random instants, and after the end
    spline = hd.Trajectory.from_waypoints(names, times, pos, continuity=4).for_model(model)
    np.testing.assert_allclose(q, spline.jet(t, 2), rtol=0, atol=1e-12)
    np.testing.assert_allclose(effort, hd.inverse_dynamics(model, q[:, 0], q[:, 1], q[:, 2]), rtol=1e-10, atol=1e-9)
    dense = np.sort(np.r_[np.arange(0.0, times[-1] + 1.0, 0.001),
                          np.random.default_rng(2).uniform(0, times[-1], 3000)])
    exact = hd.time_derivatives(model, spline.jet(dense, 4), 2)
    error = np.abs(jtc_effort(t, effort, dense) - exact[:, 0]).max(axis=0)
    stated = (1 / rate) ** 2 / 8 * np.abs(exact[:, 2]).max(axis=0)  # doc/ros2_interface.md
    assert np.all(error <= stated), (error, stated)
    np.testing.assert_allclose(node.last_points.interpolation_error, stated, rtol=0.1)  # what the node reports

    # tau', tau'' at the same points
    d, labels = array_from_multiarray(derivatives[-1])
    assert labels == ["sample", "order", "joint"] and d.shape == (len(t), 2, 7)
    np.testing.assert_allclose(d, hd.time_derivatives(model, spline.jet(t, 4), 2)[:, 1:], rtol=1e-9,
                               atol=1e-9 * np.abs(d).max())
    # and the motion ends at rest, as the controller requires by default
    assert np.all(q[-1, 1:] == 0.0) or np.abs(q[-1, 1:]).max() < 1e-12


def test_a_trajectory_starting_later_reaches_the_controller_from_the_current_reference(harness):
    node = feedforward_node(harness, cli_args=TO_CONTROLLER, initial_positions=[0.1] * 7, publish_rate=50.0)
    received = harness.collect(JointTrajectory, CONTROLLER_TOPIC)
    wait_for(lambda: node.pub_points.get_subscription_count(), 15, "the controller's subscription")
    pub = harness.publisher(JointTrajectory, f"{NS}/trajectory")
    pub.publish(trajectory_msg(node.model.joint_names, [0.5], [[0.3] * 7]))  # one point, 0.5 s ahead
    wait_for(lambda: received, 15, "the trajectory with effort")
    points = received[-1].points
    assert to_seconds(points[0].time_from_start) == 0.0 and np.allclose(points[0].positions, 0.1, atol=1e-12)
    assert to_seconds(points[-1].time_from_start) == 0.5 and np.allclose(points[-1].positions, 0.3, atol=1e-12)
    assert len(points) == 51
