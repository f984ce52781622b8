"""Compiled (numba) kernels of the first- and second-order partials of inverse dynamics.

First order: loops over samples and bodies implementing exactly the formulas of
:mod:`hod_dynamics.partials` (world-frame state and the assembly of d tau_i / d x_j).

Second order: the backward pass of Singh, Russell and Wensing (2022), "Analytical second-order
partial derivatives of rigid-body inverse dynamics", on the same world-frame state, O(n d^2)
for a tree of depth d, where the numpy path differentiates the first-order assembly along every
direction (O(n^3) tangents): two formulations, which the tests comparing the backends tie
together. Structure exploited: the symmetric halves are written as copies; only the entries of
triples on one path to the base are computed, the rest (structurally zero) zeroed from a list
made once per model, or not at all for a caller that keeps them zero (a
:class:`~hod_dynamics.second_partials.SecondPartialsData`); the paper's per-pair vectors are cut from 13
to 7 by the symmetry of ad*(S) Ic - Ic ad(S) and the skew-symmetry of cmf(Ic S) (see the
comment above :func:`_body_terms`).

The second-order kernel is one sample per call (:func:`second_partials_one`; batches loop over
it) into caller-provided tensors and work array: it allocates nothing, so it is compiled
without numba's reference counting (``_nrt=False``), which otherwise increments and decrements
the count of every array a helper receives (atomic operations: a sixth of the Panda's time).
A single sample from Python costs the dispatch of its arguments and the kernel, nothing else.

The model arrays the kernels read are packed beside them, at the end of this module, once per
model (:func:`first_model`, :func:`second_arrays`).

Longer than the package's other modules (about 770 lines): the first- and second-order kernels
share the world-frame state and the 6x6 helpers below, which numba inlines into each; apart,
one module would import the other's private helpers.

Importing this module needs numba; :mod:`hod_dynamics.backend` imports it only when asked.
"""
import math  # noqa: F401 (screw_exp's, in the inlined copies' scope)
import threading
import types
from functools import partial

import numpy as np
from numba.extending import register_jitable

from ._kernels import _inline, _njit, screw_exp
from .model import per_model


@_njit
def _state(parents, screws, refs, inertias, g0, q, qd, qdd, S, I, V, Vp, Sd, A, Ap, h, alpha,
           Ic, Bc, hc, F, scratch, base=0):
    """World-frame RNEA quantities of one sample (see partials._state); q, qd, qdd (n,).

    ``scratch``: arrays from :func:`_state_scratch`; rows are addressed by index (no views).
    ``base`` leading columns form a free joint (see partials._floating_partials): their parent
    is the world, and their last body moves with all of them.
    """
    RT, pT, E, MA, N, G = scratch
    n = screws.shape[0]
    for r in range(6):  # a loop, not a slice assignment: numba may copy a slice source
        G[0, r] = g0[r]
    for l in range(n):
        par = parents[l]
        pe0, pe1, pe2 = screw_exp(screws, l, q[l], E)
        # C = refs[l] @ (E, pe); T_l = T_par @ C
        for r in range(3):
            c0 = refs[l, r, 0] * E[0, 0] + refs[l, r, 1] * E[1, 0] + refs[l, r, 2] * E[2, 0]
            c1 = refs[l, r, 0] * E[0, 1] + refs[l, r, 1] * E[1, 1] + refs[l, r, 2] * E[2, 1]
            c2 = refs[l, r, 0] * E[0, 2] + refs[l, r, 1] * E[1, 2] + refs[l, r, 2] * E[2, 2]
            pc = refs[l, r, 0] * pe0 + refs[l, r, 1] * pe1 + refs[l, r, 2] * pe2 + refs[l, r, 3]
            MA[r, 0], MA[r, 1], MA[r, 2], MA[r, 3] = c0, c1, c2, pc
        for r in range(3):
            if par < 0:
                pT[l, r] = MA[r, 3]
                for c in range(3):
                    RT[l, r, c] = MA[r, c]
            else:
                pT[l, r] = (RT[par, r, 0] * MA[0, 3] + RT[par, r, 1] * MA[1, 3]
                            + RT[par, r, 2] * MA[2, 3] + pT[par, r])
                for c in range(3):
                    RT[l, r, c] = (RT[par, r, 0] * MA[0, c] + RT[par, r, 1] * MA[1, c]
                                   + RT[par, r, 2] * MA[2, c])
        p0, p1, p2 = pT[l, 0], pT[l, 1], pT[l, 2]
        for r in range(3):
            S[l, r] = (RT[l, r, 0] * screws[l, 0] + RT[l, r, 1] * screws[l, 1]
                       + RT[l, r, 2] * screws[l, 2])
            S[l, r + 3] = (RT[l, r, 0] * screws[l, 3] + RT[l, r, 1] * screws[l, 4]
                           + RT[l, r, 2] * screws[l, 5])
        w0, w1, w2 = S[l, 0], S[l, 1], S[l, 2]
        S[l, 3] += p1 * w2 - p2 * w1
        S[l, 4] += p2 * w0 - p0 * w2
        S[l, 5] += p0 * w1 - p1 * w0
        _world_inertia(inertias, l, RT, p0, p1, p2, MA, I)
        if par < 0 or l < base:
            _lin(Vp, l, G, 1, 0.0, G, 1, 0.0)
            _lin(Ap, l, G, 0, 1.0, G, 1, 0.0)
        else:
            _lin(Vp, l, V, par, 1.0, G, 1, 0.0)
            _lin(Ap, l, A, par, 1.0, G, 1, 0.0)
        _ad_r(Vp, l, S, l, Sd, l, 0)
        for r in range(6):
            V[l, r] = Vp[l, r] + S[l, r] * qd[l]
            A[l, r] = Ap[l, r] + S[l, r] * qdd[l] + Sd[l, r] * qd[l]
        if l == base - 1:  # the free joint's body: the twist and acceleration of all columns
            for r in range(6):
                v, a = 0.0, G[0, r]
                for k in range(base):
                    v += S[k, r] * qd[k]
                    a += S[k, r] * qdd[k]
                V[l, r], A[l, r] = v, a
        _mv_r(I, l, V, l, h, l, 0)
        _ad_r(Ap, l, S, l, alpha, l, 0)
        _ad_r(Vp, l, Sd, l, alpha, l, 1)
        _sym_adstar(V, l, I, l, Bc, l, 0, N)
        for r in range(6):
            hc[l, r] = h[l, r]
            for c in range(6):
                Ic[l, r, c] = I[l, r, c]
        _mv_r(I, l, A, l, F, l, 0)
        _adstar_r(V, l, h, l, F, l, 1)
    _subtree_sums(parents, 1, hc, F, Ic, Bc)


