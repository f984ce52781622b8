"""Compiled (numba) kernel of the regressor of :mod:`hod_dynamics.algorithms.regressors`.

The same quantities as :func:`hod_dynamics.algorithms.regressors.regressor_taylor`, on scalars, one sample
at a time (the batch loop is outermost; threads split large batches); order 0 of a fixed base,
for batches of ``ONE_BY_ONE_BELOW`` samples or more, in SIMD lanes of ``LANES`` samples
(:func:`_regressor_tau_lanes`, on the forward pass of the recursion's lanes). Instead of carrying each
body's ten parameter wrenches down to the root (10 wrench transforms per level), every joint
screw is carried *up* once to each body below it: ``S_{j->i} = Ad_{C_{i,p}} S_{j->p}`` (one
twist transform per pair), and the column block of body i in row j is ``S_{j->i}^T U_i``,
``U_i`` the body's wrench per unit parameter. For a floating base the six unit twists of the
base frame are carried up the same way and give the base rows. On jets both are Cauchy
products of Taylor coefficients.

The parameter wrenches use the structure of the unit inertias ``E_p`` (:mod:`hod_dynamics.model.inertia`):
for a twist (w, v), ``E_m (w, v) = (0, v)``, ``E_{h_e} (w, v) = (e x v, w x e)`` and
``E_{I_S} (w, v) = (S w, 0)``, and ``-ad(V)^T (L, F) = (w x L + v x F, w x F)``.
"""

import numpy as np

from ..model.robot_model import per_model
from .block_spatial import ad_apply_add
from .njit import inline, njit
from .rnea_kernels import (LANES, ONE_BY_ONE_BELOW, factorials, forward_body, forward_lanes, gravity_jet,
                           jet_finite, kernel_model)

@njit
def _forward(parents, screws, R0, P0, g0, jet, b, K, fact, floating, VR, GR, R, P, V, acc, G, wc, E):
    """The forward pass of :func:`hod_dynamics.kernels.rnea_kernels.rnea_one` for sample b (R, P, V, G of
    every body; a floating base moves with VR[0] (K+1, 6) and gravity GR[0] (K, 3)), and each
    body's acceleration plus gravity acc (n, K, 6) = ``dV + (0, G)``."""
    for i in range(screws.shape[0]):
        forward_body(parents, screws, R0, P0, g0, jet, b, i, K, fact, R, P, V, G, wc, E, floating, VR, GR, 0)
        for k in range(K):
            for r in range(6):
                acc[i, k, r] = (k + 1.0) * V[i, k + 1, r]
            for r in range(3):
                acc[i, k, r + 3] += G[i, k, r]


