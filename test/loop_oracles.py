"""Mechanisms with loops for the tests and the bench, and oracles that do not use the package's route:
the four-bar's closed-form Lagrangian dynamics (sympy), MuJoCo with equality constraints for the
same closures, Pinocchio's constrained dynamics, the energy of the mechanism, exact jets of sums
of sines and central differences in time.

The mechanisms: our planar four-bar (test/data/loops/, a Drake <loop_joint>, and the same closure
in a closure file), a 2-DoF parallel ankle written for these tests (two ball joints as
<drake:ball_constraint>), and two descriptions of Drake's (test/data/urdf_corpus/drake/, SOURCES.md
there): its FourBar example (a <loop_joint>, a <transmission>) and the Robotiq 3-finger adaptive
hand (three planar loops per finger as <loop_joint>s).
"""

import math
import os
import xml.etree.ElementTree as ET

import numpy as np
import pytest

import hod_dynamics as hd
from hod_dynamics.model.spatial import rpy_matrix

DATA = os.path.join(os.path.dirname(os.path.abspath(__file__)), "data", "loops")
CORPUS = os.path.join(os.path.dirname(DATA), "urdf_corpus", "drake")      # copies of Drake's files (SOURCES.md)
FOURBAR_URDF = hd.robot_path("planar_fourbar")                        # shipped
FOURBAR_CLOSURES = os.path.join(DATA, "fourbar_closures.yaml")
DRAKE_FOURBAR = os.path.join(CORPUS, "FourBar.urdf")
ROBOTIQ = os.path.join(CORPUS, "robotiq.urdf")
ANKLE_URDF = os.path.join(DATA, "parallel_ankle.urdf")
ANKLE_GEPETTO = os.path.join(DATA, "parallel_ankle_gepetto.yaml")

# the open branch of each four-bar (coupler-rocker joint above the ground line)
FOURBAR_ASSEMBLY = {"coupler_joint": -0.95, "rocker_joint": 2.19}
DRAKE_ASSEMBLY = {"joint_1": 2.4255, "joint_2": 1.8567}

# trajectories y_i(t) = c0_i + c1_i t + sum_j A_ij sin(w_ij t + p_ij): full crank turns of the
# four-bar; the Drake four-bar (not Grashof) rocking; the ankle's motors y = p + r, p - r (p pitches
# the foot, r rolls it)
FOURBAR_MOTION = dict(c0=[0.3], c1=[2.0], amps=[[0.5, 0.2]], freqs=[[3.0, 5.0]], phases=[[0.0, 1.0]])
DRAKE_MOTION = dict(c0=[0.0], c1=[0.0], amps=[[0.3, 0.1]], freqs=[[2.0, 5.0]], phases=[[0.0, 0.3]])
ANKLE_MOTION = dict(c0=[0.0, 0.0], c1=[0.0, 0.0],
                    amps=[[0.3, 0.05, 0.2, 0.05], [0.3, 0.05, -0.2, -0.05]],
                    freqs=[[2.0, 5.0, 3.0, 4.0], [2.0, 5.0, 3.0, 4.0]],
                    phases=[[0.0, 0.5, 1.0, 0.2], [0.0, 0.5, 1.0, 0.2]])


# -- models ---------------------------------------------------------------------------------------
def fourbar():
    return hd.RobotModel.from_urdf(FOURBAR_URDF, loops="urdf", actuated_joints=["crank_joint"],
                                   assembly=FOURBAR_ASSEMBLY)


def drake_fourbar():
    """Drake's FourBar: its <limit> has no velocity (strict=False reads past it with a warning);
    joint_0 is actuated by its <transmission>."""
    import warnings

    with warnings.catch_warnings():
        warnings.simplefilter("ignore", hd.HodDynamicsWarning)
        return hd.RobotModel.from_urdf(DRAKE_FOURBAR, loops="urdf", strict=False, assembly=DRAKE_ASSEMBLY)


def ankle():
    return hd.RobotModel.from_urdf(ANKLE_URDF, loops="urdf")