@_inline
def _world_inertia(inertias, l, RT, p0, p1, p2, MA, I):
    """I[l] = the spatial inertia inertias[l] = [[J, h~], [-h~, m 1]] (about the body
    frame's origin, (angular, linear)) expressed in the world frame, the body frame being at
    (RT[l], p): [[J', h'~], [-h'~, m 1]] with h' = R h + m p and, by the parallel-axis
    theorem, J' = R J R^T + m (|p|^2 1 - p p^T) + 2 (p . g) 1 - g p^T - p g^T (g = R h).
    A quarter of the work of the 6x6 congruence Ad^-T M Ad^-1. MA (6, 6) scratch."""
    m = inertias[l, 3, 3]
    h0, h1, h2 = inertias[l, 2, 4], inertias[l, 0, 5], inertias[l, 1, 3]
    for r in range(3):
        for c in range(3):
            MA[r, c] = (RT[l, r, 0] * inertias[l, 0, c] + RT[l, r, 1] * inertias[l, 1, c]
                        + RT[l, r, 2] * inertias[l, 2, c])
    g0 = RT[l, 0, 0] * h0 + RT[l, 0, 1] * h1 + RT[l, 0, 2] * h2
    g1 = RT[l, 1, 0] * h0 + RT[l, 1, 1] * h1 + RT[l, 1, 2] * h2
    g2 = RT[l, 2, 0] * h0 + RT[l, 2, 1] * h1 + RT[l, 2, 2] * h2
    pp, pg = p0 * p0 + p1 * p1 + p2 * p2, p0 * g0 + p1 * g1 + p2 * g2
    MA[3, 0], MA[3, 1], MA[3, 2] = p0, p1, p2
    MA[4, 0], MA[4, 1], MA[4, 2] = g0, g1, g2
    diag = m * pp + 2.0 * pg
    for r in range(3):
        for c in range(r, 3):
            t = (MA[r, 0] * RT[l, c, 0] + MA[r, 1] * RT[l, c, 1] + MA[r, 2] * RT[l, c, 2]
                 - m * MA[3, r] * MA[3, c] - MA[4, r] * MA[3, c] - MA[3, r] * MA[4, c])
            if r == c:
                t += diag
            I[l, r, c] = I[l, c, r] = t
    e0, e1, e2 = g0 + m * p0, g1 + m * p1, g2 + m * p2
    for r in range(3):
        for c in range(3):
            I[l, r + 3, c + 3] = m if r == c else 0.0
    I[l, 0, 3], I[l, 0, 4], I[l, 0, 5] = 0.0, -e2, e1
    I[l, 1, 3], I[l, 1, 4], I[l, 1, 5] = e2, 0.0, -e0
    I[l, 2, 3], I[l, 2, 4], I[l, 2, 5] = -e1, e0, 0.0
    for r in range(3):
        for c in range(3):
            I[l, r + 3, c] = -I[l, r, c + 3]


@_njit
def _subtree_sums(parents, k, h, F, Ic, Bc, with_Ic=True):
    """Turn per-body rows into composites (sums over each body's subtree) in place; row
    ``l * k + m`` holds body l, direction m < k (k = 1 for the primal state). ``with_Ic``
    False leaves Ic alone (tangents along qd, where the inertias do not change)."""
    for l in range(parents.shape[0] - 1, -1, -1):
        par = parents[l]
        if par >= 0:
            for m in range(k):
                a, b = par * k + m, l * k + m
                for r in range(6):
                    h[a, r] += h[b, r]
                    F[a, r] += F[b, r]
                    for c in range(6):
                        Bc[a, r, c] += Bc[b, r, c]
                    if with_Ic:
                        for c in range(6):
                            Ic[a, r, c] += Ic[b, r, c]


@_njit
def _state_scratch(n):
    """Work arrays of :func:`_state`; G row 0 holds the base acceleration, row 1 zeros."""
    return (np.empty((n, 3, 3)), np.empty((n, 3)), np.empty((3, 3)), np.empty((6, 6)),
            np.empty((1, 6, 6)), np.zeros((2, 6)))


