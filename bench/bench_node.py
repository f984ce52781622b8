"""Benchmark: the feedforward node streaming at 1 kHz (Panda, fingers locked, order 2).

Starts ``feedforward_node`` as its own process (the installed executable if present, else
``python -m hod_dynamics.ros.feedforward_node``), sends a 10 s rest-to-rest trajectory, and
measures from a separate subscriber process-side thread: the sustained receive rate, the jitter
of the message intervals (against the 1 ms period), and the node's CPU use from /proc.
Run: ``python bench/bench_node.py [--rate 1000] [--seconds 5] [--order 2]``.

``--first-sample``: instead, the start on a fresh install: with an empty ``NUMBA_CACHE_DIR``,
the time from starting the process to the node's readiness (subscribed to ~/trajectory), to
its first correct feedforward sample (equal to inverse dynamics; by its stamp, and when this
client receives it, which waits for DDS discovery), and to the compiled kernels taking over
(its log line).
"""

import argparse
import os
import signal
import subprocess
import sys
import tempfile
import threading
import time

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path[:0] = [os.path.join(HERE, "..", "test"), os.path.join(HERE, "..")]
os.environ["ROS_AUTOMATIC_DISCOVERY_RANGE"] = "LOCALHOST"
os.environ.setdefault("ROS_DOMAIN_ID", str(1 + os.getpid() % 100))

import rclpy  # noqa: E402
from rclpy.executors import SingleThreadedExecutor  # noqa: E402
from trajectory_msgs.msg import JointTrajectory  # noqa: E402

from hod_dynamics.ros.conversions import trajectory_msg  # noqa: E402
from oracles import ERD_ROBOTS, erd_model, erd_path  # noqa: E402


def cpu_seconds(pid):
    """User + system CPU time of a process (s), from /proc/<pid>/stat."""
    with open(f"/proc/{pid}/stat") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def stop(proc, executor, spinner):
    """SIGINT to the node (it exits cleanly), then this client's executor, its thread (one left
    running aborts the interpreter's exit) and rclpy."""
    proc.send_signal(signal.SIGINT)
    proc.wait(timeout=60)
    executor.shutdown()
    spinner.join(timeout=10)
    rclpy.try_shutdown()


def node_command(args, urdf):
    exe = os.path.join(sys.prefix, "lib", "hod_dynamics", "feedforward_node")
    cmd = [exe] if os.access(exe, os.X_OK) else [sys.executable, "-m", "hod_dynamics.ros.feedforward_node"]
    locked = ERD_ROBOTS["panda"][1]
    return cmd + ["--ros-args", "-p", f"urdf_path:={urdf}", "-p", f"publish_rate:={float(args.rate)}",
                  "-p", f"order:={args.order}",
                  "-p", f"locked_joints:=[{','.join(locked)}]",
                  "-p", f"locked_positions:=[{','.join(str(v) for v in locked.values())}]"]


