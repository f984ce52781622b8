"""Floating-base robots (legged robots, humanoids) against independent oracles.

Oracles: Pinocchio with a ``JointModelFreeFlyer`` root (rnea, crba, computeRNEADerivatives; its
(linear, angular) order mapped onto ours), Pinocchio's exact first-order route
tau_dot = dtau_dq v + dtau_dv a + M a', 7-point central differences of our lower orders along
exact SE(3) trajectories H(t) = H0 exp(s(t) xi) exp(r(t) eta), and the Newton-Euler balance of
a standing / walking quadruped with planned contact forces.
"""

import os

import numpy as np
import pytest
from scipy.linalg import expm
from scipy.spatial.transform import Rotation

import hod_dynamics as hd
from hod_dynamics.algorithms.floating import QUATERNION_TOLERANCE, integrate
from hod_dynamics.model.spatial import Ad, ad, inverse, skew
from oracles import (BACKENDS, CENTRAL_7, ERD_ROBOTS, FloatingPinocchioRobot, erd_dir,
                     floating_pinocchio_robot, random_floating_state, random_urdf, rel_err,
                     sinusoid_jet)

HUMANOID = "g1_description/urdf/g1_29dof_rev_1_0.urdf"  # Unitree G1, 29 joints
H = 2e-3
T0 = 0.7


BOX = """<robot name="box"><link name="box"><inertial><origin xyz="0.1 -0.05 0.2" rpy="0.3 0 1"/>
<mass value="2.5"/><inertia ixx="0.1" ixy="0.01" ixz="0" iyy="0.2" iyz="0" izz="0.3"/></inertial>
</link></robot>"""  # a single free rigid body: no joint at all


@pytest.fixture(scope="module",
                params=["solo12", "hyq", "talos", "g1", "random18", "random30", "box"])
def robot(request):
    """(our floating model, FloatingPinocchioRobot) for the robots of the acceptance list."""
    name = request.param
    if name in ERD_ROBOTS:
        return floating_pinocchio_robot(name)
    if name == "g1":
        path = os.path.join(erd_dir(), HUMANOID)
        model = hd.RobotModel.from_urdf(path, floating_base=True)
        return model, FloatingPinocchioRobot(path, model)
    text = BOX if name == "box" else random_urdf(int(name[6:]), seed=int(name[6:]))
    model = hd.RobotModel.from_urdf(text, floating_base=True)
    return model, FloatingPinocchioRobot(text, model)


def pinocchio(pr, q, v, a):
    """(tau, M, dtau_dq, dtau_dv) of Pinocchio in our order for one sample."""
    pin = pr.pin
    pq, pv, pa = pr.q(q), pr.v(v), pr.v(a)
    ix = np.ix_(pr.vidx, pr.vidx)
    tau = np.array(pin.rnea(pr.model, pr.data, pq, pv, pa))[pr.vidx]
    M = np.array(pin.crba(pr.model, pr.data, pq))
    M = (np.triu(M) + np.triu(M, 1).T)[ix]
    dq, dv, _ = pin.computeRNEADerivatives(pr.model, pr.data, pq, pv, pa)
    return tau, M, np.array(dq)[ix], np.array(dv)[ix]