# -- row helpers: vectors are rows of (rows, 6) arrays, matrices rows of (rows, 6, 6) arrays,
# addressed by index rather than sliced (a slice is a reference-counted view, which costs more
# than the arithmetic); mode 0 stores, 1 adds, -1 subtracts
@_njit
def _put(O, io, mode, r0, r1, r2, r3, r4, r5):
    if mode == 0:
        O[io, 0], O[io, 1], O[io, 2], O[io, 3], O[io, 4], O[io, 5] = r0, r1, r2, r3, r4, r5
    else:
        O[io, 0] += mode * r0
        O[io, 1] += mode * r1
        O[io, 2] += mode * r2
        O[io, 3] += mode * r3
        O[io, 4] += mode * r4
        O[io, 5] += mode * r5


@_njit
def _ad_r(A, ia, B, ib, O, io, mode):
    """O[io] (op)= ad(A[ia]) B[ib]."""
    a0, a1, a2, a3, a4, a5 = A[ia, 0], A[ia, 1], A[ia, 2], A[ia, 3], A[ia, 4], A[ia, 5]
    b0, b1, b2, b3, b4, b5 = B[ib, 0], B[ib, 1], B[ib, 2], B[ib, 3], B[ib, 4], B[ib, 5]
    _put(O, io, mode, a1 * b2 - a2 * b1, a2 * b0 - a0 * b2, a0 * b1 - a1 * b0,
         a1 * b5 - a2 * b4 + a4 * b2 - a5 * b1, a2 * b3 - a0 * b5 + a5 * b0 - a3 * b2,
         a0 * b4 - a1 * b3 + a3 * b1 - a4 * b0)


@_njit
def _adstar_r(A, ia, F, ib, O, io, mode):
    """O[io] (op)= ad*(A[ia]) F[ib]."""
    a0, a1, a2, a3, a4, a5 = A[ia, 0], A[ia, 1], A[ia, 2], A[ia, 3], A[ia, 4], A[ia, 5]
    f0, f1, f2, f3, f4, f5 = F[ib, 0], F[ib, 1], F[ib, 2], F[ib, 3], F[ib, 4], F[ib, 5]
    _put(O, io, mode, a1 * f2 - a2 * f1 + a4 * f5 - a5 * f4, a2 * f0 - a0 * f2 + a5 * f3 - a3 * f5,
         a0 * f1 - a1 * f0 + a3 * f4 - a4 * f3, a1 * f5 - a2 * f4, a2 * f3 - a0 * f5,
         a0 * f4 - a1 * f3)


@_inline
def _mv_r(M, im, X, ix, O, io, mode):
    """O[io] (op)= M[im] @ X[ix]."""
    x0, x1, x2, x3, x4, x5 = X[ix, 0], X[ix, 1], X[ix, 2], X[ix, 3], X[ix, 4], X[ix, 5]
    _put(O, io, mode,
         _row(M, im, 0, x0, x1, x2, x3, x4, x5), _row(M, im, 1, x0, x1, x2, x3, x4, x5),
         _row(M, im, 2, x0, x1, x2, x3, x4, x5), _row(M, im, 3, x0, x1, x2, x3, x4, x5),
         _row(M, im, 4, x0, x1, x2, x3, x4, x5), _row(M, im, 5, x0, x1, x2, x3, x4, x5))


@_njit
def _row(M, im, k, x0, x1, x2, x3, x4, x5):
    return (M[im, k, 0] * x0 + M[im, k, 1] * x1 + M[im, k, 2] * x2 + M[im, k, 3] * x3
            + M[im, k, 4] * x4 + M[im, k, 5] * x5)


@_njit
def _sym_adstar(A, ia, D, idd, O, io, mode, N):
    """O[io] (op)= N + N^T with N = ad*(A[ia]) D[idd] (6x6); N (>= 1, 6, 6) scratch, N[0]
    written.

    With D = I this is the inertia rate ad*(a) I - I ad(a) (I symmetric)."""
    _adstar_cols(A, ia, D, idd, False, N, 0)
    for r in range(6):
        for c in range(6):
            if mode == 0:
                O[io, r, c] = N[0, r, c] + N[0, c, r]
            else:
                O[io, r, c] += N[0, r, c] + N[0, c, r]


@_njit
def _lin(O, io, A, ia, a, B, ib, b):
    """O[io] = a A[ia] + b B[ib]."""
    for r in range(6):
        O[io, r] = a * A[ia, r] + b * B[ib, r]


# -- second order: the backward pass of Singh, Russell and Wensing (2022) ------------------------
# For each body i (leaf to root, composites of its subtree), each ancestor j of i (i included)
# and each ancestor k of j (j included), the entries of the four tensors at the permutations of
# (i, j, k) are dot products of per-pair vectors with the motion subspace S_k and its two
# world-frame rates psid_k = ad(V_parent) S_k and psidd_k = ad(A_parent) S_k + ad(V_parent) psid_k
# (for a 1-DoF joint the paper's phid_k = ad(V_k) S_k equals psid_k, since ad(S_k) S_k = 0).
# Entries of triples that are not on one path to the base are structurally zero.
#
# Symmetries used beyond the paper's: r1 = ad*(S_i) Ic - Ic ad(S_i) is symmetric and
# r0 = cmf(Ic S_i) skew, so S_j^T r1, r1 S_j and (r1 +- r0) S_j need two products, not four;
# the paper's 13 vectors per (i, j) reduce to 7 applied to S_k, 4 to psid_k and 2 to psidd_k.


