"""The compiled band solves and splines of the fit of recorded positions, against their
oracles: scipy's make_interp_spline/BSpline and LAPACK's banded Cholesky (through scipy), on
uneven points, several columns and the smoothing spline's own ill-conditioned matrices."""

import numpy as np
import pytest

from hod_dynamics.recordings import splines
from hod_dynamics.recordings.smoothing import Smoother, _banded_matvec, _penalty_band

scipy_interpolate = pytest.importorskip("scipy.interpolate")
scipy_linalg = pytest.importorskip("scipy.linalg")

pytest.importorskip("numba")


@pytest.fixture
def scipy_only(monkeypatch):
    """The module's path without numba (scipy's functions)."""
    monkeypatch.setattr(splines, "_COMPILED", [None])


@pytest.mark.parametrize("k", [3, 5, 7])
def test_interpolating_spline_and_its_derivatives_are_scipys(k):
    rng = np.random.default_rng(k)
    x = np.cumsum(rng.uniform(0.2, 1.8, 300))                   # uneven steps
    y = np.cumsum(rng.standard_normal((300, 3, 2)), axis=0)       # trailing shape kept
    ours, ref = splines.interpolating_spline(x, y, k), scipy_interpolate.make_interp_spline(x, y, k=k)
    at = np.r_[x[0] - 2.0, np.linspace(x[0], x[-1], 2000), x[-1] + 2.0, x]   # ends continued, the nodes
    for order in range(k + 1):
        if order:
            ours, ref = ours.derivative(), ref.derivative()
        a, b = ours(at), ref(at)
        assert a.shape == b.shape == (len(at), 3, 2)
        assert np.abs(a - b).max() <= 1e-12 * np.abs(b).max(), order
    np.testing.assert_allclose(splines.interpolating_spline(x, y, k)(x), y, rtol=0, atol=1e-12 * np.abs(y).max())


def test_without_numba_the_spline_is_scipys_and_an_even_degree_is_passed_to_it(scipy_only):
    x = np.linspace(0.0, 1.0, 40)
    y = np.sin(6 * x)[:, None]
    for k in (4, 7):
        np.testing.assert_allclose(splines.interpolating_spline(x, y, k).derivative()(x),
                                   scipy_interpolate.make_interp_spline(x, y, k=k).derivative()(x), rtol=1e-13)


def test_too_few_points_points_out_of_order_and_a_degree_0_derivative_fail_as_scipy_says():
    with pytest.raises(ValueError):
        splines.interpolating_spline(np.arange(5.0), np.zeros(5), 7)
    with pytest.raises(ValueError, match="strictly increasing"):
        splines.interpolating_spline(np.r_[0.0, 2.0, 1.0, np.arange(3.0, 20.0)], np.zeros(20), 7)
    line = splines.interpolating_spline(np.arange(20.0), np.arange(20.0), 7)
    for _ in range(7):
        line = line.derivative()
    with pytest.raises(ValueError, match="degree 0"):
        line.derivative()


def _normal_equations(m, lam, h=1e-3):
    """The smoothing spline's (I + lam B'B) in upper band storage, m samples h apart."""
    ab = lam * _penalty_band(np.arange(m) * h, 3)
    ab[3] += 1.0
    return ab


def _dense(ab):
    d, m = ab.shape[0] - 1, ab.shape[1]
    full = np.zeros((m, m))
    for j in range(m):
        for i in range(max(0, j - d), j + 1):
            full[i, j] = ab[d + i - j, j]
    return full


@pytest.mark.parametrize("lam", [1e-9, 1e-6, 1e-3])
def test_banded_cholesky_factor_reproduces_the_matrix_as_lapacks_does(lam):
    ab = _normal_equations(400, lam)
    A = _dense(ab)
    A = A + np.triu(A, 1).T
    ours, lapack = _dense(splines.cholesky_banded(ab)), _dense(scipy_linalg.cholesky_banded(ab, lower=False))
    scale = np.abs(A).max()
    # backward stable both: U'U is A to rounding (the factors themselves differ by the
    # matrix's conditioning, up to 1e16 here)
    assert np.abs(ours.T @ ours - A).max() <= 4e-16 * scale
    assert np.abs(lapack.T @ lapack - A).max() <= 4e-16 * scale
    b = np.random.default_rng(1).standard_normal((400, 3))
    for rhs in (b, b[:, 0]):
        x = splines.solve_cholesky_banded(splines.cholesky_banded(ab), rhs)
        assert x.shape == rhs.shape
        ref = scipy_linalg.cho_solve_banded((scipy_linalg.cholesky_banded(ab, lower=False), False), rhs)
        residual = lambda z: np.abs(_banded_matvec(ab, z.reshape(400, -1)[:, 0]) - rhs.reshape(400, -1)[:, 0]).max()
        assert residual(x) <= 4 * max(residual(ref), 1e-13 * np.abs(rhs).max())


def test_a_matrix_that_is_not_positive_definite_names_its_leading_minor():
    ab = _normal_equations(50, 1e-6)
    ab[3, 10] = -5.0
    with pytest.raises(np.linalg.LinAlgError, match="^11-th leading minor not positive definite$"):
        splines.cholesky_banded(ab)


def test_the_smoother_refined_on_either_factor_gives_the_same_fit(monkeypatch):
    """The factor differs with the matrix's conditioning; the refinement by successive
    differences brings both to the exact solution: at the level of a 1-kHz fit's fourth
    derivative, whose matrix is the worst, the smoothed values agree to rounding."""
    t = np.arange(4000) * 1e-3
    y = np.sin(2 * np.pi * 0.7 * t)[:, None] + 1e-5 * np.random.default_rng(2).standard_normal((4000, 1))
    fits = []
    for compiled in (True, False):
        monkeypatch.setattr(splines, "_COMPILED", [] if compiled else [None])
        fits.append(Smoother(t, np.array([1e-3]), pad_degree=5)(y))
    assert np.abs(fits[0] - fits[1]).max() <= 1e-14 * np.abs(y).max()


def test_the_compiled_refinement_is_the_numpy_refinement_number_for_number(monkeypatch):
    """The smoother's refinement compiled (one kernel per joint and level) and in numpy take
    the same steps in the same arithmetic: equal to the last bit, for every draw and level
    (interpolation included)."""
    from hod_dynamics.recordings import smoothing

    t = np.arange(3000) * 1e-3
    y = np.sin(2 * np.pi * 0.7 * t)[:, None, None] + 1e-5 * np.random.default_rng(4).standard_normal((3000, 3, 4))
    smoother = Smoother(t, np.array([1e-3, 1e-6, 0.0]), pad_degree=5)
    compiled = smoother(y)
    monkeypatch.setattr(smoothing, "refined_solver", lambda: None)
    np.testing.assert_array_equal(compiled, smoother(y))


def test_the_numpy_backend_fits_without_numba():
    """HOD_DYNAMICS_BACKEND=numpy (nothing compiled, as for the dynamics): a smoothing fit of
    samples runs on scipy's band solves and splines and imports no numba."""
    import os
    import subprocess
    import sys

    code = ("import sys, numpy as np, hod_dynamics as hd\n"
            "t = np.arange(300) * 0.01\n"
            "y = np.c_[np.sin(t), np.cos(t)] + 1e-4 * np.random.default_rng(0).standard_normal((300, 2))\n"
            "hd.Trajectory.from_samples(['a', 'b'], t, y)\n"
            "print('numba' in sys.modules)\n")
    env = dict(os.environ, HOD_DYNAMICS_BACKEND="numpy")
    run = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120, env=env)
    assert run.returncode == 0, run.stderr
    assert run.stdout.split() == ["False"]