@pytest.mark.parametrize("backend", BACKENDS)
def test_tau_mass_matrix_partials_match_pinocchio(robot, backend):
    model, pr = robot
    n = model.n_dof
    assert model.floating and model.nq == 7 + n and model.nv == 6 + n
    rng = np.random.default_rng(7)
    q, v, a = random_floating_state(model, rng, (4,))
    ref = [pinocchio(pr, *s) for s in zip(q, v, a)]
    tau = hd.time_derivatives_floating(model, q, np.stack([v, a], axis=-2), 0, backend=backend)[:, 0]
    partials = hd.id_partials(model, q, v, a, backend=backend)
    for b in range(len(q)):
        assert rel_err(tau[b], ref[b][0]) < 1e-10
        for ours, theirs in zip(partials, (ref[b][2], ref[b][3], ref[b][1])):
            assert rel_err(ours[b], theirs) < 1e-10
    # single samples, broadcasting, and the other entry points
    assert rel_err(hd.inverse_dynamics(model, q[0], v[0], a[0]), ref[0][0]) < 1e-10
    spread = hd.inverse_dynamics(model, q[0], v, a[0])  # one configuration, four velocities
    assert spread.shape == (4, 6 + n) and rel_err(spread[0], ref[0][0]) < 1e-10
    assert rel_err(hd.mass_matrix(model, q[1]), ref[1][1]) < 1e-10
    assert rel_err(hd.mass_matrix(model, q), partials[2]) < 1e-10
    T = pr.pin.computeKineticEnergy(pr.model, pr.data, pr.q(q[2]), pr.v(v[2]))
    assert abs(hd.kinetic_energy(model, q[2], v[2]) - T) < 1e-10 * max(1.0, T)
    one = hd.id_partials(model, q[3], v[3], a[3], backend=backend)
    assert rel_err(one[0], ref[3][2]) < 1e-10 and one[0].shape == (6 + n, 6 + n)


def test_forward_dynamics_matches_pinocchio_aba(robot):
    """a = M^-1 (tau - h) of a free-flying tree against Pinocchio's ABA with a free flyer; the
    generalised force is the base wrench (torque, force; base frame) then joint torques."""
    model, pr = robot
    rng = np.random.default_rng(11)
    q, v, tau = random_floating_state(model, rng, (3,))
    if np.linalg.matrix_rank(hd.mass_matrix(model, q[0])) < model.nv:  # a joint moving no mass
        with pytest.raises(hd.InputError, match="mass matrix is singular"):
            hd.forward_dynamics(model, q, v, tau)
        return
    a = hd.forward_dynamics(model, q, v, tau)
    assert a.shape == (3, 6 + model.n_dof)
    for b in range(3):
        ref = np.array(pr.pin.aba(pr.model, pr.data, pr.q(q[b]), pr.v(v[b]), pr.v(tau[b])))[pr.vidx]
        assert rel_err(a[b], ref) < 1e-10
    assert rel_err(hd.forward_dynamics(model, q[0], v[0], tau[0]), a[0]) < 1e-10
    assert rel_err(hd.inverse_dynamics(model, q, v, a), tau) < 1e-10
    with pytest.raises(hd.InputError, match="tau must have shape"):
        hd.forward_dynamics(model, q, v, tau[:, 6:])


def exact_se3_motion(n, t, rows, seed=0):
    """Configurations (len(t), 7+n) and velocity jets (len(t), rows, 6+n) of
    H(t) = H0 exp(s(t) xi) exp(r(t) eta) with sinusoidal s, r and joints, exactly.

    The body twist is V = Ad(exp(-r eta)) xi s' + eta r'; Ad(exp(-r eta)) = exp(-r ad(eta))
    solves A' = -r' ad(eta) A, whose Taylor coefficients follow term by term.
    """
    rng = np.random.default_rng(seed)
    xi, eta = rng.normal(size=6), rng.normal(size=6)
    H0 = np.eye(4)
    H0[:3, :3] = Rotation.from_rotvec(rng.normal(size=3)).as_matrix()
    H0[:3, 3] = rng.normal(size=3)
    sr = sinusoid_jet(2, t, rows + 1, seed + 1)  # (len(t), rows+1, 2): s and r with derivatives
    joints = sinusoid_jet(n, t, rows + 1, seed + 2)
    hat = lambda x: np.block([[ad(x)[:3, :3], x[3:, None]], [np.zeros((1, 4))]])  # noqa: E731
    fact = np.cumprod(np.r_[1.0, np.arange(1, rows)])  # 0!, ..., (rows-1)!
    q = np.empty((len(sr), 7 + n))
    vjet = np.empty((len(sr), rows, 6 + n))
    for b, (s, r) in enumerate(zip(sr[:, :, 0], sr[:, :, 1])):
        Hb = H0 @ expm(s[0] * hat(xi)) @ expm(r[0] * hat(eta))
        q[b] = np.r_[Hb[:3, 3], Rotation.from_matrix(Hb[:3, :3]).as_quat(), joints[b, 0]]
        sd, rd = s[1:] / fact, r[1:] / fact  # Taylor coefficients of s' and r'
        A = [expm(-r[0] * ad(eta))]
        for k in range(rows - 1):
            A.append(-ad(eta) @ sum(rd[j] * A[k - j] for j in range(k + 1)) / (k + 1))
        for k in range(rows):
            V = sum(A[j] @ xi * sd[k - j] for j in range(k + 1)) + eta * rd[k]
            vjet[b, k, :6] = V * fact[k]
        vjet[b, :, 6:] = joints[b, 1:]
    return q, vjet


