"""Choice of the compute backend for the recursive algorithm: compiled (numba) or numpy.

``"numba"`` runs :mod:`hod_dynamics._kernels` (numba is a dependency of the package);
``"numpy"`` is the vectorised pure-numpy path, the reference. Both give the same numbers (to
rounding). The default ``"auto"`` takes numba when it imports and falls back to numpy otherwise,
with one warning saying so (:class:`NumbaUnavailableWarning`); the environment variable
``HOD_DYNAMICS_BACKEND`` (``auto``, ``numba`` or ``numpy``) overrides the default, a
``backend=`` keyword overrides both.

numba compiles the kernels on their first use after an install (5 to 30 s each) and caches the
machine code on disk (``__pycache__`` beside the module, or numba's user-wide cache when the
install is read-only), so later processes load it in well under a second. Just before it
compiles one, the library says so, once per kernel and process: a
:class:`~hod_dynamics.errors.KernelCompileWarning` naming the kernel, why and about how long
(a listener on numba's ``numba:compile`` event, which numba broadcasts only when the code is
not in its cache; it costs nothing on later calls). A program that reports in its own way
(the command line, a node's log) routes the notices with :func:`compile_notices`.
:func:`kernels_cached` and :func:`compile_notice` tell beforehand whether a first use will
compile.

The compiled kernels release the GIL; large batches are split into chunks computed by
``HOD_DYNAMICS_THREADS`` threads (default: the CPUs this process may run on; 1 disables it).
"""

import contextlib
import importlib.util
import os
import sys
import threading
import warnings
from contextlib import contextmanager
from functools import lru_cache

import numpy as np

from .deprecation import module_getattr
from .errors import InputError, KernelCompileWarning, NumbaUnavailableWarning

BACKENDS = ("auto", "numba", "numpy")
ENV_VAR = "HOD_DYNAMICS_BACKEND"
THREADS_ENV_VAR = "HOD_DYNAMICS_THREADS"
MIN_CHUNK = 1024  # samples: below this a thread hand-off costs more than it saves


COMPILE_NOTICE = "compiling kernels, first use after install"  # how every notice starts


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
    _listen_for_compiles()
    return _kernels


# The compiled entry points, grouped by the public functions they serve: (module, names),
# what the notice names, and about how long numba takes to compile them (CPU seconds on a
# 2-core x86-64 computer). The helpers they call are compiled into them; the first name of a
# group is the one a first call compiles (kernels_cached looks at it).
KERNEL_GROUPS = {
    "time_derivatives": ("_kernels", ("rnea_jets", "rnea_jets_general"),
                         "time_derivatives and inverse_dynamics", 15),
    "floating": ("_kernels", ("rnea_floating",),
                 "time_derivatives and inverse_dynamics of floating-base models", 15),
    "id_partials": ("_partials_kernels", ("first_partials",),
                    "id_partials (also used by gravity_torques, coriolis_matrix, forward_dynamics)", 5),
    "id_second_partials": ("_partials_kernels", ("second_partials_one", "second_partials"),
                           "id_second_partials", 30),
    "regressor": ("_regressor_kernels", ("regressor_jets",),
                  "the regressors (regressor, regressor_time_derivatives) of identification", 5),
}
_ALIASES = {"rnea": ("time_derivatives",), "partials": ("id_partials", "id_second_partials")}
_GROUP_OF = {(f"{__package__}.{module}", name): group
             for group, (module, names, _, _) in KERNEL_GROUPS.items() for name in names}


def _groups(which):
    """The kernel groups ``which`` names (None: all); InputError for an unknown name."""
    if which is None:
        return tuple(KERNEL_GROUPS)
    if which in _ALIASES:
        return _ALIASES[which]
    if which not in KERNEL_GROUPS:
        raise InputError(f"which must be one of {sorted(KERNEL_GROUPS)} or None, got {which!r}")
    return (which,)


def kernels_cached(which=None):
    """True when numba's disk cache holds the machine code of the kernels ``which`` (a key of
    :data:`KERNEL_GROUPS`: ``"time_derivatives"``, ``"floating"``, ``"id_partials"``,
    ``"id_second_partials"``, ``"regressor"``; None: all of them), so that their first use in this process loads
    it rather than compiling; False when a first use will compile; None when numba cannot run
    or its cache cannot be inspected."""
    groups = _groups(which)
    if kernels() is None:
        return None
    try:  # numba's cache index: empty when missing, stale (source rewritten) or of another numba
        return all(bool(_dispatcher(group)._cache._cache_file._load_index()) for group in groups)
    except Exception:  # a private layout of numba's that changed, or no disk cache: cannot tell
        return None


def _dispatcher(group):
    """The entry point a first use of the kernel group compiles."""
    module, names, _, _ = KERNEL_GROUPS[group]
    loader = {"_kernels": kernels, "_partials_kernels": partials_kernels,
              "_regressor_kernels": regressor_kernels}[module]
    return getattr(loader(), names[0])


def compile_notice(which=None):
    """The line that announces the compile of the kernels ``which`` (see :func:`kernels_cached`;
    None: every kernel not in numba's cache) when a first use in this process will compile
    them, else None. The library issues it by itself just before compiling (see
    :func:`compile_notices`); this tells beforehand."""
    if resolve_backend() != "numba":
        return None
    pending = [group for group in _groups(which) if group not in _announced and kernels_cached(group) is False]
    if not pending:
        return None
    return _notice(pending, cached=True)


