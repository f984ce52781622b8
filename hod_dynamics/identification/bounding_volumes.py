"""Bounding ellipsoids of a robot's moving bodies, and the condition that keeps a body's mass
inside one.

A rigid body whose density is zero outside an ellipsoid E = {x : (x - c)^T Q^-1 (x - c) <= 1}
has a pseudo-inertia J = int [x; 1][x; 1]^T dm (4 x 4) with

    tr(J Q_hat) = int (1 - (x - c)^T Q^-1 (x - c)) dm >= 0,
    Q_hat = [[-Q^-1, Q^-1 c], [c^T Q^-1, 1 - c^T Q^-1 c]],

a linear matrix inequality in the inertial parameters; with J positive semidefinite it is the
exact condition for J to be the moments of some density inside E (Wensing, Kim and Slotine,
"Linear matrix inequalities for physically consistent inertial parameter identification: a
statistical perspective on the mass distribution", IEEE RA-L 2018). ``tr(J Q_hat) / m`` is 0
when the mass lies on E's surface and 1 when it is all at the centre.

Each moving body's ellipsoid comes from the robot description, the first that is complete:

1. its links' ``<collision>`` geometry (boxes, cylinders, spheres, readable meshes:
   :mod:`hod_dynamics.model.geometry`);
2. their ``<visual>`` geometry;
3. its joint origins: the segments from the body's frame origin to each child joint's origin
   and to the origins of the links attached to it, and the prior's inertia (its centre of
   mass and the ends of the axes of the uniform solid ellipsoid of the same inertia: a body
   without children would otherwise be a point), every point inflated by ``margin`` (default
   :data:`MARGIN`, 0.1 m: a generous link radius).

The ellipsoid is the minimum-volume one enclosing those points (Khachiyan's algorithm,
"Rounding of polytopes in the real number model of computation", Math. Oper. Res. 1996, with
Todd and Yildirim's away steps, on the vertices of their convex hull), its semi-axes then
multiplied by ``scale``.
"""

from dataclasses import dataclass

import numpy as np

from ..errors import InputError
from ..model.geometry import KINDS, body_geometry, sphere_points
from ..model.inertia import com_form
from .defaults import MARGIN

SOURCES = KINDS + ("joints",)


@dataclass(frozen=True, eq=False)
class Ellipsoid:
    """``center`` (3,) m and ``shape`` Q (3, 3) m^2 (E = {x : (x - c)^T Q^-1 (x - c) <= 1}) in a
    body's frame; ``source`` "collision", "visual", "joints" or "given"; ``detail`` what it
    was built from."""

    center: np.ndarray
    shape: np.ndarray
    source: str = "given"
    detail: str = ""

    @property
    def matrix(self):
        """Q_hat (4, 4): tr(J Q_hat) >= 0 keeps a pseudo-inertia J's mass inside (module docstring)."""
        Qi = np.linalg.inv(self.shape)
        out = np.empty((4, 4))
        out[:3, :3] = -Qi
        out[:3, 3] = out[3, :3] = Qi @ self.center
        out[3, 3] = 1.0 - self.center @ Qi @ self.center
        return out

    @property
    def semi_axes(self):
        """(3,) m, ascending."""
        return np.sqrt(np.maximum(np.linalg.eigvalsh(self.shape), 0.0))

    @property
    def volume(self):
        return 4.0 / 3.0 * np.pi * float(np.prod(self.semi_axes))

    def level(self, x):
        """(x - c)^T Q^-1 (x - c) of a point x (3,): at most 1 inside."""
        d = np.asarray(x, dtype=float) - self.center
        return float(d @ np.linalg.solve(self.shape, d))

    def slack(self, J):
        """tr(J Q_hat) / m of a pseudo-inertia J (4, 4): >= 0 when its mass can lie inside,
        0 on the surface (-inf without mass)."""
        m = float(J[3, 3])
        return float(np.trace(J @ self.matrix) / m) if m > 0 else -np.inf

    def scaled(self, factor):
        """The ellipsoid with semi-axes times ``factor`` about the same centre."""
        return Ellipsoid(self.center, self.shape * factor ** 2, self.source, self.detail)