# the Robotiq hand: each finger's 10 joints and 3 hinges leave 4 degrees of freedom, its
# <transmission> actuates one (the adaptive finger closes on springs and stops, not modelled):
# actuated here, per finger, its motor, two phalanx joints and a joint of its distal four-bar (the
# four of its joints that leave the others best determined, Phi_p's condition 11), about the
# closed configuration that Newton's method finds from zero
ROBOTIQ_ACTUATED = [f"finger_{f}_{j}" for f in ("1", "2", "middle")
                    for j in ("joint_1", "joint_2", "fourbar_3_joint_2", "fourbar_0_joint_0")]
ROBOTIQ_FINGER = {"joint_0": -0.192, "joint_1": -0.164, "joint_2": 0.132, "fourbar_3_joint_2": 0.132,
                  "fourbar_3_joint_0": -0.679, "fourbar_3_joint_1": 1.149, "fourbar_0_joint_2": -0.092,
                  "fourbar_linkage_joint_0": -1.471, "fourbar_0_joint_0": 0.0, "fourbar_0_joint_1": -1.082}
ROBOTIQ_MOTION = dict(c0=[ROBOTIQ_FINGER[j.split("_", 2)[2]] for j in ROBOTIQ_ACTUATED], c1=[0.0] * 12,
                      amps=[[0.08, 0.02]] * 12, freqs=[[1.0 + 0.2 * i, 3.0 + 0.1 * i] for i in range(12)],
                      phases=[[0.3 * i, 0.7 * i] for i in range(12)])


def robotiq(actuated=ROBOTIQ_ACTUATED):
    """Drake's Robotiq 3-finger hand (strict=False: its <limit>s lack velocities); ``actuated``
    None: its <transmission> joints."""
    import warnings

    assembly = {f"finger_{f}_{j}": v for f in ("1", "2", "middle") for j, v in ROBOTIQ_FINGER.items()}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", hd.HodDynamicsWarning)
        return hd.RobotModel.from_urdf(ROBOTIQ, loops="urdf", strict=False, actuated_joints=actuated,
                                       assembly=assembly)


MODELS = {"fourbar": (fourbar, FOURBAR_MOTION), "drake_fourbar": (drake_fourbar, DRAKE_MOTION),
          "ankle": (ankle, ANKLE_MOTION), "robotiq": (robotiq, ROBOTIQ_MOTION)}
URDFS = {"fourbar": FOURBAR_URDF, "drake_fourbar": DRAKE_FOURBAR, "ankle": ANKLE_URDF, "robotiq": ROBOTIQ}


def with_min_mass(loop, mass=1e-6, inertia=1e-9):
    """The same mechanism with massless bodies given a tiny mass and inertia (MuJoCo refuses
    massless moving bodies); used on both sides of a MuJoCo comparison."""
    pi = np.array(hd.inertial_parameters(loop.tree), dtype=float)
    empty = pi[:, 0] <= 0.0
    pi[empty, 0] = mass
    pi[np.ix_(empty, [4, 6, 9])] += inertia
    return loop.with_inertial_parameters(pi)


# -- trajectories and differences ----------------------------------------------------------------
def sine_jet(t, c0, c1, amps, freqs, phases, K):
    """Exact jet (len(t), K, na) of y_i(t) = c0_i + c1_i t + sum_j A_ij sin(w_ij t + p_ij)."""
    t = np.atleast_1d(np.asarray(t, dtype=float))
    c0, c1 = np.atleast_1d(c0).astype(float), np.atleast_1d(c1).astype(float)
    amps, freqs, phases = (np.atleast_2d(np.asarray(a, dtype=float)) for a in (amps, freqs, phases))
    out = np.zeros((len(t), K, len(c0)))
    for k in range(K):
        arg = freqs[None] * t[:, None, None] + phases[None] + k * np.pi / 2
        out[:, k] = np.sum(amps[None] * freqs[None] ** k * np.sin(arg), axis=2)
    out[:, 0] += c0 + c1 * t[:, None]
    if K > 1:
        out[:, 1] += c1
    return out


