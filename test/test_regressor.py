"""The regressor: Pinocchio's computeJointTorqueRegressor on real robot descriptions, Y pi equal
to the inverse dynamics, exact time derivatives (finite differences and tau^(k)), friction
columns, floating bases, both backends."""

import os

import numpy as np
import pytest

import hod_dynamics as hd
from hod_dynamics.errors import InputError
from hod_dynamics.algorithms.friction import FrictionModel
from hod_dynamics.algorithms.regressors import (friction_parameters, n_columns,
                                                regressor_time_derivatives_floating)
from oracles import (BACKENDS, CENTRAL_7, PinocchioRobot, erd_path, floating_pinocchio_robot,
                     pinocchio_robot, random_floating_state, random_urdf, rel_err, sinusoid_jet)

CORPUS = os.path.join(os.path.dirname(os.path.abspath(__file__)), "data", "urdf_corpus")
# real robot descriptions (SOURCES.md; example-robot-data): branching trees, fixed joints merged
# into bodies, locked fingers, continuous joints, CR LF exports, vendor extensions
ROBOTS = ["panda", "ur5", "talos", "double_pendulum", "baxter", "ros2_kortex/GEN3_URDF_V12_vision.urdf",
          "unitree_ros/z1.urdf", "SO-ARM100/so100.urdf", "kuka_experimental/kr16_2.urdf", "legged_gym/cassie.urdf"]


def _robot(name):
    """(our model, PinocchioRobot) of an example-robot-data robot or a corpus file."""
    if "/" not in name:
        return pinocchio_robot(name)
    path = os.path.join(CORPUS, name)
    model = hd.RobotModel.from_urdf(path, inertia_check="off")
    return model, PinocchioRobot(path, model)


def _pinocchio_columns(pin_robot, model):
    """Pinocchio's regressor columns in our body order (10 per body, its joint's block)."""
    ids = [pin_robot.model.getJointId(nm) for nm in model.joint_names]
    return np.concatenate([np.arange(10 * (j - 1), 10 * j) for j in ids]).astype(int)


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("name", ROBOTS)
def test_regressor_equals_pinocchios_on_real_robots(name, backend, rng):
    model, pin_robot = _robot(name)
    n = model.n_dof
    q, qd, qdd = rng.uniform(-1.5, 1.5, (3, 3, n))
    Y = hd.regressor(model, q, qd, qdd, backend=backend)
    assert Y.shape == (3, n, 10 * n)
    cols = _pinocchio_columns(pin_robot, model)
    pin = pin_robot.pin
    for s in range(3):
        theirs = np.array(pin.computeJointTorqueRegressor(pin_robot.model, pin_robot.data, pin_robot.q(q[s]),
                                                           pin_robot.v(qd[s]), pin_robot.v(qdd[s])))
        assert rel_err(Y[s], theirs[np.ix_(pin_robot.vidx, cols)]) < 1e-12
    pi = hd.inertial_parameters(model).ravel()
    assert rel_err(Y @ pi, hd.inverse_dynamics(model, q, qd, qdd)) < 1e-12


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("name", ["solo12", "talos"])
def test_floating_regressor_has_base_rows_and_equals_pinocchios(name, backend, rng):
    model, pin_robot = floating_pinocchio_robot(name)
    q, v, a = random_floating_state(model, rng, (3,))
    Y = hd.regressor(model, q, v, a, backend=backend)
    assert Y.shape == (3, 6 + model.n_dof, 10 * (1 + model.n_dof))
    cols = np.r_[np.arange(10), _pinocchio_columns(pin_robot, model)]
    pin = pin_robot.pin
    for s in range(3):
        pv, pa = np.zeros(pin_robot.model.nv), np.zeros(pin_robot.model.nv)
        pv[pin_robot.vidx], pa[pin_robot.vidx] = v[s], a[s]
        theirs = np.array(pin.computeJointTorqueRegressor(pin_robot.model, pin_robot.data, pin_robot.q(q[s]), pv, pa))
        assert rel_err(Y[s], theirs[np.ix_(pin_robot.vidx, cols)]) < 1e-12
    pi = hd.inertial_parameters(model).ravel()
    assert rel_err(Y @ pi, hd.inverse_dynamics(model, q, v, a)) < 1e-12


@pytest.mark.parametrize("backend", BACKENDS)
def test_regressor_times_parameters_is_the_inverse_dynamics_of_random_trees(random_tree, backend, rng):
    """Prismatic and oddly oriented joints, branches, massless links."""
    _, model = random_tree
    q, qd, qdd = rng.uniform(-1, 1, (3, 5, model.n_dof))
    pi = hd.inertial_parameters(model).ravel()
    assert rel_err(hd.regressor(model, q, qd, qdd, backend=backend) @ pi, hd.inverse_dynamics(model, q, qd, qdd)) < 1e-12


def _regressor_jet(model, t, order, backend, seed=0):
    return hd.regressor_time_derivatives(model, sinusoid_jet(model.n_dof, t, order + 3, seed), order, backend=backend)


