"""Benchmark: the feedforward node's stream (order 2, default 1 kHz) as a subscriber receives it.

Starts ``feedforward_node`` as its own process (the installed executable if present, else
``python -m hod_dynamics_nodes feedforward_node``) for each phase, sends a rest-to-rest
trajectory, and measures in this process:

Arrival is the time this subscriber's DDS layer received a message (rclpy's MessageInfo
``received_timestamp``, wall clock): what a controller's subscriber would get, without the
delays of this Python client's executor (a millisecond now and then on two cores). The
subscriber's threads run under SCHED_FIFO where the system allows it, as a ros2_control
controller's do (said in the header line: without it, a woken receiving thread may wait
milliseconds for a core on a busy two-core computer, and the wait is counted as the node's).

- **rate**: messages received per second of the window;
- **interval p99 / max**: of the arrival intervals (ms);
- **late**: messages that arrived more than one period after their stamp (the stamp is the
  sample's grid time on the node's clock, the system clock here too);
- **duplicates**: messages whose stamp was received before;
- **on grid**: consecutive stamps exactly one period apart;
- **on time**: of the grid points from the window's first stamp to its last, those received
  within one period of their stamp (a point dropped by the node, or late, is not);
- **CPU**: of the node's process (and of its worker process), % of one core.

Phases (``--phases``, default all three):

- ``warm``: numba's cache filled, the compiled kernels serving;
- ``fresh``: an empty ``NUMBA_CACHE_DIR`` (a first start after an install): the first
  ``--fresh-seconds`` (20) of the stream, from the first trajectory on, sent as soon as the node
  is ready. The model comes by the robot_description topic (as from robot_state_publisher) once
  DDS discovery is done, so that the compile, which starts with the model, falls in the window
  (discovery on loopback takes 0.1-3.5 s: with the model by parameter the kernels were often
  ready before the first trajectory);
- ``profile``: warm, while ``~/compute_profile`` computes a ``--profile-seconds`` trajectory at
  100 kHz (files written), measured from the call to its answer.

``--first-sample``: instead, the start on an empty cache: times to readiness, to the first
correct sample and to the compiled take-over. ``--ctrl-c N``: instead, N runs of ``ros2 launch
hod_dynamics feedforward.launch.py`` interrupted (SIGINT to the process group, as a terminal's
Ctrl-C) while a 100 kHz profile is computed: exit codes and times; with ``--while-accepting``,
interrupted while a trajectory of 60,001 waypoints is being taken in.

``--accept``: instead, trajectories of 101, 1,001, 6,001 and 60,001 waypoints of a planner (100 Hz,
positions, velocities and accelerations) sent to one node, warm, each three times: the node's own
processing time (median, smallest, largest; from its log: decoding, spline, points for a
controller, URDF limits), the time from publishing to receiving its
``~/trajectory_with_effort`` here, and the node process's peak
resident memory after each (VmHWM); then the same trajectory again with ``ros2 param get``
started beside it: how long the parameter service took to answer meanwhile (the CLI's own
start-up included). Timed alone first: on two cores the CLI's start-up (a second of Python)
would take the processor from the node's work it is meant to watch.

The robot is the shipped KUKA iiwa 14 (7 joints); ``--robot panda`` uses example-robot-data's
Panda (fingers locked) when example-robot-data-loaders is installed. A line at the start times one
sample of tau, tau', tau'' here and, when Pinocchio is installed, its ``rnea`` (tau only) for scale.
Timing needs a quiet computer: the load average is printed with the results.

    python bench/bench_node.py [--rate 1000] [--seconds 10] [--phases warm fresh profile]
"""

import argparse
import gc
import glob
import os
import shutil
import signal
import struct
import subprocess
import sys
import tempfile
import threading
import time

import numpy as np

os.environ["ROS_AUTOMATIC_DISCOVERY_RANGE"] = "LOCALHOST"
os.environ.setdefault("ROS_DOMAIN_ID", str(100 + os.getpid() % 100))
NS = "/hod_feedforward"
STAMP = struct.Struct("<iI")  # builtin_interfaces/Time in little-endian CDR (the encapsulation x86 hosts write)
PANDA_LOCKED = {"panda_finger_joint1": 0.01, "panda_finger_joint2": 0.01}


