"""The fit of recorded joint positions that the dynamics is evaluated along, and the error it
leaves in each derivative.

Longer than 500 lines: the fit and the synthetic recordings that measure its error share its
pieces (their grid, smoothers, levels, missed content), and the error's three parts (content,
synthetic recordings, pseudo-ends) are read together.

Segments. A dropped sample or a short dropout costs the fit nothing but the missing
information: the smoother works on the samples' own times (holes included), so gaps of up to
:data:`~hod_dynamics.recordings.timebase.GAP_SPLIT` periods are bridged. Only longer gaps split the
recording into segments fitted on their own (a stretch shorter than ``MIN_SEGMENT`` samples
joins its neighbour).

Sources. The joints may come from several publishers on their own times (see
:class:`hod_dynamics.recordings.bag.JointStates`): each group of joints is fitted on its own sample
times and the fit is evaluated at the common sample times, so no sample is interpolated
before the fit. A gap of any group splits the segments of all.

Per derivative order. tau^(k) needs q^(k+2), and the best smoothing for a second derivative
is not the best for a fourth: for each order k the smoothing level is chosen to minimise the
estimated error of q^(k+2) (:func:`hod_dynamics.recordings.smoothing.choose_level`), against the
spectrum of the positions' own noise (:mod:`hod_dynamics.recordings.position_noise`: an encoder's
staircase is not white). The jet for tau^(k) is the fit at that level.

The error each fit leaves (a parametric bootstrap). For order k:

1. the truth is estimated as the fit plus the *content it missed*: the lines of the fit's
   residual spectrum that stand out of the residual a noise-only recording leaves (a
   vibration that the smoothing removed, the part of a fast motion it flattened), by a
   factor ``ln(F) + 7`` (F frequencies: a chance excess that high is rare);
2. synthetic recordings of that truth are made with the noise found in the data (a random
   count grid offset and new white noise for each);
3. each is fitted exactly as the data were (same level, same segments, same sources).

The fits' differences from the estimated truth are realisations of the error of the fit:
noise passed through (end effects of segments, holes and the staircase of an encoder
included) and smoothing bias (including content hidden under the noise floor that the fit
removed but the residual shows). :mod:`hod_dynamics.replay.analysis` carries them through the
dynamics to an error estimate of tau^(k) per joint. Content that does not stand out of the
noise in the residual's spectrum is not seen, and neither are errors common to every sample
(a wrong time base, an encoder offset).
"""

from dataclasses import dataclass, field

import numpy as np

from ..errors import InputError
from .position_noise import PositionNoise, encoder_step, estimate_noise
from .smoothing import Smoother, binned_spectrum, choose_level, noise_level, on_grid
from .splines import interpolating_spline
from .timebase import GAP_SPLIT

MIN_SEGMENT = 20       # a stretch between gaps shorter than this is fitted with its neighbour
DEGREE = 7             # the interpolating spline through the smoothed values: C^6 (a quintic's q^(4) errs
                       # by as much as a 24-bit encoder's noise leaves at 100 Hz)
PAD_DEGREE = 5         # the fits pad the data's ends by a polynomial of this degree: the errors within an
                       # end zone of q'' are 10 times, of q^(4) 5 times smaller than with a cubic's
PILOT_DRAWS = 8        # synthetic noise recordings for the residual's threshold
SPECTRUM_DRAWS = 2     # of which for the noise spectrum that the smoothing levels are chosen against
CHANCE = 10.0          # ln(1 / P): a residual line stands out when above (ln F + CHANCE) times the noise's
SMOOTH_BINS = 8        # frequencies over which the noise's power is averaged (and over the draws)
DILATE = 3             # frequencies on each side of a loud one that the content keeps
REACH = 2.0            # a line of the data stands this much higher than the synthetic noise's highest
CHANCE_HALF = 3.0      # and in each half of the record above (ln F + CHANCE_HALF) times the noise's
TAPER = 16             # kernel widths of the smoothing over which a residual is tapered at each end,
                       # and the width of a segment's end zone
