"""``feedforward_node`` (node ``hod_feedforward``): tau and its time derivatives, and motor
references of elastic joints, streamed at the control rate along the planned trajectory, and
every trajectory resampled with its torques for ros2_control's joint_trajectory_controller.

Interface (``~`` = the node's namespace, see doc/ros2_interface.md for types and units):

- robot model from parameter ``robot_description`` (URDF XML), else parameter ``urdf_path``,
  else topic ``robot_description`` (relative: ``/robot_description`` without a namespace;
  std_msgs/String, transient local);
- once it has a model it is *ready*: it subscribes ``~/trajectory``
  (trajectory_msgs/JointTrajectory) and offers the service ``~/compute_profile``
  (std_srvs/Trigger, publishing ``~/torque_profile`` and ``~/torque_profile_derivatives``,
  transient local); with numba, the compiled kernels are prepared in the background (compiled
  by the worker process on an empty cache) and take over from the numpy path when ready;
- publishes ``~/feedforward``, ``~/torque_derivatives``, ``~/motor_reference``,
  ``~/motor_derivatives``, ``~/effort_command`` (only while ``publish_effort_command``),
  ``~/trajectory_with_effort`` and ``~/trajectory_derivatives`` (once per accepted
  trajectory), and ``/diagnostics``.

The node is a shell: its scheduling rules (start stamps, a later start, moving from the
current reference, a single point, the grid and its catch-up, the clock going back, holding
after a failure, the chunks computed ahead, the points for a controller, the URDF limits, the
statistics) are those of :class:`hod_dynamics.feedforward.reference_stream.ReferenceStream`, and it builds
its model with :func:`hod_dynamics.model.robots.model_from_description`, as the command line does.
Here: the interfaces, the parameters (read one way, from the table), the diagnostics, the
threads (streaming, computing ahead, loading the kernels; trajectories are taken in by
:mod:`.trajectory_intake`'s) and the worker processes (:mod:`.worker`: compiling the kernels and
computing profiles; every trajectory's spline and points; the stream's samples ahead).

Longer than the package's other modules (about 600 lines): a shell, but a node with seven
publishers, a subscription, a service, diagnostics, four threads and three worker processes;
each method is one interface or one thread, and split over files they would be read together.

Parameters: PARAMETERS. Bad input never stops the node: a rejected trajectory is logged in
one line, counted in the diagnostics, and the current trajectory goes on. A node that cannot
start (a parameter, the model or the actuators given by parameter) logs one FATAL line naming
the parameter and exits with code 1 (:mod:`.process`).
"""

import json
import os
import sys
import threading
import time

import numpy as np
from diagnostic_msgs.msg import DiagnosticArray, DiagnosticStatus, KeyValue
from rclpy.callback_groups import MutuallyExclusiveCallbackGroup
from rclpy.executors import MultiThreadedExecutor
from rclpy.node import Node
from rclpy.qos import DurabilityPolicy, QoSProfile, ReliabilityPolicy
from rclpy.time import Time
from sensor_msgs.msg import JointState
from std_msgs.msg import Float64MultiArray, String
from std_srvs.srv import Trigger
from trajectory_msgs.msg import JointTrajectory

from ..algorithms.friction import load_friction
from ..errors import HodDynamicsError, StartupError
from ..feedforward.actuators import load_actuators
from ..feedforward.measured_state import MeasuredState
from ..feedforward.reference_stream import LIMIT_POLICIES, MAX_POINTS, ReferenceStream, hold_trajectory
from ..feedforward.trajectory_feedforward import MAX_PROFILE_SAMPLES, profile_file_bytes, profile_samples
from ..kernels.backend import requested_backend
from ..model.robots import model_from_description
from ..model.urdf import xacro_args_from_strings
from .conversions import effort_trajectory_bytes, profile_message_bytes
from .follow_joint_trajectory import make_proxy
from .parameters import Spec, declare as declare_parameters, value_of as parameter_value
from .process import exit_process, realtime_priority, run
from .sample_publishers import SamplePublishers, stream_qos
from .trajectory_intake import Job, TrajectoryIntake
from .worker import ModelRecipe, RemoteChunks, Worker, WorkerStopped

