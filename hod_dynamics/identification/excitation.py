"""Excitation trajectories for identification: periodic Fourier series with a well-conditioned
base regressor, within the joint limits.

Each joint follows a finite Fourier series of fundamental pulsation w = 2 pi / period
(Swevers, Ganseman, Tukel, De Schutter and Van Brussel, "Optimal robot excitation and
identification", IEEE T-RA 1997)::

    q_j(t) = c_j + sum_{l=1..H} a_jl sin(l w t) + b_jl cos(l w t)

Periodic, so repeating it averages the noise, and exactly differentiable. The coefficients
are held to ``q^(1..4)(0) = 0`` (four linear conditions per joint), so the motion starts and
ends at rest, as the C^4 waypoint spline of :class:`~hod_dynamics.Trajectory` holds it.

The optimisation (:func:`optimise_excitation`) minimises the condition number of the base
regressor (:mod:`hod_dynamics.identification.base_parameters`) stacked over one period. Limits hold by
construction: for any coefficients, each joint's series is scaled (and its centre placed) so
that its position stays inside the range less a margin, and its velocity and acceleration
within their limits, the tightest of the three reached exactly; the optimiser searches the
shapes freely. It starts from random coefficients (the best of several), then refines by
L-BFGS-B with numerical gradients.
"""

from dataclasses import dataclass
from typing import Tuple

import numpy as np

from ..algorithms.regressors import regressor
from ..arrays import whole_number
from ..errors import InputError
from ..kernels.backend import single_threaded_blas
from ..model.validation import fixed_base_only
from .base_parameters import base_parameters

DEFAULT_ACCELERATION = 10.0     # rad/s^2 (m/s^2) where the velocity limit is not given either
ACCELERATION_PER_VELOCITY = 4.0  # default acceleration limit: this many times the velocity limit, per s
GRID_PER_HARMONIC = 24           # samples of the regressor per period of the highest harmonic
CHECK_PER_HARMONIC = 64          # samples per period of the highest harmonic where the limits are checked
WAYPOINTS_PER_HARMONIC = 24      # waypoints written per period of the highest harmonic


@dataclass(frozen=True, eq=False)
class Excitation:
    """A periodic excitation trajectory for a model's joints.

    ``joint_names`` (n,); ``period`` (s); ``duration`` (s, whole periods); ``center`` (n,);
    ``sine``, ``cosine`` (n, H) the coefficients (rad or m); ``condition_number`` of its base
    regressor over one period, ``random_condition_number`` the median of random series of the
    same family scaled into the same limits; ``limits`` (n, 4): lower, upper, velocity and
    acceleration limits it was made for.
    """

    joint_names: Tuple[str, ...]
    period: float
    duration: float
    center: np.ndarray
    sine: np.ndarray
    cosine: np.ndarray
    condition_number: float
    random_condition_number: float
    limits: np.ndarray

    @property
    def harmonics(self):
        return self.sine.shape[1]

    def jet(self, t, rows=3):
        """q^(0..rows-1) (len(t), rows, n) at times t (s)."""
        return _series_jet(np.atleast_1d(np.asarray(t, dtype=float)), 2 * np.pi / self.period, self.center,
                           self.sine, self.cosine, rows)

    def peaks(self):
        """(n, 3): max |q - center|, max |qd|, max |qdd| over a period (finely sampled)."""
        t = np.linspace(0.0, self.period, CHECK_PER_HARMONIC * self.harmonics * 4, endpoint=False)
        jet = self.jet(t, 3)
        return np.stack([np.abs(jet[:, 0] - self.center).max(axis=0), np.abs(jet[:, 1]).max(axis=0),
                         np.abs(jet[:, 2]).max(axis=0)], axis=1)

    def describe(self):
        """Lines for a user: period, harmonics, condition numbers, each joint's range used."""
        peaks = self.peaks()
        q = self.jet(np.linspace(0.0, self.period, CHECK_PER_HARMONIC * self.harmonics * 4), 1)[:, 0]
        lines = [f"excitation: {self.duration:g} s ({self.duration / self.period:g} periods of {self.period:g} s), "
                 f"{self.harmonics} harmonics per joint",
                 f"condition number of the base regressor: {self.condition_number:.4g} (random series of the same "
                 f"family within the same limits: {self.random_condition_number:.4g}, "
                 f"{self.random_condition_number / self.condition_number:.3g} x larger)",
                 f"  {'joint':<24}{'q min':>9}{'q max':>9}{'lower':>9}{'upper':>9}{'|qd| max':>10}{'limit':>8}"
                 f"{'|qdd| max':>11}{'limit':>8}"]
        for j, nm in enumerate(self.joint_names):
            lo, hi, vmax, amax = self.limits[j]
            lines.append(f"  {nm:<24}{q[:, j].min():9.3f}{q[:, j].max():9.3f}{lo:9.3f}{hi:9.3f}{peaks[j, 1]:10.3f}"
                         f"{vmax:8.3g}{peaks[j, 2]:11.3f}{amax:8.3g}")
        return lines


