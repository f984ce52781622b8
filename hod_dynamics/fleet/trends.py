"""Trends of a fleet table (see :mod:`hod_dynamics.fleet`): which robot's friction or residual
moved over the recording time, beyond the noise of a single recording's estimate.

For each robot, joint and quantity (``coulomb``, ``viscous``, ``residual_rms``), the bags'
values y_i at recording times x_i (weeks) are fitted by a straight line y = a + b (x - x̄),
weighted by 1 / se_i^2 where the bags give standard errors (the friction fit's). The slope's
standard error comes from those standard errors, scaled up by the scatter of the bags about
the line where that is larger (the Birge ratio, sqrt(chi^2 / (n - 2)): a single bag's
least-squares errors take its samples as independent and miss what varies from bag to bag,
such as the motion); without standard errors, from the scatter alone. Under no trend,
slope / standard error then follows Student's t with n - 2 degrees of freedom. A series is
**moved** when both hold:

- its two-sided p-value is below ``false_alarm`` / N, N the number of series judged
  (Bonferroni): the probability that the fleet names any series whose quantity did not move
  is at most ``false_alarm`` (default 1 %), whatever the size of the fleet. Few bags need a
  large ratio (3 bags can never be enough; with 12 bags of a 42-series fleet, 6 standard
  errors);
- the line changes the quantity by at least ``change`` (a fraction, default 5 %) of its mean
  level over the recorded span: a statistically sure but small change is not reported.

Before the line is fitted, bags further from a first, robust line (Theil-Sen) than 5 robust
standard deviations (1.4826 median absolute deviations) and 10 % of the level are set aside
as **outliers** (ringed in the figure, listed in trends.csv): a bag whose fit went wrong must
not make or hide a trend.
"""

import os
from dataclasses import dataclass

import numpy as np

FALSE_ALARM = 0.01
DRIFT_CHANGE = 0.05
OUTLIER_SIGMA = 5.0
OUTLIER_CHANGE = 0.10
MIN_OUTLIER_BAGS = 6            # fewer bags: no robust scatter to judge an outlier by
WEEK_NS = 7 * 86400 * 10**9
#: (column, its standard error's column or None, label)
QUANTITIES = (("coulomb", "coulomb_se", "Coulomb friction"), ("viscous", "viscous_se", "viscous friction"),
              ("residual_rms", None, "residual RMS"))
SUMMARY, FIGURE, TABLE = "fleet_summary.txt", "trends.png", "trends.csv"


@dataclass(frozen=True)
class Trend:
    """The straight-line trend of one quantity of one robot's joint over its bags.

    ``bags``: bags fitted (outliers set aside); ``start`` / ``end``: recording times (UTC,
    pandas Timestamps) of the first and last; ``level``: the line's mean over the span;
    ``slope``: per week (units of the quantity); ``slope_se``; ``ratio``: slope / slope_se;
    ``p``: two-sided p-value (Student t, bags - 2 degrees of freedom); ``alpha``: the p-value
    below which it counts as moved (see the module docstring); ``change``: the line's
    change over the span as a fraction of |level|; ``first`` / ``last``: the line's values at
    the first and last bag; ``outliers``: names of the bags set aside; ``moved``: beyond the
    threshold; ``reason``: why it cannot be judged (too few bags, one recording time) or None.
    """

    robot: str
    joint: str
    quantity: str
    bags: int
    start: object = None
    end: object = None
    level: float = float("nan")
    slope: float = float("nan")
    slope_se: float = float("nan")
    ratio: float = float("nan")
    p: float = float("nan")
    alpha: float = float("nan")
    change: float = float("nan")
    first: float = float("nan")
    last: float = float("nan")
    outliers: tuple = ()
    moved: bool = False
    reason: str = None

    @property
    def weeks(self):
        return (self.end - self.start).total_seconds() / 604800.0 if self.start is not None else float("nan")


