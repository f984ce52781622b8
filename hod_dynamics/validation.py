"""What every entry point checks before it computes: one function per rule, one message per rule.

The public functions of the package validate their arguments here and nowhere else, so that a
rule (a real array, a joint axis of the model's size, a finite value, a fixed base, an integer
that is not a bool) reads the same wherever it is broken. Each check raises the documented
exception of :mod:`hod_dynamics.errors` naming what is at fault: the argument, its index and
what that entry is (a joint, a derivative row, a base coordinate).

The compiled kernels test finiteness themselves as they read; when one meets a NaN or an
infinity, its caller hands the naming back to these checks (:func:`name_non_finite`).

Rules that belong to one concept stay with it: the elements of a URDF (:mod:`hod_dynamics.urdf`),
the invariants of a :class:`~hod_dynamics.model.RobotModel` (its constructor), the waypoint
tables of a trajectory (:mod:`hod_dynamics.trajectory`).
"""

import math
import operator
import os

import numpy as np

from .errors import InputError
from .model import RobotModel

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


# -- arguments of any kind ------------------------------------------------------------------------
def check_model(model):
    """``model`` if it is a :class:`RobotModel`, else InputError (a robot's name, a URDF path or
    a Pinocchio model handed where the model goes)."""
    if not isinstance(model, RobotModel):
        shown = repr(model) if len(repr(model)) <= 60 else repr(model)[:60] + "..."
        raise InputError(f"model must be a hod_dynamics RobotModel (RobotModel.from_urdf(...) or "
                         f"load_robot(name)), got {type(model).__name__} {shown}")
    return model


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


def whole_number(name, value, low=0, high=None, error=InputError, why=""):
    """``value`` as an int when it is an integer (not a bool: True is not an order) in
    ``[low, high]``; else ``error`` naming argument ``name`` (and ``why``, the reason of the
    bounds, when given)."""
    if (isinstance(value, (bool, np.bool_)) or not isinstance(value, (int, np.integer))
            or value < low or (high is not None and value > high)):
        if high is None:
            allowed = f"an integer >= {low}"
        elif high - low <= 3:  # a few values: name them
            allowed = ", ".join(str(k) for k in range(low, high)) + f" or {high}"
        else:
            allowed = f"an integer in [{low}, {high}]"
        raise error(f"{name} must be {allowed}, got {value!r}" + (f": {why}" if why else ""))
    return int(value)


def check_order(order):
    """A derivative order: an integer >= 0."""
    return whole_number("order", order)


def check_batch_shape(batch_shape):
    """A batch shape: a tuple of whole numbers >= 0 (2.5 or True are not batch sizes, and
    ``int()`` would truncate them)."""
    try:
        if any(isinstance(b, (bool, np.bool_)) for b in batch_shape):
            raise TypeError
        shape = tuple(operator.index(b) for b in batch_shape)
    except (TypeError, ValueError):
        shape = None
    if shape is None or any(b < 0 for b in shape):
        raise InputError(f"batch_shape must be a tuple of whole numbers >= 0, got {batch_shape!r}")
    return shape


def real_array(name, value):
    """``value`` as a float ndarray; InputError naming argument ``name`` when it holds text,
    complex numbers (their imaginary part would be lost) or objects that are not numbers."""
    try:
        a = np.asarray(value)
    except ValueError:  # ragged nested sequences
        raise InputError(f"{name} must be an array of real numbers with one common shape; "
                         f"got ragged {type(value).__name__}") from None
    if a.dtype.kind == "c":
        raise InputError(f"{name} holds complex numbers (dtype {a.dtype}); pass real numbers "
                         "(the imaginary part is not dropped silently)")
    # text reads as numbers through float("0"): refused, a column of a file read as strings or
    # a wrong argument would otherwise pass unnoticed
    if a.dtype.kind in "US" or (a.dtype.kind == "O" and any(isinstance(x, (str, bytes)) for x in a.flat)):
        example = next((x for x in a.flat if isinstance(x, (str, bytes, np.void))), None)
        example = example.item() if isinstance(example, np.generic) else example
        raise InputError(f"{name} must be an array of real numbers, got text such as {example!r}: "
                         "convert it to numbers first (np.asarray(values, dtype=float))")
    if a.dtype.kind not in "biuf":
        try:
            return a.astype(float)
        except (TypeError, ValueError):
            example = a.reshape(-1)[0].tolist() if a.size else None
            raise InputError(f"{name} must be an array of real numbers, got {a.dtype.name} values "
                             f"such as {example!r}") from None
    return a.astype(float, copy=False)


def _float_array(name, value):
    """real_array, skipping its conversions for a float64 ndarray (the usual call)."""
    return value if type(value) is np.ndarray and value.dtype == np.float64 else real_array(name, value)


def all_finite(a):
    """True when the float array ``a`` holds no NaN or infinity (``np.all(np.isfinite(a))``
    at half its cost on the small arrays of single samples)."""
    return bool(np.isfinite(a).all())


def check_finite(name, a, label):
    """Raise InputError naming the first NaN or infinity of the float array ``a`` (argument
    ``name``): its index and ``label(index)``, what that entry is (a joint, a derivative row)."""
    if not all_finite(a):
        bad = tuple(np.argwhere(~np.isfinite(a))[0].tolist())
        raise InputError(f"{name} holds a non-finite value at index {bad} ({label(bad)})")


