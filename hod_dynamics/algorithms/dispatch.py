"""The path a call of the recursion takes: the compiled kernel or the numpy reference, blocks of
samples, threads, and one fast path for the common call.

The algorithm is in :mod:`hod_dynamics.algorithms.recursive` (numpy, the reference), compiled in
:mod:`hod_dynamics.kernels.rnea_ir` (generated kernels: fixed bases with revolute and prismatic
joints) and :mod:`hod_dynamics.kernels.rnea_kernels` (numba: screws with a pitch, floating bases), the same
numbers; :mod:`hod_dynamics.kernels.backend` says which one runs. Here the validated samples are handed
to it:

- **the fast path**: one sample (a node's or a controller's call) of a fixed-base model with
  generated kernels, no wrenches, the compiled backend, the caller's arrays kernel arrays of
  the exact shape (``backend.is_kernel_array``): the kernel takes them as they are and tests
  finiteness as it reads; nothing else is computed in Python (:func:`one_jet`,
  :func:`one_state`, :func:`one_gravity`). A NaN the kernel meets is named by the general check.
- **small batches**: one kernel call on the caller's array when it goes to a kernel as it
  is, on the validated copy otherwise.
- **the general path**: any batch, wrenches, floating bases, both backends. The samples run in
  blocks that bound the working memory; with the compiled backend a large block is shared
  among threads (the kernel releases the GIL).
- **high orders before their kernel exists**: the generated kernel of order K - 1 compiles in
  about 0.8 + 0.008 K^2 s (21 s at order 50), while the numpy path computes a sample of order
  50 in 18 ms. Unless numba is asked for by name, a call whose kernel is neither loaded nor
  cached takes the numpy path for as long as the numpy path's time at that order stays below
  the compile's (then the kernel is compiled): what a process computes at a high order costs
  at most about twice the better of the two (:func:`_numpy_first`).
"""

import time
import weakref

import numpy as np

from ..arrays import batch_size
from ..errors import InputError
from ..kernels.backend import (ENV_KEY as _ENV_KEY, KERNEL_GROUPS, MIN_CHUNK, env_value as _env_value,
                               floating_kernels, is_kernel_array, jet_compile_seconds, kernel_array, kernels,
                               listen_for_compiles, map_chunks, partials_kernels, resolve_backend, rnea_kernels)
from ..model.loop_model import LoopModel
from ..model.robot_model import RobotModel, per_model
from ..model.validation import check_jet, check_state, name_non_finite, singular_mass_matrix
from .recursive import rnea_jets, wrench_block, wrench_terms

# samples per block: numpy's working set is about 640 (K+1) n bytes per sample (Ad jets,
# twists, wrenches, temporaries), numba's a few arrays per sample (block only bounds wext)
NUMPY_BLOCK_BYTES = 64 * 2**20
NUMBA_BLOCK = 2**16

_NO_WRENCH = np.zeros((0, 0, 0, 0))  # the kernel reads wext only when wext.shape[1] > 0
_ndarray, _empty = np.ndarray, np.empty  # module-level: one lookup less per use on a fast path
# the status codes of the generated kernels' one-sample callers (hod_dynamics.kernels.rnea_ir,
# hod_dynamics.kernels.partials_ir)
_DONE, _NON_FINITE, _MISFIT, _SINGULAR = 0, 1, 2, 3


# -- the fast path: one sample, generated kernels ----------------------------------------------------
# Each of these calls is about a microsecond, of which the kernel's own call is about half: the
# Python around it is written for the interpreter (module-level names, one dictionary lookup per
# plan, no helper calls on the way to the kernel; measured, each saves a few hundredths of a us).
class _Plan:
    """A model's generated kernels for single samples: its array, its joint count and, filled
    on first use, per torque order ``(shape of the result, address of the jet kernel)`` and
    the addresses of the state and gravity kernels."""

    __slots__ = ("geo", "n", "jet", "state", "gravity")

    def __init__(self, geo, n):
        self.geo, self.n, self.jet, self.state, self.gravity = geo, n, {}, None, None


