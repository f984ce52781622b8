"""The CSV formatter of :mod:`hod_dynamics.csvtext` compiled by numba: one pass per number
instead of some sixty array passes, rows in parallel threads (every field has the same width,
so each row's place in the output is known), the same bytes (see ``csvtext.format_rows``)."""

import numpy as np
from numba import njit, prange


@njit(cache=True, nogil=True, parallel=True)
def format_rows(x, powers, offset, digits, width, specials, out):
    """Write the fixed-width fields of x (R, C) into out (R * C * width,) uint8; ``powers``:
    10.0 ** (k - offset) for k in 0..2 offset (one table, as the numpy version uses);
    ``specials`` (3, width - 1) uint8: the right-aligned texts of nan, inf, -inf."""
    R, C = x.shape
    top = powers[offset + digits]
    bottom = powers[offset + digits - 1]
    for r in prange(R):
        for c in range(C):
            pos = (r * C + c) * width
            v = x[r, c]
            if np.isnan(v) or np.isinf(v):
                which = 0 if np.isnan(v) else (1 if v > 0 else 2)
                for i in range(width - 1):
                    out[pos + i] = specials[which, i]
            else:
                a = abs(v)
                normal = a > 1e-290
                e = np.floor(np.log10(a)) if normal else 0.0
                mant = 0.0
                if normal:
                    mant = np.rint(a * powers[offset + digits - 1 - int(e)])
                    if mant >= top:
                        e += 1.0
                        mant = np.rint(mant / 10.0)
                    if mant < bottom:
                        e -= 1.0
                        mant = mant * 10.0
                out[pos] = 45 if (v < 0 and normal) else 32
                m = np.int64(mant)          # exact: an integer below 2^53
                for i in range(digits - 1, 0, -1):
                    out[pos + 2 + i] = np.uint8(m % 10 + 48)
                    m //= 10
                out[pos + 1] = np.uint8(m + 48)
                out[pos + 2] = 46
                o = pos + digits + 2
                out[o] = 101
                out[o + 1] = 45 if e < 0 else 43
                ae = np.int64(abs(e))
                out[o + 2] = np.uint8(ae // 100 + 48)
                out[o + 3] = np.uint8(ae // 10 % 10 + 48)
                out[o + 4] = np.uint8(ae % 10 + 48)
            out[pos + width - 1] = 10 if c == C - 1 else 44