def _series_jet(t, w, center, sine, cosine, rows):
    """q^(0..rows-1) of the Fourier series at times t: (T, rows, n)."""
    H = sine.shape[1]
    lw = w * np.arange(1, H + 1)
    phase = np.outer(t, lw)                       # (T, H)
    out = np.empty((len(t), rows, len(center)))
    for k in range(rows):
        # d^k/dt^k sin(x) = sin(x + k pi/2), cos likewise
        s, c = np.sin(phase + k * np.pi / 2), np.cos(phase + k * np.pi / 2)
        out[:, k] = (s * lw ** k) @ sine.T + (c * lw ** k) @ cosine.T
    out[:, 0] += center
    return out


def _at_rest_basis(H):
    """Bases (H, H-2) of the sine and cosine coefficients with q^(1..4)(0) = 0: the sine terms
    give the odd derivatives at 0 (sum a_l l^k = 0, k = 1, 3), the cosine terms the even ones
    (sum b_l l^k = 0, k = 2, 4)."""
    l = np.arange(1, H + 1, dtype=float)
    bases = []
    for powers in ((1, 3), (2, 4)):
        A = np.stack([l ** p / l.max() ** p for p in powers])
        _, _, Vt = np.linalg.svd(A)
        bases.append(Vt[2:].T)
    return bases


def joint_limits(model, acceleration_limit=None):
    """(n, 4): lower, upper (rad or m; +-pi where the URDF gives none), velocity (rad/s; 3.0
    where none) and acceleration (``acceleration_limit``, or ACCELERATION_PER_VELOCITY x the
    velocity limit, DEFAULT_ACCELERATION where the URDF has no velocity limit either)."""
    lo = np.where(np.isfinite(model.lower), model.lower, -np.pi)
    hi = np.where(np.isfinite(model.upper), model.upper, np.pi)
    vel = np.where(np.isfinite(model.velocity_limits), model.velocity_limits, 3.0)
    if acceleration_limit is None:
        acc = np.where(np.isfinite(model.velocity_limits), ACCELERATION_PER_VELOCITY * model.velocity_limits,
                       DEFAULT_ACCELERATION)
    else:
        acc = np.broadcast_to(np.asarray(acceleration_limit, dtype=float), (model.n_dof,))
    return np.stack([lo, hi, vel, acc], axis=1)


class _Problem:
    """The map from free variables to a trajectory inside the limits, and its cost."""

    def __init__(self, model, base, harmonics, period, limits, margin, friction):
        self.model, self.base, self.H, self.period = model, base, harmonics, period
        self.w = 2 * np.pi / period
        self.friction = friction
        self.sine_basis, self.cosine_basis = _at_rest_basis(harmonics)
        self.free = harmonics - 2
        n = model.n_dof
        lo, hi, vel, acc = limits.T
        self.mid, self.half = (lo + hi) / 2, (hi - lo) / 2 * (1 - margin)
        self.vel, self.acc = vel * (1 - margin), acc * (1 - margin)
        self.grid = np.linspace(0.0, period, GRID_PER_HARMONIC * harmonics, endpoint=False)
        self.check = np.linspace(0.0, period, CHECK_PER_HARMONIC * harmonics, endpoint=False)
        self.size = n * (1 + 2 * self.free)

    def trajectory(self, x):
        """(center (n,), sine (n, H), cosine (n, H)) of the variables x, scaled into the limits."""
        n, f = self.model.n_dof, self.free
        x = x.reshape(n, 1 + 2 * f)
        sine = x[:, 1:1 + f] @ self.sine_basis.T
        cosine = x[:, 1 + f:] @ self.cosine_basis.T
        # the centre within the middle half of the range; the amplitude fills what is left
        center = self.mid + 0.5 * self.half * np.tanh(x[:, 0])
        room = self.half - np.abs(center - self.mid)
        jet = _series_jet(self.check, self.w, np.zeros(n), sine, cosine, 3)
        peaks = np.abs(jet).max(axis=0)                                   # (3, n)
        with np.errstate(divide="ignore"):
            scale = np.min(np.stack([room, self.vel, self.acc]) / np.maximum(peaks, 1e-300), axis=0)
        return center, sine * scale[:, None], cosine * scale[:, None]

    def condition(self, x):
        center, sine, cosine = self.trajectory(x)
        jet = _series_jet(self.grid, self.w, center, sine, cosine, 3)
        Y = regressor(self.model, jet[:, 0], jet[:, 1], jet[:, 2], friction=self.friction)
        W = self.base.columns(Y).reshape(-1, self.base.rank)
        s = np.linalg.svd(W, compute_uv=False)
        return s[0] / s[-1] if s[-1] > 0 else np.inf

    def cost(self, x):
        return float(np.log(min(self.condition(x), 1e300)))


