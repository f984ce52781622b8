"""Joint trajectories as scipy B-splines: waypoint interpolation, smoothing fits, jets, checks.

A :class:`Trajectory` maps time (s) to joint positions (rad or m) for a list of named joints.
:meth:`Trajectory.jet` returns the derivative stack q^(0..m) that
:func:`hod_dynamics.time_derivatives` consumes: torque order k needs q up to q^(k+2), so the
trajectory must be C^(k+2) for a continuous tau^(k).

Floating-base robots: the base pose is 7 more columns named ``base_x, base_y, base_z`` (m, world
frame) and ``base_qx, base_qy, base_qz, base_qw`` (unit quaternion, waypoints sign-aligned on
input). The spline interpolates the quaternion's components; :meth:`Trajectory.floating_jet`
normalises it and derives the base body twist and its derivatives exactly from the spline's.

Meaning of ``continuity = c``: the trajectory, extended by holding still before its start and
after its end, has c continuous derivatives on the whole time axis (C^c). Derivatives of
higher order exist piecewise (they jump at the span ends, and at the knots above the spline's
own smoothness). Torque order k needs ``c >= k + 2``; the default 4 suits order 2.
"""

import os
import threading
import warnings
from dataclasses import dataclass, field
from typing import Optional, Tuple

import numpy as np

from ..algorithms.floating import joint_jet, time_derivatives_floating, velocity_jet
from ..arrays import check_memory, real_array, whole_number
from ..errors import HodDynamicsWarning, InputError, ModelError, TrajectoryError
from ..model.validation import BASE_COORDINATES, QUATERNION_TOLERANCE, configuration_names, floating_base_only
from ..yamlfile import read_mapping
from .hermite_spline import hermite_spline

DEFAULT_CONTINUITY = 4
_DIR = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "data", "trajectories")
_SINGULAR = {"positions": "position", "velocities": "velocity", "accelerations": "acceleration"}
_FILE_KEYS = {"robot", "joint_names", "times", "positions", "velocities", "accelerations",
              "continuity"}


# -- validation -----------------------------------------------------------------------------
def _check_names(joint_names):
    names = [str(nm) for nm in joint_names]
    if not names:
        raise TrajectoryError("a trajectory needs at least one joint name")
    dup = sorted({nm for nm in names if names.count(nm) > 1})
    if dup:
        raise TrajectoryError(f"duplicate joint names {dup}")
    return names


def _check_times(times):
    try:
        t = np.asarray(times, dtype=float)
    except (TypeError, ValueError):  # text among the times (a YAML file's typo)
        bad = next((i, x) for i, x in enumerate(times) if not _is_number(x))
        raise TrajectoryError(f"waypoint {bad[0]}: time {bad[1]!r} is not a number") from None
    if t.ndim != 1:
        raise TrajectoryError(f"times must be a 1-D sequence (one per waypoint), got shape {t.shape}")
    if len(t) < 2:
        raise TrajectoryError(f"a trajectory needs at least two waypoints, got {len(t)}")
    bad = np.flatnonzero(~np.isfinite(t))
    if len(bad):
        raise TrajectoryError(f"waypoint {bad[0]}: time {t[bad[0]]} is not finite")
    bad = np.flatnonzero(np.diff(t) <= 0)
    if len(bad):
        i = bad[0] + 1
        raise TrajectoryError(f"waypoint {i}: time {t[i]} s is not after waypoint {i - 1}'s "
                              f"{t[i - 1]} s (times must increase strictly)")
    return t


def _is_number(x):
    try:
        float(x)
    except (TypeError, ValueError):
        return False
    return True


def _check_rows(values, what, names, n_points):
    """(n_points, n_joints) float array; errors name the waypoint and the joint."""
    if isinstance(values, np.ndarray) and values.shape == (n_points, len(names)):
        rows = values  # the usual case, checked at once (a planner's trajectory: 60,000 rows)
    else:
        rows = list(values)
        if len(rows) != n_points:
            raise TrajectoryError(f"{what}: {len(rows)} waypoints given but {n_points} times")
        for i, row in enumerate(rows):
            size = np.size(row)
            if np.ndim(row) != 1 or size != len(names):
                raise TrajectoryError(f"waypoint {i}: {size} {what} for {len(names)} joints {names}")
    try:
        a = np.asarray(rows, dtype=float)
    except (TypeError, ValueError):  # text among the values
        i, j = next((i, j) for i, row in enumerate(rows) for j, x in enumerate(row) if not _is_number(x))
        raise TrajectoryError(f"waypoint {i}, joint '{names[j]}': {_SINGULAR[what]} {rows[i][j]!r} is not a "
                              "number") from None
    bad = np.argwhere(~np.isfinite(a))
    if len(bad):
        i, j = bad[0]
        raise TrajectoryError(f"waypoint {i}, joint '{names[j]}': {_SINGULAR[what]} {a[i, j]} is not finite")
    return a


