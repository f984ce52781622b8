"""Robot descriptions through the command line and the node: --lenient / strict, xacro files
and arguments, identified inertias listed, and robots with 0 moving joints."""

import os
import re

import numpy as np
import pytest

import hod_dynamics as hd
from hod_dynamics import cli
from test_urdf_corpus import _identified_lwr, corpus_path, rrbot_package  # noqa: F401  (fixture)


def _misspelt_iiwa(tmp_path):
    text = open(corpus_path("pinocchio/iiwa2.urdf"), encoding="utf-8").read()
    path = tmp_path / "iiwa7.urdf"
    path.write_text(text.replace('<axis xyz="0 0 1"/>', '<axs xyz="0 0 1"/>', 1))
    line = path.read_text()[:path.read_text().index("<axs")].count("\n") + 1
    return path, line


def test_info_refuses_a_misspelt_file_in_one_line_and_lenient_lists_the_warning(tmp_path, capsys):
    path, line = _misspelt_iiwa(tmp_path)
    assert cli.main(["info", str(path)]) == 2
    err = capsys.readouterr().err.strip()
    assert err.count("\n") == 0 and err.startswith("hod-dynamics: error: ")
    assert f"unknown element <axs> in joint 'iiwa_joint_1' (line {line}); did you mean <axis>?" in err
    assert cli.main(["info", str(path), "--lenient"]) == 0
    out = capsys.readouterr().out
    assert "iiwa7: 7 moving joints" in out
    assert f"warning: unknown element <axs> in joint 'iiwa_joint_1' (line {line}); did you mean <axis>?" in out


def test_info_lists_identified_inertias_that_are_not_psd(tmp_path, capsys):
    path = tmp_path / "lwr_identified.urdf"
    path.write_text(_identified_lwr())
    assert cli.main(["info", str(path)]) == 0
    warnings = [line for line in capsys.readouterr().out.splitlines() if line.startswith("warning: ")]
    assert len(warnings) == 2 and "link 'kuka_arm_3_link': rotational inertia is not positive semi-definite" in warnings[0]


def test_info_of_a_robot_with_no_moving_joint(capsys):
    assert cli.main(["info", corpus_path("urdfdom/branching_robot.urdf")]) == 0
    assert "branching_robot: 0 moving joints, root link 'torso'" in capsys.readouterr().out


def test_info_of_a_xacro_file_with_arguments(rrbot_package, capsys):  # noqa: F811
    assert cli.main(["info", str(rrbot_package), "--xacro-arg", "prefix:=right_"]) == 0
    out = capsys.readouterr().out
    assert "2dof_robot: 2 moving joints" in out and "right_joint1" in out and "right_joint2" in out
    assert cli.main(["info", str(rrbot_package), "--xacro-arg", "prefix"]) == 2
    assert "hod-dynamics: error: --xacro-arg expects NAME:=VALUE, got 'prefix'" in capsys.readouterr().err


def test_info_lists_the_extensions_of_a_unitree_g1_and_builds_it(capsys):
    assert cli.main(["info", corpus_path("unitree_ros/g1_29dof_rev_1_0.urdf")]) == 0
    out = capsys.readouterr().out
    assert out.startswith("g1_29dof_rev_1_0: 29 moving joints, root link 'pelvis'")
    assert ("warning: <mujoco> in robot 'g1_29dof_rev_1_0' (line 9) is not URDF: read past, as urdfdom and "
            "Pinocchio do (MuJoCo compiler options, as Unitree's descriptions carry them)") in out.splitlines()
    assert "warning: attribute dont_collapse of <joint> in joint 'left_hand_palm_joint' (line 768), joint " in out


LWR4_IDENTIFIED = corpus_path("FloBaRoID/kuka_lwr4_identified.urdf")


