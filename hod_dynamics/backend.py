"""Choice of the compute backend for the recursive algorithm: compiled (numba) or numpy.

``"numba"`` runs :mod:`hod_dynamics._kernels` (numba is a dependency of the package);
``"numpy"`` is the vectorised pure-numpy path, the reference. Both give the same numbers (to
rounding). The default ``"auto"`` takes numba when it imports and falls back to numpy otherwise,
with one warning saying so (:class:`NumbaUnavailableWarning`); the environment variable
``HOD_DYNAMICS_BACKEND`` (``auto``, ``numba`` or ``numpy``) overrides the default, a
``backend=`` keyword overrides both.

numba compiles the kernels on their first use after an install (10 to 30 s) and caches the
machine code on disk (``__pycache__`` beside the module, or numba's user-wide cache when the
install is read-only), so later processes load it in well under a second.
:func:`kernels_cached` tells beforehand whether a first use will compile, so that programs can
announce the wait (:func:`compile_notice`).

The compiled kernels release the GIL; large batches are split into chunks computed by
``HOD_DYNAMICS_THREADS`` threads (default: the CPUs this process may run on; 1 disables it).
"""

import contextlib
import importlib.util
import os
import threading
import warnings
from concurrent.futures import ThreadPoolExecutor
from functools import lru_cache

import numpy as np

from .deprecation import module_getattr
from .errors import InputError, NumbaUnavailableWarning

BACKENDS = ("auto", "numba", "numpy")
ENV_VAR = "HOD_DYNAMICS_BACKEND"
THREADS_ENV_VAR = "HOD_DYNAMICS_THREADS"
MIN_CHUNK = 1024  # samples: below this a thread hand-off costs more than it saves


COMPILE_NOTICE = "compiling kernels, first use after install, ~30 s (cached for later runs)"


@lru_cache(maxsize=1)
def kernels():
    """The compiled kernel module, or None when numba cannot be imported (warns once)."""
    try:
        from . import _kernels
    except Exception as exc:  # ImportError, or a numba broken by a mismatched numpy
        warnings.warn(f"numba cannot be imported ({type(exc).__name__}: {exc}); running the numpy "
                      "path, about 100x slower for single samples (reinstall numba to fix)",
                      NumbaUnavailableWarning, stacklevel=2)
        return None
    return _kernels


# the kernels' entry points: the helpers they call are compiled into them
_ENTRY_POINTS = {"rnea": ("_kernels", ("rnea_jets",)),
                 "partials": ("_partials_kernels", ("first_partials", "second_partials",
                                                 "second_partials_one")),
                 "regressor": ("_regressor_kernels", ("regressor_jets",))}


def kernels_cached(which="rnea"):
    """True when numba's disk cache holds the machine code of the kernels ``which``
    (``"rnea"``: tau and its time derivatives; ``"partials"``: first- and second-order
    partials; ``"regressor"``: the regressor and its time derivatives), so that their first
    use in this process loads it rather than compiling; False when it will compile; None when
    numba cannot run or its cache cannot be inspected."""
    if kernels() is None:
        return None
    module_name, names = _ENTRY_POINTS[which]
    module = {"_kernels": kernels, "_partials_kernels": partials_kernels,
              "_regressor_kernels": regressor_kernels}[module_name]()
    try:  # numba's cache index: empty when missing, stale (source rewritten) or of another numba
        return all(bool(getattr(module, name)._cache._cache_file._load_index()) for name in names)
    except Exception:  # a private layout of numba's that changed: cannot tell
        return None


def compile_notice(which="rnea"):
    """:data:`COMPILE_NOTICE` when the first use of the kernels ``which`` in this process will
    compile them (see :func:`kernels_cached`), else None: what a program prints or logs once
    before that first use."""
    return COMPILE_NOTICE if resolve_backend() == "numba" and kernels_cached(which) is False else None


