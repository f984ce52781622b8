"""Compiled (numba) kernel of the recursive Newton-Euler on Taylor jets.

The same algorithm as :func:`hod_dynamics.recursive.rnea_taylor`, written as plain loops over
samples, bodies and Taylor coefficients so that numba compiles it to machine code; numpy's
per-call overhead (many tiny arrays per body) dominates the vectorised path for one sample.
Structure exploited (same numbers, fewer operations):

- every ``Ad`` coefficient keeps the block form ``[[R, 0], [P, R]]`` (ad(X) and Ad(B^-1) have
  it, and sums and products preserve it), so it is stored as two 3x3 blocks (R, P);
- ``Ad (w, v) = (R w, P w + R v)`` on twists and ``Ad^T (t, f) = (R^T t + P^T f, R^T f)``
  on wrenches.

Importing this module needs numba; :mod:`hod_dynamics.backend` imports it only when asked.
``cache=True`` stores the machine code next to this file (or in numba's user-wide cache
when the install is read-only); without any writable cache location it compiles in memory.
"""

import math
import warnings

import numba
import numpy as np


def _njit(f):
    """``numba.njit(cache=True)``, or without the disk cache when no location is writable."""
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", numba.NumbaWarning)
            return numba.njit(cache=True)(f)
    except RuntimeError:  # "cannot cache function ...: no locator available"
        return numba.njit(cache=False)(f)


@_njit
def _skew_mul(w, M, out):
    """out = skew(w) @ M for M (3, 3)."""
    for c in range(3):
        out[0, c] = w[1] * M[2, c] - w[2] * M[1, c]
        out[1, c] = w[2] * M[0, c] - w[0] * M[2, c]
        out[2, c] = w[0] * M[1, c] - w[1] * M[0, c]


@_njit
def _joint_adjoint(X, R0, P0, theta, R, P):
    """Blocks of ``Ad(exp(X theta)) Ad(B^-1)`` with ``Ad(B^-1) = [[R0, 0], [P0, R0]]``."""
    s, c = math.sin(theta), math.cos(theta)
    wx = np.zeros((3, 3))
    wx[0, 1], wx[0, 2], wx[1, 0] = -X[2], X[1], X[2]
    wx[1, 2], wx[2, 0], wx[2, 1] = -X[0], -X[1], X[0]
    wx2 = wx @ wx
    E = np.eye(3) + s * wx + (1.0 - c) * wx2
    G = theta * np.eye(3) + (1.0 - c) * wx + (theta - s) * wx2
    p = G @ X[3:]
    R[:, :] = E @ R0
    tmp = np.empty((3, 3))
    _skew_mul(p, R, tmp)
    P[:, :] = tmp + E @ P0


@_njit
def _ad_apply_add(R, P, x, out):
    """out += [[R, 0], [P, R]] @ x for a twist x (6,)."""
    for r in range(3):
        out[r] += R[r, 0] * x[0] + R[r, 1] * x[1] + R[r, 2] * x[2]
        out[r + 3] += (P[r, 0] * x[0] + P[r, 1] * x[1] + P[r, 2] * x[2]
                       + R[r, 0] * x[3] + R[r, 1] * x[4] + R[r, 2] * x[5])


@_njit
def _adT_apply_add(R, P, x, out):
    """out += [[R, 0], [P, R]]^T @ x for a wrench x (6,)."""
    for c in range(3):
        out[c] += (R[0, c] * x[0] + R[1, c] * x[1] + R[2, c] * x[2]
                   + P[0, c] * x[3] + P[1, c] * x[4] + P[2, c] * x[5])
        out[c + 3] += R[0, c] * x[3] + R[1, c] * x[4] + R[2, c] * x[5]


