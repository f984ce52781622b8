"""Public entry points: inverse dynamics and its time derivatives.

Validation and the choice of method only; the algorithms live in :mod:`hod_dynamics.algorithms.recursive`
(dispatched to a backend by :mod:`hod_dynamics.algorithms.dispatch`) and :mod:`hod_dynamics.algorithms.closed_form`,
the floating-base entry point in :mod:`hod_dynamics.algorithms.floating`.
"""

import warnings

import numpy as np

from ..arrays import check_order, real_array
from ..errors import HodDynamicsDeprecationWarning, InputError
from ..model.loop_model import LoopModel
from ..model.validation import check_model, check_state
from .dispatch import inverse_dynamics_fixed, one_jet, one_state, time_derivatives_recursive
from .floating import inverse_dynamics_floating, time_derivatives_floating
from .friction import load_friction
from .loop_dynamics import loop_inverse_dynamics, loop_time_derivatives

METHODS = ("recursive", "closed_form")


def inverse_dynamics(model, q, qd, qdd, *, wrenches=None, friction=None, backend=None):
    """Joint torques/forces tau = M(q) qdd + C(q, qd) qd + g(q) - sum_links J_l^T W_l (+ tau_f).

    ``q, qd, qdd`` (..., n) in the model's joint order (rad, rad/s, rad/s^2; m for prismatic);
    any leading batch shape, broadcast together. ``wrenches`` optionally maps URDF link names
    to the wrench (..., 6) = (torque, force) that the environment applies ON that link, in
    the link frame, torque about the link frame origin. ``friction``: None (rigid body only),
    ``"urdf"``, a YAML path, a mapping or a :class:`~hod_dynamics.algorithms.friction.FrictionModel`
    (see :func:`~hod_dynamics.algorithms.friction.load_friction`): adds the joint friction torque
    tau_f(qd) (on a floating model, to the joint rows). Returns tau (..., n) in N m / N.
    ``backend``: "numba", "numpy" or "auto" (None: see :mod:`hod_dynamics.kernels.backend`).

    Mechanisms with loops (a :class:`~hod_dynamics.model.loop_model.LoopModel`): q, qd, qdd are
    the actuated joints' (..., na) and the result is the actuator torques tau_a (..., na) that
    move them so (passive joints solved through the closures, closure forces in
    :func:`~hod_dynamics.algorithms.loop_dynamics.constrained_dynamics`; a batch is a motion,
    closed in order from the model's assembly); ``friction`` is the actuated joints'.

    Floating models (:mod:`hod_dynamics.algorithms.floating`): ``inverse_dynamics(model, q, v, a)`` with
    q (..., 7+n), v and a (..., 6+n) returns (..., 6+n): the base wrench (torque, force) in
    the base frame that the motion needs (the *missing external wrench*: zero for a
    physically consistent motion whose contact wrenches are all in ``wrenches``), then the
    joint torques.
    """
    if wrenches is None and friction is None:  # the one-sample fast path, when it applies
        tau = one_state(model, q, qd, qdd, backend)
        if tau is not None:
            return tau
    if isinstance(model, LoopModel):
        return loop_inverse_dynamics(model, q, qd, qdd, friction=friction, backend=backend, wrenches=wrenches)
    if wrenches:
        wrenches = {k: real_array(f"wrench on link '{k}'", v)[..., None, :] if np.ndim(v) else v
                    for k, v in wrenches.items()}  # a scalar is left for wrench_taylor to refuse
    fric = load_friction(friction, check_model(model))
    if model.floating:
        tau = inverse_dynamics_floating(model, q, qd, qdd, wrenches)
        if fric is not None:   # the joint rows; v = (base twist, joint rates)
            tau[..., 6:] += fric.torque(np.asarray(qd, dtype=float)[..., 6:])
        return tau
    tau = inverse_dynamics_fixed(model, q, qd, qdd, wrenches, backend)
    if fric is None:
        return tau
    q, qd = check_state(model, q=q, qd=qd)  # validated above: the arrays broadcast like tau
    return tau + fric.torque(np.broadcast_to(qd, tau.shape))


