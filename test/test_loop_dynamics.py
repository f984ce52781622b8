"""Inverse dynamics of mechanisms with loops and its time derivatives (hod_dynamics.algorithms.loop_*),
each number against an oracle that does not take the method's route: the four-bar's closed-form
Lagrangian dynamics, central differences in time of the order below, MuJoCo driven by the
feedforward alone, Pinocchio's constrained dynamics and its derivatives, the power balance."""

import math

import numpy as np
import pytest

import hod_dynamics as hd
from hod_dynamics.errors import ActuationError, ClosureError
from hod_dynamics.model.closures import Closure, pose

import loop_oracles as L


@pytest.fixture(scope="module")
def mechanisms():
    """{name: (model, motion)} of the three test mechanisms, built once."""
    return {name: (build(), motion) for name, (build, motion) in L.MODELS.items()}


def _dynamics(model, t, order, motion):
    return hd.constrained_dynamics(model, L.sine_jet(t, K=order + 3, **motion), order)


# -- closed form -----------------------------------------------------------------------------------
def test_fourbar_tau_and_tau_rate_match_its_closed_form_lagrangian_dynamics(mechanisms):
    model, motion = mechanisms["fourbar"]
    tau, tau_dot = L.fourbar_lagrangian()
    t = np.linspace(0.0, 2.0, 201)                            # the crank turns by 4 rad
    y = L.sine_jet(t, K=4, **motion)[:, :, 0].T
    jets = hd.time_derivatives(model, L.sine_jet(t, K=4, **motion), 1)
    assert np.max(np.abs(jets[:, 0, 0] - tau(*y[:3]))) < 1e-10
    assert np.max(np.abs(jets[:, 1, 0] - tau_dot(*y))) < 1e-10
    assert np.ptp(jets[:, 0, 0]) > 1.0 and np.ptp(jets[:, 1, 0]) > 5.0   # not a trivial motion


# -- differences in time ---------------------------------------------------------------------------
@pytest.mark.parametrize("name", sorted(L.MODELS))
def test_orders_1_to_4_equal_central_differences_of_the_order_below(mechanisms, name):
    """9-point stencils (h = 1 ms, error ~h^8 x^(9)) of tau_a, the closure forces and the tree's
    joint jet, at two times of each mechanism's motion."""
    model, motion = mechanisms[name]
    weights, offsets = L.central_weights(9, 1e-3)
    for t0 in (0.37, 1.21):
        d = _dynamics(model, t0 + offsets, 4, motion)
        for what, x in (("tau_a", d.tau_a), ("lam", d.lam), ("qjet", d.qjet)):
            for j in range(1, 5):
                scale = max(1.0, np.max(np.abs(x[4, j])))
                assert np.max(np.abs(weights @ x[:, j - 1] - x[4, j])) < 1e-8 * scale, (name, t0, what, j)
        assert np.max(np.abs(d.tau_a[4, 1:])) > 0.1                           # every order moves


# -- simulation ------------------------------------------------------------------------------------
def test_mujoco_driven_by_the_feedforward_alone_tracks_the_ankle_for_2_s():
    """The ankle in MuJoCo, its two ball joints as equality constraints (connect), driven by
    tau_a(t) alone: the Taylor polynomial of tau_a^(0..3) at each 0.1 ms step, no feedback."""
    pytest.importorskip("mujoco")
    model = L.with_min_mass(L.ankle())
    dt, duration = 1e-4, 2.0
    grid = np.arange(int(round(duration / dt)) + 1) * dt
    d = _dynamics(model, grid, 3, L.ANKLE_MOTION)

    def tau_a(t):
        i = min(int(math.floor(t / dt + 1e-9)), len(grid) - 1)
        h = t - grid[i]
        return sum(d.tau_a[i, j] * h ** j / math.factorial(j) for j in range(4))

    _, y, closure = L.simulate_mujoco(model, duration, dt, tau_a, d.qjet[0, 0], d.qjet[0, 1])
    planned = L.sine_jet(grid, K=1, **L.ANKLE_MOTION)[:, 0]
    assert np.max(np.abs(y - planned)) < 1e-6 and closure < 1e-8
    assert np.ptp(planned, axis=0).min() > 0.5                # the motors swing by half a radian and more


