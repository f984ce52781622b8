"""Spatial (SE(3) / se(3)) algebra in the notation of Müller and Kumar 2021
and Kumar and Müller 2021.

Conventions (fixed once for the whole package):

- A twist is ``V = (omega, v)``: angular part first, both resolved in the same frame.
- A wrench is ``W = (t, f)``: torque (moment) first, then force, dual to twists so that
  ``W @ V`` is power.
- A rigid transform ``C = (R, p)`` (4x4 homogeneous matrix) maps coordinates of the child
  frame to the parent frame: ``x_parent = R @ x_child + p``.
- ``Ad(C) = [[R, 0], [p~ R, R]]`` maps twists from the child frame to the parent frame;
  ``Ad(C).T`` maps wrenches from the parent frame to the child frame.
- ``ad(V) = [[w~, 0], [v~, w~]]`` is the Lie bracket of twists; ``-ad(V).T`` acts on wrenches.
- ``x~`` is the skew matrix with ``x~ @ y == cross(x, y)``.

All functions accept leading batch dimensions (``...``) unless stated otherwise.
"""

import numpy as np


def skew(x):
    """Skew matrix of ``x``: shape (..., 3) -> (..., 3, 3), with ``skew(x) @ y == x x y``."""
    x = np.asarray(x, dtype=float)
    out = np.zeros(x.shape[:-1] + (3, 3))
    out[..., 0, 1] = -x[..., 2]
    out[..., 0, 2] = x[..., 1]
    out[..., 1, 0] = x[..., 2]
    out[..., 1, 2] = -x[..., 0]
    out[..., 2, 0] = -x[..., 1]
    out[..., 2, 1] = x[..., 0]
    return out


def ad(V):
    """Lie bracket matrix of a twist ``V = (omega, v)``: (..., 6) -> (..., 6, 6)."""
    V = np.asarray(V, dtype=float)
    w, v = skew(V[..., :3]), skew(V[..., 3:])
    out = np.zeros(V.shape[:-1] + (6, 6))
    out[..., :3, :3] = w
    out[..., 3:, 3:] = w
    out[..., 3:, :3] = v
    return out


def Ad(T):
    """Adjoint of a homogeneous transform ``T`` (..., 4, 4) -> (..., 6, 6).

    ``Ad(T) @ V_child`` is the same twist resolved in the parent frame of ``T``.
    """
    R, p = T[..., :3, :3], T[..., :3, 3]
    out = np.zeros(T.shape[:-2] + (6, 6))
    out[..., :3, :3] = R
    out[..., 3:, 3:] = R
    out[..., 3:, :3] = skew(p) @ R
    return out


def transform(R, p):
    """Homogeneous 4x4 transform from rotation (..., 3, 3) and translation (..., 3)."""
    R = np.asarray(R, dtype=float)
    p = np.asarray(p, dtype=float)
    shape = np.broadcast_shapes(R.shape[:-2], p.shape[:-1])
    out = np.zeros(shape + (4, 4))
    out[..., :3, :3] = R
    out[..., :3, 3] = p
    out[..., 3, 3] = 1.0
    return out


def inverse(T):
    """Inverse of a homogeneous transform (..., 4, 4)."""
    R, p = T[..., :3, :3], T[..., :3, 3]
    Rt = np.swapaxes(R, -1, -2)
    return transform(Rt, -np.einsum("...ij,...j->...i", Rt, p))


def rpy_matrix(rpy):
    """Rotation matrix of URDF roll-pitch-yaw angles: R = Rz(yaw) Ry(pitch) Rx(roll)."""
    r, p, y = (float(a) for a in rpy)
    cr, sr, cp, sp, cy, sy = np.cos(r), np.sin(r), np.cos(p), np.sin(p), np.cos(y), np.sin(y)
    return np.array([
        [cy * cp, cy * sp * sr - sy * cr, cy * sp * cr + sy * sr],
        [sy * cp, sy * sp * sr + cy * cr, sy * sp * cr - cy * sr],
        [-sp, cp * sr, cp * cr],
    ])


