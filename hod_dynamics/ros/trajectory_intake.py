"""Trajectories taken in off the executor: a queue and a thread of their own.

A planner's trajectory of 60,000 points takes most of a second to accept (its spline, its points
for a controller, the URDF limits there); done in a subscription's callback it
would hold the executor, so that ``ros2 param get`` waited and a shutdown could not join the
executor's thread. Here the callback only queues the message: the topic's as its serialised bytes
(rclpy's raw subscription: turning 60,000 points into Python objects costs more than accepting
them, :mod:`hod_dynamics.recordings.trajectory_cdr` reads them as arrays), an action goal's as the
message. One thread takes them in order, joins each from the robot's measured state
(:class:`~hod_dynamics.feedforward.measured_state.MeasuredState`, fed by the joint-state
subscription), has the stream accept it, hands the result to the caller's callback (which sends
its points to the controller) and then has the stream compute its first samples.
"""

import queue
import threading
import time
from dataclasses import dataclass
from typing import Any, Callable, Optional

from ..errors import HodDynamicsError
from ..recordings.msgfields import stamp_ns
from ..recordings.trajectory_cdr import decode_joint_trajectory, point_count
from .conversions import waypoints, waypoints_from_msg


@dataclass
class Job:
    """One trajectory to accept: ``raw`` (serialised JointTrajectory bytes) or ``msg`` (a
    JointTrajectory object), received at ``now_ns`` of the node clock; ``done(accepted, header)``
    is called with the :class:`~hod_dynamics.feedforward.reference_stream.Accepted` and the
    message's (stamp ns, frame id), ``failed(reason)`` with the one-line reason of a refusal."""

    now_ns: int
    done: Callable
    failed: Callable
    raw: Optional[bytes] = None
    msg: Any = None


class TrajectoryIntake:
    """The queue and the thread that accept trajectories for ``stream`` (a ReferenceStream),
    joined from ``measured`` (a MeasuredState). ``max_points()``: the largest number of
    waypoints a message may have (read at each message: a parameter). ``log(text)``: where a
    line on each trajectory taken in goes (its size, then the seconds it took); ``seconds``:
    those of the last one. ``error(text)``: where a callback's failure goes (``log`` unless
    given). ``clock()``: the node clock's time in ns, read when a trajectory stamped 0 has been
    accepted: it starts then (without a clock, at its receipt)."""

    def __init__(self, stream, measured, max_points, log=None, name="hod_feedforward_intake", clock=None,
                 error=None):
        self.stream, self.measured, self.max_points, self.clock = stream, measured, max_points, clock
        self.log = log or (lambda text: None)
        self.error = error or self.log
        self.seconds = None
        self._jobs = queue.Queue()
        self._stop = threading.Event()
        self.thread = threading.Thread(target=self._run, name=name, daemon=True)

    def start(self):
        self.thread.start()

    def stop(self):
        """End the thread after the job in hand (a job waiting is dropped)."""
        self._stop.set()
        self._jobs.put(None)

    def submit(self, job):
        self._jobs.put(job)

    def pending(self):
        """Jobs waiting (the one in hand not included)."""
        return self._jobs.qsize()

    def _run(self):
        while not self._stop.is_set():
            job = self._jobs.get()
            if job is None or self._stop.is_set():
                return
            try:
                self._take(job)
            except Exception as exc:  # a callback failed: the node shuts down, or a defect
                if self._stop.is_set():  # the node's publishers and logger may be gone
                    return
                self.error(f"internal error after taking in a trajectory: {exc!r}")

    def _take(self, job):
        """Accept ``job`` and call its ``done``, or its ``failed`` with the reason of a refusal."""
        start = time.perf_counter()
        try:
            accepted, header = self.accept(job)
        # the reason is said before it is counted: whoever sees the count has the line
        except HodDynamicsError as exc:
            job.failed(str(exc))
            self.stream.reject(str(exc))
            return
        except Exception as exc:  # the intake must survive anything one message does
            job.failed(f"internal error: {exc!r}")
            self.stream.reject(repr(exc))
            return
        self.seconds = time.perf_counter() - start
        if self._stop.is_set():  # halted meanwhile: the node is shutting down, nothing to publish to
            return
        self.log(f"accepted a trajectory of {len(accepted.trajectory.waypoint_times)} waypoints in "
                 f"{self.seconds:.3f} s")
        job.done(accepted, header)
        # the stream's first samples of it after its points have gone to the controller
        self.stream.prepare(accepted)

    def accept(self, job):
        """(Accepted, (stamp ns, frame id)) of one job; raises HodDynamicsError naming the fault."""
        if job.raw is not None:
            count = point_count(job.raw)
            if count > self.max_points():
                raise HodDynamicsError(f"trajectory of {count} points refused: more than max_trajectory_points "
                                       f"{self.max_points()}")
            self.log(f"taking in a trajectory of {count} points")
            arrays = decode_joint_trajectory(job.raw)
            names, times, pos, vel, acc = waypoints(arrays)
            header = (arrays.stamp_ns, arrays.frame_id)
        else:
            names, times, pos, vel, acc = waypoints_from_msg(job.msg)
            header = (stamp_ns(job.msg.header.stamp), job.msg.header.frame_id)
        if job.now_ns == 0:  # simulated time before the first /clock: no start time to give it
            raise HodDynamicsError("no clock yet: use_sim_time is true and /clock has not been received")
        state = self.measured.state(names, job.now_ns) if times[0] > 0 else None
        accepted = self.stream.accept(names, times, pos, vel, acc, stamp_ns=header[0], now_ns=job.now_ns,
                                      state=state, clock=self.clock, first_samples=False)
        # a trajectory stamped 0 starts when accepted: its points go to the controller stamped
        # with that start, so that the controller and the stream run it on the same time base
        return accepted, (accepted.start_ns, header[1])
