"""Floating-base robots: configuration and velocity of a free base, and its dynamics entry points.

A floating model (``model.floating``) has a free base body (the root link) above its n joints.

- Configuration ``q`` (..., 7 + n): base position (x, y, z) in the world (m), base orientation
  as a unit quaternion (qx, qy, qz, qw) mapping base-frame vectors to the world, then the joints
  (the layout of Pinocchio's free flyer and of ROS geometry messages).
- Velocity ``v`` (..., 6 + n): the base body twist (omega, v) in the base frame (angular first,
  rad/s and m/s; v is the velocity of the base frame origin resolved in the base frame), then
  the joint rates. Its derivatives v', v'', ... are the plain time derivatives of these
  components (for the base: of the body twist).
- Generalised forces (..., 6 + n): the base wrench (torque, force) in the base frame, torque
  about the base frame origin (N m, N), then the joint torques.

The recursion (:func:`hod_dynamics.algorithms.recursive.rnea_taylor`, dispatched by
:func:`hod_dynamics.algorithms.dispatch.recursion`) runs unchanged on the joints, with
the base body as the root whose twist jet is given and whose gravity twist is
``(0, -R^T g)``: its jet follows from ``d/dt (R^T g) = -omega x (R^T g)`` by truncated Taylor
arithmetic, so tau^(k) is exact for any k. The base rows are the wrench the base needs: the
*missing external wrench*. For a physically consistent motion whose contact wrenches are all
given in ``wrenches``, they are zero.

Quaternions are normalised on input. A norm further than ``QUATERNION_TOLERANCE`` from 1 (or
zero, or non-finite) is an :class:`InputError` naming the sample: such a quaternion is almost
certainly a wrong layout (e.g. qw first) or unfilled data, not rounding.
"""

import numpy as np

from ..arrays import batch_size, check_memory, check_order
from ..deprecation import module_getattr
from ..errors import InputError
from ..kernels.backend import resolve_backend
from ..model.spatial import quaternion_from_matrix, rotation_matrix, skew
from ..model.validation import (BASE_COORDINATES, BASE_VELOCITIES, QUATERNION_TOLERANCE, check_velocity,
                                configuration_names, floating_base_only, split_configuration, velocity_names)
from .dispatch import recursion
from .friction import load_friction
from .jets import cross, from_taylor, to_taylor


def time_derivatives_floating(model, q, vjet, order, *, wrenches=None, backend=None, friction=None):
    """tau, tau^(1), ..., tau^(order) of a floating-base model along its motion, exactly.

    ``q`` (..., 7+n) the configuration now (base position, base quaternion (qx, qy, qz, qw),
    joints); ``vjet`` (..., order+2, 6+n) rows v, v', ..., v^(order+1): the base body twist
    (omega, v) in the base frame and its derivatives, then the joint rates and theirs; the
    batch shapes broadcast. ``wrenches``, ``backend`` and ``friction`` as for
    :func:`hod_dynamics.time_derivatives` (friction acts on the joint rows). Returns
    (..., order+1, 6+n): the base wrench (torque, force) in the base frame that the motion
    needs, then the joint torques, with their derivatives. Raises InputError naming the fault.
    """
    floating_base_only(model, "time_derivatives_floating(model, q, vjet, order)")
    order = check_order(order)
    tau = _recursion(model, q, vjet, order, wrenches, backend)
    fric = load_friction(friction, model)
    if fric is not None:  # the joint rows: the joint rates and their derivatives are vjet[..., 6:]
        tau[..., 6:] += fric.jet(np.asarray(vjet, dtype=float)[..., :order + 1, 6:])
    return tau


def _recursion(model, q, vjet, order, wrenches=None, backend=None, *, checked=False):
    """tau^(0..order) (..., order+1, 6+n) of a floating model (a checked model and order):
    base wrench rows then joints. ``checked``: the caller validated vjet already."""
    compiled = resolve_backend(backend) == "numba"
    batch, jet, root = flat_motion(model, q, vjet, order, checked=checked)
    K = order + 1
    tau, base = recursion(model, jet, K, batch, wrenches, compiled, root=root)
    return np.concatenate([base, tau], axis=-1).reshape(batch + (K, model.nv))