def robot(name):
    """(URDF path, locked joints {name: position}) of the benchmarked robot; exits with one line
    when example-robot-data is missing for the Panda."""
    import hod_dynamics as hd

    if name == "iiwa14":
        return hd.robot_path("iiwa14"), {}
    hits = glob.glob(os.path.join(sys.prefix, "lib", "python3*", "site-packages", "cmeel.prefix", "share",
                                  "example-robot-data", "robots", "panda_description", "urdf", "panda.urdf"))
    if not hits:
        sys.exit("bench_node.py: --robot panda needs example-robot-data "
                 "(pip install example-robot-data-loaders==5.0.0); the default --robot iiwa14 needs nothing more")
    return hits[0], PANDA_LOCKED


def cpu_seconds(pid):
    """User + system CPU time of a process (s), from /proc/<pid>/stat; 0 once it has ended."""
    try:
        with open(f"/proc/{pid}/stat") as f:
            fields = f.read().rsplit(")", 1)[1].split()
    except OSError:
        return 0.0
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def children(pid):
    found = []
    for task in glob.glob(f"/proc/{pid}/task/*/children"):
        try:
            with open(task) as f:
                found += [int(x) for x in f.read().split()]
        except OSError:
            pass
    return found


def node_command(args, urdf, locked, extra=()):
    """The node's command line; ``urdf`` None: the model from the robot_description topic."""
    exe = os.path.join(sys.prefix, "lib", "hod_dynamics", "feedforward_node")
    cmd = [exe] if os.access(exe, os.X_OK) else [sys.executable, "-m", "hod_dynamics_nodes", "feedforward_node"]
    cmd += ["--ros-args", "-p", f"publish_rate:={float(args.rate)}", "-p", f"order:={args.order}"]
    if urdf is not None:
        cmd += ["-p", f"urdf_path:={urdf}"]
    if locked:
        cmd += ["-p", f"locked_joints:=[{','.join(locked)}]",
                "-p", f"locked_positions:=[{','.join(str(float(v)) for v in locked.values())}]"]
    return cmd + list(extra)


class Client:
    """This process's ROS side: a subscriber to ~/feedforward (arrival time, stamp; unless not
    ``listen``), a publisher of trajectories, the profile service's client, spun in a thread."""

    def __init__(self, listen=True):
        import rclpy
        from rclpy.executors import SingleThreadedExecutor
        from std_srvs.srv import Trigger
        from trajectory_msgs.msg import JointTrajectory

        self.rclpy, self.Trigger = rclpy, Trigger
        rclpy.init()
        self.node = rclpy.create_node("bench_node_client")
        self.arrivals = []  # (wall time s, stamp ns)
        if listen:  # 1,000 Python callbacks a second, as cheap as they can be: the messages kept
            # serialised (the stamp read from its bytes), the arrival the time DDS received each,
            # so that this instrument's own delays (its executor, its garbage collector) are not
            # taken for the node's
            self.node.create_subscription(JointTrajectory, f"{NS}/feedforward", self._on_sample, 1000, raw=True)
        self.pub = self.node.create_publisher(JointTrajectory, f"{NS}/trajectory", 10)
        self.profile = self.node.create_client(Trigger, f"{NS}/compute_profile")
        self.executor = SingleThreadedExecutor()
        self.executor.add_node(self.node)
        self.thread = threading.Thread(target=self.executor.spin, daemon=True)
        gc.freeze()  # what is loaded by now is never collected: a full collection would stall the
        self.thread.start()  # callbacks for tens of milliseconds (rclpy, numpy and more are loaded)
        self.realtime = listen and realtime_threads()

    def _on_sample(self, raw, info):
        sec, nanosec = STAMP.unpack_from(raw, 4)  # after the CDR encapsulation header: header.stamp
        received = info["received_timestamp"] * 1e-9 or time.time()  # by DDS, before Python's executor
        self.arrivals.append((received, sec * 1_000_000_000 + nanosec))

    def wait_ready(self, proc, timeout=60):
        end = time.monotonic() + timeout
        while self.pub.get_subscription_count() == 0 or self.node.count_publishers(f"{NS}/feedforward") == 0:
            if time.monotonic() > end or proc.poll() is not None:
                raise SystemExit(f"bench_node.py: the node did not become ready (exit code {proc.poll()})")
            time.sleep(0.02)

    def describe(self, proc, urdf_text, timeout=60):
        """Publish ``urdf_text`` on /robot_description (transient local, as robot_state_publisher
        does) once the node has subscribed to it: DDS discovery done, the node gets its model
        (and starts compiling) now."""
        from rclpy.qos import DurabilityPolicy, QoSProfile
        from std_msgs.msg import String

        pub = self.node.create_publisher(String, "/robot_description",
                                         QoSProfile(depth=1, durability=DurabilityPolicy.TRANSIENT_LOCAL))
        end = time.monotonic() + timeout
        while pub.get_subscription_count() == 0:
            if time.monotonic() > end or proc.poll() is not None:
                raise SystemExit(f"bench_node.py: the node did not subscribe to /robot_description "
                                 f"(exit code {proc.poll()})")
            time.sleep(0.02)
        pub.publish(String(data=urdf_text))
        self.description = pub  # kept until the next node: a late joiner still gets the model

    def wait_gone(self, timeout=30):
        """Until discovery has forgotten the last node (the next one is not mistaken for it)."""
        end = time.monotonic() + timeout
        while (self.pub.get_subscription_count() or self.node.count_publishers(f"{NS}/feedforward")) \
                and time.monotonic() < end:
            time.sleep(0.05)

    def send_raw(self, raw):
        """Publish a serialised JointTrajectory (bytes)."""
        self.pub.publish(raw)

    def send(self, model, duration):
        from hod_dynamics.ros.conversions import trajectory_msg

        times = np.linspace(0.0, duration, 8)
        home = np.where(np.arange(model.n_dof) % 2 == 1, 0.6, 0.0)
        pos = home + 0.4 * np.sin(np.linspace(0, np.pi, 8))[:, None] * np.linspace(0.5, 1.0, model.n_dof)
        self.pub.publish(trajectory_msg(model.joint_names, times, pos))

    def close(self):
        self.executor.shutdown()
        self.thread.join(timeout=10)
        self.rclpy.try_shutdown()


