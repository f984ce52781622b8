"""The time base: a controller's grid recovered from a PC's jittered stamps, gaps kept as gaps."""

import numpy as np
import pytest

from hod_dynamics.errors import InputError
from hod_dynamics.recordings.timebase import resolve_time_base

P_NS = 5_000_000   # 200 Hz


def _recording(seed=0, m=4000, jitter=0.03, outliers=0.01, clock_step=None):
    """(grid index, header stamps, receive times, positions): data sampled on the grid."""
    rng = np.random.default_rng(seed)
    k = np.arange(m + 60)
    k = np.delete(k, np.r_[rng.choice(np.arange(10, m), 12, replace=False), np.arange(2500, 2540)])[:m]
    true = k * P_NS
    noise = rng.normal(0, jitter * P_NS, m) + 0.3 * P_NS * (rng.random(m) < outliers)
    header = (10**18 + true + 400_000 + noise).astype(np.int64)
    header[1500] = header[1499]                               # a repeated stamp with new data
    header[1800], header[1801] = header[1800] - int(0.3 * P_NS), header[1801] + int(0.3 * P_NS)  # early, late
    receive = header + 200_000 + rng.exponential(300_000, m).astype(np.int64)
    receive[3000:3010] = receive[3010]                        # a burst: ten messages logged at once
    if clock_step is not None:
        header[clock_step[0]:] += clock_step[1]
    q = np.column_stack([np.sin(1.3 * true * 1e-9), 0.2 * np.cos(0.7 * true * 1e-9)])
    return k - k[0], header, receive, q


def test_grid_recovered_exactly_with_jitter_outliers_drops_and_a_repeated_stamp():
    k, header, receive, q = _recording()
    base = resolve_time_base(header, receive, q)
    assert base.source == "grid" and len(base.keep) == len(k)
    np.testing.assert_array_equal(np.round(base.t / base.period).astype(int), k)
    assert abs(base.period * 1e9 - P_NS) < 1e-3 * P_NS
    # the stamps' jitter around the grid is reported (3 % of 5 ms = 0.15 ms)
    assert 0.12e-3 < base.jitter["rms"] < 0.3e-3 and base.jitter["outliers"] >= 30
    assert base.repeated_stamps == 1 and base.duplicates == 0
    gaps = {g["index"]: g["missing"] for g in base.gaps}
    assert sum(gaps.values()) == 52 and max(gaps.values()) == 40 and len(gaps) == 13
    assert "13 gaps (52 samples missing" in base.describe()


def test_a_header_clock_step_is_found_from_the_receive_times_and_moves_no_sample():
    k, header, receive, q = _recording(clock_step=(2000, -3_600 * 10**9))
    base = resolve_time_base(header, receive, q)
    np.testing.assert_array_equal(np.round(base.t / base.period).astype(int), k)
    assert len(base.clock_steps) == 1 and base.clock_steps[0]["index"] == 2000
    assert base.clock_steps[0]["jump"] == pytest.approx(-3600.0, abs=1e-3)
    assert base.jitter["p99"] < 0.2 * base.period   # measured against each stretch's own line


def test_without_receive_times_a_backward_step_is_still_a_step():
    k, header, _, q = _recording(clock_step=(2000, -2 * 10**9))
    base = resolve_time_base(header, None, q)
    np.testing.assert_array_equal(np.round(base.t / base.period).astype(int), k)
    assert [s["index"] for s in base.clock_steps] == [2000]


def test_exact_duplicates_are_dropped():
    k, header, receive, q = _recording()
    rows = np.r_[np.arange(1001), np.arange(1000, len(k))]
    base = resolve_time_base(header[rows], receive[rows], q[rows])
    assert base.duplicates == 1 and len(base.keep) == len(k)
    np.testing.assert_array_equal(np.round(base.t / base.period).astype(int), k)


def test_auto_keeps_the_stamps_when_the_data_was_sampled_at_them():
    rng = np.random.default_rng(1)
    stamps = 10**18 + np.cumsum(rng.uniform(0.85, 1.15, 3000) * P_NS).astype(np.int64)
    q = np.sin(1.7 * (stamps - stamps[0])[:, None] * 1e-9 * [1.0, 0.6])
    base = resolve_time_base(stamps, None, q)
    assert base.source == "header" and "follow the header stamps" in base.reason
    np.testing.assert_array_equal(base.t, (stamps - stamps[0]) * 1e-9)


def test_irregular_stamps_are_used_as_recorded():
    rng = np.random.default_rng(2)
    stamps = 10**18 + np.cumsum(rng.exponential(P_NS, 2000)).astype(np.int64) + np.arange(2000)
    base = resolve_time_base(stamps, None, np.zeros((2000, 1)))
    assert base.source == "header" and "not on a regular grid" in base.reason


def test_forced_modes():
    k, header, receive, q = _recording()
    head = resolve_time_base(header, receive, q, mode="header")
    assert head.source == "header" and head.duplicates == 1   # the repeated stamp is dropped
    assert np.all(np.diff(head.t) > 0) and head.t0_ns == header.min()
    rec = resolve_time_base(header, receive, q, mode="receive")
    assert rec.source == "receive" and np.all(np.diff(rec.t) > 0)
    index = resolve_time_base(header, receive, q, mode="index")
    assert index.source == "index" and np.allclose(np.diff(index.t), index.period)
    with pytest.raises(InputError, match=r"time base must be one of \['auto', 'header', 'receive', 'index'\]"):
        resolve_time_base(header, receive, q, mode="exact")
    with pytest.raises(InputError, match="distinct stamps"):
        resolve_time_base(np.full(5, 7), None, np.zeros((5, 1)))


def test_messages_out_of_stamp_order_are_put_in_order_and_counted():
    k, header, receive, q = _recording()
    base = resolve_time_base(header, receive, q)
    # a receive delay of 1.5 periods for every 50th message: it arrives after the next one
    order = np.arange(len(k))
    late = np.arange(100, len(k) - 2, 50)
    order[late], order[late + 1] = late + 1, late
    logged = np.maximum.accumulate(receive[order])     # a bag holds its messages in receive order
    shuffled = resolve_time_base(header[order], logged, q[order])
    assert shuffled.out_of_order == len(late) and shuffled.clock_steps == []
    np.testing.assert_array_equal(order[shuffled.keep], base.keep)       # the same samples, in stamp order
    np.testing.assert_allclose(shuffled.t, base.t, atol=1e-12)
    assert f"{len(late)} messages received out of stamp order" in shuffled.describe()
    # ... and with a step of the header clock: sorted within each stretch, the step kept
    k, header, receive, q = _recording(clock_step=(2000, -3_600 * 10**9))
    stepped = resolve_time_base(header[order], np.maximum.accumulate(receive[order]), q[order])
    assert stepped.out_of_order == len(late) and [s["index"] for s in stepped.clock_steps] == [2000]
    np.testing.assert_array_equal(np.round(stepped.t / stepped.period).astype(int), k)