END_SPAN = 4           # end zones of data on each side of a pseudo-end's cut
END_TRIALS = 8         # pseudo-ends per segment, at most
MIN_END_SEGMENT = 4.5  # end zones a segment holds at least for pseudo-ends (one end zone of data each side)
ERROR_BLOCKS = 10      # runs of samples where a long recording's error is estimated
HIDDEN_SPAN = 5.0      # content under the noise floor is bounded up to this multiple of a fit's cutoff
                       # (where an arm's first structural modes lie, 5-15 Hz, for motions resolved to
                       # 1-3 Hz), at most the Nyquist frequency: up to the Nyquist frequency, a line of a
                       # thousandth of an encoder count at hundreds of Hz would unsupport tau itself


def fit_segments(t, period, min_segment=MIN_SEGMENT, cuts=()):
    """(start, stop) sample ranges of t (m,) between its gaps longer than GAP_SPLIT periods and
    the sample indices ``cuts`` (a segment starts there); a range shorter than ``min_segment``
    joins its neighbour (its gap is bridged)."""
    cuts = sorted({0, len(t)} | {int(i) + 1 for i in np.flatnonzero(np.diff(t) > GAP_SPLIT * period)}
                  | {int(c) for c in cuts if 0 < c < len(t)})
    merged = [0]
    for c in cuts[1:-1]:
        if c - merged[-1] >= min_segment and len(t) - c >= min_segment:
            merged.append(c)
    merged.append(len(t))
    return list(zip(merged[:-1], merged[1:]))


