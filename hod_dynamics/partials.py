"""First- and second-order partial derivatives of inverse dynamics, in the style of
IDSVA (S. Singh, R. P. Russell, P. M. Wensing, "Analytical second-order partial derivatives of
rigid-body inverse dynamics", IEEE/RSJ IROS 2022).

Everything is resolved in the base (world) frame, where a change of ``q_j`` moves the whole
subtree of joint j rigidly about the world screw ``S_j``. For body l with parent p (twists
``(omega, v)``, wrenches ``(t, f)``, ``ad*(V) = -ad(V)^T``, "k <= l": k is l or an ancestor of l):

- ``S_l = Ad(T_l) X_l``; ``V_l = sum_{k<=l} S_k qd_k``; ``Sd_l = ad(V_p) S_l`` (= dS_l/dt);
  ``A_l = (0, -g) + sum_{k<=l} (S_k qdd_k + Sd_k qd_k)`` (spatial acceleration incl. gravity);
  ``alpha_l = ad(A_p) S_l + ad(V_p) Sd_l``; world inertia ``I_l``, its rate
  ``Id_l = ad*(V_l) I_l - I_l ad(V_l)``, momentum ``h_l = I_l V_l``,
  force ``f_l = I_l A_l + ad*(V_l) h_l``; ``tau_i = S_i^T sum_{l>=i} f_l``.
- Subtree (composite) sums ``Ic, Bc, hc, F`` of ``I, Id, h, f``.

Differentiating with the rigid-subtree rule (``d S_l / d q_k = ad(S_k) S_l``,
``d I_l / d q_k = ad*(S_k) I_l - I_l ad(S_k)`` for k <= l) gives, for every pair (i, j),

- j <= i: ``d tau_i / d x_j = S_i^T (Ic_i x_j + Bc_i y_j + ad*(y_j) hc_i)``,
- i <  j: ``d tau_i / d x_j = S_i^T (z_j + Ic_j x_j + Bc_j y_j + ad*(y_j) hc_j)``,
- 0 when i and j lie on different branches,

with ``(x, y, z) = (alpha, Sd, ad*(S) F)`` for ``x = q``, ``(2 Sd, S, 0)`` for ``x = qd`` and
``(S, 0, 0)`` for ``x = qdd`` (the mass matrix). The second-order partials are the forward-mode
(tangent) derivatives of that assembly: the tangents of ``S, V, A, I`` along any direction
follow the same recursions (``dS_l = ad(U_l) S_l`` with ``U_l = sum_{k<=l} dq_k S_k``), and the
product rule carries them through. A direction can be a unit vector per joint (full tensors,
O(n^3)) or one given vector (directional derivatives, O(n^2)).

Sums along the tree (paths to the base, subtrees) are O(n) loops over bodies on whole arrays;
no Python loop runs over samples.
"""

import threading
from types import SimpleNamespace

import numpy as np

from .backend import kernel_array, partials_kernels, resolve_backend
from .errors import InputError
from .model import per_model
from .spatial import Ad, ad, inverse, rotate_inverse, screw_exp
from .validation import (batch_size, check_batch_shape, check_model, check_out, check_state,
                         check_velocity, fixed_base_only, name_non_finite, split_configuration)


# -- spatial algebra on stacks --------------------------------------------------------------------
# ad(a) = sum_j a_j ad(e_j): one BLAS product builds the matrices of a whole stack of twists
_AD_BASIS = ad(np.eye(6))  # (6, 6, 6): ad(e_j)
_AD_FLAT = _AD_BASIS.reshape(6, 36)
# ad*(a) f = sum_j a_j (-ad(e_j)^T f): the matrix of a -> ad*(a) f for a fixed wrench f
_BAR_FLAT = -np.transpose(_AD_BASIS, (1, 2, 0)).reshape(6, 36)


def _ad_matrix(a):
    """``ad(a)`` (..., 6, 6) of twists a (..., 6)."""
    return (a @ _AD_FLAT).reshape(a.shape[:-1] + (6, 6))


