"""The convex program of the consistent fit, built once and solved for any data and weight.

Over the standard parameters pi (10 per body, then viscous, Coulomb and offset friction per
joint), minimise

    |R (K pi) - y|^2 / rows + (gamma / rows) sum_b D(J_b, J0_b),
    D(J, J0) = -log det(J J0^-1) + tr(J0^-1 J) - 4,

subject to J_b positive definite (through the log-determinant), and, with plausibility
:class:`~hod_dynamics.identification.bounds.Bounds`: tr(J_b Q_hat_b) >= 0 (the mass inside the
body's bounding ellipsoid), the mass bounds of each body and of their total; viscous and
Coulomb friction >= 0. R (r+1 columns) is the whitened triangular factor of the data,
``rows`` the number of samples it holds, K the base-parameter map (Lee, Wensing and Park,
"Geometric robot dynamic identification: a convex programming approach", IEEE T-RO 2020;
Wensing, Kim and Slotine, IEEE RA-L 2018).

The reference J0_b of the divergence is the prior's pseudo-inertia made a credible body (its
spread about the centre of mass at least :data:`PRIOR_SHAPE_FLOOR` of the largest, 1 g at
least) and, with bounds, a plausible one: its mass clipped into the body's mass bounds, its
centre of mass pulled to at most :data:`REFERENCE_LEVEL` of the way to the bounding
ellipsoid's surface and its spread shrunk until half the room inside is left
(tr(J0 Q_hat) >= m / 2 (1 - level)); a reference outside its own body would otherwise hold
the fit against the ellipsoid.

The program is written once with cvxpy parameters (disciplined parametrised programming: R, y
and gamma are parameters), so the cross-validation's fits reuse its compiled form; Clarabel
solves it (without equilibration, then with more regularisation when it fails numerically,
then SCS).
"""

import numpy as np

from ..errors import HodDynamicsError, InputError
from ..model.inertia import com_form, pseudo_inertia

PRIOR_SHAPE_FLOOR = 0.05
REFERENCE_LEVEL = 0.7
SOLVERS = (("CLARABEL", {}), ("CLARABEL", {"equilibrate_enable": False}),
           ("CLARABEL", {"static_regularization_constant": 1e-7}), ("SCS", {"eps": 1e-7, "max_iters": 20000}))


def cvxpy_module():
    """cvxpy, or InputError saying how to install it."""
    try:
        import cvxpy
    except ImportError:
        raise InputError("the consistent method needs cvxpy with the Clarabel solver: pip install cvxpy clarabel "
                         "(the identification extra of this package), or use the ols method") from None
    return cvxpy


def credible_pseudo_inertia(pi):
    """The pseudo-inertia (4, 4) of ``pi`` (10,) made a credible mass distribution: the second
    moments about its centre of mass (its shape) kept above PRIOR_SHAPE_FLOOR of the largest,
    and a mass of at least 1 g. A flat or degenerate prior (massless links, identified values
    that break the triangle inequality) would otherwise claim certainty about a dimension no
    data sees, and the divergence, which weighs relative changes, would hold the fit there."""
    m, c, Ic = com_form(pi)
    m = max(float(m), 1e-3)
    sigma = 0.5 * np.trace(Ic) * np.eye(3) - Ic
    w, V = np.linalg.eigh(sigma)
    floor = max(PRIOR_SHAPE_FLOOR * max(w.max(), 0.0), m * 1e-6)
    return _assembled(m, c, (V * np.maximum(w, floor)) @ V.T / m)


def _assembled(m, c, S):
    """Pseudo-inertia of mass m, centre of mass c (3,), spread S (3, 3) = second moment about c / m."""
    J = np.empty((4, 4))
    J[:3, :3] = m * (S + np.outer(c, c))
    J[:3, 3] = J[3, :3] = m * c
    J[3, 3] = m
    return J