@njit
def _parameter_wrenches(V, acc, i, K, U):
    """U (K, 10, 6): coefficients of body i's wrench per unit parameter,
    ``E_p acc_k + sum_l -ad(V_l)^T E_p V_{k-l}`` (V (.., K+1, 6), acc (.., K, 6))."""
    for k in range(K):
        al0, al1, al2 = acc[i, k, 0], acc[i, k, 1], acc[i, k, 2]
        a0, a1, a2 = acc[i, k, 3], acc[i, k, 4], acc[i, k, 5]
        # E_p acc: m -> (0, a); h_e -> (e x a, al x e); I_S -> (S al, 0)
        U[k, 0, 0] = U[k, 0, 1] = U[k, 0, 2] = 0.0
        U[k, 0, 3], U[k, 0, 4], U[k, 0, 5] = a0, a1, a2
        U[k, 1, 0], U[k, 1, 1], U[k, 1, 2] = 0.0, -a2, a1          # e_x x a
        U[k, 1, 3], U[k, 1, 4], U[k, 1, 5] = 0.0, al2, -al1        # al x e_x
        U[k, 2, 0], U[k, 2, 1], U[k, 2, 2] = a2, 0.0, -a0
        U[k, 2, 3], U[k, 2, 4], U[k, 2, 5] = -al2, 0.0, al0
        U[k, 3, 0], U[k, 3, 1], U[k, 3, 2] = -a1, a0, 0.0
        U[k, 3, 3], U[k, 3, 4], U[k, 3, 5] = al1, -al0, 0.0
        for p in range(4, 10):
            for r in range(6):
                U[k, p, r] = 0.0
        U[k, 4, 0] = al0                                       # Ixx
        U[k, 5, 0], U[k, 5, 1] = al1, al0                      # Ixy
        U[k, 6, 1] = al1                                       # Iyy
        U[k, 7, 0], U[k, 7, 2] = al2, al0                      # Ixz
        U[k, 8, 1], U[k, 8, 2] = al2, al1                      # Iyz
        U[k, 9, 2] = al2                                       # Izz
        for j in range(k + 1):
            m = k - j
            w0, w1, w2 = V[i, j, 0], V[i, j, 1], V[i, j, 2]
            v0, v1, v2 = V[i, j, 3], V[i, j, 4], V[i, j, 5]
            x0, x1, x2 = V[i, m, 0], V[i, m, 1], V[i, m, 2]      # w'
            y0, y1, y2 = V[i, m, 3], V[i, m, 4], V[i, m, 5]      # v'
            # m: (L, F) = (0, v') -> (v x v', w x v')
            U[k, 0, 0] += v1 * y2 - v2 * y1
            U[k, 0, 1] += v2 * y0 - v0 * y2
            U[k, 0, 2] += v0 * y1 - v1 * y0
            U[k, 0, 3] += w1 * y2 - w2 * y1
            U[k, 0, 4] += w2 * y0 - w0 * y2
            U[k, 0, 5] += w0 * y1 - w1 * y0
            # h_e: (L, F) = (e x v', w' x e) -> (w x L + v x F, w x F)
            for e in range(3):
                if e == 0:
                    L0, L1, L2, F0, F1, F2 = 0.0, -y2, y1, 0.0, x2, -x1
                elif e == 1:
                    L0, L1, L2, F0, F1, F2 = y2, 0.0, -y0, -x2, 0.0, x0
                else:
                    L0, L1, L2, F0, F1, F2 = -y1, y0, 0.0, x1, -x0, 0.0
                U[k, 1 + e, 0] += w1 * L2 - w2 * L1 + v1 * F2 - v2 * F1
                U[k, 1 + e, 1] += w2 * L0 - w0 * L2 + v2 * F0 - v0 * F2
                U[k, 1 + e, 2] += w0 * L1 - w1 * L0 + v0 * F1 - v1 * F0
                U[k, 1 + e, 3] += w1 * F2 - w2 * F1
                U[k, 1 + e, 4] += w2 * F0 - w0 * F2
                U[k, 1 + e, 5] += w0 * F1 - w1 * F0
            # I_S: (L, F) = (S w', 0) -> (w x L, 0)
            U[k, 4, 1] += w2 * x0
            U[k, 4, 2] -= w1 * x0
            U[k, 5, 0] -= w2 * x0                       # L = (x1, x0, 0)
            U[k, 5, 1] += w2 * x1
            U[k, 5, 2] += w0 * x0 - w1 * x1
            U[k, 6, 0] -= w2 * x1
            U[k, 6, 2] += w0 * x1
            U[k, 7, 0] += w1 * x0                       # L = (x2, 0, x0)
            U[k, 7, 1] += w2 * x2 - w0 * x0
            U[k, 7, 2] -= w1 * x2
            U[k, 8, 0] += w1 * x1 - w2 * x2             # L = (0, x2, x1)
            U[k, 8, 1] -= w0 * x1
            U[k, 8, 2] += w0 * x2
            U[k, 9, 0] += w1 * x2
            U[k, 9, 1] -= w0 * x2


@njit
def _carry_up(R, P, i, S, src, a, K):
    """S[i, a] (K, 6) = coefficients of ``Ad_{C_{i,parent}} S[src, a]``: ``sum_l Ad_l
    S[src, a, k-l]``, Ad (w, v) = (R w, P w + R v). Whole arrays and indices, no slices: a
    view's reference counting would cost more than the arithmetic."""
    for k in range(K):
        for r in range(6):
            S[i, a, k, r] = 0.0
        for j in range(k + 1):
            m = k - j
            x0, x1, x2 = S[src, a, m, 0], S[src, a, m, 1], S[src, a, m, 2]
            x3, x4, x5 = S[src, a, m, 3], S[src, a, m, 4], S[src, a, m, 5]
            for r in range(3):
                S[i, a, k, r] += R[i, j, r, 0] * x0 + R[i, j, r, 1] * x1 + R[i, j, r, 2] * x2
                S[i, a, k, r + 3] += (P[i, j, r, 0] * x0 + P[i, j, r, 1] * x1 + P[i, j, r, 2] * x2
                                      + R[i, j, r, 0] * x3 + R[i, j, r, 1] * x4 + R[i, j, r, 2] * x5)


