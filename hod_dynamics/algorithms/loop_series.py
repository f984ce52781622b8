"""Taylor series of a loop model's closure residual and of its Jacobian along a motion of the tree.

Everything is on normalised Taylor coefficients ``x[j] = x^(j) / j!`` (so that every Leibniz
sum is a Cauchy product ``(ab)[k] = sum_l a[l] b[k-l]``), for B samples at once.

Poses. Body i sits at ``T_i = T_parent(i) C_i`` with ``C_i = B_i exp(X_i^ q_i)`` (the notation of
Müller and Kumar 2021). For a unit rotation axis (|omega| = 1) ``exp(X^ q) = I + q X^ + (1 - cos
q) X^2 + (q - sin q) X^3``, for a translation ``I + q X^``; the series of sin and cos follow from
s' = c q', c' = -s q': ``s[k] = (1/k) sum_{j=1..k} j q[j] c[k-j]``, ``c[k] = -(1/k) sum_{j=1..k}
j q[j] s[k-j]``. So ``T_i[k] = sum_l T_parent[l] C_i[k-l]``, for the bodies above a closure
frame only, and a closure frame is ``F = T_body P``.

Residual phi (root link frame), rows of each closure (frames A and B, revolute axis e, (u_1,
u_2, e) right-handed and orthonormal)::

    point      p_A - p_B
    revolute   p_A - p_B;  (R_B u_1).(R_A e), (R_B u_2).(R_A e)
    weld       p_A - p_B;  vee(skew(R_A R_B^T)),   skew(M) = (M - M^T) / 2

bilinear in the frame poses, so its series is Cauchy products too. Its zero set has spurious
points (a weld turned by pi, a reversed axis); Newton's method solves ``psi = 0`` instead,
:meth:`ClosureSeries.closing`: the point rows and ``R_A x - R_B x`` for x = e (revolute) or x =
e_1, e_2, e_3 (weld), whose zero set is exactly the closed one.

Jacobian. Column i of Phi = d phi / d q is the tangent of phi along joint i's spatial screw
``xi_i = Ad(T_i) X_i = (omega_i, v_i)`` (root axes: ``omega_i = R_i w_i``, ``v_i = p_i x omega_i
+ R_i v_X``), for the joints above each frame: ``dp = omega x p + v``, revolute rows ``(omega_A -
omega_B).(a x b_j)`` with ``a = R_A e``, ``b_j = R_B u_j``, weld rows ``vee skew([omega_A] Q - Q
[omega_B])``, ``Q = R_A R_B^T``. Its series comes from the same pose series.

The j-th coefficient of phi(q(t)) is affine in the newest coefficient q[j], always with the slope
Phi(q[0]): ``phi[j] = Phi(q[0]) q[j] + r_j(q[0..j-1])``; :mod:`hod_dynamics.algorithms.loop_closure`
solves the passive coefficients order by order on that.
"""

from dataclasses import dataclass

import numpy as np

from ..model.robot_model import per_model


def _hat(X):
    """4x4 matrices [[omega~, v], [0, 0]] of twists X (..., 6) = (omega, v)."""
    out = np.zeros(X.shape[:-1] + (4, 4))
    out[..., :3, :3] = _skew(X[..., :3])
    out[..., :3, 3] = X[..., 3:]
    return out


def _skew(w):
    out = np.zeros(w.shape[:-1] + (3, 3))
    out[..., 0, 1], out[..., 0, 2], out[..., 1, 2] = -w[..., 2], w[..., 1], -w[..., 0]
    out[..., 1, 0], out[..., 2, 0], out[..., 2, 1] = w[..., 2], -w[..., 1], w[..., 0]
    return out


def _cross(a, b):
    """a x b over the last axis, broadcast (np.cross costs more for small arrays)."""
    a0, a1, a2 = a[..., 0], a[..., 1], a[..., 2]
    b0, b1, b2 = b[..., 0], b[..., 1], b[..., 2]
    return np.stack([a1 * b2 - a2 * b1, a2 * b0 - a0 * b2, a0 * b1 - a1 * b0], axis=-1)


