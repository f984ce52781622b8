"""The world-frame Newton-Euler state that the first- and second-order partials differentiate.

Everything is resolved in the base (world) frame (S. Singh, R. P. Russell, P. M. Wensing,
"Analytical second-order partial derivatives of rigid-body inverse dynamics", IEEE/RSJ IROS
2022): the joint screws ``S_l = Ad(T_l) X_l``, twists ``V``, accelerations ``A`` (gravity
included), inertias ``I`` and forces ``f`` of every body, and their subtree (composite) sums.
:mod:`hod_dynamics.algorithms.partials` assembles the first-order partials from this state and
:mod:`hod_dynamics.algorithms.second_partials` differentiates it once more; both read it through
the functions here. Arrays are flat batches (B, n, ...): twists ``(omega, v)``, wrenches
``(t, f)``, ``ad*(a) = -ad(a)^T``.

Sums along the tree (paths to the base, subtrees) are O(n) loops over bodies on whole arrays;
no Python loop runs over samples.
"""

from types import SimpleNamespace

import numpy as np

from ..arrays import batch_size
from ..kernels.backend import kernel_array
from ..model.robot_model import per_model
from ..model.spatial import Ad, ad, inverse, screw_exp
from ..model.validation import check_state

# -- spatial algebra on stacks --------------------------------------------------------------------
# ad(a) = sum_j a_j ad(e_j): one BLAS product builds the matrices of a whole stack of twists
AD_BASIS = ad(np.eye(6))  # (6, 6, 6): ad(e_j)

AD_FLAT = AD_BASIS.reshape(6, 36)

# ad*(a) f = sum_j a_j (-ad(e_j)^T f): the matrix of a -> ad*(a) f for a fixed wrench f
BAR_FLAT = -np.transpose(AD_BASIS, (1, 2, 0)).reshape(6, 36)


def ad_matrix(a):
    """``ad(a)`` (..., 6, 6) of twists a (..., 6)."""
    return (a @ AD_FLAT).reshape(a.shape[:-1] + (6, 6))


def adstar_matrix(a):
    """``ad*(a) = -ad(a)^T`` (..., 6, 6) of twists a (..., 6), acting on wrenches."""
    return -np.swapaxes(ad_matrix(a), -1, -2)


def bar(f):
    """The matrix L (..., 6, 6) with ``L a = ad*(a) f`` for wrenches f (..., 6)."""
    return (f @ BAR_FLAT).reshape(f.shape[:-1] + (6, 6))


def mv(M, x):
    return np.einsum("...ij,...j->...i", M, x)


def ad_times(a, b):
    """``ad(a) b`` for twists a, b (..., 6), broadcasting."""
    return mv(ad_matrix(a), b)


def adstar_times(a, f):
    """``ad*(a) f = -ad(a)^T f`` for a twist a and a wrench f (..., 6), broadcasting."""
    return -np.einsum("...ji,...j->...i", ad_matrix(a), f)


def inertia_rate(a, I):
    """``ad*(a) I - I ad(a)`` for twists a (..., 6) and symmetric inertias I (..., 6, 6)."""
    N = adstar_matrix(a) @ I
    return N + np.swapaxes(N, -1, -2)


def rate_basis(I):
    """G (..., 6, 36) with ``inertia_rate(a, I) = (a @ G).reshape(..., 6, 6)``."""
    N = -np.einsum("jmi,...mk->...jik", AD_BASIS, I)
    return (N + np.swapaxes(N, -1, -2)).reshape(I.shape[:-2] + (6, 36))


def outer(a, b):
    """``[..., i, j] = a_i . b_j`` for a (..., n, 6), b (..., m, 6), broadcasting (BLAS)."""
    return a @ np.swapaxes(b, -1, -2)


# -- the tree -------------------------------------------------------------------------------------
@per_model
def masks(model):
    """``ancb[i, j]``: j is i or an ancestor of i; ``below[i, j]``: j is strictly below i."""
    n = model.n_dof
    anc = np.zeros((n, n), dtype=bool)
    for l, chain in enumerate(model.ancestors):
        anc[l, list(chain)] = True
    return anc, anc.T & ~np.eye(n, dtype=bool)


def parent_of(model, X, base):
    """Values of the parent of every body along axis 1 of X; ``base`` for the roots."""
    pad = np.concatenate([np.broadcast_to(base, X[:, :1].shape), X], axis=1)
    return pad[:, model.parents + 1]


