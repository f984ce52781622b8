"""Gravity torques, the Coriolis matrix and forward dynamics against Pinocchio
(computeGeneralizedGravity, computeCoriolisMatrix, aba with external forces): Panda, UR5,
TALOS and random trees; one sample and a batch."""

import numpy as np
import pytest

import hod_dynamics as hd

def _samples(model, count, seed):
    rng = np.random.default_rng(seed)
    return rng.uniform(-1.2, 1.2, size=(3, count, model.n_dof))


def _scaled(a, b):
    """max |a - b| relative to max(1, max |b|): 1e-10 of the magnitude at stake."""
    return np.abs(np.asarray(a) - b).max() / max(1.0, np.abs(b).max())


def test_gravity_torques_and_coriolis_matrix_match_pinocchio(pinocchio_tree):
    model, pr = pinocchio_tree
    pin = pr.pin
    Q, QD, _ = _samples(model, 4, 11)
    ix = np.ix_(pr.vidx, pr.vidx)
    g = [np.array(pin.computeGeneralizedGravity(pr.model, pr.data, pr.q(q)))[pr.vidx] for q in Q]
    C = [np.array(pin.computeCoriolisMatrix(pr.model, pr.data, pr.q(q), pr.v(qd)))[ix] for q, qd in zip(Q, QD)]
    assert _scaled(hd.gravity_torques(model, Q), g) < 1e-10
    assert _scaled(hd.gravity_torques(model, Q[0]), g[0]) < 1e-10
    assert _scaled(hd.coriolis_matrix(model, Q, QD), C) < 1e-10
    assert _scaled(hd.coriolis_matrix(model, Q[2], QD[2]), C[2]) < 1e-10
    assert np.abs(g).max() > 1.0 and np.abs(C).max() > 0.1  # not a vacuous comparison


def test_coriolis_matrix_is_the_passive_factorisation(panda):
    """C qd is the Coriolis/centrifugal torque and dM/dt - 2 C is skew-symmetric."""
    Q, QD, _ = _samples(panda, 3, 2)
    C = hd.coriolis_matrix(panda, Q, QD)
    zero = np.zeros_like(Q)
    np.testing.assert_allclose(np.einsum("bij,bj->bi", C, QD),
                               hd.inverse_dynamics(panda, Q, QD, zero) - hd.gravity_torques(panda, Q), atol=1e-12)
    Mdot = hd.algorithms.closed_form.mass_matrix_derivatives(panda, np.stack([Q, QD], axis=-2), 1)[:, 1]
    S = Mdot - 2 * C
    np.testing.assert_allclose(S, -np.swapaxes(S, -1, -2), atol=1e-12)


def test_forward_dynamics_matches_pinocchio_aba_with_external_forces(pinocchio_tree):
    model, pr = pinocchio_tree
    pin = pr.pin
    Q, QD, TAU = _samples(model, 4, 21)
    TAU = TAU * 20.0
    link = model.link_names[-1]
    W = np.random.default_rng(4).normal(scale=5.0, size=(4, 6))
    expected, expected_w = [], []
    for q, qd, tau, w in zip(Q, QD, TAU, W):
        args = (pr.model, pr.data, pr.q(q), pr.v(qd), pr.v(tau))
        expected.append(np.array(pin.aba(*args))[pr.vidx])
        expected_w.append(np.array(pin.aba(*args, pr.external_forces({link: w}, q)))[pr.vidx])
    assert _scaled(hd.forward_dynamics(model, Q, QD, TAU), expected) < 1e-10
    assert _scaled(hd.forward_dynamics(model, Q[1], QD[1], TAU[1]), expected[1]) < 1e-10
    assert _scaled(hd.forward_dynamics(model, Q, QD, TAU, wrenches={link: W}), expected_w) < 1e-10
    assert _scaled(hd.forward_dynamics(model, Q[3], QD[3], TAU[3], wrenches={link: W[3]}), expected_w[3]) < 1e-10
    assert _scaled(expected_w, expected) > 1e-6  # the wrench changes the answer


def test_forward_dynamics_inverts_inverse_dynamics_and_names_bad_input(panda):
    Q, QD, QDD = _samples(panda, 5, 8)
    tau = hd.inverse_dynamics(panda, Q, QD, QDD)
    np.testing.assert_allclose(hd.forward_dynamics(panda, Q, QD, tau), QDD, atol=1e-9)
    with pytest.raises(hd.InputError, match="tau must have shape"):
        hd.forward_dynamics(panda, Q[0], QD[0], np.zeros(3))
    with pytest.raises(hd.InputError, match="qd"):
        hd.forward_dynamics(panda, Q[0], np.full(panda.n_dof, np.nan), tau[0])


def test_floating_base_models_are_refused_with_the_reason():
    solo = hd.load_robot("solo12", floating_base=True)
    q = np.zeros(solo.nq)
    for call in (lambda: hd.gravity_torques(solo, q), lambda: hd.coriolis_matrix(solo, q, np.zeros(solo.nv)),
                 lambda: hd.frame_pose(solo, q, solo.root_link),
                 lambda: hd.frame_jacobian(solo, q, solo.root_link)):
        with pytest.raises(hd.InputError, match="takes fixed-base models; 'solo' has a floating base"):
            call()
