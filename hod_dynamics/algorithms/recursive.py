"""Recursive O(n) inverse dynamics and its time derivatives of any order:
S. Kumar, A. Müller, "Nth order analytical time derivatives of inverse dynamics in recursive and
closed forms", IEEE ICRA 2021, sec. II.

Body-fixed Newton-Euler on a kinematic tree, carried out on jets of normalised Taylor
coefficients (see :mod:`hod_dynamics.algorithms.jets`) so that the Leibniz sums of the paper become Cauchy
products. For body i with parent p (frames of body i, twists ``(omega, v)``, wrenches ``(t, f)``):

- ``Ad_{C_{i,p}}(t)`` from ``d/dt Ad_{C_{i,p}} = -qd_i ad(X_i) Ad_{C_{i,p}}`` (sec. II.C),
- ``V_i = Ad_{C_{i,p}} V_p + X_i qd_i``; the body acceleration is the derivative of ``V_i`` plus
  gravity ``G_i = Ad_{C_{i,p}} G_p``, ``G_base = (0, -g)`` (the base acceleration of
  Luh, Walker and Paul, "On-line computational scheme for mechanical manipulators", 1980),
- ``W_i = M_i (dV_i + G_i) - ad(V_i)^T M_i V_i - W_ext,i + sum_children Ad_{C_{c,i}}^T W_c``,
- ``tau_i = X_i^T W_i``.

Every array keeps the Taylor-coefficient axis first and the (flattened) batch second, so one
call evaluates many trajectory samples without a Python loop over samples.

This is the reference: readable beside the paper, and the numpy backend. The compiled kernel
(:mod:`hod_dynamics.kernels.rnea_kernels`) computes the same numbers; which one runs, in which blocks and
threads, is chosen by :mod:`hod_dynamics.algorithms.dispatch`.
"""

import numpy as np

from ..arrays import check_wrench
from ..model.spatial import Ad, inverse, rotation_matrix, screw_exp
from .jets import cauchy_bias, cauchy_matTvec, cauchy_matvec, cross, from_taylor, to_taylor


def joint_adjoint_taylor(model, qc, wc, K):
    """Taylor coefficients of ``Ad_{C_{i,parent}}`` for every joint.

    ``qc`` (>=1, B, n) coefficients of q, ``wc`` (>=K-1, B, n) of qd. Returns (K, B, n, 6, 6):
    the twist transform from the parent body frame to body i's frame and its derivatives / k!.
    """
    A = np.empty((K,) + qc.shape[1:] + (6, 6))
    A[0] = Ad(screw_exp(model.screws, -qc[0])) @ model.Ad_references_inv
    adX = model.ad_screws
    for k in range(1, K):
        S = np.einsum("jbn,jbnrc->bnrc", wc[:k][::-1], A[:k])
        A[k] = (-1.0 / k) * (adX @ S)
    return A


def wrench_taylor(model, wrenches, batch_shape, K):
    """External wrenches -> body-frame Taylor coefficients (K, B, n, 6) (n + 1 slots for a
    floating model, the last one the base body).

    ``wrenches`` maps URDF link names to derivative jets (*batch, K, 6) of the wrench
    ``(torque, force)`` that the environment applies ON that link, expressed in the link's
    frame, torque about the link frame origin (N m, N). Wrenches on links rigidly attached
    to a fixed base do no work on the joints and are ignored.
    """
    B = int(np.prod(batch_shape, dtype=int))
    return wrench_block(model, wrench_terms(model, wrenches, batch_shape, K), 0, B, K)


def wrench_terms(model, wrenches, batch_shape, K):
    """Validate wrenches; returns [(body, Ad(pose^-1) (6, 6), jet (B or 1, K, 6))]: a link wrench
    w (row) is ``w @ Ad(pose^-1)`` in the body frame (``Ad^T`` maps wrenches to the child).
    The base body of a floating model is body ``n``."""
    terms = []
    for link, jet in (wrenches or {}).items():
        frame = model.frame(link)
        W = check_wrench(link, jet, K, batch_shape)
        if frame.body < 0 and not model.floating:
            continue
        # a wrench without batch axes stays one row (broadcast per block, no full-size copy)
        full = np.broadcast_to(W, tuple(batch_shape) + (K, 6))
        W = W.reshape(1, K, 6) if W.ndim == 2 else full.reshape(-1, K, 6)
        body = frame.body if frame.body >= 0 else model.n_dof
        terms.append((body, Ad(inverse(frame.pose)), W))
    return terms


def wrench_block(model, terms, start, stop, K):
    """Body-frame wrench coefficients (K, stop-start, n (+1 floating), 6) of samples start..stop-1."""
    out = np.zeros((K, stop - start, model.n_dof + model.floating, 6))
    for body, Ad_inv, W in terms:
        rows = W if len(W) == 1 else W[start:stop]
        out[:, :, body] += to_taylor(rows) @ Ad_inv
    return out


