"""feedforward_node with real rclpy over DDS on loopback: trajectories as planners send them (of any
length, starting where the robot is), the stamped, named outputs a plotting tool reads."""

import re

import numpy as np

from ros_harness import context, feedforward_node, harness, rclpy, wait_for  # noqa: F401

import hod_dynamics as hd  # noqa: E402
from hod_dynamics.recordings.trajectory_cdr import decode_joint_trajectory, encode_joint_trajectory  # noqa: E402
from hod_dynamics.ros.conversions import trajectory_msg  # noqa: E402
from sensor_msgs.msg import JointState  # noqa: E402
from trajectory_msgs.msg import JointTrajectory  # noqa: E402

NS = "/hod_feedforward"


def test_a_single_point_two_seconds_ahead_joins_the_measured_moving_robot(harness):
    """A joint-state publisher reports the robot elsewhere and moving (the arm and a gripper
    in two messages); a one-point trajectory 2 s ahead then reaches the controller as points
    that start at the measured positions and velocities (1e-9) and reach the goal at 2 s."""
    node = feedforward_node(harness, publish_rate=100.0, initial_positions=[0.0] * 7, on_limit_violation="reject")
    model = node.model
    points = harness.collect(JointTrajectory, f"{NS}/trajectory_with_effort")
    states = harness.publisher(JointState, "/joint_states")
    q = np.array([0.3, 0.2, -0.1, -1.0, 0.1, 0.5, 0.2])
    v = np.array([0.05, -0.04, 0.03, 0.02, -0.06, 0.01, 0.08])
    arm = JointState(name=list(model.joint_names)[::-1], position=q[::-1].tolist(), velocity=v[::-1].tolist())
    gripper = JointState(name=["finger"], position=[0.01], velocity=[0.0])
    wait_for(lambda: [states.publish(m) for m in (arm, gripper)] and node.measured.messages >= 2, 10, "the states")
    goal = np.array([0.5, 0.4, 0.0, -1.2, 0.2, 0.6, 0.3])
    pub = harness.publisher(JointTrajectory, f"{NS}/trajectory")
    pub.publish(trajectory_msg(model.joint_names, [2.0], goal[None]))
    wait_for(lambda: points, 10, "the points for the controller")
    sent = points[-1].points
    np.testing.assert_allclose(sent[0].positions, q, rtol=0, atol=1e-9)
    np.testing.assert_allclose(sent[0].velocities, v, rtol=0, atol=1e-9)
    assert sent[0].time_from_start.sec == 0 and sent[0].time_from_start.nanosec == 0
    assert sent[-1].time_from_start.sec == 2 and sent[-1].time_from_start.nanosec == 0
    np.testing.assert_allclose(sent[-1].positions, goal, rtol=0, atol=1e-12)
    np.testing.assert_allclose(sent[-1].velocities, 0.0, atol=1e-9)
    tau = hd.inverse_dynamics(model, np.array([p.positions for p in sent]), np.array([p.velocities for p in sent]),
                              np.array([p.accelerations for p in sent]))
    np.testing.assert_allclose(np.array([p.effort for p in sent]), tau, rtol=0, atol=1e-9)


def test_without_a_measured_state_a_late_trajectory_joins_the_reference_said_once(harness, capfd):
    node = feedforward_node(harness, publish_rate=100.0, initial_positions=[0.1] * 7,
                            joint_states_topic="/no_driver/joint_states")
    points = harness.collect(JointTrajectory, f"{NS}/trajectory_with_effort")
    pub = harness.publisher(JointTrajectory, f"{NS}/trajectory")
    for k in range(2):
        pub.publish(trajectory_msg(node.model.joint_names, [1.0], np.full((1, 7), 0.2 + 0.01 * k)))
        wait_for(lambda: len(points) == k + 1, 10, "the points")
    np.testing.assert_allclose(points[0].points[0].positions, 0.1, atol=1e-12)
    np.testing.assert_allclose(points[0].points[0].velocities, 0.0, atol=1e-12)
    lines = [line for line in capfd.readouterr().err.splitlines() if "joined from the current reference" in line]
    assert len(lines) == 1 and "no measured state on /no_driver/joint_states" in lines[0], lines


def test_each_derivative_is_a_stamped_joint_state_named_by_joint(harness):
    """~/tau, ~/tau_dot, ~/tau_ddot (order 2): header stamp = the sample's time, name = the
    joints, effort = that derivative: the rows of ~/torque_derivatives, stamp for stamp."""
    node = feedforward_node(harness, publish_rate=50.0, initial_positions=[0.2] * 7)
    topics = {k: harness.collect(JointState, f"{NS}/{name}") for k, name in enumerate(("tau", "tau_dot", "tau_ddot"))}
    ff = harness.collect(JointTrajectory, f"{NS}/feedforward")
    pub = harness.publisher(JointTrajectory, f"{NS}/trajectory")
    times = np.linspace(0.0, 1.0, 5)
    pos = 0.2 + 0.1 * np.sin(np.linspace(0, np.pi, 5))[:, None] * np.ones(7)
    pub.publish(trajectory_msg(node.model.joint_names, times, pos))
    wait_for(lambda: all(len(box) > 30 for box in topics.values()) and len(ff) > 30, 15, "every topic")
    assert node.count_publishers(f"{NS}/tau_d3") == 0  # order 2: no ~/tau_d3
    stamp = lambda m: m.header.stamp.sec * 10**9 + m.header.stamp.nanosec  # noqa: E731
    by_stamp = {stamp(m): m.points[0] for m in ff}
    traj = hd.Trajectory.from_waypoints(node.model.joint_names, times, pos, continuity=4)
    checked = 0
    for k, box in topics.items():
        for m in box[-10:]:
            assert list(m.name) == list(node.model.joint_names) and not m.position and not m.velocity
            if stamp(m) in by_stamp:
                p = by_stamp[stamp(m)]
                t = p.time_from_start.sec + 1e-9 * p.time_from_start.nanosec
                want = hd.time_derivatives(node.model, traj.jet(np.array([t]), 4), 2)[0, k]
                np.testing.assert_allclose(m.effort, want, rtol=1e-9, atol=1e-9)
                checked += 1
    assert checked >= 15


