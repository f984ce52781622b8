"""ReferenceStream: the feedforward node's scheduling rules, without ROS, each in milliseconds."""

import re

import numpy as np
import pytest

import hod_dynamics as hd
from hod_dynamics.feedforward.actuators import load_actuators
from hod_dynamics.feedforward.reference_stream import ReferenceStream, hold_trajectory
from hod_dynamics.feedforward.trajectory_feedforward import feedforward

MS = 1_000_000  # ns
S = 1_000_000_000
T0 = 1_000 * S  # the clock when the tests start: any value


@pytest.fixture
def stream(iiwa):
    # 100 Hz, tau, tau', tau''; the scheduling tests move faster than the iiwa's velocity limits
    # (joint 4: 1.31 rad/s): their trajectories are streamed with a warning, not refused
    s = ReferenceStream(0.01, 2, on_limit_violation="warn")
    s.set_model(iiwa)
    return s


def waypoints(model, duration=1.0, amplitude=0.2):
    """(names, times, positions): a rest-to-rest motion of every joint in model order."""
    times = np.linspace(0.0, duration, 5)
    shape = np.sin(np.linspace(0, np.pi, 5))[:, None] * np.linspace(0.5, 1.0, model.n_dof)
    return list(model.joint_names), times, amplitude * shape + 0.1


def due(stream, now_ns):
    """The samples due at ``now_ns`` (asserting none failed)."""
    samples, failure = stream.due(now_ns)
    assert failure is None, failure
    return samples


def last(stream, now_ns):
    """The last sample due at ``now_ns``."""
    return due(stream, now_ns)[-1]


def served(stream, now_ns):
    """The position of the last sample due at ``now_ns``."""
    sample = last(stream, now_ns)
    return sample.result.qjet[sample.row, 0]


def stamps(samples):
    return [x.stamp_ns for x in samples]


def test_nothing_is_served_before_a_model_or_a_reference(iiwa):
    s = ReferenceStream(0.01, 2)
    assert s.due(T0) == ([], None) and s.wait_ns(T0) == 10 * MS  # poll
    with pytest.raises(hd.HodDynamicsError, match="^no robot model yet$"):
        s.accept(*waypoints(iiwa), now_ns=T0)
    s.set_model(iiwa)
    assert s.due(T0) == ([], None) and s.wait_ns(T0) == 10 * MS


def test_a_trajectory_with_a_zero_stamp_starts_on_receipt_and_samples_lie_on_its_grid(stream, iiwa):
    names, times, pos = waypoints(iiwa)
    accepted = stream.accept(names, times, pos, now_ns=T0 + 3)
    assert accepted.start_ns == T0 + 3
    assert stamps(due(stream, T0 + 3)) == [T0 + 3]
    samples = due(stream, T0 + 3 + 254 * MS)  # every grid point passed since: k = 1..25
    assert [x.k for x in samples] == list(range(1, 26))
    sample = samples[-1]
    assert (sample.start_ns, sample.stamp_ns) == (T0 + 3, T0 + 3 + 250 * MS)
    expected = feedforward(iiwa, hd.Trajectory.from_waypoints(names, times, pos, continuity=4), [0.25], 2)
    np.testing.assert_allclose(sample.result.qjet[sample.row], expected.qjet[0], rtol=0, atol=1e-14)
    np.testing.assert_allclose(sample.result.taujet[sample.row], expected.taujet[0], rtol=1e-12)


def test_a_stamped_trajectory_waits_for_its_start_and_its_grid_starts_there(stream, iiwa):
    stream.set_model(iiwa, hold=np.full(7, 0.2), now_ns=T0)
    names, times, pos = waypoints(iiwa)
    start = stream.accept(names, times, pos, stamp_ns=T0 + 500 * MS, now_ns=T0).start_ns
    assert start == T0 + 500 * MS and stream.pending
    np.testing.assert_array_equal(served(stream, T0 + 499 * MS), np.full(7, 0.2))  # still holding
    assert stamps(due(stream, T0 + 499 * MS)) == []
    sample = last(stream, T0 + 500 * MS)
    assert sample.k == 0 and sample.stamp_ns == T0 + 500 * MS and not stream.pending
    np.testing.assert_allclose(sample.result.qjet[sample.row, 0], pos[0], atol=1e-14)


