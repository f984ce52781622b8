"""Closed-form pieces M^(k), C^(k), Q_grav^(k), Q_ext^(k) (Kumar and Müller 2021, sec. III;
Müller and Kumar 2021), the printed planar 2R formulas (Müller and Kumar 2021, sec. 6.1), the De
Luca 2R model (Robotics 2 slides), structural properties (Müller and Kumar 2021, sec. 5), kinetic
energy and the power balance, and the Fig. 4 example."""

import os
import subprocess
import sys
from math import comb

import numpy as np
import pytest

import hod_dynamics as hd
from hod_dynamics.algorithms.closed_form import (coriolis_matrix_derivatives, external_wrench_derivatives,
                                                 gravity_derivatives, mass_matrix_derivatives)
from hod_dynamics.model.spatial import body_inertia, transform

from oracles import CENTRAL_7, pinocchio_robot, random_urdf, rel_err, sinusoid_jet

H = 2e-3
METHODS = ("recursive", "closed_form")
ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def fd(values):
    """6th-order central difference over the first axis (7 stencil samples, step H)."""
    return np.tensordot(CENTRAL_7, values, axes=(0, 0)) / H


# -- planar 2R: the formulas printed in Müller and Kumar 2021, sec. 6.1 ----------------------------
L1, L2, M1, M2 = 0.5, 0.4, 3.0, 2.0


