"""The feedforward node's worker processes: they compile the kernels on an empty numba cache,
make every accepted trajectory's spline and its points for a controller, the profiles of
``~/compute_profile`` on them, and the stream's samples ahead (:class:`RemoteChunks`), so that
none of it holds the node's interpreter while the node streams, and a shutdown ends any of it
at once.

A compile takes seconds of Python (numba's compiler), and even loading compiled kernels from
numba's cache holds the interpreter for tens of milliseconds at a time (importing numba, its
dispatchers' first calls): in the node's own process either would hold the GIL that the
streaming thread needs every period. So the node's process never imports numba: its stream runs
on the numpy path (vectorised chunks of samples, computed here too), and the batch work that
wants compiled kernels runs here, in processes of their own: the compile and the profiles at a
lower CPU priority (their messages come back already serialised), the trajectories and samples
the node waits for at its own.

Parent side: :class:`Worker` (started on first use, one request at a time, :meth:`Worker.stop`
kills the process). Child side: :func:`main`, run as ``python -m hod_dynamics.ros.worker FD PPID
NICENESS``: it blocks SIGINT and SIGTERM (a Ctrl-C reaches the whole process group; the node
decides), dies with its parent (``PR_SET_PDEATHSIG``), lowers its priority by NICENESS and serves
requests on the socket ``FD`` until it closes.

The robot model travels as its recipe (:class:`ModelRecipe`: the description and the options
that built it), rebuilt once in the worker; a trajectory to take in as its waypoints, and back
as the trajectory and its points (pickled); a profile's trajectory pickled; the stream's
samples as :class:`RemoteChunks` says.
"""

import signal

STOP_SIGNALS = (signal.SIGINT, signal.SIGTERM)
signal.pthread_sigmask(signal.SIG_BLOCK, STOP_SIGNALS)  # first: before the heavy imports below

import itertools  # noqa: E402
import json  # noqa: E402
import os  # noqa: E402
import queue  # noqa: E402
import socket  # noqa: E402
import subprocess  # noqa: E402
import sys  # noqa: E402
import tempfile  # noqa: E402
import threading  # noqa: E402
import time  # noqa: E402
import weakref  # noqa: E402
from collections import OrderedDict  # noqa: E402
from dataclasses import dataclass, field  # noqa: E402
from multiprocessing.connection import Connection  # noqa: E402
from typing import Any, Mapping  # noqa: E402

from ..errors import HodDynamicsError, WorkerStopped  # noqa: E402

NICENESS = 10  # a batch worker (compile, profiles) yields the CPU to the node's streaming threads


@dataclass(frozen=True)
class ModelRecipe:
    """What the node built its model from: ``source`` (URDF text, file or shipped name) and the
    keyword arguments of :func:`hod_dynamics.model.robots.model_from_description` (``options``), the
    ``actuators`` and ``friction`` sources as the node's parameters give them ('' for none)."""

    source: str
    options: Mapping[str, Any] = field(default_factory=dict)
    actuators: str = ""
    friction: str = ""

    def build(self):
        """(model, actuators or None, friction): what the node serves."""
        from ..feedforward.actuators import load_actuators
        from ..algorithms.friction import load_friction
        from ..model.robots import model_from_description

        model, _ = model_from_description(self.source, **self.options)
        actuators = load_actuators(self.actuators, model) if self.actuators else None
        return model, actuators, load_friction(self.friction or None, model)

    def key(self):
        return json.dumps([self.source, dict(self.options), self.actuators, self.friction], sort_keys=True,
                          default=str)


