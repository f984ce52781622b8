"""Forward dynamics: the joint accelerations that torques (and external wrenches) produce.

``qdd = M(q)^-1 (tau - h)`` with ``h = tau(q, qd, 0)`` the inverse dynamics at zero
acceleration (Coriolis, centrifugal, gravity and wrench terms), solved by LU with partial
pivoting. On the compiled backend a fixed-base model without external wrenches runs one
kernel per sample (:mod:`hod_dynamics.kernels.partials_ir`): one world-frame Newton-Euler pass gives
h and the composite inertias, hence M (the composite-rigid-body algorithm), then the LU solve.
Otherwise h comes from :func:`hod_dynamics.inverse_dynamics`, M from the partials (fixed
bases) or the CRBA (floating), and LAPACK solves a batch of matrices at once. Correct first:
the tests hold it to Pinocchio's ``aba`` to 1e-10 (fixed and floating bases).

Floating models take q (..., 7 + n), the velocity v (..., 6 + n) and the generalised force
(..., 6 + n): the wrench applied to the base (torque, force; base frame) then the joint
torques, and return the acceleration a (..., 6 + n): the derivative of the base body twist
(omega, v; base frame), then the joint accelerations. M is the (6 + n)-square CRBA there.
"""

import numpy as np

from ..arrays import batch_size
from ..kernels.backend import kernel_array, partials_kernels, resolve_backend
from ..model.validation import check_model, check_state, check_velocity, name_non_finite, singular_mass_matrix
from .crba import mass_matrix
from .dispatch import one_world, world_plan
from .dynamics import inverse_dynamics
from .partials import id_partials


def forward_dynamics(model, q, qd, tau, *, wrenches=None):
    """Joint accelerations qdd with ``M(q) qdd + C(q, qd) qd + g(q) - sum J^T W = tau``.

    ``q, qd, tau`` (..., n) in the model's joint order (rad, rad/s, N m; m, m/s, N for prismatic
    joints), broadcast together; ``wrenches`` as for :func:`hod_dynamics.inverse_dynamics`: URDF
    link name -> wrench (..., 6) = (torque, force) the environment applies ON that link, in the
    link frame. Returns qdd (..., n) in rad/s^2 (m/s^2). Raises InputError naming a bad argument
    or a singular mass matrix. Floating models: see the module docstring (q (..., 7 + n), v and
    tau (..., 6 + n) -> a (..., 6 + n)).
    """
    if wrenches is None:
        qdd = one_world(model, "forward_dynamics", (q, qd, tau))  # the fast path: one sample
        if qdd is not None:
            return qdd
    if check_model(model).floating:
        v = check_velocity(model, qd, "v")
        force = check_velocity(model, tau, "tau")
        h = inverse_dynamics(model, q, v, np.zeros_like(v), wrenches=wrenches)
        return _solve(model, mass_matrix(model, q), force - h)
    compiled = resolve_backend() == "numba"
    q, qd, tau = check_state(model, q=q, qd=qd, tau=tau, finite=not compiled or wrenches)
    if compiled and not wrenches:  # one kernel: the bias torques, M and the LU solve
        batch, n = q.shape[:-1], model.n_dof
        B = batch_size(batch)
        plan = world_plan(model)
        qdd = np.empty(batch + (n,))
        status = partials_kernels().forward(plan.model,
                                            *(kernel_array(a.reshape(B, n)) for a in (q, qd, tau)),
                                            qdd.reshape(B, n))
        if status == 1:  # NON_FINITE
            name_non_finite(model, q=q, qd=qd, tau=tau)
        if status == 3:  # SINGULAR
            singular_mass_matrix(model)
        return qdd
    zero = np.zeros_like(q)
    h = inverse_dynamics(model, q, qd, zero, wrenches=wrenches)
    M = id_partials(model, q, zero, zero)[2]
    return _solve(model, M, tau - h)


def _solve(model, M, rhs):
    """M^-1 rhs for M (..., m, m), rhs (..., m) broadcast together; InputError when singular."""
    try:
        return np.linalg.solve(M, rhs[..., None])[..., 0]
    except np.linalg.LinAlgError:
        pass
    singular_mass_matrix(model)
