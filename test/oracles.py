"""Independent oracles for the tests: Pinocchio, random URDF trees, finite differences.

Nothing here is used by the package itself.
"""

import glob
import os
import sys

import numpy as np
import pytest

import hod_dynamics as hd
from hod_dynamics.kernels.backend import numba_available

# -- compute backends -----------------------------------------------------------------------------
needs_numba = pytest.mark.skipif(not numba_available(), reason="numba not installed")
# parametrize("backend", BACKENDS): both paths, the numba one skipped (named) without numba
BACKENDS = ["numpy", pytest.param("numba", marks=needs_numba)]


# -- example-robot-data ---------------------------------------------------------------------------
def erd_dir():
    """Folder of example-robot-data's robots (skip the test when the package is missing)."""
    pytest.importorskip("example_robot_data", reason="example-robot-data-loaders not installed")
    hits = glob.glob(os.path.join(sys.prefix, "lib", "python3*", "site-packages", "cmeel.prefix",
                                  "share", "example-robot-data", "robots"))
    if not hits:
        pytest.skip("example-robot-data URDF files not found under the venv")
    return hits[0]


PANDA_FINGERS = {"panda_finger_joint1": 0.01, "panda_finger_joint2": 0.01}

# name -> (path relative to the robots folder, locked joints)
ERD_ROBOTS = {
    "panda": ("panda_description/urdf/panda.urdf", PANDA_FINGERS),
    "ur5": ("ur_description/urdf/ur5_robot.urdf", None),
    "talos": ("talos_data/robots/talos_reduced.urdf", None),
    "hyq": ("hyq_description/robots/hyq_no_sensors.urdf", None),
    "solo12": ("solo_description/robots/solo12.urdf", None),
    "baxter": ("baxter_description/urdf/baxter.urdf", None),
    "double_pendulum": ("double_pendulum_description/urdf/double_pendulum_continuous.urdf", None),
}


def erd_path(name):
    return os.path.join(erd_dir(), ERD_ROBOTS[name][0])


def erd_model(name, **kwargs):
    """Our model of an example-robot-data robot (fingers of the Panda locked)."""
    return hd.RobotModel.from_urdf(erd_path(name), locked_joints=ERD_ROBOTS[name][1], **kwargs)


# -- Pinocchio ----------------------------------------------------------------------------------
class PinocchioRobot:
    """A Pinocchio model of the same URDF, with our joint order mapped onto Pinocchio's.

    Our models use 1 coordinate per joint; Pinocchio's continuous joints use (cos, sin).
    """

    def __init__(self, urdf_path, model, locked=None):
        """``urdf_path``: a URDF file path or the XML text itself."""
        self.pin = pin = pytest.importorskip("pinocchio", reason="pinocchio (pin) not installed")
        if urdf_path.lstrip().startswith("<"):
            pm = pin.buildModelFromXML(urdf_path)
        else:
            pm = pin.buildModelFromUrdf(urdf_path)
        if locked:
            q0 = pin.neutral(pm)
            for name, value in locked.items():
                q0[pm.joints[pm.getJointId(name)].idx_q] = value
            pm = pin.buildReducedModel(pm, [pm.getJointId(nm) for nm in locked], q0)
        pm.gravity.linear = np.asarray(model.gravity, dtype=float)
        self.model, self.data, self.ours = pm, pm.createData(), model
        joints = [pm.joints[pm.getJointId(nm)] for nm in model.joint_names]
        self.vidx = np.array([j.idx_v for j in joints])
        self.qidx = np.array([j.idx_q for j in joints])
        self.nq = np.array([j.nq for j in joints])
        # Pinocchio joint id that moves each of our bodies (for external forces)
        self.joint_ids = [pm.getJointId(nm) for nm in model.joint_names]

    def q(self, q):
        return self._joints(self.pin.neutral(self.model), q)

    def _joints(self, pq, q):
        """Our joint positions q written into Pinocchio's configuration pq."""
        for k in range(len(q)):
            if self.nq[k] == 2:
                pq[self.qidx[k]], pq[self.qidx[k] + 1] = np.cos(q[k]), np.sin(q[k])
            else:
                pq[self.qidx[k]] = q[k]
        return pq

    def v(self, v):
        out = np.zeros(self.model.nv)
        out[self.vidx] = v
        return out

    def rnea(self, q, qd, qdd, fext=None):
        args = (self.model, self.data, self.q(q), self.v(qd), self.v(qdd))
        tau = self.pin.rnea(*args, fext) if fext is not None else self.pin.rnea(*args)
        return np.array(tau)[self.vidx]

    def crba(self, q):
        M = np.array(self.pin.crba(self.model, self.data, self.q(q)))
        M = np.triu(M) + np.triu(M, 1).T
        return M[np.ix_(self.vidx, self.vidx)]

    def rnea_derivatives(self, q, qd, qdd):
        """(dtau/dq, dtau/dqd, M) in our joint order."""
        pin = self.pin
        dq, dv, da = pin.computeRNEADerivatives(self.model, self.data, self.q(q), self.v(qd),
                                                self.v(qdd))
        ix = np.ix_(self.vidx, self.vidx)
        da = np.array(da)
        da = np.triu(da) + np.triu(da, 1).T
        return np.array(dq)[ix], np.array(dv)[ix], da[ix]

    def external_forces(self, wrenches_by_link, q):
        """Pinocchio fext (StdVec_Force) from our wrenches {link: (torque, force) in link frame}.

        Each wrench is moved to the frame of the Pinocchio joint that carries the link.
        """
        pin = self.pin
        fext = pin.StdVec_Force()
        for _ in range(self.model.njoints):
            fext.append(pin.Force.Zero())
        pq = self.q(q)
        pin.forwardKinematics(self.model, self.data, pq)
        pin.updateFramePlacements(self.model, self.data)
        for link, W in wrenches_by_link.items():
            fid = self.model.getFrameId(link)
            frame = self.model.frames[fid]
            jid = frame.parentJoint
            f_link = pin.Force(np.asarray(W[3:], float), np.asarray(W[:3], float))
            fext[jid] = fext[jid] + frame.placement.act(f_link)
        return fext


