"""Bad inputs a new user met (a sweep of 164 on a fresh clone) that gave a traceback, a silent
result or a late refusal: each now gets one line naming the fault and exit code 2 on the command
line (or the documented exception in Python), nothing written, and the check comes before any
work. (identify on a motionless recording is tested with identification.)"""

import os

import numpy as np
import pytest

import hod_dynamics as hd
from hod_dynamics import cli
from hod_dynamics.model.urdf import MAX_URDF_BYTES

from recordings import Recording


def error_line(capsys, argv):
    """Run the command; returns its one stderr line after checking exit code 2."""
    assert cli.main(argv) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1, err
    assert err[0].startswith("hod-dynamics: error: ")
    return err[0]


def swapped_limits_urdf(path):
    """The shipped iiwa 14 with joint 2's <limit> lower and upper swapped."""
    text = open(hd.robot_path("iiwa14")).read()
    joint = text.index('<joint name="iiwa_joint_2"')
    at = text.index('<limit lower="-2.094" upper="2.094"', joint)
    path.write_text(text[:at] + '<limit lower="2.094" upper="-2.094"' + text[at + 35:])
    return path


def test_limits_with_lower_above_upper_load_with_a_warning_naming_the_joint_and_line(tmp_path, capsys):
    urdf = swapped_limits_urdf(tmp_path / "swapped.urdf")
    with pytest.warns(hd.errors.HodDynamicsWarning, match=r"joint 'iiwa_joint_2' \(line \d+\): <limit "
                                                          r"lower=\"2.094\" upper=\"-2.094\"> has lower above upper"):
        model = hd.RobotModel.from_urdf(str(urdf))
    assert model.lower[1] == 2.094 and model.upper[1] == -2.094      # kept as written: the dynamics ignores them
    assert cli.main(["info", str(urdf)]) == 0
    assert "warning: joint 'iiwa_joint_2'" in capsys.readouterr().out


def test_excite_refuses_swapped_limits_in_one_line_before_optimising(tmp_path, capsys):
    urdf = swapped_limits_urdf(tmp_path / "swapped.urdf")
    out = tmp_path / "new" / "excitation.yaml"
    line = error_line(capsys, ["excite", "--urdf", str(urdf), "--out", str(out), "--no-progress"])
    assert line == ("hod-dynamics: error: joint 'iiwa_joint_2': its URDF <limit> lower 2.094 is above upper -2.094 "
                    "(swapped?); excite keeps every joint within its limits: correct them in the URDF")
    assert not (tmp_path / "new").exists()


def test_excite_refuses_an_out_that_is_a_folder_before_reading_the_model(tmp_path, capsys):
    # the URDF does not exist either: the --out check comes first, before any work
    line = error_line(capsys, ["excite", "--urdf", str(tmp_path / "none.urdf"), "--out", str(tmp_path),
                               "--no-progress"])
    assert line == (f"hod-dynamics: error: --out '{tmp_path}' is a folder; give the waypoint YAML file to write, e.g. "
                    f"{tmp_path / 'excitation.yaml'}")
    assert os.listdir(tmp_path) == []


def test_a_bag_with_infinite_efforts_is_refused_naming_the_joint(tmp_path, capsys):
    rec = Recording(seed=3, duration=4.0, rate=100.0)
    rec.effort[40:45, 2] = np.inf
    bag = rec.write(tmp_path / "bag")
    out = tmp_path / "out"
    line = error_line(capsys, ["analyze-bag", str(bag), "--urdf", "iiwa14", "--out", str(out), "--no-progress"])
    assert line.startswith("hod-dynamics: error: effort of joint 'iiwa_joint_3' on /joint_states is infinite at 5 "
                           f"of {len(rec.t)} samples (the first 0.4"), line
    assert not out.exists()
    with pytest.raises(hd.InputError, match="effort of joint 'iiwa_joint_3'"):
        from hod_dynamics.replay.analysis import analyze_joint_states

        analyze_joint_states(rec.model, rec.states())


def test_a_yes_for_a_friction_coefficient_is_refused_not_read_as_1(tmp_path, capsys, iiwa):
    friction = tmp_path / "friction.yaml"
    friction.write_text("iiwa_joint_1: {coulomb: yes, viscous: 0.5, offset: 0.0}\n")
    with pytest.raises(hd.InputError, match=r"friction of joint 'iiwa_joint_1': coulomb must be a number, got True "
                                            r"\(YAML reads yes/no/on/off/true/false as booleans\)"):
        hd.load_friction(str(friction), iiwa)
    bag = Recording(seed=3, duration=4.0, rate=100.0).write(tmp_path / "bag")
    line = error_line(capsys, ["analyze-bag", str(bag), "--urdf", "iiwa14", "--out", str(tmp_path / "out"),
                               "--friction", str(friction), "--no-progress"])
    assert "coulomb must be a number, got True" in line
    assert not (tmp_path / "out").exists()


def test_booleans_are_refused_as_joint_positions(iiwa):
    z = np.zeros(7)
    for q in (np.ones(7, dtype=bool), [True] * 7, np.array([0.1, True, 0.2, 0.0, 0.0, 0.0, 0.0], dtype=object)):
        with pytest.raises(hd.InputError, match=r"^q must be an array of real numbers, got booleans"):
            hd.inverse_dynamics(iiwa, q, z, z)
    with pytest.raises(hd.InputError, match=r"^qjet must be an array of real numbers, got booleans"):
        hd.time_derivatives(iiwa, np.zeros((3, 7), dtype=bool), 0)


def test_a_urdf_mapping_whose_patterns_match_no_bag_is_refused(tmp_path, capsys):
    pytest.importorskip("distributed")
    bag = Recording(seed=3, duration=4.0, rate=100.0).write(tmp_path / "run_01")
    out = tmp_path / "fleet"
    line = error_line(capsys, ["analyze-bags", str(bag), "--urdf", "arm07_*=iiwa14", "--out", str(out),
                               "--workers", "0", "--no-progress"])
    assert line == ("hod-dynamics: error: no pattern of the --urdf mapping ('arm07_*') matches any of the 1 bags "
                    "('run_01'); a pattern is matched against the bag's name (fnmatch: 'arm07_*'), or its path when "
                    "the pattern holds a '/'")
    assert not out.exists()
    # a fleet with no series to judge (every bag failed) says so, not "p < nan for each of the 0"
    from hod_dynamics.fleet.trends import threshold_text

    text = threshold_text([])
    assert "nan" not in text and text.endswith("no series could be judged (a trend needs 3 or more bags of a robot "
                                               "analysed).")


def test_a_urdf_above_the_size_limit_is_refused_before_it_is_read(tmp_path, capsys):
    big = tmp_path / "big.urdf"
    with open(big, "wb") as fh:             # 1 GB of nothing (a sparse file): read, it would not parse
        fh.truncate(2**30)
    with pytest.raises(hd.ModelError, match=rf"^URDF file '{big}' is 1,024 MB; a robot description is refused above "
                                            rf"{MAX_URDF_BYTES // 2**20} MB"):
        hd.RobotModel.from_urdf(str(big))
    line = error_line(capsys, ["info", str(big)])
    assert "is 1,024 MB; a robot description is refused above 32 MB" in line
    with pytest.raises(hd.ModelError, match="the URDF text is 33 MB"):
        hd.RobotModel.from_urdf("<robot name='x'>" + " " * (33 * 2**20) + "</robot>")