_PLANS = {}  # id(model) -> _Plan, or False (the model takes the general path); dropped with it
_plans_get = _PLANS.get
# hod_dynamics.kernels.rnea_ir and its one-sample callers, once a plan needed them
_ir = _run_one = _run_state = _run_gravity = None


def _plan(model, backend=None):
    """The one-sample plan of ``model``, False when its calls take the general path (not a
    model, a floating base, a pitched screw, numba missing; and, not remembered, when
    ``backend`` resolves to numpy: nothing compiled for it). Looked up by ``id``: a
    weak-keyed dictionary costs a weak reference per lookup, which a single sample notices;
    the entry goes when the model does (``weakref.finalize`` runs before its id can be
    reused)."""
    plan = _PLANS.get(id(model))
    if plan is not None:
        return plan
    if resolve_backend(backend) != "numba":
        return False
    if type(model) is not RobotModel or model.floating or kernels() is None:
        return False
    global _ir, _run_one, _run_state, _run_gravity
    _ir = rnea_kernels()
    _ir.prepare_one_sample()
    _run_one, _run_state, _run_gravity = _ir.run_one, _ir.run_state, _ir.run_gravity
    geo = _ir.geometry(model)
    plan = False if geo is None else _Plan(geo, model.n_dof)
    _PLANS[id(model)] = plan
    weakref.finalize(model, _PLANS.pop, id(model), None)
    return plan


def one_jet(model, qjet, order, backend):
    """tau^(0..order) (order+1, n) of one sample ``qjet`` (order+3, n) on the fast path (see the
    module docstring), else None (the call takes the general path)."""
    # a batch never makes the plan: loading the one-sample callers costs a batch-only program
    # (analyze-bag) 0.3 s for nothing
    plan = _plans_get(id(model)) or (type(qjet) is _ndarray and qjet.ndim == 2 and _plan(model, backend))
    # the default backend is numba whenever a plan exists and HOD_DYNAMICS_BACKEND is unset
    if not plan or type(qjet) is not _ndarray or type(order) is not int or not (
            backend is None and _env_value(_ENV_KEY) is None or resolve_backend(backend) == "numba"):
        return None
    entry = plan.jet.get(order) or (None if _numpy_first(model, order, backend, 1) else _jet_entry(plan, order))
    if entry is None:
        return None
    out = _empty(entry[0])
    try:  # numba's dispatch tests the array types (it compiles no other variant)
        status = _run_one(entry[1], plan.geo, qjet, out)
    except TypeError:
        return None
    if status == _DONE:
        return out
    if status == _NON_FINITE:
        _name_non_finite(model, qjet, order + 3)
    return None  # another shape: the general path names the fault


def _jet_entry(plan, order):
    """``(shape of the result, kernel address)`` of torque ``order`` for the plan, the kernel
    compiled on first use; None for a negative order (the general path refuses it)."""
    if order < 0:
        return None
    entry = plan.jet[order] = ((order + 1, plan.n), _ir.kernel_address(order + 1, 1))
    return entry


def one_state(model, q, qd, qdd, backend):
    """Inverse dynamics tau (n,) of one state q, qd, qdd (n,) on the fast path, else None (the
    call takes the general path: batches, other inputs). Only q's type and shape are tested
    here: numba's dispatch refuses anything but a kernel array for qd and qdd (TypeError), and
    the caller tests the lengths."""
    plan = _plans_get(id(model)) or _plan(model, backend)
    if not plan or type(q) is not _ndarray or q.ndim != 1 or not (
            backend is None and _env_value(_ENV_KEY) is None or resolve_backend(backend) == "numba"):
        return None
    out = _empty(plan.n)
    try:  # numba's dispatch tests the array types (it compiles no other variant)
        status = _run_state(plan.state or _address(plan, False), plan.geo, q, qd, qdd, out)
    except TypeError:
        return None
    if status == _DONE:
        return out
    if status == _NON_FINITE:
        check_state(model, q=q, qd=qd, qdd=qdd)  # names the NaN or infinity (q first)
    return None


