"""``hod-dynamics analyze-bag``: one recorded bag against the model, with the summary it prints."""

import os
import sys

from ..errors import CommandError
from ..units import common_unit, friction_units, joint_unit
from .common import (Progress, add_description_options, check_memory, load_model, non_negative, order_type,
                     output_folder, parse_locks, plots_possible)


BAG_MAX_ORDER = 2  # tau'' needs q^(4) of the fit of recorded positions, the highest it is made for


def bag_memory(samples, recorded_joints, n, order):
    """Bytes the analysis of ``samples`` joint states holds: the recording, the fitted jets, the
    tau-jet, motor references and the CSV rows (about 2 x the arrays while writing)."""
    # + per order the fit's values, spline coefficients and missed content (3 n each)
    floats = 3 * recorded_joints + 2 + (order + 3) * n + (order + 1) * n + 6 * n + 9 * (order + 1) * n
    return int(samples * floats * 8 * 2.5)


def cmd_analyze_bag(args):
    """Replay analysis of a recorded bag: take the joint-state messages that carry the model's
    joints (a gripper or another driver on the same topic is ignored or aligned, and said so),
    recover the sample times (--time-base), fit the measured joint positions with a smoothing
    spline whose level is chosen per joint and derivative from the data, evaluate the model's
    tau and its time derivatives (and motor references with --actuators) at the samples,
    estimate the error the data leave in each (and flag the orders they do not support), and
    compare tau with the measured efforts; with --friction, fit joint friction (fit) or
    evaluate a given friction model (FILE). Writes samples.csv, summary.json, PNG plots (tau,
    tau_dot, tau_ddot with error bands, residual, friction), friction.yaml (--friction fit) and
    derived.mcap (topics /feedforward and /torque_derivatives) into --out. Exit code 0 means
    analysed; a 'note:' line says what in the result needs a second look."""
    from ..recordings.bag import check_rosbags

    check_rosbags()  # before anything is printed or created
    if args.start is not None and args.end is not None and args.end <= args.start:
        raise CommandError(f"--end {args.end} must be after --start {args.start}")
    import importlib.util

    from ..replay.plot_processes import PlotProcesses

    model, notes = load_model(args)
    for note in notes:
        print(f"warning: {note}", file=sys.stderr)
    # the plots' processes start now: they import matplotlib and make a figure of the model's
    # joints while this one reads and analyses
    drawing = not args.no_plot and importlib.util.find_spec("matplotlib") is not None
    with PlotProcesses(2 if drawing else 0, panels=model.n_dof) as plotter:
        return _analyze_bag(args, model, plotter)


def _analyze_bag(args, model, plotter):
    import gc

    from ..replay.bag_report import analyze_bag
    from ..replay.notes import lock_notes

    if args.friction not in (None, "fit"):
        from ..algorithms.friction import load_friction

        load_friction(args.friction, model)   # a bad file or URDF value fails before the bag is read
    output_folder(args.out)
    plot = plots_possible(args.no_plot)
    show = not args.no_progress
    locks = parse_locks(args.lock)

    def check(states):
        check_memory(bag_memory(len(states.t), len(states.joint_names), model.n_dof, args.order),
                     f"the analysis of {len(states.t):,} joint states", "analyse a part with --start/--end")
        # returned, the notes are among the analysis's notes (printed and in summary.json)
        return lock_notes(locks, states.joint_names)

    # the modules imported by now are never garbage: frozen, the analysis's collections do not
    # walk them again (a tenth of a second of a short command)
    gc.freeze()
    report = analyze_bag(args.bag, model, args.out, joint_states=args.joint_states, time_base=args.time_base,
                         start=args.start, end=args.end, trajectory_topic=args.trajectory_topic, order=args.order,
                         actuators=args.actuators, smoothing=args.smoothing, friction=args.friction, plots=plot,
                         derived_bag=not args.no_derived_bag, samples=not args.no_samples_csv,
                         progress=lambda stage: Progress(stage, show),
                         check=check, title=f"{model.name}: {os.path.basename(args.bag)}", plotter=plotter)
    for line in summary_lines(report.analysis, model, report.seconds) + [f"note: {n}" for n in report.warnings]:
        print(line)
    for path in report.paths:
        print(f"wrote {path}")
    return 0

GAPS_PRINTED = 30


