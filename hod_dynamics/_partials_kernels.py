"""Compiled (numba) kernel of the second-order partial derivatives of inverse dynamics.

Loops over samples, bodies and directions implementing exactly the formulas of
:mod:`hod_dynamics.partials` (world-frame state, its tangents along the unit directions of q and
qd, and the assembly of d tau_i / d x_j and their tangents); see that module for the maths.
Importing this module needs numba; :mod:`hod_dynamics.backend` imports it only when asked.
"""

import math

import numpy as np

from ._kernels import _njit


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
        X = screws[l]
        th = q[l]
        sn, cs = math.sin(th), math.cos(th)
        w0, w1, w2, v0, v1, v2 = X[0], X[1], X[2], X[3], X[4], X[5]
        ww = w0 * w0 + w1 * w1 + w2 * w2
        wv = w0 * v0 + w1 * v1 + w2 * v2
        a, d = 1.0 - cs, th - sn
        E[0, 0] = 1.0 + a * (w0 * w0 - ww)
        E[1, 1] = 1.0 + a * (w1 * w1 - ww)
        E[2, 2] = 1.0 + a * (w2 * w2 - ww)
        E[0, 1] = -sn * w2 + a * w0 * w1
        E[1, 0] = sn * w2 + a * w0 * w1
        E[0, 2] = sn * w1 + a * w0 * w2
        E[2, 0] = -sn * w1 + a * w0 * w2
        E[1, 2] = -sn * w0 + a * w1 * w2
        E[2, 1] = sn * w0 + a * w1 * w2
        pe0 = th * v0 + a * (w1 * v2 - w2 * v1) + d * (w0 * wv - ww * v0)
        pe1 = th * v1 + a * (w2 * v0 - w0 * v2) + d * (w1 * wv - ww * v1)
        pe2 = th * v2 + a * (w0 * v1 - w1 * v0) + d * (w2 * wv - ww * v2)
        # C = refs[l] @ (E, pe); T_l = T_par @ C
        for r in range(3):
            for c in range(3):
                RC[r, c] = refs[l, r, 0] * E[0, c] + refs[l, r, 1] * E[1, c] + refs[l, r, 2] * E[2, c]
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
            Rw[r] = R[r, 0] * w0 + R[r, 1] * w1 + R[r, 2] * w2
            Rv[r] = R[r, 0] * v0 + R[r, 1] * v1 + R[r, 2] * v2
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


@_njit
def _tangent(parents, anc, wrt_q, qd, qdd, S, I, V, Vp, Sd, A, Ap, h,
             dS, dSd, dalpha, dIc, dBc, dhc, dF, dV, dA, t6, t66):
    """Tangents (n bodies, n directions m) along dq = e_m (wrt_q) or dqd = e_m (see
    partials._tangent). ``anc[l, m]``: m is l or an ancestor of l. Composites are summed."""
    n = S.shape[0]
    zero = np.zeros(6)
    for m in range(n):
        for l in range(n):
            par = parents[l]
            on = anc[l, m]
            if not on:
                # m is not on the path of l: nothing of body l depends on q_m or qd_m
                dS[l, m] = 0.0
                dSd[l, m] = 0.0
                dalpha[l, m] = 0.0
                dV[l, m] = 0.0
                dA[l, m] = 0.0
                dhc[l, m] = 0.0
                dF[l, m] = 0.0
                dIc[l, m] = 0.0
                dBc[l, m] = 0.0
                continue
            dVp = dV[par, m] if par >= 0 else zero
            dAp = dA[par, m] if par >= 0 else zero
            if wrt_q:
                _ad(S[m], S[l], dS[l, m])  # U_l = S_m moves body l
                for r in range(6):
                    dV[l, m, r] = dVp[r] + dS[l, m, r] * qd[l]
            else:
                dS[l, m] = 0.0
                for r in range(6):
                    dV[l, m, r] = dVp[r] + (S[l, r] if m == l else 0.0)
            # dSd = -ad(S) dVp + ad(Vp) dS
            _ad(dVp, S[l], dSd[l, m])
            _ad(Vp[l], dS[l, m], t6)
            dSd[l, m] += t6
            for r in range(6):
                dA[l, m, r] = (dAp[r] + dS[l, m, r] * qdd[l] + dSd[l, m, r] * qd[l]
                               + (Sd[l, r] if (not wrt_q and m == l) else 0.0))
            # dalpha = -ad(S) dAp + ad(Ap) dS - ad(Sd) dVp + ad(Vp) dSd
            _ad(dAp, S[l], dalpha[l, m])
            _ad(Ap[l], dS[l, m], t6)
            dalpha[l, m] += t6
            _ad(dVp, Sd[l], t6)
            dalpha[l, m] += t6
            _ad(Vp[l], dSd[l, m], t6)
            dalpha[l, m] += t6
            # dI = rate(U, I) when m <= l (wrt q); dh = I dV + dI V
            _mv(I[l], dV[l, m], dhc[l, m])
            _rate(dV[l, m], I[l], dBc[l, m], t6)
            _mv(I[l], dA[l, m], dF[l, m])
            _adstar(dV[l, m], h[l], t6)
            dF[l, m] += t6
            if wrt_q:
                _rate(S[m], I[l], dIc[l, m], t6)
                _mv(dIc[l, m], V[l], t6)
                dhc[l, m] += t6
                _mv(dIc[l, m], A[l], t6)
                dF[l, m] += t6
                # dId += N + N^T with N = ad*(V) dI
                for c in range(6):
                    _adstar(V[l], dIc[l, m, :, c], t6)
                    for r in range(6):
                        t66[r, c] = t6[r]
                for r in range(6):
                    for c in range(6):
                        dBc[l, m, r, c] += t66[r, c] + t66[c, r]
            else:
                dIc[l, m] = 0.0
            _adstar(V[l], dhc[l, m], t6)
            dF[l, m] += t6
    for l in range(n - 1, -1, -1):
        par = parents[l]
        if par >= 0:
            dIc[par] += dIc[l]
            dBc[par] += dBc[l]
            dhc[par] += dhc[l]
            dF[par] += dF[l]


