"""Identification against a known truth: generator recordings of the shipped KUKA iiwa whose
inertias are perturbed by up to 30 %, with friction, sensor noise, jittered stamps and dropped
samples. Identified on one run from the unperturbed URDF, validated on another; the command
line end to end; bad input named."""

import contextlib
import io
import json
import os
import shlex
import sys

import numpy as np
import pytest

import hod_dynamics as hd
from hod_dynamics import cli
from hod_dynamics.replay.analysis import analyze_joint_states
from hod_dynamics.recordings.bag import read_joint_states
from hod_dynamics.errors import InputError
from hod_dynamics.algorithms.friction import load_friction
from hod_dynamics.identification.fit import identify
from hod_dynamics.identification.report import residuals
from hod_dynamics.algorithms.regressors import friction_parameters
from recordings import EFFORT_NOISE, Recording, perturbed_model

pytest.importorskip("rosbags")
pytest.importorskip("cvxpy")

PRIOR = hd.load_robot("iiwa14")
TRUTH = perturbed_model(PRIOR, 0.3, seed=5)


@pytest.fixture(scope="module")
def runs(tmp_path_factory):
    """Two recordings of the perturbed robot (different excitations): (Recording, bag path, analysis)."""
    folder = tmp_path_factory.mktemp("identification")
    out = []
    for seed in (1, 2):
        rec = Recording(seed=seed, model=TRUTH)
        path = rec.write(str(folder / f"run{seed}.mcap"))
        out.append((rec, path, analyze_joint_states(PRIOR, read_joint_states(path), order=0)))
    return out


def _truth_base(result, rec):
    return result.base.K @ np.r_[hd.inertial_parameters(TRUTH).ravel(), friction_parameters(rec.friction)]


@pytest.mark.parametrize("method", ["consistent", "ols"])
def test_known_truth_is_found_within_its_standard_errors_and_validates_at_the_noise(runs, method):
    (rec1, _, run1), (_, _, run2) = runs
    result = identify(PRIOR, [run1], method=method)
    z = (result.beta - _truth_base(result, rec1)) / result.beta_se
    # honest standard errors: the largest of 64 |z| exceeds 3 about one time in six for least
    # squares; the consistent fit (the acceptance) is held to 3
    assert np.abs(z).max() < (3.0 if method == "consistent" else 3.5), result.base.names[int(np.argmax(np.abs(z)))]
    table, _ = residuals(result, run2)
    identified = np.array([row["identified"] for row in table.values()])
    assert identified.max() < 1.15 * EFFORT_NOISE, identified
    prior = np.array([row["prior"] for row in table.values()])
    assert prior.max() > 2 * EFFORT_NOISE       # the prior (with friction fitted) does not explain run 2
    if method == "consistent":
        assert np.all(result.consistency > 0)   # every body a real mass distribution
        assert not result.notes
    assert 100 < result.condition_number < 1e5 and result.base.rank == 64


def test_identified_model_and_regressor_predict_the_same_torques(runs):
    rec1, _, run1 = runs[0]
    result = identify(PRIOR, [run1])
    q = run1.result.qjet[:200]
    Y = hd.regressor(PRIOR, q[:, 0], q[:, 1], q[:, 2], friction=True)
    x = np.r_[result.parameters.ravel(), friction_parameters(result.friction)]
    direct = hd.inverse_dynamics(result.model, q[:, 0], q[:, 1], q[:, 2], friction=result.friction)
    np.testing.assert_allclose(Y @ x, direct, atol=1e-9)