def flat_motion(model, q, vjet, order, *, checked=False):
    """A floating model's motion as the recursion takes it: ``(batch shape, jet (B, order+3,
    n) the joints' q, qd, ..., q^(order+2), root = (quat (B, 4), vbase (B, order+2, 6)))`` from
    ``q`` (..., 7+n) and ``vjet`` (..., order+2, 6+n), their batch shapes broadcast.
    ``checked``: the caller validated vjet already."""
    _, quat, joints = split_configuration(model, q)
    if not checked:
        vjet = check_velocity(model, vjet, "vjet", order + 2)
    n = model.n_dof
    batch = joints.shape[:-1]
    if batch != vjet.shape[:-2]:
        try:
            batch = np.broadcast_shapes(batch, vjet.shape[:-2])
        except ValueError:
            raise InputError(f"batch shapes do not broadcast: q {np.shape(q)}, "
                             f"vjet {vjet.shape}") from None
        joints = np.broadcast_to(joints, batch + (n,))
        quat = np.broadcast_to(quat, batch + (4,))
        vjet = np.broadcast_to(vjet, batch + vjet.shape[-2:])
    check_memory("q", batch, (2 * order + 5) * model.nv, "the dynamics of a floating model")
    B = batch_size(batch)
    joints, quat = joints.reshape(B, 1, n), quat.reshape(B, 4)
    vjet = vjet.reshape((B,) + vjet.shape[-2:])
    jet = np.concatenate([joints, vjet[:, :, 6:]], axis=1)  # q, qd, ..., q^(order+2)
    return batch, jet, (np.ascontiguousarray(quat), np.ascontiguousarray(vjet[:, :, :6]))


def inverse_dynamics_floating(model, q, v, a, wrenches=None):
    """(..., 6+n): base wrench (torque, force) in the base frame, then joint torques."""
    v = check_velocity(model, v, "v")
    a = check_velocity(model, a, "a")
    if v.shape != a.shape:
        try:
            v, a = np.broadcast_arrays(v, a)
        except ValueError:
            raise InputError(f"batch shapes do not broadcast: v {v.shape}, a {a.shape}") from None
    vjet = np.stack([v, a], axis=-2)
    return _recursion(model, q, vjet, 0, wrenches, checked=True)[..., 0, :]


def integrate(model, q, dv):
    """The configuration reached from ``q`` (..., 7+n) along the tangent ``dv`` (..., 6+n) in
    unit time: base pose ``H exp(dv_base)`` on SE(3) (dv_base = (omega, v) in the base frame),
    joints ``q + dv``. The tangent convention of :func:`hod_dynamics.id_partials`."""
    p, quat, joints = split_configuration(model, q)
    dv = check_velocity(model, dv, "dv")
    w, u = dv[..., :3], dv[..., 3:6]
    th = np.linalg.norm(w, axis=-1)[..., None, None]
    W = skew(w)
    small = th < 1e-8
    ths = np.where(small, 1.0, th)
    a = np.where(small, 1 - th ** 2 / 6, np.sin(ths) / ths)
    b = np.where(small, 0.5 - th ** 2 / 24, (1 - np.cos(ths)) / ths ** 2)
    c = np.where(small, 1 / 6 - th ** 2 / 120, (ths - np.sin(ths)) / ths ** 3)
    eye = np.eye(3)
    E = eye + a * W + b * W @ W
    Jl = eye + b * W + c * W @ W
    R = rotation_matrix(quat)
    p_new = p + np.einsum("...ij,...j->...i", R, np.einsum("...ij,...j->...i", Jl, u))
    quat_new = quaternion_from_matrix(R @ E)
    # keep the hemisphere of the input (continuity along a path)
    sign = np.where(np.einsum("...i,...i->...", quat_new, quat) < 0, -1.0, 1.0)[..., None]
    return np.concatenate([p_new, sign * quat_new, joints + dv[..., 6:]], axis=-1)


