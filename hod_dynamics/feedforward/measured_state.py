"""The robot's measured joint state, merged by joint name from partial messages.

A driver's sensor_msgs/JointState may carry some joints only (an arm and its gripper from two
publishers, a mobile base's wheels apart), so each joint keeps the newest position and velocity
any message gave it, with the time it was received: the state of a set of joints is known once
every one of them has been reported, and fresh while its oldest report is younger than
``max_age``. This is what a trajectory that starts after t = 0 is joined from
(:meth:`hod_dynamics.feedforward.reference_stream.ReferenceStream.accept`), as
joint_trajectory_controller joins a trajectory from the measured state.
"""

import threading

import numpy as np


class MeasuredState:
    """Newest measured position and velocity of every joint reported; see the module docstring.

    ``max_age`` (s): reports older than this are stale (``state`` gives None). Safe to call from
    several threads (a subscription's and the one that accepts trajectories).
    """

    def __init__(self, max_age=1.0):
        self.max_age = float(max_age)
        self._lock = threading.Lock()
        self._position, self._velocity, self._received = {}, {}, {}
        self.messages = 0

    def update(self, names, positions, velocities=(), received_ns=0):
        """Merge one message: ``names`` (m,) with ``positions`` (m,) rad or m and ``velocities``
        (m,) rad/s or m/s, or empty (then 0: a driver that reports no velocity), received at
        ``received_ns`` (int ns of the stream's clock). A message whose arrays do not match its
        names, or that holds a non-finite value, changes nothing; returns False for it."""
        q = np.asarray(positions, dtype=float)
        v = np.zeros(len(names)) if len(velocities) == 0 else np.asarray(velocities, dtype=float)
        if q.shape != (len(names),) or v.shape != (len(names),) or not (np.isfinite(q).all() and np.isfinite(v).all()):
            return False
        with self._lock:
            for name, qi, vi in zip(names, q, v):
                self._position[name], self._velocity[name], self._received[name] = float(qi), float(vi), received_ns
            self.messages += 1
        return True

    def state(self, names, now_ns):
        """(positions (n,), velocities (n,)) of the joints ``names`` at ``now_ns``, or None when
        one of them has not been reported, or only longer than ``max_age`` ago."""
        with self._lock:
            if any(name not in self._position for name in names):
                return None
            oldest = min(self._received[name] for name in names)
            if now_ns - oldest > self.max_age * 1e9:
                return None
            return (np.array([self._position[name] for name in names]),
                    np.array([self._velocity[name] for name in names]))
