"""The ``hod-dynamics`` command line (also ``python -m hod_dynamics``).

    hod-dynamics demo [--order K] [--duration S] [--rate HZ] [--out DIR] [--no-plot]
    hod-dynamics info URDF [--root LINK] [--tip LINK] [--lock JOINT=VALUE] [--lenient]
                      [--xacro-arg NAME:=VALUE]
    hod-dynamics robots
    hod-dynamics analyze-bag BAG --urdf URDF --out DIR [--time-base auto] [--friction fit|FILE] ...
    hod-dynamics analyze-bags BAG_OR_GLOB ... --urdf URDF|PATTERN=URDF|MAPPING.yaml --out DIR
                      [--friction fit|FILE] [--workers N] [--dask ADDRESS] [--force] ...
    hod-dynamics identify BAG [BAG ...] --urdf URDF --out DIR [--validate BAG ...] [--method ols|consistent]
    hod-dynamics excite --urdf URDF --out traj.yaml [--duration S] [--harmonics H]

Every failure the user can cause (bad arguments, a missing or malformed file, an output folder
that cannot be written, a job that would not fit in memory) prints one line
``hod-dynamics: error: ...`` on stderr and exits with code 2; a closed output pipe
(``hod-dynamics info X | head -2``) ends the command quietly.

Longer than 500 lines: one parser and one function per command (demo, info, robots,
analyze-bag, identify, excite), each with the checks a user's input needs before a job (output
folders, memory); they share the parser's option groups and the one-line error handling. The
work itself is in the library modules each command calls.
"""

import argparse
import math
import os
import shlex
import sys
import time
import warnings

import numpy as np

from . import paper_examples as paper
from .backend import compile_notices
from .errors import CommandError, HodDynamicsError
from .robots import FLOATING_BASE, load_robot, model_from_description, robot_path, shipped_robots
from .units import common_unit, friction_units, joint_unit
from .validation import MEMORY_SHARE, available_memory, memory_text
from .urdf import xacro_args_from_strings

PROG = "hod-dynamics"
DEMO_MAX_ORDER = 8  # beyond it the demo's numbers grow like w^(k+2) (1e9 at k = 8) and mean little
BAG_MAX_ORDER = 2  # tau'' needs q^(4) of the fit of recorded positions, the highest it is made for


class _Parser(argparse.ArgumentParser):
    """argparse with the command's one-line errors: no usage block, exit code 2."""

    def error(self, message):
        command = self.prog.split(" ", 1)[1] if " " in self.prog else ""
        hint = f" (see {PROG} {command} --help)" if command else f" (see {PROG} --help)"
        raise CommandError(message + hint)


def _version():
    from . import __version__

    return __version__


# -- shared checks ------------------------------------------------------------------------------
def _parse_locks(items):
    """``{joint: position}`` of the --lock JOINT=VALUE flags; CommandError for a malformed or
    non-finite value, or a joint given twice (which value was meant?)."""
    locks = {}
    for item in items or []:
        name, sep, value = item.partition("=")
        if not sep or not name:
            raise CommandError(f"--lock expects JOINT=VALUE, got '{item}'")
        try:
            position = float(value)
        except ValueError:
            raise CommandError(f"--lock {item}: '{value}' is not a number") from None
        if not math.isfinite(position):
            raise CommandError(f"--lock {item}: the position must be a finite number (rad or m)")
        if name in locks:
            raise CommandError(f"--lock {name} is given twice ({locks[name]:g} and {position:g}): give each "
                               "joint once")
        locks[name] = position
    return locks


def _load_model(args, extensions=False):
    """The model of ``--urdf``/``URDF`` (a file or a shipped robot's name) with the shared model
    options; returns (model, the HodDynamicsWarning messages of the reading: --lenient problems,
    identified inertias, negative <dynamics> values, and with ``extensions`` the extensions read
    past, which ``info`` lists and the other commands leave to it)."""
    return model_from_description(args.urdf, root_link=args.root, tip_links=args.tip,
                                  locked_joints=_parse_locks(args.lock), strict=not args.lenient,
                                  xacro_args=xacro_args_from_strings(args.xacro_arg, "--xacro-arg"),
                                  extensions=extensions)


_OUTPUTS = []  # (folder, the names it held before, or None; the topmost folder created) of this command


