"""Compiled (numba) kernel of the recursive Newton-Euler on Taylor jets.

The same algorithm as :func:`hod_dynamics.recursive.rnea_taylor`, written as plain loops over
samples, bodies and Taylor coefficients so that numba compiles it to machine code; numpy's
per-call overhead (many tiny arrays per body) dominates the vectorised path for one sample.
Structure exploited (same numbers, fewer operations):

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
  and :func:`_rnea_one` runs the same recursion on scalars, sample by sample (a single
  sample: ~3 us instead of ~11 us on the Panda at order 2).

The model arrays each kernel reads are packed beside it, at the end of this module, once per
model (:func:`rnea_kernel`, :func:`kernel_model`, :func:`z_geometry`); the dispatcher
(:mod:`hod_dynamics.dispatch`) chooses the kernel and hands it validated arrays.

Longer than the package's other modules (about 1,300 lines): the recursion is written out three
times for the compiler (joint-aligned frames in SIMD lanes and one by one, the general form,
a floating base), each with helpers that one version alone needs; splitting them would split
helpers from their only callers.

Importing this module needs numba; :mod:`hod_dynamics.backend` imports it only when asked.
``cache=True`` stores the machine code next to this file (or in numba's user-wide cache
when the install is read-only); without any writable cache location it compiles in memory.
"""

import math
import warnings

import numba
import numpy as np

from .model import per_model
from .spatial import Ad, inverse


def _njit(f, **extra):
    """``numba.njit(cache=True)``, or without the disk cache when no location is writable.

    ``fastmath={"contract"}`` only lets the compiler fuse a * b + c into one FMA instruction
    (one rounding instead of two; about 30 % faster); no reassociation, no finite-math
    assumptions. Results match the numpy path to rounding (~1e-15 relative). ``nogil``: the
    kernels touch no Python object, so other threads run meanwhile (a node keeps streaming
    while a long profile is computed; big batches are split over threads).
    """
    options = dict(error_model="numpy", fastmath={"contract"}, nogil=True, **extra)
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", numba.NumbaWarning)
            return numba.njit(cache=True, **options)(f)
    except RuntimeError:  # "cannot cache function ...: no locator available"
        return numba.njit(cache=False, **options)(f)


def _inline(f):
    """A helper that numba copies into each caller (``inline="always"``).

    LLVM leaves calls to some helpers as calls, and a call that passes arrays also
    increments and decrements each array's reference count (atomic operations): for a
    helper doing a few dozen flops on one sample that costs more than the arithmetic.
    Measured, not applied everywhere: on the partials' 6x6 products it saves ~20 % at no
    compile cost; on the lane loops of :func:`rnea_jets` it helps one sample but slows
    batches by a third and lengthens the first compile.
    """
    return numba.njit(inline="always", error_model="numpy", fastmath={"contract"})(f)


LANES = 128  # measured: 128 to 160 lanes run fastest (64: 20 % slower on TALOS, 16: twice as slow)
ONE_BY_ONE_BELOW = 16  # measured: fewer samples run faster one by one, without lanes


# sin and cos that LLVM can vectorise over the lanes (libm's are calls, one sample at a time:
# a tenth of a batch's time): Cody-Waite reduction by pi/2 in three parts (the first two of
# 33 bits, so k * part is exact for |k| < 2**20) and the minimax polynomials of fdlibm's
# __kernel_sin and __kernel_cos on [-pi/4, pi/4]. Within 2 ulp of libm (1.1e-16 absolute,
# measured on 10 million angles up to 1e5 rad); beyond SINCOS_LIMIT rad the callers use libm.
_PIO2_1, _PIO2_2, _PIO2_3 = 1.5707963267341256, 6.077100506303966e-11, 2.0222662487959506e-21
_S1, _S2, _S3 = -1.66666666666666324348e-01, 8.33333333332248946124e-03, -1.98412698298579493134e-04
_S4, _S5, _S6 = 2.75573137070700676789e-06, -2.50507602534068634195e-08, 1.58969099521155010221e-10
_C1, _C2, _C3 = 4.16666666666666019037e-02, -1.38888888888741095749e-03, 2.48015872894767294178e-05
_C4, _C5, _C6 = -2.75573143513906633035e-07, 2.08757232129817482790e-09, -1.13596475577881948265e-11
_TWO_OVER_PI = 0.6366197723675814
SINCOS_LIMIT = 1e5


@_inline
def sincos(x):
    """(sin x, cos x) for |x| <= SINCOS_LIMIT (see the constants above). The quadrant picks
    the signs and the swap by arithmetic on exact small floats, not by branches or integers:
    LLVM then vectorises a loop calling it (2.7 ns per angle instead of libm's ~15)."""
    k = math.floor(x * _TWO_OVER_PI + 0.5)
    r = ((x - k * _PIO2_1) - k * _PIO2_2) - k * _PIO2_3
    z = r * r
    s = r + r * z * (_S1 + z * (_S2 + z * (_S3 + z * (_S4 + z * (_S5 + z * _S6)))))
    hz = 0.5 * z
    w = 1.0 - hz
    c = w + (((1.0 - w) - hz) + z * z * (_C1 + z * (_C2 + z * (_C3 + z * (_C4 + z * (_C5 + z * _C6))))))
    q = k - 4.0 * math.floor(k * 0.25)  # quadrant 0..3
    half = math.floor(q * 0.5)
    odd = q - 2.0 * half  # 1 in quadrants 1 and 3: sin and cos swap
    e = math.floor((q + 1.0) * 0.5)
    sign_c = 1.0 - 2.0 * (e - 2.0 * math.floor(e * 0.5))  # -1 in quadrants 1 and 2
    sign_s = 1.0 - 2.0 * half  # -1 in quadrants 2 and 3
    return sign_s * (odd * c + (1.0 - odd) * s), sign_c * (odd * s + (1.0 - odd) * c)


@_njit
def _ad_screw(X, SR, SP, scale, AR, AP, i, k, S):
    """Ad_k = scale * ad(X) [[SR, 0], [SP, SR]]: R = w~ SR, P = v~ SR + w~ SP (lanes S)."""
    w0, w1, w2, v0, v1, v2 = X[i, 0], X[i, 1], X[i, 2], X[i, 3], X[i, 4], X[i, 5]
    for col in range(3):
        for s in range(S):
            a0, a1, a2 = SR[0, col, s], SR[1, col, s], SR[2, col, s]
            b0, b1, b2 = SP[0, col, s], SP[1, col, s], SP[2, col, s]
            AR[i, k, 0, col, s] = scale * (w1 * a2 - w2 * a1)
            AR[i, k, 1, col, s] = scale * (w2 * a0 - w0 * a2)
            AR[i, k, 2, col, s] = scale * (w0 * a1 - w1 * a0)
            AP[i, k, 0, col, s] = scale * (v1 * a2 - v2 * a1 + w1 * b2 - w2 * b1)
            AP[i, k, 1, col, s] = scale * (v2 * a0 - v0 * a2 + w2 * b0 - w0 * b2)
            AP[i, k, 2, col, s] = scale * (v0 * a1 - v1 * a0 + w0 * b1 - w1 * b0)


