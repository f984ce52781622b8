"""The one-call chain: trajectory -> q-jet -> tau-jet -> motor references (rigid / SEA / VSA).

Orders available for a torque order ``k`` (see :mod:`hod_dynamics.feedforward.actuators`):

- q^(0..k+2) (tau^(k) needs q^(k+2)), tau^(0..k), theta^(0..m) with m below;
- the motor torque u = B thdd + D thd + tau needs thdd, hence tau'' and q^(4): with elastic
  actuators the chain computes tau up to max(k, 2) internally, whatever ``k`` is.

The trajectory must be C^(m+2), m = that internal torque order, so that everything returned is
continuous in time (build it with ``continuity >= m + 2``).
"""

from dataclasses import dataclass
from typing import Optional, Tuple

import numpy as np

from ..algorithms.dynamics import time_derivatives
from ..algorithms.floating import joint_jet, time_derivatives_floating
from ..algorithms.friction import load_friction
from ..arrays import check_order, real_array
from ..errors import InputError, TrajectoryError
from ..units import column
from .actuators import load_actuators


@dataclass(frozen=True)
class FeedforwardResult:
    """Feedforward along a trajectory, B = len(t) samples, n joints in the model's order.

    ``t`` (B,) s; ``qjet`` (B, order+3, n) q^(0..order+2); ``taujet`` (B, order+1, n)
    tau^(0..order) (N m / N); with actuators, ``thetajet`` (B, m+1, n) motor positions
    theta^(0..m) on the joint side (theta = q for rigid joints), m = max(order, 2) with
    elastic joints (u needs theta'') else order, and ``u`` (B, n) the joint-side motor torque (u = tau for rigid joints); ``elastic`` (n,) marks the elastic
    joints and ``gear_ratio`` (n,) N. Without actuators these three are None.
    """

    joint_names: Tuple[str, ...]
    t: np.ndarray
    qjet: np.ndarray
    taujet: np.ndarray
    thetajet: Optional[np.ndarray] = None
    u: Optional[np.ndarray] = None
    elastic: Optional[np.ndarray] = None
    gear_ratio: Optional[np.ndarray] = None
    joint_types: Optional[Tuple[str, ...]] = None
    base_q: Optional[np.ndarray] = None       # floating models: (B, 7) base pose x, y, z, qx, qy, qz, qw
    base_vjet: Optional[np.ndarray] = None    # (B, order+2, 6) base body twist (omega, v) and derivatives
    base_wrench: Optional[np.ndarray] = None  # (B, order+1, 6) missing external wrench (torque, force)

    def __repr__(self):
        """Shapes and span, not the arrays (a profile holds millions of numbers)."""
        t = np.asarray(self.t)
        span = f"t={t[0]:g}..{t[-1]:g} s, " if t.size else ""
        arrays = ", ".join(f"{name}{getattr(self, name).shape}" for name in ("qjet", "taujet", "thetajet", "u",
                                                                         "base_q", "base_vjet", "base_wrench")
                           if getattr(self, name) is not None)
        return (f"FeedforwardResult({len(t)} samples, {span}{len(self.joint_names)} joints "
                f"{list(self.joint_names)}, {arrays})")

    @property
    def motor_thetajet(self):
        """Motor shaft angle and its derivatives, N theta^(j): (B, order+1, n)."""
        return None if self.thetajet is None else self.thetajet * self.gear_ratio

    @property
    def motor_torque(self):
        """Torque at the motor shaft, u / N: (B, n)."""
        return None if self.u is None else self.u / self.gear_ratio