@_njit
def _cmf_add(f, io, O, im):
    """O[im] += cmf(f[io]), the 6x6 matrix X with X v = ad*(v) f (skew-symmetric):
    [[-n~, -l~], [-l~, 0]] for the wrench f = (n, l)."""
    for blk in range(3):  # the blocks (0, 0) <- n, (0, 3) and (3, 0) <- l
        r0, c0, x = (0, 0, 0) if blk == 0 else ((0, 3, 3) if blk == 1 else (3, 0, 3))
        x0, x1, x2 = f[io, x], f[io, x + 1], f[io, x + 2]
        O[im, r0, c0 + 1] += x2
        O[im, r0, c0 + 2] -= x1
        O[im, r0 + 1, c0] -= x2
        O[im, r0 + 1, c0 + 2] += x0
        O[im, r0 + 2, c0] += x1
        O[im, r0 + 2, c0 + 1] -= x0


@_inline
def _adstar_cols(A, ia, M, im, transposed, O, io):
    """O[io] = ad*(A[ia]) M[im] (or ad*(A[ia]) M[im]^T), column by column (6x6). Inlined:
    :func:`_sym_adstar` runs it once per body in the first-order kernel too."""
    a0, a1, a2, a3, a4, a5 = A[ia, 0], A[ia, 1], A[ia, 2], A[ia, 3], A[ia, 4], A[ia, 5]
    for c in range(6):
        if transposed:
            f0, f1, f2 = M[im, c, 0], M[im, c, 1], M[im, c, 2]
            f3, f4, f5 = M[im, c, 3], M[im, c, 4], M[im, c, 5]
        else:
            f0, f1, f2 = M[im, 0, c], M[im, 1, c], M[im, 2, c]
            f3, f4, f5 = M[im, 3, c], M[im, 4, c], M[im, 5, c]
        O[io, 0, c] = a1 * f2 - a2 * f1 + a4 * f5 - a5 * f4
        O[io, 1, c] = a2 * f0 - a0 * f2 + a5 * f3 - a3 * f5
        O[io, 2, c] = a0 * f1 - a1 * f0 + a3 * f4 - a4 * f3
        O[io, 3, c] = a1 * f5 - a2 * f4
        O[io, 4, c] = a2 * f3 - a0 * f5
        O[io, 5, c] = a0 * f4 - a1 * f3


@_njit
def _mtv_r(M, im, X, ix, O, io, mode):
    """O[io] (op)= M[im]^T @ X[ix]."""
    x0, x1, x2, x3, x4, x5 = X[ix, 0], X[ix, 1], X[ix, 2], X[ix, 3], X[ix, 4], X[ix, 5]
    _put(O, io, mode, _col(M, im, 0, x0, x1, x2, x3, x4, x5),
         _col(M, im, 1, x0, x1, x2, x3, x4, x5), _col(M, im, 2, x0, x1, x2, x3, x4, x5),
         _col(M, im, 3, x0, x1, x2, x3, x4, x5), _col(M, im, 4, x0, x1, x2, x3, x4, x5),
         _col(M, im, 5, x0, x1, x2, x3, x4, x5))


@_njit
def _col(M, im, k, x0, x1, x2, x3, x4, x5):
    return (M[im, 0, k] * x0 + M[im, 1, k] * x1 + M[im, 2, k] * x2 + M[im, 3, k] * x3
            + M[im, 4, k] * x4 + M[im, 5, k] * x5)


@_inline
def _body_terms(i, S, Sd, alpha, Ic, Bc, hc, F, R, w, N):
    """Per-body matrices and vectors of the backward pass at body i (composites of its
    subtree, world frame). R[0] = r1 = ad*(S_i) Ic - Ic ad(S_i); R[1] = r3 = ad*(psid_i) Ic
    - Ic ad(psid_i) + cmf(Ic psid_i) + ad*(S_i) BC - BC ad(S_i); R[2] = BC = Bc + cmf(hc),
    the composite body-level Coriolis matrix. Rows of w: 0 Ic S_i, 1 BC^T S_i,
    2 BC psid_i + ad*(S_i) F_i + Ic psidd_i, 3 BC S_i + 2 Ic psid_i, 4 2 ad*(S_i) Ic S_i
    (the paper's r6 S_i), 5 Ic psid_i. N (2, 6, 6) scratch."""
    for r in range(6):
        for c in range(6):
            R[2, r, c] = Bc[i, r, c]
    _cmf_add(hc, i, R, 2)
    _sym_adstar(S, i, Ic, i, R, 0, 0, N)
    _sym_adstar(Sd, i, Ic, i, R, 1, 0, N)
    _mv_r(Ic, i, Sd, i, w, 5, 0)
    _cmf_add(w, 5, R, 1)
    # ad*(s) BC - BC ad(s) = ad*(s) BC + (ad*(s) BC^T)^T, as ad(s)^T = -ad*(s)
    _adstar_cols(S, i, R, 2, False, N, 0)
    _adstar_cols(S, i, R, 2, True, N, 1)
    for r in range(6):
        for c in range(6):
            R[1, r, c] += N[0, r, c] + N[1, c, r]
    _mv_r(Ic, i, S, i, w, 0, 0)
    _mtv_r(R, 2, S, i, w, 1, 0)
    _mv_r(R, 2, Sd, i, w, 2, 0)
    _adstar_r(S, i, F, i, w, 2, 1)
    _mv_r(Ic, i, alpha, i, w, 2, 1)
    _mv_r(R, 2, S, i, w, 3, 0)
    _adstar_r(S, i, w, 0, w, 4, 0)
    for r in range(6):
        w[3, r] += 2.0 * w[5, r]
        w[4, r] *= 2.0