def screw_exp(X, theta):
    """Exponential ``exp(X theta)`` of unit joint screws as homogeneous transforms.

    ``X = (omega, v)`` (..., 6) with ``|omega| == 1`` (revolute; helical if ``omega . v != 0``)
    or ``omega == 0`` and ``|v| == 1`` (prismatic); ``theta`` (...). Shapes broadcast;
    returns (..., 4, 4). One formula serves both kinds: with ``omega = 0`` it is a translation.
    """
    X = np.asarray(X, dtype=float)
    theta = np.asarray(theta, dtype=float)
    wx = skew(X[..., :3])
    wx2 = wx @ wx
    t = theta[..., None, None]
    s, c = np.sin(t), np.cos(t)
    eye = np.eye(3)
    R = eye + s * wx + (1.0 - c) * wx2
    G = t * eye + (1.0 - c) * wx + (t - s) * wx2
    return transform(R, (G @ X[..., 3:, None])[..., 0])


def body_inertia(mass, com, inertia_com):
    """6x6 body inertia about the frame origin, in that frame (Kumar and Müller 2021, eq. 12).

    ``[[Theta, m c~], [-m c~, m I]]`` with ``Theta = I_c - m c~ c~`` the rotational inertia about
    the frame origin (parallel-axis theorem). ``com`` (3,) is the centre of mass and
    ``inertia_com`` (3, 3) the rotational inertia about it, both in this frame; kg, m, kg m^2.
    """
    c = skew(com)
    out = np.zeros((6, 6))
    out[:3, :3] = np.asarray(inertia_com, dtype=float) - mass * c @ c
    out[:3, 3:] = mass * c
    out[3:, :3] = -mass * c
    out[3:, 3:] = mass * np.eye(3)
    return out


def transform_inertia(M, T):
    """Body inertia ``M`` (6, 6) given in frame b, re-expressed in frame a, where ``T`` is the
    pose of b in a (``x_a = T x_b``)."""
    A = Ad(inverse(T))
    return A.T @ M @ A


def rotation_matrix(quat):
    """Rotation matrices (..., 3, 3) of unit quaternions (..., 4) = (qx, qy, qz, qw)."""
    x, y, z, w = np.moveaxis(np.asarray(quat, dtype=float), -1, 0)
    return np.stack([
        np.stack([1 - 2 * (y * y + z * z), 2 * (x * y - z * w), 2 * (x * z + y * w)], -1),
        np.stack([2 * (x * y + z * w), 1 - 2 * (x * x + z * z), 2 * (y * z - x * w)], -1),
        np.stack([2 * (x * z - y * w), 2 * (y * z + x * w), 1 - 2 * (x * x + y * y)], -1),
    ], -2)


def quaternion_from_matrix(R):
    """Unit quaternions (..., 4) = (qx, qy, qz, qw), qw >= 0, of rotation matrices (..., 3, 3)."""
    R = np.asarray(R, dtype=float)
    # Shepperd: take the largest of 4 w^2, 4 x^2, 4 y^2, 4 z^2 as the pivot (well conditioned)
    tr = np.trace(R, axis1=-2, axis2=-1)
    d = np.stack([R[..., 0, 0], R[..., 1, 1], R[..., 2, 2], tr], -1)
    k = np.argmax(d, axis=-1)
    out = np.empty(R.shape[:-2] + (4,))
    r = lambda i, j: R[..., i, j]  # noqa: E731
    cand = [
        np.stack([1 + 2 * r(0, 0) - tr, r(0, 1) + r(1, 0), r(0, 2) + r(2, 0), r(2, 1) - r(1, 2)], -1),
        np.stack([r(0, 1) + r(1, 0), 1 + 2 * r(1, 1) - tr, r(1, 2) + r(2, 1), r(0, 2) - r(2, 0)], -1),
        np.stack([r(0, 2) + r(2, 0), r(1, 2) + r(2, 1), 1 + 2 * r(2, 2) - tr, r(1, 0) - r(0, 1)], -1),
        np.stack([r(2, 1) - r(1, 2), r(0, 2) - r(2, 0), r(1, 0) - r(0, 1), 1 + tr], -1),
    ]
    for i in range(4):
        sel = k == i
        out[sel] = cand[i][sel]
    out /= np.linalg.norm(out, axis=-1, keepdims=True)
    return np.where(out[..., 3:] < 0, -out, out)


def rotate_inverse(quat, v):
    """``R^T v`` (..., 3) for unit quaternions (..., 4) = (qx, qy, qz, qw) of R and vectors v
    (..., 3): ``v - 2 w (u x v) + 2 u x (u x v)`` with ``u = (qx, qy, qz)``, ``w = qw``."""
    u, w = quat[..., :3], quat[..., 3:]
    uv = np.cross(u, v)
    return v - 2.0 * w * uv + 2.0 * np.cross(u, uv)