def line_fit(x, y, se=None):
    """Weighted straight line y ~ a + b (x - x̄): returns (a, b, x̄, slope standard error,
    Birge ratio). ``se`` None or with a non-positive or non-finite entry: unweighted, the
    standard error from the scatter alone."""
    x, y = np.asarray(x, float), np.asarray(y, float)
    weighted = se is not None and np.all(np.isfinite(se)) and np.all(np.asarray(se) > 0)
    w = 1.0 / np.asarray(se, float) ** 2 if weighted else np.ones_like(x)
    xm = np.sum(w * x) / np.sum(w)
    sxx = np.sum(w * (x - xm) ** 2)
    b = np.sum(w * (x - xm) * y) / sxx
    a = np.sum(w * y) / np.sum(w)
    chi2 = np.sum(w * (y - a - b * (x - xm)) ** 2)
    dof = len(x) - 2
    birge = np.sqrt(chi2 / dof) if dof > 0 else float("nan")
    scale = max(1.0, birge) if weighted else birge
    return a, b, xm, float(scale / np.sqrt(sxx)), float(birge)


def series_trend(robot, joint, quantity, times, values, se=None, names=None, *, alpha, change=DRIFT_CHANGE):
    """The :class:`Trend` of one series: ``times`` (pandas Timestamps, UTC), ``values``,
    ``se`` their standard errors or None, ``names`` the bags'; moved when its p-value is below
    ``alpha`` and its change at least ``change``."""
    from scipy.stats import t as student

    ok = np.isfinite(values) & (np.isfinite(se) if se is not None else True)
    times = [tm for tm, k in zip(times, ok) if k]
    y = np.asarray(values, float)[ok]
    s = None if se is None else np.asarray(se, float)[ok]
    names = [nm for nm, k in zip(names or [""] * len(ok), ok) if k]
    base = dict(robot=robot, joint=joint, quantity=quantity, bags=len(y))
    if len(y) < 3:
        return Trend(**base, reason=f"{len(y)} bag{'s' if len(y) != 1 else ''}: a trend needs 3 or more")
    ns = np.array([tm.value for tm in times], dtype=np.int64)
    x = (ns - ns.min()) / WEEK_NS
    if np.ptp(x) == 0:
        return Trend(**base, reason="every bag has the same recording time")
    keep = _inliers(x, y, s)
    outliers = tuple(nm for nm, k in zip(names, keep) if not k)
    x, y, s = x[keep], y[keep], None if s is None else s[keep]
    kept = [tm for tm, k in zip(times, keep) if k]
    if len(y) < 3 or np.ptp(x) == 0:
        return Trend(**base, outliers=outliers, reason="too few bags left beside the outliers")
    a, b, xm, b_se, _ = line_fit(x, y, s)
    dof = len(y) - 2
    ratio = b / b_se if b_se > 0 else (np.inf if b != 0 else 0.0)     # NaN stays NaN: never moved
    p = float(2 * student.sf(abs(ratio), dof)) if np.isfinite(ratio) else (0.0 if np.isinf(ratio) else np.nan)
    span = float(np.ptp(x))
    level = a + b * ((x.min() + x.max()) / 2 - xm)
    rel = abs(b) * span / abs(level) if level != 0 else np.inf
    first, last = a + b * (x.min() - xm), a + b * (x.max() - xm)
    moved = bool(p < alpha and rel >= change)
    return Trend(**base | {"bags": len(y)}, start=min(kept), end=max(kept), level=float(level), slope=float(b),
                 slope_se=float(b_se), ratio=float(ratio), p=p, alpha=float(alpha), change=float(np.sign(b) * rel),
                 first=float(first), last=float(last), outliers=outliers, moved=moved)


def _inliers(x, y, se):
    """(n,) bool: the bags not set aside as outliers of a first (unweighted, robust) line."""
    keep = np.ones(len(y), dtype=bool)
    if len(y) < MIN_OUTLIER_BAGS:
        return keep
    b = _theil_sen(x, y)
    r = y - b * x
    r = r - np.median(r)
    robust = 1.4826 * np.median(np.abs(r))
    floor = 0.0 if se is None else 3.0 * np.asarray(se)    # never below what the bag's own error explains
    level = np.median(np.abs(y))
    return ~((np.abs(r) > np.maximum(OUTLIER_SIGMA * robust, floor)) & (np.abs(r) > OUTLIER_CHANGE * level))


