"""The ``hod-dynamics`` command line.

    hod-dynamics demo [--order K] [--duration S] [--rate HZ] [--out DIR] [--no-plot]
    hod-dynamics info URDF [--root LINK] [--tip LINK ...] [--lock JOINT=VALUE ...] [--lenient]
                      [--xacro-arg NAME:=VALUE ...]
    hod-dynamics robots
    hod-dynamics analyze-bag BAG --urdf PATH --out DIR [--time-base auto] [--friction fit|FILE] ...

Errors on bad input print one line (``hod-dynamics: error: ...``) and exit with code 2.
"""

import argparse
import os
import sys
import time
import warnings

import numpy as np

from . import paper_examples as paper
from .dynamics import time_derivatives
from .feedforward import FeedforwardResult, save_csv
from .errors import HodDynamicsError, HodDynamicsWarning
from .model import RobotModel
from .robots import load_robot, robot_path, shipped_robots
from .urdf import xacro_args_from_strings


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


def _load_model(args):
    """The model of ``--urdf``/``URDF`` with the shared model options; returns (model, the
    HodDynamicsWarning messages of the reading: --lenient problems, identified inertias)."""
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always", HodDynamicsWarning)
        model = RobotModel.from_urdf(args.urdf, root_link=args.root, tip_links=args.tip,
                                     locked_joints=_parse_locks(args.lock), strict=not args.lenient,
                                     xacro_args=xacro_args_from_strings(args.xacro_arg, "--xacro-arg"))
    notes = [str(w.message) for w in caught if issubclass(w.category, HodDynamicsWarning)]
    for w in caught:  # anything else goes on as usual
        if not issubclass(w.category, HodDynamicsWarning):
            warnings.warn_explicit(w.message, w.category, w.filename, w.lineno)
    return model, notes


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
    result = FeedforwardResult(tuple(model.joint_names), t, qjet, taujet)
    print(f"wrote {save_csv(result, os.path.join(args.out, 'demo_torque_jets.csv'))}")
    if not args.no_plot:
        from .plots import plot_torque_jets

        png = plot_torque_jets(t, taujet, model.joint_names, os.path.join(args.out, "demo_torque_jets.png"),
                               title="KUKA iiwa 14, Gaz et al. trajectory: tau and its time derivatives")
        print(f"wrote {png}")
    return 0


def cmd_info(args):
    """Print the joints, limits and masses of a URDF (or xacro) model, and the warnings of its
    reading (unknown elements read past with --lenient, inertias that are not positive
    semi-definite)."""
    model, notes = _load_model(args)
    print(f"{model.name}: {model.n_dof} moving joints, root link '{model.root_link}', "
          f"total moving mass {model.masses.sum():.3f} kg")
    for note in notes:
        print(f"warning: {note}")
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


