"""``hod-dynamics info`` (joints, limits and masses of a description) and ``hod-dynamics robots``
(the shipped models)."""

import os

import numpy as np

from ..model.robots import FLOATING_BASE, robot_path, shipped_robots
from .common import add_description_options, load_model


def cmd_info(args):
    """Print the joints, limits and masses of a URDF (or xacro) model, a file or a shipped
    robot's name, and the warnings of its reading (extensions read past, misspellings read past
    with --lenient, inertias that are not positive semi-definite, negative <dynamics> values)."""
    mechanism, notes = load_model(args, extensions=True)
    model = getattr(mechanism, "tree", mechanism)     # a mechanism with loops: its tree's joints below
    print(f"{model.name}: {model.n_dof} moving joints, root link '{model.root_link}', "
          f"total moving mass {model.masses.sum():.3f} kg")
    if model is not mechanism:
        print(f"loops: {len(mechanism.closures)} closures ({mechanism.n_rows} constraint rows), actuated joints "
              f"{', '.join(mechanism.actuated_joints)}; the other {len(mechanism.passive_joints)} joints are passive")
        for closure in mechanism.closures:
            axis = f", axis {np.round(closure.axis, 6).tolist()}" if closure.kind == "revolute" else ""
            print(f"  closure {closure.name}: {closure.kind} ({closure.n_rows} rows) between '{closure.link_a}' at "
                  f"{np.round(closure.pose_a[:3, 3], 6).tolist()} and '{closure.link_b}' at "
                  f"{np.round(closure.pose_b[:3, 3], 6).tolist()}{axis}")
    if args.urdf in FLOATING_BASE and not os.path.exists(args.urdf):
        print(f"note: {args.urdf} is a floating-base robot: here its root link '{model.root_link}' is fixed to "
              f"the world; in Python load it with a free base: hd.load_robot(\"{args.urdf}\", floating_base=True) "
              "(the command line and the ROS nodes take fixed-base models)")
    for note in notes:
        print(f"warning: {note}")
    print("units: position rad (m for prismatic joints), velocity rad/s (m/s), effort N m (N), mass kg")
    print(f"{'joint':<28}{'type':<11}{'link':<28}{'lower':>9}{'upper':>9}{'vel':>8}{'effort':>9}{'mass':>9}")
    for i, name in enumerate(model.joint_names):
        print(f"{name:<28}{model.joint_types[i]:<11}{model.link_names[i]:<28}{model.lower[i]:9.3g}"
              f"{model.upper[i]:9.3g}{model.velocity_limits[i]:8.3g}{model.effort_limits[i]:9.3g}"
              f"{model.masses[i]:9.3f}")
    return 0


def cmd_robots(args):
    """List the shipped robot models and their URDF paths."""
    for name in shipped_robots():
        print(f"{name:<12} {robot_path(name)}")
    return 0


def add_info_parser(sub):
    info = sub.add_parser("info", help="summarise a URDF model", description=cmd_info.__doc__)
    info.add_argument("urdf", metavar="URDF", help="URDF or xacro file, or the name of a shipped robot (hod-dynamics robots)")
    add_description_options(info, "lock a joint at VALUE rad (m) (repeat the flag for several joints)", loops=True)
    info.set_defaults(func=cmd_info)


def add_robots_parser(sub):
    robots = sub.add_parser("robots", help="list the shipped robot models", description=cmd_robots.__doc__)
    robots.set_defaults(func=cmd_robots)