def _vee_skew(M):
    """vee((M - M^T) / 2) of M (..., 3, 3)."""
    return 0.5 * np.stack([M[..., 2, 1] - M[..., 1, 2], M[..., 0, 2] - M[..., 2, 0],
                           M[..., 1, 0] - M[..., 0, 1]], axis=-1)


def perpendicular_basis(e):
    """u_1, u_2 (2, 3) completing the unit vector e to the right-handed basis (u_1, u_2, e)."""
    t = np.eye(3)[int(np.argmin(np.abs(e)))]
    u1 = np.cross(t, e)
    u1 /= np.linalg.norm(u1)
    return np.stack([u1, np.cross(e, u1)])


@dataclass(frozen=True)
class _Geometry:
    """A loop model's tree in the arrays of the series: ``bodies`` the bodies above a closure
    frame (parents first), ``parent`` (n,) with the root as n, ``rot`` the rotating joints and
    ``w`` their |omega|, ``powers`` (3, n, 4, 4) the powers Y, Y^2, Y^3 of the unit screws,
    ``references`` (n, 4, 4), ``w_screw``/``v_screw`` (n, 3), ``frames`` [(body, 4x4)] (root as n),
    ``above`` (frames, n) 1 for the joints that move each frame, ``across`` {closure: (2, 3)}
    the vectors u_1, u_2 of a revolute closure, ``start`` (closures,) its first row."""

    bodies: list
    parent: list
    rot: np.ndarray
    w: np.ndarray
    powers: np.ndarray
    references: np.ndarray
    w_screw: np.ndarray
    v_screw: np.ndarray
    frames: list
    above: np.ndarray
    across: dict
    start: np.ndarray


@per_model
def geometry(loop):
    """The :class:`_Geometry` of a loop model (kept for as long as the model lives)."""
    tree = loop.tree
    n = tree.n_dof
    frames = [(n if body < 0 else body, pose) for body, pose in loop.closure_frames]
    above = np.zeros((len(frames), n))
    for f, (body, _) in enumerate(frames):
        if body < n:
            above[f, list(tree.ancestors[body])] = 1.0
    screws = np.asarray(tree.screws, dtype=float)
    w = np.linalg.norm(screws[:, :3], axis=1)
    rot = np.flatnonzero(w > 1e-12)
    Y = _hat(screws)
    Y[rot] /= w[rot, None, None]
    Y2, slide = Y @ Y, np.setdiff1d(np.arange(n), rot)
    Y3 = Y2 @ Y
    Y2[slide], Y3[slide] = 0.0, 0.0
    return _Geometry(
        bodies=sorted({int(j) for j in np.flatnonzero(above.any(axis=0))}),
        parent=[n if p < 0 else int(p) for p in tree.parents], rot=rot, w=w[rot],
        powers=np.stack([Y, Y2, Y3]), references=np.asarray(tree.references, dtype=float),
        w_screw=screws[:, :3], v_screw=screws[:, 3:], frames=frames, above=above,
        across={c: perpendicular_basis(cl.axis) for c, cl in enumerate(loop.closures) if cl.kind == "revolute"},
        start=np.cumsum([0] + [cl.n_rows for cl in loop.closures])[:-1])


