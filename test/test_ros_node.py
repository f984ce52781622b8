"""feedforward_node with real rclpy over DDS on loopback: in-process and as a separate process
started from its installed executable."""

import json
import os
import re
import signal
import time

import numpy as np
import pytest

from ros_harness import (LATCHED, context, feedforward_node, harness, installed_executable, rclpy,  # noqa: F401
                         start_process, wait_for)

import hod_dynamics as hd  # noqa: E402
from hod_dynamics.feedforward.trajectory_feedforward import feedforward  # noqa: E402
from hod_dynamics.feedforward.actuators import load_actuators  # noqa: E402
from hod_dynamics.ros.conversions import array_from_multiarray, to_seconds, trajectory_msg  # noqa: E402
from rclpy.parameter import Parameter  # noqa: E402
from diagnostic_msgs.msg import DiagnosticArray  # noqa: E402
from rosgraph_msgs.msg import Clock  # noqa: E402
from std_msgs.msg import Float64MultiArray, String  # noqa: E402
from std_srvs.srv import Trigger  # noqa: E402
from trajectory_msgs.msg import JointTrajectory  # noqa: E402

IIWA_URDF = open(hd.robot_path("iiwa14"), encoding="utf-8").read()
NS = "/hod_feedforward"
SEA_YAML = "{iiwa_joint_2: {type: sea, stiffness: 1000.0, motor_inertia: 0.5, motor_damping: 1.0}, " \
           "iiwa_joint_4: {type: sea, stiffness: 800.0, motor_inertia: 0.3, motor_damping: 0.5, gear_ratio: 100}}"


def make_node(harness, **params):
    params.setdefault("robot_description", IIWA_URDF)
    return feedforward_node(harness, **params)


def motion(model, duration=1.0, amplitude=0.4, n_points=5):
    """A rest-to-rest waypoint trajectory (times, positions) in model order."""
    times = np.linspace(0.0, duration, n_points)
    shape = np.sin(np.linspace(0, np.pi, n_points))[:, None] * np.linspace(0.5, 1.0, model.n_dof)
    return times, amplitude * shape + 0.1 + np.linspace(0.0, 0.05, n_points)[:, None]


def test_feedforward_equals_inverse_dynamics_and_derivatives_are_consistent(harness):
    node = make_node(harness, publish_rate=200.0)
    model = node.model
    ff = harness.collect(JointTrajectory, f"{NS}/feedforward")
    tau_d = harness.collect(Float64MultiArray, f"{NS}/torque_derivatives")
    # both streams must be matched before the first sample, so that their messages pair up 1:1
    wait_for(lambda: node.pub_ff.get_subscription_count() and node.pub_tau.get_subscription_count(), 15,
             "the test's subscriptions to be matched")
    pub = harness.publisher(JointTrajectory, f"{NS}/trajectory")
    times, pos = motion(model, duration=2.0)
    order = [3, 0, 6, 1, 5, 2, 4]  # joint names in any order
    pub.publish(trajectory_msg([model.joint_names[i] for i in order], times, pos[:, order]))
    wait_for(lambda: ff and to_seconds(ff[-1].points[0].time_from_start) > 2.05 and len(tau_d) >= len(ff),
             20, "feedforward samples past the end of the trajectory")
    samples = [m for m in ff if 0.05 < to_seconds(m.points[0].time_from_start) < 1.95]
    assert len(samples) > 30, f"only {len(samples)} samples in 2 s"
    for m in samples:
        p = m.points[0]
        assert list(m.joint_names) == list(model.joint_names)
        tau = hd.inverse_dynamics(model, p.positions, p.velocities, p.accelerations)
        np.testing.assert_allclose(p.effort, tau, rtol=1e-9, atol=1e-9 * np.abs(tau).max())
    n = min(len(ff), len(tau_d))
    jets = np.array([array_from_multiarray(m)[0] for m in tau_d[:n]])
    assert array_from_multiarray(tau_d[0])[1] == ["order", "joint"] and jets.shape[1:] == (3, 7)
    efforts = np.array([m.points[0].effort for m in ff[:n]])
    np.testing.assert_allclose(jets[:, 0], efforts, rtol=0, atol=1e-12)
    # tau^(1) against central differences of tau over the stamps, where ticks were on time
    t = np.array([to_seconds(m.header.stamp) for m in ff[:n]])
    inside = [i for i in range(1, n - 1) if 0.1 < to_seconds(ff[i].points[0].time_from_start) < 1.9
              and t[i + 1] - t[i - 1] < 0.02]
    assert len(inside) >= 5, "too few on-time ticks to difference"
    fd = np.array([(efforts[i + 1] - efforts[i - 1]) / (t[i + 1] - t[i - 1]) for i in inside])
    assert np.abs(fd - jets[inside, 1]).max() < 0.05 * np.abs(jets[:, 1]).max()


