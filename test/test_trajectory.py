"""Trajectory: exact interpolation, C^k smoothness at every knot, holding still, Hermite data,
smoothing fits, validation errors and the limit report."""


import warnings

import numpy as np
import pytest
from scipy.interpolate import BSpline

import hod_dynamics as hd
from hod_dynamics.errors import TrajectoryError

from oracles import central_difference

NAMES = ["a", "b", "c"]
TIMES = np.array([0.0, 0.7, 1.1, 2.0, 3.4, 4.0])


def waypoints(rng, n_points=len(TIMES), n_joints=3):
    return rng.uniform(-1.0, 1.0, (n_points, n_joints))


def one_sided_derivatives(traj, nu):
    """(left, right) limits of q^(nu) at every distinct knot: (m, n) arrays each.

    scipy's B-spline evaluation is right-continuous; left limits come from the mirrored
    spline s -> q(-s) (reversed, negated knots and reversed coefficients), whose right limit at
    -b is the left limit of q at b, times (-1)^nu. Outside the span the trajectory holds still.
    """
    sp = traj.spline
    mirror = BSpline(-sp.t[::-1], np.ascontiguousarray(np.asarray(sp.c)[::-1]), sp.k)
    d = sp.derivative(nu) if nu else sp
    md = mirror.derivative(nu) if nu else mirror
    b = np.unique(sp.t)
    left = (-1) ** nu * md(-b)
    right = d(b)
    hold = traj.jet(b[[0, -1]], nu)[:, nu] if nu == 0 else 0.0
    left[0], right[-1] = hold[0] if nu == 0 else hold, hold[1] if nu == 0 else hold
    return left, right


def max_jump(traj, nu):
    """Largest |left - right| of q^(nu) over all knots, relative to max |q^(nu)| of the joint."""
    grid = np.linspace(traj.start, traj.end, 4001)
    with warnings.catch_warnings():  # above the continuity jet() warns that the row jumps: measured here
        warnings.simplefilter("ignore", hd.HodDynamicsWarning)
        scale = np.abs(traj.jet(grid, nu)[:, nu]).max(axis=0)
    left, right = one_sided_derivatives(traj, nu)
    return float((np.abs(left - right) / scale).max())


@pytest.mark.parametrize("continuity", [1, 2, 4, 6])
def test_exact_at_waypoints_and_smooth_at_every_knot(rng, continuity):
    P = waypoints(rng)
    traj = hd.Trajectory.from_waypoints(NAMES, TIMES, P, continuity=continuity)
    assert np.abs(traj(TIMES) - P).max() < 1e-12
    for nu in range(continuity + 1):
        assert max_jump(traj, nu) < 1e-9, nu
    # the check can fail: the derivative one order above the continuity jumps at the ends
    assert max_jump(traj, continuity + 1) > 1e-3


def test_holds_still_outside_span(rng):
    P = waypoints(rng)
    traj = hd.Trajectory.from_waypoints(NAMES, TIMES, P)
    jet = traj.jet(np.array([-5.0, -1e-9, 4.0 + 1e-9, 9.0]), 4)
    assert np.abs(jet[:2, 0] - P[0]).max() < 1e-14 and np.abs(jet[2:, 0] - P[-1]).max() < 1e-14
    assert not np.any(jet[:, 1:])
    inside = traj.jet(TIMES[[0, -1]], 4)
    assert np.abs(inside[:, 1:]).max() < 1e-9


def test_jet_rows_are_derivatives(rng):
    traj = hd.Trajectory.from_waypoints(NAMES, TIMES, waypoints(rng), continuity=4)
    with pytest.warns(hd.HodDynamicsWarning, match="n_derivatives=5 exceeds the continuity"):
        jet = traj.jet(np.array([0.3, 1.5, 2.9]), 5)   # row 5 is exact between the knots
    for i, t0 in enumerate([0.3, 1.5, 2.9]):
        fd = central_difference(lambda ts: traj.jet(ts, 4), t0, 1e-3)
        assert np.abs(fd - jet[i, 1:]).max() < 1e-6 * max(1.0, np.abs(jet[i, 1:]).max())


