"""Identification of inertial and friction parameters from recorded joint states and efforts.

1. Data (:mod:`hod_dynamics.replay.analysis`): each recording is fitted exactly as the replay
   analysis does it (time base, gaps, per-joint smoothing level), which gives q, qd, qdd at
   the samples; the measured efforts are the targets.
2. Regression: ``tau = Y_b(q, qd, qdd) beta`` with the base regressor of
   :mod:`hod_dynamics.identification.base_parameters` (friction columns appended with ``friction=True``). The
   samples are reduced, per recording, joint and time block (the cross-validation's folds),
   to the triangular factor of ``[Y_b | tau]``, so memory stays bounded however long the
   recordings, and any parameter set's residual on any of them follows from it. Rows are
   weighted by each joint's noise level (weighted least squares as in Gautier, "Dynamic
   identification of robots with power model", 1997).
3. Estimate:

   - ``"ols"``: the weighted least-squares base parameters; the standard parameters are the
     prior's plus the smallest change (Euclidean) that gives them. They may not belong to any
     real body.
   - ``"consistent"`` (default): the convex program of
     :mod:`hod_dynamics.identification.program`: the weighted squared residual plus a weight
     times the log-determinant divergence of every body's pseudo-inertia from a reference
     made of the prior, over positive definite pseudo-inertias, and, given plausibility
     :class:`~hod_dynamics.identification.bounds.Bounds`, with every body's mass inside its
     bounding ellipsoid and within its mass bounds (and the total within its own). The
     weight is given, or chosen by cross-validation over contiguous blocks of the training
     recordings (:mod:`hod_dynamics.identification.cross_validation`).

4. Uncertainty: standard errors of the base parameters from the weighted least-squares
   covariance ``s^2 (W_b^T W_b)^-1``, inflated by the residual's lag-one autocorrelation (the
   samples of a smoothed recording are not independent); the condition number of the base
   regressor.
5. The prior's own friction, fitted on the training recordings only (the prior column of the
   validation is then held out like the identified one).

Recordings that cannot determine some combination (no motion at all, a joint that never
moves, a joint that moves in one direction only, too few samples) raise :class:`InputError`
naming those base parameters, before anything is inverted.

The outputs (residuals, identification.json, the URDF, the plots) are in
:mod:`hod_dynamics.identification.report`.
"""

from dataclasses import dataclass
from typing import Optional, Tuple

import numpy as np
import scipy.linalg

from ..algorithms.friction import DEFAULT_VS, FrictionModel
from ..algorithms.regressors import regressor
from ..errors import InputError
from ..kernels.backend import single_threaded_blas
from ..model.inertia import consistency_margin
from ..model.robot_model import body_names, inertial_parameters
from .base_parameters import BaseParameters, base_parameters
from .cross_validation import FOLDS, WEIGHTS, check_weights, cross_validate, triangular

METHODS = ("consistent", "ols")
REGULARIZATION = "cv"         # the default: the weight chosen by cross-validation
UNIDENTIFIABLE = 1e-7         # relative singular value of the normalised base regressor below which
#                               a direction counts as undetermined by the data
CHUNK = 4096                  # samples per block of the regressor
MIN_ROWS_PER_PARAMETER = 10   # joint samples per base parameter, at least
EDGE_SECONDS = 0.1            # left out at both ends of every fitted segment
OUTLIER = 6.0                 # a residual beyond this many times its joint's level is a glitch, left out
PRIOR_FLOOR = 1e-6            # a prior pseudo-inertia's eigenvalues are kept above this share of its largest
STILL = 1e-3                  # rad (m): a joint whose recorded range is below this does not move


@dataclass
class Recording:
    """One recording reduced for the regression: ``blocks`` (K, n, r+1, r+1) the triangular
    factor of ``[Y_b | tau]`` of each time block's and joint's samples (unweighted; block k
    the k-th of K equal spans of the recording's time), ``block_counts`` (K, n) samples used
    per block and joint, ``factors`` (n, r+1, r+1) and ``counts`` (n,) the same over the whole
    recording, ``name``; ``analysis`` the :class:`~hod_dynamics.replay.analysis.BagAnalysis` it
    came from."""

    name: str
    analysis: object
    factors: np.ndarray
    counts: np.ndarray
    model: object = None
    blocks: Optional[np.ndarray] = None
    block_counts: Optional[np.ndarray] = None

    def residual_sum_of_squares(self, beta):
        """(n,) sum over the samples of (Y_b beta - tau)^2 per joint."""
        x = np.append(beta, -1.0)
        return np.einsum("jrc,c->jr", self.factors, x).__pow__(2).sum(axis=1)