def test_holds_still_before_and_after_the_trajectory(harness):
    node = make_node(harness, publish_rate=100.0, initial_positions=[0.2] * 7)
    ff = harness.collect(JointTrajectory, f"{NS}/feedforward")
    wait_for(lambda: len(ff) > 3, 10, "feedforward before any trajectory")
    p = ff[-1].points[0]
    assert p.positions.tolist() == [0.2] * 7 and p.velocities.tolist() == [0.0] * 7
    gravity = hd.inverse_dynamics(node.model, [0.2] * 7, np.zeros(7), np.zeros(7))
    # numpy or compiled path, whichever served: equal to rounding (joint 1's gravity torque is 0)
    np.testing.assert_allclose(p.effort, gravity, rtol=1e-12, atol=1e-12)
    pub = harness.publisher(JointTrajectory, f"{NS}/trajectory")
    times, pos = motion(node.model, duration=0.3)
    pub.publish(trajectory_msg(node.model.joint_names, times, pos))
    wait_for(lambda: 0.35 < to_seconds(ff[-1].points[0].time_from_start) < 10, 10, "the end of the trajectory")
    moved = [m for m in ff if np.abs(m.points[0].velocities).max() > 0]
    assert moved, "no sample while moving"
    p = ff[-1].points[0]
    np.testing.assert_allclose(p.positions, pos[-1], rtol=0, atol=1e-12)
    assert np.abs(p.velocities).max() == 0 and np.abs(p.accelerations).max() == 0


def _drive(harness, node, topic, derivatives_topic, what):
    """Publish the test motion to ``node``; returns (its Trajectory, up to 20 messages of
    ``topic`` while moving, their times, the messages of ``derivatives_topic``)."""
    model = node.model
    messages = harness.collect(JointTrajectory, f"{NS}/{topic}")
    derivatives = harness.collect(Float64MultiArray, f"{NS}/{derivatives_topic}")
    pub = harness.publisher(JointTrajectory, f"{NS}/trajectory")
    times, pos = motion(model)
    pub.publish(trajectory_msg(model.joint_names, times, pos))
    wait_for(lambda: len(messages) > 40, 15, what)
    traj = hd.Trajectory.from_waypoints(model.joint_names, times, pos, continuity=4)
    moving = [m for m in messages if 0.05 < to_seconds(m.points[0].time_from_start) < 0.95][:20]
    return traj, moving, np.array([to_seconds(m.points[0].time_from_start) for m in moving]), derivatives


def test_motor_references_match_the_actuator_layer(harness):
    node = make_node(harness, publish_rate=100.0, actuators=SEA_YAML)
    model = node.model
    traj, moving, t, motor_d = _drive(harness, node, "motor_reference", "motor_derivatives", "motor references")
    actuators = load_actuators(__import__("yaml").safe_load(SEA_YAML), model)
    expected = feedforward(model, traj, t, 2, actuators)
    got_theta = np.array([m.points[0].positions for m in moving])
    got_u = np.array([m.points[0].effort for m in moving])
    np.testing.assert_allclose(got_theta, expected.thetajet[:, 0], rtol=1e-9, atol=1e-12)
    np.testing.assert_allclose(got_u, expected.u, rtol=1e-9, atol=1e-9)
    assert not np.allclose(got_theta[:, 1], expected.qjet[:, 0, 1])  # the SEA joint deflects
    assert array_from_multiarray(motor_d[-1])[0].shape == (3, 7)