def first_sample(args):
    """Times to readiness, first correct sample and compiled take-over on an empty numba cache."""
    import hod_dynamics as hd

    model = erd_model("panda")
    cache = tempfile.mkdtemp(prefix="numba_cache_")
    rclpy.init()
    node = rclpy.create_node("bench_first_sample")
    got = []
    node.create_subscription(JointTrajectory, "/hod_feedforward/feedforward",
                             lambda m: got.append((time.perf_counter(), m)), 1000)
    pub = node.create_publisher(JointTrajectory, "/hod_feedforward/trajectory", 10)
    executor = SingleThreadedExecutor()
    executor.add_node(node)
    spinner = threading.Thread(target=executor.spin, daemon=True)
    spinner.start()
    times = np.linspace(0.0, 4.0, 5)
    pos = 0.3 * np.sin(np.linspace(0, np.pi, 5))[:, None] * np.ones(model.n_dof) + np.array([0, 0, 0, -1.5, 0, 1.5, 0])
    log = []
    t0, wall0 = time.perf_counter(), time.time()
    # the node holds the trajectory's first point from readiness on (initial_positions), so the
    # first sample it publishes does not wait for this client's DDS discovery
    hold = ["-p", f"initial_positions:=[{','.join(str(v) for v in pos[0])}]"]
    proc = subprocess.Popen(node_command(args, erd_path("panda")) + hold, stdout=subprocess.DEVNULL,
                            stderr=subprocess.PIPE, text=True, env=dict(os.environ, NUMBA_CACHE_DIR=cache))
    threading.Thread(target=lambda: [log.append((time.perf_counter(), line)) for line in proc.stderr],
                     daemon=True).start()
    try:
        while pub.get_subscription_count() == 0 and time.perf_counter() - t0 < 60:
            time.sleep(0.001)
        ready = time.perf_counter()
        pub.publish(trajectory_msg(model.joint_names, times, pos))
        first = stamped = None
        while first is None and time.perf_counter() - t0 < 60:
            for t, m in list(got):
                p = m.points[0]
                tau = hd.inverse_dynamics(model, p.positions, p.velocities, p.accelerations)
                if np.allclose(p.effort, tau, rtol=1e-9, atol=1e-9):
                    # the stamp is the sample's grid time on the node's (system) clock, within
                    # one period of its publication
                    first, stamped = t, m.header.stamp.sec + m.header.stamp.nanosec * 1e-9
                    break
            time.sleep(0.005)
        while not any("takes over" in line for _, line in log) and time.perf_counter() - t0 < 300:
            time.sleep(0.05)
    finally:
        stop(proc, executor, spinner)
    over = next((t for t, line in log if "takes over" in line), None)
    logged = next((t for t, line in log if "ready: serving" in line), None)
    streaming = next((t for t, line in log if "first sample published" in line), None)
    print(f"feedforward_node, Panda (7 DoF), order {args.order}, publish_rate {args.rate:g} Hz, "
          f"empty NUMBA_CACHE_DIR ({cache})")
    print("| event (from starting the process) | time |\n| --- | ---: |")
    print(f"| node logs 'ready: serving' | {logged - t0:.2f} s |" if logged else "| node logs ready | not seen |")
    print(f"| this client sees the subscription on ~/trajectory (DDS discovery) | {ready - t0:.2f} s |")
    if streaming:
        print(f"| node logs 'first sample published' | {streaming - t0:.2f} s |")
    if first:
        print(f"| first correct sample received by this client (after DDS discovery) | {first - t0:.2f} s "
              f"(stamped {stamped - wall0:.2f} s) |")
    else:
        print("| first correct sample | none |")
    print(f"| compiled kernels take over | {over - t0:.2f} s |" if over else "| compiled kernels take over | not seen |")
    print(f"| exit code after SIGINT | {proc.returncode} |")


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rate", type=float, default=1000.0)
    parser.add_argument("--seconds", type=float, default=5.0)
    parser.add_argument("--order", type=int, default=2)
    parser.add_argument("--first-sample", action="store_true",
                        help="time to the first correct sample on an empty numba cache")
    args = parser.parse_args()
    if args.first_sample:
        return first_sample(args)
    model = erd_model("panda")
    proc = subprocess.Popen(node_command(args, erd_path("panda")), stdout=subprocess.DEVNULL,
                            stderr=subprocess.DEVNULL)
    rclpy.init()
    node = rclpy.create_node("bench_client")
    arrivals = []
    stamps = []

    def on_msg(msg):
        arrivals.append(time.perf_counter())
        stamps.append(msg.header.stamp.sec * 1_000_000_000 + msg.header.stamp.nanosec)

    node.create_subscription(JointTrajectory, "/hod_feedforward/feedforward", on_msg, 1000)
    pub = node.create_publisher(JointTrajectory, "/hod_feedforward/trajectory", 10)
    executor = SingleThreadedExecutor()
    executor.add_node(node)
    spinner = threading.Thread(target=executor.spin, daemon=True)
    spinner.start()
    try:
        deadline = time.monotonic() + 30
        while (pub.get_subscription_count() == 0 or node.count_publishers("/hod_feedforward/feedforward") == 0) \
                and time.monotonic() < deadline:
            time.sleep(0.05)
        duration = args.seconds + 2.0
        times = np.linspace(0.0, duration, 6)
        pos = 0.4 * np.sin(np.linspace(0, np.pi, 6))[:, None] * np.ones(model.n_dof) + np.array(
            [0, 0, 0, -1.5, 0, 1.5, 0])
        pub.publish(trajectory_msg(model.joint_names, times, pos))
        time.sleep(1.0)  # warm-up: discovery, first chunks
        n0, cpu0, t0 = len(arrivals), cpu_seconds(proc.pid), time.perf_counter()
        time.sleep(args.seconds)
        n1, cpu1, t1 = len(arrivals), cpu_seconds(proc.pid), time.perf_counter()
    finally:
        stop(proc, executor, spinner)
    window = np.array(arrivals[n0:n1])
    dt = np.diff(window) * 1e3
    dstamp = np.diff(np.array(stamps[n0:n1], dtype=np.int64)) * 1e-6  # ms
    period = 1e3 / args.rate
    print(f"feedforward_node, Panda (7 DoF), order {args.order}, publish_rate {args.rate:g} Hz, "
          f"{args.seconds:g} s window")
    print("| metric | value |\n| --- | ---: |")
    print(f"| sustained receive rate | {(n1 - n0) / (t1 - t0):.1f} Hz |")
    print(f"| message interval median / p99 / max | {np.median(dt):.3f} / {np.percentile(dt, 99):.3f} / "
          f"{dt.max():.3f} ms (period {period:.3f} ms) |")
    print(f"| jitter (std of interval) | {dt.std():.3f} ms |")
    print(f"| stamps on the grid (interval == period) | {100 * np.mean(np.abs(dstamp - period) < 1e-5):.1f} % |")
    print(f"| node CPU | {100 * (cpu1 - cpu0) / (t1 - t0):.1f} % of one core |")


if __name__ == "__main__":
    main()
