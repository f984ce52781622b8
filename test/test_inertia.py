"""Inertial parameters: Pinocchio's dynamicParameters layout, pseudo-inertias, physical
consistency, and models rebuilt from parameters."""

import numpy as np
import pytest

import hod_dynamics as hd
from hod_dynamics.errors import InputError, ModelError
from hod_dynamics.model.spatial import body_inertia
from hod_dynamics.model.inertia import (com_form, consistency_margin, inertia_from_parameters,
                                        parameters_from_inertia, parameters_from_pseudo_inertia,
                                        pseudo_inertia)
from hod_dynamics.model.robot_model import inertial_parameters
from oracles import pinocchio_robot


def test_parameters_are_pinocchios_dynamic_parameters_of_the_same_bodies():
    model, pin_robot = pinocchio_robot("panda")       # fingers locked: merged bodies
    pm = pin_robot.model
    ours = inertial_parameters(model)
    theirs = np.array([pm.inertias[pm.getJointId(nm)].toDynamicParameters() for nm in model.joint_names])
    np.testing.assert_allclose(ours, theirs, rtol=0, atol=1e-14)


def test_spatial_inertia_and_pseudo_inertia_round_trip(iiwa):
    pi = inertial_parameters(iiwa)
    np.testing.assert_allclose(inertia_from_parameters(pi), iiwa.inertias, atol=1e-15)
    np.testing.assert_allclose(parameters_from_inertia(inertia_from_parameters(pi)), pi, atol=1e-15)
    np.testing.assert_allclose(parameters_from_pseudo_inertia(pseudo_inertia(pi)), pi, atol=1e-15)


def test_pseudo_inertia_is_the_second_moment_of_a_point_cloud(rng):
    """J = sum m_k [r_k; 1][r_k; 1]^T for point masses: positive definite, and pi is theirs."""
    points, masses = rng.normal(size=(20, 3)), rng.uniform(0.1, 1.0, 20)
    J = np.einsum("k,ki,kj->ij", masses, np.c_[points, np.ones(20)], np.c_[points, np.ones(20)])
    inertia = sum(m * (p @ p * np.eye(3) - np.outer(p, p)) for m, p in zip(masses, points))
    pi = parameters_from_pseudo_inertia(J)
    assert pi[0] == pytest.approx(masses.sum())
    np.testing.assert_allclose(pi[1:4], masses @ points)
    np.testing.assert_allclose(pi[[4, 5, 6, 7, 8, 9]], inertia[[0, 0, 1, 0, 1, 2], [0, 1, 1, 2, 2, 2]])
    assert consistency_margin(pi) > 0


def test_consistency_margin_flags_a_broken_triangle_inequality():
    good = parameters_from_inertia(body_inertia(2.0, [0.1, 0, 0], np.diag([0.02, 0.03, 0.04])))
    bad = parameters_from_inertia(body_inertia(2.0, [0.1, 0, 0], np.diag([0.01, 0.01, 0.04])))
    assert consistency_margin(good) > 0 > consistency_margin(bad)
    m, c, Ic = com_form(good)
    assert m == pytest.approx(2.0) and np.allclose(c, [0.1, 0, 0]) and np.allclose(Ic, np.diag([0.02, 0.03, 0.04]))


def test_model_with_parameters_keeps_everything_else(iiwa):
    pi = inertial_parameters(iiwa) * 1.1
    other = iiwa.with_inertial_parameters(pi.ravel())
    np.testing.assert_allclose(inertial_parameters(other), pi)
    assert other.joint_names == iiwa.joint_names and np.array_equal(other.references, iiwa.references)
    q = np.linspace(-1, 1, 7)
    np.testing.assert_allclose(hd.inverse_dynamics(other, q, q, q), 1.1 * hd.inverse_dynamics(iiwa, q, q, q))


def test_floating_model_parameters_start_with_the_base_body():
    from oracles import erd_model

    model = erd_model("solo12", floating_base=True)
    pi = inertial_parameters(model)
    assert pi.shape == (13, 10)
    np.testing.assert_allclose(pi[0], parameters_from_inertia(model.base_inertia))
    np.testing.assert_allclose(inertial_parameters(model.with_inertial_parameters(pi)), pi)


def test_bad_parameters_are_named(iiwa):
    with pytest.raises(InputError, match=r"shape \(7, 10\) or \(70,\)"):
        iiwa.with_inertial_parameters(np.zeros((7, 9)))
    pi = inertial_parameters(iiwa)
    pi[2, 4] = np.nan
    with pytest.raises(InputError, match="Ixx of body 'iiwa_link_3'"):
        iiwa.with_inertial_parameters(pi)
    pi = inertial_parameters(iiwa)
    pi[1, 0] = -1.0
    with pytest.raises(ModelError, match="body 'iiwa_link_2': negative mass"):
        iiwa.with_inertial_parameters(pi)
