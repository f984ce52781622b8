"""Mechanisms with loops as models (hod_dynamics.model.closures, hod_dynamics.model.loop_model): the
closures of Drake's URDF elements and of closure files, the actuated joints, and the one-line
refusals of what cannot be a mechanism."""

import os
import pickle
import warnings

import numpy as np
import pytest

import hod_dynamics as hd
from hod_dynamics.errors import URDFExtensionWarning
from hod_dynamics.model.closures import Closure, closure_file, urdf_closures

import loop_oracles as L


def test_drakes_loop_joint_and_transmission_make_the_four_bar_of_its_example():
    model = L.drake_fourbar()
    (closure,) = model.closures
    assert (closure.name, closure.kind, closure.link_a, closure.link_b) == ("joint_3", "revolute", "link_3", "base_link")
    assert np.allclose(closure.axis, [0, 1, 0]) and np.allclose(closure.pose_a[:3, 3], [0, 0, 2.6])
    assert model.actuated_joints == ("joint_0",) and model.passive_joints == ("joint_1", "joint_2")
    assert model.joint_names == ("joint_0",) and model.n_dof == 1 and model.tree.n_dof == 3


def test_a_closure_file_gives_the_mechanism_of_the_urdfs_loop_joint():
    from_urdf = L.fourbar()
    from_file = hd.RobotModel.from_urdf(L.FOURBAR_URDF, loops=L.FOURBAR_CLOSURES)
    assert from_file.actuated_joints == from_urdf.actuated_joints
    assert np.allclose(from_file.assembly, from_urdf.assembly)      # the file's assembly
    yjet = L.sine_jet(np.linspace(0.0, 2.0, 9), K=5, **L.FOURBAR_MOTION)
    assert np.max(np.abs(hd.time_derivatives(from_file, yjet, 2) - hd.time_derivatives(from_urdf, yjet, 2))) < 1e-13


def test_drakes_ball_constraints_and_gepettos_closure_file_give_the_same_ankle():
    ankle = L.ankle()
    assert [c.kind for c in ankle.closures] == ["point", "point"]
    assert ankle.actuated_joints == ("motor_left", "motor_right")                # its <transmission>s
    gepetto = hd.RobotModel.from_urdf(L.ANKLE_URDF, loops=L.ANKLE_GEPETTO)
    assert gepetto.actuated_joints == ("motor_left", "motor_right")              # name_mot
    yjet = L.sine_jet(np.linspace(0.0, 2.0, 9), K=5, **L.ANKLE_MOTION)
    assert np.max(np.abs(hd.time_derivatives(gepetto, yjet, 2) - hd.time_derivatives(ankle, yjet, 2))) < 1e-13


def test_gepettos_closure_file_of_its_digit_leg_reads_as_three_welds_and_six_motors():
    found = closure_file(os.path.join(L.DATA, "gepetto_digit_like_robot.yaml"))
    assert [(c.kind, c.link_a, c.link_b) for c in found.closures] == [
        ("weld", f"closedloop{i}_B", f"closedloop{i}_A") for i in (1, 2, 3)]
    assert found.actuated_joints == ("motor_hip_x", "motor_hip_y", "motor_hip_z", "motor_knee", "motor_shin1",
                                     "motor_shin2")


def test_the_loop_elements_read_are_no_longer_reported_as_extensions():
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        L.fourbar()
        tree = hd.RobotModel.from_urdf(L.FOURBAR_URDF)
        hd.RobotModel.from_urdf(L.FOURBAR_URDF, loops=L.FOURBAR_CLOSURES)     # the <loop_joint> unused
    reported = [str(w.message) for w in caught if issubclass(w.category, URDFExtensionWarning)]
    assert len(reported) == 2 and all(m.startswith("<loop_joint>") for m in reported)
    assert isinstance(tree, hd.RobotModel) and tree.n_dof == 3