def _check_at_rest(values, what, names, ends=(0, -1)):
    """The span ends (``ends``: indices of the waypoints) must be at rest: the trajectory holds
    still outside its span."""
    for i in sorted({e % len(values) for e in ends}):
        j = np.flatnonzero(np.abs(values[i]) > 1e-12)
        if len(j):
            raise TrajectoryError(f"waypoint {i}, joint '{names[j[0]]}': {_SINGULAR[what]} "
                                  f"{values[i, j[0]]} must be 0 at the first and last waypoint "
                                  "(the trajectory holds still outside its span)")


def _check_joined(first, v0, names):
    """The first waypoint's velocities of a trajectory joined at ``v0`` must be ``v0``."""
    j = np.flatnonzero(np.abs(first - v0) > 1e-9 * (1.0 + np.abs(v0)))
    if len(j):
        raise TrajectoryError(f"waypoint 0, joint '{names[j[0]]}': velocity {first[j[0]]} differs from the "
                              f"initial velocity {v0[j[0]]}")


def _align_quaternions(values, names):
    """Waypoint positions with the base quaternion (columns base_qx..base_qw, when present)
    checked for unit norm and sign-aligned with the previous waypoint's (q and -q are the same
    rotation; the spline must not pass through zero between them)."""
    if not set(BASE_COORDINATES[3:]) <= set(names):
        return values
    cols = [names.index(nm) for nm in BASE_COORDINATES[3:]]
    quat = values[:, cols]
    norm = np.linalg.norm(quat, axis=1)
    bad = np.flatnonzero(np.abs(norm - 1.0) > QUATERNION_TOLERANCE)
    if len(bad):
        raise TrajectoryError(f"waypoint {bad[0]}: base quaternion {quat[bad[0]].tolist()} has norm "
                              f"{norm[bad[0]]:.6g}, not 1 (within {QUATERNION_TOLERANCE})")
    quat = quat / norm[:, None]
    for i in range(1, len(quat)):
        if quat[i] @ quat[i - 1] < 0:
            quat[i] = -quat[i]
    values = values.copy()
    values[:, cols] = quat
    return values


def _check_continuity(continuity, upper=None):
    continuity = whole_number("continuity", continuity, 1, error=TrajectoryError)
    if upper is not None and continuity > upper:
        raise TrajectoryError(f"continuity {continuity} exceeds {upper} (FITPACK degree <= 5)")
    return int(continuity)


def noise_std(y):
    """Noise standard deviation of each column of y (m, n) from its 6th differences.

    For white noise of std s, the 6th difference has std s * sqrt(C(12, 6)) = s * sqrt(924);
    the median absolute deviation (/0.6745) keeps the smooth signal's share out of the estimate.
    """
    d = np.diff(y, 6, axis=0)
    return np.median(np.abs(d - np.median(d, axis=0)), axis=0) / 0.6745 / np.sqrt(924.0)


def fit_samples(joint_names, times, positions, *, smoothing=None, continuity=DEFAULT_CONTINUITY):
    """:meth:`Trajectory.from_samples` and what it chose: ``(trajectory, levels (n,), noise
    std (n,))`` (see :mod:`hod_dynamics.recordings.smoothing`)."""
    from ..algorithms.dispatch import announce_fit_compiles
    from ..recordings.smoothing import choose_level, smooth_padded

    announce_fit_compiles()
    names = _check_names(joint_names)
    continuity = _check_continuity(continuity, upper=4)
    t = _check_times(times)
    y = _align_quaternions(_check_rows(positions, "positions", names, len(t)), names)
    k = continuity + 1
    if len(t) <= k:
        raise TrajectoryError(f"a smoothing fit of degree {k} needs more than {k} samples, got {len(t)}")
    if smoothing is not None:
        s = np.asarray(smoothing, dtype=float)
        if s.shape not in ((), (len(names),)):
            raise TrajectoryError(f"smoothing must be one number or {len(names)} (one per joint), "
                                  f"got {s.tolist()}")
        if np.any(~np.isfinite(s)) or np.any(s < 0):
            raise TrajectoryError(f"smoothing must be finite and >= 0, got {s.tolist()}")
    from scipy.interpolate import make_interp_spline   # scipy on first use: a replay never needs it

    lam, noise = choose_level(t, y, smoothing)
    spline = make_interp_spline(t, smooth_padded(t, y, lam), k=k)
    return Trajectory(tuple(names), spline, continuity, t), lam, noise


