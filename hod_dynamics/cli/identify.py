"""``hod-dynamics identify``: inertias and friction from recorded bags, validated on others."""

import argparse
import shlex
import sys
import time
import warnings

from ..errors import CommandError
from ..model.urdf import xacro_args_from_strings
from .common import (PROG, Progress, add_description_options, load_model, non_negative, output_folder,
                     plots_possible)


def cmd_identify(args):
    """Identify the robot's inertial parameters (and joint friction) from recorded joint states
    and efforts: each bag is fitted as analyze-bag does it (time base, smoothing), the base
    parameters are estimated by weighted least squares (--method ols) or by a convex fit that
    keeps every body physically consistent and takes what the data does not determine from the
    URDF (--method consistent, the default), and the result is checked on --validate bags.
    Writes identified.urdf (the URDF with new inertials and <dynamics>), friction.yaml,
    identification.json (parameters, standard errors, condition number, residuals per bag and
    joint, prior and identified) and torque_<bag>.png (measured against predicted torque)."""
    from dataclasses import replace

    from ..replay.analysis import analyze_joint_states
    from ..replay.notes import source_notes
    from ..recordings.bag import read_joint_states
    from ..errors import InputError
    from ..fleet.inputs import bag_names
    from ..identification.fit import evaluate, identify, summary, write_outputs
    from ..model.robots import urdf_source
    from ..model.urdf_writer import locked_parts

    model, notes = load_model(args)
    for note in notes:
        print(f"warning: {note}", file=sys.stderr)
    if model.floating:
        raise CommandError(f"identify: '{args.urdf}' gives a floating-base model; joint states record no base "
                           "motion, so identify a fixed-base robot (choose --root)")
    output_folder(args.out)
    plot = plots_possible(args.no_plot)
    show = not args.no_progress
    status = Progress("identify", show)
    start = time.perf_counter()
    # a label per bag for the tables and plot names: the file name, with its folders' names
    # where two bags share it (run1/rec.mcap, run2/rec.mcap)
    validate = list(args.validate or [])
    labels = dict(zip([("identification", k) for k in range(len(args.bags))]
                      + [("validation", k) for k in range(len(validate))], bag_names(list(args.bags) + validate)))
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")

        def analysed(path, role, k):
            states = read_joint_states(path, args.joint_states, joints=model.joint_names, time_base=args.time_base,
                                       progress=Progress("reading", show))
            status.line(f"fitting {role} bag {labels[role, k]} ({len(states.t)} samples)")
            try:
                if states.effort is None:
                    raise InputError(f"the joint states on {states.topic} carry no efforts; identification needs "
                                     "the measured joint torques")
                return analyze_joint_states(model, states, order=0, smoothing=args.smoothing, error_estimate=False)
            except InputError as exc:
                raise InputError(f"bag '{path}': {exc}") from None

        runs = [analysed(path, "identification", k) for k, path in enumerate(args.bags)]
        checks = [analysed(path, "validation", k) for k, path in enumerate(validate)]
        xacro_args = xacro_args_from_strings(args.xacro_arg, "--xacro-arg")
        locked = locked_parts(urdf_source(args.urdf), model, xacro_args=xacro_args) if args.lock else None
        result = identify(model, runs, method=args.method, friction=args.friction,
                          regularization=args.regularization,
                          names=[labels["identification", k] for k in range(len(args.bags))],
                          fixed_parts=locked, progress=status.line)
        # the joint-state groups each bag's messages came in: ignored ones, aligned ones
        groups = [f"bag {label}: {note}" for label, run in zip(labels.values(), runs + checks)
                  for note in source_notes(run.states)]
        result = replace(result, notes=tuple(groups) + result.notes)
        status.line("residuals and plots")
        evaluation = evaluate(result, checks, [labels["validation", k] for k in range(len(validate))])
        paths = write_outputs(result, args.out, urdf_source(args.urdf), evaluation, plots=plot,
                              xacro_args=xacro_args, command=shlex.join([PROG] + args.argv))
    status.done()
    from ..replay.notes import warning_notes

    for line in identification_lines(result, summary(result, evaluation), time.perf_counter() - start):
        print(line)
    for note in warning_notes(caught):
        print(f"note: {note}")
    for path in paths:
        print(f"wrote {path}")
    return 0


