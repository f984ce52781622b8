"""Jets: stacks of time derivatives, and the truncated Taylor arithmetic behind them.

At the API a *jet* is an array (..., K, n) whose row k is the k-th time derivative x^(k).
Inside the algorithms the rows are *normalised Taylor coefficients* c_k = x^(k) / k!, with
the coefficient axis first and the batch flattened: (K, B, ...). With them the Leibniz rule
(f g)^(k) = sum_j C(k, j) f^(k-j) g^(j) becomes the plain Cauchy product
c_k(f g) = sum_j c_j(f) c_{k-j}(g), one helper for every order.
"""

from math import factorial

import numpy as np

from ..arrays import batch_size


def factorials(K):
    """(K,) array of 0!, 1!, ..., (K-1)!."""
    return np.array([float(factorial(k)) for k in range(K)])


def to_taylor(jet):
    """Derivative jet (..., K, m) -> normalised coefficients (K, B, m), batch flattened."""
    K, m = jet.shape[-2:]
    c = jet.reshape(batch_size(jet.shape[:-2]), K, m) / factorials(K)[:, None]
    return np.ascontiguousarray(np.moveaxis(c, 1, 0))


def from_taylor(c, batch_shape):
    """Normalised coefficients (K, B, m) -> derivative jet (*batch_shape, K, m)."""
    K = c.shape[0]
    d = np.moveaxis(c * factorials(K)[:, None, None], 0, 1)
    return d.reshape(tuple(batch_shape) + (K,) + c.shape[2:])


def cauchy_matvec(A, x, K=None):
    """sum_j A[j] @ x[k-j] for k < K: A (KA, B, r, c), x (Kx, B, c) -> (K, B, r)."""
    K = min(len(A), len(x)) if K is None else K
    out = np.zeros((K,) + np.broadcast_shapes(A.shape[1:-2], x.shape[1:-1]) + A.shape[-2:-1])
    for j in range(min(K, len(A))):
        m = min(K - j, len(x))
        out[j:j + m] += np.matmul(A[j], x[:m, ..., None])[..., 0]
    return out


def cauchy_matTvec(A, x, K=None):
    """sum_j A[j].T @ x[k-j] for k < K: A (KA, B, r, c), x (Kx, B, r) -> (K, B, c)."""
    K = min(len(A), len(x)) if K is None else K
    out = np.zeros((K,) + np.broadcast_shapes(A.shape[1:-2], x.shape[1:-1]) + A.shape[-1:])
    for j in range(min(K, len(A))):
        m = min(K - j, len(x))
        out[j:j + m] += np.matmul(x[:m, ..., None, :], A[j])[..., 0, :]
    return out


def cauchy_scale(s, X, K=None):
    """sum_j s[j] * X[k-j] for k < K: s (Ks, B), X (Kx, B, ...) -> (K, B, ...)."""
    K = min(len(s), len(X)) if K is None else K
    extra = X.ndim - s.ndim
    out = np.zeros((K,) + np.broadcast_shapes(s.shape[1:], X.shape[1:X.ndim - extra])
                   + X.shape[X.ndim - extra:])
    for j in range(min(K, len(s))):
        m = min(K - j, len(X))
        out[j:j + m] += s[j].reshape(s.shape[1:] + (1,) * extra) * X[:m]
    return out


def cross(a, b):
    """Cross product over the last axis (3), broadcasting; faster than np.cross for small arrays."""
    a0, a1, a2 = a[..., 0], a[..., 1], a[..., 2]
    b0, b1, b2 = b[..., 0], b[..., 1], b[..., 2]
    return np.stack([a1 * b2 - a2 * b1, a2 * b0 - a0 * b2, a0 * b1 - a1 * b0], axis=-1)


def cauchy_bias(V, h, K):
    """sum_j -ad(V[j]).T @ h[k-j] for k < K, i.e. (w x L + v x P, w x P) for V = (w, v),
    h = (L, P): V (KV, B, 6), h (Kh, B, 6) -> (K, B, 6)."""
    out = np.zeros((K,) + np.broadcast_shapes(V.shape[1:], h.shape[1:]))
    for j in range(min(K, len(V))):
        m = min(K - j, len(h))
        w, v = V[j, ..., :3][None], V[j, ..., 3:][None]
        L, P = h[:m, ..., :3], h[:m, ..., 3:]
        out[j:j + m, ..., :3] += cross(w, L) + cross(v, P)
        out[j:j + m, ..., 3:] += cross(w, P)
    return out