# -- the trajectory --------------------------------------------------------------------------
@dataclass(frozen=True, eq=False)
class Trajectory:
    """Joint positions q(t) as a vector-valued scipy :class:`~scipy.interpolate.BSpline`.

    ``joint_names`` (n,); ``spline`` maps t (s) to (n,) positions on ``[start, end]``;
    ``continuity``: the number of continuous derivatives (see the module docstring);
    ``waypoint_times`` the times the trajectory was built from. Outside ``[start, end]`` the
    trajectory holds still: the end position, all derivatives zero.
    Build it with :meth:`from_waypoints` or :meth:`from_samples`.
    """

    joint_names: Tuple[str, ...]
    spline: "BSpline"  # noqa: F821  (scipy.interpolate's, imported where one is made)
    continuity: int
    waypoint_times: np.ndarray
    _derivatives: dict = field(default_factory=dict, repr=False, compare=False)
    # derivatives are built on first use; the lock makes that safe when threads share the
    # trajectory (the ROS node evaluates one from its stream thread and its executor)
    _lock: threading.Lock = field(default_factory=threading.Lock, repr=False, compare=False)

    def __reduce__(self):
        """Pickle as the four defining fields (for worker processes): the derivative cache and
        its lock are rebuilt on use."""
        return type(self), (self.joint_names, self.spline, self.continuity, self.waypoint_times)

    @property
    def start(self) -> float:
        return float(self.waypoint_times[0])

    @property
    def end(self) -> float:
        return float(self.waypoint_times[-1])

    @property
    def n_joints(self) -> int:
        return len(self.joint_names)

    @classmethod
    def from_waypoints(cls, joint_names, times, positions, velocities=None, accelerations=None, *,
                       continuity=DEFAULT_CONTINUITY, initial_velocity=None):
        """Smooth interpolation of waypoints (e.g. a trajectory_msgs/JointTrajectory).

        ``times`` (N,) s, strictly increasing, N >= 2; ``positions`` (N, n) rad or m, one
        column per name of ``joint_names``; optional ``velocities`` / ``accelerations`` (N, n)
        are matched exactly at every waypoint (they must be 0 at the first and last one).
        The result passes exactly through the data, is C^``continuity`` on the whole time axis
        and holds still outside ``[times[0], times[-1]]``: it is the spline of degree 2h+1,
        h = max(continuity, number of derivative orders given), with q^(1..h) = 0 at both
        ends that minimises the integral of |q^(h+1)|^2 (knots at the waypoints). Its
        construction takes time and memory linear in N (a banded system).
        ``initial_velocity`` (n,) rad/s (m/s): the trajectory starts moving at that velocity
        (its higher derivatives 0 there), as a trajectory joined from a moving robot's measured
        state; it then jumps from rest to that velocity at its start (the first row of
        ``velocities``, when given, must equal it).
        Raises :class:`TrajectoryError` naming the waypoint index and the joint at fault.
        """
        names = _check_names(joint_names)
        continuity = _check_continuity(continuity)
        t = _check_times(times)
        given = [_align_quaternions(_check_rows(positions, "positions", names, len(t)), names)]
        v0 = None if initial_velocity is None else _check_rows([initial_velocity], "velocities", names, 1)[0]
        for what, values in (("velocities", velocities), ("accelerations", accelerations)):
            if values is None:
                if what == "velocities" and accelerations is not None:
                    raise TrajectoryError("accelerations given without velocities")
                continue
            given.append(_check_rows(values, what, names, len(t)))
            if what == "velocities" and v0 is not None:
                _check_joined(given[-1][0], v0, names)
                _check_at_rest(given[-1], what, names, ends=(-1,))
            else:
                _check_at_rest(given[-1], what, names)
        hold = max(continuity, len(given) - 1)
        start = None if v0 is None else np.vstack([v0, np.zeros((hold - 1, len(names)))])
        if len(given) == 1:
            zeros = [(nu, np.zeros(len(names))) for nu in range(1, hold + 1)]
            first = zeros if start is None else [(nu, start[nu - 1]) for nu in range(1, hold + 1)]
            from scipy.interpolate import make_interp_spline

            spline = make_interp_spline(t, given[0], k=2 * hold + 1, bc_type=(first, zeros))
        else:
            spline = hermite_spline(t, given, hold, start)
        return cls(tuple(names), spline, continuity, t)

    @classmethod
    def from_samples(cls, joint_names, times, positions, *, smoothing=None,
                     continuity=DEFAULT_CONTINUITY):
        """Smoothing fit of noisy recorded positions (e.g. joint_states from a bag).

        ``times`` (m,) strictly increasing (s), ``positions`` (m, n). Each joint is smoothed
        by :func:`hod_dynamics.recordings.smoothing.smooth` at the level
        :func:`hod_dynamics.recordings.smoothing.choose_level` picks for it (the one that minimises
        the estimated error of the accelerations), and the smoothed values are interpolated
        by a spline of degree ``continuity + 1`` (<= 5). ``smoothing``: the noise standard
        deviation s_j of the positions (rad or m), a number or one per joint; ``None``
        estimates it from the data; 0 interpolates. Inside the sample span the fit is
        C^``continuity``; outside it holds the end positions still (there the derivatives
        jump to zero: trim the ends when they matter).
        """
        return fit_samples(joint_names, times, positions, smoothing=smoothing, continuity=continuity)[0]

    @classmethod
    def from_yaml(cls, source):
        """Waypoints from a YAML file (path) or an already parsed mapping with keys
        ``joint_names``, ``times``, ``positions`` and optionally ``velocities``,
        ``accelerations``, ``continuity`` (and ``robot``, informative); see
        ``hod_dynamics/data/trajectories/iiwa14_demo.yaml``."""
        source = read_mapping(source, TrajectoryError, "trajectory file")
        unknown = sorted(set(source) - _FILE_KEYS)
        missing = sorted({"joint_names", "times", "positions"} - set(source))
        if unknown or missing:
            raise TrajectoryError(f"trajectory file: unknown keys {unknown}, missing keys {missing}")
        return cls.from_waypoints(source["joint_names"], source["times"], source["positions"],
                                  source.get("velocities"), source.get("accelerations"),
                                  continuity=source.get("continuity", DEFAULT_CONTINUITY))

    # -- evaluation --------------------------------------------------------------------------
    def _derivative(self, nu, t):
        """q^(nu) at times t (inside the span)."""
        with self._lock:
            if nu not in self._derivatives:
                self._derivatives[nu] = self.spline.derivative(nu) if nu else self.spline
            spline = self._derivatives[nu]
        return spline(t)

    def jet(self, t, n_derivatives):
        """Derivative stack q^(0..n_derivatives) at times ``t`` (s, any shape).

        Returns (*t.shape, n_derivatives+1, n_joints), e.g. (len(t), n+1, n_joints). Outside
        the span: the end position and zero derivatives. Rows above ``continuity`` are
        piecewise (exact inside each knot interval, jumping at the knots): asking for them gives
        a HodDynamicsWarning. Raises TrajectoryError for times that are not finite real numbers
        (text included), InputError for a result that would not fit in memory.
        """
        n_derivatives = whole_number("n_derivatives", n_derivatives, error=TrajectoryError)
        if n_derivatives > self.spline.k:
            raise TrajectoryError(
                f"n_derivatives={n_derivatives} exceeds the degree {self.spline.k} of the "
                f"trajectory spline (C^{self.continuity}): its derivatives of order above "
                f"{self.spline.k} are zero between knots and undefined at them; ask for at most "
                f"{self.spline.k}, or build the trajectory with a higher continuity")
        try:
            t = real_array("t", t)
        except InputError as exc:
            raise TrajectoryError(f"evaluation times {exc}") from None
        check_memory("t", t.shape, 2 * (n_derivatives + 1) * len(self.joint_names), "Trajectory.jet")
        if not np.all(np.isfinite(t)):
            raise TrajectoryError("evaluation times must be finite")
        if n_derivatives > self.continuity:
            above = (f"derivative of order {n_derivatives} jumps" if n_derivatives == self.continuity + 1 else
                     f"derivatives of order {self.continuity + 1} to {n_derivatives} jump")
            warnings.warn(f"n_derivatives={n_derivatives} exceeds the continuity of this trajectory "
                          f"(C^{self.continuity}): its {above} at the knots (exact between them); build it "
                          f"with continuity >= {n_derivatives} for continuous ones", HodDynamicsWarning, stacklevel=2)
        tc = np.clip(t, self.start, self.end)
        inside = ((t >= self.start) & (t <= self.end))[..., None]
        rows = [self._derivative(0, tc)]
        rows += [np.where(inside, self._derivative(nu, tc), 0.0) for nu in range(1, n_derivatives + 1)]
        return np.stack(rows, axis=-2)

    def __call__(self, t):
        """Positions (*t.shape, n_joints) at times t."""
        return self.jet(t, 0)[..., 0, :]

    # -- joint order ---------------------------------------------------------------------------
    def for_model(self, model, *, allow_extra=False):
        """This trajectory with its columns in ``model.joint_names`` order (for a floating
        model: the base coordinates ``base_x, base_y, base_z, base_qx, base_qy, base_qz,
        base_qw`` first, see :data:`hod_dynamics.algorithms.floating.BASE_COORDINATES`).

        Joints the model does not know raise :class:`TrajectoryError` unless ``allow_extra``
        (then they are dropped); joints of the model missing here always raise.
        """
        names = configuration_names(model)
        try:
            idx = model.joint_order([nm for nm in self.joint_names if nm not in BASE_COORDINATES],
                                    allow_extra=allow_extra)
        except ModelError as exc:
            raise TrajectoryError(f"trajectory joints do not match model '{model.name}': {exc}") from None
        base = [nm for nm in self.joint_names if nm in BASE_COORDINATES]
        if base and not model.floating and not allow_extra:
            raise TrajectoryError(f"trajectory has base pose columns {base} but model "
                                  f"'{model.name}' is fixed to the world")
        if model.floating:
            missing = [nm for nm in BASE_COORDINATES if nm not in self.joint_names]
            if missing:
                raise TrajectoryError(f"floating model '{model.name}' needs the base pose "
                                      f"columns {list(BASE_COORDINATES)}; missing {missing}")
        idx = np.array([self.joint_names.index(nm) for nm in names], dtype=int)
        if np.array_equal(idx, np.arange(self.n_joints)) and self.n_joints == len(names):
            return self
        from scipy.interpolate import BSpline

        spline = BSpline(self.spline.t, np.asarray(self.spline.c)[:, idx], self.spline.k)
        return Trajectory(names, spline, self.continuity, self.waypoint_times)

    def floating_jet(self, model, t, n_derivatives):
        """Configuration and exact velocity jet of a floating model along the trajectory.

        Returns ``q`` (*t.shape, 7+n) and ``vjet`` (*t.shape, n_derivatives, 6+n): the base
        body twist (omega, v) (base frame) and its derivatives up to ``n_derivatives - 1``,
        then the joint rates; exact for the spline through the base poses (its quaternion
        normalised), see :func:`hod_dynamics.algorithms.floating.velocity_jet`.
        """
        floating_base_only(model, "Trajectory.floating_jet")
        return velocity_jet(self.for_model(model).jet(t, n_derivatives), n_derivatives)

    # -- limits --------------------------------------------------------------------------------
    def check_limits(self, model, *, dt=0.002, effort_rate_limits=None):
        """Check the URDF limits of ``model`` along the trajectory; returns a :class:`LimitReport`.

        Position, velocity and effort (tau from inverse dynamics) are checked on a grid of
        step ``dt`` (s) plus the waypoint times; the effort rate (N m/s) too when
        ``effort_rate_limits`` (n,) is given. Infinite limits are skipped. Never raises on a
        violation: the report lists the worst excess per joint and quantity.
        """
        from ..algorithms.dynamics import time_derivatives

        if not (np.isfinite(dt) and dt > 0):
            raise InputError(f"dt must be a positive number of seconds, got {dt!r}")
        traj = self.for_model(model, allow_extra=True)
        t = np.union1d(np.arange(self.start, self.end, dt), self.waypoint_times)
        order = 0 if effort_rate_limits is None else 1
        if model.floating:  # the joints' limits; the base has none
            q, vjet = traj.floating_jet(model, t, order + 2)
            taujet = time_derivatives_floating(model, q, vjet, order)[..., 6:]
            return limit_report(model, t, joint_jet(q, vjet), taujet, effort_rate_limits)
        qjet = traj.jet(t, order + 2)
        return limit_report(model, t, qjet, time_derivatives(model, qjet, order), effort_rate_limits)