def _adstar_matrix(a):
    """``ad*(a) = -ad(a)^T`` (..., 6, 6) of twists a (..., 6), acting on wrenches."""
    return -np.swapaxes(_ad_matrix(a), -1, -2)


def _bar(f):
    """The matrix L (..., 6, 6) with ``L a = ad*(a) f`` for wrenches f (..., 6)."""
    return (f @ _BAR_FLAT).reshape(f.shape[:-1] + (6, 6))


def _mv(M, x):
    return np.einsum("...ij,...j->...i", M, x)


def _ad(a, b):
    """``ad(a) b`` for twists a, b (..., 6), broadcasting."""
    return _mv(_ad_matrix(a), b)


def _adstar(a, f):
    """``ad*(a) f = -ad(a)^T f`` for a twist a and a wrench f (..., 6), broadcasting."""
    return -np.einsum("...ji,...j->...i", _ad_matrix(a), f)


def _inertia_rate(a, I):
    """``ad*(a) I - I ad(a)`` for twists a (..., 6) and symmetric inertias I (..., 6, 6)."""
    N = _adstar_matrix(a) @ I
    return N + np.swapaxes(N, -1, -2)


def _rate_basis(I):
    """G (..., 6, 36) with ``_inertia_rate(a, I) = (a @ G).reshape(..., 6, 6)``."""
    N = -np.einsum("jmi,...mk->...jik", _AD_BASIS, I)
    return (N + np.swapaxes(N, -1, -2)).reshape(I.shape[:-2] + (6, 36))


def _outer(a, b):
    """``[..., i, j] = a_i . b_j`` for a (..., n, 6), b (..., m, 6), broadcasting (BLAS)."""
    return a @ np.swapaxes(b, -1, -2)


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


# -- the tree -------------------------------------------------------------------------------------
@per_model
def _masks(model):
    """``ancb[i, j]``: j is i or an ancestor of i; ``below[i, j]``: j is strictly below i."""
    n = model.n_dof
    anc = np.zeros((n, n), dtype=bool)
    for l, chain in enumerate(model.ancestors):
        anc[l, list(chain)] = True
    return anc, anc.T & ~np.eye(n, dtype=bool)


def _parent_of(model, X, base):
    """Values of the parent of every body along axis 1 of X; ``base`` for the roots."""
    pad = np.concatenate([np.broadcast_to(base, X[:, :1].shape), X], axis=1)
    return pad[:, model.parents + 1]


def _down(model, X):
    """Sums over each body's path to the base, ``sum_{k<=l} X_k``, along axis 1 of X."""
    out = np.array(X)
    for l, p in enumerate(model.parents):
        if p >= 0:
            out[:, l] += out[:, p]
    return out


def _subtree(model, X):
    """Composite (subtree) sums ``sum_{l>=c} X_l`` along axis 1 of X; None stays None."""
    if X is None:
        return None
    out = np.array(X)
    for l in reversed(range(model.n_dof)):
        p = model.parents[l]
        if p >= 0:
            out[:, p] += out[:, l]
    return out