NODE_NAME = "hod_feedforward"
LATCHED = QoSProfile(depth=1, durability=DurabilityPolicy.TRANSIENT_LOCAL,
                     reliability=ReliabilityPolicy.RELIABLE)
# joint states: best effort takes both best-effort and reliable publishers (drivers use either)
SENSOR_QOS = QoSProfile(depth=10, reliability=ReliabilityPolicy.BEST_EFFORT)
SWITCH_INTERVAL = 0.0005  # s: a thread waiting for the GIL gets it this soon (Python's default: 5 ms)
CLOCK_LOG_PERIOD = 10.0   # s between the lines that say the node waits for /clock

PARAMETERS = (
    Spec("robot_description", "string", "", "URDF XML of the robot (first source)"),
    Spec("urdf_path", "string", "", "URDF or xacro file, or a shipped robot name (second source; else the robot_description topic)"),
    Spec("xacro_args", "string_array", [], "xacro arguments name:=value for a .xacro urdf_path"),
    Spec("strict", "bool", True, "misspelt URDF names and malformed values the model does not need are errors; "
         "false: logged warnings (extensions are always logged warnings)"),
    Spec("root_link", "string", "", "link fixed to the world (empty: the root of the URDF's one tree)"),
    Spec("tip_links", "string_array", [], "keep only the chains to these links (empty: all)"),
    Spec("locked_joints", "string_array", [], "joints frozen rigidly"),
    Spec("locked_positions", "double_array", [], "positions of locked_joints", "rad or m"),
    Spec("loops", "string", "", "a mechanism with kinematic loops: 'urdf' (Drake's <loop_joint> in the URDF) or "
         "a closure file (empty: the URDF is a tree)"),
    Spec("actuated_joints", "string_array", [], "the actuated joints of a mechanism with loops, streamed and "
         "given in trajectories (empty: the URDF's <transmission> joints, or the closure file's)"),
    Spec("assembly_joints", "string_array", [], "tree joints of a mechanism with loops at or near an assembly "
         "(the branch followed: an open or crossed four-bar)"),
    Spec("assembly_positions", "double_array", [], "positions of assembly_joints", "rad or m"),
    Spec("gravity", "double_array", [0.0, 0.0, -9.81], "gravity in the root frame (empty: the default)", "m/s^2"),
    Spec("order", "integer", 2, "highest torque derivative streamed", range=(0, 8)),
    Spec("publish_rate", "double", 500.0, "stream rate", "Hz", range=(1.0, 10000.0)),
    Spec("actuators", "string", "", "actuator YAML file, shipped name (actuators_sea) or inline YAML (empty: rigid joints)"),
    Spec("friction", "string", "", "joint friction added to tau and its derivatives: 'urdf' (the damping "
         "and friction of the URDF joints' dynamics elements), a friction YAML file (e.g. analyze-bag's "
         "friction.yaml) or inline YAML (empty: none); see \"Joint friction\""),
    Spec("allow_extra_joints", "bool", False, "ignore trajectory joints not in the model"),
    Spec("initial_positions", "double_array", [], "held before the first trajectory (empty: silent)", "rad or m"),
    Spec("effort_trajectory_rate", "double", 100.0, "grid of the points of ~/trajectory_with_effort, "
         "besides the waypoint times", "Hz", False, (1.0, 10000.0)),
    Spec("on_limit_violation", "string", "reject", "a trajectory beyond the URDF position, velocity or effort "
         "limits at its points for a controller: 'reject' refuses it, 'warn' streams it; both log one line "
         "naming joint, point, time, value and limit", read_only=False, choices=LIMIT_POLICIES),
    Spec("max_trajectory_points", "integer", MAX_POINTS, "largest trajectory taken: its waypoints, and its points "
         "for a controller (effort_trajectory_rate and the waypoints); a larger one is refused at once, naming "
         "its size", read_only=False, range=(2, 100_000_000)),
    Spec("joint_states_topic", "string", "/joint_states", "sensor_msgs/JointState of the robot's measured state "
         "(partial messages of several publishers merged by joint name): a trajectory whose first point is "
         "after t = 0 is joined from it (empty: from the reference)"),
    Spec("joint_states_max_age", "double", 1.0, "a measured state older than this is not joined from (the "
         "reference is)", "s", True, (0.001, 86400.0)),
    Spec("controller_action", "string", "/joint_trajectory_controller/follow_joint_trajectory",
         "control_msgs/action/FollowJointTrajectory server the ~/follow_joint_trajectory proxy forwards goals "
         "to, with effort (empty: no proxy)"),
    Spec("stream_reliability", "string", "reliable", "QoS reliability of the streamed topics",
         choices=("reliable", "best_effort")),
    Spec("stream_depth", "integer", 10, "QoS history depth of the streamed topics", range=(1, 100_000)),
    Spec("late_samples", "string", "auto", "grid samples a tick could not publish on time: 'drop' (counted as "
         "dropped_samples), 'publish' (every one, in order, in a burst), 'auto' (drop with the system clock, "
         "publish with use_sim_time, whose clock steps)", choices=("auto", "drop", "publish")),
    Spec("stream_thread_priority", "integer", 50, "SCHED_FIFO priority of the streaming thread where the "
         "system allows it, as ros2_control's thread_priority (0: the default scheduler)", range=(0, 99)),
    Spec("profile_rate", "double", 1000.0, "sample rate of ~/compute_profile", "Hz", False, (1.0, 100000.0)),
    Spec("profile_dir", "string", "", "folder for profile CSV/NPZ files (empty: none)", read_only=False),
    Spec("profile_size_limit", "double", 1000.0, "largest profile computed: its files and latched messages "
         "together (estimated before computing)", "MB", False, (1.0, 1.0e6)),
    Spec("effort_rate_limits", "double_array", [], "|tau_dot| limit per joint (empty: none)", "N m/s", False),
    Spec("publish_effort_command", "bool", False, "also publish ~/effort_command (tau)", read_only=False),
)
_SPECS = {s.name: s for s in PARAMETERS}