@pytest.mark.parametrize("backend", BACKENDS)
def test_tau_dot_matches_pinocchio_route(robot, backend):
    model, pr = robot
    q, vjet = exact_se3_motion(model.n_dof, [T0], 3)
    ours = hd.time_derivatives_floating(model, q[0], vjet[0], 1, backend=backend)
    v, a, a1 = vjet[0]
    tau, M, dq, dv = pinocchio(pr, q[0], v, a)
    assert rel_err(ours[0], tau) < 1e-10
    assert rel_err(ours[1], dq @ v + dv @ a + M @ a1) < 1e-10


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("name", ["solo12", "talos"])
def test_orders_up_to_5_by_finite_differences_on_se3(name, backend):
    """Row k equals the central difference of row k-1 along an exact SE(3) motion, k = 1..5;
    external wrenches on a foot and on the base link ride along."""
    model = floating_pinocchio_robot(name)[0]
    order = 5
    q, vjet = exact_se3_motion(model.n_dof, T0 + H * np.arange(-3, 4), order + 2, seed=3)
    t = T0 + H * np.arange(-3, 4)
    foot = {"solo12": "FL_FOOT", "talos": "leg_left_6_link"}[name]
    wrenches = {foot: sinusoid_jet(6, t, order + 1, seed=4),
                model.root_link: sinusoid_jet(6, t, order + 1, seed=5)}
    out = hd.time_derivatives_floating(model, q, vjet, order, wrenches=wrenches, backend=backend)
    fd = np.tensordot(CENTRAL_7, out, axes=(0, 0)) / H
    for k in range(1, order + 1):
        assert rel_err(out[3, k], fd[k - 1]) < 1e-8, k
    # the planned wrench jet on the trunk that balances the motion: base rows vanish at every order
    balance = {**wrenches, model.root_link: wrenches[model.root_link] + out[..., :6]}
    rows = hd.time_derivatives_floating(model, q, vjet, order, wrenches=balance, backend=backend)
    assert np.abs(rows[..., :6]).max() < 1e-10 * np.abs(out[..., :6]).max()
    assert rel_err(rows[..., 6:], out[..., 6:]) < 1e-13
    low = hd.time_derivatives_floating(model, q[3], vjet[3, :3], 1, wrenches={
        k: w[3, :2] for k, w in wrenches.items()}, backend=backend)
    assert rel_err(low, out[3, :2]) < 1e-13


def test_backends_agree_on_a_batch():
    pytest.importorskip("numba")
    model = floating_pinocchio_robot("solo12")[0]
    t = np.linspace(0, 2, 40)
    q, vjet = exact_se3_motion(model.n_dof, t, 5, seed=9)
    a = hd.time_derivatives_floating(model, q, vjet, 3, backend="numpy")
    b = hd.time_derivatives_floating(model, q, vjet, 3, backend="numba")  # SIMD lanes (>= 16 samples)
    assert rel_err(a, b) < 1e-12
    assert rel_err(b[:3], [hd.time_derivatives_floating(model, q[i], vjet[i], 3) for i in range(3)]) < 1e-12
    wrenches = {"base_link": sinusoid_jet(6, t, 4, seed=1), "HR_FOOT": sinusoid_jet(6, t, 4, 2)}
    a = hd.time_derivatives_floating(model, q, vjet, 3, wrenches=wrenches, backend="numpy")
    c = hd.time_derivatives_floating(model, q, vjet, 3, wrenches=wrenches, backend="numba")
    assert rel_err(a, c) < 1e-12 and np.abs(c - b).max() > 1.0
    # a batch large enough to be shared among threads gives the same rows
    big = hd.time_derivatives_floating(model, np.tile(q, (60, 1)), np.tile(vjet, (60, 1, 1)), 3,
                              backend="numba")
    np.testing.assert_array_equal(big[-40:], b)


