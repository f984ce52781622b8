"""The installed executables as processes: shutdown on SIGINT/SIGTERM at any moment, start-up
errors, and readiness on an empty numba cache."""

import os
import queue
import random
import signal
import subprocess
import sys
import tempfile
import threading
import time

import numpy as np
import pytest

from ros_harness import installed_executable, rclpy, ros_env, wait_for

import hod_dynamics as hd  # noqa: E402
from hod_dynamics.ros.conversions import to_seconds, trajectory_msg  # noqa: E402
from rclpy.executors import SingleThreadedExecutor  # noqa: E402
from std_srvs.srv import Trigger  # noqa: E402
from trajectory_msgs.msg import JointTrajectory  # noqa: E402

NS = "/hod_feedforward"
SHARE = os.path.join(sys.prefix, "share", "hod_dynamics")
IIWA = os.path.join(SHARE, "urdf", "iiwa14.urdf")
STOP_SIGNALS = (signal.SIGINT, signal.SIGTERM)


def spawn(cmd, domain, **env):
    """Start ``cmd`` in its own process group (as a terminal or ``ros2 launch`` would signal
    it) in ROS domain ``domain``; stdout/stderr captured.

    SIGINT and SIGTERM are blocked in the spawning thread while it forks, so the child starts
    with them blocked: a signal that lands while the interpreter itself is still starting
    (before the executable's first line, which blocks them anyway) stays pending until the
    node takes it, instead of the kernel's default action ending the bare interpreter.
    """
    environment = dict(ros_env(), ROS_DOMAIN_ID=str(domain), **env)
    old = signal.pthread_sigmask(signal.SIG_BLOCK, STOP_SIGNALS)
    try:
        return subprocess.Popen(cmd, env=environment, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                text=True, start_new_session=True)
    finally:
        signal.pthread_sigmask(signal.SIG_SETMASK, old)


class Client:
    """One client node in its own context and domain, reused by every run there: publishes
    trajectories to the feedforward node, calls ~/compute_profile, subscribes to what the demo
    publisher sends."""

    def __init__(self, domain, listen=True):
        self.context = rclpy.Context()
        rclpy.init(context=self.context, domain_id=domain)
        self.node = rclpy.create_node(f"hod_signal_client_{domain}", context=self.context)
        self.pub = self.node.create_publisher(JointTrajectory, f"{NS}/trajectory", 10)
        if listen:  # the demo publisher sends only to a subscriber
            self.node.create_subscription(JointTrajectory, f"{NS}/trajectory", lambda msg: None, 10)
        self.profile = self.node.create_client(Trigger, f"{NS}/compute_profile")
        self.executor = SingleThreadedExecutor(context=self.context)
        self.executor.add_node(self.node)
        self.thread = threading.Thread(target=self.executor.spin, daemon=True)
        self.thread.start()
        model = hd.RobotModel.from_urdf(IIWA)
        times = np.linspace(0.0, 3.0, 6)
        shape = np.sin(np.linspace(0, np.pi, 6))[:, None] * np.linspace(0.3, 0.6, 7)
        self.message = trajectory_msg(model.joint_names, times, shape)

    def exercise(self, proc, until):
        """Until ``until`` (monotonic s) or the process ends: a trajectory every 50 ms and a
        profile request every 200 ms while the node serves."""
        k = 0
        while time.monotonic() < until and proc.poll() is None:
            if self.pub.get_subscription_count():
                self.pub.publish(self.message)
                if k % 4 == 0 and self.profile.service_is_ready():
                    self.profile.call_async(Trigger.Request())
            k += 1
            time.sleep(min(0.05, max(0.0, until - time.monotonic())))

    def close(self):
        self.executor.shutdown()
        self.thread.join(timeout=10)
        self.node.destroy_node()
        rclpy.try_shutdown(context=self.context)