def test_analyze_bag_with_an_identified_lwr4_model_and_friction_urdf_refused(tmp_path, capsys):
    """FloBaRoID's identified KUKA LWR4+ (negative <dynamics friction> on four joints): the
    recording of that arm is analysed with warnings naming the joints; --friction urdf is refused
    in one line naming joint, line and value, before the bag is read or anything written."""
    import json

    from recordings import Recording

    with pytest.warns(hd.HodDynamicsWarning, match=r"<dynamics friction=\"-"):
        rec = Recording(seed=5, duration=8.0, urdf=LWR4_IDENTIFIED)
    assert rec.model.joint_names == tuple(f"lwr_{i}_joint" for i in range(7))
    bag = rec.write(tmp_path / "lwr4.mcap")
    out = tmp_path / "out"
    assert cli.main(["analyze-bag", str(bag), "--urdf", LWR4_IDENTIFIED, "--out", str(out), "--no-plot",
                     "--no-progress", "--no-derived-bag"]) == 0
    captured = capsys.readouterr()
    notes = [line for line in captured.err.splitlines() if line.startswith("warning: ")]
    assert notes[0].startswith("warning: joint 'lwr_3_joint' (line 207): <dynamics friction=\"-0.3904978507615987\"> "
                               "is negative")
    assert [n.split("'")[1] for n in notes] == ["lwr_3_joint", "lwr_4_joint", "lwr_5_joint", "lwr_6_joint"]
    summary = json.loads((out / "summary.json").read_text())
    rigid = np.array([summary["joints"][j]["residual_rms"] for j in rec.model.joint_names])
    friction_rms = np.sqrt(np.mean(rec.friction_jet[:, 0] ** 2, axis=0))
    # the residual is the recorded friction and sensor noise: the model's torques are the arm's
    assert np.all(np.abs(rigid - np.sqrt(friction_rms ** 2 + 0.3 ** 2)) < 0.1 * rigid), (rigid, friction_rms)
    refused = tmp_path / "refused"
    assert cli.main(["analyze-bag", str(tmp_path / "missing.mcap"), "--urdf", LWR4_IDENTIFIED, "--out", str(refused),
                     "--friction", "urdf", "--no-progress"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert err[-1] == ("hod-dynamics: error: friction 'urdf': joint 'lwr_3_joint' (line 203) has <dynamics "
                       "friction=\"-0.3904978507615987\">, a negative coefficient (as friction it would feed energy "
                       "into the joint); fit the friction, or give a friction file, instead")
    assert not refused.exists()


# -- the node ------------------------------------------------------------------------------------
ros = pytest.importorskip("ros_harness", reason="rclpy (ros-rclpy wheels) not installed")


@pytest.fixture(scope="module")
def context():
    ctx = ros.rclpy.Context()
    ros.rclpy.init(context=ctx)
    yield ctx
    ros.rclpy.try_shutdown(context=ctx)


@pytest.fixture
def harness(context):
    h = ros.Harness(context)
    yield h
    h.close()


def _node(harness, **params):
    from rclpy.parameter import Parameter

    from hod_dynamics.ros.feedforward_node import FeedforwardNode

    overrides = [Parameter(k, value=v) for k, v in params.items()]
    return harness.add(FeedforwardNode(context=harness.context, parameter_overrides=overrides))


def test_node_reads_a_xacro_urdf_path_with_xacro_args(harness, rrbot_package, capfd):  # noqa: F811
    node = _node(harness, urdf_path=str(rrbot_package), xacro_args=["prefix:=left_"])
    assert node.model.joint_names == ("left_joint1", "left_joint2")
    assert "2 moving joints ['left_joint1', 'left_joint2']" in capfd.readouterr().err


def test_node_strict_parameter(harness, tmp_path, capfd):
    from hod_dynamics.ros.process import StartupError

    path, line = _misspelt_iiwa(tmp_path)
    error = ros.refused_start(urdf_path=str(path))  # its own context: nothing left in the graph
    assert isinstance(error, StartupError), repr(error)
    assert re.search(rf"invalid robot model \(parameter urdf_path .*iiwa7.urdf\): '.*iiwa7.urdf': unknown element "
                     rf"<axs> in joint 'iiwa_joint_1' \(line {line}\)", str(error)), str(error)
    node = _node(harness, urdf_path=str(path), strict=False)
    assert node.model.n_dof == 7
    err = capfd.readouterr().err
    assert f"unknown element <axs> in joint 'iiwa_joint_1' (line {line}); did you mean <axis>?" in err
    assert "WARN" in err


def test_node_says_zero_moving_joints(harness, capfd):
    node = _node(harness, urdf_path=corpus_path("urdfdom/branching_robot.urdf"))
    assert node.model.n_dof == 0
    assert "0 moving joints []" in capfd.readouterr().err


def test_node_takes_an_identified_lwr4_and_refuses_its_negative_friction_as_friction(harness, capfd):
    """FloBaRoID's identified KUKA LWR4+: the node starts on it and logs the negative <dynamics>
    values as warnings naming joint and line; with ``friction: urdf`` (which would use them) it
    cannot start, and says which joint, line and value."""
    from hod_dynamics.ros.process import StartupError

    node = _node(harness, urdf_path=LWR4_IDENTIFIED)
    assert node.model.n_dof == 7
    err = capfd.readouterr().err
    assert "WARN" in err and "joint 'lwr_3_joint' (line 207): <dynamics friction=\"-0.3904978507615987\">" in err
    error = ros.refused_start(urdf_path=LWR4_IDENTIFIED, friction="urdf")
    assert isinstance(error, StartupError), repr(error)
    assert re.search(r"parameter friction: .*joint 'lwr_3_joint' \(line 203\) has <dynamics "
                     r"friction=\"-0\.3904978507615987\">, a negative coefficient", str(error)), str(error)