@_njit
def screw_exp(X, i, theta, E):
    """``exp(X_i theta) = (E, p)`` for the unit screw ``X_i = (w, v)`` (row i of X): writes
    ``E = I + s w~ + (1 - c) w~^2`` into E (3, 3) and returns ``p = (theta I + (1 - c) w~
    + (theta - s) w~^2) v`` as 3 floats (also a prismatic joint's translation, w = 0)."""
    w0, w1, w2 = X[i, 0], X[i, 1], X[i, 2]
    v0, v1, v2 = X[i, 3], X[i, 4], X[i, 5]
    ww = w0 * w0 + w1 * w1 + w2 * w2
    wv = w0 * v0 + w1 * v1 + w2 * v2
    sn, cs = math.sin(theta), math.cos(theta)
    a, d = 1.0 - cs, theta - sn
    E[0, 0] = 1.0 + a * (w0 * w0 - ww)
    E[1, 1] = 1.0 + a * (w1 * w1 - ww)
    E[2, 2] = 1.0 + a * (w2 * w2 - ww)
    E[0, 1] = -sn * w2 + a * w0 * w1
    E[1, 0] = sn * w2 + a * w0 * w1
    E[0, 2] = sn * w1 + a * w0 * w2
    E[2, 0] = -sn * w1 + a * w0 * w2
    E[1, 2] = -sn * w0 + a * w1 * w2
    E[2, 1] = sn * w0 + a * w1 * w2
    # w~ v = w x v, w~^2 v = w (w . v) - |w|^2 v
    return (theta * v0 + a * (w1 * v2 - w2 * v1) + d * (w0 * wv - ww * v0),
            theta * v1 + a * (w2 * v0 - w0 * v2) + d * (w1 * wv - ww * v1),
            theta * v2 + a * (w0 * v1 - w1 * v0) + d * (w2 * wv - ww * v2))


@_njit
def _joint_adjoint(X, R0, P0, i, theta, E, AR, AP, S):
    """Ad_0 of body i: blocks of ``Ad(exp(X_i theta)) Ad(B^-1)``, ``Ad(B^-1) = [[R0, 0],
    [P0, R0]]``, for the angles theta (S,); E (3, 3) scratch."""
    for s in range(S):
        p0, p1, p2 = screw_exp(X, i, theta[s], E)
        for col in range(3):
            q0, q1, q2 = R0[i, 0, col], R0[i, 1, col], R0[i, 2, col]
            u0, u1, u2 = P0[i, 0, col], P0[i, 1, col], P0[i, 2, col]
            r0 = E[0, 0] * q0 + E[0, 1] * q1 + E[0, 2] * q2
            r1 = E[1, 0] * q0 + E[1, 1] * q1 + E[1, 2] * q2
            r2 = E[2, 0] * q0 + E[2, 1] * q1 + E[2, 2] * q2
            AR[i, 0, 0, col, s], AR[i, 0, 1, col, s], AR[i, 0, 2, col, s] = r0, r1, r2
            AP[i, 0, 0, col, s] = p1 * r2 - p2 * r1 + E[0, 0] * u0 + E[0, 1] * u1 + E[0, 2] * u2
            AP[i, 0, 1, col, s] = p2 * r0 - p0 * r2 + E[1, 0] * u0 + E[1, 1] * u1 + E[1, 2] * u2
            AP[i, 0, 2, col, s] = p0 * r1 - p1 * r0 + E[2, 0] * u0 + E[2, 1] * u1 + E[2, 2] * u2


@_njit
def _ad_apply_add(AR, AP, i, j, x, xb, xk, out, ob, ok, S):
    """out[ob, ok] += Ad_j of body i applied to the twists x[xb, xk] (6, S)."""
    for r in range(3):
        for s in range(S):
            x0, x1, x2 = x[xb, xk, 0, s], x[xb, xk, 1, s], x[xb, xk, 2, s]
            x3, x4, x5 = x[xb, xk, 3, s], x[xb, xk, 4, s], x[xb, xk, 5, s]
            R0, R1, R2 = AR[i, j, r, 0, s], AR[i, j, r, 1, s], AR[i, j, r, 2, s]
            out[ob, ok, r, s] += R0 * x0 + R1 * x1 + R2 * x2
            out[ob, ok, r + 3, s] += (AP[i, j, r, 0, s] * x0 + AP[i, j, r, 1, s] * x1
                                      + AP[i, j, r, 2, s] * x2 + R0 * x3 + R1 * x4 + R2 * x5)


@_njit
def _rot_apply_add(AR, i, j, x, xb, xk, out, ob, ok, S):
    """out[ob, ok] += R block of Ad_j of body i applied to x[xb, xk] (3, S): the linear part
    of Ad_j (0, x), all that gravity twists (0, -g) have."""
    for r in range(3):
        for s in range(S):
            out[ob, ok, r, s] += (AR[i, j, r, 0, s] * x[xb, xk, 0, s] + AR[i, j, r, 1, s]
                                  * x[xb, xk, 1, s] + AR[i, j, r, 2, s] * x[xb, xk, 2, s])


@_njit
def _rot_apply_const_add(AR, i, j, x, out, ob, ok, S):
    """out[ob, ok] += R block of Ad_j of body i applied to one vector x (3,)."""
    x0, x1, x2 = x[0], x[1], x[2]
    for r in range(3):
        for s in range(S):
            out[ob, ok, r, s] += (AR[i, j, r, 0, s] * x0 + AR[i, j, r, 1, s] * x1
                                  + AR[i, j, r, 2, s] * x2)


@_njit
def _adT_apply_add(AR, AP, i, j, W, xk, p, ok, S):
    """W[p, ok] += Ad_j^T of body i applied to the wrenches W[i, xk] (6, S)."""
    for c in range(3):
        for s in range(S):
            x0, x1, x2 = W[i, xk, 0, s], W[i, xk, 1, s], W[i, xk, 2, s]
            x3, x4, x5 = W[i, xk, 3, s], W[i, xk, 4, s], W[i, xk, 5, s]
            R0, R1, R2 = AR[i, j, 0, c, s], AR[i, j, 1, c, s], AR[i, j, 2, c, s]
            W[p, ok, c, s] += (R0 * x0 + R1 * x1 + R2 * x2 + AP[i, j, 0, c, s] * x3
                               + AP[i, j, 1, c, s] * x4 + AP[i, j, 2, c, s] * x5)
            W[p, ok, c + 3, s] += R0 * x3 + R1 * x4 + R2 * x5


@_njit
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


@_inline
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


@_inline
def _forward_body(parents, screws, R0, P0, g0, jet, b, i, K, fact, R, P, V, G, wc, E, floating, VR, GR, br):
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