# -- contact wrenches: the base rows are the missing external wrench -----------------------------
SOLO_FEET = ("FL_FOOT", "FR_FOOT", "HL_FOOT", "HR_FOOT")


def foot_poses(pr, q):
    """Poses (4, 4, 4) of Solo's feet in the base frame (Pinocchio's kinematics)."""
    pin = pr.pin
    pin.forwardKinematics(pr.model, pr.data, pr.q(q))
    pin.updateFramePlacements(pr.model, pr.data)
    base = pr.data.oMi[1]
    return np.array([(base.inverse() * pr.data.oMf[pr.model.getFrameId(f)]).homogeneous
                     for f in SOLO_FEET])


def plan_contact_forces(needed, poses, stance):
    """Point-contact forces (one 3-vector per foot, in the foot frame) that exert the wrench
    ``needed`` (torque, force) on the base: a least-norm split over the stance feet."""
    cols = []
    for k in stance:
        R, p = poses[k][:3, :3], poses[k][:3, 3]
        cols.append(np.vstack([skew(p) @ R, R]))  # torque p x (R f), force R f
    f = np.linalg.lstsq(np.hstack(cols), needed, rcond=None)[0].reshape(-1, 3)
    forces = {foot: np.zeros(6) for foot in SOLO_FEET}
    for k, fk in zip(stance, f):
        forces[SOLO_FEET[k]] = np.r_[0, 0, 0, fk]
    return forces


def base_wrench_of(forces, poses):
    """The wrench (torque, force) at the base frame of foot wrenches given in the foot frames."""
    return sum(Ad(inverse(poses[k])).T @ forces[f] for k, f in enumerate(SOLO_FEET))


@pytest.mark.parametrize("gait", ["standing", "walking"])
def test_contact_wrenches_balance_the_base(gait):
    """Solo 12 standing, and walking in place (one leg swinging at a time, the base swaying):
    planned contact forces that exert the needed wrench make the base rows vanish; forces
    off by a planning error leave exactly that error in the base rows."""
    model, pr = floating_pinocchio_robot("solo12")
    t = np.linspace(0.0, 2.0, 9)
    q, vjet = exact_se3_motion(model.n_dof, t, 2, seed=11)
    q[:, 7:] = np.tile([0.0, 0.8, -1.6], 4)  # the crouched stance of Solo 12
    if gait == "standing":
        vjet[:] = 0.0
    else:
        vjet *= 0.2
        swing = (np.arange(len(t)) % 4)
        for b, leg in enumerate(swing):  # the swinging leg lifts its knee
            vjet[b, :, 6 + 3 * leg + 2] += [1.5, -4.0]
    no_contacts = hd.inverse_dynamics(model, q, vjet[:, 0], vjet[:, 1])
    for b in range(len(t)):
        poses = foot_poses(pr, q[b])
        stance = range(4) if gait == "standing" else [k for k in range(4) if k != swing[b]]
        forces = plan_contact_forces(no_contacts[b, :6], poses, stance)
        tau = hd.inverse_dynamics(model, q[b], vjet[b, 0], vjet[b, 1], wrenches=forces)
        scale = np.abs(no_contacts[b, :6]).max()
        assert np.abs(tau[:6]).max() < 1e-10 * scale
        if gait == "standing":
            assert forces["FL_FOOT"][5] > 0  # the ground pushes up (z of the foot frame is up)
        # joint torques: Pinocchio with the same contact forces
        fext = pr.external_forces(forces, q[b])
        ref = np.array(pr.pin.rnea(pr.model, pr.data, pr.q(q[b]), pr.v(vjet[b, 0]),
                                   pr.v(vjet[b, 1]), fext))[pr.vidx]
        assert rel_err(tau, ref) < 1e-10
        wrong = {f: 0.9 * w + (np.r_[0, 0, 0, 0.5, -0.2, 1.0] if f == "FR_FOOT" else 0.0)
                 for f, w in forces.items()}
        error = no_contacts[b, :6] - base_wrench_of(wrong, poses)
        tau = hd.inverse_dynamics(model, q[b], vjet[b, 0], vjet[b, 1], wrenches=wrong)
        assert np.abs(error).max() > 0.05 * scale
        assert rel_err(tau[:6], error) < 1e-10


