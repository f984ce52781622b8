"""Mechanisms with loops through the applications: the feedforward (SEA motor references of the
actuated joints), the stream a node serves in chunks, profiles and controller points, the replay of
a recording of the actuated joints, and the command line."""

import json

import numpy as np
import pytest

import hod_dynamics as hd
from hod_dynamics import cli
from hod_dynamics.feedforward.effort_trajectory import effort_trajectory
from hod_dynamics.feedforward.reference_stream import ReferenceStream
from hod_dynamics.feedforward.trajectory_feedforward import feedforward, profile
from hod_dynamics.replay.analysis import analyze_joint_states

import loop_oracles as L
from recordings import Recording

SEA = {"type": "sea", "stiffness": 40.0, "motor_inertia": 2e-4, "motor_damping": 0.01}


@pytest.fixture(scope="module")
def fourbar():
    return L.fourbar()


@pytest.fixture(scope="module")
def ankle():
    return L.ankle()


def _waypoints(model, motion, duration=2.0, points=21):
    """(names, times, positions) of a mechanism's motion sampled at ``points`` waypoints."""
    times = np.linspace(0.0, duration, points)
    return list(model.joint_names), times, L.sine_jet(times, K=1, **motion)[:, 0]


def test_sea_feedforward_of_the_ankles_motors_is_the_flatness_of_tau_a(ankle):
    names, times, positions = _waypoints(ankle, L.ANKLE_MOTION)
    traj = hd.Trajectory.from_waypoints(names, times, positions, continuity=6)
    t = np.linspace(0.0, 2.0, 101)
    result = feedforward(ankle, traj, t, 2, actuators={name: SEA for name in names})
    qjet = traj.jet(t, 4)
    tau = hd.time_derivatives(ankle, qjet, 2)
    assert result.joint_names == ("motor_left", "motor_right")
    assert np.array_equal(result.taujet, tau) and np.array_equal(result.qjet, qjet)
    assert np.allclose(result.thetajet, qjet[:, :3] + tau / SEA["stiffness"], rtol=0, atol=1e-14)
    u = SEA["motor_inertia"] * result.thetajet[:, 2] + SEA["motor_damping"] * result.thetajet[:, 1] + tau[:, 0]
    assert np.allclose(result.u, u, rtol=0, atol=1e-14)


def test_a_stream_served_in_chunks_gives_the_feedforward_of_the_whole_motion(fourbar):
    """A node's stream computes the samples a chunk at a time (each chunk closed from the
    model's assembly again): the four-bar's crank turns more than once and every sample stays on
    the assembly's branch."""
    stream = ReferenceStream(0.01, 2, chunk_seconds=0.25)
    stream.set_model(fourbar)
    names, times, positions = _waypoints(fourbar, dict(L.FOURBAR_MOTION, c1=[4.0]), points=41)
    start = 1_000_000_000
    accepted = stream.accept(names, times, positions, now_ns=start)
    samples = []
    for tick in range(201):                                          # the node's clock, 100 Hz
        due, failure = stream.due(start + tick * 10_000_000)
        assert failure is None
        samples += due
    assert len(samples) == 201
    served = np.array([s.result.taujet[s.row] for s in samples])
    whole = feedforward(fourbar, accepted.trajectory, np.arange(201) * 0.01, 2)
    assert np.all(np.abs(served - whole.taujet).max(axis=0) < 1e-11 * np.maximum(1.0, np.abs(whole.taujet).max(axis=0)))
    assert np.ptp(whole.qjet[:, 0, 0]) > 2 * np.pi                  # a full turn and more
    assert np.max(np.abs(accepted.points.taujet[:, 0] - feedforward(fourbar, accepted.trajectory,
                                                                    accepted.points.t, 0).taujet[:, 0])) < 1e-11


def test_the_kernels_a_node_prepares_for_a_mechanism_are_its_trees(fourbar):
    from hod_dynamics.algorithms.dispatch import prepare_compiled_kernels
    from hod_dynamics.kernels.backend import numba_available

    if not numba_available():
        pytest.skip("numba not installed")
    prepare_compiled_kernels(fourbar, 2)             # as the node's background thread calls it
    yjet = L.sine_jet(np.linspace(0.0, 1.0, 5), K=5, **L.FOURBAR_MOTION)
    assert np.max(np.abs(hd.time_derivatives(fourbar, yjet, 2, backend="numba")
                         - hd.time_derivatives(fourbar, yjet, 2, backend="numpy"))) < 1e-11