@njit
def _base_direction(R, P, i, S, a, d, K):
    """S[i, a] (K, 6) = coefficients of ``Ad_{C_{i,base}} e_d``: column d of the Ad jet."""
    for k in range(K):
        for r in range(3):
            if d < 3:
                S[i, a, k, r], S[i, a, k, r + 3] = R[i, k, r, d], P[i, k, r, d]
            else:
                S[i, a, k, r], S[i, a, k, r + 3] = 0.0, R[i, k, r, d - 3]


@njit
def _project(S, i, a, U, K, fact, out, b, row, col):
    """out[b, k, row, col:col+10] = k! sum_l S[i, a, l] . U_{k-l} (the derivatives of S^T U)."""
    for k in range(K):
        for p in range(10):
            t = 0.0
            for j in range(k + 1):
                m = k - j
                t += (S[i, a, j, 0] * U[m, p, 0] + S[i, a, j, 1] * U[m, p, 1] + S[i, a, j, 2] * U[m, p, 2]
                      + S[i, a, j, 3] * U[m, p, 3] + S[i, a, j, 4] * U[m, p, 4] + S[i, a, j, 5] * U[m, p, 5])
            out[b, k, row, col + p] = t * fact[k]


@njit
def _body_terms(V, acc, i, T):
    """T (13,) of body i for the order-0 projection: w (3), alpha (3), f_m = a + w x v (3),
    |w|^2, then unused (the columns of :func:`_project_tau` need no more)."""
    w0, w1, w2 = V[i, 0, 0], V[i, 0, 1], V[i, 0, 2]
    v0, v1, v2 = V[i, 0, 3], V[i, 0, 4], V[i, 0, 5]
    T[0], T[1], T[2] = w0, w1, w2
    T[3], T[4], T[5] = acc[i, 0, 0], acc[i, 0, 1], acc[i, 0, 2]
    T[6] = acc[i, 0, 3] + w1 * v2 - w2 * v1
    T[7] = acc[i, 0, 4] + w2 * v0 - w0 * v2
    T[8] = acc[i, 0, 5] + w0 * v1 - w1 * v0
    T[9] = w0 * w0 + w1 * w1 + w2 * w2


@inline
def _write_tau_columns(out, b, row, col, x0, x1, x2, y0, y1, y2, w0, w1, w2, al0, al1, al2, f0, f1, f2, ww):
    """out[b, 0, row, col:col+10]: the order-0 columns of a body for the twist (x, y) carried
    to its frame (module docstring): m: y . f_m; h: f_m x x + y x alpha + w (y . w) - y |w|^2;
    I_S: x^T S alpha + (x x w)^T S w, with w, alpha the body's angular velocity and
    acceleration, f_m = a + w x v, ww = |w|^2."""
    yw = y0 * w0 + y1 * w1 + y2 * w2
    out[b, 0, row, col] = y0 * f0 + y1 * f1 + y2 * f2
    out[b, 0, row, col + 1] = f1 * x2 - f2 * x1 + y1 * al2 - y2 * al1 + w0 * yw - y0 * ww
    out[b, 0, row, col + 2] = f2 * x0 - f0 * x2 + y2 * al0 - y0 * al2 + w1 * yw - y1 * ww
    out[b, 0, row, col + 3] = f0 * x1 - f1 * x0 + y0 * al1 - y1 * al0 + w2 * yw - y2 * ww
    z0, z1, z2 = x1 * w2 - x2 * w1, x2 * w0 - x0 * w2, x0 * w1 - x1 * w0
    out[b, 0, row, col + 4] = x0 * al0 + z0 * w0
    out[b, 0, row, col + 5] = x0 * al1 + x1 * al0 + z0 * w1 + z1 * w0
    out[b, 0, row, col + 6] = x1 * al1 + z1 * w1
    out[b, 0, row, col + 7] = x0 * al2 + x2 * al0 + z0 * w2 + z2 * w0
    out[b, 0, row, col + 8] = x1 * al2 + x2 * al1 + z1 * w2 + z2 * w1
    out[b, 0, row, col + 9] = x2 * al2 + z2 * w2