# -- configuration handling ----------------------------------------------------------------------
def test_quaternion_is_normalised_and_bad_ones_are_refused():
    model = floating_pinocchio_robot("solo12")[0]
    q, v, a = random_floating_state(model, np.random.default_rng(2))
    tau = hd.inverse_dynamics(model, q, v, a)
    off = q.copy()
    off[3:7] *= 1 + 0.5 * QUATERNION_TOLERANCE
    assert rel_err(hd.inverse_dynamics(model, off, v, a), tau) < 1e-14
    for scale, words in [(0.0, "norm 0"), (np.nan, r"non-finite .* \(base_qx\)"),
                         (2.0, "unit quaternion")]:
        wrong = q.copy()
        wrong[3:7] *= scale
        with pytest.raises(hd.InputError, match=words):
            hd.inverse_dynamics(model, wrong, v, a)
    with pytest.raises(hd.InputError, match=r"\(\.\.\., 19\)"):
        hd.inverse_dynamics(model, q[:-1], v, a)
    with pytest.raises(hd.InputError, match=r"vjet must have shape \(\.\.\., 3, 18\)"):
        hd.time_derivatives_floating(model, q, np.stack([v, a]), 1)
    with pytest.raises(hd.InputError, match="time_derivatives\\(model, q, vjet, order\\)"):
        hd.time_derivatives(model, q, 1)
    with pytest.raises(hd.InputError, match="floating base"):
        hd.id_second_partials(model, q, v, a)
    with pytest.raises(hd.InputError, match="complex"):
        hd.inverse_dynamics(model, q + 0j, v, a)
    with pytest.raises(hd.InputError, match="model must be a hod_dynamics RobotModel"):
        hd.time_derivatives("solo12", q, np.stack([v, a]), 0)


def test_integrate_is_the_tangent_of_id_partials():
    """dtau_dq along the tangent: a central difference through integrate (H exp(dq))."""
    model = floating_pinocchio_robot("solo12")[0]
    q, v, a = random_floating_state(model, np.random.default_rng(3))
    dq = hd.id_partials(model, q, v, a)[0]
    e = np.random.default_rng(4).normal(size=model.nv)
    h = 1e-4
    taus = [hd.inverse_dynamics(model, integrate(model, q, k * h * e), v, a) for k in range(-3, 4)]
    assert rel_err(np.tensordot(CENTRAL_7, taus, axes=(0, 0)) / h, dq @ e) < 1e-8


def floating_world_urdf(text):
    """The URDF with a massless world link above a floating joint to its root."""
    root = "base_link"
    head, tail = text.split("<link ", 1)
    return (head + '<link name="world"/><joint name="free" type="floating"><parent link="world"/>'
            f'<child link="{root}"/><origin xyz="1 2 3"/></joint><link ' + tail)


