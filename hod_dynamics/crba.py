"""Joint-space mass matrix by the composite-rigid-body algorithm, and kinetic energy.

Composite inertias are accumulated from the leaves to the root in body-fixed frames,
``Ic_p += Ad_{C_{i,p}}^T Ic_i Ad_{C_{i,p}}``; then ``M_ij = X_j^T (Ad^T ... Ic_i X_i)`` along
the path from body i to the base.
"""

import numpy as np

from .model import batch_size, check_state
from .recursive import joint_adjoint_taylor


def mass_matrix(model, q):
    """Joint-space mass matrix M(q): q (..., n) -> (..., n, n), symmetric, kg m^2 / kg."""
    (q,) = check_state(model, q=q)
    batch = q.shape[:-1]
    n = model.n_dof
    qc = q.reshape(1, batch_size(batch), n)
    A = joint_adjoint_taylor(model, qc, None, 1)[0]  # (B, n, 6, 6)
    Ic = np.broadcast_to(model.inertias, A.shape).copy()
    At = np.swapaxes(A, -1, -2)
    for i in reversed(range(n)):
        p = model.parents[i]
        if p >= 0:
            Ic[:, p] += At[:, i] @ Ic[:, i] @ A[:, i]
    M = np.zeros((qc.shape[1], n, n))
    for i in range(n):
        F = Ic[:, i] @ model.screws[i]
        M[:, i, i] = F @ model.screws[i]
        j = i
        while model.parents[j] >= 0:
            F = (At[:, j] @ F[..., None])[..., 0]
            j = model.parents[j]
            M[:, i, j] = M[:, j, i] = F @ model.screws[j]
    return M.reshape(batch + (n, n))


def kinetic_energy(model, q, qd):
    """Kinetic energy T = 1/2 qd^T M(q) qd (J): q, qd (..., n) -> (...)."""
    q, qd = check_state(model, q=q, qd=qd)
    return 0.5 * np.einsum("...i,...ij,...j->...", qd, mass_matrix(model, q), qd)
