"""Replay analysis of recorded joint states: model torques and their time derivatives against
the measured efforts, and joint friction identified from them.

1. Time base (:mod:`hod_dynamics.timebase`): the sample times, chosen when the bag is read
   (or again with ``time_base=``): the controller's regular grid recovered from jittered
   stamps, gaps kept as gaps.
2. Fit (:mod:`hod_dynamics.smoothing`): the recording is cut at gaps longer than
   :data:`~hod_dynamics.timebase.GAP_SPLIT` periods (a fit does not bridge them); in each
   segment every joint is smoothed at the level that minimises the estimated error of its
   accelerations, and the smoothed values are interpolated by a quintic spline (C^4), which
   gives q^(0..order+2) at the samples, hence tau^(0..order) (order <= 2: tau'' needs q^(4)).
3. Friction (:mod:`hod_dynamics.friction`): ``friction="fit"`` fits, per joint, coulomb,
   viscous and offset by linear least squares (coulomb, viscous >= 0) to the measured effort
   minus the rigid-body model; a given model (``"urdf"``, a YAML file, a mapping) is
   evaluated as it is. The friction torque and its exact derivatives join tau.

Residuals are model tau minus measured effort; the summary gives them in N m and as % of the
*measured* effort's range, rigid body only and with friction side by side.

Longer than 500 lines: the analysis and the files of its report (samples.csv, friction.yaml,
the plots, the derived bag) read the same :class:`BagAnalysis` fields; the fit, the time base
and the dynamics are in smoothing.py, timebase.py, trajectory.py and dynamics.py.
"""

import warnings
from dataclasses import dataclass, field
from typing import Optional, Tuple

import numpy as np

from .actuators import load_actuators
from .dynamics import time_derivatives
from .errors import InputError, ModelError
from .trajectory_feedforward import FeedforwardResult
from .friction import DEFAULT_VS, FrictionModel, load_friction
from .smoothing import PENALTY_ORDER
from .timebase import GAP_SPLIT
from .trajectory import fit_samples
from .units import column
from .validation import whole_number

MAX_ORDER = 2       # a C^4 (quintic) fit carries q up to q^(4) continuously
MIN_SAMPLES = 20
MIN_SEGMENT = 20    # a stretch between gaps shorter than this is fitted with its neighbour
CHUNK = 50000       # samples per batch of the dynamics (bounds the working memory)


