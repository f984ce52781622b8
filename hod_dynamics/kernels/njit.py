"""How every numba function of the package is compiled: with its disk cache where one is
writable, FMA contraction only, without the GIL; without numba's runtime for callers that
allocate nothing; helpers inlined into their callers where that was measured to pay."""

import warnings

import numba

def njit(f, **extra):
    """``numba.njit(cache=True)``, or without the disk cache when no location is writable.

    ``fastmath={"contract"}`` only lets the compiler fuse a * b + c into one FMA instruction
    (one rounding instead of two; about 30 % faster); no reassociation, no finite-math
    assumptions. Results match the numpy path to rounding (~1e-15 relative). ``nogil``: the
    kernels touch no Python object, so other threads run meanwhile (a node keeps streaming
    while a long profile is computed; big batches are split over threads).
    """
    options = dict(error_model="numpy", fastmath={"contract"}, nogil=True, **extra)
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", numba.NumbaWarning)
            return numba.njit(cache=True, **options)(f)
    except RuntimeError:  # "cannot cache function ...: no locator available"
        return numba.njit(cache=False, **options)(f)


def njit_without_nrt(f):
    """:func:`njit` without numba's reference-counted memory (its ``_nrt`` compile option),
    for a caller that allocates nothing: each array argument is then passed as it is, where
    the runtime would first wrap it for reference counting (about 40 ns an array)."""
    return njit(f, _nrt=False)


def inline(f):
    """A helper that numba copies into each caller (``inline="always"``).

    LLVM leaves calls to some helpers as calls, and a call that passes arrays also
    increments and decrements each array's reference count (atomic operations): for a
    helper doing a few dozen flops on one sample that costs more than the arithmetic.
    Measured, not applied everywhere: on 6x6 products of one sample (the partials, when
    numba compiled them) it saved ~20 % at no compile cost; on the lane loops of
    :func:`rnea_lanes` it helps one sample but slows batches by a third and lengthens the
    first compile.
    """
    return numba.njit(inline="always", error_model="numpy", fastmath={"contract"})(f)
