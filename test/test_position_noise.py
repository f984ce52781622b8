"""The noise of recorded positions: an encoder's step found from the data, the white noise
before the count, synthetic recording errors like the real ones."""

import numpy as np
import pytest

from hod_dynamics.recordings.position_noise import PositionNoise, encoder_step, estimate_noise
from hod_dynamics.recordings.smoothing import noise_level, smooth_padded


def _motion(t):
    return np.column_stack([0.4 * np.sin(0.7 * t) + 0.3, -1.2 + 0.2 * np.cos(1.9 * t), 0.05 * np.sin(0.3 * t)])


@pytest.mark.parametrize("bits", [12, 16, 20, 24])
def test_the_encoder_step_is_found_with_an_offset_and_slow_or_fast_motion(bits):
    step = 2 * np.pi / 2 ** bits
    t = np.arange(20000) * 0.001
    q = _motion(t)
    counted = np.round(q / step) * step + 0.0123          # a calibration offset, not a count
    for j in range(q.shape[1]):
        assert encoder_step(counted[:, j]) == pytest.approx(step, rel=1e-9)


def test_positions_without_a_count_have_no_step():
    rng = np.random.default_rng(0)
    t = np.arange(5000) * 0.005
    noisy = _motion(t) + 1e-5 * rng.standard_normal((len(t), 3))
    assert [encoder_step(noisy[:, j]) for j in range(3)] == [0.0, 0.0, 0.0]


def test_realisations_have_the_count_and_white_noise_of_the_model():
    rng = np.random.default_rng(1)
    q = _motion(np.arange(40000) * 0.001)
    model = PositionNoise(np.array([1e-3, 6e-6, 0.0]), np.array([0.0, 2e-5, 3e-5]))
    e = model.realize(q, rng)
    counted = q + e
    # the first two joints land on a grid of their step (shifted by the draw's offset)
    for j in (0, 1):
        phase = np.mod(counted[:, j] / model.step[j], 1.0)
        assert np.ptp(np.mod(phase - phase[0] + 0.5, 1.0)) < 1e-6
    np.testing.assert_allclose(e.std(axis=0), model.std(), rtol=0.03)


def test_estimated_noise_matches_the_recording():
    # a 16-bit encoder (its staircase alone) and a 20-bit one after sensor noise of 3e-5 rad
    rng = np.random.default_rng(2)
    t = np.arange(25000) * 0.001
    q = _motion(t)[:, :2]
    steps = np.array([2 * np.pi / 2 ** 16, 2 * np.pi / 2 ** 20])
    white = np.array([0.0, 3e-5])
    y = np.round((q + white * rng.standard_normal(q.shape)) / steps) * steps
    pilot = smooth_padded(t, y, [1e-7, 1e-7])
    found = estimate_noise(t, y, pilot, np.random.default_rng(5), noise_level)
    np.testing.assert_allclose(found.step, steps, rtol=1e-9)
    assert found.white[0] < 0.2 * steps[0]
    assert found.white[1] == pytest.approx(3e-5, rel=0.1)