@dataclass(frozen=True)
class BagAnalysis:
    """Model results at the m recorded samples, n model joints (model order).

    ``states``: the recorded :class:`~hod_dynamics.bag.JointStates` (all recorded joints);
    ``columns`` (n,): their column of each model joint; ``result``: the
    :class:`FeedforwardResult` (qjet (m, order+3, n) of the fit, taujet (m, order+1, n)
    including friction when a friction model is used, motor references with actuators);
    ``planned`` (m, n) planned positions (linear interpolation of the recorded plan) or None;
    ``friction``: the :class:`~hod_dynamics.friction.FrictionModel` used or None;
    ``friction_source``: ``"fit"``, ``"urdf"``, a file name or ``"given"``;
    ``friction_fit``: per joint the fitted parameters' standard errors and the residual RMS
    before and after (``friction="fit"`` only); ``rigid_tau`` (m, n): the rigid-body tau
    when friction is used; ``segments``: (start, stop) sample ranges fitted separately;
    ``fit``: per joint the estimated position noise and the smoothing's cutoff frequency;
    ``notes``: one line per thing worth a user's attention.
    """

    states: object
    columns: np.ndarray
    result: FeedforwardResult
    planned: Optional[np.ndarray] = None
    friction: Optional[FrictionModel] = None
    friction_source: Optional[str] = None
    friction_fit: Optional[dict] = None
    rigid_tau: Optional[np.ndarray] = None
    segments: tuple = ()
    fit: dict = field(default_factory=dict)
    notes: tuple = ()
    continuous: Optional[np.ndarray] = None   # (n,) bool: continuous joints (positions unwrapped)

    @property
    def joint_names(self) -> Tuple[str, ...]:
        return self.result.joint_names

    @property
    def t(self):
        return self.states.t

    @property
    def position(self):
        """Measured positions (m, n) in model order (continuous joints unwrapped)."""
        return _unwrapped(self.states.position[:, self.columns], self.continuous)

    @property
    def effort(self):
        """Measured efforts (m, n) in model order, or None."""
        return None if self.states.effort is None else self.states.effort[:, self.columns]

    @property
    def residual(self):
        """Model tau (with friction when used) minus measured effort (m, n) (N m or N), or None."""
        eff = self.effort
        return None if eff is None else self.result.taujet[:, 0] - eff

    @property
    def friction_torque(self):
        """The friction torque (m, n) at the fitted velocities, or None."""
        return None if self.friction is None else self.friction.torque(self.result.qjet[:, 1])

    def summary(self):
        """A JSON-ready dict: sizes, time base, per joint the measured effort's RMS and range,
        the residual (rigid body only and with friction), peaks of tau^(k), the fit."""
        r = self.result
        order = r.taujet.shape[1] - 1
        eff = self.effort
        joints = {}
        for j, name in enumerate(self.joint_names):
            entry = {"peak_abs": {f"tau{k}": float(np.abs(r.taujet[:, k, j]).max()) for k in range(order + 1)},
                     "model_tau_range": float(np.ptp(r.taujet[:, 0, j])),
                     "position_fit_rms": _rms(r.qjet[:, 0, j] - self.position[:, j]), **self.fit.get(name, {})}
            if eff is not None:
                measured_range = float(np.nanmax(eff[:, j]) - np.nanmin(eff[:, j]))
                res = self.residual[:, j]
                entry.update(measured_rms=_rms(eff[:, j]), measured_range=measured_range,
                             residual_rms=_rms(res), residual_max_abs=float(np.nanmax(np.abs(res))),
                             residual_rms_percent_of_measured_range=_percent(_rms(res), measured_range))
                if self.rigid_tau is not None:
                    rigid = self.rigid_tau[:, j] - eff[:, j]
                    entry.update(rigid_residual_rms=_rms(rigid),
                                 rigid_residual_rms_percent_of_measured_range=_percent(_rms(rigid), measured_range))
            if self.planned is not None:
                entry["tracking_rms"] = _rms(self.position[:, j] - self.planned[:, j])
            if r.u is not None:
                entry.update(elastic=bool(r.elastic[j]), motor_torque_peak_abs=float(np.abs(r.u[:, j]).max()),
                             deflection_peak_abs=float(np.abs(r.thetajet[:, 0, j] - r.qjet[:, 0, j]).max()))
            joints[name] = entry
        dt = np.diff(self.t)
        out = {"topic": self.states.topic, "t0_ns": int(self.states.t0_ns),
               "n_samples": len(self.t), "duration": float(self.t[-1] - self.t[0]),
               "median_rate": float(1.0 / np.median(dt)), "max_gap": float(dt.max()),
               "dropped_duplicates": int(self.states.dropped), "order": order,
               "has_effort": eff is not None,
               "segments": [{"start": float(self.t[a]), "end": float(self.t[b - 1]), "samples": int(b - a)}
                            for a, b in self.segments],
               "joints": joints, "notes": list(self.notes)}
        if self.states.time_base is not None:
            out["time_base"] = self.states.time_base.summary()
        if self.friction is not None:
            out["friction"] = {"source": self.friction_source,
                               "model": "viscous * qd + coulomb * tanh(qd / v_s) + offset",
                               "joints": {nm: {key: float(getattr(self.friction, key)[j])
                                               for key in ("coulomb", "viscous", "offset", "v_s")}
                                          | (self.friction_fit or {}).get(nm, {})
                                          for j, nm in enumerate(self.joint_names)}}
        return out


