"""Compiled (numba) kernels of the recursive Newton-Euler on Taylor jets in the general form.

The same algorithm as :func:`hod_dynamics.algorithms.recursive.rnea_taylor`, written as plain loops over
samples, bodies and Taylor coefficients so that numba compiles it to machine code; numpy's
per-call overhead (many tiny arrays per body) dominates the vectorised path for one sample.
Fixed bases whose joints are all revolute or prismatic run the generated kernels of
:mod:`hod_dynamics.kernels.rnea_ir` instead (joint-aligned frames, several times faster); these
kernels serve what those do not: screws with a pitch (:func:`rnea_jets_general`) and floating
bases (:func:`rnea_floating`). Structure exploited (same numbers, fewer operations):

- every ``Ad`` coefficient keeps the block form ``[[R, 0], [P, R]]`` (ad(X) and Ad(B^-1) have
  it, and sums and products preserve it), so it is stored as two 3x3 blocks (R, P);
- ``Ad (w, v) = (R w, P w + R v)`` on twists and ``Ad^T (t, f) = (R^T t + P^T f, R^T f)``
  on wrenches;
- samples are processed in blocks of ``LANES`` with the sample index innermost in every
  scratch array (structure of arrays), so each elementary operation is a short contiguous
  loop that the compiler turns into SIMD instructions;
- helpers take whole arrays and indices rather than slices: a slice is an array view whose
  reference counting costs more than the arithmetic on one sample;
- below ``ONE_BY_ONE_BELOW`` samples the lanes do not pay for their loop and call overheads,
  and :func:`rnea_one` runs the same recursion on scalars, sample by sample.

The model arrays each kernel reads are packed beside it, at the end of this module, once per
model (:func:`rnea_kernel`, :func:`kernel_model`); the dispatcher (:mod:`hod_dynamics.algorithms.dispatch`)
chooses the kernel and hands it validated arrays.

The floating-base kernel (:mod:`hod_dynamics.kernels.floating_kernels`) runs these lanes and
the one-by-one recursion with a moving base; the regressor kernels reuse the forward step.

Importing this module needs numba; :mod:`hod_dynamics.kernels.backend` imports it only when asked.
``cache=True`` stores the machine code next to this file (or in numba's user-wide cache
when the install is read-only); without any writable cache location it compiles in memory.
"""


import numpy as np

from ..model.robot_model import per_model
from .block_spatial import (adT_apply_add, ad_apply_add, ad_screw, joint_adjoint, rot_apply_add,
                            rot_apply_const_add, screw_exp)
from .njit import inline, njit


LANES = 128  # measured: 128 to 160 lanes run fastest (64: 20 % slower on TALOS, 16: twice as slow)
ONE_BY_ONE_BELOW = 16  # measured: fewer samples run faster one by one, without lanes


