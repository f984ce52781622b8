"""Forward dynamics: the joint accelerations that torques (and external wrenches) produce.

``qdd = M(q)^-1 (tau - h)`` with ``h = tau(q, qd, 0)`` the inverse dynamics at zero
acceleration (Coriolis, centrifugal, gravity and wrench terms), solved by LU (LAPACK) for a
batch of matrices at once. M comes from the compiled partials kernel, which builds the
composite inertias anyway: 11 us for one Panda sample against 300 us for the numpy CRBA of
:func:`hod_dynamics.mass_matrix`. Measured by ``bench/bench_speed.py`` (Panda): 38 us for one
sample, 4.5 us per sample in a batch of 1,000; Pinocchio's ABA (C++) takes 2.2 us per call.
Correct first: the tests hold it to Pinocchio's ``aba`` to 1e-10 (fixed and floating bases).

Floating models take q (..., 7 + n), the velocity v (..., 6 + n) and the generalised force
(..., 6 + n): the wrench applied to the base (torque, force; base frame) then the joint
torques, and return the acceleration a (..., 6 + n): the derivative of the base body twist
(omega, v; base frame), then the joint accelerations. M is the (6 + n)-square CRBA there.
"""

import numpy as np

from .crba import mass_matrix
from .dynamics import inverse_dynamics
from .errors import InputError
from .partials import id_partials
from .validation import check_model, check_state, check_velocity


def forward_dynamics(model, q, qd, tau, *, wrenches=None):
    """Joint accelerations qdd with ``M(q) qdd + C(q, qd) qd + g(q) - sum J^T W = tau``.

    ``q, qd, tau`` (..., n) in the model's joint order (rad, rad/s, N m; m, m/s, N for prismatic
    joints), broadcast together; ``wrenches`` as for :func:`hod_dynamics.inverse_dynamics`: URDF
    link name -> wrench (..., 6) = (torque, force) the environment applies ON that link, in the
    link frame. Returns qdd (..., n) in rad/s^2 (m/s^2). Raises InputError naming a bad argument
    or a singular mass matrix. Floating models: see the module docstring (q (..., 7 + n), v and
    tau (..., 6 + n) -> a (..., 6 + n)).
    """
    if check_model(model).floating:
        v = check_velocity(model, qd, "v")
        force = check_velocity(model, tau, "tau")
        h = inverse_dynamics(model, q, v, np.zeros_like(v), wrenches=wrenches)
        return _solve(model, mass_matrix(model, q), force - h)
    q, qd, tau = check_state(model, q=q, qd=qd, tau=tau)
    zero = np.zeros_like(q)
    h = inverse_dynamics(model, q, qd, zero, wrenches=wrenches)
    M = id_partials(model, q, zero, zero)[2]
    return _solve(model, M, tau - h)


def _solve(model, M, rhs):
    """M^-1 rhs for M (..., m, m), rhs (..., m) broadcast together; InputError when singular."""
    try:
        return np.linalg.solve(M, rhs[..., None])[..., 0]
    except np.linalg.LinAlgError:
        raise InputError(f"model '{model.name}': the mass matrix is singular at this q (a joint that "
                         "moves no mass); forward dynamics is undefined") from None