def test_a_planners_long_trajectory_is_taken_in_off_the_executor(harness):
    """60,001 waypoints (ten minutes of a 100 Hz plan) sent as one message: the node answers a
    parameter request sent after it while it takes the trajectory in (off the executor: before,
    the executor waited for it), then sends its points, effort = inverse dynamics."""
    node = feedforward_node(harness, publish_rate=100.0)
    model = node.model
    points = []
    harness.client.create_subscription(JointTrajectory, f"{NS}/trajectory_with_effort",
                                       lambda raw: points.append(raw), 10, raw=True)
    pub = harness.publisher(JointTrajectory, f"{NS}/trajectory")
    n = 60001
    t = np.arange(n) * 0.01
    q = 0.2 + 0.3 * np.sin(2 * np.pi * t / 20.0)[:, None] * np.sin(np.pi * np.arange(n) / (n - 1))[:, None] ** 2 \
        * np.linspace(0.5, 1.0, 7)
    v, a = np.gradient(q, t, axis=0), None
    a = np.gradient(v, t, axis=0)
    v[[0, -1]] = a[[0, -1]] = 0.0
    from rcl_interfaces.srv import GetParameters

    params = harness.client.create_client(GetParameters, f"{NS}/get_parameters")
    assert params.wait_for_service(timeout_sec=15)
    pub.publish(encode_joint_trajectory(model.joint_names, np.round(t * 1e9).astype(np.int64), q, v, a))
    answer = params.call_async(GetParameters.Request(names=["order"]))
    wait_for(answer.done, 30, "the parameter's answer")
    points_when_answered = len(points)
    wait_for(lambda: points, 60, "the points of the long trajectory")
    assert answer.result().values[0].integer_value == 2 and points_when_answered == 0
    got = decode_joint_trajectory(points[-1])
    assert len(got.time_from_start_ns) >= n and node.stats["accepted"] == 1
    tau = hd.inverse_dynamics(model, got.positions, got.velocities, got.accelerations)
    np.testing.assert_allclose(got.effort, tau, rtol=0, atol=1e-9)
    np.testing.assert_allclose(got.positions[::1][np.searchsorted(got.time_from_start_ns, np.round(t[::600] * 1e9))],
                               q[::600], rtol=0, atol=1e-12)


def test_a_trajectory_over_the_size_limit_is_refused_naming_its_size_and_the_parameter(harness, capfd):
    node = feedforward_node(harness, publish_rate=100.0, max_trajectory_points=500)
    pub = harness.publisher(JointTrajectory, f"{NS}/trajectory")
    times = np.arange(600) * 0.01
    pub.publish(trajectory_msg(node.model.joint_names, times, np.zeros((600, 7)) + 0.1))
    wait_for(lambda: node.stats["rejected"] == 1, 10, "the refusal")
    line = [x for x in capfd.readouterr().err.splitlines() if "rejected trajectory" in x]
    assert len(line) == 1 and re.search(r"trajectory of 600 points refused: more than max_trajectory_points 500$",
                                        line[0]), line
    pub.publish(trajectory_msg(node.model.joint_names, [0.0, 6.0], np.zeros((2, 7)) + 0.1))  # 2 waypoints, 6 s
    wait_for(lambda: node.stats["rejected"] == 2, 10, "the refusal of its points")
    assert node.stats["last_rejection"] == ("trajectory of 2 waypoints over 6 s refused: with the 100 Hz points for a "
                                            "controller it makes 603 points, more than max_trajectory_points 500")
    assert node.stats["accepted"] == 0


def test_the_plotjuggler_layout_plots_what_the_node_publishes(harness):
    """config/plotjuggler_tau.xml parses; its curves are the effort of every joint of the shipped
    iiwa 14 on the JointState topics a node with order 2 publishes, each topic it subscribes is
    one of them, and none is missing."""
    import os
    import xml.etree.ElementTree as ET

    node = feedforward_node(harness, publish_rate=50.0)
    layout = ET.parse(os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "config",
                                   "plotjuggler_tau.xml")).getroot()
    def published():
        return {name for name, types in node.get_publisher_names_and_types_by_node(node.get_name(),
                                                                                    node.get_namespace())
                if types == ["sensor_msgs/msg/JointState"]}

    # the graph is filled by discovery, asynchronously even for the node's own publishers
    wait_for(lambda: len(published()) >= 3, 10, "the JointState publishers in the graph")
    published = published()
    assert published == {f"{NS}/tau", f"{NS}/tau_dot", f"{NS}/tau_ddot"}
    curves = [c.get("name") for c in layout.iter("curve")]
    expected = {f"{topic}/{joint}/effort" for topic in published for joint in node.model.joint_names}
    assert sorted(curves) == sorted(expected)
    assert {t.get("name") for t in layout.iter("topic")} == published
