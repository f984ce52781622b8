"""Second-order partial derivatives of inverse dynamics (S. Singh, R. P. Russell, P. M. Wensing,
"Analytical second-order partial derivatives of rigid-body inverse dynamics", IEEE/RSJ IROS 2022),
and their directional forms.

The numpy path takes the forward-mode (tangent) derivatives of the first-order assembly of
:mod:`hod_dynamics.algorithms.partials`: the tangents of ``S, V, A, I`` along any direction follow the same
recursions (``dS_l = ad(U_l) S_l`` with ``U_l = sum_{k<=l} dq_k S_k``), and the product rule
carries them through. A direction can be a unit vector per joint (full tensors, O(n^3)) or one
given vector (directional derivatives, O(n^2): :func:`id_partials_directional`,
:func:`id_second_order_rate`).

The compiled path runs the backward pass of the paper, O(n d^2) per sample for a tree of depth
d (:mod:`hod_dynamics.kernels.partials_ir`, which also packs the model arrays it reads), one
sample per kernel call. Its one fast path (:meth:`_SecondPlan.one`) hands a single sample's
arrays to the kernel as they are; everything else takes the general path
(:func:`_second_partials_into`), which validates first.
"""

import threading
from types import SimpleNamespace

import numpy as np

from ..arrays import batch_size, check_batch_shape, check_out
from ..errors import InputError
from ..kernels.backend import partials_kernels, resolve_backend
from ..model.robot_model import per_model
from ..model.validation import check_model, fixed_base_only, name_non_finite
from .world_frame import (ad_matrix, adstar_matrix, adstar_times, bar, composites, down, flat_states, inputs,
                          mv, parent_of, rate_basis, select, world_state)


# -- products of primal (B, n, ...) and tangent (B, n, K, ...) stacks; None is zero ---------------
def _add(*terms):
    terms = [t for t in terms if t is not None]
    return sum(terms[1:], terms[0]) if terms else None


def _sb(M, X):
    """Per-body matrices M (B, n, 6, 6) applied to tangents X (B, n, K, 6)."""
    return None if X is None else X @ np.swapaxes(M, -1, -2)


def _bs(Mb, x):
    """Tangent matrices Mb (B, n, K, 6, 6) applied to per-body vectors x (B, n, 6)."""
    if Mb is None:
        return None
    B, n, K = Mb.shape[:3]
    return (Mb.reshape(B, n, K * 6, 6) @ x[..., None]).reshape(B, n, K, 6)


def _outer_bs(a, b):
    """``[b, i, j, k] = a[b, i, k] . b[b, j]`` for a (B, n, K, 6), b (B, n, 6)."""
    if a is None:
        return None
    B, n, K = a.shape[:3]
    return np.swapaxes((a.reshape(B, n * K, 6) @ np.swapaxes(b, 1, 2)).reshape(B, n, K, n), 2, 3)


def _outer_sb(a, b):
    """``[b, i, j, k] = a[b, i] . b[b, j, k]`` for a (B, n, 6), b (B, n, K, 6)."""
    if b is None:
        return None
    B, n, K = b.shape[:3]
    return (a @ np.swapaxes(b.reshape(B, n * K, 6), 1, 2)).reshape(B, n, n, K)