def _output_folder(path, flag="--out"):
    """Create the output folder ``path`` (and its parents) before any work, so that a folder
    that cannot be written fails at once, naming the path, and loses nothing. Remembers what
    the command creates there, which :func:`_remove_outputs` removes if the command fails."""
    if os.path.exists(path) and not os.path.isdir(path):
        raise CommandError(f"{flag} '{path}' exists and is not a folder")
    top = os.path.abspath(path)
    while not os.path.exists(os.path.dirname(top)) and os.path.dirname(top) != top:
        top = os.path.dirname(top)   # the topmost folder makedirs will create
    before = set(os.listdir(path)) if os.path.isdir(path) else None
    try:
        os.makedirs(path, exist_ok=True)
    except OSError as exc:
        raise CommandError(f"{flag} '{path}': cannot create the folder ({exc.strerror or exc})") from None
    _OUTPUTS.append((path, before, top))
    if not os.access(path, os.W_OK | os.X_OK):
        raise CommandError(f"{flag} '{path}': the folder is not writable")
    return path


def _remove_outputs():
    """After a failed command: remove the output folders it created, and the files it wrote
    into folders that existed (files it overwrote stay as they are now)."""
    import shutil

    while _OUTPUTS:
        folder, before, top = _OUTPUTS.pop()
        if before is None:
            shutil.rmtree(top, ignore_errors=True)
            continue
        for name in set(os.listdir(folder)) - before if os.path.isdir(folder) else ():
            target = os.path.join(folder, name)
            if os.path.isdir(target) and not os.path.islink(target):
                shutil.rmtree(target, ignore_errors=True)
            else:
                try:
                    os.remove(target)
                except OSError:
                    pass


def check_memory(estimate, what, advice):
    """Refuse a job whose ``estimate`` (bytes) exceeds MEMORY_SHARE of the available memory."""
    free = available_memory()
    if free is not None and estimate > MEMORY_SHARE * free:
        raise CommandError(f"{what} needs about {memory_text(estimate)} of memory, {memory_text(free)} is "
                           f"available; {advice}")


def _plots_possible(no_plot):
    """False with one line on stdout when matplotlib is missing (the plots are skipped)."""
    if no_plot:
        return False
    try:
        import matplotlib  # noqa: F401
    except ImportError:
        print("plots skipped: matplotlib is not installed (pip install matplotlib); "
              "everything else is written")
        return False
    return True


# -- demo ---------------------------------------------------------------------------------------
def demo_memory(samples, order, n=7, plot=True):
    """Bytes the demo holds for ``samples`` samples at ``order`` (n joints): the q- and wrench
    jets, the tau-jet, the CSV table and, with the plot, matplotlib's copies of every curve
    (measured: about 3 x the data it draws)."""
    floats = (order + 3) * n + (order + 2) * 6 * 2 + (order + 1) * n + 1 + n + (order + 1) * n
    if plot:
        floats += 3 * (order + 1) * n * min(1.0, PLOT_POINTS / max(samples, 1))
    return int(samples * floats * 8 * 1.5)  # 1.5: temporaries and the allocator's slack


PLOT_POINTS = 20000  # curves are drawn with at most this many points (every k-th sample)
WARM_BUDGET = 0.5  # s: the warm job is repeated within this budget (once when it takes longer)


