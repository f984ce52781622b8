"""Compiled banded solves of the fit of recorded positions: the Cholesky factor of a symmetric
positive definite band matrix and its solves (the smoothing spline's normal equations, with
the smoother's refinement by successive differences in the numpy path's arithmetic), and
the B-spline interpolation (collocation, its band solve) and evaluation (de Boor's basis
recursion) that carry the smoothed values to any time and derivative.

The numbers are those of LAPACK's ``dpbtrf``/``dpbtrs`` (the same upper band storage) and of
scipy's ``make_interp_spline``/``BSpline`` to rounding; what is spared is their import (scipy's
linalg and interpolate packages: 0.4 s of a command) and a wrapper's overhead per call. The
collocation matrix of B-splines at points that satisfy the Schoenberg-Whitney conditions is
totally positive, so its Gauss elimination without pivoting is stable (de Boor, "A Practical
Guide to Splines", ch. XIII). Private: called by :mod:`hod_dynamics.recordings.splines` on
arrays it has checked. Compiled by numba with its disk cache (about 4 s after an install, then
loaded from the cache), without the GIL.
"""

import numba
import numpy as np


def njit(f):
    """numba's ``njit`` with its disk cache, or without it where no location is writable."""
    try:
        return numba.njit(cache=True, nogil=True, error_model="numpy")(f)
    except RuntimeError:       # "cannot cache function ...: no locator available"
        return numba.njit(nogil=True, error_model="numpy")(f)


@njit
def cholesky_banded(ab):
    """The upper Cholesky factor U (A = U' U) of the symmetric band matrix A in upper band
    storage ab (d+1, m) (``ab[d + i - j, j] = A[i, j]``, i <= j), in the same storage; returns
    (U, 0), or (ab, j + 1) when the leading minor of order j + 1 is not positive."""
    d, m = ab.shape[0] - 1, ab.shape[1]
    u = np.zeros_like(ab)
    for j in range(m):
        for i in range(max(0, j - d), j + 1):
            s = ab[d + i - j, j]
            for k in range(max(0, j - d), i):
                s -= u[d + k - i, i] * u[d + k - j, j]
            if i < j:
                u[d + i - j, j] = s / u[d, i]
            elif s > 0.0:
                u[d, j] = np.sqrt(s)
            else:
                return ab, j + 1
    return u, 0


@njit
def solve_cholesky_banded(u, b):
    """x (m, C) of U' U x = b (m, C), U of :func:`cholesky_banded`."""
    d, m = u.shape[0] - 1, u.shape[1]
    x = b.copy()
    for i in range(m):                       # U' y = b
        for k in range(max(0, i - d), i):
            f = u[d + k - i, i]
            for c in range(x.shape[1]):
                x[i, c] -= f * x[k, c]
        for c in range(x.shape[1]):
            x[i, c] /= u[d, i]
    for i in range(m - 1, -1, -1):           # U x = y
        for k in range(i + 1, min(m, i + d + 1)):
            f = u[d + i - k, k]
            for c in range(x.shape[1]):
                x[i, c] -= f * x[k, c]
        for c in range(x.shape[1]):
            x[i, c] /= u[d, i]
    return x


@njit
def _interval(t, k, n, x):
    """l with t[l] <= x < t[l+1], within [k, n - 1] (n coefficients): outside the base
    interval, the end pieces (extrapolation)."""
    lo, hi = k, n - 1
    if x >= t[hi]:
        return hi
    while hi - lo > 1:                       # t[lo] <= x < t[hi]
        mid = (lo + hi) // 2
        if x >= t[mid]:
            lo = mid
        else:
            hi = mid
    return lo


@njit
def _basis(t, k, l, x, out, left, right):
    """The k+1 B-splines of degree k not zero on [t[l], t[l+1]) at x, into out[0..k]
    (Cox-de Boor)."""
    out[0] = 1.0
    for j in range(1, k + 1):
        left[j] = x - t[l + 1 - j]
        right[j] = t[l + j] - x
        saved = 0.0
        for r in range(j):
            temp = out[r] / (right[r + 1] + left[j - r])
            out[r] = saved + right[r + 1] * temp
            saved = left[j - r] * temp
        out[j] = saved


@njit
def evaluate_spline(t, c, k, x):
    """(len(x), C): the spline of degree k with knots t and coefficients c (n, C) at x."""
    n = c.shape[0]
    out = np.zeros((x.shape[0], c.shape[1]))
    basis, left, right = np.empty(k + 1), np.empty(k + 1), np.empty(k + 1)
    for p in range(x.shape[0]):
        l = _interval(t, k, n, x[p])
        _basis(t, k, l, x[p], basis, left, right)
        for r in range(k + 1):
            w = basis[r]
            for q in range(c.shape[1]):
                out[p, q] += w * c[l - k + r, q]
    return out