@_njit
def _rnea_one(parents, screws, R0, P0, inertias, g0, jet, b, K, wext, out, fact, R, P, V, G, W,
              h, wc, E, VR, GR, WR):
    """Sample b of :func:`rnea_jets`, without lanes: the same recursion on scalars, for one
    sample or a few, where the lanes' loop and call overheads cost more than the arithmetic.

    Work arrays (from :func:`rnea_jets`): R, P (n, K+1, 3, 3) the blocks of the Ad
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
        _forward_body(parents, screws, R0, P0, g0, jet, b, i, K, fact, R, P, V, G, wc, E, floating, VR, GR, b)
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


@_njit
def _jet_finite(jet, rows):
    """True when rows 0..rows-1 of the jet (B, >=rows, n) hold no NaN or infinity."""
    for b in range(jet.shape[0]):
        for r in range(rows):
            for i in range(jet.shape[2]):
                if not np.isfinite(jet[b, r, i]):
                    return False
    return True


@_njit
def _factorials(m):
    """(m,) array 0!, 1!, ..., (m-1)!."""
    fact = np.ones(m)
    for k in range(1, m):
        fact[k] = fact[k - 1] * k
    return fact


@_njit
def _one_by_one_work(n, K):
    """Work arrays of :func:`_rnea_one`: R, P, V, G, W, h, wc, E."""
    return (np.empty((n, K + 1, 3, 3)), np.empty((n, K + 1, 3, 3)), np.empty((n, K + 1, 6)),
            np.empty((n, K, 3)), np.empty((n, K, 6)), np.empty((K, 6)), np.empty(K + 1),
            np.empty((3, 3)))


@_njit
def _subtract_wext(W, i, wext, b0, K, S):
    """W[i, k] -= the external wrench coefficients of body i, samples b0 .. b0+S-1 (lanes)."""
    for k in range(K):
        for r in range(6):
            for s in range(S):
                W[i, k, r, s] -= wext[k, b0 + s, i, r]


@_njit
def _rnea_lanes(parents, screws, R0, P0, inertias, g0, jet, K, wext, out, fact, floating, quat,
                gravity, vbase, base):
    """The recursion of :func:`rnea_jets`, ``LANES`` samples at a time. A floating base
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
                _gravity_jet(quat, b0 + s, gravity, VRs, GRs, s, K)
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
            for k in range(K + 1):
                for s in range(S):
                    wc[k, s] = jet[b0 + s, k + 1, i] / fact[k]
            for s in range(S):
                theta[s] = -jet[b0 + s, 0, i]
            _joint_adjoint(screws, R0, P0, i, theta, E, AR, AP, S)
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
                _ad_screw(screws, SR, SP, -1.0 / k, AR, AP, i, k, S)
            # V_k = sum_j Ad_j V_p,k-j + wc_k X;  G_k = sum_j Ad_j G_p,k-j
            for k in range(K + 1):
                for r in range(6):
                    for s in range(S):
                        V[i, k, r, s] = wc[k, s] * screws[i, r]
                if k < K:
                    G[i, k, :, :S] = 0.0
                if p < 0:
                    if k < K:
                        _rot_apply_const_add(AR, i, k, g0[3:], G, i, k, S)
                    continue
                for j in range(k + 1):
                    _ad_apply_add(AR, AP, i, j, V, p, k - j, V, i, k, S)
                    if k < K:
                        _rot_apply_add(AR, i, j, G, p, k - j, G, i, k, S)
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
                        _adT_apply_add(AR, AP, i, j, W, k - j, p, k, S)
        if floating:
            for k in range(K):
                for r in range(6):
                    for s in range(S):
                        base[b0 + s, k, r] = W[n, k, r, s] * fact[k]


@_njit
def model_arrays(geometry, n):
    """(screws (n, 6), R0 (n, 3, 3), P0 (n, 3, 3), inertias (n, 6, 6), g0 (6,)): views of the
    flat ``geometry`` array (60 n + 6,) of :func:`rnea_jets`, end to end in that order."""
    return (geometry[:6 * n].reshape((n, 6)), geometry[6 * n:15 * n].reshape((n, 3, 3)),
            geometry[15 * n:24 * n].reshape((n, 3, 3)),
            geometry[24 * n:60 * n].reshape((n, 6, 6)), geometry[60 * n:60 * n + 6])


@_njit
def rnea_jets(parents, geometry, jet, K, wext, out):
    """tau jets by Newton-Euler on Taylor coefficients, in joint-aligned body frames (see
    :func:`_rnea_z_lanes`), ``LANES`` samples at a time (one by one below
    ``ONE_BY_ONE_BELOW`` samples), for a model whose screws all have such frames (flag 1.0 in
    ``geometry``; :func:`rnea_jets_general` otherwise: it is compiled only when used).

    ``parents`` (n,) int; ``geometry`` the model's arrays end to end
    (:func:`kernel_geometry`): those of :func:`model_arrays`, the flag,
    those of :func:`z_model_arrays` (one argument rather than a dozen: numba converts every
    array argument on every call, ~0.1 us apiece, which a single sample notices); ``jet``
    (B, >=K+2, n) derivative jet q^(0..K+1); ``wext`` (K, Bw, n, 6) body-frame wrench Taylor
    coefficients with Bw == B, or Bw == 0 for none. Writes ``out`` (B, K, n): tau^(0..K-1)
    (derivatives, not coefficients) and returns True; returns False, computing nothing, when
    the rows it reads hold a NaN or an infinity.
    """
    n = parents.shape[0]
    if not _jet_finite(jet, K + 2):
        return False
    fact = _factorials(K + 2)
    if jet.shape[0] < ONE_BY_ONE_BELOW:
        _rnea_z_samples(parents, geometry[60 * n + 7:], jet, K, wext, out, fact)
    else:
        _rnea_z_lanes(parents, geometry[60 * n + 7:], jet, K, wext, out, fact)
    return True


@_njit
def rnea_jets_general(parents, geometry, jet, K, wext, out):
    """:func:`rnea_jets` in the general form (the Ad coefficients as 3x3 blocks, from
    ``screws``, ``R0, P0`` (n, 3, 3) blocks of ``Ad(B_i^-1)``, ``inertias`` (n, 6, 6), ``g0``
    (6,) base acceleration ``(0, -g)``: :func:`model_arrays`): for screws with a pitch, which
    have no joint-aligned frame."""
    B = jet.shape[0]
    n = parents.shape[0]
    screws, R0, P0, inertias, g0 = model_arrays(geometry, n)
    if not _jet_finite(jet, K + 2):
        return False
    fact = _factorials(K + 2)
    if B < ONE_BY_ONE_BELOW:
        R, P, V1, G1, W1, h1, wc1, E1 = _one_by_one_work(n, K)
        for b in range(B):
            _rnea_one(parents, screws, R0, P0, inertias, g0, jet, b, K, wext, out, fact, R, P,
                      V1, G1, W1, h1, wc1, E1, np.zeros((0, 1, 6)), np.zeros((0, 1, 3)),
                      np.zeros((1, 6)))  # a fixed base: no root arrays
        return True
    _rnea_lanes(parents, screws, R0, P0, inertias, g0, jet, K, wext, out, fact, False,
                np.zeros((0, 4)), g0[3:], np.zeros((0, 1, 6)), np.zeros((0, 1, 6)))
    return True


@_njit
def _gravity_jet(quat, bq, gravity, VR, GR, b, K):
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


