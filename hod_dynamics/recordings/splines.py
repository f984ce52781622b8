"""The band solves and splines of the fit of recorded positions: the Cholesky factor of the
smoothing spline's normal equations and its solves, and the interpolating B-spline through
the smoothed values (its knots, coefficients, values and derivatives).

Compiled (:mod:`hod_dynamics.recordings.banded`, numba) where numba imports and the numpy
backend is not chosen (``HOD_DYNAMICS_BACKEND=numpy``), else scipy's
``cholesky_banded``/``cho_solve_banded`` and ``make_interp_spline``/``BSpline``, which give
the same numbers to rounding: the compiled ones spare a replay the import of scipy's linalg and
interpolate packages (0.4 s of ``hod-dynamics analyze-bag``) and a wrapper per call.
"""

import os

import numpy as np

_COMPILED = []      # the kernels module, or None without numba (looked up once)
# the backend variable of the dynamics (hod_dynamics.kernels.backend): "numpy" there means
# nothing compiled, the fit's band solves included
BACKEND_VARIABLE = "HOD_DYNAMICS_BACKEND"


def _kernels():
    """The compiled kernels (:mod:`hod_dynamics.recordings.banded`), or None: numba cannot be
    imported, or ``HOD_DYNAMICS_BACKEND=numpy`` chose the uncompiled path."""
    if os.environ.get(BACKEND_VARIABLE, "").strip().lower() == "numpy":
        return None
    if not _COMPILED:
        try:
            from . import banded
        except Exception:     # ImportError, or a numba broken by a mismatched numpy
            banded = None
        _COMPILED.append(banded)
    return _COMPILED[0]


def cholesky_banded(ab):
    """The upper Cholesky factor U (A = U' U) of the symmetric positive definite band matrix A
    in LAPACK's upper band storage ab (d+1, m), in the same storage. Raises
    numpy.linalg.LinAlgError when A is not positive definite."""
    kernels = _kernels()
    if kernels is None:
        from scipy.linalg import cholesky_banded as scipy_cholesky

        return scipy_cholesky(ab, lower=False, check_finite=False)
    u, failed = kernels.cholesky_banded(np.ascontiguousarray(ab, dtype=float))
    if failed:
        raise np.linalg.LinAlgError(f"{failed}-th leading minor not positive definite")
    return u


def solve_cholesky_banded(u, b):
    """x of U' U x = b for b (m,) or (m, C); U of :func:`cholesky_banded`."""
    kernels = _kernels()
    if kernels is None:
        from scipy.linalg import cho_solve_banded

        return cho_solve_banded((u, False), b, check_finite=False)
    b = np.asarray(b, dtype=float)
    return kernels.solve_cholesky_banded(u, np.ascontiguousarray(b.reshape(len(b), -1))).reshape(b.shape)


def refined_solver():
    """The compiled refinement of the smoothing spline's solve
    (:func:`hod_dynamics.recordings.banded.refined_solve`), or None without numba (the
    smoother then refines in numpy, with the same arithmetic)."""
    kernels = _kernels()
    return None if kernels is None else kernels.refined_solve


class Spline:
    """A B-spline curve of degree ``k``: knots ``t`` (n + k + 1,), coefficients ``c`` (n, ...)
    (any trailing shape); ``spline(x)`` its values (len(x), ...), ``derivative()`` the
    B-spline of its first derivative. The values of scipy's ``BSpline(t, c, k)`` (outside
    the knots' span, the end pieces continued)."""

    def __init__(self, t, c, k):
        self.t, self.c, self.k = t, c, k

    def __call__(self, x):
        x = np.ascontiguousarray(x, dtype=float)
        kernels = _kernels()
        flat = self.c.reshape(len(self.c), -1)
        if kernels is None:
            from scipy.interpolate import BSpline

            values = BSpline(self.t, flat, self.k)(x.ravel())
        else:
            values = kernels.evaluate_spline(self.t, np.ascontiguousarray(flat), self.k, x.ravel())
        return values.reshape(x.shape + self.c.shape[1:])

    def derivative(self):
        """The B-spline of degree k - 1 of the first derivative (k >= 1)."""
        t, c, k = self.t, self.c, self.k
        if k < 1:
            raise ValueError("a spline of degree 0 has no derivative spline")
        span = (t[k + 1:-1] - t[1:-k - 1]).reshape((-1,) + (1,) * (c.ndim - 1))
        return Spline(t[1:-1], k * (c[1:] - c[:-1]) / span, k - 1)


def interpolating_spline(x, y, k):
    """The B-spline of odd degree k through the points (x (n,) increasing, y (n, ...)) with
    not-a-knot end conditions: the knots at the data's points but the (k-1)/2 first and last
    inside ones, as scipy's ``make_interp_spline(x, y, k)``. Returns :class:`Spline`."""
    x = np.ascontiguousarray(x, dtype=float)
    y = np.asarray(y, dtype=float)
    kernels = _kernels()
    if kernels is None or k % 2 != 1 or len(x) < k + 1 or not np.all(np.diff(x) > 0):
        # the general case (and its errors: too few points, x not increasing) as scipy has it
        from scipy.interpolate import make_interp_spline

        spline = make_interp_spline(x, y, k=k)
        return Spline(spline.t, np.asarray(spline.c), spline.k)
    m = (k - 1) // 2
    t = np.concatenate([np.full(k + 1, x[0]), x[m + 1:len(x) - m - 1], np.full(k + 1, x[-1])])
    c, failed = kernels.collocation_solve(t, k, x, np.ascontiguousarray(y.reshape(len(y), -1)))
    if failed:
        raise ValueError(f"the collocation matrix of the spline through {len(x)} points is singular at "
                         f"row {failed - 1} (points not increasing?)")
    return Spline(t, c.reshape(y.shape), k)
