"""Identification of inertial and friction parameters from recorded joint states and efforts.

1. Data (:mod:`hod_dynamics.replay.analysis`): each recording is fitted exactly as the replay
   analysis does it (time base, gaps, per-joint smoothing level), which gives q, qd, qdd at
   the samples; the measured efforts are the targets.
2. Regression: ``tau = Y_b(q, qd, qdd) beta`` with the base regressor of
   :mod:`hod_dynamics.identification.base_parameters` (friction columns appended with ``friction=True``). The
   samples are reduced, per recording and joint, to the triangular factor of ``[Y_b | tau]``,
   so memory stays bounded however long the recordings, and any parameter set's residual on
   any recording follows from it. Rows are weighted by each joint's noise level (weighted least
   squares as in Gautier, "Dynamic identification of robots with power model", 1997).
3. Estimate:

   - ``"ols"``: the weighted least-squares base parameters; the standard parameters are the
     prior's plus the smallest change (Euclidean) that gives them. They may not belong to any
     real body.
   - ``"consistent"`` (default): the standard parameters minimising the weighted squared
     residual plus ``regularization`` times the log-determinant (Bregman) divergence of every
     body's pseudo-inertia from the prior's, over pseudo-inertias that are positive definite
     (Lee, Wensing and Park, "Geometric robot dynamic identification: a convex programming
     approach", IEEE T-RO 2020; Wensing, Kim and Slotine, "Linear matrix inequalities for
     physically consistent inertial parameter identification", IEEE RA-L 2018). Convex:
     solved as a semidefinite program (cvxpy with Clarabel, SCS as the fallback). The
     divergence is invariant to the units and the frame, vanishes at the prior and grows
     without bound at the boundary of physical consistency, so the directions the data does
     not determine come from the prior and every body stays physically consistent; in the
     directions the data determines, its weight is that of a single sample.

4. Uncertainty: standard errors of the base parameters from the weighted least-squares
   covariance ``s^2 (W_b^T W_b)^-1``, inflated by the residual's lag-one autocorrelation (the
   samples of a smoothed recording are not independent); the condition number of the base
   regressor.

Recordings that cannot determine some combination (a joint that never moves, a joint that
moves in one direction only, too few samples) raise :class:`InputError` naming those base
parameters.

Longer than 500 lines: the estimate, its uncertainty and its report (identification.json,
the URDF, the plots) share the reduced data of every recording; the regressor and the base
parameters are in :mod:`hod_dynamics.algorithms.regressors` and :mod:`hod_dynamics.identification.base_parameters`.
"""

import json
import os
from dataclasses import dataclass
from typing import Optional, Tuple

import numpy as np
import scipy.linalg

from ..algorithms.friction import DEFAULT_VS, FrictionModel
from ..algorithms.regressors import regressor
from ..errors import HodDynamicsError, InputError
from ..kernels.backend import single_threaded_blas
from ..model.inertia import com_form, consistency_margin, pseudo_inertia
from ..model.robot_model import body_names, inertial_parameters
from .base_parameters import BaseParameters, base_parameters

METHODS = ("consistent", "ols")
REGULARIZATION = 1.0          # weight of the divergence from the prior, in whitened squared residuals
UNIDENTIFIABLE = 1e-7         # relative singular value of the normalised base regressor below which
#                               a direction counts as undetermined by the data
CHUNK = 4096                  # samples per block of the regressor
MIN_ROWS_PER_PARAMETER = 10   # joint samples per base parameter, at least
EDGE_SECONDS = 0.1            # left out at both ends of every fitted segment
OUTLIER = 6.0                 # a residual beyond this many times its joint's level is a glitch, left out
PRIOR_FLOOR = 1e-6            # a prior pseudo-inertia's eigenvalues are kept above this share of its largest


@dataclass
class Recording:
    """One recording reduced for the regression: ``factors`` (n, r+1, r+1) the triangular
    factor of ``[Y_b | tau]`` of each joint's samples (unweighted), ``counts`` (n,) samples
    used per joint, ``name``; ``analysis`` the :class:`~hod_dynamics.replay.analysis.BagAnalysis` it
    came from."""

    name: str
    analysis: object
    factors: np.ndarray
    counts: np.ndarray
    model: object = None

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
    ``recordings``: the :class:`Recording` of each identification run; ``notes``.
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

    @property
    def consistency(self):
        """(n_bodies,) :func:`~hod_dynamics.model.inertia.consistency_margin` of each identified body."""
        return consistency_margin(self.parameters)