@njit
def _project_tau(S, i, a, T, out, b, row, col):
    """Order 0 in closed form (no parameter wrenches formed): :func:`_write_tau_columns` of the
    twist S[i, a, 0] and the body terms T of :func:`_body_terms`."""
    x0, x1, x2, y0, y1, y2 = S[i, a, 0, 0], S[i, a, 0, 1], S[i, a, 0, 2], S[i, a, 0, 3], S[i, a, 0, 4], S[i, a, 0, 5]
    w0, w1, w2, al0, al1, al2 = T[0], T[1], T[2], T[3], T[4], T[5]
    f0, f1, f2, ww = T[6], T[7], T[8], T[9]
    _write_tau_columns(out, b, row, col, x0, x1, x2, y0, y1, y2, w0, w1, w2, al0, al1, al2, f0, f1, f2, ww)


@njit
def regressor_jets(parents, screws, R0, P0, g0, gravity, jet, quat, vbase, K, out):
    """Regressor jets of a batch: ``out`` (B, K, nv, 10 n_bodies) is overwritten with
    Y^(0..K-1) (derivatives; the structural zeros too). ``parents`` (n,), ``screws`` (n, 6), ``R0, P0`` (n, 3, 3) the
    blocks of ``Ad(B_i^-1)``, ``g0`` (6,) the base acceleration (0, -g) of a fixed base;
    ``jet`` (B, >=K+2, n) q^(0..K+1). A floating base (``quat`` (B, 4) unit quaternions,
    ``vbase`` (B, K+1, 6) its body twist's derivative rows; both with 0 rows for a fixed base)
    feels ``gravity`` (3,) of the world. Returns False, computing nothing, when the jet holds a
    NaN or an infinity."""
    B = jet.shape[0]
    n = screws.shape[0]
    if not jet_finite(jet, K + 2):
        return False
    floating = quat.shape[0] > 0
    if K == 1 and not floating and B >= ONE_BY_ONE_BELOW:
        _regressor_tau_lanes(parents, screws, R0, P0, g0, jet, out)
        return True
    nbase = 6 if floating else 0
    fact = factorials(K + 2)
    R, P = np.empty((n, K + 1, 3, 3)), np.empty((n, K + 1, 3, 3))
    V, acc, G = np.empty((n, K + 1, 6)), np.empty((n, K, 6)), np.empty((n, K, 3))
    wc, E = np.empty(K + 1), np.empty((3, 3))
    U, T = np.empty((K, 10, 6)), np.empty(10)
    # S[i, a]: joint a's screw (a < n) or base direction a - n carried up to body i's frame
    S = np.zeros((n, n + nbase, K, 6))
    VR, GR = np.zeros((1, K + 1, 6)), np.zeros((1, K, 3))
    accR = np.zeros((1, K, 6))
    for b in range(B):
        out[b] = 0.0   # every entry written: the caller's array need not be zeroed
        if floating:
            for k in range(K + 1):
                for r in range(6):
                    VR[0, k, r] = vbase[b, k, r] / fact[k]
            gravity_jet(quat, b, gravity, VR, GR, 0, K)
        _forward(parents, screws, R0, P0, g0, jet, b, K, fact, floating, VR, GR, R, P, V, acc, G, wc, E)
        for i in range(n):
            par = parents[i]
            for k in range(K):
                for r in range(6):
                    S[i, i, k, r] = screws[i, r] if k == 0 else 0.0
            if par >= 0:
                a = par
                while a >= 0:
                    _carry_up(R, P, i, S, par, a, K)
                    a = parents[a]
                if floating:
                    for d in range(6):
                        _carry_up(R, P, i, S, par, n + d, K)
            elif floating:
                for d in range(6):
                    _base_direction(R, P, i, S, n + d, d, K)
            col = 10 * (i + (1 if floating else 0))
            if K == 1:  # tau itself (identification): the columns in closed form
                _body_terms(V, acc, i, T)
                a = i
                while a >= 0:
                    _project_tau(S, i, a, T, out, b, nbase + a, col)
                    a = parents[a]
                if floating:
                    for d in range(6):
                        _project_tau(S, i, n + d, T, out, b, d, col)
                continue
            _parameter_wrenches(V, acc, i, K, U)
            a = i
            while a >= 0:
                _project(S, i, a, U, K, fact, out, b, nbase + a, col)
                a = parents[a]
            if floating:
                for d in range(6):
                    _project(S, i, n + d, U, K, fact, out, b, d, col)
        if floating:  # the base body: its own wrench per parameter in the base frame
            for k in range(K):
                for r in range(6):
                    accR[0, k, r] = (k + 1.0) * VR[0, k + 1, r]
                for r in range(3):
                    accR[0, k, r + 3] += GR[0, k, r]
            _parameter_wrenches(VR, accR, 0, K, U)
            for k in range(K):
                for p in range(10):
                    for r in range(6):
                        out[b, k, r, p] = U[k, p, r] * fact[k]
    return True