def central_weights(points, h):
    """Weights and offsets of the central first-derivative stencil of ``points`` (odd) samples
    spaced h (error O(h^(points-1)))."""
    m = points // 2
    x = np.arange(-m, m + 1, dtype=float)
    b = np.zeros(points)
    b[1] = 1.0
    return np.linalg.solve(np.vander(x, points, increasing=True).T, b) / h, x * h


# -- the four-bar's closed-form Lagrangian dynamics ----------------------------------------------
def _urdf_inertials(path):
    """{link: (mass, com (3,), inertia about the com in the link frame (3, 3))} of a URDF."""
    out = {}
    for link in ET.parse(path).getroot().findall("link"):
        el = link.find("inertial")
        if el is None:
            continue
        origin = el.find("origin")
        xyz = [float(v) for v in (origin.get("xyz", "0 0 0") if origin is not None else "0 0 0").split()]
        rpy = [float(v) for v in (origin.get("rpy", "0 0 0") if origin is not None else "0 0 0").split()]
        a = {k: float(v) for k, v in el.find("inertia").attrib.items()}
        Ic = np.array([[a["ixx"], a["ixy"], a["ixz"]], [a["ixy"], a["iyy"], a["iyz"]], [a["ixz"], a["iyz"], a["izz"]]])
        R = rpy_matrix(rpy)
        out[link.get("name")] = (float(el.find("mass").get("value")), np.array(xyz), R @ Ic @ R.T)
    return out


def fourbar_lagrangian(path=FOURBAR_URDF, a=0.1, b=0.35, c=0.3, d=0.4, g=9.81):
    """The four-bar's reduced dynamics in closed form (sympy), crank angle theta, open branch:
    returns numpy functions tau(th, thd, thdd) and tau_dot(th, thd, thdd, th3).

    The x-z plane; a rotation phi about +y maps x to (cos phi, 0, -sin phi). The passive
    absolute angles are explicit functions of theta (law of cosines); with the centres of mass
    c_i(theta) and angles phi_i(theta): M(theta) = sum m_i |dc_i/dtheta|^2 + I_yy,i
    (dphi_i/dtheta)^2, V(theta) = g sum m_i z_i, and Lagrange's equation of the one coordinate:
    tau = M thdd + M'/2 thd^2 + V', tau' = M th3 + 2 M' thd thdd + M''/2 thd^3 + V'' thd."""
    sp = pytest.importorskip("sympy")
    th = sp.symbols("theta", real=True)
    inertia = _urdf_inertials(path)

    def Ry(phi):
        return sp.Matrix([[sp.cos(phi), 0, sp.sin(phi)], [0, 1, 0], [-sp.sin(phi), 0, sp.cos(phi)]])

    P = sp.Matrix([a * sp.cos(th), 0, -a * sp.sin(th)])          # crank tip
    D = sp.Matrix([d, 0, 0])                                         # rocker's ground pivot
    PD = D - P
    e = sp.sqrt(PD[0] ** 2 + PD[2] ** 2)
    beta = sp.atan2(-PD[2], PD[0])
    alpha = sp.acos((b ** 2 + e ** 2 - c ** 2) / (2 * b * e))
    phi_coupler = beta - alpha
    C = P + b * sp.Matrix([sp.cos(phi_coupler), 0, -sp.sin(phi_coupler)])
    CD = D - C
    phi_rocker = sp.atan2(-CD[2], CD[0])
    M = V = 0
    for name, origin, phi in (("crank", sp.zeros(3, 1), th), ("coupler", P, phi_coupler), ("rocker", C, phi_rocker)):
        m, com, Ic = inertia[name]
        cw = origin + Ry(phi) * sp.Matrix(com)
        dc = cw.diff(th)
        M += m * (dc.T * dc)[0] + float(Ic[1, 1]) * sp.diff(phi, th) ** 2
        V += m * g * cw[2]
    Mp, Vp = sp.diff(M, th), sp.diff(V, th)
    f = sp.lambdify(th, [M, Mp, sp.diff(Mp, th), Vp, sp.diff(Vp, th)], "numpy", cse=True)

    def terms(x):
        return (np.asarray(v, dtype=float) for v in f(np.asarray(x, dtype=float)))

    def tau(x, xd, xdd):
        M, Mp, _, Vp, _ = terms(x)
        return M * xdd + 0.5 * Mp * xd ** 2 + Vp

    def tau_dot(x, xd, xdd, x3):
        M, Mp, Mpp, _, Vpp = terms(x)
        return M * x3 + 2 * Mp * xd * xdd + 0.5 * Mpp * xd ** 3 + Vpp * xd

    return tau, tau_dot