@njit
def _body_wrench(M, i, V, G, h, W, K, S):
    """W_i,k = M (dV_k + G_k) + sum_j -ad(V_j)^T h_{k-j} with h_k = M V_k, k < K; G (n, K, 3, L)
    holds the linear part of the gravity twist (its angular part is zero)."""
    for k in range(K):
        for r in range(6):
            for s in range(S):
                h[k, r, s] = (M[i, r, 0] * V[i, k, 0, s] + M[i, r, 1] * V[i, k, 1, s]
                              + M[i, r, 2] * V[i, k, 2, s] + M[i, r, 3] * V[i, k, 3, s]
                              + M[i, r, 4] * V[i, k, 4, s] + M[i, r, 5] * V[i, k, 5, s])
    for k in range(K):
        c = k + 1.0  # d/dt of the Taylor series: coefficient k of dV is (k + 1) V_{k+1}
        for r in range(6):
            for s in range(S):
                t = 0.0
                for col in range(3):
                    t += M[i, r, col] * (c * V[i, k + 1, col, s])
                for col in range(3, 6):
                    t += M[i, r, col] * (c * V[i, k + 1, col, s] + G[i, k, col - 3, s])
                W[i, k, r, s] = t
        # -ad(V)^T h = (w x L + v x F, w x F) for V = (w, v), h = (L, F); two terms per pass
        # (the pairs (j, k - j) and (k - j, j)): half the stores
        for j in range(0, k, 2):
            m = k - j
            for s in range(S):
                w0, w1, w2 = V[i, j, 0, s], V[i, j, 1, s], V[i, j, 2, s]
                v0, v1, v2 = V[i, j, 3, s], V[i, j, 4, s], V[i, j, 5, s]
                L0, L1, L2 = h[m, 0, s], h[m, 1, s], h[m, 2, s]
                F0, F1, F2 = h[m, 3, s], h[m, 4, s], h[m, 5, s]
                a0, a1, a2 = V[i, j + 1, 0, s], V[i, j + 1, 1, s], V[i, j + 1, 2, s]
                b0, b1, b2 = V[i, j + 1, 3, s], V[i, j + 1, 4, s], V[i, j + 1, 5, s]
                P0, P1, P2 = h[m - 1, 0, s], h[m - 1, 1, s], h[m - 1, 2, s]
                Q0, Q1, Q2 = h[m - 1, 3, s], h[m - 1, 4, s], h[m - 1, 5, s]
                W[i, k, 0, s] += (w1 * L2 - w2 * L1 + v1 * F2 - v2 * F1) + (
                    a1 * P2 - a2 * P1 + b1 * Q2 - b2 * Q1)
                W[i, k, 1, s] += (w2 * L0 - w0 * L2 + v2 * F0 - v0 * F2) + (
                    a2 * P0 - a0 * P2 + b2 * Q0 - b0 * Q2)
                W[i, k, 2, s] += (w0 * L1 - w1 * L0 + v0 * F1 - v1 * F0) + (
                    a0 * P1 - a1 * P0 + b0 * Q1 - b1 * Q0)
                W[i, k, 3, s] += (w1 * F2 - w2 * F1) + (a1 * Q2 - a2 * Q1)
                W[i, k, 4, s] += (w2 * F0 - w0 * F2) + (a2 * Q0 - a0 * Q2)
                W[i, k, 5, s] += (w0 * F1 - w1 * F0) + (a0 * Q1 - a1 * Q0)
        if k % 2 == 0:
            for s in range(S):
                w0, w1, w2 = V[i, k, 0, s], V[i, k, 1, s], V[i, k, 2, s]
                v0, v1, v2 = V[i, k, 3, s], V[i, k, 4, s], V[i, k, 5, s]
                L0, L1, L2 = h[0, 0, s], h[0, 1, s], h[0, 2, s]
                F0, F1, F2 = h[0, 3, s], h[0, 4, s], h[0, 5, s]
                W[i, k, 0, s] += w1 * L2 - w2 * L1 + v1 * F2 - v2 * F1
                W[i, k, 1, s] += w2 * L0 - w0 * L2 + v2 * F0 - v0 * F2
                W[i, k, 2, s] += w0 * L1 - w1 * L0 + v0 * F1 - v1 * F0
                W[i, k, 3, s] += w1 * F2 - w2 * F1
                W[i, k, 4, s] += w2 * F0 - w0 * F2
                W[i, k, 5, s] += w0 * F1 - w1 * F0


@inline
def _scalar_body_wrench(M, i, V, G, h, W, K):
    """W[i, k] = M (dV_k + G_k) + sum_j -ad(V_j)^T h_{k-j}, h_k = M V_k (k < K), one sample:
    :func:`_body_wrench` on scalars (V (n, K+1, 6), G (n, K, 3), h (K, 6), W (n, K, 6))."""
    for k in range(K):
        for r in range(6):
            t = 0.0
            for c in range(6):
                t += M[i, r, c] * V[i, k, c]
            h[k, r] = t
    for k in range(K):
        for r in range(6):
            t = 0.0
            for c in range(6):
                dv = (k + 1.0) * V[i, k + 1, c]
                if c >= 3:
                    dv += G[i, k, c - 3]
                t += M[i, r, c] * dv
            W[i, k, r] = t
        for j in range(k + 1):
            m = k - j
            u0, u1, u2 = V[i, j, 0], V[i, j, 1], V[i, j, 2]
            y0, y1, y2 = V[i, j, 3], V[i, j, 4], V[i, j, 5]
            L0, L1, L2, F0, F1, F2 = h[m, 0], h[m, 1], h[m, 2], h[m, 3], h[m, 4], h[m, 5]
            W[i, k, 0] += u1 * L2 - u2 * L1 + y1 * F2 - y2 * F1
            W[i, k, 1] += u2 * L0 - u0 * L2 + y2 * F0 - y0 * F2
            W[i, k, 2] += u0 * L1 - u1 * L0 + y0 * F1 - y1 * F0
            W[i, k, 3] += u1 * F2 - u2 * F1
            W[i, k, 4] += u2 * F0 - u0 * F2
            W[i, k, 5] += u0 * F1 - u1 * F0