def realtime_threads(priority=40):
    """SCHED_FIFO for this process's threads but the main one (whose children, the nodes, would
    inherit it), DDS's receiving threads among them, as a ros2_control controller manager's
    real-time thread: True, or False where the system does not allow it."""
    ok = True
    for tid in os.listdir("/proc/self/task"):
        if int(tid) != os.getpid():
            try:
                os.sched_setscheduler(int(tid), os.SCHED_FIFO, os.sched_param(priority))
            except OSError:
                ok = False
    return ok


def start(cmd, env=None):
    """The node as its own process, stderr collected with arrival times (its log lines)."""
    proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True,
                            env=dict(os.environ, **(env or {})), start_new_session=True)
    proc.log = []
    threading.Thread(target=lambda: [proc.log.append((time.monotonic(), line)) for line in proc.stderr],
                     daemon=True).start()
    return proc


def stop(proc):
    os.killpg(proc.pid, signal.SIGINT)
    proc.wait(timeout=60)


def logged(proc, text):
    return next((t for t, line in proc.log if text in line), None)


def stream_metrics(arrivals, period_ns, cpu):
    """The table row of a window of (arrival s, stamp ns)."""
    if len(arrivals) < 3:
        return dict(rate="-", p99="-", late="-", duplicates="-", grid="-", on_time="-", cpu=cpu)
    t = np.array([a for a, _ in arrivals])
    stamps = np.array([s for _, s in arrivals], dtype=np.int64)
    dt = np.diff(t) * 1e3
    seen, duplicates = set(), 0
    for s in stamps:
        duplicates += s in seen
        seen.add(s)
    in_time = t - stamps * 1e-9 <= period_ns * 1e-9
    grid_points = (stamps.max() - stamps.min()) // period_ns + 1
    on_time = len(set(stamps[in_time].tolist())) / grid_points
    return dict(rate=f"{(len(t) - 1) / (t[-1] - t[0]):.1f} Hz",
                p99=f"{np.percentile(dt, 99):.2f} / {dt.max():.1f} ms",
                late=f"{100 * (1 - in_time.mean()):.2f} %", duplicates=f"{duplicates} of {len(t)}",
                grid=f"{100 * np.mean(np.diff(stamps) == period_ns):.1f} %", on_time=f"{100 * on_time:.2f} %",
                cpu=cpu)


