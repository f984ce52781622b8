"""Checks of array arguments that need no model: one function per rule, one message per rule.

Real numbers (not text, not complex), finite values named by their index, whole numbers that
are not bools, batch shapes, results that fit in memory before they are allocated, and arrays a
caller provides for results. Each raises the documented exception of :mod:`hod_dynamics.errors`
naming the argument. The checks that need a model (a joint axis of the model's size, a fixed
base, a floating base's configuration) are :mod:`hod_dynamics.model.validation`.
"""

import math
import operator
import os

import numpy as np

from .errors import InputError


# -- whole numbers and batch shapes ------------------------------------------------------------
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


# -- real, finite arrays --------------------------------------------------------------------------
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
    # True/False are not positions, velocities or torques: a mask passed by mistake would
    # compute as 1.0 and 0.0
    if a.dtype.kind == "b" or (a.dtype.kind == "O" and any(isinstance(x, (bool, np.bool_)) for x in a.flat)):
        raise InputError(f"{name} must be an array of real numbers, got booleans (dtype {a.dtype.name}): pass "
                         "numbers (rad, m, N m, ...), e.g. values.astype(float) if 1.0 and 0.0 are meant")
    if a.dtype.kind not in "iuf":
        try:
            return a.astype(float)
        except (TypeError, ValueError):
            example = a.reshape(-1)[0].tolist() if a.size else None
            raise InputError(f"{name} must be an array of real numbers, got {a.dtype.name} values "
                             f"such as {example!r}") from None
    return a.astype(float, copy=False)


def float_array(name, value):
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


# -- several arrays ------------------------------------------------------------------------------
def broadcast_batch(arrays):
    """The common shape of the arrays ``{name: array}``; InputError naming every shape."""
    try:
        return np.broadcast_shapes(*(a.shape for a in arrays.values()))
    except ValueError:
        raise InputError("batch shapes do not broadcast: " + ", ".join(
            f"{k} {np.shape(a)}" for k, a in arrays.items())) from None


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
