"""Closed-form equations of motion and their time derivatives of any order, for kinematic trees:
S. Kumar, A. Müller, "Nth order analytical time derivatives of inverse dynamics in recursive and
closed forms", IEEE ICRA 2021, sec. III, and A. Müller, S. Kumar, "Closed-form time derivatives
of the equations of motion of rigid body systems", Multibody System Dynamics 2021, secs. 2-5.

System-level quantities of a tree with n bodies (6n x 6n, block (i, j) for bodies i, j; twists
``(omega, v)``, wrenches ``(torque, force)``, everything in body-fixed frames):

- ``A``: ``A_ij = Ad_{C_{i,j}}`` (twist of frame j seen in frame i) when j is an ancestor of i
  or i itself, else 0; ``U = (Ad_{C_{1,0}}; ...; Ad_{C_{n,0}})`` its base column.
- ``X = diag(X_1, ..., X_n)`` (6n x n), ``Mb = diag(M_1, ..., M_n)``, ``a = diag(qd_i ad(X_i))``,
  ``b = diag(ad(V_i))``, ``J = A X`` and ``V = J qd``.
- ``A' = A a - A a A`` (Kumar and Müller 2021, eq. 39) and, for the base column, ``U' = -A a U``.
- ``M = J^T Mb J``, ``C = J^T (-Mb A a - b^T Mb) J`` (Kumar and Müller 2021, eq. 30),
  ``Cbar = C + J^T Mb b J`` (Müller and Kumar 2021, sec. 5: ``M' - 2 Cbar`` is skew-symmetric,
  ``Cbar qd = C qd``),
  ``Q_grav = J^T Mb U dV_0`` with the base acceleration ``dV_0 = (0, -g)`` (gravity enters
  as in :mod:`hod_dynamics.algorithms.recursive`, so ``Q_grav`` is the torque that holds the robot
  against gravity), ``Q_ext = -J^T W`` for wrenches ``W`` applied ON the bodies.
- ``tau = M qdd + C qd + Q_grav + Q_ext``.

Every quantity is carried as normalised Taylor coefficients (see :mod:`hod_dynamics.algorithms.jets`):
the binomial sums of Kumar and Müller 2021, eqs. 34-47, become plain Cauchy products, for any order.
Dense 6n x 6n matrices are used throughout: simple and exact, O(n^3) time and
O(K B (6n)^2) memory for K orders and B samples; use ``method="recursive"`` of
:func:`hod_dynamics.time_derivatives` for speed or long batches.
"""

import warnings

import numpy as np

from ..arrays import check_order
from ..errors import HodDynamicsDeprecationWarning, InputError
from ..model.spatial import ad
from ..model.validation import check_jet
from .jets import cauchy_matTvec, cauchy_matvec, from_taylor, to_taylor
from .recursive import joint_adjoint_taylor, wrench_taylor

FACTORISATIONS = ("kumar_mueller", "passive")
# the name earlier releases gave the first one; accepted with a deprecation warning
_OLD_FACTORISATIONS = {"seed": "kumar_mueller"}


def _cauchy_matmul(X, Y, K, transpose_x=False):
    """sum_j X[j] @ Y[k-j] (or X[j].T @ Y[k-j]) for k < K: (K, B, r, s) x (K, B, s, c)."""
    Xs = np.swapaxes(X, -1, -2) if transpose_x else X
    out = np.zeros((K,) + np.broadcast_shapes(Xs.shape[1:-2], Y.shape[1:-2])
                   + (Xs.shape[-2], Y.shape[-1]))
    for j in range(K):
        out[j:] += np.matmul(Xs[j], Y[:K - j])
    return out


def _block_diag(blocks):
    """(..., n, r, c) blocks -> (..., n r, n c) block-diagonal matrix."""
    n, r, c = blocks.shape[-3:]
    out = np.zeros(blocks.shape[:-3] + (n, r, n, c))
    idx = np.arange(n)
    out[..., idx, :, idx, :] = np.moveaxis(blocks, -3, 0)
    return out.reshape(blocks.shape[:-3] + (n * r, n * c))


def _configuration(model, qc):
    """``A`` (B, 6n, 6n) and ``U`` (B, 6n, 6) at the configuration with coefficients ``qc[0]``.

    Row block i is ``Ad_{C_{i,p}}`` times row block p (p the parent), plus the identity on
    the diagonal: the product of the joint transforms along the path to the base.
    """
    n = model.n_dof
    Ap = joint_adjoint_taylor(model, qc, None, 1)[0]  # (B, n, 6, 6): Ad_{C_{i,parent}}
    B = Ap.shape[0]
    A = np.zeros((B, n, 6, n, 6))
    U = np.zeros((B, n, 6, 6))
    for i in range(n):
        p = model.parents[i]
        A[:, i, :, i, :] = np.eye(6)
        if p < 0:
            U[:, i] = Ap[:, i]
        else:
            A[:, i] += np.einsum("brc,bcjs->brjs", Ap[:, i], A[:, p])
            U[:, i] = Ap[:, i] @ U[:, p]
    return A.reshape(B, 6 * n, 6 * n), U.reshape(B, 6 * n, 6)