@inline
def forward_body(parents, screws, R0, P0, g0, jet, b, i, K, fact, R, P, V, G, wc, E, floating, VR, GR, br):
    """The forward pass of body i for sample b, on scalars: R, P (n, K+1, 3, 3) the blocks of
    the coefficients of ``Ad_{C_{i,parent}}``, V (n, K+1, 6) the twist, G (n, K, 3) the linear
    part of the gravity twist; wc (K+1,) and E (3, 3) scratch. A floating base (``floating``)
    moves the bodies without a parent with the twist coefficients ``VR[br]`` (K+1, 6) and
    gravity ``GR[br]`` (K, 3); a fixed base has the constant gravity (0, -g) of ``g0``."""
    par = parents[i]
    for k in range(K + 1):
        wc[k] = jet[b, k + 1, i] / fact[k]
    w0, w1, w2 = screws[i, 0], screws[i, 1], screws[i, 2]
    v0, v1, v2 = screws[i, 3], screws[i, 4], screws[i, 5]
    # Ad_0 = Ad(exp(-X q)) Ad(B^-1): R = E R0, P = p~ E R0 + E P0
    p0, p1, p2 = screw_exp(screws, i, -jet[b, 0, i], E)
    for c in range(3):
        for r in range(3):
            R[i, 0, r, c] = (E[r, 0] * R0[i, 0, c] + E[r, 1] * R0[i, 1, c]
                             + E[r, 2] * R0[i, 2, c])
            P[i, 0, r, c] = (E[r, 0] * P0[i, 0, c] + E[r, 1] * P0[i, 1, c]
                             + E[r, 2] * P0[i, 2, c])
        r0, r1, r2 = R[i, 0, 0, c], R[i, 0, 1, c], R[i, 0, 2, c]
        P[i, 0, 0, c] += p1 * r2 - p2 * r1
        P[i, 0, 1, c] += p2 * r0 - p0 * r2
        P[i, 0, 2, c] += p0 * r1 - p1 * r0
    # Ad_k = (-1/k) ad(X) sum_{j<k} wc_{k-1-j} Ad_j, column by column
    for k in range(1, K + 1):
        s = -1.0 / k
        for c in range(3):
            a0 = a1 = a2 = e0 = e1 = e2 = 0.0
            for j in range(k):
                f = wc[k - 1 - j]
                a0 += f * R[i, j, 0, c]
                a1 += f * R[i, j, 1, c]
                a2 += f * R[i, j, 2, c]
                e0 += f * P[i, j, 0, c]
                e1 += f * P[i, j, 1, c]
                e2 += f * P[i, j, 2, c]
            R[i, k, 0, c] = s * (w1 * a2 - w2 * a1)
            R[i, k, 1, c] = s * (w2 * a0 - w0 * a2)
            R[i, k, 2, c] = s * (w0 * a1 - w1 * a0)
            P[i, k, 0, c] = s * (v1 * a2 - v2 * a1 + w1 * e2 - w2 * e1)
            P[i, k, 1, c] = s * (v2 * a0 - v0 * a2 + w2 * e0 - w0 * e2)
            P[i, k, 2, c] = s * (v0 * a1 - v1 * a0 + w0 * e1 - w1 * e0)
    # V_k = wc_k X + sum_j Ad_j V_par,k-j;  G_k = sum_j R_j G_par,k-j (linear part only)
    for k in range(K + 1):
        for r in range(6):
            V[i, k, r] = wc[k] * screws[i, r]
        if k < K:
            G[i, k, 0] = G[i, k, 1] = G[i, k, 2] = 0.0
        for j in range(k + 1):
            if par < 0 and not floating:
                if j == k and k < K:  # the fixed base: G = (0, -g), constant
                    for r in range(3):
                        G[i, k, r] = (R[i, k, r, 0] * g0[3] + R[i, k, r, 1] * g0[4]
                                      + R[i, k, r, 2] * g0[5])
                continue
            m = k - j
            gp0 = gp1 = gp2 = 0.0
            if par < 0:  # the floating base's twist and gravity
                x0, x1, x2 = VR[br, m, 0], VR[br, m, 1], VR[br, m, 2]
                x3, x4, x5 = VR[br, m, 3], VR[br, m, 4], VR[br, m, 5]
                if k < K:
                    gp0, gp1, gp2 = GR[br, m, 0], GR[br, m, 1], GR[br, m, 2]
            else:
                x0, x1, x2 = V[par, m, 0], V[par, m, 1], V[par, m, 2]
                x3, x4, x5 = V[par, m, 3], V[par, m, 4], V[par, m, 5]
                if k < K:
                    gp0, gp1, gp2 = G[par, m, 0], G[par, m, 1], G[par, m, 2]
            for r in range(3):
                V[i, k, r] += R[i, j, r, 0] * x0 + R[i, j, r, 1] * x1 + R[i, j, r, 2] * x2
                V[i, k, r + 3] += (P[i, j, r, 0] * x0 + P[i, j, r, 1] * x1 + P[i, j, r, 2] * x2
                                   + R[i, j, r, 0] * x3 + R[i, j, r, 1] * x4
                                   + R[i, j, r, 2] * x5)
                if k < K:
                    G[i, k, r] += (R[i, j, r, 0] * gp0 + R[i, j, r, 1] * gp1
                                   + R[i, j, r, 2] * gp2)


