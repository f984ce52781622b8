"""The scheduling rules of a feedforward stream, without ROS: which trajectory is the reference
at each moment of the stream's clock, and the samples on the stream's time grid.

A node (:mod:`hod_dynamics.ros.feedforward_node`) is a shell around one :class:`ReferenceStream`:
it hands it the waypoints of every trajectory message with the message's stamp and the clock's
time, asks it at every tick for the samples due, and publishes what it gets. Everything a
stream decides is here, and tested in milliseconds without DDS:

- **Start stamps.** A trajectory starts at its header stamp, or on receipt when the stamp is
  zero (as in joint_trajectory_controller). It waits in a queue until then; one that starts
  earlier than queued ones replaces them (they would never start).
- **Joining from the robot's state.** A trajectory whose first point is after its start
  (``time_from_start > 0``) begins where the robot is: the measured positions and velocities
  given with it (:class:`~hod_dynamics.feedforward.measured_state.MeasuredState`), else, before
  any state was measured, where the reference is at receipt, at rest. That state is prepended at
  t = 0, so that the reference never jumps; a single point is then a move to it, arriving at its
  time (joint_trajectory_controller joins from the measured state the same way).
- **A single point with nothing to move from** is held from its start on.
- **Smoothness.** Waypoints are interpolated by a C^(max(order, 2) + 2) spline, so that tau,
  tau' and tau'' are continuous (the points for a controller need tau'', elastic joints' motor
  torque too).
- **The grid.** Samples lie on ``start + k * period`` of the current trajectory. Every grid point
  the clock passes is served once, in order, stamped with its grid time: stamps strictly
  increase (no duplicates), and a tick that comes late serves the points it missed (counted
  ``late_samples`` when served more than a period after their time) instead of skipping them.
  Only a clock more than ``catch_up_seconds`` ahead of the next point skips to the last
  ``catch_up_seconds`` of points (counted ``skipped_samples``); the first sample of a stream is
  the last grid point the clock has passed. With ``drop_late`` (a node on the system clock,
  whose readers want the present, not a burst of the past) a tick serves only the last grid
  point the clock has passed and counts the earlier ones it missed as ``dropped_samples``, each
  once (a trajectory that starts meanwhile takes over at its start: the points of the one before
  are counted up to there). A clock that goes back by more than two periods (a bag played again)
  restarts the stream at the current reference's grid.
- **Points for a controller** (:mod:`hod_dynamics.feedforward.effort_trajectory`): every accepted trajectory
  is also resampled at ``effort_rate`` Hz plus its waypoint times, with tau at each point, for
  joint_trajectory_controller's effort feedforward.
- **Size.** A trajectory with more waypoints than ``max_points``, or whose points for a
  controller would be more, is refused at once, naming the sizes (before any work: a planner's
  trajectory of a million points must not stall the node).
- **Limits.** The URDF position, velocity and effort limits are checked at those points; a
  trajectory beyond them is counted (``beyond_limits``) with a one-line reason naming joint,
  point, time, value and limit, and refused when ``on_limit_violation`` is ``"reject"`` (the
  default; ``"warn"`` streams it).
- **Holding after a failure.** A sample that cannot be computed (a spring that cannot be
  inverted at that torque) abandons the trajectory: the stream holds the last sample's position
  (or falls silent if it served none) and counts the failure.
- **Chunks.** Samples are computed ahead, ``chunk_seconds`` of them in one vectorised call (a
  single-sample call costs about as much as a whole chunk), by :meth:`ReferenceStream.compute_ahead`
  in a thread of its own, so that the thread that serves the samples never waits for one; or,
  with :attr:`ReferenceStream.compute_chunk`, elsewhere (a node's stream worker process, whose
  computing holds nothing the serving thread needs).
- **Statistics** for the diagnostics: ticks, late and skipped samples, accepted and rejected
  trajectories, trajectories beyond the limits, compute time, failures and the last reasons.

All methods are safe to call from several threads (a node's executor, its streaming thread and
its computing thread). Times are integers of nanoseconds of the stream's clock (wall or
simulated time).
"""

import threading
from collections import OrderedDict
from dataclasses import dataclass
from typing import Optional

