"""The intake thread of the feedforward node (trajectories taken in off the executor), without
DDS: a node shutting down while a trajectory is in hand ends the thread quietly (its publishers
are gone: no traceback on the terminal), and a callback that fails while the node serves is
said in one line and the next trajectory is taken in."""

import threading

import numpy as np
import pytest

pytest.importorskip("rclpy", reason="rclpy (ros-rclpy wheels) not installed")
from hod_dynamics.feedforward.measured_state import MeasuredState  # noqa: E402
from hod_dynamics.feedforward.reference_stream import ReferenceStream  # noqa: E402
from hod_dynamics.ros.conversions import trajectory_msg  # noqa: E402
from hod_dynamics.ros.trajectory_intake import Job, TrajectoryIntake  # noqa: E402

T0 = 500 * 1_000_000_000


@pytest.fixture
def thread_errors(monkeypatch):
    """Exceptions that end a thread (what Python would print as 'Exception in thread ...')."""
    errors = []
    monkeypatch.setattr(threading, "excepthook", errors.append)
    return errors


def intake_for(iiwa, lines):
    stream = ReferenceStream(0.01, 2)
    stream.set_model(iiwa, hold=np.zeros(7), now_ns=T0)
    intake = TrajectoryIntake(stream, MeasuredState(), lambda: 100_000, log=lines.append)
    intake.start()
    return intake, stream


def message(iiwa, scale=0.3, start=0.0):
    times = np.linspace(start, start + 1.0, 5)
    return trajectory_msg(list(iiwa.joint_names), times, scale * np.sin(times)[:, None] * np.ones(7))


def test_a_halt_while_a_trajectory_is_in_hand_ends_the_thread_without_a_traceback(iiwa, thread_errors):
    """The node halts (intake.stop) while the thread accepts; the node's publishers are then
    destroyed, so publishing what was accepted would raise: it is not published, nothing raises."""
    lines, published = [], []
    intake, _ = intake_for(iiwa, lines)
    in_hand, halted = threading.Event(), threading.Event()

    def now_ns_of_a_job_in_hand():  # called by the intake as it takes the job in: halt the node then
        in_hand.set()
        halted.wait(10)
        return None

    intake.measured = type("Measured", (), {"state": lambda self, names, now: now_ns_of_a_job_in_hand()})()

    def publish(accepted, header):
        published.append(accepted)
        raise RuntimeError("publisher's context is invalid")  # what rclpy raises after shutdown

    msg = message(iiwa, start=1.0)  # starts after t = 0: the measured state is read
    intake.submit(Job(T0, publish, lines.append, msg=msg))
    assert in_hand.wait(10)
    intake.stop()
    halted.set()
    intake.thread.join(10)
    assert not intake.thread.is_alive()
    assert lines == [], lines
    assert thread_errors == [] and published == [], lines


def test_a_callback_that_fails_while_serving_is_said_and_the_next_trajectory_is_taken_in(iiwa, thread_errors):
    lines, done = [], []
    intake, _ = intake_for(iiwa, lines)

    def fails(accepted, header):
        raise RuntimeError("a defect in the callback")

    intake.submit(Job(T0, fails, lines.append, msg=message(iiwa)))
    intake.submit(Job(T0 + 1, lambda accepted, header: done.append(header), lines.append, msg=message(iiwa, 0.2)))
    for _ in range(1000):
        if done:
            break
        threading.Event().wait(0.01)
    intake.stop()
    intake.thread.join(10)
    assert len(done) == 1 and thread_errors == []
    assert sum("internal error after taking in a trajectory: RuntimeError('a defect in the callback')" in line
               for line in lines) == 1