# -- data ---------------------------------------------------------------------------------------
def reduce_recording(model, analysis, base, *, friction=True, v_s=DEFAULT_VS, name="", chunk=CHUNK, exclude=None):
    """:class:`Recording` of one analysed recording (:func:`~hod_dynamics.analyze_joint_states`
    of ``model``): the base regressor at its fitted q, qd, qdd and its measured efforts,
    reduced per joint by QR. Left out: samples without an effort, the first and last
    EDGE_SECONDS of every fitted segment (where a smoothing fit's accelerations are least
    accurate) and those ``exclude`` (m, n) marks."""
    effort = analysis.effort
    if effort is None:
        raise InputError(f"recording {name or analysis.states.topic}: the joint states on {analysis.states.topic} "
                         "carry no efforts; identification needs the measured joint torques")
    qjet = analysis.result.qjet
    n, r = model.n_dof, base.rank
    usable = np.isfinite(effort) & ~_segment_edges(analysis)[:, None]
    if exclude is not None:
        usable &= ~exclude
    factors = np.zeros((n, r + 1, r + 1))
    counts = np.zeros(n, dtype=int)
    for a in range(0, len(qjet), chunk):
        b = min(a + chunk, len(qjet))
        Y = base.columns(regressor(model, qjet[a:b, 0], qjet[a:b, 1], qjet[a:b, 2], friction=friction, v_s=v_s))
        for j in range(n):
            ok = usable[a:b, j]
            block = np.column_stack([Y[ok, j], effort[a:b][ok, j]])
            counts[j] += int(ok.sum())
            factors[j] = _triangular(np.vstack([factors[j], block]), r + 1)
    return Recording(name, analysis, factors, counts, model)


def _segment_edges(analysis):
    """(m,) bool: the samples within EDGE_SECONDS of the start or end of a fitted segment
    (at most a tenth of the segment at each end)."""
    t = analysis.t
    edge = np.zeros(len(t), dtype=bool)
    for lo, hi in (analysis.segments or ((0, len(t)),)):
        span = min(EDGE_SECONDS, 0.1 * (t[hi - 1] - t[lo]))
        edge[lo:hi] |= (t[lo:hi] < t[lo] + span) | (t[lo:hi] > t[hi - 1] - span)
    return edge


def _triangular(A, size):
    """The (size, size) triangular factor R of A (rows, size) with A^T A = R^T R."""
    R = np.linalg.qr(A, mode="r")
    out = np.zeros((size, size))
    out[:R.shape[0]] = R[:size]
    return out


# -- estimation ---------------------------------------------------------------------------------
def identify(model, analyses, *, method="consistent", friction=True, v_s=DEFAULT_VS,
             regularization=REGULARIZATION, names=None, fixed_parts=None, progress=None):
    """Identify the inertial (and friction) parameters of ``model`` from recordings.

    ``analyses``: :class:`~hod_dynamics.replay.analysis.BagAnalysis` of each identification
    recording, made with ``model`` (:func:`~hod_dynamics.analyze_joint_states`, ``order=0``
    is enough); ``model`` is the prior. ``method``: ``"consistent"`` or ``"ols"`` (see the
    module docstring); ``friction``: identify viscous, Coulomb and offset friction per joint
    (``v_s`` rad/s the Coulomb transition velocity); ``regularization`` (>= 0): the weight of
    the divergence from the prior (``"consistent"``); ``names``: a label per recording, each
    a different one (they key the outputs);
    ``fixed_parts`` (n_bodies, 10): parameters within each body that stay as they are (links
    attached by locked joints, which keep their own inertia): the consistency condition then
    applies to the rest; ``progress(message)``: called with a line per stage.
    Returns :class:`Identification`. Raises :class:`InputError` for recordings without
    efforts, too few samples, or combinations the recordings do not determine (named), and
    when the consistent method needs cvxpy.
    """
    with single_threaded_blas():
        return _identify(model, analyses, method, friction, v_s, regularization, names, fixed_parts, progress)


