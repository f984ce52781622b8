"""Payload identification against a known truth: a 2 kg box on the iiwa's flange, the arm's
model known, recorded for 20 s (friction, 0.3 N m noise, 20-bit encoders, jittered stamps,
drops): its mass within 5 % and its centre of mass within 5 mm, the URDF fragment read back by
this package and by Pinocchio as the same body; a recording that does not excite the payload
and a link that does not exist refused in one line."""

import contextlib
import io
import json

import numpy as np
import pytest
import yaml

import hod_dynamics as hd
from hod_dynamics import cli
from hod_dynamics.errors import InputError
from hod_dynamics.identification.payload import identify_payload
from hod_dynamics.model.inertia import com_form, parameters_from_inertia
from hod_dynamics.model.spatial import body_inertia, rpy_matrix
from hod_dynamics.recordings.bag import read_joint_states
from hod_dynamics.replay.analysis import analyze_joint_states
from recordings import EFFORT_NOISE, Recording

pytest.importorskip("rosbags")
pytest.importorskip("cvxpy")

ARM = hd.load_robot("iiwa14")
MASS, COM = 2.0, np.array([0.01, -0.02, 0.07])             # kg, m in the flange's frame
SIZE = np.array([0.10, 0.08, 0.12])                          # m, the box's edges
TURN = rpy_matrix([0.2, -0.1, 0.3])
BOX = parameters_from_inertia(body_inertia(MASS, COM, TURN @ np.diag(
    MASS / 12 * np.array([SIZE[1] ** 2 + SIZE[2] ** 2, SIZE[0] ** 2 + SIZE[2] ** 2, SIZE[0] ** 2 + SIZE[1] ** 2])) @ TURN.T))


def _carrying(box):
    pi = hd.inertial_parameters(ARM)
    pi[6] += box                     # the flange (iiwa_link_ee) is link 7's frame
    return ARM.with_inertial_parameters(pi)


@pytest.fixture(scope="module")
def bags(tmp_path_factory):
    """20 s recordings of the arm carrying the box: two excitations and a slow motion."""
    folder = tmp_path_factory.mktemp("payload")
    real = _carrying(BOX)
    return {name: Recording(seed=seed, model=real, duration=20.0, motion=motion).write(str(folder / f"{name}.mcap"))
            for name, seed, motion in (("run1", 1, "excitation"), ("run2", 2, "excitation"), ("slow", 3, "slow"))}


@pytest.fixture(scope="module")
def command(bags, tmp_path_factory):
    out = tmp_path_factory.mktemp("identified")
    printed = io.StringIO()
    with contextlib.redirect_stdout(printed):
        assert cli.main(["identify", bags["run1"], "--urdf", "iiwa14", "--out", str(out), "--payload", "iiwa_link_ee",
                         "--validate", bags["run2"], "--no-plot", "--no-progress"]) == 0
    return out, printed.getvalue()


def test_a_2_kg_box_on_the_flange_is_found_within_5_percent_and_5_mm_from_20_s(command):
    out, printed = command
    payload = yaml.safe_load((out / "payload.yaml").read_text())["payload"]
    assert payload["link"] == "iiwa_link_ee"
    assert abs(payload["mass"] / MASS - 1) < 0.05
    assert np.linalg.norm(np.array(payload["com"]) - COM) < 0.005
    assert "payload mass" in printed and "identified a payload on iiwa_link_ee" in printed
    data = json.loads((out / "identification.json").read_text())
    assert data["friction"] == "fitted" and (out / "friction.yaml").exists()
    run2 = data["residual_rms"]["run2"]
    assert run2["role"] == "validation"
    assert all(r["identified"] < 1.15 * EFFORT_NOISE for r in run2["joints"].values())
    assert max(r["prior"] for r in run2["joints"].values()) > 2 * EFFORT_NOISE      # the arm alone does not explain it


def test_the_payload_fragment_is_read_back_as_the_same_body_by_this_package_and_pinocchio(command, tmp_path):
    out, _ = command
    fragment = (out / "payload.urdf").read_text()
    text = open(hd.robot_path("iiwa14")).read().replace("</robot>", fragment + "</robot>")
    path = tmp_path / "with_payload.urdf"
    path.write_text(text)
    params = yaml.safe_load((out / "payload.yaml").read_text())["payload"]["parameters"]
    expected = hd.inertial_parameters(ARM)
    expected[6] += [params[k] for k in ("m", "mx", "my", "mz", "Ixx", "Ixy", "Iyy", "Ixz", "Iyz", "Izz")]
    model = hd.RobotModel.from_urdf(str(path), inertia_check="error")
    np.testing.assert_allclose(hd.inertial_parameters(model), expected, rtol=1e-9, atol=1e-12)
    pin = pytest.importorskip("pinocchio")
    pm = pin.buildModelFromUrdf(str(path))
    theirs = np.array([pm.inertias[pm.getJointId(nm)].toDynamicParameters() for nm in model.joint_names])
    np.testing.assert_allclose(theirs, expected, rtol=1e-9, atol=1e-12)


def test_known_friction_is_subtracted_and_the_payload_found_closer(bags):
    rec = Recording(seed=1, model=_carrying(BOX), duration=20.0)
    analysis = analyze_joint_states(ARM, read_joint_states(bags["run1"]), order=0)
    result = identify_payload(ARM, [analysis], "iiwa_link_7", friction=rec.friction)
    assert abs(result.mass / MASS - 1) < 0.01 and np.linalg.norm(result.com - COM) < 0.002
    assert result.friction is rec.friction and not result.friction_fitted
    m, c, Ic = com_form(BOX)
    assert np.abs(result.inertia_about_com - Ic).max() < 0.002        # kg m^2: the box's are 0.001 to 0.004


def test_a_slow_recording_does_not_excite_the_payloads_inertia_and_is_refused_naming_it(bags, tmp_path, capsys):
    out = tmp_path / "slow"
    assert cli.main(["identify", bags["slow"], "--urdf", "iiwa14", "--out", str(out), "--payload", "iiwa_link_ee",
                     "--no-progress"]) == 2
    err = capsys.readouterr().err.strip()
    assert err.count("\n") == 0 and "do not excite the payload enough to identify" in err and not out.exists()
    assert "payload Ixx (standard error" in err and "payload m " not in err       # its mass is determined


def test_a_payload_on_a_link_that_does_not_exist_or_does_not_move_is_one_line_and_exit_2(bags, tmp_path, capsys):
    for link, message in (("gripper_link", "no link 'gripper_link' in model 'iiwa14' to attach a payload to (its "
                                          "moving links: iiwa_link_1"),
                          ("iiwa_link_0", "link 'iiwa_link_0' is fixed to the base of model 'iiwa14'")):
        out = tmp_path / link
        assert cli.main(["identify", bags["run1"], "--urdf", "iiwa14", "--out", str(out), "--payload", link,
                         "--no-progress"]) == 2
        err = capsys.readouterr().err.strip()
        assert err.count("\n") == 0 and message in err and not out.exists()
    with pytest.raises(InputError, match="no link 'nope'"):
        identify_payload(ARM, [], "nope")
    assert cli.main(["identify", bags["run1"], "--urdf", "iiwa14", "--out", str(tmp_path / "f"), "--friction-file",
                     "friction.yaml", "--no-progress"]) == 2
    assert "--friction-file goes with --payload" in capsys.readouterr().err