def test_recordings_that_cannot_determine_a_parameter_are_refused_naming_it(runs, tmp_path):
    _, _, run1 = runs[0]
    short = analyze_joint_states(PRIOR, run1.states.select(0.0, 0.4), order=0)
    with pytest.raises(InputError, match="too few for the 64 base parameters"):
        identify(PRIOR, [short])
    still = Recording(seed=3, model=TRUTH, duration=8.0)
    still.position[:, 6] = still.position[0, 6]          # joint 7 never moves
    still.velocity[:, 6] = 0.0
    path = still.write(str(tmp_path / "still.mcap"))
    analysis = analyze_joint_states(PRIOR, read_joint_states(path), order=0)
    with pytest.raises(InputError, match=r"do not excite \d+ base parameters .*iiwa_joint_7"):
        identify(PRIOR, [analysis])
    without = Recording(seed=3, model=TRUTH, duration=4.0).write(str(tmp_path / "no_effort.mcap"), effort=False)
    with pytest.raises(InputError, match="carry no efforts"):
        identify(PRIOR, [analyze_joint_states(PRIOR, read_joint_states(without), order=0)])


@pytest.fixture(scope="module")
def command(runs, tmp_path_factory):
    """(output folder, printed text) of ``hod-dynamics identify run1 --validate run2``."""
    import contextlib
    import io

    (rec1, bag1, _), (_, bag2, _) = runs
    out = tmp_path_factory.mktemp("identified")
    printed = io.StringIO()
    with contextlib.redirect_stdout(printed):
        code = cli.main(["identify", bag1, "--urdf", rec1.urdf, "--out", str(out), "--validate", bag2,
                         "--no-progress"])
    assert code == 0
    return out, printed.getvalue()


def test_command_writes_a_urdf_and_friction_that_analyze_bag_and_pinocchio_take(runs, command, tmp_path):
    bag2 = runs[1][1]
    out, printed = command
    assert "physically consistent bodies: 7 of 7" in printed and "run2 (validation)" in printed, printed
    data = json.loads((out / "identification.json").read_text())
    assert data["method"] == "consistent" and len(data["base_parameters"]) == 64
    assert data["residual_rms"]["run2"]["role"] == "validation"
    assert all(r["identified"] < 1.15 * EFFORT_NOISE for r in data["residual_rms"]["run2"]["joints"].values())
    assert os.path.getsize(out / "torque_run2.png") > 20000
    # the identified URDF: same kinematics and names, the identified inertias, read strictly
    model = hd.RobotModel.from_urdf(str(out / "identified.urdf"), inertia_check="error")
    assert model.joint_names == PRIOR.joint_names and np.array_equal(model.references, PRIOR.references)
    pi = np.array([body["parameters"] for body in data["bodies"].values()])
    np.testing.assert_allclose(hd.inertial_parameters(model), pi, rtol=1e-12, atol=1e-15)
    pin = pytest.importorskip("pinocchio")
    pm = pin.buildModelFromUrdf(str(out / "identified.urdf"))
    theirs = np.array([pm.inertias[pm.getJointId(nm)].toDynamicParameters() for nm in model.joint_names])
    np.testing.assert_allclose(theirs, pi, rtol=1e-12, atol=1e-15)
    friction = load_friction(str(out / "friction.yaml"), model)
    np.testing.assert_allclose(model.damping, friction.viscous)
    # analyze-bag takes both as they are and explains the validation run down to the sensor noise
    assert cli.main(["analyze-bag", bag2, "--urdf", str(out / "identified.urdf"), "--friction",
                     str(out / "friction.yaml"), "--out", str(tmp_path / "replay"), "--order", "0",
                     "--no-plot", "--no-derived-bag", "--no-progress"]) == 0
    summary = json.loads((tmp_path / "replay" / "summary.json").read_text())
    assert all(j["residual_rms"] < 1.15 * EFFORT_NOISE for j in summary["joints"].values())