def test_friction_parameter_adds_the_friction_jets(harness):
    friction = "{friction: {iiwa_joint_1: {coulomb: 2.0, viscous: 0.5, offset: 0.1, v_s: 0.05}}}"
    node = make_node(harness, publish_rate=100.0, friction=friction)
    model = node.model
    traj, moving, t, derivatives = _drive(harness, node, "feedforward", "torque_derivatives", "feedforward samples")
    expected = feedforward(model, traj, t, 2, friction=hd.load_friction(friction, model))
    rigid = feedforward(model, traj, t, 2)
    np.testing.assert_allclose([m.points[0].effort for m in moving], expected.taujet[:, 0], rtol=1e-9, atol=1e-9)
    assert np.abs(expected.taujet[:, :, 0] - rigid.taujet[:, :, 0]).max() > 0.1   # joint 1's friction shows
    assert array_from_multiarray(derivatives[-1])[0].shape == (3, 7)


def test_model_from_urdf_path_parameter(harness, tmp_path):
    path = tmp_path / "robot.urdf"
    path.write_text(IIWA_URDF)
    node = make_node(harness, robot_description="", urdf_path=str(path))
    assert node.model.n_dof == 7


def test_model_from_robot_description_topic(harness):
    pub = harness.client.create_publisher(String, "/robot_description", LATCHED)
    pub.publish(String(data="<robot name='broken'>"))  # rejected, the node keeps waiting
    node = make_node(harness, robot_description="")
    wait_for(lambda: pub.get_subscription_count() > 0, 15, "the node's /robot_description subscription")
    time.sleep(0.3)
    assert node.model is None
    pub.publish(String(data=IIWA_URDF))
    wait_for(lambda: node.model is not None, 15, "the model from /robot_description")
    assert node.model.joint_names[0] == "iiwa_joint_1"


BAD_MESSAGES = [
    ("nan", lambda names, t, p: trajectory_msg(names, t, np.where(np.arange(p.size).reshape(p.shape) == 3, np.nan, p))),
    ("unknown joint", lambda names, t, p: trajectory_msg(names[:-1] + ["elbow"], t, p)),
    ("missing joint", lambda names, t, p: trajectory_msg(names[:-1], t, p[:, :-1])),
    ("times not increasing", lambda names, t, p: trajectory_msg(names, t[::-1], p)),
    ("empty", lambda names, t, p: trajectory_msg(names, [], p[:0])),
    ("negative time", lambda names, t, p: trajectory_msg(names, t - 0.25, p)),
    ("short point", lambda names, t, p: _shortened(trajectory_msg(names, t, p), 2)),
]


def _shortened(msg, k):
    """``msg`` with point k one position short."""
    msg.points[k].positions = msg.points[k].positions[:-1]
    return msg


def test_thousand_malformed_trajectories_interleaved_with_valid_ones(harness, capfd):
    node = make_node(harness, publish_rate=50.0)
    model = node.model
    names = list(model.joint_names)
    pub = harness.publisher(JointTrajectory, f"{NS}/trajectory", qos=1000)
    diag = harness.collect(DiagnosticArray, "/diagnostics")
    times, pos = motion(model, duration=0.5)
    # 1000 bad ones, a valid one after every 10th; sent in bursts of 5 (the node's queue is 10 deep)
    plan = [("good", k) if k % 11 == 10 else ("bad", k) for k in range(1100)]
    for start in range(0, len(plan), 5):
        handled = node.stats["rejected"] + node.stats["accepted"]
        for kind, k in plan[start:start + 5]:
            if kind == "good":
                pub.publish(trajectory_msg(names, times, pos + 0.001 * k))
            else:
                pub.publish(BAD_MESSAGES[k % len(BAD_MESSAGES)][1](names, times, pos))
        burst = len(plan[start:start + 5])
        wait_for(lambda: node.stats["rejected"] + node.stats["accepted"] == handled + burst, 10,
                 f"messages {start}..{start + burst - 1} handled")
    assert node.stats["rejected"] == 1000 and node.stats["accepted"] == 100
    logged = [line for line in capfd.readouterr().err.splitlines() if "rejected trajectory:" in line]
    assert len(logged) == 1000, f"{len(logged)} rejections logged"
    # the last valid trajectory is the one being served
    ff = harness.collect(JointTrajectory, f"{NS}/feedforward")
    last = max(k for kind, k in plan if kind == "good")
    wait_for(lambda: ff and np.allclose(ff[-1].points[0].positions, pos[-1] + 0.001 * last, rtol=0, atol=1e-12),
             10, "the end of the last valid trajectory")
    wait_for(lambda: any(kv.key == "rejected_messages" and kv.value == "1000"
                         for m in diag for s in m.status for kv in s.values), 5, "diagnostics counting 1000 rejections")