@_inline
def _dots(D, row, G, g, U, u, m):
    """D[row, p] = U[u] . G[g:g + 6, p] for p < m: one dot product per ancestor, contiguous
    in p (SIMD lanes)."""
    c0, c1, c2, c3, c4, c5 = U[u, 0], U[u, 1], U[u, 2], U[u, 3], U[u, 4], U[u, 5]
    for p in range(m):
        D[row, p] = (c0 * G[g, p] + c1 * G[g + 1, p] + c2 * G[g + 2, p] + c3 * G[g + 3, p]
                     + c4 * G[g + 4, p] + c5 * G[g + 5, p])


@_inline
def _pair_vectors(pj, G, R, w, U, X):
    """Rows of U: the vectors of pair (i, j) that meet every ancestor k of j, for s = S_j,
    ps = psid_j, pss = psidd_j (column pj of G): 0 a = r1 s, 1 b = cmf(Ic S_i) s,
    2 u1 = r3^T s, 3 u3 = r3 ps + r1 pss + ad*(s) w2, 4 g = ad*(s) w1 + ad*(ps) w0 - r1 ps,
    5 u6 = r1 ps + ad*(ps) w0 + ad*(s) w3, 6 u7 = r3 s + 2 r1 ps; 8, 9 scratch.
    X (3, 6) receives s, ps, pss as rows."""
    for r in range(6):
        X[0, r], X[1, r], X[2, r] = G[r, pj], G[6 + r, pj], G[12 + r, pj]
    _mv_r(R, 0, X, 0, U, 0, 0)
    _adstar_r(X, 0, w, 0, U, 1, 0)
    _mtv_r(R, 1, X, 0, U, 2, 0)
    _mv_r(R, 1, X, 1, U, 3, 0)
    _mv_r(R, 0, X, 2, U, 3, 1)
    _adstar_r(X, 0, w, 2, U, 3, 1)
    _mv_r(R, 0, X, 1, U, 8, 0)  # c = r1 ps
    _adstar_r(X, 1, w, 0, U, 9, 0)  # d = ad*(ps) Ic S_i = cmf(Ic S_i) ps
    _adstar_r(X, 0, w, 1, U, 4, 0)
    _mv_r(R, 1, X, 0, U, 6, 0)
    for r in range(6):
        c, d = U[8, r], U[9, r]
        U[4, r] += d - c
        U[5, r] = c + d
        U[6, r] += 2.0 * c
    _adstar_r(X, 0, w, 3, U, 5, 1)


@_inline
def _body_triples(i, paths, depth, S, Sd, alpha, R, w, G, D, U, X, qq, vv, qv, dM):
    """All entries of body i's triples (i, j, k), k <= j <= i on the path of i to the base
    (paths[i] lists it root first): qq = d2tau/dq dq, vv = d2tau/dqd dqd, qv = d2tau/dq dqd,
    dM = dM/dq, flat (n^3,) each; G (18, depth), D (13, depth), U (10, 6), X (3, 6) scratch;
    U[7] = r6 S_i. The tensors are flat views (n^3,) of one sample's (n, n, n)."""
    n = S.shape[0]
    nn = n * n
    d = depth[i]
    for p in range(d):
        k = paths[i, p]
        for r in range(6):
            G[r, p], G[6 + r, p], G[12 + r, p] = S[k, r], Sd[k, r], alpha[k, r]
    for pj in range(d):
        j = paths[i, pj]
        _pair_vectors(pj, G, R, w, U, X)
        m = pj + 1
        # D rows: S_k . (0 a, 1 b, 2 u1, 3 u3, 4 g, 5 u6, 6 u7), psid_k . (7 a, 8 b, 9 u1,
        # 10 g), psidd_k . (11 a, 12 b)
        for u in range(7):
            _dots(D, u, G, 0, U, u, m)
        _dots(D, 7, G, 6, U, 0, m)
        _dots(D, 8, G, 6, U, 1, m)
        _dots(D, 9, G, 6, U, 2, m)
        _dots(D, 10, G, 6, U, 4, m)
        _dots(D, 11, G, 12, U, 0, m)
        _dots(D, 12, G, 12, U, 1, m)
        # flat offsets into the C-ordered (n, n, n) tensors: [a, b, c] = a n^2 + b n + c
        ij_, ji_, i_j, j_i = i * nn + j * n, j * nn + i * n, i * nn + j, j * nn + i
        _ij, _ji = i * n + j, j * n + i
        for pk in range(m):
            k = paths[i, pk]
            kn, knn = k * n, k * nn
            ijk, jik, ikj, jki = ij_ + k, ji_ + k, i_j + kn, j_i + kn
            kij, kji = knn + _ij, knn + _ji
            Sa, Sb = D[0, pk], D[1, pk]
            Pa, Pb = D[7, pk], D[8, pk]
            p1, p2 = Pa - Pb, D[12, pk] + D[10, pk]
            qq[ijk] = p2
            qv[ikj] = -p1
            if j != i:
                t = D[9, pk] + D[11, pk]
                qq[jki] = t
                qq[jik] = t
                qv[jki] = p1
                qv[jik] = D[2, pk] + 2.0 * Pa
                vv[jki] = vv[jik] = Sa - Sb
                dM[kji] = dM[jki] = Sa
            if k != j:
                S3 = D[3, pk]
                qq[ikj] = p2
                qq[kij] = S3
                vv[ijk] = vv[ikj] = Sb - Sa
                qv[ijk] = D[4, pk] + 2.0 * Pb
                qv[kji] = D[5, pk]
                dM[kij] = dM[ikj] = Sb
                if j != i:
                    qq[kji] = S3
                    vv[kij] = vv[kji] = Sa + Sb
                    qv[kij] = D[6, pk]
                else:
                    vv[kji] = (U[7, 0] * G[0, pk] + U[7, 1] * G[1, pk] + U[7, 2] * G[2, pk]
                               + U[7, 3] * G[3, pk] + U[7, 4] * G[4, pk] + U[7, 5] * G[5, pk])
            else:
                vv[ijk] = -Sa