def test_bags_of_one_file_name_keep_their_own_rows(runs, tmp_path, capsys):
    """run1/rec.mcap and run2/rec.mcap: each bag its own label (the folder's name before the
    file's) in identification.json and the printed table; a library call with one name for
    two recordings is refused rather than leaving one out."""
    import shutil

    (rec1, bag1, run1), (_, bag2, run2) = runs
    first, second = (shutil.copytree(bag, tmp_path / day / "rec.mcap") for day, bag in (("d1", bag1), ("d2", bag2)))
    argv = ["identify", str(first), "--urdf", rec1.urdf, "--out", str(tmp_path / "o"), "--validate", str(second),
            "--method", "ols", "--no-plot", "--no-progress"]
    assert cli.main(argv) == 0
    printed = capsys.readouterr().out
    assert "d1__rec (identification)" in printed and "d2__rec (validation)" in printed, printed
    data = json.loads((tmp_path / "o" / "identification.json").read_text())
    assert {name: entry["role"] for name, entry in data["residual_rms"].items()} == \
        {"d1__rec": "identification", "d2__rec": "validation"}
    assert data["command"] == shlex.join(["hod-dynamics"] + argv)  # the command as given (not this process's argv)
    with pytest.raises(InputError, match="every recording needs a name of its own, got rec more than once"):
        identify(PRIOR, [run1, run2], method="ols", names=["rec", "rec"])


def test_the_consistent_fit_without_cvxpy_says_what_to_install(runs, monkeypatch):
    monkeypatch.setitem(sys.modules, "cvxpy", None)   # as if not installed
    with pytest.raises(InputError, match=r"pip install cvxpy clarabel \(the identification extra .*or use the ols"):
        identify(PRIOR, [runs[0][2]])


def test_command_refuses_bad_input_in_one_line(runs, tmp_path, capsys):
    rec1, bag1, _ = runs[0]
    no_effort = Recording(seed=4, model=TRUTH, duration=3.0).write(str(tmp_path / "ne.mcap"), effort=False)
    assert cli.main(["identify", no_effort, "--urdf", rec1.urdf, "--out", str(tmp_path / "a"), "--no-progress"]) == 2
    err = capsys.readouterr().err.strip()
    assert err.count("\n") == 0 and "carry no efforts" in err
    assert cli.main(["identify", bag1, "--urdf", "planar_2r", "--out", str(tmp_path / "b"), "--no-progress"]) == 2
    err = capsys.readouterr().err.strip()
    assert err.count("\n") == 0 and "joints ['joint1', 'joint2'] of the model are in no message on /joint_states" in err


def test_a_gripper_on_the_topic_and_joints_from_two_drivers_are_read_as_analyze_bag_reads_them(runs, command, tmp_path):
    # run 1 with a gripper publishing its fingers on /joint_states; run 2 with joints 5-7 from
    # a second driver sampling 0.37 periods after the first
    from hod_dynamics.recordings.bag_writer import write_joint_state_streams

    (rec1, _, _), (rec2, _, _) = runs
    shared = rec1.write(str(tmp_path / "shared.mcap"), streams=[rec1.gripper_stream(50.0)])
    second, _ = rec2.second_driver([4, 5, 6], offset=0.37)
    split = write_joint_state_streams(tmp_path / "split.mcap", [rec2.stream(joints=[0, 1, 2, 3]), second])
    out = tmp_path / "out"
    printed = io.StringIO()
    with contextlib.redirect_stdout(printed):
        assert cli.main(["identify", str(shared), "--urdf", rec1.urdf, "--out", str(out), "--validate", str(split),
                         "--no-plot", "--no-progress"]) == 0
    text = printed.getvalue()
    assert "note: bag shared: ignored 1,250 messages with joints finger_left, finger_right: not in the model" in text
    assert "note: bag split: joints iiwa_joint_5, iiwa_joint_6, iiwa_joint_7 come in other messages" in text
    data = json.loads((out / "identification.json").read_text())
    assert any(n.startswith("bag shared: ignored 1,250 messages") for n in data["notes"])
    # the gripper changes nothing: the parameters identified from run 1 alone
    alone = json.loads((command[0] / "identification.json").read_text())
    np.testing.assert_allclose([e["value"] for e in data["base_parameters"]],
                               [e["value"] for e in alone["base_parameters"]], rtol=1e-9, atol=1e-12)
    # the aligned validation run is predicted at the effort noise
    assert all(r["identified"] < 1.2 * EFFORT_NOISE for r in data["residual_rms"]["split"]["joints"].values())


