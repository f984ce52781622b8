"""The time base of recorded samples: which time each recorded joint state was measured at.

A robot controller samples its joints on a regular grid (e.g. every 5 ms) but the recording
PC stamps the messages with its own clock: the header stamps jitter by a few % of the period,
with occasional 30 % outliers (scheduling), samples drop, a stamp repeats, and the PC's clock
may step (NTP). A smoothing fit of (stamp, position) pairs turns that jitter into large
spurious velocities and accelerations (a 0.3 ms stamp error at 1 rad/s is 3e-4 rad of fake
position error, far above an encoder's noise). :func:`resolve_time_base` recovers the grid:

1. messages that repeat the previous one exactly (same stamp, same data) are dropped;
2. each message gets an integer sample index: consecutive messages differ by the number of
   nominal periods between their stamps (rounded), so a dropped sample leaves a hole of one
   index and a gap of many samples stays a gap; a stamp that repeats with new data, or moves
   backwards, counts as one period;
3. clock steps: when the bag also has receive (log) times, the offset between header stamp and
   receive time is followed (running median); a jump of that offset is a step of the header
   clock, which moves no sample;
4. the stamps are fitted by a straight line in the sample index, robustly (the slope as the
   median of long-baseline slopes, one intercept per stretch between clock steps); the sample
   times are that line: t = index * period. The stamps' distances to it are the jitter.

``mode="auto"`` then decides from the recorded positions whether the grid or the stamps
themselves are the times the data was sampled at: it predicts every position from its six
neighbours (Lagrange interpolation) under both hypotheses, and keeps the grid unless the
stamps predict the data clearly better (a sensor sampled when it was stamped). Stamps that
are not on any grid (fewer than 80 % of the intervals near a multiple of the period) are
used as they are. The other modes force a choice: ``"header"`` (header stamps as recorded,
sorted, repeated stamps dropped), ``"receive"`` (the bag's log times, likewise) and
``"index"`` (consecutive messages one median period apart, gaps ignored).
"""

from dataclasses import dataclass, field

import numpy as np

from ..errors import InputError

MODES = ("auto", "header", "receive", "index")
REGULAR_FRACTION = 0.8   # share of intervals within 25 % of a multiple of the period for a grid
OUTLIER = 0.25           # a stamp further than this share of the period from the grid is an outlier
GAP_SPLIT = 10           # gaps of more periods than this split the smoothing fit (see analysis)
_STEP_WINDOW = 21        # running-median length of the header - receive offset