def test_profiles_and_controller_points_hold_the_actuated_joints_and_their_limits(ankle):
    names, times, positions = _waypoints(ankle, L.ANKLE_MOTION)
    traj = hd.Trajectory.from_waypoints(names, times, 3 * positions, continuity=6)    # the motors past 1.2 rad
    result, report = profile(ankle, traj, 50.0, 1)
    assert result.taujet.shape == (101, 2, 2) and not report.ok
    assert {v.joint for v in report.violations if v.kind == "position"} == {"motor_left", "motor_right"}
    points = effort_trajectory(ankle, hd.Trajectory.from_waypoints(names, times, positions, continuity=6), 20.0, 1)
    assert points.joint_names == ("motor_left", "motor_right") and points.taujet.shape[1:] == (2, 2)


@pytest.fixture(scope="module")
def ankle_recording(ankle):
    """6 s of the ankle's motors at 500 Hz recorded as a robot's log is: jittered stamps, drops,
    a 20-bit encoder, torque-sensor noise and friction on the motors."""
    return Recording(seed=3, rate=500.0, duration=6.0, urdf=L.ANKLE_URDF, model=ankle, center=np.zeros(2),
                     amplitude=np.array([0.3, 0.3]),
                     friction=dict(coulomb=[0.05, 0.04], viscous=[0.01, 0.012], offset=[0.002, -0.003]))


def test_the_replay_of_a_recording_of_the_motors_gives_tau_a_and_its_derivatives(ankle, ankle_recording):
    """Against the generator's exact truth: within 1 % (tau_a), 5 % (tau_a'), 20 % (tau_a'') of its
    range, and the error estimate within a factor of 2 of the actual error away from the ends."""
    analysis = analyze_joint_states(ankle, ankle_recording.states(), order=2)
    truth = ankle_recording.truth()
    assert analysis.joint_names == ("motor_left", "motor_right") and len(analysis.t) == len(truth)
    error = analysis.result.taujet - truth
    worst = np.abs(error).max(axis=0) / np.ptp(truth, axis=0)
    assert np.all(worst[0] < 0.01) and np.all(worst[1] < 0.05) and np.all(worst[2] < 0.2), worst
    for k in range(3):
        ends = np.zeros(len(truth), dtype=bool)
        for lo, hi in analysis.segments:
            t = analysis.t[lo:hi]
            ends[lo:hi] = (t - t[0] < analysis.errors.end_zone[k]) | (t[-1] - t < analysis.errors.end_zone[k])
        actual = np.sqrt(np.mean(error[~ends, k] ** 2, axis=0))
        ratio = analysis.errors.total[k] / actual
        assert np.all((ratio > 0.5) & (ratio < 2.0)), (k, ratio)


def test_analyze_bag_of_a_mechanism_with_loops_writes_the_motors_torques(ankle_recording, tmp_path):
    bag = ankle_recording.write(str(tmp_path / "ankle.mcap"))
    out = tmp_path / "analysis"
    assert cli.main(["analyze-bag", bag, "--urdf", L.ANKLE_URDF, "--loops", "urdf", "--out", str(out),
                     "--order", "1", "--no-plot", "--no-derived-bag", "--no-progress"]) == 0
    summary = json.loads((out / "summary.json").read_text())
    assert sorted(summary["joints"]) == ["motor_left", "motor_right"]
    peak = np.abs(ankle_recording.truth()[:, 0]).max(axis=0)
    assert np.allclose([summary["joints"][j]["peak_abs"]["tau0"] for j in ("motor_left", "motor_right")], peak,
                       rtol=0.02)


def test_info_lists_the_closures_and_a_bad_closure_is_one_line(capsys, tmp_path):
    assert cli.main(["info", L.FOURBAR_URDF, "--loops", L.FOURBAR_CLOSURES]) == 0
    out = capsys.readouterr().out
    assert "loops: 1 closures (5 constraint rows), actuated joints crank_joint" in out
    assert "closure rocker_ground: revolute (5 rows) between 'rocker' at [0.3, 0.0, 0.0]" in out
    bad = tmp_path / "bad.yaml"
    bad.write_text("closures:\n  - {name: c, frame_a: roker, frame_b: ground}\nactuated_joints: [crank_joint]\n")
    assert cli.main(["info", L.FOURBAR_URDF, "--loops", str(bad)]) == 2
    err = capsys.readouterr().err.strip()
    assert err.count("\n") == 0 and "closure 'c' names link 'roker' (did you mean 'rocker'?)" in err
