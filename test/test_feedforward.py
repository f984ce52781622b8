"""The feedforward chain, checked end to end: an elastic-joint Panda (link dynamics from
Pinocchio's ABA, motor dynamics from the actuator parameters) driven by u(t) must follow q(t)."""

import numpy as np
import pytest
from scipy.integrate import solve_ivp
from scipy.interpolate import make_interp_spline

import hod_dynamics as hd
from hod_dynamics.errors import TrajectoryError
from hod_dynamics.feedforward.trajectory_feedforward import feedforward
from hod_dynamics.feedforward.actuators import (ActuatorSet, AntagonisticExponential, CubicSpring, VSA,
                                                load_actuators)

from oracles import central_difference

# 5 s Panda trajectory within the Panda's position, velocity and effort limits
PANDA_TIMES = [0.0, 1.0, 2.2, 3.5, 5.0]
PANDA_Q = [[0.0, -0.3, 0.0, -2.0, 0.0, 1.6, 0.8],
           [0.5, 0.1, -0.4, -1.6, 0.3, 1.9, 0.2],
           [-0.3, 0.3, 0.2, -2.2, -0.4, 1.4, 1.2],
           [0.2, -0.2, 0.5, -1.8, 0.5, 2.0, 0.4],
           [0.0, -0.3, 0.0, -2.0, 0.0, 1.6, 0.8]]
K, B, D = 1000.0, 0.5, 1.0           # N m/rad, kg m^2, N m s/rad (joint side)
GRID = np.linspace(0.0, 5.0, 2501)   # 2 ms: where u is evaluated exactly for the simulation


@pytest.fixture(scope="module")
def panda_case(panda_pinocchio):
    model, pin_robot = panda_pinocchio
    traj = hd.Trajectory.from_waypoints(model.joint_names, PANDA_TIMES, PANDA_Q, continuity=4)
    assert traj.check_limits(model).ok
    return model, pin_robot, traj


def dense_motor_torque(model, traj, actuators):
    """u(t) as a degree-7 interpolant of the exact feedforward on a 2 ms grid (the ODE then
    costs one spline evaluation per step instead of a full feedforward), and the result at
    the grid. The interpolant is checked against the exact feedforward between grid points."""
    ff = feedforward(model, traj, GRID, 2, actuators)
    u = ff.u if actuators is not None else ff.taujet[:, 0]
    spline = make_interp_spline(GRID, u, k=7)
    t_check = np.random.default_rng(1).uniform(0.0, 5.0, 40)
    exact = feedforward(model, traj, t_check, 2, actuators)
    exact_u = exact.u if actuators is not None else exact.taujet[:, 0]
    assert np.abs(spline(t_check) - exact_u).max() < 1e-10 * np.abs(u).max()
    return spline, ff


def simulate(pin_robot, traj, u, x0, spring, stop=None):
    """Elastic-joint robot: link M qdd + h = tau_J (Pinocchio ABA), motor B thdd + D thd + tau_J = u,
    tau_J = spring(t, theta - q). State (q, qd, theta, thd). Returns (max |q - q_ref|, end time)."""
    pin, n = pin_robot.pin, 7

    def rhs(t, x):
        q, qd, th, thd = x[:n], x[n:2 * n], x[2 * n:3 * n], x[3 * n:]
        tau_j = spring(t, th - q)
        qdd = np.asarray(pin.aba(pin_robot.model, pin_robot.data, pin_robot.q(q), pin_robot.v(qd),
                                 pin_robot.v(tau_j)))[pin_robot.vidx]
        return np.concatenate([qd, qdd, thd, (u(t) - D * thd - tau_j) / B])

    events = None
    if stop is not None:
        events = lambda t, x: np.abs(x[:n] - traj(t)).max() - stop  # noqa: E731
        events.terminal = True
    sol = solve_ivp(rhs, (0.0, 5.0), x0, method="DOP853", rtol=1e-10, atol=1e-12,
                    dense_output=True, events=events)
    assert sol.success, sol.message
    t = np.linspace(0.0, sol.t[-1], 2001)
    return float(np.abs(sol.sol(t)[:n].T - traj(t)).max()), float(sol.t[-1])