@_njit
def _zero_runs(runs, qq, vv, qv, dM):
    """Zero the entries no triple writes: rows (tensor, start, stop) of runs, indices into the
    flat tensors 0 qq, 1 vv, 2 qv, 3 dM (n^3,) of one sample, runs across rows merged; for a
    mostly zero model (a branched tree) the runs are the whole tensors, cleared by memset
    before the triples write theirs (see second_arrays)."""
    for r in range(runs.shape[0]):
        t, a, b = runs[r, 0], runs[r, 1], runs[r, 2]
        if t == 0:
            qq[a:b] = 0.0
        elif t == 1:
            vv[a:b] = 0.0
        elif t == 2:
            qv[a:b] = 0.0
        else:
            dM[a:b] = 0.0


@_njit
def second_model(ints, floats):
    """Views of the model arrays of :func:`second_partials`, packed end to end in two arrays
    (numba converts every array argument on every call, ~0.1 us apiece: a single sample
    notices fifteen). ``ints``: n, d, r, parents (n,), depth (n,), paths (n, d) each body's
    path to the base root first (padded), runs (r, 3) (see :func:`_zero_runs`); ``floats``:
    screws (n, 6), references (n, 4, 4), inertias (n, 6, 6) and g0 (6,), the base
    acceleration (0, -g)."""
    n, d, r = ints[0], ints[1], ints[2]
    parents, depth = ints[3:3 + n], ints[3 + n:3 + 2 * n]
    paths = ints[3 + 2 * n:3 + 2 * n + n * d].reshape((n, d))
    runs = ints[3 + 2 * n + n * d:3 + 2 * n + n * d + 3 * r].reshape((r, 3))
    screws, refs = floats[:6 * n].reshape((n, 6)), floats[6 * n:22 * n].reshape((n, 4, 4))
    inertias, g0 = floats[22 * n:58 * n].reshape((n, 6, 6)), floats[58 * n:58 * n + 6]
    return parents, depth, paths, runs, screws, refs, inertias, g0


@register_jitable
def second_work_size(n, d):
    """Doubles of the work array of the second-order kernels for n bodies and paths to the
    base of at most d bodies (see :func:`_second_sample`)."""
    return 180 * n + 31 * d + 387


# status codes of the second-order kernels
DONE, NON_FINITE, MISFIT = 0, 1, 2


@partial(_njit, _nrt=False)
def second_partials_one(ints, floats, q, qd, qdd, qq, vv, qv, dM, work, zero):
    """The four tensors (n, n, n) qq = d2tau/dq dq, vv = d2tau/dqd dqd, qv = d2tau/dq dqd,
    dM = dM/dq (Pinocchio's index order, see second_partials.id_second_partials) of one sample q,
    qd, qdd (n,), written in place by the algorithm of Singh, Russell and Wensing (2022): O(n
    d^2) for depth d. The model: :func:`second_model`; ``work``: at least
    :func:`second_work_size` doubles. Only the entries that can be nonzero are written; with
    ``zero`` the others (structurally zero) are zeroed from the model's runs too, so that the
    tensors are overwritten entirely; without it they are left as they are (for a caller that
    keeps them zero, :class:`hod_dynamics.second_partials.SecondPartialsData`).

    Returns DONE; NON_FINITE when an input holds a NaN or an infinity, MISFIT when an array
    does not have the model's shape (nothing written in either case): the one-sample path of
    second_partials.id_second_partials passes the caller's arrays as they are."""
    n = ints[0]
    if (q.shape[0] != n or qd.shape[0] != n or qdd.shape[0] != n
            or work.shape[0] < second_work_size(n, ints[1])):
        return MISFIT
    for T in (qq, vv, qv, dM):
        if T.shape[0] != n or T.shape[1] != n or T.shape[2] != n:
            return MISFIT
    return _second_sample_inlined(ints, floats, q, qd, qdd, qq, vv, qv, dM, work, zero)


@_njit
def second_partials(ints, floats, q, qd, qdd, qq, vv, qv, dM, work, zero):
    """:func:`second_partials_one` for every sample of q, qd, qdd (B, n) into the tensors
    (B, n, n, n); stops at the first sample that is not DONE and returns its status."""
    for b in range(q.shape[0]):
        status = second_partials_one(ints, floats, q[b], qd[b], qdd[b], qq[b], vv[b], qv[b],
                                     dM[b], work, zero)
        if status != DONE:
            return status
    return DONE