@_njit
def _assemble(anc, wrt, S, Sd, alpha, Ic, Bc, hc, F, dS, dSd, dalpha, dIc, dBc, dhc, dF,
              out, x, y, z, dx, dy, dz, dP, dQ, Q, P, w, dw, t6):
    """out[i, j, m]: tangent along direction m of d tau_i / d wrt_j (see
    partials._assemble_tangent); wrt 0: q, 1: qd, 2: qdd."""
    n = S.shape[0]
    has_y = wrt != 2
    for j in range(n):
        if wrt == 0:
            x[j] = alpha[j]
            y[j] = Sd[j]
            _adstar(S[j], F[j], z[j])
        elif wrt == 1:
            x[j] = 2.0 * Sd[j]
            y[j] = S[j]
            z[j] = 0.0
        else:
            x[j] = S[j]
            y[j] = 0.0
            z[j] = 0.0
        for m in range(n):
            if wrt == 0:
                dx[j, m] = dalpha[j, m]
                dy[j, m] = dSd[j, m]
                _adstar(dS[j, m], F[j], dz[j, m])
                _adstar(S[j], dF[j, m], t6)
                dz[j, m] += t6
            elif wrt == 1:
                dx[j, m] = 2.0 * dSd[j, m]
                dy[j, m] = dS[j, m]
                dz[j, m] = 0.0
            else:
                dx[j, m] = dS[j, m]
                dy[j, m] = 0.0
                dz[j, m] = 0.0
    for i in range(n):
        _mv(Ic[i], S[i], P[i])
        _mv(Bc[i], S[i], Q[i])
        _adstar(S[i], hc[i], t6)
        Q[i] -= t6
        _mv(Ic[i], x[i], w[i])
        _mv(Bc[i], y[i], t6)
        w[i] += t6
        _adstar(y[i], hc[i], t6)
        w[i] += t6
        w[i] += z[i]
        for m in range(n):
            # dP = dIc S + Ic dS; dQ = dBc S + Bc dS - ad*(dS) hc - ad*(S) dhc
            _mv(dIc[i, m], S[i], dP[i, m])
            _mv(Ic[i], dS[i, m], t6)
            dP[i, m] += t6
            _mv(dBc[i, m], S[i], dQ[i, m])
            _mv(Bc[i], dS[i, m], t6)
            dQ[i, m] += t6
            _adstar(dS[i, m], hc[i], t6)
            dQ[i, m] -= t6
            _adstar(S[i], dhc[i, m], t6)
            dQ[i, m] -= t6
            # dw = dIc x + Ic dx + dBc y + Bc dy + ad*(dy) hc + ad*(y) dhc + dz
            _mv(dIc[i, m], x[i], dw[i, m])
            _mv(Ic[i], dx[i, m], t6)
            dw[i, m] += t6
            if has_y:
                _mv(dBc[i, m], y[i], t6)
                dw[i, m] += t6
                _mv(Bc[i], dy[i, m], t6)
                dw[i, m] += t6
                _adstar(dy[i, m], hc[i], t6)
                dw[i, m] += t6
                _adstar(y[i], dhc[i, m], t6)
                dw[i, m] += t6
            dw[i, m] += dz[i, m]
    for i in range(n):
        for j in range(n):
            if anc[i, j]:  # j is i or an ancestor of i
                for m in range(n):
                    v = 0.0
                    for r in range(6):
                        v += dP[i, m, r] * x[j, r] + P[i, r] * dx[j, m, r]
                        if has_y:
                            v += dQ[i, m, r] * y[j, r] + Q[i, r] * dy[j, m, r]
                    out[i, j, m] = v
            elif anc[j, i]:  # j strictly below i
                for m in range(n):
                    v = 0.0
                    for r in range(6):
                        v += dS[i, m, r] * w[j, r] + S[i, r] * dw[j, m, r]
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
    # tangents along q (suffix q) and qd (suffix v): per (body, direction)
    dSq, dSdq, dalq, dhcq, dFq, dVq, dAq = _e3(n), _e3(n), _e3(n), _e3(n), _e3(n), _e3(n), _e3(n)
    dSv, dSdv, dalv, dhcv, dFv, dVv, dAv = _e3(n), _e3(n), _e3(n), _e3(n), _e3(n), _e3(n), _e3(n)
    dIcq, dBcq = np.empty((n, n, 6, 6)), np.empty((n, n, 6, 6))
    dIcv, dBcv = np.empty((n, n, 6, 6)), np.empty((n, n, 6, 6))
    x, y, z, Q, P, w = _e2(n), _e2(n), _e2(n), _e2(n), _e2(n), _e2(n)
    dx, dy, dz, dP, dQ, dw = _e3(n), _e3(n), _e3(n), _e3(n), _e3(n), _e3(n)
    t6 = np.empty(6)
    t66 = np.empty((6, 6))
    for b in range(B):
        _state(parents, screws, refs, inertias, g0, q[b], qd[b], qdd[b], S, I, V, Vp, Sd, A,
               Ap, h, alpha, Ic, Bc, hc, F, t6)
        _tangent(parents, anc, True, qd[b], qdd[b], S, I, V, Vp, Sd, A, Ap, h,
                 dSq, dSdq, dalq, dIcq, dBcq, dhcq, dFq, dVq, dAq, t6, t66)
        _tangent(parents, anc, False, qd[b], qdd[b], S, I, V, Vp, Sd, A, Ap, h,
                 dSv, dSdv, dalv, dIcv, dBcv, dhcv, dFv, dVv, dAv, t6, t66)
        _assemble(anc, 0, S, Sd, alpha, Ic, Bc, hc, F, dSq, dSdq, dalq, dIcq, dBcq, dhcq, dFq,
                  out[0, b], x, y, z, dx, dy, dz, dP, dQ, Q, P, w, dw, t6)
        _assemble(anc, 1, S, Sd, alpha, Ic, Bc, hc, F, dSv, dSdv, dalv, dIcv, dBcv, dhcv, dFv,
                  out[1, b], x, y, z, dx, dy, dz, dP, dQ, Q, P, w, dw, t6)
        _assemble(anc, 0, S, Sd, alpha, Ic, Bc, hc, F, dSv, dSdv, dalv, dIcv, dBcv, dhcv, dFv,
                  out[2, b], x, y, z, dx, dy, dz, dP, dQ, Q, P, w, dw, t6)
        _assemble(anc, 2, S, Sd, alpha, Ic, Bc, hc, F, dSq, dSdq, dalq, dIcq, dBcq, dhcq, dFq,
                  out[3, b], x, y, z, dx, dy, dz, dP, dQ, Q, P, w, dw, t6)


@_njit
def _e2(n):
    return np.empty((n, 6))


@_njit
def _e3(n):
    return np.empty((n, n, 6))