def seed000_2r(jet, g):
    """tau, tau_dot, tau_ddot of the planar 2R transcribed from Müller and Kumar 2021, sec. 6.1.

    ``jet`` (6, 2): q, qd, qdd, q^(3), q^(4) rows (the extraction lost the dots; a row of
    "..." above a bare "q 1" marks q1^(3), "q̈¨" marks q^(4)). In tau_ddot_1 the three "..."
    above "-6 L1 L2 q 1 q̇2 ... - 2 L1 L2 q 2 q̇1 ... - 4 L1 L2 q 2 q̇2" mark q1^(3), q2^(3),
    q2^(3); that reading (and q^(3) in the two "q 1" of tau_ddot_2) is the one for which
    the formulas are the exact derivatives of the lines above (checked in
    test_seed000_formulas_are_consistent). tau_2 is printed with its parentheses lost:
    L2 m2 (L1 s2 qd1^2 + L2 qdd1 + L2 qdd2 + g c12 + L1 qdd1 c2).
    """
    (q1, q2), (d1, d2), (a1, a2), (j1, j2), (s1_, s2_) = jet[:5]  # j: q^(3), s_: q^(4)
    m1, m2 = M1, M2
    s1, c1, s2, c2 = np.sin(q1), np.cos(q1), np.sin(q2), np.cos(q2)
    s12, c12 = np.sin(q1 + q2), np.cos(q1 + q2)
    tau1 = (L1**2 * a1 * m1 + L1**2 * a1 * m2 + L2**2 * a1 * m2 + L2**2 * a2 * m2
            + L2 * g * m2 * c12 + L1 * g * m1 * c1 + L1 * g * m2 * c1 - L1 * L2 * d2**2 * m2 * s2
            + 2 * L1 * L2 * a1 * m2 * c2 + L1 * L2 * a2 * m2 * c2 - 2 * L1 * L2 * d1 * d2 * m2 * s2)
    tau2 = L2 * m2 * (L1 * s2 * d1**2 + L2 * a1 + L2 * a2 + g * c12 + L1 * a1 * c2)
    dtau1 = (L1**2 * j1 * m1 + L1**2 * j1 * m2 + L2**2 * j1 * m2 + L2**2 * j2 * m2
             - L2 * d1 * g * m2 * s12
             - L2 * d2 * g * m2 * s12 + 2 * L1 * L2 * j1 * m2 * c2 + L1 * L2 * j2 * m2 * c2
             - L1 * d1 * g * m1 * s1 - L1 * d1 * g * m2 * s1 - L1 * L2 * d2**3 * m2 * c2
             - 4 * L1 * L2 * a1 * d2 * m2 * s2 - 2 * L1 * L2 * a2 * d1 * m2 * s2
             - 3 * L1 * L2 * a2 * d2 * m2 * s2 - 2 * L1 * L2 * d1 * d2**2 * m2 * c2)
    dtau2 = L2 * m2 * (L2 * j1 + L2 * j2 - d1 * g * s12 - d2 * g * s12
                       + L1 * j1 * c2 + 2 * L1 * a1 * d1 * s2 - L1 * a1 * d2 * s2
                       + L1 * d1**2 * d2 * c2)
    ddtau1 = (L1**2 * s1_ * m1 + L1**2 * s1_ * m2 + L2**2 * s1_ * m2 + L2**2 * s2_ * m2
              - 3 * L1 * L2 * a2**2 * m2 * s2
              + L1 * L2 * d2**4 * m2 * s2 - L1 * d1**2 * g * m1 * c1 - L1 * d1**2 * g * m2 * c1
              - L2 * a1 * g * m2 * s12 - L2 * a2 * g * m2 * s12 + 2 * L1 * L2 * s1_ * m2 * c2
              + L1 * L2 * s2_ * m2 * c2 - L1 * a1 * g * m1 * s1 - L1 * a1 * g * m2 * s1
              - L2 * d1**2 * g * m2 * c12 - L2 * d2**2 * g * m2 * c12
              - 6 * L1 * L2 * a1 * a2 * m2 * s2
              - 6 * L1 * L2 * j1 * d2 * m2 * s2 - 2 * L1 * L2 * j2 * d1 * m2 * s2
              - 4 * L1 * L2 * j2 * d2 * m2 * s2
              - 6 * L1 * L2 * a1 * d2**2 * m2 * c2 - 6 * L1 * L2 * a2 * d2**2 * m2 * c2
              + 2 * L1 * L2 * d1 * d2**3 * m2 * s2
              - 2 * L2 * d1 * d2 * g * m2 * c12 - 6 * L1 * L2 * a2 * d1 * d2 * m2 * c2)
    ddtau2 = -L2 * m2 * (d1**2 * g * c12 - L2 * s2_ - L2 * s1_ + d2**2 * g * c12
                         - 2 * L1 * a1**2 * s2 + a1 * g * s12 + a2 * g * s12 - L1 * s1_ * c2
                         + L1 * d1**2 * d2**2 * s2 + 2 * d1 * d2 * g * c12 + L1 * a1 * a2 * s2
                         - 2 * L1 * j1 * d1 * s2
                         + 2 * L1 * j1 * d2 * s2 + L1 * a1 * d2**2 * c2 - L1 * a2 * d1**2 * c2
                         - 4 * L1 * a1 * d1 * d2 * c2)
    return np.array([[tau1, tau2], [dtau1, dtau2], [ddtau1, ddtau2]])


def test_seed000_formulas_are_consistent():
    """The transcription is self-consistent: each printed row is the derivative of the one
    above (this resolves the lost dots; it does not involve our code)."""
    t = 0.3 + H * np.arange(-3, 4)
    jets = sinusoid_jet(2, t, 7, seed=11)
    rows = np.array([seed000_2r(j, 9.81) for j in jets])  # (7, 3, 2)
    assert rel_err(rows[3, 1:], fd(rows)[:2]) < 1e-9


@pytest.mark.parametrize("method", METHODS)
def test_planar_2r_reproduces_seed000_formulas(planar_2r, method):
    g = float(np.linalg.norm(planar_2r.gravity))
    jets = sinusoid_jet(2, np.linspace(0.0, 3.0, 9), 5, seed=5)
    ours = hd.time_derivatives(planar_2r, jets, 2, method=method)
    paper = np.array([seed000_2r(j, g) for j in jets])
    assert rel_err(ours, paper) < 1e-12


