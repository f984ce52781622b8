"""A trajectory resampled for a controller that interpolates effort linearly between its points.

ros2_control's joint_trajectory_controller takes ``JointTrajectoryPoint.effort`` as feedforward
(added to its PID output with the ``effort`` command interface, passed through with ``position,
effort``). Between two points it interpolates the effort *linearly* in time (positions,
velocities and accelerations given: quintic Hermite for the motion), and after the last point it
holds the last one. A waypoint trajectory's torque is far from linear between its waypoints, so
the points here are the waypoint times plus a grid at ``rate`` Hz (times from the trajectory's
start, as ``time_from_start``), each with the exact q, qd, qdd of the trajectory's spline and
tau (and its derivatives) of the inverse dynamics.

Linear interpolation between points h apart differs from a C^2 function f by at most
``h^2 / 8 * max |f''|`` on that interval (the classical bound; equality for a parabola). The
estimate :attr:`EffortTrajectory.interpolation_error` takes ``max |tau''|`` at the two ends of
each interval; for the smooth torques of a spline trajectory the true maximum differs from it
by O(h).
"""

from dataclasses import dataclass
from typing import Tuple

import numpy as np

from ..errors import InputError
from .trajectory_feedforward import feedforward

NS_PER_S = 1_000_000_000


@dataclass(frozen=True)
class EffortTrajectory:
    """Points of a trajectory for a controller (N points, n joints in the model's order).

    ``t`` (N,) s from the trajectory's start, strictly increasing, whole nanoseconds;
    ``qjet`` (N, 3, n) q, qd, qdd; ``taujet`` (N, order+1, n) tau^(0..order) (N m or N, per
    s^k); ``interpolation_error`` (n,) the estimate h^2/8 max|tau''| of how far the linear
    interpolation of tau between the points strays from tau (N m or N); ``rate`` the grid (Hz).
    """

    joint_names: Tuple[str, ...]
    t: np.ndarray
    qjet: np.ndarray
    taujet: np.ndarray
    interpolation_error: np.ndarray
    rate: float


def point_times(trajectory, rate):
    """Times (s, from the trajectory's start) of the points: the grid k / ``rate`` and the
    waypoint times, from max(start, 0) to the end, in whole nanoseconds (strictly increasing,
    as ``time_from_start`` carries them). A trajectory whose span ends at or before 0 (a held
    position) has one point, at 0."""
    if not (np.isfinite(rate) and rate > 0):
        raise InputError(f"rate must be a positive number of Hz, got {rate!r}")
    first, last = max(trajectory.start, 0.0), max(trajectory.end, 0.0)
    k = np.arange(np.ceil(first * rate - 1e-9), np.floor(last * rate + 1e-9) + 1)
    times = np.concatenate([k / rate, trajectory.waypoint_times, [first, last]])
    ns = np.unique(np.round(times * NS_PER_S).astype(np.int64))
    ns = ns[(ns >= round(first * NS_PER_S)) & (ns <= round(last * NS_PER_S))]
    return ns / NS_PER_S


def interpolation_error(t, tau2):
    """Per joint, max over the intervals of h^2/8 max(|tau''| at both ends): the estimated
    largest distance between tau and its linear interpolation between the points at ``t``
    (N,) s, given ``tau2`` (N, n) = tau'' there. Zeros for a single point."""
    if len(t) < 2:
        return np.zeros(tau2.shape[-1])
    h = np.diff(t)[:, None]
    ends = np.maximum(np.abs(tau2[:-1]), np.abs(tau2[1:]))
    return (h * h / 8.0 * ends).max(axis=0)


def effort_trajectory(model, trajectory, rate, order, friction=None, *, backend=None):
    """The points of ``trajectory`` (a :class:`~hod_dynamics.Trajectory` in any joint order)
    for a controller that interpolates effort linearly: :func:`point_times` at ``rate`` Hz,
    q-jets from the spline and tau^(0..``order``), the link-side joint torque (with the joint
    ``friction`` as :func:`~hod_dynamics.feedforward.feedforward` takes it; the motor torque
    of elastic joints is not here). Returns an :class:`EffortTrajectory`. The trajectory must
    be C^(max(order, 2) + 2) (tau'' gives the error estimate)."""
    t = point_times(trajectory, rate)
    inner = max(order, 2)
    result = feedforward(model, trajectory, t, inner, friction=friction, backend=backend)
    return EffortTrajectory(joint_names=result.joint_names, t=t, qjet=result.qjet[:, :3],
                            taujet=result.taujet[:, :order + 1],
                            interpolation_error=interpolation_error(t, result.taujet[:, 2]),
                            rate=float(rate))
