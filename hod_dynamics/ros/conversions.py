"""Standard ROS 2 messages <-> numpy arrays. No computation happens here.

Times: builtin_interfaces Time/Duration <-> float seconds. Multi-dimensional results travel as
std_msgs/Float64MultiArray, row-major, with one labelled dimension per axis. Arrays go into the
messages' float64[] fields as ``array.array('d')`` (:func:`float64s`), which the generated
setters take as they are, instead of checking every element of a list.
"""

import array

import numpy as np
from builtin_interfaces.msg import Duration
from std_msgs.msg import Float64MultiArray, MultiArrayDimension
from trajectory_msgs.msg import JointTrajectory, JointTrajectoryPoint

from ..errors import TrajectoryError
from ..recordings.msgfields import NS_PER_S, multiarray_dims, seconds_to_ns, split_ns, stamp_ns
from ..recordings.trajectory_cdr import decode_joint_trajectory, encode_joint_trajectory


def to_seconds(stamp):
    """builtin_interfaces Time or Duration -> float seconds."""
    return stamp_ns(stamp) / NS_PER_S


def duration(seconds):
    """float seconds (>= 0 or negative) -> builtin_interfaces Duration (nanosec in [0, 1e9))."""
    sec, nanosec = split_ns(seconds_to_ns(seconds))
    return Duration(sec=sec, nanosec=nanosec)


_SINGULAR = {"positions": "position", "velocities": "velocity", "accelerations": "acceleration"}


def waypoints_from_msg(msg):
    """:func:`waypoints` of a trajectory_msgs/JointTrajectory message object (an action goal's,
    for one), through its serialised form."""
    from rclpy.serialization import serialize_message

    return waypoints(decode_joint_trajectory(serialize_message(msg)))


def waypoints(arrays):
    """Waypoints of a JointTrajectory (:class:`~hod_dynamics.recordings.trajectory_cdr.TrajectoryArrays`,
    decoded from its serialised form).

    Returns ``(joint_names, times (N,), positions (N, n), velocities, accelerations)`` with the
    last two (N, n) or None when the message does not fill them. Raises
    :class:`TrajectoryError` naming the point at fault (no points, wrong lengths, a field
    filled in some points only, a value that is not finite, a negative ``time_from_start``).
    Points are named "waypoint k" (k from 0, as in the message), as the trajectory's own checks
    name them.
    """
    names = list(arrays.joint_names)
    n = len(names)
    if not len(arrays.time_from_start_ns):
        raise TrajectoryError("trajectory has no points")
    fields = {}
    for f, field in enumerate(("positions", "velocities", "accelerations")):
        lengths = arrays.lengths[:, f]
        values = getattr(arrays, field)
        if field != "positions" and values is None:
            fields[field] = None
            continue
        wrong = np.flatnonzero(lengths != n)
        if len(wrong):
            k = wrong[0]
            raise TrajectoryError(f"waypoint {k}: {lengths[k]} {field} for {n} joint names {names}")
        bad = np.argwhere(~np.isfinite(values))
        if bad.size:  # named here, by the message's own point index (the node may prepend one)
            k, j = bad[0]
            raise TrajectoryError(f"waypoint {k}, joint '{names[j]}': {_SINGULAR[field]} "
                                  f"{values[k, j]} is not finite")
        fields[field] = values
    times = arrays.time_from_start_ns / NS_PER_S
    negative = np.flatnonzero(times < 0)
    if negative.size:  # a Duration can be negative; joint_trajectory_controller never starts such a point
        k = negative[0]
        raise TrajectoryError(f"waypoint {k}: time_from_start {times[k]:g} s is negative")
    return names, times, fields["positions"], fields["velocities"], fields["accelerations"]


def float64s(values):
    """ndarray (any shape) -> array.array('d') of its values in row-major order."""
    out = array.array("d")
    out.frombytes(np.ascontiguousarray(values, dtype=float).tobytes())
    return out


