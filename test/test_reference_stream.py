"""ReferenceStream: the feedforward node's scheduling rules, without ROS, each in milliseconds."""

import numpy as np
import pytest

import hod_dynamics as hd
from hod_dynamics.actuators import load_actuators
from hod_dynamics.reference_stream import ReferenceStream, hold_trajectory
from hod_dynamics.trajectory_feedforward import feedforward

MS = 1_000_000  # ns
S = 1_000_000_000
T0 = 1_000 * S  # the clock when the tests start: any value


@pytest.fixture
def stream(iiwa):
    s = ReferenceStream(0.01, 2)  # 100 Hz, tau, tau', tau''
    s.set_model(iiwa)
    return s


def waypoints(model, duration=1.0, amplitude=0.3):
    """(names, times, positions): a rest-to-rest motion of every joint in model order."""
    times = np.linspace(0.0, duration, 5)
    shape = np.sin(np.linspace(0, np.pi, 5))[:, None] * np.linspace(0.5, 1.0, model.n_dof)
    return list(model.joint_names), times, amplitude * shape + 0.1


def served(stream, now_ns):
    """The position the stream serves at ``now_ns``."""
    sample = stream.sample(now_ns)
    return sample.result.qjet[sample.row, 0]


def test_nothing_is_served_before_a_model_or_a_reference(iiwa):
    s = ReferenceStream(0.01, 2)
    assert s.sample(T0) is None
    with pytest.raises(hd.HodDynamicsError, match="^no robot model yet$"):
        s.accept(*waypoints(iiwa), now_ns=T0)
    s.set_model(iiwa)
    assert s.sample(T0) is None


def test_a_trajectory_with_a_zero_stamp_starts_on_receipt_and_samples_lie_on_its_grid(stream, iiwa):
    names, times, pos = waypoints(iiwa)
    traj, start = stream.accept(names, times, pos, now_ns=T0 + 3)
    assert start == T0 + 3
    sample = stream.sample(T0 + 3 + 254 * MS)  # nearest grid point: k = 25
    assert (sample.k, sample.start_ns, sample.stamp_ns) == (25, T0 + 3, T0 + 3 + 250 * MS)
    expected = feedforward(iiwa, hd.Trajectory.from_waypoints(names, times, pos, continuity=4), [0.25], 2)
    np.testing.assert_allclose(sample.result.qjet[sample.row], expected.qjet[0], rtol=0, atol=1e-14)
    np.testing.assert_allclose(sample.result.taujet[sample.row], expected.taujet[0], rtol=1e-12)


def test_a_stamped_trajectory_waits_for_its_start_and_its_grid_starts_there(stream, iiwa):
    stream.set_model(iiwa, hold=np.full(7, 0.2), now_ns=T0)
    names, times, pos = waypoints(iiwa)
    _, start = stream.accept(names, times, pos, stamp_ns=T0 + 500 * MS, now_ns=T0)
    assert start == T0 + 500 * MS and stream.pending
    np.testing.assert_array_equal(served(stream, T0 + 499 * MS), np.full(7, 0.2))  # still holding
    sample = stream.sample(T0 + 500 * MS)
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
    stream.sample(T0 + 350 * MS)
    assert stream.active[1] == T0 + 200 * MS  # the one of 300 ms never comes


def test_a_trajectory_starting_after_its_stamp_moves_from_the_current_reference_at_rest(stream, iiwa):
    names, times, pos = waypoints(iiwa)
    stream.accept(names, times, pos, now_ns=T0)
    now = T0 + 400 * MS  # mid-motion
    here = served(stream, now)
    later = times[1:] + 0.5  # the first point 0.5 s after the start
    traj, start = stream.accept(names[::-1], later, pos[1:, ::-1], now_ns=now)  # any joint order
    jet = traj.jet(np.array([0.0]), 2)[0]
    np.testing.assert_allclose(jet[0], here, rtol=0, atol=1e-14)
    np.testing.assert_allclose(jet[1:], 0.0, rtol=0, atol=1e-12)
    sample = stream.sample(now)
    assert sample.start_ns == now and sample.k == 0
    np.testing.assert_allclose(served(stream, now + 1500 * MS), pos[-1], atol=1e-12)


def test_errors_name_the_waypoints_as_sent_when_a_point_is_prepended(stream, iiwa):
    stream.set_model(iiwa, hold=np.zeros(7), now_ns=T0)
    names, times, pos = waypoints(iiwa)
    with pytest.raises(hd.TrajectoryError, match=r"waypoint 2: time 0\.5 s is not after waypoint 1's 0\.75 s"):
        stream.accept(names, [0.5, 0.75, 0.5], pos[:3], now_ns=T0)


def test_a_single_point_without_a_reference_is_held(stream, iiwa):
    target = np.linspace(0.3, 0.6, 7)
    traj, start = stream.accept(list(iiwa.joint_names), [0.4], target[None], now_ns=T0)
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


def test_the_schedule_ticks_once_per_period(stream):
    assert stream.wait_ns(T0) == 10 * MS  # the first tick one period from now
    assert stream.wait_ns(T0 + 4 * MS) == 6 * MS
    assert stream.wait_ns(T0 + 10 * MS) == 0  # due: tick
    assert stream.wait_ns(T0 + 10 * MS + 1) == 10 * MS - 1  # the next one a period later
    assert stream.wait_ns(T0 + 21 * MS) == 0  # 1 ms late: on schedule, not counted
    assert stream.wait_ns(T0 + 21 * MS) == 9 * MS
    assert stream.stats["late_ticks"] == 0