class RemoteChunks:
    """The stream's samples computed ahead in a worker process (:meth:`ReferenceStream.compute_chunk
    <hod_dynamics.feedforward.reference_stream.ReferenceStream>`): called as
    :func:`~hod_dynamics.feedforward.trajectory_feedforward.feedforward` is, it returns the same
    FeedforwardResult, computed by ``worker`` on the same numpy path.

    Why a process: the numpy path releases and retakes the GIL around every array operation, and
    a thread that does so thousands of times in a chunk keeps it from a thread that waits for it
    (CPython's waiting thread asks for the GIL only after a whole switch interval without any
    switch): the streaming thread then wakes milliseconds late and its grid points are dropped,
    one in fifty at 1 kHz. A thread that only waits on a socket leaves the GIL to it.

    The model, trajectory, actuators and friction go to the worker once each (by a token) and
    are kept there; one it no longer has is sent again. Until :meth:`start` has started the
    worker a call raises WorkerStopped (the caller computes the samples itself): a process's
    start, a second and more on a busy computer, must not hold up whoever asks meanwhile (the
    trajectory intake's first samples)."""

    KEPT = 8  # objects the worker keeps (the model, actuators, friction, the trajectories being served)
    _numbers = itertools.count(1)  # tokens unique in this process: instances may share a worker

    def __init__(self, worker):
        self.worker = worker
        # re-entrant: an object's last reference may go (and _forget run) in a thread holding it
        self._lock = threading.RLock()
        # id(obj) -> (weak reference to obj, token): the entry goes with the object (never held
        # here: a planner's trajectories are tens of MB each), so its id is never another's
        self._tokens = {}
        self._started = threading.Event()

    def _token(self, obj):
        if obj is None:
            return 0  # None needs no sending
        key = id(obj)
        with self._lock:
            entry = self._tokens.get(key)
            if entry is None or entry[0]() is not obj:
                try:
                    ref = weakref.ref(obj, lambda _, key=key: self._forget(key))
                except TypeError:  # not weakly referable: held, a bounded number of them
                    ref = (lambda held: lambda: held)(obj)
                entry = self._tokens[key] = (ref, next(self._numbers))
                while len(self._tokens) > 4 * self.KEPT:
                    self._tokens.pop(next(iter(self._tokens)))
            return entry[1]

    def _forget(self, key):
        """An object sent is gone: its entry too (unless its id is already another's)."""
        with self._lock:
            entry = self._tokens.get(key)
            if entry is not None and entry[0]() is None:
                del self._tokens[key]

    def start(self):
        """Start the worker and its modules before the first chunk waits for them: None, or the
        reason it cannot start (the node is stopping: None)."""
        try:
            self.worker.request("prepare_samples")
        except WorkerStopped:
            return None
        except (HodDynamicsError, OSError) as exc:
            return str(exc) or type(exc).__name__
        self._started.set()
        return None

    def __call__(self, model, trajectory, t, order, actuators=None, friction=None, *, backend=None):
        if not self._started.is_set():
            raise WorkerStopped("the stream worker has not started")
        objects = (model, trajectory, actuators, friction)
        tokens = tuple(self._token(obj) for obj in objects)
        (result,) = self.worker.request("samples", tuple(zip(tokens, (None,) * 4)), t, order, backend)
        if result is None:  # the worker has not (or no longer) got them all: send them with the request
            (result,) = self.worker.request("samples", tuple(zip(tokens, objects)), t, order, backend)
        return result