@pytest.mark.parametrize("name", sorted(L.MODELS))
def test_pinocchio_constraint_dynamics_with_tau_a_gives_the_planned_accelerations(mechanisms, name):
    pin_loop = L.PinocchioLoop(mechanisms[name][0], L.URDFS[name])
    d = _dynamics(mechanisms[name][0], np.array([0.3, 1.1, 1.7]), 0, mechanisms[name][1])
    for s in range(3):
        qdd = pin_loop.constraint_dynamics(d.qjet[s, 0], d.qjet[s, 1], d.tau_a[s, 0])
        assert np.max(np.abs(qdd - d.qjet[s, 2])) < 1e-8 * max(1.0, np.max(np.abs(d.qjet[s, 2])))


@pytest.mark.parametrize("name", sorted(L.MODELS))
def test_pinocchio_inverse_dynamics_and_its_constrained_derivatives_give_tau_a_and_its_rate(mechanisms, name):
    """Order 0 from Pinocchio's rnea and frame Jacobians; order 1 from its analytical derivatives
    of the constrained forward dynamics (computeConstraintDynamicsDerivatives), for the ankle and
    the hand (contacts between two moving bodies, where pin 4.1's FD_q is wrong) from central
    differences of its constraintDynamics."""
    analytic = name in ("fourbar", "drake_fourbar")
    pin_loop = L.PinocchioLoop(mechanisms[name][0], L.URDFS[name])
    d = _dynamics(mechanisms[name][0], np.array([0.3, 1.1]), 1, mechanisms[name][1])
    for s in range(2):
        scale = max(1.0, np.max(np.abs(d.tau_a[s])))
        assert np.max(np.abs(pin_loop.tau_a(*d.qjet[s, :3]) - d.tau_a[s, 0])) < 1e-10 * scale
        rate = pin_loop.tau_a_rate(*d.qjet[s, :4], d.tau_a[s, 0], analytic=analytic)
        assert np.max(np.abs(rate - d.tau_a[s, 1])) < (1e-9 if analytic else 1e-7) * scale


# -- energy ----------------------------------------------------------------------------------------
@pytest.mark.parametrize("name", ["fourbar", "ankle"])
def test_the_actuators_power_is_the_rate_of_the_mechanisms_energy(mechanisms, name):
    """tau_a . y' = d(kinetic + potential energy)/dt (9-point differences of the energy)."""
    model, motion = mechanisms[name]
    weights, offsets = L.central_weights(9, 1e-3)
    for t0 in (0.25, 0.8, 1.6):
        d = _dynamics(model, t0 + offsets, 0, motion)
        power = d.tau_a[4, 0] @ d.qjet[4, 1, model.actuated_index]
        rate = weights @ L.total_energy(model.tree, d.qjet[:, 0], d.qjet[:, 1])
        assert abs(power - rate) < 1e-10 * max(1.0, abs(power)), (t0, power, rate)


# -- the route's own checks ------------------------------------------------------------------------
def test_every_order_of_the_closure_residual_vanishes_and_its_jacobian_is_its_derivative(mechanisms):
    from hod_dynamics.algorithms.loop_series import ClosureSeries

    model, motion = mechanisms["ankle"]
    d = _dynamics(model, np.array([0.5, 1.3]), 4, motion)
    series = ClosureSeries(model, 2, 7)
    series.q[:] = d.qjet / np.array([math.factorial(k) for k in range(7)])[:, None]
    for k in range(7):
        series.fill(k)
        assert np.max(np.abs(series.residual(k))) < 1e-13, k
    q = d.qjet[0, 0] + 0.1 * np.random.default_rng(0).standard_normal(model.tree.n_dof)

    def residual(x):
        one = ClosureSeries(model, 1, 1)
        one.q[0, 0] = x
        one.fill(0)
        return one.residual(0)[0], one.jacobian(0)[0]

    numeric = np.stack([(residual(q + 1e-6 * e)[0] - residual(q - 1e-6 * e)[0]) / 2e-6
                        for e in np.eye(model.tree.n_dof)], axis=-1)
    assert np.max(np.abs(residual(q)[1] - numeric)) < 1e-8