def test_each_kind_of_bad_trajectory_names_its_fault(harness):
    node = make_node(harness, publish_rate=20.0)
    names = list(node.model.joint_names)
    times, pos = motion(node.model)
    pub = harness.publisher(JointTrajectory, f"{NS}/trajectory")
    expected = {"nan": r"^waypoint 0, joint 'iiwa_joint_4': position nan is not finite$", "unknown joint": r"elbow",
                "missing joint": r"iiwa_joint_7", "times not increasing": r"^waypoint 1: time .* increase strictly\)$",
                "empty": r"no points", "negative time": r"^waypoint 0: time_from_start -0\.25 s is negative$",
                "short point": r"^waypoint 2: 6 positions for 7 joint names"}  # points named one way
    for label, make in BAD_MESSAGES:
        before = node.stats["rejected"]
        pub.publish(make(names, times, pos))
        wait_for(lambda: node.stats["rejected"] > before, 10, f"rejection of {label}")
        assert re.search(expected[label], node.stats["last_rejection"], re.I), (label, node.stats["last_rejection"])


def test_compute_profile_service(harness, tmp_path):
    node = make_node(harness, profile_rate=200.0, profile_dir=str(tmp_path), effort_rate_limits=[50.0] * 7)
    model = node.model
    profile = harness.collect(JointTrajectory, f"{NS}/torque_profile", qos=LATCHED)
    profile_d = harness.collect(Float64MultiArray, f"{NS}/torque_profile_derivatives", qos=LATCHED)
    answer = harness.call(Trigger, f"{NS}/compute_profile", Trigger.Request())
    assert not answer.success and "no trajectory" in answer.message
    pub = harness.publisher(JointTrajectory, f"{NS}/trajectory")
    times, pos = motion(model, duration=0.4, amplitude=1.5)  # fast: violates effort (rate) limits
    pub.publish(trajectory_msg(model.joint_names, times, pos))
    wait_for(lambda: node.latest is not None, 10, "the trajectory")
    answer = harness.call(Trigger, f"{NS}/compute_profile", Trigger.Request())
    assert answer.success, answer.message
    summary = json.loads(answer.message)
    assert summary["samples"] == 81 and summary["joint_names"] == list(model.joint_names)
    assert len(summary["peak_abs"]["iiwa_joint_2"]) == 3
    assert summary["effort_limit_violations"] and summary["effort_rate_limit_violations"]
    assert all(os.path.isfile(f) for f in summary["files"]) and len(summary["files"]) == 2
    wait_for(lambda: profile and profile_d, 10, "the latched profile")
    points = profile[-1].points
    assert len(points) == 81
    q = np.array([p.positions for p in points])
    tau = hd.inverse_dynamics(model, q, np.array([p.velocities for p in points]),
                              np.array([p.accelerations for p in points]))
    np.testing.assert_allclose([p.effort for p in points], tau, rtol=1e-9, atol=1e-9)
    jets, labels = array_from_multiarray(profile_d[-1])
    assert labels == ["sample", "order", "joint"] and jets.shape == (81, 3, 7)
    np.testing.assert_allclose(jets[:, 0], tau, rtol=1e-9, atol=1e-9)
    # a gentle trajectory violates nothing
    times, pos = motion(model, duration=4.0, amplitude=0.2)
    pub.publish(trajectory_msg(model.joint_names, times, pos))
    wait_for(lambda: node.latest.end == 4.0, 10, "the gentle trajectory")
    summary = json.loads(harness.call(Trigger, f"{NS}/compute_profile", Trigger.Request()).message)
    assert summary["effort_limit_violations"] == [] and summary["effort_rate_limit_violations"] == []