def _notice(groups, cached):
    """The text of a compile notice for the kernel groups ``groups``."""
    parts = "; ".join(f"{KERNEL_GROUPS[g][2]}, about {KERNEL_GROUPS[g][3]} s" for g in groups)
    later = ("numba caches the machine code: later runs load it in under a second" if cached else
             "no writable cache location: every new process compiles them again")
    return (f"{COMPILE_NOTICE}: {parts} (numba turns them into machine code, 10 to 100 times "
            f"faster than the numpy path; {later})")


_announced = set()  # kernel groups whose compile was announced in this process
_notice_state = threading.local()  # .depth: nesting of numba compiles; .handler: see compile_notices


@contextmanager
def compile_notices(handler):
    """In this thread, send the compile notices to ``handler(text)`` instead of issuing a
    :class:`~hod_dynamics.errors.KernelCompileWarning` (the command line prints them, a node
    logs them). Restores the previous routing on exit."""
    previous = getattr(_notice_state, "handler", None)
    _notice_state.handler = handler
    try:
        yield
    finally:
        _notice_state.handler = previous


def _announce(dispatcher):
    """Issue the notice of the kernel group of ``dispatcher``, once per process."""
    group = _GROUP_OF.get((dispatcher.py_func.__module__, dispatcher.py_func.__name__))
    if group is None or group in _announced:
        return
    _announced.add(group)
    from numba.core.caching import NullCache

    text = _notice([group], cached=not isinstance(dispatcher._cache, NullCache))
    handler = getattr(_notice_state, "handler", None)
    if handler is not None:
        handler(text)
        return
    frame = _caller_frame()
    try:
        if frame is None:
            warnings.warn(text, KernelCompileWarning, stacklevel=2)
        else:  # at the user's line (warn_explicit: it may be on another thread's stack)
            warnings.warn_explicit(text, KernelCompileWarning, frame.f_code.co_filename, frame.f_lineno,
                                   module=frame.f_globals.get("__name__", "sys"),
                                   registry=frame.f_globals.setdefault("__warningregistry__", {}))
    except Warning:  # made an error by a filter: a notice is no fault, the call goes on
        pass


_INTERNAL = None  # files of the frames between a user's call and the notice


def _caller_frame():
    """The user's frame whose call compiles: the first frame outside this package, numba and
    the standard library's thread and context helpers on this thread's stack; when a worker
    thread of a large batch compiles (its stack holds no user frame), on the main thread's
    stack, where the user's call waits. None when there is none."""
    global _INTERNAL
    if _INTERNAL is None:
        import concurrent.futures
        import contextlib

        import numba

        _INTERNAL = (os.path.dirname(os.path.abspath(__file__)) + os.sep,
                     os.path.dirname(os.path.abspath(numba.__file__)) + os.sep,
                     os.path.dirname(os.path.abspath(concurrent.futures.__file__)) + os.sep,
                     os.path.abspath(contextlib.__file__), os.path.abspath(threading.__file__))
    stacks = [sys._getframe(1)]
    if threading.current_thread() is not threading.main_thread():
        stacks.append(sys._current_frames().get(threading.main_thread().ident))
    for frame in stacks:
        while frame is not None and os.path.abspath(frame.f_code.co_filename).startswith(_INTERNAL):
            frame = frame.f_back
        if frame is not None:
            return frame
    return None


_listening = []


def _listen_for_compiles():
    """Register (once) the listener that announces compiles; numba broadcasts ``numba:compile``
    only after missing its cache, just before compiling."""
    if _listening:
        return
    from numba.core import event

    class _CompileListener(event.Listener):
        def on_start(self, evt):
            depth = getattr(_notice_state, "depth", 0)
            _notice_state.depth = depth + 1
            if depth == 0:  # a kernel's own compile, not that of a helper it calls
                try:
                    _announce(evt.data["dispatcher"])
                except BaseException:  # the compile does not start: no on_end will come
                    _notice_state.depth = depth
                    raise

        def on_end(self, evt):
            _notice_state.depth = max(0, getattr(_notice_state, "depth", 1) - 1)

    event.register("numba:compile", _CompileListener())
    _listening.append(True)


@lru_cache(maxsize=1)
def partials_kernels():
    """The compiled partial-derivative kernels (:mod:`hod_dynamics._partials_kernels`); only
    call it when :func:`resolve_backend` chose numba."""
    from . import _partials_kernels

    _listen_for_compiles()
    return _partials_kernels


@lru_cache(maxsize=1)
def regressor_kernels():
    """The compiled regressor kernel (:mod:`hod_dynamics._regressor_kernels`); only call it
    when :func:`resolve_backend` chose numba."""
    from . import _regressor_kernels

    _listen_for_compiles()
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
        raw = _environ_get(ENV_VAR)
        try:
            return _from_env[raw]
        except KeyError:  # a value not seen yet (or unhashable): resolved, checked, kept
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
        raise InputError(f"{ENV_VAR}='numba' needs the numba package (pip install numba)")
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
            # imported here, for batches large enough to share: concurrent.futures brings
            # logging and queue, milliseconds of every `import hod_dynamics`
            from concurrent.futures import ThreadPoolExecutor

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
