"""How far the data and the bounds pin each link's mass and centre of mass.

Joint torques determine only the base parameters: a fixed-base arm's individual link masses
are never among them (a point mass on a joint's axis moves the same whether it belongs to the
link before the joint or after it). What pins a link is the data together with the bounds.
The *determinacy interval* of a quantity is its range over the set

    S = { parameters within the bounds (physically consistent, inside the bounding volumes,
          within the mass bounds) whose weighted squared residual on the identification
          data is at most the fit's plus chi2 * inflation },

chi2 = :data:`CHI2` (3.84: the 95 % quantile of one degree of freedom, a 95 % interval for
one quantity), inflation the variance factor of the residual's autocorrelation (as in the
standard errors). A link's mass is *determined* when its interval lies within
``mass_tolerance`` (default :data:`MASS_TOLERANCE`, 10 %) of the identified mass; its centre
of mass is determined when each coordinate's interval lies within ``com_tolerance`` (default
:data:`COM_TOLERANCE`, 1 cm) of the identified one. Those are the *well excited* links:
whatever the truth within the bounds, the data leaves it no farther than that.

The mass interval: minimise and maximise the mass over S (convex). A centre of mass
coordinate h_k / m is a ratio: with z = parameters / m and t = 1 / m (Charnes and Cooper,
"Programming with linear fractional functionals", 1962) its extremes over S are those of the
linear h_k(z) over {m(z) = 1, t >= 0, the constraints of S multiplied through by t} (the
residual bound becomes the second-order cone |A z - y t| <= sqrt(rss) t), also convex.
Eight programs per link, each compiled once (cvxpy parameters for the objective).
"""

import numpy as np

from ..errors import HodDynamicsError
from ..model.inertia import com_form
from ..model.robot_model import body_names
from .program import ConvexFit, solve

CHI2 = 3.841
MASS_TOLERANCE = 0.10
COM_TOLERANCE = 0.01       # m


def determinacy(result, *, mass_tolerance=MASS_TOLERANCE, com_tolerance=COM_TOLERANCE, chi2=CHI2, extremes=False,
                progress=None):
    """[dict] per link of an :class:`~hod_dynamics.identification.fit.Identification` made with
    the consistent method: ``link``, ``mass`` (kg), ``mass_interval`` [lo, hi], ``com`` (3,) m,
    ``com_interval`` (3, 2), ``mass_determined``, ``com_determined`` (see the module
    docstring); with ``extremes``, ``mass_extremes`` (2, p) the standard parameters (inertial,
    then friction) at the two ends of the mass interval. Raises HodDynamicsError when a
    program does not solve."""
    fit = ConvexFit(result.base.K, result.prior, result.base.K.shape[1] - result.prior.size, result.fixed,
                    result.bounds)
    cp, scale = fit.cp, fit.scale
    R = result.whitened_factor()
    r = result.base.rank
    A = R[:r, :r] @ (result.base.K * scale)
    y = R[:r, r]
    estimate = np.r_[result.parameters.ravel(), _friction_vector(result)] / scale
    rss = float(np.sum((A @ estimate - y) ** 2)) + chi2 * result.inflation
    norm = np.sqrt(rss)
    p = len(scale)
    objective = cp.Parameter(p)
    # S itself: the mass extremes
    x = cp.Variable(p)
    plain = cp.Problem(cp.Maximize(objective @ x), fit.bound_constraints(x, semidefinite=True)
                       + [cp.norm(A @ x - y) <= norm])
    # S scaled by 1 / m: the centre of mass extremes
    z, t = cp.Variable(p), cp.Variable(nonneg=True)
    unit = cp.Parameter(p)
    ratio = cp.Problem(cp.Maximize(objective @ z), fit.bound_constraints(z, t, semidefinite=True)
                       + [cp.norm(A @ z - y * t) <= norm * t, unit @ z == 1])
    rows = []
    for b, link in enumerate(body_names(result.model)):
        if progress:
            progress(f"determinacy of {link}")
        m, c, _ = com_form(result.parameters[b])
        e = np.zeros(p)
        e[10 * b] = 1.0
        interval, ends = [], []
        for sign in (-1.0, 1.0):
            interval.append(sign * _extreme(plain, objective, sign * e, x, cp) * scale[10 * b])
            ends.append(np.asarray(x.value) * scale)
        unit.value = e
        com = np.zeros((3, 2))
        for k in range(3):
            h = np.zeros(p)
            h[10 * b + 1 + k] = scale[10 * b + 1 + k] / scale[10 * b]    # c_k = h_k / m in z's units
            com[k] = -_extreme(ratio, objective, -h, z, cp), _extreme(ratio, objective, h, z, cp)
        rows.append({"link": link, "mass": float(m), "mass_interval": [float(v) for v in interval],
                     "com": c.tolist(), "com_interval": com.tolist(),
                     "mass_determined": bool(interval[0] >= (1 - mass_tolerance) * m
                                             and interval[1] <= (1 + mass_tolerance) * m),
                     "com_determined": bool(np.all(com[:, 0] >= c - com_tolerance)
                                            and np.all(com[:, 1] <= c + com_tolerance))})
        if extremes:
            rows[-1]["mass_extremes"] = np.array(ends)
    return rows


def _extreme(problem, objective, vector, variable, cp):
    """The maximum of vector @ variable over the problem's set."""
    objective.value = vector
    status = solve(problem, cp)
    if status not in ("optimal", "optimal_inaccurate") or problem.value is None:
        raise HodDynamicsError(f"the determinacy program did not solve (solver status '{status}')")
    return float(problem.value)


def _friction_vector(result):
    """(3 n,) the identified friction in the order of the regressor's columns (none without)."""
    from ..algorithms.regressors import friction_parameters

    return friction_parameters(result.friction) if result.friction is not None else np.zeros(0)


def determinacy_lines(rows):
    """The printed table of :func:`determinacy` rows."""
    lines = [f"  {'link':<20}{'mass kg':>9}{'95 % interval':>20}{'com half-widths mm (x, y, z)':>32}  well excited"]
    for row in rows:
        lo, hi = row["mass_interval"]
        half = 1000 * np.max(np.abs(np.array(row["com_interval"]) - np.array(row["com"])[:, None]), axis=1)
        what = [w for w, ok in (("mass", row["mass_determined"]), ("centre of mass", row["com_determined"])) if ok]
        lines.append(f"  {row['link']:<20}{row['mass']:9.4g}{f'{lo:.4g} .. {hi:.4g}':>20}"
                     f"{', '.join(f'{v:.0f}' for v in half):>32}  {', '.join(what) or 'no'}")
    return lines
