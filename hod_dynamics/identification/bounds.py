"""The plausibility bounds of an identification: what a body may weigh and where its mass may lie.

Physical consistency (a positive definite pseudo-inertia) lets a link weigh tonnes or put its
centre of mass a metre outside itself, as long as some mass distribution has those moments.
These bounds keep the fit to bodies that could be the robot's links:

- a bounding ellipsoid per body (:mod:`hod_dynamics.identification.bounding_volumes`): its
  mass lies inside;
- per-body mass bounds: by default ``[m0 / f, m0 f]`` with ``m0`` the prior's mass and
  ``f`` = :data:`MASS_FACTOR` (2: a CAD model or a data sheet is rarely off by more); a prior
  body without mass gets ``[0, rho vol(E)]``, at most the density of steel
  (:data:`DENSITY_MAX`) filling its ellipsoid, or no upper bound without one; each link's
  bounds can be given (or removed) one by one;
- optionally the total moving mass, a range or a value (within :data:`TOTAL_TOLERANCE`).

:func:`check_bounds` refuses bounds that contradict each other before any fit.
"""

from dataclasses import dataclass
from typing import Optional, Tuple

import numpy as np

from ..errors import InputError
from .defaults import MASS_FACTOR, TOTAL_TOLERANCE

DENSITY_MAX = 8000.0        # kg/m^3, steel: the most a massless prior body may weigh per volume of its ellipsoid


@dataclass(frozen=True, eq=False)
class Bounds:
    """``ellipsoids``: per body an :class:`~.bounding_volumes.Ellipsoid` or None (no bounding
    volume); ``mass`` (n_bodies, 2) kg lower and upper bound of each body's mass (0 and inf:
    none); ``total_mass`` (lo, hi) kg or None; ``mass_factor`` the factor the default mass
    bounds came from (None: given otherwise); ``links`` the body links' names."""

    ellipsoids: Tuple
    mass: np.ndarray
    total_mass: Optional[Tuple[float, float]] = None
    mass_factor: Optional[float] = MASS_FACTOR
    links: Tuple[str, ...] = ()

    def to_mapping(self):
        """A JSON-ready description: per link the mass range and the ellipsoid (centre, shape,
        semi-axes, source), and the total mass range."""
        out = {"mass_factor": self.mass_factor,
               "total_mass": None if self.total_mass is None else [float(v) for v in self.total_mass], "links": {}}
        for b, link in enumerate(self.links):
            e = self.ellipsoids[b]
            out["links"][link] = {
                "mass": [float(v) if np.isfinite(v) else None for v in self.mass[b]],
                "ellipsoid": None if e is None else {"center": e.center.tolist(), "shape": e.shape.tolist(),
                                                     "semi_axes": e.semi_axes.tolist(), "source": e.source,
                                                     "detail": e.detail}}
        return out