@dataclass
class _Content:
    """A sum of sinusoids on an even grid (start ``t0`` s, step ``h``, ``M`` points): the
    missed content of a fit, ``coef`` (F, n) rfft coefficients at the frequencies ``index``."""

    t0: float
    h: float
    M: int
    index: np.ndarray
    coef: np.ndarray

    def values_on_grid(self):
        full = np.zeros((self.M // 2 + 1, self.coef.shape[1]), dtype=complex)
        full[self.index] = self.coef
        return np.fft.irfft(full, n=self.M, axis=0)

    def jet(self, t, rows):
        """(len(t), rows, n): the content and its derivatives at times t (s): on its grid by an
        inverse FFT, elsewhere summed."""
        n = self.coef.shape[1]
        out = np.zeros((len(t), rows, n))
        if not len(self.index):
            return out
        omega = 2 * np.pi * self.index / (self.M * self.h)
        g = (np.asarray(t) - self.t0) / self.h
        at = np.round(g).astype(np.int64)
        if np.all(np.abs(g - at) < 1e-6) and len(t) * len(self.index) > 4 * self.M:
            full = np.zeros((self.M // 2 + 1, n), dtype=complex)
            for r in range(rows):
                full[self.index] = self.coef * ((1j * omega) ** r)[:, None]
                out[:, r] = np.fft.irfft(full, n=self.M, axis=0)[at]
            return out
        weight = np.where((self.index == 0) | (2 * self.index == self.M), 1.0, 2.0) / self.M
        c = self.coef * weight[:, None]
        for a in range(0, len(t), 4096):
            phase = np.exp(1j * np.outer(t[a:a + 4096] - self.t0, omega))        # (T, F)
            for r in range(rows):
                out[a:a + 4096, r] = (phase @ (c * ((1j * omega) ** r)[:, None])).real
        return out


def _tukey(M, taper):
    """(M,) 1 inside, a raised cosine over ``taper`` samples at each end."""
    w = np.ones(M)
    taper = int(min(max(taper, 1), M // 4))
    ramp = 0.5 - 0.5 * np.cos(np.pi * (np.arange(taper) + 0.5) / taper)
    w[:taper], w[M - taper:] = ramp, ramp[::-1]
    return w


def _loud(x, noise, chance):
    """(F, n) bool: the frequencies of x (M, n) whose Hann-windowed power exceeds (ln F +
    ``chance``) times that of the synthetic ``noise`` (list of (M, n)) there (averaged over
    the draws and SMOOTH_BINS frequencies), and REACH times the highest the noise reaches."""
    hann = np.hanning(len(x) + 2)[1:-1, None]
    power = np.abs(np.fft.rfft(hann * x, axis=0)) ** 2
    draws = [np.abs(np.fft.rfft(hann * e, axis=0)) ** 2 for e in noise]
    kernel = np.ones(SMOOTH_BINS)
    count = np.convolve(np.ones(len(power)), kernel, mode="same")     # fewer frequencies at the ends
    floor = np.column_stack([np.convolve(col, kernel, mode="same") / count for col in np.mean(draws, axis=0).T])
    with np.errstate(divide="ignore", invalid="ignore"):
        # an encoder's staircase is not Gaussian noise: its spectrum has lines of its own (where
        # a joint moves steadily), so a line of the data must also stand higher than any the
        # synthetic noise reaches
        reach = np.nan_to_num(np.max([d / floor for d in draws], axis=(0, 1)), nan=0.0, posinf=0.0)
    threshold = np.maximum(np.log(len(floor)) + chance, REACH * reach) * floor
    return (power > threshold) & (threshold > 0)


def missed_content(t, residual, noise, taper):
    """The content of a fit's ``residual`` (m, n) at times t (m,) that stands out of the noise
    (``noise``: list of (m, n) synthetic recording errors): a :class:`_Content` of the
    frequencies near those that :func:`_loud` finds in the whole residual and in each half of
    it.

    - The noise before the fit, not what of it the fit leaves in a residual: inside the fit's
      band a residual holds little noise, and the fit's small bias on the slow motion's strong
      lines would stand out of it far from them.
    - In both halves: content of the motion (a vibration, the fit's bias on a fast motion)
      lasts; a chance excess does not, nor does a line of an encoder's staircase, which comes
      and goes with the speed (it folds the count's rate, speed / step, into the band).
    - Where the content is, is found in Hann-windowed spectra (a strong line leaks little into
      far frequencies there); the content is taken, from DILATE frequencies below to DILATE
      above those, from the residual tapered to 0 over ``taper`` samples at each end only (a
      cosine: near its ends a fit deviates from the data more than inside), so that it keeps
      its size inside. A frequency far from any line, kept for its leakage, would add a
      high-frequency ripple to the content's derivatives.
    - The residuals are put on an even grid by :func:`~hod_dynamics.recordings.smoothing.on_grid` (a hole
      left empty would spread a strong line's power over every frequency).
    """
    h, filled, _ = on_grid(t, residual)
    M = len(filled)
    noise = [on_grid(t, e)[1] for e in noise]
    loud = _loud(filled, noise, CHANCE)
    half = M // 2
    for part in (slice(0, half), slice(M - half, M)):
        heard = _loud(filled[part], [e[part] for e in noise], CHANCE_HALF)
        # frequency f of the whole is f / 2 of a half: any of the half's neighbours there
        at = np.clip(np.round(np.arange(len(loud)) * half / M).astype(int), 1, len(heard) - 2)
        loud &= heard[at - 1] | heard[at] | heard[at + 1]
    near = np.column_stack([np.convolve(col.astype(float), np.ones(2 * DILATE + 1), mode="same") > 0
                            for col in loud.T])
    R = np.fft.rfft(_tukey(M, taper)[:, None] * filled, axis=0)
    index = np.flatnonzero(near.any(axis=1))
    coef = np.where(near[index], R[index], 0.0)
    return _Content(float(t[0]), h, M, index, coef)


@dataclass
class _Piece:
    """The joints ``cols`` (model columns) of one source over one segment: samples at times
    ``t`` (m_g,) s, positions ``y`` (m_g, n_g); per tau order k the smoothing level
    ``levels[k]`` (n_g,), the fit's smoothed values at the samples, its spline and its missed
    content; ``grid`` the even grid of the fits (see :meth:`fit`) and ``at`` the samples' grid
    indices (None when they are not on it)."""

    t: np.ndarray
    y: np.ndarray
    cols: np.ndarray
    noise: PositionNoise = None
    levels: list = field(default_factory=list)
    values: list = field(default_factory=list)
    splines: list = field(default_factory=list)
    content: list = field(default_factory=list)
    seed: tuple = ()
    grid: np.ndarray = None
    at: np.ndarray = None

    def __post_init__(self):
        h = float(np.median(np.diff(self.t)))
        g = (self.t - self.t[0]) / h
        at = np.round(g).astype(np.int64)
        self.at = at if np.all(np.abs(g - at) < 1e-3) and np.all(np.diff(at) > 0) else None
        self.grid = self.t[0] + h * np.arange((at[-1] if self.at is not None else
                                               int(np.floor((self.t[-1] - self.t[0]) / h + 1e-9))) + 1)

    def smoother(self, lam):
        """The :class:`~hod_dynamics.recordings.smoothing.Smoother` of levels lam on this piece's grid,
        factorised once per level."""
        cache = self.__dict__.setdefault("_smoothers", {})
        key = np.asarray(lam, dtype=float).tobytes()
        if key not in cache:
            cache[key] = Smoother(self.grid, np.asarray(lam, dtype=float), pad_degree=PAD_DEGREE)
        return cache[key]

    def fit(self, y, lam):
        """The fit of samples y (m_g, n_g) at levels lam (n_g,): (its jet, a :class:`_SplineJet`;
        the smoothed values at the samples); y (m_g, n_g, D): D recordings fitted at once (the
        jet's values then (T, rows, n_g, D)). The fit is made on the even grid ``grid`` (the
        samples' own grid when they are on one, holes filled; else resampled onto one: see
        :func:`~hod_dynamics.recordings.smoothing.on_grid`), where the smoother's divided differences are
        exact: across a hole or an uneven step they would bend the fit's higher derivatives
        (q^(4) errors 10 to 100 times those on an even grid). The ends are padded by a
        polynomial of degree PAD_DEGREE (q^(4) goes on past the ends instead of being pulled to
        0 there)."""
        values = self.smoother(lam)(on_grid(self.t, y)[1])
        exact = np.asarray(lam) <= 0          # interpolation: through the samples themselves
        if exact.any():
            values[:, exact] = interpolating_spline(self.t, y[:, exact], DEGREE)(self.grid)
        spline = interpolating_spline(self.grid, values, DEGREE)
        return _SplineJet(spline), (values[self.at] if self.at is not None else spline(self.t))

    def content_values(self, k):
        """(m_g, n_g) the missed content of the fit for order k at the samples (cached)."""
        cache = self.__dict__.setdefault("_content_values", {})
        if k not in cache:
            cache[k] = _at_samples(self.content[k], self.t)
        return cache[k]

    def window(self, start, stop):
        """The piece's samples with ``start <= t <= stop`` (s), as a piece of their own."""
        a, b = np.searchsorted(self.t, start), np.searchsorted(self.t, stop, side="right")
        return _Piece(self.t[a:b], self.y[a:b], self.cols), slice(a, b)


def _fit_piece(t, y, cols, max_order, smoothing, seed):
    """Fit one source over one segment (see the module docstring) for tau orders 0..max_order."""
    rng = np.random.default_rng(list(seed))
    piece = _Piece(t, y, cols, seed=tuple(seed))
    # the pilot's noise: at least the count's own error (step / sqrt 12, as if white); from the
    # spectrum's top half alone, a slow joint read by a coarse encoder at 1 kHz (transitions
    # in one sample of ten) can look noise-free, the pilot then interpolates the staircase,
    # synthetic recordings of that staircase carry no noise above a few Hz, and every level
    # after it is chosen for a motion band that reaches hundreds of Hz
    floor = np.array([encoder_step(y[:, j]) for j in range(y.shape[1])]) / np.sqrt(12.0)
    pilot_level, _ = choose_level(t, y, np.maximum(noise_level(t, y), floor) if smoothing is None else smoothing)
    pilot = piece.fit(y, pilot_level)[1]
    piece.noise = estimate_noise(t, y, pilot, rng, noise_level)
    draws = [piece.noise.realize(pilot, rng) for _ in range(PILOT_DRAWS)]
    spectrum = np.mean([binned_spectrum(t, e, whiten=False)[2] for e in draws[:SPECTRUM_DRAWS]], axis=0)
    data = binned_spectrum(t, y)
    piece.levels = [choose_level(t, y, smoothing, derivative=k + 2, spectrum=data,
                                 noise_spectrum=None if smoothing is not None else spectrum)[0]
                    for k in range(max_order + 1)]
    h = float(np.median(np.diff(t)))
    for k, lam in enumerate(piece.levels):
        spline, values = piece.fit(y, lam)
        piece.values.append(values)
        piece.splines.append(spline)
        width = float(np.max(lam)) ** (1 / 6) / h ** (5 / 6)       # the smoother's kernel width, samples
        piece.content.append(missed_content(t, y - values, draws, taper=TAPER * max(width, 1.0)))
    return piece


@dataclass
class JointFit:
    """The fit of recorded joint positions for the dynamics (see the module docstring), n
    joints in ``joint_names`` order, m common samples at times ``t`` (s).

    ``segments``: (start, stop) sample ranges fitted separately; ``pieces``: per segment the
    fits of its sources; ``max_order``: the highest tau order fitted for."""

    joint_names: tuple
    t: np.ndarray
    segments: list
    pieces: list
    max_order: int

    def jet(self, k, idx=None, rows=None):
        """(len(idx), rows, n) q-jet of the fit for tau order k (rows default k + 3: q to
        q^(k+2)) at the samples ``idx`` (default all)."""
        rows = k + 3 if rows is None else rows
        idx = np.arange(len(self.t)) if idx is None else np.asarray(idx)
        out = np.empty((len(idx), rows, len(self.joint_names)))
        for (lo, hi), pieces in zip(self.segments, self.pieces):
            sel = (idx >= lo) & (idx < hi)
            if not sel.any():
                continue
            tt = self.t[idx[sel]]
            for p in pieces:
                out[np.ix_(sel, range(rows), p.cols)] = p.splines[k](tt, rows)
        return out

    def error_samples(self, k, samples):
        """Sample indices (about ``samples`` of them) where the error of the fit for tau order k
        is estimated by :meth:`bootstrap`: all samples outside the end zones of the segments
        (:meth:`end_zone`), or, when there are more, ERROR_BLOCKS runs of them spread evenly
        over those (the synthetic recordings are then fitted near the runs only)."""
        inside = np.flatnonzero(~self.in_end_zone(k, np.arange(len(self.t))))
        if len(inside) <= samples:
            return inside
        run = max(samples // ERROR_BLOCKS, 1)
        starts = np.linspace(0, len(inside) - run, ERROR_BLOCKS).round().astype(int)
        return np.unique(np.concatenate([inside[s:s + run] for s in starts]))

    def bootstrap(self, k, idx, draws):
        """The estimated truth and ``draws`` synthetic fits for tau order k at the samples idx
        (of :meth:`error_samples`): ``(truth (len(idx), k+3, n), [fit (len(idx), k+3, n)] *
        draws)`` (see the module docstring); the same numbers for the same data (seeded by
        segment and source). Each run of consecutive samples of idx is fitted with the data
        one end zone (:meth:`end_zone`) around it, which is as good as the whole segment
        there (beyond that a smoothing's kernel has died out)."""
        idx = np.asarray(idx)
        rows, n = k + 3, len(self.joint_names)
        truth = np.empty((len(idx), rows, n))
        fits = [np.empty((len(idx), rows, n)) for _ in range(draws)]
        margin = self.end_zone(k)
        for (lo, hi), pieces in zip(self.segments, self.pieces):
            sel = np.flatnonzero((idx >= lo) & (idx < hi))
            for p in pieces:
                tt = self.t[idx[sel]]
                truth[np.ix_(sel, range(rows), p.cols)] = p.splines[k](tt, rows) + p.content[k].jet(tt, rows)
        runs = np.split(np.arange(len(idx)), np.flatnonzero(np.diff(idx) > 1) + 1)
        ends = np.array([hi for _, hi in self.segments])
        for s, pieces in enumerate(self.pieces):
            mine = [run for run in runs if int(np.searchsorted(ends, idx[run[0]], side="right")) == s]
            for p in pieces if mine else ():
                # the runs' windows, those that overlap merged into one
                spans = []
                for run in mine:
                    start, stop = self.t[idx[run[0]]] - margin, self.t[idx[run[-1]]] + margin
                    if spans and start <= spans[-1][1]:
                        spans[-1][1], spans[-1][2] = stop, spans[-1][2] + [run]
                    else:
                        spans.append([start, stop, [run]])
                windows = [(p.window(start, stop), group) for start, stop, group in spans]
                true_values = p.values[k] + p.content_values(k)
                # each draw's recording is made whole (its random numbers do not depend on
                # which samples are looked at), then cut to each window; the draws are fitted
                # together (one smoother solve and one spline per joint for all of them)
                cut = [[] for _ in windows]
                for d in range(draws):
                    rng = np.random.default_rng(list(p.seed) + [k, d])
                    synthetic = true_values + p.noise.realize(true_values, rng)
                    for w, ((_, sel), _) in enumerate(windows):
                        cut[w].append(synthetic[sel].copy())       # not a view: the rest is let go
                for ((part, _), group), recordings in zip(windows, cut):
                    jet = part.fit(np.stack(recordings, axis=-1), p.levels[k])[0]    # (m_w, n_g, draws)
                    for run in group:
                        values = jet(self.t[idx[run]], rows)                             # (T, rows, n_g, draws)
                        where = np.ix_(run, range(rows), p.cols)
                        for d in range(draws):
                            fits[d][where] = values[..., d]
        return truth, fits

    def end_zone(self, k):
        """(s) how far from a segment's end the fit for tau order k is an end's: TAPER kernel
        widths of its widest smoothing (there it leans on the padding, not on data on both
        sides)."""
        zone = 0.0
        for pieces in self.pieces:
            for p in pieces:
                h = float(np.median(np.diff(p.t)))
                width = float(np.max(p.levels[k])) ** (1 / 6) / h ** (5 / 6)
                zone = max(zone, TAPER * max(width, 1.0) * h)
        return zone

    def in_end_zone(self, k, idx):
        """(len(idx),) bool: the samples idx lie within :meth:`end_zone` of their segment's ends."""
        idx = np.asarray(idx)
        zone, out = self.end_zone(k), np.zeros(len(idx), dtype=bool)
        for lo, hi in self.segments:
            sel = (idx >= lo) & (idx < hi)
            tt = self.t[idx[sel]]
            out[sel] = (tt - self.t[lo] < zone) | (self.t[hi - 1] - tt < zone)
        return out

    def end_trials(self, k):
        """The error of the fit for tau order k near a segment's end, seen at pseudo-ends: at up
        to END_TRIALS cut times inside each long enough segment, the data on each side of the
        cut (END_SPAN end zones long; when no segment holds that, as long as the longest one
        holds, one end zone at least) are fitted alone, as at an end, and compared with the
        whole fit there (whose error inside a segment is much smaller). Returns ``(idx, whole
        (T, k+3, n), cut (T, k+3, n))`` at the samples idx within an end zone of the cuts, or
        None when no segment is MIN_END_SEGMENT end zones long."""
        rows, n = k + 3, len(self.joint_names)
        zone = self.end_zone(k)
        longest = max(self.t[hi - 1] - self.t[lo] for lo, hi in self.segments)
        # a short recording (or a slow, noisy one, whose end zones are long) still has ends,
        # and theirs are the largest errors it has: a shorter span errs high, not low
        span = min(END_SPAN * zone, (longest - MIN_END_SEGMENT * zone) / 2 + zone)
        if span < zone:
            return None
        found = []
        for (lo, hi), pieces in zip(self.segments, self.pieces):
            usable = self.t[hi - 1] - self.t[lo] - 2 * (span + zone)
            if usable <= 0:
                continue
            count = int(min(END_TRIALS, max(1, usable // (2 * span))))
            for c in self.t[lo] + span + zone + usable * (np.arange(count) + 0.5) / count:
                for window in ((c - span, c), (c, c + span)):
                    fits, first, last = [], -np.inf, np.inf
                    for p in pieces:
                        sel = (p.t >= window[0]) & (p.t <= window[1])
                        sub = _Piece(p.t[sel], p.y[sel], p.cols)
                        fits.append((p.cols, sub.fit(sub.y, p.levels[k])[0]))
                        first, last = max(first, sub.t[0]), min(last, sub.t[-1])
                    near = (window[1] - zone, last) if window[0] < c else (first, window[0] + zone)
                    idx = np.flatnonzero((self.t >= near[0]) & (self.t <= near[1]))
                    if not len(idx):
                        continue
                    cut = np.empty((len(idx), rows, n))
                    tt = self.t[idx]
                    for cols, spline in fits:
                        cut[:, :, cols] = spline(tt, rows)
                    found.append((idx, self.jet(k, idx), cut))
        if not found:
            return None
        return tuple(np.concatenate(parts) for parts in zip(*found))

    def hidden_lines(self, k):
        """What the samples cannot resolve for tau order k, per joint: ``(amplitude (n,) rad or m,
        frequency (n,) Hz)`` of the largest persistent sinusoid the data cannot tell from their
        noise (the missed content's test, :func:`_loud`, would not see it: its Hann-windowed
        power stays under (ln F + CHANCE) times the noise's, amplitude = s sqrt(6 (ln F + CHANCE)
        / M) for M samples of noise std s), at the highest frequency it is looked for: HIDDEN_SPAN
        times the fit's cutoff for that order, at most the Nyquist frequency (none where the fit
        interpolates: it resolves everything up to there). The largest over segments and
        sources."""
        amp, freq = np.zeros(len(self.joint_names)), np.zeros(len(self.joint_names))
        for pieces in self.pieces:
            for p in pieces:
                h = float(np.median(np.diff(p.t)))
                M = len(p.grid)
                s = np.sqrt(p.noise.white ** 2 + p.noise.step ** 2 / 12.0)
                cut = np.array([cutoff_hz(lam, h, k) for lam in p.levels[k]])
                # a fit that resolves up to the Nyquist frequency (interpolation) leaves no band
                a = np.where(cut < 0.5 / h, s * np.sqrt(6.0 * (np.log(M // 2 + 1) + CHANCE) / M), 0.0)
                f = np.minimum(HIDDEN_SPAN * cut, 0.5 / h)
                amp[p.cols] = np.maximum(amp[p.cols], a)
                freq[p.cols] = np.maximum(freq[p.cols], f)
        return amp, freq

    def summary(self):
        """Per joint: the noise found (encoder step, white noise std, their total std) and per
        tau order the smoothing's cutoff frequency (Hz; the lowest over segments)."""
        out = {}
        for pieces in self.pieces:
            for p in pieces:
                h = float(np.median(np.diff(p.t)))
                for c, col in enumerate(p.cols):
                    name = self.joint_names[col]
                    entry = out.setdefault(name, {"samples": 0, "noise": [], "cutoff": {}})
                    entry["samples"] += len(p.t)
                    entry["noise"].append((len(p.t), p.noise.step[c], p.noise.white[c]))
                    for k, lam in enumerate(p.levels):
                        hz = cutoff_hz(lam[c], h, k)
                        entry["cutoff"][f"tau{k}"] = min(entry["cutoff"].get(f"tau{k}", np.inf), hz)
        result = {}
        for name, e in out.items():
            w = np.array([x[0] for x in e["noise"]], dtype=float)
            step = float(np.average([x[1] for x in e["noise"]], weights=w))
            white = float(np.average([x[2] for x in e["noise"]], weights=w))
            result[name] = {"position_noise": float(np.sqrt(white ** 2 + step ** 2 / 12)), "encoder_step": step,
                            "white_noise": white, "smoothing_cutoff_hz": e["cutoff"]}
        return result


class _SplineJet:
    """A spline and its derivatives (built on first use): ``jet(t, rows)`` is (len(t), rows, n)."""

    def __init__(self, spline):
        self.splines = [spline]

    def __call__(self, t, rows):
        while len(self.splines) < rows:
            self.splines.append(self.splines[-1].derivative())
        return np.stack([self.splines[r](t) for r in range(rows)], axis=1)


def _at_samples(content, t):
    """The content's values (m, n) at the sample times t (on its grid, or interpolated)."""
    grid = content.values_on_grid()
    g = (t - content.t0) / content.h
    at = np.round(g).astype(np.int64)
    if np.all(np.abs(g - at) < 1e-3):
        return grid[at]
    tg = content.t0 + content.h * np.arange(content.M)
    return np.column_stack([np.interp(t, tg, col) for col in grid.T])


def prepare_fit_kernels():
    """Compile the fit's band solves and splines now (or load them from numba's cache), on a
    few samples: a program that runs many fits (analyze-bags) has their compile, and its
    notice, before the first one."""
    t = np.arange(4 * (DEGREE + 1)) * 0.01
    y = np.sin(t)[:, None]
    interpolating_spline(t, Smoother(t, np.array([1e-6]), pad_degree=PAD_DEGREE)(y), DEGREE)(t)


def cutoff_hz(lam, period, k=0, d=3):
    """The frequency (Hz) where the smoother of level lam (s^(2d-1)) has gain 1/2."""
    if lam <= 0:
        return float("inf")
    mu = (lam / period ** (2 * d - 1)) ** (-1.0 / d)
    return float(np.arccos(max(1.0 - mu / 2.0, -1.0)) / (2 * np.pi * period))


def _check_smoothing(smoothing, n):
    if smoothing is None:
        return None
    s = np.asarray(smoothing, dtype=float)
    if s.shape not in ((), (n,)) or np.any(~np.isfinite(s)) or np.any(s < 0):
        raise InputError(f"smoothing must be one finite number >= 0 or {n} of them (one per joint), "
                         f"got {np.asarray(smoothing).tolist()}")
    return np.broadcast_to(s, (n,))


def fit_joint_states(states, joint_names, max_order=2, *, continuous=None, smoothing=None, seed=0):
    """Fit the recorded positions of ``joint_names`` in ``states`` (a
    :class:`~hod_dynamics.recordings.bag.JointStates` that carries them all: see its ``for_joints``)
    for tau orders 0..``max_order`` (see the module docstring).

    ``continuous`` (n,) bool: joints whose positions are unwrapped first (reported in
    (-pi, pi]); ``smoothing``: the position noise std (rad or m, one or (n,)) for the
    choice of the levels instead of the noise found (0: interpolation); ``seed``: of the
    synthetic recordings. Returns :class:`JointFit`. Raises :class:`InputError` for a bad
    ``smoothing``.
    """
    names = tuple(joint_names)
    n = len(names)
    smoothing = _check_smoothing(smoothing, n)
    continuous = np.zeros(n, dtype=bool) if continuous is None else np.asarray(continuous, dtype=bool)
    t = states.t
    sources, owner = list(states.sources) or [states], {}
    for s, src in enumerate(sources):
        for nm in src.joint_names:
            if nm in names and nm not in owner:
                owner[nm] = s
    # a gap of a source longer than GAP_SPLIT of its periods splits every joint's segments
    cuts, times = [], []
    for src in sources:
        ts = states.source_times(src) if states.sources else t
        times.append(ts)
        period = float(np.median(np.diff(ts)))
        for i in np.flatnonzero(np.diff(ts) > GAP_SPLIT * period):
            cuts.append(int(np.searchsorted(t, ts[i + 1])))
    segments = fit_segments(t, float(np.median(np.diff(t))), cuts=cuts)
    pieces = []
    for s_index, (lo, hi) in enumerate(segments):
        row = []
        for s, src in enumerate(sources):
            cols = np.array([j for j, nm in enumerate(names) if owner.get(nm) == s], dtype=int)
            if not len(cols):
                continue
            ts = times[s]
            a = max(int(np.searchsorted(ts, t[lo], side="right")) - 1, 0)
            b = min(int(np.searchsorted(ts, t[hi - 1], side="left")) + 1, len(ts))
            y = src.position[a:b][:, [src.joint_names.index(names[c]) for c in cols]]
            wrap = continuous[cols]
            if wrap.any():
                y = y.copy()
                y[:, wrap] = np.unwrap(y[:, wrap], axis=0)
            row.append(_fit_piece(ts[a:b], y, cols, max_order, None if smoothing is None else smoothing[cols],
                                  (seed, s_index, s)))
        pieces.append(row)
    return JointFit(names, t, segments, pieces, max_order)