# -- tangents -------------------------------------------------------------------------------------
def _tangent(st, dq=None, dqd=None, dqdd=None):
    """Forward-mode derivatives of the state along K directions.

    ``dq, dqd, dqdd`` (B, K, n) or None (zero). Returns a namespace of tangents of S, Sd, alpha
    and of the composites, shape (B, n, K, ...) (body axis first); None marks a zero tangent.
    """
    model = st.model
    e_q, e_v, e_a = (None if d is None else np.swapaxes(d, 1, 2)[..., None]
                     for d in (dq, dqd, dqdd))
    S3, Sd3 = st.S[:, :, None], st.Sd[:, :, None]
    qd, qdd = st.qd[:, :, None, None], st.qdd[:, :, None, None]
    minus_adS = -ad_matrix(st.S)
    adVp = ad_matrix(st.Vp)
    dS = dI = None
    if e_q is not None:
        U = down(model, e_q * S3)  # sum_{k<=l} dq_k S_k: the twist that moves body l
        dS = _sb(minus_adS, U)
        dI = (U @ rate_basis(st.I)).reshape(U.shape + (6,))
    dV = down(model, _add(None if dS is None else dS * qd, None if e_v is None else e_v * S3))
    dVp = parent_of(model, dV, np.zeros(6))
    dSd = _add(_sb(minus_adS, dVp), _sb(adVp, dS))
    dA = down(model, _add(None if dS is None else dS * qdd, dSd * qd,
                           None if e_v is None else e_v * Sd3, None if e_a is None else e_a * S3))
    dAp = parent_of(model, dA, np.zeros(6))
    dalpha = _add(_sb(minus_adS, dAp), _sb(ad_matrix(st.Ap), dS),
                  _sb(-ad_matrix(st.Sd), dVp), _sb(adVp, dSd))
    adstarV = adstar_matrix(st.V)
    dh = _add(_sb(st.I, dV), _bs(dI, st.V))
    df = _add(_sb(st.I, dA), _bs(dI, st.A), _sb(bar(st.h), dV), _sb(adstarV, dh))
    dId = (dV @ rate_basis(st.I)).reshape(dV.shape + (6,))
    if dI is not None:
        N = adstarV[:, :, None] @ dI
        dId = dId + N + np.swapaxes(N, -1, -2)
    out = SimpleNamespace(S=dS, Sd=dSd, alpha=dalpha)
    composites(st, out, dI, dId, dh, df)
    return out


def _tangent_inputs(st, dst, wrt):
    """The tangents (dx, dy, dz) of the inputs of the assembly for ``wrt`` along ``dst``."""
    if wrt == "q":
        return dst.alpha, dst.Sd, _add(_sb(bar(st.F), dst.S), _sb(adstar_matrix(st.S), dst.F))
    if wrt == "qd":
        return 2.0 * dst.Sd, dst.S, None
    return dst.S, None, None


def _assemble_tangent(st, dst, wrt):
    """Derivative of d tau / d wrt along the K directions of ``dst``: (B, n, n, K)."""
    x, y, z = inputs(st, wrt)
    dx, dy, dz = _tangent_inputs(st, dst, wrt)
    S, Ic, Bc, hc = st.S, st.Ic, st.Bc, st.hc
    dP = _add(_bs(dst.Ic, S), _sb(Ic, dst.S))
    low = _add(_outer_bs(dP, x), _outer_sb(mv(Ic, S), dx))
    w = mv(Ic, x)
    dw = _add(_bs(dst.Ic, x), _sb(Ic, dx))
    if y is not None:
        bar_hc = bar(hc)
        Q = mv(Bc, S) - adstar_times(S, hc)
        dQ = _add(_bs(dst.Bc, S), _sb(Bc - bar_hc, dst.S), _sb(-adstar_matrix(S), dst.hc))
        low = _add(low, _outer_bs(dQ, y), _outer_sb(Q, dy))
        w = w + mv(Bc, y) + adstar_times(y, hc)
        dw = _add(dw, _bs(dst.Bc, y), _sb(Bc + bar_hc, dy), _sb(adstar_matrix(y), dst.hc))
    if z is not None:
        w, dw = w + z, _add(dw, dz)
    high = _add(_outer_bs(dst.S, w), _outer_sb(S, dw))
    K = dst.Sd.shape[2]
    zero = np.zeros(S.shape[:2] + S.shape[1:2] + (K,))
    return select(st, zero if low is None else low, zero if high is None else high)



