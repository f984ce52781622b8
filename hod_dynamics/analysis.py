"""Replay analysis of recorded joint states: model torques and their time derivatives against
the measured efforts, how large an error the data leave in each, and joint friction identified
from them.

1. Joint states (:mod:`hod_dynamics.bag`): the groups of messages that carry the model's
   joints, each on its time base (:mod:`hod_dynamics.timebase`: header-stamp order, the
   controller's regular grid recovered from jittered stamps, gaps kept as gaps).
2. Fit (:mod:`hod_dynamics.joint_fit`): segments between gaps longer than
   :data:`~hod_dynamics.timebase.GAP_SPLIT` periods (shorter ones are bridged), one fit per
   order k for q^(k+2) (the smoothing level chosen for that derivative against the positions'
   own noise), hence tau^(0..order) from the dynamics (order <= 2: tau'' needs q^(4)).
3. Friction (:mod:`hod_dynamics.friction`): ``friction="fit"`` fits, per joint, coulomb,
   viscous and offset by linear least squares (coulomb, viscous >= 0) to the measured effort
   minus the rigid-body model; a given model (``"urdf"``, a YAML file, a mapping) is
   evaluated as it is. The friction torque and its exact derivatives join tau.
4. Error estimate (:func:`torque_errors`): the synthetic recordings of the fit carried through
   the dynamics (and friction): the RMS error of each tau^(k) per joint, and whether the data
   support it (error at most :data:`SUPPORT` of its RMS).
5. Notes: what a user should look at before trusting a result that was computed (exit code 0
   still means "analysed"): a residual the model cannot explain even with friction (another
   robot's description, currents instead of torques), a duration or clock steps that disagree
   with the stamps, orders the data do not support, groups of messages ignored or aligned.

Residuals are model tau minus measured effort; the summary gives them in N m and as % of the
*measured* effort's range, rigid body only and with friction side by side.

Longer than 500 lines: the analysis and the files of its report (samples.csv, friction.yaml,
the plots, the derived bag) read the same :class:`BagAnalysis` fields; the fit, the time base
and the dynamics are in smoothing.py, timebase.py, trajectory.py and dynamics.py.
"""

import warnings
from dataclasses import dataclass, field, replace
from typing import Optional, Tuple

import numpy as np

from .actuators import load_actuators
from .dynamics import time_derivatives
from .errors import InputError, ModelError
from .trajectory_feedforward import FeedforwardResult
from .friction import DEFAULT_VS, FrictionModel, load_friction
from .joint_fit import MIN_END_SEGMENT, fit_joint_states, fit_segments  # noqa: F401  (fit_segments: part of this module's API)
from .timebase import GAP_SPLIT
from .units import column
from .validation import whole_number

MAX_ORDER = 2       # tau'' needs q^(4), whose error the data already make large
MIN_SAMPLES = 20
SUPPORT = 1.0 / 3.0  # an order is supported when its estimated error is at most this share of its RMS
ERROR_SAMPLES = 20000   # samples the error estimate carries through the dynamics, at most
RESIDUAL_NOTE = 0.10    # a residual (friction fitted, its white noise taken out) above this share of the
                        # measured range gets a note: a right model leaves under 2 %, inertias 30 % off under
                        # 6 %, another arm's description with the same joint names 16 to 70 %