def plausible_reference(J0, ellipsoid=None, mass_range=(0.0, np.inf)):
    """The reference of the divergence (module docstring): ``J0`` (4, 4) with its mass clipped
    into ``mass_range`` and, given an ``ellipsoid``, its centre of mass and spread moved inside."""
    m = float(J0[3, 3])
    c = J0[:3, 3] / m
    S = J0[:3, :3] / m - np.outer(c, c)
    lo, hi = mass_range
    m = min(max(m, lo), hi)
    if ellipsoid is not None:
        level = ellipsoid.level(c)
        if level > REFERENCE_LEVEL ** 2:
            c = ellipsoid.center + (c - ellipsoid.center) * REFERENCE_LEVEL / np.sqrt(level)
            level = REFERENCE_LEVEL ** 2
        spread = float(np.trace(np.linalg.solve(ellipsoid.shape, S)))
        room = 0.5 * (1.0 - level)
        if spread > room:
            S = S * room / spread
    return _assembled(max(m, 1e-3), c, S)


def parameter_scale(prior, n_friction):
    """(10 n_bodies + n_friction,) a typical size of each parameter (kg, kg m, kg m^2; friction
    N m) from the prior (n_bodies, 10): the solver works on parameters divided by it (all near 1)."""
    masses = np.abs(prior[:, 0])
    m_ref = max(masses.mean(), 1e-3) if len(masses) else 1.0
    scale = np.ones(10 * len(prior) + n_friction)
    for b, pi in enumerate(prior):
        m = max(masses[b], 0.1 * m_ref)
        J = pseudo_inertia(pi)
        length = np.sqrt(max(np.trace(J[:3, :3]) / max(pi[0], 1e-12), 1e-4)) if pi[0] > 0 else 0.1
        scale[10 * b:10 * b + 10] = [m] + [m * length] * 3 + [m * length ** 2] * 6
    return scale


