"""Replay analysis of recorded joint states: model torques and their time derivatives against
the measured efforts.

The recorded positions are fitted by smoothing splines (:meth:`Trajectory.from_samples`:
quintic, C^4, FITPACK knots chosen so that the residual matches a noise level s). By default s
is ``NOISE_FACTOR`` = 1.5 times the noise standard deviation estimated from the data's 6th
differences in each window: right at the estimated level FITPACK's criterion is marginal and
the fit chases the noise with extra knots (on the Panda test motion, 500 Hz, 1e-4 rad noise,
4 s windows: factor 1.0 gives 5.7 % tau_dot error, 1.5 gives 1.2 %, 3.0 over-smooths to 3.3 %). A given
``smoothing`` is used as is.

The fit runs in overlapping windows so that long recordings cost linear time and bounded
memory: each window of ``CHUNK`` samples is fitted together with ``MARGIN`` samples on each
side and evaluated on its own samples only. At a window boundary the results switch from one
fit to the next, a jump of the size of the fit error (on the test motion: < 0.5 % of the tau
range and < 1 % of the tau_dot range; the smaller windows also follow the motion more closely).

The fitted trajectory gives q^(0..order+2) at the recorded stamps, hence tau^(0..order) by
:func:`feedforward` (and motor references with actuators). A C^4 fit bounds the torque order
at 2 (tau'' needs q^(4)).
"""

import warnings
from dataclasses import dataclass
from typing import Optional, Tuple

import numpy as np

from .actuators import load_actuators
from .errors import InputError, ModelError
from .trajectory_feedforward import FeedforwardResult, feedforward
from .trajectory import Trajectory, noise_std  # the estimator from_samples itself uses
from .units import column

MAX_ORDER = 2       # a C^4 (quintic) smoothing fit carries q up to q^(4) continuously
MIN_SAMPLES = 20
CHUNK = 1000        # samples evaluated per window (also the batch of the dynamics)
MARGIN = 250        # extra samples fitted on each side of a window
NOISE_FACTOR = 1.5  # default smoothing level / estimated noise std (see the module docstring)


@dataclass(frozen=True)
class BagAnalysis:
    """Model results at the m recorded stamps, n model joints (model order).

    ``states``: the recorded :class:`~hod_dynamics.bag.JointStates` (all recorded joints);
    ``columns`` (n,): their column of each model joint; ``result``: the
    :class:`FeedforwardResult` (qjet (m, order+3, n) of the fit, taujet (m, order+1, n),
    motor references with actuators); ``planned`` (m, n) planned positions (linear
    interpolation of the recorded plan) or None.
    """

    states: object
    columns: np.ndarray
    result: FeedforwardResult
    planned: Optional[np.ndarray] = None

    @property
    def joint_names(self) -> Tuple[str, ...]:
        return self.result.joint_names

    @property
    def t(self):
        return self.states.t

    @property
    def position(self):
        """Measured positions (m, n) in model order."""
        return self.states.position[:, self.columns]

    @property
    def effort(self):
        """Measured efforts (m, n) in model order, or None."""
        return None if self.states.effort is None else self.states.effort[:, self.columns]

    @property
    def residual(self):
        """Model tau minus measured effort (m, n) (N m or N), or None without efforts."""
        eff = self.effort
        return None if eff is None else self.result.taujet[:, 0] - eff

    def summary(self):
        """A JSON-ready dict: sizes, per-joint residual RMS / max, peaks of tau^(k), fit residual."""
        r = self.result
        order = r.taujet.shape[1] - 1
        dt = np.diff(self.t)
        joints = {}
        for j, name in enumerate(self.joint_names):
            tau = r.taujet[:, 0, j]
            entry = {"tau_range": float(np.ptp(tau)),
                     "peak_abs": {f"tau{k}": float(np.abs(r.taujet[:, k, j]).max()) for k in range(order + 1)},
                     "position_fit_rms": _rms(r.qjet[:, 0, j] - self.position[:, j])}
            if self.residual is not None:
                res = self.residual[:, j]
                entry.update(residual_rms=_rms(res), residual_max_abs=float(np.nanmax(np.abs(res))),
                             residual_rms_percent_of_range=100 * _rms(res) / max(entry["tau_range"], 1e-300),
                             measured_rms=_rms(self.effort[:, j]))
            if self.planned is not None:
                entry["tracking_rms"] = _rms(self.position[:, j] - self.planned[:, j])
            if r.u is not None:
                entry.update(elastic=bool(r.elastic[j]), motor_torque_peak_abs=float(np.abs(r.u[:, j]).max()),
                             deflection_peak_abs=float(np.abs(r.thetajet[:, 0, j] - r.qjet[:, 0, j]).max()))
            joints[name] = entry
        return {"topic": self.states.topic, "t0_ns": int(self.states.t0_ns),
                "n_samples": len(self.t), "duration": float(self.t[-1] - self.t[0]),
                "median_rate": float(1.0 / np.median(dt)), "max_gap": float(dt.max()),
                "dropped_duplicates": int(self.states.dropped), "order": order,
                "has_effort": self.effort is not None, "joints": joints}