@njit
def _regressor_tau_lanes(parents, screws, R0, P0, g0, jet, out):
    """Order 0 of a fixed base, ``LANES`` samples at a time (the sample index innermost, so
    that the compiler vectorises every step, as in :func:`hod_dynamics.kernels.rnea_kernels.rnea_lanes`):
    the forward pass of ``forward_lanes``, the screws carried up (pair (i, a) of body i and
    its ancestor a at row ``i n + a``), the columns of :func:`_project_tau` per lane."""
    B = jet.shape[0]
    n = screws.shape[0]
    L = min(LANES, max(B, 1))
    fact = factorials(3)
    AR, AP = np.empty((n, 2, 3, 3, L)), np.empty((n, 2, 3, 3, L))
    V, G = np.empty((n, 2, 6, L)), np.empty((n, 1, 3, L))
    wc, theta, E = np.empty((2, L)), np.empty(L), np.empty((3, 3))
    SR, SP = np.empty((3, 3, L)), np.empty((3, 3, L))
    carried = np.empty((n * n, 1, 6, L))
    for b0 in range(0, B, L):
        S = min(L, B - b0)
        out[b0:b0 + S] = 0.0   # in cache, just before the writes: the caller's array need not be zeroed
        for i in range(n):
            p = parents[i]
            forward_lanes(screws, R0, P0, g0, jet, b0, i, p, 1, fact, AR, AP, V, G, wc, theta, SR, SP, E, S)
            for r in range(6):
                for s in range(S):
                    carried[i * n + i, 0, r, s] = screws[i, r]
            a = p
            while a >= 0:
                carried[i * n + a, 0, :, :S] = 0.0
                ad_apply_add(AR, AP, i, 0, carried, p * n + a, 0, carried, i * n + a, 0, S)
                a = parents[a]
            a = i
            while a >= 0:
                _project_tau_lanes(carried, i * n + a, V, G, i, out, b0, a, 10 * i, S)
                a = parents[a]


@njit
def _project_tau_lanes(carried, pair, V, G, i, out, b0, row, col, S):
    """:func:`_project_tau` for the lanes of :func:`_regressor_tau_lanes`: the twist
    ``carried[pair, 0]`` (6, L) against body i's twist V[i, 0] and acceleration V[i, 1] + (0, G[i, 0])."""
    for s in range(S):
        x0, x1, x2 = carried[pair, 0, 0, s], carried[pair, 0, 1, s], carried[pair, 0, 2, s]
        y0, y1, y2 = carried[pair, 0, 3, s], carried[pair, 0, 4, s], carried[pair, 0, 5, s]
        w0, w1, w2 = V[i, 0, 0, s], V[i, 0, 1, s], V[i, 0, 2, s]
        v0, v1, v2 = V[i, 0, 3, s], V[i, 0, 4, s], V[i, 0, 5, s]
        al0, al1, al2 = V[i, 1, 0, s], V[i, 1, 1, s], V[i, 1, 2, s]
        f0 = V[i, 1, 3, s] + G[i, 0, 0, s] + w1 * v2 - w2 * v1
        f1 = V[i, 1, 4, s] + G[i, 0, 1, s] + w2 * v0 - w0 * v2
        f2 = V[i, 1, 5, s] + G[i, 0, 2, s] + w0 * v1 - w1 * v0
        ww = w0 * w0 + w1 * w1 + w2 * w2
        _write_tau_columns(out, b0 + s, row, col, x0, x1, x2, y0, y1, y2, w0, w1, w2, al0, al1, al2, f0, f1, f2, ww)


@per_model
def regressor_arrays(model):
    """The model arrays :func:`regressor_jets` takes, packed once per model: parents, screws,
    the blocks R0, P0 of ``Ad(B_i^-1)``, the fixed base's acceleration (0, -g) and the world
    gravity of a floating base (those of :func:`hod_dynamics.kernels.rnea_kernels.kernel_model`)."""
    parents, screws, R0, P0, _, g0 = kernel_model(model)
    return parents, screws, R0, P0, g0, np.array(model.gravity, dtype=float)
