"""Choice of the compute backend for the recursive algorithm: compiled (numba) or numpy.

``"numba"`` runs :mod:`hod_dynamics._kernels` (needs the optional ``numba`` package:
``pip install "hod_dynamics[fast]"``); ``"numpy"`` is the vectorised pure-numpy path. Both give
the same numbers (to rounding). The default ``"auto"`` takes numba when it imports, numpy
otherwise; the environment variable ``HOD_DYNAMICS_BACKEND`` (``auto``, ``numba`` or ``numpy``)
overrides the default, a ``backend=`` keyword overrides both.

numba compiles the kernel on its first use in a fresh install (a few seconds) and caches the
machine code on disk (``__pycache__`` beside the module, or numba's user-wide cache when the
install is read-only), so later processes load it in well under a second.
"""

import os
from functools import lru_cache

import numpy as np

from .errors import InputError

BACKENDS = ("auto", "numba", "numpy")
ENV_VAR = "HOD_DYNAMICS_BACKEND"


@lru_cache(maxsize=1)
def kernels():
    """The compiled kernel module, or None when numba is not importable."""
    try:
        from . import _kernels
    except ImportError:
        return None
    return _kernels


@lru_cache(maxsize=1)
def partials_kernels():
    """The compiled partial-derivative kernels (:mod:`hod_dynamics._partials_kernels`); only
    call it when :func:`resolve_backend` chose numba."""
    from . import _partials_kernels

    return _partials_kernels


def kernel_array(a):
    """``a`` as a C-contiguous, writable float array, copied only when it is not one already.

    numba compiles one machine-code variant per argument type, and a read-only array (a
    broadcast view, a memory map) is a different type from a writable one: passing kernels
    writable arrays keeps them on the variant compiled (or cached) for the usual case.
    """
    if a.flags.c_contiguous and a.flags.writeable and a.dtype == float:
        return a
    return np.array(a, dtype=float, order="C")


def numba_available():
    """True when the numba backend can run."""
    return kernels() is not None


def resolve_backend(backend=None):
    """``"numba"`` or ``"numpy"`` for a requested backend (None: the env var, else auto).

    Raises InputError for an unknown name, or for ``"numba"`` when numba is not installed.
    """
    source = "backend"
    if backend is None:
        backend, source = os.environ.get(ENV_VAR, "auto").strip().lower() or "auto", ENV_VAR
    if backend not in BACKENDS:
        raise InputError(f"{source} must be one of {BACKENDS}, got {backend!r}")
    if backend == "auto":
        return "numba" if numba_available() else "numpy"
    if backend == "numba" and not numba_available():
        raise InputError(f"{source}='numba' needs the numba package "
                         "(pip install \"hod_dynamics[fast]\")")
    return backend