class Worker:
    """The worker process seen from the node: :meth:`request` sends one request and waits for
    its answer (in the calling thread; one request at a time), starting the process first if
    needed; :meth:`stop` kills it, and a request in progress raises :class:`WorkerStopped`."""

    def __init__(self, niceness=NICENESS):
        self.niceness = niceness  # of the process: NICENESS for batch work, 0 for work the node waits for
        self._lock = threading.Lock()
        self._proc = self._conn = None
        self._stopped = False
        self._spawns = queue.Queue()
        # The process is started by a thread that lives as long as this Worker: Linux sends the
        # parent-death signal (PR_SET_PDEATHSIG, see _die_with_parent) when the *thread* that
        # started the child ends, so a child of a passing thread would be killed with it.
        threading.Thread(target=self._spawner, name="hod_worker_spawner", daemon=True).start()

    def _spawner(self):
        while True:
            done = self._spawns.get()
            try:
                done.put(self._spawn())
            except Exception as exc:  # handed to the requesting thread
                done.put(exc)

    def _start(self):
        done = queue.Queue()
        self._spawns.put(done)
        started = done.get()
        if isinstance(started, Exception):
            raise started

    def _spawn(self):
        ours, theirs = socket.socketpair()
        env = dict(os.environ, HOD_DYNAMICS_THREADS="1")  # one core for the worker, one for the node
        try:
            self._proc = subprocess.Popen(
                [sys.executable, "-m", "hod_dynamics.ros.worker", str(theirs.fileno()), str(os.getpid()),
                 str(self.niceness)],
                pass_fds=(theirs.fileno(),), env=env, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL)
        finally:
            theirs.close()
        self._conn = Connection(ours.detach())

    def request(self, *message):
        """Send ``message`` (a tuple: the request's name, then its arguments) and return the
        answer's values. Raises HodDynamicsError with the worker's reason when the request
        failed there, WorkerStopped when the worker was stopped or died meanwhile."""
        with self._lock:
            if self._stopped:
                raise WorkerStopped("the node is shutting down")
            if self._proc is None or self._proc.poll() is not None:
                self._start()
            conn, proc = self._conn, self._proc
            try:
                conn.send(message)
                answer = conn.recv()
            except (EOFError, OSError):
                self._proc = self._conn = None
                conn.close()
                if self._stopped:
                    raise WorkerStopped("the node is shutting down") from None
                proc.wait()
                raise WorkerStopped(f"the worker process ended with exit code {proc.returncode}") from None
        if answer[0] == "error":
            raise HodDynamicsError(answer[1])
        return answer[1:]

    def stop(self):
        """Kill the worker (a request in progress raises WorkerStopped); later requests are
        refused. Safe from any thread, at any time."""
        self._stopped = True
        proc = self._proc
        if proc is not None and proc.poll() is None:
            proc.kill()
            proc.wait()


# -- the worker process ----------------------------------------------------------------------
def _die_with_parent(ppid):
    """Be killed when the node's process ends, however it ends (Linux prctl; elsewhere the
    closed socket ends the request loop)."""
    try:
        import ctypes

        ctypes.CDLL(None, use_errno=True).prctl(1, signal.SIGKILL)  # PR_SET_PDEATHSIG
    except (OSError, AttributeError):
        pass
    if os.getppid() != ppid:  # the node ended before prctl took effect
        os._exit(0)