@_inline
def _second_sample(ints, floats, q, qd, qdd, qq, vv, qv, dM, work, zero):
    """The body of :func:`second_partials_one`; its work arrays are views of ``work``."""
    parents, depth, paths, runs, screws, refs, inertias, g0 = second_model(ints, floats)
    n = q.shape[0]
    dmax = paths.shape[1]
    if not _finite_state(q, qd, qdd):
        return NON_FINITE
    v1, o = work[:60 * n].reshape((10, n, 6)), 60 * n
    S, V, Vp, Sd, A, Ap, h, alpha, hc, F = v1[0], v1[1], v1[2], v1[3], v1[4], v1[5], v1[6], \
        v1[7], v1[8], v1[9]
    m1, o = work[o:o + 108 * n].reshape((3, n, 6, 6)), o + 108 * n
    I, Ic, Bc = m1[0], m1[1], m1[2]
    RT, o = work[o:o + 9 * n].reshape((n, 3, 3)), o + 9 * n
    pT, o = work[o:o + 3 * n].reshape((n, 3)), o + 3 * n
    R, o = work[o:o + 108].reshape((3, 6, 6)), o + 108
    N, o = work[o:o + 72].reshape((2, 6, 6)), o + 72
    M2, o = work[o:o + 72].reshape((2, 6, 6)), o + 72
    w, o = work[o:o + 36].reshape((6, 6)), o + 36
    U, o = work[o:o + 60].reshape((10, 6)), o + 60
    E, o = work[o:o + 9].reshape((3, 3)), o + 9
    X, o = work[o:o + 18].reshape((3, 6)), o + 18
    grav, o = work[o:o + 12].reshape((2, 6)), o + 12
    G, o = work[o:o + 18 * dmax].reshape((18, dmax)), o + 18 * dmax
    D = work[o:o + 13 * dmax].reshape((13, dmax))
    for r in range(6):  # row 0 receives the base acceleration, row 1 is the roots' zero twist
        grav[1, r] = 0.0
    _state(parents, screws, refs, inertias, g0, q, qd, qdd, S, I, V, Vp, Sd, A, Ap, h, alpha,
           Ic, Bc, hc, F, (RT, pT, E, M2[0], M2[1:], grav))
    n3 = n * n * n
    Tqq, Tvv, Tqv, TdM = qq.reshape(n3), vv.reshape(n3), qv.reshape(n3), dM.reshape(n3)
    if zero:
        _zero_runs(runs, Tqq, Tvv, Tqv, TdM)
    for i in range(n):
        _body_terms(i, S, Sd, alpha, Ic, Bc, hc, F, R, w, N)
        for r in range(6):  # u4 = r6 S_i
            U[7, r] = w[4, r]
        _body_triples(i, paths, depth, S, Sd, alpha, R, w, G, D, U, X, Tqq, Tvv, Tqv, TdM)
    return DONE


@_njit
def _finite_state(q, qd, qdd):
    """True when q, qd, qdd (n,) hold only finite numbers: the check costs nanoseconds here
    and microseconds in numpy for a single sample."""
    for i in range(q.shape[0]):
        if not (np.isfinite(q[i]) and np.isfinite(qd[i]) and np.isfinite(qdd[i])):
            return False
    return True


def _inline_family(*funcs, called=()):
    """Copies of ``funcs`` that numba inlines into their callers (``inline="always"``) and
    whose calls to one another go to the copies; those named in ``called`` are compiled on
    their own instead (their callers call them), without reference counting: their callers
    are the second-order kernel, which has none."""
    scope = dict(globals())
    for f in funcs:
        py = getattr(f, "py_func", f)
        copy = types.FunctionType(py.__code__, scope, py.__name__, py.__defaults__,
                                  py.__closure__)
        copy.__qualname__ = py.__qualname__ + ".inlined"
        scope[py.__name__] = (partial(_njit, _nrt=False) if py.__name__ in called
                              else _inline)(copy)
    return scope


# the second-order kernel inlines its helpers but the forward pass, which it calls: compiled
# into it, the forward pass saves ~0.2 us on the Panda and adds ~15 s to the first compile.
# Everything is compiled without reference counting (see the module docstring); the
# first-order kernel keeps its helpers as calls, so that it compiles as fast as before
_second_sample_inlined = _inline_family(
    screw_exp, _state, _world_inertia, _subtree_sums, _finite_state, _put, _ad_r, _adstar_r,
    _row, _col, _lin, _mv_r, _mtv_r, _sym_adstar, _adstar_cols, _cmf_add, _body_terms, _dots,
    _zero_runs, _pair_vectors, _body_triples, _second_sample,
    called=("_state",))["_second_sample"]


@_njit
def _assemble_first(anc, wrt, S, Sd, alpha, F, Ic, Bc, hc, P, Q, x, y, w, out, V, base):
    """out[i, j] = d tau_i / d wrt_j (see partials._assemble); wrt 0: q, 1: qd, 2: qdd.
    The ``base`` columns of a free joint have x = ad(V_base) S along qd."""
    n = S.shape[0]
    for j in range(n):
        if wrt == 0:
            _lin(x, j, alpha, j, 1.0, S, j, 0.0)
            _lin(y, j, Sd, j, 1.0, S, j, 0.0)
        elif wrt == 1:
            if j < base:
                _ad_r(V, base - 1, S, j, x, j, 0)
            else:
                _lin(x, j, Sd, j, 2.0, S, j, 0.0)
            _lin(y, j, S, j, 1.0, S, j, 0.0)
        else:
            _lin(x, j, S, j, 1.0, S, j, 0.0)
            _lin(y, j, S, j, 0.0, S, j, 0.0)
        _mv_r(Ic, j, x, j, w, j, 0)
        _mv_r(Bc, j, y, j, w, j, 1)
        _adstar_r(y, j, hc, j, w, j, 1)
        if wrt == 0:
            _adstar_r(S, j, F, j, w, j, 1)
    for i in range(n):
        for j in range(n):
            v = 0.0
            if anc[i, j]:  # j is i or an ancestor of i
                for r in range(6):
                    v += P[i, r] * x[j, r] + Q[i, r] * y[j, r]
            elif anc[j, i]:  # j strictly below i
                for r in range(6):
                    v += S[i, r] * w[j, r]
            out[i, j] = v