def cmd_demo(args):
    """The published example of Müller and Kumar 2021: the shipped KUKA iiwa 14 model, the Gaz
    et al. trajectory and the end-effector wrench of that paper; tau^(0..order)
    at --rate Hz, written as CSV into --out (and a PNG with matplotlib)."""
    from .backend import resolve_backend
    from .dynamics import time_derivatives
    from .trajectory_feedforward import FeedforwardResult, save_csv

    samples = int(math.floor(args.duration * args.rate + 0.5)) + 1
    if samples < 2:
        raise CommandError(f"--rate {args.rate:g} Hz over --duration {args.duration:g} s gives one sample; the "
                           "demo needs at least 2 (the default --rate is 1000 Hz)")
    check_memory(demo_memory(samples, args.order, plot=not args.no_plot),
                 f"demo with {samples:,} samples", "lower --rate or --duration")
    _output_folder(args.out)
    plot = _plots_possible(args.no_plot)
    model = load_robot("iiwa14", gravity=paper.IIWA_GRAVITY)
    t = np.arange(samples) / args.rate
    qjet = paper.gaz_trajectory_jet(t, args.order + 3)
    wrenches = {paper.IIWA_WRENCH_LINK: paper.iiwa_wrench_jet(t, args.order + 1)}
    backend = resolve_backend()
    # the first call compiles numba's kernels (announced on stderr, see main) or loads them
    # from its cache: timed apart
    head = slice(0, min(samples, 64))
    start = time.perf_counter()
    time_derivatives(model, qjet[head], args.order, wrenches={k: v[head] for k, v in wrenches.items()})
    first = time.perf_counter() - start
    runs, begin = [], time.perf_counter()
    while not runs or (time.perf_counter() - begin < WARM_BUDGET and len(runs) < 100):
        start = time.perf_counter()  # warm: the median of the runs (as bench/bench_speed.py times)
        taujet = time_derivatives(model, qjet, args.order, wrenches=wrenches)
        runs.append(time.perf_counter() - start)
    elapsed = float(np.median(runs))
    print(f"robot: {model.name} ({model.n_dof} joints, shipped URDF {robot_path('iiwa14')})")
    print(f"trajectory: Gaz et al. 2019 eq. 31, {samples} samples over {args.duration:g} s at {args.rate:g} Hz, "
          f"end-effector wrench 10 sin(pi t) (N m, N) on {paper.IIWA_WRENCH_LINK}")
    warmup = "compile or cache load" if backend == "numba" else "first call"
    print(f"backend: {backend}; {warmup}: {first:.2f} s (once per process)")
    print(f"computed tau^(0..{args.order}) in {elapsed * 1e3:.1f} ms warm "
          f"({elapsed / samples * 1e6:.2f} us per sample, median of {len(runs)} runs)")
    fastest = float(np.max(paper.GAZ_FREQUENCIES)) / (2 * np.pi)  # Hz
    if args.rate < 20 * fastest:
        print(f"note: --rate {args.rate:g} Hz takes fewer than 20 samples per period of the trajectory's "
              f"fastest joint ({fastest:.2f} Hz): the peaks below may be lower than the true ones")
    print("peak |tau^(k)| per joint:")
    for line in peak_table(model, taujet):
        print(f"  {line}")
    result = FeedforwardResult(tuple(model.joint_names), t, qjet, taujet, joint_types=model.joint_types)
    print(f"wrote {save_csv(result, os.path.join(args.out, 'demo_torque_jets.csv'))}")
    if plot:
        from .plots import plot_torque_jets

        png = plot_torque_jets(t, taujet, model.joint_names, os.path.join(args.out, "demo_torque_jets.png"),
                               title="KUKA iiwa 14, Gaz et al. trajectory: tau and its time derivatives",
                               max_points=PLOT_POINTS)
        print(f"wrote {png}")
    return 0


def peak_table(model, taujet):
    """Lines of a table of max |tau^(k)| over the samples: one row per joint (the model's
    names), one column per order k, headed with its unit (m and N for prismatic joints)."""
    width = max(len("joint"), *(len(name) for name in model.joint_names))
    symbols = ["tau", "tau'", "tau''"] + [f"tau^({k})" for k in range(3, taujet.shape[-2])]
    heads = [f"{symbols[k]} [{common_unit(model.joint_types, 'torque', k)}]" for k in range(taujet.shape[-2])]
    cols = [max(11, len(h)) for h in heads]
    lines = [f"{'joint':<{width}}" + "".join(f" {h:>{c}}" for h, c in zip(heads, cols))]
    peaks = np.abs(taujet).max(axis=0)  # (order+1, n)
    for j, name in enumerate(model.joint_names):
        lines.append(f"{name:<{width}}" + "".join(f" {v:>{c}.4g}" for v, c in zip(peaks[:, j], cols)))
    return lines


# -- info, robots -------------------------------------------------------------------------------
def cmd_info(args):
    """Print the joints, limits and masses of a URDF (or xacro) model, a file or a shipped
    robot's name, and the warnings of its reading (extensions read past, misspellings read past
    with --lenient, inertias that are not positive semi-definite, negative <dynamics> values)."""
    model, notes = _load_model(args, extensions=True)
    print(f"{model.name}: {model.n_dof} moving joints, root link '{model.root_link}', "
          f"total moving mass {model.masses.sum():.3f} kg")
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


# -- analyze-bag --------------------------------------------------------------------------------
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

    def line(self, message):
        """A status line that replaces the previous one (long jobs with stages)."""
        if self.enabled:
            print(f"\r\033[K{self.label}: {message}", end="", file=sys.stderr, flush=True)
            self.last = -2

    def done(self):
        """End a status line."""
        if self.enabled and self.last == -2:
            print("\r\033[K", end="", file=sys.stderr, flush=True)


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
    from .analysis import analyze_bag, lock_notes
    from .bag import check_rosbags

    check_rosbags()  # before anything is printed or created
    if args.start is not None and args.end is not None and args.end <= args.start:
        raise CommandError(f"--end {args.end} must be after --start {args.start}")
    model, notes = _load_model(args)
    for note in notes:
        print(f"warning: {note}", file=sys.stderr)
    if args.friction not in (None, "fit"):
        from .friction import load_friction

        load_friction(args.friction, model)   # a bad file or URDF value fails before the bag is read
    _output_folder(args.out)
    plot = _plots_possible(args.no_plot)
    show = not args.no_progress
    locks = _parse_locks(args.lock)

    def check(states):
        check_memory(bag_memory(len(states.t), len(states.joint_names), model.n_dof, args.order),
                     f"the analysis of {len(states.t):,} joint states", "analyse a part with --start/--end")
        # returned, the notes are among the analysis's notes (printed and in summary.json)
        return lock_notes(locks, states.joint_names)

    report = analyze_bag(args.bag, model, args.out, joint_states=args.joint_states, time_base=args.time_base,
                         start=args.start, end=args.end, trajectory_topic=args.trajectory_topic, order=args.order,
                         actuators=args.actuators, smoothing=args.smoothing, friction=args.friction, plots=plot,
                         derived_bag=not args.no_derived_bag, samples=not args.no_samples_csv,
                         progress=lambda stage: _Progress(stage, show),
                         check=check, title=f"{model.name}: {os.path.basename(args.bag)}")
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