def test_a_hinge_and_a_ball_closing_the_planar_fourbar_give_the_same_torques(mechanisms):
    model, motion = mechanisms["fourbar"]
    hinge = model.closures[0]
    ball = model.tree.with_loops([Closure("ball", "point", hinge.link_a, hinge.link_b, hinge.pose_a, hinge.pose_b)],
                                 model.actuated_joints, assembly=model.assembly)
    t = np.linspace(0.0, 1.0, 7)
    a, b = _dynamics(model, t, 3, motion), _dynamics(ball, t, 3, motion)
    assert np.max(np.abs(a.tau_a - b.tau_a)) < 1e-11
    assert a.rows.sum(axis=-1).tolist() == [2] * 7     # a planar loop: 2 of the hinge's 5 rows carry its forces


def test_a_batch_a_grid_one_sample_and_a_motion_in_pieces_give_the_same_numbers(mechanisms):
    model, motion = mechanisms["fourbar"]
    t = np.linspace(0.0, 2.0, 41)
    yjet = L.sine_jet(t, K=5, **motion)
    whole = hd.time_derivatives(model, yjet, 2)
    assert whole.shape == (41, 3, 1)
    pieces = np.concatenate([hd.time_derivatives(model, yjet[a:a + 10], 2) for a in range(0, 41, 10)])
    grid = hd.time_derivatives(model, yjet.reshape(41, 1, 5, 1), 2).reshape(41, 3, 1)
    one = np.stack([hd.time_derivatives(model, yjet[s], 2) for s in (0, 17, 40)])
    assert np.max(np.abs(pieces - whole)) < 1e-11 and np.max(np.abs(grid - whole)) < 1e-11
    assert np.max(np.abs(one - whole[[0, 17, 40]])) < 1e-11
    tau = hd.inverse_dynamics(model, yjet[:, 0], yjet[:, 1], yjet[:, 2])
    assert tau.shape == (41, 1) and np.max(np.abs(tau - whole[:, 0])) < 1e-12
    guessed = hd.constrained_dynamics(model, yjet, 2, guess=hd.constrained_dynamics(model, yjet, 2).qjet[:, 0])
    assert np.max(np.abs(guessed.tau_a - whole)) < 1e-11
    closed_form = hd.time_derivatives(model, yjet, 2, method="closed_form")     # the tree's closed form
    assert np.max(np.abs(closed_form - whole)) < 1e-10 * max(1.0, np.abs(whole).max())


def test_friction_of_the_actuated_joints_is_added_with_its_derivatives(mechanisms):
    model, motion = mechanisms["ankle"]
    friction = {"motor_left": {"coulomb": 0.3, "viscous": 0.05, "offset": 0.01}}
    yjet = L.sine_jet(np.linspace(0.0, 1.0, 5), K=5, **motion)
    rigid = hd.time_derivatives(model, yjet, 2)
    added = hd.time_derivatives(model, yjet, 2, friction=friction) - rigid
    assert np.max(np.abs(added - hd.load_friction(friction, model).jet(yjet[:, 1:4]))) < 1e-14
    assert np.all(added[:, :, 1] == 0) and np.abs(added[:, 0, 0]).min() > 0.01


# -- refusals --------------------------------------------------------------------------------------
def test_the_robotiq_hands_one_motor_per_finger_leaves_its_fingers_free_and_is_refused():
    """Drake's Robotiq 3-finger hand actuated as its <transmission>s say: an adaptive hand, each
    finger's 4 degrees of freedom driven by one motor (through springs and stops, not modelled)."""
    hand = L.robotiq(actuated=None)
    assert len(hand.actuated_joints) == 3 and len(hand.closures) == 9
    with pytest.raises(ActuationError, match=r"fix 18 of its 27 passive coordinates.*and \d+ more can move") as info:
        hd.inverse_dynamics(hand, np.zeros(3), np.zeros(3), np.zeros(3))
    assert {"finger_1_joint_1", "finger_2_joint_2", "finger_middle_joint_1"} <= set(info.value.joints)


