"""The scheduling rules of a feedforward stream, without ROS: which trajectory is the reference
at each moment of the stream's clock, and the samples on the stream's time grid.

A node (:mod:`hod_dynamics.ros.feedforward_node`) is a shell around one :class:`ReferenceStream`:
it hands it the waypoints of every trajectory message with the message's stamp and the clock's
time, asks it at every tick for the sample to publish, and publishes what it gets. Everything a
stream decides is here, and tested in milliseconds without DDS:

- **Start stamps.** A trajectory starts at its header stamp, or on receipt when the stamp is
  zero (as in joint_trajectory_controller). It waits in a queue until then; one that starts
  earlier than queued ones replaces them (they would never start).
- **Moving from the current reference.** A trajectory whose first point is after its start
  (``time_from_start > 0``) begins where the reference is at receipt, at rest: that position is
  prepended at t = 0, so that the reference never jumps. A single point is then a move to it,
  arriving at its time.
- **A single point with nothing to move from** is held from its start on.
- **The grid.** Samples lie on ``start + k * period`` of the current trajectory; the tick at
  clock time ``now`` serves the nearest grid sample, stamped with its grid time.
- **The tick schedule** (:meth:`ReferenceStream.wait_ns`): a tick more than one period late is
  counted (``late_ticks``) and the schedule restarts from now: samples are skipped, never
  published in a burst. A clock that goes back by more than two periods (a bag played again)
  restarts the schedule.
- **Holding after a failure.** A sample that cannot be computed (a spring that cannot be
  inverted at that torque) abandons the trajectory: the stream holds the last sample's position
  (or falls silent if it served none) and counts the failure.
- **Chunks.** Samples are computed ahead, ``chunk_seconds`` of them in one vectorised call: a
  single-sample call costs about as much as a whole chunk.
- **Statistics** for the diagnostics: ticks, late ticks, accepted and rejected trajectories,
  compute time, failures and the last reasons.

All methods are safe to call from several threads (a node's executor and its streaming thread).
Times are integers of nanoseconds of the stream's clock (wall or simulated time).
"""

import threading
from dataclasses import dataclass

import numpy as np

from .errors import HodDynamicsError, InputError
from .trajectory import Trajectory
from .trajectory_feedforward import FeedforwardResult, feedforward

CHUNK_SECONDS = 0.1  # samples computed ahead per vectorised call


@dataclass(frozen=True)
class Sample:
    """One grid sample of the stream: row ``row`` of ``result`` (a chunk), grid index ``k`` of
    the trajectory started at ``start_ns``, stamped ``stamp_ns`` (its grid time)."""

    result: FeedforwardResult
    row: int
    k: int
    start_ns: int
    stamp_ns: int


def hold_trajectory(model, positions):
    """A trajectory that holds ``positions`` (n,) in model order from t = 0 on. Raises
    InputError unless there is one value per joint."""
    q = np.asarray(positions, dtype=float)
    if q.shape != (model.n_dof,):
        raise InputError(f"expected {model.n_dof} values (one per joint {list(model.joint_names)}), "
                         f"got {q.size}")
    # both waypoints before t = 0: from t = 0 on the trajectory holds its end exactly
    return Trajectory.from_waypoints(model.joint_names, [-1.0, 0.0], np.vstack([q, q]))


