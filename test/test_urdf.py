"""URDF parsing: tree selection, fixed/locked merging, limits, and every error naming its fault."""

import numpy as np
import pytest

import hod_dynamics as hd
from oracles import PANDA_FINGERS, PinocchioRobot, erd_path, rel_err

TWO_LINKS = """<robot name="t">
  <link name="base"/>
  <joint name="j1" type="{jtype}"><parent link="base"/><child link="a"/>
    <origin xyz="0.1 0.2 0.3" rpy="0.3 -0.2 0.1"/><axis xyz="{axis}"/>
    <limit lower="-1" upper="1.5" effort="12" velocity="3"/></joint>
  <link name="a"><inertial><origin xyz="0 0 0.1"/><mass value="{mass}"/>
    <inertia ixx="{ixx}" ixy="0" ixz="0" iyy="0.1" iyz="0" izz="0.1"/></inertial></link>
</robot>"""


def two_links(jtype="revolute", axis="0 0 1", mass="1.0", ixx="0.1"):
    return TWO_LINKS.format(jtype=jtype, axis=axis, mass=mass, ixx=ixx)


def test_file_path_and_text_give_the_same_model(tmp_path):
    path = tmp_path / "r.urdf"
    path.write_text(two_links())
    a, b = hd.RobotModel.from_urdf(path), hd.RobotModel.from_urdf(two_links())
    assert a.joint_names == b.joint_names == ("j1",)
    np.testing.assert_array_equal(a.inertias, b.inertias)
    assert hd.RobotModel.from_urdf(str(path)).n_dof == 1


def test_limits_and_types_from_urdf(panda):
    assert panda.n_dof == 7
    assert panda.joint_names == tuple(f"panda_joint{i}" for i in range(1, 8))
    np.testing.assert_allclose(panda.lower[:2], [-2.8973, -1.7628])
    np.testing.assert_allclose(panda.upper[3], -0.0698)
    np.testing.assert_allclose(panda.velocity_limits[0], 2.175)
    np.testing.assert_allclose(panda.effort_limits[[0, 6]], [87.0, 12.0])
    assert set(panda.joint_types) == {"revolute"}


def test_continuous_joints_are_unlimited_in_position(planar_2r):
    assert planar_2r.joint_types == ("continuous", "continuous")
    assert np.all(np.isinf(planar_2r.lower)) and np.all(np.isinf(planar_2r.upper))
    np.testing.assert_allclose(planar_2r.effort_limits, [200.0, 100.0])


def test_prismatic_axis_is_normalised():
    m = hd.RobotModel.from_urdf(two_links("prismatic", axis="0 3 4"))
    np.testing.assert_allclose(m.screws[0], [0, 0, 0, 0, 0.6, 0.8])
    assert m.joint_types == ("prismatic",)


def test_fixed_links_are_merged_and_keep_their_frames(panda):
    """panda_link8 and panda_hand hang on joint 7 through fixed joints."""
    assert panda.frame("panda_hand").body == 6
    assert panda.frame("panda_link0").body == -1
    assert not np.allclose(panda.frame("panda_hand").pose, np.eye(4))


def test_locked_joints_equal_pinocchio_reduced_model(rng):
    """Lock elbow and wrist of the Panda at non-zero values: same dynamics as Pinocchio's reduced model."""
    locked = dict(PANDA_FINGERS, panda_joint4=-1.2, panda_joint6=1.4)
    model = hd.RobotModel.from_urdf(erd_path("panda"), locked_joints=locked)
    assert model.joint_names == ("panda_joint1", "panda_joint2", "panda_joint3", "panda_joint5", "panda_joint7")
    pinrobot = PinocchioRobot(erd_path("panda"), model, locked)
    q, qd, qdd = rng.normal(size=(3, 5))
    assert rel_err(hd.inverse_dynamics(model, q, qd, qdd), pinrobot.rnea(q, qd, qdd)) < 1e-10


def test_tip_links_keep_only_the_chain(rng):
    full = hd.RobotModel.from_urdf(erd_path("talos"))
    arm = hd.RobotModel.from_urdf(erd_path("talos"), tip_links=["arm_left_7_link"])
    assert arm.joint_names == ("torso_1_joint", "torso_2_joint") + tuple(f"arm_left_{i}_joint" for i in range(1, 8))
    assert full.n_dof == 32
    legs = hd.RobotModel.from_urdf(erd_path("talos"), tip_links=["leg_left_6_link", "leg_right_6_link"])
    assert legs.n_dof == 12 and legs.parents.tolist().count(-1) == 2


def test_root_link_selects_a_subtree():
    arm = hd.RobotModel.from_urdf(erd_path("talos"), root_link="arm_right_4_link")
    assert arm.root_link == "arm_right_4_link"
    assert arm.joint_names[:3] == ("arm_right_5_joint", "arm_right_6_joint", "arm_right_7_joint")
    assert "torso_1_joint" not in arm.joint_names