def phase_warm(args, client, model, urdf, locked):
    proc = start(node_command(args, urdf, locked))
    try:
        client.wait_ready(proc)
        while not logged(proc, "takes over") and proc.poll() is None:  # warm cache: loaded in a second
            time.sleep(0.1)
        client.send(model, args.seconds + 4.0)
        time.sleep(2.0)  # the first chunks, discovery settled
        n0, c0, w0 = len(client.arrivals), cpu_seconds(proc.pid), time.monotonic()
        time.sleep(args.seconds)
        n1, c1, w1 = len(client.arrivals), cpu_seconds(proc.pid), time.monotonic()
    finally:
        stop(proc)
    return stream_metrics(client.arrivals[n0:n1], round(1e9 / args.rate), f"{100 * (c1 - c0) / (w1 - w0):.1f} %")


def phase_fresh(args, client, model, urdf, locked):
    cache = tempfile.mkdtemp(prefix="numba_cache_")
    proc = start(node_command(args, None, locked), env={"NUMBA_CACHE_DIR": cache})
    try:
        # the model by topic once the node and this client know each other: the compile, which
        # starts with the model, then falls inside the window however long discovery takes
        with open(urdf, encoding="utf-8") as f:
            client.describe(proc, f.read())
        client.wait_ready(proc)
        n0, c0, w0 = len(client.arrivals), cpu_seconds(proc.pid), time.monotonic()
        client.send(model, 120.0)
        worker_cpu = 0.0
        while proc.poll() is None and time.monotonic() - w0 < args.fresh_seconds:
            worker_cpu = max(worker_cpu, sum(cpu_seconds(pid) for pid in children(proc.pid)))
            time.sleep(0.2)
        over = logged(proc, "takes over")
        n1, c1, w1 = len(client.arrivals), cpu_seconds(proc.pid), time.monotonic()
    finally:
        stop(proc)
        shutil.rmtree(cache, ignore_errors=True)
    row = stream_metrics(client.arrivals[n0:n1], round(1e9 / args.rate),
                         f"{100 * (c1 - c0) / (w1 - w0):.1f} % (+ workers {worker_cpu:.1f} s)")
    if over:  # the kernels compile in the worker from the start: they may be ready before the trajectory
        lag = over - w0
        row["note"] = f"kernels took over {abs(lag):.1f} s {'after' if lag >= 0 else 'before'} the first trajectory"
    else:
        row["note"] = f"no take-over in {args.fresh_seconds:g} s"
    return row


def phase_profile(args, client, model, urdf, locked):
    folder = tempfile.mkdtemp(prefix="bench_profiles_")
    proc = start(node_command(args, urdf, locked, ["-p", "profile_rate:=100000.0", "-p", f"profile_dir:={folder}"]))
    try:
        client.wait_ready(proc)
        while not logged(proc, "takes over") and proc.poll() is None:
            time.sleep(0.1)
        client.send(model, args.profile_seconds)
        time.sleep(1.0)
        if not client.profile.wait_for_service(timeout_sec=30):
            raise SystemExit("bench_node.py: ~/compute_profile not available")
        n0, c0, w0 = len(client.arrivals), cpu_seconds(proc.pid), time.monotonic()
        future = client.profile.call_async(client.Trigger.Request())
        worker = 0.0
        while not future.done() and time.monotonic() - w0 < 600:
            worker = max(worker, sum(cpu_seconds(pid) for pid in children(proc.pid)))
            time.sleep(0.1)
        n1, c1, w1 = len(client.arrivals), cpu_seconds(proc.pid), time.monotonic()
        answer = future.result()
    finally:
        stop(proc)
        shutil.rmtree(folder, ignore_errors=True)
    row = stream_metrics(client.arrivals[n0:n1], round(1e9 / args.rate),
                         f"{100 * (c1 - c0) / (w1 - w0):.1f} % (+ worker {worker:.0f} s)")
    samples = int(args.profile_seconds * 100000) + 1
    row["note"] = (f"{samples} samples in {w1 - w0:.1f} s" if answer is not None and answer.success
                   else f"profile failed: {answer.message if answer else 'no answer'}")
    return row


