"""Replay analysis of recorded joint states: model torques and their time derivatives against
the measured efforts, how large an error the data leave in each, and joint friction identified
from them.

1. Joint states (:mod:`hod_dynamics.recordings.bag`): the groups of messages that carry the model's
   joints, each on its time base (:mod:`hod_dynamics.recordings.timebase`: header-stamp order, the
   controller's regular grid recovered from jittered stamps, gaps kept as gaps).
2. Fit (:mod:`hod_dynamics.recordings.joint_fit`): segments between gaps longer than
   :data:`~hod_dynamics.recordings.timebase.GAP_SPLIT` periods (shorter ones are bridged), one fit per
   order k for q^(k+2) (the smoothing level chosen for that derivative against the positions'
   own noise), hence tau^(0..order) from the dynamics (order <= 2: tau'' needs q^(4)).
3. Friction (:mod:`hod_dynamics.algorithms.friction`): ``friction="fit"`` fits, per joint, coulomb,
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

from ..algorithms.dispatch import announce_fit_compiles
from ..algorithms.dynamics import time_derivatives
from ..algorithms.friction import FrictionModel, fit_friction, load_friction
from ..arrays import whole_number
from ..errors import InputError, ModelError
from ..feedforward.actuators import load_actuators
from ..feedforward.trajectory_feedforward import FeedforwardResult
from ..recordings.joint_fit import fit_joint_states
from ..recordings.timebase import GAP_SPLIT
from .notes import fit_notes, friction_hint, plausibility_notes, source_notes, support_notes, warning_notes
from .error_estimate import HIDDEN_SHARE, SUPPORT, TorqueErrors, torque_errors

MAX_ORDER = 2       # tau'' needs q^(4), whose error the data already make large
MIN_SAMPLES = 20
CHUNK = 50000       # samples per batch of the dynamics (bounds the working memory)


@dataclass(frozen=True)
class BagAnalysis:
    """Model results at the m recorded samples, n model joints (model order).

    ``states``: the recorded :class:`~hod_dynamics.recordings.bag.JointStates` (all recorded joints);
    ``columns`` (n,): their column of each model joint; ``result``: the
    :class:`FeedforwardResult` (qjet (m, order+3, n) of the fit, taujet (m, order+1, n)
    including friction when a friction model is used, motor references with actuators);
    ``planned`` (m, n) planned positions (linear interpolation of the recorded plan) or None;
    ``friction``: the :class:`~hod_dynamics.algorithms.friction.FrictionModel` used or None;
    ``friction_source``: ``"fit"``, ``"urdf"``, the YAML file's name, or ``"given"`` (a
    :class:`~hod_dynamics.algorithms.friction.FrictionModel`, a mapping or YAML text);
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
        """(order+1, n) estimated RMS error of each reported tau^(k) (SI units), or None: the
        bootstrap's (:attr:`TorqueErrors.total`), or the bound of what the samples cannot
        resolve where that bound exceeds HIDDEN_SHARE of the signal and is larger."""
        if self.errors is None:
            return None
        return np.where(self._hidden_too_large(), np.maximum(self.errors.total, self.errors.hidden),
                        self.errors.total)

    @property
    def signal_rms(self):
        """(order+1, n) RMS of each reported tau^(k)."""
        return np.sqrt(np.mean(self.result.taujet ** 2, axis=0))

    @property
    def supported(self):
        """(order+1, n) bool: the estimated error of tau^(k) is at most SUPPORT (a third) of its
        RMS, and motion the samples cannot resolve moves it by at most HIDDEN_SHARE (half) of
        it (None without an estimate)."""
        if self.errors is None:
            return None
        return (self.errors.total <= SUPPORT * self.signal_rms) & ~self._hidden_too_large()

    def _hidden_too_large(self):
        hidden = self.errors.hidden
        if hidden is None:
            return np.zeros(self.errors.total.shape, dtype=bool)
        return hidden > HIDDEN_SHARE * self.signal_rms

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
                entry["error_estimate"] = per_order(self.error_estimate)
                entry["unresolved_motion_bound"] = per_order(self.errors.hidden)
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
                          "carried through the dynamics; near segment ends from pseudo-ends; where larger "
                          "than half the signal, the bound of motion under the noise floor (unresolved_motion_"
                          "bound: the largest sinusoid the samples cannot tell from their noise, up to 5 times "
                          "the fit's bandwidth, at most the Nyquist frequency, through the mass matrix)",
                "draws": int(self.errors.draws), "samples": int(self.errors.samples),
                "end_zone": {f"tau{k}": float(self.errors.end_zone[k]) for k in range(order + 1)},
                "end_error_estimated": {f"tau{k}": bool(self.errors.ends_estimated[k]) for k in range(order + 1)},
                "supported_when_error_below_share_of_rms": SUPPORT,
                "supported_when_unresolved_bound_below_share_of_rms": HIDDEN_SHARE}
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
                         chunk=CHUNK, friction=None, time_base=None, error_estimate=True, ready=None):
    """Fit the recorded positions of ``states`` and evaluate the model along the fit.

    ``model``: :class:`RobotModel`; ``states``: :class:`~hod_dynamics.recordings.bag.JointStates` (extra
    joints and joint-state groups without model joints are ignored; every model joint must
    be recorded); ``order`` 0..2; ``actuators`` as for :func:`feedforward`; ``smoothing``:
    noise standard deviation of the positions (rad or m, scalar or (n,) in model order) for
    the choice of the smoothing, None: the noise found per joint and segment, 0
    interpolates; ``planned``: optional ``(joint_names, t, positions)`` of the plan (see
    :func:`~hod_dynamics.recordings.bag.read_planned_positions`); ``progress(done, total)``; ``chunk``:
    samples per batch of the dynamics; ``friction``: None (rigid body only), ``"fit"``
    (identified from the efforts, see :func:`fit_friction`), or anything
    :func:`~hod_dynamics.algorithms.friction.load_friction` takes (``"urdf"``, a YAML path, a mapping,
    a :class:`~hod_dynamics.algorithms.friction.FrictionModel`); ``time_base``: None keeps the times of
    ``states``, else a mode of :func:`~hod_dynamics.recordings.timebase.resolve_time_base` chosen again;
    ``error_estimate``: estimate the error of every tau^(k) (see :func:`torque_errors`; about
    as long again as the rest); ``ready(analysis, part)``: called as parts of the result become
    final, for work that can start before the rest (analyze-bag draws its plots meanwhile):
    part ``"dynamics"`` with the analysis as it will be returned but without ``errors`` and
    ``notes``, then part k (int) after the error estimate of tau^(k), ``errors`` final for the
    orders up to k. Returns :class:`BagAnalysis`. Raises :class:`InputError` for joints no message carries, too
    few samples, an order above 2, ``friction="fit"`` without efforts, infinite positions or
    efforts, or a bad friction model.
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
    _check_infinite(states, columns, model.joint_names)
    m = len(states.t)
    if m < MIN_SAMPLES:
        raise InputError(f"only {m} joint state samples; at least {MIN_SAMPLES} are needed (widen "
                         "--start/--end or check the topic)")
    acts = None if actuators is None else load_actuators(actuators, model)
    inner = max(order, 2) if acts is not None and acts.elastic.any() else order
    notes = []
    announce_fit_compiles()
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        fit = fit_joint_states(states, model.joint_names, inner, smoothing=smoothing,
                               continuous=[ty == "continuous" for ty in model.joint_types])
        qjet, rigid = _dynamics(model, fit, inner, chunk, progress)
    fit_stats = None
    if friction == "fit":
        fric, fit_stats = fit_friction(qjet[:, 1], states.effort[:, columns] - rigid[:, 0], model.joint_names)
    taujet = rigid if fric is None else rigid + fric.jet(qjet[:, 1:inner + 2])
    fit_summary = fit.summary()
    result = dict(joint_names=tuple(model.joint_names), t=states.t, qjet=qjet[:, :order + 3],
                  taujet=taujet[:, :order + 1], joint_types=tuple(model.joint_types))
    if acts is not None:
        thetajet, u = acts.motor_references(states.t, qjet, taujet)
        result.update(thetajet=thetajet, u=u, elastic=acts.elastic, gear_ratio=acts.gear_ratio)
    analysis = BagAnalysis(states, columns, FeedforwardResult(**result), _planned_at(model, planned, states.t),
                           fric, source if fric is not None else None, fit_stats,
                           None if fric is None else rigid[:, 0].copy(), tuple(fit.segments), fit_summary, (),
                           np.array([ty == "continuous" for ty in model.joint_types]), None,
                           None if fric is None else rigid[:, :order + 1].copy())
    if ready is not None:
        ready(analysis, "dynamics")
    with warnings.catch_warnings(record=True) as more:
        warnings.simplefilter("always")
        done = None if ready is None else (lambda k, partial: ready(replace(analysis, errors=partial), k))
        errors = torque_errors(model, fit, order, fric, done=done) if error_estimate else None
    notes += warning_notes(caught + more)
    notes += fit_notes(model.joint_names, fit_summary, fit_stats, qjet[:, 1])
    if friction is None and states.effort is not None:
        notes += friction_hint(model.joint_names, qjet[:, 1], states.effort[:, columns] - rigid[:, 0])
    analysis = replace(analysis, errors=errors)
    notes = source_notes(states) + notes + plausibility_notes(analysis, rigid[:, 0]) + support_notes(analysis)
    return replace(analysis, notes=tuple(notes))


def _check_infinite(states, columns, names):
    """InputError naming the first model joint whose recorded position or effort is infinite
    (a sensor's overflow or a driver's placeholder, not a measurement: every residual and
    friction fit would be inf or NaN). NaN efforts stay: they mark messages without them."""
    for field in ("position", "effort"):
        values = getattr(states, field)
        if values is None:
            continue
        bad = np.isinf(values[:, columns])
        if bad.any():
            j = int(np.flatnonzero(bad.any(axis=0))[0])
            rows = np.flatnonzero(bad[:, j])
            raise InputError(f"{field} of joint '{names[j]}' on {states.topic} is infinite at {len(rows):,} of "
                             f"{len(states.t):,} samples (the first {states.t[rows[0]]:.6g} s after the first "
                             f"sample): not a measurement; record finite values, or analyse another part "
                             "(--start/--end)")


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


def _planned_at(model, planned, t):
    if planned is None:
        return None
    names, tp, qp = planned
    try:
        cols = model.joint_order(names, allow_extra=True)
    except ModelError as exc:
        raise InputError(f"the planned trajectory does not match model '{model.name}' ({exc})") from None
    return np.column_stack([np.interp(t, tp, qp[:, c]) for c in cols])