class FeedforwardNode(Node):
    """Streams inverse dynamics jets along the latest trajectory; see the module docstring."""

    def __init__(self, **kwargs):
        super().__init__(NODE_NAME, **kwargs)
        # Streaming runs in its own thread, paced by the node clock (simulated time too): an
        # executor timer at 1 kHz costs more in rclpy's Python executor than the work itself.
        # A second thread computes the samples ahead. Made first, so that destroy_node works
        # on a node whose start-up failed.
        self._stop = threading.Event()
        self._wake = threading.Event()  # a trajectory arrived: compute its samples ahead
        self._streamer = threading.Thread(target=self._stream, name="hod_feedforward_stream", daemon=True)
        self._sampler = threading.Thread(target=self._compute_ahead, name="hod_feedforward_ahead", daemon=True)
        self.worker = Worker()         # compiles the kernels, computes the profiles
        # at the node's own priority (the batch worker's would let any other load delay them): every
        # trajectory's spline and points, which the intake waits for; the stream's samples ahead,
        # so that no thread here computes while the streaming thread needs the GIL (RemoteChunks)
        self.points_worker, self.stream_worker = Worker(niceness=0), Worker(niceness=0)
        self.compiled = False          # the workers have the compiled kernels
        self.unknown_parameters = declare_parameters(self, PARAMETERS, self._check_parameter)  # warned about
        self.order = self._param("order")
        self.period = 1.0 / self._param("publish_rate")
        late = self._param("late_samples")
        sim = self.get_parameter("use_sim_time").value
        self.stream = ReferenceStream(self.period, self.order,
                                      allow_extra_joints=self._param("allow_extra_joints"),
                                      effort_rate=self._param("effort_trajectory_rate"),
                                      on_limit_violation=self._param("on_limit_violation"),
                                      max_points=self._param("max_trajectory_points"),
                                      drop_late=late == "drop" or (late == "auto" and not sim))
        self.stream.compute_chunk = RemoteChunks(self.stream_worker)
        self.measured = MeasuredState(self._param("joint_states_max_age"))
        self.intake = TrajectoryIntake(self.stream, self.measured, lambda: self.stream.max_points,
                                       log=self.get_logger().debug, error=self.get_logger().error,
                                       clock=lambda: self.get_clock().now().nanoseconds)
        self._recipe = None       # what the model was built from (for the worker)
        self._profiles_written = 0
        self.last_points = None   # the EffortTrajectory of the latest accepted trajectory
        self.ready = False        # serving: ~/trajectory and ~/compute_profile exist
        self.proxy = None         # the FollowJointTrajectory proxy, when control_msgs is there
        self._said = set()        # the one-time log lines said
        self._make_interfaces()
        self._load_model_from_parameters()
        self.add_post_set_parameters_callback(self._parameters_set)
        self.samples.set_effort_command(self._param("publish_effort_command"))
        self.intake.start()
        self._streamer.start()
        self._sampler.start()

    # the stream's state, as the node's (its diagnostics, its service, the tests' view)
    model = property(lambda self: self.stream.model)
    latest = property(lambda self: self.stream.latest)
    stats = property(lambda self: self.stream.stats)
    backend = property(lambda self: self.stream.backend)

    # the streamed topics' publishers (the tests' view)
    pub_ff = property(lambda self: self.samples.ff)
    pub_tau = property(lambda self: self.samples.tau)
    pub_effort = property(lambda self: self.samples.effort)

    # -- set-up --------------------------------------------------------------------------------
    def _make_interfaces(self):
        self.samples = SamplePublishers(self, self.order, stream_qos(self._param("stream_reliability"),
                                                                     self._param("stream_depth")))
        self.pub_points = self.create_publisher(JointTrajectory, "~/trajectory_with_effort", 10)
        self.pub_points_d = self.create_publisher(Float64MultiArray, "~/trajectory_derivatives", 10)
        self.pub_profile = self.create_publisher(JointTrajectory, "~/torque_profile", LATCHED)
        self.pub_profile_d = self.create_publisher(Float64MultiArray, "~/torque_profile_derivatives", LATCHED)
        self.pub_diag = self.create_publisher(DiagnosticArray, "/diagnostics", 10)
        self.create_timer(1.0, self._publish_diagnostics)

    def _serve(self):
        """Open ~/trajectory and ~/compute_profile: the node is ready (it has a model and can
        compute). A client that waits for a subscriber on ~/trajectory waits for readiness. The
        profile service has a callback group of its own: a long profile (computed by the
        worker) does not hold up trajectories, diagnostics or parameters."""
        self.create_subscription(JointTrajectory, "~/trajectory", self._on_trajectory, 10, raw=True)
        self.create_service(Trigger, "~/compute_profile", self._on_compute_profile,
                            callback_group=MutuallyExclusiveCallbackGroup())
        if self._param("joint_states_topic"):
            self.create_subscription(JointState, self._param("joint_states_topic"), self._on_joint_states,
                                     SENSOR_QOS)
        if self._param("controller_action"):
            self.proxy = make_proxy(self, self._param("controller_action"))
        self.ready = True
        self.get_logger().info(f"ready: serving {self.resolve_topic_name('~/trajectory')} and "
                               f"{self.resolve_service_name('~/compute_profile')} ({self.backend} backend)")

    def _load_model_from_parameters(self):
        urdf = self._param("robot_description")
        path = self._param("urdf_path")
        if urdf or path:
            self._set_model(urdf or path, "parameter robot_description" if urdf else f"parameter urdf_path {path}",
                            startup=True)
            return
        self.get_logger().info("no robot_description/urdf_path parameter: waiting for the robot_description topic")
        self._description_sub = self.create_subscription(String, "robot_description",
                                                         self._on_robot_description, LATCHED)

    def _on_robot_description(self, msg):
        if self.model is not None:
            return
        try:
            self._set_model(msg.data, f"topic {self.resolve_topic_name('robot_description')}")
        except HodDynamicsError as exc:
            self.get_logger().error(f"rejected /robot_description: {exc}; waiting for a valid one")

    def _set_model(self, source, origin, startup=False):
        """Build the model and actuators from a URDF source, then serve. Raises
        HodDynamicsError (StartupError when ``startup``: the node cannot start) naming the
        parameter at fault."""
        fault = StartupError if startup else HodDynamicsError
        p = {name: self._param(name) for name in ("root_link", "tip_links", "locked_joints",
                                                  "locked_positions", "gravity", "actuators",
                                                  "initial_positions", "xacro_args", "strict", "friction",
                                                  "loops", "actuated_joints", "assembly_joints",
                                                  "assembly_positions")}
        for names, values in (("locked_joints", "locked_positions"), ("assembly_joints", "assembly_positions")):
            if len(p[names]) != len(p[values]):
                raise fault(f"parameters {names} {p[names]} and {values} {p[values]} differ in length")
        if p["assembly_joints"] and not (p["loops"] or p["actuated_joints"]):
            raise fault(f"parameter assembly_joints {p['assembly_joints']}: an assembly is of a mechanism with "
                        "loops (set loops or actuated_joints)")
        try:
            options = dict(root_link=p["root_link"], tip_links=p["tip_links"],
                           locked_joints=dict(zip(p["locked_joints"], p["locked_positions"])),
                           gravity=p["gravity"] or _SPECS["gravity"].default, strict=p["strict"],
                           xacro_args=xacro_args_from_strings(p["xacro_args"], "parameter xacro_args"))
            if p["loops"] or p["actuated_joints"]:  # only then: a tree's recipe stays as it was
                options.update(loops=p["loops"] or None, actuated_joints=p["actuated_joints"] or None,
                               assembly=dict(zip(p["assembly_joints"], p["assembly_positions"])) or None)
            model, notes = model_from_description(source, **options)
        except HodDynamicsError as exc:
            raise fault(f"invalid robot model ({origin}): {exc}") from None
        for note in notes:
            self.get_logger().warning(f"robot model from {origin}: {note}")
        if model.floating:
            raise fault(f"invalid robot model ({origin}): robot '{model.name}' has a floating base (a "
                        "floating joint below its world link), which this node does not stream yet; "
                        f"set root_link (e.g. '{model.root_link}') to fix the base")
        try:
            actuators = load_actuators(p["actuators"], model) if p["actuators"] else None
        except HodDynamicsError as exc:
            raise fault(f"parameter actuators: {exc}") from None
        try:
            friction = load_friction(p["friction"] or None, model)
        except HodDynamicsError as exc:
            raise fault(f"parameter friction: {exc}") from None
        hold = None
        if p["initial_positions"]:
            try:
                hold = hold_trajectory(model, p["initial_positions"])
            except HodDynamicsError as exc:
                raise fault(f"parameter initial_positions: {exc}") from None
        try:
            backend = requested_backend()
        except HodDynamicsError as exc:
            raise fault(str(exc)) from None
        self._recipe = ModelRecipe(source, options, p["actuators"], p["friction"])
        self.stream.set_model(model, actuators, friction, hold=hold, now_ns=self.get_clock().now().nanoseconds)
        self.get_logger().info(f"robot model from {origin}: {model.n_dof} moving joints "
                               f"{list(model.joint_names)}, order {self.order}, "
                               f"{'elastic' if actuators is not None and actuators.elastic.any() else 'rigid'} joints")
        self.samples.set_model(model)
        self._serve()
        if backend != "numpy":
            threading.Thread(target=self._prepare_compiled, args=(model,), name="hod_feedforward_compile",
                             daemon=True).start()

    def _prepare_compiled(self, model):
        """Background thread: have the worker processes compile (or load) the kernels, then hand
        them the points of every trajectory for a controller (:meth:`_points`) and the profiles.
        This process never imports numba (see :mod:`.worker`): its stream stays on the numpy
        path, whose vectorised chunks cost a few percent of a core, and which no compile or
        load of compiled code can hold up."""
        self.get_logger().info("preparing the compiled kernels (numba) in the worker processes; "
                               "the numpy path serves meanwhile")
        t0 = time.monotonic()
        order = self.stream.continuity - 2
        try:
            (notice,) = self.worker.request("notice", "time_derivatives")
            if notice:  # numba's cache is empty (a first start after an install): the worker compiles
                self.get_logger().info(notice)
            self.worker.request("compile", self._recipe, order)
            self.points_worker.request("prepare_points", self._recipe, order)  # from the cache just filled
        except WorkerStopped:
            return
        except HodDynamicsError as exc:  # the numpy path keeps serving
            self.get_logger().error(f"compiled kernels unavailable, staying on the numpy path: {exc}")
            return
        if self._stop.is_set():
            return
        self.compiled = True
        self.stream.points = self._points
        self.get_logger().info(f"compiled kernels ready after {time.monotonic() - t0:.1f} s: compiled code takes over "
                               "the trajectories' points for a controller and the profiles (in the worker processes)")

    def _points(self, model, waypoints, rate, order, friction):
        """(The trajectory of ``waypoints``, its points for a controller), from the worker process
        that has the compiled kernels (the stream's own numpy path when it is not there): its
        spline too is made there, beside the node's streaming thread instead of in its way."""
        try:
            return tuple(self.points_worker.request("points", self._recipe, waypoints, rate, order))
        except WorkerStopped:
            raise HodDynamicsError("the node is shutting down") from None

    def _check_parameter(self, name, value):
        """The node's own rule for a run-time value (types and ranges are checked from the
        table; read-only parameters are refused by rclpy): a reason, or None."""
        if name == "effort_rate_limits" and len(value):
            values = np.asarray(value, dtype=float)
            n = self.model.n_dof if self.model is not None else len(values)
            if len(values) != n or np.any(~(values >= 0)):
                return (f"parameter effort_rate_limits: expected {n} values >= 0 (N m/s) or [] "
                        f"(no limits), got {values.tolist()}")
        return None

    def _parameters_set(self, params):
        names = {p.name for p in params}
        if "publish_effort_command" in names:
            self.samples.set_effort_command(self._param("publish_effort_command"))
        self.stream.effort_rate = self._param("effort_trajectory_rate")
        self.stream.on_limit_violation = self._param("on_limit_violation")
        self.stream.max_points = self._param("max_trajectory_points")

    def _param(self, name):
        """A parameter of the table as Python data (arrays as lists): the one way the node reads
        its parameters (``use_sim_time``, rclpy's own, excepted)."""
        return parameter_value(self, _SPECS[name])

    # -- trajectories --------------------------------------------------------------------------
    def _on_trajectory(self, raw):
        """~/trajectory, as its serialised bytes: queued for the intake thread (the executor
        never waits for a trajectory to be accepted)."""
        self.intake.submit(Job(self.get_clock().now().nanoseconds, self._accepted, self._rejected, raw=raw))

    def _on_joint_states(self, msg):
        self.measured.update(msg.name, msg.position, msg.velocity, self.get_clock().now().nanoseconds)

    def _rejected(self, reason):
        self.get_logger().warning(f"rejected trajectory: {reason}")

    def _accepted(self, accepted, header):
        """The intake thread accepted a trajectory: compute its samples ahead, publish its
        points for a controller, say what it was joined from (once) and what limit it exceeds."""
        self._wake.set()
        # said before the points go out: whoever has the points has the lines
        if accepted.joined == "reference":
            topic = self.resolve_topic_name(self._param("joint_states_topic") or "joint_states")
            self._say_once("joined-reference", f"no measured state on {topic} (or older than joint_states_max_age): "
                           "a trajectory that starts after t = 0 is joined from the current reference")
        if accepted.beyond_limits:  # one line per trajectory, at most one a second
            self.get_logger().warning(f"streaming a trajectory {accepted.beyond_limits} (on_limit_violation is warn)",
                                      throttle_duration_sec=1.0)
        self.last_points = accepted.points
        points, derivatives = effort_trajectory_bytes(accepted.points, *header)
        self.pub_points.publish(points)
        self.pub_points_d.publish(derivatives)

    def _say_once(self, key, text):
        if key not in self._said:
            self._said.add(key)
            self.get_logger().info(text)

    # -- streaming -----------------------------------------------------------------------------
    def _stream(self):
        """Serve the samples due at every grid point of the node clock (the stream's schedule,
        :meth:`ReferenceStream.wait_ns`) until the node is destroyed. Short real-time sleeps:
        with simulated time the node clock may run at any pace."""
        problem = realtime_priority(self._param("stream_thread_priority"))
        if problem:
            self.get_logger().warning(f"stream_thread_priority: no real-time priority ({problem}); see "
                                      "doc/ros2_interface.md, 'Real-time priority'")
        clock = self.get_clock()
        sim = self.get_parameter("use_sim_time").value
        nap = 0.001 if sim else 0.005
        waiting = None  # monotonic time of the last "waiting for /clock" line
        while not self._stop.is_set() and self.context.ok():
            now = clock.now()
            if now.nanoseconds == 0:  # simulated time before the first /clock message
                if waiting is None or time.monotonic() - waiting >= CLOCK_LOG_PERIOD:
                    self.get_logger().info(f"use_sim_time is true: waiting for {self.resolve_topic_name('/clock')} "
                                           "before streaming")
                    waiting = time.monotonic()
                time.sleep(nap)
                continue
            if waiting is not None:
                self.get_logger().info(f"/clock received (t = {now.nanoseconds * 1e-9:.3f} s): streaming")
                waiting = None
            wait = self.stream.wait_ns(now.nanoseconds)
            if wait > 0:
                time.sleep(min(wait * 1e-9, nap))
                continue
            try:
                self._on_tick(now)
            except Exception as exc:  # the stream must survive anything one sample does
                if self._stop.is_set() or not self.context.ok():
                    return
                self.get_logger().error(f"tick failed: {exc!r}")

    def _compute_ahead(self):
        """Have the samples ahead of the stream computed (:meth:`ReferenceStream.compute_ahead`,
        by the stream worker process), so that the streaming thread only publishes."""
        problem = self.stream.compute_chunk.start()
        if problem and not self._stop.is_set():  # no process: the samples computed here, as before
            self.stream.compute_chunk = None
            self.get_logger().warning(f"no stream worker ({problem}): samples computed in the node's process")
        clock = self.get_clock()
        while not self._stop.is_set() and self.context.ok():
            now = clock.now().nanoseconds
            try:
                busy = now > 0 and self.stream.compute_ahead(now)
            except Exception as exc:  # the streaming thread computes what is missing itself
                if self._stop.is_set() or not self.context.ok():
                    return
                self.get_logger().error(f"computing ahead failed: {exc!r}")
                busy = False
            if not busy:
                self._wake.wait(0.02)
                self._wake.clear()

    def destroy_node(self):
        """Stop streaming (joined, so no sample is published by a destroyed node) and the
        worker process, then destroy, the proxy's action server and client first."""
        self.halt()
        for thread in (self._streamer, self._sampler):
            if thread.is_alive() and thread is not threading.current_thread():
                thread.join(timeout=5)
        if self.proxy is not None:
            # rclpy's destroy_node leaves actions alone: they would keep the node in the graph
            self.proxy.destroy()
            self.proxy = None
        return super().destroy_node()

    def halt(self):
        """Stop the threads' loops and kill the worker process (a profile in progress is
        answered with failure at once): called at shutdown before the executor's threads are
        joined. The intake thread is not joined: a trajectory in hand is dropped with the
        process."""
        self._stop.set()
        self._wake.set()
        self.intake.stop()
        self.worker.stop()
        self.points_worker.stop()
        self.stream_worker.stop()

    def _on_tick(self, now):
        t0 = time.perf_counter()
        samples, failure = self.stream.due(now.nanoseconds)
        for sample in samples:
            self.samples.publish(sample.result, sample.row,
                                 Time(nanoseconds=sample.stamp_ns, clock_type=now.clock_type).to_msg())
        if failure:  # the stream holds the last position from now on
            self.get_logger().error(f"trajectory abandoned, holding the last position: {failure}")
        if samples and self.stream.count_tick(time.perf_counter() - t0):
            self.get_logger().info(f"streaming: first sample published on {self.pub_ff.topic_name} "
                                   f"({self.backend} backend)")

    # -- offline profile -----------------------------------------------------------------------
    def _on_compute_profile(self, request, response):
        """Computed by the worker process; this thread (the service's own) waits for it and
        publishes the latched messages it serialised."""
        stream = self.stream
        traj, model = stream.latest, stream.model
        response.success = False
        if traj is None or model is None:
            response.message = json.dumps({"error": "no trajectory received yet" if model else "no robot model yet"})
            return response
        try:
            summary = self._compute_profile(traj, model)
        except WorkerStopped as exc:
            response.message = json.dumps({"error": str(exc)})
            return response
        except (HodDynamicsError, OSError) as exc:  # bad parameters, too large, disk full...: answer, keep serving
            response.message = json.dumps({"error": str(exc)})
            self.get_logger().error(f"compute_profile failed: {exc}")
            return response
        response.success = True
        response.message = json.dumps(summary)
        return response

    def _compute_profile(self, traj, model):
        rate, limit = self._param("profile_rate"), self._param("profile_size_limit")
        folder = self._param("profile_dir")
        samples = profile_samples(traj, rate)
        if samples > MAX_PROFILE_SAMPLES:
            raise HodDynamicsError(f"a {traj.end - traj.start:g} s profile at {rate:g} Hz has {samples} samples "
                                   f"(more than {MAX_PROFILE_SAMPLES}); lower profile_rate")
        files = profile_file_bytes(samples, model.n_dof, self.order, self.stream.actuators is not None)
        sizes = dict(files if folder else {}, messages=profile_message_bytes(samples, model.n_dof, self.order))
        total = sum(sizes.values())
        if total > limit * 1e6:
            parts = ", ".join(f"{mb(v)} of {k}" for k, v in sizes.items())
            raise HodDynamicsError(f"profile refused: {samples} samples ({traj.end - traj.start:g} s at {rate:g} Hz) "
                                   f"would make about {mb(total)} ({parts}), more than profile_size_limit "
                                   f"{limit:g} MB; lower profile_rate or raise profile_size_limit")
        base = ""
        if folder:
            os.makedirs(folder, exist_ok=True)
            self._profiles_written += 1
            base = os.path.join(folder, time.strftime("profile_%Y%m%d_%H%M%S") + f"_{self._profiles_written}")
        summary, blobs = self.worker.request(
            "profile", self._recipe, traj, rate, self.order, self._param("effort_rate_limits") or None,
            None, base, self.get_clock().now().to_msg())  # None: the worker's default, compiled when numba is there
        try:
            for publisher, path in zip((self.pub_profile, self.pub_profile_d), blobs):
                with open(path, "rb") as f:
                    publisher.publish(f.read())
        finally:
            for path in blobs:
                os.unlink(path)
        return summary

    # -- diagnostics ---------------------------------------------------------------------------
    def _publish_diagnostics(self):
        s = self.stream.statistics()
        model = self.model
        status = DiagnosticStatus(name=f"{self.get_fully_qualified_name()}: feedforward",
                                  hardware_id=model.name if model else "no model")
        status.level = DiagnosticStatus.OK if model is not None else DiagnosticStatus.WARN
        status.message = "streaming" if self.stream.active else ("waiting for a trajectory" if model else
                                                                 "waiting for a robot model")
        mean = s["compute_s"] / s["ticks"] if s["ticks"] else 0.0
        points = self.last_points
        values = dict(ticks=s["ticks"], late_samples=s["late_samples"], skipped_samples=s["skipped_samples"],
                      dropped_samples=s["dropped_samples"], trajectories_queued=self.intake.pending(),
                      last_trajectory_seconds="" if self.intake.seconds is None else f"{self.intake.seconds:.3g}",
                      rejected_messages=s["rejected"], accepted_messages=s["accepted"],
                      beyond_limits=s["beyond_limits"], last_beyond_limits=s["last_beyond_limits"],
                      effort_interpolation_error=("" if points is None else
                                                  f"{points.interpolation_error.max():.3g}"),
                      compute_time_mean_us=round(mean * 1e6, 1),
                      compute_time_max_us=round(s["compute_max_s"] * 1e6, 1),
                      last_rejection=s["last_rejection"], stream_errors=s["stream_errors"],
                      last_stream_error=s["last_stream_error"], backend=self.backend,
                      worker_backend="numba" if self.compiled else "numpy")
        status.values = [KeyValue(key=k, value=str(v)) for k, v in values.items()]
        msg = DiagnosticArray(status=[status])
        msg.header.stamp = self.get_clock().now().to_msg()
        self.pub_diag.publish(msg)


def mb(size):
    """Bytes as megabytes, for messages."""
    return f"{size / 1e6:.0f} MB" if size >= 1e6 else f"{size / 1e6:.2g} MB"


def main(args=None):
    """Entry point of ``ros2 run hod_dynamics feedforward_node``; returns the exit code. Two
    executor threads (the profile service waits in its own), and a short GIL switch interval:
    the streaming thread, woken every period, gets the interpreter within half a millisecond
    whatever another thread computes."""
    sys.setswitchinterval(SWITCH_INTERVAL)
    return run(FeedforwardNode, NODE_NAME, args, make_executor=lambda: MultiThreadedExecutor(num_threads=2))


if __name__ == "__main__":
    exit_process(main())