def batch_size(batch_shape):
    """Number of samples in a batch shape (explicit: ``reshape(-1, ...)`` cannot infer it when
    the joint axis has length 0, a robot with no moving joint). ``math.prod`` on the tuple of
    ints: ``np.prod`` costs microseconds, a third of a single sample's compiled kernel."""
    return math.prod(batch_shape)


# -- memory ------------------------------------------------------------------------------------------
MEMORY_SHARE = 0.8  # a call (or a command's job) may use this share of the memory available
_CHECKED_FROM = 64 * 2**20  # bytes: smaller results are not checked (reading /proc costs ~20 us)


def available_memory():
    """Bytes of memory available to a new allocation (Linux MemAvailable; None when unknown)."""
    try:
        with open("/proc/meminfo", encoding="ascii") as fh:
            for line in fh:
                if line.startswith("MemAvailable:"):
                    return int(line.split()[1]) * 1024
    except (OSError, ValueError, IndexError):
        pass
    try:
        return os.sysconf("SC_AVPHYS_PAGES") * os.sysconf("SC_PAGE_SIZE")
    except (ValueError, OSError, AttributeError):
        return None


def memory_text(nbytes):
    """``nbytes`` as people read it: '1.5 GB', '64 MB'."""
    return f"{nbytes / 2**30:.1f} GB" if nbytes >= 2**30 else f"{nbytes / 2**20:.0f} MB"


def check_memory(name, batch_shape, floats_per_sample, what):
    """Refuse (InputError naming argument ``name``) a batch whose result, ``floats_per_sample``
    float64 values per sample, would take more than :data:`MEMORY_SHARE` of the available
    memory: before the call allocates it, with the estimate and the largest batch that fits,
    rather than numpy's MemoryError (or the system's out-of-memory killer) midway."""
    samples = batch_size(batch_shape)
    nbytes = 8 * samples * floats_per_sample
    if nbytes < _CHECKED_FROM:
        return
    free = available_memory()
    if free is not None and nbytes > MEMORY_SHARE * free:
        most = int(MEMORY_SHARE * free // (8 * floats_per_sample))
        raise InputError(f"{name}: {what} of {samples:,} samples needs about {memory_text(nbytes)} of memory, "
                         f"{memory_text(free)} is available; compute it in parts of at most {most:,} samples")


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
        a = _float_array(key, value)
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


def broadcast_batch(arrays):
    """The common shape of the arrays ``{name: array}``; InputError naming every shape."""
    try:
        return np.broadcast_shapes(*(a.shape for a in arrays.values()))
    except ValueError:
        raise InputError("batch shapes do not broadcast: " + ", ".join(
            f"{k} {np.shape(a)}" for k, a in arrays.items())) from None


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
    a = _float_array(name, jet)
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


def check_wrench(link, jet, K, batch_shape):
    """The wrench jet (..., K, 6) on URDF link ``link`` (rows W^(0..K-1), (torque, force)) of
    finite real numbers whose batch axes broadcast to ``batch_shape`` (not the other way
    round: a wrench does not add samples to the trajectory); returns it as a float
    array. Raises InputError naming the link."""
    W = real_array(f"wrench on link '{link}'", jet)
    if W.ndim < 2 or W.shape[-2:] != (K, 6):
        raise InputError(f"wrench on link '{link}' must have shape (..., {K}, 6) (rows "
                         f"W^(0..{K - 1}), (torque, force)), got {W.shape}")
    if not np.all(np.isfinite(W)):
        raise InputError(f"wrench on link '{link}' holds non-finite values")
    try:
        np.broadcast_to(W, tuple(batch_shape) + (K, 6))
    except ValueError:
        raise InputError(f"wrench on link '{link}' has batch shape {W.shape[:-2]}, which "
                         f"does not broadcast to the trajectory batch {tuple(batch_shape)}") from None
    return W


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


# -- arrays a caller provides for results ----------------------------------------------------------
def out_fault(a, shape):
    """What makes ``a`` unfit to receive a result of ``shape`` ('' if nothing). An ndarray
    subclass is fit (its memory is written, as the compiled one-sample paths do)."""
    if not isinstance(a, np.ndarray):
        return type(a).__name__
    faults = [f"dtype {a.dtype}" if a.dtype != np.float64 else "",
              f"shape {a.shape}" if a.shape != shape else "",
              "a read-only array" if not a.flags.writeable else "",
              "an array that is not C-contiguous" if not a.flags.c_contiguous else "",
              "a misaligned array" if not a.flags.aligned else ""]
    return ", ".join(f for f in faults if f)


def check_out(out, shape, names, alternative=""):
    """The caller's result arrays ``out``: a tuple of ``len(names)`` arrays, each fit to receive
    a result of ``shape`` (:func:`out_fault`); InputError naming the first that is not.
    ``alternative``: what else ``out`` may be, for the message."""
    if not isinstance(out, (tuple, list)) or len(out) != len(names):
        raise InputError(f"out must be a tuple of {len(names)} arrays ({', '.join(names)})"
                         f"{' or ' + alternative if alternative else ''}, got {type(out).__name__}")
    for k, a in enumerate(out):
        fault = out_fault(a, shape)
        if fault:
            raise InputError(f"out[{k}] must be a writable C-contiguous float64 array of shape "
                             f"{shape}, got {fault}")
    return tuple(out)
