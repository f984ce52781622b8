"""mass_matrix against Pinocchio's crba; kinetic energy against the mass matrix."""

import numpy as np

import hod_dynamics as hd
from oracles import PinocchioRobot, rel_err


def test_mass_matrix_matches_pinocchio(erd_robot, rng):
    name, model, pinrobot = erd_robot
    q = rng.uniform(-2, 2, (3, model.n_dof))
    M = hd.mass_matrix(model, q)
    assert M.shape == (3, model.n_dof, model.n_dof)
    for k in range(3):
        assert rel_err(M[k], pinrobot.crba(q[k])) < 1e-10, name
    assert rel_err(hd.mass_matrix(model, q[0]), M[0]) < 1e-14


def test_mass_matrix_random_trees(random_tree, rng):
    text, model = random_tree
    pinrobot = PinocchioRobot(text, model)
    q = rng.uniform(-2, 2, model.n_dof)
    assert rel_err(hd.mass_matrix(model, q), pinrobot.crba(q)) < 1e-10


def test_mass_matrix_is_the_acceleration_part_of_rnea(iiwa, rng):
    """M qdd = tau(q, 0, qdd) - tau(q, 0, 0): an oracle independent of the CRBA recursion."""
    q, qdd = rng.normal(size=(2, 4, 7))
    z = np.zeros_like(q)
    lhs = np.einsum("...ij,...j->...i", hd.mass_matrix(iiwa, q), qdd)
    rhs = hd.inverse_dynamics(iiwa, q, z, qdd) - hd.inverse_dynamics(iiwa, q, z, z)
    assert rel_err(lhs, rhs) < 1e-12


def test_mass_matrix_symmetric_positive_definite(panda, rng):
    M = hd.mass_matrix(panda, rng.uniform(-2, 2, (10, 7)))
    np.testing.assert_array_equal(M, np.swapaxes(M, -1, -2))
    assert np.linalg.eigvalsh(M).min() > 0