def limit_report(model, t, qjet, taujet, effort_rate_limits=None, *, name_points=False):
    """The URDF limits of ``model`` checked on samples already computed.

    ``t`` (T,) s; ``qjet`` (T, >=2, n) q, qd, ...; ``taujet`` (T, >=1, n) tau, tau', ... (>= 2
    rows when ``effort_rate_limits`` (n,) N m/s is given). Infinite limits are skipped.
    ``name_points``: the samples are points of a trajectory for a controller, each violation
    names its index. Returns a :class:`LimitReport` with the worst excess per joint and quantity.
    """
    checks = [("position", qjet[:, 0], model.lower, model.upper),
              ("velocity", qjet[:, 1], -model.velocity_limits, model.velocity_limits),
              ("effort", taujet[:, 0], -model.effort_limits, model.effort_limits)]
    if effort_rate_limits is not None:
        rate = np.asarray(effort_rate_limits, dtype=float)
        if rate.shape not in ((), (model.n_dof,)) or np.any(~(rate >= 0)):
            raise InputError(f"effort_rate_limits must be one number >= 0 or {model.n_dof} of them "
                             f"(N m/s), got {rate.tolist()}")
        rate = np.broadcast_to(rate, (model.n_dof,))
        checks.append(("effort_rate", taujet[:, 1], -rate, rate))
    violations = []
    for kind, values, lo, hi in checks:
        excess = np.maximum(values - hi, lo - values)
        for j in np.flatnonzero(excess.max(axis=0) > 0):
            i = int(np.argmax(excess[:, j]))
            limit = hi[j] if values[i, j] > hi[j] else lo[j]
            violations.append(LimitViolation(kind, model.joint_names[j], float(t[i]),
                                             float(values[i, j]), float(limit), i if name_points else None))
    return LimitReport(tuple(violations), len(t))


