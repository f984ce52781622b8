"""Standard ROS 2 messages <-> numpy arrays. No computation happens here.

Times: builtin_interfaces Time/Duration <-> float seconds. Multi-dimensional results travel as
std_msgs/Float64MultiArray, row-major, with one labelled dimension per axis.
"""

import numpy as np
from builtin_interfaces.msg import Duration
from std_msgs.msg import Float64MultiArray, MultiArrayDimension
from trajectory_msgs.msg import JointTrajectory, JointTrajectoryPoint

from ..errors import TrajectoryError
from ..msgfields import NS_PER_S, multiarray_dims, seconds_to_ns, split_ns, stamp_ns


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
    filled in some points only, a value that is not finite).
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
                raise TrajectoryError(f"point {k}: {length} {field} for {n} joint names {names}")
        fields[field] = np.array([getattr(p, field) for p in msg.points], dtype=float)
        bad = np.argwhere(~np.isfinite(fields[field]))
        if bad.size:  # named here, by the message's own point index (the node may prepend one)
            k, j = bad[0]
            raise TrajectoryError(f"waypoint {k}, joint '{names[j]}': {_SINGULAR[field]} "
                                  f"{fields[field][k, j]} is not finite")
    times = np.array([to_seconds(p.time_from_start) for p in msg.points])
    return names, times, fields["positions"], fields["velocities"], fields["accelerations"]


def multiarray(values, labels):
    """ndarray -> Float64MultiArray, row-major, dims labelled ``labels`` (one per axis)."""
    values = np.ascontiguousarray(values, dtype=float)
    msg = Float64MultiArray()
    msg.layout.dim = [MultiArrayDimension(label=lab, size=size, stride=stride)
                      for lab, size, stride in multiarray_dims(values.shape, labels)]
    msg.data = values.ravel().tolist()
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
    for k, t in enumerate(np.atleast_1d(times)):
        point = JointTrajectoryPoint()
        point.positions = np.asarray(positions[k], dtype=float).tolist()
        if velocities is not None:
            point.velocities = np.asarray(velocities[k], dtype=float).tolist()
        if accelerations is not None:
            point.accelerations = np.asarray(accelerations[k], dtype=float).tolist()
        if efforts is not None:
            point.effort = np.asarray(efforts[k], dtype=float).tolist()
        point.time_from_start = duration(t)
        msg.points.append(point)
    return msg
