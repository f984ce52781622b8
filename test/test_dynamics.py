"""inverse_dynamics against Pinocchio's rnea on real and random robots, batched and not."""

import numpy as np
import pytest

import hod_dynamics as hd
from oracles import PinocchioRobot, rel_err


def _states(model, rng, batch=()):
    n = model.n_dof
    q = rng.uniform(np.maximum(model.lower, -3), np.minimum(model.upper, 3), batch + (n,))
    return q, rng.normal(size=batch + (n,)) * 2, rng.normal(size=batch + (n,)) * 3


def test_rnea_matches_pinocchio_unbatched(erd_robot, rng):
    name, model, pinrobot = erd_robot
    for _ in range(4):
        q, qd, qdd = _states(model, rng)
        assert rel_err(hd.inverse_dynamics(model, q, qd, qdd), pinrobot.rnea(q, qd, qdd)) < 1e-10, name


def test_rnea_matches_pinocchio_batched(erd_robot, rng):
    name, model, pinrobot = erd_robot
    q, qd, qdd = _states(model, rng, (3, 4))
    tau = hd.inverse_dynamics(model, q, qd, qdd)
    assert tau.shape == (3, 4, model.n_dof)
    expected = np.array([[pinrobot.rnea(q[a, b], qd[a, b], qdd[a, b]) for b in range(4)] for a in range(3)])
    assert rel_err(tau, expected) < 1e-10, name


def test_rnea_random_trees_match_pinocchio(random_tree, rng):
    text, model = random_tree
    pinrobot = PinocchioRobot(text, model)
    q, qd, qdd = _states(model, rng, (5,))
    tau = hd.inverse_dynamics(model, q, qd, qdd)
    expected = np.array([pinrobot.rnea(*s) for s in zip(q, qd, qdd)])
    assert rel_err(tau, expected) < 1e-10


def test_batch_shapes_broadcast(iiwa, rng):
    q, qd, qdd = _states(iiwa, rng, (6,))
    tau = hd.inverse_dynamics(iiwa, q, qd[0], 0.0 * qdd[0])  # (6, n) with (n,) and (n,)
    expected = hd.inverse_dynamics(iiwa, q, np.broadcast_to(qd[0], q.shape), np.zeros_like(q))
    assert tau.shape == (6, 7)
    np.testing.assert_allclose(tau, expected, rtol=0, atol=1e-12)


def test_gravity_torque_of_planar_2r_is_the_printed_formula(planar_2r, rng):
    """seed 000 sec. 6.1: tau1, tau2 of the point-mass 2R (L1 = 0.5, L2 = 0.4, m1 = 3, m2 = 2)."""
    L1, L2, m1, m2, g = 0.5, 0.4, 3.0, 2.0, 9.81
    q, qd, qdd = _states(planar_2r, rng, (20,))
    (q1, q2), (dq1, dq2), (ddq1, ddq2) = q.T, qd.T, qdd.T
    c2, s2, c1, c12 = np.cos(q2), np.sin(q2), np.cos(q1), np.cos(q1 + q2)
    tau1 = (L1**2 * ddq1 * (m1 + m2) + L2**2 * (ddq1 + ddq2) * m2 + L2 * g * m2 * c12
            + L1 * g * (m1 + m2) * c1 - L1 * L2 * dq2**2 * m2 * s2 + 2 * L1 * L2 * ddq1 * m2 * c2
            + L1 * L2 * ddq2 * m2 * c2 - 2 * L1 * L2 * dq1 * dq2 * m2 * s2)
    tau2 = L2 * m2 * (L1 * s2 * dq1**2 + L2 * ddq1 + L2 * ddq2 + g * c12 + L1 * ddq1 * c2)
    tau = hd.inverse_dynamics(planar_2r, q, qd, qdd)
    assert rel_err(tau, np.stack([tau1, tau2], -1)) < 1e-12


def test_wrench_on_link_matches_pinocchio_fext(rng):
    model, pinrobot = __import__("oracles").pinocchio_robot("panda")
    q, qd, qdd = _states(model, rng)
    for link in ("panda_link7", "panda_hand", "panda_link3"):
        W = rng.normal(size=6) * 5
        expected = pinrobot.rnea(q, qd, qdd, pinrobot.external_forces({link: W}, q))
        assert rel_err(hd.inverse_dynamics(model, q, qd, qdd, wrenches={link: W}), expected) < 1e-10, link


@pytest.mark.parametrize("bad, match", [
    (dict(q=np.zeros(6)), r"q must have shape \(\.\.\., 7\)"),
    (dict(qd=np.zeros((2, 8))), r"qd must have shape"),
    (dict(qdd=np.array([0, 0, np.nan, 0, 0, 0, 0.0])), r"qdd holds a non-finite value .*iiwa_joint_3"),
    (dict(q=np.full(7, np.inf)), r"q holds a non-finite"),
    (dict(q=np.zeros((3, 7)), qd=np.zeros((2, 7))), r"batch shapes do not broadcast"),
])
def test_bad_arrays_raise_input_error(iiwa, bad, match):
    args = dict(q=np.zeros(7), qd=np.zeros(7), qdd=np.zeros(7))
    args.update(bad)
    with pytest.raises(hd.InputError, match=match):
        hd.inverse_dynamics(iiwa, args["q"], args["qd"], args["qdd"])


def test_input_errors_are_value_errors(iiwa):
    with pytest.raises(ValueError):
        hd.mass_matrix(iiwa, np.zeros(3))


def test_bad_wrench_raises(iiwa):
    z = np.zeros(7)
    with pytest.raises(hd.ModelError, match="unknown link 'nope'"):
        hd.inverse_dynamics(iiwa, z, z, z, wrenches={"nope": np.zeros(6)})
    with pytest.raises(hd.InputError, match="wrench on link 'iiwa_link_7' must have shape"):
        hd.inverse_dynamics(iiwa, z, z, z, wrenches={"iiwa_link_7": np.zeros(5)})
    with pytest.raises(hd.InputError, match="non-finite"):
        hd.inverse_dynamics(iiwa, z, z, z, wrenches={"iiwa_link_7": np.full(6, np.nan)})