class _System:
    """Taylor coefficients (K, B, ...) of the system matrices along one trajectory jet.

    ``qc`` (>=1, B, n) coefficients of q, ``wc`` (>=K, B, n) of qd. Attributes: ``A``, ``Aa``
    (= A a) (K, B, 6n, 6n); ``J`` (K, B, 6n, n); ``V`` (K, B, 6n); ``G`` (K, B, 6n) = U dV_0,
    the base acceleration seen in every body frame; ``Mb`` (6n, 6n).
    """

    def __init__(self, model, qc, wc, K):
        n = model.n_dof
        self.model, self.K, self.n = model, K, n
        A0, U0 = _configuration(model, qc)
        B = A0.shape[0]
        g0 = np.concatenate([np.zeros(3), -model.gravity])
        adX = model.ad_screws
        self.A = np.zeros((K, B, 6 * n, 6 * n))
        self.Aa = np.zeros_like(self.A)
        self.G = np.zeros((K, B, 6 * n))
        AadX = np.zeros_like(self.A)  # A_j[:, blk i] @ ad(X_i): A a without the qd_i factor
        self.A[0], self.G[0] = A0, U0 @ g0
        for k in range(K):
            AadX[k] = np.einsum("brjc,jcs->brjs", self.A[k].reshape(B, 6 * n, n, 6),
                                    adX).reshape(B, 6 * n, 6 * n)
            for j in range(k + 1):  # (A a)_k = sum_j A_j a_{k-j}, a_m = diag(qd_m,i ad(X_i))
                self.Aa[k] += AadX[j] * np.repeat(wc[k - j], 6, axis=-1)[:, None, :]
            if k + 1 < K:  # (k+1) A_{k+1} = (A a)_k - (A a A)_k;  (k+1) U_{k+1} = -(A a U)_k
                AaA = sum(self.Aa[j] @ self.A[k - j] for j in range(k + 1))
                self.A[k + 1] = (self.Aa[k] - AaA) / (k + 1)
                AaG = sum(np.matmul(self.Aa[j], self.G[k - j, ..., None])[..., 0]
                          for j in range(k + 1))
                self.G[k + 1] = -AaG / (k + 1)
        X = model.screws
        self.J = np.einsum("kbrjc,jc->kbrj", self.A.reshape(K, B, 6 * n, n, 6), X)
        self.V = cauchy_matvec(self.J, wc[:K], K)
        self.Mb = _block_diag(model.inertias)

    def mass_matrix(self):
        """M coefficients (K, B, n, n)."""
        return _cauchy_matmul(self.J, self.Mb @ self.J, self.K, transpose_x=True)

    def coriolis_matrix(self, factorisation="kumar_mueller"):
        """C (Kumar and Müller 2021, eq. 30) or Cbar (Müller and Kumar 2021, sec. 5, passive)
        coefficients (K, B, n, n)."""
        K, n = self.K, self.n
        adV = ad(self.V.reshape(K, self.V.shape[1], n, 6))  # (K, B, n, 6, 6)
        N = -self.Mb @ self.Aa - _block_diag(np.swapaxes(adV, -1, -2) @ self.model.inertias)
        if factorisation == "passive":
            N += self.Mb @ _block_diag(adV)
        return _cauchy_matmul(self.J, _cauchy_matmul(N, self.J, K), K, transpose_x=True)

    def gravity(self):
        """Q_grav coefficients (K, B, n)."""
        return cauchy_matTvec(self.J, self.G @ self.Mb.T, self.K)

    def external(self, wext):
        """Q_ext = -J^T W coefficients (K, B, n); ``wext`` (K, B, n, 6) body-frame wrenches."""
        return -cauchy_matTvec(self.J, wext.reshape(self.K, wext.shape[1], -1), self.K)


def _prepare(model, qjet, order, rows_needed):
    """Validate; returns (system, batch shape, K, qd coefficients (K+1, B, n))."""
    order = check_order(order)
    rows = rows_needed(order)
    a = check_jet(model, qjet, rows, at_least=True)
    K = order + 1
    qc = to_taylor(a)
    wc = to_taylor(a[..., 1:, :]) if rows > 1 else np.zeros((K,) + qc.shape[1:])
    if len(wc) < K + 1:
        wc = np.concatenate([wc, np.zeros((K + 1 - len(wc),) + wc.shape[1:])])
    return _System(model, qc, wc, K), a.shape[:-2], K, wc