def _unwrapped(q, continuous):
    """q (m, n) with the 2 pi jumps of the continuous joints' columns removed: a continuous
    joint's angle may be reported wrapped to (-pi, pi], which a fit must not see as a jump."""
    if continuous is None or not continuous.any():
        return q
    q = q.copy()
    q[:, continuous] = np.unwrap(q[:, continuous], axis=0)
    return q


def _rms(x):
    x = np.asarray(x, dtype=float)
    return float(np.sqrt(np.nanmean(np.square(x)))) if np.isfinite(x).any() else float("nan")


def _percent(value, scale):
    return 100.0 * value / scale if scale > 0 else float("nan")


def fit_segments(t, period, min_segment=MIN_SEGMENT):
    """(start, stop) sample ranges between the gaps of t (m,) longer than GAP_SPLIT periods;
    a range shorter than ``min_segment`` joins its neighbour (its gap is bridged)."""
    cuts = [0] + [int(i) + 1 for i in np.flatnonzero(np.diff(t) > GAP_SPLIT * period)] + [len(t)]
    merged = [0]
    for c in cuts[1:-1]:
        if c - merged[-1] >= min_segment and len(t) - c >= min_segment:
            merged.append(c)
    merged.append(len(t))
    return list(zip(merged[:-1], merged[1:]))


def _cutoff_hz(lam, period, d=PENALTY_ORDER):
    """The frequency (Hz) where the smoother's gain is 1/2, for level lam (s^(2d-1))."""
    if lam <= 0:
        return float("inf")
    mu = (lam / period ** (2 * d - 1)) ** (-1.0 / d)
    return float(np.arccos(max(1.0 - mu / 2.0, -1.0)) / (2 * np.pi * period))


def fit_friction(qd, residual, joint_names, v_s=DEFAULT_VS):
    """Least-squares friction of each joint: ``residual`` (m, n) = measured effort - rigid-body
    model ~ coulomb tanh(qd / v_s) + viscous qd + offset, with coulomb, viscous >= 0.

    ``qd`` (m, n) joint velocities. Returns ``(FrictionModel, stats)``: stats per joint name
    the standard errors ``coulomb_se``, ``viscous_se``, ``offset_se`` (ordinary least squares,
    as if the samples were independent) and ``residual_rms_before`` / ``residual_rms_after``
    (N m). NaN residuals (samples without effort) are left out.
    """
    n = len(joint_names)
    params, stats = np.zeros((3, n)), {}
    for j, name in enumerate(joint_names):
        ok = np.isfinite(residual[:, j])
        r = residual[ok, j]
        X = np.column_stack([np.tanh(qd[ok, j] / v_s), qd[ok, j], np.ones(ok.sum())])
        p = _bounded_least_squares(X.T @ X, X.T @ r)
        after = r - X @ p
        dof = max(len(r) - 3, 1)
        cov = np.linalg.pinv(X.T @ X) * (after @ after) / dof
        se = np.sqrt(np.clip(np.diag(cov), 0.0, None))
        params[:, j] = p
        stats[name] = {"coulomb_se": float(se[0]), "viscous_se": float(se[1]), "offset_se": float(se[2]),
                       "residual_rms_before": _rms(r), "residual_rms_after": _rms(after)}
    return FrictionModel(tuple(joint_names), params[0], params[1], params[2], np.full(n, v_s)), stats


def _bounded_least_squares(A, b):
    """argmin |X p - r|^2 over p = (coulomb, viscous, offset) with coulomb, viscous >= 0, from
    the normal equations A = X'X (3, 3), b = X'r: the best of the four active sets (each of the
    two bounded parameters free or held at 0) whose solution is feasible (a convex problem:
    that is its minimum)."""
    best, best_cost = np.zeros(3), np.inf
    for free in ([0, 1, 2], [1, 2], [0, 2], [2]):
        p = np.zeros(3)
        p[free] = np.linalg.lstsq(A[np.ix_(free, free)], b[free], rcond=None)[0]
        cost = p @ A @ p - 2 * p @ b
        if p[0] >= 0 and p[1] >= 0 and cost < best_cost - 1e-12 * abs(best_cost if np.isfinite(best_cost) else 0):
            best, best_cost = p, cost
    return best