@_njit
def rnea_floating(parents, screws, R0, P0, inertias, g0, base_inertia, gravity, jet, quat,
                  vbase, K, wext, out, base):
    """tau jets of a floating-base tree, sample by sample (:func:`_rnea_one` with a moving base).

    Model arrays as in :func:`rnea_jets` (``g0`` unused: gravity comes with the base) plus
    ``base_inertia`` (6, 6) and ``gravity`` (3,) in the world; ``jet`` (B, >=K+2, n) joint jet
    q^(0..K+1); ``quat`` (B, 4) unit quaternions (x, y, z, w) of the base; ``vbase``
    (B, K+1, 6) the base body twist (omega, v) and its derivatives; ``wext`` (K, Bw, n+1, 6)
    with the base body's external wrench in slot n. The gravity twist of the base is
    ``(0, -R^T g)``, its jet from ``d/dt (R^T g) = -omega x R^T g``. Writes ``out`` (B, K, n)
    and ``base`` (B, K, 6): the base wrench (torque, force) and its derivatives; returns False,
    computing nothing, when the rows it reads hold a NaN or an infinity.
    """
    B = jet.shape[0]
    n = screws.shape[0]
    if not _jet_finite(jet, K + 2):
        return False
    has_w = wext.shape[1] > 0
    fact = _factorials(K + 2)
    if B >= ONE_BY_ONE_BELOW:
        inertias_b = np.empty((n + 1, 6, 6))
        inertias_b[:n] = inertias
        inertias_b[n] = base_inertia
        _rnea_lanes(parents, screws, R0, P0, inertias_b, g0, jet, K, wext, out, fact, True,
                    quat, gravity, vbase, base)
        return True
    R, P, V1, G1, W1, h1, wc1, E1 = _one_by_one_work(n, K)
    WR, hb = np.empty((K, 6)), np.empty((K + 1, 6))
    VR, GR = np.empty((B, K + 1, 6)), np.empty((B, K, 3))
    M = base_inertia
    for b in range(B):
        for k in range(K + 1):
            for r in range(6):
                VR[b, k, r] = vbase[b, k, r] / fact[k]
        _gravity_jet(quat, b, gravity, VR, GR, b, K)
        WR[:] = 0.0
        _rnea_one(parents, screws, R0, P0, inertias, g0, jet, b, K, wext, out, fact, R, P,
                  V1, G1, W1, h1, wc1, E1, VR, GR, WR)
        # the base body: W = M (dV + (0, G)) + sum_j -ad(V_j)^T M V_{k-j} - W_ext + children
        for k in range(K + 1):
            for r in range(6):
                t = 0.0
                for c in range(6):
                    t += M[r, c] * VR[b, k, c]
                hb[k, r] = t
        for k in range(K):
            for r in range(6):
                t = WR[k, r] - (wext[k, b, n, r] if has_w else 0.0)
                for c in range(6):
                    dv = (k + 1.0) * VR[b, k + 1, c]
                    if c >= 3:
                        dv += GR[b, k, c - 3]
                    t += M[r, c] * dv
                for j in range(k + 1):
                    m = k - j
                    u0, u1, u2 = VR[b, j, 0], VR[b, j, 1], VR[b, j, 2]
                    y0, y1, y2 = VR[b, j, 3], VR[b, j, 4], VR[b, j, 5]
                    L0, L1, L2 = hb[m, 0], hb[m, 1], hb[m, 2]
                    F0, F1, F2 = hb[m, 3], hb[m, 4], hb[m, 5]
                    if r == 0:
                        t += u1 * L2 - u2 * L1 + y1 * F2 - y2 * F1
                    elif r == 1:
                        t += u2 * L0 - u0 * L2 + y2 * F0 - y0 * F2
                    elif r == 2:
                        t += u0 * L1 - u1 * L0 + y0 * F1 - y1 * F0
                    elif r == 3:
                        t += u1 * F2 - u2 * F1
                    elif r == 4:
                        t += u2 * F0 - u0 * F2
                    else:
                        t += u0 * F1 - u1 * F0
                base[b, k, r] = t * fact[k]
    return True


# -- batches in joint-aligned body frames --------------------------------------------------------
# Body i's frame moved onto its joint axis (z along the axis, origin on it; the model arrays
# are re-expressed there once per model by :func:`z_geometry`) makes
# the joint motion a rotation about z (or a translation along z): Ad(exp(-Z q)) then acts on
# the (x, y) components of a twist or wrench as the complex factor exp(-i q(t)), whose Taylor
# coefficients take O(K^2) flops, and the constant part Ad(H) of the joint transform is
# applied once per coefficient. The Ad coefficients themselves are never formed (they cost
# most of the work of the general form above). tau_i is the z component (torque, or force).


@_njit
def z_model_arrays(zgeo, n):
    """(kinds (n,) 0 revolute / 1 prismatic, RH (n, 3, 3), pH (n, 3), M (n, 6, 6), Tw (n, 6, 6),
    g0 (3,)): views of the flat array of :func:`z_geometry`: ``Ad(H_i)
    = [[RH, 0], [pH~ RH, RH]]`` the constant part of the joint transform (parent's frame to
    body i's, at q = 0), ``M`` the inertias, ``Tw = Ad(T_i)^T`` (wrench from the link's body
    frame to the joint-aligned one), ``g0`` the linear part of the base acceleration."""
    kinds = zgeo[:n]
    RH = zgeo[n:10 * n].reshape((n, 3, 3))
    pH = zgeo[10 * n:13 * n].reshape((n, 3))
    M = zgeo[13 * n:49 * n].reshape((n, 6, 6))
    Tw = zgeo[49 * n:85 * n].reshape((n, 6, 6))
    return kinds, RH, pH, M, Tw, zgeo[85 * n:85 * n + 3]


@_njit
def _z_motion(jet, b0, i, rev, wc, E, a, K, S):
    """E[i, k, :, s]: Taylor coefficients of exp(-i q) = cos q - i sin q (revolute) as (real,
    imaginary) rows, from (k+1) E_{k+1} = -i sum_j wc_j E_{k-j}; prismatic: E[i, k, 0] the
    coefficients of q."""
    if rev:
        for s in range(S):  # the angles side by side first: the next loop is then vectorised
            a[0, s] = jet[b0 + s, 0, i]
        for s in range(S):
            sn, cs = sincos(a[0, s])
            E[i, 0, 0, s] = cs
            E[i, 0, 1, s] = -sn
        for s in range(S):  # rare: libm beyond the range of sincos
            t = a[0, s]
            if abs(t) > SINCOS_LIMIT:
                E[i, 0, 0, s] = math.cos(t)
                E[i, 0, 1, s] = -math.sin(t)
        for k in range(K):
            for s in range(S):
                a[0, s] = wc[0, s] * E[i, k, 0, s]
                a[1, s] = wc[0, s] * E[i, k, 1, s]
            for j in range(1, k + 1):
                for s in range(S):
                    a[0, s] += wc[j, s] * E[i, k - j, 0, s]
                    a[1, s] += wc[j, s] * E[i, k - j, 1, s]
            c = 1.0 / (k + 1)
            for s in range(S):
                E[i, k + 1, 0, s] = a[1, s] * c
                E[i, k + 1, 1, s] = -a[0, s] * c
    else:
        for s in range(S):
            E[i, 0, 0, s] = jet[b0 + s, 0, i]
        for k in range(1, K + 1):
            c = 1.0 / k
            for s in range(S):
                E[i, k, 0, s] = wc[k - 1, s] * c


