"""The vectorised CSV formatter: both backends write the same bytes, which parse back to 10 digits."""

import numpy as np
import pytest

from hod_dynamics.csvtext import format_rows

from oracles import BACKENDS


@pytest.mark.parametrize("backend", BACKENDS)
def test_numbers_parse_back_to_ten_significant_digits(backend):
    rng = np.random.default_rng(0)
    x = rng.standard_normal((300, 9)) * 10.0 ** rng.integers(-200, 200, (300, 9))
    x[0] = [0.0, -0.0, np.nan, np.inf, -np.inf, 1.0, -0.001, 9.99999999996, 1e-300]
    x[1, :4] = [123456789012345.0, 5e-324, 1e308, -2.5e-7]
    text = format_rows(x, backend=backend)
    rows = [line.split(",") for line in text.decode().splitlines()]
    assert len(rows) == 300 and all(len(r) == 9 for r in rows)
    back = np.array([[float(v) for v in r] for r in rows])
    normal = np.isfinite(x) & (np.abs(x) > 1e-290)
    assert np.all(np.abs(back[normal] - x[normal]) <= 5.0000001e-10 * np.abs(x[normal]))
    np.testing.assert_array_equal(back[~normal & np.isfinite(x)], 0.0)     # below 1e-290: 0
    np.testing.assert_array_equal(np.isnan(back), np.isnan(x))
    np.testing.assert_array_equal(back[np.isinf(x)], x[np.isinf(x)])
    assert rows[0][7].strip() == "1.000000000e+001" and rows[0][6] == "-1.000000000e-003"


@pytest.mark.parametrize("backend", BACKENDS[1:])
def test_numba_writes_the_bytes_of_the_numpy_version(backend):
    rng = np.random.default_rng(1)
    x = rng.standard_normal((2000, 13)) * 10.0 ** rng.integers(-30, 30, (2000, 13))
    x[::97, 3] = np.nan
    assert format_rows(x, backend=backend) == format_rows(x, backend="numpy")
