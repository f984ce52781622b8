"""The noise of recorded joint positions: an encoder's count plus white sensor noise.

A joint position in a joint-state message is an encoder count times the encoder's step (plus
a constant offset), the count taken of the true position plus whatever electrical or
mechanical noise reaches the encoder. The error of a recorded position is therefore

    e = step * round((q + noise) / step) - q,      noise ~ N(0, white^2)

which is white noise of variance ``white^2 + step^2 / 12`` only when the motion (or the noise)
crosses many counts between samples. A slow joint read by a coarse encoder gives a staircase
instead: its error is correlated over many samples, much of it at low frequencies, and a
smoother that takes it for white noise follows the stairs. :class:`PositionNoise` keeps both
parts per joint, found from the data:

- the step: consecutive recorded positions differ by whole counts, so the step is the
  largest number that divides (to 2 %) 99 % of the nonzero differences
  (:func:`encoder_step`; 0 when there is none: positions computed in floating point from a
  filtered or high-resolution source);
- the white part: the recorded positions' noise level at high frequencies (the median of the
  upper half of their spectrum, as :func:`hod_dynamics.recordings.smoothing.noise_level` measures it)
  must equal that of synthetic recordings of a smooth estimate of the motion made with the
  same step; ``white`` is the standard deviation that makes them equal (0 when the counting
  alone explains the data).

:meth:`PositionNoise.realize` draws synthetic recording errors of a given motion (a random
offset of the count grid per draw, new white noise): the input of the error estimates of
:mod:`hod_dynamics.recordings.joint_fit`.
"""

from dataclasses import dataclass

import numpy as np

LATTICE_TOLERANCE = 0.02    # share of a step within which a difference counts as whole steps
LATTICE_SHARE = 0.99        # share of the differences that must be whole steps
_MAX_DIVISOR = 64           # the step may be the smallest difference seen divided by up to this


def encoder_step(y):
    """The step (> 0) of the lattice ``offset + count * step`` the positions y (m,) lie on,
    or 0.0 when they lie on none (see the module docstring)."""
    d = np.abs(np.diff(np.asarray(y, dtype=float)))
    d = d[d > 0]
    if len(d) < 20:
        return 0.0
    # floating-point rounding of a position that is a count times the step: relative 1e-15
    # of the position, far below a step
    small = np.sort(d)[:2000]
    for j in range(1, _MAX_DIVISOR + 1):
        step = small[0] / j
        counts = np.round(small / step)
        if np.mean(np.abs(small / step - counts) < LATTICE_TOLERANCE) < LATTICE_SHARE:
            continue
        step = float(small @ counts / (counts @ counts))       # least squares over the small ones
        ratio = d / step
        if np.mean(np.abs(ratio - np.round(ratio)) < LATTICE_TOLERANCE) >= LATTICE_SHARE:
            counts = np.round(ratio)
            return float(d @ counts / (counts @ counts))
        return 0.0
    return 0.0


@dataclass(frozen=True)
class PositionNoise:
    """Per joint (n,): the encoder ``step`` (rad or m; 0: no count found) and the standard
    deviation ``white`` of the noise before the count (rad or m)."""

    step: np.ndarray
    white: np.ndarray

    def realize(self, q, rng):
        """Synthetic recording errors (m, n) of the motion q (m, n): each joint counted on a grid
        of its step shifted by a uniform random offset, after white noise of std ``white``;
        the error is the count minus q."""
        q = np.asarray(q, dtype=float)
        noisy = q + self.white * rng.standard_normal(q.shape)
        step = np.where(self.step > 0, self.step, 1.0)
        offset = rng.uniform(0.0, 1.0, q.shape[1]) * step
        counted = np.where(self.step > 0, np.round((noisy - offset) / step) * step + offset, noisy)
        return counted - q

    def std(self):
        """(n,) the standard deviation of the error when the count's share is white."""
        return np.sqrt(self.white ** 2 + self.step ** 2 / 12.0)

    def summary(self, j):
        """A JSON-ready dict of joint j."""
        return {"encoder_step": float(self.step[j]), "white_noise": float(self.white[j])}


def estimate_noise(t, y, smooth_estimate, rng, level_of):
    """The :class:`PositionNoise` of the recorded positions y (m, n) at times t (m,).

    ``smooth_estimate`` (m, n): the motion without its noise (a smoothing fit);
    ``level_of(t, y)`` (n,): the high-frequency noise level (std) of positions, the measure
    both the data and synthetic recordings are matched by; ``rng``: the random generator of
    the synthetic recordings. The white part is found in two steps, each adding the
    variance the synthetic recordings lack (the counting's share is nearly additive).
    """
    y = np.asarray(y, dtype=float)
    n = y.shape[1]
    step = np.array([encoder_step(y[:, j]) for j in range(n)])
    target = level_of(t, y) ** 2
    white = np.where(step > 0, 0.0, np.sqrt(target))
    counted = step > 0
    if counted.any():
        variance = np.zeros(n)
        for _ in range(3):
            model = PositionNoise(step, np.sqrt(variance))
            have = level_of(t, smooth_estimate + model.realize(smooth_estimate, rng)) ** 2
            variance = np.where(counted, np.maximum(variance + target - have, 0.0), 0.0)
        white = np.where(counted, np.sqrt(variance), white)
    return PositionNoise(step, white)
