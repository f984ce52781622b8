"""The one-call chain: trajectory -> q-jet -> tau-jet -> motor references (rigid / SEA / VSA).

Orders available for a torque order ``k`` (see :mod:`hod_dynamics.actuators`):

- q^(0..k+2) (tau^(k) needs q^(k+2)), tau^(0..k), theta^(0..m) with m below;
- the motor torque u = B thdd + D thd + tau needs thdd, hence tau'' and q^(4): with elastic
  actuators the chain computes tau up to max(k, 2) internally, whatever ``k`` is.

The trajectory must be C^(m+2), m = that internal torque order, so that everything returned is
continuous in time (build it with ``continuity >= m + 2``).
"""

from dataclasses import dataclass
from typing import Optional, Tuple

import numpy as np

from .actuators import load_actuators
from .dynamics import time_derivatives
from .errors import InputError, TrajectoryError
from .recursive import check_order


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

    @property
    def motor_thetajet(self):
        """Motor shaft angle and its derivatives, N theta^(j): (B, order+1, n)."""
        return None if self.thetajet is None else self.thetajet * self.gear_ratio

    @property
    def motor_torque(self):
        """Torque at the motor shaft, u / N: (B, n)."""
        return None if self.u is None else self.u / self.gear_ratio


def feedforward(model, trajectory, t, order, actuators=None):
    """tau-jets and motor references along ``trajectory`` at times ``t``.

    ``model``: a :class:`RobotModel`; ``trajectory``: a :class:`Trajectory` whose joints
    match the model (any order, mapped by name; drop extra joints first with
    ``trajectory.for_model(model, allow_extra=True)``); ``t`` (B,) times (s, a scalar gives B = 1);
    ``order``: the torque order k >= 0; ``actuators``: None (rigid, no motor references), an
    :class:`~hod_dynamics.actuators.ActuatorSet`, a dict or a YAML path for
    :func:`~hod_dynamics.actuators.load_actuators`. Returns a :class:`FeedforwardResult`.
    Raises :class:`TrajectoryError` if the trajectory is not smooth enough for ``order``.
    """
    order = check_order(order)
    traj = trajectory.for_model(model)
    acts = None if actuators is None else load_actuators(actuators, model)
    inner = max(order, 2) if acts is not None and acts.elastic.any() else order
    if traj.continuity < inner + 2:
        raise TrajectoryError(f"trajectory is C^{traj.continuity} but torque order {inner} needs "
                              f"C^{inner + 2} (build it with continuity >= {inner + 2})")
    t = np.atleast_1d(np.asarray(t, dtype=float))
    if t.ndim != 1:
        raise InputError(f"t must be a scalar or a 1-D array of times, got shape {t.shape}")
    qjet = traj.jet(t, inner + 2)
    taujet = time_derivatives(model, qjet, inner)
    result = dict(joint_names=tuple(model.joint_names), t=t, qjet=qjet[..., :order + 3, :],
                  taujet=taujet[..., :order + 1, :])
    if acts is None:
        return FeedforwardResult(**result)
    thetajet, u = acts.motor_references(t, qjet, taujet)
    return FeedforwardResult(**result, thetajet=thetajet, u=u,
                             elastic=acts.elastic, gear_ratio=acts.gear_ratio)