@_njit
def _h_apply(RH, pH, i, X, p, Y, N, S):
    """Y[k] = Ad(H_i) X[p, k] for k < N (twists, lanes S): (R a, pH x R a + R b)."""
    R = RH[i]
    q0, q1, q2 = pH[i, 0], pH[i, 1], pH[i, 2]
    for k in range(N):
        for s in range(S):
            a0, a1, a2 = X[p, k, 0, s], X[p, k, 1, s], X[p, k, 2, s]
            b0, b1, b2 = X[p, k, 3, s], X[p, k, 4, s], X[p, k, 5, s]
            r0 = R[0, 0] * a0 + R[0, 1] * a1 + R[0, 2] * a2
            r1 = R[1, 0] * a0 + R[1, 1] * a1 + R[1, 2] * a2
            r2 = R[2, 0] * a0 + R[2, 1] * a1 + R[2, 2] * a2
            Y[k, 0, s], Y[k, 1, s], Y[k, 2, s] = r0, r1, r2
            Y[k, 3, s] = R[0, 0] * b0 + R[0, 1] * b1 + R[0, 2] * b2 + q1 * r2 - q2 * r1
            Y[k, 4, s] = R[1, 0] * b0 + R[1, 1] * b1 + R[1, 2] * b2 + q2 * r0 - q0 * r2
            Y[k, 5, s] = R[2, 0] * b0 + R[2, 1] * b1 + R[2, 2] * b2 + q0 * r1 - q1 * r0


@_njit
def _z_twists(E, i, rev, Y, has_parent, wc, V, K, S):
    """V[i, k] = the joint motion applied to the twists Y[k] (coefficients of the product of
    jets) + wc_k Z, k <= K; without a parent Y is not read (the twist is wc_k Z). One loop over
    the lanes per (k, j), all six components in it: each loop costs a set-up (alias checks,
    remainder), which more lanes dilute but the cache does not like."""
    for k in range(K + 1):
        if not has_parent:
            z = 2 if rev else 5
            for r in range(6):
                for s in range(S):
                    V[i, k, r, s] = 0.0
            for s in range(S):
                V[i, k, z, s] = wc[k, s]
        elif rev:  # exp(-i q) (x + i y) on (w0, w1) and (v0, v1); the j = 0 term first
            for s in range(S):
                c, sn = E[i, 0, 0, s], E[i, 0, 1, s]
                y0, y1, y3, y4 = Y[k, 0, s], Y[k, 1, s], Y[k, 3, s], Y[k, 4, s]
                V[i, k, 0, s] = c * y0 - sn * y1
                V[i, k, 1, s] = sn * y0 + c * y1
                V[i, k, 2, s] = Y[k, 2, s] + wc[k, s]
                V[i, k, 3, s] = c * y3 - sn * y4
                V[i, k, 4, s] = sn * y3 + c * y4
                V[i, k, 5, s] = Y[k, 5, s]
            for j in range(1, k, 2):  # two terms per pass: half the stores
                m = k - j
                for s in range(S):
                    c, sn = E[i, j, 0, s], E[i, j, 1, s]
                    y0, y1, y3, y4 = Y[m, 0, s], Y[m, 1, s], Y[m, 3, s], Y[m, 4, s]
                    d, dn = E[i, j + 1, 0, s], E[i, j + 1, 1, s]
                    z0, z1, z3, z4 = Y[m - 1, 0, s], Y[m - 1, 1, s], Y[m - 1, 3, s], Y[m - 1, 4, s]
                    V[i, k, 0, s] += (c * y0 - sn * y1) + (d * z0 - dn * z1)
                    V[i, k, 1, s] += (sn * y0 + c * y1) + (dn * z0 + d * z1)
                    V[i, k, 3, s] += (c * y3 - sn * y4) + (d * z3 - dn * z4)
                    V[i, k, 4, s] += (sn * y3 + c * y4) + (dn * z3 + d * z4)
            if k % 2 == 1:
                for s in range(S):
                    c, sn = E[i, k, 0, s], E[i, k, 1, s]
                    y0, y1, y3, y4 = Y[0, 0, s], Y[0, 1, s], Y[0, 3, s], Y[0, 4, s]
                    V[i, k, 0, s] += c * y0 - sn * y1
                    V[i, k, 1, s] += sn * y0 + c * y1
                    V[i, k, 3, s] += c * y3 - sn * y4
                    V[i, k, 4, s] += sn * y3 + c * y4
        else:  # v += (-q e_z) x w = q (w1, -w0, 0)
            for s in range(S):
                q0 = E[i, 0, 0, s]
                V[i, k, 0, s], V[i, k, 1, s], V[i, k, 2, s] = Y[k, 0, s], Y[k, 1, s], Y[k, 2, s]
                V[i, k, 3, s] = Y[k, 3, s] + q0 * Y[k, 1, s]
                V[i, k, 4, s] = Y[k, 4, s] - q0 * Y[k, 0, s]
                V[i, k, 5, s] = Y[k, 5, s] + wc[k, s]
            for j in range(1, k + 1):
                m = k - j
                for s in range(S):
                    qj = E[i, j, 0, s]
                    V[i, k, 3, s] += qj * Y[m, 1, s]
                    V[i, k, 4, s] -= qj * Y[m, 0, s]


@_njit
def _z_gravity(RH, i, rev, E, G, p, g0, Y, K, S):
    """G[i, k] (k < K): the linear part of the gravity twist in body i, from its parent's
    (p >= 0) or the constant base acceleration g0 (p < 0: only its coefficient 0). No branch
    inside a loop over the lanes: LLVM would not vectorise it."""
    R = RH[i]
    if p < 0:
        a0, a1, a2 = g0[0], g0[1], g0[2]
        y0 = R[0, 0] * a0 + R[0, 1] * a1 + R[0, 2] * a2
        y1 = R[1, 0] * a0 + R[1, 1] * a1 + R[1, 2] * a2
        y2 = R[2, 0] * a0 + R[2, 1] * a1 + R[2, 2] * a2
        for k in range(K):
            z0 = y2 if k == 0 else 0.0
            if rev:  # only the term j = k of the product
                for s in range(S):
                    c, sn = E[i, k, 0, s], E[i, k, 1, s]
                    G[i, k, 0, s] = c * y0 - sn * y1
                    G[i, k, 1, s] = sn * y0 + c * y1
                    G[i, k, 2, s] = z0
            else:
                x0, x1 = (y0, y1) if k == 0 else (0.0, 0.0)
                for s in range(S):
                    G[i, k, 0, s], G[i, k, 1, s], G[i, k, 2, s] = x0, x1, z0
        return
    for k in range(K):
        for s in range(S):
            a0, a1, a2 = G[p, k, 0, s], G[p, k, 1, s], G[p, k, 2, s]
            Y[k, 0, s] = R[0, 0] * a0 + R[0, 1] * a1 + R[0, 2] * a2
            Y[k, 1, s] = R[1, 0] * a0 + R[1, 1] * a1 + R[1, 2] * a2
            Y[k, 2, s] = R[2, 0] * a0 + R[2, 1] * a1 + R[2, 2] * a2
    if not rev:
        for k in range(K):
            for s in range(S):
                G[i, k, 0, s], G[i, k, 1, s], G[i, k, 2, s] = Y[k, 0, s], Y[k, 1, s], Y[k, 2, s]
        return
    for k in range(K):
        for s in range(S):
            c, sn = E[i, 0, 0, s], E[i, 0, 1, s]
            y0, y1 = Y[k, 0, s], Y[k, 1, s]
            G[i, k, 0, s] = c * y0 - sn * y1
            G[i, k, 1, s] = sn * y0 + c * y1
            G[i, k, 2, s] = Y[k, 2, s]
        for j in range(1, k, 2):  # two terms per pass: half the stores
            m = k - j
            for s in range(S):
                c, sn = E[i, j, 0, s], E[i, j, 1, s]
                y0, y1 = Y[m, 0, s], Y[m, 1, s]
                d, dn = E[i, j + 1, 0, s], E[i, j + 1, 1, s]
                z0, z1 = Y[m - 1, 0, s], Y[m - 1, 1, s]
                G[i, k, 0, s] += (c * y0 - sn * y1) + (d * z0 - dn * z1)
                G[i, k, 1, s] += (sn * y0 + c * y1) + (dn * z0 + d * z1)
        if k % 2 == 1:
            for s in range(S):
                c, sn = E[i, k, 0, s], E[i, k, 1, s]
                y0, y1 = Y[0, 0, s], Y[0, 1, s]
                G[i, k, 0, s] += c * y0 - sn * y1
                G[i, k, 1, s] += sn * y0 + c * y1


