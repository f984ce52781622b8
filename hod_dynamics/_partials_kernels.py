"""Compiled (numba) kernels of the first- and second-order partials of inverse dynamics.

Loops over samples, bodies and directions implementing exactly the formulas of
:mod:`hod_dynamics.partials` (world-frame state, its tangents along the unit directions of q and
qd, and the assembly of d tau_i / d x_j and their tangents); see that module for the maths.
Structure exploited (same numbers to rounding): tangents along qd leave S and the inertias
unchanged (their terms are skipped); d2tau/dq dq (symmetric in (j, k)) and dM/dq (in (i, j))
are computed on one half and mirrored, so they are exactly symmetric; d2tau/dqd dqd comes from
dM/dq through the Christoffel symbols (the numpy path assembles it from tangents, so the tests
comparing the backends check that identity too).
Importing this module needs numba; :mod:`hod_dynamics.backend` imports it only when asked.
"""

import numpy as np

from ._kernels import _inline, _njit, screw_exp


@_njit
def _state(parents, screws, refs, inertias, g0, q, qd, qdd, S, I, V, Vp, Sd, A, Ap, h, alpha,
           Ic, Bc, hc, F, scratch, base=0):
    """World-frame RNEA quantities of one sample (see partials._state); q, qd, qdd (n,).

    ``scratch``: arrays from :func:`_state_scratch`; rows are addressed by index (no views).
    ``base`` leading columns form a free joint (see partials._floating_partials): their parent
    is the world, and their last body moves with all of them.
    """
    RT, pT, E, Ai, MA, N, G = scratch
    n = screws.shape[0]
    G[0] = g0
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
        # Ad(T^-1) = [[R^T, 0], [-R^T p~, R^T]]
        for r in range(3):
            a0, a1, a2 = RT[l, 0, r], RT[l, 1, r], RT[l, 2, r]
            for c in range(3):
                Ai[r, c] = RT[l, c, r]
                Ai[r, c + 3] = 0.0
                Ai[r + 3, c + 3] = RT[l, c, r]
            # (R^T p~)[r, c] = (p x e_c) . R[:, r]
            Ai[r + 3, 0] = -(a1 * p2 - a2 * p1)
            Ai[r + 3, 1] = -(a2 * p0 - a0 * p2)
            Ai[r + 3, 2] = -(a0 * p1 - a1 * p0)
        # I = Ai^T M Ai
        for r in range(6):
            for c in range(6):
                t = 0.0
                for k in range(6):
                    t += inertias[l, r, k] * Ai[k, c]
                MA[r, c] = t
        for r in range(6):
            for c in range(6):
                t = 0.0
                for k in range(6):
                    t += Ai[k, r] * MA[k, c]
                I[l, r, c] = t
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
            np.empty((6, 6)), np.empty((6, 6)), np.zeros((2, 6)))


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
    """O[io] (op)= N + N^T with N = ad*(A[ia]) D[idd] (6x6); N (6, 6) scratch.

    With D = I this is the inertia rate ad*(a) I - I ad(a) (I symmetric)."""
    a0, a1, a2, a3, a4, a5 = A[ia, 0], A[ia, 1], A[ia, 2], A[ia, 3], A[ia, 4], A[ia, 5]
    for c in range(6):
        f0, f1, f2 = D[idd, 0, c], D[idd, 1, c], D[idd, 2, c]
        f3, f4, f5 = D[idd, 3, c], D[idd, 4, c], D[idd, 5, c]
        N[0, c] = a1 * f2 - a2 * f1 + a4 * f5 - a5 * f4
        N[1, c] = a2 * f0 - a0 * f2 + a5 * f3 - a3 * f5
        N[2, c] = a0 * f1 - a1 * f0 + a3 * f4 - a4 * f3
        N[3, c] = a1 * f5 - a2 * f4
        N[4, c] = a2 * f3 - a0 * f5
        N[5, c] = a0 * f4 - a1 * f3
    for r in range(6):
        for c in range(6):
            if mode == 0:
                O[io, r, c] = N[r, c] + N[c, r]
            else:
                O[io, r, c] += N[r, c] + N[c, r]


@_njit
def _lin(O, io, A, ia, a, B, ib, b):
    """O[io] = a A[ia] + b B[ib]."""
    for r in range(6):
        O[io, r] = a * A[ia, r] + b * B[ib, r]


