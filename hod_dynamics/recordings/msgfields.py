"""Field values of standard ROS messages, without ROS: shared by the ROS layer (rclpy messages)
and the bag tools (rosbags messages), so that both write the same stamps and array layouts."""

import numpy as np

NS_PER_S = 1_000_000_000


def stamp_ns(stamp):
    """builtin_interfaces Time or Duration (any object with ``sec``, ``nanosec``) -> int ns."""
    return int(stamp.sec) * NS_PER_S + int(stamp.nanosec)


def split_ns(ns):
    """int ns -> ``(sec, nanosec)`` with nanosec in [0, 1e9), as Time/Duration hold them."""
    sec, nanosec = divmod(int(ns), NS_PER_S)
    return int(sec), int(nanosec)


def seconds_to_ns(seconds):
    """float s -> int ns, rounded."""
    return int(round(float(seconds) * NS_PER_S))


def multiarray_dims(shape, labels):
    """``(label, size, stride)`` of every MultiArrayDimension of a row-major array of ``shape``."""
    if len(shape) != len(labels):
        raise ValueError(f"{len(shape)}-d array for labels {labels}")
    strides = np.cumprod((tuple(shape) + (1,))[::-1])[::-1][:-1]
    return [(lab, int(s), int(st)) for lab, s, st in zip(labels, shape, strides)]