CLOCK_STEPS_NOTE = 3    # more clock steps than this get a note
ERROR_DRAWS = (4, 16)   # synthetic recordings per order: at least, at most
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
    ``friction_source``: ``"fit"``, ``"urdf"``, the YAML file's name, or ``"given"`` (a
    :class:`~hod_dynamics.friction.FrictionModel`, a mapping or YAML text);
    ``friction_fit``: per joint the fitted parameters' standard errors and the residual RMS
    before and after (``friction="fit"`` only); ``rigid_tau`` (m, n): the rigid-body tau
    when friction is used; ``segments``: (start, stop) sample ranges fitted separately;
    ``fit``: per joint the position noise found (encoder step, white noise) and the
    smoothing's cutoff frequency for each tau order; ``notes``: one line per thing worth a
    user's attention; ``errors``: the :class:`TorqueErrors` of tau^(k) (see
    :func:`torque_errors`); ``rigid_taujet`` (m, order+1, n): the rigid-body tau-jet when
    friction is used.
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
    errors: Optional["TorqueErrors"] = None
    rigid_taujet: Optional[np.ndarray] = None

    @property
    def error_estimate(self):
        """(order+1, n) estimated RMS error of each reported tau^(k) (SI units), or None."""
        return None if self.errors is None else self.errors.total

    @property
    def signal_rms(self):
        """(order+1, n) RMS of each reported tau^(k)."""
        return np.sqrt(np.mean(self.result.taujet ** 2, axis=0))

    @property
    def supported(self):
        """(order+1, n) bool: the estimated error of tau^(k) is at most SUPPORT (a third) of its
        RMS (None without an estimate)."""
        est = self.error_estimate
        return None if est is None else est <= SUPPORT * self.signal_rms

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
        signal_rms, supported, residual = self.signal_rms, self.supported, self.residual
        joints = {}
        for j, name in enumerate(self.joint_names):
            entry = {"peak_abs": {f"tau{k}": float(np.abs(r.taujet[:, k, j]).max()) for k in range(order + 1)},
                     "signal_rms": {f"tau{k}": float(signal_rms[k, j]) for k in range(order + 1)},
                     "model_tau_range": float(np.ptp(r.taujet[:, 0, j])),
                     "position_fit_rms": _rms(r.qjet[:, 0, j] - self.position[:, j]), **self.fit.get(name, {})}
            if eff is not None:
                measured_range = float(np.nanmax(eff[:, j]) - np.nanmin(eff[:, j]))
                res = residual[:, j]
                entry.update(measured_rms=_rms(eff[:, j]), measured_range=measured_range,
                             residual_rms=_rms(res), residual_max_abs=float(np.nanmax(np.abs(res))),
                             residual_rms_percent_of_measured_range=_percent(_rms(res), measured_range))
                if self.rigid_tau is not None:
                    rigid = self.rigid_tau[:, j] - eff[:, j]
                    entry.update(rigid_residual_rms=_rms(rigid),
                                 rigid_residual_rms_percent_of_measured_range=_percent(_rms(rigid), measured_range))
            if self.errors is not None:
                per_order = (lambda a: {f"tau{k}": float(a[k, j]) for k in range(order + 1)})
                entry["error_estimate"] = per_order(self.errors.total)
                entry["supported"] = {f"tau{k}": bool(supported[k, j]) for k in range(order + 1)}
                entry["end_error_estimate"] = per_order(self.errors.total_ends)
                if self.friction is not None:
                    entry["rigid_body_error_estimate"] = per_order(self.errors.rigid)
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
            out["gaps_bridged_up_to"] = GAP_SPLIT * self.states.time_base.period
        sources = list(self.states.sources) or [self.states]
        out["joint_state_groups"] = {
            "used": [{"joints": list(s.joint_names), "messages": int(s.messages)} for s in sources],
            "ignored": [{"joints": list(g.joint_names), "messages": int(g.messages), "reason": g.reason}
                        for g in self.states.ignored],
            "alignment": [dict(a) for a in self.states.alignment]}
        if self.errors is not None:
            out["error_estimate"] = {
                "method": "parametric bootstrap: synthetic recordings of the fit plus the content it missed, "
                          "with the position noise found (encoder step and white noise), fitted alike and "
                          "carried through the dynamics; near segment ends from pseudo-ends",
                "draws": int(self.errors.draws), "samples": int(self.errors.samples),
                "end_zone": {f"tau{k}": float(self.errors.end_zone[k]) for k in range(order + 1)},
                "end_error_estimated": {f"tau{k}": bool(self.errors.ends_estimated[k]) for k in range(order + 1)},
                "supported_when_error_below_share_of_rms": SUPPORT}
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
    import os

    if isinstance(friction, dict) or not os.path.isfile(friction):   # a mapping or YAML text
        return friction, "given"
    return friction, os.path.basename(os.fspath(friction))