def _identify(model, analyses, method, friction, v_s, regularization, names, fixed_parts, progress):
    """:func:`identify`, its dense linear algebra on one BLAS thread."""
    if method not in METHODS:
        raise InputError(f"method must be one of {METHODS}, got {method!r}")
    if not (np.isfinite(regularization) and regularization >= 0):
        raise InputError(f"regularization must be a number >= 0, got {regularization!r}")
    if model.floating:
        raise InputError(f"model '{model.name}' has a floating base: identification from joint states needs "
                         "a fixed base (its base motion is not recorded in joint states)")
    analyses = list(analyses)
    if not analyses:
        raise InputError("identification needs at least one recording")
    names = list(names) if names is not None else [f"recording {k + 1}" for k in range(len(analyses))]
    _check_names(names, len(analyses), "names")
    say = progress or (lambda message: None)
    base = base_parameters(model, friction=friction)
    recordings = []
    for name, analysis in zip(names, analyses):
        say(f"regressor of {name} ({len(analysis.t)} samples)")
        recordings.append(reduce_recording(model, analysis, base, friction=friction, v_s=v_s, name=name))
    prior = inertial_parameters(model)
    prior_friction = np.stack([model.damping, model.friction, np.zeros(model.n_dof)], axis=-1).ravel()
    prior_full = np.concatenate([prior.ravel(), prior_friction if friction else []])
    fixed = np.zeros_like(prior) if fixed_parts is None else np.asarray(fixed_parts, dtype=float)
    beta, cov, noise, rows = _weighted_least_squares(recordings, base, friction, v_s)
    notes = []
    glitches = [np.abs(residual_series(rec, base, beta, friction, v_s)) > OUTLIER * noise for rec in recordings]
    dropped = sum(int(g.sum()) for g in glitches)
    if dropped:  # a sensor glitch or a dropped effort read as zero would pull every parameter
        recordings = [reduce_recording(model, rec.analysis, base, friction=friction, v_s=v_s, name=rec.name,
                                       exclude=g) for rec, g in zip(recordings, glitches)]
        beta, cov, noise, rows = _weighted_least_squares(recordings, base, friction, v_s)
        notes.append(f"{dropped} joint samples left out as outliers (residual beyond {OUTLIER:g} times its joint's "
                     "level after a first fit)")
    _check_excitation(recordings, base, noise, rows)
    if method == "ols":
        full = prior_full + np.linalg.pinv(base.K) @ (beta - base.K @ prior_full)
    else:
        say("consistent fit (semidefinite program)")
        full = _consistent(recordings, base, noise, prior_full, prior, fixed, regularization, friction)
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
                          method, float(regularization), tuple(recordings), tuple(notes), float(v_s))


def _stacked(recordings, r, weights):
    """The triangular factor (r+1, r+1) of all recordings' rows, joint j's weighted by weights[j]."""
    blocks = [rec.factors[j] * weights[j] for rec in recordings for j in range(len(weights))]
    return _triangular(np.vstack(blocks), r + 1)


def _weighted_least_squares(recordings, base, friction, v_s):
    """(beta (r,), covariance (r, r), noise (n,) per joint, rows) by two passes: ordinary least
    squares gives each joint's residual level, whose inverse weights its rows in the second.
    The covariance is inflated by the residual's autocorrelation (see :func:`_inflation`)."""
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
    beta = _solve(R, r)
    s2 = R[r, r] ** 2 / max(rows - r, 1)
    inv = scipy.linalg.solve_triangular(R[:r, :r], np.eye(r))
    cov = s2 * (inv @ inv.T) * _inflation(recordings, base, beta, friction, v_s, noise)
    return beta, cov, noise, rows


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