def test_a_later_start_replaces_the_queued_trajectories_that_start_at_or_after_it(stream, iiwa):
    names, times, pos = waypoints(iiwa)
    stream.accept(names, times, pos, stamp_ns=T0 + 100 * MS, now_ns=T0)
    stream.accept(names, times, pos + 0.1, stamp_ns=T0 + 300 * MS, now_ns=T0)
    stream.accept(names, times, pos + 0.2, stamp_ns=T0 + 200 * MS, now_ns=T0)
    assert [start for start, _ in stream.pending] == [T0 + 100 * MS, T0 + 200 * MS]
    np.testing.assert_allclose(served(stream, T0 + 200 * MS), pos[0] + 0.2, atol=1e-14)
    assert stream.active[1] == T0 + 200 * MS and not stream.pending
    due(stream, T0 + 350 * MS)
    assert stream.active[1] == T0 + 200 * MS  # the one of 300 ms never comes


def test_a_trajectory_starting_after_its_stamp_moves_from_the_current_reference_at_rest(stream, iiwa):
    names, times, pos = waypoints(iiwa)
    stream.accept(names, times, pos, now_ns=T0)
    now = T0 + 400 * MS  # mid-motion
    here = served(stream, now)
    later = times[1:] + 0.5  # the first point 0.5 s after the start
    traj = stream.accept(names[::-1], later, pos[1:, ::-1], now_ns=now).trajectory  # any joint order
    jet = traj.jet(np.array([0.0]), 2)[0]
    np.testing.assert_allclose(jet[0], here, rtol=0, atol=1e-14)
    np.testing.assert_allclose(jet[1:], 0.0, rtol=0, atol=1e-12)
    sample = last(stream, now + 10 * MS)
    assert sample.start_ns == now and sample.k == 1  # its k = 0 would repeat the stamp served at `now`
    np.testing.assert_allclose(served(stream, now + 1500 * MS), pos[-1], atol=1e-12)


def test_errors_name_the_waypoints_as_sent_when_a_point_is_prepended(stream, iiwa):
    stream.set_model(iiwa, hold=np.zeros(7), now_ns=T0)
    names, times, pos = waypoints(iiwa)
    with pytest.raises(hd.TrajectoryError, match=r"waypoint 2: time 0\.5 s is not after waypoint 1's 0\.75 s"):
        stream.accept(names, [0.5, 0.75, 0.5], pos[:3], now_ns=T0)


def test_a_single_point_without_a_reference_is_held(stream, iiwa):
    target = np.linspace(0.3, 0.6, 7)
    stream.accept(list(iiwa.joint_names), [0.4], target[None], now_ns=T0)
    for t in (T0, T0 + 10 * MS, T0 + 3 * S):
        np.testing.assert_array_equal(served(stream, t), target)


def test_a_single_point_with_a_reference_is_a_move_arriving_at_its_time(stream, iiwa):
    stream.set_model(iiwa, hold=np.full(7, 0.2), now_ns=T0)
    target = np.linspace(0.3, 0.6, 7)
    stream.accept(list(iiwa.joint_names), [0.4], target[None], now_ns=T0 + 50 * MS)
    np.testing.assert_allclose(served(stream, T0 + 50 * MS), np.full(7, 0.2), atol=1e-14)
    middle = served(stream, T0 + 250 * MS)
    assert np.all((middle > 0.2) & (middle < target))
    np.testing.assert_allclose(served(stream, T0 + 450 * MS), target, atol=1e-14)


def test_the_schedule_waits_for_the_next_grid_point(stream, iiwa):
    stream.set_model(iiwa, hold=np.zeros(7), now_ns=T0)
    assert stream.wait_ns(T0 - 1) == 0  # the first sample is chosen at the first call
    assert stamps(due(stream, T0 + 3 * MS)) == [T0]  # the last grid point passed
    assert stream.wait_ns(T0 + 3 * MS) == 7 * MS
    assert stamps(due(stream, T0 + 9 * MS)) == [] and stream.wait_ns(T0 + 10 * MS) == 0
    assert stamps(due(stream, T0 + 10 * MS)) == [T0 + 10 * MS]
    assert stream.stats["late_samples"] == stream.stats["skipped_samples"] == 0


