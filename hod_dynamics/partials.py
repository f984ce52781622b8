"""First-order partial derivatives of inverse dynamics, in the style of IDSVA (S. Singh, R. P. Russell, P. M. Wensing, "Analytical second-order partial derivatives of
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
``(S, 0, 0)`` for ``x = qdd`` (the mass matrix). The second-order partials differentiate this
assembly once more (:mod:`hod_dynamics.second_partials`).

A floating base adds the free joint's six columns as one joint at the root, in the base frame
of the moment (:func:`_floating_partials`). The compiled kernel computes the same formulas
(:mod:`hod_dynamics._partials_ir`, which also packs the model arrays it reads).

Sums along the tree (paths to the base, subtrees) are O(n) loops over bodies on whole arrays;
no Python loop runs over samples.
"""

from types import SimpleNamespace

import numpy as np

from .backend import kernel_array, partials_kernels, resolve_backend
from .dispatch import one_world, world_plan
from .errors import InputError
from .model import per_model
from .spatial import Ad, ad, inverse, rotate_inverse, screw_exp
from .validation import (batch_size, check_model, check_state, check_velocity, name_non_finite,
                         split_configuration)


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
    """The subtree sums of I, Id, h, f (or of their tangents) into ``out``."""
    out.Ic, out.Bc = _subtree(st.model, I), _subtree(st.model, Id)
    out.hc, out.F = _subtree(st.model, h), _subtree(st.model, f)


# -- assembly of d tau_i / d x_j ------------------------------------------------------------------
def _inputs(st, wrt):
    """(x, y, z) of the assembly for ``wrt`` in ("q", "qd", "qdd") (None: zero)."""
    if wrt == "q":
        return st.alpha, st.Sd, _adstar(st.S, st.F)
    if wrt == "qd":
        return st.xqd, st.S, None
    return st.S, None, None


def _select(st, low, high):
    """Combine the two cases of the pair (i, j) on axes (1, 2)."""
    extra = (None,) * (low.ndim - 3)
    return np.where(st.ancb[(...,) + extra], low, np.where(st.below[(...,) + extra], high, 0.0))


def _assemble(st, wrt):
    """d tau / d wrt (B, n, n) from the primal state."""
    x, y, z = _inputs(st, wrt)
    low = _outer(_mv(st.Ic, st.S), x)
    w = _mv(st.Ic, x)
    if y is not None:
        low = low + _outer(_mv(st.Bc, st.S) - _adstar(st.S, st.hc), y)
        w = w + _mv(st.Bc, y) + _adstar(y, st.hc)
    if z is not None:
        w = w + z
    return _select(st, low, _outer(st.S, w))


# -- public API -----------------------------------------------------------------------------------
def _flat(model, what, finite=True, result=None, **arrays):
    """Validated arrays (..., n) -> (batch shape, [contiguous, writable (B, n) arrays]);
    ``what``: the caller, named when the model has a floating base; ``result``: the floats
    per sample it allocates (refused beforehand when they would not fit in memory; default
    three n x n matrices)."""
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
    out = one_world(model, "first_partials", (q, qd, qdd), backend)  # the fast path
    if out is not None:
        return out[0], out[1], out[2]
    if check_model(model).floating:
        return _floating_partials(model, q, qd, qdd, resolve_backend(backend) == "numba")
    compiled = resolve_backend(backend) == "numba"
    batch, flat = _flat(model, "id_partials", finite=not compiled, q=q, qd=qd, qdd=qdd)
    n = model.n_dof
    if compiled:
        out = np.empty((3,) + batch + (n, n))
        plan = world_plan(model)
        if partials_kernels().first(plan.model, *flat,
                                    out.reshape(3, batch_size(batch), n, n)) != 0:
            name_non_finite(model, q=q, qd=qd, qdd=qdd)
        return tuple(out)
    st = _state(model, *flat)
    return tuple(_assemble(st, wrt).reshape(batch + (n, n)) for wrt in ("q", "qd", "qdd"))


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
        kernels = partials_kernels()
        if kernels.first(kernels.model_arrays(tree, free_joint=True), qa,
                         kernel_array(flat(v, nv)), kernel_array(flat(a, nv)),
                         out.reshape(3, B, nv, nv), 6, g0) != 0:
            raise InputError("a non-finite value reached the floating partials")  # checked above
        return tuple(out)
    st = _state(tree, qa, flat(v, nv), flat(a, nv), g0=g0, base=6)
    return tuple(_assemble(st, wrt).reshape(batch + (nv, nv)) for wrt in ("q", "qd", "qdd"))



__all__ = ["id_partials"]