@_njit
def _z_wrench_to_parent(RH, pH, i, rev, E, W, p, U, K, S):
    """W[p, k] += Ad(H_i)^T (joint motion)^T W[i, k] for k < K (wrenches (t, f), lanes S):
    first exp(+i q) on the (x, y) components (revolute) or t += q e_z x f (prismatic), then
    Ad(H)^T (t, f) = (R^T (t + f x pH), R^T f)."""
    for k in range(K):
        if rev:
            for s in range(S):
                c, sn = E[i, 0, 0, s], E[i, 0, 1, s]
                t0, t1, f0, f1 = W[i, k, 0, s], W[i, k, 1, s], W[i, k, 3, s], W[i, k, 4, s]
                U[k, 0, s] = c * t0 + sn * t1
                U[k, 1, s] = c * t1 - sn * t0
                U[k, 2, s] = W[i, k, 2, s]
                U[k, 3, s] = c * f0 + sn * f1
                U[k, 4, s] = c * f1 - sn * f0
                U[k, 5, s] = W[i, k, 5, s]
            for j in range(1, k, 2):  # two terms per pass: half the stores
                m = k - j
                for s in range(S):
                    c, sn = E[i, j, 0, s], E[i, j, 1, s]
                    t0, t1, f0, f1 = W[i, m, 0, s], W[i, m, 1, s], W[i, m, 3, s], W[i, m, 4, s]
                    d, dn = E[i, j + 1, 0, s], E[i, j + 1, 1, s]
                    u0, u1 = W[i, m - 1, 0, s], W[i, m - 1, 1, s]
                    g0, g1 = W[i, m - 1, 3, s], W[i, m - 1, 4, s]
                    U[k, 0, s] += (c * t0 + sn * t1) + (d * u0 + dn * u1)
                    U[k, 1, s] += (c * t1 - sn * t0) + (d * u1 - dn * u0)
                    U[k, 3, s] += (c * f0 + sn * f1) + (d * g0 + dn * g1)
                    U[k, 4, s] += (c * f1 - sn * f0) + (d * g1 - dn * g0)
            if k % 2 == 1:
                for s in range(S):
                    c, sn = E[i, k, 0, s], E[i, k, 1, s]
                    t0, t1, f0, f1 = W[i, 0, 0, s], W[i, 0, 1, s], W[i, 0, 3, s], W[i, 0, 4, s]
                    U[k, 0, s] += c * t0 + sn * t1
                    U[k, 1, s] += c * t1 - sn * t0
                    U[k, 3, s] += c * f0 + sn * f1
                    U[k, 4, s] += c * f1 - sn * f0
        else:
            for s in range(S):
                q0 = E[i, 0, 0, s]
                U[k, 0, s] = W[i, k, 0, s] - q0 * W[i, k, 4, s]
                U[k, 1, s] = W[i, k, 1, s] + q0 * W[i, k, 3, s]
                U[k, 2, s], U[k, 3, s] = W[i, k, 2, s], W[i, k, 3, s]
                U[k, 4, s], U[k, 5, s] = W[i, k, 4, s], W[i, k, 5, s]
            for j in range(1, k + 1):
                m = k - j
                for s in range(S):
                    qj = E[i, j, 0, s]
                    U[k, 0, s] -= qj * W[i, m, 4, s]
                    U[k, 1, s] += qj * W[i, m, 3, s]
    R = RH[i]
    q0, q1, q2 = pH[i, 0], pH[i, 1], pH[i, 2]
    for k in range(K):
        for s in range(S):
            f0, f1, f2 = U[k, 3, s], U[k, 4, s], U[k, 5, s]
            t0 = U[k, 0, s] + f1 * q2 - f2 * q1
            t1 = U[k, 1, s] + f2 * q0 - f0 * q2
            t2 = U[k, 2, s] + f0 * q1 - f1 * q0
            W[p, k, 0, s] += R[0, 0] * t0 + R[1, 0] * t1 + R[2, 0] * t2
            W[p, k, 1, s] += R[0, 1] * t0 + R[1, 1] * t1 + R[2, 1] * t2
            W[p, k, 2, s] += R[0, 2] * t0 + R[1, 2] * t1 + R[2, 2] * t2
            W[p, k, 3, s] += R[0, 0] * f0 + R[1, 0] * f1 + R[2, 0] * f2
            W[p, k, 4, s] += R[0, 1] * f0 + R[1, 1] * f1 + R[2, 1] * f2
            W[p, k, 5, s] += R[0, 2] * f0 + R[1, 2] * f1 + R[2, 2] * f2


@_njit
def _subtract_wext_z(W, i, Tw, wext, b0, K, S):
    """W[i, k] -= Tw_i wext[k, b0 + s, i] (the external wrench moved to the joint frame)."""
    for k in range(K):
        for r in range(6):
            for s in range(S):
                t = 0.0
                for c in range(6):
                    t += Tw[i, r, c] * wext[k, b0 + s, i, c]
                W[i, k, r, s] -= t