def test_a_late_tick_serves_every_grid_point_it_missed_in_order(stream, iiwa):
    stream.set_model(iiwa, hold=np.zeros(7), now_ns=T0)
    due(stream, T0)
    samples = due(stream, T0 + 35 * MS)  # 10, 20, 30 ms: the first two more than a period late
    assert stamps(samples) == [T0 + 10 * MS, T0 + 20 * MS, T0 + 30 * MS]
    assert stream.stats["late_samples"] == 2 and stream.stats["skipped_samples"] == 0
    assert stream.wait_ns(T0 + 35 * MS) == 5 * MS


def test_a_clock_far_ahead_skips_to_the_last_second_of_grid_points(iiwa):
    s = ReferenceStream(0.01, 2, catch_up_seconds=0.05)  # at most 5 points served late
    s.set_model(iiwa, hold=np.zeros(7), now_ns=T0)
    due(s, T0)
    samples = due(s, T0 + 1005 * MS)
    assert stamps(samples) == [T0 + k * 10 * MS for k in range(96, 101)]
    assert s.stats["skipped_samples"] == 95 and s.stats["late_samples"] == 4


def test_stamps_never_repeat_and_follow_the_grid_whatever_the_clock_does(stream, iiwa):
    """A clock read at random moments, jittered ticks, a stall, trajectories arriving, a slow
    simulated clock: the stamps served strictly increase, and every interval is one period
    except where a trajectory starts (its own grid)."""
    rng = np.random.default_rng(3)
    stream.set_model(iiwa, hold=np.zeros(7), now_ns=T0)
    names, times, pos = waypoints(iiwa, duration=0.5)
    now, got, starts = T0, [], {T0}
    for step in range(400):
        now += int(rng.choice([1, 4, 9, 10, 11, 25, 100]) * MS + rng.integers(0, MS))
        if step % 100 == 50:
            starts.add(stream.accept(names, times, pos + 0.01 * step, now_ns=now).start_ns)
        got += due(stream, now)
    t = np.array(stamps(got))
    assert np.all(np.diff(t) > 0)
    off = [x for x, d in zip(got[1:], np.diff(t)) if d != 10 * MS]
    assert all(x.k == 0 and x.start_ns in starts for x in off), [(x.k, x.start_ns) for x in off]
    assert stream.stats["skipped_samples"] == 0 and len(off) == 4  # the hold, then 4 trajectories


def test_a_simulated_clock_in_steps_serves_one_sample_per_grid_point_it_passes(iiwa):
    s = ReferenceStream(0.001, 2)  # 1 kHz
    s.set_model(iiwa, hold=np.zeros(7), now_ns=T0)
    got = []
    for step in range(1, 51):  # /clock at 40 Hz (ros2 bag play's default): 25 ms steps
        got += due(s, T0 + step * 25 * MS)
    t = np.array(stamps(got))  # the first: the last grid point passed, then every one, each once
    assert t[0] == T0 + 25 * MS and len(got) == 1 + 49 * 25 and np.all(np.diff(t) == MS)
    assert s.stats["skipped_samples"] == 0


def test_a_clock_gone_back_restarts_the_stream_at_the_reference(stream, iiwa):
    names, times, pos = waypoints(iiwa)
    stream.accept(names, times, pos, now_ns=T0)
    early = last(stream, T0 + 100 * MS)
    due(stream, T0 + 900 * MS)
    assert stream.wait_ns(T0 + 100 * MS) == 0  # back 80 periods
    again = last(stream, T0 + 100 * MS)
    assert again.k == early.k == 10 and again.stamp_ns == early.stamp_ns
    np.testing.assert_array_equal(again.result.taujet[again.row], early.result.taujet[early.row])
    before = last(stream, T0 - 5 * S)  # before the trajectory's start: its first position
    assert before.k == -500
    np.testing.assert_allclose(before.result.qjet[before.row, 0], pos[0], atol=1e-14)
    assert stamps(due(stream, T0 - 5 * S + 5 * MS)) == []  # back half a period: kept
    assert stream.stats["skipped_samples"] == 0


