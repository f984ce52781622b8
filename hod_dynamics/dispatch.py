"""The path a call of the recursion takes: the compiled kernel or the numpy reference, blocks of
samples, threads, and one fast path for the common call.

The algorithm is in :mod:`hod_dynamics.recursive` (numpy, the reference) and
:mod:`hod_dynamics._kernels` (compiled, the same numbers); :mod:`hod_dynamics.backend` says which
one runs. Here the validated samples are handed to it:

- **the fast path**: a fixed-base model, no wrenches, the compiled backend and a batch too
  small for threads (a node's or a controller's call, one sample). One kernel call on the
  caller's array when it goes to a kernel as it is (``backend.is_kernel_array``: then only its
  shape is checked in Python, the kernel tests finiteness as it reads), on the validated copy
  otherwise. A NaN the kernel meets is named by the general check.
- **the general path**: any batch, wrenches, floating bases, both backends. The samples run in
  blocks that bound the working memory; with the compiled backend a large block is shared
  among threads (the kernel releases the GIL).
"""

import numpy as np

from .backend import MIN_CHUNK, is_kernel_array, kernel_array, kernels, map_chunks, resolve_backend
from .errors import InputError
from .model import per_model
from .recursive import rnea_jets, wrench_block, wrench_terms
from .validation import batch_size, check_jet

# samples per block: numpy's working set is about 640 (K+1) n bytes per sample (Ad jets,
# twists, wrenches, temporaries), numba's a few arrays per sample (block only bounds wext)
NUMPY_BLOCK_BYTES = 64 * 2**20
NUMBA_BLOCK = 2**16

_NO_WRENCH = np.zeros((0, 0, 0, 0))  # the kernel reads wext only when wext.shape[1] > 0


def time_derivatives_recursive(model, qjet, order, wrenches=None, backend=None):
    """tau and its time derivatives up to ``order`` by the recursive algorithm, fixed base.

    ``qjet`` (..., order+3, n): q, qd, qdd, ..., q^(order+2). Returns (..., order+1, n).
    ``backend``: "numba", "numpy" or "auto" (None: see :mod:`hod_dynamics.backend`). Large
    batches run in blocks of samples, so the working memory stays bounded whatever the batch.
    (Floating models: :func:`hod_dynamics.floating.time_derivatives_floating`.)
    """
    compiled = resolve_backend(backend) == "numba"
    n, rows = model.n_dof, order + 3
    if compiled and not wrenches:
        direct = is_kernel_array(qjet) and not model.floating and qjet.shape[-2:] == (rows, n)
        # the common call goes to the kernel as it is (the kernel tests finiteness)
        jet = qjet if direct else check_jet(model, qjet, rows, finite=False)
        batch = jet.shape[:-2]
        B = batch_size(batch)
        if B < 2 * MIN_CHUNK:  # the fast path: not worth threads, one kernel call
            flat = jet.reshape((B, rows, n))
            if not direct:
                flat = kernel_array(flat)
            out = np.empty(batch + (order + 1, n))
            kernel, parents, geometry = _rnea_kernel(model)
            if not kernel(parents, geometry, flat, order + 1, _NO_WRENCH, out.reshape((B, order + 1, n))):
                _name_non_finite(model, qjet, rows)
            return out
    else:
        jet = check_jet(model, qjet, rows, finite=not compiled)
        batch = jet.shape[:-2]
    flat = jet.reshape((batch_size(batch),) + jet.shape[-2:])
    out, _ = recursion(model, flat, order + 1, batch, wrenches, compiled,
                       refuse=lambda: _name_non_finite(model, qjet, rows))
    return out.reshape(batch + (order + 1, n))