def test_urdf_floating_joint_and_refusals():
    path = os.path.join(erd_dir(), ERD_ROBOTS["solo12"][0])
    text = open(path).read()
    flag = hd.RobotModel.from_urdf(text, floating_base=True)
    urdf = hd.RobotModel.from_urdf(floating_world_urdf(text))
    assert urdf.floating and urdf.root_link == "base_link" and urdf.nv == 18
    np.testing.assert_array_equal(urdf.base_inertia, flag.base_inertia)
    assert flag.base_inertia[3, 3] > 1.0  # Solo's trunk
    assert not hd.RobotModel.from_urdf(text).floating
    planar = text.replace('type="revolute"', 'type="planar"', 1)
    with pytest.raises(hd.ModelError, match="planar"):
        hd.RobotModel.from_urdf(planar, floating_base=True)
    inner = text.replace('type="revolute"', 'type="floating"', 1)
    with pytest.raises(hd.ModelError, match="floating"):
        hd.RobotModel.from_urdf(inner)


# -- a base trajectory on SE(3) and the feedforward along it ---------------------------------------
def solo_walk_trajectory(model):
    """A base swaying and turning through 5 poses while the legs step: waypoints on SE(3)."""
    rng = np.random.default_rng(21)
    times = np.array([0.0, 0.4, 0.9, 1.3, 2.0])
    rot = Rotation.from_euler("xyz", rng.normal(scale=0.2, size=(5, 3)))
    quat = rot.as_quat()
    quat[2] *= -1  # the same rotation: the trajectory must align the hemispheres
    pos = np.c_[0.05 * np.arange(5), rng.normal(scale=0.03, size=(5, 1)),
                0.3 + 0.02 * rng.normal(size=5)]
    joints = np.tile([0.0, 0.8, -1.6], 4) + 0.3 * rng.normal(size=(5, 12))
    names = hd.model.validation.BASE_COORDINATES + model.joint_names
    return hd.Trajectory.from_waypoints(names[::-1], times, np.c_[pos, quat, joints][:, ::-1],
                                        continuity=5)


def test_base_trajectory_gives_exact_twist_jets_and_feedforward():
    model = floating_pinocchio_robot("solo12")[0]
    traj = solo_walk_trajectory(model)
    t = 0.77 + H * np.arange(-3, 4)
    q, vjet = traj.floating_jet(model, t, 4)
    assert q.shape == (7, 19) and vjet.shape == (7, 4, 18)
    np.testing.assert_allclose(np.linalg.norm(q[:, 3:7], axis=1), 1.0, rtol=0, atol=1e-15)
    R = Rotation.from_quat(q[:, 3:7]).as_matrix()
    dR = np.tensordot(CENTRAL_7, R, axes=(0, 0)) / H
    dp = np.tensordot(CENTRAL_7, q[:, :3], axes=(0, 0)) / H
    W = R[3].T @ dR
    assert rel_err([W[2, 1], W[0, 2], W[1, 0]], vjet[3, 0, :3]) < 1e-9
    assert rel_err(R[3].T @ dp, vjet[3, 0, 3:6]) < 1e-9
    fd = np.tensordot(CENTRAL_7, vjet, axes=(0, 0)) / H
    for k in range(1, 4):
        assert rel_err(vjet[3, k], fd[k - 1]) < 1e-8, k
    assert rel_err(vjet[:, :, 6:], traj.for_model(model).jet(t, 4)[:, 1:, 7:]) < 1e-15
    result = hd.feedforward.trajectory_feedforward.feedforward(model, traj, t, 2)
    full = hd.time_derivatives_floating(model, q, vjet, 2)
    assert rel_err(result.taujet, full[..., 6:]) < 1e-15
    assert rel_err(result.base_wrench, full[..., :6]) < 1e-15
    assert result.qjet.shape == (7, 5, 12) and result.base_vjet.shape == (7, 4, 6)
    assert traj.check_limits(model, dt=0.05).n_samples > 0
    # series-elastic knees (ANYdrive-like): theta = q + tau / K on the joints
    sea = {"FL_KFE": {"type": "sea", "stiffness": 200.0, "motor_inertia": 0.01}}
    ff = hd.feedforward.trajectory_feedforward.feedforward(model, traj, t, 2, actuators=sea)
    k = model.joint_index("FL_KFE")
    assert rel_err(ff.thetajet[:, :3, k], ff.qjet[:, :3, k] + ff.taujet[:, :3, k] / 200.0) < 1e-14
    with pytest.raises(hd.TrajectoryError, match="base pose columns"):
        traj.for_model(hd.RobotModel.from_urdf(os.path.join(erd_dir(), ERD_ROBOTS["solo12"][0])))


