"""Compiled (numba) kernels of the first- and second-order partials of inverse dynamics.

Loops over samples, bodies and directions implementing exactly the formulas of
:mod:`hod_dynamics.partials` (world-frame state, its tangents along the unit directions of q and
qd, and the assembly of d tau_i / d x_j and their tangents); see that module for the maths.
Importing this module needs numba; :mod:`hod_dynamics.backend` imports it only when asked.
"""

import numpy as np

from ._kernels import _njit, screw_exp


@_njit
def _ad(a, b, out):
    """out = ad(a) b = (a_w x b_w, a_w x b_v + a_v x b_w) for twists a, b (6,)."""
    out[0] = a[1] * b[2] - a[2] * b[1]
    out[1] = a[2] * b[0] - a[0] * b[2]
    out[2] = a[0] * b[1] - a[1] * b[0]
    out[3] = a[1] * b[5] - a[2] * b[4] + a[4] * b[2] - a[5] * b[1]
    out[4] = a[2] * b[3] - a[0] * b[5] + a[5] * b[0] - a[3] * b[2]
    out[5] = a[0] * b[4] - a[1] * b[3] + a[3] * b[1] - a[4] * b[0]


@_njit
def _adstar(a, f, out):
    """out = ad*(a) f = -ad(a)^T f = (a_w x f_t + a_v x f_f, a_w x f_f)."""
    out[0] = a[1] * f[2] - a[2] * f[1] + a[4] * f[5] - a[5] * f[4]
    out[1] = a[2] * f[0] - a[0] * f[2] + a[5] * f[3] - a[3] * f[5]
    out[2] = a[0] * f[1] - a[1] * f[0] + a[3] * f[4] - a[4] * f[3]
    out[3] = a[1] * f[5] - a[2] * f[4]
    out[4] = a[2] * f[3] - a[0] * f[5]
    out[5] = a[0] * f[4] - a[1] * f[3]


@_njit
def _mv(M, x, out):
    for r in range(6):
        t = 0.0
        for c in range(6):
            t += M[r, c] * x[c]
        out[r] = t


@_njit
def _rate(a, I, out, tmp):
    """out = ad*(a) I - I ad(a) = N + N^T, N = ad*(a) I (I symmetric); tmp (6,) scratch."""
    for c in range(6):
        _adstar(a, I[:, c], tmp)
        for r in range(6):
            out[r, c] = tmp[r]
    for r in range(6):
        for c in range(r, 6):
            s = out[r, c] + out[c, r]
            out[r, c] = s
            out[c, r] = s