def _storm_plan(seed=13):
    """120 runs: each executable x (SIGINT, SIGTERM) x 30, at random moments 0..3 s after the
    start; every third feedforward run on an empty numba cache (the signal lands while the
    kernels compile)."""
    rng = random.Random(seed)
    plan = [(exe, sig, rng.uniform(0.0, 3.0), exe == "feedforward_node" and k % 3 == 0)
            for exe in ("feedforward_node", "demo_trajectory_publisher")
            for sig in STOP_SIGNALS for k in range(30)]
    rng.shuffle(plan)
    return plan


def _one_run(client, domain, exe, sig, delay, cold, cache_root):
    """Start, exercise, signal the process group after ``delay`` s; returns a failure text or None."""
    args = ["--ros-args", "-p", f"urdf_path:={IIWA}", "-p", "publish_rate:=200.0",
            "-p", "profile_rate:=20000.0"] if exe == "feedforward_node" else ["--ros-args", "-p", "period:=0.2"]
    env = {"NUMBA_CACHE_DIR": tempfile.mkdtemp(dir=cache_root)} if cold else {}
    start = time.monotonic()
    proc = spawn([installed_executable(exe)] + args, domain, **env)
    client.exercise(proc, start + delay)
    if proc.poll() is None:
        os.killpg(proc.pid, sig)
    try:
        out, err = proc.communicate(timeout=60)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
        out, err = proc.communicate()
        return f"{exe} {sig.name} at {delay:.3f} s: still running 60 s after the signal\n{err[-2000:]}"
    if proc.returncode != 0 or "terminate called" in err or "Traceback" in out + err:
        return f"{exe} {sig.name} at {delay:.3f} s (cold cache: {cold}): exit {proc.returncode}\n{err[-2000:]}"
    return None


def test_every_executable_exits_cleanly_on_120_signals_at_random_moments(tmp_path):
    """SIGINT and SIGTERM to the process group, 30 each per executable, 0..3 s after the start
    (starting, compiling, streaming, computing a profile), while a client publishes
    trajectories and calls ~/compute_profile: every exit is 0, no abort, no traceback. Two
    processes at a time, in this run's domain and the next one."""
    installed_executable("feedforward_node")
    base = int(os.environ["ROS_DOMAIN_ID"])
    domains = (base, base + 1)
    work = queue.Queue()
    for item in _storm_plan():
        work.put(item)
    failures, done = [], []

    def worker(domain):
        signal.pthread_sigmask(signal.SIG_BLOCK, STOP_SIGNALS)
        client = Client(domain)
        try:
            while True:
                try:
                    item = work.get_nowait()
                except queue.Empty:
                    return
                failure = _one_run(client, domain, *item, tmp_path)
                (failures if failure else done).append(failure or item)
        finally:
            client.close()

    threads = [threading.Thread(target=worker, args=(d,)) for d in domains]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not failures, f"{len(failures)} of 120 runs failed:\n" + "\n".join(failures[:5])
    assert len(done) == 120


# -- start-up errors ---------------------------------------------------------------------------------
STARTUP_ERRORS = [  # (executable, ROS arguments, text the FATAL line must hold)
    ("feedforward_node", ["-p", "publish_rate:=1000"],
     "parameter publish_rate: expected a floating-point number (write 500.0, not 500) in [1, 10000] (Hz), "
     "got 1000 (integer)"),
    ("feedforward_node", ["-p", "order:=12"], "parameter order: expected an integer in [0, 8], got 12"),
    ("feedforward_node", ["-p", "effort_rate_limits:=[a, b]"],
     "parameter effort_rate_limits: expected a list of numbers (N m/s), got ['a', 'b']"),
    ("feedforward_node", ["--params-file", "/nonexistent/params.yaml"],
     "--params-file /nonexistent/params.yaml: No such file or directory"),
    ("feedforward_node", ["-p", "urdf_path:=/nonexistent/robot.urdf"],
     "invalid robot model (parameter urdf_path /nonexistent/robot.urdf): URDF file not found"),
    ("feedforward_node", ["-p", f"urdf_path:={IIWA}", "-p", "actuators:=/nonexistent/actuators.yaml"],
     "parameter actuators: actuator configuration: no such file"),
    ("feedforward_node", ["-p", f"urdf_path:={IIWA}", "-p", "initial_positions:=[0.1, 0.2]"],
     "parameter initial_positions: expected 7 values"),
    ("demo_trajectory_publisher", ["-p", "trajectory:=/nonexistent/waypoints.yaml"], "parameter trajectory:"),
    ("demo_trajectory_publisher", ["-p", "period:=-1.0"], "parameter period: expected"),
]