@lru_cache(maxsize=1)
def partials_kernels():
    """The world-frame kernels: mass matrix, forward dynamics, first- and second-order partials
    (:mod:`hod_dynamics._partials_ir`); only call it when :func:`resolve_backend` chose numba."""
    from . import _partials_ir

    return _partials_ir


@lru_cache(maxsize=1)
def regressor_kernels():
    """The compiled regressor kernel (:mod:`hod_dynamics._regressor_kernels`); only call it
    when :func:`resolve_backend` chose numba."""
    from . import _regressor_kernels

    return _regressor_kernels


def kernel_array(a):
    """``a`` as a C-contiguous, writable float array, copied only when it is not one already.

    numba compiles one machine-code variant per argument type, and a read-only array (a
    broadcast view, a memory map) is a different type from a writable one: passing kernels
    writable arrays keeps them on the variant compiled (or cached) for the usual case.
    """
    if is_kernel_array(a):
        return a
    return np.array(a, dtype=float, order="C")


_F64 = np.dtype(np.float64)  # numpy's native float64 dtype is one object: tested with ``is``


def is_kernel_array(a):
    """True when ``a`` goes to a compiled kernel as it is, on the variant compiled for the usual
    case: an ndarray (not a subclass) of native float64, C-contiguous, aligned and writable
    (numba types each of these apart; ``flags.carray`` tests the last three at once, which
    matters to single samples, tested on every call)."""
    return type(a) is np.ndarray and a.dtype is _F64 and a.flags.carray


def numba_available():
    """True when the numba backend can run."""
    return kernels() is not None


def resolve_backend(backend=None):
    """``"numba"`` or ``"numpy"`` for a requested backend (None: the env var, else auto).

    Raises InputError for an unknown name, or for ``"numba"`` when numba is not installed.
    """
    if backend is None:
        try:  # the common call: the environment's own dictionary, a value seen before
            return _from_env[_ENV_DATA.get(_ENV_KEY)]
        except (KeyError, AttributeError):  # a value not seen yet, or no such dictionary
            raw = _environ_get(ENV_VAR)
            resolved = _from_env[raw] = _resolve(raw, ENV_VAR)
            return resolved
    if not isinstance(backend, str):
        raise InputError(f"backend must be one of {BACKENDS}, got {backend!r}")
    return _resolve(backend, "backend")


_from_env = {}  # raw value of HOD_DYNAMICS_BACKEND (None: unset) -> resolve_backend's answer


def _environ_get(name):
    """``os.environ.get(name)`` (None when unset) at a tenth of its cost: a single sample reads
    the backend variable on every call, and ``os.environ.get`` (encoding the key, decoding the
    value) takes 0.5 us. On POSIX CPython ``os.environ`` keeps its encoded copy in ``_data``,
    read here directly; elsewhere the public call."""
    data = getattr(os.environ, "_data", None)
    if type(data) is not dict or not _POSIX:
        return os.environ.get(name)
    return data.get(_ENCODED.get(name) or name.encode())  # bytes, decoded by _resolve


_POSIX = os.name == "posix"
_ENCODED = {ENV_VAR: ENV_VAR.encode()}
# os.environ's encoded dictionary (CPython on POSIX: changed in place by every os.environ
# assignment, never replaced), read directly by resolve_backend; None elsewhere
_ENV_DATA = getattr(os.environ, "_data", None) if _POSIX else None
_ENV_DATA = _ENV_DATA if type(_ENV_DATA) is dict else None
_ENV_KEY = _ENCODED[ENV_VAR]


@lru_cache(maxsize=16)
def _resolve(backend, source):
    """resolve_backend for a name from ``source`` (the keyword, or the environment variable's
    raw value: None when unset, bytes from :func:`_environ_get`, normalised here), computed
    once per value: a single sample calls it."""
    if source == ENV_VAR:
        if isinstance(backend, bytes):
            backend = os.fsdecode(backend)
        backend = (backend or "auto").strip().lower() or "auto"
    if backend not in BACKENDS:
        raise InputError(f"{source} must be one of {BACKENDS}, got {backend!r}")
    if backend == "auto":
        return "numba" if numba_available() else "numpy"
    if backend == "numba" and not numba_available():
        raise InputError(f"{source}='numba' needs the numba package, which cannot be imported "
                         "(pip install numba)")
    return backend