def summary_lines(result, model, elapsed):
    """The printed summary of an analysis: sizes, time base, per joint the measured effort and
    the residual (N m and % of the measured range; rigid body and with friction), the friction
    parameters, and the notes."""
    summary = result.summary()
    lines = [f"{result.states.topic}: {summary['n_samples']} samples over {summary['duration']:.3f} s "
             f"({summary['median_rate']:.0f} Hz), model '{model.name}' ({model.n_dof} moving joints); "
             f"fit, dynamics and error estimate in {elapsed:.2f} s"]
    base = result.states.time_base
    if base is not None:
        lines.append(base.describe())
        if base.gaps:
            shown = ", ".join(f"{g['t']:.4g} s (+{g['missing']})" for g in base.gaps[:GAPS_PRINTED])
            more = len(base.gaps) - GAPS_PRINTED
            lines.append(f"gaps (time: samples missing): {shown}" + (f" and {more} more (all in summary.json)"
                                                                       if more > 0 else ""))
    bridged = summary.get("gaps_bridged_up_to")
    if len(result.segments) > 1:
        lines.append(f"fitted in {len(result.segments)} segments (the fit bridges gaps up to "
                     f"{1e3 * bridged:.4g} ms; longer ones split the recording)" if bridged else
                     f"fitted in {len(result.segments)} segments")
    joints = summary["joints"]
    lines.append("position noise: " + ", ".join(_noise_text(nm, e, model) for nm, e in joints.items()))
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
            force, viscous = friction_units(model.joint_types[model.joint_names.index(name)])
            lines.append(f"  {name:<24}coulomb {f.coulomb[j]:.4g}{se('coulomb')} {force}, viscous {f.viscous[j]:.4g}"
                         f"{se('viscous')} {viscous}, offset {f.offset[j]:.4g}{se('offset')} {force}, v_s {f.v_s[j]:.3g}")
    if "error_estimate" in summary:
        lines += _error_lines(summary, model)
    for note in summary["notes"]:
        lines.append(f"note: {note}")
    return lines


def _noise_text(name, entry, model):
    """'joint step S + white W unit' of the position noise found."""
    unit = joint_unit(model.joint_types[model.joint_names.index(name)], "position")
    text = f"{name} " + (f"encoder step {entry['encoder_step']:.2g} + " if entry["encoder_step"] > 0 else "")
    return text + f"white {entry['white_noise']:.2g} {unit}"


def _error_lines(summary, model):
    """The table of the error estimates: per joint and order the estimated RMS error, its share of
    the order's RMS, and ``*`` where the data do not support the order."""
    order = summary["order"]
    zone = summary["error_estimate"]["end_zone"]
    share = summary["error_estimate"]["supported_when_error_below_share_of_rms"]
    # each order has its own end zone (its own smoothing's width): name every one
    zones = ", ".join(f"tau{k} {zone[f'tau{k}']:.2g} s" for k in range(order + 1))
    lines = [f"error estimate of tau^(k) (RMS over the samples farther from a segment end than the order's end "
             f"zone: {zones}; % of its RMS; * not supported by the data: above {100 * share:.0f} %)"]
    units = [common_unit(model.joint_types, "torque", k) for k in range(order + 1)]
    lines.append(f"  {'joint':<24}" + "".join(f"{f'tau{k} [{units[k]}]':>22}" for k in range(order + 1)))
    for name, e in summary["joints"].items():
        cells = []
        for k in range(order + 1):
            key = f"tau{k}"
            est, rms = e["error_estimate"][key], e["signal_rms"][key]
            share = f"{100 * est / rms:.2g} %" if rms > 0 else "-"
            cells.append(f"{f'{est:.3g} ({share})' + ('*' if not e['supported'][key] else ' '):>22}")
        lines.append(f"  {name:<24}" + "".join(cells))
    return lines


def add_parser(sub):
    bag = sub.add_parser("analyze-bag", help="model torques vs the efforts recorded in a bag",
                         description=cmd_analyze_bag.__doc__)
    bag.add_argument("bag", metavar="BAG", help="rosbag2 folder, .db3 or .mcap file, or ROS 1 .bag")
    bag.add_argument("--urdf", required=True, metavar="URDF",
                     help="URDF or xacro file of the recorded robot, or the name of a shipped robot")
    bag.add_argument("--out", required=True, metavar="DIR", help="output folder (created if needed)")
    bag.add_argument("--joint-states", metavar="TOPIC",
                     help="sensor_msgs/JointState topic (default: the only one in the bag)")
    bag.add_argument("--trajectory-topic", metavar="TOPIC",
                     help="trajectory_msgs/JointTrajectory topic of the plan: adds the planned positions "
                          "(qplan_*) and the tracking error to the outputs")
    bag.add_argument("--order", type=order_type(BAG_MAX_ORDER), default=2, metavar=f"0..{BAG_MAX_ORDER}",
                     help=f"highest torque derivative (default 2, at most {BAG_MAX_ORDER}: tau'' needs the fourth derivative "
                          "of the recorded positions)")
    bag.add_argument("--actuators", metavar="CONFIG",
                     help="actuator YAML (rigid/SEA/VSA) or a shipped name such as actuators_sea: adds motor "
                          "references theta_*, u_* (default: rigid)")
    bag.add_argument("--start", type=non_negative, metavar="S",
                     help="analyse from S seconds after the first joint state (default: from the start)")
    bag.add_argument("--end", type=non_negative, metavar="S",
                     help="analyse up to S seconds after the first joint state (default: to the end)")
    bag.add_argument("--smoothing", type=non_negative, metavar="STD",
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
    add_description_options(bag, "lock a joint the bag does not record, e.g. a gripper finger, at VALUE rad (m) "
                                  "(repeat the flag)", loops=True)
    bag.add_argument("--no-plot", action="store_true", help="skip the PNG plots (no matplotlib needed)")
    bag.add_argument("--no-derived-bag", action="store_true", help="skip derived.mcap")
    bag.add_argument("--no-samples-csv", action="store_true", help="skip samples.csv")
    bag.add_argument("--no-progress", action="store_true", help="no progress bar on stderr")
    bag.set_defaults(func=cmd_analyze_bag)