def test_the_feedforward_node_takes_the_identified_files_as_they_are(command):
    rclpy = pytest.importorskip("rclpy", reason="rclpy (ros-rclpy wheels) not installed")
    from rclpy.parameter import Parameter

    from hod_dynamics.ros.feedforward_node import FeedforwardNode

    out, _ = command
    context = rclpy.Context()
    rclpy.init(context=context)
    try:
        node = FeedforwardNode(context=context, parameter_overrides=[
            Parameter("urdf_path", value=str(out / "identified.urdf")),
            Parameter("friction", value=str(out / "friction.yaml"))])
        data = json.loads((out / "identification.json").read_text())
        pi = np.array([body["parameters"] for body in data["bodies"].values()])
        np.testing.assert_allclose(hd.inertial_parameters(node.model), pi, rtol=1e-12, atol=1e-15)
        offsets = [data["friction_model"][j]["offset"] for j in node.model.joint_names]
        np.testing.assert_allclose(node.stream.friction.offset, offsets)
        node.destroy_node()
    finally:
        rclpy.try_shutdown(context=context)


def test_glitches_in_the_efforts_are_left_out(tmp_path):
    """Twenty spikes of 40 N m and a stretch of efforts read as 0 (a dropped torque sensor
    packet): left out after a first fit, named in a note, and the fit validates at the noise."""
    rec = Recording(seed=1, model=TRUTH)
    rng = np.random.default_rng(0)
    rows = rng.choice(len(rec.t), 20, replace=False)
    rec.effort[rows, rng.integers(0, 7, 20)] += 40.0
    rec.effort[2000:2010, 1] = 0.0
    analysis = analyze_joint_states(PRIOR, read_joint_states(rec.write(str(tmp_path / "glitches.mcap"))), order=0)
    result = identify(PRIOR, [analysis])
    assert any("left out as outliers" in note for note in result.notes), result.notes
    other = Recording(seed=2, model=TRUTH)
    check = analyze_joint_states(PRIOR, read_joint_states(other.write(str(tmp_path / "run2.mcap"))), order=0)
    table, _ = residuals(result, check)
    assert max(row["identified"] for row in table.values()) < 1.15 * EFFORT_NOISE


@pytest.mark.filterwarnings("ignore::hod_dynamics.errors.URDFExtensionWarning")   # FloBaRoID's stray <origin>
def test_a_cad_model_identifies_the_published_parameters_of_the_kuka_lwr4():
    """The situation of a real identification: the manufacturer-CAD description of the KUKA
    LWR4+ as the prior, recordings of the arm as Gaz et al. identified it (their published
    parameters, not physically consistent themselves), three runs; identified on the first."""
    corpus = os.path.join(os.path.dirname(os.path.abspath(__file__)), "data", "urdf_corpus", "FloBaRoID")
    cad = hd.RobotModel.from_urdf(os.path.join(corpus, "kuka_lwr4.urdf"))
    gaz = hd.RobotModel.from_urdf(os.path.join(corpus, "kuka_lwr4_gaz.urdf"), inertia_check="off")
    truth = cad.with_inertial_parameters(hd.inertial_parameters(gaz))
    runs = []
    for seed in (1, 2, 3):
        rec = Recording(seed=seed, urdf=os.path.join(corpus, "kuka_lwr4.urdf"), model=truth)
        runs.append((rec, analyze_joint_states(cad, _states(rec), order=0)))
    result = identify(cad, [runs[0][1]])
    beta = result.base.K @ np.r_[hd.inertial_parameters(truth).ravel(), friction_parameters(runs[0][0].friction)]
    assert np.abs((result.beta - beta) / result.beta_se).max() < 3.0
    assert np.all(result.consistency > 0)
    for _, analysis in runs[1:]:
        table, _ = residuals(result, analysis)
        assert max(row["identified"] for row in table.values()) < 1.15 * EFFORT_NOISE
        assert table["lwr_1_joint"]["prior"] > 4 * EFFORT_NOISE       # the CAD model does not explain it


def _states(rec):
    """The recording as read from its bag (written to a temporary folder)."""
    import tempfile

    with tempfile.TemporaryDirectory() as folder:
        return read_joint_states(rec.write(os.path.join(folder, "run.mcap")))
