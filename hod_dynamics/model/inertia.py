"""Inertial parameters of rigid bodies: the 10-vector, the spatial inertia, the pseudo-inertia.

The dynamics of a body is linear in ten numbers, in this order (Pinocchio's
``Inertia.toDynamicParameters``; Atkeson, An and Hollerbach, "Estimation of inertial parameters
of manipulator loads and links", 1986)::

    pi = (m, m c_x, m c_y, m c_z, I_xx, I_xy, I_yy, I_xz, I_yz, I_zz)

in the body's own frame: ``m`` the mass (kg), ``h = m c`` the first moment (kg m), ``I`` the
rotational inertia about the *frame origin* (kg m^2), ``I = I_c - m c~ c~`` with ``I_c`` the
inertia about the centre of mass (parallel-axis theorem). The body's 6x6 spatial inertia in the
(angular, linear) order of this package is ``[[I, h~], [-h~, m 1]]``.

Physical consistency (Wensing, Kim and Slotine, "Linear matrix inequalities for physically
consistent inertial parameter identification: a statistical perspective on the mass
distribution", 2018): ``pi`` belongs to a real mass distribution exactly when the
pseudo-inertia

    J = [[Sigma, h], [h^T, m]],   Sigma = 1/2 tr(I) 1 - I   (the second moment of the mass)

is positive semi-definite; positive definite means ``m > 0`` and principal moments of ``I_c``
that satisfy the triangle inequality strictly. This is stronger than a positive definite 6x6
inertia, which identification tools often settle for.
"""

import numpy as np

PARAMETER_NAMES = ("m", "mx", "my", "mz", "Ixx", "Ixy", "Iyy", "Ixz", "Iyz", "Izz")
# where each entry of the symmetric 3x3 I sits in pi (Pinocchio's order: xx, xy, yy, xz, yz, zz)
_I_INDEX = np.array([[4, 5, 7], [5, 6, 8], [7, 8, 9]])


def parameters_from_inertia(M):
    """pi (..., 10) of spatial inertias ``M`` (..., 6, 6) about the frame origin (angular first)."""
    M = np.asarray(M, dtype=float)
    pi = np.empty(M.shape[:-2] + (10,))
    pi[..., 0] = M[..., 3, 3]
    # M[:3, 3:] = h~: h = (h~[2, 1], h~[0, 2], h~[1, 0])
    pi[..., 1], pi[..., 2], pi[..., 3] = M[..., 2, 4], M[..., 0, 5], M[..., 1, 3]
    for r, c in ((0, 0), (0, 1), (1, 1), (0, 2), (1, 2), (2, 2)):
        pi[..., _I_INDEX[r, c]] = M[..., r, c]
    return pi


def rotational_inertia(pi):
    """The rotational inertia about the frame origin (..., 3, 3) of pi (..., 10)."""
    return np.asarray(pi, dtype=float)[..., _I_INDEX]


def _skew(h):
    out = np.zeros(h.shape[:-1] + (3, 3))
    out[..., 0, 1], out[..., 0, 2], out[..., 1, 2] = -h[..., 2], h[..., 1], -h[..., 0]
    out[..., 1, 0], out[..., 2, 0], out[..., 2, 1] = h[..., 2], -h[..., 1], h[..., 0]
    return out


def inertia_from_parameters(pi):
    """Spatial inertias (..., 6, 6) ``[[I, h~], [-h~, m 1]]`` of pi (..., 10)."""
    pi = np.asarray(pi, dtype=float)
    M = np.zeros(pi.shape[:-1] + (6, 6))
    hx = _skew(pi[..., 1:4])
    M[..., :3, :3] = rotational_inertia(pi)
    M[..., :3, 3:] = hx
    M[..., 3:, :3] = -hx
    M[..., 3:, 3:] = pi[..., 0, None, None] * np.eye(3)
    return M


def pseudo_inertia(pi):
    """The 4x4 pseudo-inertia ``[[1/2 tr(I) 1 - I, h], [h^T, m]]`` (..., 4, 4) of pi (..., 10)."""
    pi = np.asarray(pi, dtype=float)
    inertia = rotational_inertia(pi)
    J = np.empty(pi.shape[:-1] + (4, 4))
    J[..., :3, :3] = 0.5 * np.trace(inertia, axis1=-2, axis2=-1)[..., None, None] * np.eye(3) - inertia
    J[..., :3, 3] = J[..., 3, :3] = pi[..., 1:4]
    J[..., 3, 3] = pi[..., 0]
    return J


def parameters_from_pseudo_inertia(J):
    """pi (..., 10) of pseudo-inertias J (..., 4, 4): ``I = tr(Sigma) 1 - Sigma``."""
    J = np.asarray(J, dtype=float)
    sigma = J[..., :3, :3]
    inertia = np.trace(sigma, axis1=-2, axis2=-1)[..., None, None] * np.eye(3) - sigma
    pi = np.empty(J.shape[:-2] + (10,))
    pi[..., 0] = J[..., 3, 3]
    pi[..., 1:4] = J[..., :3, 3]
    for r, c in ((0, 0), (0, 1), (1, 1), (0, 2), (1, 2), (2, 2)):
        pi[..., _I_INDEX[r, c]] = inertia[..., r, c]
    return pi


def consistency_margin(pi):
    """(...,) the smallest eigenvalue of each pseudo-inertia divided by its largest: > 0 for a
    physically consistent body (positive definite), 0 on the boundary, < 0 outside. A massless
    body (pi = 0) gives 0."""
    ev = np.linalg.eigvalsh(pseudo_inertia(pi))
    top = np.maximum(np.abs(ev).max(axis=-1), np.finfo(float).tiny)
    return ev[..., 0] / top


def com_form(pi):
    """``(mass (...,), com (..., 3), inertia about the com (..., 3, 3))`` of pi (..., 10), the
    form a URDF ``<inertial>`` takes; a body without mass has its com at the origin."""
    pi = np.asarray(pi, dtype=float)
    m = pi[..., 0]
    safe = np.where(m > 0, m, 1.0)
    com = np.where((m > 0)[..., None], pi[..., 1:4] / safe[..., None], 0.0)
    cx = _skew(com)
    return m, com, rotational_inertia(pi) + m[..., None, None] * (cx @ cx)


def parameter_names(body_names):
    """``("m_<body>", "mx_<body>", ..., "Izz_<body>", ...)``, 10 per body, in pi's order."""
    return tuple(f"{p}_{b}" for b in body_names for p in PARAMETER_NAMES)