# -- analyze-bags -------------------------------------------------------------------------------
class _FleetProgress:
    """``progress(p)`` of :func:`~hod_dynamics.fleet.analyze_bags`: on a terminal a one-line bar
    (bags done / total, rate, ETA) on stderr; otherwise one plain line per bag finished."""

    def __init__(self, enabled, stream=None):
        self.stream = sys.stderr if stream is None else stream
        self.enabled = enabled
        self.bar = enabled and self.stream.isatty()

    def __call__(self, p):
        if not self.enabled:
            return
        if p.name is None:      # before the first task
            if p.skipped:
                print(f"{p.skipped} of {p.total} bags complete from an earlier run with the same settings "
                      "(--force redoes them)", file=self.stream, flush=True)
            if self.bar and p.done < p.total:
                self._bar(p)
            return
        if self.bar:
            if p.status != "ok":
                print(f"\r\033[K{p.name}: {p.status}", file=self.stream)
            self._bar(p)
        else:
            rate = f", {p.rate:.3g} bags/min, ETA {_duration(p.eta)}" if p.done < p.total else ""
            print(f"[{p.done}/{p.total}] {p.name}: {p.status} ({p.seconds:.1f} s){rate}", file=self.stream,
                  flush=True)

    def _bar(self, p):
        width = 25
        filled = int(width * p.done / p.total) if p.total else width
        rate = f"{p.rate:.3g} bags/min" if p.analysed else "-- bags/min"
        print(f"\r\033[Kbags [{'#' * filled}{'.' * (width - filled)}] {p.done}/{p.total}  {rate}  ETA "
              f"{_duration(p.eta)}", end="\n" if p.done >= p.total else "", file=self.stream, flush=True)


def _duration(seconds):
    if not math.isfinite(seconds):
        return "--"
    seconds = int(round(seconds))
    if seconds < 60:
        return f"{seconds} s"
    if seconds < 3600:
        return f"{seconds // 60} min {seconds % 60:02d} s"
    return f"{seconds // 3600} h {seconds % 3600 // 60:02d} min"


def _urdf_spec(items):
    """The --urdf values: one URDF (file or shipped name) or a YAML mapping file for every bag,
    or PATTERN=URDF pairs (first match wins)."""
    if len(items) == 1 and "=" not in items[0] or len(items) == 1 and os.path.exists(items[0]):
        return items[0]
    mapping = {}
    for item in items:
        pattern, sep, urdf = item.partition("=")
        if not sep or not pattern or not urdf:
            raise CommandError(f"--urdf '{item}': give one URDF for every bag, or PATTERN=URDF for each group of "
                               "bags (repeat the flag), or a YAML file mapping patterns to URDFs")
        mapping[pattern] = urdf
    return mapping


