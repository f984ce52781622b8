"""The topics a feedforward stream publishes at every sample, and the messages they reuse.

Per sample (``~`` the node's namespace; units in doc/ros2_interface.md):

- ``~/feedforward`` (trajectory_msgs/JointTrajectory, one point: q, qd, qdd, effort = tau) and
  ``~/torque_derivatives`` (std_msgs/Float64MultiArray, rows tau^(0..order));
- ``~/tau``, ``~/tau_dot``, ``~/tau_ddot``, then ``~/tau_d3``, ``~/tau_d4``, ... up to the order
  (sensor_msgs/JointState: header stamp = the sample's time, ``name`` = the joints, ``effort`` =
  that derivative of tau), which plotting tools (PlotJuggler, Foxglove) show by joint name
  against the sample's time;
- with elastic actuators ``~/motor_reference`` and ``~/motor_derivatives``;
- ``~/effort_command`` (Float64MultiArray: tau) while the node's parameter asks for it.

rclpy serialises a message when it is published, so each topic's message is made once (names,
layouts) and only its values are set per sample; and a topic that has no subscriber is not
published at all (asking costs a microsecond, converting and serialising a message tens: at 1 kHz
the topics nobody reads would cost the node a tenth of a core).
"""

import threading

from rclpy.qos import HistoryPolicy, QoSProfile, ReliabilityPolicy
from sensor_msgs.msg import JointState
from std_msgs.msg import Float64MultiArray, MultiArrayDimension
from trajectory_msgs.msg import JointTrajectory, JointTrajectoryPoint

from ..recordings.msgfields import multiarray_dims
from .conversions import duration, float64s


def derivative_topic(k):
    """The JointState topic of tau^(k): ``~/tau``, ``~/tau_dot``, ``~/tau_ddot``, ``~/tau_d3``, ..."""
    return "~/" + ("tau", "tau_dot", "tau_ddot")[k] if k < 3 else f"~/tau_d{k}"


def stream_qos(reliability, depth):
    """The QoS of the streamed topics: ``reliability`` "reliable" or "best_effort", ``depth``."""
    return QoSProfile(history=HistoryPolicy.KEEP_LAST, depth=depth,
                      reliability=ReliabilityPolicy.RELIABLE if reliability == "reliable"
                      else ReliabilityPolicy.BEST_EFFORT)


class SamplePublishers:
    """The publishers of every streamed topic of ``node`` (see the module docstring) with QoS
    ``qos``, for torque derivatives up to ``order``."""

    def __init__(self, node, order, qos):
        self.node, self.order, self.qos = node, order, qos
        self.ff = node.create_publisher(JointTrajectory, "~/feedforward", qos)
        self.tau = node.create_publisher(Float64MultiArray, "~/torque_derivatives", qos)
        self.joint_states = [node.create_publisher(JointState, derivative_topic(k), qos) for k in range(order + 1)]
        self.motor = node.create_publisher(JointTrajectory, "~/motor_reference", qos)
        self.motor_d = node.create_publisher(Float64MultiArray, "~/motor_derivatives", qos)
        self.effort = None  # ~/effort_command exists only while asked for
        self._effort_lock = threading.Lock()

    def set_effort_command(self, wanted):
        """Advertise ~/effort_command, or withdraw it (so that ``ros2 topic echo`` on it does not
        wait on a topic that never publishes)."""
        with self._effort_lock:
            if wanted and self.effort is None:
                self.effort = self.node.create_publisher(Float64MultiArray, "~/effort_command", self.qos)
            elif not wanted and self.effort is not None:
                publisher, self.effort = self.effort, None
                self.node.destroy_publisher(publisher)

    def set_model(self, model):
        """The messages every sample reuses for ``model``: joint names and layouts set once."""
        names, n = list(model.joint_names), model.n_dof

        def one_point():
            msg = JointTrajectory()
            msg.joint_names = names
            msg.points = [JointTrajectoryPoint()]
            return msg

        def layout(shape, labels):
            msg = Float64MultiArray()
            msg.layout.dim = [MultiArrayDimension(label=lab, size=size, stride=stride)
                              for lab, size, stride in multiarray_dims(shape, labels)]
            return msg

        self._ff, self._motor = one_point(), one_point()
        self._tau = layout((self.order + 1, n), ("order", "joint"))
        self._motor_d = layout((self.order + 1, n), ("order", "joint"))
        self._effort = layout((n,), ("joint",))
        self._states = []
        for _ in range(self.order + 1):
            msg = JointState()
            msg.name = names
            self._states.append(msg)

    def publish(self, result, row, stamp):
        """Publish sample ``row`` of ``result`` (a FeedforwardResult) stamped ``stamp``
        (builtin_interfaces Time)."""
        q, tau = result.qjet[row], result.taujet[row]
        since = duration(result.t[row])
        if self.ff.get_subscription_count():
            msg = self._ff
            msg.header.stamp = stamp
            point = msg.points[0]
            point.positions, point.velocities, point.accelerations = float64s(q[0]), float64s(q[1]), float64s(q[2])
            point.effort, point.time_from_start = float64s(tau[0]), since
            self.ff.publish(msg)
        if self.tau.get_subscription_count():
            self._tau.data = float64s(tau)
            self.tau.publish(self._tau)
        for k, (publisher, msg) in enumerate(zip(self.joint_states, self._states)):
            if publisher.get_subscription_count():
                msg.header.stamp = stamp
                msg.effort = float64s(tau[k])
                publisher.publish(msg)
        if result.thetajet is not None and result.elastic.any() and (self.motor.get_subscription_count()
                                                                     or self.motor_d.get_subscription_count()):
            th = result.thetajet[row]  # rows theta^(0..max(order, 2))
            msg = self._motor
            msg.header.stamp = stamp
            point = msg.points[0]
            point.positions, point.velocities, point.accelerations = (float64s(th[0]), float64s(th[1]),
                                                                      float64s(th[2]))
            point.effort, point.time_from_start = float64s(result.u[row]), since
            self.motor.publish(msg)
            self._motor_d.data = float64s(th[:self.order + 1])
            self.motor_d.publish(self._motor_d)
        effort = self.effort
        if effort is not None and effort.get_subscription_count():
            self._effort.data = float64s(tau[0])
            effort.publish(self._effort)