@_njit
def first_partials(parents, anc, screws, refs, inertias, g0, q, qd, qdd, out, base=0, g0s=None):
    """out (3, B, n, n): d tau / dq, d tau / dqd, M (see partials.id_partials).

    A floating base (partials._floating_partials): ``base`` = 6 leading free-joint columns,
    ``g0s`` (B, 6) the gravity twist of every sample (else ``g0`` for all).
    Returns False, leaving out unfinished, when an input holds a NaN or an infinity."""
    B, n = q.shape
    v1, m1 = np.empty((15, n, 6)), np.empty((3, n, 6, 6))
    S, V, Vp, Sd, A, Ap, h, alpha = v1[0], v1[1], v1[2], v1[3], v1[4], v1[5], v1[6], v1[7]
    hc, F, P, Q, x, y, w = v1[8], v1[9], v1[10], v1[11], v1[12], v1[13], v1[14]
    I, Ic, Bc = m1[0], m1[1], m1[2]
    scratch = _state_scratch(n)
    for b in range(B):
        if not _finite_state(q[b], qd[b], qdd[b]):
            return False
        _state(parents, screws, refs, inertias, g0 if g0s is None else g0s[b], q[b], qd[b],
               qdd[b], S, I, V, Vp, Sd, A, Ap, h, alpha, Ic, Bc, hc, F, scratch, base)
        for i in range(n):
            _mv_r(Ic, i, S, i, P, i, 0)
            _mv_r(Bc, i, S, i, Q, i, 0)
            _adstar_r(S, i, hc, i, Q, i, -1)
        for k in range(3):
            _assemble_first(anc, k, S, Sd, alpha, F, Ic, Bc, hc, P, Q, x, y, w, out[k, b], V,
                            base)
    return True


# -- the model's arrays in the form the kernels take (packed once per model) ---------------------
def _ancestors(model):
    """``anc[l, m]``: body m is l or an ancestor of l (n, n) bool."""
    n = model.n_dof
    anc = np.zeros((n, n), dtype=bool)
    for l, chain in enumerate(model.ancestors):
        anc[l, list(chain)] = True
    return anc


@per_model
def _first_fixed(model):
    arrays = (model.parents.astype(np.int64), _ancestors(model), model.screws, model.references,
              model.inertias, np.concatenate([np.zeros(3), -model.gravity]))
    return tuple(np.ascontiguousarray(a) for a in arrays)


@per_model
def _first_free(tree):
    parents, anc, *rest = _first_fixed(tree)
    anc = anc.copy()
    anc[:6, :6] = True
    return (parents, anc, *rest)


def first_model(model, free_joint=False):
    """``(parents, anc, screws, references, inertias, g0)``: the model arrays
    :func:`first_partials` takes (``anc[l, m]``: m is l or above; ``g0 = (0, -g)``). With
    ``free_joint``, ``model`` is the tree of a floating model whose first six columns are the
    free joint (``partials._with_free_joint``): they are ancestors of one another (one joint)."""
    return _first_free(model) if free_joint else _first_fixed(model)


_FIRST_RUN = threading.Lock()  # the first run of the one-sample kernel, see second_arrays


def second_arrays(model):
    """``(ints, floats, work)``: a fixed-base model packed for :func:`second_partials_one` and
    :func:`second_partials` (:func:`second_model` unpacks them), with the runs of its
    structurally zero entries, and the size of the work array.

    The runs of entries that the kernel never writes (they are structurally zero: triples not
    on one path to the base, and a few on one) are found by running the kernel on tensors
    filled with NaN: the entries it leaves NaN (for finite inputs every written entry is
    finite). That run also compiles the one-sample kernel (or loads it from numba's cache) for
    the arguments it takes, kernel arrays (see backend.is_kernel_array); its dispatcher then
    compiles no other variant: any other argument type raises TypeError in the dispatch."""
    n = model.n_dof
    chains = [chain[::-1] for chain in model.ancestors]
    depth = np.array([len(c) for c in chains], dtype=np.int64)
    paths = np.zeros((n, max(depth, default=1)), dtype=np.int64)
    for i, chain in enumerate(chains):
        paths[i, :len(chain)] = chain
    gravity = np.concatenate([np.zeros(3), -model.gravity])
    floats = np.concatenate([a.ravel() for a in (model.screws, model.references,
                                                 model.inertias, gravity)]).astype(float)

    def pack(runs):
        head = [n, paths.shape[1], len(runs)]
        return np.concatenate([head, model.parents, depth, paths.ravel(),
                               runs.ravel()]).astype(np.int64)

    work = second_work_size(n, paths.shape[1])
    tensors = np.full((4, n, n, n), np.nan)
    state = np.random.default_rng(0).uniform(-1.0, 1.0, (3, n))
    # under a lock: numba tests whether it may compile only once it holds its compile lock, so
    # a thread whose first call waited there while another compiled and disabled compiling
    # would raise RuntimeError; serialised, every first run finds the variant compiled
    with _FIRST_RUN:
        second_partials_one(pack(np.zeros((0, 3))), floats, *state, *tensors, np.empty(work), True)
        second_partials_one.disable_compile()
    zeros = np.isnan(tensors)
    if 2 * np.count_nonzero(zeros) > zeros.size:  # mostly zero (a branched tree): clearing
        # whole tensors (memset) is faster than clearing runs
        runs = [(t, 0, n ** 3) for t in range(4)]
    else:
        runs = []
        for t in range(4):
            edges = np.diff(np.concatenate([[0], zeros[t].ravel(), [0]]).astype(int))
            runs += [(t, a, b) for a, b in zip(np.flatnonzero(edges == 1),
                                                np.flatnonzero(edges == -1))]
    return pack(np.array(runs).reshape(-1, 3)), floats, work
