"""The hod-dynamics command line: the demo (main job), info, and one-line errors."""

import csv
import os

import numpy as np

import hod_dynamics as hd
from hod_dynamics import cli, paper_examples as paper


def test_demo_writes_csv_and_plot_consistent_with_the_library(tmp_path, capsys):
    assert cli.main(["demo", "--out", str(tmp_path), "--order", "2", "--duration", "0.5", "--rate", "100"]) == 0
    out = capsys.readouterr().out
    assert "peak |tau^(k)| per joint" in out
    with open(tmp_path / "demo_torque_jets.csv") as f:
        rows = list(csv.reader(f))
    header, data = rows[0], np.array(rows[1:], dtype=float)
    assert header[0] == "t" and len(header) == 1 + 7 + 3 * 7 and len(data) == 51
    model = hd.load_robot("iiwa14", gravity=paper.IIWA_GRAVITY)
    t = data[:, 0]
    expected = hd.time_derivatives(model, paper.gaz_trajectory_jet(t, 5), 2,
                                   wrenches={"iiwa_link_7": paper.iiwa_wrench_jet(t, 3)})
    np.testing.assert_allclose(data[:, 8:15], expected[:, 0], rtol=1e-8, atol=1e-8)
    assert os.path.getsize(tmp_path / "demo_torque_jets.png") > 20000


def test_info_lists_joints(capsys):
    assert cli.main(["info", hd.robot_path("iiwa14"), "--lock", "iiwa_joint_7=0.5"]) == 0
    out = capsys.readouterr().out
    assert "iiwa14: 6 moving joints" in out and "iiwa_joint_6" in out


def test_errors_are_one_line_with_exit_code_2(capsys):
    assert cli.main(["info", "/no/such.urdf"]) == 2
    err = capsys.readouterr().err.strip()
    assert err.count("\n") == 0 and "URDF file not found: '/no/such.urdf'" in err
    assert cli.main(["info", hd.robot_path("iiwa14"), "--lock", "iiwa_joint_7"]) == 2
    assert "--lock expects JOINT=VALUE" in capsys.readouterr().err