def test_jet_shapes():
    traj = hd.Trajectory.from_waypoints(NAMES, [0, 1], [[0, 0, 0], [1, 2, 3]])
    assert traj.jet(0.5, 2).shape == (3, 3)
    assert traj.jet(np.zeros(7), 2).shape == (7, 3, 3)
    assert traj.jet(np.zeros((2, 5)), 0).shape == (2, 5, 1, 3)


@pytest.mark.parametrize("with_acc", [False, True])
def test_given_velocities_and_accelerations_are_respected(rng, with_acc):
    P = waypoints(rng)
    V = rng.uniform(-1, 1, P.shape)
    A = rng.uniform(-3, 3, P.shape)
    V[[0, -1]] = 0.0
    A[[0, -1]] = 0.0
    traj = hd.Trajectory.from_waypoints(NAMES, TIMES, P, V, A if with_acc else None, continuity=3)
    jet = traj.jet(TIMES, 2)
    assert np.abs(jet[:, 0] - P).max() < 1e-11
    assert np.abs(jet[:, 1] - V).max() < 1e-10
    if with_acc:
        assert np.abs(jet[:, 2] - A).max() < 1e-9
    for nu in range(4):
        assert max_jump(traj, nu) < 1e-9, nu


def test_hermite_spline_reproduces_the_interpolant_given_its_own_derivatives(rng):
    """The spline minimises the integral of |q^(h+1)|^2; adding data it already satisfies
    must give back the same curve (an independent check of the Hermite construction)."""
    P = waypoints(rng)
    plain = hd.Trajectory.from_waypoints(NAMES, TIMES, P, continuity=4)
    jet = plain.jet(TIMES, 2)
    herm = hd.Trajectory.from_waypoints(NAMES, TIMES, P, jet[:, 1], jet[:, 2], continuity=4)
    t = np.linspace(-0.5, 4.5, 301)
    assert herm.spline.k == plain.spline.k
    assert np.abs(herm.jet(t, 4) - plain.jet(t, 4)).max() < 1e-8 * np.abs(plain.jet(t, 4)).max()


def test_smoothing_fit_of_noisy_samples():
    rng = np.random.default_rng(7)
    t = np.linspace(0, 4, 801)
    truth = np.stack([np.sin(1.3 * t), 0.5 * np.cos(0.7 * t + 0.2)], axis=1)
    noise = 1e-3
    y = truth + rng.normal(0, noise, truth.shape)
    fit = hd.Trajectory.from_samples(["x", "y"], t, y)
    inner = (t > 0.3) & (t < 3.7)
    err = fit(t[inner]) - truth[inner]
    assert np.sqrt(np.mean(err ** 2)) < 0.4 * noise       # averages the noise out
    assert np.abs(err).max() < noise
    vel = 1.3 * np.cos(1.3 * t[inner])
    assert np.abs(fit.jet(t[inner], 1)[:, 1, 0] - vel).max() < 0.02
    assert fit.continuity == 4 and fit.spline.k == 5
    # a real smoothing fit, not interpolation: it leaves the noise in the residual
    assert 0.8 * noise < np.sqrt(np.mean((fit(t) - y) ** 2)) < 1.1 * noise
    exact = hd.Trajectory.from_samples(["x", "y"], t[::20], y[::20], smoothing=0.0)
    assert np.abs(exact(t[::20]) - y[::20]).max() < 1e-10


def test_noise_estimate():
    from hod_dynamics.feedforward.trajectory import noise_std

    rng = np.random.default_rng(3)
    t = np.linspace(0, 4, 2001)
    y = np.sin(t)[:, None] + rng.normal(0, [1e-3, 1e-2], (len(t), 2))
    assert np.allclose(noise_std(y), [1e-3, 1e-2], rtol=0.15)


# -- validation --------------------------------------------------------------------------------
def _bad(**changes):
    data = dict(joint_names=list(NAMES), times=list(TIMES),
                positions=np.zeros((6, 3)).tolist(), velocities=None, accelerations=None)
    data.update(changes)
    return data


P6 = np.zeros((6, 3))


def _with(a, idx, value):
    a = np.array(a, dtype=float)
    a[idx] = value
    return a