def _rms(x):
    return float(np.sqrt(np.nanmean(np.square(x))))


def _windows(m, chunk=CHUNK, margin=MARGIN):
    """(fit_lo, lo, hi, fit_hi) index ranges covering 0..m; the last window absorbs a short tail."""
    edges = list(range(0, m, chunk))
    if len(edges) > 1 and m - edges[-1] < chunk // 2:
        edges.pop()
    edges.append(m)
    return [(max(lo - margin, 0), lo, hi, min(hi + margin, m)) for lo, hi in zip(edges[:-1], edges[1:])]


def analyze_joint_states(model, states, *, order=2, actuators=None, smoothing=None, planned=None, progress=None,
            chunk=CHUNK, margin=MARGIN):
    """Fit the recorded positions of ``states`` and evaluate the model along the fit.

    ``model``: :class:`RobotModel`; ``states``: :class:`~hod_dynamics.bag.JointStates` (extra
    joints are ignored; every model joint must be recorded); ``order`` 0..2; ``actuators``
    as for :func:`feedforward`; ``smoothing``: noise standard deviation of the positions (rad
    or m, scalar or (n,) in model order), None: NOISE_FACTOR times the estimate of each
    window, 0 interpolates;
    ``planned``: optional ``(joint_names, t, positions)`` of the plan (see
    :func:`~hod_dynamics.bag.read_planned_positions`); ``progress(done, total)``;
    ``chunk`` / ``margin``: window and overlap sizes in samples (see the module docstring).
    Returns :class:`BagAnalysis`. Raises :class:`InputError` for unknown joints, too few
    samples or an order above 2.
    """
    if isinstance(order, bool) or not isinstance(order, (int, np.integer)) or not 0 <= order <= MAX_ORDER:
        raise InputError(f"order must be 0, 1 or 2, got {order!r}: a smoothing fit of recorded positions "
                         "is C^4 at most, and tau^(k) needs q^(k+2)")
    missing = [nm for nm in model.joint_names if nm not in states.joint_names]
    if missing:
        raise InputError(f"joints {missing} of model '{model.name}' are not recorded on {states.topic} "
                         f"(it records {list(states.joint_names)}); pass the URDF of the recorded robot "
                         "or lock those joints with --lock JOINT=VALUE")
    columns = model.joint_order(states.joint_names, allow_extra=True)
    m = len(states.t)
    if m < MIN_SAMPLES:
        raise InputError(f"only {m} joint state samples; at least {MIN_SAMPLES} are needed (widen "
                         "--start/--end or check the topic)")
    acts = None if actuators is None else load_actuators(actuators, model)
    q = states.position[:, columns]
    parts, windows = [], _windows(m, chunk, margin)
    for a, lo, hi, b in windows:
        level = NOISE_FACTOR * noise_std(q[a:b]) if smoothing is None else smoothing
        with warnings.catch_warnings():
            # near noise-free data FITPACK cannot reach the (tiny) target residual exactly and
            # warns; the fit it returns is then closer to the data than asked, which is harmless
            warnings.filterwarnings("ignore", "error. a theoretically impossible", RuntimeWarning)
            traj = Trajectory.from_samples(model.joint_names, states.t[a:b], q[a:b], smoothing=level,
                                           continuity=4)
        parts.append(feedforward(model, traj, states.t[lo:hi], order, acts))
        if progress is not None:
            progress(hi, m)
    result = FeedforwardResult(**{f: (getattr(parts[0], f) if f in ("joint_names", "elastic", "gear_ratio", "joint_types")
                                      or getattr(parts[0], f) is None
                                      else np.concatenate([getattr(p, f) for p in parts]))
                                  for f in FeedforwardResult.__dataclass_fields__})
    return BagAnalysis(states, columns, result, _planned_at(model, planned, states.t))