@dataclass(frozen=True, eq=False)
class Identification:
    """The result of :func:`identify`.

    ``model``: the identified :class:`~hod_dynamics.RobotModel` (the prior's kinematics and
    names, new inertias); ``friction``: the identified
    :class:`~hod_dynamics.algorithms.friction.FrictionModel` or None; ``parameters`` (n_bodies, 10) its
    inertial parameters; ``prior`` (n_bodies, 10) the prior's; ``base``: the
    :class:`~hod_dynamics.identification.base_parameters.BaseParameters`; ``beta``, ``beta_se`` (r,) the
    identified base parameters and their standard errors; ``beta_prior`` (r,) the prior's
    (friction from the prior URDF's ``<dynamics>``); ``noise`` (n,) the residual standard
    deviation of each joint (N m) used as its weight; ``condition_number`` of the base
    regressor (and ``condition_number_scaled`` with unit-norm columns); ``method``;
    ``regularization`` the weight of the divergence used; ``cross_validation`` the
    :class:`~hod_dynamics.identification.cross_validation.CrossValidation` that chose it (None
    when given); ``bounds`` the plausibility bounds (None: none); ``prior_friction`` the
    prior's friction fitted on the identification recordings; ``inflation`` the variance
    factor of the residual's autocorrelation; ``recordings``: the :class:`Recording` of each
    identification run; ``notes``.
    """

    model: object
    friction: Optional[FrictionModel]
    parameters: np.ndarray
    prior: np.ndarray
    base: BaseParameters
    beta: np.ndarray
    beta_se: np.ndarray
    beta_prior: np.ndarray
    noise: np.ndarray
    condition_number: float
    condition_number_scaled: float
    method: str
    regularization: float
    recordings: Tuple[Recording, ...]
    notes: Tuple[str, ...] = ()
    v_s: float = DEFAULT_VS
    cross_validation: object = None
    bounds: object = None
    prior_friction: Optional[FrictionModel] = None
    inflation: float = 1.0
    fixed: Optional[np.ndarray] = None

    @property
    def consistency(self):
        """(n_bodies,) :func:`~hod_dynamics.model.inertia.consistency_margin` of each identified body."""
        return consistency_margin(self.parameters)

    def whitened_factor(self):
        """(r+1, r+1) the triangular factor of every identification sample's row, each joint's
        divided by its noise level."""
        return _stacked(self.recordings, self.base.rank, 1.0 / self.noise)


# -- data ---------------------------------------------------------------------------------------
def reduce_recording(model, analysis, base, *, friction=True, v_s=DEFAULT_VS, name="", chunk=CHUNK, exclude=None,
                     blocks=FOLDS):
    """:class:`Recording` of one analysed recording (:func:`~hod_dynamics.analyze_joint_states`
    of ``model``): the base regressor at its fitted q, qd, qdd and its measured efforts,
    reduced per time block (``blocks`` of equal span) and joint by QR. Left out: samples
    without an effort, the first and last EDGE_SECONDS of every fitted segment (where a
    smoothing fit's accelerations are least accurate) and those ``exclude`` (m, n) marks."""
    effort = analysis.effort
    if effort is None:
        raise InputError(f"recording {name or analysis.states.topic}: the joint states on {analysis.states.topic} "
                         "carry no efforts; identification needs the measured joint torques")
    qjet = analysis.result.qjet
    n, r = model.n_dof, base.rank
    usable = np.isfinite(effort) & ~segment_edges(analysis)[:, None]
    if exclude is not None:
        usable &= ~exclude
    t = np.asarray(analysis.t, dtype=float)
    span = max(t[-1] - t[0], 1e-300) if len(t) else 1.0
    block_of = np.minimum((blocks * (t - t[0]) / span).astype(int), blocks - 1) if len(t) else np.zeros(0, int)
    factors = np.zeros((blocks, n, r + 1, r + 1))
    counts = np.zeros((blocks, n), dtype=int)
    for a in range(0, len(qjet), chunk):
        b = min(a + chunk, len(qjet))
        Y = base.columns(regressor(model, qjet[a:b, 0], qjet[a:b, 1], qjet[a:b, 2], friction=friction, v_s=v_s))
        for k in np.unique(block_of[a:b]):
            inside = block_of[a:b] == k
            for j in range(n):
                ok = usable[a:b, j] & inside
                block = np.column_stack([Y[ok, j], effort[a:b][ok, j]])
                counts[k, j] += int(ok.sum())
                factors[k, j] = triangular(np.vstack([factors[k, j], block]), r + 1)
    whole = np.stack([triangular(factors[:, j].reshape(-1, r + 1), r + 1) for j in range(n)])
    return Recording(name, analysis, whole, counts.sum(axis=0), model, factors, counts)


