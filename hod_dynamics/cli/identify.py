"""``hod-dynamics identify``: inertias and friction from recorded bags, validated on others; or a
payload on a known arm."""

import argparse
import shlex
import sys
import time
import warnings

from ..errors import CommandError
from ..model.urdf import xacro_args_from_strings
from .common import (PROG, Progress, add_description_options, load_model, non_negative, output_folder,
                     plots_possible)
from .identify_options import add_options, bounds_from_args, check_combinations


def cmd_identify(args):
    """Identify the robot's inertial parameters (and joint friction) from recorded joint states
    and efforts: each bag is fitted as analyze-bag does it (time base, smoothing), the base
    parameters are estimated by weighted least squares (--method ols) or by a convex fit that
    keeps every body physically consistent and plausible (its mass inside a bounding ellipsoid
    from the URDF's geometry and within bounds of the URDF's mass) and takes what the data does
    not determine from the URDF, with the URDF's weight chosen by cross-validation on the
    identification bags (--method consistent, the default); the result is checked on --validate
    bags. Writes identified.urdf (the URDF with new inertials and <dynamics>), friction.yaml,
    identification.json (parameters, standard errors, the chosen weight and its fold errors,
    the bounds, the plausibility report, residuals per bag and joint, prior and identified),
    torque_<bag>.png (measured against predicted torque) and bounding_volumes.png. With
    --payload LINK: only a rigid payload on LINK (and the friction), the arm's model fixed;
    writes payload.urdf, payload.yaml and identification.json."""
    from ..model.robots import urdf_source

    check_combinations(args)
    model, notes = load_model(args)
    for note in notes:
        print(f"warning: {note}", file=sys.stderr)
    if model.floating:
        raise CommandError(f"identify: '{args.urdf}' gives a floating-base model; joint states record no base "
                           "motion, so identify a fixed-base robot (choose --root)")
    xacro_args = xacro_args_from_strings(args.xacro_arg, "--xacro-arg")
    known = None
    if args.payload:
        from ..identification.payload import payload_frame

        payload_frame(model, args.payload)           # an unknown link fails before any work
        if args.friction_file:
            from ..algorithms.friction import load_friction

            known = load_friction(args.friction_file, model)
        bounds = None
    else:
        bounds = bounds_from_args(args, model, urdf_source(args.urdf), xacro_args) if args.method == "consistent" \
            else None
    output_folder(args.out)
    plot = plots_possible(args.no_plot)
    show = not args.no_progress
    status = Progress("identify", show)
    start = time.perf_counter()
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        runs, checks, labels = _analysed_bags(args, model, status, show)
        names = [labels["identification", k] for k in range(len(args.bags))]
        checked = [labels["validation", k] for k in range(len(checks))]
        if args.payload:
            lines, paths = _payload(args, model, runs, checks, names, checked, known, plot, status, start)
        else:
            lines, paths = _whole(args, model, runs, checks, names, checked, bounds, xacro_args, plot, status,
                                  start, labels)
    status.done()
    from ..replay.notes import warning_notes

    for line in lines:
        print(line)
    for note in warning_notes(caught):
        print(f"note: {note}")
    for path in paths:
        print(f"wrote {path}")
    return 0


def _analysed_bags(args, model, status, show):
    """(identification analyses, validation analyses, {(role, k): label}) of the bags."""
    from ..errors import InputError
    from ..fleet.inputs import bag_names
    from ..recordings.bag import read_joint_states
    from ..replay.analysis import analyze_joint_states

    # a label per bag for the tables and plot names: the file name, with its folders' names
    # where two bags share it (run1/rec.mcap, run2/rec.mcap)
    validate = list(args.validate or [])
    labels = dict(zip([("identification", k) for k in range(len(args.bags))]
                      + [("validation", k) for k in range(len(validate))], bag_names(list(args.bags) + validate)))

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
    return runs, checks, labels


def _whole(args, model, runs, checks, names, checked, bounds, xacro_args, plot, status, start, labels):
    """The whole arm's identification: (printed lines, written paths)."""
    from dataclasses import replace

    from ..identification.fit import identify
    from ..identification.report import evaluate, summary, write_outputs
    from ..model.robots import urdf_source
    from ..model.urdf_writer import locked_parts
    from ..replay.notes import source_notes

    locked = locked_parts(urdf_source(args.urdf), model, xacro_args=xacro_args) if args.lock else None
    result = identify(model, runs, method=args.method, friction=args.friction, regularization=args.regularization,
                      bounds=bounds, folds=args.folds, names=names, fixed_parts=locked, progress=status.line)
    # the joint-state groups each bag's messages came in: ignored ones, aligned ones
    groups = [f"bag {label}: {note}" for label, run in zip(labels.values(), runs + checks)
              for note in source_notes(run.states)]
    result = replace(result, notes=tuple(groups) + result.notes)
    extra = {}
    if args.determinacy:
        from ..identification.determinacy import determinacy

        extra["determinacy"] = determinacy(result, progress=status.line)
    status.line("residuals and plots")
    evaluation = evaluate(result, checks, checked)
    paths = write_outputs(result, args.out, urdf_source(args.urdf), evaluation, plots=plot, xacro_args=xacro_args,
                          command=shlex.join([PROG] + args.argv), extra=extra)
    data = summary(result, evaluation, extra)
    return identification_lines(result, data, time.perf_counter() - start), paths


