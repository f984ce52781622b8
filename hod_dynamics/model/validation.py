"""What every entry point checks before it computes: one function per rule, one message per rule.

The public functions of the package validate their arguments here and nowhere else, so that a
rule (a real array, a joint axis of the model's size, a finite value, a fixed base, an integer
that is not a bool) reads the same wherever it is broken. Each check raises the documented
exception of :mod:`hod_dynamics.errors` naming what is at fault: the argument, its index and
what that entry is (a joint, a derivative row, a base coordinate).

The compiled kernels test finiteness themselves as they read; when one meets a NaN or an
infinity, its caller hands the naming back to these checks (:func:`name_non_finite`).

Rules that belong to one concept stay with it: the elements of a URDF (:mod:`hod_dynamics.model.urdf`),
the invariants of a :class:`~hod_dynamics.model.RobotModel` (its constructor), the waypoint
tables of a trajectory (:mod:`hod_dynamics.feedforward.trajectory`).
"""

import numpy as np

from ..arrays import broadcast_batch, check_finite, check_memory, float_array, real_array
from ..errors import InputError
from .robot_model import check_model

# -- the layout of a floating model's configuration and velocity ----------------------------------
QUATERNION_TOLERANCE = 1e-2  # accepted | |quaternion| - 1 |; within it, normalised silently
BASE_COORDINATES = ("base_x", "base_y", "base_z", "base_qx", "base_qy", "base_qz", "base_qw")
BASE_VELOCITIES = ("base_wx", "base_wy", "base_wz", "base_vx", "base_vy", "base_vz")
# the public functions that take floating-base models (named when a function refuses one)
FLOATING_API = ("inverse_dynamics", "time_derivatives_floating", "forward_dynamics", "mass_matrix",
                "kinetic_energy", "id_partials", "feedforward", "regressor",
                "regressors.regressor_time_derivatives_floating")


def configuration_names(model):
    """Names of the entries of a configuration (7 + n for a floating model)."""
    return (BASE_COORDINATES if model.floating else ()) + tuple(model.joint_names)


def velocity_names(model):
    """Names of the entries of a velocity (6 + n for a floating model)."""
    return (BASE_VELOCITIES if model.floating else ()) + tuple(model.joint_names)


# -- the kind of model -----------------------------------------------------------------------------


def fixed_base_only(model, what):
    """``model`` (checked) unless it has a floating base, which ``what`` (the caller, as the
    user calls it) does not take: then InputError naming the functions that do."""
    if check_model(model).floating:
        raise InputError(f"{what} takes fixed-base models; '{model.name}' has a floating base "
                         f"(floating-base models: {', '.join(FLOATING_API)}; or fix the base: "
                         "build the model without floating_base=True, or with root_link)")
    return model


def floating_base_only(model, what):
    """``model`` (checked) if it has a floating base, else InputError (``what`` names the caller)."""
    if not check_model(model).floating:
        raise InputError(f"{what} needs a floating-base model; '{model.name}' is fixed to the "
                         "world (build it with RobotModel.from_urdf(..., floating_base=True))")
    return model


# -- joint-space arrays of a fixed-base model -----------------------------------------------------
def check_state(model, *, finite=True, what="this function", result=None, **arrays):
    """Validate and broadcast joint-space arrays ``name=array`` with last axis ``n_dof``.

    Returns the arrays as float ndarrays broadcast to one common shape (..., n). Raises
    :class:`InputError` naming the argument that has the wrong shape or non-finite values, or
    the caller ``what`` for a floating model. ``finite=False`` skips the test for NaN and
    infinity, for callers whose compiled kernel tests every value it reads (and then calls
    :func:`name_non_finite`). ``result``: the floats per sample the caller allocates, refused
    by :func:`check_memory` (before the values are scanned) when they would not fit.
    """
    n = check_model(model).n_dof
    if model.floating:  # (the test inline: a single sample calls this)
        fixed_base_only(model, what)
    out = {}
    for key, value in arrays.items():
        a = float_array(key, value)
        if a.ndim == 0 or a.shape[-1] != n:
            raise InputError(f"{key} must have shape (..., {n}) for model '{model.name}' "
                             f"with joints {list(model.joint_names)}, got shape {a.shape}")
        out[key] = a
    shapes = {a.shape for a in out.values()}
    shape = next(iter(shapes)) if len(shapes) == 1 else broadcast_batch(out)
    if result:
        check_memory(next(iter(out)), shape[:-1], result, what)
    if finite:
        for key, a in out.items():
            _joints_finite(model, key, a)
    if len(shapes) == 1:  # the common case, and numpy's broadcasting helpers cost microseconds
        return list(out.values())
    if not finite and 0 in shape:  # an empty batch: no kernel will read the values
        for key, a in out.items():
            _joints_finite(model, key, a)
    return [np.broadcast_to(a, shape) for a in out.values()]