def segment_edges(analysis):
    """(m,) bool: the samples within EDGE_SECONDS of the start or end of a fitted segment
    (at most a tenth of the segment at each end)."""
    t = analysis.t
    edge = np.zeros(len(t), dtype=bool)
    for lo, hi in (analysis.segments or ((0, len(t)),)):
        span = min(EDGE_SECONDS, 0.1 * (t[hi - 1] - t[lo]))
        edge[lo:hi] |= (t[lo:hi] < t[lo] + span) | (t[lo:hi] > t[hi - 1] - span)
    return edge


# -- estimation ---------------------------------------------------------------------------------
def identify(model, analyses, *, method="consistent", friction=True, v_s=DEFAULT_VS, regularization=REGULARIZATION,
             bounds=None, folds=FOLDS, weights=WEIGHTS, names=None, fixed_parts=None, progress=None):
    """Identify the inertial (and friction) parameters of ``model`` from recordings.

    ``analyses``: :class:`~hod_dynamics.replay.analysis.BagAnalysis` of each identification
    recording, made with ``model`` (:func:`~hod_dynamics.analyze_joint_states`, ``order=0``
    is enough); ``model`` is the prior. ``method``: ``"consistent"`` or ``"ols"`` (see the
    module docstring); ``friction``: identify viscous, Coulomb and offset friction per joint
    (``v_s`` rad/s the Coulomb transition velocity); ``regularization``: the weight (>= 0) of
    the divergence from the prior (``"consistent"``), or ``"cv"`` (default) for the one of
    ``weights`` that predicts best in ``folds``-fold cross-validation over contiguous time
    blocks of the recordings; ``bounds``: plausibility
    :class:`~hod_dynamics.identification.bounds.Bounds` (``plausibility_bounds``; None: physical
    consistency only); ``names``: a label per recording, each a different one (they key the
    outputs); ``fixed_parts`` (n_bodies, 10): parameters within each body that stay as they
    are (links attached by locked joints, which keep their own inertia): the consistency
    condition then applies to the rest; ``progress(message)``: called with a line per stage.
    Returns :class:`Identification`. Raises :class:`InputError` for recordings without
    efforts or motion, too few samples, combinations the recordings do not determine (named),
    bounds that contradict each other, and when the consistent method needs cvxpy.
    """
    with single_threaded_blas():
        return _identify(model, analyses, method, friction, v_s, regularization, bounds, folds, weights, names,
                         fixed_parts, progress)