def test_outputs_follow_simulated_time(harness):
    node = make_node(harness, publish_rate=100.0, use_sim_time=True, initial_positions=[0.0] * 7)
    ff = harness.collect(JointTrajectory, f"{NS}/feedforward")
    clock = harness.publisher(Clock, "/clock")
    for k in range(30):
        msg = Clock()
        msg.clock.sec, msg.clock.nanosec = 1000 + k // 10, (k % 10) * 100_000_000
        clock.publish(msg)
        time.sleep(0.02)
    wait_for(lambda: len(ff) > 3, 10, "feedforward under simulated time")
    stamps = [to_seconds(m.header.stamp) for m in ff]
    assert all(1000.0 <= s <= 1002.91 for s in stamps), stamps[:5]
    assert node.get_clock().now().nanoseconds // 1_000_000_000 in (1002, 1003)


# -- the node as a separate process, from its installed executable --------------------------------
def _run_node(args):
    exe = installed_executable("feedforward_node")
    return start_process([exe, "--ros-args"] + args)


def test_installed_node_serves_feedforward(harness, tmp_path):
    path = tmp_path / "iiwa.urdf"
    path.write_text(IIWA_URDF)
    # the test motion is faster than the iiwa's velocity limits: streamed with a warning
    proc = _run_node(["-p", f"urdf_path:={path}", "-p", "publish_rate:=100.0", "-p", "on_limit_violation:=warn"])
    try:
        ff = harness.collect(JointTrajectory, f"{NS}/feedforward")
        pub = harness.publisher(JointTrajectory, f"{NS}/trajectory")
        model = hd.RobotModel.from_urdf(str(path))
        times, pos = motion(model)
        pub.publish(trajectory_msg(model.joint_names, times, pos))
        wait_for(lambda: sum(0 < to_seconds(m.points[0].time_from_start) < 1 for m in ff) > 20, 20, "feedforward")
        for m in ff[-10:]:
            p = m.points[0]
            tau = hd.inverse_dynamics(model, p.positions, p.velocities, p.accelerations)
            np.testing.assert_allclose(p.effort, tau, rtol=1e-9, atol=1e-9)
        bad = trajectory_msg(model.joint_names, times[::-1], pos)
        for _ in range(5):
            pub.publish(bad)
        time.sleep(0.5)
        assert proc.poll() is None, "the node died on bad input"
    finally:
        proc.send_signal(signal.SIGINT)
        out, err = proc.communicate(timeout=20)
    assert proc.returncode == 0, err
    rejections = [line for line in (out + err).splitlines() if "[WARN]" in line and "rejected trajectory" in line]
    assert len(rejections) == 5, out + err
    assert all("waypoint 1: time" in line for line in rejections), rejections[0]


def test_installed_node_exits_cleanly_on_an_invalid_urdf():
    proc = _run_node(["-p", "robot_description:=<robot name='x'><link name='a'/><joint name='j' type='revolute'>"])
    out, err = proc.communicate(timeout=30)
    assert proc.returncode == 1
    assert "invalid robot model (parameter robot_description): malformed URDF" in out + err
    assert "Traceback" not in out + err


def test_demo_publisher_drives_the_elastic_demo(harness):
    """What demo.launch.py starts: shipped iiwa, SEA config, shipped demo trajectory."""
    from hod_dynamics.ros.demo_trajectory_publisher import DemoTrajectoryPublisher

    config = hd.model.robots.share_path("config", "actuators_sea")
    node = make_node(harness, actuators=config, publish_rate=50.0)
    motor = harness.collect(JointTrajectory, f"{NS}/motor_reference")
    demo = harness.add(DemoTrajectoryPublisher(context=harness.context))
    wait_for(lambda: demo.sent == 1 and node.latest is not None, 15, "the demo trajectory at the node")
    traj = hd.load_trajectory("iiwa14_demo")
    np.testing.assert_allclose(node.latest.waypoint_times, traj.waypoint_times)
    wait_for(lambda: any(to_seconds(m.points[0].time_from_start) > 0.2 for m in motor), 10, "motor references")
    m = motor[-1].points[0]
    t = to_seconds(m.time_from_start)
    expected = feedforward(node.model, traj, np.array([t]), 2, load_actuators(config, node.model))
    np.testing.assert_allclose(m.positions, expected.thetajet[0, 0], rtol=1e-9, atol=1e-12)
    np.testing.assert_allclose(m.effort, expected.u[0], rtol=1e-9, atol=1e-9)