def test_samples_come_from_chunks_computed_ahead(iiwa, monkeypatch):
    import hod_dynamics.feedforward.reference_stream as rs

    s = ReferenceStream(0.01, 2, chunk_seconds=0.05)  # 5 samples per chunk
    s.set_model(iiwa)
    s.accept(*waypoints(iiwa), now_ns=T0)  # computes its first chunk
    assert s.compute_ahead(T0, lead_ns=0) is False
    calls = []
    monkeypatch.setattr(rs, "feedforward", lambda *a, **k: calls.append(a[2]) or feedforward(*a, **k))
    first = due(s, T0) + due(s, T0 + 40 * MS)
    assert len({id(x.result) for x in first}) == 1 and [x.row for x in first] == [0, 1, 2, 3, 4] and not calls
    assert s.compute_ahead(T0 + 40 * MS, lead_ns=20 * MS) is True  # the chunk from 50 ms
    assert s.compute_ahead(T0 + 40 * MS, lead_ns=20 * MS) is False
    np.testing.assert_allclose(calls[0], [0.05, 0.06, 0.07, 0.08, 0.09])
    sixth = last(s, T0 + 50 * MS)
    assert sixth.result is not first[0].result and sixth.row == 0 and len(calls) == 1
    assert s.compute_ahead(T0 + 50 * MS, lead_ns=100 * MS) is True  # the chunk after it, now in the lead
    assert s.compute_ahead(T0 + 50 * MS, lead_ns=100 * MS) is False and len(calls) == 2
    s.accept(*waypoints(iiwa), stamp_ns=T0 + 300 * MS, now_ns=T0 + 60 * MS)  # queued: its first chunk now
    assert len(calls) == 3 and s.compute_ahead(T0 + 60 * MS, lead_ns=300 * MS) is False


@pytest.fixture
def fading_spring(iiwa):
    """A variable-stiffness joint whose stiffness setting is scheduled to reach zero at 0.6 s:
    its spring cannot transmit a torque from there on."""
    return load_actuators({"actuators": {"iiwa_joint_2": {
        "type": "vsa", "spring": "cubic", "k1": 1000.0, "k3": 5000.0, "motor_inertia": 0.5,
        "motor_damping": 1.0, "stiffness": {"times": [0.0, 0.3, 0.6], "values": [1.0, 1.0, 0.0]}}}},
        iiwa)


def test_a_sample_that_cannot_be_computed_abandons_the_trajectory_and_holds_the_last_position(iiwa, fading_spring):
    s = ReferenceStream(0.01, 2, chunk_seconds=0.05)
    s.set_model(iiwa, fading_spring)
    names, times, pos = waypoints(iiwa)
    s.accept(names, times, pos, now_ns=T0)
    position = failure = None
    for k in range(100):
        samples, failure = s.due(T0 + k * 10 * MS)
        if failure:
            break
        position = samples[-1].result.qjet[samples[-1].row, 0]
    assert re.match(r"^at t = 0\.\d{4} s: joint 'iiwa_joint_2': stiffness setting must stay > 0", failure), failure
    assert 0.5 <= float(failure[7:13]) <= 0.6 and position is not None
    assert s.stats["stream_errors"] == 1 and s.stats["last_stream_error"] == failure
    for t in (T0 + 700 * MS, T0 + 800 * MS):  # (the hold's spring fades 0.6 s after its start too)
        sample = last(s, t)
        np.testing.assert_array_equal(sample.result.qjet[sample.row, 0], position)
        np.testing.assert_array_equal(sample.result.qjet[sample.row, 1:], 0.0)