@_njit
def _state(parents, screws, refs, inertias, g0, q, qd, qdd, S, I, V, Vp, Sd, A, Ap, h, alpha,
           Ic, Bc, hc, F, t6):
    """World-frame RNEA quantities of one sample (see partials._state)."""
    n = screws.shape[0]
    RT = np.empty((n, 3, 3))
    pT = np.empty((n, 3))
    E = np.empty((3, 3))
    RC = np.empty((3, 3))
    pC, Rw, Rv = np.empty(3), np.empty(3), np.empty(3)
    Ai = np.zeros((6, 6))
    MA = np.empty((6, 6))
    for l in range(n):
        par = parents[l]
        pe0, pe1, pe2 = screw_exp(screws, l, q[l], E)
        # C = refs[l] @ (E, pe); T_l = T_par @ C
        for r in range(3):
            for c in range(3):
                RC[r, c] = (refs[l, r, 0] * E[0, c] + refs[l, r, 1] * E[1, c]
                            + refs[l, r, 2] * E[2, c])
            pC[r] = refs[l, r, 0] * pe0 + refs[l, r, 1] * pe1 + refs[l, r, 2] * pe2 + refs[l, r, 3]
        for r in range(3):
            if par < 0:
                pT[l, r] = pC[r]
                for c in range(3):
                    RT[l, r, c] = RC[r, c]
            else:
                pT[l, r] = (RT[par, r, 0] * pC[0] + RT[par, r, 1] * pC[1] + RT[par, r, 2] * pC[2]
                            + pT[par, r])
                for c in range(3):
                    RT[l, r, c] = (RT[par, r, 0] * RC[0, c] + RT[par, r, 1] * RC[1, c]
                                   + RT[par, r, 2] * RC[2, c])
        R, p = RT[l], pT[l]
        for r in range(3):
            Rw[r] = R[r, 0] * screws[l, 0] + R[r, 1] * screws[l, 1] + R[r, 2] * screws[l, 2]
            Rv[r] = R[r, 0] * screws[l, 3] + R[r, 1] * screws[l, 4] + R[r, 2] * screws[l, 5]
        S[l, 0], S[l, 1], S[l, 2] = Rw[0], Rw[1], Rw[2]
        S[l, 3] = p[1] * Rw[2] - p[2] * Rw[1] + Rv[0]
        S[l, 4] = p[2] * Rw[0] - p[0] * Rw[2] + Rv[1]
        S[l, 5] = p[0] * Rw[1] - p[1] * Rw[0] + Rv[2]
        # Ad(T^-1) = [[R^T, 0], [-R^T p~, R^T]]
        for r in range(3):
            for c in range(3):
                Ai[r, c] = R[c, r]
                Ai[r + 3, c + 3] = R[c, r]
            # row r of -R^T p~ is -(R[:, r] x ... ): (R^T p~)[r, c] = (p x e_c) . R[:, r]
            a0, a1, a2 = R[0, r], R[1, r], R[2, r]
            Ai[r + 3, 0] = -(a1 * p[2] - a2 * p[1])
            Ai[r + 3, 1] = -(a2 * p[0] - a0 * p[2])
            Ai[r + 3, 2] = -(a0 * p[1] - a1 * p[0])
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
        if par < 0:
            Vp[l] = 0.0
            Ap[l] = g0
        else:
            Vp[l] = V[par]
            Ap[l] = A[par]
        _ad(Vp[l], S[l], Sd[l])
        for r in range(6):
            V[l, r] = Vp[l, r] + S[l, r] * qd[l]
            A[l, r] = Ap[l, r] + S[l, r] * qdd[l] + Sd[l, r] * qd[l]
        _mv(I[l], V[l], h[l])
        _ad(Ap[l], S[l], alpha[l])
        _ad(Vp[l], Sd[l], t6)
        alpha[l] += t6
        _rate(V[l], I[l], Bc[l], t6)
        Ic[l] = I[l]
        hc[l] = h[l]
        _mv(I[l], A[l], F[l])
        _adstar(V[l], h[l], t6)
        F[l] += t6
    for l in range(n - 1, -1, -1):
        par = parents[l]
        if par >= 0:
            Ic[par] += Ic[l]
            Bc[par] += Bc[l]
            hc[par] += hc[l]
            F[par] += F[l]


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