# -- De Luca 2R with dynamic coefficients a1..a5 (De Luca, Robotics 2) -----------------------------
def test_planar_2r_matches_de_luca_dynamic_coefficients():
    l1, d1, d2, m1, m2, I1, I2, g0 = 0.7, 0.3, 0.25, 4.0, 2.5, 0.11, 0.06, 9.81
    a = (I1 + m1 * d1**2 + I2 + m2 * d2**2 + m2 * l1**2, m2 * l1 * d2, I2 + m2 * d2**2,
         g0 * (m1 * d1 + m2 * l1), g0 * m2 * d2)
    screws = np.array([[0, 0, 1, 0, 0, 0]] * 2, dtype=float)
    refs = np.array([np.eye(4), transform(np.eye(3), [l1, 0, 0])])
    inertias = np.array([body_inertia(m1, [d1, 0, 0], np.diag([0.02, 0.03, I1])),
                         body_inertia(m2, [d2, 0, 0], np.diag([0.01, 0.02, I2]))])
    model = hd.RobotModel.from_screws(screws, refs, inertias, gravity=(0.0, -g0, 0.0))
    rng = np.random.default_rng(3)
    q, qd, qdd = rng.uniform(-2, 2, (3, 20, 2))
    c1, c2, s2, c12 = np.cos(q[:, 0]), np.cos(q[:, 1]), np.sin(q[:, 1]), np.cos(q.sum(-1))
    u1 = ((a[0] + 2 * a[1] * c2) * qdd[:, 0] + (a[1] * c2 + a[2]) * qdd[:, 1]
          - a[1] * s2 * (qd[:, 1]**2 + 2 * qd[:, 0] * qd[:, 1]) + a[3] * c1 + a[4] * c12)
    u2 = (a[1] * c2 + a[2]) * qdd[:, 0] + a[2] * qdd[:, 1] + a[1] * s2 * qd[:, 0]**2 + a[4] * c12
    expected = np.stack([u1, u2], axis=-1)
    assert rel_err(hd.inverse_dynamics(model, q, qd, qdd), expected) < 1e-13
    jets = np.stack([q, qd, qdd], axis=-2)
    assert rel_err(hd.time_derivatives(model, jets, 0, method="closed_form")[:, 0], expected) < 1e-13


# -- the public closed-form pieces ----------------------------------------------------------------
@pytest.fixture(scope="module", params=["panda", "tree"])
def robot(request, panda):
    if request.param == "panda":
        return panda
    return hd.RobotModel.from_urdf(random_urdf(14, 6))


def stencil_jets(model, order, t0=0.9, seed=2):
    return sinusoid_jet(model.n_dof, t0 + H * np.arange(-3, 4), order + 3, seed)


def test_pieces_are_derivatives_and_rebuild_tau(robot):
    """M^(k), C^(k), Q_grav^(k) (both factorisations) equal central differences of the order
    below; M equals the CRBA; M qdd + C qd + Q_grav rebuilds tau and its derivatives."""
    order = 4
    jets = stencil_jets(robot, order)
    M = mass_matrix_derivatives(robot, jets, order)
    G = gravity_derivatives(robot, jets, order)
    assert rel_err(M[:, 0], hd.mass_matrix(robot, jets[:, 0])) < 1e-13
    free = hd.inverse_dynamics(robot, jets[:, 0], 0 * jets[:, 0], 0 * jets[:, 0])
    assert rel_err(G[:, 0], free) < 1e-13
    tau = hd.time_derivatives(robot, jets, order, method="recursive")
    for fac in ("kumar_mueller", "passive"):
        C = coriolis_matrix_derivatives(robot, jets, order, factorisation=fac)
        for X in (M, C, G):
            d = fd(X)
            for k in range(1, order + 1):
                assert rel_err(X[3, k], d[k - 1]) < 1e-8, (fac, k)
        # Kumar and Müller 2021, eq. 34, with the public pieces, Leibniz sums written out
        rebuilt = [sum(comb(k, j) * (M[3, j] @ jets[3, k - j + 2] + C[3, j] @ jets[3, k - j + 1])
                       for j in range(k + 1)) + G[3, k] for k in range(order + 1)]
        assert rel_err(np.array(rebuilt), tau[3]) < 1e-12, fac


