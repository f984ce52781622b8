"""Real rclpy over real DDS on loopback for the node tests: an executor thread spinning the nodes
under test and a client node, and helpers that wait on conditions instead of sleeping blindly."""

import os
import subprocess
import sys
import threading
import time

import pytest

rclpy = pytest.importorskip("rclpy", reason="rclpy (ros-rclpy wheels) not installed")
from rclpy.executors import SingleThreadedExecutor  # noqa: E402
from rclpy.qos import DurabilityPolicy, QoSProfile, ReliabilityPolicy  # noqa: E402

LATCHED = QoSProfile(depth=1, durability=DurabilityPolicy.TRANSIENT_LOCAL, reliability=ReliabilityPolicy.RELIABLE)


def wait_for(predicate, timeout=10.0, what="condition", poll=0.002):
    """Poll ``predicate`` until true; fail the test naming ``what`` after ``timeout`` s."""
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        if predicate():
            return
        time.sleep(poll)
    raise AssertionError(f"timed out after {timeout} s waiting for {what}")


class Harness:
    """Spins each node under test in its own executor thread, as its own process would, and a
    plain ``client`` node (test publishers/subscribers) in another."""

    def __init__(self, context):
        self.context = context
        self.client = rclpy.create_node("hod_test_client", context=context)
        self.received = {}
        self.actions = []  # action servers and clients: rclpy's destroy_node leaves them (and the node) alive
        self._spinning = []
        self._spin(self.client, SingleThreadedExecutor(context=context))

    def _spin(self, node, executor):
        executor.add_node(node)
        thread = threading.Thread(target=executor.spin, daemon=True)
        thread.start()
        self._spinning.append((node, executor, thread))

    def add(self, node):
        """Spin ``node`` (e.g. a FeedforwardNode) with its own executor, as main() does."""
        self._spin(node, SingleThreadedExecutor(context=self.context))
        return node

    def collect(self, msg_type, topic, qos=100):
        """Subscribe and append every message to ``self.received[topic]``."""
        box = self.received.setdefault(topic, [])
        self.client.create_subscription(msg_type, topic, box.append, qos)
        return box

    def publisher(self, msg_type, topic, qos=10, matched=True):
        pub = self.client.create_publisher(msg_type, topic, qos)
        if matched:
            wait_for(lambda: pub.get_subscription_count() > 0, 15, f"a subscriber on {topic}")
        return pub

    def call(self, srv_type, name, request, timeout=30.0):
        cli = self.client.create_client(srv_type, name)
        assert cli.wait_for_service(timeout_sec=15), f"service {name} not available"
        future = cli.call_async(request)
        wait_for(future.done, timeout, f"the answer of {name}")
        return future.result()

    def close(self):
        for _, executor, _ in self._spinning:
            executor.shutdown()
        for node, _, thread in reversed(self._spinning):
            thread.join(timeout=10)
        for action in self.actions:
            action.destroy()
        for node, _, _ in reversed(self._spinning):
            node.destroy_node()


def feedforward_node(harness, cli_args=None, **params):
    """A FeedforwardNode spun by ``harness`` with parameters ``params`` (the shipped iiwa14 as
    robot_description unless given) and ROS arguments ``cli_args`` (remappings)."""
    import hod_dynamics as hd
    from hod_dynamics.ros.feedforward_node import FeedforwardNode
    from rclpy.parameter import Parameter

    if "robot_description" not in params and "urdf_path" not in params:
        with open(hd.robot_path("iiwa14"), encoding="utf-8") as f:
            params["robot_description"] = f.read()
    # the tests' motions are faster than the iiwa's velocity limits (joint 1: 1.48 rad/s): streamed
    # with a warning unless a test asks for the default, which refuses them
    params.setdefault("on_limit_violation", "warn")
    overrides = [Parameter(k, value=v) for k, v in params.items()]
    return harness.add(FeedforwardNode(context=harness.context, parameter_overrides=overrides,
                                       cli_args=cli_args))


def refused_start(**params):
    """The exception of a FeedforwardNode that cannot start with parameters ``params``, built in
    a context of its own that is shut down at once. A refused node is half built: its
    parameter services and publishers are in the graph, never spun, and a client of the next
    test may send its request there instead of to the node it started (no answer, ever). In a
    shared context a refused node stays until the module's end, and there rclpy's shutdown
    destroys only every second of the nodes it tracks (rclpy 9.1.2: ``Context._cleanup`` iterates
    the list that each ``destroy_node`` shortens); alone in its context it is destroyed."""
    from hod_dynamics.ros.feedforward_node import FeedforwardNode
    from rclpy.parameter import Parameter

    ctx = rclpy.Context()
    rclpy.init(context=ctx)
    try:
        FeedforwardNode(context=ctx, parameter_overrides=[Parameter(k, value=v) for k, v in params.items()])
    except Exception as exc:
        return exc
    finally:
        rclpy.try_shutdown(context=ctx)
    raise AssertionError(f"the node started with {params}")


@pytest.fixture(scope="module")
def context():
    """An rclpy context for a test module (import this fixture with ``harness``)."""
    ctx = rclpy.Context()
    rclpy.init(context=ctx)
    yield ctx
    rclpy.try_shutdown(context=ctx)


@pytest.fixture
def harness(context):
    """A :class:`Harness` for one test, closed after it."""
    h = Harness(context)
    yield h
    h.close()


def ros_env():
    """Environment for a node process: loopback discovery, this test run's domain."""
    env = dict(os.environ)
    env["ROS_AUTOMATIC_DISCOVERY_RANGE"] = "LOCALHOST"
    env.setdefault("AMENT_PREFIX_PATH", sys.prefix)
    return env


def installed_executable(name):
    """``<venv>/lib/hod_dynamics/<name>`` of a pip install (skip the test when absent)."""
    path = os.path.join(sys.prefix, "lib", "hod_dynamics", name)
    if not os.access(path, os.X_OK):
        pytest.skip(f"{path} is missing: hod_dynamics is not pip-installed here (README test command)")
    return path


def start_process(cmd):
    return subprocess.Popen(cmd, env=ros_env(), stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