def down(model, X):
    """Sums over each body's path to the base, ``sum_{k<=l} X_k``, along axis 1 of X."""
    out = np.array(X)
    for l, p in enumerate(model.parents):
        if p >= 0:
            out[:, l] += out[:, p]
    return out


def subtree(model, X):
    """Composite (subtree) sums ``sum_{l>=c} X_l`` along axis 1 of X; None stays None."""
    if X is None:
        return None
    out = np.array(X)
    for l in reversed(range(model.n_dof)):
        p = model.parents[l]
        if p >= 0:
            out[:, p] += out[:, l]
    return out


# -- the primal state -----------------------------------------------------------------------------
def world_state(model, q, qd, qdd, g0=None, base=0):
    """World-frame RNEA quantities for a flat batch q, qd, qdd (B, n).

    A floating base (see :func:`hod_dynamics.algorithms.partials._floating_partials`): ``base = 6`` leading columns are the
    free joint's, ``g0`` (B, 6) the gravity twist per sample.
    """
    ancb, below = masks(model)
    C = model.references @ screw_exp(model.screws, q)
    T = np.empty_like(C)
    for l, p in enumerate(model.parents):
        T[:, l] = C[:, l] if p < 0 else T[:, p] @ C[:, l]
    S = np.einsum("bnij,nj->bni", Ad(T), model.screws)
    Ainv = Ad(inverse(T))
    I = np.swapaxes(Ainv, -1, -2) @ model.inertias @ Ainv
    g0 = np.concatenate([np.zeros(3), -model.gravity]) if g0 is None else g0[:, None]
    V = down(model, S * qd[..., None])
    Vp = parent_of(model, V, np.zeros(6))
    if base:  # the free joint's columns all move the base body, their "parent" is the world
        ancb = ancb.copy()
        ancb[:base, :base] = True
        V[:, :base] = V[:, base - 1:base]
        Vp[:, :base] = 0.0
    Sd = ad_times(Vp, S)
    A = g0 + down(model, S * qdd[..., None] + Sd * qd[..., None])
    Ap = parent_of(model, A, g0)
    xqd = 2.0 * Sd  # d tau / d qd: x of the assembly, 2 ad(V_parent) S
    if base:
        A[:, :base] = A[:, base - 1:base]
        Ap[:, :base] = g0
        xqd[:, :base] = ad_times(V[:, :base], S[:, :base])  # ad(V_base) S: the base's own twist
    h = mv(I, V)
    st = SimpleNamespace(model=model, ancb=ancb, below=below, qd=qd, qdd=qdd, S=S, I=I, V=V,
                         Vp=Vp, A=A, Ap=Ap, Sd=Sd, h=h, alpha=ad_times(Ap, S) + ad_times(Vp, Sd), xqd=xqd)
    composites(st, st, I, inertia_rate(V, I), h, mv(I, A) + adstar_times(V, h))
    return st


def composites(st, out, I, Id, h, f):
    """The subtree sums of I, Id, h, f (or of their tangents) into ``out``."""
    out.Ic, out.Bc = subtree(st.model, I), subtree(st.model, Id)
    out.hc, out.F = subtree(st.model, h), subtree(st.model, f)


# -- what the assembly of d tau_i / d x_j reads ---------------------------------------------------
def inputs(st, wrt):
    """(x, y, z) of the assembly for ``wrt`` in ("q", "qd", "qdd") (None: zero)."""
    if wrt == "q":
        return st.alpha, st.Sd, adstar_times(st.S, st.F)
    if wrt == "qd":
        return st.xqd, st.S, None
    return st.S, None, None


def select(st, low, high):
    """Combine the two cases of the pair (i, j) on axes (1, 2)."""
    extra = (None,) * (low.ndim - 3)
    return np.where(st.ancb[(...,) + extra], low, np.where(st.below[(...,) + extra], high, 0.0))


# -- validated flat batches -----------------------------------------------------------------------
def flat_states(model, what, finite=True, result=None, **arrays):
    """Validated arrays (..., n) -> (batch shape, [contiguous, writable (B, n) arrays]);
    ``what``: the caller, named when the model has a floating base; ``result``: the floats
    per sample it allocates (refused beforehand when they would not fit in memory; default
    three n x n matrices)."""
    arrays = check_state(model, finite=finite, what=what, result=result or 3 * model.n_dof ** 2, **arrays)
    n = model.n_dof
    batch = arrays[0].shape[:-1]
    return batch, [kernel_array(a.reshape(batch_size(batch), n)) for a in arrays]