def enclosing_ellipsoid(points, tolerance=1e-6, iterations=1000):
    """(c (3,), Q (3, 3)) of the minimum-volume ellipsoid holding ``points`` (k, 3) (Khachiyan's
    algorithm with the away steps of Todd and Yildirim, "On Khachiyan's algorithm for the
    computation of minimum-volume enclosing ellipsoids", Discrete Appl. Math. 2007, on their
    convex hull's vertices), grown to hold every point exactly. At most ``iterations`` steps:
    where many points touch the optimum (spheres about nearby points) the algorithm's tail is
    slow, and 1000 steps leave the semi-axes within 1 % of it. Points that span less than a
    volume (one point, a segment, a flat plate) get a 1 mm sphere each."""
    P = np.asarray(points, dtype=float).reshape(-1, 3)
    spread = np.linalg.svd(P - P.mean(axis=0), compute_uv=False) if len(P) > 1 else np.zeros(3)
    if len(P) < 4 or spread[-1] <= 1e-6 * max(spread[0], 1e-3):
        P = np.vstack([P + 1e-3 * s for s in np.vstack([np.eye(3), -np.eye(3)])])
    if len(P) > 4:
        from scipy.spatial import ConvexHull, QhullError

        try:
            P = P[ConvexHull(P).vertices]
        except (QhullError, ValueError):     # nearly flat: every point stays
            pass
    k = len(P)
    X = np.column_stack([P, np.ones(k)]).T
    u = np.full(k, 1.0 / k)
    for n in range(iterations):
        if n % 100 == 0:           # afresh now and then: the rank-one updates below drift
            Vinv = np.linalg.inv(X @ (u[:, None] * X.T))
            M = np.einsum("ik,ik->k", X, Vinv @ X)
        j = int(np.argmax(M))
        support = np.flatnonzero(u > 0)
        i = support[int(np.argmin(M[support]))]
        grow, shrink = M[j] / 4.0 - 1.0, 1.0 - M[i] / 4.0
        if max(grow, shrink) < tolerance:
            break
        if grow >= shrink:          # towards the farthest point
            step = (M[j] - 4.0) / (4.0 * (M[j] - 1.0))
            a, b, p = 1.0 - step, step, j
        else:                       # away from the nearest supporting point (Todd and Yildirim's drop step)
            step = min((4.0 - M[i]) / (4.0 * (M[i] - 1.0)), u[i] / (1.0 - u[i]))
            a, b, p = 1.0 + step, -step, i
        u *= a
        u[p] = max(u[p] + b, 0.0)
        # V' = a V + b x x^T: its inverse and every M by Sherman and Morrison, O(k) per step
        z = Vinv @ X[:, p]
        r = b / a / (1.0 + b / a * M[p])
        M = (M - r * (X.T @ z) ** 2) / a
        Vinv = (Vinv - r * np.outer(z, z)) / a
    c = P.T @ u
    Q = 3.0 * ((P.T * u) @ P - np.outer(c, c))
    D = P - c
    level = np.einsum("ki,ki->k", D, np.linalg.solve(Q, D.T).T).max()
    return c, Q * max(level, 1.0)


def bounding_ellipsoids(model, source=None, *, sources=SOURCES, margin=MARGIN, scale=1.0, prior=None,
                        xacro_args=None, package_paths=None):
    """[:class:`Ellipsoid`] per moving body of ``model`` (the order of
    :func:`~hod_dynamics.inertial_parameters`), from the description ``source`` (path or text)
    it was built from (see the module docstring; without ``source``, from the joint origins).
    ``sources``: the kinds tried, in order; ``margin`` (m) the joint origins' inflation;
    ``scale`` (> 0) multiplies every semi-axis; ``prior`` (n_bodies, 10) the parameters whose
    centres of mass the joint-origin ellipsoids hold (default the model's)."""
    if not (np.isfinite(margin) and margin > 0):
        raise InputError(f"margin must be a length > 0 (m), got {margin!r}")
    if not (np.isfinite(scale) and scale > 0):
        raise InputError(f"scale must be a number > 0, got {scale!r}")
    unknown = [s for s in sources if s not in SOURCES]
    if unknown or not sources:
        raise InputError(f"sources must be some of {SOURCES}, got {list(sources)}")
    if prior is None:
        from ..model.robot_model import inertial_parameters

        prior = inertial_parameters(model)
    geometry = {kind: body_geometry(source, model, kind, xacro_args=xacro_args, package_paths=package_paths)
                for kind in sources if kind in KINDS and source is not None}
    out = []
    for b in range(len(prior)):
        tried = []
        for kind in sources:
            if kind == "joints":
                out.append(_joint_ellipsoid(model, b, prior[b], margin, tried).scaled(scale))
                break
            if kind not in geometry:
                continue
            g = geometry[kind][b]
            if g.points is not None:
                c, Q = enclosing_ellipsoid(g.points)
                out.append(Ellipsoid(c, Q, kind, "; ".join(g.shapes)).scaled(scale))
                break
            tried.append(f"{kind}: " + ("; ".join(g.problems) or "none"))
        else:
            raise InputError(f"body {model.link_names[b]}: no bounding volume from {list(sources)} "
                             f"({'; '.join(tried)}); add 'joints' to the sources")
    return out


def _joint_ellipsoid(model, b, pi, margin, tried):
    """The ellipsoid of body b from its joint origins (module docstring, 3)."""
    ends = [np.zeros(3)]
    ends += [model.references[c][:3, 3] for c in model.children[b]]
    ends += [f.pose[:3, 3] for f in model.frames.values() if f.body == b]
    if pi[0] > 0:
        m, c, Ic = com_form(pi)
        w, V = np.linalg.eigh((0.5 * np.trace(Ic) * np.eye(3) - Ic) / m)     # second moment about c, per kg
        axes = V * np.sqrt(5.0 * np.maximum(w, 0.0))        # the uniform solid ellipsoid of that inertia
        ends += [c] + [c + sign * axes[:, k] for k in range(3) for sign in (-1.0, 1.0)]
    points = np.vstack([e + sphere_points(margin) for e in ends])
    c, Q = enclosing_ellipsoid(points)
    detail = f"{len(model.children[b])} child joint(s) and the prior's inertia, margin {margin:g} m"
    if tried:
        detail += " (" + "; ".join(tried) + ")"
    return Ellipsoid(c, Q, "joints", detail)