def time_derivatives(model, qjet, order, *floating_order, method="recursive", wrenches=None,
                     backend=None, friction=None):
    """tau, tau^(1), ..., tau^(order) along a trajectory, exactly.

    ``qjet`` (..., order+3, n): rows q, qd, qdd, q^(3), ..., q^(order+2) (any batch shape).
    ``wrenches`` optionally maps URDF link names to jets (..., order+1, 6): the wrench
    ``(torque, force)`` applied ON that link by the environment and its derivatives, in the
    link frame, torque about the link frame origin. ``method`` is ``"recursive"`` (O(n),
    Kumar and Müller 2021, sec. II) or ``"closed_form"`` (Kumar and Müller 2021, sec. III;
    Müller and Kumar 2021). ``backend``
    (recursive method) is ``"numba"``, ``"numpy"`` or ``"auto"``; None reads the environment
    variable ``HOD_DYNAMICS_BACKEND``, else auto: numba when installed (see
    :mod:`hod_dynamics.kernels.backend`). ``friction`` as for :func:`inverse_dynamics`: the friction
    torque's derivatives tau_f^(0..order) (from qd^(0..order), exactly, see
    :mod:`hod_dynamics.algorithms.friction`) are added to the rigid-body rows.
    Returns (..., order+1, n): rows tau^(0..order).

    Mechanisms with loops (a :class:`~hod_dynamics.model.loop_model.LoopModel`): ``qjet`` is the
    actuated joints' jet (..., order+3, na) and the result tau_a^(0..order) (..., order+1, na),
    the actuator torques and their derivatives (see
    :func:`~hod_dynamics.algorithms.loop_dynamics.constrained_dynamics`, which also returns the
    closure forces and the passive joints' jet).

    Floating models: :func:`~hod_dynamics.algorithms.floating.time_derivatives_floating` ``(model, q,
    vjet, order)``, whose arguments have other roles (a configuration and a velocity jet). The
    call ``time_derivatives(model, q, vjet, order)`` of earlier releases still works for one
    release, with a :class:`~hod_dynamics.errors.HodDynamicsDeprecationWarning`.
    """
    if friction is None and not floating_order and method == "recursive" and not wrenches:
        # the one-sample fast path, when it applies
        tau = one_jet(model, qjet, order, backend)
        if tau is not None:
            return tau
    if isinstance(model, LoopModel) and not floating_order:
        return loop_time_derivatives(model, qjet, order, friction=friction, method=method, backend=backend,
                                     wrenches=wrenches)
    if check_model(model).floating:
        if len(floating_order) != 1:
            raise InputError(f"floating model '{model.name}': call time_derivatives_floating(model, q, "
                             "vjet, order) (configuration, velocity jet, order); the earlier "
                             "time_derivatives(model, q, vjet, order) works for one release")
        if method != "recursive":
            raise InputError(f"floating models support method='recursive' only, got {method!r}")
        warnings.warn("time_derivatives(model, q, vjet, order) for a floating model is deprecated and "
                      "will be removed in the next release; use time_derivatives_floating(model, q, "
                      "vjet, order)", HodDynamicsDeprecationWarning, stacklevel=2)
        q, vjet, k = qjet, order, check_order(floating_order[0])    # (model, q, vjet, order)
        return time_derivatives_floating(model, q, vjet, k, wrenches=wrenches, backend=backend,
                                         friction=friction)
    if floating_order:
        raise InputError(f"time_derivatives(model, qjet, order) takes no fourth positional "
                         f"argument for the fixed-base model '{model.name}'")
    order = check_order(order)
    fric = load_friction(friction, model)
    if method == "recursive":
        tau = time_derivatives_recursive(model, qjet, order, wrenches, backend)
    elif method == "closed_form":
        from .closed_form import time_derivatives_closed_form

        tau = time_derivatives_closed_form(model, qjet, order, wrenches)
    else:
        raise InputError(f"method must be one of {METHODS}, got {method!r}")
    if fric is None:
        return tau
    # the rigid-body result validated qjet: rows 1..order+1 are qd^(0..order)
    return tau + fric.jet(np.asarray(qjet, dtype=float)[..., 1:order + 2, :])