def _friction_spec(friction):
    if friction is None or isinstance(friction, FrictionModel):
        return friction, None if friction is None else "given"
    if isinstance(friction, str) and friction in ("fit", "urdf"):
        return friction, friction
    if isinstance(friction, dict):
        return friction, "given"
    import os

    return friction, os.path.basename(os.fspath(friction))


def analyze_joint_states(model, states, *, order=2, actuators=None, smoothing=None, planned=None, progress=None,
                         chunk=CHUNK, friction=None, time_base=None):
    """Fit the recorded positions of ``states`` and evaluate the model along the fit.

    ``model``: :class:`RobotModel`; ``states``: :class:`~hod_dynamics.bag.JointStates` (extra
    joints are ignored; every model joint must be recorded); ``order`` 0..2; ``actuators``
    as for :func:`feedforward`; ``smoothing``: noise standard deviation of the positions (rad
    or m, scalar or (n,) in model order), None: estimated per joint and segment, 0
    interpolates; ``planned``: optional ``(joint_names, t, positions)`` of the plan (see
    :func:`~hod_dynamics.bag.read_planned_positions`); ``progress(done, total)``; ``chunk``:
    samples per batch of the dynamics; ``friction``: None (rigid body only), ``"fit"``
    (identified from the efforts, see :func:`fit_friction`), or anything
    :func:`~hod_dynamics.friction.load_friction` takes (``"urdf"``, a YAML path, a mapping,
    a :class:`~hod_dynamics.friction.FrictionModel`); ``time_base``: None keeps the times of
    ``states``, else a mode of :func:`~hod_dynamics.timebase.resolve_time_base` chosen again.
    Returns :class:`BagAnalysis`. Raises :class:`InputError` for unknown joints, too few
    samples, an order above 2, ``friction="fit"`` without efforts, or a bad friction model.
    """
    whole_number("order", order, 0, MAX_ORDER, why="a smoothing fit of recorded positions is C^4 at "
                 "most, and tau^(k) needs q^(k+2)")
    missing = [nm for nm in model.joint_names if nm not in states.joint_names]
    if missing:
        raise InputError(f"joints {missing} of model '{model.name}' are not recorded on {states.topic} "
                         f"(it records {list(states.joint_names)}); pass the URDF of the recorded robot "
                         "or lock those joints with --lock JOINT=VALUE")
    friction, source = _friction_spec(friction)
    if friction == "fit" and states.effort is None:
        raise InputError(f"friction 'fit' needs measured efforts, but the joint states on {states.topic} carry "
                         "none; pass a friction file instead, or record effort")
    fric = None if friction in (None, "fit") else load_friction(friction, model)
    if time_base is not None:
        states = states.with_time_base(time_base)
    columns = model.joint_order(states.joint_names, allow_extra=True)
    m = len(states.t)
    if m < MIN_SAMPLES:
        raise InputError(f"only {m} joint state samples; at least {MIN_SAMPLES} are needed (widen "
                         "--start/--end or check the topic)")
    acts = None if actuators is None else load_actuators(actuators, model)
    inner = max(order, 2) if acts is not None and acts.elastic.any() else order
    notes = []
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        qjet, rigid, segments, fit = _fit_and_dynamics(model, states, columns, inner, smoothing, chunk, progress)
    notes += warning_notes(caught)
    fit_stats = None
    if friction == "fit":
        fric, fit_stats = fit_friction(qjet[:, 1], states.effort[:, columns] - rigid[:, 0], model.joint_names)
    taujet = rigid if fric is None else rigid + fric.jet(qjet[:, 1:inner + 2])
    notes += _fit_notes(model.joint_names, fit, fit_stats, qjet[:, 1])
    if friction is None and states.effort is not None:
        notes += _friction_hint(model.joint_names, qjet[:, 1], states.effort[:, columns] - rigid[:, 0])
    result = dict(joint_names=tuple(model.joint_names), t=states.t, qjet=qjet[:, :order + 3],
                  taujet=taujet[:, :order + 1], joint_types=tuple(model.joint_types))
    if acts is not None:
        thetajet, u = acts.motor_references(states.t, qjet, taujet)
        result.update(thetajet=thetajet, u=u, elastic=acts.elastic, gear_ratio=acts.gear_ratio)
    return BagAnalysis(states, columns, FeedforwardResult(**result), _planned_at(model, planned, states.t),
                       fric, source if fric is not None else None, fit_stats,
                       None if fric is None else rigid[:, 0].copy(), tuple(segments), fit, tuple(notes),
                       np.array([ty == "continuous" for ty in model.joint_types]))