@njit
def collocation_solve(t, k, x, y):
    """The coefficients c (n, C) of the spline of degree k with knots t (n + k + 1) through
    the n points (x, y (n, C)): its collocation matrix (band of k on each side) reduced by
    Gauss elimination without pivoting (totally positive); returns (c, 0), or (y, i + 1)
    when pivot i vanishes (points not interlaced with the knots)."""
    n = x.shape[0]
    w = 2 * k + 1
    a = np.zeros((n, w))                      # a[i, j - i + k] = A[i, j]
    basis, left, right = np.empty(k + 1), np.empty(k + 1), np.empty(k + 1)
    for i in range(n):
        l = _interval(t, k, n, x[i])
        _basis(t, k, l, x[i], basis, left, right)
        for r in range(k + 1):
            a[i, l - k + r - i + k] = basis[r]
    c = y.copy()
    for p in range(n):
        pivot = a[p, k]
        if pivot == 0.0:
            return y, p + 1
        for i in range(p + 1, min(n, p + k + 1)):
            f = a[i, p - i + k] / pivot
            if f == 0.0:
                continue
            for j in range(p + 1, min(n, p + k + 1)):
                a[i, j - i + k] -= f * a[p, j - p + k]
            for q in range(c.shape[1]):
                c[i, q] -= f * c[p, q]
    for p in range(n - 1, -1, -1):
        for j in range(p + 1, min(n, p + k + 1)):
            f = a[p, j - p + k]
            for q in range(c.shape[1]):
                c[p, q] -= f * c[j, q]
        for q in range(c.shape[1]):
            c[p, q] /= a[p, k]
    return c, 0


@njit
def _penalty(f, spans, scale, g, prev, out, active):
    """out[:, c] = B'B f[:, c] for the columns c of ``active`` by successive differences (the
    numpy path's arithmetic, in its order): spans (d, m) (row k-1: t[k:] - t[:-k], then
    unused), scale (m - d,); g (m + 1, C) and prev (C,) work."""
    d, m = spans.shape[0], f.shape[0]
    for i in range(m):
        for c in active:
            g[i, c] = f[i, c]
    n = m
    for k in range(d):                               # d-th divided differences, scaled
        n -= 1
        for i in range(n):
            for c in active:
                g[i, c] = (g[i + 1, c] - g[i, c]) / spans[k, i]
    for i in range(n):
        s2 = scale[i] * scale[i]
        for c in active:
            g[i, c] = g[i, c] * s2
    for k in range(d - 1, -1, -1):                   # and back: -diff([0, g / span, 0])
        for c in active:
            prev[c] = 0.0                            # the previous quotient of each column
        for i in range(n):
            for c in active:
                h = g[i, c] / spans[k, i]
                g[i, c] = -(h - prev[c])
                prev[c] = h
        for c in active:
            g[n, c] = -(0.0 - prev[c])
        n += 1
    for i in range(m):
        for c in active:
            out[i, c] = g[i, c]


@njit
def refined_solve(u, y, level, spans, scale, max_refine):
    """f (m, C) of (I + level B'B) f = y (m, C) for each column: the banded Cholesky solve of
    :func:`cholesky_banded`'s factor u, refined with residuals taken by successive
    differences (see :class:`~hod_dynamics.recordings.smoothing.Smoother`) until a step is
    below 1e-15 of the column's largest value or stops halving, each column on its own (the
    columns still refining are carried together)."""
    m, C = y.shape
    f = y.copy()
    g, prev, pen = np.empty((m + 1, C)), np.empty(C), np.empty((m, C))
    tol, last = np.empty(C), np.full(C, np.inf)
    for c in range(C):
        top = 0.0
        for i in range(m):
            top = max(top, abs(y[i, c]))
        tol[c] = 1e-15 * max(top, 1e-300)
    active = np.arange(C)
    for _ in range(max_refine):
        _penalty(f, spans, scale, g, prev, pen, active)
        r = np.empty((m, len(active)))
        for i in range(m):
            for j in range(len(active)):
                c = active[j]
                r[i, j] = (y[i, c] - f[i, c]) - level * pen[i, c]
        step = solve_cholesky_banded(u, r)
        keep = np.ones(len(active), dtype=np.bool_)
        for j in range(len(active)):
            c = active[j]
            size = 0.0
            for i in range(m):
                f[i, c] += step[i, j]
                size = max(size, abs(step[i, j]))
            if size <= tol[c] or size > 0.5 * last[c]:    # exact, or down to the rounding of the residuals
                keep[j] = False
            last[c] = size
        active = active[keep]
        if not len(active):
            break
    return f