@_njit
def _tangent(parents, anc, wrt_q, qd, qdd, S, I, V, Vp, Sd, A, Ap, h,
             dS, dSd, dalpha, dIc, dBc, dhc, dF, dV, dA, Z, N):
    """Tangents along dq = e_m (wrt_q) or dqd = e_m for every body l and direction m, rows
    l * n + m (see partials._tangent); ``anc[l, m]``: m is l or an ancestor of l; Z (1, 6)
    zeros, N (6, 6) scratch. The composites dIc, dBc, dhc, dF are summed over subtrees; along
    qd the inertias do not change and dIc is neither written nor meant to be read."""
    n = S.shape[0]
    for m in range(n):
        for l in range(n):
            par = parents[l]
            row = l * n + m
            if not anc[l, m]:
                # m is not on the path of l: nothing of body l depends on q_m or qd_m
                for r in range(6):
                    dS[row, r] = dSd[row, r] = dalpha[row, r] = dV[row, r] = dA[row, r] = 0.0
                    dhc[row, r] = dF[row, r] = 0.0
                    for c in range(6):
                        dBc[row, r, c] = 0.0
                        if wrt_q:
                            dIc[row, r, c] = 0.0
                continue
            if par >= 0:
                PV, PA, pr = dV, dA, par * n + m
            else:
                PV, PA, pr = Z, Z, 0
            if wrt_q:
                _ad_r(S, m, S, l, dS, row, 0)  # U_l = S_m moves body l
            else:
                for r in range(6):
                    dS[row, r] = 0.0
            on_l = 1.0 if (m == l and not wrt_q) else 0.0
            for r in range(6):
                dV[row, r] = PV[pr, r] + dS[row, r] * qd[l] + on_l * S[l, r]
            # dSd = -ad(S) dVp + ad(Vp) dS
            _ad_r(PV, pr, S, l, dSd, row, 0)
            if wrt_q:  # dS = 0 along qd
                _ad_r(Vp, l, dS, row, dSd, row, 1)
            for r in range(6):
                dA[row, r] = (PA[pr, r] + dS[row, r] * qdd[l] + dSd[row, r] * qd[l]
                              + on_l * Sd[l, r])
            # dalpha = -ad(S) dAp + ad(Ap) dS - ad(Sd) dVp + ad(Vp) dSd
            _ad_r(PA, pr, S, l, dalpha, row, 0)
            if wrt_q:
                _ad_r(Ap, l, dS, row, dalpha, row, 1)
            _ad_r(PV, pr, Sd, l, dalpha, row, 1)
            _ad_r(Vp, l, dSd, row, dalpha, row, 1)
            # dh = I dV + dI V, dId = rate(dV, I) + (N + N^T, N = ad*(V) dI),
            # df = I dA + dI A + ad*(dV) h + ad*(V) dh, with dI = rate(S_m, I) (wrt q)
            _mv_r(I, l, dV, row, dhc, row, 0)
            _sym_adstar(dV, row, I, l, dBc, row, 0, N)
            _mv_r(I, l, dA, row, dF, row, 0)
            _adstar_r(dV, row, h, l, dF, row, 1)
            if wrt_q:
                _sym_adstar(S, m, I, l, dIc, row, 0, N)
                _mv_r(dIc, row, V, l, dhc, row, 1)
                _mv_r(dIc, row, A, l, dF, row, 1)
                _sym_adstar(V, l, dIc, row, dBc, row, 1, N)
            _adstar_r(V, l, dhc, row, dF, row, 1)
    _subtree_sums(parents, n, dhc, dF, dIc, dBc, wrt_q)


@_njit
def _pq(moves, S, Ic, Bc, hc, dS, dIc, dBc, dhc, P, Q, dP, dQ):
    """P = Ic S, Q = Bc S - ad*(S) hc and their tangents (rows i * n + m)
    dP = dIc S + Ic dS, dQ = dBc S + Bc dS - ad*(dS) hc - ad*(S) dhc: shared by the assemblies
    that use the same tangent. ``moves``: a tangent along q (else along qd: dS = dIc = 0)."""
    n = S.shape[0]
    for i in range(n):
        _mv_r(Ic, i, S, i, P, i, 0)
        _mv_r(Bc, i, S, i, Q, i, 0)
        _adstar_r(S, i, hc, i, Q, i, -1)
        for m in range(n):
            row = i * n + m
            _mv_r(dBc, row, S, i, dQ, row, 0)
            _adstar_r(S, i, dhc, row, dQ, row, -1)
            if moves:
                _mv_r(dIc, row, S, i, dP, row, 0)
                _mv_r(Ic, i, dS, row, dP, row, 1)
                _mv_r(Bc, i, dS, row, dQ, row, 1)
                _adstar_r(dS, row, hc, i, dQ, row, -1)
            else:
                _put(dP, row, 0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0)