import numpy as np

from ..errors import HodDynamicsError, InputError, TrajectoryError, WorkerStopped
from .branch_anchors import BranchAnchors
from .effort_trajectory import EffortTrajectory, effort_trajectory
from .trajectory import LimitReport, Trajectory, limit_report
from .trajectory_feedforward import FeedforwardResult, feedforward

CHUNK_SECONDS = 0.1      # samples computed ahead per vectorised call
CATCH_UP_SECONDS = 1.0   # grid points the clock passed that are still served, at most
LEAD_SECONDS = 0.25      # how far ahead of the clock compute_ahead keeps samples ready
EFFORT_RATE = 100.0      # Hz, the grid of the points for a controller
MAX_POINTS = 200_000     # waypoints of a trajectory, and its points for a controller, at most
LIMIT_POLICIES = ("reject", "warn")
_CHUNKS_KEPT = 6


@dataclass(frozen=True)
class Sample:
    """One grid sample of the stream: row ``row`` of ``result`` (a chunk), grid index ``k`` of
    the trajectory started at ``start_ns``, stamped ``stamp_ns`` (its grid time)."""

    result: FeedforwardResult
    row: int
    k: int
    start_ns: int
    stamp_ns: int


@dataclass(frozen=True)
class Accepted:
    """An accepted trajectory: ``trajectory`` (model order, time 0 at its start), ``start_ns``,
    its ``points`` for a controller and the ``limits`` checked at them; ``beyond_limits`` is the
    one-line reason when a limit is exceeded, else ''; ``joined``: what a trajectory starting
    after t = 0 was joined from, ``"measured"`` (the robot's state), ``"reference"`` (no state
    measured yet) or ``""`` (it starts at t = 0)."""

    trajectory: Trajectory
    start_ns: int
    points: EffortTrajectory
    limits: LimitReport
    beyond_limits: str
    joined: str = ""


@dataclass(frozen=True)
class Waypoints:
    """A trajectory's waypoints as :meth:`ReferenceStream.accept` validated and joined them:
    the arguments of :meth:`Trajectory.from_waypoints` (``names``, ``times`` (N,) s,
    ``positions``, ``velocities``, ``accelerations`` (N, len(names)) or None, ``continuity``,
    ``initial_velocity``) and ``allow_extra`` (joints the model does not have are dropped)."""

    names: tuple
    times: np.ndarray
    positions: np.ndarray
    velocities: Optional[np.ndarray]
    accelerations: Optional[np.ndarray]
    continuity: int
    initial_velocity: Optional[np.ndarray]
    allow_extra: bool


def trajectory_of(model, waypoints):
    """The :class:`Trajectory` of ``waypoints`` (:class:`Waypoints`) in ``model``'s joint order:
    what a stream streams, wherever it is made. Raises TrajectoryError naming the fault."""
    w = waypoints
    traj = Trajectory.from_waypoints(w.names, w.times, w.positions, w.velocities, w.accelerations,
                                     continuity=w.continuity, initial_velocity=w.initial_velocity)
    return traj.for_model(model, allow_extra=w.allow_extra)


def hold_trajectory(model, positions):
    """A trajectory that holds ``positions`` (n,) in model order from t = 0 on. Raises
    InputError unless there is one value per joint."""
    q = np.asarray(positions, dtype=float)
    if q.shape != (model.n_dof,):
        raise InputError(f"expected {model.n_dof} values (one per joint {list(model.joint_names)}), "
                         f"got {q.size}")
    # both waypoints before t = 0: from t = 0 on the trajectory holds its end exactly
    return Trajectory.from_waypoints(model.joint_names, [-1.0, 0.0], np.vstack([q, q]))


def beyond_limits_reason(report):
    """One line naming the first limit exceeded (joint, time from the start, value, limit) and
    how many more; '' when every limit holds."""
    if report.ok:
        return ""
    more = len(report.violations) - 1
    return f"beyond the URDF limits: {report.violations[0]}" + (f" (and {more} more)" if more else "")