def library_line(urdf, locked):
    """One sample of tau, tau', tau'' here, and Pinocchio's rnea when installed, for scale."""
    import hod_dynamics as hd

    model = hd.RobotModel.from_urdf(urdf, locked_joints=locked or None)
    jet = np.random.default_rng(0).normal(size=(1, 5, model.n_dof))
    hd.time_derivatives(model, jet, 2)
    t0 = time.perf_counter()
    for _ in range(2000):
        hd.time_derivatives(model, jet, 2)
    ours = (time.perf_counter() - t0) / 2000 * 1e6
    try:
        import pinocchio as pin
    except ImportError:
        return model, f"one sample of tau, tau', tau'' here: {ours:.1f} us (Pinocchio not installed)"
    pmodel = pin.buildModelFromUrdf(urdf)
    if locked:
        ids = [pmodel.getJointId(name) for name in locked]
        pmodel = pin.buildReducedModel(pmodel, ids, pin.neutral(pmodel))
    data = pmodel.createData()
    q, v, a = pin.neutral(pmodel), np.zeros(pmodel.nv), np.zeros(pmodel.nv)
    t0 = time.perf_counter()
    for _ in range(2000):
        pin.rnea(pmodel, data, q, v, a)
    theirs = (time.perf_counter() - t0) / 2000 * 1e6
    return model, (f"one sample of tau, tau', tau'' here: {ours:.1f} us; Pinocchio rnea (tau only): "
                   f"{theirs:.1f} us (ratio {ours / theirs:.1f})")


def first_sample(args, urdf, locked):
    """Times to readiness, first correct sample and compiled take-over on an empty numba cache."""
    import hod_dynamics as hd

    model = hd.RobotModel.from_urdf(urdf, locked_joints=locked or None)
    cache = tempfile.mkdtemp(prefix="numba_cache_")
    client = Client()
    hold = np.where(np.arange(model.n_dof) % 2 == 1, 0.6, 0.0)
    t0, wall0 = time.monotonic(), time.time()
    proc = start(node_command(args, urdf, locked, ["-p", f"initial_positions:=[{','.join(map(str, hold))}]"]),
                 env={"NUMBA_CACHE_DIR": cache})
    try:
        client.wait_ready(proc)
        ready = time.monotonic()
        while not client.arrivals and time.monotonic() - t0 < 60:
            time.sleep(0.005)
        first = time.monotonic() if client.arrivals else None
        while not logged(proc, "takes over") and time.monotonic() - t0 < 300:
            time.sleep(0.05)
    finally:
        stop(proc)
        client.close()
        shutil.rmtree(cache, ignore_errors=True)
    print(f"feedforward_node, {model.name} ({model.n_dof} DoF), order {args.order}, {args.rate:g} Hz, "
          f"empty NUMBA_CACHE_DIR; load average {os.getloadavg()[0]:.2f}")
    print("| event (from starting the process) | time |\n| --- | ---: |")
    for label, at in (("node logs 'ready: serving'", logged(proc, "ready: serving")),
                      ("this client sees the subscription (DDS discovery)", ready),
                      ("node logs 'first sample published'", logged(proc, "first sample published")),
                      ("first sample received here", first),
                      ("compiled kernels take over", logged(proc, "takes over"))):
        print(f"| {label} | {at - t0:.2f} s |" if at else f"| {label} | not seen |")
    if client.arrivals:
        print(f"| first sample's stamp | {client.arrivals[0][1] * 1e-9 - wall0:.2f} s |")
    print(f"| exit code after SIGINT | {proc.returncode} |")


def ctrl_c(args):
    """N ros2 launch runs interrupted while a 100 kHz profile computes."""
    ros2 = shutil.which("ros2", path=os.path.dirname(sys.executable)) or shutil.which("ros2")
    if ros2 is None:
        sys.exit("bench_node.py: --ctrl-c needs ros2 launch (ros2launch, launch_ros); see the ROS 2 interface page")
    import hod_dynamics as hd

    model = hd.load_robot("iiwa14")
    client = Client()
    rng = np.random.default_rng(7)
    big = planner_trajectory(model, 60001) if args.while_accepting else None
    rows = []
    try:
        for run in range(args.ctrl_c):
            proc = subprocess.Popen([ros2, "launch", "hod_dynamics", "feedforward.launch.py", "urdf:=iiwa14"],
                                    stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                                    start_new_session=True)
            client.wait_ready(proc)
            if args.while_accepting:
                client.send_raw(big)
                time.sleep(float(rng.uniform(0.05, 0.4)))  # while the node decodes and takes it in
                computing = True
            else:
                set_profile_rate(client, 100000.0)
                client.send(model, 10.0)
                time.sleep(0.5)
                client.profile.wait_for_service(timeout_sec=30)
                future = client.profile.call_async(client.Trigger.Request())
                time.sleep(float(rng.uniform(1.0, 6.0)))
                computing = not future.done()
            t0 = time.monotonic()
            os.killpg(proc.pid, signal.SIGINT)
            out, _ = proc.communicate(timeout=60)
            elapsed = time.monotonic() - t0
            clean = "process has finished cleanly" in out and "has died" not in out
            rows.append((run + 1, computing, proc.returncode, elapsed, clean))
            client.wait_gone()
            print(f"| {run + 1} | {'yes' if computing else 'no'} | {proc.returncode} | {elapsed:.2f} s | "
                  f"{'yes' if clean else 'NO'} |", flush=True)
    finally:
        client.close()
    limit = 1.0 if args.while_accepting else 2.0
    good = sum(code == 0 and clean and t < limit for _, _, code, t, clean in rows)
    print(f"{good} of {len(rows)} clean exits within {limit:g} s; load average {os.getloadavg()[0]:.2f}")