def test_massless_links_are_allowed():
    text = two_links().replace('<inertial><origin xyz="0 0 0.1"/><mass value="1.0"/>\n    <inertia ixx="0.1" '
                               'ixy="0" ixz="0" iyy="0.1" iyz="0" izz="0.1"/></inertial>', "")
    m = hd.RobotModel.from_urdf(text)
    assert m.masses[0] == 0
    assert hd.inverse_dynamics(m, [1.0], [2.0], [3.0])[0] == 0


def test_unknown_tags_do_not_print(capsys):
    hd.RobotModel.from_urdf(two_links().replace("</robot>", "<gazebo><foo/></gazebo></robot>"))
    assert capsys.readouterr().err == ""


# -- errors ---------------------------------------------------------------------------------------
@pytest.mark.parametrize("text, match", [
    ("<robot name='x'><link name='a'/><joint name='j' type='revolute'>", r"malformed URDF.*line 1"),
    ("not xml and not a file.urdf", r"URDF file not found: 'not xml and not a file.urdf'"),
    (two_links("floating").replace('<link name="base"/>', '<link name="base"><inertial><mass '
                                   'value="1"/><inertia ixx="1" ixy="0" ixz="0" iyy="1" iyz="0" '
                                   'izz="1"/></inertial></link>'),
     r"joint 'j1' is floating but its parent link 'base' has mass"),
    (two_links("planar"), r"joint 'j1' has type 'planar'"),
    (two_links(axis="0 0 0"), r"joint 'j1': axis \[0.0, 0.0, 0.0\] is zero"),
    (two_links(mass="-1"), r"link 'a': negative mass -1"),
    (two_links(ixx="-0.5"), r"link 'a': inertia is not positive semi-definite"),
    (two_links().replace('<child link="a"/>', '<child link="zz"/>'), r"joint 'j1' refers to link 'zz'"),
])
def test_bad_urdf_raises_model_error_naming_the_fault(text, match):
    with pytest.raises(hd.ModelError, match=match):
        hd.RobotModel.from_urdf(text)


def test_unknown_root_tip_and_locked_names():
    with pytest.raises(hd.ModelError, match=r"unknown root link 'nope'"):
        hd.RobotModel.from_urdf(two_links(), root_link="nope")
    with pytest.raises(hd.ModelError, match=r"unknown tip link 'tip'"):
        hd.RobotModel.from_urdf(two_links(), tip_links=["tip"])
    with pytest.raises(hd.ModelError, match=r"tip link 'base' is not below root link 'a'"):
        hd.RobotModel.from_urdf(two_links(), root_link="a", tip_links=["base"])
    with pytest.raises(hd.ModelError, match=r"locked joints \['j9'\] are not in the URDF"):
        hd.RobotModel.from_urdf(two_links(), locked_joints={"j9": 0.0})


def test_floating_joint_outside_the_kept_chain_is_fine():
    text = two_links().replace("</robot>", '<joint name="f" type="floating"><parent link="base"/>'
                               '<child link="obj"/></joint><link name="obj"/></robot>')
    with pytest.raises(hd.ModelError, match="joint 'f' has type 'floating'"):
        hd.RobotModel.from_urdf(text)
    assert hd.RobotModel.from_urdf(text, tip_links=["a"]).joint_names == ("j1",)


def test_model_errors_are_value_errors():
    assert issubclass(hd.ModelError, hd.HodDynamicsError) and issubclass(hd.HodDynamicsError, ValueError)


def test_elements_the_dynamics_does_not_read_cannot_break_parsing():
    """urdfdom accepts these (PR2, iCub use them); urdf_parser_py alone would not."""
    extra = ('<material name="m"><texture/></material>'
             '<transmission name="t"><type>transmission_interface/SimpleTransmission</type>'
             '<joint name="j1"><hardwareInterface>EffortJointInterface</hardwareInterface></joint></transmission>')
    text = two_links().replace("</robot>", extra + "</robot>").replace(
        '<link name="a">', '<link name="a"><visual><geometry><mesh filename="x.stl"/></geometry>'
                           '<material name="q"><texture/></material></visual>')
    assert hd.RobotModel.from_urdf(text).joint_names == ("j1",)


def test_a_robot_without_moving_joints_is_refused():
    with pytest.raises(hd.ModelError, match=r"model 't' has no moving joint below root link 'base'"):
        hd.RobotModel.from_urdf(two_links("fixed"))
    with pytest.raises(hd.ModelError, match=r"no moving joint"):
        hd.RobotModel.from_urdf(two_links(), locked_joints={"j1": 0.3})


def test_xml_that_is_not_a_robot_is_refused():
    with pytest.raises(hd.ModelError, match=r"root element is <sdf>, not <robot>"):
        hd.RobotModel.from_urdf("<sdf version='1.6'><model name='x'/></sdf>")
