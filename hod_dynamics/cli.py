"""The ``hod-dynamics`` command line.

    hod-dynamics demo [--order K] [--duration S] [--rate HZ] [--out DIR] [--no-plot]
    hod-dynamics info URDF [--root LINK] [--tip LINK ...] [--lock JOINT=VALUE ...]
    hod-dynamics robots

Errors on bad input print one line (``hod-dynamics: error: ...``) and exit with code 2.
"""

import argparse
import os
import sys
import time

import numpy as np

from . import paper_examples as paper
from .dynamics import time_derivatives
from .errors import HodDynamicsError
from .model import RobotModel
from .robots import load_robot, robot_path, shipped_robots


def _parse_locks(items):
    locks = {}
    for item in items or []:
        name, sep, value = item.partition("=")
        if not sep:
            raise HodDynamicsError(f"--lock expects JOINT=VALUE, got '{item}'")
        try:
            locks[name] = float(value)
        except ValueError:
            raise HodDynamicsError(f"--lock {item}: '{value}' is not a number") from None
    return locks


def cmd_demo(args):
    """The main job on the embedded default: shipped KUKA iiwa 14 model of seed 000, the Gaz et
    al. trajectory and the end-effector wrench of the paper; tau^(0..order) at ``rate`` Hz."""
    model = load_robot("iiwa14", gravity=paper.IIWA_GRAVITY)
    t = np.arange(0.0, args.duration + 0.5 / args.rate, 1.0 / args.rate)
    qjet = paper.gaz_trajectory_jet(t, args.order + 3)
    wrenches = {paper.IIWA_WRENCH_LINK: paper.iiwa_wrench_jet(t, args.order + 1)}
    start = time.perf_counter()
    taujet = time_derivatives(model, qjet, args.order, wrenches=wrenches)
    elapsed = time.perf_counter() - start
    os.makedirs(args.out, exist_ok=True)
    print(f"robot: {model.name} ({model.n_dof} joints, shipped URDF {robot_path('iiwa14')})")
    print(f"trajectory: Gaz et al. 2019 eq. 31, {len(t)} samples over {args.duration:g} s, "
          f"end-effector wrench 10 sin(pi t) on {paper.IIWA_WRENCH_LINK}")
    print(f"computed tau^(0..{args.order}) in {elapsed * 1e3:.1f} ms "
          f"({elapsed / len(t) * 1e6:.2f} us per sample)")
    print("peak |tau^(k)| per joint:")
    print("  order " + " ".join(f"{name[-7:]:>10}" for name in model.joint_names))
    for k in range(args.order + 1):
        print(f"  {k:5d} " + " ".join(f"{v:10.3g}" for v in np.abs(taujet[:, k]).max(axis=0)))
    csv = os.path.join(args.out, "demo_torque_jets.csv")
    cols = ["t"] + [f"q_{j}" for j in model.joint_names] + [
        f"tau{k}_{j}" for k in range(args.order + 1) for j in model.joint_names]
    data = np.column_stack([t, qjet[:, 0]] + [taujet[:, k] for k in range(args.order + 1)])
    np.savetxt(csv, data, delimiter=",", header=",".join(cols), comments="", fmt="%.10g")
    print(f"wrote {csv}")
    if not args.no_plot:
        from .plots import plot_torque_jets

        png = plot_torque_jets(t, taujet, model.joint_names, os.path.join(args.out, "demo_torque_jets.png"),
                               title="KUKA iiwa 14, Gaz et al. trajectory: tau and its time derivatives")
        print(f"wrote {png}")
    return 0


def cmd_info(args):
    """Print the joints, limits and masses of a URDF model."""
    model = RobotModel.from_urdf(args.urdf, root_link=args.root, tip_links=args.tip,
                                 locked_joints=_parse_locks(args.lock))
    print(f"{model.name}: {model.n_dof} joints, root link '{model.root_link}', "
          f"total moving mass {model.masses.sum():.3f} kg")
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


def build_parser():
    parser = argparse.ArgumentParser(
        prog="hod-dynamics",
        description="Inverse dynamics of URDF robots and its time derivatives of any order.")
    sub = parser.add_subparsers(dest="command", required=True)
    demo = sub.add_parser("demo", help="run the embedded default (shipped iiwa model and trajectory)",
                          description=cmd_demo.__doc__)
    demo.add_argument("--order", type=int, default=3, help="highest torque derivative (default 3)")
    demo.add_argument("--duration", type=float, default=5.0, help="trajectory length in s (default 5)")
    demo.add_argument("--rate", type=float, default=1000.0, help="sample rate in Hz (default 1000)")
    demo.add_argument("--out", default="hod_demo_out", help="output folder (default hod_demo_out)")
    demo.add_argument("--no-plot", action="store_true", help="skip the PNG (no matplotlib needed)")
    demo.set_defaults(func=cmd_demo)
    info = sub.add_parser("info", help="summarise a URDF model", description=cmd_info.__doc__)
    info.add_argument("urdf", help="URDF file")
    info.add_argument("--root", help="root link (default: the URDF root)")
    info.add_argument("--tip", action="append", help="tip link (repeatable): keep only these chains")
    info.add_argument("--lock", action="append", metavar="JOINT=VALUE", help="lock a joint (repeatable)")
    info.set_defaults(func=cmd_info)
    robots = sub.add_parser("robots", help="list the shipped robot models", description=cmd_robots.__doc__)
    robots.set_defaults(func=cmd_robots)
    return parser


def main(argv=None):
    parser = build_parser()
    args = parser.parse_args(argv)
    if getattr(args, "order", 0) is not None and getattr(args, "order", 0) < 0:
        parser.error("--order must be >= 0")
    if getattr(args, "rate", 1.0) <= 0 or getattr(args, "duration", 1.0) <= 0:
        parser.error("--rate and --duration must be > 0")
    try:
        return args.func(args)
    except HodDynamicsError as exc:
        print(f"hod-dynamics: error: {exc}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