def test_a_failure_before_any_sample_falls_silent(iiwa, fading_spring):
    s = ReferenceStream(0.01, 2)
    s.set_model(iiwa, fading_spring)
    s.accept(*waypoints(iiwa), now_ns=T0)
    samples, failure = s.due(T0 + 800 * MS)  # the stream's first sample: 0.8 s into the trajectory
    assert samples == [] and "stiffness setting must stay > 0" in failure
    assert s.active is None and s.due(T0 + 900 * MS) == ([], None)


def test_the_statistics_count_what_the_diagnostics_report(stream, iiwa):
    names, times, pos = waypoints(iiwa)
    stream.accept(names, times, pos, now_ns=T0)
    stream.reject("waypoint 0: nan")
    stream.reject("unknown joints ['elbow']")
    assert stream.count_tick(0.002) is True and stream.count_tick(0.001) is False
    stats = stream.statistics()
    assert stats == dict(ticks=2, late_samples=0, skipped_samples=0, dropped_samples=0, rejected=2, accepted=1,
                         beyond_limits=0,
                         compute_s=0.002 + 0.001, compute_max_s=0.002, last_rejection="unknown joints ['elbow']",
                         last_beyond_limits="", stream_errors=0, last_stream_error="")
    stats["ticks"] = 99
    assert stream.stats["ticks"] == 2  # a copy


def test_extra_joints_are_refused_unless_allowed(iiwa):
    names, times, pos = waypoints(iiwa)
    extra = (names + ["gripper"], times, np.hstack([pos, np.zeros((5, 1))]))
    strict = ReferenceStream(0.01, 2)
    strict.set_model(iiwa)
    with pytest.raises(hd.TrajectoryError, match=r"unknown joints \['gripper'\]"):
        strict.accept(*extra, now_ns=T0)
    lenient = ReferenceStream(0.01, 2, allow_extra_joints=True)
    lenient.set_model(iiwa)
    traj = lenient.accept(*extra, now_ns=T0).trajectory
    assert traj.joint_names == tuple(iiwa.joint_names)


@pytest.mark.parametrize("order, continuity", [(0, 4), (2, 4), (3, 5)])
def test_trajectories_are_smooth_enough_for_tau_second_derivative(iiwa, order, continuity):
    s = ReferenceStream(0.01, order)
    s.set_model(iiwa)
    assert s.continuity == continuity  # tau'' continuous: the controller's points, the motor torque
    assert s.accept(*waypoints(iiwa), now_ns=T0).trajectory.continuity == continuity


def test_hold_positions_are_one_per_joint(iiwa):
    with pytest.raises(hd.InputError, match=r"^expected 7 values \(one per joint \['iiwa_joint_1'.*\]\), got 3$"):
        hold_trajectory(iiwa, [0.0, 0.1, 0.2])
    traj = hold_trajectory(iiwa, np.arange(7.0))
    np.testing.assert_array_equal(traj.jet(np.array([0.0, 10.0]), 2)[:, 0], [np.arange(7.0)] * 2)


def test_every_trajectory_gets_its_points_for_a_controller(stream, iiwa):
    names, times, pos = waypoints(iiwa)
    stream.effort_rate = 20.0
    accepted = stream.accept(names, times, pos, now_ns=T0)
    np.testing.assert_allclose(accepted.points.t, np.arange(21) / 20)
    assert accepted.points.taujet.shape == (21, 3, 7) and accepted.beyond_limits == "" and accepted.limits.ok
    np.testing.assert_allclose(accepted.points.qjet, accepted.trajectory.jet(accepted.points.t, 2), atol=1e-15)