def one_gravity(model, q):
    """The generalised gravity (n,) at one q (n,) on the fast path (its kernel reads q only),
    else None (the general path)."""
    plan = _plans_get(id(model)) or _plan(model, None)
    if not plan or type(q) is not _ndarray or q.ndim != 1 or _env_value(_ENV_KEY) is not None \
            and resolve_backend(None) != "numba":
        return None
    out = _empty(plan.n)
    try:
        status = _run_gravity(plan.gravity or _address(plan, True), plan.geo, q, out)
    except TypeError:
        return None
    if status == _DONE:
        return out
    if status == _NON_FINITE:
        check_state(model, q=q)  # names the NaN or infinity
    return None


def _address(plan, gravity):
    """The plan's one-sample kernel of the state (or the gravity), compiled on first use."""
    mode = "gravity" if gravity else "state"
    address = _ir.kernel_address(1, 1, False, mode)
    setattr(plan, mode, address)
    return address


# -- the world-frame kernels (mass matrix, forward dynamics, partials) -------------------------------
class _WorldPlan:
    """A fixed-base model packed for the world-frame kernels (:mod:`hod_dynamics.kernels.partials_ir`)
    and, per kernel, its one-sample caller and address (filled on first use)."""

    __slots__ = ("model", "n", "callers")

    def __init__(self, model, n):
        self.model, self.n, self.callers = model, n, {}


_WORLD = {}  # id(model) -> _WorldPlan, or False; dropped with the model (see _plan)


def world_plan(model):
    """The :class:`_WorldPlan` of ``model``, False for what the world-frame kernels do not
    take here (not a model, a floating base) or when numba is missing."""
    plan = _WORLD.get(id(model))
    if plan is not None:
        return plan
    if type(model) is not RobotModel or model.floating or kernels() is None:
        return False
    plan = _WorldPlan(partials_kernels().model_arrays(model), model.n_dof)
    _WORLD[id(model)] = plan
    weakref.finalize(model, _WORLD.pop, id(model), None)
    return plan


# the one-sample callers of the world-frame kernels, the shape of their result (n joints) and
# the names of their inputs (for the error that names a NaN)
_ONE_SAMPLE = {"crba": ("run_mass", lambda n: (n, n), ("q",)),
               "forward_dynamics": ("run_forward", lambda n: (n,), ("q", "qd", "tau")),
               "first_partials": ("run_first", lambda n: (3, n, n), ("q", "qd", "qdd"))}


def one_world(model, which, inputs, backend=None):
    """The result of the world-frame kernel ``which`` ("crba", "forward_dynamics",
    "first_partials") on one sample, ``inputs`` the caller's arrays (n,) as they are, in a new
    array; None when the call takes the general path (the numpy backend, a floating model,
    arrays the kernel does not take as they are). Raises the InputError naming a NaN or an
    infinity, or that of a singular mass matrix."""
    plan = _WORLD.get(id(model)) or (resolve_backend(backend) == "numba" and world_plan(model))
    if not plan or type(inputs[0]) is not _ndarray or not (
            backend is None and _env_value(_ENV_KEY) is None or resolve_backend(backend) == "numba"):
        return None
    entry = plan.callers.get(which) or _world_entry(plan, which)
    out = _empty(entry[2])
    try:  # numba's dispatch tests the array types (it compiles no other variant)
        status = entry[0](entry[1], plan.model, *inputs, out)
    except TypeError:
        return None
    if status == _DONE:
        return out
    if status == _NON_FINITE:
        name_non_finite(model, **dict(zip(entry[3], inputs)))
    if status == _SINGULAR:
        singular_mass_matrix(model)
    return None  # arrays of other shapes: the general path names the fault