def test_each_startup_error_is_one_fatal_line_and_exit_1(tmp_path):
    """All started at once (they run in parallel): exit 1, exactly one FATAL line naming the
    parameter, nothing else on stderr but INFO lines, no traceback."""
    domain = int(os.environ["ROS_DOMAIN_ID"])
    procs = [spawn([installed_executable(exe), "--ros-args"] + args, domain, PYTHONFAULTHANDLER="1")
             for exe, args, _ in STARTUP_ERRORS]
    for (exe, args, expected), proc in zip(STARTUP_ERRORS, procs):
        out, err = _communicate(proc, 60)
        lines = [line for line in (out + err).splitlines() if line.strip()]
        fatal = [line for line in lines if "[FATAL]" in line]
        assert proc.returncode == 1, (exe, args, proc.returncode, err)
        assert len(fatal) == 1 and expected in fatal[0], (exe, args, lines)
        assert all("[INFO]" in line or line in fatal for line in lines), (exe, args, lines)


def _communicate(proc, timeout):
    """proc.communicate(timeout); a process still running then is aborted with its threads'
    tracebacks (faulthandler) in the failure message."""
    try:
        return proc.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        proc.send_signal(signal.SIGABRT)
        out, err = proc.communicate()
        raise AssertionError(f"{proc.args} still running after {timeout} s:\n{err[-6000:]}") from None


# -- readiness on an empty numba cache -----------------------------------------------------------
def test_serves_correct_samples_from_the_numpy_path_while_the_workers_compile(tmp_path):
    """Empty NUMBA_CACHE_DIR: the node is ready (subscribed to ~/trajectory) and streams on the
    numpy path at once, announces the compile, and its worker processes take over the
    trajectories' points and the profiles when compiled; the node's own process never loads
    numba or LLVM (what held its stream for tens of milliseconds), and every sample is correct,
    before and after. Order of events, not time (bench/bench_node.py measures the stream)."""
    pytest.importorskip("numba")
    exe = installed_executable("feedforward_node")
    client = Client(int(os.environ["ROS_DOMAIN_ID"]), listen=False)
    events, samples = [], []  # (monotonic s, what)
    client.node.create_subscription(JointTrajectory, f"{NS}/feedforward",
                                    lambda m: samples.append((time.monotonic(), m)), 100)
    proc = spawn([exe, "--ros-args", "-p", f"urdf_path:={IIWA}", "-p", "publish_rate:=50.0"],
                 int(os.environ["ROS_DOMAIN_ID"]), NUMBA_CACHE_DIR=str(tmp_path / "numba_cache"))

    def read_log():
        for line in proc.stderr:
            events.append((time.monotonic(), line))

    reader = threading.Thread(target=read_log, daemon=True)
    reader.start()
    try:
        wait_for(lambda: client.pub.get_subscription_count() > 0, 30, "the node to subscribe to ~/trajectory")
        client.pub.publish(client.message)
        wait_for(lambda: any("compiled code takes over" in line for _, line in events), 240,
                 "the compiled kernels in the workers")
        taken_over = next(t for t, line in events if "compiled code takes over" in line)
        client.pub.publish(client.message)  # its points computed by a worker
        wait_for(lambda: samples and samples[-1][0] > taken_over + 0.2, 10, "samples after the take-over")
        with open(f"/proc/{proc.pid}/maps") as f:
            loaded = f.read()
        workers = _children(proc.pid)
    finally:
        os.killpg(proc.pid, signal.SIGINT)
        proc.wait(timeout=60)
        reader.join(timeout=10)
        client.close()
    assert proc.returncode == 0
    assert "llvmlite" not in loaded and "/numba/" not in loaded, "the node's process loaded numba or LLVM"
    assert len(workers) == 3, workers  # the compiling one, the one that computes the points, the stream's
    log = "".join(line for _, line in events)
    # ready and serving on the numpy path before anything is compiled, the compile announced
    order = [log.index(text) for text in ("ready: serving /hod_feedforward/trajectory", "(numpy backend)",
                                          "preparing the compiled kernels (numba) in the worker processes",
                                          "compiling kernels, first use after install",
                                          "compiled code takes over")]
    assert order == sorted(order), log
    before = [m for t, m in samples if t < taken_over]
    after = [m for t, m in samples if t > taken_over + 0.1]
    assert before and after, (len(before), len(after))
    assert "first sample published on /hod_feedforward/feedforward (numpy backend)" in log, log
    model = hd.RobotModel.from_urdf(IIWA)
    for m in before[:5] + before[-5:] + after[-5:]:
        p = m.points[0]
        assert 0.0 <= to_seconds(p.time_from_start)
        tau = hd.inverse_dynamics(model, p.positions, p.velocities, p.accelerations)
        np.testing.assert_allclose(p.effort, tau, rtol=1e-9, atol=1e-9)


