"""MeasuredState: the robot's joint state merged by name from partial messages, and a trajectory
that starts after t = 0 joined from it (ReferenceStream), without ROS."""

import numpy as np
import pytest

from hod_dynamics.feedforward.measured_state import MeasuredState
from hod_dynamics.feedforward.reference_stream import ReferenceStream

MS = 1_000_000
T0 = 500 * 1_000_000_000


def test_partial_messages_from_two_publishers_are_merged_by_name():
    state = MeasuredState(max_age=0.5)
    assert state.update(["j1", "j2"], [0.1, 0.2], [1.0, 2.0], received_ns=T0)
    assert state.state(["j1", "j2", "g"], T0) is None          # the gripper not reported yet
    assert state.update(["g"], [0.04], [], received_ns=T0 + MS)  # no velocity: 0
    q, v = state.state(["g", "j2", "j1"], T0 + 2 * MS)
    np.testing.assert_array_equal(q, [0.04, 0.2, 0.1])
    np.testing.assert_array_equal(v, [0.0, 2.0, 1.0])
    assert state.update(["j2"], [0.25], [2.5], received_ns=T0 + 3 * MS)  # newest value wins
    np.testing.assert_array_equal(state.state(["j2"], T0 + 4 * MS)[0], [0.25])


def test_a_stale_or_malformed_state_is_not_used():
    state = MeasuredState(max_age=0.5)
    state.update(["j1"], [0.1], [0.0], received_ns=T0)
    assert state.state(["j1"], T0 + 400 * MS) is not None
    assert state.state(["j1"], T0 + 600 * MS) is None  # older than max_age
    assert not state.update(["j1", "j2"], [0.1], [], received_ns=T0)  # one position for two names
    assert not state.update(["j1"], [np.nan], [], received_ns=T0)
    assert not state.update(["j1"], [0.1], [0.0, 1.0], received_ns=T0)
    assert state.messages == 1


@pytest.mark.parametrize("with_derivatives", [False, True])
def test_a_single_point_two_seconds_ahead_joins_the_moving_robot_and_arrives_on_time(iiwa, with_derivatives):
    """The robot is elsewhere and moving when a one-point goal 2 s ahead arrives: the
    trajectory (and its points for a controller) starts at the measured positions and
    velocities, to 1e-9, and reaches the goal, at rest, at 2 s."""
    stream = ReferenceStream(0.002, 2)
    stream.set_model(iiwa, hold=np.zeros(7), now_ns=T0)
    measured = MeasuredState()
    q_robot = np.array([0.3, 0.2, -0.1, -1.0, 0.1, 0.5, 0.2])
    v_robot = np.array([0.05, -0.04, 0.03, 0.02, -0.06, 0.01, 0.08])
    names = list(iiwa.joint_names)[::-1]  # the goal's own joint order
    measured.update(names, q_robot[::-1], v_robot[::-1], received_ns=T0 + 5 * MS)
    goal = np.array([0.5, 0.4, 0.0, -1.2, 0.2, 0.6, 0.3])
    vel = acc = None
    if with_derivatives:
        vel, acc = np.zeros((1, 7)), np.zeros((1, 7))
    accepted = stream.accept(names, [2.0], goal[::-1][None], vel, acc, now_ns=T0 + 10 * MS,
                             state=measured.state(names, T0 + 10 * MS))
    assert accepted.joined == "measured"
    points = accepted.points
    np.testing.assert_allclose(points.qjet[0, 0], q_robot, atol=1e-9)
    np.testing.assert_allclose(points.qjet[0, 1], v_robot, atol=1e-9)
    assert points.t[0] == 0.0 and points.t[-1] == pytest.approx(2.0, abs=1e-12)
    np.testing.assert_allclose(points.qjet[-1, 0], goal, atol=1e-12)
    np.testing.assert_allclose(points.qjet[-1, 1:], 0.0, atol=1e-9)
    np.testing.assert_allclose(accepted.trajectory(np.array([2.0]))[0], goal, atol=1e-12)


def test_before_any_measured_state_a_late_trajectory_joins_the_reference_at_rest(iiwa):
    stream = ReferenceStream(0.01, 2)
    stream.set_model(iiwa, hold=np.full(7, 0.2), now_ns=T0)
    accepted = stream.accept(list(iiwa.joint_names), [1.0], np.full((1, 7), 0.3), now_ns=T0)
    assert accepted.joined == "reference"
    np.testing.assert_allclose(accepted.points.qjet[0, 0], 0.2, atol=1e-12)
    np.testing.assert_allclose(accepted.points.qjet[0, 1], 0.0, atol=1e-12)


def test_a_trajectory_too_large_is_refused_before_any_work_naming_its_size_and_the_parameter(iiwa):
    stream = ReferenceStream(0.01, 2, max_points=1000)
    stream.set_model(iiwa)
    times = np.arange(1200) * 0.01
    with pytest.raises(Exception, match=r"^trajectory of 1200 waypoints over 11\.99 s refused: with the 100 Hz points "
                                        r"for a controller it makes 2400 points, more than max_trajectory_points 1000$"):
        stream.accept(list(iiwa.joint_names), times, np.zeros((1200, 7)), now_ns=T0)
    with pytest.raises(Exception, match=r"20 s refused: with the 100 Hz points for a controller it makes 2003 points"):
        stream.accept(list(iiwa.joint_names), [0.0, 20.0], np.zeros((2, 7)), now_ns=T0)  # 2 waypoints, 20 s
    assert stream.stats["accepted"] == 0


def test_the_figure_of_the_join_is_drawn(tmp_path):
    """examples/join_from_measured_state.py (the figure of doc/ros2_interface.md) runs."""
    import os
    import subprocess
    import sys

    script = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "examples",
                          "join_from_measured_state.py")
    out = tmp_path / "join.png"
    subprocess.run([sys.executable, script, str(out)], check=True, capture_output=True, timeout=120)
    assert out.stat().st_size > 10_000