def planner_trajectory(model, points, dt=0.01):
    """A planner's trajectory as the node receives it, serialised: ``points`` waypoints ``dt``
    s apart with positions, velocities and accelerations (a slow sweep of every joint, at rest
    at both ends)."""
    from hod_dynamics.recordings.trajectory_cdr import encode_joint_trajectory

    t = np.arange(points) * dt
    envelope = np.sin(np.pi * np.arange(points) / (points - 1)) ** 2
    q = 0.2 + 0.3 * np.sin(2 * np.pi * t / 20.0)[:, None] * envelope[:, None] * np.linspace(0.5, 1.0, model.n_dof)
    v = np.gradient(q, t, axis=0)
    a = np.gradient(v, t, axis=0)
    v[[0, -1]] = a[[0, -1]] = 0.0
    return encode_joint_trajectory(model.joint_names, np.round(t * 1e9).astype(np.int64), q, v, a)


def peak_memory(pid):
    """Peak resident memory of a process (MB), VmHWM of /proc/<pid>/status."""
    with open(f"/proc/{pid}/status") as f:
        return next(int(line.split()[1]) / 1024 for line in f if line.startswith("VmHWM"))


SENDS = 3  # of each trajectory, timed: one send's time on a shared machine is a draw, not a measurement


def send_and_wait(client, proc, raw, received):
    """Publish the serialised trajectory ``raw`` and wait for its points to come back on
    ``received``: (the node's processing time from its log line, s from publishing to
    receiving here); then a second's rest."""
    n0, lines = len(received), len(proc.log)
    t0 = time.monotonic()
    client.send_raw(raw)
    while len(received) == n0 and time.monotonic() - t0 < 120:
        time.sleep(0.002)
    back = received[-1] - t0 if len(received) > n0 else None
    took = [line for _, line in proc.log[lines:] if "accepted a trajectory" in line]
    time.sleep(1.0)
    return (float(took[-1].rsplit(" in ", 1)[1].split()[0]) if took else None), back


def accept(args, urdf, locked):
    """The table of ``--accept`` (see the module docstring)."""
    import hod_dynamics as hd
    from trajectory_msgs.msg import JointTrajectory

    model = hd.RobotModel.from_urdf(urdf, locked_joints=locked or None)
    client = Client(listen=False)  # the stream is not what this measures
    received = []
    client.node.create_subscription(JointTrajectory, f"{NS}/trajectory_with_effort",
                                    lambda msg: received.append(time.monotonic()), 10, raw=True)
    proc = start(node_command(args, urdf, locked, ["-p", "on_limit_violation:=warn",
                                                   "--log-level", "hod_feedforward:=debug"]))
    rows = []
    try:
        client.wait_ready(proc)
        while not logged(proc, "takes over") and proc.poll() is None:
            time.sleep(0.1)
        time.sleep(1.0)
        for points in (101, 1001, 6001, 60001):
            raw = planner_trajectory(model, points)
            timed = [send_and_wait(client, proc, raw, received) for _ in range(SENDS)]
            seconds = [s for s, _ in timed if s is not None]
            back = [b for _, b in timed if b is not None]
            param = None
            if shutil.which("ros2"):
                t0 = time.monotonic()
                asking = subprocess.Popen(["ros2", "param", "get", NS, "order"], stdout=subprocess.DEVNULL,
                                          stderr=subprocess.DEVNULL)
                send_and_wait(client, proc, raw, received)
                param = (asking.wait(timeout=60), time.monotonic() - t0)
            rows.append((points, len(raw) / 1e6, seconds, back, peak_memory(proc.pid), param))
    finally:
        stop(proc)
        client.close()
    print(f"feedforward_node, {model.name} ({model.n_dof} DoF): trajectories taken in, warm; load average "
          f"{os.getloadavg()[0]:.2f} {os.getloadavg()[1]:.2f}")
    print("| waypoints | message | node processing | publish -> ~/trajectory_with_effort here | node peak RSS |"
          " ros2 param get while the same is taken in again |\n| ---: | ---: | ---: | ---: | ---: | --- |")
    for points, mb, seconds, back, peak, param in rows:
        answer = "not run (no ros2)" if param is None else f"exit {param[0]} after {param[1]:.2f} s"
        print(f"| {points:,} | {mb:.1f} MB | {spread(seconds)} | {spread(back)} | {peak:.0f} MB | {answer} |")
    print(f"(each time: the median of {SENDS} sends, with the smallest and the largest)")


