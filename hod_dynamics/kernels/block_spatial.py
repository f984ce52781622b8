"""Spatial algebra on the block form of Ad coefficients, for the numba kernels.

Every ``Ad`` coefficient of the recursion on Taylor jets keeps the block form ``[[R, 0], [P, R]]``
(ad(X) and Ad(B^-1) have it, and sums and products preserve it), so it is stored as two 3x3
blocks (R, P), with the sample index innermost (SIMD lanes): ``Ad (w, v) = (R w, P w + R v)``
on twists and ``Ad^T (t, f) = (R^T t + P^T f, R^T f)`` on wrenches. Helpers take whole arrays
and indices rather than slices (a slice is a view whose reference counting costs more than the
arithmetic on one sample).
"""

import math

from .njit import njit

@njit
def ad_screw(X, SR, SP, scale, AR, AP, i, k, S):
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


@njit
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


@njit
def joint_adjoint(X, R0, P0, i, theta, E, AR, AP, S):
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


@njit
def ad_apply_add(AR, AP, i, j, x, xb, xk, out, ob, ok, S):
    """out[ob, ok] += Ad_j of body i applied to the twists x[xb, xk] (6, S)."""
    for r in range(3):
        for s in range(S):
            x0, x1, x2 = x[xb, xk, 0, s], x[xb, xk, 1, s], x[xb, xk, 2, s]
            x3, x4, x5 = x[xb, xk, 3, s], x[xb, xk, 4, s], x[xb, xk, 5, s]
            R0, R1, R2 = AR[i, j, r, 0, s], AR[i, j, r, 1, s], AR[i, j, r, 2, s]
            out[ob, ok, r, s] += R0 * x0 + R1 * x1 + R2 * x2
            out[ob, ok, r + 3, s] += (AP[i, j, r, 0, s] * x0 + AP[i, j, r, 1, s] * x1
                                      + AP[i, j, r, 2, s] * x2 + R0 * x3 + R1 * x4 + R2 * x5)


@njit
def rot_apply_add(AR, i, j, x, xb, xk, out, ob, ok, S):
    """out[ob, ok] += R block of Ad_j of body i applied to x[xb, xk] (3, S): the linear part
    of Ad_j (0, x), all that gravity twists (0, -g) have."""
    for r in range(3):
        for s in range(S):
            out[ob, ok, r, s] += (AR[i, j, r, 0, s] * x[xb, xk, 0, s] + AR[i, j, r, 1, s]
                                  * x[xb, xk, 1, s] + AR[i, j, r, 2, s] * x[xb, xk, 2, s])


@njit
def rot_apply_const_add(AR, i, j, x, out, ob, ok, S):
    """out[ob, ok] += R block of Ad_j of body i applied to one vector x (3,)."""
    x0, x1, x2 = x[0], x[1], x[2]
    for r in range(3):
        for s in range(S):
            out[ob, ok, r, s] += (AR[i, j, r, 0, s] * x0 + AR[i, j, r, 1, s] * x1
                                  + AR[i, j, r, 2, s] * x2)


@njit
def adT_apply_add(AR, AP, i, j, W, xk, p, ok, S):
    """W[p, ok] += Ad_j^T of body i applied to the wrenches W[i, xk] (6, S)."""
    for c in range(3):
        for s in range(S):
            x0, x1, x2 = W[i, xk, 0, s], W[i, xk, 1, s], W[i, xk, 2, s]
            x3, x4, x5 = W[i, xk, 3, s], W[i, xk, 4, s], W[i, xk, 5, s]
            R0, R1, R2 = AR[i, j, 0, c, s], AR[i, j, 1, c, s], AR[i, j, 2, c, s]
            W[p, ok, c, s] += (R0 * x0 + R1 * x1 + R2 * x2 + AP[i, j, 0, c, s] * x3
                               + AP[i, j, 1, c, s] * x4 + AP[i, j, 2, c, s] * x5)
            W[p, ok, c + 3, s] += R0 * x3 + R1 * x4 + R2 * x5