# -- primal state ---------------------------------------------------------------------------------
def _state(model, q, qd, qdd, g0=None, base=0):
    """World-frame RNEA quantities for a flat batch q, qd, qdd (B, n).

    A floating base (see :func:`_floating_partials`): ``base = 6`` leading columns are the
    free joint's, ``g0`` (B, 6) the gravity twist per sample.
    """
    ancb, below = _masks(model)
    C = model.references @ screw_exp(model.screws, q)
    T = np.empty_like(C)
    for l, p in enumerate(model.parents):
        T[:, l] = C[:, l] if p < 0 else T[:, p] @ C[:, l]
    S = np.einsum("bnij,nj->bni", Ad(T), model.screws)
    Ainv = Ad(inverse(T))
    I = np.swapaxes(Ainv, -1, -2) @ model.inertias @ Ainv
    g0 = np.concatenate([np.zeros(3), -model.gravity]) if g0 is None else g0[:, None]
    V = _down(model, S * qd[..., None])
    Vp = _parent_of(model, V, np.zeros(6))
    if base:  # the free joint's columns all move the base body, their "parent" is the world
        ancb = ancb.copy()
        ancb[:base, :base] = True
        V[:, :base] = V[:, base - 1:base]
        Vp[:, :base] = 0.0
    Sd = _ad(Vp, S)
    A = g0 + _down(model, S * qdd[..., None] + Sd * qd[..., None])
    Ap = _parent_of(model, A, g0)
    xqd = 2.0 * Sd  # d tau / d qd: x of the assembly, 2 ad(V_parent) S
    if base:
        A[:, :base] = A[:, base - 1:base]
        Ap[:, :base] = g0
        xqd[:, :base] = _ad(V[:, :base], S[:, :base])  # ad(V_base) S: the base's own twist
    h = _mv(I, V)
    st = SimpleNamespace(model=model, ancb=ancb, below=below, qd=qd, qdd=qdd, S=S, I=I, V=V,
                         Vp=Vp, A=A, Ap=Ap, Sd=Sd, h=h, alpha=_ad(Ap, S) + _ad(Vp, Sd), xqd=xqd)
    _composites(st, st, I, _inertia_rate(V, I), h, _mv(I, A) + _adstar(V, h))
    return st


def _composites(st, out, I, Id, h, f):
    out.Ic, out.Bc = _subtree(st.model, I), _subtree(st.model, Id)
    out.hc, out.F = _subtree(st.model, h), _subtree(st.model, f)


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
    minus_adS = -_ad_matrix(st.S)
    adVp = _ad_matrix(st.Vp)
    dS = dI = None
    if e_q is not None:
        U = _down(model, e_q * S3)  # sum_{k<=l} dq_k S_k: the twist that moves body l
        dS = _sb(minus_adS, U)
        dI = (U @ _rate_basis(st.I)).reshape(U.shape + (6,))
    dV = _down(model, _add(None if dS is None else dS * qd, None if e_v is None else e_v * S3))
    dVp = _parent_of(model, dV, np.zeros(6))
    dSd = _add(_sb(minus_adS, dVp), _sb(adVp, dS))
    dA = _down(model, _add(None if dS is None else dS * qdd, dSd * qd,
                           None if e_v is None else e_v * Sd3, None if e_a is None else e_a * S3))
    dAp = _parent_of(model, dA, np.zeros(6))
    dalpha = _add(_sb(minus_adS, dAp), _sb(_ad_matrix(st.Ap), dS),
                  _sb(-_ad_matrix(st.Sd), dVp), _sb(adVp, dSd))
    adstarV = _adstar_matrix(st.V)
    dh = _add(_sb(st.I, dV), _bs(dI, st.V))
    df = _add(_sb(st.I, dA), _bs(dI, st.A), _sb(_bar(st.h), dV), _sb(adstarV, dh))
    dId = (dV @ _rate_basis(st.I)).reshape(dV.shape + (6,))
    if dI is not None:
        N = adstarV[:, :, None] @ dI
        dId = dId + N + np.swapaxes(N, -1, -2)
    out = SimpleNamespace(S=dS, Sd=dSd, alpha=dalpha)
    _composites(st, out, dI, dId, dh, df)
    return out


# -- assembly of d tau_i / d x_j ------------------------------------------------------------------
def _inputs(st, dst, wrt):
    """(x, y, z) of the assembly for ``wrt`` in ("q", "qd", "qdd") and their tangents."""
    if wrt == "q":
        prim = (st.alpha, st.Sd, _adstar(st.S, st.F))
        if dst is None:
            return prim, None
        dz = _add(_sb(_bar(st.F), dst.S), _sb(_adstar_matrix(st.S), dst.F))
        return prim, (dst.alpha, dst.Sd, dz)
    if wrt == "qd":
        return (st.xqd, st.S, None), (None if dst is None else (2.0 * dst.Sd, dst.S, None))
    return (st.S, None, None), (None if dst is None else (dst.S, None, None))