def check_size(times, rate, max_points):
    """Refuse (TrajectoryError naming the sizes) a trajectory of waypoint ``times`` (N,) s
    whose waypoints, or points for a controller at ``rate`` Hz, number more than
    ``max_points``."""
    span = max(float(times[-1]), 0.0) - max(float(times[0]), 0.0)
    points = len(times) + int(span * rate) + 1
    if len(times) > max_points or points > max_points:
        raise TrajectoryError(f"trajectory of {len(times)} waypoints over {span:g} s refused: with the "
                              f"{rate:g} Hz points for a controller it makes {points} points, more than "
                              f"max_trajectory_points {max_points}")


class ReferenceStream:
    """The reference a feedforward stream serves, its queue of trajectories, its samples on the
    time grid and its statistics; see the module docstring for the rules.

    ``period`` (s): the grid spacing, 1 / rate; ``order``: the highest torque derivative of
    the samples. :meth:`set_model` gives it a model (until then nothing is served).
    ``chunk_seconds``: samples computed ahead per call. ``backend``: the backend of the
    samples' dynamics (a node switches it to "numba" once the compiled kernels are ready).
    ``effort_rate`` (Hz), ``on_limit_violation`` (``"reject"`` or ``"warn"``) and
    ``max_points`` apply to the trajectories accepted from then on (a node sets them from its
    parameters); ``catch_up_seconds``: how many grid points a late clock still gets served;
    ``drop_late``: a late tick serves only the last grid point passed (the others are dropped).
    ``points``: None, or a function ``(model, trajectory, rate, order, friction)`` that computes
    the points for a controller as :func:`~hod_dynamics.feedforward.effort_trajectory.effort_trajectory`
    does (a node hands them to a process with compiled kernels).
    """

    def __init__(self, period, order, *, allow_extra_joints=False, chunk_seconds=CHUNK_SECONDS,
                 backend="numpy", effort_rate=EFFORT_RATE, on_limit_violation="reject",
                 catch_up_seconds=CATCH_UP_SECONDS, max_points=MAX_POINTS, drop_late=False):
        self.period = float(period)
        self.period_ns = int(round(self.period * 1e9))
        self.order = order
        self.allow_extra_joints = allow_extra_joints
        self.chunk_size = max(1, int(round(chunk_seconds / self.period)))
        self.catch_up = max(1, int(round(catch_up_seconds / self.period)))
        self.backend = backend
        self.effort_rate = effort_rate
        if on_limit_violation not in LIMIT_POLICIES:
            raise InputError(f"on_limit_violation must be one of {LIMIT_POLICIES}, got {on_limit_violation!r}")
        self.on_limit_violation = on_limit_violation
        self.max_points = int(max_points)
        self.drop_late = drop_late
        # points(model, waypoints, rate, order, friction) -> (Trajectory, EffortTrajectory): another
        # way to make a trajectory (see trajectory_of) and its points (the node's worker process)
        self.points = None
        # compute_chunk(model, trajectory, t, order, actuators, friction, backend=) ->
        # FeedforwardResult: where the samples computed ahead (compute_ahead, prepare) are
        # computed, as feedforward() does (the node's stream worker process); None: here. The
        # streaming thread computes a sample it finds missing here, whatever this is.
        self.compute_chunk = None
        self.model = self.actuators = self.friction = None
        self.active = None        # (Trajectory in model order, start ns), the current reference
        self.pending = []         # [(start ns, Trajectory)] waiting for their start time
        self.latest = None        # the most recent accepted trajectory
        self.stats = dict(ticks=0, late_samples=0, skipped_samples=0, dropped_samples=0, rejected=0, accepted=0,
                          beyond_limits=0, compute_s=0.0, compute_max_s=0.0, last_rejection="",
                          last_beyond_limits="", stream_errors=0, last_stream_error="")
        self._lock = threading.Lock()
        self._k = None            # grid index of the active trajectory served next (None: choose)
        self._last_stamp = None   # stamp of the last sample served (ns)
        self._last_q = None       # the position of the last sample served, held after a failure
        self._chunks = OrderedDict()  # (id(traj), start, first k) -> (traj, FeedforwardResult)
        self._chunks_lock = threading.Lock()
        self._anchors = BranchAnchors()  # a mechanism with loops: where it is at each chunk's start

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
            self._anchors = BranchAnchors()  # another mechanism, or none
            if hold is not None:
                self.active, self._k = (hold, now_ns), None

    @property
    def continuity(self):
        """The continuity a trajectory needs: the torque order, 2 at least (tau'' estimates
        how far a controller's interpolation of tau strays, and elastic joints' motor torque
        needs it), plus 2."""
        return max(self.order, 2) + 2

    # -- trajectories --------------------------------------------------------------------------
    def accept(self, names, times, positions, velocities=None, accelerations=None, *, stamp_ns=0,
               now_ns, state=None, clock=None, first_samples=True):
        """Validate a trajectory's waypoints (joint ``names``, ``times`` (N,) s from its start,
        ``positions`` and optional ``velocities``, ``accelerations`` (N, len(names))), compute
        its points for a controller, check the URDF limits there, and queue it to start at
        ``stamp_ns`` (0: at ``now_ns``, or with ``clock``, a function giving the clock's time in
        ns, when the work is done: a controller handed the points then starts them with the
        stream however long the work took). ``state``: the robot's measured (positions (n,),
        velocities (n,)) in the order of ``names``, which a trajectory starting after t = 0 is
        joined from (None: from the reference). ``first_samples``: compute its first samples
        now (False: the caller calls :meth:`prepare` when its points have gone out, or the
        stream computes them when it needs them). Returns an :class:`Accepted`. Raises
        HodDynamicsError naming the fault: a trajectory too large for ``max_points``, or beyond
        the limits when ``on_limit_violation`` is ``"reject"``, included (count it with
        :meth:`reject`)."""
        check_size(np.atleast_1d(np.asarray(times, dtype=float)), self.effort_rate, self.max_points)
        model = self.model
        waypoints, joined = self._waypoints(names, times, positions, velocities, accelerations, now_ns, state)
        if self.points is None:
            traj = trajectory_of(model, waypoints)
            points = effort_trajectory(model, traj, self.effort_rate, self.order, self.friction, backend=self.backend)
        else:
            traj, points = self.points(model, waypoints, self.effort_rate, self.order, self.friction)
        limits = limit_report(model, points.t, points.qjet, points.taujet, name_points=True)
        reason = beyond_limits_reason(limits)
        if reason and self.on_limit_violation == "reject":
            raise TrajectoryError(f"{reason}; refused (on_limit_violation is reject)")
        start = stamp_ns if stamp_ns > 0 else now_ns if clock is None else max(now_ns, clock())
        with self._lock:
            self.pending = [p for p in self.pending if p[0] < start] + [(start, traj)]
            self.latest = traj
            self.stats["accepted"] += 1
            if reason:
                self.stats["beyond_limits"] += 1
                self.stats["last_beyond_limits"] = reason
        accepted = Accepted(traj, start, points, limits, reason, joined)
        if first_samples:
            self.prepare(accepted)
        return accepted

    def prepare(self, accepted):
        """Compute the first samples of ``accepted`` (an :class:`Accepted` of this stream), so
        that they are ready when it starts (the stream computes them itself otherwise)."""
        with self._lock:
            first, model = self._first_k(accepted.start_ns), self.model
        try:
            self._chunk(accepted.trajectory, accepted.start_ns, first, model, ahead=True)
        except HodDynamicsError:  # raised again, and handled, when the stream reaches that sample
            pass

    def reject(self, reason):
        """Count a rejected trajectory and keep its reason for the diagnostics."""
        with self._lock:
            self.stats["rejected"] += 1
            self.stats["last_rejection"] = reason

    def _waypoints(self, names, times, pos, vel, acc, now_ns, state):
        """(The :class:`Waypoints` of the trajectory, joined when it starts after t = 0, what it
        was joined from: see :class:`Accepted`); raises HodDynamicsError naming the fault of
        the waypoints as sent."""
        model = self.model
        if model is None:
            raise HodDynamicsError("no robot model yet")
        times = np.asarray(times, dtype=float)
        continuity = self.continuity
        joined, v0 = "", None
        start = None
        if times[0] > 0:  # join from where the robot is, as joint_trajectory_controller does
            if state is not None:
                (start, v0), joined = state, "measured"
            else:
                start, joined = self.position(names, now_ns), "reference"
        if start is not None:
            if len(times) > 1:  # validate the waypoints as sent, so errors name their own indices
                Trajectory.from_waypoints(names, times, pos, vel, acc, continuity=continuity)
            start, v0 = np.asarray(start, dtype=float), None if v0 is None else np.asarray(v0, dtype=float)
            times, pos = np.r_[0.0, times], np.vstack([start, pos])
            vel = None if vel is None else np.vstack([np.zeros(len(names)) if v0 is None else v0, vel])
            acc = None if acc is None else np.vstack([np.zeros(len(names)), acc])
        elif len(times) == 1:  # nothing to move from: hold the point (span ends at t = 0)
            times, pos, joined = np.array([-1.0, 0.0]), np.vstack([pos, pos]), ""
            vel = None if vel is None else np.vstack([vel, vel])
            acc = None if acc is None else np.vstack([acc, acc])
        return Waypoints(tuple(names), times, pos, vel, acc, continuity, v0, self.allow_extra_joints), joined

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

    # -- the grid ------------------------------------------------------------------------------
    def _first_k(self, start):
        """The first grid index of a trajectory started at ``start`` that comes after the last
        stamp served (0 when none was, or when it starts later). Called under the lock."""
        if self._last_stamp is None or start > self._last_stamp:
            return 0
        return (self._last_stamp - start) // self.period_ns + 1

    def _next_stamp(self):
        """(stamp of the next grid point of the active trajectory, or None when it is not chosen
        yet, start of the first queued trajectory or None). Called under the lock."""
        stamp = None
        if self.active is not None and self._k is not None:
            stamp = self.active[1] + self._k * self.period_ns
        return stamp, (self.pending[0][0] if self.pending else None)

    def wait_ns(self, now_ns):
        """Nanoseconds until a sample is due at the clock time ``now_ns``: 0 means call
        :meth:`due` now. A period when nothing is served yet (the caller polls)."""
        with self._lock:
            if self.model is None:
                return self.period_ns
            if self._last_stamp is not None and now_ns < self._last_stamp - 2 * self.period_ns:
                return 0  # the clock went back: due() restarts the stream
            stamp, pending = self._next_stamp()
            if self.active is not None and stamp is None:
                return 0
            times = [x for x in (stamp, pending) if x is not None]
        return max(0, min(times) - now_ns) if times else self.period_ns

    def due(self, now_ns):
        """The samples due at clock time ``now_ns``: every grid point passed since the last call,
        in order (see the module docstring: catch-up limit, the first sample, a clock gone back),
        after starting the queued trajectories whose start has come. Returns ``(samples, failure)``:
        ``failure`` is the reason, with the time on the trajectory, when a sample could not be
        computed (the trajectory is then abandoned and the last position held), else None."""
        samples = []
        with self._lock:
            if self.model is None:
                return samples, None
            if self._last_stamp is not None and now_ns < self._last_stamp - 2 * self.period_ns:
                self._last_stamp, self._k = None, None  # a bag played again: start over
        while True:
            with self._lock:
                stamp, pending = self._next_stamp()
                if pending is not None and pending <= now_ns and (stamp is None or pending <= stamp):
                    start, traj = self.pending.pop(0)
                    self.active, self._k = (traj, start), None
                    continue
                if self.active is None:
                    break
                traj, start = self.active
                if self._k is None:  # the first point of this trajectory (before its start after a
                    # clock went back: the trajectory holds its first position there)
                    self._k = (self._first_k(start) if self._last_stamp is not None
                               else (now_ns - start) // self.period_ns)
                    continue
                if stamp > now_ns:
                    break
                # a queued trajectory whose start has come takes over there: the points of this
                # one due before it are late, and the last point passed is the new one's
                superseded = pending is not None and pending <= now_ns
                horizon = pending - 1 if superseded else now_ns
                behind = (horizon - stamp) // self.period_ns + 1  # points due, this one included
                keep = (0 if superseded else 1) if self.drop_late else self.catch_up
                if behind > keep:
                    skip = behind - keep
                    self._k += skip
                    self.stats["dropped_samples" if self.drop_late else "skipped_samples"] += skip
                    continue
                k, model = self._k, self.model
            try:
                result, row = self._chunk(traj, start, k, model)
            except HodDynamicsError as exc:  # e.g. a spring that cannot be inverted at this torque
                reason = f"at t = {k * self.period:.4f} s: {exc}"
                self._hold_after_failure(model, reason, now_ns)
                return samples, reason
            self._last_q = result.qjet[row, 0]
            samples.append(Sample(result, row, k, start, stamp))
            with self._lock:
                self._last_stamp = stamp
                if self.active is not None and self.active[0] is traj and self._k == k:
                    self._k = k + 1
                if now_ns - stamp > self.period_ns:
                    self.stats["late_samples"] += 1
        return samples, None

    # -- samples -------------------------------------------------------------------------------
    def _chunk(self, traj, start, k, model, ahead=False):
        """(FeedforwardResult, row) holding grid sample k of the trajectory started at
        ``start``: from the chunk computed ahead, else computed now (``ahead``: by
        :attr:`compute_chunk` when set, here if that fails otherwise than the samples do).
        Chunks start at multiples of the chunk size, so that the streaming and the computing
        threads agree on them. A chunk that cannot be computed is kept as its error, raised
        again for each sample."""
        first = k - k % self.chunk_size
        key = (id(traj), start, first)
        with self._chunks_lock:
            entry = self._chunks.get(key)
        if entry is None or entry[0] is not traj:
            t = (first + np.arange(self.chunk_size)) * self.period
            try:
                at = self._anchors.model_at(model, traj, start, first, self.period, self.chunk_size)
                result = self._compute(ahead, at, traj, t)
            except HodDynamicsError as exc:
                result = exc
            entry = (traj, result)
            with self._chunks_lock:
                self._chunks[key] = entry
                while len(self._chunks) > _CHUNKS_KEPT:
                    self._chunks.popitem(last=False)
        if isinstance(entry[1], HodDynamicsError):
            raise entry[1]
        return entry[1], k - first

    def _compute(self, ahead, model, traj, t):
        """The FeedforwardResult of ``traj`` at times ``t`` on ``model`` (see :meth:`_chunk`)."""
        args = (model, traj, t, self.order, self.actuators, self.friction)
        elsewhere = self.compute_chunk if ahead else None
        if elsewhere is not None:
            try:
                return elsewhere(*args, backend=self.backend)
            except WorkerStopped:  # gone (a shutdown, a crash): computed here meanwhile
                pass
        return feedforward(*args, backend=self.backend)

    def compute_ahead(self, now_ns, lead_ns=None):
        """Compute a chunk of samples the stream will serve soon: the chunk of the next sample of
        the current trajectory and the one after it when within ``lead_ns`` (default
        LEAD_SECONDS) of the clock, and the first chunk of each queued trajectory that starts by
        then. Returns True when it computed one (call again), False when all are ready."""
        lead = int(LEAD_SECONDS * 1e9) if lead_ns is None else lead_ns
        with self._lock:
            model = self.model
            wanted = []
            stamp, _ = self._next_stamp()
            if stamp is not None:
                traj, start = self.active
                first = self._k - self._k % self.chunk_size
                wanted.append((traj, start, first))
                if start + (first + self.chunk_size) * self.period_ns <= now_ns + lead:
                    wanted.append((traj, start, first + self.chunk_size))
            for start, traj in self.pending:
                if start <= now_ns + lead:
                    k = self._first_k(start)
                    wanted.append((traj, start, k - k % self.chunk_size))
        for traj, start, first in wanted:
            with self._chunks_lock:
                ready = (id(traj), start, first) in self._chunks
            if not ready:
                try:
                    self._chunk(traj, start, first, model, ahead=True)
                except HodDynamicsError:  # kept with the chunk: due() meets it at that sample
                    pass
                return True
        return False

    def _hold_after_failure(self, model, reason, now_ns):
        """The current trajectory cannot be evaluated any more: hold the last position served
        (or fall silent if none was) and count the failure."""
        hold = None if self._last_q is None else hold_trajectory(model, self._last_q)
        with self._lock:
            self.active, self._k = (None, None) if hold is None else ((hold, now_ns), None)
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
