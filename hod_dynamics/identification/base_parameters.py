"""Base parameters: the combinations of inertial parameters that the joint torques determine.

A robot's torques depend on its 10 n_bodies standard parameters only through r <= 10 n_bodies
independent linear combinations, the *base parameters* beta = K pi (Gautier and Khalil,
"Direct calculation of minimum set of inertial parameters of serial robots", 1990; Gautier,
"Numerical calculation of the base inertial parameters of robots", 1991). Numerically: stack
the regressor at random states into W, factor ``W P = Q R`` by QR with column pivoting; the
first r pivoted columns (|R_ii| above the tolerance) are independent, and the others are
``W_d = W_b R_1^-1 R_2``, so ``W pi = W_b (pi_b + R_1^-1 R_2 pi_d) = W_b beta``.

Each base parameter is reported with a readable expression, e.g. ``m_link3 + m_link4`` or
``Izz_link2 + 0.1764 m_link3``: the standard parameter it keeps and those folded into it.
The random states cover the joints' whole position range, so a combination that is only
unidentifiable on a particular recording (a joint that never moves) is not folded here; see
:mod:`hod_dynamics.identification` for that test on data.
"""

from dataclasses import dataclass
from typing import Tuple

import numpy as np
import scipy.linalg

from ..algorithms.regressors import FRICTION_COLUMNS, n_columns, regressor
from ..errors import InputError
from ..model.inertia import parameter_names
from ..model.robot_model import body_names
from ..model.validation import check_model

RELATIVE_TOLERANCE = 1e-9   # |R_ii| / |R_00| below this: a dependent column
ZERO = 1e-10                # |coefficient| below this in the map K: exactly zero (rounding)


@dataclass(frozen=True, eq=False)
class BaseParameters:
    """The base parameters of a model: ``beta = K @ pi`` (r,) from the standard parameters
    ``pi`` (p,) (10 per body, then 3 friction parameters per joint when included).

    ``names`` (r,): readable expressions; ``standard_names`` (p,); ``independent`` (r,) the
    standard parameter each base parameter keeps (its column of the regressor is the base
    regressor's column); ``K`` (r, p) with ``K[:, independent] == I``; ``rank`` r.
    """

    names: Tuple[str, ...]
    standard_names: Tuple[str, ...]
    independent: np.ndarray
    K: np.ndarray

    @property
    def rank(self) -> int:
        return len(self.independent)

    def base(self, pi):
        """beta (..., r) of standard parameters pi (..., p) (a (n_bodies, 10) array is flattened)."""
        pi = np.asarray(pi, dtype=float)
        if pi.shape[-1] != self.K.shape[1]:
            pi = pi.reshape(pi.shape[:-2] + (-1,)) if pi.ndim >= 2 else pi
        if pi.shape[-1] != self.K.shape[1]:
            raise InputError(f"pi must have {self.K.shape[1]} entries (the standard parameters), got shape "
                             f"{np.shape(pi)}")
        return pi @ self.K.T

    def columns(self, Y):
        """The base regressor (..., r) of a regressor Y (..., p): ``Y @ pi == columns(Y) @ base(pi)``
        (C-contiguous: LAPACK takes a copy of anything else, at many times the cost)."""
        return np.take(np.asarray(Y), self.independent, axis=-1)


def standard_names(model, friction=False):
    """Names of the standard parameters in the regressor's column order: ``m_<link>``,
    ``mx_<link>``, ..., ``Izz_<link>`` per moving body, then ``viscous_<joint>``,
    ``coulomb_<joint>``, ``offset_<joint>`` per joint with friction."""
    names = parameter_names(body_names(model))
    if friction:
        names += tuple(f"{kind}_{j}" for j in model.joint_names for kind in FRICTION_COLUMNS)
    return names


def random_states(model, samples, seed=0):
    """``samples`` random (q, qd, qdd) of ``model`` (floating: (q, v, a)): positions uniform
    within the joint limits (within [-pi, pi] where a joint has none), rates and
    accelerations standard normal (rad/s, rad/s^2)."""
    rng = np.random.default_rng(seed)
    n = model.n_dof
    lo = np.where(np.isfinite(model.lower), model.lower, -np.pi)
    hi = np.where(np.isfinite(model.upper), model.upper, np.pi)
    q = rng.uniform(lo, hi, (samples, n))
    if model.floating:
        quat = rng.normal(size=(samples, 4))
        quat /= np.linalg.norm(quat, axis=1, keepdims=True)
        q = np.concatenate([rng.normal(size=(samples, 3)), quat, q], axis=1)
    return q, rng.normal(size=(samples, model.nv)), rng.normal(size=(samples, model.nv))


def base_parameters(model, *, friction=False, samples=None, seed=0, backend=None):
    """The base parameters of ``model`` by QR with column pivoting of its regressor stacked at
    ``samples`` random states (default: enough for four times as many rows as parameters).

    ``friction``: include the 3 friction parameters per joint (always identifiable from
    random states). Returns :class:`BaseParameters`; the base parameters are listed in the
    order of the standard parameter each keeps.
    """
    model = check_model(model)
    p = n_columns(model, friction)
    if samples is None:
        samples = max(20, -(-4 * p // max(model.nv, 1)))
    W = regressor(model, *random_states(model, samples, seed), friction=friction,
                  backend=backend).reshape(-1, p)
    return base_from_regressor(W, standard_names(model, friction))


def base_from_regressor(W, names):
    """:class:`BaseParameters` of the stacked regressor W (rows, p) with column names ``names``."""
    p = W.shape[1]
    if p == 0:
        return BaseParameters((), tuple(names), np.zeros(0, dtype=int), np.zeros((0, 0)))
    R, perm = scipy.linalg.qr(W, mode="r", pivoting=True)
    diag = np.abs(np.diag(R))
    r = int(np.count_nonzero(diag > RELATIVE_TOLERANCE * diag[0])) if diag[0] > 0 else 0
    # W[:, perm[:r]] R1^-1 R2 = W[:, perm[r:]]: the dependent columns in terms of the kept ones
    fold = scipy.linalg.solve_triangular(R[:r, :r], R[:r, r:]) if r < p else np.zeros((r, 0))
    K = np.zeros((r, p))
    K[np.arange(r), perm[:r]] = 1.0
    K[:, perm[r:]] = np.where(np.abs(fold) > ZERO * max(1.0, np.abs(fold).max(initial=0.0)), fold, 0.0)
    order = np.argsort(perm[:r])
    K, independent = K[order], perm[:r][order]
    return BaseParameters(tuple(_expression(row, names, i) for row, i in zip(K, independent)),
                          tuple(names), independent, K)


def _expression(row, names, keep):
    """``name_keep + c1 name1 - c2 name2 ...`` for one row of K (coefficients of 1 unwritten)."""
    text = names[keep]
    for j in np.flatnonzero(row):
        if j == keep:
            continue
        c = row[j]
        sign = " - " if c < 0 else " + "
        mag = abs(c)
        coef = "" if abs(mag - 1.0) < 1e-9 else f"{mag:.4g} "
        text += f"{sign}{coef}{names[j]}"
    return text