def test_installed_node_reads_the_shipped_parameter_file(harness):
    share = os.path.join(os.sys.prefix, "share", "hod_dynamics")
    exe = installed_executable("feedforward_node")
    proc = start_process([exe, "--ros-args", "--params-file", os.path.join(share, "config", "feedforward.yaml"),
                          "-p", f"urdf_path:={os.path.join(share, 'urdf', 'iiwa14.urdf')}",
                          "-p", "initial_positions:=[0.0, 0.5, 0.0, -1.0, 0.0, 0.5, 0.0]"])
    try:
        ff = harness.collect(JointTrajectory, f"{NS}/feedforward")
        wait_for(lambda: len(ff) > 5, 20, "feedforward from the installed node")
        assert ff[-1].points[0].positions.tolist() == [0.0, 0.5, 0.0, -1.0, 0.0, 0.5, 0.0]
    finally:
        proc.send_signal(signal.SIGINT)
        proc.communicate(timeout=20)
    assert proc.returncode == 0


def test_a_trajectory_starting_later_moves_from_the_current_reference(harness):
    node = make_node(harness, publish_rate=100.0, initial_positions=[0.2] * 7)
    ff = harness.collect(JointTrajectory, f"{NS}/feedforward")
    pub = harness.publisher(JointTrajectory, f"{NS}/trajectory")
    target = np.linspace(0.3, 0.6, 7)
    pub.publish(trajectory_msg(node.model.joint_names, [0.4], target[None]))  # one point, 0.4 s ahead
    wait_for(lambda: node.latest is not None, 10, "the single-point trajectory")
    np.testing.assert_allclose(node.latest(np.array([0.0]))[0], [0.2] * 7, atol=1e-12)
    wait_for(lambda: any(np.allclose(m.points[0].positions, target, rtol=0, atol=1e-12)
                         and to_seconds(m.points[0].time_from_start) > 0.45 for m in ff[-5:]), 10, "the target")
    moving = [m for m in ff if 0.05 < to_seconds(m.points[0].time_from_start) < 0.35
              and np.abs(m.points[0].velocities).max() > 0]
    assert moving and all(0.2 < m.points[0].positions[6] < 0.6 for m in moving)


@pytest.mark.parametrize("order", [0, 1])
def test_low_orders_with_elastic_joints_still_give_full_motor_references(harness, order):
    node = make_node(harness, publish_rate=100.0, order=order, actuators=SEA_YAML)
    motor = harness.collect(JointTrajectory, f"{NS}/motor_reference")
    motor_d = harness.collect(Float64MultiArray, f"{NS}/motor_derivatives")
    tau_d = harness.collect(Float64MultiArray, f"{NS}/torque_derivatives")
    pub = harness.publisher(JointTrajectory, f"{NS}/trajectory")
    times, pos = motion(node.model)
    pub.publish(trajectory_msg(node.model.joint_names, times, pos))
    wait_for(lambda: len(motor) > 5 and len(motor_d) > 5 and len(tau_d) > 5, 10, "motor references")
    p = motor[-1].points[0]
    assert len(p.positions) == len(p.velocities) == len(p.accelerations) == len(p.effort) == 7
    assert array_from_multiarray(motor_d[-1])[0].shape == (order + 1, 7)
    assert array_from_multiarray(tau_d[-1])[0].shape == (order + 1, 7)
    assert node.stats["stream_errors"] == 0


def test_run_time_parameters_are_checked(harness):
    node = make_node(harness)
    result = node.set_parameters([Parameter("effort_rate_limits", value=[1.0, 2.0])])[0]
    assert not result.successful and "expected 7 values >= 0" in result.reason
    assert node.set_parameters([Parameter("effort_rate_limits", value=[100.0] * 7)])[0].successful
    result = node.set_parameters([Parameter("order", value=3)])[0]
    assert not result.successful  # read-only