def _theil_sen(x, y):
    """Median of the pairwise slopes (robust to a few outliers)."""
    i, j = np.triu_indices(len(x), 1)
    dx = x[j] - x[i]
    ok = dx != 0
    return float(np.median((y[j] - y[i])[ok] / dx[ok])) if ok.any() else 0.0


def fleet_trends(frame, *, false_alarm=FALSE_ALARM, change=DRIFT_CHANGE):
    """The :class:`Trend` of every robot, joint and quantity of a fleet table (the rows with
    status ok; the friction quantities only where the table has friction values), judged at
    the family-wise ``false_alarm`` probability (see the module docstring)."""
    ok = frame[frame["status"] == "ok"]
    series = []
    for (robot, joint), group in ok.groupby(["robot", "joint"], sort=False):
        group = group.sort_values("start")
        for quantity, se_col, _ in QUANTITIES:
            values = group[quantity].to_numpy(float)
            if not np.isfinite(values).any():
                continue
            se = None if se_col is None else group[se_col].to_numpy(float)
            if se is not None and not np.isfinite(se).any():
                se = None                          # a given friction model: no standard errors
            series.append((robot, joint, quantity, list(group["start"]), values, se, list(group["bag"])))
    judged = sum(np.isfinite(values).sum() >= 3 for *_, values, _, _ in series)
    alpha = false_alarm / max(judged, 1)
    return [series_trend(*s, alpha=alpha, change=change) for s in series]


def threshold_text(trends, false_alarm=FALSE_ALARM, change=DRIFT_CHANGE):
    """The threshold, said in words (the summary's first paragraph)."""
    alpha = next((t.alpha for t in trends if t.reason is None), None)
    if alpha is None:        # no p-value to quote: nothing was judged
        return (f"A robot's joint is named when the straight-line trend of its Coulomb friction, viscous friction or "
                f"residual RMS over the recording time is significant at a false-alarm probability of "
                f"{100 * false_alarm:g} % for the whole fleet and changes the quantity by at least "
                f"{100 * change:g} % of its mean level; no series could be judged (a trend needs 3 or more bags "
                "of a robot analysed).")
    return (f"A robot's joint is named when the straight-line trend of its Coulomb friction, viscous friction or "
            f"residual RMS over the recording time is significant at a false-alarm probability of "
            f"{100 * false_alarm:g} % for the whole fleet (Bonferroni: two-sided p < {alpha:.2g} for each of the "
            f"{sum(t.reason is None for t in trends)} series judged, Student's t with bags - 2 degrees of freedom; "
            f"the slope's standard error from each bag's friction standard errors, scaled up by the scatter "
            f"between bags where that is larger) and changes the quantity by at least {100 * change:g} % of its "
            f"mean level over the recorded span.")


