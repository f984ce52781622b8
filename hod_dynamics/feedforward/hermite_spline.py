"""The Hermite (complete) spline through waypoints with derivative data, in linear time.

Through N waypoints with values q and the derivatives q^(1..r) at the interior ones, the spline
of degree p = 2 h + 1 with knots of multiplicity r + 1 at the interior waypoints and the end
conditions q^(1..h) given at both ends is the unique minimiser of the integral of
|q^(h+1)|^2 under these conditions (the classical complete spline; de Boor, "A Practical Guide
to Splines", ch. XIII). scipy has no interpolant with interior derivative data, so its
collocation system is assembled here from the B-spline basis: each condition at a point involves
only the p + 1 basis functions nonzero on that point's knot span, so with the conditions in the
order of their points the square system is banded (about p below and above the diagonal) and is
solved banded (LAPACK's gbsv): O(N) time and memory where a dense solve costs
O(N^3) time and O(N^2) memory (a planner's 6,000 waypoints of 7 joints: 0.04 s instead of
minutes). The basis functions and their derivatives at the waypoints come from the recurrence
of Piegl and Tiller, "The NURBS Book", algorithm A2.3, evaluated for all waypoints at once.
"""

import numpy as np


def basis_derivatives(knots, p, x, span, n):
    """Derivatives 0..n of the p + 1 B-spline basis functions of degree ``p`` that are nonzero
    on the knot span ``span`` (the basis indices span - p .. span) at the points ``x`` (m,):
    (n + 1, p + 1, m). ``knots`` (len >= span + p + 2,); ``knots[span] <= x <= knots[span + 1]``.
    The point axis is last, so that every step of the recurrence is one contiguous vector."""
    m = len(x)
    ndu = np.empty((p + 1, p + 1, m))   # upper triangle: basis values; lower: knot differences
    ndu[0, 0] = 1.0
    left, right = np.empty((p + 1, m)), np.empty((p + 1, m))
    for j in range(1, p + 1):
        left[j] = x - knots[span + 1 - j]
        right[j] = knots[span + j] - x
        saved = np.zeros(m)
        for r in range(j):
            ndu[j, r] = right[r + 1] + left[j - r]
            temp = ndu[r, j - 1] / ndu[j, r]
            ndu[r, j] = saved + right[r + 1] * temp
            saved = left[j - r] * temp
        ndu[j, j] = saved
    ders = np.zeros((n + 1, p + 1, m))
    ders[0] = ndu[:, p]
    a = np.empty((2, p + 1, m))
    for r in range(p + 1):
        s1, s2 = 0, 1
        a[0, 0] = 1.0
        for k in range(1, n + 1):
            d = np.zeros(m)
            rk, pk = r - k, p - k
            if r >= k:
                a[s2, 0] = a[s1, 0] / ndu[pk + 1, rk]
                d = a[s2, 0] * ndu[rk, pk]
            for j in range(1 if rk >= -1 else -rk, (k - 1 if r - 1 <= pk else p - r) + 1):
                a[s2, j] = (a[s1, j] - a[s1, j - 1]) / ndu[pk + 1, rk + j]
                d += a[s2, j] * ndu[rk + j, pk]
            if r <= pk:
                a[s2, k] = -a[s1, k - 1] / ndu[pk + 1, r]
                d += a[s2, k] * ndu[r, pk]
            ders[k, r] = d
            s1, s2 = s2, s1
    factor = p
    for k in range(1, n + 1):
        ders[k] *= factor
        factor *= p - k
    return ders


def hermite_spline(times, given, hold, start=None):
    """The spline of degree 2 ``hold`` + 1 through ``given[nu]`` ((N, n) values of q^(nu) at the
    waypoints ``times`` (N,) s; for nu >= 1 only the interior ones are used) with q^(1..hold) =
    0 at the end and at the start, or ``start`` ((hold, n): q^(1..hold) there) at the start.
    Returns a :class:`scipy.interpolate.BSpline` (coefficients (n_coef, n))."""
    from scipy.interpolate import BSpline        # on first use: what imports this module may not need it
    from scipy.linalg.lapack import dgbsv

    p, r, N = 2 * hold + 1, len(given) - 1, len(times)
    n = given[0].shape[1]
    knots = np.r_[[times[0]] * (p + 1), np.repeat(times[1:-1], r + 1), [times[-1]] * (p + 1)]
    n_coef = len(knots) - p - 1
    start = np.zeros((hold, n)) if start is None else np.asarray(start, dtype=float)
    # the conditions in the order of their points: the start (q, q^(1..hold)), each interior
    # waypoint (q, q^(1..r)), the end (q, q^(1..hold)); ``at`` is the waypoint of each
    at = np.r_[np.zeros(hold + 1, int), np.repeat(np.arange(1, N - 1), r + 1), np.full(hold + 1, N - 1)]
    nu = np.r_[np.arange(hold + 1), np.tile(np.arange(r + 1), N - 2), np.arange(hold + 1)]
    rhs = np.vstack([given[0][:1], start,
                     np.stack([g[1:-1] for g in given], axis=1).reshape(-1, n),
                     given[0][-1:], np.zeros((hold, n))])
    # the knot span of each waypoint (right-continuous inside: a derivative of order <= r is
    # continuous at a knot of multiplicity r + 1 since p >= 2 r + 1; the last span at the end)
    span = np.clip(np.searchsorted(knots, times, side="right") - 1, p, n_coef - 1)
    values = _condition_values(knots, p, times, span, max(hold, r), at, nu)  # (rows, p + 1)
    rows = np.arange(len(at))[:, None]
    cols = span[at][:, None] - p + np.arange(p + 1)
    below, above = int((rows - cols).max()), int((cols - rows).max())
    # LAPACK's gbsv directly, its matrix laid out as it factorises it (below more rows for the
    # fill-in of the pivoting): scipy's solve_banded would copy the band into that layout (a
    # 60,001-waypoint trajectory's takes 40 MB, most of the solve's time on first use)
    lu_band = np.zeros((2 * below + above + 1, n_coef))
    lu_band[below + above + rows - cols, cols] = values
    _, _, coefficients, info = dgbsv(below, above, lu_band, rhs, overwrite_ab=1, overwrite_b=1)
    if info > 0:
        raise np.linalg.LinAlgError("singular Hermite interpolation system (waypoint times must increase)")
    return BSpline(knots, coefficients, p)


def _condition_values(knots, p, times, span, n, at, nu, block=4096):
    """(rows, p + 1): row i the derivative ``nu[i]`` of the p + 1 basis functions nonzero at
    waypoint ``at[i]`` (``at`` sorted). Made ``block`` waypoints at a time: the recurrence's
    arrays for all of a long trajectory at once (p + 1 squared of them per waypoint) would cost
    more to allocate and touch than to compute."""
    values = np.empty((len(at), p + 1))
    for a in range(0, len(times), block):
        b = min(a + block, len(times))
        lo, hi = np.searchsorted(at, [a, b])
        ders = basis_derivatives(knots, p, times[a:b], span[a:b], n)
        values[lo:hi] = ders[nu[lo:hi], :, at[lo:hi] - a]
    return values