@pytest.mark.parametrize("kwargs, pattern", [
    (_bad(times=[0, 1, 1, 2, 3, 4]), "waypoint 2: time 1.0"),
    (_bad(times=[0, 1, 3, 2, 5, 6]), "waypoint 3"),
    (_bad(times=[0, np.nan, 2, 3, 4, 5]), "waypoint 1: time nan"),
    (_bad(times=[0.0]), "at least two waypoints"),
    (_bad(positions=P6.tolist()[:5]), "5 waypoints given but 6 times"),
    (_bad(positions=P6.tolist()[:3] + [[0.0, 0.0]] + P6.tolist()[4:]), "waypoint 3: 2 positions for 3 joints"),
    (_bad(positions=_with(P6, (2, 1), np.nan)), "waypoint 2, joint 'b': position nan"),
    (_bad(positions=_with(P6, (5, 2), np.inf)), "waypoint 5, joint 'c': position inf"),
    (_bad(velocities=_with(P6, (1, 2), np.inf)), "waypoint 1, joint 'c': velocity inf"),
    (_bad(velocities=_with(P6, (5, 0), 0.2)), "waypoint 5, joint 'a': velocity 0.2 must be 0"),
    (_bad(velocities=P6, accelerations=_with(P6, (0, 1), -1.0)), "waypoint 0, joint 'b': acceleration -1"),
    (_bad(accelerations=P6), "accelerations given without velocities"),
    (_bad(joint_names=["a", "b", "a"]), "duplicate joint names"),
    (_bad(times=[0, "one", 2, 3, 4, 5]), "waypoint 1: time 'one' is not a number"),
    (_bad(positions=[[0, 0, 0]] * 4 + [[0, "x", 0], [0, 0, 0]]), "waypoint 4, joint 'b': position 'x' is not a number"),
    (_bad(velocities=_with(P6, (0, 1), 0.5)), "waypoint 0, joint 'b': velocity 0.5 must be 0"),
])
def test_validation_errors_name_waypoint_and_joint(kwargs, pattern):
    with pytest.raises(TrajectoryError, match=pattern.replace("(", r"\(")):
        hd.Trajectory.from_waypoints(**kwargs)


def test_bad_continuity_and_derivative_order():
    with pytest.raises(TrajectoryError, match="continuity"):
        hd.Trajectory.from_waypoints(NAMES, TIMES, P6, continuity=0)
    traj = hd.Trajectory.from_waypoints(NAMES, TIMES, P6)
    with pytest.raises(TrajectoryError, match="n_derivatives"):
        traj.jet([0.0], -1)
    with pytest.raises(TrajectoryError, match="finite"):
        traj.jet([np.nan], 1)


def test_for_model_maps_message_order_to_model_order(iiwa, rng):
    names = list(iiwa.joint_names)
    perm = rng.permutation(7)
    P = rng.uniform(-1, 1, (4, 7))
    msg = hd.Trajectory.from_waypoints([names[i] for i in perm] + ["gripper"], [0, 1, 2, 3],
                                       np.c_[P[:, perm], np.zeros(4)])
    mapped = msg.for_model(iiwa, allow_extra=True)
    assert mapped.joint_names == iiwa.joint_names
    assert np.abs(mapped([0, 1, 2, 3]) - P).max() < 1e-12
    with pytest.raises(TrajectoryError, match=r"unknown joints \['gripper'\]"):
        msg.for_model(iiwa)
    short = hd.Trajectory.from_waypoints(names[:6], [0, 1], np.zeros((2, 6)))
    with pytest.raises(TrajectoryError, match="missing joints \\['iiwa_joint_7'\\]"):
        short.for_model(iiwa)


# -- limits ---------------------------------------------------------------------------------------
def test_shipped_demo_trajectory_is_within_the_iiwa_limits(iiwa):
    assert "iiwa14_demo" in hd.feedforward.trajectory.shipped_trajectories()
    traj = hd.load_trajectory("iiwa14_demo")
    report = traj.check_limits(iiwa)
    assert report.ok, str(report)
    assert traj.for_model(iiwa) is traj
    with pytest.raises(TrajectoryError, match="no trajectory file"):
        hd.load_trajectory("nope")