def optimise_excitation(model, *, duration=20.0, harmonics=5, period=None, acceleration_limit=None, margin=0.05,
                        seed=0, starts=16, iterations=40, friction=True, progress=None):
    """An :class:`Excitation` of ``model`` (fixed base) whose base regressor over one period has
    the smallest condition number found.

    ``duration`` (s): the length, whole periods of ``period`` (s; default the duration split
    into periods of at most 10 s); ``harmonics`` (>= 3) per joint; ``acceleration_limit``
    (rad/s^2, one or (n,); default see :func:`joint_limits`); ``margin``: the share of each
    position range, velocity and acceleration limit kept free; ``starts`` random starts, ``iterations`` of
    L-BFGS-B from the best; ``friction``: include the friction parameters (their columns) in
    the base regressor; ``progress(done, total)``. Raises InputError for bad arguments.
    """
    fixed_base_only(model, "optimise_excitation")
    if model.n_dof == 0:
        raise InputError(f"model '{model.name}' has no moving joint to excite")
    harmonics = whole_number("harmonics", harmonics, 3, why="four coefficients of each joint hold the motion "
                                                            "at rest at both ends")
    if not (np.isfinite(duration) and duration > 0):
        raise InputError(f"duration must be a number of seconds > 0, got {duration!r}")
    if period is None:
        period = duration / np.ceil(duration / 10.0 - 1e-9)
    if not (np.isfinite(period) and 0 < period <= duration + 1e-9):
        raise InputError(f"period must be > 0 and at most the duration {duration} s, got {period!r}")
    periods = duration / period
    if abs(periods - round(periods)) > 1e-6:
        raise InputError(f"duration {duration} s is not a whole number of periods of {period} s")
    if not 0 <= margin < 0.5:
        raise InputError(f"margin must be in [0, 0.5), got {margin!r}")
    limits = joint_limits(model, acceleration_limit)
    if np.any(~(limits[:, 3] > 0)):
        raise InputError(f"acceleration limits must be > 0 rad/s^2, got {limits[:, 3].tolist()}")
    with single_threaded_blas():
        return _optimise(model, duration, harmonics, period, limits, margin, seed, starts, iterations, friction,
                         progress)


def _optimise(model, duration, harmonics, period, limits, margin, seed, starts, iterations, friction, progress):
    """:func:`optimise_excitation` on checked arguments."""
    from scipy.optimize import minimize

    base = base_parameters(model, friction=friction)
    problem = _Problem(model, base, harmonics, period, limits, margin, friction)
    rng = np.random.default_rng(seed)
    total = starts + iterations
    done = [0]

    def tick():
        done[0] += 1
        if progress is not None:
            progress(min(done[0], total), total)

    candidates = []
    for _ in range(starts):
        x = rng.normal(size=problem.size)
        candidates.append((problem.cost(x), x))
        tick()
    random_cond = float(np.exp(np.median([c for c, _ in candidates])))
    x0 = min(candidates, key=lambda c: c[0])[1]

    def callback(_):
        tick()

    found = minimize(problem.cost, x0, method="L-BFGS-B", callback=callback,
                     options=dict(maxiter=iterations, eps=1e-4))
    x = found.x if found.fun <= problem.cost(x0) else x0
    center, sine, cosine = problem.trajectory(x)
    if progress is not None:
        progress(total, total)
    return Excitation(tuple(model.joint_names), float(period), float(duration), center, sine, cosine,
                      float(problem.condition(x)), random_cond, limits)


def waypoints(excitation):
    """(times (N,), positions (N, n)) of the whole duration, WAYPOINTS_PER_HARMONIC per period
    of the highest harmonic: a C^4 spline through them (at rest at both ends) follows the
    series to within ~1e-6 of its amplitude."""
    step = excitation.period / (WAYPOINTS_PER_HARMONIC * excitation.harmonics)
    count = int(round(excitation.duration / step))
    t = np.arange(count + 1) * step
    return t, excitation.jet(t, 1)[:, 0]


def write_waypoints(excitation, path, *, robot=""):
    """Write the excitation as a waypoint YAML (``joint_names``, ``times``, ``positions``,
    ``continuity: 4``), the format of the shipped demo trajectories that
    :func:`~hod_dynamics.load_trajectory` and the demo trajectory publisher read. Returns
    ``path``."""
    import yaml

    t, q = waypoints(excitation)
    header = [f"Excitation trajectory for identification{f' of {robot}' if robot else ''} (hod-dynamics excite):",
              f"{excitation.harmonics} harmonics of a {excitation.period:g} s period, {excitation.duration:g} s, "
              "at rest at both ends.",
              f"Condition number of the base regressor {excitation.condition_number:.4g} (random series in the same "
              f"limits: {excitation.random_condition_number:.4g}).",
              "Record the robot following it, then: hod-dynamics identify BAG --urdf URDF --out DIR"]
    data = {"joint_names": list(excitation.joint_names), "continuity": 4,
            "times": [float(v) for v in t], "positions": [[float(v) for v in row] for row in q]}
    with open(path, "w", encoding="utf-8") as fh:
        for line in header:
            fh.write(f"# {line}\n")
        if robot:
            fh.write(f"robot: {robot}\n")
        yaml.safe_dump(data, fh, sort_keys=False, default_flow_style=None, width=200)
    return path