def plausibility_bounds(model, source=None, *, ellipsoids=True, mass_factor=MASS_FACTOR, mass_bounds=None,
                        total_mass=None, without_volume=(), prior=None, **volume_options):
    """:class:`Bounds` of ``model`` (the prior) built from the description ``source`` it came from.

    ``ellipsoids``: True (from the description, see
    :func:`~.bounding_volumes.bounding_ellipsoids`, which takes ``volume_options``: sources,
    margin, scale, xacro_args, package_paths), False (none) or a list of one
    :class:`~.bounding_volumes.Ellipsoid` (or None) per body; ``without_volume``: links whose
    body gets none; ``mass_factor`` (>= 1, None: no default mass bounds);
    ``mass_bounds`` {link: (lo, hi) kg, or None for no bounds} replacing the default of a
    body; ``total_mass``: (lo, hi) kg, or one value M for M (1 +- TOTAL_TOLERANCE), or None.
    Raises InputError for a link that is not a moving body's, values out of range and bounds
    that contradict each other (:func:`check_bounds`)."""
    from ..model.robot_model import body_names, inertial_parameters
    from .bounding_volumes import bounding_ellipsoids

    prior = inertial_parameters(model) if prior is None else np.asarray(prior, dtype=float)
    links = tuple(body_names(model))
    nb = len(links)
    _known_links(links, list(mass_bounds or {}) + list(without_volume))
    if ellipsoids is True:
        volumes = list(bounding_ellipsoids(model, source, prior=prior, **volume_options))
    elif ellipsoids is False or ellipsoids is None:
        volumes = [None] * nb
    else:
        volumes = list(ellipsoids)
        if len(volumes) != nb:
            raise InputError(f"ellipsoids: {len(volumes)} for the {nb} bodies of model '{model.name}'")
    for link in without_volume:
        volumes[links.index(link)] = None
    if mass_factor is not None and not (np.isfinite(mass_factor) and mass_factor >= 1):
        raise InputError(f"the mass bounds contradict each other: a mass factor of {mass_factor:g} puts each link's "
                         "lower bound m/f above its upper bound m f (give a factor >= 1)")
    mass = np.tile([0.0, np.inf], (nb, 1))
    for b in range(nb):
        m0 = float(prior[b, 0])
        if mass_factor is not None and m0 > 0:
            mass[b] = m0 / mass_factor, m0 * mass_factor
        elif mass_factor is not None and volumes[b] is not None:
            mass[b, 1] = DENSITY_MAX * volumes[b].volume
    for link, pair in (mass_bounds or {}).items():
        mass[links.index(link)] = (0.0, np.inf) if pair is None else [float(v) for v in pair]
    if total_mass is not None:
        values = np.atleast_1d(np.asarray(total_mass, dtype=float))
        if values.size == 1:
            values = values[0] * np.array([1 - TOTAL_TOLERANCE, 1 + TOTAL_TOLERANCE])
        if values.size != 2:
            raise InputError(f"total_mass: one value or a (lo, hi) pair, got {total_mass!r}")
        total_mass = (float(values[0]), float(values[1]))
    bounds = Bounds(tuple(volumes), mass, total_mass, mass_factor if not mass_bounds else None, links)
    check_bounds(bounds)
    return bounds


def _known_links(links, names):
    unknown = [name for name in names if name not in links]
    if unknown:
        raise InputError(f"no moving link {unknown[0]!r} in the model (its moving bodies' links: {', '.join(links)})")


def check_bounds(bounds, fixed=None):
    """InputError naming the first contradiction of ``bounds`` (:class:`Bounds`): a mass range
    upside down or without room for a positive mass, a total mass range the links' ranges
    cannot meet, ``fixed`` parts ((n_bodies, 10), the links attached by locked joints) heavier
    than their body may be, a bounding volume without volume."""
    links = bounds.links or tuple(f"body {b}" for b in range(len(bounds.mass)))
    for link, (lo, hi) in zip(links, bounds.mass):
        if not (np.isfinite(lo) and lo >= 0) or np.isnan(hi):
            raise InputError(f"the mass bounds of {link} must be numbers with 0 <= lower <= upper, got [{lo:g}, {hi:g}] kg")
        if lo > hi:
            raise InputError(f"the mass bounds of {link} contradict each other: lower {lo:g} kg > upper {hi:g} kg")
        if hi <= 0:
            raise InputError(f"the mass bounds of {link} leave it no mass (upper bound {hi:g} kg); a body needs a "
                             "positive mass")
    if bounds.total_mass is not None:
        lo, hi = bounds.total_mass
        if not (np.isfinite(lo) and np.isfinite(hi) and 0 < lo <= hi):
            raise InputError(f"the total mass bounds must be finite with 0 < lower <= upper, got [{lo:g}, {hi:g}] kg")
        low, high = float(bounds.mass[:, 0].sum()), float(bounds.mass[:, 1].sum())
        if low > hi:
            raise InputError(f"the bounds contradict each other: the links' lower mass bounds add up to {low:.4g} kg, "
                             f"more than the total mass's upper bound {hi:.4g} kg")
        if high < lo:
            raise InputError(f"the bounds contradict each other: the links' upper mass bounds add up to {high:.4g} kg, "
                             f"less than the total mass's lower bound {lo:.4g} kg")
    for b, e in enumerate(bounds.ellipsoids):
        if e is not None and not (np.all(np.isfinite(e.shape)) and np.linalg.eigvalsh(e.shape)[0] > 0):
            raise InputError(f"the bounding ellipsoid of {links[b]} has no volume (its shape matrix is not positive "
                             "definite)")
    if fixed is None:
        return
    for b, part in enumerate(np.asarray(fixed, dtype=float)):
        if part[0] <= 0:
            continue
        if part[0] > bounds.mass[b, 1]:
            raise InputError(f"the bounds contradict the model: the links locked to {links[b]} weigh {part[0]:.4g} kg, "
                             f"more than its upper mass bound {bounds.mass[b, 1]:.4g} kg")
