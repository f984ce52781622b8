"""Smoothing of recorded samples with the smoothing level chosen from the data, per joint.

The smoother is the discrete smoothing spline (Whittaker; Eilers, "A perfect smoother",
Analytical Chemistry 2003) with a penalty on the d-th derivative, here d = 3 (the discrete
analogue of the quintic smoothing spline):

    minimise  sum_i (y_i - f_i)^2 + lam * sum_i (d! f[t_i..t_{i+d}])^2 (t_{i+d} - t_i) / d

over the values f_i at the sample times t_i (f[...] the divided difference, so uneven spacing
and holes left by dropped samples are handled exactly). The normal equations are banded
(bandwidth d): one Cholesky solve per joint, linear in the number of samples.

The level lam is chosen per joint by minimising an unbiased estimate of the error of the p-th
*derivative* of the fit (p = :data:`DERIVATIVE` = 2, the accelerations the dynamics needs),
not of the positions: on an even grid the smoother is diagonal in the cosine basis (DCT-II),
with gain h_j = 1 / (1 + nu mu_j^d) at frequency omega_j (mu_j = 2 - 2 cos(pi j / m)), so the
expected squared error of the p-th derivative is

    R(nu) = sum_j omega_j^(2p) [(1 - h_j)^2 (Y_j^2 - s^2) + h_j^2 s^2]

(Y_j the data's DCT coefficients, s the noise standard deviation; Mallows' C_L / Stein's
unbiased risk estimate weighted by omega^(2p)). Criteria on the positions alone (generalised
cross-validation) leave noise in the derivatives that the dynamics multiplies by the inertia;
this one sees it. s is estimated from the upper half of the spectrum (median of Y_j^2,
robust to the signal's share) unless given. Noise-free data gets lam = 0 (interpolation).
"""

import numpy as np
from .splines import cholesky_banded, refined_solver, solve_cholesky_banded

PENALTY_ORDER = 3
DERIVATIVE = 2
_NU = np.logspace(-4, 13, 171)      # candidate levels (grid units), 0.1 decade apart; above 1e13
                                    # the banded Cholesky factorisation loses definiteness
WHITEN = 3                          # differences taken before the periodogram
PAD_DEGREE = 3                      # polynomial that extends the data at each end (by default)
PAD_FIT = 4                         # its length (and the fit's) in kernel widths
MAX_REFINE = 16                     # steps of iterative refinement of the banded solve, at most
SEGMENT = 2048                      # samples per periodogram segment (Welch), at least
SEGMENT_SECONDS = 16.0              # and at least this long: a robot's motion lives below a few Hz,
                                    # which a 2-s segment of a 1-kHz recording would lump into one bin


