"""The notes of a replay analysis: what a user should look at before trusting its numbers.

A result that was computed still gets a note (one line each, printed and in ``summary.json``)
when the model cannot explain the measured efforts even with friction fitted (another robot's
description, currents instead of torques), when the time base and the header stamps disagree,
when the data do not support an order, when a friction fit would lower the residual, and for
the library warnings met, the groups of messages ignored or aligned and the locked joints the
bag records.
"""

import numpy as np

from ..algorithms.friction import DEFAULT_VS, fit_friction
from ..recordings.joint_fit import MIN_END_SEGMENT
from .error_estimate import HIDDEN_SHARE, SUPPORT

RESIDUAL_NOTE = 0.10    # a residual (friction fitted, its white noise taken out) above this share of the
                        # measured range gets a note: a right model leaves under 2 %, inertias 30 % off under
                        # 6 %, another arm's description with the same joint names 16 to 70 %
CLOCK_STEPS_NOTE = 3    # more clock steps than this get a note


def warning_notes(caught):
    """One line per kind of library warning met while fitting (they never reach the terminal)."""
    kinds = {}
    for w in caught:
        key = (w.category.__name__, str(w.message).split("\n")[0][:120])
        kinds[key] = kinds.get(key, 0) + 1
    return [f"{count} x {cat}: {msg}" for (cat, msg), count in kinds.items()]


def fit_notes(names, fit, fit_stats, qd):
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


def friction_hint(names, qd, residual):
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
    """Notes on the joint-state groups of ``states`` (:class:`~hod_dynamics.recordings.bag.JointStates`):
    those ignored and the alignment of the others (one line each)."""
    notes = [str(g) for g in states.ignored]
    for a in states.alignment:
        notes.append(f"joints {', '.join(a['joints'])} come in other messages ({a['messages']:,} at "
                     f"{a['rate']:.4g} Hz, sampled {1e3 * a['median_offset']:+.3g} ms from the others' samples): "
                     + a["method"])
    return notes


def plausibility_notes(analysis, rigid_tau):
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


def support_notes(analysis):
    """One note per derivative order that some joints' data do not support."""
    if analysis.errors is None:
        return []
    notes = []
    errors = analysis.errors
    rms = analysis.signal_rms
    for k, row in enumerate(analysis.supported):
        weak = [nm for nm, ok in zip(analysis.joint_names, row) if not ok]
        if not weak:
            continue
        hidden = np.zeros(len(row), dtype=bool) if errors.hidden is None else errors.hidden[k] > HIDDEN_SHARE * rms[k]
        why = []
        if (errors.total[k] > SUPPORT * rms[k]).any():
            why.append(f"its estimated error exceeds {SUPPORT:.2g} of its RMS")
        if hidden.any():
            top = float(np.max(errors.hidden_hz[k][hidden]))
            why.append(f"motion under the position noise floor, which the samples cannot resolve (up to {top:.3g} Hz), "
                       f"could move it by more than {HIDDEN_SHARE:.2g} of its RMS (for "
                       f"{', '.join(nm for nm, h in zip(analysis.joint_names, hidden) if h)})")
        notes.append(f"tau{k} is not supported by the data for joints {', '.join(weak)}: {'; '.join(why)} "
                     "(error_estimate and unresolved_motion_bound in summary.json; the plots mark it)")
    short = [] if errors.ends_estimated is None else np.flatnonzero(~errors.ends_estimated)
    if len(short):
        longest = max(float(analysis.t[b - 1] - analysis.t[a]) for a, b in analysis.segments)
        notes.append(f"the longest segment ({longest:.3g} s) is shorter than {MIN_END_SEGMENT:g} end zones of the fit "
                     f"for {', '.join(f'tau{k} ({errors.end_zone[k]:.3g} s)' for k in short)}: the error within an end "
                     "zone of the segment ends is not estimated there (end_error_estimate repeats error_estimate; the "
                     "error near an end is many times larger); record longer to see it")
    return notes
