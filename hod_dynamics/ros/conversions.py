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


def to_seconds(stamp):
    """builtin_interfaces Time or Duration -> float seconds."""
    return stamp_ns(stamp) / NS_PER_S


def duration(seconds):
    """float seconds (>= 0 or negative) -> builtin_interfaces Duration (nanosec in [0, 1e9))."""
    sec, nanosec = split_ns(seconds_to_ns(seconds))
    return Duration(sec=sec, nanosec=nanosec)


_SINGULAR = {"positions": "position", "velocities": "velocity", "accelerations": "acceleration"}


def waypoints_from_msg(msg):
    """Waypoints of a trajectory_msgs/JointTrajectory.

    Returns ``(joint_names, times (N,), positions (N, n), velocities, accelerations)`` with the
    last two (N, n) or None when the message does not fill them. Raises
    :class:`TrajectoryError` naming the point at fault (no points, wrong lengths, a field
    filled in some points only, a value that is not finite, a negative ``time_from_start``).
    Points are named "waypoint k" (k from 0, as in the message), as the trajectory's own checks
    name them.
    """
    names = list(msg.joint_names)
    n = len(names)
    if not msg.points:
        raise TrajectoryError("trajectory has no points")
    fields = {}
    for field in ("positions", "velocities", "accelerations"):
        lengths = [len(getattr(p, field)) for p in msg.points]
        if field != "positions" and not any(lengths):
            fields[field] = None
            continue
        for k, length in enumerate(lengths):
            if length != n:
                raise TrajectoryError(f"waypoint {k}: {length} {field} for {n} joint names {names}")
        fields[field] = np.array([getattr(p, field) for p in msg.points], dtype=float)
        bad = np.argwhere(~np.isfinite(fields[field]))
        if bad.size:  # named here, by the message's own point index (the node may prepend one)
            k, j = bad[0]
            raise TrajectoryError(f"waypoint {k}, joint '{names[j]}': {_SINGULAR[field]} "
                                  f"{fields[field][k, j]} is not finite")
    times = np.array([to_seconds(p.time_from_start) for p in msg.points])
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


def effort_trajectory_msgs(points, header):
    """(JointTrajectory, Float64MultiArray) of an :class:`~hod_dynamics.feedforward.effort_trajectory.EffortTrajectory`:
    the points with positions, velocities, accelerations and effort = tau, under ``header``
    (the stamp of the trajectory they resample); and tau^(1..order) at the same points, dims
    ``sample`` x ``order`` x ``joint``."""
    q, tau = points.qjet, points.taujet
    msg = trajectory_msg(points.joint_names, points.t, q[:, 0], q[:, 1], q[:, 2], tau[:, 0])
    msg.header = header
    return msg, multiarray(tau[:, 1:], ("sample", "order", "joint"))


def serialized_profile(result, start, stamp):
    """The two latched messages of a profile, serialised (bytes, as ``Publisher.publish``
    takes them): the JointTrajectory of every sample (q, qd, qdd, effort = tau,
    ``time_from_start`` from ``start``, header stamp ``stamp``) and the Float64MultiArray of
    tau^(0..order), dims ``sample`` x ``order`` x ``joint``."""
    from rclpy.serialization import serialize_message

    q, tau = result.qjet, result.taujet
    msg = trajectory_msg(result.joint_names, result.t - start, q[:, 0], q[:, 1], q[:, 2], tau[:, 0], stamp)
    yield serialize_message(msg)
    del msg
    yield serialize_message(multiarray(tau, ("sample", "order", "joint")))


def profile_message_bytes(samples, n_joints, order):
    """Estimated serialised size in bytes of :func:`serialized_profile`'s two messages: per
    point four float64 sequences (length and alignment, 8 bytes, plus 8 per joint) and a
    Duration; the derivatives 8 bytes per value."""
    return samples * (4 * (8 + 8 * n_joints) + 8) + samples * (order + 1) * n_joints * 8