def _world_entry(plan, which):
    """``(caller, kernel address, shape of the result, names of the inputs)`` of the world-frame
    kernel ``which`` for the plan, compiled (or loaded) on first use."""
    k = partials_kernels()
    name, shape, names = _ONE_SAMPLE[which]
    caller = getattr(k, name)
    k.prepare(caller)
    entry = plan.callers[which] = (caller, k.kernel_address(which), shape(plan.n), names)
    return entry


def inverse_dynamics_fixed(model, q, qd, qdd, wrenches=None, backend=None):
    """tau (..., n) of a fixed-base model for q, qd, qdd (..., n) broadcast together, or the
    generalised gravity g(q) when ``qd`` is None (``qdd`` ignored). Validates its input. The
    generated "state" and "gravity" kernels take the arrays as they are (no jet is stacked)
    when they can run; otherwise the recursion on the jet (q, qd, qdd)."""
    compiled = resolve_backend(backend) == "numba"
    gravity = qd is None
    n = model.n_dof if isinstance(model, RobotModel) else 0
    if gravity:  # the result, and the stacked jet on the general path
        (q,) = check_state(model, q=q, finite=not compiled, what="gravity_torques", result=4 * n)
        qd = qdd = np.zeros_like(q)
    else:
        q, qd, qdd = check_state(model, q=q, qd=qd, qdd=qdd, finite=not compiled,
                                 what="inverse_dynamics", result=4 * n)
    plan = _plan(model, backend) if compiled and not wrenches else False
    if not plan:
        jet = np.stack([q, qd, qdd], axis=-2)
        return time_derivatives_recursive(model, jet, 0, wrenches, backend)[..., 0, :]
    batch, n = q.shape[:-1], model.n_dof
    B = batch_size(batch)
    flat = [kernel_array(a.reshape(B, n)) for a in ((q, q, q) if gravity else (q, qd, qdd))]
    out = np.empty((B, n))

    def chunk(a, b):
        return _ir.state(plan.geo, flat[0][a:b], flat[1][a:b], flat[2][a:b], out[a:b],
                         gravity) == _ir.DONE

    if not all(map_chunks(chunk, 0, B)):
        check_state(model, q=q, qd=qd, qdd=qdd)  # names the NaN or infinity
    return out.reshape(batch + (n,))