class _Progress:
    """``progress(done, total)`` callback: a one-line bar on stderr (only on a terminal)."""

    def __init__(self, label, enabled):
        self.label, self.enabled, self.last = label, enabled and sys.stderr.isatty(), -1

    def __call__(self, done, total):
        if not self.enabled or total <= 0:
            return
        pct = int(100 * done / total)
        if pct != self.last:
            self.last = pct
            bar = "#" * (pct // 4) + "." * (25 - pct // 4)
            print(f"\r{self.label:<10} [{bar}] {pct:3d}% ({done}/{total})", end="\n" if done >= total else "",
                  file=sys.stderr, flush=True)


def cmd_analyze_bag(args):
    """Replay analysis of a recorded bag: recover the sample times (--time-base), fit the
    measured joint positions with a smoothing spline whose level is chosen per joint from the
    data, evaluate the model's tau and its time derivatives (and motor references with
    --actuators) at the samples, and compare tau with the measured efforts; with --friction,
    fit joint friction (fit) or evaluate a given friction model (FILE). Writes samples.csv,
    summary.json, PNG plots (tau, tau_dot, tau_ddot, residual, friction), friction.yaml
    (--friction fit) and derived.mcap (topics /feedforward and /torque_derivatives) into --out."""
    from .analysis import analyze_joint_states, write_report
    from .bag import read_joint_states, read_planned_positions

    if args.start is not None and args.end is not None and args.end <= args.start:
        raise HodDynamicsError(f"--end {args.end} must be after --start {args.start}")
    model, notes = _load_model(args)
    for note in notes:
        print(f"warning: {note}", file=sys.stderr)
    friction = args.friction
    if friction not in (None, "fit", "urdf"):
        from .friction import load_friction

        friction = load_friction(friction, model)   # a bad file fails before the bag is read
    show = not args.no_progress
    # library warnings (numpy, scipy, matplotlib, rosbags) never reach the terminal: each kind
    # becomes one note line of the summary
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        states = read_joint_states(args.bag, args.joint_states, time_base=args.time_base,
                                   progress=_Progress("reading", show))
        states = states.select(args.start, args.end)
        planned = None
        if args.trajectory_topic:
            planned = read_planned_positions(args.bag, args.trajectory_topic, states.t0_ns)
        start = time.perf_counter()
        result = analyze_joint_states(model, states, order=args.order, actuators=args.actuators,
                                      smoothing=args.smoothing, planned=planned, progress=_Progress("analysing", show),
                                      friction=args.friction if friction in ("fit", "urdf") else friction)
        if result.friction is not None and args.friction not in ("fit", "urdf"):
            result = _with_source(result, os.path.basename(args.friction))
        elapsed = time.perf_counter() - start
        paths = write_report(result, args.out, plots=not args.no_plot, derived_bag=not args.no_derived_bag,
                             progress=_Progress("writing", show), title=f"{model.name}: {os.path.basename(args.bag)}")
        lines = summary_lines(result, model, elapsed)
    from .analysis import warning_notes

    for line in lines + [f"note: {note}" for note in warning_notes(caught)]:
        print(line)
    for path in paths:
        print(f"wrote {path}")
    return 0


def _with_source(result, source):
    from dataclasses import replace

    return replace(result, friction_source=source)


GAPS_PRINTED = 30


def summary_lines(result, model, elapsed):
    """The printed summary of an analysis: sizes, time base, per joint the measured effort and
    the residual (N m and % of the measured range; rigid body and with friction), the friction
    parameters, and the notes."""
    summary = result.summary()
    lines = [f"{result.states.topic}: {summary['n_samples']} samples over {summary['duration']:.3f} s "
             f"({summary['median_rate']:.0f} Hz), model '{model.name}' ({model.n_dof} moving joints); "
             f"fit + dynamics in {elapsed:.2f} s"]
    base = result.states.time_base
    if base is not None:
        lines.append(base.describe())
        if base.gaps:
            shown = ", ".join(f"{g['t']:.4g} s (+{g['missing']})" for g in base.gaps[:GAPS_PRINTED])
            more = len(base.gaps) - GAPS_PRINTED
            lines.append(f"gaps (time: samples missing): {shown}" + (f" and {more} more (all in summary.json)"
                                                                       if more > 0 else ""))
    if len(result.segments) > 1:
        lines.append(f"fitted in {len(result.segments)} segments (gaps longer than the fit bridges)")
    joints = summary["joints"]
    lines.append("position fit: " + ", ".join(f"{nm} noise {e['position_noise']:.2g}, cutoff "
                                               f"{e['smoothing_cutoff_hz']:.3g} Hz" for nm, e in joints.items()))
    if result.effort is None:
        lines.append("  the joint states carry no efforts: no comparison with measured torques")
    else:
        rigid = result.rigid_tau is not None
        head = f"  {'joint':<24}{'effort rms':>11}{'range':>10}{'residual rms':>14}{'% of range':>11}"
        if rigid:
            head = (f"  {'joint':<24}{'effort rms':>11}{'range':>10}{'rigid-body residual':>21}{'%':>7}"
                    f"{'with friction':>15}{'%':>7}")
        lines.append(head + "   (residual = model - measured, N m; % of the measured range)")
        for name, e in joints.items():
            if rigid:
                lines.append(f"  {name:<24}{e['measured_rms']:11.4g}{e['measured_range']:10.4g}"
                             f"{e['rigid_residual_rms']:21.4g}{e['rigid_residual_rms_percent_of_measured_range']:7.3g}"
                             f"{e['residual_rms']:15.4g}{e['residual_rms_percent_of_measured_range']:7.3g}")
            else:
                lines.append(f"  {name:<24}{e['measured_rms']:11.4g}{e['measured_range']:10.4g}"
                             f"{e['residual_rms']:14.4g}{e['residual_rms_percent_of_measured_range']:11.3g}")
    if result.friction is not None:
        f = result.friction
        lines.append(f"friction ({result.friction_source}): tau_f = viscous qd + coulomb tanh(qd / v_s) + offset")
        for j, name in enumerate(result.joint_names):
            st = (result.friction_fit or {}).get(name)
            se = (lambda key: f" +- {st[key + '_se']:.2g}") if st else (lambda key: "")
            lines.append(f"  {name:<24}coulomb {f.coulomb[j]:.4g}{se('coulomb')} N m, viscous {f.viscous[j]:.4g}"
                         f"{se('viscous')} N m s/rad, offset {f.offset[j]:.4g}{se('offset')} N m, v_s {f.v_s[j]:.3g}")
    for note in summary["notes"]:
        lines.append(f"note: {note}")
    return lines


def _add_description_options(sub):
    sub.add_argument("--lenient", action="store_true",
                     help="read past unknown URDF elements and attributes with a warning "
                          "(default: an error naming the element, its line and the closest name)")
    sub.add_argument("--xacro-arg", action="append", metavar="NAME:=VALUE",
                     help="argument of a xacro file (repeatable)")


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
    info.add_argument("urdf", help="URDF or xacro file")
    info.add_argument("--root", help="root link (default: the URDF root)")
    info.add_argument("--tip", action="append", help="tip link (repeatable): keep only these chains")
    info.add_argument("--lock", action="append", metavar="JOINT=VALUE", help="lock a joint (repeatable)")
    _add_description_options(info)
    info.set_defaults(func=cmd_info)
    robots = sub.add_parser("robots", help="list the shipped robot models", description=cmd_robots.__doc__)
    robots.set_defaults(func=cmd_robots)
    bag = sub.add_parser("analyze-bag", help="model torques vs the efforts recorded in a bag",
                         description=cmd_analyze_bag.__doc__)
    bag.add_argument("bag", metavar="BAG", help="rosbag2 folder, .db3 or .mcap file, or ROS 1 .bag")
    bag.add_argument("--urdf", required=True, help="URDF or xacro file of the recorded robot")
    bag.add_argument("--out", required=True, metavar="DIR", help="output folder (created if needed)")
    bag.add_argument("--joint-states", metavar="TOPIC",
                     help="sensor_msgs/JointState topic (default: the only one in the bag)")
    bag.add_argument("--trajectory-topic", metavar="TOPIC",
                     help="trajectory_msgs/JointTrajectory topic of the plan: adds the planned positions "
                          "(qplan_*) and the tracking error to the outputs")
    bag.add_argument("--order", type=int, default=2, choices=range(0, 3), metavar="{0,1,2}",
                     help="highest torque derivative (default 2; the C^4 position fit allows at most 2)")
    bag.add_argument("--actuators", metavar="CONFIG",
                     help="actuator YAML (rigid/SEA/VSA): adds motor references theta_*, u_* (default: rigid)")
    bag.add_argument("--start", type=float, metavar="S",
                     help="analyse from S seconds after the first joint state (default: from the start)")
    bag.add_argument("--end", type=float, metavar="S",
                     help="analyse up to S seconds after the first joint state (default: to the end)")
    bag.add_argument("--smoothing", type=float, metavar="STD",
                     help="position noise standard deviation in rad (m) for the smoothing spline; "
                          "default: estimated from the data, 0 interpolates")
    bag.add_argument("--time-base", choices=("auto", "header", "receive", "index"), default="auto",
                     help="sample times: auto (default) recovers the controller's regular grid from jittered "
                          "header stamps when the data follows it, header / receive use the header stamps / "
                          "bag receive times as recorded, index spaces the messages one median period apart")
    bag.add_argument("--friction", metavar="fit|FILE",
                     help="fit: identify joint friction (coulomb, viscous, offset) from the efforts and write "
                          "friction.yaml; FILE: evaluate that friction YAML (urdf: the URDF <dynamics> values); "
                          "tau0 and residual then include the friction")
    bag.add_argument("--root", help="root link of the model (default: the URDF root)")
    bag.add_argument("--tip", action="append", help="tip link (repeatable): keep only these chains")
    bag.add_argument("--lock", action="append", metavar="JOINT=VALUE",
                     help="lock a joint the bag does not record, e.g. a gripper finger (repeatable)")
    _add_description_options(bag)
    bag.add_argument("--no-plot", action="store_true", help="skip the PNG plots (no matplotlib needed)")
    bag.add_argument("--no-derived-bag", action="store_true", help="skip derived.mcap")
    bag.add_argument("--no-progress", action="store_true", help="no progress bar on stderr")
    bag.set_defaults(func=cmd_analyze_bag)
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