def _select(st, low, high):
    """Combine the two cases of the pair (i, j) on axes (1, 2)."""
    extra = (None,) * (low.ndim - 3)
    return np.where(st.ancb[(...,) + extra], low, np.where(st.below[(...,) + extra], high, 0.0))


def _assemble(st, wrt):
    """d tau / d wrt (B, n, n) from the primal state."""
    (x, y, z), _ = _inputs(st, None, wrt)
    low = _outer(_mv(st.Ic, st.S), x)
    w = _mv(st.Ic, x)
    if y is not None:
        low = low + _outer(_mv(st.Bc, st.S) - _adstar(st.S, st.hc), y)
        w = w + _mv(st.Bc, y) + _adstar(y, st.hc)
    if z is not None:
        w = w + z
    return _select(st, low, _outer(st.S, w))


def _assemble_tangent(st, dst, wrt):
    """Derivative of d tau / d wrt along the K directions of ``dst``: (B, n, n, K)."""
    (x, y, z), (dx, dy, dz) = _inputs(st, dst, wrt)
    S, Ic, Bc, hc = st.S, st.Ic, st.Bc, st.hc
    dP = _add(_bs(dst.Ic, S), _sb(Ic, dst.S))
    low = _add(_outer_bs(dP, x), _outer_sb(_mv(Ic, S), dx))
    w = _mv(Ic, x)
    dw = _add(_bs(dst.Ic, x), _sb(Ic, dx))
    if y is not None:
        bar_hc = _bar(hc)
        Q = _mv(Bc, S) - _adstar(S, hc)
        dQ = _add(_bs(dst.Bc, S), _sb(Bc - bar_hc, dst.S), _sb(-_adstar_matrix(S), dst.hc))
        low = _add(low, _outer_bs(dQ, y), _outer_sb(Q, dy))
        w = w + _mv(Bc, y) + _adstar(y, hc)
        dw = _add(dw, _bs(dst.Bc, y), _sb(Bc + bar_hc, dy), _sb(_adstar_matrix(y), dst.hc))
    if z is not None:
        w, dw = w + z, _add(dw, dz)
    high = _add(_outer_bs(dst.S, w), _outer_sb(S, dw))
    K = dst.Sd.shape[2]
    zero = np.zeros(S.shape[:2] + S.shape[1:2] + (K,))
    return _select(st, zero if low is None else low, zero if high is None else high)


# -- public API -----------------------------------------------------------------------------------
def _flat(model, what, finite=True, result=None, **arrays):
    """Validated arrays (..., n) -> (batch shape, [contiguous, writable (B, n) arrays]);
    ``what``: the caller, named when the model has a floating base; ``result``: the floats
    per sample it allocates (refused beforehand when they would not fit in memory)."""
    arrays = check_state(model, finite=finite, what=what, result=result or 3 * model.n_dof ** 2, **arrays)
    n = model.n_dof
    batch = arrays[0].shape[:-1]
    return batch, [kernel_array(a.reshape(batch_size(batch), n)) for a in arrays]