def time_derivatives_recursive(model, qjet, order, wrenches=None, backend=None):
    """tau and its time derivatives up to ``order`` by the recursive algorithm, fixed base.

    ``qjet`` (..., order+3, n): q, qd, qdd, ..., q^(order+2). Returns (..., order+1, n).
    ``backend``: "numba", "numpy" or "auto" (None: see :mod:`hod_dynamics.kernels.backend`). Large
    batches run in blocks of samples, so the working memory stays bounded whatever the batch.
    (Floating models: :func:`hod_dynamics.algorithms.floating.time_derivatives_floating`.)
    """
    compiled = resolve_backend(backend) == "numba"
    n, rows = model.n_dof, order + 3
    if compiled and not wrenches and _numpy_first(model, order, backend, np.size(qjet) // max(rows * n, 1)):
        start = time.perf_counter()
        out = time_derivatives_recursive(model, qjet, order, backend="numpy")
        _NUMPY_SPENT[order + 1] = _NUMPY_SPENT.get(order + 1, 0.0) + time.perf_counter() - start
        return out
    if compiled and not wrenches:
        direct = is_kernel_array(qjet) and not model.floating and qjet.shape[-2:] == (rows, n)
        # the common call goes to the kernel as it is (the kernel tests finiteness)
        jet = qjet if direct else check_jet(model, qjet, rows, finite=False, what="time_derivatives",
                                            result=(order + 1) * n)
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
        jet = check_jet(model, qjet, rows, finite=not compiled, what="time_derivatives", result=(order + 1) * n)
        batch = jet.shape[:-2]
    flat = jet.reshape((batch_size(batch),) + jet.shape[-2:])
    out, _ = recursion(model, flat, order + 1, batch, wrenches, compiled,
                       refuse=lambda: _name_non_finite(model, qjet, rows))
    return out.reshape(batch + (order + 1, n))


@per_model
def _rnea_kernel(model):
    """``(kernel, parents, geometry)``: the compiled kernel of a fixed-base model and its packed
    arrays, looked up once per model: the generated kernels of :mod:`hod_dynamics.kernels.rnea_ir`
    when every joint has a joint-aligned frame, else numba's general form
    (:func:`hod_dynamics.kernels.rnea_kernels.rnea_kernel`). Called as ``kernel(parents, geometry, jet, K,
    wext, out)``."""
    kernels()  # numba imports (or the numpy path is taken before this is called)
    generated = rnea_kernels()
    geometry = generated.geometry(model)
    if geometry is not None:
        return generated.rnea, None, geometry
    return kernels().rnea_kernel(model)


_NUMPY_SPENT = {}     # K -> seconds this process spent on the numpy path at order K - 1, not compiling
_READY = set()        # (K, width): generated kernels loaded or in the disk cache


def _numpy_first(model, order, backend, batch):
    """True when this call of time_derivatives (``batch`` samples) takes the numpy path rather
    than compile the generated kernel of its order (see the module docstring): numba not asked
    for by name (``backend`` and HOD_DYNAMICS_BACKEND unset), a fixed-base model with generated
    kernels, an order whose compile takes longer than its group's first use, the kernel neither
    loaded nor cached, and the numpy path's time at that order so far below the compile's."""
    K = order + 1
    if backend is not None or _env_value(_ENV_KEY) is not None or type(order) is not int or order < 0:
        return False
    if jet_compile_seconds(K) <= 1.5 * KERNEL_GROUPS["time_derivatives"][3] or model.floating:
        return False
    generated = rnea_kernels()
    width = generated.width_for(batch)
    if (K, width) in _READY or _NUMPY_SPENT.get(K, 0.0) >= jet_compile_seconds(K):
        return False
    if generated.geometry(model) is None or generated.kernel_cached(K, width):
        _READY.add((K, width))
        return False
    return True


def _name_non_finite(model, qjet, rows):
    """The compiled kernel met a NaN or an infinity: raise the InputError naming it."""
    check_jet(model, qjet, rows)
    raise InputError("qjet holds a non-finite value")  # not reached: check_jet names it


def recursion(model, flat, K, batch, wrenches, compiled, refuse=None, root=None):
    """The recursion on a flat batch, in blocks of samples (and threads for numba).

    ``flat`` (B, K+1, n): the joint jet q^(0..K); ``root`` (floating base): ``(quat (B, 4),
    vbase (B, K+1, 6))`` the unit quaternion of the base and its body twist's derivative rows
    (:mod:`hod_dynamics.algorithms.floating`). Returns ``(tau (B, K, n), base wrench (B, K, 6) or
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
    fk = floating_kernels()
    return fk.rnea_floating(*kernels().kernel_model(model), *fk.kernel_base(model), kernel_array(jet),
                            kernel_array(quat), kernel_array(vbase), K, wext, out, base)


def announce_fit_compiles():
    """Before a first fit of recorded positions: its compile (several seconds after an install)
    is announced like the kernels' (see :func:`~hod_dynamics.kernels.backend.compile_notices`)
    when it compiles (not on the numpy backend)."""
    listen_for_compiles()


def prepare_compiled_kernels(model, order):
    """Compile (or load from numba's disk cache) the compiled kernels that
    :func:`~hod_dynamics.time_derivatives` runs for ``model`` up to torque ``order``, one
    sample and a batch, so that later calls do not wait for numba. Takes seconds on an empty
    cache; meant for a background thread (a node serves from the numpy path meanwhile). A
    mechanism with loops prepares its tree's (its loop layer is numpy). Raises InputError when
    numba is not installed."""
    resolve_backend("numba")
    if isinstance(model, LoopModel):
        model = model.tree
    for batch in (1, 2 * 16):  # the one-sample and the batched paths of the kernel
        time_derivatives_recursive(model, np.zeros((batch, order + 3, model.n_dof)), order,
                                   backend="numba")