@_njit
def _assemble(anc, wrt, moves, sym, S, Sd, alpha, Ic, Bc, hc, F, dS, dSd, dalpha, dIc, dBc, dhc,
              dF, out, x, y, z, dx, dy, dz, dP, dQ, Q, P, w, dw, Z):
    """out[i, j, m]: tangent along direction m of d tau_i / d wrt_j (see
    partials._assemble_tangent); wrt 0: q, 1: qd, 2: qdd; tangent rows j * n + m; P, Q, dP,
    dQ from :func:`_pq` of the same tangent; ``moves``: the tangent is along q (along qd,
    dS = dIc = dP = 0). ``sym`` 1: the tensor is symmetric in (j, m), 2: in (i, j); only one
    half is computed and the other copied (exactly symmetric results, half the work)."""
    n = S.shape[0]
    has_y = wrt != 2
    dy_on = has_y and (moves or wrt == 0)  # dy = dS for wrt qd, zero along qd
    for j in range(n):
        if wrt == 0:
            _lin(x, j, alpha, j, 1.0, Z, 0, 0.0)
            _lin(y, j, Sd, j, 1.0, Z, 0, 0.0)
            _adstar_r(S, j, F, j, z, j, 0)
        else:
            _lin(x, j, Sd, j, 2.0, S, j, 0.0) if wrt == 1 else _lin(x, j, S, j, 1.0, Z, 0, 0.0)
            _lin(y, j, S, j, 1.0 if wrt == 1 else 0.0, Z, 0, 0.0)
        for m in range(j + 1 if sym == 1 else n):
            row = j * n + m
            if wrt == 0:
                _lin(dx, row, dalpha, row, 1.0, Z, 0, 0.0)
                _lin(dy, row, dSd, row, 1.0, Z, 0, 0.0)
                _adstar_r(dS, row, F, j, dz, row, 0)
                _adstar_r(S, j, dF, row, dz, row, 1)
            elif wrt == 1:
                _lin(dx, row, dSd, row, 2.0, Z, 0, 0.0)
                _lin(dy, row, dS, row, 1.0, Z, 0, 0.0)
            else:
                _lin(dx, row, dS, row, 1.0, Z, 0, 0.0)
    if sym != 2:  # with (i, j) symmetry the pairs "j below i" are copies: no dw needed
        for i in range(n):
            # dw = dIc x + Ic dx + dBc y + Bc dy + ad*(dy) hc + ad*(y) dhc + dz
            _mv_r(Ic, i, x, i, w, i, 0)
            if has_y:
                _mv_r(Bc, i, y, i, w, i, 1)
                _adstar_r(y, i, hc, i, w, i, 1)
            if wrt == 0:
                _lin(w, i, w, i, 1.0, z, i, 1.0)
            for m in range(i + 1 if sym == 1 else n):
                row = i * n + m
                _mv_r(Ic, i, dx, row, dw, row, 0)
                if moves:
                    _mv_r(dIc, row, x, i, dw, row, 1)
                if has_y:
                    _mv_r(dBc, row, y, i, dw, row, 1)
                    _adstar_r(y, i, dhc, row, dw, row, 1)
                if dy_on:
                    _mv_r(Bc, i, dy, row, dw, row, 1)
                    _adstar_r(dy, row, hc, i, dw, row, 1)
                if wrt == 0:
                    _lin(dw, row, dw, row, 1.0, dz, row, 1.0)
    # m innermost: the sums of one (i, j) are independent, so they run side by side instead
    # of as one chain of dependent additions
    for i in range(n):
        for j in range(n):
            top = j + 1 if sym == 1 else n
            for m in range(top):
                out[i, j, m] = 0.0
            if anc[i, j]:  # j is i or an ancestor of i
                for r in range(6):
                    xr, Pr, yr, Qr = x[j, r], P[i, r], y[j, r], Q[i, r]
                    for m in range(top):
                        a, b = i * n + m, j * n + m
                        v = Pr * dx[b, r]
                        if moves:
                            v += dP[a, r] * xr
                        if has_y:
                            v += dQ[a, r] * yr
                        if dy_on:
                            v += Qr * dy[b, r]
                        out[i, j, m] += v
            elif anc[j, i] and sym != 2:  # j strictly below i
                for r in range(6):
                    wr, Sr = w[j, r], S[i, r]
                    for m in range(top):
                        a, b = i * n + m, j * n + m
                        v = Sr * dw[b, r]
                        if moves:
                            v += dS[a, r] * wr
                        out[i, j, m] += v
    if sym == 1:
        for i in range(n):
            for j in range(n):
                for m in range(j):
                    out[i, m, j] = out[i, j, m]
    elif sym == 2:
        for i in range(n):
            for j in range(i):
                if anc[i, j]:
                    for m in range(n):
                        out[j, i, m] = out[i, j, m]