def test_structural_properties(robot):
    """Müller and Kumar 2021, sec. 5: M^(k) symmetric, M positive definite, M^(k+1) - 2 Cbar^(k) skew."""
    order = 3
    jets = sinusoid_jet(robot.n_dof, np.linspace(0, 4, 5), order + 3, seed=9)
    M = mass_matrix_derivatives(robot, jets, order + 1)
    Cbar = coriolis_matrix_derivatives(robot, jets, order, factorisation="passive")
    C = coriolis_matrix_derivatives(robot, jets, order)
    scale = np.abs(M).max(axis=(-1, -2), keepdims=True)
    assert np.abs(M - np.swapaxes(M, -1, -2)).max() < 1e-13 * scale.max()
    assert np.linalg.eigvalsh(M[:, 0]).min() > 0
    S = M[:, 1:] - 2 * Cbar
    assert rel_err(S, -np.swapaxes(S, -1, -2)) < 1e-12
    # the factorisation of Kumar and Müller 2021, eq. 30, is generally not passive, but gives the same C qd
    assert rel_err(M[:, 1] - 2 * C[:, 0], -np.swapaxes(M[:, 1] - 2 * C[:, 0], -1, -2)) > 1e-3
    qd = jets[:, 1]
    assert rel_err(np.einsum("bij,bj->bi", Cbar[:, 0], qd), np.einsum("bij,bj->bi", C[:, 0], qd)) < 1e-12


def test_factorisation_names(panda):
    """The default factorisation is "kumar_mueller"; "seed", its name in earlier releases, warns
    and gives the same matrices; an unknown name is refused naming the choices."""
    jets = sinusoid_jet(panda.n_dof, np.linspace(0, 1, 3), 4)
    C = coriolis_matrix_derivatives(panda, jets, 1)
    assert rel_err(coriolis_matrix_derivatives(panda, jets, 1, factorisation="kumar_mueller"), C) == 0.0
    with pytest.warns(hd.errors.HodDynamicsDeprecationWarning, match="use factorisation='kumar_mueller'"):
        old = coriolis_matrix_derivatives(panda, jets, 1, factorisation="seed")
    assert rel_err(old, C) == 0.0
    with pytest.raises(hd.errors.InputError, match="factorisation must be one of .*kumar_mueller.*passive"):
        coriolis_matrix_derivatives(panda, jets, 1, factorisation="christoffel")


def test_pieces_batch_shapes_and_extra_rows(panda):
    jets = sinusoid_jet(panda.n_dof, np.linspace(0, 1, 6), 6).reshape(2, 3, 6, 7)
    M = mass_matrix_derivatives(panda, jets, 2)
    assert M.shape == (2, 3, 3, 7, 7)
    assert rel_err(M, mass_matrix_derivatives(panda, jets[..., :3, :], 2)) == 0.0
    assert coriolis_matrix_derivatives(panda, jets, 1).shape == (2, 3, 2, 7, 7)
    assert gravity_derivatives(panda, jets[0, 0], 0).shape == (1, 7)
    W = np.ones((3, 6))
    assert external_wrench_derivatives(panda, jets, 2, {"panda_hand": W}).shape == (2, 3, 3, 7)


@pytest.mark.parametrize("call, words", [
    (lambda m: mass_matrix_derivatives(m, np.zeros((2, 7)), 2), "rows"),
    (lambda m: coriolis_matrix_derivatives(m, np.zeros((2, 7)), 1), "rows"),
    (lambda m: gravity_derivatives(m, np.zeros((3, 6)), 1), "shape"),
    (lambda m: gravity_derivatives(m, np.zeros(7), 0), "shape"),
    (lambda m: mass_matrix_derivatives(m, np.full((3, 7), np.inf), 1), "non-finite"),
    (lambda m: mass_matrix_derivatives(m, np.zeros((3, 7)), -1), "order"),
    (lambda m: gravity_derivatives(m, np.zeros((3, 7)), 1.5), "order"),
    (lambda m: coriolis_matrix_derivatives(m, np.zeros((3, 7)), 1, factorisation="x"),
     "factorisation"),
    (lambda m: external_wrench_derivatives(m, np.zeros((3, 7)), 1, {"panda_hand": np.zeros(6)}),
     "panda_hand"),
])
def test_pieces_bad_input_raises(panda, call, words):
    with pytest.raises(hd.InputError, match=words):
        call(panda)