def _joints_finite(model, key, a):
    """Raise InputError naming the first NaN or infinity of argument ``key`` (..., n)."""
    check_finite(key, a, lambda bad: f"joint '{model.joint_names[bad[-1]]}'")


def check_jet(model, jet, rows, name="qjet", *, at_least=False, finite=True, what="this function",
              result=None):
    """Validate a jet (..., rows, n_dof) of finite numbers; returns it as a float array.

    With ``at_least`` the jet may have more rows: only the first ``rows`` are checked and
    returned. ``finite=False`` skips the test for NaN and infinity, for callers whose
    compiled kernel tests every value it reads (and then calls this again to name the bad one).
    ``result``: the floats per sample the caller allocates (see :func:`check_memory`).
    """
    a = float_array(name, jet)
    n = check_model(model).n_dof
    if model.floating:
        fixed_base_only(model, what)
    if a.ndim < 2 or a.shape[-1] != n or (a.shape[-2] < rows if at_least else a.shape[-2] != rows):
        shape = f"(..., r, {n}) with r >= {rows}" if at_least else f"(..., {rows}, {n})"
        raise InputError(f"{name} must have shape {shape} (rows x^(0..{rows - 1}), one column per "
                         f"joint of '{model.name}'), got {a.shape}")
    if a.shape[-2] != rows:
        a = a[..., :rows, :]
    if result:
        check_memory(name, a.shape[:-2], result, what)
    if finite:
        check_finite(name, a, lambda bad: f"derivative {bad[-2]}, joint '{model.joint_names[bad[-1]]}'")
    return a


def name_non_finite(model, **arrays):
    """A compiled kernel met a NaN or an infinity in the joint arrays ``name=array``: raise the
    InputError of :func:`check_state` that names it."""
    check_state(model, **arrays)
    raise InputError("the joint arrays hold a non-finite value")  # not reached: check_state names it


def singular_mass_matrix(model):
    """Forward dynamics met a singular mass matrix (a zero pivot): the InputError that says so."""
    raise InputError(f"model '{model.name}': the mass matrix is singular at this q (a joint that "
                     "moves no mass); forward dynamics is undefined")


# -- a floating model's configuration and velocity -------------------------------------------------
def split_configuration(model, q, name="q"):
    """Validate a configuration (..., 7 + n): returns (position (..., 3), unit quaternion
    (..., 4) as (qx, qy, qz, qw), joints (..., n)). A quaternion whose norm is further than
    ``QUATERNION_TOLERANCE`` from 1 (a wrong layout, unfilled data) is an InputError naming
    the sample; within it, it is normalised."""
    q = real_array(name, q)
    if q.ndim == 0 or q.shape[-1] != model.nq:
        raise InputError(f"{name} must have shape (..., {model.nq}) for floating model "
                         f"'{model.name}' (x, y, z, qx, qy, qz, qw, then joints "
                         f"{list(model.joint_names)}), got shape {q.shape}")
    check_finite(name, q, lambda bad: configuration_names(model)[bad[-1]])
    quat = q[..., 3:7]
    norm = np.sqrt(np.einsum("...i,...i->...", quat, quat))
    if not (np.abs(norm - 1.0) <= QUATERNION_TOLERANCE).all():
        at = tuple(np.argwhere(~(np.abs(norm - 1.0) <= QUATERNION_TOLERANCE))[0].tolist())
        raise InputError(f"{name}: base quaternion (qx, qy, qz, qw) = {quat[at].tolist()} at "
                         f"batch index {at} has norm {norm[at]:.6g}; it must be a unit quaternion "
                         f"(|norm - 1| <= {QUATERNION_TOLERANCE})")
    return q[..., :3], quat / norm[..., None], q[..., 7:]


def check_velocity(model, value, name, rows=None):
    """Validate a velocity (..., 6 + n), or a jet (..., rows, 6 + n); returns a float array."""
    a = real_array(name, value)
    nv = model.nv
    ok = a.ndim >= (1 if rows is None else 2) and a.shape[-1] == nv
    if ok and rows is not None:
        ok = a.shape[-2] == rows
    if not ok:
        shape = f"(..., {nv})" if rows is None else f"(..., {rows}, {nv})"
        raise InputError(f"{name} must have shape {shape} for floating model '{model.name}' "
                         f"(base twist (omega, v) in the base frame, then joints "
                         f"{list(model.joint_names)}), got shape {a.shape}")
    check_finite(name, a, lambda bad: velocity_names(model)[bad[-1]])
    return a