@_njit
def _rnea_z_lanes(parents, zgeo, jet, K, wext, out, fact):
    """:func:`rnea_jets` for a fixed base, ``LANES`` samples at a time, in joint-aligned body
    frames (``zgeo``: :func:`z_model_arrays`)."""
    B = jet.shape[0]
    n = parents.shape[0]
    kinds, RH, pH, M, Tw, g0 = z_model_arrays(zgeo, n)
    L = min(LANES, max(B, 1))
    has_w = wext.shape[1] > 0
    E = np.empty((n, K + 1, 2, L))
    V = np.empty((n, K + 1, 6, L))
    G = np.empty((n, K, 3, L))
    W = np.empty((n, K, 6, L))
    Y = np.empty((K + 1, 6, L))
    h = np.empty((K, 6, L))
    wc = np.empty((K + 1, L))
    a = np.empty((2, L))
    for b0 in range(0, B, L):
        S = min(L, B - b0)
        for i in range(n):
            p = parents[i]
            rev = kinds[i] == 0.0
            for k in range(K + 1):
                for s in range(S):
                    wc[k, s] = jet[b0 + s, k + 1, i] / fact[k]
            _z_motion(jet, b0, i, rev, wc, E, a, K, S)
            if p >= 0:
                _h_apply(RH, pH, i, V, p, Y, K + 1, S)
            _z_twists(E, i, rev, Y, p >= 0, wc, V, K, S)
            _z_gravity(RH, i, rev, E, G, p, g0, Y, K, S)
            _body_wrench(M, i, V, G, h, W, K, S)
            if has_w:
                _subtract_wext_z(W, i, Tw, wext, b0, K, S)
        for i in range(n - 1, -1, -1):
            z = 2 if kinds[i] == 0.0 else 5
            for k in range(K):
                for s in range(S):
                    out[b0 + s, k, i] = W[i, k, z, s] * fact[k]
            p = parents[i]
            if p >= 0:
                _z_wrench_to_parent(RH, pH, i, kinds[i] == 0.0, E, W, p, Y, K, S)


@_njit
def _rnea_z_one(parents, zgeo, jet, b, K, wext, out, fact, E, V, G, W, Y, h, wc):
    """Sample b of :func:`rnea_jets` for a fixed base, on scalars, in joint-aligned body frames
    (:func:`_rnea_z_lanes` without lanes: for one sample or a few, where the lanes' loop set-ups
    cost more than the arithmetic). Work arrays from :func:`_z_one_work`."""
    n = parents.shape[0]
    kinds, RH, pH, M, Tw, g0 = z_model_arrays(zgeo, n)
    has_w = wext.shape[1] > 0
    for i in range(n):
        p = parents[i]
        rev = kinds[i] == 0.0
        for k in range(K + 1):
            wc[k] = jet[b, k + 1, i] / fact[k]
        t = jet[b, 0, i]
        if rev:  # exp(-i q): (k+1) E_{k+1} = -i sum_j wc_j E_{k-j}
            if abs(t) <= SINCOS_LIMIT:  # as in the batches
                sn, cs = sincos(t)
                E[i, 0, 0], E[i, 0, 1] = cs, -sn
            else:
                E[i, 0, 0], E[i, 0, 1] = math.cos(t), -math.sin(t)
            for k in range(K):
                a0 = a1 = 0.0
                for j in range(k + 1):
                    a0 += wc[j] * E[i, k - j, 0]
                    a1 += wc[j] * E[i, k - j, 1]
                c = 1.0 / (k + 1)
                E[i, k + 1, 0], E[i, k + 1, 1] = a1 * c, -a0 * c
        else:  # q's coefficients
            E[i, 0, 0] = t
            for k in range(1, K + 1):
                E[i, k, 0] = wc[k - 1] * (1.0 / k)
        R = RH[i]
        q0, q1, q2 = pH[i, 0], pH[i, 1], pH[i, 2]
        # twists: Y_k = Ad(H) V_p,k, then the joint motion, + wc_k Z
        for k in range(K + 1):
            if p >= 0:
                a0, a1, a2 = V[p, k, 0], V[p, k, 1], V[p, k, 2]
                b0, b1, b2 = V[p, k, 3], V[p, k, 4], V[p, k, 5]
                r0 = R[0, 0] * a0 + R[0, 1] * a1 + R[0, 2] * a2
                r1 = R[1, 0] * a0 + R[1, 1] * a1 + R[1, 2] * a2
                r2 = R[2, 0] * a0 + R[2, 1] * a1 + R[2, 2] * a2
                Y[k, 0], Y[k, 1], Y[k, 2] = r0, r1, r2
                Y[k, 3] = R[0, 0] * b0 + R[0, 1] * b1 + R[0, 2] * b2 + q1 * r2 - q2 * r1
                Y[k, 4] = R[1, 0] * b0 + R[1, 1] * b1 + R[1, 2] * b2 + q2 * r0 - q0 * r2
                Y[k, 5] = R[2, 0] * b0 + R[2, 1] * b1 + R[2, 2] * b2 + q0 * r1 - q1 * r0
            else:
                for r in range(6):
                    Y[k, r] = 0.0
            if rev:
                x0 = x1 = x3 = x4 = 0.0
                for j in range(k + 1):
                    m = k - j
                    c, sn = E[i, j, 0], E[i, j, 1]
                    x0 += c * Y[m, 0] - sn * Y[m, 1]
                    x1 += sn * Y[m, 0] + c * Y[m, 1]
                    x3 += c * Y[m, 3] - sn * Y[m, 4]
                    x4 += sn * Y[m, 3] + c * Y[m, 4]
                V[i, k, 0], V[i, k, 1], V[i, k, 2] = x0, x1, Y[k, 2] + wc[k]
                V[i, k, 3], V[i, k, 4], V[i, k, 5] = x3, x4, Y[k, 5]
            else:
                x3, x4 = Y[k, 3], Y[k, 4]
                for j in range(k + 1):
                    qj = E[i, j, 0]
                    x3 += qj * Y[k - j, 1]
                    x4 -= qj * Y[k - j, 0]
                V[i, k, 0], V[i, k, 1], V[i, k, 2] = Y[k, 0], Y[k, 1], Y[k, 2]
                V[i, k, 3], V[i, k, 4], V[i, k, 5] = x3, x4, Y[k, 5] + wc[k]
        # gravity: the linear part of (0, -g) moved along the tree
        for k in range(K):
            if p >= 0:
                a0, a1, a2 = G[p, k, 0], G[p, k, 1], G[p, k, 2]
            elif k == 0:
                a0, a1, a2 = g0[0], g0[1], g0[2]
            else:
                a0 = a1 = a2 = 0.0
            Y[k, 0] = R[0, 0] * a0 + R[0, 1] * a1 + R[0, 2] * a2
            Y[k, 1] = R[1, 0] * a0 + R[1, 1] * a1 + R[1, 2] * a2
            Y[k, 2] = R[2, 0] * a0 + R[2, 1] * a1 + R[2, 2] * a2
            if rev:
                x0 = x1 = 0.0
                for j in range(k + 1):
                    c, sn = E[i, j, 0], E[i, j, 1]
                    x0 += c * Y[k - j, 0] - sn * Y[k - j, 1]
                    x1 += sn * Y[k - j, 0] + c * Y[k - j, 1]
                G[i, k, 0], G[i, k, 1], G[i, k, 2] = x0, x1, Y[k, 2]
            else:
                G[i, k, 0], G[i, k, 1], G[i, k, 2] = Y[k, 0], Y[k, 1], Y[k, 2]
        # W_k = M (dV_k + G_k) + sum_j -ad(V_j)^T M V_{k-j} - W_ext,k
        _scalar_body_wrench(M, i, V, G, h, W, K)
        if has_w:
            for k in range(K):
                for r in range(6):
                    for c in range(6):
                        W[i, k, r] -= Tw[i, r, c] * wext[k, b, i, c]
    for i in range(n - 1, -1, -1):
        rev = kinds[i] == 0.0
        z = 2 if rev else 5
        for k in range(K):
            out[b, k, i] = W[i, k, z] * fact[k]
        p = parents[i]
        if p < 0:
            continue
        R = RH[i]
        q0, q1, q2 = pH[i, 0], pH[i, 1], pH[i, 2]
        for k in range(K):
            # the joint motion transposed: exp(+i q) on (x, y), or t += q e_z x f
            if rev:
                t0 = t1 = f0 = f1 = 0.0
                for j in range(k + 1):
                    m = k - j
                    c, sn = E[i, j, 0], E[i, j, 1]
                    t0 += c * W[i, m, 0] + sn * W[i, m, 1]
                    t1 += c * W[i, m, 1] - sn * W[i, m, 0]
                    f0 += c * W[i, m, 3] + sn * W[i, m, 4]
                    f1 += c * W[i, m, 4] - sn * W[i, m, 3]
            else:
                t0, t1, f0, f1 = W[i, k, 0], W[i, k, 1], W[i, k, 3], W[i, k, 4]
                for j in range(k + 1):
                    qj = E[i, j, 0]
                    t0 -= qj * W[i, k - j, 4]
                    t1 += qj * W[i, k - j, 3]
            t2, f2 = W[i, k, 2], W[i, k, 5]
            # Ad(H)^T (t, f) = (R^T (t + f x pH), R^T f)
            u0 = t0 + f1 * q2 - f2 * q1
            u1 = t1 + f2 * q0 - f0 * q2
            u2 = t2 + f0 * q1 - f1 * q0
            W[p, k, 0] += R[0, 0] * u0 + R[1, 0] * u1 + R[2, 0] * u2
            W[p, k, 1] += R[0, 1] * u0 + R[1, 1] * u1 + R[2, 1] * u2
            W[p, k, 2] += R[0, 2] * u0 + R[1, 2] * u1 + R[2, 2] * u2
            W[p, k, 3] += R[0, 0] * f0 + R[1, 0] * f1 + R[2, 0] * f2
            W[p, k, 4] += R[0, 1] * f0 + R[1, 1] * f1 + R[2, 1] * f2
            W[p, k, 5] += R[0, 2] * f0 + R[1, 2] * f1 + R[2, 2] * f2