class _Handlers:
    """The requests the worker serves; each returns the answer's values (a tuple)."""

    def __init__(self):
        self._built = {}
        self._kept = OrderedDict()  # token -> object sent by RemoteChunks

    def samples(self, parts, t, order, backend):
        """The FeedforwardResult of :class:`RemoteChunks`: ``parts`` are (token, object or None)
        of the model, trajectory, actuators and friction; None (the answer) when an object sent
        before is no longer kept."""
        from ..feedforward.trajectory_feedforward import feedforward

        objects = []
        for token, obj in parts:
            if token == 0:
                objects.append(None)
                continue
            if obj is None and token not in self._kept:
                return (None,)
            if obj is not None:
                self._kept[token] = obj
            self._kept.move_to_end(token)
            objects.append(self._kept[token])
        while len(self._kept) > RemoteChunks.KEPT:
            self._kept.popitem(last=False)
        model, trajectory, actuators, friction = objects
        return (feedforward(model, trajectory, t, order, actuators, friction, backend=backend),)

    def _model(self, recipe):
        key = recipe.key()
        if key not in self._built:
            self._built = {key: recipe.build()}
        return self._built[key]

    def compile(self, recipe, order):
        """Compile (or load) the kernels the node needs into numba's cache."""
        from ..kernels.backend import compile_notices
        from ..algorithms.dispatch import prepare_compiled_kernels

        model, _, _ = self._model(recipe)
        t0 = time.monotonic()
        with compile_notices(lambda text: None):  # the node announces the compile in its log
            prepare_compiled_kernels(model, order)
        return (time.monotonic() - t0,)

    def prepare_points(self, recipe, order):
        """:meth:`compile` (loaded from the cache the other worker filled), then make the points
        of a short trajectory of the model at rest, as :meth:`points` does: the modules and first
        calls of that path (the spline's LAPACK solve among them) are then behind the first
        trajectory a planner sends, not in front of it. Only the points worker is asked this."""
        import numpy as np

        from ..feedforward.reference_stream import Waypoints

        seconds = self.compile(recipe, order)
        model, _, _ = self._model(recipe)
        names = tuple(model.joint_names)
        rest = np.zeros((3, len(names)))
        try:
            self.points(recipe, Waypoints(names, np.array([0.0, 0.5, 1.0]), rest, rest, rest, max(order, 2) + 2,
                                          None, False), 100.0, order)
        except Exception:  # noqa: BLE001  zeros that are no configuration (a closed loop, a base's
            pass           # quaternion), or anything else: a warm-up never costs the compiled path
        return seconds

    def prepare_samples(self):
        """Import what :meth:`samples` needs, before the stream's first chunk waits for it."""
        from ..feedforward import trajectory_feedforward  # noqa: F401

        return ()

    def notice(self, which):
        """The line that announces a compile of the kernels ``which`` when a first use will
        compile them (numba's cache is empty), else None: asked here, so that the node's own
        process never imports numba."""
        from ..kernels.backend import compile_notice

        return (compile_notice(which),)

    def points(self, recipe, waypoints, rate, order):
        """The trajectory of ``waypoints`` (a :class:`~hod_dynamics.feedforward.reference_stream.
        Waypoints`) and its :class:`~hod_dynamics.feedforward.effort_trajectory.EffortTrajectory`
        at ``rate`` Hz up to torque ``order``, on the compiled kernels."""
        from ..feedforward.effort_trajectory import effort_trajectory
        from ..feedforward.reference_stream import trajectory_of

        model, _, friction = self._model(recipe)
        trajectory = trajectory_of(model, waypoints)
        return trajectory, effort_trajectory(model, trajectory, rate, order, friction, backend="numba")

    def profile(self, recipe, trajectory, rate, order, effort_rate_limits, backend, base, stamp):
        """The profile of ``trajectory``: the summary, the files written (CSV and NPZ at
        ``base`` + .csv/.npz, none when ``base`` is empty), and the two latched messages
        serialised into temporary files (JointTrajectory, Float64MultiArray; the caller
        deletes them)."""
        from ..feedforward.trajectory_feedforward import profile, save_csv, save_npz, summary
        from .conversions import serialized_profile

        model, actuators, friction = self._model(recipe)
        result, report = profile(model, trajectory, rate, order, actuators, friction=friction,
                                 effort_rate_limits=effort_rate_limits, backend=backend)
        files = [save_csv(result, base + ".csv"), save_npz(result, base + ".npz")] if base else []
        blobs = []
        for data in serialized_profile(result, trajectory.start, stamp):
            fd, path = tempfile.mkstemp(prefix="hod_profile_", suffix=".cdr")
            with os.fdopen(fd, "wb") as f:
                f.write(data)
            blobs.append(path)
        return dict(summary(result, report), files=files), blobs


def main(argv=None):
    """The worker's request loop (see the module docstring); returns when the node closes the
    socket."""
    argv = sys.argv if argv is None else argv
    _die_with_parent(int(argv[2]))
    try:
        os.nice(int(argv[3]) if len(argv) > 3 else NICENESS)
    except OSError:
        pass
    conn = Connection(int(argv[1]))
    handlers = _Handlers()
    while True:
        try:
            name, *args = conn.recv()
        except (EOFError, OSError):
            return 0
        try:
            answer = ("done",) + tuple(getattr(handlers, name)(*args))
        except (HodDynamicsError, OSError, MemoryError) as exc:  # bad parameters, disk full...: say why
            answer = ("error", str(exc) or type(exc).__name__)
        except Exception as exc:  # a fault of this package: the node logs it, the worker goes on
            answer = ("error", f"{type(exc).__name__}: {exc}")
        conn.send(answer)


if __name__ == "__main__":
    code = main()
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(code)
