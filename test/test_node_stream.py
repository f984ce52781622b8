"""The feedforward node's stream as a subscriber sees it (real rclpy over DDS on loopback):
simulated time (one message per grid point the clock passes, a line while waiting for /clock),
no duplicate stamps, URDF limits (a throttled warning per trajectory, counted, optionally
refused), diagnostics named with the namespace, the profile size limit."""

import json
import re
import time

import numpy as np
import pytest

from ros_harness import LATCHED, context, feedforward_node, harness, wait_for  # noqa: F401 (fixtures)

import hod_dynamics as hd  # noqa: E402
from hod_dynamics.ros.conversions import profile_message_bytes, to_seconds, trajectory_msg  # noqa: E402
from hod_dynamics.feedforward.trajectory_feedforward import profile_file_bytes  # noqa: E402
from diagnostic_msgs.msg import DiagnosticArray  # noqa: E402
from rclpy.parameter import Parameter  # noqa: E402
from rosgraph_msgs.msg import Clock  # noqa: E402
from std_srvs.srv import Trigger  # noqa: E402
from trajectory_msgs.msg import JointTrajectory  # noqa: E402

NS = "/hod_feedforward"
MS = 1_000_000


def stamps_ns(messages):
    return np.array([m.header.stamp.sec * 1_000_000_000 + m.header.stamp.nanosec for m in messages], dtype=np.int64)


def clock_msg(ns):
    msg = Clock()
    msg.clock.sec, msg.clock.nanosec = divmod(ns, 1_000_000_000)
    return msg


def tick_clock(pub, start_ns, step_ns, steps, pause=0.01):
    for k in range(steps):
        pub.publish(clock_msg(start_ns + k * step_ns))
        time.sleep(pause)


def hold_clock_until(pub, ns, predicate, what):
    """Publish the time ``ns`` every 10 ms until ``predicate()``: /clock is best effort with
    depth 1 (rclpy's time source), so one message may be lost, above all the first ones while
    discovery completes; a time repeated must not repeat a grid point."""
    end = time.monotonic() + 20
    while not predicate():
        assert time.monotonic() < end, f"timed out after 20 s waiting for {what}"
        pub.publish(clock_msg(ns))
        time.sleep(0.01)


def rest_to_rest(model, duration, amplitude):
    times = np.linspace(0.0, duration, 5)
    return times, amplitude * np.sin(np.linspace(0, np.pi, 5))[:, None] * np.linspace(0.5, 1.0, model.n_dof)


def test_simulated_time_serves_one_message_per_grid_point_the_clock_passes(harness, capfd):
    """A /clock in 10 ms steps and then in 200 ms steps (a bag played slowly), the stream at 1 kHz:
    every millisecond of simulated time once, in order, none repeated; a line while waiting."""
    node = feedforward_node(harness, publish_rate=1000.0, use_sim_time=True, initial_positions=[0.0] * 7)
    ff = harness.collect(JointTrajectory, f"{NS}/feedforward", qos=5000)
    wait_for(lambda: node.pub_ff.get_subscription_count(), 15, "the subscription")
    time.sleep(0.3)
    assert ff == []  # nothing without a clock
    clock = harness.publisher(Clock, "/clock")
    start = 1000 * 1_000_000_000
    hold_clock_until(clock, start, lambda: ff, "the first grid point")
    tick_clock(clock, start + 10 * MS, 10 * MS, 99)  # 1 s of simulated time
    tick_clock(clock, start + 1000 * MS, 200 * MS, 5, pause=0.05)  # then 1 s more in 200 ms steps
    hold_clock_until(clock, start + 2000 * MS, lambda: stamps_ns(ff[-1:])[0] == start + 2000 * MS,
                     "the last grid point")
    t = stamps_ns(ff)
    assert t[0] == start and np.all(np.diff(t) == MS), (len(t), np.unique(np.diff(t)))
    assert len(t) == 2001 and node.stats["skipped_samples"] == 0
    err = capfd.readouterr().err
    assert "use_sim_time is true: waiting for /clock before streaming" in err
    assert re.search(r"/clock received \(t = 1000\.\d{3} s\): streaming", err)