def identification_lines(result, data, elapsed):
    """The printed summary of an identification: sizes, conditioning, the residual RMS per bag
    and joint with the prior and the identified model, notes."""
    model = result.model
    samples = sum(data["samples"].values())
    lines = [f"identified '{model.name}' ({model.n_dof} joints) from {len(result.recordings)} bag(s), {samples} "
             f"samples, method {result.method}{', with friction' if result.friction is not None else ''}, "
             f"in {elapsed:.2f} s",
             f"base parameters: {result.base.rank} of {result.base.K.shape[1]}; condition number "
             f"{result.condition_number:.4g} ({result.condition_number_scaled:.4g} with unit-norm columns)",
             "effort noise (residual std, N m): " + ", ".join(f"{nm} {v:.3g}" for nm, v in data["noise_std"].items())]
    worst = sorted(data["base_parameters"], key=lambda e: -e["relative_standard_error"])[:3]
    lines.append("least determined: " + "; ".join(f"{e['name']} = {e['value']:.4g} +- {e['standard_error']:.2g}"
                                                   for e in worst))
    consistent = sum(e["physically_consistent"] for e in data["bodies"].values())
    lines.append(f"physically consistent bodies: {consistent} of {len(data['bodies'])}")
    lines.append(f"  {'bag / joint':<28}{'prior':>10}{'identified':>12}   (residual rms, N m; prior with friction "
                 "fitted per bag)")
    for bag, entry in data["residual_rms"].items():
        lines.append(f"  {bag} ({entry['role']})")
        for joint, r in entry["joints"].items():
            lines.append(f"    {joint:<26}{r['prior']:10.4g}{r['identified']:12.4g}")
    lines += [f"note: {note}" for note in result.notes]
    return lines


def add_parser(sub):
    ident = sub.add_parser("identify", help="identify inertias and friction from recorded bags",
                           description=cmd_identify.__doc__)
    ident.add_argument("bags", nargs="+", metavar="BAG", help="bag(s) to identify from (rosbag2 folder, .db3, .mcap, "
                       "ROS 1 .bag) with joint positions and efforts")
    ident.add_argument("--urdf", required=True, metavar="URDF",
                       help="URDF or xacro of the robot (the prior: kinematics, and the inertias the data does not "
                            "determine), or the name of a shipped robot")
    ident.add_argument("--out", required=True, metavar="DIR", help="output folder (created if needed)")
    ident.add_argument("--validate", nargs="+", metavar="BAG", help="bag(s) to check the identified model on")
    ident.add_argument("--friction", action=argparse.BooleanOptionalAction, default=True,
                       help="identify joint friction (viscous, Coulomb, offset) with the inertias (default: on)")
    ident.add_argument("--method", choices=("consistent", "ols"), default="consistent",
                       help="consistent (default): every body physically consistent, the undetermined directions "
                            "from the URDF (needs cvxpy); ols: weighted least squares of the base parameters")
    ident.add_argument("--regularization", type=non_negative, default=1.0, metavar="W",
                       help="weight of the divergence from the URDF's inertias in the consistent fit, in units of "
                            "one sample's weighted squared residual (default 1)")
    ident.add_argument("--joint-states", metavar="TOPIC",
                       help="sensor_msgs/JointState topic (default: the only one in each bag)")
    ident.add_argument("--time-base", choices=("auto", "header", "receive", "index"), default="auto",
                       help="sample times, as for analyze-bag (default auto)")
    ident.add_argument("--smoothing", type=non_negative, metavar="STD",
                       help="position noise standard deviation in rad (m); default: estimated from the data")
    add_description_options(ident, "lock a joint the bags do not record at VALUE rad (m) (repeat the flag)")
    ident.add_argument("--no-plot", action="store_true", help="skip the PNG plots")
    ident.add_argument("--no-progress", action="store_true", help="no progress line on stderr")
    ident.set_defaults(func=cmd_identify)