# -- energy ---------------------------------------------------------------------------------------
def total_energy(tree, q, qd):
    """Kinetic (hd.kinetic_energy) plus potential energy -sum_i m_i g . c_i (J) of the tree at
    q, qd (B, n): the bodies' centres of mass from their frame poses."""
    T = np.asarray(hd.kinetic_energy(tree, q, qd))
    pi = np.asarray(hd.inertial_parameters(tree))
    V = np.zeros(len(q))
    for i, link in enumerate(tree.link_names):
        body = hd.frame_pose(tree, q, link) @ np.linalg.inv(tree.frames[link].pose)
        mc = body[:, :3, :3] @ pi[i, 1:4] + pi[i, 0] * body[:, :3, 3]
        V -= mc @ np.asarray(tree.gravity)
    return T + V


# -- MuJoCo ---------------------------------------------------------------------------------------
def _numbers(v):
    return " ".join(repr(float(x)) for x in np.ravel(v))


def _quaternion(R):
    import mujoco

    out = np.zeros(4)
    mujoco.mju_mat2Quat(out, np.ascontiguousarray(R, dtype=float).ravel())
    return out


def loop_mjcf(loop, *, timestep, solref=None, solimp=(0.9999, 0.9999, 0.001, 0.5, 2.0), lever=0.05):
    """MJCF of the mechanism: the tree's bodies (frames B_i, hinge or slide axes, mass, centre of
    mass, inertia about it), no contact, damping or armature; one equality per closure through
    sites on the closure frames: point -> connect, weld -> weld, revolute -> two connects (the
    origins and the points ``lever`` m along the axis). Stiff constraints: solref (2 timestep, 1)."""
    tree = loop.tree
    pi = np.asarray(hd.inertial_parameters(tree))
    solref = (2 * timestep, 1.0) if solref is None else solref
    sites = {b: [] for b in range(-1, tree.n_dof)}
    equalities = []
    attributes = f'solref="{_numbers(solref)}" solimp="{_numbers(solimp)}"'
    for c, closure in enumerate(loop.closures):
        (body_a, pose_a), (body_b, pose_b) = loop.closure_frames[2 * c], loop.closure_frames[2 * c + 1]
        site_a, site_b = f"c{c}_A", f"c{c}_B"
        sites[body_a].append((site_a, pose_a))
        sites[body_b].append((site_b, pose_b))
        if closure.kind == "weld":
            equalities.append(f'<weld site1="{site_a}" site2="{site_b}" {attributes}/>')
            continue
        equalities.append(f'<connect site1="{site_a}" site2="{site_b}" {attributes}/>')
        if closure.kind == "revolute":
            for name, pose, body in ((site_a, pose_a, body_a), (site_b, pose_b, body_b)):
                tip = pose.copy()
                tip[:3, 3] = pose[:3, 3] + lever * pose[:3, :3] @ closure.axis
                sites[body].append((name + "x", tip))
            equalities.append(f'<connect site1="{site_a}x" site2="{site_b}x" {attributes}/>')

    def site_lines(body, indent):
        return [f'{indent}<site name="{nm}" pos="{_numbers(P[:3, 3])}" quat="{_numbers(_quaternion(P[:3, :3]))}"/>'
                for nm, P in sites[body]]

    def body_lines(i, indent):
        B, m = tree.references[i], pi[i, 0]
        com = pi[i, 1:4] / m
        Io = np.array([[pi[i, 4], pi[i, 5], pi[i, 7]], [pi[i, 5], pi[i, 6], pi[i, 8]], [pi[i, 7], pi[i, 8], pi[i, 9]]])
        Ic = Io - m * (com @ com * np.eye(3) - np.outer(com, com))
        X = tree.screws[i]
        kind, axis = ("hinge", X[:3]) if np.linalg.norm(X[:3]) > 1e-12 else ("slide", X[3:])
        lines = [f'{indent}<body name="b{i}" pos="{_numbers(B[:3, 3])}" quat="{_numbers(_quaternion(B[:3, :3]))}">',
                 f'{indent}  <joint name="{tree.joint_names[i]}" type="{kind}" axis="{_numbers(axis)}"/>',
                 f'{indent}  <inertial pos="{_numbers(com)}" mass="{float(m)!r}" fullinertia="'
                 f'{_numbers([Ic[0, 0], Ic[1, 1], Ic[2, 2], Ic[0, 1], Ic[0, 2], Ic[1, 2]])}"/>']
        lines += site_lines(i, indent + "  ")
        for k in tree.children[i]:
            lines += body_lines(k, indent + "  ")
        return lines + [f"{indent}</body>"]

    lines = ['<mujoco model="loop">', '  <compiler angle="radian" autolimits="true" balanceinertia="false"/>',
             f'  <option timestep="{float(timestep)!r}" gravity="{_numbers(tree.gravity)}" jacobian="dense" '
             'solver="Newton" tolerance="1e-15" iterations="200" ls_iterations="100">',
             '    <flag contact="disable" warmstart="enable"/>', '  </option>', '  <worldbody>']
    lines += site_lines(-1, "    ")
    for i in range(tree.n_dof):
        if tree.parents[i] < 0:
            lines += body_lines(i, "    ")
    return "\n".join(lines + ['  </worldbody>', '  <equality>'] + ["    " + e for e in equalities]
                     + ['  </equality>', '</mujoco>'])