def _fit_and_dynamics(model, states, columns, inner, smoothing, chunk, progress):
    """q-jets (m, inner+3, n) of the per-segment fits and the rigid-body tau-jets (m, inner+1, n)."""
    t = states.t
    q = _unwrapped(states.position[:, columns], np.array([ty == "continuous" for ty in model.joint_types]))
    m, n = q.shape
    period = float(np.median(np.diff(t)))
    segments = fit_segments(t, period)
    qjet = np.empty((m, inner + 3, n))
    rigid = np.empty((m, inner + 1, n))
    noise, cutoff = np.zeros((len(segments), n)), np.zeros((len(segments), n))
    for s, (lo, hi) in enumerate(segments):
        traj, lam, noise[s] = fit_samples(model.joint_names, t[lo:hi], q[lo:hi], smoothing=smoothing, continuity=4)
        cutoff[s] = [_cutoff_hz(level, period) for level in lam]
        for a in range(lo, hi, chunk):
            b = min(a + chunk, hi)
            qjet[a:b] = traj.jet(t[a:b], inner + 2)
            rigid[a:b] = time_derivatives(model, qjet[a:b], inner)
            if progress is not None:
                progress(b, m)
    weights = np.array([hi - lo for lo, hi in segments], dtype=float)
    fit = {nm: {"position_noise": float(np.average(noise[:, j], weights=weights)),
                "smoothing_cutoff_hz": float(np.min(cutoff[:, j]))} for j, nm in enumerate(model.joint_names)}
    return qjet, rigid, segments, fit


def warning_notes(caught):
    """One line per kind of library warning met while fitting (they never reach the terminal)."""
    kinds = {}
    for w in caught:
        key = (w.category.__name__, str(w.message).split("\n")[0][:120])
        kinds[key] = kinds.get(key, 0) + 1
    return [f"{count} x {cat}: {msg}" for (cat, msg), count in kinds.items()]


def _fit_notes(names, fit, fit_stats, qd):
    notes = []
    for j, nm in enumerate(names):
        if fit[nm]["position_noise"] == 0:
            notes.append(f"{nm}: no position noise found; the positions are interpolated, not smoothed")
        if fit_stats is not None:
            moving = np.abs(qd[:, j]) > 3 * DEFAULT_VS
            both = min(np.count_nonzero(moving & (qd[:, j] > 0)), np.count_nonzero(moving & (qd[:, j] < 0)))
            if both < 0.05 * len(qd):
                notes.append(f"{nm}: the joint moves in one direction (or not at all) most of the time; its "
                             "coulomb and offset are not separable (see their standard errors)")
    return notes


