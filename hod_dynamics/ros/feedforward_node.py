"""``feedforward_node`` (node ``hod_feedforward``): tau and its time derivatives, and motor
references of elastic joints, streamed at the control rate along the planned trajectory.

Interface (``~`` = the node's namespace, see doc/ros2_interface.md for types and units):

- robot model from parameter ``robot_description`` (URDF XML), else parameter ``urdf_path``,
  else topic ``robot_description`` (relative: ``/robot_description`` without a namespace;
  std_msgs/String, transient local);
- once it has a model it is *ready*: it subscribes ``~/trajectory``
  (trajectory_msgs/JointTrajectory) and offers the service ``~/compute_profile``
  (std_srvs/Trigger, publishing ``~/torque_profile`` and ``~/torque_profile_derivatives``,
  transient local); with numba, the compiled kernels are prepared in a background thread and
  take over from the numpy path when ready;
- publishes ``~/feedforward``, ``~/torque_derivatives``, ``~/motor_reference``,
  ``~/motor_derivatives``, ``~/effort_command`` (only while ``publish_effort_command``), and
  ``/diagnostics``.

The node is a shell: its scheduling rules (start stamps, a later start, moving from the
current reference, a single point, the clock going back, holding after a failure, the grid
and its chunks, the statistics) are those of :class:`hod_dynamics.reference_stream.ReferenceStream`,
and it builds its model with :func:`hod_dynamics.robots.model_from_description`, as the
command line does. Here: the interfaces, the parameters (read one way, from the table), the
diagnostics and the threads (streaming, compiling the kernels).

Parameters: PARAMETERS. Bad input never stops the node: a rejected trajectory is logged in
one line, counted in the diagnostics, and the current trajectory goes on. A node that cannot
start (a parameter, the model or the actuators given by parameter) logs one FATAL line naming
the parameter and exits with code 1 (:mod:`.process`).
"""

import json
import os
import threading
import time

import numpy as np
from diagnostic_msgs.msg import DiagnosticArray, DiagnosticStatus, KeyValue
from rclpy.node import Node
from rclpy.time import Time
from rclpy.qos import DurabilityPolicy, QoSProfile, ReliabilityPolicy
from std_msgs.msg import Float64MultiArray, String
from std_srvs.srv import Trigger
from trajectory_msgs.msg import JointTrajectory

from ..actuators import load_actuators
from ..backend import compile_notices, requested_backend
from ..dispatch import prepare_compiled_kernels
from ..errors import HodDynamicsError, StartupError
from ..friction import load_friction
from ..msgfields import stamp_ns
from ..reference_stream import ReferenceStream, hold_trajectory
from ..robots import model_from_description
from ..trajectory_feedforward import profile, save_csv, save_npz, summary
from ..urdf import xacro_args_from_strings
from .conversions import multiarray, trajectory_msg, waypoints_from_msg
from .parameters import Spec, checker as parameter_checker, declare as declare_parameters, value_of as parameter_value
from .process import exit_process, run