def test_wrench_on_the_base_link_matches_pinocchio():
    """A wrench on the trunk (the base body itself) and one on a hand, against Pinocchio's fext."""
    model, pr = floating_pinocchio_robot("talos")
    q, v, a = random_floating_state(model, np.random.default_rng(5))
    wrenches = {"base_link": np.r_[1.0, -2.0, 0.5, 30.0, -10.0, 80.0],
                "torso_2_link": np.r_[0.3, 0.1, -0.2, 5.0, 2.0, -1.0],
                "arm_left_7_link": np.r_[0.2, 0.4, -0.1, -3.0, 6.0, 9.0]}
    ours = hd.inverse_dynamics(model, q, v, a, wrenches=wrenches)
    fext = pr.external_forces(wrenches, q)
    ref = np.array(pr.pin.rnea(pr.model, pr.data, pr.q(q), pr.v(v), pr.v(a), fext))[pr.vidx]
    assert rel_err(ours, ref) < 1e-10
    # HyQ: a wrench on a link fixed to the trunk (trunk_imu, an offset frame) and on a foot
    hyq, hpr = floating_pinocchio_robot("hyq")
    hq, hv, ha = random_floating_state(hyq, np.random.default_rng(6))
    hw = {"trunk_imu": np.r_[0.5, -1.0, 2.0, 40.0, 10.0, -60.0],
          "lf_foot": np.r_[0.0, 0.0, 0.0, 5.0, -3.0, 120.0]}
    fext = hpr.external_forces(hw, hq)
    ref = np.array(hpr.pin.rnea(hpr.model, hpr.data, hpr.q(hq), hpr.v(hv), hpr.v(ha), fext))
    assert rel_err(hd.inverse_dynamics(hyq, hq, hv, ha, wrenches=hw), ref[hpr.vidx]) < 1e-10
    # the base rows move by exactly the wrench on the trunk (same frame)
    rest = {k: w for k, w in wrenches.items() if k != "base_link"}
    diff = hd.inverse_dynamics(model, q, v, a, wrenches=rest) - ours
    assert rel_err(diff[:6], wrenches["base_link"]) < 1e-12 and np.abs(diff[6:]).max() < 1e-12


def test_recorded_base_poses_with_sign_flips_fit_smoothly():
    """Recorded quaternions flip sign (q and -q are one rotation); the fit aligns them first."""
    model = floating_pinocchio_robot("solo12")[0]
    t = np.linspace(0.0, 2.0, 201)
    rot = Rotation.from_rotvec(np.c_[0.3 * np.sin(t), 0.2 * t, 0.1 * np.cos(2 * t)])
    quat = rot.as_quat()
    quat[::3] *= -1
    pos = np.c_[0.1 * t, 0.05 * np.sin(t), 0.3 + 0 * t]
    joints = np.tile([0.0, 0.8, -1.6], (len(t), 4)) + 0.1 * np.sin(t)[:, None]
    names = hd.model.validation.BASE_COORDINATES + model.joint_names
    traj = hd.Trajectory.from_samples(names, t, np.c_[pos, quat, joints], smoothing=0)
    te = t[50:150] + 0.005  # between the samples
    q, vjet = traj.floating_jet(model, te, 3)
    def exact(x):
        return Rotation.from_rotvec(np.c_[0.3 * np.sin(x), 0.2 * x, 0.1 * np.cos(2 * x)])

    assert np.abs((Rotation.from_quat(q[:, 3:7]) * exact(te).inv()).magnitude()).max() < 1e-6
    h = 1e-5  # the body angular velocity of the exact rotation, by a central difference
    omega = (exact(te - h).inv() * exact(te + h)).as_rotvec() / (2 * h)
    assert np.abs(vjet[:, 0, :3] - omega).max() < 1e-4
