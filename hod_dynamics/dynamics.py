"""Public entry points: inverse dynamics and its time derivatives.

Validation and dispatch only; the algorithms live in :mod:`hod_dynamics.recursive` and
:mod:`hod_dynamics.closed_form`.
"""

import numpy as np

from .errors import InputError
from .model import check_state, real_array
from .recursive import check_order, time_derivatives_recursive

METHODS = ("recursive", "closed_form")


def inverse_dynamics(model, q, qd, qdd, *, wrenches=None, backend=None):
    """Joint torques/forces tau = M(q) qdd + C(q, qd) qd + g(q) - sum_links J_l^T W_l.

    ``q, qd, qdd`` (..., n) in the model's joint order (rad, rad/s, rad/s^2; m for prismatic);
    any leading batch shape, broadcast together. ``wrenches`` optionally maps URDF link names
    to the wrench (..., 6) = (torque, force) that the environment applies ON that link, in
    the link frame, torque about the link frame origin. Returns tau (..., n) in N m / N.
    ``backend``: "numba", "numpy" or "auto" (None: see :mod:`hod_dynamics.backend`).
    """
    q, qd, qdd = check_state(model, q=q, qd=qd, qdd=qdd)
    jet = np.stack([q, qd, qdd], axis=-2)
    if wrenches:
        wrenches = {k: real_array(f"wrench on link '{k}'", v)[..., None, :] if np.ndim(v) else v
                    for k, v in wrenches.items()}  # a scalar is left for wrench_taylor to refuse
    return time_derivatives_recursive(model, jet, 0, wrenches, backend)[..., 0, :]


def time_derivatives(model, qjet, order, *, method="recursive", wrenches=None, backend=None):
    """tau, tau^(1), ..., tau^(order) along a trajectory, exactly.

    ``qjet`` (..., order+3, n): rows q, qd, qdd, q^(3), ..., q^(order+2) (any batch shape).
    ``wrenches`` optionally maps URDF link names to jets (..., order+1, 6): the wrench
    ``(torque, force)`` applied ON that link by the environment and its derivatives, in the
    link frame, torque about the link frame origin. ``method`` is ``"recursive"`` (O(n),
    Kumar and Müller 2021, sec. II) or ``"closed_form"`` (Kumar and Müller 2021, sec. III;
    Müller and Kumar 2021). ``backend``
    (recursive method) is ``"numba"``, ``"numpy"`` or ``"auto"``; None reads the environment
    variable ``HOD_DYNAMICS_BACKEND``, else auto: numba when installed (see
    :mod:`hod_dynamics.backend`). Returns (..., order+1, n): rows tau^(0..order).
    """
    order = check_order(order)
    if method == "recursive":
        return time_derivatives_recursive(model, qjet, order, wrenches, backend)
    if method == "closed_form":
        from .closed_form import time_derivatives_closed_form

        return time_derivatives_closed_form(model, qjet, order, wrenches)
    raise InputError(f"method must be one of {METHODS}, got {method!r}")