def test_outputs_restart_when_simulated_time_goes_back(harness):
    node = make_node(harness, publish_rate=100.0, use_sim_time=True, initial_positions=[0.0] * 7)
    ff = harness.collect(JointTrajectory, f"{NS}/feedforward")
    clock = harness.publisher(Clock, "/clock")

    def tick_clock(sec, steps):
        for k in range(steps):
            msg = Clock()
            msg.clock.sec, msg.clock.nanosec = sec + k // 10, (k % 10) * 100_000_000
            clock.publish(msg)
            time.sleep(0.02)

    tick_clock(1000, 20)
    wait_for(lambda: ff and to_seconds(ff[-1].header.stamp) >= 1000.5, 10, "samples at t = 1000 s")
    tick_clock(500, 20)  # a bag played again from an earlier time
    wait_for(lambda: 500.0 <= to_seconds(ff[-1].header.stamp) < 502.0, 10, "samples after the clock went back")


def test_a_node_whose_callback_raises_exits_with_code_1(tmp_path):
    """process.run: an exception escaping a callback is a fatal error, not a clean exit."""
    code, output = _run_script(tmp_path / "bad_node.py",
                               "from hod_dynamics.ros.process import run\n"
                               "class Bad(Node):\n"
                               "    def __init__(self):\n"
                               "        super().__init__('hod_bad_node')\n"
                               "        self.create_timer(0.05, self.fail)\n"
                               "    def fail(self):\n"
                               "        raise RuntimeError('boom')\n"
                               "sys.exit(run(Bad, 'hod_bad_node'))\n")
    assert code == 1, output
    assert "stopped by an error in a callback: RuntimeError('boom')" in output


def _run_script(path, body):
    """Run a Python script (``import sys`` and rclpy's ``Node`` given) as its own process;
    returns (exit code, stdout + stderr)."""
    path.write_text("import sys\nfrom rclpy.node import Node\n" + body)
    proc = start_process([os.sys.executable, str(path)])
    out, err = proc.communicate(timeout=30)
    return proc.returncode, out + err


def test_demo_publisher_republishes_every_period(harness):
    from hod_dynamics.ros.demo_trajectory_publisher import DemoTrajectoryPublisher

    got = harness.collect(JointTrajectory, f"{NS}/trajectory")
    demo = harness.add(DemoTrajectoryPublisher(context=harness.context,
                                               parameter_overrides=[Parameter("period", value=0.2)]))
    wait_for(lambda: len(got) >= 3, 10, "three publications")
    assert demo.sent >= 3 and len(got[-1].points) == 5


# -- parameters through the services ros2 param uses ---------------------------------------------
def _parameter_values(harness, node_name):
    """{name: ParameterValue} of every parameter of a node, from list_parameters then
    get_parameters (what ``ros2 param dump`` does)."""
    from rcl_interfaces.srv import GetParameters, ListParameters

    names = harness.call(ListParameters, f"/{node_name}/list_parameters", ListParameters.Request()).result.names
    values = harness.call(GetParameters, f"/{node_name}/get_parameters", GetParameters.Request(names=names)).values
    assert len(values) == len(names), f"get_parameters answered {len(values)} values for {len(names)} names"
    return dict(zip(names, values))


def test_every_declared_parameter_has_a_value_through_the_services(harness):
    from rcl_interfaces.msg import ParameterType

    from hod_dynamics.ros.demo_trajectory_publisher import PARAMETERS as DEMO, DemoTrajectoryPublisher
    from hod_dynamics.ros.feedforward_node import PARAMETERS as FEEDFORWARD

    make_node(harness)
    harness.add(DemoTrajectoryPublisher(context=harness.context))
    for node_name, specs in (("hod_feedforward", FEEDFORWARD), ("hod_demo_trajectory", DEMO)):
        values = _parameter_values(harness, node_name)
        assert {s.name for s in specs} <= set(values), {s.name for s in specs} - set(values)
        unset = [name for name, v in values.items() if v.type == ParameterType.PARAMETER_NOT_SET]
        assert not unset, f"{node_name}: no value for {unset}"
    values = _parameter_values(harness, "hod_feedforward")
    assert list(values["gravity"].double_array_value) == [0.0, 0.0, -9.81]
    assert values["publish_rate"].double_value == 500.0 and values["order"].integer_value == 2