def test_limit_report_lists_violations(iiwa):
    demo = hd.load_trajectory("iiwa14_demo")
    times = demo.waypoint_times / 4.0     # four times faster: velocities x4, efforts up
    P = demo(demo.waypoint_times)
    P[2, 1] = 2.2                         # beyond iiwa_joint_2's upper limit 2.094
    fast = hd.Trajectory.from_waypoints(demo.joint_names, times, P)
    report = fast.check_limits(iiwa, effort_rate_limits=np.full(7, 50.0))
    assert not report.ok
    kinds = {(v.kind, v.joint) for v in report.violations}
    assert ("position", "iiwa_joint_2") in kinds and ("velocity", "iiwa_joint_1") in kinds
    assert any(k == "effort_rate" for k, _ in kinds)
    pos = next(v for v in report.violations if v.kind == "position")
    assert pos.value >= 2.2 - 1e-12 and pos.limit == pytest.approx(2.094)
    grid = np.linspace(fast.start, fast.end, 20001)
    vmax = np.abs(fast.jet(grid, 1)[:, 1, 0]).max()
    vel = next(v for v in report.violations if v.kind == "velocity" and v.joint == "iiwa_joint_1")
    assert abs(abs(vel.value) - vmax) < 1e-3 * vmax
    assert "iiwa_joint_2" in str(report) and "limit" in str(report)


def test_yaml_file_errors(tmp_path):
    path = tmp_path / "t.yaml"
    path.write_text("joint_names: [a]\ntimes: [0, 1]\npositons: [[0], [1]]\n")
    with pytest.raises(TrajectoryError, match=r"unknown keys \['positons'\], missing keys \['positions'\]"):
        hd.Trajectory.from_yaml(str(path))


def test_threads_sharing_a_trajectory_get_the_right_derivatives():
    """The ROS node evaluates one trajectory from two threads; derivatives are built lazily."""
    import sys

    times, names = np.linspace(0, 2, 5), ["a", "b"]
    positions = np.array([[0, 0], [0.3, -0.2], [0.1, 0.4], [-0.2, 0.1], [0.0, 0.0]])
    t = np.linspace(0.1, 1.9, 7)
    expected = hd.Trajectory.from_waypoints(names, times, positions).jet(t, 4)
    switch = sys.getswitchinterval()
    sys.setswitchinterval(1e-6)  # switch threads as often as possible, to expose races
    try:
        _evaluate_concurrently(names, times, positions, t, expected)
    finally:
        sys.setswitchinterval(switch)


def _evaluate_concurrently(names, times, positions, t, expected):
    import threading

    for _ in range(300):
        traj = hd.Trajectory.from_waypoints(names, times, positions)
        out = [None, None]
        start = threading.Barrier(2)

        def evaluate(k):
            start.wait()
            out[k] = traj.jet(t, 4)

        threads = [threading.Thread(target=evaluate, args=(k,)) for k in range(2)]
        for th in threads:
            th.start()
        for th in threads:
            th.join()
        for result in out:
            np.testing.assert_array_equal(result, expected)


def test_zero_smoothing_for_one_joint_interpolates_it():
    rng = np.random.default_rng(3)
    t = np.linspace(0, 2, 200)
    clean = np.stack([np.sin(2 * t), np.cos(3 * t)], axis=1)
    noisy = clean + np.array([0.01, 0.0]) * rng.normal(size=clean.shape)
    traj = hd.Trajectory.from_samples(["a", "b"], t, noisy, smoothing=[0.01, 0.0])
    fit = traj(t)
    assert np.abs(fit[:, 1] - noisy[:, 1]).max() < 1e-6      # joint b interpolated
    assert np.abs(fit[:, 0] - noisy[:, 0]).max() > 1e-3      # joint a smoothed
    with pytest.raises(TrajectoryError, match=r"smoothing must be one number or 2"):
        hd.Trajectory.from_samples(["a", "b"], t, noisy, smoothing=[0.1, 0.1, 0.1])


def test_yaml_files_with_errors_raise_the_documented_error(tmp_path):
    bad = tmp_path / "bad.yaml"
    bad.write_text("joint_names: [a, b\ntimes: [0, 1]\n")
    with pytest.raises(TrajectoryError, match=r"trajectory file: malformed YAML in file .*bad.yaml"):
        hd.Trajectory.from_yaml(str(bad))
    with pytest.raises(TrajectoryError, match=r"trajectory file: no such file 'nope.yaml'"):
        hd.Trajectory.from_yaml("nope.yaml")