def initial_state(ff):
    return np.concatenate([ff.qjet[0, 0], ff.qjet[0, 1], ff.thetajet[0, 0], ff.thetajet[0, 1]])


def test_sea_feedforward_tracks_and_rigid_feedforward_does_not(panda_case):
    model, pin_robot, traj = panda_case
    sea = load_actuators({j: {"type": "sea", "stiffness": K, "motor_inertia": B,
                                 "motor_damping": D} for j in model.joint_names}, model)
    u, ff = dense_motor_torque(model, traj, sea)
    x0 = initial_state(ff)
    err, _ = simulate(pin_robot, traj, u, x0, lambda t, d: K * d)
    assert err < 1e-6, err
    # the rigid feedforward (theta = q, u = tau) on the same plant from the same state
    u_rigid, _ = dense_motor_torque(model, traj, None)
    err_rigid, t_end = simulate(pin_robot, traj, u_rigid, x0, lambda t, d: K * d, stop=1e-4)
    assert t_end < 5.0 and err_rigid >= 1e-4 - 1e-9, (t_end, err_rigid)


def test_vsa_feedforward_with_time_varying_stiffness_tracks(panda_case):
    model, pin_robot, traj = panda_case
    sigma = hd.Trajectory.from_waypoints(["sigma"], [0.0, 2.0, 5.0], [[1.0], [1.4], [0.8]], continuity=6)
    preload = hd.Trajectory.from_waypoints(["sigma"], [0.0, 2.5, 5.0], [[0.3], [0.4], [0.3]],
                                           continuity=6)
    cubic, expo = CubicSpring(K, 5000.0), AntagonisticExponential(2.5, 10.0)
    acts = ActuatorSet(model.joint_names, tuple(
        VSA(cubic, sigma, B, D) if i < 4 else VSA(expo, preload, B, D) for i in range(7)))
    u, ff = dense_motor_torque(model, traj, acts)

    def spring(t, d):
        return np.r_[cubic.torque(d[:4], sigma(t)[0]), expo.torque(d[4:], preload(t)[0])]

    err, _ = simulate(pin_robot, traj, u, initial_state(ff), spring)
    assert err < 1e-6, err


# -- the chain itself ------------------------------------------------------------------------------
IIWA_ACTS = {"iiwa_joint_1": {"type": "sea", "stiffness": 900.0, "motor_inertia": 0.3,
                              "motor_damping": 0.7, "gear_ratio": 100},
             "iiwa_joint_2": {"type": "vsa", "spring": "cubic", "k1": 1000.0, "k3": 4.0e4,
                              "stiffness": {"times": [0, 4, 8], "values": [1.0, 1.3, 0.9]},
                              "motor_inertia": 0.4},
             "iiwa_joint_3": {"type": "vsa", "spring": "antagonistic_exponential", "a": 3.0,
                              "b": 8.0, "stiffness": 0.3, "motor_inertia": 0.4}}


def test_chain_matches_its_parts_and_maps_joint_order(iiwa):
    demo = hd.load_trajectory("iiwa14_demo")
    t = np.linspace(-1.0, 9.0, 23)
    ff = feedforward(iiwa, demo, t, 2, IIWA_ACTS)
    qjet = demo.jet(t, 4)
    assert np.array_equal(ff.qjet, qjet)
    assert np.abs(ff.taujet - hd.time_derivatives(iiwa, qjet, 2)).max() < 1e-12
    rigid = ~ff.elastic
    assert np.array_equal(ff.thetajet[..., rigid], qjet[:, :3][..., rigid])
    assert np.array_equal(ff.u[:, rigid], ff.taujet[:, 0][:, rigid])
    assert np.abs(ff.motor_thetajet[..., 0] - 100 * ff.thetajet[..., 0]).max() < 1e-12
    assert np.abs(ff.motor_torque[:, 0] - ff.u[:, 0] / 100).max() < 1e-14
    # message order -> model order
    rev = hd.Trajectory.from_waypoints(demo.joint_names[::-1], demo.waypoint_times,
                                       demo(demo.waypoint_times)[:, ::-1])
    ff_rev = feedforward(iiwa, rev, t, 2, IIWA_ACTS)
    assert np.abs(ff_rev.u - ff.u).max() < 1e-9
    # without actuators: no motor references; a scalar time is one sample
    plain = feedforward(iiwa, demo, 3.0, 1)
    assert plain.thetajet is None and plain.u is None and plain.taujet.shape == (1, 2, 7)