def test_the_mechanism_shows_its_actuated_joints_and_pickles():
    model = L.ankle()
    assert model.joint_names == ("motor_left", "motor_right") and model.joint_types == ("revolute", "revolute")
    assert model.upper.tolist() == [1.2, 1.2] and model.effort_limits.tolist() == [40.0, 40.0]
    assert model.joint_order(["motor_right", "ankle_roll", "motor_left"], allow_extra=True).tolist() == [2, 0]
    assert model.row_names[:3] == ("ball_constraint_0.x", "ball_constraint_0.y", "ball_constraint_0.z")
    copy = pickle.loads(pickle.dumps(model))
    yjet = L.sine_jet(np.array([0.4, 0.5]), K=3, **L.ANKLE_MOTION)
    assert np.array_equal(hd.time_derivatives(copy, yjet, 0), hd.time_derivatives(model, yjet, 0))
    heavier = model.with_gravity([0.0, 0.0, -2 * 9.81])
    assert np.abs(hd.time_derivatives(heavier, yjet, 0)).max() > np.abs(hd.time_derivatives(model, yjet, 0)).max()


# -- refusals --------------------------------------------------------------------------------------
def test_a_closure_naming_a_link_the_tree_does_not_hold_is_refused_with_a_suggestion():
    tree = hd.RobotModel.from_urdf(L.FOURBAR_URDF)
    with pytest.raises(hd.ModelError, match=r"closure 'c' names link 'roker' \(did you mean 'rocker'\?\)"):
        tree.with_loops([Closure("c", "point", "roker", "ground")], ["crank_joint"])
    with pytest.raises(hd.ModelError, match="'rocker', which is not in the tree.*tip_links"):
        hd.RobotModel.from_urdf(L.FOURBAR_URDF, tip_links=["coupler"], loops="urdf", actuated_joints=["crank_joint"])
    with pytest.raises(hd.ModelError, match="one rigid body"):
        hd.RobotModel.from_urdf(L.ANKLE_URDF, loops={"closures": [{"frame_a": "rod_left", "frame_b": "rod_left_end"}],
                                                     "actuated_joints": ["motor_left"]})


def test_actuated_joints_that_are_not_moving_joints_of_the_tree_are_refused():
    with pytest.raises(hd.ModelError, match=r"'crank_jiont' \(did you mean 'crank_joint'\?\)"):
        hd.RobotModel.from_urdf(L.FOURBAR_URDF, loops="urdf", actuated_joints=["crank_jiont"])
    with pytest.raises(hd.ModelError, match="repeated"):
        hd.RobotModel.from_urdf(L.FOURBAR_URDF, loops="urdf", actuated_joints=["crank_joint", "crank_joint"])
    without = open(L.FOURBAR_URDF).read().split("<transmission")[0] + "</robot>"   # no <transmission>
    with pytest.raises(hd.ModelError, match="name the actuated joints"):
        hd.RobotModel.from_urdf(without, loops={"closures": [{"frame_a": "rocker", "frame_b": "ground"}]})


def test_a_urdf_without_loop_elements_and_bad_closure_files_are_refused_in_one_line():
    with pytest.raises(hd.ModelError, match="declares no loop closure"):
        hd.RobotModel.from_urdf(hd.robot_path("planar_2r"), actuated_joints=["joint1"])
    with pytest.raises(hd.ModelError, match=r"closure 'c': unknown keys \['frame_c'\]"):
        closure_file({"closures": [{"name": "c", "frame_a": "a", "frame_b": "b", "frame_c": "c"}]})
    with pytest.raises(hd.ModelError, match=r"closure 'c': unknown type 'slider'"):
        closure_file({"closures": [{"name": "c", "type": "slider", "frame_a": "a", "frame_b": "b"}]})
    with pytest.raises(hd.ModelError, match="2 closed_loop pairs but 1 types"):
        closure_file({"closed_loop": [["a", "b"], ["c", "d"]], "type": ["6d"]})
    with pytest.raises(hd.ModelError, match=r"no such file"):
        hd.RobotModel.from_urdf(L.FOURBAR_URDF, loops="missing_closures.yaml")
    broken = open(L.FOURBAR_URDF).read().replace('<link2 link="ground" xyz="0.4 0 0" rpy="0 0 0"/>', "")
    with pytest.raises(hd.ModelError, match=r"<loop_joint name='rocker_ground_joint'> \(line 45\): missing <link2"):
        urdf_closures(broken)
    with pytest.raises(hd.ModelError, match="assembly names joints 'coupler' \\(did you mean 'coupler_joint'"):
        hd.RobotModel.from_urdf(L.FOURBAR_URDF, loops="urdf", assembly={"coupler": 1.0})
    with pytest.raises(hd.ModelError, match="fixed base"):
        hd.RobotModel.from_urdf(L.FOURBAR_URDF, loops="urdf", floating_base=True)