def cmd_analyze_bags(args):
    """Replay analysis of many recorded bags, in parallel: each bag as analyze-bag analyses it
    (its outputs in DIR/<bag>/), on a local pool of worker processes (--workers) or a Dask cluster
    (--dask). Writes DIR/fleet.parquet (one row per bag and joint: residual, efforts, friction
    with standard errors, status), DIR/trends.png, DIR/trends.csv and DIR/fleet_summary.txt (the
    robots and joints whose friction or residual moved beyond the threshold over the recording
    time). A bag that cannot be analysed gets a row with its error; the others go on. A re-run
    with the same --out skips the bags complete with the same settings (--force redoes them);
    Ctrl-C stops and leaves the table of what finished."""
    from .errors import HodDynamicsWarning, URDFExtensionWarning
    from .fleet import analyze_bags, require

    if args.workers is not None and args.dask:
        raise CommandError("--workers and --dask exclude each other: the cluster has its own workers")
    require(serial=args.workers == 0)       # before anything is created
    model_kwargs = dict(root_link=args.root, tip_links=args.tip, locked_joints=_parse_locks(args.lock),
                        strict=not args.lenient, xacro_args=xacro_args_from_strings(args.xacro_arg, "--xacro-arg"))
    _output_folder(args.out)
    plot = _plots_possible(args.no_plot)
    show = _FleetProgress(not args.no_progress)

    def progress(p):
        if p.name is None:      # the inputs are checked and the run starts: what it writes is kept
            _OUTPUTS[:] = [entry for entry in _OUTPUTS if entry[0] != args.out]
        show(p)

    client = None
    if args.dask:
        client = _dask_client(args.dask)
    try:
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always", HodDynamicsWarning)
            frame = analyze_bags(args.bags, _urdf_spec(args.urdf), args.out, friction=args.friction,
                                 time_base=args.time_base, order=args.order, joint_states=args.joint_states,
                                 plots=plot, derived_bag=not args.no_derived_bag,
                                 samples_csv=not args.no_samples_csv, workers=args.workers,
                                 client=client, force=args.force, progress=progress, false_alarm=args.false_alarm,
                                 drift_change=args.drift_change / 100.0, model_kwargs=model_kwargs)
    except KeyboardInterrupt:
        from .fleet import TABLE

        print(f"{PROG}: interrupted; {os.path.join(args.out, TABLE)} holds the bags that finished (run the "
              "same command again to go on)", file=sys.stderr)
        return 130
    finally:
        if client is not None:
            client.close()
    for w in caught:
        if issubclass(w.category, HodDynamicsWarning) and not issubclass(w.category, URDFExtensionWarning):
            print(f"warning: {w.message}", file=sys.stderr)
    bags = frame.drop_duplicates("bag")
    failed = bags[bags["status"] != "ok"]
    print(f"{len(bags)} bags: {len(bags) - len(failed)} analysed, {len(failed)} not (listed in the summary)")
    from .trends import FIGURE, SUMMARY, TABLE as TRENDS

    with open(os.path.join(args.out, SUMMARY), encoding="utf-8") as fh:
        print(fh.read(), end="")
    for name in ("fleet.parquet", SUMMARY, TRENDS) + ((FIGURE,) if plot else ()):
        print(f"wrote {os.path.join(args.out, name)}")
    return 0


def _reachable(address):
    """Refuse a tcp:// address where nothing listens at once (the client would retry for its
    whole timeout); other schemes are left to the client."""
    import socket
    from urllib.parse import urlsplit

    if not address.startswith("tcp://"):
        return
    try:
        parts = urlsplit(address)
        host, port = parts.hostname, parts.port
    except ValueError:
        raise CommandError(f"--dask {address}: not an address (tcp://host:port)") from None
    if host is None or port is None:
        raise CommandError(f"--dask {address}: not an address (tcp://host:port)")
    try:
        socket.create_connection((host, port), timeout=10).close()
    except OSError as exc:
        raise CommandError(f"--dask {address}: cannot connect to the scheduler ({exc.strerror or exc})") from None


def _dask_client(address):
    """A distributed.Client connected to the scheduler at ``address`` (tcp://host:8786)."""
    from distributed import Client

    _reachable(address)
    try:
        return Client(address, timeout=30, set_as_default=False)
    except (OSError, TimeoutError, ValueError) as exc:
        detail = " ".join(str(exc).split())
        raise CommandError(f"--dask {address}: cannot connect to the scheduler ({detail})") from None


# -- identify, excite ---------------------------------------------------------------------------
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

    from .analysis import analyze_joint_states, source_notes
    from .bag import read_joint_states
    from .errors import InputError
    from .fleet_inputs import bag_names
    from .identification import evaluate, identify, summary, write_outputs
    from .robots import urdf_source
    from .urdf_writer import locked_parts

    model, notes = _load_model(args)
    for note in notes:
        print(f"warning: {note}", file=sys.stderr)
    if model.floating:
        raise CommandError(f"identify: '{args.urdf}' gives a floating-base model; joint states record no base "
                           "motion, so identify a fixed-base robot (choose --root)")
    _output_folder(args.out)
    plot = _plots_possible(args.no_plot)
    show = not args.no_progress
    status = _Progress("identify", show)
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
                                       progress=_Progress("reading", show))
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
    from .analysis import warning_notes

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