@pytest.mark.parametrize("late", ["publish", "drop"])
def test_wall_time_stamps_never_repeat_and_stay_on_the_grid(harness, late):
    """late_samples publish: every grid point once, in order; drop (the default with the system
    clock): a late tick publishes the last grid point it passed and counts each one it missed
    once, as a reader of the stamps infers them from the gaps (ceil(gap / period) - 1, across
    a trajectory's start too), never sent in a burst; in both, stamps never repeat and stay on
    the grid. A deep history: no sample is lost in transport, every gap is the node's."""
    node = feedforward_node(harness, publish_rate=500.0, initial_positions=[0.1] * 7, late_samples=late,
                            stream_depth=2000)
    ff = harness.collect(JointTrajectory, f"{NS}/feedforward", qos=5000)
    pub = harness.publisher(JointTrajectory, f"{NS}/trajectory")
    # the node streams (and may drop) from its start, before this subscription hears it: drops
    # are compared over the messages from the last one heard before this count on
    wait_for(lambda: len(ff) > 10, 10, "the stream")
    heard, dropped_before = len(ff), node.stats["dropped_samples"]
    times, pos = rest_to_rest(node.model, 0.5, 0.2)
    for k in range(3):
        pub.publish(trajectory_msg(node.model.joint_names, times, pos + 0.1 * k))
        time.sleep(0.6)
    node.halt()  # the stream stopped and every message in: drops and stamps of the same messages
    wait_for(lambda: not node._streamer.is_alive(), 5, "the streaming thread to end")
    count = -1
    while count != len(ff):  # in-process delivery: a few ms; nothing new for 0.2 s is all of it
        count = len(ff)
        time.sleep(0.2)
    dropped = node.stats["dropped_samples"] - dropped_before
    t = stamps_ns(ff)
    steps = np.diff(t[heard - 1:])
    assert np.all(np.diff(t) > 0)  # no duplicate, never back
    on_grid = steps % (2 * MS) == 0
    assert np.mean(on_grid) > 0.99  # off the grid only where a trajectory starts
    assert node.stats["skipped_samples"] == 0
    missed = int(np.sum(-(-steps // (2 * MS)) - 1))  # grid points passed between two messages
    assert dropped == missed, (dropped, missed, node.stats)
    if late == "publish":
        assert missed == 0


def test_a_trajectory_beyond_the_urdf_limits_is_refused_or_with_warn_streamed_warning_once_a_second(harness, capfd):
    """on_limit_violation: the default refuses it in one line naming joint, point, time, value
    and limit; "warn" (set at run time) streams it, with one line a second at most, counted in
    the diagnostics."""
    node = feedforward_node(harness, publish_rate=50.0, on_limit_violation="reject")
    diag = harness.collect(DiagnosticArray, "/diagnostics")
    pub = harness.publisher(JointTrajectory, f"{NS}/trajectory")
    times, pos = rest_to_rest(node.model, 2.0, 0.3)
    pos[2, 1] = 3.0  # iiwa_joint_2 reaches 3 rad (limit 2.094)
    pub.publish(trajectory_msg(node.model.joint_names, times, pos))
    wait_for(lambda: node.stats["rejected"] == 1, 10, "the refusal")
    assert node.stats["last_rejection"].endswith("; refused (on_limit_violation is reject)")
    refused = [line for line in capfd.readouterr().err.splitlines() if "rejected trajectory" in line]
    assert len(refused) == 1 and re.search(
        r"\[WARN\].*rejected trajectory: beyond the URDF limits: position of joint 'iiwa_joint_2' reaches 3 at "
        r"point 100, t = 1\.0000 s \(limit 2\.094\)", refused[0]), refused
    assert node.set_parameters([Parameter("on_limit_violation", value="warn")])[0].successful
    for k in range(3):  # three within a second: one line
        pub.publish(trajectory_msg(node.model.joint_names, times, pos))
    wait_for(lambda: node.stats["accepted"] == 3, 10, "three trajectories")
    warnings = [line for line in capfd.readouterr().err.splitlines() if "beyond the URDF limits" in line]
    assert len(warnings) == 1 and "[WARN]" in warnings[0], warnings
    assert re.search(r"streaming a trajectory beyond the URDF limits: position of joint 'iiwa_joint_2' reaches 3 at "
                     r"point 100, t = 1\.0000 s \(limit 2\.094\)", warnings[0]), warnings[0]
    wait_for(lambda: any(kv.key == "beyond_limits" and kv.value == "3" for m in diag for s in m.status
                         for kv in s.values), 5, "diagnostics counting 3")
    result = node.set_parameters([Parameter("on_limit_violation", value="ignore")])[0]
    assert not result.successful and result.reason == ("parameter on_limit_violation: expected one of 'reject', "
                                                       "'warn', got 'ignore' (string)")


def test_diagnostics_name_each_node_with_its_namespace(harness):
    diag = harness.collect(DiagnosticArray, "/diagnostics")
    for ns in ("left_arm", "right_arm"):
        feedforward_node(harness, cli_args=["--ros-args", "-r", f"__ns:=/{ns}"], publish_rate=20.0)
    wait_for(lambda: {s.name for m in diag for s in m.status} >= {"/left_arm/hod_feedforward: feedforward",
                                                                 "/right_arm/hod_feedforward: feedforward"},
             10, "both nodes' diagnostics", poll=0.05)


def test_a_profile_larger_than_the_size_limit_is_refused_with_the_estimate(harness, tmp_path):
    node = feedforward_node(harness, profile_rate=100000.0, profile_dir=str(tmp_path), publish_rate=20.0)
    pub = harness.publisher(JointTrajectory, f"{NS}/trajectory")
    times, pos = rest_to_rest(node.model, 10.0, 0.2)
    pub.publish(trajectory_msg(node.model.joint_names, times, pos))
    wait_for(lambda: node.latest is not None, 10, "the trajectory")
    answer = harness.call(Trigger, f"{NS}/compute_profile", Trigger.Request())
    assert not answer.success
    assert re.match(r"^profile refused: 1000001 samples \(10 s at 100000 Hz\) would make about (\d+) MB "
                    r"\((\d+) MB of csv, (\d+) MB of npz, (\d+) MB of messages\), more than profile_size_limit "
                    r"1000 MB; lower profile_rate or raise profile_size_limit$",
                    json.loads(answer.message)["error"]), answer.message
    assert list(tmp_path.iterdir()) == []  # nothing written


def test_the_size_estimate_is_close_to_the_files_and_messages(harness, tmp_path):
    from rclpy.serialization import serialize_message

    node = feedforward_node(harness, profile_rate=2000.0, profile_dir=str(tmp_path), publish_rate=20.0)
    profile = harness.collect(JointTrajectory, f"{NS}/torque_profile", qos=LATCHED)
    pub = harness.publisher(JointTrajectory, f"{NS}/trajectory")
    times, pos = rest_to_rest(node.model, 2.0, 0.2)
    pub.publish(trajectory_msg(node.model.joint_names, times, pos))
    wait_for(lambda: node.latest is not None, 10, "the trajectory")
    answer = harness.call(Trigger, f"{NS}/compute_profile", Trigger.Request())
    summary = json.loads(answer.message)
    assert answer.success and summary["samples"] == 4001
    estimate = profile_file_bytes(4001, 7, 2)
    sizes = {f.rsplit(".", 1)[1]: (tmp_path / f.rsplit("/", 1)[1]).stat().st_size for f in summary["files"]}
    for kind in ("csv", "npz"):
        assert 0.75 < sizes[kind] / estimate[kind] < 1.25, (kind, sizes[kind], estimate[kind])
    wait_for(lambda: profile, 10, "the latched profile")
    actual = len(serialize_message(profile[-1])) + 4001 * 3 * 7 * 8
    assert 0.97 < actual / profile_message_bytes(4001, 7, 2) < 1.03
    times_received = [to_seconds(p.time_from_start) for p in profile[-1].points]
    np.testing.assert_allclose(times_received, np.arange(4001) / 2000.0, atol=1e-9)
    expected = hd.inverse_dynamics(node.model, *np.array([[p.positions, p.velocities, p.accelerations]
                                                          for p in profile[-1].points[::500]]).transpose(1, 0, 2))
    np.testing.assert_allclose([p.effort for p in profile[-1].points[::500]], expected, rtol=1e-9, atol=1e-9)