def _planned_at(model, planned, t):
    if planned is None:
        return None
    names, tp, qp = planned
    try:
        cols = model.joint_order(names, allow_extra=True)
    except ModelError as exc:
        raise InputError(f"the planned trajectory does not match model '{model.name}' ({exc})") from None
    return np.column_stack([np.interp(t, tp, qp[:, c]) for c in cols])


def samples_columns(analysis):
    """(header list, blocks) of everything per sample, model joint order: ``blocks`` is a list
    of (m,) / (m, n) arrays whose columns, side by side, match the header.

    Columns: t (s from the first sample), then per joint q (measured), qfit, qd, qdd (of the
    fit), tau0..tauK (model), effort, residual (model - measured), qplan, theta, u (when
    available).
    """
    r, names = analysis.result, analysis.joint_names
    types = r.joint_types or ("revolute",) * len(names)
    # (label, array, quantity, derivative order): the unit follows the joint type
    blocks = [("q", analysis.position, "position", 0), ("qfit", r.qjet[:, 0], "position", 0),
              ("qd", r.qjet[:, 1], "position", 1), ("qdd", r.qjet[:, 2], "position", 2)]
    blocks += [(f"tau{k}", r.taujet[:, k], "torque", k) for k in range(r.taujet.shape[1])]
    optional = [("effort", analysis.effort, "torque"), ("residual", analysis.residual, "torque"),
                ("qplan", analysis.planned, "position"),
                ("theta", None if r.thetajet is None else r.thetajet[:, 0], "position"), ("u", r.u, "torque")]
    blocks += [(label, v, quantity, 0) for label, v, quantity in optional if v is not None]
    header = ["t [s]"] + [column(f"{label}_{j}", typ, quantity, k)
                          for label, _, quantity, k in blocks for j, typ in zip(names, types)]
    return header, [analysis.t] + [v for _, v, _, _ in blocks]


def write_samples_csv(analysis, path, *, rows_per_write=20000):
    """Write :func:`samples_columns` as CSV (``%.10g``), in row blocks to bound memory."""
    header, blocks = samples_columns(analysis)
    with open(path, "w", encoding="utf-8") as fh:
        fh.write(",".join(header) + "\n")
        for i in range(0, len(analysis.t), rows_per_write):
            rows = np.column_stack([b[i:i + rows_per_write] for b in blocks])
            np.savetxt(fh, rows, delimiter=",", fmt="%.10g")
    return path


_QUANTITIES = [("tau", "tau", "N m"), ("tau_dot", "tau_dot", "N m/s"), ("tau_ddot", "tau_ddot", "N m/s^2")]


def write_report(analysis, out, *, plots=True, derived_bag=True, progress=None, title=""):
    """Write ``samples.csv``, ``summary.json``, the PNG plots (``tau.png`` model vs measured,
    ``tau_dot.png``, ``tau_ddot.png`` up to the order, ``residual.png``) and ``derived.mcap``
    (see :func:`~hod_dynamics.bag.write_derived_bag`) into the folder ``out``.
    Returns the list of paths written."""
    import json
    import os

    os.makedirs(out, exist_ok=True)
    paths = [write_samples_csv(analysis, os.path.join(out, "samples.csv"))]
    summary = analysis.summary()
    summary["joint_names"] = list(analysis.joint_names)
    with open(os.path.join(out, "summary.json"), "w", encoding="utf-8") as fh:
        json.dump(summary, fh, indent=2)
    paths.append(os.path.join(out, "summary.json"))
    r = analysis.result
    if plots:
        from .plots import plot_joint_series

        for k in range(r.taujet.shape[1]):
            name, label, unit = _QUANTITIES[k]
            paths.append(plot_joint_series(analysis.t, r.taujet[:, k], analysis.joint_names,
                                           os.path.join(out, f"{name}.png"), ylabel=f"{label} [{unit}]",
                                           title=title, reference=analysis.effort if k == 0 else None))
        if analysis.residual is not None:
            paths.append(plot_joint_series(analysis.t, analysis.residual, analysis.joint_names,
                                           os.path.join(out, "residual.png"),
                                           ylabel="model tau - measured effort [N m]", title=title,
                                           labels=("residual (model - measured)", None)))
    if derived_bag:
        from .bag import write_derived_bag

        paths.append(str(write_derived_bag(os.path.join(out, "derived.mcap"), analysis.states.stamps_ns,
                                           analysis.joint_names, r.qjet, r.taujet, progress=progress)))
    return paths