@_njit
def _rnea_z_samples(parents, zgeo, jet, K, wext, out, fact):
    """:func:`_rnea_z_one` on every sample of the batch, the work arrays allocated once."""
    n = parents.shape[0]
    buf = np.empty(n * (K + 1) * 8 + n * K * 9 + (K + 1) * 7 + K * 6)
    o1, o2, o3 = n * (K + 1) * 2, n * (K + 1) * 8, n * (K + 1) * 8 + n * K * 3
    o4 = o3 + n * K * 6
    E = buf[:o1].reshape((n, K + 1, 2))
    V = buf[o1:o2].reshape((n, K + 1, 6))
    G = buf[o2:o3].reshape((n, K, 3))
    W = buf[o3:o4].reshape((n, K, 6))
    Y = buf[o4:o4 + (K + 1) * 6].reshape((K + 1, 6))
    h = buf[o4 + (K + 1) * 6:o4 + (K + 1) * 6 + K * 6].reshape((K, 6))
    wc = buf[o4 + (K + 1) * 6 + K * 6:]
    for b in range(jet.shape[0]):
        _rnea_z_one(parents, zgeo, jet, b, K, wext, out, fact, E, V, G, W, Y, h, wc)


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
    to end in one flat array, then those of :func:`z_geometry`: the form :func:`rnea_jets`
    and :func:`rnea_jets_general` take (fewer arguments to convert)."""
    parents, *arrays = kernel_model(model)
    return parents, np.concatenate([a.ravel() for a in arrays] + [z_geometry(model)])


@per_model
def rnea_kernel(model):
    """``(kernel, parents, geometry)``: :func:`rnea_jets` (joint-aligned frames) or, for a
    model with a pitched screw, :func:`rnea_jets_general`, and its arguments
    (:func:`kernel_geometry`)."""
    parents, geometry = kernel_geometry(model)
    aligned = geometry[60 * model.n_dof + 6] > 0.0
    return (rnea_jets if aligned else rnea_jets_general), parents, geometry


def joint_frames(model):
    """``(kinds (n,), T (n, 4, 4))``: kind 0 revolute, 1 prismatic, and the pose in body i's
    frame of a frame whose z axis is joint i's axis (origin on it), in which the screw is
    ``Z = e_z`` (angular, revolute) or linear (prismatic): ``X_i = Ad(T_i) Z``. None when a
    screw is neither a unit rotation about a line nor a unit translation."""
    n = model.n_dof
    kinds, T = np.zeros(n), np.tile(np.eye(4), (n, 1, 1))
    for i, X in enumerate(model.screws):
        w, v = X[:3], X[3:]
        if np.any(w != 0):
            if abs(w @ w - 1) > 1e-14 or abs(w @ v) > 1e-14 * max(1.0, np.linalg.norm(v)):
                return None
            axis, T[i, :3, 3] = w, np.cross(w, v)  # v = r x w for the line through r
        else:
            if abs(v @ v - 1) > 1e-14:
                return None
            axis, kinds[i] = v, 1.0
        if not (axis[0] == axis[1] == 0 and axis[2] == 1):
            helper = np.eye(3)[np.argmin(np.abs(axis))]
            x = np.cross(helper, axis)
            x /= np.linalg.norm(x)
            T[i, :3, :3] = np.stack([x, np.cross(axis, x), axis], axis=1)
    return kinds, T


def z_geometry(model):
    """The model arrays re-expressed in joint-aligned body frames (:func:`joint_frames`) for
    :func:`rnea_jets`: a flag (1.0, or 0.0 with zeros when some screw does not allow it), then
    ``kinds``, ``RH`` (n, 3, 3), ``pH`` (n, 3) the blocks of ``Ad(H_i) = Ad(T_i^-1 B_i^-1
    T_parent)``, the inertias ``Ad(T_i)^T M_i Ad(T_i)``, ``Ad(T_i)^T`` (external wrenches) and
    the linear part of the base acceleration (see :func:`z_model_arrays`)."""
    n = model.n_dof
    frames = joint_frames(model)
    if frames is None:
        return np.zeros(1 + 85 * n + 3)
    kinds, T = frames
    parent_T = np.array([T[p] if p >= 0 else np.eye(4) for p in model.parents]).reshape(n, 4, 4)
    H = inverse(T) @ inverse(model.references) @ parent_T
    A = Ad(T)
    AT = np.swapaxes(A, -1, -2)
    arrays = (kinds, H[:, :3, :3], H[:, :3, 3], AT @ model.inertias @ A, AT, -model.gravity)
    return np.concatenate([[1.0]] + [np.ascontiguousarray(a).ravel() for a in arrays])


@per_model
def kernel_base(model):
    """Writable copies of a floating model's base inertia and world gravity for
    :func:`rnea_floating`."""
    return np.array(model.base_inertia), np.array(model.gravity)