@njit
def rnea_one(parents, screws, R0, P0, inertias, g0, jet, b, K, wext, out, fact, R, P, V, G, W,
              h, wc, E, VR, GR, WR):
    """Sample b of :func:`rnea_jets_general`, without lanes: the same recursion on scalars, for one
    sample or a few, where the lanes' loop and call overheads cost more than the arithmetic.

    Work arrays (from :func:`rnea_jets_general`): R, P (n, K+1, 3, 3) the blocks of the Ad
    coefficients, V (n, K+1, 6), G (n, K, 3), W (n, K, 6), h (K, 6), wc (K+1,), E (3, 3).
    A floating base (``VR.shape[0] > 0``, see :func:`rnea_floating`): the bodies without a
    parent move with the base twist coefficients ``VR[b]`` (K+1, 6) and feel the gravity
    coefficients ``GR[b]`` (K, 3); their wrenches, moved to the base frame, are added to
    ``WR`` (K, 6).
    """
    n = screws.shape[0]
    has_w = wext.shape[1] > 0
    floating = VR.shape[0] > 0
    for i in range(n):
        forward_body(parents, screws, R0, P0, g0, jet, b, i, K, fact, R, P, V, G, wc, E, floating, VR, GR, b)
        # W_k = M (dV_k + G_k) + sum_j -ad(V_j)^T M V_{k-j} - W_ext,k
        _scalar_body_wrench(inertias, i, V, G, h, W, K)
        if has_w:
            for k in range(K):
                for r in range(6):
                    W[i, k, r] -= wext[k, b, i, r]
    for i in range(n - 1, -1, -1):
        for k in range(K):
            t = 0.0
            for r in range(6):
                t += W[i, k, r] * screws[i, r]
            out[b, k, i] = t * fact[k]
        par = parents[i]
        if par >= 0 or floating:
            # W_par,k += sum_j Ad_j^T W_i,k-j:  Ad^T (t, f) = (R^T t + P^T f, R^T f)
            for k in range(K):
                for j in range(k + 1):
                    m = k - j
                    for c in range(3):
                        t = (R[i, j, 0, c] * W[i, m, 0] + R[i, j, 1, c] * W[i, m, 1]
                             + R[i, j, 2, c] * W[i, m, 2] + P[i, j, 0, c] * W[i, m, 3]
                             + P[i, j, 1, c] * W[i, m, 4] + P[i, j, 2, c] * W[i, m, 5])
                        f = (R[i, j, 0, c] * W[i, m, 3] + R[i, j, 1, c] * W[i, m, 4]
                             + R[i, j, 2, c] * W[i, m, 5])
                        if par >= 0:
                            W[par, k, c] += t
                            W[par, k, c + 3] += f
                        else:
                            WR[k, c] += t
                            WR[k, c + 3] += f


