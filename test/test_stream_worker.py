"""The feedforward node's stream worker (hod_dynamics.ros.worker.RemoteChunks): the samples a
stream computes ahead, computed in a real worker process, are the samples it would compute
itself, bit for bit; the objects they need go there once and again when the process has lost
them; and a stream whose worker is gone computes them itself."""

import gc
import os
import signal
import weakref

import numpy as np
import pytest

from hod_dynamics.errors import WorkerStopped
from hod_dynamics.feedforward.actuators import load_actuators
from hod_dynamics.feedforward.reference_stream import ReferenceStream
from hod_dynamics.feedforward.trajectory import Trajectory
from hod_dynamics.feedforward.trajectory_feedforward import feedforward
from hod_dynamics.ros.worker import RemoteChunks, Worker

MS = 1_000_000
T0 = 1_000 * 1_000_000_000

FIELDS = ("t", "qjet", "taujet", "thetajet", "u", "elastic")


def same(a, b):
    for name in FIELDS:
        x, y = getattr(a, name), getattr(b, name)
        assert (x is None) == (y is None), name
        if x is not None:
            np.testing.assert_array_equal(x, y, err_msg=name)


@pytest.fixture(scope="module")
def worker():
    w = Worker(niceness=0)
    yield w
    w.stop()


def motion(model, seconds=1.0):
    times = np.linspace(0.0, seconds, 6)
    pos = 0.3 * np.sin(np.linspace(0, np.pi, 6))[:, None] * np.linspace(0.5, 1.0, model.n_dof) + 0.1
    return times, pos


def test_remote_samples_equal_local_ones_and_survive_a_lost_worker(iiwa, worker):
    """Rigid and elastic joints (a series-elastic iiwa joint 2): the same arrays as feedforward()
    here; after the worker process is killed (a new one has none of the objects), the next call
    sends them again and gets the same arrays."""
    actuators = load_actuators({"actuators": {"iiwa_joint_2": {
        "type": "sea", "stiffness": 2000.0, "motor_inertia": 0.4, "motor_damping": 1.0}}}, iiwa)
    traj = Trajectory.from_waypoints(iiwa.joint_names, *motion(iiwa), continuity=5)
    remote = RemoteChunks(worker)
    t = np.arange(100) * 0.001
    with pytest.raises(WorkerStopped, match="has not started"):  # the caller computes them itself
        remote(iiwa, traj, t, 3, None, None, backend="numpy")
    assert remote.start() is None
    for acts in (None, actuators):
        here = feedforward(iiwa, traj, t, 3, acts, backend="numpy")
        same(remote(iiwa, traj, t, 3, acts, None, backend="numpy"), here)
        same(remote(iiwa, traj, t, 3, acts, None, backend="numpy"), here)  # by token this time
    pid = worker._proc.pid
    os.kill(pid, signal.SIGKILL)
    worker._proc.wait()
    later = np.arange(100, 200) * 0.001
    same(remote(iiwa, traj, later, 3, actuators, None, backend="numpy"),
         feedforward(iiwa, traj, later, 3, actuators, backend="numpy"))
    assert worker._proc.pid != pid
    # nothing sent is held here: a trajectory dropped by the stream is gone, its entry with it
    gone = weakref.ref(traj)
    del traj
    gc.collect()
    assert gone() is None and len(remote._tokens) == 2  # the model and the actuators


def test_a_stream_computes_ahead_in_the_worker_and_serves_the_same_samples(iiwa, worker):
    """compute_ahead and prepare go to compute_chunk; the serving thread's due() never does; the
    samples served equal those of a stream that computes everything itself."""
    names, (times, pos) = list(iiwa.joint_names), motion(iiwa)
    remote, calls = RemoteChunks(worker), []
    assert remote.start() is None

    def counted(*args, **kwargs):
        calls.append(round(float(args[2][0]), 9))
        return remote(*args, **kwargs)

    streams = []
    for elsewhere in (counted, None):
        s = ReferenceStream(0.001, 2, chunk_seconds=0.05, on_limit_violation="warn")
        s.set_model(iiwa)
        s.compute_chunk = elsewhere
        s.accept(names, times, pos, now_ns=T0)  # its first chunk, prepared
        assert [x.k for x in s.due(T0)[0]] == [0]
        streams.append(s)
    assert calls == [0.0]
    while streams[0].compute_ahead(T0 + 40 * MS, lead_ns=20 * MS):
        pass
    assert calls == [0.0, 0.05]
    served = [[(x.k, x.result.taujet[x.row].tolist()) for x in s.due(T0 + 120 * MS)[0]] for s in streams]
    assert [k for k, _ in served[0]] == list(range(1, 121))
    assert served[0] == served[1]
    assert calls == [0.0, 0.05]  # the chunk from 100 ms, not ready, was computed by due() itself


def test_a_stream_whose_worker_is_gone_computes_ahead_itself(iiwa):
    stopped = Worker(niceness=0)
    stopped.stop()
    s = ReferenceStream(0.001, 2, chunk_seconds=0.05, on_limit_violation="warn")
    s.set_model(iiwa)
    s.compute_chunk = RemoteChunks(stopped)
    with pytest.raises(WorkerStopped):
        s.compute_chunk(iiwa, None, np.zeros(1), 2)
    s.accept(list(iiwa.joint_names), *motion(iiwa), now_ns=T0)  # prepared here
    assert [x.k for x in s.due(T0)[0]] == [0]
    assert s.compute_ahead(T0 + 40 * MS, lead_ns=20 * MS) is True  # computed here
    assert s.compute_ahead(T0 + 40 * MS, lead_ns=20 * MS) is False
    assert len(s.due(T0 + 60 * MS)[0]) == 60