@_njit
def second_partials(parents, anc, screws, refs, inertias, g0, q, qd, qdd, out):
    """The four tensors out (4, B, n, n, n): d2tau/dq dq, d2tau/dqd dqd, d2tau/dq dqd, dM/dq
    (Pinocchio's index order, see partials.id_second_partials) for q, qd, qdd (B, n).

    Returns False, leaving out unfinished, when an input holds a NaN or an infinity."""
    B, n = q.shape
    # work arrays are views of four blocks (one allocation each instead of ~45)
    v1, m1 = np.empty((18, n, 6)), np.empty((3, n, 6, 6))
    v2, m2 = np.empty((22, n * n, 6)), np.empty((4, n * n, 6, 6))
    S, V, Vp, Sd, A, Ap, h, alpha, hc = v1[0], v1[1], v1[2], v1[3], v1[4], v1[5], v1[6], \
        v1[7], v1[8]
    F, x, y, z, w, Pq, Qq, Pv, Qv = v1[9], v1[10], v1[11], v1[12], v1[13], v1[14], v1[15], \
        v1[16], v1[17]
    I, Ic, Bc = m1[0], m1[1], m1[2]
    # tangents along q (suffix q) and qd (suffix v): rows l * n + m (body, direction)
    dSq, dSdq, dalq, dhcq, dFq, dVq, dAq = v2[0], v2[1], v2[2], v2[3], v2[4], v2[5], v2[6]
    dSv, dSdv, dalv, dhcv, dFv, dVv, dAv = v2[7], v2[8], v2[9], v2[10], v2[11], v2[12], v2[13]
    dx, dy, dz, dw = v2[14], v2[15], v2[16], v2[17]
    dPq, dQq, dPv, dQv = v2[18], v2[19], v2[20], v2[21]
    dIcq, dBcq, dIcv, dBcv = m2[0], m2[1], m2[2], m2[3]
    scratch = _state_scratch(n)
    N = np.empty((6, 6))
    Z = np.zeros((1, 6))
    for b in range(B):
        if not _finite_state(q, qd, qdd, b):
            return False
        _state(parents, screws, refs, inertias, g0, q[b], qd[b], qdd[b], S, I, V, Vp, Sd, A,
               Ap, h, alpha, Ic, Bc, hc, F, scratch)
        _tangent(parents, anc, True, qd[b], qdd[b], S, I, V, Vp, Sd, A, Ap, h,
                 dSq, dSdq, dalq, dIcq, dBcq, dhcq, dFq, dVq, dAq, Z, N)
        _tangent(parents, anc, False, qd[b], qdd[b], S, I, V, Vp, Sd, A, Ap, h,
                 dSv, dSdv, dalv, dIcv, dBcv, dhcv, dFv, dVv, dAv, Z, N)
        _pq(True, S, Ic, Bc, hc, dSq, dIcq, dBcq, dhcq, Pq, Qq, dPq, dQq)
        _pq(False, S, Ic, Bc, hc, dSv, dIcv, dBcv, dhcv, Pv, Qv, dPv, dQv)
        # d2tau/dq dq is symmetric in (j, k), dM/dq in (i, j)
        _assemble(anc, 0, True, 1, S, Sd, alpha, Ic, Bc, hc, F, dSq, dSdq, dalq, dIcq, dBcq,
                  dhcq, dFq, out[0, b], x, y, z, dx, dy, dz, dPq, dQq, Qq, Pq, w, dw, Z)
        _assemble(anc, 0, False, 0, S, Sd, alpha, Ic, Bc, hc, F, dSv, dSdv, dalv, dIcv, dBcv,
                  dhcv, dFv, out[2, b], x, y, z, dx, dy, dz, dPv, dQv, Qv, Pv, w, dw, Z)
        _assemble(anc, 2, True, 2, S, Sd, alpha, Ic, Bc, hc, F, dSq, dSdq, dalq, dIcq, dBcq,
                  dhcq, dFq, out[3, b], x, y, z, dx, dy, dz, dPq, dQq, Qq, Pq, w, dw, Z)
        _christoffel(out[3, b], out[1, b])
    return True


@_njit
def _christoffel(dM, out):
    """out[i, j, k] = d2tau_i / dqd_j dqd_k from dM[i, j, k] = dM_ij / dq_k (n, n, n).

    tau is quadratic in qd through the Christoffel symbols of M: d2tau_i / dqd_j dqd_k
    = dM_ij/dq_k + dM_ik/dq_j - dM_jk/dq_i, three look-ups instead of a tangent assembly."""
    n = dM.shape[0]
    for i in range(n):
        for j in range(n):
            for k in range(n):
                out[i, j, k] = dM[i, j, k] + dM[i, k, j] - dM[j, k, i]


@_njit
def _finite_state(q, qd, qdd, b):
    """True when sample b of q, qd, qdd (B, n) holds only finite numbers: the check costs
    nanoseconds here and microseconds in numpy for a single sample."""
    for i in range(q.shape[1]):
        if not (np.isfinite(q[b, i]) and np.isfinite(qd[b, i]) and np.isfinite(qdd[b, i])):
            return False
    return True


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
        if not _finite_state(q, qd, qdd, b):
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