def test_theta_rows_are_time_derivatives(iiwa):
    """theta^(k+1) = d/dt theta^(k) through the whole chain (6th-order central differences)."""
    demo = hd.load_trajectory("iiwa14_demo")
    traj = hd.Trajectory.from_waypoints(demo.joint_names, demo.waypoint_times,
                                        demo(demo.waypoint_times), continuity=6)
    acts = load_actuators(IIWA_ACTS, iiwa)
    for t0 in (1.3, 4.7):
        ff = feedforward(iiwa, traj, t0, 4, acts)
        fd = central_difference(lambda ts: feedforward(iiwa, traj, ts, 4, acts).thetajet[:, :4],
                                t0, 1e-3)
        exact = ff.thetajet[0, 1:, :3]
        assert np.abs(fd[..., :3] - exact).max() < 1e-7 * np.abs(exact).max()


def test_low_orders_still_give_the_motor_torque(iiwa):
    demo = hd.load_trajectory("iiwa14_demo")
    t = np.linspace(0, 8, 9)
    full = feedforward(iiwa, demo, t, 2, IIWA_ACTS)
    low = feedforward(iiwa, demo, t, 0, IIWA_ACTS)
    assert low.thetajet.shape == (9, 3, 7) and low.qjet.shape == (9, 3, 7)  # theta'' kept: u needs it
    assert np.abs(low.u - full.u).max() < 1e-12
    assert np.abs(low.thetajet - full.thetajet).max() < 1e-12


def test_times_must_be_one_dimensional(iiwa):
    with pytest.raises(hd.InputError, match=r"1-D array of times, got shape \(2, 3\)"):
        feedforward(iiwa, hd.load_trajectory("iiwa14_demo"), np.ones((2, 3)), 2, IIWA_ACTS)


def test_trajectory_not_smooth_enough(iiwa):
    demo = hd.load_trajectory("iiwa14_demo")                       # C^4
    with pytest.raises(TrajectoryError, match="C\\^4 but torque order 3 needs C\\^5"):
        feedforward(iiwa, demo, [1.0], 3)
    c3 = hd.Trajectory.from_waypoints(demo.joint_names, demo.waypoint_times,
                                      demo(demo.waypoint_times), continuity=3)
    feedforward(iiwa, c3, [1.0], 1)                              # rigid order 1: C^3 is enough
    with pytest.raises(TrajectoryError, match="torque order 2 needs C\\^4"):
        feedforward(iiwa, c3, [1.0], 1, IIWA_ACTS)               # u needs tau''


def test_the_function_and_its_module_have_distinct_names(iiwa):
    """``hod_dynamics.feedforward.feedforward`` is the function, in the module
    ``trajectory_feedforward`` of the feedforward wing; ``hd.feedforward`` is the wing, which
    can still be called as the function of earlier releases (with a deprecation warning, the
    same result), and a result prints its shapes, not its arrays."""
    import importlib
    import inspect

    from hod_dynamics.errors import HodDynamicsDeprecationWarning

    module = importlib.import_module("hod_dynamics.feedforward.trajectory_feedforward")
    assert inspect.ismodule(hd.feedforward.trajectory_feedforward) and inspect.isfunction(module.feedforward)
    assert hd.feedforward.feedforward is module.feedforward
    t = np.linspace(0, 1, 101)
    with pytest.warns(HodDynamicsDeprecationWarning, match=r"use hod_dynamics\.feedforward\.feedforward\(\.\.\.\)"):
        old = hd.feedforward(iiwa, hd.load_trajectory("iiwa14_demo"), t, 2)
    np.testing.assert_array_equal(old.taujet, module.feedforward(iiwa, hd.load_trajectory("iiwa14_demo"), t, 2).taujet)
    with pytest.warns(HodDynamicsDeprecationWarning):
        assert hd.save_csv is module.save_csv
    text = repr(module.feedforward(iiwa, hd.load_trajectory("iiwa14_demo"), np.linspace(0, 1, 1001), 2))
    assert text.startswith("FeedforwardResult(1001 samples, t=0..1 s, 7 joints") and len(text) < 400, text