def test_a_trajectory_beyond_the_urdf_limits_is_refused_naming_joint_point_value_and_limit(iiwa):
    """on_limit_violation "reject" (the default) refuses it, naming the first limit exceeded:
    joint, point of the trajectory for a controller, time, value and limit; "warn" streams it and
    counts it with the same reason."""
    stream = ReferenceStream(0.01, 2)
    stream.set_model(iiwa)
    names, times, pos = waypoints(iiwa, amplitude=0.1)
    bad = pos.copy()
    bad[2, 1] = 3.0  # iiwa_joint_2 at 3 rad, its limit 2.094 rad (120 degrees)
    reason = (r"beyond the URDF limits: position of joint 'iiwa_joint_2' reaches 3 at point 50, t = 0\.5000 s "
              r"\(limit 2\.094\) \(and \d+ more\)")
    with pytest.raises(hd.TrajectoryError, match=rf"^{reason}; refused \(on_limit_violation is reject\)$"):
        stream.accept(names, times, bad, now_ns=T0)
    assert stream.stats["accepted"] == 0 and not stream.pending
    stream.accept(names, times, pos, now_ns=T0 + 5 * MS)  # within the limits: accepted
    assert stream.stats["accepted"] == 1 and stream.stats["beyond_limits"] == 0
    stream.on_limit_violation = "warn"
    accepted = stream.accept(names, times, bad, now_ns=T0 + 10 * MS)
    assert re.match(rf"^{reason}$", accepted.beyond_limits), accepted.beyond_limits
    assert stream.stats["beyond_limits"] == 1 and stream.stats["last_beyond_limits"] == accepted.beyond_limits
    assert len(stream.pending) == 2  # streamed anyway
    with pytest.raises(hd.InputError, match=r"on_limit_violation must be one of \('reject', 'warn'\), got 'ignore'"):
        ReferenceStream(0.01, 2, on_limit_violation="ignore")


def test_a_trajectory_stamped_0_starts_when_its_work_is_done_with_a_clock(stream, iiwa):
    """Received at T0, accepted 300 ms later (a long trajectory's work): with ``clock`` it
    starts then, its first sample at t = 0 of it; without, at its receipt."""
    late = stream.accept(*waypoints(iiwa), now_ns=T0, clock=lambda: T0 + 300 * MS)
    assert late.start_ns == T0 + 300 * MS
    first = last(stream, T0 + 300 * MS)
    assert first.stamp_ns == T0 + 300 * MS and first.result.t[first.row] == 0.0
    assert stream.accept(*waypoints(iiwa), now_ns=T0 + 400 * MS).start_ns == T0 + 400 * MS
    assert stream.accept(*waypoints(iiwa), stamp_ns=T0 + 2 * S, now_ns=T0 + 500 * MS,
                         clock=lambda: T0 + 600 * MS).start_ns == T0 + 2 * S  # a stamp is kept


def test_with_drop_late_a_late_tick_serves_only_the_last_grid_point_and_counts_the_others(iiwa):
    s = ReferenceStream(0.01, 2, drop_late=True)
    s.set_model(iiwa, hold=np.zeros(7), now_ns=T0)
    due(s, T0)
    samples = due(s, T0 + 35 * MS)  # 10, 20 ms missed: dropped; 30 ms served
    assert stamps(samples) == [T0 + 30 * MS]
    assert s.stats["dropped_samples"] == 2 and s.stats["late_samples"] == 0
    assert stamps(due(s, T0 + 41 * MS)) == [T0 + 40 * MS]  # on time again: nothing dropped
    assert s.stats["dropped_samples"] == 2


def test_a_late_tick_across_a_trajectory_start_drops_each_grid_point_passed_once(iiwa):
    """The hold is served at 0 and 10 ms; a trajectory starts at 23 ms (off the hold's grid);
    the next tick comes at 75 ms. Passed meanwhile: the hold's 20 ms (its 30 ms and later are
    the trajectory's time), the trajectory's 23, 33, 43, 53, 63 and 73 ms: 73 ms is served, the
    six others dropped, each once: ceil((73 - 10) / 10) - 1, the count a reader of the stamps
    infers from the gap."""
    s = ReferenceStream(0.01, 2, drop_late=True, on_limit_violation="warn")
    s.set_model(iiwa, hold=np.zeros(7), now_ns=T0)
    assert stamps(due(s, T0)) == [T0] and stamps(due(s, T0 + 10 * MS)) == [T0 + 10 * MS]
    s.accept(*waypoints(iiwa), stamp_ns=T0 + 23 * MS, now_ns=T0 + 12 * MS)
    assert stamps(due(s, T0 + 75 * MS)) == [T0 + 73 * MS]
    assert s.stats["dropped_samples"] == 6