@dataclass(frozen=True)
class LimitViolation:
    """The worst excess of one quantity at one joint: ``value`` at time ``time`` (s) beyond
    ``limit`` (same unit: rad, rad/s, N m, N m/s; m and N for prismatic joints); ``point``: the
    index of the trajectory point there, when the samples were a controller's points."""

    kind: str
    joint: str
    time: float
    value: float
    limit: float
    point: Optional[int] = None

    def __str__(self):
        where = f"point {self.point}, t = {self.time:.4f} s" if self.point is not None else f"t = {self.time:.4f} s"
        return f"{self.kind} of joint '{self.joint}' reaches {self.value:.6g} at {where} (limit {self.limit:.6g})"


@dataclass(frozen=True)
class LimitReport:
    """Result of :meth:`Trajectory.check_limits`: ``violations`` (empty when all limits hold)
    and the number of time samples checked."""

    violations: Tuple[LimitViolation, ...]
    n_samples: int

    @property
    def ok(self) -> bool:
        return not self.violations

    def __str__(self):
        if self.ok:
            return f"all limits hold ({self.n_samples} samples)"
        return "\n".join([f"{len(self.violations)} limit violation(s):"]
                         + [f"  {v}" for v in self.violations])


def shipped_trajectories():
    """Names of the demo trajectories shipped under ``hod_dynamics/data/trajectories``."""
    return sorted(f[:-5] for f in os.listdir(_DIR) if f.endswith(".yaml"))


def load_trajectory(name):
    """A shipped demo trajectory by name (see :func:`shipped_trajectories`) or a YAML path."""
    path = name if os.path.isfile(name) else os.path.join(_DIR, f"{name}.yaml")
    if not os.path.isfile(path):
        raise TrajectoryError(f"no trajectory file or shipped trajectory '{name}'; shipped: "
                              f"{shipped_trajectories()}")
    return Trajectory.from_yaml(path)