class FloatingPinocchioRobot(PinocchioRobot):
    """Pinocchio with a ``JointModelFreeFlyer`` root, mapped onto our floating conventions.

    Pinocchio's free flyer: q = (x, y, z, qx, qy, qz, qw) like ours; velocity and base wrench
    (linear, angular) in the base (local) frame, where ours are (angular, linear).
    """

    def __init__(self, urdf_path, model):
        self.pin = pin = pytest.importorskip("pinocchio", reason="pinocchio (pin) not installed")
        root = pin.JointModelFreeFlyer()
        if urdf_path.lstrip().startswith("<"):
            pm = pin.buildModelFromXML(urdf_path, root)
        else:
            pm = pin.buildModelFromUrdf(urdf_path, root)
        pm.gravity.linear = np.asarray(model.gravity, dtype=float)
        self.model, self.data, self.ours = pm, pm.createData(), model
        joints = [pm.joints[pm.getJointId(nm)] for nm in model.joint_names]
        # base (angular, linear) <- Pinocchio (linear, angular), then our joints
        self.vidx = np.r_[[3, 4, 5, 0, 1, 2], [j.idx_v for j in joints]].astype(int)
        self.qidx = np.array([j.idx_q for j in joints])
        self.nq = np.array([j.nq for j in joints])

    def q(self, q):
        pq = self.pin.neutral(self.model)
        pq[:7] = q[:7] / np.r_[1, 1, 1, [np.linalg.norm(q[3:7])] * 4]
        return self._joints(pq, q[7:])


def floating_pinocchio_robot(name):
    """(our floating model, FloatingPinocchioRobot) of an example-robot-data robot."""
    model = erd_model(name, floating_base=True)
    return model, FloatingPinocchioRobot(erd_path(name), model)


def random_floating_state(model, rng, batch=()):
    """Random (q, v, a) of a floating model: unit quaternions, joints in [-1.5, 1.5]."""
    n = model.n_dof
    quat = rng.normal(size=batch + (4,))
    quat /= np.linalg.norm(quat, axis=-1, keepdims=True)
    q = np.concatenate([rng.normal(size=batch + (3,)), quat,
                        rng.uniform(-1.5, 1.5, batch + (n,))], axis=-1)
    return q, rng.normal(size=batch + (6 + n,)), rng.normal(size=batch + (6 + n,))


def pinocchio_robot(name):
    """(our model, PinocchioRobot) of an example-robot-data robot."""
    model = erd_model(name)
    return model, PinocchioRobot(erd_path(name), model, ERD_ROBOTS[name][1])