def _identify(model, analyses, method, friction, v_s, regularization, bounds, folds, weights, names, fixed_parts,
              progress):
    """:func:`identify`, its dense linear algebra on one BLAS thread."""
    if method not in METHODS:
        raise InputError(f"method must be one of {METHODS}, got {method!r}")
    if not (isinstance(regularization, str) and regularization == "cv"):
        if isinstance(regularization, str) or not (np.isfinite(regularization) and regularization >= 0):
            raise InputError(f"regularization must be a number >= 0 or 'cv', got {regularization!r}")
    weights, folds = check_weights(weights, folds)
    if model.floating:
        raise InputError(f"model '{model.name}' has a floating base: identification from joint states needs "
                         "a fixed base (its base motion is not recorded in joint states)")
    analyses = list(analyses)
    if not analyses:
        raise InputError("identification needs at least one recording")
    names = list(names) if names is not None else [f"recording {k + 1}" for k in range(len(analyses))]
    check_names(names, len(analyses), "names")
    prior = inertial_parameters(model)
    fixed = np.zeros_like(prior) if fixed_parts is None else np.asarray(fixed_parts, dtype=float)
    if bounds is not None:
        from .bounds import check_bounds

        check_bounds(bounds, fixed)
    say = progress or (lambda message: None)
    base = base_parameters(model, friction=friction)
    recordings = []
    for name, analysis in zip(names, analyses):
        say(f"regressor of {name} ({len(analysis.t)} samples)")
        recordings.append(reduce_recording(model, analysis, base, friction=friction, v_s=v_s, name=name, blocks=folds))
    _check_motion(model, recordings, base)
    prior_dynamics = np.stack([model.damping, model.friction, np.zeros(model.n_dof)], axis=-1).ravel()
    prior_full = np.concatenate([prior.ravel(), prior_dynamics if friction else []])
    beta, cov, noise, rows, inflation = _weighted_least_squares(recordings, base, friction, v_s)
    notes = []
    glitches = [np.abs(residual_series(rec, base, beta, friction, v_s)) > OUTLIER * noise for rec in recordings]
    dropped = sum(int(g.sum()) for g in glitches)
    if dropped:  # a sensor glitch or a dropped effort read as zero would pull every parameter
        recordings = [reduce_recording(model, rec.analysis, base, friction=friction, v_s=v_s, name=rec.name,
                                       exclude=g, blocks=folds) for rec, g in zip(recordings, glitches)]
        beta, cov, noise, rows, inflation = _weighted_least_squares(recordings, base, friction, v_s)
        notes.append(f"{dropped} joint samples left out as outliers (residual beyond {OUTLIER:g} times its joint's "
                     "level after a first fit)")
    validation = None
    if method == "ols":
        full = prior_full + np.linalg.pinv(base.K) @ (beta - base.K @ prior_full)
        gamma = float("nan")
    else:
        from .program import ConvexFit

        program = ConvexFit(base.K, prior, len(prior_full) - prior.size, fixed, bounds)
        gamma = regularization
        if regularization == "cv":
            blocks = np.stack([_stacked(recordings, base.rank, 1.0 / noise, block=k) for k in range(folds)])
            counts = np.array([sum(int(rec.block_counts[k].sum()) for rec in recordings) for k in range(folds)])
            validation = cross_validate(program, blocks, counts, weights, say)
            gamma = validation.chosen
        say(f"consistent fit (semidefinite program, weight {gamma:g})")
        full = program.solve(_stacked(recordings, base.rank, 1.0 / noise), rows, gamma)
        beta = base.K @ full
    pi = full[:prior.size].reshape(prior.shape)
    fric = None
    if friction:
        f = full[prior.size:].reshape(-1, 3)
        fric = FrictionModel(model.joint_names, coulomb=f[:, 1], viscous=f[:, 0], offset=f[:, 2],
                             v_s=np.full(model.n_dof, v_s))
    margin = consistency_margin(pi - fixed)
    bad = [body_names(model)[b] for b in np.flatnonzero(margin <= 0)]
    if bad:
        notes.append(f"bodies {bad} are not physically consistent (pseudo-inertia not positive definite); "
                     "tools that check inertias will refuse the URDF; use the consistent method")
    if friction and np.any((fric.coulomb < 0) | (fric.viscous < 0)):
        neg = [nm for j, nm in enumerate(model.joint_names) if fric.coulomb[j] < 0 or fric.viscous[j] < 0]
        notes.append(f"joints {neg}: negative Coulomb or viscous friction identified; the friction loader refuses "
                     "negative coefficients, so friction.yaml holds them clipped to 0")
        fric = FrictionModel(model.joint_names, coulomb=np.maximum(fric.coulomb, 0), viscous=np.maximum(fric.viscous, 0),
                             offset=fric.offset, v_s=fric.v_s)
    se = np.sqrt(np.clip(np.diag(cov), 0.0, None))
    cond, cond_scaled = _condition_numbers(recordings, base.rank)
    negative = pi[:, 0] < 0
    if negative.any():
        notes.append(f"bodies {[body_names(model)[b] for b in np.flatnonzero(negative)]}: negative mass "
                     "identified; the identified model holds no inertia for them")
    identified = model.with_inertial_parameters(np.where(negative[:, None], 0.0, pi))
    return Identification(identified, fric, pi, prior, base, beta, se, base.K @ prior_full, noise, cond, cond_scaled,
                          method, float(gamma), tuple(recordings), tuple(notes), float(v_s), validation, bounds,
                          prior_friction(model, [rec.analysis for rec in recordings], v_s), inflation, fixed)


