"""The compiled (numba) kernel of the recursive Newton-Euler on Taylor jets for a floating base:
the recursion of :mod:`hod_dynamics.kernels.rnea_kernels` (in SIMD lanes, or one sample at a
time below ``ONE_BY_ONE_BELOW`` samples) with a moving base body, whose gravity twist follows
the base's orientation jet; and the packing of a floating model's base for it."""

import numpy as np

from ..model.robot_model import per_model
from .njit import njit
from .rnea_kernels import (ONE_BY_ONE_BELOW, factorials, gravity_jet, jet_finite, one_by_one_work, rnea_lanes,
                           rnea_one)

@njit
def rnea_floating(parents, screws, R0, P0, inertias, g0, base_inertia, gravity, jet, quat,
                  vbase, K, wext, out, base):
    """tau jets of a floating-base tree, sample by sample (:func:`rnea_one` with a moving base).

    Model arrays as in :func:`rnea_jets_general` (``g0`` unused: gravity comes with the base) plus
    ``base_inertia`` (6, 6) and ``gravity`` (3,) in the world; ``jet`` (B, >=K+2, n) joint jet
    q^(0..K+1); ``quat`` (B, 4) unit quaternions (x, y, z, w) of the base; ``vbase``
    (B, K+1, 6) the base body twist (omega, v) and its derivatives; ``wext`` (K, Bw, n+1, 6)
    with the base body's external wrench in slot n. The gravity twist of the base is
    ``(0, -R^T g)``, its jet from ``d/dt (R^T g) = -omega x R^T g``. Writes ``out`` (B, K, n)
    and ``base`` (B, K, 6): the base wrench (torque, force) and its derivatives; returns False,
    computing nothing, when the rows it reads hold a NaN or an infinity.
    """
    B = jet.shape[0]
    n = screws.shape[0]
    if not jet_finite(jet, K + 2):
        return False
    has_w = wext.shape[1] > 0
    fact = factorials(K + 2)
    if B >= ONE_BY_ONE_BELOW:
        inertias_b = np.empty((n + 1, 6, 6))
        inertias_b[:n] = inertias
        inertias_b[n] = base_inertia
        rnea_lanes(parents, screws, R0, P0, inertias_b, g0, jet, K, wext, out, fact, True,
                    quat, gravity, vbase, base)
        return True
    R, P, V1, G1, W1, h1, wc1, E1 = one_by_one_work(n, K)
    WR, hb = np.empty((K, 6)), np.empty((K + 1, 6))
    VR, GR = np.empty((B, K + 1, 6)), np.empty((B, K, 3))
    M = base_inertia
    for b in range(B):
        for k in range(K + 1):
            for r in range(6):
                VR[b, k, r] = vbase[b, k, r] / fact[k]
        gravity_jet(quat, b, gravity, VR, GR, b, K)
        WR[:] = 0.0
        rnea_one(parents, screws, R0, P0, inertias, g0, jet, b, K, wext, out, fact, R, P,
                  V1, G1, W1, h1, wc1, E1, VR, GR, WR)
        # the base body: W = M (dV + (0, G)) + sum_j -ad(V_j)^T M V_{k-j} - W_ext + children
        for k in range(K + 1):
            for r in range(6):
                t = 0.0
                for c in range(6):
                    t += M[r, c] * VR[b, k, c]
                hb[k, r] = t
        for k in range(K):
            for r in range(6):
                t = WR[k, r] - (wext[k, b, n, r] if has_w else 0.0)
                for c in range(6):
                    dv = (k + 1.0) * VR[b, k + 1, c]
                    if c >= 3:
                        dv += GR[b, k, c - 3]
                    t += M[r, c] * dv
                for j in range(k + 1):
                    m = k - j
                    u0, u1, u2 = VR[b, j, 0], VR[b, j, 1], VR[b, j, 2]
                    y0, y1, y2 = VR[b, j, 3], VR[b, j, 4], VR[b, j, 5]
                    L0, L1, L2 = hb[m, 0], hb[m, 1], hb[m, 2]
                    F0, F1, F2 = hb[m, 3], hb[m, 4], hb[m, 5]
                    if r == 0:
                        t += u1 * L2 - u2 * L1 + y1 * F2 - y2 * F1
                    elif r == 1:
                        t += u2 * L0 - u0 * L2 + y2 * F0 - y0 * F2
                    elif r == 2:
                        t += u0 * L1 - u1 * L0 + y0 * F1 - y1 * F0
                    elif r == 3:
                        t += u1 * F2 - u2 * F1
                    elif r == 4:
                        t += u2 * F0 - u0 * F2
                    else:
                        t += u0 * F1 - u1 * F0
                base[b, k, r] = t * fact[k]
    return True


@per_model
def kernel_base(model):
    """Writable copies of a floating model's base inertia and world gravity for
    :func:`rnea_floating`."""
    return np.array(model.base_inertia), np.array(model.gravity)