def feedforward(model, trajectory, t, order, actuators=None, friction=None, *, backend=None):
    """tau-jets and motor references along ``trajectory`` at times ``t``.

    ``model``: a :class:`RobotModel`; ``trajectory``: a :class:`Trajectory` whose joints
    match the model (any order, mapped by name; drop extra joints first with
    ``trajectory.for_model(model, allow_extra=True)``); ``t`` (B,) times (s, a scalar gives B = 1);
    ``order``: the torque order k >= 0; ``actuators``: None (rigid, no motor references), an
    :class:`~hod_dynamics.feedforward.actuators.ActuatorSet`, a dict or a YAML path for
    :func:`~hod_dynamics.feedforward.actuators.load_actuators`; ``friction``: None (rigid body only),
    ``"urdf"``, a YAML path, a mapping or a :class:`~hod_dynamics.algorithms.friction.FrictionModel`
    (see :func:`~hod_dynamics.algorithms.friction.load_friction`): tau and its derivatives then include
    the joint friction (the link-side torque an elastic actuator's spring must transmit);
    ``backend``: as for :func:`~hod_dynamics.time_derivatives`.
    Returns a :class:`FeedforwardResult`.
    Raises :class:`TrajectoryError` if the trajectory is not smooth enough for ``order``.
    """
    order = check_order(order)
    traj = trajectory.for_model(model)
    acts = None if actuators is None else load_actuators(actuators, model)
    fric = load_friction(friction, model)
    inner = max(order, 2) if acts is not None and acts.elastic.any() else order
    if traj.continuity < inner + 2:
        raise TrajectoryError(f"trajectory is C^{traj.continuity} but torque order {inner} needs "
                              f"C^{inner + 2} (build it with continuity >= {inner + 2})")
    t = np.atleast_1d(real_array("t", t))
    if t.ndim != 1:
        raise InputError(f"t must be a scalar or a 1-D array of times, got shape {t.shape}")
    base = {}
    if model.floating:
        q, vjet = traj.floating_jet(model, t, inner + 2)
        full = time_derivatives_floating(model, q, vjet, inner, friction=fric, backend=backend)
        qjet, taujet = joint_jet(q, vjet), full[..., 6:]
        base = dict(base_q=q[..., :7], base_vjet=vjet[..., :order + 2, :6],
                    base_wrench=full[..., :order + 1, :6])
    else:
        qjet = traj.jet(t, inner + 2)
        taujet = time_derivatives(model, qjet, inner, friction=fric, backend=backend)
    result = dict(joint_names=tuple(model.joint_names), t=t, qjet=qjet[..., :order + 3, :],
                  taujet=taujet[..., :order + 1, :], joint_types=tuple(model.joint_types), **base)
    if acts is None:
        return FeedforwardResult(**result)
    thetajet, u = acts.motor_references(t, qjet, taujet)
    return FeedforwardResult(**result, thetajet=thetajet, u=u,
                             elastic=acts.elastic, gear_ratio=acts.gear_ratio)


MAX_PROFILE_SAMPLES = 2_000_000


def profile(model, trajectory, rate, order, actuators=None, *, effort_rate_limits=None, friction=None,
            backend=None):
    """Feedforward over the whole span of ``trajectory`` sampled at ``rate`` Hz, and its limits.

    Returns ``(FeedforwardResult, LimitReport)``: samples at t = start + k / rate up to the end,
    and the URDF position, velocity, effort (and, with ``effort_rate_limits`` (n,) N m/s,
    effort-rate) limits checked on them; ``friction`` as for :func:`feedforward`. Raises :class:`InputError` for a rate that is not
    positive or a profile of more than MAX_PROFILE_SAMPLES samples.
    """
    from .trajectory import limit_report

    traj = trajectory.for_model(model)
    count = profile_samples(traj, rate)
    if count > MAX_PROFILE_SAMPLES:
        raise InputError(f"a {traj.end - traj.start:g} s profile at {rate:g} Hz has {count} samples "
                         f"(more than {MAX_PROFILE_SAMPLES}); lower the rate")
    t = traj.start + np.arange(count) / rate
    rows = 1 if effort_rate_limits is not None else 0  # tau' is needed to check rate limits
    result = feedforward(model, traj, t, max(order, rows), actuators, friction, backend=backend)
    report = limit_report(model, t, result.qjet, result.taujet, effort_rate_limits)
    if order < rows:
        result = FeedforwardResult(**{**result.__dict__, "qjet": result.qjet[:, :order + 3],
                                      "taujet": result.taujet[:, :order + 1]})
    return result, report