# -- public API -----------------------------------------------------------------------------------
def id_second_partials(model, q, qd, qdd, *, backend=None, out=None):
    """Second-order partial derivatives of inverse dynamics (Singh, Russell and Wensing 2022).

    Returns ``(d2tau_dqdq, d2tau_dqddqd, d2tau_dqdqd, dM_dq)``, each (..., n, n, n), indexed
    ``[..., i, j, k]`` (Pinocchio's order):

    - ``d2tau_dqdq[i, j, k] = d^2 tau_i / dq_j dq_k`` (symmetric in j, k),
    - ``d2tau_dqddqd[i, j, k] = d^2 tau_i / dqd_j dqd_k`` (symmetric in j, k; it depends on
      q only),
    - ``d2tau_dqdqd[i, j, k] = d^2 tau_i / dq_j dqd_k``,
    - ``dM_dq[i, j, k] = d M_ij / dq_k`` (symmetric in i, j), i.e. ``d^2 tau_i / dqdd_j dq_k``.

    The compiled backend runs the backward pass of Singh, Russell and Wensing (2022), O(n d^2)
    per sample for a tree of depth d; the numpy path differentiates the first-order partials
    along every direction, O(n^3) time and memory per sample (large batches are processed in
    blocks that keep the temporaries near 200 MB). Use :func:`id_partials_directional` for
    contractions. ``backend``: "numba", "numpy" or "auto" (None: see
    :mod:`hod_dynamics.kernels.backend`).

    ``out``, so that a loop (a controller, an optimiser) allocates nothing per call:

    - four arrays (float64, C-contiguous, writable, shape (..., n, n, n) of the broadcast
      batch) that receive the tensors in that order and are returned. They are overwritten
      entirely (whatever they held, NaN included).
    - a :class:`SecondPartialsData` of the model (like Pinocchio's ``Data``): its tensors are
      returned, read-only, and overwritten by the next call. It is faster on branched robots,
      whose tensors are mostly structurally zero (entries of joints on different branches):
      those zeros are written once, when it is made, and never again.
    """
    compiled = resolve_backend(backend) == "numba"
    if compiled:
        plan = _second_plan(check_model(model))
        if plan is not None:  # one sample, the common call (else the general path below)
            if out is None:
                n = plan.n
                T = np.empty((4, n, n, n))
                T = T[0], T[1], T[2], T[3]
                if plan.one(q, qd, qdd, T, True):
                    return T
            elif type(out) is tuple and len(out) == 4 and plan.one(q, qd, qdd, out, True):
                return out
    if type(out) is SecondPartialsData:
        return out._compute(model, q, qd, qdd, compiled)
    return _second_partials_into(model, q, qd, qdd, compiled, out, True)