@njit
def jet_finite(jet, rows):
    """True when rows 0..rows-1 of the jet (B, >=rows, n) hold no NaN or infinity."""
    for b in range(jet.shape[0]):
        for r in range(rows):
            for i in range(jet.shape[2]):
                if not np.isfinite(jet[b, r, i]):
                    return False
    return True


@njit
def factorials(m):
    """(m,) array 0!, 1!, ..., (m-1)!."""
    fact = np.ones(m)
    for k in range(1, m):
        fact[k] = fact[k - 1] * k
    return fact


@njit
def one_by_one_work(n, K):
    """Work arrays of :func:`rnea_one`: R, P, V, G, W, h, wc, E."""
    return (np.empty((n, K + 1, 3, 3)), np.empty((n, K + 1, 3, 3)), np.empty((n, K + 1, 6)),
            np.empty((n, K, 3)), np.empty((n, K, 6)), np.empty((K, 6)), np.empty(K + 1),
            np.empty((3, 3)))


@njit
def _subtract_wext(W, i, wext, b0, K, S):
    """W[i, k] -= the external wrench coefficients of body i, samples b0 .. b0+S-1 (lanes)."""
    for k in range(K):
        for r in range(6):
            for s in range(S):
                W[i, k, r, s] -= wext[k, b0 + s, i, r]


@njit
def forward_lanes(screws, R0, P0, g0, jet, b0, i, p, K, fact, AR, AP, V, G, wc, theta, SR, SP, E, S):
    """The forward pass of body i (parent body p, -1 for a fixed base) for the samples b0 ..
    b0+S-1 in lanes: AR, AP (.., K+1, 3, 3, L) the blocks of the coefficients of
    ``Ad_{C_{i,p}}``, V (.., K+1, 6, L) the twist, G (.., K, 3, L) the gravity twist's linear
    part; wc (K+1, L), theta (L,), SR, SP (3, 3, L), E (3, 3) scratch."""
    for k in range(K + 1):
        for s in range(S):
            wc[k, s] = jet[b0 + s, k + 1, i] / fact[k]
    for s in range(S):
        theta[s] = -jet[b0 + s, 0, i]
    joint_adjoint(screws, R0, P0, i, theta, E, AR, AP, S)
    # Ad_k = (-1/k) ad(X) sum_{j<k} wc_{k-1-j} Ad_j   (d/dt Ad = -qd ad(X) Ad)
    for k in range(1, K + 1):
        for r in range(3):
            for col in range(3):
                for s in range(S):
                    SR[r, col, s] = wc[k - 1, s] * AR[i, 0, r, col, s]
                    SP[r, col, s] = wc[k - 1, s] * AP[i, 0, r, col, s]
                for j in range(1, k):
                    for s in range(S):
                        SR[r, col, s] += wc[k - 1 - j, s] * AR[i, j, r, col, s]
                        SP[r, col, s] += wc[k - 1 - j, s] * AP[i, j, r, col, s]
        ad_screw(screws, SR, SP, -1.0 / k, AR, AP, i, k, S)
    # V_k = sum_j Ad_j V_p,k-j + wc_k X;  G_k = sum_j Ad_j G_p,k-j
    for k in range(K + 1):
        for r in range(6):
            for s in range(S):
                V[i, k, r, s] = wc[k, s] * screws[i, r]
        if k < K:
            G[i, k, :, :S] = 0.0
        if p < 0:
            if k < K:
                rot_apply_const_add(AR, i, k, g0[3:], G, i, k, S)
            continue
        for j in range(k + 1):
            ad_apply_add(AR, AP, i, j, V, p, k - j, V, i, k, S)
            if k < K:
                rot_apply_add(AR, i, j, G, p, k - j, G, i, k, S)


