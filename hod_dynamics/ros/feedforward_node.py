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

Parameters: PARAMETERS. Bad input never stops the node: a rejected trajectory is logged in
one line, counted in the diagnostics, and the current trajectory goes on. A node that cannot
start (a parameter, the model or the actuators given by parameter) logs one FATAL line naming
the parameter and exits with code 1 (:mod:`.process`).
"""

import json
import os
import threading
import time
import warnings

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
from ..robots import urdf_source
from ..friction import load_friction
from ..errors import HodDynamicsError, HodDynamicsWarning
from ..trajectory_feedforward import feedforward, profile, save_csv, save_npz, summary
from ..model import RobotModel
from ..urdf import xacro_args_from_strings
from ..msgfields import stamp_ns
from ..trajectory import Trajectory
from .conversions import multiarray, trajectory_msg, waypoints_from_msg
from .parameters import Spec, checker as parameter_checker, declare as declare_parameters, value_of as parameter_value
from .process import StartupError, exit_process, run

NODE_NAME = "hod_feedforward"
CHUNK_SECONDS = 0.1  # streamed samples computed ahead per vectorised call
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
        self.order = self.get_parameter("order").value
        self.period = 1.0 / self.get_parameter("publish_rate").value
        self._lock = threading.Lock()
        self.model = self.actuators = self.friction = None
        self.active = None        # (Trajectory in model order, start time in ns)
        self.pending = []         # [(start ns, Trajectory)] waiting for their start time
        self.latest = None        # the most recent valid trajectory (for ~/compute_profile)
        self.stats = dict(ticks=0, late_ticks=0, rejected=0, accepted=0, compute_s=0.0,
                          compute_max_s=0.0, last_rejection="", stream_errors=0, last_stream_error="")
        self._last_q = None       # last streamed positions, held if the trajectory fails
        self._profiles_written = 0
        self._chunk = None        # (trajectory, start, first grid index, FeedforwardResult)
        self.backend = "numpy"    # until the compiled kernels are ready (_prepare_compiled)
        self.ready = False        # serving: ~/trajectory and ~/compute_profile exist
        self.pub_effort = None    # ~/effort_command exists only while publish_effort_command is true
        self._make_interfaces()
        self._load_model_from_parameters()
        self.add_on_set_parameters_callback(parameter_checker(PARAMETERS, self._check_parameter))
        self.add_post_set_parameters_callback(self._parameters_set)
        self._update_effort_publisher()
        self._streamer.start()

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
        urdf = self.get_parameter("robot_description").value
        path = self.get_parameter("urdf_path").value
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
            with warnings.catch_warnings(record=True) as caught:
                warnings.simplefilter("always", HodDynamicsWarning)
                model = RobotModel.from_urdf(urdf_source(source), root_link=p["root_link"] or None,
                                             tip_links=p["tip_links"] or None,
                                             locked_joints=dict(zip(p["locked_joints"], p["locked_positions"])),
                                             gravity=p["gravity"], strict=p["strict"],
                                             xacro_args=xacro_args_from_strings(p["xacro_args"],
                                                                                "parameter xacro_args"))
        except HodDynamicsError as exc:
            raise fault(f"invalid robot model ({origin}): {exc}") from None
        for w in caught:
            self.get_logger().warning(f"robot model from {origin}: {w.message}")
        if model.floating:
            raise fault(f"invalid robot model ({origin}): robot '{model.name}' has a floating base (a "
                        "floating joint below its world link), which this node does not stream yet; "
                        f"set root_link (e.g. '{model.root_link}') to fix the base")
        try:
            actuators = _actuators_from_parameter(p["actuators"], model)
        except HodDynamicsError as exc:
            raise fault(f"parameter actuators: {exc}") from None
        try:
            friction = load_friction(p["friction"] or None, model)
        except HodDynamicsError as exc:
            raise fault(f"parameter friction: {exc}") from None
        hold = None
        if p["initial_positions"]:
            hold = _hold_trajectory(model, p["initial_positions"], fault)
        try:
            backend = requested_backend()
        except HodDynamicsError as exc:
            raise fault(str(exc)) from None
        with self._lock:
            self.model, self.actuators, self.friction = model, actuators, friction
            if hold is not None:
                self.active = (hold, self.get_clock().now().nanoseconds)
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
                prepare_compiled_kernels(model, self._continuity() - 2)
        except Exception as exc:  # the numpy path keeps serving
            self.get_logger().error(f"compiled kernels unavailable, staying on the numpy path: {exc!r}")
            return
        if self._stop.is_set():
            return
        self.backend = "numba"
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
        with self._lock:
            if want and self.pub_effort is None:
                self.pub_effort = self.create_publisher(Float64MultiArray, "~/effort_command", 10)
            elif not want and self.pub_effort is not None:
                publisher, self.pub_effort = self.pub_effort, None
                self.destroy_publisher(publisher)

    def _param(self, name):
        """A parameter's value as Python data (arrays as lists)."""
        return parameter_value(self, _SPECS[name])

    # -- trajectories --------------------------------------------------------------------------
    def _on_trajectory(self, msg):
        now_ns = self.get_clock().now().nanoseconds
        try:
            traj = self._trajectory_from_msg(msg, now_ns)
        except HodDynamicsError as exc:
            self._reject(str(exc))
            return
        stamp = stamp_ns(msg.header.stamp)
        start = stamp if stamp > 0 else now_ns
        with self._lock:
            self.pending = [p for p in self.pending if p[0] < start] + [(start, traj)]
            self.latest = traj
            self.stats["accepted"] += 1

    def _trajectory_from_msg(self, msg, now_ns):
        """A validated Trajectory in model order; raises HodDynamicsError naming the fault."""
        if self.model is None:
            raise HodDynamicsError("no robot model yet")
        names, times, pos, vel, acc = waypoints_from_msg(msg)
        continuity = self._continuity()
        start = self._current_position(names, now_ns) if times[0] > 0 else None
        if start is not None:  # move from where the reference is now, as joint_trajectory_controller
            if len(times) > 1:  # validate the message as sent, so errors name its own indices
                Trajectory.from_waypoints(names, times, pos, vel, acc, continuity=continuity)
            times, pos = np.r_[0.0, times], np.vstack([start, pos])
            vel = None if vel is None else np.vstack([np.zeros(len(names)), vel])
            acc = None if acc is None else np.vstack([np.zeros(len(names)), acc])
        elif len(times) == 1:  # nothing to move from: hold the point (span ends at t = 0)
            times, pos = np.array([-1.0, 0.0]), np.vstack([pos, pos])
            vel = None if vel is None else np.vstack([vel, vel])
            acc = None if acc is None else np.vstack([acc, acc])
        traj = Trajectory.from_waypoints(names, times, pos, vel, acc, continuity=continuity)
        return traj.for_model(self.model, allow_extra=self.get_parameter("allow_extra_joints").value)

    def _continuity(self):
        elastic = self.actuators is not None and self.actuators.elastic.any()
        return max(self.order, 2 if elastic else 0) + 2

    def _current_position(self, names, now_ns):
        """Reference positions now in the order of ``names`` (None before any reference)."""
        with self._lock:
            active = self.active
        if active is None:
            return None
        traj, start = active
        q = traj(np.array([(now_ns - start) * 1e-9]))[0]
        index = {nm: k for k, nm in enumerate(self.model.joint_names)}
        if any(nm not in index for nm in names):
            return None
        return q[[index[nm] for nm in names]]

    def _reject(self, reason):
        with self._lock:
            self.stats["rejected"] += 1
            self.stats["last_rejection"] = reason
        self.get_logger().warning(f"rejected trajectory: {reason}")

    # -- streaming -----------------------------------------------------------------------------
    def _stream(self):
        """Call _on_tick every period of the node clock until the node is destroyed.

        A tick more than one period late is counted in the diagnostics and the schedule
        restarts from now (samples are skipped, never published in a burst).
        """
        clock, period_ns = self.get_clock(), int(round(self.period * 1e9))
        nap = 0.001 if self.get_parameter("use_sim_time").value else 0.005
        due = clock.now().nanoseconds + period_ns
        while not self._stop.is_set() and self.context.ok():
            wait = due - clock.now().nanoseconds
            if wait > 2 * period_ns:  # the clock went back (a bag restarted): restart the schedule
                due = clock.now().nanoseconds + period_ns
                continue
            if wait > 0:
                # short real-time sleeps: with simulated time the node clock may run at any pace
                time.sleep(min(wait * 1e-9, nap))
                continue
            if -wait > period_ns:
                with self._lock:
                    self.stats["late_ticks"] += 1
                due = clock.now().nanoseconds
            due += period_ns
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
        ns = now.nanoseconds
        with self._lock:
            while self.pending and self.pending[0][0] <= ns:
                start, traj = self.pending.pop(0)
                self.active = (traj, start)
            active, model, actuators = self.active, self.model, self.actuators
        if active is None or model is None:
            return
        traj, start = active
        k = int(round((ns - start) * 1e-9 / self.period))  # the grid sample nearest to now
        t0 = time.perf_counter()
        try:
            result, row = self._grid_sample(traj, start, model, actuators, k)
        except HodDynamicsError as exc:  # e.g. a spring that cannot be inverted at this torque
            self._hold_after_failure(model, f"at t = {k * self.period:.4f} s: {exc}")
            return
        stamp = Time(nanoseconds=start + int(round(k * self.period * 1e9)), clock_type=now.clock_type)
        self._publish_sample(result, row, stamp.to_msg())
        elapsed = time.perf_counter() - t0
        with self._lock:
            first = self.stats["ticks"] == 0
            self.stats["ticks"] += 1
            self.stats["compute_s"] += elapsed
            self.stats["compute_max_s"] = max(self.stats["compute_max_s"], elapsed)
        if first:
            self.get_logger().info(f"streaming: first sample published on {self.pub_ff.topic_name} "
                                   f"({self.backend} backend)")

    def _hold_after_failure(self, model, reason):
        """The current trajectory cannot be evaluated any more: hold the last published
        position (or fall silent if none was published) and report it."""
        hold = _hold_trajectory(model, self._last_q) if self._last_q is not None else None
        with self._lock:
            self.active = None if hold is None else (hold, self.get_clock().now().nanoseconds)
            self.stats["stream_errors"] += 1
            self.stats["last_stream_error"] = reason
        self.get_logger().error(f"trajectory abandoned, holding the last position: {reason}")

    def _grid_sample(self, traj, start, model, actuators, k):
        """(FeedforwardResult, row) holding grid sample k (time k * period after ``start``).

        Samples are computed ahead in chunks of CHUNK_SECONDS with one vectorised call: a
        single-sample call costs about as much as a whole chunk.
        """
        chunk = self._chunk
        if (chunk is None or chunk[0] is not traj or chunk[1] != start
                or not chunk[2] <= k < chunk[2] + len(chunk[3].t)):
            t = (k + np.arange(max(1, int(round(CHUNK_SECONDS / self.period))))) * self.period
            chunk = self._chunk = (traj, start, k, feedforward(model, traj, t, self.order, actuators,
                                                               self.friction, backend=self.backend))
        return chunk[3], k - chunk[2]

    def _publish_sample(self, result, row, stamp):
        q, tau = result.qjet[row], result.taujet[row]
        self._last_q = q[0]
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
        with self._lock:
            traj, model, actuators = self.latest, self.model, self.actuators
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
        result, report = profile(model, traj, self.get_parameter("profile_rate").value, self.order,
                                 actuators, effort_rate_limits=rate_limits, friction=self.friction,
                                 backend=self.backend)
        q, tau = result.qjet, result.taujet
        stamp = self.get_clock().now().to_msg()
        self.pub_profile.publish(trajectory_msg(model.joint_names, result.t - traj.start, q[:, 0], q[:, 1],
                                                q[:, 2], tau[:, 0], stamp))
        self.pub_profile_d.publish(multiarray(tau, ("sample", "order", "joint")))
        return dict(summary(result, report), files=self._write_profile(result))

    def _write_profile(self, result):
        folder = self.get_parameter("profile_dir").value
        if not folder:
            return []
        os.makedirs(folder, exist_ok=True)
        self._profiles_written += 1
        base = os.path.join(folder, time.strftime("profile_%Y%m%d_%H%M%S") + f"_{self._profiles_written}")
        return [save_csv(result, base + ".csv"), save_npz(result, base + ".npz")]

    # -- diagnostics ---------------------------------------------------------------------------
    def _publish_diagnostics(self):
        with self._lock:
            s = dict(self.stats)
        status = DiagnosticStatus(name=f"{self.get_name()}: feedforward",
                                  hardware_id=self.model.name if self.model else "no model")
        status.level = DiagnosticStatus.OK if self.model is not None else DiagnosticStatus.WARN
        status.message = "streaming" if self.active else ("waiting for a trajectory" if self.model else
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


def _actuators_from_parameter(value, model):
    """ActuatorSet from a YAML file path or inline YAML text; None when empty (rigid)."""
    return load_actuators(value, model) if value else None


def _hold_trajectory(model, positions, fault=HodDynamicsError):
    q = np.asarray(positions, dtype=float)
    if q.shape != (model.n_dof,):
        raise fault(f"parameter initial_positions: expected {model.n_dof} values (one per joint "
                    f"{list(model.joint_names)}), got {q.size}")
    # both waypoints before t = 0: from t = 0 on the trajectory holds its end exactly
    return Trajectory.from_waypoints(model.joint_names, [-1.0, 0.0], np.vstack([q, q]))


def main(args=None):
    """Entry point of ``ros2 run hod_dynamics feedforward_node``; returns the exit code."""
    return run(FeedforwardNode, NODE_NAME, args)


if __name__ == "__main__":
    exit_process(main())