def _second_partials_into(model, q, qd, qdd, compiled, out, zero, batch_shape=None):
    """id_second_partials on the general path: validated, broadcast inputs, any batch, both
    backends. ``out``: the caller's four arrays (checked here, before anything is written),
    or None (allocated), or with ``batch_shape`` given the own arrays of a
    :class:`SecondPartialsData` of that batch shape. ``zero`` False: the structurally zero
    entries are not written (the data's arrays keep them zero)."""
    # into the caller's arrays every value is checked first, so that a NaN in a later sample
    # leaves them as they were; a fresh result is checked by the kernel as it goes
    batch, flat = flat_states(model, "id_second_partials", finite=not compiled or out is not None,
                        result=4 * model.n_dof ** 3 if out is None else 1, q=q, qd=qd, qdd=qdd)
    n = model.n_dof
    shape = batch + (n, n, n)
    if batch_shape is not None:
        if batch != batch_shape:
            raise InputError(f"out is a SecondPartialsData of batch shape {batch_shape}, the "
                             f"inputs broadcast to batch shape {batch}")
    elif out is not None:
        out = check_out(out, shape, _SECOND_PARTIALS, "a SecondPartialsData")
        # an input that shares memory with the caller's arrays (a view of one) would be
        # overwritten by the earlier samples before the later ones read it: read from a copy
        # (a data's own arrays reach no input: flat_states copies their read-only views)
        flat = [a.copy() if any(np.may_share_memory(a, t) for t in out) else a for a in flat]
    else:
        T = np.empty((4,) + shape)
        out = T[0], T[1], T[2], T[3]
    tensors = [np.asarray(t).reshape((batch_size(batch), n, n, n)) for t in out]  # views
    if compiled:
        plan = _second_plan(model)
        if plan.kernels.seconds(plan.model, *flat, tensors, zero) != 0:
            name_non_finite(model, q=q, qd=qd, qdd=qdd)
        return out
    block = max(1, _SECOND_ORDER_BLOCK // max(n, 1) ** 3)
    for s in range(0, len(flat[0]), block):
        for t, part in zip(tensors, _second_partials(model, *(a[s:s + block] for a in flat))):
            t[s:s + block] = part
    return out


class SecondPartialsData:
    """The four tensors of :func:`id_second_partials` for one model, kept between calls, like
    Pinocchio's ``Data``::

        data = hd.SecondPartialsData(model)
        d2tau_dqdq, d2tau_dqddqd, d2tau_dqdqd, dM_dq = hd.id_second_partials(
            model, q, qd, qdd, out=data)

    Each call writes the tensors into ``data`` and returns them: read-only arrays (n, n, n)
    (``batch_shape + (n, n, n)`` for a batch), the same arrays every time, overwritten by the
    next call (copy what you keep). They are also ``data.tensors``. Nothing is allocated per
    call. The entries that are structurally zero (joints on different branches, and a few on
    one path) are written once, here, and never again: most of the n^3 entries on a branched
    robot (93 % on TALOS), whose rewriting would cost as much as computing the others. (The
    numpy backend computes them, to rounding; the next compiled call then clears them once.)

    One per thread: the compiled kernel runs without the GIL, and two threads sharing a data
    would write into it at once. ``model``: a fixed-base :class:`~hod_dynamics.RobotModel`;
    ``batch_shape``: the batch of the inputs it takes, () for one sample. Raises InputError
    for a model that is not one, a floating base, or a malformed batch shape.
    """

    def __init__(self, model, batch_shape=()):
        fixed_base_only(model, "SecondPartialsData")
        batch_shape = check_batch_shape(batch_shape)
        n = model.n_dof
        self.model, self.batch_shape = model, batch_shape
        self._T = np.zeros((4,) + batch_shape + (n, n, n))
        self._own = self._T[0], self._T[1], self._T[2], self._T[3]  # writable, for the kernels
        views = tuple(t.view() for t in self._own)
        for v in views:
            v.flags.writeable = False
        self.tensors = views
        self.d2tau_dqdq, self.d2tau_dqddqd, self.d2tau_dqdqd, self.dM_dq = views
        self._work = None
        # False after a fill by the numpy path, which leaves rounding noise (1e-16) where the
        # compiled kernel writes nothing: the next compiled fill then clears those entries
        self._zeros_clean = True

    def __repr__(self):
        return (f"SecondPartialsData(model '{self.model.name}', n={self.model.n_dof}, "
                f"batch_shape={self.batch_shape})")

    def _compute(self, model, q, qd, qdd, compiled):
        """id_second_partials(model, q, qd, qdd, out=self)."""
        if model is not self.model:
            self._check_model(model)
        zero = not self._zeros_clean
        if compiled and not self.batch_shape:
            plan = _second_plan(model)
            if self._work is None:
                self._work = np.empty(plan.work)
            if plan.one(q, qd, qdd, self._own, zero, self._work):
                self._zeros_clean = True
                return self.tensors
        if not compiled:  # before writing: a fill stopped partway may have left noise too
            self._zeros_clean = False
        _second_partials_into(model, q, qd, qdd, compiled, self._own, zero, self.batch_shape)
        self._zeros_clean = compiled
        return self.tensors

    def _check_model(self, model):
        """A model other than the data's own object is accepted when its tree is the same (a
        second load of the same robot): the structural zeros are then the same entries."""
        check_model(model)
        mine = self.model
        if not (model.n_dof == mine.n_dof and np.array_equal(model.parents, mine.parents)
                and not model.floating):
            raise InputError(f"out is the SecondPartialsData of model '{mine.name}' ({mine.n_dof} "
                             f"joints), not of a tree like model '{model.name}' ({model.n_dof} "
                             "joints): make one with SecondPartialsData(model)")


_SECOND_ORDER_BLOCK = 2_000_000  # n^3 x samples per block of id_second_partials
_SECOND_PARTIALS = ("d2tau_dqdq", "d2tau_dqddqd", "d2tau_dqdqd", "dM_dq")


class _SecondPlan:
    """What the compiled second-order kernel needs of a fixed-base model: ``model``, the array
    of ``_partials_ir.second_model`` (with the runs of its structurally zero entries), ``n``,
    ``work`` (the size of the work array), and :meth:`one`."""

    def __init__(self, kernels, model, n, work):
        self.kernels, self.model, self.n, self.work = kernels, model, n, work
        self._caller = kernels.run_second
        self._address = kernels.kernel_address("second_partials")
        self._local = threading.local()  # a work array per thread: the kernel runs without the GIL

    def one(self, q, qd, qdd, T, zero, work=None):
        """Write the four tensors of one sample into T (4 arrays (n, n, n)) and return True;
        False, having written nothing, when an argument is not what the compiled kernel takes
        as it is (an array of another type or shape, or holding a NaN: the general path then
        converts it or names the fault). numba's dispatch checks the types: the caller may not
        compile new variants (see :func:`_second_plan`), so it raises TypeError for any other
        type, a read-only or strided array included."""
        if work is None:
            work = getattr(self._local, "work", None)
            if work is None:
                work = self._local.work = np.empty(self.work)
        try:
            return self._caller(self._address, self.model, q, qd, qdd, T[0], T[1],
                                T[2], T[3], work, zero) == 0
        except TypeError:
            return False


@per_model
def _second_plan(model):
    """The :class:`_SecondPlan` of a fixed-base model (None for a floating one): the model
    packed for the compiled kernel (:func:`hod_dynamics.kernels.partials_ir.second_model`, whose first
    run compiles, or loads, the one-sample caller for kernel arrays, which then compiles no
    other variant, see :meth:`_SecondPlan.one`)."""
    if model.floating:
        return None
    kernels = partials_kernels()
    return _SecondPlan(kernels, kernels.second_model(model), model.n_dof,
                       kernels.work_size(model.n_dof))


def _second_partials(model, q, qd, qdd):
    """The four tensors (B, n, n, n) for flat, validated arrays (B, n)."""
    st = world_state(model, q, qd, qdd)
    n = model.n_dof
    eye = np.broadcast_to(np.eye(n), (q.shape[0], n, n))
    dst_q, dst_v = _tangent(st, dq=eye), _tangent(st, dqd=eye)
    return (_assemble_tangent(st, dst_q, "q"), _assemble_tangent(st, dst_v, "qd"),
            _assemble_tangent(st, dst_v, "q"), _assemble_tangent(st, dst_q, "qdd"))


def id_partials_directional(model, q, qd, qdd, dq, dqd, dqdd):
    """Directional derivative of the first-order partials along ``(dq, dqd, dqdd)``, O(n^2).

    Returns ``(D dtau_dq, D dtau_dqd, D M)``, each (..., n, n), the derivatives of the three
    matrices of :func:`id_partials` along the state direction; in terms of the tensors of
    :func:`id_second_partials` (sums over k)::

        D dtau_dq[i, j]  = d2tau_dqdq[i, j, k] dq_k + d2tau_dqdqd[i, j, k] dqd_k
                           + dM_dq[i, k, j] dqdd_k
        D dtau_dqd[i, j] = d2tau_dqdqd[i, k, j] dq_k + d2tau_dqddqd[i, j, k] dqd_k
        D M[i, j]        = dM_dq[i, j, k] dq_k

    With ``(dq, dqd, dqdd) = (qd, qdd, q^(3))`` these are the time derivatives of the partials
    along a trajectory, so ``tau_dd = D dtau_dq qd + dtau_dq qdd + D dtau_dqd qdd + dtau_dqd q3
    + D M q3 + M q4`` (see :func:`id_second_order_rate`).
    """
    batch, flat = flat_states(model, "id_partials_directional", q=q, qd=qd, qdd=qdd, dq=dq, dqd=dqd,
                        dqdd=dqdd)
    n = model.n_dof
    return tuple(D.reshape(batch + (n, n)) for D in _directional(model, *flat))


def _directional(model, q, qd, qdd, dq, dqd, dqdd):
    """Directional derivatives (B, n, n) of the partials for flat, validated arrays (B, n)."""
    st = world_state(model, q, qd, qdd)
    dst = _tangent(st, dq[:, None], dqd[:, None], dqdd[:, None])
    return tuple(_assemble_tangent(st, dst, wrt)[..., 0] for wrt in ("q", "qd", "qdd"))


def id_second_order_rate(model, q, qd, qdd, q3):
    """``T_qq[qd, qd] + 2 T_qv[qd, qdd] + T_vv[qdd, qdd] + 2 (dM/dq . qd) q3`` (..., n), O(n^2).

    The part of the second time derivative of tau that the second-order partials contribute
    (differentiate tau_d = dtau_dq qd + dtau_dqd qdd + M q3 once more):
    ``tau_dd = this + dtau_dq qdd + dtau_dqd q3 + M q4``.
    """
    batch, (q, qd, qdd, q3) = flat_states(model, "id_second_order_rate", q=q, qd=qd, qdd=qdd, q3=q3)
    DTq, DTv, DM = _directional(model, q, qd, qdd, qd, qdd, q3)
    out = mv(DTq, qd) + mv(DTv, qdd) + mv(DM, q3)
    return out.reshape(batch + (model.n_dof,))


__all__ = ["SecondPartialsData", "id_partials_directional", "id_second_order_rate",
           "id_second_partials"]