def _check_excitation(recordings, base, noise, rows):
    """InputError naming the base parameters the recordings do not determine."""
    r = base.rank
    W = _stacked(recordings, r, 1.0 / noise)[:r, :r]
    scale = np.linalg.norm(W, axis=0)
    dead = np.flatnonzero(scale <= 1e-12 * max(scale.max(), 1e-300))
    names = []
    if len(dead):
        names = [base.names[k] for k in dead]
    else:
        U, s, Vt = np.linalg.svd(W / scale, full_matrices=False)
        for k in np.flatnonzero(s < UNIDENTIFIABLE * s[0]):
            v = Vt[k]
            names += [base.names[i] for i in np.flatnonzero(np.abs(v) > 0.3 * np.abs(v).max())]
    if names:
        names = list(dict.fromkeys(names))
        shown = ", ".join(names[:8]) + (f" and {len(names) - 8} more" if len(names) > 8 else "")
        raise InputError(f"the recordings do not excite {len(names)} base parameters enough to identify them: "
                         f"{shown} (a joint that does not move, or moves in one direction only; record an "
                         "excitation trajectory, e.g. from hod-dynamics excite, or leave friction out with --no-friction)")


def _condition_numbers(recordings, r):
    """Condition number of the stacked base regressor (unweighted), and with unit-norm columns."""
    n = recordings[0].factors.shape[0]
    W = _stacked(recordings, r, np.ones(n))[:r, :r]
    s = np.linalg.svd(W, compute_uv=False)
    scale = np.linalg.norm(W, axis=0)
    s2 = np.linalg.svd(W / np.where(scale > 0, scale, 1.0), compute_uv=False)
    return float(s[0] / s[-1]) if s[-1] > 0 else float("inf"), float(s2[0] / s2[-1]) if s2[-1] > 0 else float("inf")


def _consistent(recordings, base, noise, prior_full, prior, fixed, gamma, friction):
    """Standard parameters (p,) of the convex fit (see the module docstring)."""
    try:
        import cvxpy as cp
    except ImportError:
        raise InputError("the consistent method needs cvxpy with the Clarabel solver: pip install cvxpy clarabel "
                         "(the identification extra of this package), or use the ols method") from None
    r, nb = base.rank, len(prior)
    R = _stacked(recordings, r, 1.0 / noise)
    rows = sum(int(rec.counts.sum()) for rec in recordings)
    # the objective divided by the number of rows keeps the solver's numbers near 1
    A = R[:r, :r] @ base.K / np.sqrt(rows)
    y = R[:r, r] / np.sqrt(rows)
    scale = _parameter_scale(prior_full, prior, nb)
    x = cp.Variable(len(prior_full))
    params = cp.multiply(scale, x)
    objective = cp.sum_squares(A @ params - y)
    basis = pseudo_inertia(np.eye(10))                       # J of each unit parameter
    constraints = []
    for b in range(nb):
        J0 = _prior_pseudo_inertia(prior[b] - fixed[b])
        J0inv = np.linalg.inv(J0)
        Jfixed = pseudo_inertia(fixed[b])
        J = sum(params[10 * b + p] * basis[p] for p in range(10)) - Jfixed
        J = (J + J.T) / 2
        objective = objective + (gamma / rows) * (-cp.log_det(J) + cp.trace(J0inv @ J))
    if friction:
        n = (len(prior_full) - 10 * nb) // 3
        idx = 10 * nb + 3 * np.arange(n)
        constraints += [x[idx] >= 0, x[idx + 1] >= 0]
    problem = cp.Problem(cp.Minimize(objective), constraints)
    x.value = prior_full / scale
    status = _solve_problem(problem, cp)
    if x.value is None or status not in ("optimal", "optimal_inaccurate"):
        raise HodDynamicsError(f"the consistent fit did not converge (solver status '{status}'); try --method ols")
    return np.asarray(x.value) * scale


def _solve_problem(problem, cp):
    """Clarabel, then SCS when Clarabel fails or is missing; returns the status."""
    for solver in ("CLARABEL", "SCS"):
        if solver not in cp.installed_solvers():
            continue
        try:
            problem.solve(solver=solver)
        except cp.error.SolverError:
            continue
        if problem.status in ("optimal", "optimal_inaccurate"):
            return problem.status
    return problem.status