def _payload(args, model, runs, checks, names, checked, known, plot, status, start):
    """The payload's identification: (printed lines, written paths)."""
    from ..identification.payload import identify_payload, write_payload

    friction = known if known is not None else bool(args.friction)
    result = identify_payload(model, runs, args.payload, friction=friction, size=args.payload_size, names=names,
                              progress=status.line)
    status.line("residuals and plots")
    paths, data = write_payload(result, args.out, checks, checked, plots=plot, command=shlex.join([PROG] + args.argv))
    return payload_lines(result, data, time.perf_counter() - start), paths


def payload_lines(result, data, elapsed):
    """The printed summary of a payload's identification: the payload with its standard errors,
    the residual RMS per bag and joint without (prior) and with it."""
    import numpy as np

    p = data["payload"]
    se = result.standard_errors
    m = result.mass
    com_se = np.sqrt(se[1:4] ** 2 + (result.com * se[0]) ** 2) / max(m, 1e-12)
    Ic = p["inertia_about_com"]
    friction = {"fitted": ", friction fitted", "given": ", friction given"}.get(data["friction"], "")
    lines = [f"identified a payload on {result.link} of '{result.model.name}' from {len(result.recordings)} bag(s), "
             f"{sum(data['samples'].values())} samples{friction}, in {elapsed:.2f} s",
             f"payload mass {m:.4g} +- {se[0]:.2g} kg",
             "payload centre of mass (m, in the link's frame): " + ", ".join(
                 f"{axis} {c:.4g} +- {e:.2g}" for axis, c, e in zip("xyz", result.com, com_se)),
             "payload inertia about it (kg m^2): " + ", ".join(f"{k} {v:.3g}" for k, v in Ic.items()),
             "effort noise (residual std, N m): " + ", ".join(f"{nm} {v:.3g}" for nm, v in data["noise_std"].items()),
             f"  {'bag / joint':<28}{'arm alone':>10}{'with payload':>14}   (residual rms, N m; friction fitted on the "
             "identification bags)"]
    for bag, entry in data["residual_rms"].items():
        lines.append(f"  {bag} ({entry['role']})")
        for joint, r in entry["joints"].items():
            lines.append(f"    {joint:<26}{r['prior']:10.4g}{r['identified']:14.4g}")
    return lines


def identification_lines(result, data, elapsed):
    """The printed summary of an identification: sizes, conditioning, the chosen weight and its
    fold errors, the plausibility report, the residual RMS per bag and joint with the prior and
    the identified model, notes."""
    from ..identification.determinacy import determinacy_lines
    from ..identification.plausibility import report_lines

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
    cv = result.cross_validation
    if cv is not None:
        lines.append(f"regularization {result.regularization:g}, chosen by {cv.fold_errors.shape[1]}-fold "
                     "cross-validation over time blocks (held-out mean squared residual, 1 = the noise):")
        lines.append("  " + f"{'weight':>8}" + "".join(f"{f'fold {k + 1}':>9}" for k in range(cv.fold_errors.shape[1]))
                     + f"{'mean':>9}")
        for w, row in zip(cv.weights, cv.fold_errors):
            lines.append("  " + f"{w:>8g}" + "".join(f"{v:9.4f}" for v in row) + f"{row.mean():9.4f}"
                         + ("  <- chosen" if w == cv.chosen else ""))
    elif result.method == "consistent":
        lines.append(f"regularization {result.regularization:g} (given)")
    consistent = sum(e["physically_consistent"] for e in data["bodies"].values())
    lines.append(f"physically consistent bodies: {consistent} of {len(data['bodies'])}")
    total = data["total_mass"]
    lines.append(f"plausibility (total mass {total['identified']:.4g} kg, prior {total['prior']:.4g} kg; com level <= 1: "
                 "inside the bounding volume; room 0: mass on its surface):")
    lines += report_lines(data["plausibility"])
    if "determinacy" in data:
        lines.append("determinacy (what the data and the bounds pin; well excited: mass within 10 %, centre of mass "
                     "within 1 cm):")
        lines += determinacy_lines(data["determinacy"])
    lines.append(f"  {'bag / joint':<28}{'prior':>10}{'identified':>12}   (residual rms, N m; the prior with friction "
                 "fitted on the identification bags)")
    for bag, entry in data["residual_rms"].items():
        lines.append(f"  {bag} ({entry['role']})")
        for joint, r in entry["joints"].items():
            lines.append(f"    {joint:<26}{r['prior']:10.4g}{r['identified']:12.4g}")
    lines += [f"note: {note}" for note in result.notes]
    return lines


def add_parser(sub):
    ident = sub.add_parser("identify", help="identify inertias and friction (or a payload) from recorded bags",
                           description=cmd_identify.__doc__)
    ident.add_argument("bags", nargs="+", metavar="BAG", help="bag(s) to identify from (rosbag2 folder, .db3, .mcap, "
                       "ROS 1 .bag) with joint positions and efforts")
    ident.add_argument("--urdf", required=True, metavar="URDF",
                       help="URDF or xacro of the robot (the prior: kinematics, geometry, and the inertias the data "
                            "does not determine), or the name of a shipped robot")
    ident.add_argument("--out", required=True, metavar="DIR", help="output folder (created if needed)")
    ident.add_argument("--validate", nargs="+", metavar="BAG", help="bag(s) to check the identified model on")
    ident.add_argument("--friction", action=argparse.BooleanOptionalAction, default=True,
                       help="identify joint friction (viscous, Coulomb, offset) with the inertias (default: on)")
    ident.add_argument("--method", choices=("consistent", "ols"), default="consistent",
                       help="consistent (default): every body physically consistent and within the bounds below, the "
                            "undetermined directions from the URDF (needs cvxpy); ols: weighted least squares of the "
                            "base parameters")
    add_options(ident)
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
