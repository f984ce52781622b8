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
from scipy.linalg import cho_solve_banded, cholesky_banded

PENALTY_ORDER = 3
DERIVATIVE = 2
_NU = np.logspace(-4, 13, 171)      # candidate levels (grid units), 0.1 decade apart; above 1e13
                                    # the banded Cholesky factorisation loses definiteness
WHITEN = 3                          # differences taken before the periodogram
PAD_DEGREE = 3                      # polynomial that extends the data at each end
PAD_FIT = 4                         # its length (and the fit's) in kernel widths
REFINE = 2                          # steps of iterative refinement of the banded solve
SEGMENT = 2048                      # samples per periodogram segment (Welch)


def spectrum(y, h, segment=SEGMENT):
    """Averaged periodogram of each column of y (m, n) sampled every h s (Welch: Hann-windowed,
    linearly detrended, half-overlapping segments of ``segment`` samples or all m). Returns
    (omega (F,) rad/s, S (F, n), dof): S is scaled so that white noise of variance s^2 gives
    S = s^2 at every frequency; dof the degrees of freedom of each value (chi-square)."""
    m = len(y)
    L = min(m, segment)
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


def choose_level(t, y, noise=None, *, derivative=DERIVATIVE, d=PENALTY_ORDER):
    """Smoothing levels lam (n,) (units s^(2d-1)) and the noise std s (n,) used, for samples
    y (m, n) at times t (m,) (see the module docstring). ``noise``: s per joint (scalar or
    (n,)), None: estimated. Uneven spacing is resampled linearly onto the median step for
    this choice only."""
    t = np.asarray(t, dtype=float)
    y = np.asarray(y, dtype=float)
    h = float(np.median(np.diff(t)))
    if np.ptp(np.diff(t)) > 1e-6 * h:      # holes or jitter: an even grid for the spectrum
        grid = t[0] + h * np.arange(int(np.floor((t[-1] - t[0]) / h)) + 1)
        y = np.column_stack([np.interp(grid, t, col) for col in y.T])
    # the spectrum of the 3rd differences, divided by their gain: the same spectrum, but the
    # window's leakage from the strong slow motion into the high frequencies (which would
    # look like signal there) is gone
    omega, S, dof = spectrum(np.diff(y, WHITEN, axis=0), h)
    with np.errstate(divide="ignore", invalid="ignore"):
        S = np.nan_to_num(S / ((2.0 - 2.0 * np.cos(omega * h)) ** WHITEN)[:, None], nan=0.0, posinf=0.0)
    F = len(omega)
    if noise is None:
        # the median of a chi-square variable with k degrees of freedom, over k
        # (Wilson and Hilferty 1931): (1 - 2 / (9 k))^3
        s2 = np.median(S[F // 2:], axis=0) / (1.0 - 2.0 / (9.0 * dof)) ** 3
    else:
        s2 = np.broadcast_to(np.asarray(noise, dtype=float), (y.shape[1],)) ** 2
    # the signal's power: the periodogram averaged over bins about 5 % wide in frequency,
    # minus the noise, where it stands out of the noise by 3 standard deviations (0 elsewhere:
    # what is buried in the noise cannot be recovered, and the raw periodogram's scatter
    # would make the choice erratic)
    edges = np.unique(np.r_[0, np.round(np.geomspace(1, F, int(np.log(F) / np.log(1.05)) + 2)).astype(int)])
    edges = edges[edges < F]
    count = np.diff(np.r_[edges, F])
    mean = np.add.reduceat(S, edges, axis=0) / count[:, None]
    om = np.add.reduceat(omega, edges) / count
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
        if s2[c] <= 0:
            continue
        risk = ((1 - gain) ** 2 * signal[:, c] + gain ** 2 * s2[c]) @ weight
        lam[c] = _NU[int(np.argmin(risk))] * h ** (2 * d - 1)
    return lam, np.sqrt(s2)


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


def smooth(t, y, lam, d=PENALTY_ORDER):
    """The smoothed values (m, n) of y (m, n) at times t (m,) with levels lam (n,) (0: y)."""
    t = np.asarray(t, dtype=float)
    y = np.asarray(y, dtype=float)
    out = y.copy()
    if len(t) <= d:
        return out
    band = _penalty_band(t, d)
    for c, level in enumerate(np.broadcast_to(lam, (y.shape[1],))):
        if level > 0:
            ab = level * band
            ab[d] += 1.0
            chol = cholesky_banded(ab, lower=False, check_finite=False)
            f = cho_solve_banded((chol, False), y[:, c], check_finite=False)
            for _ in range(REFINE):   # the system is ill-conditioned at high levels
                f += cho_solve_banded((chol, False), y[:, c] - _banded_matvec(ab, f), check_finite=False)
            out[:, c] = f
    return out


def smooth_padded(t, y, lam, d=PENALTY_ORDER):
    """:func:`smooth` with each end extended by a polynomial (degree :data:`PAD_DEGREE`, least
    squares over the PAD_FIT * width samples at that end; width the smoother's equivalent
    kernel width lam^(1/2d) in samples), so that the penalty's natural end conditions (the
    d-th and higher derivatives vanish) act in the extension and not on the data. Returns the
    smoothed values (m, n) at t."""
    t = np.asarray(t, dtype=float)
    y = np.asarray(y, dtype=float)
    m = len(t)
    h = float(np.median(np.diff(t)))
    width = float(np.max(np.asarray(lam) / h ** (2 * d - 1), initial=0.0)) ** (1.0 / (2 * d))
    pad = min(int(np.ceil(PAD_FIT * width)), m - 1)
    if pad < 2 or m < 2 * (PAD_DEGREE + 1):
        return smooth(t, y, lam, d)
    fit = max(pad, 2 * (PAD_DEGREE + 1))
    ends = []
    for side in (slice(0, fit), slice(m - fit, m)):
        ts = t[side] - t[side].mean()
        coef = np.polynomial.polynomial.polyfit(ts, y[side], PAD_DEGREE)
        ends.append((t[side].mean(), coef))
    before = t[0] - h * np.arange(pad, 0, -1)
    after = t[-1] + h * np.arange(1, pad + 1)
    ya = np.polynomial.polynomial.polyval(before - ends[0][0], ends[0][1]).T
    yb = np.polynomial.polynomial.polyval(after - ends[1][0], ends[1][1]).T
    out = smooth(np.r_[before, t, after], np.vstack([ya, y, yb]), lam, d)
    return out[pad:pad + m]
