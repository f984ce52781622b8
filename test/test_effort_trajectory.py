"""Points for joint_trajectory_controller: times, exact tau at the points (Pinocchio), and the
controller's linear interpolation of effort within the stated error of tau between them."""

import numpy as np
import pytest

import hod_dynamics as hd
from hod_dynamics.feedforward.effort_trajectory import effort_trajectory, interpolation_error, point_times
from hod_dynamics.feedforward.reference_stream import hold_trajectory


def jtc_effort(t_points, effort, t):
    """Effort as joint_trajectory_controller samples it (ros2_controllers, trajectory.cpp,
    Trajectory::sample and interpolate_between_points): between points i and i+1 (t_i <= t <
    t_{i+1}) the linear polynomial e_i + (e_{i+1} - e_i) / (t_{i+1} - t_i) * (t - t_i); from the
    last point on, the last point's effort. ``t_points`` (N,), ``effort`` (N, n), ``t`` (M,)."""
    out = np.empty((len(t), effort.shape[1]))
    for m, s in enumerate(t):
        i = np.searchsorted(t_points, s, side="right") - 1
        if i >= len(t_points) - 1:
            out[m] = effort[-1]
            continue
        i = max(i, 0)
        c1 = (effort[i + 1] - effort[i]) / (t_points[i + 1] - t_points[i])
        out[m] = effort[i] + c1 * (s - t_points[i])
    return out


@pytest.fixture(scope="module")
def demo(iiwa):
    """The shipped iiwa14 demo trajectory, as the node builds it for order 2 (C^4)."""
    shipped = hd.load_trajectory("iiwa14_demo")
    t = shipped.waypoint_times
    return hd.Trajectory.from_waypoints(shipped.joint_names, t, shipped(t), continuity=4)


def test_points_are_the_grid_and_the_waypoint_times_in_whole_nanoseconds(iiwa):
    traj = hd.Trajectory.from_waypoints(iiwa.joint_names, [0.0, 0.333, 1.0], np.zeros((3, 7)) + [[0], [0.2], [0]])
    t = point_times(traj, 10.0)
    expected = sorted(set(np.round(np.r_[np.arange(11) / 10, 0.333], 9)))
    np.testing.assert_array_equal(t, expected)
    assert np.all(np.diff(t) > 0) and np.all(np.round(t * 1e9) == t * 1e9)
    late = hd.Trajectory.from_waypoints(iiwa.joint_names, [0.25, 0.5], np.zeros((2, 7)))
    np.testing.assert_allclose(point_times(late, 10.0), [0.25, 0.3, 0.4, 0.5])
    np.testing.assert_array_equal(point_times(hold_trajectory(iiwa, np.zeros(7)), 100.0), [0.0])
    with pytest.raises(hd.InputError, match="rate must be a positive number of Hz, got 0"):
        point_times(traj, 0)


def test_tau_at_the_points_is_pinocchio_rnea_of_the_splines_motion(iiwa_pinocchio, demo):
    model, pin_robot = iiwa_pinocchio
    points = effort_trajectory(model, demo, 100.0, 1)
    assert points.joint_names == tuple(model.joint_names) and points.taujet.shape == (len(points.t), 2, 7)
    np.testing.assert_allclose(points.qjet, demo.jet(points.t, 2), rtol=0, atol=1e-15)
    expected = np.array([pin_robot.rnea(*jet) for jet in points.qjet])
    np.testing.assert_allclose(points.taujet[:, 0], expected, rtol=1e-10, atol=1e-10)


@pytest.mark.parametrize("rate", [20.0, 100.0, 500.0])
def test_the_controllers_linear_interpolation_stays_within_the_stated_error(iiwa, demo, rate):
    """At 1 kHz and at random instants over the whole trajectory and after it, the effort the
    controller interpolates differs from the exact tau by at most h^2/8 max|tau''| (h = 1/rate,
    max over the trajectory, tau'' exact on a dense grid), and the estimate reported with the
    points (tau'' at the points only) is that bound within 10 %."""
    points = effort_trajectory(iiwa, demo, rate, 2)
    rng = np.random.default_rng(1)
    t = np.sort(np.r_[np.arange(0.0, demo.end + 0.5, 0.001), rng.uniform(0, demo.end, 2000)])
    exact = hd.time_derivatives(iiwa, demo.jet(t, 4), 2)
    error = np.abs(jtc_effort(points.t, points.taujet[:, 0], t) - exact[:, 0]).max(axis=0)
    bound = (1.0 / rate) ** 2 / 8 * np.abs(exact[:, 2]).max(axis=0)
    assert np.all(error <= bound), (error, bound)
    assert np.all(error >= 0.5 * bound) or rate == 20.0  # the bound is tight (the torque is curved)
    np.testing.assert_allclose(points.interpolation_error, bound, rtol=0.1)


def test_the_interpolation_error_estimate_is_exact_for_a_parabola():
    t = np.array([0.0, 0.1, 0.3])
    tau2 = np.full((3, 2), [4.0, -6.0])
    np.testing.assert_allclose(interpolation_error(t, tau2), [0.2 ** 2 / 8 * 4, 0.2 ** 2 / 8 * 6])
    assert interpolation_error(t[:1], tau2[:1]).tolist() == [0.0, 0.0]