def spectrum(y, h, segment=None):
    """Averaged periodogram of each column of y (m, n) sampled every h s (Welch: Hann-windowed,
    linearly detrended, half-overlapping segments of ``segment`` samples or all m). Returns
    (omega (F,) rad/s, S (F, n), dof): S is scaled so that white noise of variance s^2 gives
    S = s^2 at every frequency; dof the degrees of freedom of each value (chi-square)."""
    m = len(y)
    L = min(m, segment or max(SEGMENT, int(np.ceil(SEGMENT_SECONDS / h))))
    starts = np.arange(0, m - L + 1, max(L // 2, 1))
    win = np.hanning(L + 2)[1:-1]
    x = np.arange(L) - (L - 1) / 2
    total = 0.0
    for a in starts:
        seg = y[a:a + L]
        seg = seg - seg.mean(axis=0) - np.outer(x, x @ seg / (x @ x))
        total = total + np.abs(np.fft.rfft(win[:, None] * seg, axis=0)) ** 2
    S = total / len(starts) / (win @ win)
    omega = 2 * np.pi * np.arange(S.shape[0]) / (L * h)
    return omega, S, 2 * len(starts)


def on_grid(t, y, degree=5):
    """The samples y (m, ...) at times t (m,) on an even grid of the median step h: ``(h, yg (M,
    ...), at)``. Samples on the grid (a grid time base, holes left by dropped samples) keep their
    values, ``at`` (m,) their grid indices, and each hole is filled by a least-squares
    polynomial of ``degree`` through the samples on both sides of it (as many on each side as
    the hole is long, plus 6): its noise stays that of a sample, where a spline through the
    samples would swing with the noise across the hole. Other times are resampled by the cubic
    spline through the samples (``at`` None)."""
    t = np.asarray(t, dtype=float)
    y = np.asarray(y, dtype=float)
    h = float(np.median(np.diff(t)))
    g = (t - t[0]) / h
    at = np.round(g).astype(np.int64)
    if not (np.all(np.abs(g - at) < 1e-3) and np.all(np.diff(at) > 0)):
        from scipy.interpolate import make_interp_spline

        grid = t[0] + h * np.arange(int(np.floor((t[-1] - t[0]) / h + 1e-9)) + 1)
        return h, make_interp_spline(t, y, k=min(3, len(t) - 1))(grid), None
    yg = np.empty((at[-1] + 1,) + y.shape[1:])
    yg[at] = y
    holes = np.flatnonzero(np.diff(at) > 1)
    lengths = np.diff(at)[holes] - 1
    for L in np.unique(lengths):
        side = int(L) + 6
        these = holes[lengths == L]
        # the usual case, a hole with whole runs of samples on both sides: one set of weights
        lo, hi = these + 1 - side, these + 1 + side
        regular = (lo >= 0) & (hi <= len(at))
        regular[regular] = at[hi[regular] - 1] - at[lo[regular]] == 2 * side - 1 + L
        if regular.any():
            offsets = np.r_[np.arange(-side, 0), np.arange(L, L + side)]
            weights = _hole_weights(offsets, np.arange(L), degree)                     # (L, 2 side)
            rows = lo[regular, None] + np.arange(2 * side)                            # (H, 2 side)
            yg[at[these[regular], None] + 1 + np.arange(L)] = np.einsum("ls,hs...->hl...", weights, y[rows])
        for i in these[~regular]:
            hole = np.arange(at[i] + 1, at[i + 1])
            near = np.r_[max(0, i + 1 - side):i + 1, i + 1:min(len(at), i + 1 + side)]
            yg[hole] = np.tensordot(_hole_weights(at[near] - hole[0], hole - hole[0], degree), y[near], axes=1)
    return h, yg, at


def _hole_weights(offsets, where, degree):
    """(len(where), len(offsets)): the least-squares polynomial of ``degree`` through values at
    the grid ``offsets``, evaluated at the grid points ``where``, as weights on the values."""
    scale = max(float(np.ptp(offsets)), 1.0)
    deg = min(degree, len(offsets) - 1)
    V = np.vander(offsets / scale, deg + 1)
    return np.vander(np.asarray(where) / scale, deg + 1) @ np.linalg.pinv(V)


def binned_spectrum(t, y, whiten=True):
    """The spectrum of y (m, n) at times t (m,) in bins about 5 % wide in frequency: ``(h,
    omega (B,) rad/s, S (B, n), count (B,), dof)``: the Welch spectrum (see :func:`spectrum`)
    of the samples on an even grid (:func:`on_grid`), with ``whiten`` of their third
    differences divided by the differences' gain: the samples' own spectrum without the
    window's leakage from the strong slow motion into the high frequencies (for noise alone,
    ``whiten=False``: the division would lift the lowest frequencies' leakage instead); S
    averaged over the ``count`` frequencies of each bin, each of ``dof`` degrees of freedom.
    White noise of variance s^2 gives S = s^2."""
    h, yg, _ = on_grid(t, y)
    if not whiten:
        omega, S, dof = spectrum(yg[WHITEN:], h)
    else:
        omega, S, dof = spectrum(np.diff(yg, WHITEN, axis=0), h)
        with np.errstate(divide="ignore", invalid="ignore"):
            S = np.nan_to_num(S / ((2.0 - 2.0 * np.cos(omega * h)) ** WHITEN)[:, None], nan=0.0, posinf=0.0)
    F = len(omega)
    edges = np.unique(np.r_[0, np.round(np.geomspace(1, F, int(np.log(F) / np.log(1.05)) + 2)).astype(int)])
    edges = edges[edges < F]
    count = np.diff(np.r_[edges, F])
    mean = np.add.reduceat(S, edges, axis=0) / count[:, None]
    om = np.add.reduceat(omega, edges) / count
    return h, om, mean, count, dof


def noise_level(t, y):
    """(n,) the noise standard deviation of each column of y (m, n) at times t (m,): from the
    upper half of their spectrum (median: robust to the signal's share there), as if the
    noise were white."""
    h, yg, _ = on_grid(t, y)
    omega, S, dof = spectrum(np.diff(yg, WHITEN, axis=0), h)
    with np.errstate(divide="ignore", invalid="ignore"):
        S = np.nan_to_num(S / ((2.0 - 2.0 * np.cos(omega * h)) ** WHITEN)[:, None], nan=0.0, posinf=0.0)
    # the median of a chi-square variable with k degrees of freedom, over k
    # (Wilson and Hilferty 1931): (1 - 2 / (9 k))^3
    return np.sqrt(np.median(S[len(omega) // 2:], axis=0) / (1.0 - 2.0 / (9.0 * dof)) ** 3)


def choose_level(t, y, noise=None, *, derivative=DERIVATIVE, noise_spectrum=None, spectrum=None, d=PENALTY_ORDER):
    """Smoothing levels lam (n,) (units s^(2d-1)) and the noise std s (n,) used, for samples
    y (m, n) at times t (m,) (see the module docstring), chosen for the error of the
    ``derivative``-th derivative. ``noise``: s per joint (scalar or (n,)), None: estimated
    (:func:`noise_level`); ``noise_spectrum`` (B, n): the noise's spectrum in the bins of
    :func:`binned_spectrum` (e.g. that of synthetic recording errors at the same times), for
    noise that is not white (an encoder's staircase); it replaces ``noise``. ``spectrum``: the
    result of :func:`binned_spectrum` of (t, y) when already at hand."""
    y = np.asarray(y, dtype=float)
    h, om, mean, count, dof = binned_spectrum(t, y) if spectrum is None else spectrum
    if noise_spectrum is not None:
        s2 = np.asarray(noise_spectrum, dtype=float)
        s = np.sqrt(np.median(s2[len(s2) // 2:], axis=0))
    else:
        s = noise_level(t, y) if noise is None else np.broadcast_to(np.asarray(noise, dtype=float), (y.shape[1],))
        s2 = np.broadcast_to(s ** 2, mean.shape)
    # the signal's power: the periodogram averaged over bins about 5 % wide in frequency,
    # minus the noise, where it stands out of the noise by 3 standard deviations (0 elsewhere:
    # what is buried in the noise cannot be recovered, and the raw periodogram's scatter
    # would make the choice erratic)
    significant = mean > s2 * (1 + 3 * np.sqrt(2.0 / (dof * count)))[:, None]
    # the motion's band: from 0 Hz up to the first 3 bins in a row that do not stand out
    # (a lone bin above that is a chance excess, which the high weight of its frequency
    # would turn into a choice of almost no smoothing)
    quiet = ~significant
    run = quiet[:-2] & quiet[1:-1] & quiet[2:] if len(quiet) > 2 else quiet
    band = np.where(run.any(axis=0), np.argmax(run, axis=0), len(quiet))
    signal = np.where(significant & (np.arange(len(mean))[:, None] < band), mean - s2, 0.0)
    mu = 2.0 - 2.0 * np.cos(om * h)
    gain = 1.0 / (1.0 + _NU[:, None] * mu[None, :] ** d)              # (levels, bins)
    weight = count * om ** (2 * derivative)
    lam = np.zeros(y.shape[1])
    for c in range(y.shape[1]):
        if not np.any(s2[:, c] > 0):
            continue
        risk = ((1 - gain) ** 2 * signal[:, c] + gain ** 2 * s2[:, c]) @ weight
        lam[c] = _minimum(risk) * h ** (2 * d - 1)
    return lam, s


def _minimum(risk):
    """The level (grid units) of least ``risk`` (one value per level of _NU): the parabola in
    log(level) through the least value and its two neighbours, so that the level moves
    continuously with the data (two recordings that differ in their last digits get the same
    smoothing, not levels a tenth of a decade apart)."""
    i = int(np.argmin(risk))
    if 0 < i < len(risk) - 1:
        a, b, c = risk[i - 1:i + 2]
        curvature = a - 2 * b + c
        if curvature > 0:
            shift = 0.5 * (a - c) / curvature                     # in steps of the grid, within +-1/2
            return float(np.exp(np.log(_NU[i]) + shift * np.log(_NU[1] / _NU[0])))
    return float(_NU[i])


def _penalty_band(t, d):
    """Upper banded storage (d+1, m) of D' W D: D the d-th derivative by divided differences,
    W the spacing weights (t_{i+d} - t_i) / d."""
    m = len(t)
    C = np.ones((m, 1))
    for order in range(1, d + 1):            # rows: coefficients of f[t_i .. t_{i+order}]
        span = (t[order:] - t[:-order])[:, None]
        C = (np.c_[np.zeros((m - order, 1)), C[1:]] - np.c_[C[:-1], np.zeros((m - order, 1))]) / span
    C *= float(np.prod(np.arange(1, d + 1)))
    w = (t[d:] - t[:-d]) / d
    ab = np.zeros((d + 1, m))
    rows = m - d
    for a in range(d + 1):
        for b in range(a, d + 1):
            ab[d - (b - a), b:b + rows] += w * C[:, a] * C[:, b]
    return ab


def _banded_matvec(ab, x):
    """A x for A symmetric in upper banded storage ab (d+1, m)."""
    d = len(ab) - 1
    out = ab[d] * x
    for k in range(1, d + 1):
        out[:-k] += ab[d - k, k:] * x[k:]
        out[k:] += ab[d - k, k:] * x[:-k]
    return out


class Smoother:
    """The discrete smoothing spline of levels lam (n,) (s^(2d-1); 0: none) at times t (m,),
    each end of the data extended by a polynomial (degree :data:`PAD_DEGREE`, least squares
    over the PAD_FIT * width samples at that end; width the smoother's equivalent kernel
    width lam^(1/2d) in samples), so that the penalty's natural end conditions (the d-th and
    higher derivatives vanish) act in the extension and not on the data. Factorised once:
    calling it on positions y (m, n) returns their smoothed values (m, n), at the cost of a
    few banded solves (synthetic recordings are smoothed by the same smoother many times)."""

    def __init__(self, t, lam, d=PENALTY_ORDER, pad_degree=PAD_DEGREE):
        t = np.asarray(t, dtype=float)
        self.m, self.d = len(t), d
        self.lam = np.asarray(lam, dtype=float)
        h = float(np.median(np.diff(t))) if self.m > 1 else 1.0
        width = float(np.max(self.lam / h ** (2 * d - 1), initial=0.0)) ** (1.0 / (2 * d))
        pad = min(int(np.ceil(PAD_FIT * width)), self.m - 1)
        self.ends = None
        if pad >= 2 and self.m >= 2 * (pad_degree + 1):
            fit = max(pad, 2 * (pad_degree + 1))
            before = t[0] - h * np.arange(pad, 0, -1)
            after = t[-1] + h * np.arange(1, pad + 1)
            # the extensions are linear in the data: (pad, fit) maps from the samples at each end
            self.ends = (fit, _Extension(t[:fit], before, pad_degree), _Extension(t[-fit:], after, pad_degree))
            t = np.r_[before, t, after]
        self.pad = pad if self.ends is not None else 0
        self._factorise(t)

    def _factorise(self, t):
        d = self.d
        self.factors = {}
        if len(t) > d:
            self.spans = [t[k:] - t[:-k] for k in range(1, d + 1)]
            self.span_table = np.ones((d, len(t)))          # the spans as rows (for the compiled path)
            for k, span in enumerate(self.spans):
                self.span_table[k, :len(span)] = span
            self.scale = float(np.prod(np.arange(1, d + 1))) * np.sqrt((t[d:] - t[:-d]) / d)
            band = _penalty_band(t, d)
            for c, level in enumerate(np.atleast_1d(self.lam)):
                if level > 0:
                    ab = level * band
                    ab[d] += 1.0
                    self.factors[c] = (level, cholesky_banded(ab))

    def _penalty(self, f):
        """B' B f (the penalty's gradient over 2, lam = 1) of each column of f (M, D) by
        successive differences (no sum of large terms that cancel: accurate to the size of the
        differences)."""
        g = f
        for span in self.spans:
            g = np.diff(g, axis=0) / span[:, None]
        g = g * (self.scale ** 2)[:, None]
        zero = np.zeros((1, f.shape[1]))
        for span in reversed(self.spans):
            g = -np.diff(np.concatenate([zero, g / span[:, None], zero]), axis=0)
        return g

    def __call__(self, y):
        """The smoothed values of y (m, n), or of y (m, n, D) (D recordings of the same joints,
        smoothed at once: one banded solve per joint for all of them)."""
        y = np.asarray(y, dtype=float)
        if self.ends is not None:
            fit, before, after = self.ends
            y = np.concatenate([before(y[:fit]), y, after(y[-fit:])])
        out = y.copy()
        for c, (level, chol) in self.factors.items():
            out[:, c] = self._solve(y[:, c].reshape(len(y), -1), level, chol).reshape(out[:, c].shape)
        return out[self.pad:self.pad + self.m]

    def _solve(self, y, level, chol):
        """The solution f (M, D) of (I + level B'B) f = y for each column of y (M, D)."""
        # (I + lam B'B) f = y is ill-conditioned at high levels (lam |B|^2 up to 1e14): the
        # banded Cholesky solution alone is off by about lam |B|^2 eps |y| (1e-6 to 1e-3
        # rad for a 1-kHz recording's fourth derivative), smoothly enough to pass into every
        # derivative. Refined with residuals taken by successive differences, whose
        # rounding errors scale with the differences and not with |y|, it converges to the
        # exact solution (1e-15 of |y| for a level of 1e-3 s^5 at 1 kHz).
        # f = y + the solution for the (small) correction: the first solve errs by its size.
        # Each column stops on its own test (its refinement is that of a solve of its own).
        compiled = refined_solver()
        if compiled is not None:        # the same steps, compiled (a few hundred numpy calls spared)
            return compiled(chol, np.ascontiguousarray(y), level, self.span_table, self.scale, MAX_REFINE)
        f = y.copy()
        tol = 1e-15 * np.maximum(np.max(np.abs(y), axis=0), 1e-300)
        last = np.full(y.shape[1], np.inf)
        active = np.arange(y.shape[1])
        for _ in range(MAX_REFINE):
            fa = f[:, active]
            step = solve_cholesky_banded(chol, (y[:, active] - fa) - level * self._penalty(fa))
            f[:, active] = fa + step
            size = np.max(np.abs(step), axis=0)
            # exact, or down to the rounding of the residuals
            done = (size <= tol[active]) | (size > 0.5 * last[active])
            last[active] = size
            active = active[~done]
            if not len(active):
                break
        return f


class _Extension:
    """The least-squares polynomial of ``degree`` through values at times ts, evaluated at times
    at: a linear map of the values, applied as (len(at), degree+1) @ (degree+1, len(ts))."""

    def __init__(self, ts, at, degree):
        centre = ts.mean()
        scale = max(float(np.ptp(ts)), 1e-300)
        self.fit = np.linalg.pinv(np.vander((ts - centre) / scale, degree + 1))
        self.value = np.vander((at - centre) / scale, degree + 1)

    def __call__(self, y):
        """y (len(ts), ...) -> (len(at), ...)."""
        return np.tensordot(self.value, np.tensordot(self.fit, y, axes=1), axes=1)


def smooth(t, y, lam, d=PENALTY_ORDER):
    """The smoothed values (m, n) of y (m, n) at times t (m,) with levels lam (n,) (0: y), the
    penalty's natural end conditions at the data's ends (no padding)."""
    y = np.asarray(y, dtype=float)
    smoother = Smoother.__new__(Smoother)
    smoother.m, smoother.d, smoother.pad, smoother.ends = len(t), d, 0, None
    smoother.lam = np.broadcast_to(np.asarray(lam, dtype=float), (y.shape[1],))
    smoother._factorise(np.asarray(t, dtype=float))
    return smoother(y)


def smooth_padded(t, y, lam, d=PENALTY_ORDER):
    """The smoothed values (m, n) of y (m, n) at times t (m,) with levels lam (n,), the ends
    padded (see :class:`Smoother`)."""
    y = np.asarray(y, dtype=float)
    return Smoother(t, np.broadcast_to(np.asarray(lam, dtype=float), (y.shape[1],)), d)(y)