def prior_friction(model, analyses, v_s=DEFAULT_VS):
    """The friction (:class:`~hod_dynamics.algorithms.friction.FrictionModel`) that best
    explains the analysed recordings' efforts beyond the rigid body of ``model``, fitted on
    them together (the samples within EDGE_SECONDS of a segment's ends left out): the prior's
    own friction, from the identification recordings only."""
    from ..algorithms.dynamics import inverse_dynamics
    from ..algorithms.friction import fit_friction

    qd, residual = [], []
    for a in analyses:
        q = a.result.qjet
        rigid = a.rigid_tau if getattr(a, "rigid_tau", None) is not None else \
            inverse_dynamics(model, q[:, 0], q[:, 1], q[:, 2])
        e = np.array(a.effort - rigid, dtype=float)
        e[segment_edges(a)] = np.nan
        qd.append(q[:, 1])
        residual.append(e)
    return fit_friction(np.vstack(qd), np.vstack(residual), model.joint_names, v_s)[0]


def _check_motion(model, recordings, base):
    """InputError when no joint moves in the recordings: nothing but the gravity torques of
    one posture, and most base parameters undetermined (named)."""
    q = np.vstack([rec.analysis.result.qjet[:, 0] for rec in recordings])
    moved = np.ptp(q, axis=0) if len(q) else np.zeros(model.n_dof)
    if np.all(moved < STILL):
        r = base.rank
        W = np.vstack([rec.factors[j, :r, :r] for rec in recordings for j in range(model.n_dof)])
        names = _undetermined(W, base)
        raise InputError(f"the recordings hold no motion (every joint's range below {STILL:g} rad): {len(names)} of "
                         f"the {r} base parameters are undetermined: {_listed(names)}; record an excitation "
                         "trajectory (hod-dynamics excite)")


def _listed(names, shown=8):
    """'a, b, ... and M more' of a list of names."""
    return ", ".join(names[:shown]) + (f" and {len(names) - shown} more" if len(names) > shown else "")


def check_names(names, count, argument):
    """InputError unless ``names`` holds ``count`` different labels (they key the outputs: two
    recordings of one name would leave one of them out)."""
    if len(names) != count:
        raise InputError(f"{argument}: {len(names)} names for {count} recordings")
    twice = sorted({str(nm) for nm in names if names.count(nm) > 1})
    if twice:
        raise InputError(f"{argument}: every recording needs a name of its own, got {', '.join(twice)} more than "
                         "once")


def _stacked(recordings, r, weights, block=None):
    """The triangular factor (r+1, r+1) of all recordings' rows (of time block ``block`` only,
    when given), joint j's weighted by weights[j]."""
    parts = [(rec.factors[j] if block is None else rec.blocks[block, j]) * weights[j]
             for rec in recordings for j in range(len(weights))]
    return triangular(np.vstack(parts), r + 1)


def _weighted_least_squares(recordings, base, friction, v_s):
    """(beta (r,), covariance (r, r), noise (n,) per joint, rows, inflation) by two passes:
    ordinary least squares gives each joint's residual level, whose inverse weights its rows in
    the second. The covariance is inflated by the residual's autocorrelation (``inflation``,
    see :func:`_inflation`). InputError, before any inverse, naming the base parameters the
    recordings do not determine."""
    r = base.rank
    n = recordings[0].factors.shape[0]
    rows = sum(int(rec.counts.sum()) for rec in recordings)
    if rows < MIN_ROWS_PER_PARAMETER * r:
        raise InputError(f"the recordings hold {rows} joint samples with an effort, too few for the {r} base "
                         f"parameters to identify (at least {MIN_ROWS_PER_PARAMETER * r}); record longer (tens of "
                         "seconds of excitation)")
    beta = _solve(_stacked(recordings, r, np.ones(n)), r)
    counts = sum(rec.counts for rec in recordings)
    rss = sum(rec.residual_sum_of_squares(beta) for rec in recordings)
    noise = np.sqrt(rss / np.maximum(counts - r / n, 1.0))
    noise = np.maximum(noise, 1e-6 * max(noise.max(), 1e-12))    # a joint fitted exactly keeps a weight
    R = _stacked(recordings, r, 1.0 / noise)
    _check_excitation(R[:r, :r], base)
    beta = _solve(R, r)
    s2 = R[r, r] ** 2 / max(rows - r, 1)
    inv = scipy.linalg.solve_triangular(R[:r, :r], np.eye(r))
    inflation = _inflation(recordings, base, beta, friction, v_s, noise)
    return beta, s2 * (inv @ inv.T) * inflation, noise, rows, inflation