def _matrices_out(c, batch):
    K, B, r, s = c.shape
    return from_taylor(c.reshape(K, B, r * s), batch).reshape(tuple(batch) + (K, r, s))


def mass_matrix_derivatives(model, qjet, order):
    """M(q) and its time derivatives M^(1..order) along a trajectory (Kumar and Müller 2021, eq. 43).

    ``qjet`` (..., r, n) with r >= order+1 rows q, qd, ..., q^(order) (extra rows are
    ignored, so the jet given to :func:`hod_dynamics.time_derivatives` works too).
    Returns (..., order+1, n, n): rows M^(0..order) (kg m^2, kg m, kg per s^k).
    """
    system, batch, _, _ = _prepare(model, qjet, order, lambda o: o + 1)
    return _matrices_out(system.mass_matrix(), batch)


def coriolis_matrix_derivatives(model, qjet, order, *, factorisation="kumar_mueller"):
    """Coriolis/centrifugal matrix and its time derivatives along a trajectory.

    ``factorisation="kumar_mueller"`` (the default): ``C = J^T (-Mb A a - b^T Mb) J`` (Kumar and
    Müller 2021, eq. 30; Müller and Kumar 2021; earlier releases called it ``"seed"``, which is
    still taken, with a deprecation warning);
    ``"passive"``: ``Cbar = -J^T (Mb A a + b^T Mb - Mb b) J`` (Müller and Kumar 2021, sec. 5), for which
    ``M' - 2 Cbar`` is skew-symmetric. Both give the same ``C qd``.
    ``qjet`` (..., r, n) with r >= order+2 rows q, qd, ..., q^(order+1) (extra rows ignored).
    Returns (..., order+1, n, n): rows C^(0..order).
    """
    if factorisation in _OLD_FACTORISATIONS:
        new = _OLD_FACTORISATIONS[factorisation]
        warnings.warn(f"factorisation={factorisation!r} is deprecated: use factorisation={new!r} (the same "
                      "matrices)", HodDynamicsDeprecationWarning, stacklevel=2)
        factorisation = new
    if factorisation not in FACTORISATIONS:
        raise InputError(f"factorisation must be one of {FACTORISATIONS}, got {factorisation!r}")
    system, batch, _, _ = _prepare(model, qjet, order, lambda o: o + 2)
    return _matrices_out(system.coriolis_matrix(factorisation), batch)


def gravity_derivatives(model, qjet, order):
    """Generalised gravity forces Q_grav(q) and their time derivatives (Kumar and Müller 2021, eq. 47).

    ``Q_grav`` is the joint torque/force that balances gravity (``tau`` at rest), with the
    model's gravity vector. ``qjet`` (..., r, n) with r >= order+1 rows q, ..., q^(order).
    Returns (..., order+1, n).
    """
    system, batch, _, _ = _prepare(model, qjet, order, lambda o: o + 1)
    return from_taylor(system.gravity(), batch)


def external_wrench_derivatives(model, qjet, order, wrenches):
    """Q_ext = -sum_links J_l^T W_l and its time derivatives (Müller and Kumar 2021, eq. 27).

    ``wrenches`` maps URDF link names to jets (..., order+1, 6) of the wrench
    ``(torque, force)`` applied ON that link by the environment, in the link frame, torque
    about the link frame origin (N m, N), and its time derivatives. ``qjet`` (..., r, n) with
    r >= order+1 rows. Returns (..., order+1, n): the joint torques/forces the wrenches add
    to ``tau``.
    """
    system, batch, K, _ = _prepare(model, qjet, order, lambda o: o + 1)
    return from_taylor(system.external(wrench_taylor(model, wrenches, batch, K)), batch)


def time_derivatives_closed_form(model, qjet, order, wrenches=None):
    """tau and its time derivatives up to ``order`` in closed form (Kumar and Müller 2021, eq. 34).

    ``qjet`` (..., order+3, n): q, qd, qdd, ..., q^(order+2); ``wrenches`` as in
    :func:`external_wrench_derivatives`. Returns (..., order+1, n): rows tau^(0..order).
    """
    order = check_order(order)
    a = np.asarray(qjet, dtype=float)
    if a.ndim >= 2 and a.shape[-2] != order + 3:
        raise InputError(f"qjet must have shape (..., {order + 3}, {model.n_dof}) (rows "
                         f"q^(0..{order + 2})) for order {order}, got {a.shape}")
    system, batch, K, wc = _prepare(model, a, order, lambda o: o + 3)
    tau = (cauchy_matvec(system.mass_matrix(), wc[1:K + 1] * np.arange(1, K + 1)[:, None, None])
           + cauchy_matvec(system.coriolis_matrix(), wc[:K]) + system.gravity())
    if wrenches:
        tau += system.external(wrench_taylor(model, wrenches, batch, K))
    return from_taylor(tau, batch)