# -- Ctrl-C during the largest profile ------------------------------------------------------------
def test_ctrl_c_during_a_million_sample_profile_exits_cleanly_at_once():
    """A 10 s trajectory profiled at 100 kHz (1,000,001 samples, about 430 MB of latched messages:
    allowed by the default size limit) is computed by the worker process while the node streams;
    SIGINT to the process group in the middle ends the node with exit code 0 well before ros2
    launch would escalate (5 s), the worker with it. The time is quoted from bench runs, not
    asserted tightly here."""
    exe = installed_executable("feedforward_node")
    domain = int(os.environ["ROS_DOMAIN_ID"])
    client = Client(domain, listen=False)
    samples = []
    client.node.create_subscription(JointTrajectory, f"{NS}/feedforward", lambda m: samples.append(m), 1000)
    proc = spawn([exe, "--ros-args", "-p", f"urdf_path:={IIWA}", "-p", "publish_rate:=200.0",
                  "-p", "profile_rate:=100000.0"], domain)
    try:
        wait_for(lambda: client.pub.get_subscription_count() > 0, 30, "the node to subscribe to ~/trajectory")
        model = hd.RobotModel.from_urdf(IIWA)
        times = np.linspace(0.0, 10.0, 6)
        pos = 0.3 * np.sin(np.linspace(0, np.pi, 6))[:, None] * np.ones(model.n_dof)
        client.pub.publish(trajectory_msg(model.joint_names, times, pos))
        wait_for(lambda: client.profile.service_is_ready(), 30, "~/compute_profile")
        wait_for(lambda: samples, 30, "the trajectory's first sample")  # taken in: the profile has it
        future = client.profile.call_async(Trigger.Request())
        time.sleep(4.0)  # the worker is computing
        assert not future.done(), future.result()
        workers = _children(proc.pid)
        assert workers, "no worker process"
        streamed = len(samples)
        time.sleep(1.0)
        assert len(samples) - streamed > 100, "the stream stopped during the profile"
        t0 = time.monotonic()
        os.killpg(proc.pid, signal.SIGINT)
        out, err = _communicate(proc, 30)
        elapsed = time.monotonic() - t0
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
        client.close()
    assert proc.returncode == 0 and "Traceback" not in out + err and "terminate called" not in err, err[-3000:]
    assert elapsed < 5.0, elapsed
    wait_for(lambda: not any(_running(pid) for pid in workers), 5, "the worker to end")
    stamps = [m.header.stamp.sec * 10**9 + m.header.stamp.nanosec for m in samples]
    assert len(set(stamps)) == len(stamps)