@_njit
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
    zeros, N (6, 6) scratch. The composites dIc, dBc, dhc, dF are summed over subtrees."""
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
                        dIc[row, r, c] = dBc[row, r, c] = 0.0
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
            else:
                for r in range(6):
                    for c in range(6):
                        dIc[row, r, c] = 0.0
            _adstar_r(V, l, dhc, row, dF, row, 1)
    for l in range(n - 1, -1, -1):
        par = parents[l]
        if par >= 0:
            for m in range(n):
                a, b = par * n + m, l * n + m
                for r in range(6):
                    dhc[a, r] += dhc[b, r]
                    dF[a, r] += dF[b, r]
                    for c in range(6):
                        dIc[a, r, c] += dIc[b, r, c]
                        dBc[a, r, c] += dBc[b, r, c]


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
def _assemble(anc, wrt, moves, S, Sd, alpha, Ic, Bc, hc, F, dS, dSd, dalpha, dIc, dBc, dhc, dF,
              out, x, y, z, dx, dy, dz, dP, dQ, Q, P, w, dw, Z):
    """out[i, j, m]: tangent along direction m of d tau_i / d wrt_j (see
    partials._assemble_tangent); wrt 0: q, 1: qd, 2: qdd; tangent rows j * n + m; P, Q, dP,
    dQ from :func:`_pq` of the same tangent; ``moves``: the tangent is along q."""
    n = S.shape[0]
    has_y = wrt != 2
    for j in range(n):
        if wrt == 0:
            _lin(x, j, alpha, j, 1.0, Z, 0, 0.0)
            _lin(y, j, Sd, j, 1.0, Z, 0, 0.0)
            _adstar_r(S, j, F, j, z, j, 0)
        else:
            _lin(x, j, Sd, j, 2.0, S, j, 0.0) if wrt == 1 else _lin(x, j, S, j, 1.0, Z, 0, 0.0)
            _lin(y, j, S, j, 1.0 if wrt == 1 else 0.0, Z, 0, 0.0)
            _lin(z, j, Z, 0, 0.0, Z, 0, 0.0)
        for m in range(n):
            row = j * n + m
            if wrt == 0:
                _lin(dx, row, dalpha, row, 1.0, Z, 0, 0.0)
                _lin(dy, row, dSd, row, 1.0, Z, 0, 0.0)
                _adstar_r(dS, row, F, j, dz, row, 0)
                _adstar_r(S, j, dF, row, dz, row, 1)
            elif wrt == 1:
                _lin(dx, row, dSd, row, 2.0, Z, 0, 0.0)
                _lin(dy, row, dS, row, 1.0, Z, 0, 0.0)
                _lin(dz, row, Z, 0, 0.0, Z, 0, 0.0)
            else:
                _lin(dx, row, dS, row, 1.0, Z, 0, 0.0)
                _lin(dy, row, Z, 0, 0.0, Z, 0, 0.0)
                _lin(dz, row, Z, 0, 0.0, Z, 0, 0.0)
    for i in range(n):
        _mv_r(Ic, i, x, i, w, i, 0)
        _mv_r(Bc, i, y, i, w, i, 1)
        _adstar_r(y, i, hc, i, w, i, 1)
        _lin(w, i, w, i, 1.0, z, i, 1.0)
        for m in range(n):
            row = i * n + m
            # dw = dIc x + Ic dx + dBc y + Bc dy + ad*(dy) hc + ad*(y) dhc + dz
            _mv_r(Ic, i, dx, row, dw, row, 0)
            if moves:
                _mv_r(dIc, row, x, i, dw, row, 1)
            if has_y:
                _mv_r(dBc, row, y, i, dw, row, 1)
                _mv_r(Bc, i, dy, row, dw, row, 1)
                _adstar_r(dy, row, hc, i, dw, row, 1)
                _adstar_r(y, i, dhc, row, dw, row, 1)
            _lin(dw, row, dw, row, 1.0, dz, row, 1.0)
    for i in range(n):
        for j in range(n):
            if anc[i, j]:  # j is i or an ancestor of i
                for m in range(n):
                    a, b = i * n + m, j * n + m
                    v = 0.0
                    for r in range(6):
                        v += dP[a, r] * x[j, r] + P[i, r] * dx[b, r]
                        if has_y:
                            v += dQ[a, r] * y[j, r] + Q[i, r] * dy[b, r]
                    out[i, j, m] = v
            elif anc[j, i]:  # j strictly below i
                for m in range(n):
                    a, b = i * n + m, j * n + m
                    v = 0.0
                    for r in range(6):
                        v += dS[a, r] * w[j, r] + S[i, r] * dw[b, r]
                    out[i, j, m] = v
            else:
                for m in range(n):
                    out[i, j, m] = 0.0


@_njit
def second_partials(parents, anc, screws, refs, inertias, g0, q, qd, qdd, out):
    """The four tensors out (4, B, n, n, n): d2tau/dq dq, d2tau/dqd dqd, d2tau/dq dqd, dM/dq
    (Pinocchio's index order, see partials.id_second_partials) for q, qd, qdd (B, n)."""
    B, n = q.shape
    S, V, Vp, Sd, A, Ap = _e2(n), _e2(n), _e2(n), _e2(n), _e2(n), _e2(n)
    h, alpha, hc, F = _e2(n), _e2(n), _e2(n), _e2(n)
    I, Ic, Bc = np.empty((n, 6, 6)), np.empty((n, 6, 6)), np.empty((n, 6, 6))
    # tangents along q (suffix q) and qd (suffix v): rows l * n + m (body, direction)
    dSq, dSdq, dalq, dhcq, dFq, dVq, dAq = _e2(n * n), _e2(n * n), _e2(n * n), _e2(n * n), \
        _e2(n * n), _e2(n * n), _e2(n * n)
    dSv, dSdv, dalv, dhcv, dFv, dVv, dAv = _e2(n * n), _e2(n * n), _e2(n * n), _e2(n * n), \
        _e2(n * n), _e2(n * n), _e2(n * n)
    dIcq, dBcq = np.empty((n * n, 6, 6)), np.empty((n * n, 6, 6))
    dIcv, dBcv = np.empty((n * n, 6, 6)), np.empty((n * n, 6, 6))
    x, y, z, w = _e2(n), _e2(n), _e2(n), _e2(n)
    dx, dy, dz, dw = _e2(n * n), _e2(n * n), _e2(n * n), _e2(n * n)
    Pq, Qq, Pv, Qv = _e2(n), _e2(n), _e2(n), _e2(n)
    dPq, dQq, dPv, dQv = _e2(n * n), _e2(n * n), _e2(n * n), _e2(n * n)
    t6 = np.empty(6)
    N = np.empty((6, 6))
    Z = np.zeros((1, 6))
    for b in range(B):
        _state(parents, screws, refs, inertias, g0, q[b], qd[b], qdd[b], S, I, V, Vp, Sd, A,
               Ap, h, alpha, Ic, Bc, hc, F, t6)
        _tangent(parents, anc, True, qd[b], qdd[b], S, I, V, Vp, Sd, A, Ap, h,
                 dSq, dSdq, dalq, dIcq, dBcq, dhcq, dFq, dVq, dAq, Z, N)
        _tangent(parents, anc, False, qd[b], qdd[b], S, I, V, Vp, Sd, A, Ap, h,
                 dSv, dSdv, dalv, dIcv, dBcv, dhcv, dFv, dVv, dAv, Z, N)
        _pq(True, S, Ic, Bc, hc, dSq, dIcq, dBcq, dhcq, Pq, Qq, dPq, dQq)
        _pq(False, S, Ic, Bc, hc, dSv, dIcv, dBcv, dhcv, Pv, Qv, dPv, dQv)
        _assemble(anc, 0, True, S, Sd, alpha, Ic, Bc, hc, F, dSq, dSdq, dalq, dIcq, dBcq,
                  dhcq, dFq, out[0, b], x, y, z, dx, dy, dz, dPq, dQq, Qq, Pq, w, dw, Z)
        _assemble(anc, 1, False, S, Sd, alpha, Ic, Bc, hc, F, dSv, dSdv, dalv, dIcv, dBcv,
                  dhcv, dFv, out[1, b], x, y, z, dx, dy, dz, dPv, dQv, Qv, Pv, w, dw, Z)
        _assemble(anc, 0, False, S, Sd, alpha, Ic, Bc, hc, F, dSv, dSdv, dalv, dIcv, dBcv,
                  dhcv, dFv, out[2, b], x, y, z, dx, dy, dz, dPv, dQv, Qv, Pv, w, dw, Z)
        _assemble(anc, 2, True, S, Sd, alpha, Ic, Bc, hc, F, dSq, dSdq, dalq, dIcq, dBcq,
                  dhcq, dFq, out[3, b], x, y, z, dx, dy, dz, dPq, dQq, Qq, Pq, w, dw, Z)


@_njit
def _e2(n):
    return np.empty((n, 6))


@_njit
def _e3(n):
    return np.empty((n, n, 6))


@_njit
def _assemble_first(anc, wrt, S, Sd, alpha, F, Ic, Bc, hc, P, Q, x, y, w, out):
    """out[i, j] = d tau_i / d wrt_j (see partials._assemble); wrt 0: q, 1: qd, 2: qdd."""
    n = S.shape[0]
    for j in range(n):
        if wrt == 0:
            _lin(x, j, alpha, j, 1.0, S, j, 0.0)
            _lin(y, j, Sd, j, 1.0, S, j, 0.0)
        elif wrt == 1:
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
def first_partials(parents, anc, screws, refs, inertias, g0, q, qd, qdd, out):
    """out (3, B, n, n): d tau / dq, d tau / dqd, M (see partials.id_partials)."""
    B, n = q.shape
    S, V, Vp, Sd, A, Ap = _e2(n), _e2(n), _e2(n), _e2(n), _e2(n), _e2(n)
    h, alpha, hc, F = _e2(n), _e2(n), _e2(n), _e2(n)
    I, Ic, Bc = np.empty((n, 6, 6)), np.empty((n, 6, 6)), np.empty((n, 6, 6))
    P, Q, x, y, w = _e2(n), _e2(n), _e2(n), _e2(n), _e2(n)
    t6 = np.empty(6)
    for b in range(B):
        _state(parents, screws, refs, inertias, g0, q[b], qd[b], qdd[b], S, I, V, Vp, Sd, A,
               Ap, h, alpha, Ic, Bc, hc, F, t6)
        for i in range(n):
            _mv_r(Ic, i, S, i, P, i, 0)
            _mv_r(Bc, i, S, i, Q, i, 0)
            _adstar_r(S, i, hc, i, Q, i, -1)
        for k in range(3):
            _assemble_first(anc, k, S, Sd, alpha, F, Ic, Bc, hc, P, Q, x, y, w, out[k, b])