def id_partials(model, q, qd, qdd, *, backend=None):
    """First-order partial derivatives of inverse dynamics tau(q, qd, qdd).

    ``q, qd, qdd`` (..., n) in the model's joint order (rad, rad/s, rad/s^2; m for prismatic),
    broadcast together. Returns ``(dtau_dq, dtau_dqd, M)``, each (..., n, n) with
    ``[..., i, j] = d tau_i / d x_j`` (``M = d tau / d qdd`` is the mass matrix). Same numbers
    as Pinocchio's ``computeRNEADerivatives``. Raises InputError naming a bad argument.
    ``backend``: "numba", "numpy" or "auto" (None: see :mod:`hod_dynamics.backend`).

    Floating models: ``q`` (..., 7+n), ``qd = v``, ``qdd = a`` (..., 6+n); each result is
    (..., 6+n, 6+n), rows the base wrench (torque, force) then the joints, columns the base
    twist (omega, v) then the joints. ``dtau_dq`` is the derivative along the tangent of the
    configuration, ``q -> q (+) dq`` with the base pose moved to ``H exp(dq_base)`` (body
    frame, :func:`hod_dynamics.floating.integrate`): Pinocchio's convention, in our
    (angular, linear) order.
    """
    if check_model(model).floating:
        return _floating_partials(model, q, qd, qdd, resolve_backend(backend) == "numba")
    compiled = resolve_backend(backend) == "numba"
    batch, flat = _flat(model, "id_partials", finite=not compiled, result=3 * model.n_dof ** 2, q=q, qd=qd,
                        qdd=qdd)
    n = model.n_dof
    if compiled:
        out = np.empty((3,) + batch + (n, n))
        if not partials_kernels().first_partials(*_kernel_model(model), *flat,
                                                 out.reshape(3, batch_size(batch), n, n)):
            name_non_finite(model, q=q, qd=qd, qdd=qdd)
        return tuple(out)
    st = _state(model, *flat)
    return tuple(_assemble(st, wrt).reshape(batch + (n, n)) for wrt in ("q", "qd", "qdd"))


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
    :mod:`hod_dynamics.backend`).

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
    batch, flat = _flat(model, "id_second_partials", finite=not compiled or out is not None,
                        result=0 if out is not None else 4 * model.n_dof ** 3, q=q, qd=qd, qdd=qdd)
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
        # (a data's own arrays reach no input: _flat copies their read-only views)
        flat = [a.copy() if any(np.may_share_memory(a, t) for t in out) else a for a in flat]
    else:
        T = np.empty((4,) + shape)
        out = T[0], T[1], T[2], T[3]
    tensors = [np.asarray(t).reshape((batch_size(batch), n, n, n)) for t in out]  # views
    if compiled:
        plan = _second_plan(model)
        status = plan.kernels.second_partials(plan.ints, plan.floats, *flat, *tensors,
                                              np.empty(plan.work), zero)
        if status != 0:
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


@per_model
def _kernel_model(model):
    """Model arrays in the form the compiled kernel takes (``anc[l, m]``: m is l or above)."""
    arrays = (model.parents.astype(np.int64), _masks(model)[0], model.screws, model.references,
              model.inertias, np.concatenate([np.zeros(3), -model.gravity]))
    return tuple(np.ascontiguousarray(a) for a in arrays)


class _SecondPlan:
    """What the compiled second-order kernels need of a fixed-base model: ``ints, floats`` of
    ``_partials_kernels.second_model`` (with the runs of its structurally zero entries), ``n``,
    ``work`` (the size of the work array), and :meth:`one`."""

    def __init__(self, kernels, ints, floats, n, work):
        self.kernels, self.ints, self.floats, self.n, self.work = kernels, ints, floats, n, work
        self._kernel = kernels.second_partials_one
        self._local = threading.local()  # a work array per thread: the kernel runs without the GIL

    def one(self, q, qd, qdd, T, zero, work=None):
        """Write the four tensors of one sample into T (4 arrays (n, n, n)) and return True;
        False, having written nothing, when an argument is not what the compiled kernel takes
        as it is (an array of another type or shape, or holding a NaN: the general path then
        converts it or names the fault). numba's dispatch checks the types: the kernel may not
        compile new variants (see :func:`_second_plan`), so it raises TypeError for any other
        type, a read-only or strided array included."""
        if work is None:
            work = getattr(self._local, "work", None)
            if work is None:
                work = self._local.work = np.empty(self.work)
        try:
            return self._kernel(self.ints, self.floats, q, qd, qdd, T[0], T[1], T[2], T[3], work,
                                zero) == 0
        except TypeError:
            return False


_FIRST_RUN = threading.Lock()  # the first run of the one-sample kernel, see _second_plan