class ConvexFit:
    """The program of the module docstring for one prior and set of bounds.

    ``K`` (r, p) the base-parameter map; ``prior`` (n_bodies, 10); ``n_friction`` friction
    parameters after the inertial ones (0 or 3 n); ``fixed`` (n_bodies, 10) the parts of each
    body that stay as they are (locked links: positive definiteness applies to the rest);
    ``bounds``: :class:`~hod_dynamics.identification.bounds.Bounds` or None.
    :meth:`solve` gives the standard parameters for a data factor and a weight.
    """

    def __init__(self, K, prior, n_friction=0, fixed=None, bounds=None):
        cp = self.cp = cvxpy_module()
        nb = len(prior)
        self.nb, self.K, self.bounds, self.n_friction = nb, K, bounds, n_friction
        self.fixed = np.zeros_like(prior) if fixed is None else np.asarray(fixed, dtype=float)
        self.scale = scale = parameter_scale(prior, n_friction)
        r, p = K.shape
        self.x = x = cp.Variable(p)
        self.R, self.y = cp.Parameter((r, r)), cp.Parameter(r)
        self.gamma = cp.Parameter(nonneg=True)
        # the base parameters as variables of their own: the parameter R then multiplies r of
        # them, not the p standard ones, which keeps the compiled program small
        self.beta = cp.Variable(r)
        data = cp.sum_squares(self.R @ self.beta - self.y)
        self.references, divergence = [], 0
        for b, J in enumerate(self.pseudo_inertias(x)):
            s = scale[10 * b]
            fixed_J = pseudo_inertia(self.fixed[b])
            J0 = credible_pseudo_inertia(prior[b] - self.fixed[b]) + fixed_J
            if bounds is not None:
                J0 = plausible_reference(J0, bounds.ellipsoids[b], tuple(bounds.mass[b]))
            self.references.append(J0)
            J0free = J0 - fixed_J
            if np.linalg.eigvalsh(J0free)[0] <= 0:
                J0free = credible_pseudo_inertia(prior[b] - self.fixed[b])
            # tr(J0^-1 J) is linear in the parameters: a dot product, not a matrix expression
            divergence = divergence - cp.log_det(J - fixed_J / s) + self.trace_with(s * np.linalg.inv(J0free), b) @ x
        self.constraints = self.bound_constraints(x)
        self.problem = cp.Problem(cp.Minimize(data + self.gamma * divergence),
                                  self.constraints + [self.beta == (K * scale) @ x])

    def pseudo_inertias(self, v):
        """[cvxpy (4, 4)] the pseudo-inertia of each body of the scaled parameters ``v`` (p,),
        in units of the body's mass scale (``scale[10 b]``)."""
        return [self.cp.reshape(self._basis(b) @ v[10 * b:10 * b + 10], (4, 4), order="F") for b in range(self.nb)]

    def _basis(self, b):
        """(16, 10): vec(J_b) (column-major) of body b per scaled parameter, in its mass scale."""
        s = self.scale[10 * b:10 * b + 10]
        return pseudo_inertia(np.eye(10)).reshape(10, 16).T * (s / s[0])

    def trace_with(self, A, b):
        """(p,) the coefficients of tr(J_b A) in the scaled parameters (A (4, 4) symmetric)."""
        out = np.zeros(len(self.scale))
        out[10 * b:10 * b + 10] = A.reshape(16, order="F") @ self._basis(b)
        return out

    def bound_constraints(self, v, t=1.0, semidefinite=False):
        """The constraints on the scaled parameters ``v`` besides the objective: every body's
        bounding ellipsoid and mass bounds, the total mass, non-negative viscous and Coulomb
        friction; each multiplied through by ``t`` (the homogenised form, for ratios), and with
        ``semidefinite`` the bodies' pseudo-inertias (less their fixed parts) positive
        semidefinite (the log-determinant holds them positive definite in the fit)."""
        cp, out = self.cp, []
        for b, J in enumerate(self.pseudo_inertias(v) if semidefinite else [None] * self.nb):
            s = self.scale[10 * b]
            if semidefinite:
                out.append(J - t * pseudo_inertia(self.fixed[b]) / s >> 0)
            if self.bounds is None:
                continue
            e = self.bounds.ellipsoids[b]
            if e is not None:
                Qhat = e.matrix
                out.append(self.trace_with(Qhat / np.linalg.norm(Qhat), b) @ v >= 0)
            lo, hi = self.bounds.mass[b]
            if lo > 0:
                out.append(s * v[10 * b] >= lo * t)
            if np.isfinite(hi):
                out.append(s * v[10 * b] <= hi * t)
        if self.bounds is not None and self.bounds.total_mass is not None:
            total = sum(self.scale[10 * b] * v[10 * b] for b in range(self.nb))
            out += [total >= self.bounds.total_mass[0] * t, total <= self.bounds.total_mass[1] * t]
        if self.n_friction:
            idx = 10 * self.nb + 3 * np.arange(self.n_friction // 3)
            out += [v[idx] >= 0, v[idx + 1] >= 0]
        return out

    def solve(self, R, rows, gamma):
        """Standard parameters (p,) for the whitened data factor ``R`` (r+1, r+1) of ``rows``
        samples and the weight ``gamma`` (>= 0). Raises InputError when the bounds admit no
        parameters, HodDynamicsError when no solver converges."""
        r = self.K.shape[0]
        self.R.value = R[:r, :r] / np.sqrt(rows)
        self.y.value = R[:r, r] / np.sqrt(rows)
        self.gamma.value = float(gamma) / rows
        status = solve(self.problem, self.cp)
        if status in ("infeasible", "infeasible_inaccurate"):
            raise InputError("the bounds contradict each other: no inertial parameters satisfy them together "
                             "(mass bounds, total mass, bounding volumes and the links locked to a body)")
        if self.x.value is None or status not in ("optimal", "optimal_inaccurate"):
            raise HodDynamicsError(f"the consistent fit did not converge (solver status '{status}'); try --method ols")
        return np.asarray(self.x.value) * self.scale


def solve(problem, cp):
    """Solve ``problem`` with the first of SOLVERS that succeeds; returns the status of the
    last one tried ("optimal_inaccurate" is accepted: the solvers reach it within their
    reduced tolerances; an infeasible verdict is checked by the next solver, as numerical
    trouble can look like one)."""
    import warnings

    status = None
    for solver, options in SOLVERS:
        if solver not in cp.installed_solvers():
            continue
        try:
            with warnings.catch_warnings():     # "solution may be inaccurate": the status says it
                warnings.simplefilter("ignore", UserWarning)
                problem.solve(solver=solver, **options)
        except cp.error.SolverError:
            continue
        status = problem.status
        if status in ("optimal", "optimal_inaccurate"):
            return status
    return status if status is not None else problem.status