@dataclass(frozen=True)
class TimeBase:
    """The chosen sample times of m kept samples out of M messages.

    ``mode``: as requested; ``source``: ``"grid"`` (fitted grid), ``"header"``,
    ``"receive"`` or ``"index"``; ``keep`` (m,) indices of the kept messages in time order;
    ``t`` (m,) s from ``t0_ns`` (absolute ns), strictly increasing; ``period`` s (nominal);
    ``jitter``: header stamp minus chosen time (s): rms, p1, p99, max_abs, and ``outliers``
    (further than 25 % of the period); ``gaps``: one dict per hole in the grid (``index`` of
    the sample after it, ``t`` s where it starts, ``duration`` s, ``missing`` samples);
    ``clock_steps``: dicts (``index``, ``t``, ``jump`` s); ``duplicates``: identical
    messages dropped; ``repeated_stamps``: messages whose stamp repeated the previous one's
    with new data (kept); ``reason``: one sentence on the choice.
    """

    mode: str
    source: str
    keep: np.ndarray
    t: np.ndarray
    t0_ns: int
    period: float
    reason: str
    jitter: dict = field(default_factory=dict)
    gaps: list = field(default_factory=list)
    clock_steps: list = field(default_factory=list)
    duplicates: int = 0
    repeated_stamps: int = 0
    out_of_order: int = 0

    @property
    def rate(self):
        return 1.0 / self.period

    def summary(self):
        """A JSON-ready dict of everything above but the arrays."""
        return {"mode": self.mode, "source": self.source, "reason": self.reason, "rate": self.rate,
                "period": self.period, "jitter": dict(self.jitter), "gaps": list(self.gaps),
                "clock_steps": list(self.clock_steps), "duplicates_dropped": self.duplicates,
                "repeated_stamps": self.repeated_stamps, "out_of_order": self.out_of_order}

    def describe(self):
        """One line for a terminal: source, rate, jitter, gaps, clock steps, duplicates."""
        j = self.jitter
        text = f"time base: {self.source} ({self.reason}); {self.rate:.6g} Hz"
        if j:
            text += (f", stamp jitter rms {1e3 * j['rms']:.3g} ms (1..99 %: {1e3 * j['p1']:.3g}.."
                     f"{1e3 * j['p99']:.3g} ms, max {1e3 * j['max_abs']:.3g} ms, {j['outliers']} beyond "
                     f"{100 * OUTLIER:.0f} % of the period)")
        if self.gaps:
            longest = max(self.gaps, key=lambda g: g["duration"])
            text += (f"; {len(self.gaps)} gaps ({sum(g['missing'] for g in self.gaps)} samples missing, "
                     f"longest {1e3 * longest['duration']:.4g} ms at t = {longest['t']:.4g} s)")
        if self.clock_steps:
            text += "; clock steps " + ", ".join(f"{s['jump']:+.4g} s at t = {s['t']:.4g} s" for s in self.clock_steps)
        if self.duplicates or self.repeated_stamps:
            text += f"; {self.duplicates} duplicated messages dropped, {self.repeated_stamps} repeated stamps"
        if self.out_of_order:
            text += f"; {self.out_of_order:,} messages received out of stamp order (put in stamp order)"
        return text


def _rows_equal(a):
    """(M-1,) bool: row i+1 of a (M, p) equals row i (NaN equal to NaN)."""
    if a is None or len(a) < 2:
        return np.zeros(max(len(a) - 1, 0) if a is not None else 0, dtype=bool)
    same = (a[1:] == a[:-1]) | (np.isnan(a[1:]) & np.isnan(a[:-1]))
    return same.reshape(len(a) - 1, -1).all(axis=1)


def _sorted_unique(stamps):
    """Indices that sort ``stamps`` stably, dropping later repeats of a stamp."""
    order = np.argsort(stamps, kind="stable")
    return order[np.r_[True, np.diff(stamps[order]) > 0]]