def test_unknown_link_raises_model_error(panda):
    with pytest.raises(hd.ModelError, match="nowhere"):
        external_wrench_derivatives(panda, np.zeros((2, 7)), 1, {"nowhere": np.zeros((2, 6))})


# -- kinetic energy (De Luca, Robotics 2) and the power balance ------------------------------------
def test_kinetic_energy_is_sum_of_body_energies():
    """Panda: sum over bodies of 1/2 V_i^T M_i V_i with twists and inertias from Pinocchio."""
    model, pr = pinocchio_robot("panda")
    pin = pr.pin
    rng = np.random.default_rng(1)
    q, qd = rng.uniform(-1.5, 1.5, (2, 4, model.n_dof))
    ours = hd.kinetic_energy(model, q, qd)
    for s in range(4):
        pin.forwardKinematics(pr.model, pr.data, pr.q(q[s]), pr.v(qd[s]))
        T = sum(0.5 * pr.data.v[j].vector @ (pr.model.inertias[j] * pr.data.v[j]).vector
                for j in range(1, pr.model.njoints))
        assert abs(ours[s] - T) < 1e-12 * max(1.0, T)


def test_kinetic_energy_planar_2r_point_masses(planar_2r):
    rng = np.random.default_rng(2)
    q, qd = rng.uniform(-2, 2, (2, 10, 2))
    v1 = L1 * qd[:, 0]  # speed of the point mass at the end of link 1
    c = np.stack([-L1 * np.sin(q[:, 0]) * qd[:, 0] - L2 * np.sin(q.sum(-1)) * qd.sum(-1),
                  L1 * np.cos(q[:, 0]) * qd[:, 0] + L2 * np.cos(q.sum(-1)) * qd.sum(-1)], -1)
    T = 0.5 * M1 * v1**2 + 0.5 * M2 * (c**2).sum(-1)
    assert rel_err(hd.kinetic_energy(planar_2r, q, qd), T) < 1e-14


@pytest.mark.parametrize("name", ["iiwa", "tree"])
def test_power_balance(name, iiwa):
    """dT/dt = qd^T (tau - Q_grav) without external wrenches (dT/dt by central differences)."""
    model = iiwa if name == "iiwa" else hd.RobotModel.from_urdf(random_urdf(10, 8))
    jets = sinusoid_jet(model.n_dof, 1.3 + H * np.arange(-3, 4), 3, seed=4)
    T = hd.kinetic_energy(model, jets[:, 0], jets[:, 1])
    tau = hd.inverse_dynamics(model, *jets[3])
    grav = gravity_derivatives(model, jets[3], 0)[0]
    power = jets[3, 1] @ (tau - grav)
    assert abs(fd(T) - power) < 1e-9 * max(1.0, abs(power))


# -- the Fig. 4 example ---------------------------------------------------------------------------
def test_iiwa_fig4_example_writes_png(tmp_path):
    pytest.importorskip("matplotlib", reason="matplotlib not installed")
    out = tmp_path / "fig4.png"
    env = dict(os.environ, PYTHONPATH=ROOT + os.pathsep + os.environ.get("PYTHONPATH", ""),
               MPLBACKEND="Agg")
    run = subprocess.run([sys.executable, os.path.join(ROOT, "examples", "iiwa_fig4.py"), str(out),
                          "--duration", "3"], env=env, capture_output=True, text=True, timeout=120)
    assert run.returncode == 0, run.stderr
    data = out.read_bytes()
    assert data[:8] == b"\x89PNG\r\n\x1a\n" and len(data) > 50_000
