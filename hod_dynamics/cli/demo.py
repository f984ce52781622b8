"""``hod-dynamics demo``: the published example of Müller and Kumar 2021, tau^(0..K) of the
KUKA iiwa along the Gaz et al. trajectory, with its table, CSV and plot."""

import math
import os
import time

import numpy as np

from ..errors import CommandError
from ..model import paper_examples as paper
from ..model.robots import load_robot, robot_path
from ..units import common_unit
from .common import check_memory, order_type, output_folder, plots_possible, positive


DEMO_MAX_ORDER = 8  # beyond it the demo's numbers grow like w^(k+2) (1e9 at k = 8) and mean little


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
    from ..kernels.backend import resolve_backend
    from ..algorithms.dynamics import time_derivatives
    from ..feedforward.trajectory_feedforward import FeedforwardResult, save_csv

    samples = int(math.floor(args.duration * args.rate + 0.5)) + 1
    if samples < 2:
        raise CommandError(f"--rate {args.rate:g} Hz over --duration {args.duration:g} s gives one sample; the "
                           "demo needs at least 2 (the default --rate is 1000 Hz)")
    check_memory(demo_memory(samples, args.order, plot=not args.no_plot),
                 f"demo with {samples:,} samples", "lower --rate or --duration")
    output_folder(args.out)
    plot = plots_possible(args.no_plot)
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
        from ..plots import plot_torque_jets

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


def add_parser(sub):
    demo = sub.add_parser("demo", help="the published example (shipped iiwa model and trajectory)",
                          description=cmd_demo.__doc__)
    demo.add_argument("--order", type=order_type(DEMO_MAX_ORDER), default=3, metavar=f"0..{DEMO_MAX_ORDER}",
                      help=f"highest torque derivative (default 3, at most {DEMO_MAX_ORDER})")
    demo.add_argument("--duration", type=positive, default=5.0, metavar="S",
                      help="trajectory length in s (default 5)")
    demo.add_argument("--rate", type=positive, default=1000.0, metavar="HZ",
                      help="sample rate in Hz (default 1000; refused when the job would not fit in memory)")
    demo.add_argument("--out", default="hod_demo_out", metavar="DIR",
                      help="output folder (default hod_demo_out, created if needed)")
    demo.add_argument("--no-plot", action="store_true", help="skip the PNG (no matplotlib needed)")
    demo.set_defaults(func=cmd_demo)