def _friction_hint(names, qd, residual):
    """A note naming the joints whose rigid-body residual a friction fit would shrink by a
    third or more (a square wave that flips with the velocity, a slope, an offset)."""
    step = max(1, len(qd) // 50000)           # a hint: a subsample does
    _, stats = fit_friction(qd[::step], residual[::step], names)
    shown = [f"{nm} {st['residual_rms_before']:.3g} -> {st['residual_rms_after']:.3g} N m" for nm, st in stats.items()
             if st["residual_rms_after"] < 2 / 3 * st["residual_rms_before"]]
    if not shown:
        return []
    return [f"the residual of {len(shown)} joints follows the joint velocity like friction (Coulomb, viscous, "
            f"offset); --friction fit would lower its RMS: {', '.join(shown)}"]


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
    fit), tau0..tauK (model, with friction when a friction model is used), effort, residual
    (model - measured), friction (the friction torque, when used), qplan, theta, u (when
    available). Each name carries its unit after a space: ``tau1_<joint> [N m/s]`` (m and N for
    prismatic joints).
    """
    r, names = analysis.result, analysis.joint_names
    types = r.joint_types or ("revolute",) * len(names)
    # (label, array, quantity, derivative order): the unit after the name follows the joint type
    blocks = [("q", analysis.position, "position", 0), ("qfit", r.qjet[:, 0], "position", 0),
              ("qd", r.qjet[:, 1], "position", 1), ("qdd", r.qjet[:, 2], "position", 2)]
    blocks += [(f"tau{k}", r.taujet[:, k], "torque", k) for k in range(r.taujet.shape[1])]
    optional = [("effort", analysis.effort, "torque"), ("residual", analysis.residual, "torque"),
                ("friction", analysis.friction_torque, "torque"), ("qplan", analysis.planned, "position"),
                ("theta", None if r.thetajet is None else r.thetajet[:, 0], "position"), ("u", r.u, "torque")]
    blocks += [(label, v, quantity, 0) for label, v, quantity in optional if v is not None]
    header = ["t [s]"] + [column(f"{label}_{j}", typ, quantity, k)
                          for label, _, quantity, k in blocks for j, typ in zip(names, types)]
    return header, [analysis.t] + [v for _, v, _, _ in blocks]


def write_samples_csv(analysis, path, *, rows_per_write=65536):
    """Write :func:`samples_columns` as CSV with Apache Arrow's CSV writer (pyarrow): every
    number in the shortest text that reads back to the same double, ``nan``/``inf`` as such.
    Written in row blocks to bound memory; the writer releases the GIL, so it runs in a thread
    beside the plots. (A Python-level writer such as ``np.savetxt`` costs ~1 us a number: half a
    minute for a 10-minute 1 kHz recording.) Without pyarrow (a ROS installation: rosdep has no
    key for it) Python's float repr writes the same numbers, more slowly."""
    header, blocks = samples_columns(analysis)
    columns = [b[:, None] if b.ndim == 1 else b for b in (np.asarray(b, dtype=float) for b in blocks)]
    try:
        import pyarrow as pa
        import pyarrow.csv as pacsv
    except ImportError:
        pa = None
    with open(path, "wb") as fh:
        fh.write((",".join(header) + "\n").encode())
        if pa is None:
            for i in range(0, len(analysis.t), rows_per_write):
                block = np.concatenate([c[i:i + rows_per_write] for c in columns], axis=1)
                fh.write("".join(",".join(map(repr, row)) + "\n" for row in block.tolist()).encode())
            return path
        schema = pa.schema([(name, pa.float64()) for name in header])
        with pacsv.CSVWriter(fh, schema, write_options=pacsv.WriteOptions(include_header=False)) as writer:
            for i in range(0, len(analysis.t), rows_per_write):
                block = np.concatenate([c[i:i + rows_per_write] for c in columns], axis=1).T.copy()
                writer.write_batch(pa.record_batch(list(block), schema=schema))
    return path


_QUANTITIES = [("tau", "tau", "N m"), ("tau_dot", "tau_dot", "N m/s"), ("tau_ddot", "tau_ddot", "N m/s^2")]