def _solve(R, r):
    """beta minimising |R [beta; -1]|, least-norm where R[:r, :r] is singular."""
    return np.linalg.lstsq(R[:r, :r], R[:r, r], rcond=1e-13)[0]


def _inflation(recordings, base, beta, friction, v_s, noise):
    """The variance factor (1 + rho) / (1 - rho) of residuals with lag-one autocorrelation rho
    (of the weighted residuals, pooled over joints and recordings, clipped to [0, 0.98]): a
    smoothed recording's neighbouring samples share errors, so they carry less information
    than independent ones would."""
    num = den = 0.0
    for rec in recordings:
        e = residual_series(rec, base, beta, friction, v_s) / noise
        a = rec.analysis
        for lo, hi in (a.segments or ((0, len(e)),)):
            x, y = e[lo:hi - 1], e[lo + 1:hi]
            ok = np.isfinite(x) & np.isfinite(y)
            num += float(np.sum(x[ok] * y[ok]))
            den += float(np.sum(x[ok] ** 2))
    rho = min(max(num / den, 0.0), 0.98) if den > 0 else 0.0
    return (1.0 + rho) / (1.0 - rho)


def residual_series(rec, base, beta, friction, v_s, chunk=CHUNK):
    """(m, n) base regressor times beta minus the measured effort of one recording (NaN where
    no effort was recorded)."""
    a = rec.analysis
    q, effort = a.result.qjet, a.effort
    out = np.empty(effort.shape)
    model = rec.model
    for lo in range(0, len(q), chunk):
        hi = min(lo + chunk, len(q))
        Y = base.columns(regressor(model, q[lo:hi, 0], q[lo:hi, 1], q[lo:hi, 2], friction=friction, v_s=v_s))
        out[lo:hi] = Y @ beta - effort[lo:hi]
    return out


def _check_excitation(W, base):
    """InputError naming the base parameters the whitened factor W (r, r) does not determine."""
    names = _undetermined(W, base)
    if names:
        raise InputError(f"the recordings do not excite {len(names)} base parameters enough to identify them: "
                         f"{_listed(names)} (a joint that does not move, or moves in one direction only; record an excitation "
                         "trajectory, e.g. from hod-dynamics excite, or leave friction out with --no-friction)")


def _undetermined(W, base):
    """The names of the base parameters in the directions W (rows, r) does not determine: its
    columns of zero norm, else those that weigh in its singular vectors of relative singular
    value below UNIDENTIFIABLE (columns scaled to unit norm)."""
    scale = np.linalg.norm(W, axis=0)
    dead = np.flatnonzero(scale <= 1e-12 * max(scale.max(), 1e-300))
    names = [base.names[k] for k in dead]
    live = np.flatnonzero(scale > 1e-12 * max(scale.max(), 1e-300))
    if len(live):
        _, s, Vt = np.linalg.svd(W[:, live] / scale[live], full_matrices=False)
        for k in np.flatnonzero(s < UNIDENTIFIABLE * s[0]):
            v = Vt[k]
            names += [base.names[live[i]] for i in np.flatnonzero(np.abs(v) > 0.3 * np.abs(v).max())]
    return list(dict.fromkeys(names))


def _condition_numbers(recordings, r):
    """Condition number of the stacked base regressor (unweighted), and with unit-norm columns."""
    n = recordings[0].factors.shape[0]
    W = _stacked(recordings, r, np.ones(n))[:r, :r]
    s = np.linalg.svd(W, compute_uv=False)
    scale = np.linalg.norm(W, axis=0)
    s2 = np.linalg.svd(W / np.where(scale > 0, scale, 1.0), compute_uv=False)
    return float(s[0] / s[-1]) if s[-1] > 0 else float("inf"), float(s2[0] / s2[-1]) if s2[-1] > 0 else float("inf")