def test_a_trajectory_pickles_for_worker_processes(iiwa):
    import pickle

    traj = hd.Trajectory.from_waypoints(iiwa.joint_names, [0.0, 0.5, 1.0], np.outer([0.0, 0.3, 0.1], np.ones(7)),
                                        continuity=5)
    t = np.linspace(-0.1, 1.1, 23)
    traj.jet(t, 3)  # a derivative cache and its lock: not pickled
    copy = pickle.loads(pickle.dumps(traj))
    assert copy.joint_names == traj.joint_names and copy.continuity == 5
    np.testing.assert_array_equal(copy.waypoint_times, traj.waypoint_times)
    np.testing.assert_array_equal(copy.jet(t, 5), traj.jet(t, 5))


def _dense_hermite_spline(times, given, hold):
    """The Hermite spline of Trajectory.from_waypoints as it was first written: the square
    collocation system assembled densely from scipy's basis (np.eye of the coefficients) and
    solved with LAPACK's dense solver (cubic time, quadratic memory): the oracle of the banded
    construction."""
    p, r = 2 * hold + 1, len(given) - 1
    knots = np.r_[[times[0]] * (p + 1), np.repeat(times[1:-1], r + 1), [times[-1]] * (p + 1)]
    basis = BSpline(knots, np.eye(len(knots) - p - 1), p)
    rows, rhs = [basis(times)], [given[0]]
    for nu in range(1, r + 1):
        rows.append(basis.derivative(nu)(times[1:-1]))
        rhs.append(given[nu][1:-1])
    for nu in range(1, hold + 1):
        rows.append(basis.derivative(nu)(times[[0, -1]]))
        rhs.append(np.zeros((2, given[0].shape[1])))
    return BSpline(knots, np.linalg.solve(np.vstack(rows), np.vstack(rhs)), p)


@pytest.mark.parametrize("points, orders, continuity", [(3, 1, 4), (5, 2, 4), (12, 2, 4), (40, 1, 4), (9, 2, 5)])
def test_the_banded_hermite_spline_is_the_dense_solve_to_1e_12(rng, points, orders, continuity):
    """Velocities (and accelerations) given at every waypoint, irregular times: every derivative
    the spline is continuous to, along the whole span, equal to the dense solve's to 1e-12 of its
    peak (the continuities a stream of tau^(0..3) uses: at higher degrees both solves meet the
    interpolation conditions only to ~1e-9 on such random data, the problem's own conditioning)."""
    t = np.r_[0.0, np.cumsum(rng.uniform(0.05, 0.6, points - 1))]
    given = [rng.normal(size=(points, 7)) for _ in range(orders + 1)]
    for g in given[1:]:
        g[[0, -1]] = 0.0
    traj = hd.Trajectory.from_waypoints([f"j{i}" for i in range(7)], t, *given, continuity=continuity)
    oracle = _dense_hermite_spline(t, given, max(continuity, orders))
    s = np.linspace(t[0], t[-1], 997)
    jet = traj.jet(s, continuity)
    for k in range(continuity + 1):
        want = oracle.derivative(k)(s) if k else oracle(s)
        assert np.abs(jet[:, k] - want).max() <= 1e-12 * np.abs(want).max(), k


def test_a_trajectory_joined_at_a_velocity_starts_at_it_and_passes_its_waypoints(rng):
    """initial_velocity: the first waypoint is left at that velocity (higher derivatives 0),
    with and without velocities given at the waypoints; those given must start at it."""
    names = ["a", "b", "c"]
    v0 = rng.normal(size=3)
    t, q = np.array([0.0, 0.7, 2.0]), rng.normal(size=(3, 3))
    vel = np.vstack([v0, rng.normal(size=3), np.zeros(3)])
    for traj in (hd.Trajectory.from_waypoints(names, t, q, initial_velocity=v0),
                 hd.Trajectory.from_waypoints(names, t, q, vel, initial_velocity=v0)):
        jet = traj.jet(np.array([0.0, 2.0]), 3)
        np.testing.assert_allclose(jet[0, 1], v0, atol=1e-12)
        np.testing.assert_allclose(jet[0, 2:], 0.0, atol=1e-9)
        np.testing.assert_allclose(traj(t), q, atol=1e-12)
        np.testing.assert_allclose(jet[1, 1:], 0.0, atol=1e-9)  # at rest at the end
    with pytest.raises(TrajectoryError, match=r"waypoint 0, joint 'a': velocity .* differs from the initial velocity"):
        hd.Trajectory.from_waypoints(names, t, q, np.zeros((3, 3)), initial_velocity=v0)