@njit
def rnea_lanes(parents, screws, R0, P0, inertias, g0, jet, K, wext, out, fact, floating, quat,
                gravity, vbase, base):
    """The recursion of :func:`rnea_jets_general`, ``LANES`` samples at a time. A floating base
    (``floating``; see :func:`rnea_floating` for ``quat``, ``gravity``, ``vbase``, ``base``) is
    body n, with ``inertias`` (n+1, 6, 6) holding its inertia last."""
    B = jet.shape[0]
    n = screws.shape[0]
    L = min(LANES, max(B, 1))
    has_w = wext.shape[1] > 0
    nb = n + 1 if floating else n  # a floating base is body n
    AR = np.empty((n, K + 1, 3, 3, L))
    AP = np.empty((n, K + 1, 3, 3, L))
    V = np.empty((nb, K + 1, 6, L))
    G = np.empty((nb, K, 3, L))  # gravity (0, -g) in body frames: Ad keeps the angular part 0
    W = np.empty((nb, K, 6, L))
    VRs, GRs = np.empty((L, K + 1, 6)), np.empty((L, K, 3))
    h = np.empty((K, 6, L))
    wc = np.empty((K + 1, L))
    theta = np.empty(L)
    SR = np.empty((3, 3, L))
    SP = np.empty((3, 3, L))
    E = np.empty((3, 3))
    for b0 in range(0, B, L):
        S = min(L, B - b0)
        if floating:  # the base body: its twist and gravity jets, its own wrench
            for s in range(S):
                for k in range(K + 1):
                    for r in range(6):
                        VRs[s, k, r] = vbase[b0 + s, k, r] / fact[k]
                gravity_jet(quat, b0 + s, gravity, VRs, GRs, s, K)
                for k in range(K + 1):
                    for r in range(6):
                        V[n, k, r, s] = VRs[s, k, r]
                    if k < K:
                        for r in range(3):
                            G[n, k, r, s] = GRs[s, k, r]
            _body_wrench(inertias, n, V, G, h, W, K, S)
            if has_w:
                _subtract_wext(W, n, wext, b0, K, S)
        for i in range(n):
            p = parents[i]
            if p < 0 and floating:
                p = n
            forward_lanes(screws, R0, P0, g0, jet, b0, i, p, K, fact, AR, AP, V, G, wc, theta, SR, SP, E, S)
            _body_wrench(inertias, i, V, G, h, W, K, S)
            if has_w:
                _subtract_wext(W, i, wext, b0, K, S)
        for i in range(n - 1, -1, -1):
            for k in range(K):
                for s in range(S):
                    t = 0.0
                    for r in range(6):
                        t += W[i, k, r, s] * screws[i, r]
                    out[b0 + s, k, i] = t * fact[k]
            p = parents[i]
            if p < 0 and floating:
                p = n
            if p >= 0:
                # W_p,k += sum_j Ad_j^T W_i,k-j
                for k in range(K):
                    for j in range(k + 1):
                        adT_apply_add(AR, AP, i, j, W, k - j, p, k, S)
        if floating:
            for k in range(K):
                for r in range(6):
                    for s in range(S):
                        base[b0 + s, k, r] = W[n, k, r, s] * fact[k]


@njit
def model_arrays(geometry, n):
    """(screws (n, 6), R0 (n, 3, 3), P0 (n, 3, 3), inertias (n, 6, 6), g0 (6,)): views of the
    flat ``geometry`` array (60 n + 6,) of :func:`rnea_jets_general`, end to end in that order."""
    return (geometry[:6 * n].reshape((n, 6)), geometry[6 * n:15 * n].reshape((n, 3, 3)),
            geometry[15 * n:24 * n].reshape((n, 3, 3)),
            geometry[24 * n:60 * n].reshape((n, 6, 6)), geometry[60 * n:60 * n + 6])


@njit
def rnea_jets_general(parents, geometry, jet, K, wext, out):
    """tau jets by Newton-Euler on Taylor coefficients in the general form (the Ad coefficients
    as 3x3 blocks), ``LANES`` samples at a time (one by one below ``ONE_BY_ONE_BELOW``
    samples): for screws with a pitch, which have no joint-aligned frame (the generated
    kernels of :mod:`hod_dynamics.kernels.rnea_ir` serve the others), and whenever those cannot run.

    ``parents`` (n,) int; ``geometry`` the model's arrays end to end (:func:`kernel_geometry`,
    :func:`model_arrays`: ``screws``, ``R0, P0`` (n, 3, 3) blocks of ``Ad(B_i^-1)``,
    ``inertias`` (n, 6, 6), ``g0`` (6,) base acceleration ``(0, -g)``; one argument rather
    than five: numba converts every array argument on every call, ~0.1 us apiece); ``jet``
    (B, >=K+2, n) derivative jet q^(0..K+1); ``wext`` (K, Bw, n, 6) body-frame wrench Taylor
    coefficients with Bw == B, or Bw == 0 for none. Writes ``out`` (B, K, n): tau^(0..K-1)
    (derivatives, not coefficients) and returns True; returns False, computing nothing, when
    the rows it reads hold a NaN or an infinity."""
    B = jet.shape[0]
    n = parents.shape[0]
    screws, R0, P0, inertias, g0 = model_arrays(geometry, n)
    if not jet_finite(jet, K + 2):
        return False
    fact = factorials(K + 2)
    if B < ONE_BY_ONE_BELOW:
        R, P, V1, G1, W1, h1, wc1, E1 = one_by_one_work(n, K)
        for b in range(B):
            rnea_one(parents, screws, R0, P0, inertias, g0, jet, b, K, wext, out, fact, R, P,
                      V1, G1, W1, h1, wc1, E1, np.zeros((0, 1, 6)), np.zeros((0, 1, 3)),
                      np.zeros((1, 6)))  # a fixed base: no root arrays
        return True
    rnea_lanes(parents, screws, R0, P0, inertias, g0, jet, K, wext, out, fact, False,
                np.zeros((0, 4)), g0[3:], np.zeros((0, 1, 6)), np.zeros((0, 1, 6)))
    return True


