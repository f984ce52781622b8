"""CSV text of float arrays, formatted by numpy as a whole instead of number by number.

``np.savetxt`` formats every number with Python's ``%`` operator, about 1 us each: the
samples.csv of a 10-minute 1 kHz recording (38 million numbers) took half a minute. Here the
digits of a whole block are computed with float array arithmetic (exact: the mantissa is an
integer below 2^53) and the text is assembled as a byte array in a fixed layout, 10
significant digits in scientific notation: `` 1.234567890e-003`` / ``-1.234567890e+002``
(a space where a minus would go), 0 as `` 0.000000000e+000``, ``nan``, ``inf`` and ``-inf``
right-aligned in the same width. Every CSV reader (Python's float, numpy, pandas) parses the
fields back to within 5e-10 relative, as with ``%.10g``. Magnitudes below 1e-290 are written
as 0.
"""

import numpy as np

DIGITS = 10
WIDTH = DIGITS + 8       # sign, d, '.', DIGITS - 1 digits, 'e', sign, 3 exponent digits, separator
_OFFSET = 330
_SPECIALS = np.array([np.frombuffer(t.rjust(WIDTH - 1), dtype=np.uint8) for t in (b"nan", b"inf", b"-inf")])
_POWERS = np.array([float(f"1e{k - _OFFSET}") for k in range(2 * _OFFSET + 1)])   # correctly rounded, shared


def format_rows(values, backend=None):
    """The CSV text (bytes, one line per row, each ending in a newline) of ``values`` (R, C).
    ``backend``: as for :func:`hod_dynamics.time_derivatives`; numba formats in one pass."""
    from .backend import resolve_backend

    x = np.ascontiguousarray(values, dtype=float)
    if resolve_backend(backend) == "numba":
        from ._csv_kernel import format_rows as kernel

        out = np.empty(x.size * WIDTH, dtype=np.uint8)
        kernel(x, _POWERS, _OFFSET, DIGITS, WIDTH, _SPECIALS, out)
        return out.tobytes()
    return _format_numpy(x)


def _format_numpy(x):
    R, C = x.shape
    a = np.abs(x)
    normal = np.isfinite(x) & (a > 1e-290)
    safe = np.where(normal, a, 1.0)
    e = np.floor(np.log10(safe))
    mant = np.rint(safe * _POWERS[(_OFFSET + DIGITS - 1 - e).astype(np.int64)])
    over = mant >= _POWERS[_OFFSET + DIGITS]                 # 9.9999999996 rounds up to 10.00000000
    e += over
    mant = np.where(over, np.rint(mant / 10.0), mant)
    under = mant < _POWERS[_OFFSET + DIGITS - 1]           # log10 rounded up just below a power of 10
    e -= under
    mant = np.where(under, mant * 10.0, mant)
    mant = np.where(normal, mant, 0.0)
    e = np.where(normal, e, 0.0)
    out = np.empty((WIDTH, R, C), dtype=np.uint8)   # one contiguous plane per character
    out[0] = np.where(x < 0, ord("-"), ord(" ")).astype(np.uint8)
    higher = np.floor(mant / _POWERS[_OFFSET + DIGITS - 1])
    out[1] = (higher + ord("0")).astype(np.uint8)
    out[2] = ord(".")
    for i in range(1, DIGITS):
        lower = np.floor(mant / _POWERS[_OFFSET + DIGITS - 1 - i])
        out[2 + i] = (lower - 10.0 * higher + ord("0")).astype(np.uint8)
        higher = lower
    o = DIGITS + 2
    out[o] = ord("e")
    out[o + 1] = np.where(e < 0, ord("-"), ord("+")).astype(np.uint8)
    ae = np.abs(e)
    out[o + 2] = (np.floor(ae / 100.0) + ord("0")).astype(np.uint8)
    out[o + 3] = (np.floor(ae / 10.0) % 10 + ord("0")).astype(np.uint8)
    out[o + 4] = (ae % 10 + ord("0")).astype(np.uint8)
    for mask, text in zip((np.isnan(x), np.isposinf(x), np.isneginf(x)), _SPECIALS):
        if mask.any():
            for i, ch in enumerate(text):
                out[i][mask] = ch
    out[WIDTH - 1] = ord(",")
    out[WIDTH - 1, :, -1] = ord("\n")
    return np.ascontiguousarray(out.transpose(1, 2, 0)).tobytes()