def test_one_motor_of_the_ankle_does_not_determine_it_and_the_free_joints_are_named(mechanisms):
    model = mechanisms["ankle"][0]
    half = model.tree.with_loops(model.closures, ["motor_left"])
    with pytest.raises(ActuationError, match="do not determine the mechanism") as info:
        hd.inverse_dynamics(half, [0.1], [0.0], [0.0])
    assert info.value.kind == "underdetermined"
    assert "motor_right" in info.value.joints and "ankle_pitch" in info.value.joints


def test_actuating_two_joints_of_a_one_dof_loop_is_refused_naming_them(mechanisms):
    model = mechanisms["fourbar"][0]
    both = model.tree.with_loops(model.closures, ["crank_joint", "coupler_joint"], assembly=model.assembly)
    for y in ([0.0, -0.95], [0.3, -0.5]):
        with pytest.raises(ActuationError, match="not independent") as info:
            hd.inverse_dynamics(both, y, [0.0, 0.0], [0.0, 0.0])
        assert info.value.kind == "overdetermined" and set(info.value.joints) == {"crank_joint", "coupler_joint"}


def test_a_position_outside_the_workspace_is_refused_naming_the_loop_and_the_sample(mechanisms):
    """Drake's four-bar is not a crank-rocker: its input link (1.8 m, pivot 2 m above the output
    link's) reaches the coupler's and output link's 3.6 - 2.6 = 1 m only while 7.24 + 7.2 cos(y)
    >= 1, up to y = 2.6225 rad."""
    model = mechanisms["drake_fourbar"][0]
    y = np.linspace(0.0, 3.0, 31)[:, None]                    # 2.6 is the last one reachable
    with pytest.raises(ClosureError, match=r"loop 'joint_3' of 'FourBar' at sample 27 \(actuated positions \[2.7\]\)"):
        hd.inverse_dynamics(model, y, np.zeros_like(y), np.zeros_like(y))
    assert hd.inverse_dynamics(model, y[:27], y[:27], y[:27]).shape == (27, 1)
    far = Closure("too_far", "point", "rocker", "ground", pose((0.3, 0, 0)), pose((2.0, 0, 0)))
    with pytest.raises(ClosureError, match="too_far.*its assembly"):
        hd.inverse_dynamics(mechanisms["fourbar"][0].tree.with_loops([far], ["crank_joint"]), [0.0], [0.0], [0.0])


def test_bad_arguments_are_refused_naming_them(mechanisms):
    model = mechanisms["fourbar"][0]
    with pytest.raises(hd.InputError, match="order"):
        hd.time_derivatives(model, np.zeros((3, 1)), -1)
    with pytest.raises(hd.InputError, match=r"r >= 4.*crank_joint"):
        hd.time_derivatives(model, np.zeros((3, 1)), 1)
    with pytest.raises(hd.InputError, match=r"derivative 2, joint 'crank_joint'"):
        hd.time_derivatives(model, [[0.0], [1.0], [np.nan]], 0)
    with pytest.raises(hd.InputError, match=r"qd must have shape \(\.\.\., 1\)"):
        hd.inverse_dynamics(model, [0.0], [0.0, 1.0], [0.0])
    with pytest.raises(hd.InputError, match="guess must hold the 3 tree joint positions"):
        hd.constrained_dynamics(model, np.zeros((3, 1)), 0, guess=[0.0, 1.0])
    with pytest.raises(hd.InputError, match="wrenches"):
        hd.time_derivatives(model, np.zeros((3, 1)), 0, wrenches={"rocker": np.zeros((1, 6))})
    with pytest.raises(hd.InputError, match="mechanism with loops.*model.tree"):
        hd.mass_matrix(model, [0.0])
