"""Joint-space mass matrix by the composite-rigid-body algorithm, and kinetic energy.

Composite inertias are accumulated from the leaves to the root in body-fixed frames,
``Ic_p += Ad_{C_{i,p}}^T Ic_i Ad_{C_{i,p}}``; then ``M_ij = X_j^T (Ad^T ... Ic_i X_i)`` along
the path from body i to the base. This numpy form is the reference (and serves floating
bases); fixed bases on the compiled backend run the same algorithm in the world frame
(:mod:`hod_dynamics.kernels.partials_ir`), ``M_ij = S_j^T Ic_i S_i``.
"""

import numpy as np

from ..arrays import batch_size, check_memory
from ..kernels.backend import kernel_array, partials_kernels, resolve_backend
from ..model.validation import check_model, check_state, check_velocity, split_configuration
from .dispatch import one_world, world_plan
from .recursive import joint_adjoint_taylor


def mass_matrix(model, q):
    """Joint-space mass matrix M(q): q (..., n) -> (..., n, n), symmetric, kg m^2 / kg.

    Floating models: q (..., 7+n) -> (..., 6+n, 6+n), the base block first (rows and columns
    (omega, v) of the base body twist, base frame); it depends on the joints only.
    """
    M = one_world(model, "crba", (q,))  # the fast path: one sample, compiled
    if M is not None:
        return M
    if check_model(model).floating:
        _, _, joints = split_configuration(model, q)
        return _mass_matrix(model, joints)
    compiled = resolve_backend() == "numba"
    (q,) = check_state(model, q=q, finite=not compiled, what="mass_matrix",
                       result=model.n_dof ** 2 + 108 * model.n_dof)
    if not compiled:
        return _mass_matrix(model, q)
    batch, n = q.shape[:-1], model.n_dof
    B = batch_size(batch)
    plan = world_plan(model)
    M = np.empty(batch + (n, n))
    if partials_kernels().mass(plan.model, kernel_array(q.reshape(B, n)),
                               M.reshape(B, n, n)) != 0:
        check_state(model, q=q)  # names the NaN or infinity
    return M


def _mass_matrix(model, q):
    """CRBA for validated joint positions (..., n); a floating base adds its 6 rows first."""
    batch = q.shape[:-1]
    n = model.n_dof
    f = 6 if model.floating else 0
    check_memory("q", batch, (n + f) ** 2 + 108 * n, "mass_matrix")  # M, and three 6x6 blocks per joint
    qc = q.reshape(1, batch_size(batch), n)
    A = joint_adjoint_taylor(model, qc, None, 1)[0]  # (B, n, 6, 6)
    Ic = np.broadcast_to(model.inertias, A.shape).copy()
    At = np.swapaxes(A, -1, -2)
    for i in reversed(range(n)):
        p = model.parents[i]
        if p >= 0:
            Ic[:, p] += At[:, i] @ Ic[:, i] @ A[:, i]
    M = np.zeros((qc.shape[1], n + f, n + f))
    if f:  # the base: everything is a composite of it
        Ic_base = np.broadcast_to(model.base_inertia, A.shape[:1] + (6, 6)).copy()
        for i in np.flatnonzero(model.parents < 0):
            Ic_base += At[:, i] @ Ic[:, i] @ A[:, i]
        M[:, :6, :6] = Ic_base
    for i in range(n):
        F = Ic[:, i] @ model.screws[i]
        M[:, f + i, f + i] = F @ model.screws[i]
        j = i
        while model.parents[j] >= 0:
            F = (At[:, j] @ F[..., None])[..., 0]
            j = model.parents[j]
            M[:, f + i, f + j] = M[:, f + j, f + i] = F @ model.screws[j]
        if f:
            M[:, f + i, :6] = M[:, :6, f + i] = (At[:, j] @ F[..., None])[..., 0]
    return M.reshape(batch + (n + f, n + f))


def kinetic_energy(model, q, qd):
    """Kinetic energy T = 1/2 qd^T M(q) qd (J): q, qd (..., n) -> (...).

    Floating models: q (..., 7+n), qd = v (..., 6+n) (base body twist, joint rates)."""
    if check_model(model).floating:
        v = check_velocity(model, qd, "v")
        return 0.5 * np.einsum("...i,...ij,...j->...", v, mass_matrix(model, q), v)
    q, qd = check_state(model, q=q, qd=qd)
    return 0.5 * np.einsum("...i,...ij,...j->...", qd, mass_matrix(model, q), qd)