def simulate_mujoco(loop, duration, dt, tau_a, q0, qd0):
    """MuJoCo's constrained forward dynamics (mj_forward's qacc, the closures as equality
    constraints) driven by the actuator torques ``tau_a(t)`` (na,) alone, integrated with a
    classical RK4 step of our own, so that the torque is taken at each stage's time (MuJoCo's own
    RK4 holds it over the step). Returns (times (N,), actuated positions (N, na), the largest
    closure residual seen (m))."""
    import mujoco

    model = mujoco.MjModel.from_xml_string(loop_mjcf(loop, timestep=dt))
    data = mujoco.MjData(model)
    qadr = np.array([model.joint(nm).qposadr[0] for nm in loop.tree.joint_names])
    vadr = np.array([model.joint(nm).dofadr[0] for nm in loop.tree.joint_names])
    actuated = vadr[loop.actuated_index]

    def acceleration(t, q, v):
        data.qpos[qadr], data.qvel[vadr] = q, v
        data.qfrc_applied[:] = 0.0
        data.qfrc_applied[actuated] = tau_a(t)
        mujoco.mj_forward(model, data)
        return data.qacc[vadr].copy()

    steps = int(round(duration / dt))
    q, v = np.array(q0, dtype=float), np.array(qd0, dtype=float)
    times = np.arange(steps + 1) * dt
    y = np.zeros((steps + 1, len(loop.actuated_index)))
    y[0] = q[loop.actuated_index]
    worst = 0.0
    for s in range(steps):
        t = times[s]
        a1 = acceleration(t, q, v)
        a2 = acceleration(t + dt / 2, q + dt / 2 * v, v + dt / 2 * a1)
        a3 = acceleration(t + dt / 2, q + dt / 2 * (v + dt / 2 * a1), v + dt / 2 * a2)
        a4 = acceleration(t + dt, q + dt * (v + dt / 2 * a2), v + dt * a3)
        q = q + dt * v + dt ** 2 / 6 * (a1 + a2 + a3)
        v = v + dt / 6 * (a1 + 2 * a2 + 2 * a3 + a4)
        y[s + 1] = q[loop.actuated_index]
        if s % 100 == 99:
            worst = max(worst, float(np.max(np.abs(closure_residual(loop, q)))))
    return times, y, worst


