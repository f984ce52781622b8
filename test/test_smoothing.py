"""The discrete smoothing spline: exact against its transfer function at the levels a 1-kHz
recording's fourth derivative needs, holes filled, levels that move continuously with the data."""

import numpy as np
import pytest

from hod_dynamics.recordings.smoothing import Smoother, choose_level, on_grid, smooth

H = 1e-3
FREQ = np.array([0.3, 0.9, 2.0])
AMP = np.array([1.0, 0.1, 0.01])


def _signal(t, offset=1.5):
    return offset + (AMP * np.sin(2 * np.pi * FREQ * t[:, None])).sum(axis=1)


@pytest.mark.parametrize("lam", [1e-6, 1e-4, 1e-3])
def test_smoother_equals_its_transfer_function_far_from_the_ends(lam):
    # an even grid, far from the ends: each sine is scaled by 1 / (1 + nu mu^3), nu = lam / h^5,
    # mu = 2 - 2 cos(omega h) (the Whittaker smoother's gain). A solve of (I + lam B'B) f = y
    # alone is off by lam |B|^2 eps |y| here (up to 5e-3 rad at 1e-3 s^5): the refinement by
    # successive differences must bring it to rounding
    t = np.arange(20000) * H
    gain = 1.0 / (1.0 + lam / H ** 5 * (2 - 2 * np.cos(2 * np.pi * FREQ * H)) ** 3)
    expected = 1.5 + (AMP * gain * np.sin(2 * np.pi * FREQ * t[:, None])).sum(axis=1)
    got = smooth(t, _signal(t)[:, None], [lam])[:, 0]
    assert np.abs(got - expected)[5000:15000].max() < 1e-12


def test_padded_smoother_keeps_each_column_and_its_level():
    t = np.arange(3000) * H
    y = np.column_stack([_signal(t), -_signal(t, 0.2), _signal(t)])
    lam = np.array([1e-5, 0.0, 1e-3])
    out = Smoother(t, lam)(y)
    np.testing.assert_array_equal(out[:, 1], y[:, 1])                        # level 0: the data
    assert np.abs(out[:, 0] - y[:, 0])[500:-500].max() < np.abs(out[:, 2] - y[:, 2])[500:-500].max()
    single = Smoother(t, lam[[2]])(y[:, [2]])
    np.testing.assert_allclose(out[:, 2], single[:, 0], rtol=1e-14)


def test_holes_are_filled_by_a_local_polynomial():
    t = np.delete(np.arange(400), [5, 50, 51, 100, 103, 200, 201, 202, 203, 204, 205, 397]) * 0.01
    y = np.column_stack([np.sin(t), np.cos(2 * t)])
    h, grid_values, at = on_grid(t, y)
    tg = np.arange(len(grid_values)) * h
    np.testing.assert_array_equal(grid_values[at], y)
    np.testing.assert_allclose(grid_values, np.column_stack([np.sin(tg), np.cos(2 * tg)]), atol=1e-7)
    # uneven times: resampled onto a grid of the median step
    jittered = t + 1e-4 * np.sin(37 * t)
    h2, resampled, at2 = on_grid(jittered, y)
    assert at2 is None and abs(h2 - 0.01) < 1e-6


def test_the_level_moves_continuously_with_the_data():
    # the candidate levels are a tenth of a decade apart (26 %); the level chosen between them
    # follows a 2 % change of the noise by a few %, not by a step or not at all
    rng = np.random.default_rng(3)
    t = np.arange(5000) * 0.005
    noise = 2e-5 * rng.standard_normal((len(t), 1))
    lam, _ = choose_level(t, _signal(t)[:, None] + noise)
    lam2, _ = choose_level(t, _signal(t)[:, None] + 1.02 * noise)
    assert 1.002 < lam2[0] / lam[0] < 1.15