def cmd_excite(args):
    """Optimise an excitation trajectory for identification: per joint a Fourier series (a
    fundamental period and its harmonics) around a centre, at rest at both ends, within the
    URDF's position and velocity limits and --acceleration-limit, whose base regressor has the
    smallest condition number. Writes it as a waypoint YAML that the demo trajectory
    publisher and hod_dynamics.Trajectory load (record it, then run identify)."""
    from .excitation import optimise_excitation, write_waypoints

    model, notes = _load_model(args)
    for note in notes:
        print(f"warning: {note}", file=sys.stderr)
    folder = os.path.dirname(os.path.abspath(args.out))
    _output_folder(folder, "--out")
    status = _Progress("optimising", not args.no_progress)
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


# -- the parser and the entry point -------------------------------------------------------------
def _order_type(maximum, minimum=0):
    def order(text):
        try:
            value = int(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"'{text}' is not an integer") from None
        if not minimum <= value <= maximum:
            raise argparse.ArgumentTypeError(f"{value} is outside {minimum}..{maximum}")
        return value

    return order


def _positive(text):
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"'{text}' is not a number") from None
    if not (math.isfinite(value) and value > 0):
        raise argparse.ArgumentTypeError(f"{text} must be a finite number > 0")
    return value


def _non_negative(text):
    """A finite number >= 0 (seconds of --start/--end, the noise level of --smoothing)."""
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"'{text}' is not a number") from None
    if not (math.isfinite(value) and value >= 0):
        raise argparse.ArgumentTypeError(f"{text} must be a finite number >= 0")
    return value


def _probability(text):
    value = _positive(text)
    if value >= 1:
        raise argparse.ArgumentTypeError(f"{text} must be below 1")
    return value


def _add_description_options(sub, lock_help):
    """The options that choose the model of a URDF: subtree, locked joints, strictness, xacro."""
    sub.add_argument("--root", metavar="LINK", help="root link of the model (default: the root of the URDF's one "
                                                    "tree; a description of several trees needs it)")
    sub.add_argument("--tip", action="append", metavar="LINK",
                     help="tip link: keep only the chain root -> LINK (repeat the flag for several tips)")
    sub.add_argument("--lock", action="append", metavar="JOINT=VALUE", help=lock_help)
    sub.add_argument("--lenient", action="store_true",
                     help="read past misspelt URDF names and malformed values the model does not need, with a "
                          "warning (default: an error naming the element, its line and the URDF name meant)")
    sub.add_argument("--xacro-arg", action="append", metavar="NAME:=VALUE",
                     help="argument of a xacro file (repeat the flag for several)")