def analyze_joint_states(model, states, *, order=2, actuators=None, smoothing=None, planned=None, progress=None,
                         chunk=CHUNK, friction=None, time_base=None, error_estimate=True):
    """Fit the recorded positions of ``states`` and evaluate the model along the fit.

    ``model``: :class:`RobotModel`; ``states``: :class:`~hod_dynamics.bag.JointStates` (extra
    joints and joint-state groups without model joints are ignored; every model joint must
    be recorded); ``order`` 0..2; ``actuators`` as for :func:`feedforward`; ``smoothing``:
    noise standard deviation of the positions (rad or m, scalar or (n,) in model order) for
    the choice of the smoothing, None: the noise found per joint and segment, 0
    interpolates; ``planned``: optional ``(joint_names, t, positions)`` of the plan (see
    :func:`~hod_dynamics.bag.read_planned_positions`); ``progress(done, total)``; ``chunk``:
    samples per batch of the dynamics; ``friction``: None (rigid body only), ``"fit"``
    (identified from the efforts, see :func:`fit_friction`), or anything
    :func:`~hod_dynamics.friction.load_friction` takes (``"urdf"``, a YAML path, a mapping,
    a :class:`~hod_dynamics.friction.FrictionModel`); ``time_base``: None keeps the times of
    ``states``, else a mode of :func:`~hod_dynamics.timebase.resolve_time_base` chosen again;
    ``error_estimate``: estimate the error of every tau^(k) (see :func:`torque_errors`; about
    as long again as the rest). Returns :class:`BagAnalysis`. Raises :class:`InputError` for joints no message carries, too
    few samples, an order above 2, ``friction="fit"`` without efforts, or a bad friction
    model.
    """
    whole_number("order", order, 0, MAX_ORDER, why="tau^(k) needs the (k+2)-th derivative of the "
                 "recorded positions, and the fits are made for the second to the fourth")
    states = states.for_joints(model.joint_names)
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
        fit = fit_joint_states(states, model.joint_names, inner, smoothing=smoothing,
                               continuous=[ty == "continuous" for ty in model.joint_types])
        qjet, rigid = _dynamics(model, fit, inner, chunk, progress)
    fit_stats = None
    if friction == "fit":
        fric, fit_stats = fit_friction(qjet[:, 1], states.effort[:, columns] - rigid[:, 0], model.joint_names)
    taujet = rigid if fric is None else rigid + fric.jet(qjet[:, 1:inner + 2])
    with warnings.catch_warnings(record=True) as more:
        warnings.simplefilter("always")
        errors = torque_errors(model, fit, order, fric) if error_estimate else None
    notes += warning_notes(caught + more)
    fit_summary = fit.summary()
    notes += _fit_notes(model.joint_names, fit_summary, fit_stats, qjet[:, 1])
    if friction is None and states.effort is not None:
        notes += _friction_hint(model.joint_names, qjet[:, 1], states.effort[:, columns] - rigid[:, 0])
    result = dict(joint_names=tuple(model.joint_names), t=states.t, qjet=qjet[:, :order + 3],
                  taujet=taujet[:, :order + 1], joint_types=tuple(model.joint_types))
    if acts is not None:
        thetajet, u = acts.motor_references(states.t, qjet, taujet)
        result.update(thetajet=thetajet, u=u, elastic=acts.elastic, gear_ratio=acts.gear_ratio)
    analysis = BagAnalysis(states, columns, FeedforwardResult(**result), _planned_at(model, planned, states.t),
                           fric, source if fric is not None else None, fit_stats,
                           None if fric is None else rigid[:, 0].copy(), tuple(fit.segments), fit_summary, (),
                           np.array([ty == "continuous" for ty in model.joint_types]), errors,
                           None if fric is None else rigid[:, :order + 1].copy())
    notes = source_notes(states) + notes + _plausibility_notes(analysis, rigid[:, 0]) + _support_notes(analysis)
    return replace(analysis, notes=tuple(notes))


def _dynamics(model, fit, inner, chunk, progress):
    """q-jets (m, inner+3, n) and rigid-body tau-jets (m, inner+1, n) along ``fit``: tau^(k) and
    q^(k+2) from the fit for order k (q, qd, qdd from the fit for tau)."""
    m, n = len(fit.t), len(fit.joint_names)
    qjet = np.empty((m, inner + 3, n))
    rigid = np.empty((m, inner + 1, n))
    for a in range(0, m, chunk):
        idx = np.arange(a, min(a + chunk, m))
        for k in range(inner + 1):
            jet = fit.jet(k, idx)
            if k == 0:
                qjet[idx, :3] = jet
            else:
                qjet[idx, k + 2] = jet[:, k + 2]
            rigid[idx, k] = time_derivatives(model, jet, k)[:, k]
        if progress is not None:
            progress(idx[-1] + 1, m)
    return qjet, rigid