def resolve_time_base(header_ns, receive_ns=None, position=None, payload=None, mode="auto"):
    """Choose the sample times of recorded messages (see the module docstring).

    ``header_ns`` (M,) int stamps in recording order (a zero stamp replaced by the receive time
    beforehand); ``receive_ns`` (M,) the bag's log times or None; ``position`` (M, n) the
    recorded positions (for the choice of ``auto``); ``payload`` (M, p) everything a message
    carries (to tell an exact duplicate from new data under a repeated stamp), default
    ``position``; ``mode`` one of :data:`MODES`. Returns a :class:`TimeBase`. Raises
    :class:`InputError` for an unknown mode or fewer than 2 distinct stamps.
    """
    if mode not in MODES:
        raise InputError(f"time base must be one of {list(MODES)}, got {mode!r}")
    header = np.asarray(header_ns, dtype=np.int64)
    receive = None if receive_ns is None else np.asarray(receive_ns, dtype=np.int64)
    if len(np.unique(header)) < 2:
        raise InputError(f"{len(header)} messages with {len(np.unique(header))} distinct stamps: a time "
                         "base needs at least 2")
    if mode in ("header", "receive"):
        use_receive = mode == "receive" and receive is not None
        stamps = receive if use_receive else header
        keep = _sorted_unique(stamps)
        t0 = int(stamps[keep[0]])
        t = (stamps[keep] - t0) * 1e-9
        return TimeBase(mode, "receive" if use_receive else "header", keep, t, t0, _period(stamps[keep]) * 1e-9,
                        f"{'receive times' if use_receive else 'header stamps'} as recorded",
                        jitter=_jitter((header[keep] - t0) * 1e-9 - t, _period(stamps[keep]) * 1e-9),
                        duplicates=len(header) - len(keep),
                        out_of_order=0 if use_receive else int(np.count_nonzero(
                            header[1:] < np.maximum.accumulate(header)[:-1])))
    payload = position if payload is None else payload
    r_all = None if receive is None or np.array_equal(receive, header) else receive
    if mode == "index":      # the messages as they come: their stamps are not trusted
        order, stretch, late = np.arange(len(header)), np.zeros(len(header), dtype=np.int64), 0
    else:
        order, stretch, late = _stamp_order(header, r_all, _period(np.sort(header)))
    h_all = header[order]
    same = _rows_equal(payload[order]) if payload is not None else np.zeros(len(order) - 1, dtype=bool)
    drop = np.r_[False, (np.diff(h_all) == 0) & same]
    keep = order[~drop]
    stretch = stretch[~drop]
    h = header[keep]
    r = None if r_all is None else r_all[keep]
    P = _period(h)
    if mode == "index":
        t = np.arange(len(keep)) * P * 1e-9
        return TimeBase(mode, "index", keep, t, int(h[0]), P * 1e-9, "consecutive messages one median period apart",
                        jitter=_jitter((h - h[0]) * 1e-9 - t, P * 1e-9), duplicates=int(drop.sum()))
    grid = _grid(h, r, P, stretch)
    if grid is None:
        base = resolve_time_base(header, receive, position, payload, "header")
        return _replace(base, mode=mode, reason="the stamps are not on a regular grid: used as recorded")
    k, fit_ns, steps, repeated, period = grid
    t = k * period * 1e-9
    base = TimeBase(mode, "grid", keep, t, int(round(fit_ns[0])), period * 1e-9,
                    "stamps fitted by a line in the sample index", jitter=_jitter((h - fit_ns) * 1e-9, period * 1e-9),
                    gaps=_gaps(k, t, steps), clock_steps=steps, duplicates=int(drop.sum()),
                    repeated_stamps=repeated, out_of_order=late)
    if mode == "auto" and position is not None:
        verdict = _data_prefers_stamps(base, h, np.asarray(position, dtype=float)[keep])
        if verdict is not None:
            hb = resolve_time_base(header, receive, position, payload, "header")
            return _replace(hb, mode=mode, reason=verdict)
        base = _replace(base, reason="stamps fitted by a line in the sample index; the positions fit "
                                     "the grid at least as well as the raw stamps")
    return base


def _replace(base, **changes):
    return TimeBase(**{**base.__dict__, **changes})


def _period(stamps):
    d = np.diff(np.asarray(stamps, dtype=np.int64))
    d = d[d > 0]
    if not len(d):
        raise InputError("the stamps never increase: no time base")
    return float(np.median(d))


def _jitter(e, period):
    """Statistics (s) of the stamp errors e (s) against the chosen times."""
    return {"rms": float(np.sqrt(np.mean(e ** 2))), "p1": float(np.percentile(e, 1)),
            "p99": float(np.percentile(e, 99)), "max_abs": float(np.abs(e).max()),
            "outliers": int(np.count_nonzero(np.abs(e) > OUTLIER * period))}