def test_effort_rate_limits_are_set_and_cleared_as_ros2_param_does(harness):
    """``ros2 param set ... '[..]'`` sends a double array, ``'[]'`` an empty bool array,
    ``ros2 param delete`` a NOT_SET value; the profile follows the parameter."""
    from rcl_interfaces.msg import Parameter as ParameterMsg, ParameterType, ParameterValue
    from rcl_interfaces.srv import SetParameters

    node = make_node(harness, profile_rate=200.0)
    name = f"{NS}/set_parameters"

    def send(value):
        request = SetParameters.Request(parameters=[ParameterMsg(name="effort_rate_limits", value=value)])
        return harness.call(SetParameters, name, request).results[0]

    pub = harness.publisher(JointTrajectory, f"{NS}/trajectory")
    times, pos = motion(node.model, duration=0.4, amplitude=1.5)  # fast: violates small rate limits
    pub.publish(trajectory_msg(node.model.joint_names, times, pos))
    wait_for(lambda: node.latest is not None, 10, "the trajectory")

    def violations():
        summary = json.loads(harness.call(Trigger, f"{NS}/compute_profile", Trigger.Request()).message)
        return summary["effort_rate_limit_violations"]

    assert violations() == []
    result = send(ParameterValue(type=ParameterType.PARAMETER_DOUBLE_ARRAY, double_array_value=[1.0] * 7))
    assert result.successful, result.reason
    assert len(violations()) == 7 and _parameter_values(harness, "hod_feedforward")[
        "effort_rate_limits"].double_array_value.tolist() == [1.0] * 7
    result = send(ParameterValue(type=ParameterType.PARAMETER_DOUBLE_ARRAY, double_array_value=[1.0] * 3))
    assert not result.successful and "expected 7 values" in result.reason
    result = send(ParameterValue(type=ParameterType.PARAMETER_STRING_ARRAY, string_array_value=["a"] * 7))
    assert not result.successful and "parameter effort_rate_limits: expected a list of numbers" in result.reason
    result = send(ParameterValue(type=ParameterType.PARAMETER_NOT_SET))  # ros2 param delete
    assert not result.successful and "set [] to clear it" in result.reason
    result = send(ParameterValue(type=ParameterType.PARAMETER_BOOL_ARRAY, bool_array_value=[]))  # '[]'
    assert result.successful, result.reason
    assert violations() == [] and node.get_parameter("effort_rate_limits").value == []
    assert "effort_rate_limits" in _parameter_values(harness, "hod_feedforward")


def test_effort_command_is_advertised_only_while_enabled(harness):
    node = make_node(harness, publish_rate=100.0, initial_positions=[0.1] * 7)
    topic = f"{NS}/effort_command"
    assert harness.client.count_publishers(topic) == 0
    assert node.set_parameters([Parameter("publish_effort_command", value=True)])[0].successful
    got = harness.collect(Float64MultiArray, topic)
    wait_for(lambda: len(got) > 2, 10, "effort commands")
    gravity = hd.inverse_dynamics(node.model, [0.1] * 7, np.zeros(7), np.zeros(7))
    np.testing.assert_allclose(got[-1].data, gravity, rtol=1e-12, atol=1e-12)
    assert node.set_parameters([Parameter("publish_effort_command", value=False)])[0].successful
    wait_for(lambda: harness.client.count_publishers(topic) == 0, 10, "~/effort_command to be withdrawn")


def test_a_single_point_with_a_nan_is_named_as_point_0(harness):
    node = make_node(harness, publish_rate=50.0, initial_positions=[0.0] * 7)
    pub = harness.publisher(JointTrajectory, f"{NS}/trajectory")
    target = np.full((1, 7), 0.3)
    target[0, 2] = np.nan
    pub.publish(trajectory_msg(node.model.joint_names, [0.5], target))
    wait_for(lambda: node.stats["rejected"] == 1, 10, "the rejection")
    assert node.stats["last_rejection"] == "waypoint 0, joint 'iiwa_joint_3': position nan is not finite"


def test_a_misspelt_parameter_is_named_in_a_warning(harness):
    node = make_node(harness, publish_rat=100.0, use_sim_time=False)
    assert node.get_parameter("publish_rate").value == 500.0
    assert node.unknown_parameters == ["publish_rat"]  # logged as one WARN line