@dataclass(frozen=True)
class TorqueErrors:
    """The estimated RMS error of tau^(k) per order and joint, (K+1, n) arrays in SI units of
    each order: ``total`` (of the reported tau^(k), friction included when used) and
    ``rigid`` (of the rigid-body part alone) over the samples farther than ``end_zone[k]``
    (s) from the ends of their segment; ``total_ends``, ``rigid_ends`` the same within those
    end zones, where a fit has data on one side only (larger: the ends of a recording, and
    both sides of a gap that splits it); ``draws``: synthetic recordings per order;
    ``samples``: samples carried through the dynamics; ``ends_estimated`` (K+1,) bool: the
    end-zone errors come from pseudo-ends (False: no segment was long enough for them, and
    ``total_ends``, ``rigid_ends`` hold the errors of the inside, which are smaller)."""

    total: np.ndarray
    rigid: np.ndarray
    total_ends: np.ndarray
    rigid_ends: np.ndarray
    end_zone: np.ndarray
    draws: int
    samples: int
    ends_estimated: Optional[np.ndarray] = None


def torque_errors(model, fit, order, friction=None, *, samples=ERROR_SAMPLES):
    """The error each tau^(k), k = 0..order, of the fit ``fit`` (:class:`~hod_dynamics.
    joint_fit.JointFit`) leaves: the synthetic recordings of :meth:`~hod_dynamics.joint_fit.
    JointFit.bootstrap` carried through the dynamics (and ``friction``, a
    :class:`~hod_dynamics.friction.FrictionModel`, when given) at up to ``samples`` evenly
    spread samples; per joint the RMS over those samples and the draws of tau^(k)(fit of a
    synthetic recording) - tau^(k)(estimated truth), over the samples away from the segments'
    ends; within the end zones, where the estimated truth is least sure, from the
    pseudo-ends of :meth:`~hod_dynamics.joint_fit.JointFit.end_trials` instead (from the
    synthetic recordings when no segment is long enough for them). Returns
    :class:`TorqueErrors`."""
    m, n = len(fit.t), len(fit.joint_names)
    total, rigid = np.zeros((order + 1, n)), np.zeros((order + 1, n))
    total_ends, rigid_ends, zones = np.zeros((order + 1, n)), np.zeros((order + 1, n)), np.zeros(order + 1)
    ends_estimated = np.zeros(order + 1, dtype=bool)

    def squared_errors(truth, jets, k):
        """(2, T, n) mean over ``jets`` of the squared error of tau^(k) against ``truth``, without
        and with friction."""
        true_rigid = time_derivatives(model, truth, k)[:, k]
        true_fric = None if friction is None else friction.jet(truth[:, 1:k + 2])[:, k]
        out = np.zeros((2, len(truth), n))
        for jet in jets:
            err = time_derivatives(model, jet, k)[:, k] - true_rigid
            out[0] += err ** 2
            if friction is not None:
                err = err + friction.jet(jet[:, 1:k + 2])[:, k] - true_fric
            out[1] += err ** 2
        return out / len(jets)

    draws, used = 0, 0
    for k in range(order + 1):
        idx = fit.error_samples(k, samples)
        if not len(idx):                  # every sample near an end: the pseudo-ends cannot be made
            idx = np.unique(np.linspace(0, m - 1, min(m, samples)).round().astype(int))
        draws = int(np.clip(np.ceil(4 * ERROR_SAMPLES / len(idx)), *ERROR_DRAWS))
        used = max(used, len(idx))
        truth, fits = fit.bootstrap(k, idx, draws)
        boot = squared_errors(truth, fits, k)
        ends = fit.in_end_zone(k, idx)
        inside = boot[:, ~ends].mean(axis=1) if (~ends).any() else boot.mean(axis=1)
        trials = fit.end_trials(k)
        near = squared_errors(trials[1], [trials[2]], k).mean(axis=1) if trials is not None else (
            boot[:, ends].mean(axis=1) if ends.any() else inside)
        rigid[k], total[k] = np.sqrt(inside)
        # an end has the errors of the inside (noise, missed content) and its own on top
        rigid_ends[k], total_ends[k] = np.sqrt(near + inside) if trials is not None else np.sqrt(near)
        zones[k] = fit.end_zone(k)
        ends_estimated[k] = trials is not None
    return TorqueErrors(total, rigid, total_ends, rigid_ends, zones, draws, used, ends_estimated)


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