def _running(pid):
    """True while process ``pid`` exists and is not a zombie waiting to be reaped."""
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().rsplit(")", 1)[1].split()[0] != "Z"
    except OSError:
        return False


def _children(pid):
    """Pids of the child processes of ``pid``, started by any of its threads (Linux /proc)."""
    found = []
    for task in os.listdir(f"/proc/{pid}/task"):
        try:
            with open(f"/proc/{pid}/task/{task}/children") as f:
                found += [int(x) for x in f.read().split()]
        except OSError:
            pass
    return found


# -- the streaming thread's real-time priority ---------------------------------------------------
def _fifo_allowed():
    """Whether this process may put a thread under SCHED_FIFO (a throw-away thread tries)."""
    result = []

    def probe():
        try:
            os.sched_setscheduler(0, os.SCHED_FIFO, os.sched_param(1))
            result.append(True)
        except OSError:
            result.append(False)

    thread = threading.Thread(target=probe)
    thread.start()
    thread.join()
    return result[0]


def _fifo_threads(pid):
    """(tid, priority) of the SCHED_FIFO threads of process ``pid``."""
    found = []
    for tid in os.listdir(f"/proc/{pid}/task"):
        try:
            if os.sched_getscheduler(int(tid)) == os.SCHED_FIFO:
                found.append((int(tid), os.sched_getparam(int(tid)).sched_priority))
        except OSError:
            pass
    return found


def _streaming_node(cmd, domain, samples):
    proc = spawn(cmd + ["--ros-args", "-p", f"urdf_path:={IIWA}", "-p", "publish_rate:=500.0",
                        "-p", "initial_positions:=[0.1,0.2,0.1,-0.5,0.0,0.3,0.0]"], domain)
    wait_for(lambda: len(samples) > 50 or proc.poll() is not None, 60, "the held position's samples")
    assert proc.poll() is None, proc.communicate()[1][-3000:]
    return proc


def test_the_streaming_thread_runs_under_sched_fifo_where_allowed_and_says_so_where_not():
    """Default stream_thread_priority 50: one thread of the node is SCHED_FIFO at 50 (the
    streaming one; no worker process inherits it); without the privilege (CAP_SYS_NICE dropped
    with setpriv, RLIMIT_RTPRIO 0) one WARN line names the parameter, and the node streams."""
    exe = installed_executable("feedforward_node")
    domain = int(os.environ["ROS_DOMAIN_ID"])
    client = Client(domain, listen=False)
    samples = []
    client.node.create_subscription(JointTrajectory, f"{NS}/feedforward", lambda m: samples.append(m), 100)
    runs = []
    if _fifo_allowed():
        runs.append(([exe], True))
    if os.geteuid() != 0 or not os.access("/usr/bin/setpriv", os.X_OK):
        if not runs:
            runs.append(([exe], False))
    else:
        runs.append((["/usr/bin/setpriv", "--bounding-set=-sys_nice", "--inh-caps=-sys_nice", exe], False))
    try:
        for cmd, allowed in runs:
            samples.clear()
            proc = _streaming_node(cmd, domain, samples)
            try:
                fifo = _fifo_threads(proc.pid)
                workers = _children(proc.pid)
                assert workers and not any(_fifo_threads(pid) for pid in workers)
            finally:
                os.killpg(proc.pid, signal.SIGINT)
                out, err = _communicate(proc, 30)
            assert proc.returncode == 0, err[-3000:]
            warning = [line for line in err.splitlines() if "stream_thread_priority: no real-time priority" in line]
            if allowed:
                assert [p for _, p in fifo] == [50], fifo
                assert not warning, err[-3000:]
            else:
                assert fifo == [], fifo
                assert len(warning) == 1 and "[WARN]" in warning[0], err[-3000:]
    finally:
        client.close()
