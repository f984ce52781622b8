"""Benchmark: ``hod-dynamics analyze-bag`` on a 10-minute, 1 kHz, 7-joint bag.

Generates the bag (KUKA iiwa 14, shipped URDF, smooth multi-sine motion, positions with 1e-5
rad and efforts with 0.2 N m noise; MCAP storage) in a temporary folder, then times the
stages of the command: reading the joint states, fitting + dynamics (tau, tau', tau''), and
writing samples.csv, summary.json, the plots and derived.mcap (with the share of each). Prints
the generation time, one line per stage and the total, the peak resident memory and the load
average of the machine (the machine is shared: a load above its cores stretches every stage).
Run: ``python bench/bench_bag.py [--minutes 10] [--rate 1000]``.
"""

import argparse
import os
import resource
import sys
import tempfile
import time

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path[:0] = [os.path.join(HERE, "..")]

import hod_dynamics as hd  # noqa: E402
from hod_dynamics.replay.analysis import analyze_joint_states
from hod_dynamics.replay.report import write_report  # noqa: E402
from hod_dynamics.recordings.bag import read_joint_states
from hod_dynamics.recordings.bag_writer import write_joint_states  # noqa: E402


def multisine(t, n, rows):
    """Jet (len(t), rows, n): each joint a sum of three sines (0.05 .. 0.8 Hz)."""
    rng = np.random.default_rng(3)
    amp, freq = rng.uniform(0.1, 0.4, (3, n)), rng.uniform(0.05, 0.8, (3, n))
    phase, w = rng.uniform(0, 2 * np.pi, (3, n)), 2 * np.pi * freq
    tt = t[:, None, None]
    return np.stack([(amp * w ** k * np.sin(w * tt + phase + k * np.pi / 2)).sum(axis=1)
                     for k in range(rows)], axis=1)


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--minutes", type=float, default=10.0)
    parser.add_argument("--rate", type=float, default=1000.0)
    args = parser.parse_args()
    model = hd.load_robot("iiwa14")
    t = np.arange(int(args.minutes * 60 * args.rate)) / args.rate
    with tempfile.TemporaryDirectory() as tmp:
        start = time.perf_counter()
        rng = np.random.default_rng(0)
        tau = np.concatenate([hd.inverse_dynamics(model, *multisine(t[i:i + 20000], 7, 3).transpose(1, 0, 2))
                              for i in range(0, len(t), 20000)])
        q = multisine(t, 7, 1)[:, 0] + 1e-5 * rng.standard_normal(tau.shape)
        bag = os.path.join(tmp, "run")
        write_joint_states(bag, 1_700_000_000 * 10**9 + np.round(t * 1e9).astype(np.int64), model.joint_names,
                           q, None, tau + 0.2 * rng.standard_normal(tau.shape))
        size = sum(os.path.getsize(os.path.join(bag, f)) for f in os.listdir(bag)) / 2**20
        print(f"generated {len(t)} JointState messages ({args.minutes:g} min at {args.rate:g} Hz, 7 joints, "
              f"{size:.0f} MB MCAP) in {time.perf_counter() - start:.1f} s")
        stages, start = [], time.perf_counter()
        states = read_joint_states(bag)
        stages.append(("read joint states", time.perf_counter() - start))
        result = analyze_joint_states(model, states, order=2)
        stages.append(("fit + tau, tau', tau''", time.perf_counter() - stages[-1][1] - start))
        t_write, parts = time.perf_counter(), {}
        write_report(result, os.path.join(tmp, "out"), timings=parts)
        stages.append(("write csv, json, plots, derived.mcap", time.perf_counter() - t_write))
        total = time.perf_counter() - start
        for name, seconds in stages:
            print(f"  {name:<38} {seconds:7.1f} s")
        print("    of which " + ", ".join(f"{name} {seconds:.1f} s" for name, seconds in parts.items()))
        rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
        print(f"analyze-bag, {args.minutes:g} min x {args.rate:g} Hz x 7 joints ({len(t)} samples): "
              f"{total:.1f} s total, peak RSS {rss:.0f} MB; load average {os.getloadavg()[0]:.1f} "
              f"on {os.cpu_count()} cores")


if __name__ == "__main__":
    main()