def closure_residual(loop, q):
    """The point rows of every closure at q (n,): p_A - p_B (m), from frame poses of the tree."""
    out = []
    for c in range(len(loop.closures)):
        points = []
        for body, pose in loop.closure_frames[2 * c:2 * c + 2]:
            link = loop.tree.root_link if body < 0 else loop.tree.link_names[body]
            T = hd.frame_pose(loop.tree, q, link) @ np.linalg.inv(loop.tree.frames[link].pose) @ pose
            points.append(T[:3, 3])
        out.append(points[0] - points[1])
    return np.concatenate(out)


# -- Pinocchio ------------------------------------------------------------------------------------
class PinocchioLoop:
    """The mechanism in Pinocchio: the same URDF (its parser ignores the loop elements), the
    closures as RigidConstraintModel between the closure frames (CONTACT_3D: the point rows of
    every closure; a planar loop's hinge needs no more in constraintDynamics), and the closure
    frames as operational frames for an inverse dynamics of Pinocchio's functions."""

    def __init__(self, loop, urdf):
        import pinocchio as pin

        self.pin, self.loop = pin, loop
        root = ET.parse(urdf).getroot()
        for link in root.iter():
            for tag in ("visual", "collision"):   # urdfdom is stricter than the URDF spec there
                for el in link.findall(tag) + link.findall("{https://drake.mit.edu}" + tag):
                    link.remove(el)
        for lim in root.iter():
            if lim.tag.endswith("limit"):
                lim.set("velocity", lim.get("velocity", "1e3"))
                lim.set("effort", lim.get("effort", "1e3"))
        text = ET.tostring(root, encoding="unicode").replace("ns0:", "").replace(":ns0", "")
        self.model = model = pin.buildModelFromXML(text)
        self.joints = [model.joints[model.getJointId(nm)] for nm in loop.tree.joint_names]
        self.vidx = np.array([j.idx_v for j in self.joints])
        constraints, self.frame_ids = [], []
        for c, closure in enumerate(loop.closures):
            placements, ids = [], []
            for key, link, P in (("A", closure.link_a, closure.pose_a), ("B", closure.link_b, closure.pose_b)):
                frame = model.frames[model.getFrameId(link)]
                placement = frame.placement * pin.SE3(P[:3, :3], P[:3, 3])
                placements.append((frame.parentJoint, placement))
                ids.append(model.addFrame(pin.Frame(f"closure{c}_{key}", frame.parentJoint, frame.parentFrame,
                                                    placement, pin.FrameType.OP_FRAME)))
            self.frame_ids.append(ids)
            constraints.append(pin.RigidConstraintModel(pin.ContactType.CONTACT_3D, model, placements[0][0],
                                                        placements[0][1], placements[1][0], placements[1][1],
                                                        pin.ReferenceFrame.LOCAL))
        self.constraints = constraints
        self.data = model.createData()
        self.constraint_datas = [cm.createData() for cm in constraints]
        pin.initConstraintDynamics(model, self.data, constraints, self.constraint_datas)
        self.settings = pin.ProximalSettings(1e-14, 1e-12, 100)
        self.S = np.zeros((model.nv, len(loop.actuated_index)))
        self.S[self.vidx[loop.actuated_index], np.arange(len(loop.actuated_index))] = 1.0

    def _q(self, q):
        out = np.zeros(self.model.nq)
        for joint, value in zip(self.joints, q):   # a continuous joint's coordinates are (cos, sin)
            if joint.nq == 2:
                out[joint.idx_q:joint.idx_q + 2] = (math.cos(value), math.sin(value))
            else:
                out[joint.idx_q] = value
        return out

    def _v(self, x):
        out = np.zeros(self.model.nv)
        out[self.vidx] = x
        return out

    def constraint_dynamics(self, q, qd, tau_a):
        """Pinocchio's constraintDynamics with the actuator torques tau_a alone: qdd (n,)."""
        tau = np.zeros(len(q))
        tau[self.loop.actuated_index] = tau_a
        qdd = self.pin.constraintDynamics(self.model, self.data, self._q(q), self._v(qd), self._v(tau),
                                          self.constraints, self.constraint_datas, self.settings)
        return np.asarray(qdd)[self.vidx]

    def tau_a(self, q, qd, qdd):
        """Constrained inverse dynamics from Pinocchio's functions: rnea, the closure rows from
        frame Jacobians (LOCAL_WORLD_ALIGNED: v_A - v_B, and for a hinge the angular velocity
        across its axis), and [S, J^T] (tau_a, lambda) = tau by least squares: (na,)."""
        pin = self.pin
        qq = self._q(q)
        tau = pin.rnea(self.model, self.data, qq, self._v(qd), self._v(qdd))
        pin.computeJointJacobians(self.model, self.data, qq)
        pin.updateFramePlacements(self.model, self.data)
        rows = []
        for closure, (fa, fb) in zip(self.loop.closures, self.frame_ids):
            JA = pin.getFrameJacobian(self.model, self.data, fa, pin.ReferenceFrame.LOCAL_WORLD_ALIGNED)
            JB = pin.getFrameJacobian(self.model, self.data, fb, pin.ReferenceFrame.LOCAL_WORLD_ALIGNED)
            rows.append(JA[:3] - JB[:3])
            if closure.kind == "weld":
                rows.append(JA[3:] - JB[3:])
            elif closure.kind == "revolute":
                e = self.data.oMf[fa].rotation @ closure.axis
                rows.append(np.linalg.svd(e[None, :])[2][1:] @ (JA[3:] - JB[3:]))
        J = np.vstack(rows)
        return np.linalg.lstsq(np.hstack([self.S, J.T]), tau, rcond=1e-12)[0][:len(self.loop.actuated_index)]

    def tau_a_rate(self, q, qd, qdd, q3, tau_a, analytic=True):
        """tau_a' from the partials of Pinocchio's constrained forward dynamics FD: with qdd =
        FD(q, v, S tau_a), q^(3) = FD_q q' + FD_v q'' + FD_tau S tau_a', solved for tau_a' by least
        squares: (na,). ``analytic``: the partials of computeConstraintDynamicsDerivatives, else
        central differences (h = 1e-6) of constraintDynamics (in pin 4.1 the analytical FD_q is
        wrong for a contact between two moving bodies: the ankle's rods and foot)."""
        v, ia = self.vidx, self.loop.actuated_index
        if analytic:
            self.constraint_dynamics(q, qd, tau_a)
            out = self.pin.computeConstraintDynamicsDerivatives(self.model, self.data, self.constraints,
                                                                self.constraint_datas, self.settings)
            Fq, Fv, Ft = (np.asarray(out[i])[np.ix_(v, v)] for i in range(3))
            Ft = Ft[:, ia]
        else:
            h, n = 1e-6, len(q)

            def partial(f, x, rows):
                return np.stack([(f(x + h * e) - f(x - h * e)) / (2 * h) for e in np.eye(rows)], axis=1)

            Fq = partial(lambda x: self.constraint_dynamics(x, qd, tau_a), q, n)
            Fv = partial(lambda x: self.constraint_dynamics(q, x, tau_a), qd, n)
            Ft = partial(lambda x: self.constraint_dynamics(q, qd, x), tau_a, len(ia))
        return np.linalg.lstsq(Ft, q3 - Fq @ qd - Fv @ qdd, rcond=None)[0]