def _grid(h, r, P, stretch):
    """Sample indices of stamps h (ns) with nominal period P (ns), increasing within each
    stretch between clock steps (``stretch`` (m,), its number), or None when h is not on a
    grid. Returns (k (m,) int, the fitted stamps (m,) ns, clock steps, repeated stamps,
    fitted period ns)."""
    d = np.diff(h).astype(float)
    ratio = d / P
    forward = d > 0
    near = np.abs(ratio - np.round(ratio)) < OUTLIER
    if len(d) >= 4 and np.count_nonzero(near & forward) < REGULAR_FRACTION * np.count_nonzero(forward):
        return None
    n = np.maximum(np.round(ratio), 1).astype(np.int64)
    jumps = np.zeros(len(d))
    for i in np.flatnonzero(np.diff(stretch)):
        if r is not None:           # the step of header - receive between the windows around it
            off = (h - r).astype(float)
            jumps[i] = np.median(off[i + 1:i + 1 + _STEP_WINDOW]) - np.median(off[max(0, i - _STEP_WINDOW):i + 1])
        else:                       # a stamp going back: the clock stepped, one period passed
            jumps[i] = d[i] - P
        jumps[i] = jumps[i] or 1.0  # (a step of exactly 0 ns is still where the stretches meet)
    stepped = np.flatnonzero(jumps)
    n[stepped] = np.maximum(1, np.round((d[stepped] - jumps[stepped]) / P)).astype(np.int64)
    k = _fix_slips(np.r_[0, np.cumsum(n)], h, P, set(stepped.tolist()))
    # a straight line per stretch between clock steps, one slope: the median of long-baseline
    # slopes (robust to outliers, exact for a clock that runs at a constant rate)
    stretch = np.r_[0, np.cumsum(jumps != 0)]
    slopes = []
    for s in range(stretch[-1] + 1):
        idx = np.flatnonzero(stretch == s)
        half = len(idx) // 2
        if half >= 1:
            a, b = idx[:half], idx[half:2 * half]
            slopes.append((h[b] - h[a]) / (k[b] - k[a]))
    period = float(np.median(np.concatenate(slopes)))
    offsets = np.array([np.median(h[stretch == s] - period * k[stretch == s]) for s in range(stretch[-1] + 1)])
    fit = offsets[stretch] + period * k
    steps = [{"index": int(i + 1), "t": float(k[i + 1] * period * 1e-9),
              "jump": float((offsets[stretch[i + 1]] - offsets[stretch[i]]) * 1e-9)} for i in stepped]
    return k, fit, steps, int(np.count_nonzero(d == 0)), period


def _stamp_order(header, receive, P):
    """Header-stamp order of messages given in receive order (the bag's): ``(order (M,),
    stretch (M,) of each ordered message, out_of_order)``. The header clock may step (NTP):
    the messages are sorted by stamp within each stretch between steps, the stretches kept in
    receive order. A step is a lasting jump of header - receive (see :func:`_offset_steps`), or
    without receive times a stamp more than 5 periods before its predecessor's. ``out_of_order``
    counts the messages received after one with a later stamp of the same stretch (a receive
    delay longer than the period)."""
    M = len(header)
    if receive is not None:
        boundary = (_offset_steps(header, receive, P) != 0) if M > _STEP_WINDOW else np.zeros(M - 1, dtype=bool)
    else:
        boundary = np.diff(header) < -5 * P
    stretch = np.r_[0, np.cumsum(boundary)]
    late = 0
    for s in range(stretch[-1] + 1):
        h = header[stretch == s]
        late += int(np.count_nonzero(h[1:] < np.maximum.accumulate(h)[:-1]))
    order = np.lexsort((header, stretch))          # stable: repeated stamps keep their receive order
    return order, stretch[order], late