class ClosureSeries:
    """Taylor coefficients along B motions of the tree: joint positions ``q`` (B, K, n), filled
    by the caller coefficient by coefficient, and from them (``fill(k)``, coefficients <= k
    first) the bodies' poses ``T`` (n + 1, K, B, 4, 4) (index n: the root) and the closure
    frames ``F`` (2 per closure, K, B, 4, 4); then the residual's and the Jacobian's
    coefficients. (B, 4, 4) blocks are contiguous, so the Cauchy sums are batched products."""

    def __init__(self, loop, B, K):
        self.loop, self.geo, self.B, self.K = loop, geometry(loop), B, K
        n = loop.tree.n_dof
        self.q = np.zeros((B, K, n))
        self._sin = np.zeros((B, K, n))
        self._cos = np.zeros((B, K, n))
        self.T = np.zeros((n + 1, K, B, 4, 4))
        self.T[n, 0] = np.eye(4)
        self._C = np.zeros((n, K, B, 4, 4))
        self.F = np.zeros((len(self.geo.frames), K, B, 4, 4))
        self._twists = None

    def fill(self, k):
        """Coefficient k of sin/cos, of the poses above the closure frames and of the frames."""
        g, q, s, c = self.geo, self.q, self._sin, self._cos
        rot = g.rot
        theta = q[:, :k + 1, rot] * g.w                            # (B, k+1, r) rotation angles
        if k == 0:
            s[:, 0, rot], c[:, 0, rot] = np.sin(theta[:, 0]), np.cos(theta[:, 0])
        else:
            j = np.arange(1, k + 1)[None, :, None]
            s[:, k, rot] = np.sum(j * theta[:, 1:] * c[:, k - 1::-1, rot], axis=1) / k
            c[:, k, rot] = -np.sum(j * theta[:, 1:] * s[:, k - 1::-1, rot], axis=1) / k
        # exp(X^ q)[k] = [k = 0] I + a1 Y + a2 Y^2 + a3 Y^3 (a slide: a1 = q[k], a2 = a3 = 0)
        a = np.zeros((3, self.loop.tree.n_dof, self.B))
        a[0] = q[:, k].T
        a[0, rot] = theta[:, k].T
        a[1, rot] = (1.0 if k == 0 else 0.0) - c[:, k, rot].T
        a[2, rot] = (theta[:, k] - s[:, k, rot]).T
        nb = g.bodies
        E = np.einsum("pnb,pnij->nbij", a[:, nb], g.powers[:, nb])
        if k == 0:
            E += np.eye(4)
        self._C[nb, k] = g.references[nb][:, None] @ E
        T, C = self.T, self._C
        for i in nb:                                                   # parents first
            p = g.parent[i]
            if p == len(g.parent):                                     # on the root: T_root = I
                T[i, k] = C[i, k]
            elif k == 0:
                T[i, 0] = T[p, 0] @ C[i, 0]
            else:
                T[i, k] = np.sum(T[p, :k + 1] @ C[i, k::-1], axis=0)
        for f, (body, P) in enumerate(g.frames):
            self.F[f, k] = T[body, k] @ P
        self._twists = None

    def _frame_pair(self, c, k):
        return self.F[2 * c, :k + 1], self.F[2 * c + 1, :k + 1]

    def residual(self, k):
        """Coefficient k of the closure residual phi(q(t)): (B, m) (m, and rad-like units)."""
        g = self.geo
        out = np.zeros((self.B, self.loop.n_rows))
        for c, closure in enumerate(self.loop.closures):
            r0 = g.start[c]
            FA, FB = self._frame_pair(c, k)                             # (k+1, B, 4, 4)
            out[:, r0:r0 + 3] = FA[k, :, :3, 3] - FB[k, :, :3, 3]
            RA, RB = FA[..., :3, :3], FB[..., :3, :3]
            if closure.kind == "revolute":
                a = RA @ closure.axis                                  # (k+1, B, 3)
                b = RB @ g.across[c].T                                 # (k+1, B, 3, 2)
                out[:, r0 + 3:r0 + 5] = np.sum(a[:, :, :, None] * b[::-1], axis=(0, 2))
            elif closure.kind == "weld":
                Q = np.sum(RA @ np.swapaxes(RB[::-1], -1, -2), axis=0)
                out[:, r0 + 3:r0 + 6] = _vee_skew(Q)
        return out

    def twists(self, k):
        """Series up to coefficient k of the joints' spatial screws, root axes: omega_i and
        v_i (n, k+1, B, 3) each (kept until the poses change)."""
        if self._twists is not None and self._twists[0].shape[1] > k:
            return self._twists[0][:, :k + 1], self._twists[1][:, :k + 1]
        g = self.geo
        n = self.loop.tree.n_dof
        R, p = self.T[:n, :k + 1, :, :3, :3], self.T[:n, :k + 1, :, :3, 3]
        omega = (R @ g.w_screw[:, None, None, :, None])[..., 0]
        v = (R @ g.v_screw[:, None, None, :, None])[..., 0]
        for l in range(k + 1):
            v[:, l] += np.sum(_cross(p[:, :l + 1], omega[:, l::-1]), axis=1)
        self._twists = (omega, v)
        return omega, v

    def jacobian(self, k, kmax=None):
        """Coefficient k of the constraint Jacobian Phi(q(t)) = d phi / d q: (B, m, n). The
        twists are computed up to ``kmax`` (default k) and kept for the next orders."""
        g = self.geo
        n = self.loop.tree.n_dof
        omega, v = self.twists(max(k, kmax or k))
        omega, v = omega[:, :k + 1], v[:, :k + 1]
        out = np.zeros((self.B, self.loop.n_rows, n))
        for c, closure in enumerate(self.loop.closures):
            r0 = g.start[c]
            mA, mB = g.above[2 * c][:, None, None], g.above[2 * c + 1][:, None, None]     # (n, 1, 1)
            FA, FB = self._frame_pair(c, k)
            pA, pB = FA[..., :3, 3], FB[..., :3, 3]                                    # (k+1, B, 3)
            dpa = np.sum(_cross(omega, pA[::-1]), axis=1) + v[:, k]                   # (n, B, 3)
            dpb = np.sum(_cross(omega, pB[::-1]), axis=1) + v[:, k]
            out[:, r0:r0 + 3] = (dpa * mA - dpb * mB).transpose(1, 2, 0)
            RA, RB = FA[..., :3, :3], FB[..., :3, :3]
            if closure.kind == "revolute":
                a = RA @ closure.axis                                                 # (k+1, B, 3)
                b = np.swapaxes(RB @ g.across[c].T, -1, -2)                           # (k+1, B, 2, 3)
                axb = np.stack([np.sum(_cross(a[:l + 1, :, None, :], b[l::-1]), axis=0) for l in range(k + 1)])
                relative = omega * (mA - mB)[:, :, :, None]                           # (n, k+1, B, 3)
                out[:, r0 + 3:r0 + 5] = np.einsum("nlbx,lbjx->bjn", relative, axb[::-1])
            elif closure.kind == "weld":
                Q = np.stack([np.sum(RA[:l + 1] @ np.swapaxes(RB[l::-1], -1, -2), axis=0) for l in range(k + 1)])
                WA, WB = _skew(omega * mA[:, :, :, None]), _skew(omega * mB[:, :, :, None])
                M = np.sum(WA @ Q[::-1], axis=1) - np.sum(Q[::-1] @ WB, axis=1)         # (n, B, 3, 3)
                out[:, r0 + 3:r0 + 6] = _vee_skew(M).transpose(1, 2, 0)
        return out

    def closing(self):
        """psi and its Jacobian at coefficient 0, for Newton's method (see the module
        docstring): (B, m'), (B, m', n)."""
        g = self.geo
        omega, v = self.twists(0)
        omega, v = omega[:, 0], v[:, 0]                                                # (n, B, 3)
        res, jac = [], []
        for c, closure in enumerate(self.loop.closures):
            mA, mB = g.above[2 * c][:, None, None], g.above[2 * c + 1][:, None, None]
            FA, FB = self.F[2 * c, 0], self.F[2 * c + 1, 0]                           # (B, 4, 4)
            pA, pB = FA[:, :3, 3], FB[:, :3, 3]
            res.append(pA - pB)
            jac.append(((_cross(omega, pA) + v) * mA - (_cross(omega, pB) + v) * mB).transpose(1, 2, 0))
            axes = {"point": (), "revolute": (closure.axis,), "weld": tuple(np.eye(3))}[closure.kind]
            for x in axes:
                a, b = FA[:, :3, :3] @ x, FB[:, :3, :3] @ x
                res.append(a - b)
                jac.append((_cross(omega, a) * mA - _cross(omega, b) * mB).transpose(1, 2, 0))
        return np.concatenate(res, axis=1), np.concatenate(jac, axis=1)