def multiarray(values, labels):
    """ndarray -> Float64MultiArray, row-major, dims labelled ``labels`` (one per axis)."""
    values = np.ascontiguousarray(values, dtype=float)
    msg = Float64MultiArray()
    msg.layout.dim = [MultiArrayDimension(label=lab, size=size, stride=stride)
                      for lab, size, stride in multiarray_dims(values.shape, labels)]
    msg.data = float64s(values)
    return msg


def array_from_multiarray(msg):
    """Float64MultiArray -> ndarray shaped by its layout; returns (array, labels)."""
    shape = tuple(d.size for d in msg.layout.dim)
    data = np.asarray(msg.data, dtype=float)[msg.layout.data_offset:]
    return data.reshape(shape), [d.label for d in msg.layout.dim]


def trajectory_msg(joint_names, times, positions, velocities=None, accelerations=None,
                   efforts=None, stamp=None):
    """JointTrajectory with one point per row of ``positions`` (N, n); ``times`` (N,) s."""
    msg = JointTrajectory()
    if stamp is not None:
        msg.header.stamp = stamp
    msg.joint_names = list(joint_names)
    fields = [(name, np.asarray(v, dtype=float)) for name, v in (
        ("positions", positions), ("velocities", velocities), ("accelerations", accelerations),
        ("effort", efforts)) if v is not None]
    points = []
    for k, t in enumerate(np.atleast_1d(times)):
        point = JointTrajectoryPoint()
        for name, values in fields:
            setattr(point, name, float64s(values[k]))
        point.time_from_start = duration(t)
        points.append(point)
    msg.points = points
    return msg


def effort_trajectory_bytes(points, stamp_ns=0, frame_id=""):
    """The serialised (JointTrajectory, Float64MultiArray) of an
    :class:`~hod_dynamics.feedforward.effort_trajectory.EffortTrajectory`: the points with
    positions, velocities, accelerations and effort = tau, under the header (``stamp_ns``,
    ``frame_id``) of the trajectory they resample; and tau^(1..order) at the same points, dims
    ``sample`` x ``order`` x ``joint``. Bytes, as ``Publisher.publish`` takes them: a planner's
    60,000 points would take seconds as message objects."""
    from rclpy.serialization import serialize_message

    q, tau = points.qjet, points.taujet
    ns = np.round(points.t * NS_PER_S).astype(np.int64)
    trajectory = encode_joint_trajectory(points.joint_names, ns, q[:, 0], q[:, 1], q[:, 2], tau[:, 0],
                                         stamp_ns=stamp_ns, frame_id=frame_id)
    return trajectory, serialize_message(multiarray(tau[:, 1:], ("sample", "order", "joint")))


def serialized_profile(result, start, stamp):
    """The two latched messages of a profile, serialised (bytes, as ``Publisher.publish``
    takes them): the JointTrajectory of every sample (q, qd, qdd, effort = tau,
    ``time_from_start`` from ``start``, header stamp ``stamp``) and the Float64MultiArray of
    tau^(0..order), dims ``sample`` x ``order`` x ``joint``."""
    from rclpy.serialization import serialize_message

    q, tau = result.qjet, result.taujet
    ns = np.round((result.t - start) * NS_PER_S).astype(np.int64)
    yield encode_joint_trajectory(result.joint_names, ns, q[:, 0], q[:, 1], q[:, 2], tau[:, 0],
                                  stamp_ns=stamp_ns(stamp))
    yield serialize_message(multiarray(tau, ("sample", "order", "joint")))


def profile_message_bytes(samples, n_joints, order):
    """Estimated serialised size in bytes of :func:`serialized_profile`'s two messages: per
    point four float64 sequences (length and alignment, 8 bytes, plus 8 per joint) and a
    Duration; the derivatives 8 bytes per value."""
    return samples * (4 * (8 + 8 * n_joints) + 8) + samples * (order + 1) * n_joints * 8
