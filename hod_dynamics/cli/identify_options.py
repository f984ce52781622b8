"""The options of ``hod-dynamics identify`` that set or relax the plausibility bounds, choose the
weight of the prior, and ask for a payload or the determinacy intervals; and the bounds they make."""

import argparse
import math

from ..errors import CommandError
from .common import non_negative, positive


def regularization(text):
    """``cv`` or a number >= 0."""
    return "cv" if text == "cv" else non_negative(text)


def folds(text):
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"'{text}' is not a whole number") from None
    if value < 2:
        raise argparse.ArgumentTypeError(f"{text} must be 2 or more (the training data is cut into that many blocks)")
    return value


def add_options(ident):
    """The flags of this module on the ``identify`` parser ``ident``."""
    from ..identification.defaults import FOLDS, MARGIN, MASS_FACTOR, PAYLOAD_SIZE, TOTAL_TOLERANCE, WEIGHTS

    grid = ", ".join(f"{w:g}" for w in WEIGHTS)
    ident.add_argument("--regularization", type=regularization, default="cv", metavar="W|cv",
                       help="weight of the divergence from the URDF's inertias in the consistent fit, in units of one "
                            f"sample's weighted squared residual; cv (default): chosen among {grid} by "
                            "cross-validation over contiguous time blocks of the identification bags")
    ident.add_argument("--folds", type=folds, default=FOLDS, metavar="K",
                       help=f"time blocks of the cross-validation (default {FOLDS})")
    ident.add_argument("--bounding-volumes", choices=("geometry", "joints", "none"), default="geometry",
                       help="each body's mass inside an ellipsoid: geometry (default: from its links' <collision>, "
                            "else <visual>, else its joint origins), joints (from the joint origins only), none")
    ident.add_argument("--bounding-margin", type=positive, default=MARGIN, metavar="M",
                       help=f"inflation of the joint-origin ellipsoids, m (default {MARGIN:g})")
    ident.add_argument("--bounding-scale", type=positive, default=1.0, metavar="F",
                       help="multiply every ellipsoid's semi-axes by F (default 1; above 1 relaxes them)")
    ident.add_argument("--no-bounding-volume", action="append", default=[], metavar="LINK",
                       help="no bounding volume for LINK's body (repeat the flag for several)")
    ident.add_argument("--mass-factor", type=positive, default=MASS_FACTOR, metavar="F",
                       help=f"each body's mass within [m/F, m F] of the URDF's m (default {MASS_FACTOR:g})")
    ident.add_argument("--no-mass-bounds", action="store_true", help="no default mass bounds (--mass-bounds still "
                                                                     "apply)")
    ident.add_argument("--mass-bounds", action="append", default=[], metavar="LINK=LO:HI",
                       help="LINK's body weighs LO to HI kg (LINK=none: no bounds; repeat the flag for several)")
    ident.add_argument("--total-mass", metavar="KG|LO:HI",
                       help=f"the moving bodies weigh LO to HI kg together (KG: within {100 * TOTAL_TOLERANCE:g} %%)")
    ident.add_argument("--determinacy", action="store_true",
                       help="print and save how far the data and the bounds pin each link's mass and centre of "
                            "mass (the 95 %% determinacy intervals; eight small programs per link)")
    ident.add_argument("--payload", metavar="LINK",
                       help="identify only a rigid payload attached to LINK (10 inertial parameters, with friction "
                            "unless --no-friction or --friction-file), the URDF's model of the arm fixed; writes "
                            "payload.urdf (a fixed joint and link) and payload.yaml")
    ident.add_argument("--payload-size", type=positive, default=PAYLOAD_SIZE, metavar="M",
                       help=f"the payload's extent, m, for the test of its excitation (default {PAYLOAD_SIZE:g})")
    ident.add_argument("--friction-file", metavar="FILE",
                       help="with --payload: the arm's known friction (a friction.yaml), subtracted instead of "
                            "fitted")


def parsed_mass_bounds(items):
    """{link: (lo, hi) or None} of the --mass-bounds flags; CommandError for a malformed one."""
    out = {}
    for item in items:
        link, sep, value = item.partition("=")
        if not sep or not link:
            raise CommandError(f"--mass-bounds expects LINK=LO:HI (kg) or LINK=none, got '{item}'")
        if link in out:
            raise CommandError(f"--mass-bounds {link} is given twice: give each link once")
        if value == "none":
            out[link] = None
            continue
        out[link] = _range(value, f"--mass-bounds {item}")
    return out


def _range(value, flag):
    lo, sep, hi = value.partition(":")
    try:
        pair = (float(lo), float(hi)) if sep else None
    except ValueError:
        pair = None
    if pair is None or not all(math.isfinite(v) for v in pair):
        raise CommandError(f"{flag}: expected LO:HI with two numbers (kg)")
    return pair


def parsed_total_mass(text):
    """(lo, hi), a value, or None of --total-mass."""
    if text is None:
        return None
    if ":" in text:
        return _range(text, f"--total-mass {text}")
    try:
        value = float(text)
    except ValueError:
        raise CommandError(f"--total-mass {text}: expected KG or LO:HI (kg)") from None
    if not (math.isfinite(value) and value > 0):
        raise CommandError(f"--total-mass {text}: the total mass must be a number > 0 (kg)")
    return value


def bounds_from_args(args, model, source, xacro_args):
    """The plausibility :class:`~hod_dynamics.identification.bounds.Bounds` the flags ask for."""
    from ..identification.bounds import plausibility_bounds

    sources = {"geometry": ("collision", "visual", "joints"), "joints": ("joints",), "none": ()}[args.bounding_volumes]
    return plausibility_bounds(model, source, ellipsoids=bool(sources), sources=sources or ("joints",),
                               margin=args.bounding_margin, scale=args.bounding_scale,
                               without_volume=args.no_bounding_volume,
                               mass_factor=None if args.no_mass_bounds else args.mass_factor,
                               mass_bounds=parsed_mass_bounds(args.mass_bounds),
                               total_mass=parsed_total_mass(args.total_mass), xacro_args=xacro_args)


def check_combinations(args):
    """CommandError for flags that do not go together."""
    if args.friction_file and not args.payload:
        raise CommandError("--friction-file goes with --payload (a whole identification fits the friction)")
    if args.payload and args.method == "ols":
        raise CommandError("--payload fits with its own method; leave out --method")
    if args.determinacy and args.method == "ols":
        raise CommandError("--determinacy measures the consistent fit's bounds; leave out --method ols")
    if args.payload and args.determinacy:
        raise CommandError("--determinacy is for the whole arm's identification; a payload's parameters are all "
                           "determined (or refused)")