def summary_text(frame, trends, *, false_alarm=FALSE_ALARM, change=DRIFT_CHANGE, units=None):
    """The text of fleet_summary.txt: the fleet's size and span, the threshold, the moved
    series (robot, joint, quantity: the only places it names), how many values were set aside
    as outliers, how many robots could not be judged, the bags not analysed. ``units``:
    {(robot, joint): (force unit, viscous unit)} (default N m, N m s/rad)."""
    units = units or {}
    ok = frame[frame["status"] == "ok"]
    bags = frame.drop_duplicates("bag")
    failed = bags[bags["status"] != "ok"]
    robots = ok["robot"].nunique()
    lines = [f"Fleet: {len(bags)} bags, {len(bags) - len(failed)} analysed, {len(failed)} not; "
             f"{robots} robot{'s' if robots != 1 else ''}."]
    if len(ok):
        first, last = ok["start"].min(), ok["start"].max()
        lines.append(f"Recorded from {first:%Y-%m-%d %H:%M} to {last:%Y-%m-%d %H:%M} UTC "
                     f"({(last - first).total_seconds() / 604800:.1f} weeks).")
    lines += ["", threshold_text(trends, false_alarm, change), ""]
    moved = [t for t in trends if t.moved]
    judged = [t for t in trends if t.reason is None]
    if moved:
        lines.append(f"Moved beyond the threshold ({len(moved)} of {len(judged)} series):")
        for t in sorted(moved, key=lambda t: (t.robot, t.joint, t.quantity)):
            force, viscous = units.get((t.robot, t.joint), ("N m", "N m s/rad"))
            unit = viscous if t.quantity == "viscous" else force
            label = dict((q, lab) for q, _, lab in QUANTITIES)[t.quantity]
            lines.append(f"  robot {t.robot}, joint {t.joint}: {label} {t.first:.4g} -> {t.last:.4g} {unit} over "
                         f"{t.weeks:.1f} weeks ({100 * t.slope / abs(t.level):+.2g} %/week of its mean level, "
                         f"{abs(t.ratio):.1f} standard errors, p = {t.p:.2g}, {t.bags} bags)")
    else:
        lines.append(f"Nothing moved beyond the threshold ({len(judged)} series judged).")
    outlying = {nm for t in trends for nm in t.outliers}
    if outlying:
        values = sum(len(t.outliers) for t in trends)
        lines += ["", f"{values} values of {len(outlying)} bags were set aside as outliers before the lines were "
                      f"fitted (ringed in {FIGURE}; per series in {TABLE})."]
    unjudged = {}
    for t in trends:
        if t.reason is not None:
            unjudged.setdefault(t.reason, set()).add(t.robot)
    for reason, who in unjudged.items():
        lines += ["", f"Not judged ({reason}): {len(who)} robot{'s' if len(who) != 1 else ''}."]
    if len(failed):
        lines += ["", f"Bags not analysed ({len(failed)}; their status in fleet.parquet):"]
        lines += [f"  {row.bag}: {row.status}" for row in failed.itertuples()]
    return "\n".join(lines) + "\n"