def test_a_tick_more_than_a_period_late_is_counted_and_the_schedule_restarts_without_a_burst(stream):
    stream.wait_ns(T0)
    assert stream.wait_ns(T0 + 35 * MS) == 0  # due at 10 ms: 25 ms late
    assert stream.stats["late_ticks"] == 1
    assert stream.wait_ns(T0 + 35 * MS) == 10 * MS  # from now on, not the missed 20 and 30 ms


def test_a_clock_gone_back_restarts_the_schedule(stream):
    stream.wait_ns(T0)
    assert stream.wait_ns(T0 + 10 * MS) == 0  # the next tick due at 20 ms
    assert stream.wait_ns(T0 - 20 * MS) == 10 * MS  # back 3 periods: a period from now, not 40 ms
    assert stream.wait_ns(T0 - 5 * S) == 10 * MS  # a bag played again from an earlier time
    assert stream.wait_ns(T0 - 5 * S + 10 * MS) == 0
    assert stream.wait_ns(T0 - 5 * S + 5 * MS) == 15 * MS  # back half a period: kept
    assert stream.stats["late_ticks"] == 0


def test_samples_after_the_clock_went_back_follow_the_reference_again(stream, iiwa):
    names, times, pos = waypoints(iiwa)
    stream.accept(names, times, pos, now_ns=T0)
    early = stream.sample(T0 + 100 * MS)
    stream.sample(T0 + 900 * MS)
    again = stream.sample(T0 + 100 * MS)
    assert again.k == early.k == 10 and again.stamp_ns == early.stamp_ns
    np.testing.assert_array_equal(again.result.taujet[again.row], early.result.taujet[early.row])


def test_samples_come_from_chunks_computed_ahead(iiwa):
    s = ReferenceStream(0.01, 2, chunk_seconds=0.05)  # 5 samples per chunk
    s.set_model(iiwa)
    s.accept(*waypoints(iiwa), now_ns=T0)
    first = [s.sample(T0 + k * 10 * MS) for k in range(5)]
    assert len({id(x.result) for x in first}) == 1 and [x.row for x in first] == [0, 1, 2, 3, 4]
    sixth = s.sample(T0 + 50 * MS)
    assert sixth.result is not first[0].result and sixth.row == 0 and len(sixth.result.t) == 5
    skipped = s.sample(T0 + 200 * MS)  # a gap: a new chunk from the grid point served
    assert skipped.row == 0 and skipped.result.t[0] == pytest.approx(0.2)
    s.accept(*waypoints(iiwa), now_ns=T0 + 200 * MS)  # a new trajectory: a new chunk
    assert s.sample(T0 + 200 * MS).result is not skipped.result


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
    last = None
    with pytest.raises(hd.InputError, match=r"^at t = 0\.\d{4} s: joint 'iiwa_joint_2': stiffness setting "
                                            r"must stay > 0") as failure:
        for k in range(100):
            last = served(s, T0 + k * 10 * MS)
    assert 0.5 <= float(str(failure.value)[7:13]) <= 0.6 and last is not None
    assert s.stats["stream_errors"] == 1 and s.stats["last_stream_error"] == str(failure.value)
    for t in (T0 + 700 * MS, T0 + 800 * MS):  # (the hold's spring fades 0.6 s after its start too)
        sample = s.sample(t)
        np.testing.assert_array_equal(sample.result.qjet[sample.row, 0], last)
        np.testing.assert_array_equal(sample.result.qjet[sample.row, 1:], 0.0)


def test_a_failure_before_any_sample_falls_silent(iiwa, fading_spring):
    s = ReferenceStream(0.01, 2)
    s.set_model(iiwa, fading_spring)
    s.accept(*waypoints(iiwa), now_ns=T0)
    with pytest.raises(hd.InputError, match="stiffness setting must stay > 0"):
        s.sample(T0 + 800 * MS)
    assert s.active is None and s.sample(T0 + 900 * MS) is None


def test_the_statistics_count_what_the_diagnostics_report(stream, iiwa):
    names, times, pos = waypoints(iiwa)
    stream.accept(names, times, pos, now_ns=T0)
    stream.reject("waypoint 0: nan")
    stream.reject("unknown joints ['elbow']")
    assert stream.count_tick(0.002) is True and stream.count_tick(0.001) is False
    stats = stream.statistics()
    assert stats == dict(ticks=2, late_ticks=0, rejected=2, accepted=1, compute_s=0.002 + 0.001,
                         compute_max_s=0.002, last_rejection="unknown joints ['elbow']",
                         stream_errors=0, last_stream_error="")
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
    traj, _ = lenient.accept(*extra, now_ns=T0)
    assert traj.joint_names == tuple(iiwa.joint_names)


def test_elastic_joints_need_a_smoother_trajectory(iiwa):
    s = ReferenceStream(0.01, 0)
    s.set_model(iiwa)
    assert s.continuity == 2
    s.set_model(iiwa, load_actuators("actuators_sea", iiwa))
    assert s.continuity == 4  # the motor references need tau''


def test_hold_positions_are_one_per_joint(iiwa):
    with pytest.raises(hd.InputError, match=r"^expected 7 values \(one per joint \['iiwa_joint_1'.*\]\), got 3$"):
        hold_trajectory(iiwa, [0.0, 0.1, 0.2])
    traj = hold_trajectory(iiwa, np.arange(7.0))
    np.testing.assert_array_equal(traj.jet(np.array([0.0, 10.0]), 2)[:, 0], [np.arange(7.0)] * 2)
