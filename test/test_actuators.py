"""Actuator models: SEA formulas, VSA inversion and implicit derivatives against closed forms and
finite differences, configuration loading and its errors."""

import os

import numpy as np
import pytest

import hod_dynamics as hd
from hod_dynamics.errors import InputError
from hod_dynamics.feedforward.actuators import (AntagonisticExponential, CubicSpring, Rigid, SEA, VSA,
                                                load_actuators)

from oracles import central_difference

CONFIG = hd.model.robots.share_path("config")
K_ROWS = 6


def tau_jet(t):
    """A smooth torque tau(t) = 30 sin(1.7 t + 0.3) + 12 cos(3.1 t) (N m) and 5 derivatives."""
    t = np.asarray(t, dtype=float)[..., None]
    k = np.arange(K_ROWS)
    return (30 * 1.7 ** k * np.sin(1.7 * t + 0.3 + k * np.pi / 2)
            + 12 * 3.1 ** k * np.cos(3.1 * t + k * np.pi / 2))


SIGMA = hd.Trajectory.from_waypoints(["s"], [0.0, 1.0, 2.5], [[1.0], [1.6], [0.7]], continuity=6)
SIGMA_EXP = hd.Trajectory.from_waypoints(["s"], [0.0, 1.0, 2.5], [[0.25], [0.4], [0.3]], continuity=6)
VSAS = {
    "cubic": VSA(CubicSpring(800.0, 2.0e5), SIGMA, 0.5, 1.0),
    "exponential": VSA(AntagonisticExponential(2.5, 10.0), SIGMA_EXP, 0.5, 1.0),
}


@pytest.mark.parametrize("name", sorted(VSAS))
def test_vsa_deflection_inverts_the_spring(name):
    act = VSAS[name]
    t = np.linspace(0.0, 2.5, 41)
    delta = act.deflection(t, tau_jet(t), "j")
    sigma = act.stiffness_jet(t, 1)[:, 0]
    assert np.abs(act.spring.torque(delta[:, 0], sigma) - tau_jet(t)[:, 0]).max() < 1e-11
    assert np.abs(delta[:, 0]).max() > 0.03          # well into the nonlinear range


def test_exponential_deflection_matches_closed_form_inverse():
    act = VSAS["exponential"]
    a, b = act.spring.a, act.spring.b
    t = np.linspace(0.0, 2.5, 41)
    sigma = act.stiffness_jet(t, 1)[:, 0]
    closed = np.arcsinh(tau_jet(t)[:, 0] / (2 * a * np.exp(b * sigma))) / b
    assert np.abs(act.deflection(t, tau_jet(t), "j")[:, 0] - closed).max() < 1e-15


@pytest.mark.parametrize("name", sorted(VSAS))
def test_vsa_deflection_derivatives_match_finite_differences(name):
    """Row k+1 of the deflection jet is the time derivative of row k (6th-order central
    differences of the whole chain tau(t), sigma(t) -> delta(t))."""
    act = VSAS[name]
    for t0 in (0.37, 1.42, 2.1):
        jet = act.deflection(np.array([t0]), tau_jet([t0]), "j")[0]
        fd = central_difference(lambda ts: act.deflection(ts, tau_jet(ts), "j")[:, :-1], t0, 1e-3)
        scale = np.abs(jet[1:]).max()
        assert np.abs(fd - jet[1:]).max() < 1e-9 * scale, (t0, fd, jet[1:])


def test_cubic_spring_without_cubic_term_is_an_sea():
    vsa = VSA(CubicSpring(1000.0, 0.0), 1.3, 0.5)
    sea = SEA(1300.0, 0.5)
    t = np.linspace(0, 2, 9)
    assert np.abs(vsa.deflection(t, tau_jet(t), "j") - sea.deflection(t, tau_jet(t), "j")).max() < 1e-15


def test_taylor_exp_matches_series():
    from hod_dynamics.feedforward.actuators import _exp

    # a(t) = 0.3 + 0.5 t - 0.2 t^2: exp(a) expanded about 0 up to t^5 (coefficients = derivatives / k!)
    a = np.array([0.3, 0.5, -0.2, 0.0, 0.0, 0.0])[:, None]
    f = lambda ts: np.exp(0.3 + 0.5 * ts - 0.2 * ts ** 2)
    e = _exp(a)[:, 0]
    assert e[0] == pytest.approx(np.exp(0.3), rel=1e-15)
    assert e[1] == pytest.approx(central_difference(f, 0.0, 1e-3), rel=1e-10)
    # exact: d2/dt2 exp(a) = (a'^2 + a'') exp(a) at 0 = (0.25 - 0.4) e^0.3, coefficient /2
    assert e[2] == pytest.approx((0.25 - 0.4) * np.exp(0.3) / 2, rel=1e-14)