def lock_notes(locked, recorded):
    """One note per joint of ``locked`` (``{joint: position}``, rad or m: the joints the model
    was built with locked) that the bag records (``recorded``: its joint names): the model
    holds the joint, its recorded motion is not used."""
    return [f"--lock {name}: the bag records this joint; its recorded motion is not used, the model holds it "
            f"at {position:g}" for name, position in locked.items() if name in recorded]


def source_notes(states):
    """Notes on the joint-state groups of ``states`` (:class:`~hod_dynamics.bag.JointStates`):
    those ignored and the alignment of the others (one line each)."""
    notes = [str(g) for g in states.ignored]
    for a in states.alignment:
        notes.append(f"joints {', '.join(a['joints'])} come in other messages ({a['messages']:,} at "
                     f"{a['rate']:.4g} Hz, sampled {1e3 * a['median_offset']:+.3g} ms from the others' samples): "
                     + a["method"])
    return notes


def _plausibility_notes(analysis, rigid_tau):
    """Notes on results that the model or the time base cannot explain (see the module
    docstring): a residual that a friction fit leaves, less its white noise (the effort
    sensor's: sample to sample), above RESIDUAL_NOTE of the measured range, efforts that follow
    the model at a scale far from 1, a duration that disagrees with the stamps, many clock
    steps."""
    notes = []
    eff = analysis.effort
    states = analysis.states
    if eff is not None:
        names = analysis.joint_names
        qd = analysis.result.qjet[:, 1]
        step = max(1, len(qd) // 50000)
        residual = eff - rigid_tau
        fric, stats = fit_friction(qd[::step], residual[::step], names)
        left = residual[::step] - fric.torque(qd[::step])
        bad = []
        for j, nm in enumerate(names):
            ok = np.isfinite(eff[:, j])
            span = float(np.ptp(eff[ok, j])) if ok.any() else 0.0
            after = stats[nm]["residual_rms_after"]
            if span > 0 and _unexplained(left[:, j]) > RESIDUAL_NOTE * span:
                model = analysis.result.taujet[ok, 0, j]
                slope = float(np.polyfit(model, eff[ok, j], 1)[0]) if np.ptp(model) > 0 else float("nan")
                bad.append(f"{nm} {after:.3g} N m = {100 * after / span:.0f} % of the measured range"
                           + (f", the efforts {slope:.2g} times the model's" if np.isfinite(slope)
                              and not 0.7 < slope < 1.4 else ""))
        if bad:
            notes.append(f"the model does not explain the measured efforts of {len(bad)} joints, even with "
                         f"friction fitted (residual rms: {'; '.join(bad)}): check that the description is the "
                         "recorded robot's (masses, inertias, joint axes, mounting and gravity), that the efforts "
                         "are joint torques with the model's sign (not motor currents), and the time base "
                         "(--time-base); the torques and their error estimates hold for the model as given")
    base = states.time_base
    if base is not None and len(states.t) > 1:
        stamps = np.sort(states.stamps_ns).astype(float) * 1e-9
        stepped = sum(s["jump"] for s in base.clock_steps)
        span = float(states.t[-1] - states.t[0])
        spread = stamps[-1] - stamps[0] - stepped
        if abs(span - spread) > max(10 * base.period, 0.01 * spread):
            notes.append(f"the sample times span {span:.4g} s but the header stamps {spread:.4g} s"
                         + (f" (after {len(base.clock_steps)} clock steps)" if base.clock_steps else "")
                         + ": the time base may have miscounted samples; compare with --time-base header")
        if len(base.clock_steps) > CLOCK_STEPS_NOTE:
            notes.append(f"{len(base.clock_steps)} clock steps found in the header stamps: if the recording PC's "
                         "clock did not step that often, the receive times are irregular; try --time-base header")
    return notes


def _unexplained(residual):
    """RMS of the part of ``residual`` (T,) that is not white noise: its RMS less (in power)
    the white noise's, estimated from the sample-to-sample differences (median absolute,
    robust to the residual's own steps); NaNs left out."""
    r = residual[np.isfinite(residual)]
    if len(r) < 3:
        return 0.0
    white = float(np.median(np.abs(np.diff(r)))) / 0.6745 / np.sqrt(2)
    return float(np.sqrt(max(np.mean(r ** 2) - white ** 2, 0.0)))


def _support_notes(analysis):
    """One note per derivative order that some joints' data do not support."""
    if analysis.errors is None:
        return []
    notes = []
    for k, row in enumerate(analysis.supported):
        weak = [nm for nm, ok in zip(analysis.joint_names, row) if not ok]
        if weak:
            notes.append(f"tau{k} is not supported by the data for joints {', '.join(weak)}: its estimated error "
                         f"exceeds {SUPPORT:.2g} of its RMS (error_estimate in summary.json; the plots mark it)")
    errors = analysis.errors
    short = [] if errors.ends_estimated is None else np.flatnonzero(~errors.ends_estimated)
    if len(short):
        longest = max(float(analysis.t[b - 1] - analysis.t[a]) for a, b in analysis.segments)
        notes.append(f"the longest segment ({longest:.3g} s) is shorter than {MIN_END_SEGMENT:g} end zones of the fit "
                     f"for {', '.join(f'tau{k} ({errors.end_zone[k]:.3g} s)' for k in short)}: the error within an end "
                     "zone of the segment ends is not estimated there (end_error_estimate repeats error_estimate; the "
                     "error near an end is many times larger); record longer to see it")
    return notes


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


def write_report(analysis, out, *, plots=True, derived_bag=True, samples=True, progress=None, title="",
                 timings=None):
    """Write ``samples.csv`` (unless ``samples`` is False), ``summary.json``, the PNG plots
    (``tau.png`` model vs measured, ``tau_dot.png``, ``tau_ddot.png`` up to the order,
    ``residual.png``, and with friction ``friction.png``, the friction curves),
    ``friction.yaml`` when the friction was fitted, and ``derived.mcap`` (see
    :func:`~hod_dynamics.bag.write_derived_bag`) into the folder ``out``. ``timings``: a dict
    to receive the seconds spent on each kind of output. Returns the list of paths written."""
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
    if not samples:
        return _write_others(analysis, out, plots, derived_bag, progress, title, lap)
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
    import os

    paths = [_write_summary(analysis, os.path.join(out, "summary.json"))]
    if analysis.friction_source == "fit":
        paths.append(write_friction_yaml(analysis, os.path.join(out, "friction.yaml")))
    lap("summary.json, friction.yaml")
    r = analysis.result
    if plots:
        from .plots import plot_friction_curves, plot_joint_series

        for k in range(r.taujet.shape[1]):
            paths.append(_plot_order(analysis, k, os.path.join(out, f"{_QUANTITIES[k][0]}.png"), title))
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


def _write_summary(analysis, path, notes=()):
    """Write ``summary.json`` (:meth:`BagAnalysis.summary` and ``joint_names``) to ``path``, with
    the note lines ``notes`` after the analysis's own. Returns ``path``."""
    import json

    summary = analysis.summary()
    summary["joint_names"] = list(analysis.joint_names)
    summary["notes"] = list(summary["notes"]) + list(notes)
    with open(path, "w", encoding="utf-8") as fh:
        json.dump(summary, fh, indent=2)
    return path


def _plot_order(analysis, k, path, title):
    """The plot of tau^(k): with friction and k >= 1 the rigid-body part and the friction part in
    two columns (the smooth Coulomb term's derivatives spike where a joint reverses, by up to
    coulomb * qdd^k / v_s^k, and would flatten the rest); the estimated error as a band (wider
    within the end zones), panels the data do not support marked."""
    from .plots import plot_joint_series

    r, errors = analysis.result, analysis.errors
    name, label, unit = _QUANTITIES[k]
    band = side = limits = None
    if errors is not None:
        near = _end_zone_mask(analysis.t, analysis.segments, errors.end_zone[k])
        limits = ~near
        friction_split = analysis.friction is not None and k > 0
        rows = (errors.rigid, errors.rigid_ends) if friction_split else (errors.total, errors.total_ends)
        band = np.where(near[:, None], rows[1][k], rows[0][k])
    series = r.taujet[:, k]
    if analysis.friction is not None and k > 0:
        series = analysis.rigid_taujet[:, k]
        side = r.taujet[:, k] - series
    unsupported = None if analysis.supported is None else ~analysis.supported[k]
    rigid = " of the rigid body" if side is not None else ""
    return plot_joint_series(analysis.t, series, analysis.joint_names, path, ylabel=f"{label}{rigid} [{unit}]",
                             title=title, reference=analysis.effort if k == 0 else None, band=band,
                             unsupported=unsupported, side=side, side_label=f"friction part [{unit}]",
                             limits_from=limits)


def _end_zone_mask(t, segments, zone):
    """(m,) bool: the samples within ``zone`` s of the ends of their segment."""
    near = np.zeros(len(t), dtype=bool)
    for lo, hi in segments:
        near[lo:hi] = (t[lo:hi] - t[lo] < zone) | (t[hi - 1] - t[lo:hi] < zone)
    return near


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


@dataclass(frozen=True)
class BagReport:
    """One bag analysed by :func:`analyze_bag`: the :class:`BagAnalysis`, the paths written
    (empty without ``out``), ``warnings``: one line per kind of library warning met while
    reading, fitting and writing (see :func:`warning_notes`; with ``out`` also in
    ``summary.json`` ``notes``, after the analysis's notes), and ``seconds`` spent on the fit
    and the dynamics."""

    analysis: BagAnalysis
    paths: tuple
    warnings: tuple
    seconds: float


def analyze_bag(path, model, out=None, *, joint_states=None, time_base="auto", start=None, end=None,
                trajectory_topic=None, order=2, actuators=None, smoothing=None, friction=None, plots=True,
                derived_bag=True, samples=True, progress=None, check=None, title=None):
    """Read the bag at ``path``, analyse its joint states with ``model`` and, with ``out``, write
    the report there: what ``hod-dynamics analyze-bag`` does, as a function. The joint-state
    messages read are those that carry the model's joints (see
    :func:`~hod_dynamics.bag.read_joint_states`).

    ``joint_states``: the JointState topic (None: the only one); ``time_base``: see
    :func:`~hod_dynamics.bag.read_joint_states`; ``start``, ``end``: s after the first sample
    (None: unbounded); ``trajectory_topic``: the JointTrajectory topic of the plan or None;
    ``order``, ``actuators``, ``smoothing``, ``friction``: as for
    :func:`analyze_joint_states`; ``plots``, ``derived_bag``, ``samples``: as for
    :func:`write_report`;
    ``progress``: None or ``progress(stage)`` returning the ``callback(done, total)`` of the
    stage ``"reading"``, ``"analysing"`` or ``"writing"``; ``check(states)``: called with the
    :class:`~hod_dynamics.bag.JointStates` before the analysis (e.g. to refuse a job that would
    not fit in memory); the note lines it returns, if any, come first in the analysis's notes
    (the printed summary and ``summary.json``); ``title``: of the plots (default: model and bag name). Library
    warnings never reach the caller: each kind becomes a line of :attr:`BagReport.warnings`
    (and of ``summary.json`` ``notes``).
    Returns :class:`BagReport`. Raises what :func:`~hod_dynamics.bag.read_joint_states`,
    :func:`analyze_joint_states` and ``check`` raise.
    """
    import os
    import time

    from .bag import read_joint_states, read_planned_positions

    stage = (lambda name: None) if progress is None else progress
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        states = read_joint_states(path, joint_states, joints=model.joint_names, time_base=time_base,
                                   progress=stage("reading"))
        states = states.select(start, end)
        checked = () if check is None else tuple(check(states) or ())
        planned = None if not trajectory_topic else read_planned_positions(path, trajectory_topic, states.t0_ns)
        clock = time.perf_counter()
        analysis = analyze_joint_states(model, states, order=order, actuators=actuators, smoothing=smoothing,
                                        planned=planned, progress=stage("analysing"), friction=friction)
        seconds = time.perf_counter() - clock
        if checked:
            analysis = replace(analysis, notes=checked + tuple(analysis.notes))
        paths = ()
        if out is not None:
            name = os.path.basename(os.path.normpath(os.fspath(path)))
            paths = tuple(write_report(analysis, out, plots=plots, derived_bag=derived_bag, samples=samples,
                                       progress=stage("writing"),
                                       title=f"{model.name}: {name}" if title is None else title))
    warned = tuple(warning_notes(caught))
    if warned and out is not None:
        # the warnings of the writing come after summary.json was written: written again, it
        # holds them too (every note the summary prints)
        _write_summary(analysis, os.path.join(out, "summary.json"), warned)
    return BagReport(analysis, paths, warned, seconds)
