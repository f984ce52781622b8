"""How large an error the recorded data leave in each tau^(k): the error estimate of a replay.

The fit of the recorded positions (:class:`~hod_dynamics.recordings.joint_fit.JointFit`) makes
synthetic recordings of itself (a parametric bootstrap: the fit plus the content it missed, with
the position noise found); each is fitted alike and carried through the dynamics (and the
friction model), and the spread of tau^(k) over them is the estimated error of tau^(k), per
joint, inside the segments and within their end zones.

What the samples cannot resolve is bounded apart (:func:`hidden_motion`): motion under the
noise floor, which the bootstrap's truth lacks because no test can find it in the data. The
largest persistent sinusoid the data cannot tell from their noise (per joint, see
:meth:`~hod_dynamics.recordings.joint_fit.JointFit.hidden_lines`), between the fit's bandwidth and
HIDDEN_SPAN times it (at most the Nyquist frequency), carried through the dynamics: at frequency
f its q^(k+2) is (2 pi f)^(k+2) times its amplitude, and tau^(k) moves by M(q) q^(k+2) (the
other terms of the k-th derivative of M q'' + c + g carry lower powers of f), so the bound of
joint i is sqrt(sum_j mean_t M_ij(q(t))^2 (a_j (2 pi f_j)^(k+2))^2), the joints' hidden
lines independent. A 2e-4 rad vibration at 10 Hz under 3e-3 rad of noise moves tau'' of an
arm by thousands of N m/s^2 and its fit by nothing.

An order is *supported* by the data where the estimated error is at most :data:`SUPPORT` of
the signal's RMS and the bound at most :data:`HIDDEN_SHARE` of it; where the bound exceeds
that, it is the reported error estimate (when larger).
"""

from dataclasses import dataclass
from typing import Optional

import numpy as np

from ..algorithms.dynamics import time_derivatives
from ..algorithms.loop_dynamics import constrained_dynamics
from ..model.loop_model import LoopModel

SUPPORT = 1.0 / 3.0  # an order is supported when its estimated error is at most this share of its RMS
HIDDEN_SHARE = 0.5   # ... and the motion the samples cannot resolve moves it by at most this share
HIDDEN_SAMPLES = 256  # samples of the mass matrix along the fit for that bound
ERROR_SAMPLES = 20000   # samples the error estimate carries through the dynamics, at most
ERROR_DRAWS = (4, 8)    # synthetic recordings per order: at least, at most (8 x thousands of samples
                        # give the RMS to a few %; 16 cost a replay 0.3 s more)


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
    hidden: Optional[np.ndarray] = None
    hidden_hz: Optional[np.ndarray] = None


def hidden_motion(model, fit, order):
    """The bound of the error in tau^(k), k = 0..order, that motion under the noise floor can
    cause (see the module docstring): ``(bound (order+1, n) in SI units of each order, the
    hidden lines' frequencies (order+1, n) Hz)``. ``fit``: the
    :class:`~hod_dynamics.recordings.joint_fit.JointFit`, along whose positions the mass matrix
    is taken (at HIDDEN_SAMPLES samples, evenly spread)."""
    m, n = len(fit.t), model.n_dof
    idx = np.unique(np.linspace(0, m - 1, min(m, HIDDEN_SAMPLES)).round().astype(int))
    # the columns of M(q) as inverse dynamics at rest with a unit acceleration of one joint, less
    # gravity: the kernel the replay has loaded already (a mass-matrix kernel would load another)
    jets = np.zeros((len(idx), n + 1, 3, n))
    jets[:, :, 0] = fit.jet(0, idx, rows=1)[:, None, 0]
    jets[:, np.arange(1, n + 1), 2, np.arange(n)] = 1.0
    tau = time_derivatives(model, jets, 0)[:, :, 0]                       # (T, n+1, n)
    M = np.swapaxes(tau[:, 1:] - tau[:, :1], 1, 2)                        # (T, n, n): M_ij
    M2 = np.mean(M ** 2, axis=0)                                          # mean_t M_ij^2
    bound, freq = np.zeros((order + 1, model.n_dof)), np.zeros((order + 1, model.n_dof))
    for k in range(order + 1):
        amp, hz = fit.hidden_lines(k)
        bound[k] = np.sqrt(M2 @ (amp * (2 * np.pi * hz) ** (k + 2)) ** 2)
        freq[k] = hz
    return bound, freq


def torque_errors(model, fit, order, friction=None, *, samples=ERROR_SAMPLES, done=None):
    """The error each tau^(k), k = 0..order, of the fit ``fit`` (:class:`~hod_dynamics.
    joint_fit.JointFit`) leaves: the synthetic recordings of :meth:`~hod_dynamics.recordings.joint_fit.
    JointFit.bootstrap` carried through the dynamics (and ``friction``, a
    :class:`~hod_dynamics.algorithms.friction.FrictionModel`, when given) at up to ``samples`` evenly
    spread samples; per joint the RMS over those samples and the draws of tau^(k)(fit of a
    synthetic recording) - tau^(k)(estimated truth), over the samples away from the segments'
    ends; within the end zones, where the estimated truth is least sure, from the
    pseudo-ends of :meth:`~hod_dynamics.recordings.joint_fit.JointFit.end_trials` instead (from the
    synthetic recordings when no segment is long enough for them). ``done(k, errors)``, when
    given, is called after each order k with a :class:`TorqueErrors` final for the orders up to
    k (NaN for the others; for work that can start before the rest, such as a plot). Returns
    :class:`TorqueErrors`."""
    m, n = len(fit.t), len(fit.joint_names)
    total, rigid = np.full((order + 1, n), np.nan), np.full((order + 1, n), np.nan)
    total_ends, rigid_ends = np.full((order + 1, n), np.nan), np.full((order + 1, n), np.nan)
    zones, ends_estimated = np.full(order + 1, np.nan), np.zeros(order + 1, dtype=bool)
    hidden, hidden_hz = hidden_motion(model, fit, order)

    def errors(draws, used):
        return TorqueErrors(total.copy(), rigid.copy(), total_ends.copy(), rigid_ends.copy(), zones.copy(), draws,
                            used, ends_estimated.copy(), hidden, hidden_hz)

    def squared_errors(truth, jets, k):
        """(2, T, n) mean over ``jets`` of the squared error of tau^(k) against ``truth``, without
        and with friction."""
        dynamics = _dynamics_near(model, truth, k)
        true_rigid = dynamics(truth)
        true_fric = None if friction is None else friction.jet(truth[:, 1:k + 2])[:, k]
        out = np.zeros((2, len(truth), n))
        for jet in jets:
            err = dynamics(jet) - true_rigid
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
        if done is not None:
            done(k, errors(draws, used))
    return errors(draws, used)


def _dynamics_near(model, truth, k):
    """tau^(k) (T, n) of jets (T, k+3, n) near ``truth``: a mechanism with loops closes the
    passive joints of each sample from the truth's (Newton's method from there, each sample on
    its own: the synthetic recordings are close to it), a tree has nothing to close."""
    if not isinstance(model, LoopModel):
        return lambda jet: time_derivatives(model, jet, k)[:, k]
    closed = constrained_dynamics(model, truth, k).qjet[:, 0]
    return lambda jet: constrained_dynamics(model, jet, k, guess=closed).tau_a[:, k]