@_njit
def rnea_jets(parents, screws, R0, P0, inertias, g0, jet, K, wext, out):
    """tau jets by Newton-Euler on Taylor coefficients, one sample at a time.

    ``parents`` (n,) int, ``screws`` (n, 6), ``R0, P0`` (n, 3, 3) blocks of ``Ad(B_i^-1)``,
    ``inertias`` (n, 6, 6), ``g0`` (6,) base acceleration ``(0, -g)``; ``jet`` (B, >=K+2, n)
    derivative jet q^(0..K+1); ``wext`` (K, Bw, n, 6) body-frame wrench Taylor coefficients
    with Bw == B, or Bw == 0 for none. Writes ``out`` (B, K, n): tau^(0..K-1) (derivatives,
    not coefficients).
    """
    B = jet.shape[0]
    n = screws.shape[0]
    has_w = wext.shape[1] > 0
    fact = np.ones(K + 2)
    for k in range(1, K + 2):
        fact[k] = fact[k - 1] * k
    AR = np.empty((n, K + 1, 3, 3))
    AP = np.empty((n, K + 1, 3, 3))
    V = np.empty((n, K + 1, 6))
    G = np.empty((n, K, 6))
    W = np.empty((n, K, 6))
    h = np.empty((K, 6))
    acc = np.empty(6)
    wc = np.empty(K + 1)
    SR = np.empty((3, 3))
    SP = np.empty((3, 3))
    tmp = np.empty((3, 3))
    for b in range(B):
        for i in range(n):
            p = parents[i]
            X = screws[i]
            for k in range(K + 1):
                wc[k] = jet[b, k + 1, i] / fact[k]
            _joint_adjoint(X, R0[i], P0[i], -jet[b, 0, i], AR[i, 0], AP[i, 0])
            # Ad_k = (-1/k) ad(X) sum_{j<k} wc_{k-1-j} Ad_j   (d/dt Ad = -qd ad(X) Ad)
            for k in range(1, K + 1):
                SR[:, :] = 0.0
                SP[:, :] = 0.0
                for j in range(k):
                    SR += wc[k - 1 - j] * AR[i, j]
                    SP += wc[k - 1 - j] * AP[i, j]
                _skew_mul(X[:3], SR, AR[i, k])
                _skew_mul(X[3:], SR, tmp)
                _skew_mul(X[:3], SP, AP[i, k])
                AP[i, k] += tmp
                AR[i, k] *= -1.0 / k
                AP[i, k] *= -1.0 / k
            # V_k = sum_j Ad_j V_p,k-j + wc_k X;  G_k = sum_j Ad_j G_p,k-j
            for k in range(K + 1):
                for r in range(6):
                    V[i, k, r] = wc[k] * X[r]
                if k < K:
                    G[i, k, :] = 0.0
                if p < 0:
                    if k < K:
                        _ad_apply_add(AR[i, k], AP[i, k], g0, G[i, k])
                    continue
                for j in range(k + 1):
                    _ad_apply_add(AR[i, j], AP[i, j], V[p, k - j], V[i, k])
                    if k < K:
                        _ad_apply_add(AR[i, j], AP[i, j], G[p, k - j], G[i, k])
            M = inertias[i]
            for k in range(K):
                for r in range(6):
                    s = 0.0
                    for c in range(6):
                        s += M[r, c] * V[i, k, c]
                    h[k, r] = s
            for k in range(K):
                for r in range(6):
                    acc[r] = (k + 1) * V[i, k + 1, r] + G[i, k, r]
                for r in range(6):
                    s = 0.0
                    for c in range(6):
                        s += M[r, c] * acc[c]
                    W[i, k, r] = s
                # bias: sum_j -ad(V_j)^T h_{k-j} = (w x L + v x P, w x P)
                for j in range(k + 1):
                    m = k - j
                    w0, w1, w2 = V[i, j, 0], V[i, j, 1], V[i, j, 2]
                    v0, v1, v2 = V[i, j, 3], V[i, j, 4], V[i, j, 5]
                    L0, L1, L2 = h[m, 0], h[m, 1], h[m, 2]
                    F0, F1, F2 = h[m, 3], h[m, 4], h[m, 5]
                    W[i, k, 0] += w1 * L2 - w2 * L1 + v1 * F2 - v2 * F1
                    W[i, k, 1] += w2 * L0 - w0 * L2 + v2 * F0 - v0 * F2
                    W[i, k, 2] += w0 * L1 - w1 * L0 + v0 * F1 - v1 * F0
                    W[i, k, 3] += w1 * F2 - w2 * F1
                    W[i, k, 4] += w2 * F0 - w0 * F2
                    W[i, k, 5] += w0 * F1 - w1 * F0
                if has_w:
                    for r in range(6):
                        W[i, k, r] -= wext[k, b, i, r]
        for i in range(n - 1, -1, -1):
            X = screws[i]
            for k in range(K):
                s = 0.0
                for r in range(6):
                    s += W[i, k, r] * X[r]
                out[b, k, i] = s * fact[k]
            p = parents[i]
            if p >= 0:
                # W_p,k += sum_j Ad_j^T W_i,k-j
                for k in range(K):
                    for j in range(k + 1):
                        _adT_apply_add(AR[i, j], AP[i, j], W[i, k - j], W[p, k])
