"""Benchmark: ``hod-dynamics analyze-bag``, the whole command, and its stages on a long bag.

Default (the command as a user runs it): generates a 25 s, 200 Hz, 7-joint bag the way real
ones are recorded (test/recordings.py: the shipped KUKA iiwa 14 on an excitation trajectory,
jittered stamps, drops, a 20-bit encoder, torque-sensor noise, friction), then runs
``hod-dynamics analyze-bag BAG --urdf iiwa14 --out DIR`` (plots, samples.csv, summary.json,
derived.mcap) ``--runs`` times as a process of its own, after one warm-up run, and prints each
run's wall time with the load average; beside it, the same samples' inverse dynamics by
Pinocchio in a process of its own (import, URDF, ``rnea`` at every sample), and the ratio.

``--stages``: the older measurement of a ``--minutes`` long, ``--rate`` Hz bag (smooth
multi-sine motion, positions with 1e-5 rad and efforts with 0.2 N m noise) in this process:
reading, fit + dynamics + error estimate, writing (with the share of each output), peak memory.
Run: ``python bench/bench_bag.py [--runs 3]`` or ``python bench/bench_bag.py --stages [--minutes 10]
[--rate 1000]``.
"""

import argparse
import os
import resource
import subprocess
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


PINOCCHIO = """
import sys, time
import numpy as np, pinocchio as pin
model = pin.buildModelFromUrdf(sys.argv[1])
data = model.createData()
q = np.load(sys.argv[2])
for row in q:
    pin.rnea(model, data, row[0], row[1], row[2])
"""


def command(args):
    """The whole command, ``--runs`` times (see the module docstring)."""
    sys.path.insert(0, os.path.join(HERE, "..", "test"))
    from recordings import Recording

    executable = os.path.join(os.path.dirname(sys.executable), "hod-dynamics")
    cmd = [executable] if os.path.exists(executable) else [sys.executable, "-m", "hod_dynamics"]
    with tempfile.TemporaryDirectory() as tmp:
        rec = Recording(seed=1, rate=args.rate_command, duration=args.seconds)
        bag = rec.write(os.path.join(tmp, "run"))
        q = os.path.join(tmp, "q.npy")
        np.save(q, rec.qjet(rec.t, 3))
        print(f"bag: {len(rec.t)} samples ({args.seconds:g} s at {args.rate_command:g} Hz, 7 joints, generated as "
              f"recorded); command: {' '.join(os.path.basename(c) for c in cmd)} analyze-bag BAG --urdf iiwa14 "
              "--out DIR (plots, samples.csv, summary.json, derived.mcap)")

        def timed(argv, label):
            start = time.perf_counter()
            done = subprocess.run(argv, capture_output=True, text=True)
            wall = time.perf_counter() - start
            if done.returncode != 0:
                raise SystemExit(f"{label} failed: {done.stderr.strip().splitlines()[-1:]}")
            return wall

        out = os.path.join(tmp, "out")
        timed(cmd + ["analyze-bag", bag, "--urdf", "iiwa14", "--out", out], "warm-up")
        rows = []
        for run in range(args.runs):
            load = open("/proc/loadavg").read().split()[:3] if os.path.exists("/proc/loadavg") else ["?"] * 3
            wall = timed(cmd + ["analyze-bag", bag, "--urdf", "iiwa14", "--out", os.path.join(tmp, f"out{run}")],
                         "analyze-bag")
            try:
                ref = timed([sys.executable, "-c", PINOCCHIO, hd.robot_path("iiwa14"), q], "Pinocchio")
            except SystemExit:
                ref = float("nan")
            rows.append((wall, ref))
            print(f"  run {run + 1}: analyze-bag {wall:5.2f} s wall; Pinocchio rnea of the same samples in a process "
                  f"of its own {ref:5.2f} s (ratio {wall / ref:4.1f}); load average {' '.join(load)} on "
                  f"{os.cpu_count()} cores", flush=True)
        walls = sorted(w for w, _ in rows)
        print(f"analyze-bag, {args.seconds:g} s at {args.rate_command:g} Hz with plots: median {walls[len(walls) // 2]:.2f} s "
              f"wall over {len(walls)} runs (min {walls[0]:.2f}, max {walls[-1]:.2f})")


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--runs", type=int, default=3, help="runs of the whole command (default 3)")
    parser.add_argument("--seconds", type=float, default=25.0, help="the bag's length for the command (default 25)")
    parser.add_argument("--rate-command", type=float, default=200.0, help="its rate, Hz (default 200)")
    parser.add_argument("--stages", action="store_true", help="the stages of a long bag in this process instead")
    parser.add_argument("--minutes", type=float, default=10.0)
    parser.add_argument("--rate", type=float, default=1000.0)
    args = parser.parse_args()
    if not args.stages:
        return command(args)
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
