"""The plausibility report of identified bodies: each link's mass and centre of mass against the
prior and against its bounds and bounding volume, flagged where a value sits on a bound or
moved far.

Per link (moving body): the mass, the prior's, their ratio and the mass bounds; the centre of
mass (m, in the body's frame), the prior's and the distance between them; with a bounding
ellipsoid, the centre of mass's level ``(c - c_E)^T Q^-1 (c - c_E)`` (at most 1 inside) and the
density's room ``tr(J Q_hat) / m`` (0: the mass lies on the ellipsoid's surface, 1: all at its
centre; :mod:`hod_dynamics.identification.bounding_volumes`). Flags:

- ``mass on its lower bound`` / ``upper bound``: within :data:`ON_BOUND` (relative) of it: the
  data pushes against the bound, which then decides the value;
- ``mass on its bounding volume``: room below :data:`ON_SURFACE`;
- ``mass xF the prior's``: F beyond :data:`MOVED_FACTOR` or below its inverse;
- ``centre of mass moved D m``: farther than half the smallest semi-axis of the bounding
  ellipsoid (:data:`MOVED_DISTANCE` without one);
- ``prior outside its bounding volume``: the prior itself breaks the bound (its description's
  inertia and geometry disagree).
"""

import numpy as np

from ..model.inertia import com_form, pseudo_inertia

ON_BOUND = 1e-3
ON_SURFACE = 1e-3
MOVED_FACTOR = 1.5
MOVED_DISTANCE = 0.05       # m


def plausibility_report(parameters, prior, links, bounds=None):
    """[dict] per link of ``parameters`` (n_bodies, 10) against ``prior`` (n_bodies, 10) and
    ``bounds`` (:class:`~hod_dynamics.identification.bounds.Bounds` or None); see the module
    docstring for the keys' meaning: link, mass, prior_mass, mass_ratio, mass_bounds, com,
    prior_com, com_shift, com_level, room, prior_room, flags."""
    rows = []
    for b, link in enumerate(links):
        m, c, _ = com_form(parameters[b])
        m0, c0, _ = com_form(prior[b])
        ratio = float(m / m0) if m0 > 0 else None
        row = {"link": link, "mass": float(m), "prior_mass": float(m0), "mass_ratio": ratio, "mass_bounds": None,
               "com": c.tolist(), "prior_com": c0.tolist(), "com_shift": float(np.linalg.norm(c - c0)),
               "com_level": None, "room": None, "prior_room": None}
        flags = []
        ellipsoid = None
        if bounds is not None:
            lo, hi = bounds.mass[b]
            row["mass_bounds"] = [float(lo), float(hi) if np.isfinite(hi) else None]
            if lo > 0 and m <= lo * (1 + ON_BOUND):
                flags.append("mass on its lower bound")
            if np.isfinite(hi) and m >= hi * (1 - ON_BOUND):
                flags.append("mass on its upper bound")
            ellipsoid = bounds.ellipsoids[b]
        if m0 > 0 and not 1 / MOVED_FACTOR <= ratio <= MOVED_FACTOR:
            flags.append(f"mass x{ratio:.3g} the prior's")
        limit = MOVED_DISTANCE
        if ellipsoid is not None:
            row["com_level"] = ellipsoid.level(c)
            row["room"] = ellipsoid.slack(pseudo_inertia(parameters[b]))
            row["prior_room"] = ellipsoid.slack(pseudo_inertia(prior[b])) if m0 > 0 else None
            limit = 0.5 * float(ellipsoid.semi_axes[0])
            if row["room"] < ON_SURFACE:
                flags.append("mass on its bounding volume")
            if row["prior_room"] is not None and row["prior_room"] < 0:
                flags.append("prior outside its bounding volume")
        if row["com_shift"] > limit:
            flags.append(f"centre of mass moved {row['com_shift']:.3g} m")
        row["flags"] = flags
        rows.append(row)
    return rows


def report_lines(rows):
    """The printed table of :func:`plausibility_report` rows: a header and a line per link."""
    lines = [f"  {'link':<20}{'mass kg':>9}{'prior':>9}{'bounds':>17}{'com shift m':>13}{'com level':>11}"
             f"{'room':>7}  flags"]
    for row in rows:
        bounds = row["mass_bounds"]
        shown = "-" if bounds is None else f"{bounds[0]:.3g}..{bounds[1]:.3g}" if bounds[1] is not None \
            else f">= {bounds[0]:.3g}"
        level = "-" if row["com_level"] is None else f"{row['com_level']:.2f}"
        room = "-" if row["room"] is None else f"{row['room']:.2f}"
        lines.append(f"  {row['link']:<20}{row['mass']:9.4g}{row['prior_mass']:9.4g}{shown:>17}"
                     f"{row['com_shift']:13.3g}{level:>11}{room:>7}  {'; '.join(row['flags']) or 'ok'}")
    return lines