def build_parser():
    parser = _Parser(prog=PROG, description="Inverse dynamics of URDF robots and its time derivatives of any order.")
    parser.add_argument("--version", action="version", version=f"{PROG} {_version()}")
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND",
                                parser_class=_Parser)
    demo = sub.add_parser("demo", help="the published example (shipped iiwa model and trajectory)",
                          description=cmd_demo.__doc__)
    demo.add_argument("--order", type=_order_type(DEMO_MAX_ORDER), default=3, metavar=f"0..{DEMO_MAX_ORDER}",
                      help=f"highest torque derivative (default 3, at most {DEMO_MAX_ORDER})")
    demo.add_argument("--duration", type=_positive, default=5.0, metavar="S",
                      help="trajectory length in s (default 5)")
    demo.add_argument("--rate", type=_positive, default=1000.0, metavar="HZ",
                      help="sample rate in Hz (default 1000; refused when the job would not fit in memory)")
    demo.add_argument("--out", default="hod_demo_out", metavar="DIR",
                      help="output folder (default hod_demo_out, created if needed)")
    demo.add_argument("--no-plot", action="store_true", help="skip the PNG (no matplotlib needed)")
    demo.set_defaults(func=cmd_demo)
    info = sub.add_parser("info", help="summarise a URDF model", description=cmd_info.__doc__)
    info.add_argument("urdf", metavar="URDF", help="URDF or xacro file, or the name of a shipped robot (hod-dynamics robots)")
    _add_description_options(info, "lock a joint at VALUE rad (m) (repeat the flag for several joints)")
    info.set_defaults(func=cmd_info)
    robots = sub.add_parser("robots", help="list the shipped robot models", description=cmd_robots.__doc__)
    robots.set_defaults(func=cmd_robots)
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
    bag.add_argument("--order", type=_order_type(BAG_MAX_ORDER), default=2, metavar=f"0..{BAG_MAX_ORDER}",
                     help=f"highest torque derivative (default 2, at most {BAG_MAX_ORDER}: tau'' needs the fourth derivative "
                          "of the recorded positions)")
    bag.add_argument("--actuators", metavar="CONFIG",
                     help="actuator YAML (rigid/SEA/VSA) or a shipped name such as actuators_sea: adds motor "
                          "references theta_*, u_* (default: rigid)")
    bag.add_argument("--start", type=_non_negative, metavar="S",
                     help="analyse from S seconds after the first joint state (default: from the start)")
    bag.add_argument("--end", type=_non_negative, metavar="S",
                     help="analyse up to S seconds after the first joint state (default: to the end)")
    bag.add_argument("--smoothing", type=_non_negative, metavar="STD",
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
    _add_description_options(bag, "lock a joint the bag does not record, e.g. a gripper finger, at VALUE rad (m) "
                                  "(repeat the flag)")
    bag.add_argument("--no-plot", action="store_true", help="skip the PNG plots (no matplotlib needed)")
    bag.add_argument("--no-derived-bag", action="store_true", help="skip derived.mcap")
    bag.add_argument("--no-samples-csv", action="store_true", help="skip samples.csv")
    bag.add_argument("--no-progress", action="store_true", help="no progress bar on stderr")
    bag.set_defaults(func=cmd_analyze_bag)
    bags = sub.add_parser("analyze-bags", help="many bags in parallel (local processes or a Dask cluster), one "
                                               "table of trends", description=cmd_analyze_bags.__doc__)
    bags.add_argument("bags", nargs="+", metavar="BAG_OR_GLOB",
                      help="bags (rosbag2 folders, .db3/.mcap files, ROS 1 .bag), glob patterns of them (quoted: "
                           "'bags/**/*.mcap'), or fsspec URLs (file://, s3:// with s3fs, zip://BAG::file://ZIP)")
    bags.add_argument("--urdf", required=True, action="append", metavar="URDF|PATTERN=URDF",
                      help="URDF or xacro file (or shipped robot name) of every bag; for a fleet of mixed robots "
                           "PATTERN=URDF per group (fnmatch on the bag name, first match wins; repeat the flag) or "
                           "a YAML file mapping PATTERN to URDF or to {urdf: URDF, robot: NAME}")
    bags.add_argument("--out", required=True, metavar="DIR",
                      help="output folder: DIR/<bag>/ per bag, fleet.parquet, trends.png, trends.csv, "
                           "fleet_summary.txt")
    bags.add_argument("--friction", metavar="fit|FILE", help="as for analyze-bag; fit gives the friction trends")
    bags.add_argument("--workers", type=int, metavar="N",
                      help="worker processes of the local pool (default: the number of CPUs)")
    bags.add_argument("--dask", metavar="ADDRESS",
                      help="run on the Dask cluster whose scheduler is at ADDRESS (tcp://host:8786) instead; its "
                           "workers need hod_dynamics installed and must see the bags and DIR at the same paths")
    bags.add_argument("--time-base", choices=("auto", "header", "receive", "index"), default="auto",
                      help="sample times, as for analyze-bag (default auto)")
    bags.add_argument("--order", type=_order_type(BAG_MAX_ORDER), default=2, metavar=f"0..{BAG_MAX_ORDER}",
                      help="highest torque derivative of the per-bag outputs (default 2)")
    bags.add_argument("--joint-states", metavar="TOPIC",
                      help="sensor_msgs/JointState topic (default: the only one in each bag)")
    bags.add_argument("--force", action="store_true",
                      help="redo the bags an earlier run with the same --out completed (default: skip them)")
    bags.add_argument("--false-alarm", type=_probability, default=0.01, metavar="P",
                      help="a trend is named when significant at this probability of naming any series of the "
                           "fleet that did not move (default 0.01) ...")
    bags.add_argument("--drift-change", type=_positive, default=5.0, metavar="PERCENT",
                      help="... and changing the quantity by PERCENT %% of its level over the span (default 5)")
    _add_description_options(bags, "lock a joint the bags do not record at VALUE rad (m) (repeat the flag)")
    bags.add_argument("--no-plot", action="store_true", help="skip the PNG plots (per bag and trends.png)")
    bags.add_argument("--no-derived-bag", action="store_true", help="skip derived.mcap of each bag")
    bags.add_argument("--no-samples-csv", action="store_true",
                      help="skip samples.csv of each bag (with --no-derived-bag, a 10-minute 1 kHz bag leaves a few "
                           "MB instead of more than 1 GB)")
    bags.add_argument("--no-progress", action="store_true", help="no progress bar or lines on stderr")
    bags.set_defaults(func=cmd_analyze_bags)
    _add_identify(sub)
    _add_excite(sub)
    return parser


def _add_identify(sub):
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
    ident.add_argument("--regularization", type=_non_negative, default=1.0, metavar="W",
                       help="weight of the divergence from the URDF's inertias in the consistent fit, in units of "
                            "one sample's weighted squared residual (default 1)")
    ident.add_argument("--joint-states", metavar="TOPIC",
                       help="sensor_msgs/JointState topic (default: the only one in each bag)")
    ident.add_argument("--time-base", choices=("auto", "header", "receive", "index"), default="auto",
                       help="sample times, as for analyze-bag (default auto)")
    ident.add_argument("--smoothing", type=_non_negative, metavar="STD",
                       help="position noise standard deviation in rad (m); default: estimated from the data")
    _add_description_options(ident, "lock a joint the bags do not record at VALUE rad (m) (repeat the flag)")
    ident.add_argument("--no-plot", action="store_true", help="skip the PNG plots")
    ident.add_argument("--no-progress", action="store_true", help="no progress line on stderr")
    ident.set_defaults(func=cmd_identify)


def _add_excite(sub):
    excite = sub.add_parser("excite", help="optimise an excitation trajectory for identify",
                            description=cmd_excite.__doc__)
    excite.add_argument("--urdf", required=True, metavar="URDF",
                        help="URDF or xacro of the robot (limits and kinematics), or the name of a shipped robot")
    excite.add_argument("--out", required=True, metavar="FILE", help="waypoint YAML to write")
    excite.add_argument("--duration", type=_positive, default=20.0, metavar="S",
                        help="trajectory length in s (default 20), whole periods")
    excite.add_argument("--harmonics", type=_order_type(12, 3), default=5, metavar="3..12",
                        help="harmonics of the fundamental per joint (default 5; four of their coefficients hold "
                             "the motion at rest at both ends)")
    excite.add_argument("--period", type=_positive, metavar="S",
                        help="fundamental period in s (default: the duration split into periods of at most 10 s)")
    excite.add_argument("--acceleration-limit", type=_positive, metavar="RAD/S2",
                        help="joint acceleration limit in rad/s^2 (m/s^2) (default: 4 times each joint's velocity "
                             "limit per second, 10 where the URDF has none)")
    excite.add_argument("--margin", type=float, default=0.05, metavar="FRACTION",
                        help="share of each position range (and of the velocity limits) kept free (default 0.05)")
    excite.add_argument("--friction", action=argparse.BooleanOptionalAction, default=True,
                        help="include the friction parameters in the condition number (default: on)")
    excite.add_argument("--seed", type=int, default=0, help="seed of the random starts (default 0)")
    _add_description_options(excite, "lock a joint at VALUE rad (m) (repeat the flag)")
    excite.add_argument("--no-progress", action="store_true", help="no progress line on stderr")
    excite.set_defaults(func=cmd_excite)


def _error(message):
    print(f"{PROG}: error: {' '.join(str(message).split())}", file=sys.stderr)
    return 2


def _warning_line(message, category, filename, lineno, file=None, line=None):
    """Warnings as one line ``hod-dynamics: warning: ...`` (no source line)."""
    print(f"{PROG}: warning: {message}", file=sys.stderr if file is None else file)


def _compile_line(text):
    """A compile notice (see backend.compile_notices) as a line on stderr, at once: it comes
    before a wait of seconds, also inside a command that collects library warnings."""
    print(f"{PROG}: {text}", file=sys.stderr, flush=True)


def _quiet_after_broken_pipe():
    """The reader of stdout went away (``| head``): drop what is left unflushed, exit quietly."""
    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
    except (OSError, ValueError):  # stdout is not a file descriptor (captured in a test)
        pass
    return 141  # 128 + SIGPIPE: what a Unix tool ends with when its reader closes the pipe


def main(argv=None):
    """Run the command line; returns the exit code (0, 2 on a user error, 141 on a closed pipe)."""
    try:
        with warnings.catch_warnings(), compile_notices(_compile_line):
            warnings.showwarning = _warning_line  # restored when the command ends
            try:
                args = build_parser().parse_args(argv)
                args.argv = list(sys.argv[1:] if argv is None else argv)  # the command as given, for the record
                try:
                    return args.func(args)
                except BrokenPipeError:  # the reader went away: what was written is whole
                    raise
                except BaseException:
                    _remove_outputs()
                    raise
                finally:
                    _OUTPUTS.clear()
            finally:
                sys.stdout.flush()
    except BrokenPipeError:
        return _quiet_after_broken_pipe()
    except HodDynamicsError as exc:
        return _error(exc)
    except OSError as exc:  # a file the command reads or writes (permissions, full disk, ...)
        where = f" '{exc.filename}'" if exc.filename else ""
        return _error(f"{exc.strerror or exc}{where}")
    except MemoryError:
        return _error("out of memory: lower the number of samples (--rate, --duration, --start/--end)")
    except KeyboardInterrupt:
        print(f"{PROG}: interrupted", file=sys.stderr)
        return 130


if __name__ == "__main__":
    sys.exit(main())
