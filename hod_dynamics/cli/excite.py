"""``hod-dynamics excite``: an excitation trajectory for ``identify``, within the joint limits."""

import argparse
import os
import sys
import time

from ..errors import CommandError
from .common import Progress, add_description_options, load_model, order_type, output_folder, positive


def cmd_excite(args):
    """Optimise an excitation trajectory for identification: per joint a Fourier series (a
    fundamental period and its harmonics) around a centre, at rest at both ends, within the
    URDF's position and velocity limits and --acceleration-limit, whose base regressor has the
    smallest condition number. Writes it as a waypoint YAML that the demo trajectory
    publisher and hod_dynamics.Trajectory load (record it, then run identify)."""
    from ..identification.excitation import optimise_excitation, write_waypoints

    _check_out(args.out)                       # before the model, and long before the optimisation
    model, notes = load_model(args)
    _check_limits(model)
    for note in notes:
        print(f"warning: {note}", file=sys.stderr)
    output_folder(os.path.dirname(os.path.abspath(args.out)), "--out")
    status = Progress("optimising", not args.no_progress)
    start = time.perf_counter()
    result = optimise_excitation(model, duration=args.duration, harmonics=args.harmonics, period=args.period,
                                 acceleration_limit=args.acceleration_limit, margin=args.margin, seed=args.seed,
                                 friction=args.friction, progress=status)
    status.done()
    path = write_waypoints(result, args.out, robot=os.path.basename(args.urdf))
    for line in result.describe():
        print(line)
    print(f"optimised in {time.perf_counter() - start:.1f} s")
    print(f"wrote {path}")
    return 0


def _check_out(path):
    """--out names a file that can be written (not a folder, not a read-only file)."""
    if os.path.isdir(path):
        raise CommandError(f"--out '{path}' is a folder; give the waypoint YAML file to write, e.g. "
                           f"{os.path.join(path, 'excitation.yaml')}")
    if os.path.exists(path) and not os.access(path, os.W_OK):
        raise CommandError(f"--out '{path}': the file is not writable")


def _check_limits(model):
    """The position limits an excitation is scaled into: lower below upper for every joint."""
    for name, lower, upper in zip(model.joint_names, model.lower, model.upper):
        if lower > upper:
            raise CommandError(f"joint '{name}': its URDF <limit> lower {lower:g} is above upper {upper:g} "
                               "(swapped?); excite keeps every joint within its limits: correct them in the URDF")


def add_parser(sub):
    excite = sub.add_parser("excite", help="optimise an excitation trajectory for identify",
                            description=cmd_excite.__doc__)
    excite.add_argument("--urdf", required=True, metavar="URDF",
                        help="URDF or xacro of the robot (limits and kinematics), or the name of a shipped robot")
    excite.add_argument("--out", required=True, metavar="FILE", help="waypoint YAML to write")
    excite.add_argument("--duration", type=positive, default=20.0, metavar="S",
                        help="trajectory length in s (default 20), whole periods")
    excite.add_argument("--harmonics", type=order_type(12, 3), default=5, metavar="3..12",
                        help="harmonics of the fundamental per joint (default 5; four of their coefficients hold "
                             "the motion at rest at both ends)")
    excite.add_argument("--period", type=positive, metavar="S",
                        help="fundamental period in s (default: the duration split into periods of at most 10 s)")
    excite.add_argument("--acceleration-limit", type=positive, metavar="RAD/S2",
                        help="joint acceleration limit in rad/s^2 (m/s^2) (default: 4 times each joint's velocity "
                             "limit per second, 10 where the URDF has none)")
    excite.add_argument("--margin", type=float, default=0.05, metavar="FRACTION",
                        help="share of each position range (and of the velocity limits) kept free (default 0.05)")
    excite.add_argument("--friction", action=argparse.BooleanOptionalAction, default=True,
                        help="include the friction parameters in the condition number (default: on)")
    excite.add_argument("--seed", type=int, default=0, help="seed of the random starts (default 0)")
    add_description_options(excite, "lock a joint at VALUE rad (m) (repeat the flag)")
    excite.add_argument("--no-progress", action="store_true", help="no progress line on stderr")
    excite.set_defaults(func=cmd_excite)