@per_model
def _second_plan(model):
    """The :class:`_SecondPlan` of a fixed-base model (None for a floating one).

    The runs of entries that the kernel never writes (they are structurally zero: triples not
    on one path to the base, and a few on one) are found once per model by running the kernel
    on tensors filled with NaN: the entries it leaves NaN (for finite inputs every written
    entry is finite). That run also compiles the one-sample kernel (or loads it from numba's
    cache) for the arguments it takes, kernel arrays (see backend.is_kernel_array); its
    dispatcher then compiles no other variant (see :meth:`_SecondPlan.one`)."""
    if model.floating:
        return None
    kernels = partials_kernels()
    n = model.n_dof
    chains = [chain[::-1] for chain in model.ancestors]
    depth = np.array([len(c) for c in chains], dtype=np.int64)
    paths = np.zeros((n, max(depth, default=1)), dtype=np.int64)
    for i, chain in enumerate(chains):
        paths[i, :len(chain)] = chain
    gravity = np.concatenate([np.zeros(3), -model.gravity])
    floats = np.concatenate([a.ravel() for a in (model.screws, model.references,
                                                 model.inertias, gravity)]).astype(float)

    def pack(runs):
        head = [n, paths.shape[1], len(runs)]
        return np.concatenate([head, model.parents, depth, paths.ravel(),
                               runs.ravel()]).astype(np.int64)

    work = kernels.second_work_size(n, paths.shape[1])
    tensors = np.full((4, n, n, n), np.nan)
    state = np.random.default_rng(0).uniform(-1.0, 1.0, (3, n))
    # under a lock: numba tests whether it may compile only once it holds its compile lock, so
    # a thread whose first call waited there while another compiled and disabled compiling
    # would raise RuntimeError; serialised, every first run finds the variant compiled
    with _FIRST_RUN:
        kernels.second_partials_one(pack(np.zeros((0, 3))), floats, *state, *tensors,
                                    np.empty(work), True)
        kernels.second_partials_one.disable_compile()
    zeros = np.isnan(tensors)
    if 2 * np.count_nonzero(zeros) > zeros.size:  # mostly zero (a branched tree): clearing
        # whole tensors (memset) is faster than clearing runs
        runs = [(t, 0, n ** 3) for t in range(4)]
    else:
        runs = []
        for t in range(4):
            edges = np.diff(np.concatenate([[0], zeros[t].ravel(), [0]]).astype(int))
            runs += [(t, a, b) for a, b in zip(np.flatnonzero(edges == 1),
                                                np.flatnonzero(edges == -1))]
    return _SecondPlan(kernels, pack(np.array(runs).reshape(-1, 3)), floats, n, work)


@per_model
def _with_free_joint(model):
    """The fixed-base tree of a floating model with the free joint as 6 leading columns.

    Columns 0..5 are the unit twists (omega_x, .., v_z) of the base body; the base inertia
    sits on column 5's body, the others are massless. :func:`_state` (``base=6``) makes the
    six one joint (they all move the base body, whose twist is their sum).
    """
    from .model import RobotModel

    n = model.n_dof
    parents = np.r_[np.arange(-1, 5), np.where(model.parents < 0, 5, model.parents + 6)]
    inertias = np.concatenate([np.zeros((5, 6, 6)), model.base_inertia[None], model.inertias])
    refs = np.concatenate([np.broadcast_to(np.eye(4), (6, 4, 4)), model.references])
    names = [f"free_{c}" for c in ("wx", "wy", "wz", "vx", "vy", "vz")]
    return RobotModel(name=model.name, joint_names=names + list(model.joint_names),
                      joint_types=["revolute"] * 3 + ["prismatic"] * 3 + list(model.joint_types),
                      link_names=names + list(model.link_names), parents=parents,
                      screws=np.concatenate([np.eye(6), model.screws]), references=refs,
                      inertias=inertias, gravity=model.gravity, lower=np.full(n + 6, -np.inf),
                      upper=np.full(n + 6, np.inf), velocity_limits=np.full(n + 6, np.inf),
                      effort_limits=np.full(n + 6, np.inf), root_link=model.root_link)