class ReferenceStream:
    """The reference a feedforward stream serves, its queue of trajectories, its samples on the
    time grid and its statistics; see the module docstring for the rules.

    ``period`` (s): the grid spacing, 1 / rate; ``order``: the highest torque derivative of
    the samples. :meth:`set_model` gives it a model (until then nothing is served).
    ``chunk_seconds``: samples computed ahead per call. ``backend``: the backend of the
    samples' dynamics (a node switches it to "numba" once the compiled kernels are ready).
    """

    def __init__(self, period, order, *, allow_extra_joints=False, chunk_seconds=CHUNK_SECONDS,
                 backend="numpy"):
        self.period = float(period)
        self.period_ns = int(round(self.period * 1e9))
        self.order = order
        self.allow_extra_joints = allow_extra_joints
        self.chunk_size = max(1, int(round(chunk_seconds / self.period)))
        self.backend = backend
        self.model = self.actuators = self.friction = None
        self.active = None        # (Trajectory in model order, start ns), the current reference
        self.pending = []         # [(start ns, Trajectory)] waiting for their start time
        self.latest = None        # the most recent accepted trajectory
        self.stats = dict(ticks=0, late_ticks=0, rejected=0, accepted=0, compute_s=0.0,
                          compute_max_s=0.0, last_rejection="", stream_errors=0, last_stream_error="")
        self._lock = threading.Lock()
        self._due = None          # clock time of the next tick (ns); None: not scheduled yet
        self._last_q = None       # the position of the last sample served, held after a failure
        self._chunk = None        # (trajectory, start, first grid index, FeedforwardResult)

    # -- the model -----------------------------------------------------------------------------
    def set_model(self, model, actuators=None, friction=None, *, hold=None, now_ns=0):
        """Serve ``model`` (with its ``actuators`` and ``friction``, as :func:`feedforward`
        takes them); with ``hold`` (positions (n,) in model order, or their
        :func:`hold_trajectory`) the reference holds them from ``now_ns`` on. Raises InputError
        for positions that are not one value per joint."""
        if hold is not None and not isinstance(hold, Trajectory):
            hold = hold_trajectory(model, hold)
        with self._lock:
            self.model, self.actuators, self.friction = model, actuators, friction
            if hold is not None:
                self.active = (hold, now_ns)

    @property
    def continuity(self):
        """The continuity a trajectory needs: the torque order (2 at least with elastic
        joints, whose motor references need tau'') plus 2."""
        elastic = self.actuators is not None and self.actuators.elastic.any()
        return max(self.order, 2 if elastic else 0) + 2

    # -- trajectories --------------------------------------------------------------------------
    def accept(self, names, times, positions, velocities=None, accelerations=None, *, stamp_ns=0,
               now_ns):
        """Validate a trajectory's waypoints (joint ``names``, ``times`` (N,) s from its start,
        ``positions`` and optional ``velocities``, ``accelerations`` (N, len(names))) and queue
        it to start at ``stamp_ns`` (0: at ``now_ns``). Returns ``(Trajectory in model order,
        start ns)``. Raises HodDynamicsError naming the fault (count it with :meth:`reject`)."""
        traj = self._trajectory(names, times, positions, velocities, accelerations, now_ns)
        start = stamp_ns if stamp_ns > 0 else now_ns
        with self._lock:
            self.pending = [p for p in self.pending if p[0] < start] + [(start, traj)]
            self.latest = traj
            self.stats["accepted"] += 1
        return traj, start

    def reject(self, reason):
        """Count a rejected trajectory and keep its reason for the diagnostics."""
        with self._lock:
            self.stats["rejected"] += 1
            self.stats["last_rejection"] = reason

    def _trajectory(self, names, times, pos, vel, acc, now_ns):
        """A validated Trajectory in model order; raises HodDynamicsError naming the fault."""
        model = self.model
        if model is None:
            raise HodDynamicsError("no robot model yet")
        times = np.asarray(times, dtype=float)
        continuity = self.continuity
        start = self.position(names, now_ns) if times[0] > 0 else None
        if start is not None:  # move from where the reference is now, as joint_trajectory_controller
            if len(times) > 1:  # validate the waypoints as sent, so errors name their own indices
                Trajectory.from_waypoints(names, times, pos, vel, acc, continuity=continuity)
            times, pos = np.r_[0.0, times], np.vstack([start, pos])
            vel = None if vel is None else np.vstack([np.zeros(len(names)), vel])
            acc = None if acc is None else np.vstack([np.zeros(len(names)), acc])
        elif len(times) == 1:  # nothing to move from: hold the point (span ends at t = 0)
            times, pos = np.array([-1.0, 0.0]), np.vstack([pos, pos])
            vel = None if vel is None else np.vstack([vel, vel])
            acc = None if acc is None else np.vstack([acc, acc])
        traj = Trajectory.from_waypoints(names, times, pos, vel, acc, continuity=continuity)
        return traj.for_model(model, allow_extra=self.allow_extra_joints)

    def position(self, names, now_ns):
        """The reference's positions at ``now_ns`` in the order of ``names`` (None before any
        reference, or when ``names`` has a joint the model does not)."""
        with self._lock:
            active, model = self.active, self.model
        if active is None:
            return None
        traj, start = active
        q = traj(np.array([(now_ns - start) * 1e-9]))[0]
        index = {nm: k for k, nm in enumerate(model.joint_names)}
        if any(nm not in index for nm in names):
            return None
        return q[[index[nm] for nm in names]]

    # -- the clock -----------------------------------------------------------------------------
    def wait_ns(self, now_ns):
        """Nanoseconds to wait before the next tick, or 0: tick now (the schedule then moves
        on by a period). A tick more than a period late is counted and the schedule restarts
        from now; a clock gone back by more than two periods restarts it."""
        if self._due is None:
            self._due = now_ns + self.period_ns
        wait = self._due - now_ns
        if wait > 2 * self.period_ns:  # the clock went back (a bag restarted)
            self._due = now_ns + self.period_ns
            return self.period_ns
        if wait > 0:
            return wait
        if -wait > self.period_ns:
            with self._lock:
                self.stats["late_ticks"] += 1
            self._due = now_ns
        self._due += self.period_ns
        return 0

    # -- samples -------------------------------------------------------------------------------
    def sample(self, now_ns):
        """The grid sample to serve at ``now_ns`` (a :class:`Sample`), after starting the queued
        trajectories whose start has come; None when there is nothing to serve.

        Raises HodDynamicsError (the reason, with the time on the trajectory) when the sample
        cannot be computed, after abandoning the trajectory and holding the last position."""
        with self._lock:
            while self.pending and self.pending[0][0] <= now_ns:
                start, traj = self.pending.pop(0)
                self.active = (traj, start)
            active, model = self.active, self.model
        if active is None or model is None:
            return None
        traj, start = active
        k = int(round((now_ns - start) * 1e-9 / self.period))  # the grid sample nearest to now
        try:
            result, row = self._grid_sample(traj, start, model, k)
        except HodDynamicsError as exc:  # e.g. a spring that cannot be inverted at this torque
            reason = f"at t = {k * self.period:.4f} s: {exc}"
            self._hold_after_failure(model, reason, now_ns)
            raise type(exc)(reason) from exc
        self._last_q = result.qjet[row, 0]
        return Sample(result, row, k, start, start + int(round(k * self.period * 1e9)))

    def _grid_sample(self, traj, start, model, k):
        """(FeedforwardResult, row) holding grid sample k of the trajectory started at
        ``start``, from the chunk computed ahead (a new chunk from k when it is not there)."""
        chunk = self._chunk
        if (chunk is None or chunk[0] is not traj or chunk[1] != start
                or not chunk[2] <= k < chunk[2] + len(chunk[3].t)):
            t = (k + np.arange(self.chunk_size)) * self.period
            chunk = self._chunk = (traj, start, k, feedforward(model, traj, t, self.order, self.actuators,
                                                               self.friction, backend=self.backend))
        return chunk[3], k - chunk[2]

    def _hold_after_failure(self, model, reason, now_ns):
        """The current trajectory cannot be evaluated any more: hold the last position served
        (or fall silent if none was) and count the failure."""
        hold = None if self._last_q is None else hold_trajectory(model, self._last_q)
        with self._lock:
            self.active = None if hold is None else (hold, now_ns)
            self.stats["stream_errors"] += 1
            self.stats["last_stream_error"] = reason

    def count_tick(self, seconds):
        """Count a tick served in ``seconds`` (computing and publishing); True for the first."""
        with self._lock:
            first = self.stats["ticks"] == 0
            self.stats["ticks"] += 1
            self.stats["compute_s"] += seconds
            self.stats["compute_max_s"] = max(self.stats["compute_max_s"], seconds)
        return first

    def statistics(self):
        """A copy of the statistics (see the module docstring), taken under the lock."""
        with self._lock:
            return dict(self.stats)