@pytest.mark.parametrize("backend", BACKENDS)
def test_time_derivatives_match_finite_differences_of_the_order_below(panda, backend):
    """Y^(k) against the 6th-order central difference of Y^(k-1) along an exact trajectory, k = 1..3."""
    t0, h = 0.37, 1e-3
    jet = _regressor_jet(panda, [t0], 3, backend)[0]
    for k in range(1, 4):
        fd = np.tensordot(CENTRAL_7, _regressor_jet(panda, t0 + h * np.arange(-3, 4), k - 1, backend)[:, k - 1],
                          axes=(0, 0)) / h
        assert rel_err(jet[k], fd) < 1e-7 * 10 ** k, k


@pytest.mark.parametrize("backend", BACKENDS)
def test_time_derivatives_times_parameters_are_the_torque_derivatives(random_tree, backend):
    _, model = random_tree
    qjet = sinusoid_jet(model.n_dof, np.linspace(0, 2, 4), 7, seed=3)
    Yk = hd.regressor_time_derivatives(model, qjet, 4, backend=backend)
    assert Yk.shape == (4, 5, model.n_dof, n_columns(model))
    pi = hd.inertial_parameters(model).ravel()
    assert rel_err(Yk @ pi, hd.time_derivatives(model, qjet, 4)) < 1e-11


@pytest.mark.parametrize("backend", BACKENDS)
def test_floating_time_derivatives_times_parameters(backend, rng):
    model, _ = floating_pinocchio_robot("solo12")
    q, _, _ = random_floating_state(model, rng, (2,))
    vjet = rng.normal(size=(2, 5, model.nv))
    pi = hd.inertial_parameters(model).ravel()
    Yk = regressor_time_derivatives_floating(model, q, vjet, 3, backend=backend)
    assert Yk.shape == (2, 4, 6 + model.n_dof, 10 * (1 + model.n_dof))
    assert rel_err(Yk @ pi, hd.time_derivatives_floating(model, q, vjet, 3)) < 1e-11


def test_backends_agree_on_jets(random_tree):
    _, model = random_tree
    qjet = sinusoid_jet(model.n_dof, np.linspace(0, 1, 40), 5, seed=1)
    a = hd.regressor_time_derivatives(model, qjet, 2, backend="numpy", friction=True)
    b = hd.regressor_time_derivatives(model, qjet, 2, backend="numba", friction=True)
    assert rel_err(b, a) < 1e-13


def test_large_batches_take_the_vectorised_kernel_and_agree(random_tree, rng):
    """300 samples run the compiled kernel's lanes (16 samples or more, order 0): the same
    numbers as numpy, every entry written (the output is not zeroed first)."""
    _, model = random_tree
    q, qd, qdd = rng.uniform(-1, 1, (3, 300, model.n_dof))
    a = hd.regressor(model, q, qd, qdd, backend="numpy")
    b = hd.regressor(model, q, qd, qdd, backend="numba")
    assert rel_err(b, a) < 1e-13
    assert rel_err(hd.regressor(model, q, qd, qdd, friction=True, backend="numba")[..., :a.shape[-1]], a) < 1e-13


def test_friction_columns_give_the_friction_torque_and_its_derivatives(iiwa, rng):
    n = iiwa.n_dof
    friction = FrictionModel(iiwa.joint_names, coulomb=rng.uniform(0, 3, n), viscous=rng.uniform(0, 2, n),
                             offset=rng.normal(size=n), v_s=np.full(n, 0.05))
    qjet = sinusoid_jet(n, np.linspace(0, 3, 30), 6)
    Yk = hd.regressor_time_derivatives(iiwa, qjet, 3, friction=True, v_s=0.05)
    assert Yk.shape[-1] == 10 * n + 3 * n
    x = np.r_[hd.inertial_parameters(iiwa).ravel(), friction_parameters(friction)]
    assert rel_err(Yk @ x, hd.time_derivatives(iiwa, qjet, 3, friction=friction)) < 1e-12


def test_bad_arguments_are_named(iiwa, rng):
    with pytest.raises(InputError, match="qdd must have shape"):
        hd.regressor(iiwa, np.zeros(7), np.zeros(7), np.zeros(6))
    with pytest.raises(InputError, match="derivative 1, joint 'iiwa_joint_3'"):
        jet = np.zeros((4, 7))
        jet[1, 2] = np.nan
        hd.regressor_time_derivatives(iiwa, jet, 1)
    with pytest.raises(InputError, match="v_s must be > 0"):
        hd.regressor(iiwa, np.zeros(7), np.zeros(7), np.zeros(7), friction=True, v_s=0.0)
    model, _ = floating_pinocchio_robot("solo12")
    with pytest.raises(InputError, match="regressor_time_derivatives takes fixed-base models.*regressor_time_derivatives_floating"):
        hd.regressor_time_derivatives(model, np.zeros((3, model.nv)), 1)
    with pytest.raises(InputError, match="needs a floating-base model"):
        regressor_time_derivatives_floating(iiwa, np.zeros(14), np.zeros((3, 13)), 1)