def _floating_partials(model, q, v, a, compiled=False):
    """id_partials of a floating model, computed in the base frame of the moment.

    There the base pose is the identity and gravity is ``R^T g``; a tangent step of the base
    moves the whole robot rigidly (gravity stays), exactly as a joint at the root would: so
    the world-frame formulas hold with the free joint's six columns as one joint whose parent
    is the world (``_state(..., base=6)``).
    """
    _, quat, joints = split_configuration(model, q)
    v = check_velocity(model, v, "qd")
    a = check_velocity(model, a, "qdd")
    nv = model.nv
    try:
        batch = np.broadcast_shapes(joints.shape[:-1], v.shape[:-1], a.shape[:-1])
    except ValueError:
        raise InputError(f"batch shapes do not broadcast: q {np.shape(q)}, qd {v.shape}, "
                         f"qdd {a.shape}") from None
    B = batch_size(batch)

    def flat(x, m):
        return x.reshape(B, m) if x.shape[:-1] == batch else np.broadcast_to(
            x, batch + (m,)).reshape(B, m)

    g0 = np.zeros((B, 6))
    g0[:, 3:] = -rotate_inverse(flat(quat, 4), model.gravity)
    qa = np.zeros((B, nv))
    qa[:, 6:] = flat(joints, model.n_dof)
    tree = _with_free_joint(model)
    if compiled:
        out = np.empty((3,) + batch + (nv, nv))
        arrays = _kernel_model(tree)
        if not partials_kernels().first_partials(
                *arrays[:1], _clique(tree), *arrays[2:], qa, kernel_array(flat(v, nv)),
                kernel_array(flat(a, nv)), out.reshape(3, -1, nv, nv), 6, g0):
            raise InputError("a non-finite value reached the floating partials")  # checked above
        return tuple(out)
    st = _state(tree, qa, flat(v, nv), flat(a, nv), g0=g0, base=6)
    return tuple(_assemble(st, wrt).reshape(batch + (nv, nv)) for wrt in ("q", "qd", "qdd"))


@per_model
def _clique(tree):
    """The ancestor mask of :func:`_with_free_joint`'s tree with the free joint's six columns
    ancestors of one another (one joint)."""
    anc = _masks(tree)[0].copy()
    anc[:6, :6] = True
    return anc


def _second_partials(model, q, qd, qdd):
    """The four tensors (B, n, n, n) for flat, validated arrays (B, n)."""
    st = _state(model, q, qd, qdd)
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
    batch, flat = _flat(model, "id_partials_directional", q=q, qd=qd, qdd=qdd, dq=dq, dqd=dqd,
                        dqdd=dqdd)
    n = model.n_dof
    return tuple(D.reshape(batch + (n, n)) for D in _directional(model, *flat))


def _directional(model, q, qd, qdd, dq, dqd, dqdd):
    """Directional derivatives (B, n, n) of the partials for flat, validated arrays (B, n)."""
    st = _state(model, q, qd, qdd)
    dst = _tangent(st, dq[:, None], dqd[:, None], dqdd[:, None])
    return tuple(_assemble_tangent(st, dst, wrt)[..., 0] for wrt in ("q", "qd", "qdd"))


def id_second_order_rate(model, q, qd, qdd, q3):
    """``T_qq[qd, qd] + 2 T_qv[qd, qdd] + T_vv[qdd, qdd] + 2 (dM/dq . qd) q3`` (..., n), O(n^2).

    The part of the second time derivative of tau that the second-order partials contribute
    (differentiate tau_d = dtau_dq qd + dtau_dqd qdd + M q3 once more):
    ``tau_dd = this + dtau_dq qdd + dtau_dqd q3 + M q4``.
    """
    batch, (q, qd, qdd, q3) = _flat(model, "id_second_order_rate", q=q, qd=qd, qdd=qdd, q3=q3)
    DTq, DTv, DM = _directional(model, q, qd, qdd, qd, qdd, q3)
    out = _mv(DTq, qd) + _mv(DTv, qdd) + _mv(DM, q3)
    return out.reshape(batch + (model.n_dof,))