def test_sea_motor_references(iiwa, rng):
    acts = load_actuators({"iiwa_joint_2": {"type": "sea", "stiffness": 800.0,
                                               "motor_inertia": 0.4, "motor_damping": 2.0,
                                               "gear_ratio": 100}}, iiwa)
    qjet = rng.normal(size=(5, 5, 7))
    taujet = rng.normal(size=(5, 3, 7)) * 20
    theta, u = acts.motor_references(np.zeros(5), qjet, taujet)
    expect = qjet[:, :3, 1] + taujet[:, :, 1] / 800.0
    assert np.abs(theta[:, :, 1] - expect).max() < 1e-15
    assert np.abs(u[:, 1] - (0.4 * expect[:, 2] + 2.0 * expect[:, 1] + taujet[:, 0, 1])).max() < 1e-13
    rigid = [j for j in range(7) if j != 1]
    assert np.array_equal(theta[:, :, rigid], qjet[:, :3, rigid])
    assert np.array_equal(u[:, rigid], taujet[:, 0, rigid])
    assert acts.elastic.tolist() == [False, True] + [False] * 5
    assert acts.gear_ratio[1] == 100.0
    with pytest.raises(InputError, match="tau''"):
        acts.motor_references(np.zeros(5), qjet, taujet[:, :2])


def test_shipped_configs_load_for_iiwa(iiwa):
    sea = load_actuators(os.path.join(CONFIG, "actuators_sea.yaml"), iiwa)
    assert isinstance(sea.actuators[0], SEA) and isinstance(sea.actuators[6], Rigid)
    vsa = load_actuators(os.path.join(CONFIG, "actuators_vsa.yaml"), iiwa)
    kinds = [type(a).__name__ for a in vsa.actuators]
    assert kinds == ["VSA", "VSA", "VSA", "SEA", "Rigid", "Rigid", "Rigid"]
    assert isinstance(vsa.actuators[0].stiffness, hd.Trajectory)
    assert isinstance(vsa.actuators[2].spring, AntagonisticExponential)


SEA_SPEC = {"type": "sea", "stiffness": 1000.0, "motor_inertia": 0.5}


@pytest.mark.parametrize("config, pattern", [
    ({"joint_x": SEA_SPEC, "joint_y": SEA_SPEC}, r"unknown joints \['joint_x', 'joint_y'\]"),
    ({"iiwa_joint_1": {"type": "hydraulic"}}, "joint 'iiwa_joint_1': unknown actuator type 'hydraulic'"),
    ({"iiwa_joint_3": dict(SEA_SPEC, stifness=3)}, r"joint 'iiwa_joint_3': unknown sea parameters \['stifness'\]"),
    ({"iiwa_joint_2": {"type": "sea", "motor_inertia": 0.5}}, r"joint 'iiwa_joint_2': sea needs \['stiffness'\]"),
    ({"iiwa_joint_2": dict(SEA_SPEC, stiffness=-5)}, "joint 'iiwa_joint_2': stiffness must be > 0"),
    ({"iiwa_joint_4": {"type": "vsa", "spring": "leaf", "stiffness": 1, "motor_inertia": 1}},
     "joint 'iiwa_joint_4': unknown spring 'leaf'"),
    ({"iiwa_joint_4": {"type": "vsa", "k1": 10, "stiffness": 1, "motor_inertia": 1}},
     "joint 'iiwa_joint_4': spring needs parameter 'k3'"),
    ({"iiwa_joint_5": {"type": "vsa", "k1": 10, "k3": 1, "motor_inertia": 1,
                       "stiffness": {"times": [0, 1], "vals": [1, 2]}}},
     r"joint 'iiwa_joint_5': unknown stiffness keys \['vals'\]"),
    ([1, 2], "must be a mapping"),
    ({"actuators": [1]}, "'actuators' must map joint names"),
    ({"iiwa_joint_1": "sea"}, "joint 'iiwa_joint_1': actuator spec must be a mapping"),
])
def test_configuration_errors_name_the_fault(iiwa, config, pattern):
    with pytest.raises(InputError, match=pattern):
        load_actuators(config, iiwa)


def test_stiffness_setting_must_stay_positive():
    act = VSA(CubicSpring(100.0, 1.0), -0.5, 0.5)
    with pytest.raises(InputError, match="joint 'j7': stiffness setting must stay > 0"):
        act.deflection(np.zeros(3), np.ones((3, 3)), "j7")


def test_stiffness_trajectory_must_be_smooth_enough():
    sigma = hd.Trajectory.from_waypoints(["s"], [0, 1], [[1.0], [2.0]], continuity=2)
    act = VSA(CubicSpring(100.0, 1.0), sigma, 0.5)
    act.deflection(np.zeros(2), np.ones((2, 3)), "j")
    with pytest.raises(hd.TrajectoryError, match="C\\^2 but sigma\\^\\(3\\) is needed"):
        act.deflection(np.zeros(2), np.ones((2, 4)), "j")


def test_actuators_from_yaml_text_and_bad_values(iiwa):
    acts = load_actuators("{iiwa_joint_2: {type: sea, stiffness: 900, motor_inertia: 0.4}}", iiwa)
    assert acts.elastic.tolist() == [False, True] + [False] * 5
    with pytest.raises(hd.InputError, match=r"joint 'iiwa_joint_2': stiffness must be a number, got 'stiff'"):
        load_actuators({"iiwa_joint_2": {"type": "sea", "stiffness": "stiff", "motor_inertia": 0.4}}, iiwa)
    with pytest.raises(hd.InputError, match=r"actuator configuration: malformed YAML in YAML text"):
        load_actuators("{iiwa_joint_2: {type: sea", iiwa)
    with pytest.raises(hd.InputError, match=r"actuator configuration: no such file 'missing.yaml'"):
        load_actuators("missing.yaml", iiwa)