def write_report(analysis, out, *, plots=True, derived_bag=True, progress=None, title="", timings=None):
    """Write ``samples.csv``, ``summary.json``, the PNG plots (``tau.png`` model vs measured,
    ``tau_dot.png``, ``tau_ddot.png`` up to the order, ``residual.png``, and with friction
    ``friction.png``, the friction curves), ``friction.yaml`` when the friction was fitted,
    and ``derived.mcap`` (see :func:`~hod_dynamics.bag.write_derived_bag`) into the folder
    ``out``. ``timings``: a dict to receive the seconds spent on each kind of output. Returns
    the list of paths written."""
    import os
    import time

    clock = [time.perf_counter()]

    def lap(name):
        now = time.perf_counter()
        if timings is not None:
            timings[name] = now - clock[0]
        clock[0] = now

    from concurrent.futures import ThreadPoolExecutor

    os.makedirs(out, exist_ok=True)
    # samples.csv (hundreds of MB for a long recording) is formatted (compiled code, without
    # the GIL) and written to disk in a thread while the plots and the bag are made
    pool = ThreadPoolExecutor(max_workers=1)
    csv_job = pool.submit(_timed, write_samples_csv, analysis, os.path.join(out, "samples.csv"))
    try:
        paths = _write_others(analysis, out, plots, derived_bag, progress, title, lap)
    finally:
        csv_path, seconds = csv_job.result()
        pool.shutdown()
    if timings is not None:
        timings["samples.csv (in a thread meanwhile)"] = seconds
    return [csv_path] + paths


def _timed(func, *args):
    import time

    start = time.perf_counter()
    return func(*args), time.perf_counter() - start


def _write_others(analysis, out, plots, derived_bag, progress, title, lap):
    """Everything of :func:`write_report` but samples.csv; returns the paths written."""
    import json
    import os

    paths = []
    summary = analysis.summary()
    summary["joint_names"] = list(analysis.joint_names)
    with open(os.path.join(out, "summary.json"), "w", encoding="utf-8") as fh:
        json.dump(summary, fh, indent=2)
    paths.append(os.path.join(out, "summary.json"))
    if analysis.friction_source == "fit":
        paths.append(write_friction_yaml(analysis, os.path.join(out, "friction.yaml")))
    lap("summary.json, friction.yaml")
    r = analysis.result
    if plots:
        from .plots import plot_friction_curves, plot_joint_series

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
        if analysis.friction is not None and analysis.effort is not None:
            paths.append(plot_friction_curves(r.qjet[:, 1], analysis.effort - analysis.rigid_tau, analysis.friction,
                                              analysis.joint_names, os.path.join(out, "friction.png"), title=title))
        lap("plots")
    if derived_bag:
        from .bag import write_derived_bag

        paths.append(str(write_derived_bag(os.path.join(out, "derived.mcap"), analysis.states.sample_stamps_ns,
                                           analysis.joint_names, r.qjet, r.taujet, progress=progress)))
        lap("derived.mcap")
    return paths


def write_friction_yaml(analysis, path):
    """The fitted friction as YAML (loadable by ``--friction FILE``, ``feedforward`` and the
    node), with the standard errors and residuals as comments."""
    from .friction import save_friction

    lines = [f"fitted by hod-dynamics analyze-bag on {analysis.states.topic} ({len(analysis.t)} samples)",
             "per joint: coulomb +- se, viscous +- se, offset +- se; residual rms rigid body -> with friction"]
    for nm, st in (analysis.friction_fit or {}).items():
        j = analysis.joint_names.index(nm)
        f = analysis.friction
        lines.append(f"  {nm}: {f.coulomb[j]:.4g} +- {st['coulomb_se']:.2g} N m, {f.viscous[j]:.4g} +- "
                     f"{st['viscous_se']:.2g} N m s/rad, {f.offset[j]:.4g} +- {st['offset_se']:.2g} N m; "
                     f"{st['residual_rms_before']:.4g} -> {st['residual_rms_after']:.4g} N m")
    return save_friction(analysis.friction, path, comments=lines)