# -- base trajectories: exact body-twist jets of a spline through poses ----------------------------
def _quat_mul(a, b):
    """Hamilton products (..., 4) of quaternions (x, y, z, w)."""
    av, aw, bv, bw = a[..., :3], a[..., 3:], b[..., :3], b[..., 3:]
    return np.concatenate([aw * bv + bw * av + cross(av, bv),
                           aw * bw - np.sum(av * bv, axis=-1, keepdims=True)], axis=-1)


def _cauchy(f, a, b, K):
    """Coefficients k < K of the product f(a, b) of two series (K, ..., m) (f bilinear)."""
    return np.stack([sum(f(a[j], b[k - j]) for j in range(k + 1)) for k in range(K)])


def velocity_jet(raw, rows):
    """Configuration and exact velocity jet of a pose spline: ``raw`` (..., rows+1, 7+n) holds the
    derivatives 0..rows of (position, quaternion components (not necessarily unit), joints).

    Returns ``q`` (..., 7+n) (quaternion normalised) and ``vjet`` (..., rows, 6+n): the base
    body twist (omega, v) and its derivatives, then the joint rates and theirs. With Q the
    spline's quaternion and p its position, ``omega = 2 Im(Q* Q') / |Q|^2`` and
    ``v = Im(Q* (p', 0) Q) / |Q|^2`` hold for any scaling of Q, so the jets follow exactly by
    truncated Taylor arithmetic (Cauchy products and a series division).
    """
    raw = np.asarray(raw, dtype=float)
    batch = raw.shape[:-2]
    c = to_taylor(raw)  # (rows+1, B, 7+n)
    P, Q = c[:, :, :3], c[:, :, 3:7]
    K = rows
    k1 = np.arange(1, K + 1, dtype=float)[:, None, None]
    dP, dQ = k1 * P[1:], k1 * Q[1:]  # coefficients of p' and Q'
    conj = Q * np.array([-1.0, -1.0, -1.0, 1.0])
    N = _cauchy(lambda a, b: np.sum(a * b, axis=-1), Q, Q, K)  # |Q|^2
    D = np.empty_like(N)  # 1 / |Q|^2
    D[0] = 1.0 / N[0]
    for k in range(1, K):
        D[k] = -sum(N[j] * D[k - j] for j in range(1, k + 1)) / N[0]
    omega = 2.0 * _cauchy(_quat_mul, conj, dQ, K)[..., :3]
    pure = np.concatenate([dP, np.zeros(dP.shape[:-1] + (1,))], axis=-1)
    v = _cauchy(_quat_mul, _cauchy(_quat_mul, conj, pure, K), Q, K)[..., :3]
    twist = np.concatenate([omega, v], axis=-1)
    twist = _cauchy(lambda d, x: d[..., None] * x, D, twist, K)
    base = from_taylor(twist, batch)  # (..., K, 6)
    q = raw[..., 0, :].copy()
    q[..., 3:7] /= np.linalg.norm(q[..., 3:7], axis=-1, keepdims=True)
    return q, np.concatenate([base, raw[..., 1:, 7:]], axis=-1)


def joint_jet(q, vjet):
    """The joints' derivative jet (..., rows+1, n) from a configuration (..., 7+n) and a
    velocity jet (..., rows, 6+n)."""
    return np.concatenate([q[..., None, 7:], vjet[..., 6:]], axis=-2)


__all__ = ["BASE_COORDINATES", "BASE_VELOCITIES", "QUATERNION_TOLERANCE", "check_velocity",
           "configuration_names", "integrate", "inverse_dynamics_floating", "split_configuration",
           "time_derivatives_floating", "velocity_names", "velocity_jet", "joint_jet"]

# moved to hod_dynamics.model.validation; kept for one release
__getattr__ = module_getattr(__name__, {"check_floating": "hod_dynamics.model.validation:floating_base_only",
                                        "check_fixed": "hod_dynamics.model.validation:fixed_base_only"})