def plot_trends(frame, trends, path, *, max_colored=10, units=None):
    """trends.png: per joint (rows) the friction (Coulomb, viscous, with their standard errors)
    and the residual RMS (columns) against the recording time, one line per robot; the lines
    of moved series drawn with their trend, outliers ringed in red. With more than
    ``max_colored`` robots, the robots with nothing moved are drawn thin and grey. A title,
    each axis with its quantity and unit (``units``: {(robot, joint): (force unit, viscous
    unit)}, default N m and N m s/rad)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    units = units or {}

    ok = frame[frame["status"] == "ok"]
    quantities = [q for q in QUANTITIES if np.isfinite(ok[q[0]].to_numpy(float)).any()] if len(ok) else []
    joints = list(dict.fromkeys(ok["joint"]))
    if not joints or not quantities:
        fig, ax = plt.subplots(figsize=(6, 2))
        ax.axis("off")
        ax.text(0.5, 0.5, "no bag was analysed", ha="center", va="center")
        fig.savefig(path, dpi=100)
        plt.close(fig)
        return path
    by_key = {(t.robot, t.joint, t.quantity): t for t in trends}
    robots = list(dict.fromkeys(ok["robot"]))
    moved_robots = {t.robot for t in trends if t.moved}
    colored = robots if len(robots) <= max_colored else [r for r in robots if r in moved_robots][:max_colored]
    cmap = plt.get_cmap("tab10")
    color = {r: cmap(i % 10) for i, r in enumerate(colored)}
    fig, axes = plt.subplots(len(joints), len(quantities), figsize=(4.6 * len(quantities), 2.1 * len(joints) + 1.0),
                             squeeze=False, sharex=True)
    for row, joint in enumerate(joints):
        for col, (quantity, se_col, label) in enumerate(quantities):
            ax = axes[row, col]
            for robot, group in ok[ok["joint"] == joint].groupby("robot", sort=False):
                group = group.sort_values("start")
                trend = by_key.get((robot, joint, quantity))
                style = dict(color=color.get(robot, "0.6"), lw=1.4 if robot in color else 0.6,
                             label=robot if robot in color else None)
                x, y = group["start"].to_numpy(), group[quantity].to_numpy(float)
                if se_col is not None and np.isfinite(group[se_col].to_numpy(float)).any():
                    ax.errorbar(x, y, yerr=group[se_col].to_numpy(float), marker=".", ms=4, capsize=0, **style)
                else:
                    ax.plot(x, y, marker=".", ms=4, **style)
                if trend is not None and trend.outliers:
                    out = group["bag"].isin(trend.outliers).to_numpy()
                    ax.plot(x[out], y[out], "o", mfc="none", mec="red", ms=9, mew=1.5)
                if trend is not None and trend.moved:
                    ax.plot([trend.start, trend.end], [trend.first, trend.last], "--", color="red", lw=2)
            robot = next((r for r in ok.loc[ok["joint"] == joint, "robot"]), None)
            force, viscous = units.get((robot, joint), ("N m", "N m s/rad"))
            if row == 0:
                ax.set_title(label, fontsize=9)
            ax.set_ylabel(f"{joint}\n{label} [{viscous if quantity == 'viscous' else force}]", fontsize=7)
            ax.tick_params(labelsize=7)
            ax.grid(alpha=0.3)
    for ax in axes[-1]:
        ax.tick_params(axis="x", rotation=30)
        ax.set_xlabel("recording start (UTC)", fontsize=8)
    bags = ok["bag"].nunique()
    fig.suptitle(f"Fleet trends over the recording time\n{bags} bags of {len(robots)} robot"
                 f"{'s' if len(robots) != 1 else ''}", fontsize=10, y=1 - 0.05 / fig.get_figheight(), va="top")
    from matplotlib.lines import Line2D

    legend = {}
    for ax in axes.flat:
        for handle, label in zip(*ax.get_legend_handles_labels()):
            legend.setdefault(label, handle)
    handles, labels = list(legend.values()), list(legend)

    handles += [Line2D([], [], ls="--", color="red", lw=2), Line2D([], [], ls="", marker="o", mfc="none", mec="red")]
    labels += ["trend beyond the threshold", "outlier"]
    fig.legend(handles, labels, loc="upper center", ncol=min(len(labels), 6), fontsize=8, frameon=False,
               bbox_to_anchor=(0.5, 1 - 0.45 / fig.get_figheight()))
    fig.tight_layout(rect=(0, 0, 1, 1 - 0.8 / fig.get_figheight()))
    fig.savefig(path, dpi=90)
    plt.close(fig)
    return path


def trends_frame(trends):
    """The trends as a pandas DataFrame, one row per series (trends.csv): robot, joint,
    quantity, bags, start, end, weeks, level, slope_per_week, slope_se, ratio, p, alpha, change,
    first, last, moved, outliers (the bags set aside, space-separated), reason."""
    import pandas as pd

    keys = ("robot", "joint", "quantity", "bags", "start", "end", "weeks", "level", "slope", "slope_se", "ratio", "p",
            "alpha", "change", "first", "last", "moved", "outliers", "reason")
    rows = [{k: (" ".join(t.outliers) if k == "outliers" else getattr(t, k)) for k in keys} for t in trends]
    return pd.DataFrame(rows, columns=keys).rename(columns={"slope": "slope_per_week"})


def write_trend_report(frame, out, *, false_alarm=None, change=None, units=None, plot=True):
    """Write ``out/fleet_summary.txt``, ``out/trends.csv`` and (with ``plot`` and matplotlib)
    ``out/trends.png`` of a fleet table; returns the list of :class:`Trend`."""
    false_alarm = FALSE_ALARM if false_alarm is None else float(false_alarm)
    change = DRIFT_CHANGE if change is None else float(change)
    trends = fleet_trends(frame, false_alarm=false_alarm, change=change)
    text = summary_text(frame, trends, false_alarm=false_alarm, change=change, units=units)
    with open(os.path.join(out, SUMMARY), "w", encoding="utf-8") as fh:
        fh.write(text)
    trends_frame(trends).to_csv(os.path.join(out, TABLE), index=False)
    if plot:
        try:
            import matplotlib  # noqa: F401
        except ImportError:
            return trends
        plot_trends(frame, trends, os.path.join(out, FIGURE), units=units)
    return trends