def rnea_taylor(model, qc, wc, K, wext=None, root=None):
    """Newton-Euler on Taylor coefficients: returns tau coefficients (K, B, n).

    ``qc`` (K+1, B, n), ``wc`` (K+1, B, n): coefficients of q and qd; ``wext`` (K, B, n, 6)
    body-frame wrench coefficients or None. The twist needs one coefficient more than tau
    because the acceleration is its derivative.

    ``root`` (floating base): ``(VR (K+1, B, 6), GR (K, B, 6))`` coefficients of the base body
    twist and of the gravity twist ``(0, -R^T g)`` in the base frame; then ``wext`` has a last
    slot for the base and the result is ``(tau (K, B, n), base wrench (K, B, 6))``.
    """
    n = model.n_dof
    B = qc.shape[1]
    A, V, acc = forward_taylor(model, qc, wc, K, root)
    W = [None] * n
    for i in range(n):
        W[i] = _newton_euler(model.inertias[i], acc[i], V[i], K)
        if wext is not None:
            W[i] -= wext[:, :, i]
    tau = np.empty((K, B, n))
    W_root = None if root is None else np.zeros((K, B, 6))
    for i in reversed(range(n)):
        tau[:, :, i] = W[i] @ model.screws[i]
        p = model.parents[i]
        if p >= 0:
            W[p] = W[p] + cauchy_matTvec(A[:K, :, i], W[i], K)
        elif root is not None:
            W_root += cauchy_matTvec(A[:K, :, i], W[i], K)
    if root is None:
        return tau
    VR, GR = root
    W_root += _newton_euler(model.base_inertia, body_acceleration(VR, GR, K), VR, K)
    if wext is not None:
        W_root -= wext[:, :, n]
    return tau, W_root


def forward_taylor(model, qc, wc, K, root=None):
    """The forward pass of :func:`rnea_taylor`: ``(A, V, acc)`` with ``A`` (K+1, B, n, 6, 6)
    the coefficients of ``Ad_{C_{i,parent}}``, and per body i ``V[i]`` (K+1, B, 6) the body
    twist and ``acc[i]`` (K, B, 6) its acceleration plus gravity ``dV_i + G_i`` (body frame)."""
    n = model.n_dof
    A = joint_adjoint_taylor(model, qc, wc, K + 1)
    g0 = np.concatenate([np.zeros(3), -model.gravity])
    V, G, acc = [None] * n, [None] * n, [None] * n
    for i in range(n):
        p = model.parents[i]
        X = model.screws[i]
        Ai = A[:, :, i]
        if p < 0 and root is None:
            Vi = wc[:K + 1, :, i, None] * X
            Gi = Ai[:K] @ g0
        else:
            Vp, Gp = root if p < 0 else (V[p], G[p])
            Vi = cauchy_matvec(Ai, Vp, K + 1) + wc[:K + 1, :, i, None] * X
            Gi = cauchy_matvec(Ai, Gp, K)
        V[i], G[i] = Vi, Gi
        acc[i] = body_acceleration(Vi, Gi, K)
    return A, V, acc


def body_acceleration(V, G, K):
    """``dV + G`` (K, B, 6) of a body from its twist coefficients ``V`` (K+1, B, 6) and its
    gravity twist's ``G`` (K, B, 6): coefficient k of dV is (k+1) V_{k+1}."""
    return np.arange(1, K + 1, dtype=float)[:, None, None] * V[1:K + 1] + G


def _newton_euler(M, acc, V, K):
    """Wrench coefficients ``M acc_k + sum_j -ad(V_j)^T M V_{k-j}`` (K, B, 6) of one body."""
    return acc @ M.T + cauchy_bias(V, V[:K] @ M.T, K)


def gravity_taylor(R, gravity, omega, K):
    """Taylor coefficients (B, K, 3) of ``-R^T g`` (gravity as an upward acceleration of the
    base, in the base frame) along the motion: ``R`` (B, 3, 3) the base orientation now,
    ``omega`` (B, >=K-1, 3) Taylor coefficients of the base angular velocity (base frame).

    From ``d/dt (R^T g) = -omega x (R^T g)``: ``(k+1) c_{k+1} = -sum_j omega_j x c_{k-j}``.
    """
    c = np.empty((R.shape[0], K, 3))
    c[:, 0] = -np.einsum("bji,j->bi", R, gravity)
    for k in range(K - 1):
        acc = cross(omega[:, 0], c[:, k])
        for j in range(1, k + 1):
            acc += cross(omega[:, j], c[:, k - j])
        c[:, k + 1] = -acc / (k + 1)
    return c


def root_taylor(model, quat, vbase, K):
    """The base's Taylor coefficients for the recursion: twist ``VR`` (K+1, B, 6) from the
    derivative rows ``vbase`` (B, K+1, 6), gravity twist ``GR`` (K, B, 6) = (0, -R^T g) and its
    jet (:func:`gravity_taylor`) from the unit quaternions ``quat`` (B, 4)."""
    VR = to_taylor(vbase)
    GR = gravity_taylor(rotation_matrix(quat), model.gravity, np.moveaxis(VR[:, :, :3], 0, 1), K)
    G6 = np.concatenate([np.zeros(GR.shape), GR], axis=-1)
    return VR, np.ascontiguousarray(np.moveaxis(G6, 1, 0))


def rnea_jets(model, jet, K, wext, out, root=None):
    """The numpy path of the recursion on a block of samples: jet (B, K+2, n) of finite numbers
    (q^(0..K+1)) -> tau^(0..K-1) written into ``out`` (B, K, n) (and the base wrench jet into
    ``root[2]`` (B, K, 6) for a floating base, ``root = (quat (B, 4), vbase (B, K+1, 6), base)``);
    ``wext`` (K, B, n (+1), 6) body-frame wrench coefficients or None. Returns True (the
    compiled kernel's signature: it returns False on a NaN)."""
    c = to_taylor(jet[:, :K + 1])
    wc = to_taylor(jet[:, 1:K + 2])
    if root is None:
        out[...] = from_taylor(rnea_taylor(model, c, wc, K, wext), jet.shape[:1])
        return True
    quat, vbase, base = root
    tau, W = rnea_taylor(model, c, wc, K, wext, root_taylor(model, quat, vbase, K))
    out[...] = from_taylor(tau, jet.shape[:1])
    base[...] = from_taylor(W, jet.shape[:1])
    return True