# -- random URDF trees ----------------------------------------------------------------------------
def random_urdf(n_joints, seed, *, fixed_fraction=0.2, prismatic_fraction=0.25, branching=0.4):
    """URDF text of a random tree: revolute/continuous/prismatic/fixed joints, random origins,
    oddly oriented axes (not normalised), random inertial frames, some massless links."""
    rng = np.random.default_rng(seed)
    links = ["base"]
    out = ['<?xml version="1.0"?>', f'<robot name="random_{n_joints}_{seed}">', '<link name="base"/>']
    for k in range(n_joints):
        parent = links[-1] if rng.random() > branching else links[rng.integers(len(links))]
        child = f"l{k}"
        r = rng.random()
        jtype = ("fixed" if r < fixed_fraction else
                 "prismatic" if r < fixed_fraction + prismatic_fraction else
                 rng.choice(["revolute", "continuous"]))
        xyz = " ".join(f"{v:.6f}" for v in rng.normal(scale=0.3, size=3))
        rpy = " ".join(f"{v:.6f}" for v in rng.uniform(-np.pi, np.pi, 3))
        axis = " ".join(f"{v:.6f}" for v in rng.normal(size=3) * rng.uniform(0.5, 3))
        out.append(f'<joint name="j{k}" type="{jtype}"><parent link="{parent}"/><child link="{child}"/>'
                   f'<origin xyz="{xyz}" rpy="{rpy}"/><axis xyz="{axis}"/>'
                   f'<limit lower="-2" upper="2" effort="100" velocity="5"/></joint>')
        if rng.random() < 0.1:
            out.append(f'<link name="{child}"/>')
        else:
            A = rng.normal(size=(3, 3))
            I = A @ A.T * 0.05 + 0.01 * np.eye(3)
            cxyz = " ".join(f"{v:.6f}" for v in rng.normal(scale=0.2, size=3))
            crpy = " ".join(f"{v:.6f}" for v in rng.uniform(-np.pi, np.pi, 3))
            out.append(f'<link name="{child}"><inertial><origin xyz="{cxyz}" rpy="{crpy}"/>'
                       f'<mass value="{rng.uniform(0.2, 5):.6f}"/>'
                       f'<inertia ixx="{I[0,0]:.8f}" ixy="{I[0,1]:.8f}" ixz="{I[0,2]:.8f}" '
                       f'iyy="{I[1,1]:.8f}" iyz="{I[1,2]:.8f}" izz="{I[2,2]:.8f}"/></inertial></link>')
        links.append(child)
    out.append("</robot>")
    return "\n".join(out)


def chain_urdf(n_joints, seed=0):
    """URDF text of a serial chain of ``n_joints`` revolute joints (no branching, no fixed)."""
    return random_urdf(n_joints, seed, fixed_fraction=0.0, prismatic_fraction=0.0, branching=0.0)


# -- trajectories and finite differences ---------------------------------------------------------
def sinusoid_jet(n, t, rows, seed=0):
    """Jet (len(t), rows, n) of q_i(t) = a_i cos(w_i t + phi_i) + b_i, exact derivatives."""
    rng = np.random.default_rng(seed)
    a, w = rng.uniform(0.3, 1.2, n), rng.uniform(0.5, 2.5, n)
    ph, b = rng.uniform(0, 2 * np.pi, n), rng.uniform(-0.5, 0.5, n)
    t = np.atleast_1d(np.asarray(t, dtype=float))[:, None]
    rows_ = [a * w ** k * np.cos(w * t + ph + k * np.pi / 2) + (b if k == 0 else 0.0) for k in range(rows)]
    return np.stack(rows_, axis=-2)


CENTRAL_7 = np.array([-1.0, 9.0, -45.0, 0.0, 45.0, -9.0, 1.0]) / 60.0  # 6th-order first derivative


def central_difference(f, t0, h):
    """6th-order central difference d/dt f at t0; f maps an array of times (7,) to (7, ...)."""
    values = f(t0 + h * np.arange(-3, 4))
    return np.tensordot(CENTRAL_7, values, axes=(0, 0)) / h


def rel_err(a, b):
    """max |a - b| / max(1, max |b|)."""
    a, b = np.asarray(a), np.asarray(b)
    return float(np.abs(a - b).max() / max(1.0, np.abs(b).max()))