# -- the model's arrays in the form the kernels take (packed once per model) ---------------------
@per_model
def kernel_model(model):
    """``(parents, screws, R0, P0, inertias, g0)``: contiguous model arrays in the form
    :func:`rnea_floating` takes (``R0, P0`` the blocks of ``Ad(B_i^-1)``, ``g0 = (0, -g)``)."""
    Ainv = model.Ad_references_inv
    arrays = (model.parents.astype(np.int64), model.screws, Ainv[:, :3, :3], Ainv[:, 3:, :3],
              model.inertias, np.concatenate([np.zeros(3), -model.gravity]))
    return tuple(np.ascontiguousarray(a) for a in arrays)


@per_model
def kernel_geometry(model):
    """``(parents, geometry)``: the model arrays of :func:`kernel_model` but the parents end
    to end in one flat array: the form :func:`rnea_jets_general` takes (fewer arguments to
    convert)."""
    parents, *arrays = kernel_model(model)
    return parents, np.concatenate([a.ravel() for a in arrays])


@per_model
def rnea_kernel(model):
    """``(kernel, parents, geometry)``: :func:`rnea_jets_general` and its arguments
    (:func:`kernel_geometry`)."""
    parents, geometry = kernel_geometry(model)
    return rnea_jets_general, parents, geometry


@njit
def gravity_jet(quat, bq, gravity, VR, GR, b, K):
    """GR[b, k]: Taylor coefficients of -R^T g, R the rotation of the unit quaternion quat[bq],
    along the base angular velocity coefficients VR[b, :, :3]."""
    x, y, z, w = quat[bq, 0], quat[bq, 1], quat[bq, 2], quat[bq, 3]
    g0, g1, g2 = gravity[0], gravity[1], gravity[2]
    # R^T g, R = [[1-2(yy+zz), 2(xy-zw), 2(xz+yw)], [2(xy+zw), 1-2(xx+zz), 2(yz-xw)],
    #             [2(xz-yw), 2(yz+xw), 1-2(xx+yy)]]
    GR[b, 0, 0] = -((1 - 2 * (y * y + z * z)) * g0 + 2 * (x * y + z * w) * g1
                    + 2 * (x * z - y * w) * g2)
    GR[b, 0, 1] = -(2 * (x * y - z * w) * g0 + (1 - 2 * (x * x + z * z)) * g1
                    + 2 * (y * z + x * w) * g2)
    GR[b, 0, 2] = -(2 * (x * z + y * w) * g0 + 2 * (y * z - x * w) * g1
                    + (1 - 2 * (x * x + y * y)) * g2)
    for k in range(K - 1):
        a0 = a1 = a2 = 0.0
        for j in range(k + 1):
            w0, w1, w2 = VR[b, j, 0], VR[b, j, 1], VR[b, j, 2]
            c0, c1, c2 = GR[b, k - j, 0], GR[b, k - j, 1], GR[b, k - j, 2]
            a0 += w1 * c2 - w2 * c1
            a1 += w2 * c0 - w0 * c2
            a2 += w0 * c1 - w1 * c0
        GR[b, k + 1, 0] = -a0 / (k + 1)
        GR[b, k + 1, 1] = -a1 / (k + 1)
        GR[b, k + 1, 2] = -a2 / (k + 1)