NODE_NAME = "hod_feedforward"
LATCHED = QoSProfile(depth=1, durability=DurabilityPolicy.TRANSIENT_LOCAL,
                     reliability=ReliabilityPolicy.RELIABLE)

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
    Spec("gravity", "double_array", [0.0, 0.0, -9.81], "gravity in the root frame", "m/s^2"),
    Spec("order", "integer", 2, "highest torque derivative streamed", range=(0, 8)),
    Spec("publish_rate", "double", 500.0, "stream rate", "Hz", range=(1.0, 10000.0)),
    Spec("actuators", "string", "", "actuator YAML file, shipped name (actuators_sea) or inline YAML (empty: rigid joints)"),
    Spec("friction", "string", "", "joint friction added to tau and its derivatives: 'urdf' (the damping "
         "and friction of the URDF joints' dynamics elements), a friction YAML file (e.g. analyze-bag's "
         "friction.yaml) or inline YAML (empty: none); see \"Joint friction\""),
    Spec("allow_extra_joints", "bool", False, "ignore trajectory joints not in the model"),
    Spec("initial_positions", "double_array", [], "held before the first trajectory (empty: silent)", "rad or m"),
    Spec("profile_rate", "double", 1000.0, "sample rate of ~/compute_profile", "Hz", False, (1.0, 100000.0)),
    Spec("profile_dir", "string", "", "folder for profile CSV/NPZ files (empty: none)", read_only=False),
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
        # Made first, so that destroy_node works on a node whose start-up failed.
        self._stop = threading.Event()
        self._streamer = threading.Thread(target=self._stream, name="hod_feedforward_stream", daemon=True)
        self.unknown_parameters = declare_parameters(self, PARAMETERS)  # warned about
        self.order = self._param("order")
        self.period = 1.0 / self._param("publish_rate")
        self.stream = ReferenceStream(self.period, self.order,
                                      allow_extra_joints=self._param("allow_extra_joints"))
        self._profiles_written = 0
        self.ready = False        # serving: ~/trajectory and ~/compute_profile exist
        self.pub_effort = None    # ~/effort_command exists only while publish_effort_command is true
        self._effort_lock = threading.Lock()
        self._make_interfaces()
        self._load_model_from_parameters()
        self.add_on_set_parameters_callback(parameter_checker(PARAMETERS, self._check_parameter))
        self.add_post_set_parameters_callback(self._parameters_set)
        self._update_effort_publisher()
        self._streamer.start()

    # the stream's state, as the node's (its diagnostics, its service, the tests' view)
    model = property(lambda self: self.stream.model)
    latest = property(lambda self: self.stream.latest)
    stats = property(lambda self: self.stream.stats)
    backend = property(lambda self: self.stream.backend)

    # -- set-up --------------------------------------------------------------------------------
    def _make_interfaces(self):
        self.pub_ff = self.create_publisher(JointTrajectory, "~/feedforward", 10)
        self.pub_tau = self.create_publisher(Float64MultiArray, "~/torque_derivatives", 10)
        self.pub_motor = self.create_publisher(JointTrajectory, "~/motor_reference", 10)
        self.pub_motor_d = self.create_publisher(Float64MultiArray, "~/motor_derivatives", 10)
        self.pub_profile = self.create_publisher(JointTrajectory, "~/torque_profile", LATCHED)
        self.pub_profile_d = self.create_publisher(Float64MultiArray, "~/torque_profile_derivatives", LATCHED)
        self.pub_diag = self.create_publisher(DiagnosticArray, "/diagnostics", 10)
        self.create_timer(1.0, self._publish_diagnostics)

    def _serve(self):
        """Open ~/trajectory and ~/compute_profile: the node is ready (it has a model and can
        compute). A client that waits for a subscriber on ~/trajectory waits for readiness."""
        self.create_subscription(JointTrajectory, "~/trajectory", self._on_trajectory, 10)
        self.create_service(Trigger, "~/compute_profile", self._on_compute_profile)
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
                                                  "initial_positions", "xacro_args", "strict", "friction")}
        if len(p["locked_joints"]) != len(p["locked_positions"]):
            raise fault(f"parameters locked_joints {p['locked_joints']} and locked_positions "
                        f"{p['locked_positions']} differ in length")
        try:
            model, notes = model_from_description(
                source, root_link=p["root_link"], tip_links=p["tip_links"],
                locked_joints=dict(zip(p["locked_joints"], p["locked_positions"])),
                gravity=p["gravity"], strict=p["strict"],
                xacro_args=xacro_args_from_strings(p["xacro_args"], "parameter xacro_args"))
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
        self.stream.set_model(model, actuators, friction, hold=hold, now_ns=self.get_clock().now().nanoseconds)
        self.get_logger().info(f"robot model from {origin}: {model.n_dof} moving joints "
                               f"{list(model.joint_names)}, order {self.order}, "
                               f"{'elastic' if actuators is not None and actuators.elastic.any() else 'rigid'} joints")
        self._serve()
        if backend != "numpy":
            threading.Thread(target=self._prepare_compiled, args=(model,), name="hod_feedforward_compile",
                             daemon=True).start()

    def _prepare_compiled(self, model):
        """Background thread: compile (or load from numba's cache) the kernels the node
        needs, then switch to them. The numpy path serves meanwhile, with the same numbers."""
        self.get_logger().info("preparing the compiled kernels (numba) in the background; "
                               "the numpy path serves meanwhile")
        t0 = time.monotonic()
        try:  # a compile (first start after an install) is announced in the log as it starts
            with compile_notices(self.get_logger().info):
                prepare_compiled_kernels(model, self.stream.continuity - 2)
        except Exception as exc:  # the numpy path keeps serving
            self.get_logger().error(f"compiled kernels unavailable, staying on the numpy path: {exc!r}")
            return
        if self._stop.is_set():
            return
        self.stream.backend = "numba"
        self.get_logger().info(f"compiled kernels ready after {time.monotonic() - t0:.1f} s: "
                               "the numba backend takes over")

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
        if any(p.name == "publish_effort_command" for p in params):
            self._update_effort_publisher()

    def _update_effort_publisher(self):
        """~/effort_command is advertised only while publish_effort_command is true, so that
        ``ros2 topic echo`` on it does not wait on a topic that never publishes."""
        want = self._param("publish_effort_command")
        with self._effort_lock:
            if want and self.pub_effort is None:
                self.pub_effort = self.create_publisher(Float64MultiArray, "~/effort_command", 10)
            elif not want and self.pub_effort is not None:
                publisher, self.pub_effort = self.pub_effort, None
                self.destroy_publisher(publisher)

    def _param(self, name):
        """A parameter of the table as Python data (arrays as lists): the one way the node reads
        its parameters (``use_sim_time``, rclpy's own, excepted)."""
        return parameter_value(self, _SPECS[name])

    # -- trajectories --------------------------------------------------------------------------
    def _on_trajectory(self, msg):
        now_ns = self.get_clock().now().nanoseconds
        try:
            self.stream.accept(*waypoints_from_msg(msg), stamp_ns=stamp_ns(msg.header.stamp), now_ns=now_ns)
        except HodDynamicsError as exc:
            self.stream.reject(str(exc))
            self.get_logger().warning(f"rejected trajectory: {exc}")

    # -- streaming -----------------------------------------------------------------------------
    def _stream(self):
        """Tick every period of the node clock (the stream's schedule, :meth:`ReferenceStream.wait_ns`)
        until the node is destroyed. Short real-time sleeps: with simulated time the node clock
        may run at any pace."""
        clock = self.get_clock()
        nap = 0.001 if self.get_parameter("use_sim_time").value else 0.005
        while not self._stop.is_set() and self.context.ok():
            wait = self.stream.wait_ns(clock.now().nanoseconds)
            if wait > 0:
                time.sleep(min(wait * 1e-9, nap))
                continue
            try:
                self._on_tick()
            except Exception as exc:  # the stream must survive anything one sample does
                if self._stop.is_set() or not self.context.ok():
                    return
                self.get_logger().error(f"tick failed: {exc!r}")

    def destroy_node(self):
        """Stop streaming (joined, so no sample is published by a destroyed node), then destroy."""
        self._stop.set()
        if self._streamer.is_alive() and self._streamer is not threading.current_thread():
            self._streamer.join(timeout=5)
        return super().destroy_node()

    def _on_tick(self):
        now = self.get_clock().now()
        t0 = time.perf_counter()
        try:
            sample = self.stream.sample(now.nanoseconds)
        except HodDynamicsError as exc:  # the stream holds the last position from now on
            self.get_logger().error(f"trajectory abandoned, holding the last position: {exc}")
            return
        if sample is None:
            return
        self._publish_sample(sample.result, sample.row,
                             Time(nanoseconds=sample.stamp_ns, clock_type=now.clock_type).to_msg())
        if self.stream.count_tick(time.perf_counter() - t0):
            self.get_logger().info(f"streaming: first sample published on {self.pub_ff.topic_name} "
                                   f"({self.backend} backend)")

    def _publish_sample(self, result, row, stamp):
        q, tau = result.qjet[row], result.taujet[row]
        names, t = result.joint_names, [result.t[row]]
        self.pub_ff.publish(trajectory_msg(names, t, q[None, 0], q[None, 1], q[None, 2], tau[None, 0], stamp))
        self.pub_tau.publish(multiarray(tau, ("order", "joint")))
        if result.thetajet is not None and result.elastic.any():
            th = result.thetajet[row]  # rows theta^(0..max(order, 2))
            self.pub_motor.publish(trajectory_msg(names, t, th[None, 0], th[None, 1], th[None, 2],
                                                  result.u[row:row + 1], stamp))
            self.pub_motor_d.publish(multiarray(th[:self.order + 1], ("order", "joint")))
        effort = self.pub_effort
        if effort is not None:
            effort.publish(multiarray(tau[0], ("joint",)))

    # -- offline profile -----------------------------------------------------------------------
    def _on_compute_profile(self, request, response):
        stream = self.stream
        traj, model, actuators = stream.latest, stream.model, stream.actuators
        if traj is None or model is None:
            response.success = False
            response.message = json.dumps({"error": "no trajectory received yet" if model else "no robot model yet"})
            return response
        try:
            summary = self._compute_profile(traj, model, actuators)
        except (HodDynamicsError, OSError) as exc:  # bad parameters, disk full...: answer, keep serving
            response.success = False
            response.message = json.dumps({"error": str(exc)})
            self.get_logger().error(f"compute_profile failed: {exc}")
            return response
        response.success = True
        response.message = json.dumps(summary)
        return response

    def _compute_profile(self, traj, model, actuators):
        rate_limits = self._param("effort_rate_limits") or None
        result, report = profile(model, traj, self._param("profile_rate"), self.order,
                                 actuators, effort_rate_limits=rate_limits, friction=self.stream.friction,
                                 backend=self.backend)
        q, tau = result.qjet, result.taujet
        stamp = self.get_clock().now().to_msg()
        self.pub_profile.publish(trajectory_msg(model.joint_names, result.t - traj.start, q[:, 0], q[:, 1],
                                                q[:, 2], tau[:, 0], stamp))
        self.pub_profile_d.publish(multiarray(tau, ("sample", "order", "joint")))
        return dict(summary(result, report), files=self._write_profile(result))

    def _write_profile(self, result):
        folder = self._param("profile_dir")
        if not folder:
            return []
        os.makedirs(folder, exist_ok=True)
        self._profiles_written += 1
        base = os.path.join(folder, time.strftime("profile_%Y%m%d_%H%M%S") + f"_{self._profiles_written}")
        return [save_csv(result, base + ".csv"), save_npz(result, base + ".npz")]

    # -- diagnostics ---------------------------------------------------------------------------
    def _publish_diagnostics(self):
        s = self.stream.statistics()
        model = self.model
        status = DiagnosticStatus(name=f"{self.get_name()}: feedforward",
                                  hardware_id=model.name if model else "no model")
        status.level = DiagnosticStatus.OK if model is not None else DiagnosticStatus.WARN
        status.message = "streaming" if self.stream.active else ("waiting for a trajectory" if model else
                                                                 "waiting for a robot model")
        mean = s["compute_s"] / s["ticks"] if s["ticks"] else 0.0
        values = dict(ticks=s["ticks"], late_ticks=s["late_ticks"], rejected_messages=s["rejected"],
                      accepted_messages=s["accepted"], compute_time_mean_us=round(mean * 1e6, 1),
                      compute_time_max_us=round(s["compute_max_s"] * 1e6, 1),
                      last_rejection=s["last_rejection"], stream_errors=s["stream_errors"],
                      last_stream_error=s["last_stream_error"], backend=self.backend)
        status.values = [KeyValue(key=k, value=str(v)) for k, v in values.items()]
        msg = DiagnosticArray(status=[status])
        msg.header.stamp = self.get_clock().now().to_msg()
        self.pub_diag.publish(msg)


def main(args=None):
    """Entry point of ``ros2 run hod_dynamics feedforward_node``; returns the exit code."""
    return run(FeedforwardNode, NODE_NAME, args)


if __name__ == "__main__":
    exit_process(main())