def spread(values):
    """'median s (min - max)' of ``values`` (s), '-' when there are none."""
    if not values:
        return "-"
    return f"{np.median(values):.3f} s ({min(values):.3f} - {max(values):.3f})"


def set_profile_rate(client, rate):
    from rcl_interfaces.msg import Parameter, ParameterType, ParameterValue
    from rcl_interfaces.srv import SetParameters

    cli = client.node.create_client(SetParameters, f"{NS}/set_parameters")
    cli.wait_for_service(timeout_sec=30)
    value = ParameterValue(type=ParameterType.PARAMETER_DOUBLE, double_value=rate)
    future = cli.call_async(SetParameters.Request(parameters=[Parameter(name="profile_rate", value=value)]))
    while not future.done():
        time.sleep(0.01)
    client.node.destroy_client(cli)


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rate", type=float, default=1000.0, help="publish_rate (Hz)")
    parser.add_argument("--seconds", type=float, default=10.0, help="measuring window of the warm phase (s)")
    parser.add_argument("--fresh-seconds", type=float, default=20.0,
                        help="measuring window of the fresh phase, from the first trajectory (s)")
    parser.add_argument("--order", type=int, default=2)
    parser.add_argument("--robot", choices=["iiwa14", "panda"], default="iiwa14")
    parser.add_argument("--phases", nargs="+", choices=["warm", "fresh", "profile"], default=["warm", "fresh", "profile"])
    parser.add_argument("--profile-seconds", type=float, default=5.0, help="trajectory profiled at 100 kHz (s)")
    parser.add_argument("--first-sample", action="store_true", help="times to the first sample on an empty cache")
    parser.add_argument("--ctrl-c", type=int, default=0, metavar="N", help="N ros2 launch runs stopped during a profile")
    parser.add_argument("--while-accepting", action="store_true",
                        help="with --ctrl-c: stopped while a 60,001-waypoint trajectory is taken in")
    parser.add_argument("--accept", action="store_true", help="times to take in trajectories of 101 to 60,001 points")
    args = parser.parse_args()
    urdf, locked = robot(args.robot)
    if args.accept:
        return accept(args, urdf, locked)
    if args.first_sample:
        return first_sample(args, urdf, locked)
    if args.ctrl_c:
        print(f"| run | {'trajectory being taken in' if args.while_accepting else 'profile computing'} | ros2 launch exit "
              "| exit after Ctrl-C | both processes clean |\n| ---: | --- | ---: | ---: | --- |")
        return ctrl_c(args)
    model, line = library_line(urdf, locked)
    client = Client()
    rows = {}
    try:
        for phase in args.phases:
            rows[phase] = globals()[f"phase_{phase}"](args, client, model, urdf, locked)
            client.wait_gone()
    finally:
        client.close()
    print(f"feedforward_node, {model.name} ({model.n_dof} DoF), order {args.order}, publish_rate {args.rate:g} Hz; "
          f"load average {os.getloadavg()[0]:.2f} {os.getloadavg()[1]:.2f}; subscriber "
          f"{'SCHED_FIFO' if client.realtime else 'at the normal priority'}; {line}")
    print("| phase | rate | interval p99 / max | late | duplicates | on grid | on time | node CPU (% of a core) | note |\n"
          "| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | --- |")
    for phase, row in rows.items():
        print(f"| {phase} | {row['rate']} | {row['p99']} | {row['late']} | {row['duplicates']} | {row['grid']} | "
              f"{row['on_time']} | {row['cpu']} | {row.get('note', '')} |")


if __name__ == "__main__":
    main()