@per_model
def _rnea_kernel(model):
    """``(kernel, parents, geometry)``: the compiled kernel of a fixed-base model and its packed
    arrays, looked up once per model: the generated kernels of :mod:`hod_dynamics._rnea_ir`
    when every joint has a joint-aligned frame, else numba's general form
    (:func:`hod_dynamics._kernels.rnea_kernel`). Called as ``kernel(parents, geometry, jet, K,
    wext, out)``."""
    kernels()  # numba imports (or the numpy path is taken before this is called)
    from . import _rnea_ir

    geometry = _rnea_ir.geometry(model)
    if geometry is not None:
        return _rnea_ir.run, None, geometry
    return kernels().rnea_kernel(model)


def _name_non_finite(model, qjet, rows):
    """The compiled kernel met a NaN or an infinity: raise the InputError naming it."""
    check_jet(model, qjet, rows)
    raise InputError("qjet holds a non-finite value")  # not reached: check_jet names it


def recursion(model, flat, K, batch, wrenches, compiled, refuse=None, root=None):
    """The recursion on a flat batch, in blocks of samples (and threads for numba).

    ``flat`` (B, K+1, n): the joint jet q^(0..K); ``root`` (floating base): ``(quat (B, 4),
    vbase (B, K+1, 6))`` the unit quaternion of the base and its body twist's derivative rows
    (:mod:`hod_dynamics.floating`). Returns ``(tau (B, K, n), base wrench (B, K, 6) or
    None)``, derivatives (not coefficients). ``refuse()`` raises the InputError naming a NaN
    the compiled kernel met.
    """
    n = model.n_dof
    B = flat.shape[0]
    out = np.empty((B, K, n))
    terms = wrench_terms(model, wrenches, batch, K) if wrenches else []
    base = None if root is None else np.empty((B, K, 6))
    if compiled:
        run, block = _rnea_compiled, NUMBA_BLOCK
    else:
        run, block = rnea_jets, max(1, NUMPY_BLOCK_BYTES // ((K + 1) * max(n, 1) * 640))

    def chunk(a, b):
        wext = wrench_block(model, terms, a, b, K) if terms else None
        if root is None:
            return run(model, flat[a:b], K, wext, out[a:b])
        return run(model, flat[a:b], K, wext, out[a:b], (root[0][a:b], root[1][a:b], base[a:b]))

    for start in range(0, B, block):
        stop = min(start + block, B)
        # the compiled kernel releases the GIL: a large block is shared among threads
        done = map_chunks(chunk, start, stop) if compiled else [chunk(start, stop)]
        if not all(done):
            if refuse is not None:
                refuse()  # names the NaN or infinity the kernel met
            raise InputError("qjet holds a non-finite value")  # not reached after refuse
    return out, base


def _rnea_compiled(model, jet, K, wext, out, root=None):
    """The compiled path on a block: jet (B, K+2, n) -> tau jet written into out (B, K, n),
    C-contiguous (the base wrench jet into root[2] for a floating base). Returns False (out
    unfinished) when the jet holds a NaN or an infinity."""
    wext = _NO_WRENCH if wext is None else kernel_array(wext)
    if root is None:
        kernel, parents, geometry = _rnea_kernel(model)
        return kernel(parents, geometry, kernel_array(jet), K, wext, out)
    quat, vbase, base = root
    k = kernels()
    return k.rnea_floating(*k.kernel_model(model), *k.kernel_base(model), kernel_array(jet),
                           kernel_array(quat), kernel_array(vbase), K, wext, out, base)


def prepare_compiled_kernels(model, order):
    """Compile (or load from numba's disk cache) the compiled kernels that
    :func:`~hod_dynamics.time_derivatives` runs for ``model`` up to torque ``order``, one
    sample and a batch, so that later calls do not wait for numba. Takes seconds on an empty
    cache; meant for a background thread (a node serves from the numpy path meanwhile).
    Raises InputError when numba is not installed."""
    resolve_backend("numba")
    for batch in (1, 2 * 16):  # the one-sample and the batched paths of the kernel
        time_derivatives_recursive(model, np.zeros((batch, order + 3, model.n_dof)), order,
                                   backend="numba")