def _fix_slips(k, h, P, stepped):
    """Correct index slips: rounding an interval between two bad stamps (e.g. a repeated
    stamp, or an early stamp followed by a late one) can count one period too many or too
    few, which shifts every later index. A slip shows as a lasting step of h - P k by a
    multiple of P (an outlier stamp only as a one-sample spike): compare the medians of the
    windows before and after each large change (over 1 to 3 intervals) and undo the step."""
    e = h - P * k.astype(float)
    w = _STEP_WINDOW
    # a slip may spread over up to three intervals (an early stamp, then a late one)
    candidates = set()
    for span in (1, 2, 3):
        candidates.update((np.flatnonzero(np.abs(e[span:] - e[:-span]) > 0.5 * P) + span - 1).tolist())
    for i in sorted(candidates):
        if i in stepped or i >= len(k) - 1:
            continue
        before = np.median(e[max(0, i - w + 1):i + 1])
        after = np.median(e[i + 1:i + 1 + w])
        shift = int(np.round((after - before) / P))
        if not shift:
            continue
        # indices must keep increasing: a slip back lands on the first interval after i (in
        # the window) that spans more than one period (the bad stamp then stays an outlier)
        room = np.diff(k[i:i + w + 1]) - 1
        at = i if shift > 0 else i + int(np.argmax(room >= -shift))
        if shift < 0 and room[at - i] < -shift:
            continue
        k[at + 1:] += shift
        e[at + 1:] -= P * shift
    return k


def _offset_steps(h, r, P):
    """(m-1,) ns: the step of the header clock against the receive clock between samples i and
    i+1 (0 where none): the median of (header - receive) over the samples before and after
    differs by more than 5 periods (receive latencies and bursts stay below that)."""
    off = (h - r).astype(float)
    w = _STEP_WINDOW
    jumps = np.zeros(len(h) - 1)
    for i in np.flatnonzero(np.abs(np.diff(off)) > 5 * P):
        before = np.median(off[max(0, i - w):i + 1])
        after = np.median(off[i + 1:i + 1 + w])
        if abs(after - before) > 5 * P:
            jumps[i] = after - before
    return jumps


def _gaps(k, t, steps):
    stepped = {s["index"] for s in steps}
    holes = np.flatnonzero(np.diff(k) > 1)
    return [{"index": int(i + 1), "t": float(t[i]), "duration": float(t[i + 1] - t[i]),
             "missing": int(k[i + 1] - k[i] - 1)} for i in holes if int(i + 1) not in stepped]


def _lagrange_error(tau, y, centers):
    """|y_c - Lagrange prediction from the 6 neighbours c-3..c+3 (c excluded)| per joint,
    (len(centers), n), with abscissae tau."""
    offs = np.array([-3, -2, -1, 1, 2, 3])
    nodes = tau[centers[:, None] + offs]             # (M, 6)
    x = tau[centers]
    w = np.ones(nodes.shape)
    for a in range(6):
        for b in range(6):
            if a != b:
                w[:, a] *= (x - nodes[:, b]) / (nodes[:, a] - nodes[:, b])
    pred = np.einsum("ms,msn->mn", w, y[centers[:, None] + offs])
    return np.abs(y[centers] - pred)


def _data_prefers_stamps(base, h, q, max_points=20000):
    """A reason (str) when the positions q (m, n) are predicted clearly better (error at least
    2 times smaller, median over the moving joints) by the raw stamps h than by the grid of
    ``base``, else None. Only samples with 3 regular neighbours on each side take part."""
    k = np.round(base.t / base.period).astype(np.int64)
    regular = (np.diff(k) == 1) & (np.diff(h) > 0)
    ok = np.convolve(regular.astype(int), np.ones(6, dtype=int), mode="valid") == 6
    centers = np.flatnonzero(ok) + 3
    if len(centers) < 10:
        return None
    centers = centers[np.linspace(0, len(centers) - 1, min(max_points, len(centers))).astype(int)]
    stamps = (h - h[0]) * 1e-9
    e_grid = np.median(_lagrange_error(base.t, q, centers), axis=0)
    e_stamp = np.median(_lagrange_error(stamps, q, centers), axis=0)
    moving = (e_grid > 0) & (e_stamp > 0)
    if not moving.any():
        return None
    ratio = float(np.exp(np.median(np.log(e_grid[moving] / e_stamp[moving]))))
    if ratio > 2.0:
        return f"the positions follow the header stamps ({ratio:.3g} times closer than to a regular grid)"
    return None