def requested_backend():
    """What :func:`resolve_backend` would choose for the default backend, without importing
    numba (which takes a second): ``"numba"`` when requested, or ``"auto"`` and numba is
    installed; else ``"numpy"``. Raises InputError as resolve_backend does."""
    backend = os.environ.get(ENV_VAR, "auto").strip().lower() or "auto"
    if backend not in BACKENDS:
        raise InputError(f"{ENV_VAR} must be one of {BACKENDS}, got {backend!r}")
    installed = kernels.cache_info().currsize or importlib.util.find_spec("numba") is not None
    if backend == "numba" and not installed:
        raise InputError(f"{ENV_VAR}='numba' needs the numba package (pip install \"hod_dynamics[fast]\")")
    return "numba" if backend != "numpy" and installed else "numpy"


def compute_threads():
    """Threads that share a large batch: ``HOD_DYNAMICS_THREADS`` (an integer >= 1), else the
    number of CPUs this process may run on. Raises InputError for a malformed value."""
    return _threads(os.environ.get(THREADS_ENV_VAR, "").strip())


@lru_cache(maxsize=8)
def _threads(raw):
    """compute_threads for the variable's text (parsed once per value: single samples call it)."""
    if not raw:
        try:
            return len(os.sched_getaffinity(0))
        except AttributeError:  # not Linux
            return os.cpu_count() or 1
    try:
        threads = int(raw)
    except ValueError:
        threads = 0
    if threads < 1:
        raise InputError(f"{THREADS_ENV_VAR} must be an integer >= 1, got {raw!r}")
    return threads


_pools = {}
_pools_lock = threading.Lock()


def _forget_pools_after_fork():
    """A forked child has none of its parent's threads: it must build its own pools."""
    global _pools_lock
    _pools.clear()
    _pools_lock = threading.Lock()


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_forget_pools_after_fork)


def map_chunks(func, start, stop):
    """``[func(a, b) for consecutive chunks (a, b) of range(start, stop)]``, the chunks computed
    by up to :func:`compute_threads` threads (the calling thread takes the first).

    ``func`` must be safe to run concurrently on disjoint chunks (a compiled kernel writing
    disjoint slices of one output). Chunks hold at least ``MIN_CHUNK`` samples.
    """
    count = max(1, min(compute_threads(), (stop - start) // MIN_CHUNK))
    if count == 1:
        return [func(start, stop)]
    edges = np.linspace(start, stop, count + 1).astype(int).tolist()
    with _pools_lock:
        pool = _pools.get(count - 1)
        if pool is None:
            pool = _pools[count - 1] = ThreadPoolExecutor(count - 1, "hod_dynamics")
    rest = [pool.submit(func, a, b) for a, b in zip(edges[1:-1], edges[2:])]
    return [func(edges[0], edges[1])] + [f.result() for f in rest]


@contextlib.contextmanager
def single_threaded_blas():
    """Run the block with one BLAS thread (threadpoolctl, when installed; else as it is).

    The dense problems of identification and excitation design are small (tens of columns):
    one thread solves them as fast as several on an idle machine, while OpenBLAS's threads on
    a busy one wait for each other at every step (measured: an 840 x 64 SVD 0.9 ms alone,
    120 ms beside other jobs on two cores)."""
    try:
        from threadpoolctl import threadpool_limits
    except ImportError:
        yield
        return
    with threadpool_limits(1, user_api="blas"):
        yield


# moved to hod_dynamics.dispatch (it runs the dispatcher, above this module); kept for one release
__getattr__ = module_getattr(__name__, {
    "prepare_compiled_kernels": "hod_dynamics.dispatch:prepare_compiled_kernels"})