def _parameter_scale(prior_full, prior, nb):
    """A typical size of each parameter (kg, kg m, kg m^2; friction N m), from the prior: the
    solver works on parameters divided by it (all near 1)."""
    masses = np.abs(prior[:, 0])
    m_ref = max(masses.mean(), 1e-3)
    scale = np.empty_like(prior_full)
    for b in range(nb):
        m = max(masses[b], 0.1 * m_ref)
        J = pseudo_inertia(prior[b])
        length = np.sqrt(max(np.trace(J[:3, :3]) / max(prior[b, 0], 1e-12), 1e-4)) if prior[b, 0] > 0 else 0.1
        scale[10 * b:10 * b + 10] = [m] + [m * length] * 3 + [m * length ** 2] * 6
    scale[10 * nb:] = 1.0
    return scale


PRIOR_SHAPE_FLOOR = 0.05


def _prior_pseudo_inertia(pi):
    """The prior's pseudo-inertia made a credible mass distribution: the second moments about
    its centre of mass (its shape) kept above PRIOR_SHAPE_FLOOR of the largest, and a mass of
    at least 1 g. A flat or degenerate prior (massless links, identified values that break the
    triangle inequality) would otherwise claim certainty about a dimension no data sees, and
    the divergence, which weighs relative changes, would hold the fit there."""
    m, c, Ic = com_form(pi)
    m = max(float(m), 1e-3)
    sigma = 0.5 * np.trace(Ic) * np.eye(3) - Ic
    w, V = np.linalg.eigh(sigma)
    floor = max(PRIOR_SHAPE_FLOOR * max(w.max(), 0.0), m * 1e-6)
    sigma = (V * np.maximum(w, floor)) @ V.T
    J = np.empty((4, 4))
    J[:3, :3] = sigma + m * np.outer(c, c)
    J[:3, 3] = J[3, :3] = m * c
    J[3, 3] = m
    return J


# -- residuals and outputs ----------------------------------------------------------------------
def residuals(result, analysis):
    """Per joint residual RMS (N m; N) of a recording analysed with the prior model: ``prior``
    (the prior's rigid body plus friction fitted to this recording, as ``analyze-bag
    --friction fit`` reports it), ``prior_rigid_body`` and ``identified`` (the identified model
    with its friction, by Newton-Euler: independent of the regressor). Returns ``(table,
    predictions)``: ``table`` {joint: {...}}, ``predictions`` {"prior": (m, n),
    "identified": (m, n)} the predicted torques."""
    from ..algorithms.friction import fit_friction
    from ..algorithms.dynamics import inverse_dynamics

    q = analysis.result.qjet
    effort = analysis.effort
    rigid = analysis.rigid_tau if analysis.rigid_tau is not None else analysis.result.taujet[:, 0]
    names = result.model.joint_names
    fitted, _ = fit_friction(q[:, 1], effort - rigid, names)
    prior = rigid + fitted.torque(q[:, 1])
    identified = inverse_dynamics(result.model, q[:, 0], q[:, 1], q[:, 2], friction=result.friction)
    table = {nm: {"prior": _rms(prior[:, j] - effort[:, j]), "prior_rigid_body": _rms(rigid[:, j] - effort[:, j]),
                  "identified": _rms(identified[:, j] - effort[:, j])} for j, nm in enumerate(names)}
    return table, {"prior": prior, "identified": identified}


def _rms(x):
    x = x[np.isfinite(x)]
    return float(np.sqrt(np.mean(x * x))) if len(x) else float("nan")


def _check_names(names, count, argument):
    """InputError unless ``names`` holds ``count`` different labels (they key the outputs: two
    recordings of one name would leave one of them out)."""
    if len(names) != count:
        raise InputError(f"{argument}: {len(names)} names for {count} recordings")
    twice = sorted({str(nm) for nm in names if names.count(nm) > 1})
    if twice:
        raise InputError(f"{argument}: every recording needs a name of its own, got {', '.join(twice)} more than "
                         "once")


def evaluate(result, validation=(), validation_names=()):
    """Every recording's residuals and predictions: ``{name: (role, analysis, table,
    predictions)}`` (see :func:`residuals`) of the identification recordings and of
    ``validation`` (analyses with the prior model, named by ``validation_names``, names that
    differ from one another and from the identification recordings')."""
    out = {}
    runs = [(rec.name, rec.analysis, "identification") for rec in result.recordings]
    validation, validation_names = list(validation), list(validation_names)
    _check_names([name for name, _, _ in runs] + validation_names, len(runs) + len(validation),
                 "validation_names (with the identification recordings' names)")
    for name, analysis, role in runs + list(zip(validation_names, validation, ["validation"] * len(validation))):
        out[name] = (role, analysis) + residuals(result, analysis)
    return out