def profile_samples(trajectory, rate):
    """The number of samples :func:`profile` computes: t = start + k / ``rate`` up to the end.
    Raises InputError for a rate that is not a positive number of Hz."""
    if not (np.isfinite(rate) and rate > 0):
        raise InputError(f"profile rate must be a positive number of Hz, got {rate!r}")
    return int(np.floor((trajectory.end - trajectory.start) * rate + 0.5)) + 1


def profile_file_bytes(samples, n_joints, order, actuators=False):
    """Estimated sizes in bytes ``{"csv": ..., "npz": ...}`` of :func:`save_csv` and
    :func:`save_npz` for a profile of ``samples`` samples, ``n_joints`` joints, torque ``order``,
    with motor references when ``actuators``: the NPZ holds the arrays (float64) as they are,
    the CSV about 18 characters per value (``%.12g`` and a separator)."""
    n, rows = n_joints, order + 1
    columns = 1 + n + rows * n + (2 * n if actuators else 0)
    motor = (max(order, 2) + 2) * n if actuators else 0  # thetajet rows and u
    values = 1 + (order + 3) * n + rows * n + motor
    return {"csv": samples * columns * 18, "npz": samples * values * 8}


def summary(result, report):
    """A JSON-ready digest of a profile: peaks of |tau^(k)| per joint and order, limit violations."""
    tau = result.taujet
    return {
        "samples": len(result.t), "duration": float(result.t[-1] - result.t[0]),
        "order": tau.shape[1] - 1, "joint_names": list(result.joint_names),
        "peak_abs": {nm: np.abs(tau[:, :, j]).max(axis=0).tolist() for j, nm in enumerate(result.joint_names)},
        "limit_violations": [dict(kind=v.kind, joint=v.joint, time=v.time, value=v.value, limit=v.limit)
                             for v in report.violations],
        "effort_limit_violations": [v.joint for v in report.violations if v.kind == "effort"],
        "effort_rate_limit_violations": [v.joint for v in report.violations if v.kind == "effort_rate"],
    }


def csv_columns(result):
    """(header list, blocks) of :func:`save_csv`: ``t [s]``, ``q_<joint> [rad]``,
    ``tau<k>_<joint> [N m/s^k]`` (m and N for prismatic joints), and with actuators
    ``theta_<joint> [rad]``, ``u_<joint> [N m]``; ``blocks`` (B,) / (B, n) arrays whose columns,
    side by side, match the header."""
    names, K = result.joint_names, result.taujet.shape[1]
    types = result.joint_types or ("revolute",) * len(names)
    pos = [(nm, typ) for nm, typ in zip(names, types)]
    cols = ["t [s]"] + [column(f"q_{j}", typ, "position") for j, typ in pos]
    cols += [column(f"tau{k}_{j}", typ, "torque", k) for k in range(K) for j, typ in pos]
    data = [result.t, result.qjet[:, 0]] + [result.taujet[:, k] for k in range(K)]
    if result.thetajet is not None:
        cols += [column(f"theta_{j}", typ, "position") for j, typ in pos]
        cols += [column(f"u_{j}", typ, "torque") for j, typ in pos]
        data += [result.thetajet[:, 0], result.u]
    return cols, data


def save_csv(result, path):
    """Write t, q and tau^(0..order) (and theta, u with actuators) as CSV with a header row whose
    names carry their units after a space (:func:`csv_columns`). Returns ``path``."""
    cols, data = csv_columns(result)
    np.savetxt(path, np.column_stack(data), delimiter=",", header=",".join(cols), comments="", fmt="%.12g")
    return path


def save_npz(result, path):
    """Write every array of the result (t, qjet, taujet, thetajet, u, joint_names) as NPZ."""
    arrays = {k: v for k, v in result.__dict__.items() if v is not None}
    arrays["joint_names"] = np.array(result.joint_names)
    np.savez(path, **arrays)
    return path