def summary(result, evaluation):
    """A JSON-ready dict of an :class:`Identification` and the residuals of ``evaluation``
    (:func:`evaluate`)."""
    model, base = result.model, result.base
    relative = np.where(np.abs(result.beta) > 0, result.beta_se / np.maximum(np.abs(result.beta), 1e-300), np.inf)
    out = {
        "robot": model.name, "joints": list(model.joint_names), "method": result.method,
        "regularization": result.regularization if result.method == "consistent" else None,
        "friction": result.friction is not None,
        "samples": {rec.name: int(len(rec.analysis.t)) for rec in result.recordings},
        "condition_number": result.condition_number,
        "condition_number_unit_columns": result.condition_number_scaled,
        "noise_std": {nm: float(v) for nm, v in zip(model.joint_names, result.noise)},
        "base_parameters": [{"name": nm, "value": float(b), "standard_error": float(se),
                             "relative_standard_error": float(rel), "prior": float(p)}
                            for nm, b, se, rel, p in zip(base.names, result.beta, result.beta_se, relative,
                                                         result.beta_prior)],
        "bodies": {}, "notes": list(result.notes),
        "residual_rms": {name: {"role": role, "joints": table} for name, (role, _, table, _) in evaluation.items()},
    }
    for b, link in enumerate(body_names(model)):
        m, c, Ic = com_form(result.parameters[b])
        pm, pc, _ = com_form(result.prior[b])
        out["bodies"][link] = {
            "parameters": result.parameters[b].tolist(), "prior_parameters": result.prior[b].tolist(),
            "mass": float(m), "com": c.tolist(), "inertia_about_com": Ic.tolist(),
            "prior_mass": float(pm), "prior_com": pc.tolist(),
            "physically_consistent": bool(result.consistency[b] > 0),
            "consistency_margin": float(result.consistency[b])}
    if result.friction is not None:
        out["friction_model"] = result.friction.to_mapping()["friction"]
    return out


def write_outputs(result, out, source, evaluation, *, plots=True, xacro_args=None, command=""):
    """Write ``identified.urdf`` (from the prior ``source``), ``friction.yaml`` (with friction),
    ``identification.json`` (:func:`summary` of ``evaluation``, see :func:`evaluate`) and, with
    ``plots``, ``torque_<recording>.png`` (measured against predicted torque, prior and
    identified) of every validation recording (of the identification ones when there is none)
    into the folder ``out``. Returns the paths."""
    from ..algorithms.friction import save_friction
    from ..model.urdf_writer import identified_urdf

    os.makedirs(out, exist_ok=True)
    paths = []
    origin = f"identified by hod-dynamics identify ({result.method}) from {', '.join(r.name for r in result.recordings)}"
    text = identified_urdf(source, result.model, result.parameters, result.friction, xacro_args=xacro_args,
                           comment=origin + ("; friction offsets and v_s: friction.yaml" if result.friction else ""))
    paths.append(_write(os.path.join(out, "identified.urdf"), text))
    if result.friction is not None:
        paths.append(save_friction(result.friction, os.path.join(out, "friction.yaml"), comments=[origin]))
    data = summary(result, evaluation)
    data["command"] = command
    paths.append(_write(os.path.join(out, "identification.json"), json.dumps(data, indent=2) + "\n"))
    if plots:
        from ..plots import plot_torque_comparison

        shown = [name for name, entry in evaluation.items() if entry[0] == "validation"] or list(evaluation)
        for name in shown:
            role, analysis, _, predictions = evaluation[name]
            path = os.path.join(out, f"torque_{_file_label(name)}.png")
            paths.append(plot_torque_comparison(analysis.t, analysis.effort, predictions, result.model.joint_names,
                                                path, title=f"{result.model.name}: {name} ({role})"))
    return paths


def _write(path, text):
    with open(path, "w", encoding="utf-8") as fh:
        fh.write(text)
    return path


def _file_label(name):
    keep = "".join(ch if ch.isalnum() or ch in "-_." else "_" for ch in str(name))
    return keep or "recording"
