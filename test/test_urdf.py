"""URDF parsing: tree selection, fixed/locked merging, limits, and every error naming its fault."""

import os
import warnings

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
    (two_links().replace('<child link="a"/>', '<child link="zz"/>'), r"joint 'j1' \(line 3\) refers to link 'zz'"),
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
    """urdfdom accepts these (PR2, iCub use them): the reader never looks inside them."""
    extra = ('<material name="m"><texture/></material>'
             '<transmission name="t"><type>transmission_interface/SimpleTransmission</type>'
             '<joint name="j1"><hardwareInterface>EffortJointInterface</hardwareInterface></joint></transmission>')
    text = two_links().replace("</robot>", extra + "</robot>").replace(
        '<link name="a">', '<link name="a"><visual><geometry><mesh filename="x.stl"/></geometry>'
                           '<material name="q"><texture/></material></visual>')
    assert hd.RobotModel.from_urdf(text).joint_names == ("j1",)


def test_a_robot_without_moving_joints_gives_a_zero_dof_model():
    """Fixed-only objects and robots with every joint locked: n_dof == 0, as Pinocchio's nq = 0."""
    fixed = hd.RobotModel.from_urdf(two_links("fixed"))
    locked = hd.RobotModel.from_urdf(two_links(), locked_joints={"j1": 0.3})
    for model in (fixed, locked):
        assert model.n_dof == 0 and model.joint_names == () and model.screws.shape == (0, 6)
        assert model.inertias.shape == (0, 6, 6) and model.frame("a").body == -1
    np.testing.assert_allclose(locked.frame("a").pose[:3, :3], hd.model.spatial.rpy_matrix([0.3, -0.2, 0.1]) @
                               hd.model.spatial.rpy_matrix([0, 0, 0.3]), atol=1e-15)


def test_xml_that_is_not_a_robot_is_refused():
    with pytest.raises(hd.ModelError, match=r"root element is <sdf>, not <robot>"):
        hd.RobotModel.from_urdf("<sdf version='1.6'><model name='x'/></sdf>")


# -- strict reading: misspellings named with element, line, link/joint and a suggestion --------------
CORPUS = os.path.join(os.path.dirname(os.path.abspath(__file__)), "data", "urdf_corpus")
IIWA7 = os.path.join(CORPUS, "pinocchio", "iiwa2.urdf")  # iiwa_stack's LBR iiwa 7, as Pinocchio ships it
FULL = os.path.join(CORPUS, "urdfdom", "full_robot_v1_0.urdf")  # urdfdom's every-feature test robot


def _text(path):
    with open(path, encoding="utf-8") as f:
        return f.read()


_MARK = "\u00a7"  # marks where the misspelt name starts in ``new`` (removed before parsing)

# (file, old, new with the mark before the misspelt name, expected message after "line N)")
MISSPELLINGS = [
    (IIWA7, '<link name="world"/>', f'<{_MARK}lnk name="world"/>', "unknown element <lnk> in robot 'iiwa7'", "<link>"),
    (IIWA7, '<robot name="iiwa7"', f'<robot {_MARK}nme="iiwa7"', "unknown attribute nme=\"iiwa7\" of <robot> in robot 'robot'", "'name'"),
    (IIWA7, '<inertial>\n      <origin rpy="0 0 0" xyz="-0.1 0 0.07"/>\n      <mass value="5"/>\n'
            '      <inertia ixx="0.05" ixy="0" ixz="0" iyy="0.06" iyz="0" izz="0.03"/>\n    </inertial>',
     f'<{_MARK}inertal>\n      <origin rpy="0 0 0" xyz="-0.1 0 0.07"/>\n      <mass value="5"/>\n'
     '      <inertia ixx="0.05" ixy="0" ixz="0" iyy="0.06" iyz="0" izz="0.03"/>\n    </inertal>',
     "unknown element <inertal> in link 'iiwa_link_0'", "<inertial>"),
    (IIWA7, '<link name="iiwa_link_1">', f'<link {_MARK}nmae="iiwa_link_1">', "unknown attribute nmae=\"iiwa_link_1\" of <link> in a link", "'name'"),
    (IIWA7, '<axis xyz="0 0 1"/>', f'<{_MARK}axs xyz="0 0 1"/>', "unknown element <axs> in joint 'iiwa_joint_1'", "<axis>"),
    (IIWA7, '<joint name="iiwa_joint_2" type="revolute">', f'<joint name="iiwa_joint_2" {_MARK}tpye="revolute">',
     "unknown attribute tpye=\"revolute\" of <joint> in joint 'iiwa_joint_2'", "'type'"),
    (IIWA7, '<mass value="5"/>', f'<{_MARK}mas value="5"/>', "unknown element <mas> in link 'iiwa_link_0'", "<mass>"),
    (IIWA7, '<mass value="3.4525"/>', f'<mass {_MARK}valu="3.4525"/>', "unknown attribute valu=\"3.4525\" of <mass> in link 'iiwa_link_1'", "'value'"),
    (IIWA7, 'ixx="0.02183"', f'{_MARK}ixxx="0.02183"', "unknown attribute ixxx=\"0.02183\" of <inertia> in link 'iiwa_link_1'", "'ixx'"),
    (IIWA7, '<origin rpy="0 0 0" xyz="0 0 0.15"/>', f'<origin rpy="0 0 0" {_MARK}xzy="0 0 0.15"/>', "unknown attribute xzy=\"0 0 0.15\" of <origin> in joint 'iiwa_joint_1'", "'xyz'"),
    # a value written as an element (SDFormat's form): the attribute it should be is suggested
    (IIWA7, '<origin rpy="0 0 0" xyz="0 0 0.15"/>', f'<origin xyz="0 0 0.15">\n<{_MARK}rpy>0 0 1</rpy></origin>',
     "unknown element <rpy> in joint 'iiwa_joint_1'", 'the attribute rpy="..."'),
    (IIWA7, '<axis xyz="0 0 1"/>', f'<axis {_MARK}xyx="0 0 1"/>', "unknown attribute xyx=\"0 0 1\" of <axis> in joint 'iiwa_joint_1'", "'xyz'"),
    (IIWA7, '<axis xyz="0 0 1"/>', f'<axis><{_MARK}xyz>0 0 1</xyz></axis>', "unknown element <xyz> in joint 'iiwa_joint_1'", 'the attribute xyz="..."'),
    (IIWA7, '<axis xyz="0 0 1"/>', f'<{_MARK}Axis xyz="0 0 1"/>', "unknown element <Axis> in joint 'iiwa_joint_1'", "<axis>"),  # a case slip
    (IIWA7, '<origin rpy="0 0 0" xyz="0 0 0.15"/>', f'<origin rpy="0 0 0" {_MARK}XYZ="0 0 0.15"/>', "unknown attribute XYZ=\"0 0 0.15\" of <origin> in joint 'iiwa_joint_1'", "'xyz'"),
    # an element written as an attribute
    (IIWA7, '<joint name="iiwa_joint_1" type="revolute">', f'<joint name="iiwa_joint_1" type="revolute" {_MARK}axis="0 0 1">',
     "unknown attribute axis=\"0 0 1\" of <joint> in joint 'iiwa_joint_1'", "a child element <axis>"),
    (IIWA7, '<limit effort="300"', f'<limit {_MARK}efort="300"', "unknown attribute efort=\"300\" of <limit> in joint 'iiwa_joint_1'", "'effort'"),
    (IIWA7, '<limit effort="300" lower="-2.96705972839" upper="2.96705972839" velocity="10"/>',
     f'<limit effort="300" upper="2.96705972839" velocity="10"><{_MARK}lower>-2.96705972839</lower></limit>',
     "unknown element <lower> in joint 'iiwa_joint_1'", 'the attribute lower="..."'),
    (IIWA7, '<dynamics damping="0.5"/>', f'<dynamics {_MARK}dampin="0.5"/>', "unknown attribute dampin=\"0.5\" of <dynamics> in joint 'iiwa_joint_1'", "'damping'"),
    (IIWA7, '<dynamics damping="0.5"/>', f'<dynamics damping="0.5"><{_MARK}friction/></dynamics>', "unknown element <friction> in joint 'iiwa_joint_1'", 'the attribute friction="..."'),
    (FULL, 'multiplier="0.5"', f'{_MARK}multipler="0.5"', "unknown attribute multipler=\"0.5\" of <mimic> in joint 'platform_joint'", "'multiplier'"),
    (FULL, '<mimic joint="shoulder_joint" multiplier="0.5" offset="0.0"/>',
     f'<mimic joint="shoulder_joint" multiplier="0.5"><{_MARK}offset/></mimic>', "unknown element <offset> in joint 'platform_joint'", 'the attribute offset="..."'),
]


def _misspelling(path, old, new):
    text = _text(path)
    assert old in text, old
    changed = text.replace(old, new, 1)
    line = changed[:changed.index(_MARK)].count("\n") + 1
    return changed.replace(_MARK, ""), line


@pytest.mark.parametrize("path, old, new, message, suggestion", MISSPELLINGS,
                         ids=[m[3].split(" in ")[0].replace('"', "") for m in MISSPELLINGS])
def test_misspelt_elements_and_attributes_are_errors_naming_line_and_suggestion(path, old, new, message, suggestion):
    text, line = _misspelling(path, old, new)
    expected = f"{message} (line {line})" + (f"; did you mean {suggestion}?" if suggestion else "")
    with pytest.raises(hd.ModelError) as info:
        hd.RobotModel.from_urdf(text)
    assert str(info.value).startswith(expected), (str(info.value), expected)
    with pytest.warns(hd.HodDynamicsWarning) as caught:  # strict=False reads past it
        try:
            hd.RobotModel.from_urdf(text, strict=False, tip_links=["tool_link"] if path == FULL else None)
        except hd.ModelError:  # what the misspelling leaves missing may be an error of its own
            pass
    assert str(caught[0].message).startswith(expected)


def test_a_misspelt_axis_would_give_wrong_torques_strict_refuses_it(rng):
    """The defect this prevents: <axs> silently became the URDF default axis x."""
    text, _ = _misspelling(IIWA7, '<axis xyz="0 0 1"/>', f'<{_MARK}axs xyz="0 0 1"/>')
    good = hd.RobotModel.from_urdf(IIWA7)
    with pytest.warns(hd.HodDynamicsWarning, match=r"<axs> in joint 'iiwa_joint_1'"):
        lenient = hd.RobotModel.from_urdf(text, strict=False)
    np.testing.assert_array_equal(lenient.screws[0], [1, 0, 0, 0, 0, 0])
    q, qd, qdd = rng.normal(size=(3, 7))
    assert rel_err(hd.inverse_dynamics(lenient, q, qd, qdd), hd.inverse_dynamics(good, q, qd, qdd)) > 0.01


def _subjects(caught):
    return [str(w.message).split(" in ")[0] for w in caught if issubclass(w.category, hd.HodDynamicsWarning)]


def test_urdf_the_dynamics_does_not_read_loads_without_error_or_warning():
    """<gazebo>, <transmission> (ROS 1 and 2 forms), <ros2_control>, <sensor>, <safety_controller>,
    <calibration>, comments, namespace declarations, visual/collision content and materials:
    the same model as without them, and no warning."""
    base = _text(IIWA7)
    extra_robot = (
        '<ros2_control name="iiwa" type="system"><hardware><plugin>mock_components/GenericSystem</plugin>'
        '</hardware><joint name="iiwa_joint_1"><command_interface name="effort"/><state_interface name="position"/>'
        '</joint></ros2_control>'
        '<sensor name="cam" update_rate="30"><parent link="iiwa_link_7"/><origin xyz="0 0 0.1"/><camera>'
        '<image width="640" height="480" hfov="1.5" format="RGB8" near="0.01" far="50"/></camera></sensor>'
        '<transmission name="t2"><type>transmission_interface/SimpleTransmission</type>'
        '<joint name="iiwa_joint_2"><hardwareInterface>hardware_interface/EffortJointInterface</hardwareInterface>'
        '</joint><actuator name="m2"><mechanicalReduction>160</mechanicalReduction></actuator></transmission>'
        '<gazebo reference="iiwa_link_7"><sensor type="force_torque" name="ft"><update_rate>100</update_rate></sensor></gazebo>'
        '<material name="steel"><color rgba="0.5 0.5 0.5 1"/><texture filename="steel.png"/></material>'
        '<!-- a comment with <axs> in it -->')
    text = base.replace("<self_collision_checking>", "<!--<self_collision_checking>").replace(
        "</self_collision_checking>", "</self_collision_checking>-->")
    text = text.replace('<robot name="iiwa7"', '<robot xmlns:drake="http://drake.mit.edu" '
                        'xmlns:xsi="http://www.w3.org/2001/XMLSchema-instance" name="iiwa7"')
    text = text.replace("</robot>", extra_robot + "</robot>")
    text = text.replace('<dynamics damping="0.5"/>', '<dynamics damping="0.5"/><calibration rising="0.1" falling="0.2"/>', 1)
    text = text.replace('<link name="iiwa_link_1">', '<link name="iiwa_link_1">'
                        '<visual name="v"><geometry name="g"><mesh filename="a.stl" scale="1 1 1"/></geometry>'
                        '<anything_at_all/></visual><collision><geometry><capsule length="0.2" radius="0.05"/>'
                        '</geometry><drake:proximity_properties/></collision>', 1)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        model = hd.RobotModel.from_urdf(text)
    with pytest.warns(hd.HodDynamicsWarning, match="<self_collision_checking>"):
        reference = hd.RobotModel.from_urdf(IIWA7)
    np.testing.assert_array_equal(model.inertias, reference.inertias)
    np.testing.assert_array_equal(model.screws, reference.screws)


def test_vendor_extensions_load_with_one_warning_each_naming_where_they_are():
    """Names that are not URDF and not a likely misspelling: read past, as urdfdom and Pinocchio
    do; one warning per name, with its places (grouped by link or joint) and lines."""
    text = _text(IIWA7)
    text = text.replace('<robot name="iiwa7"', '<robot xmlns:drake="http://drake.mit.edu" name="iiwa7"')
    text = text.replace("</robot>", '<mujoco><compiler meshdir="meshes"/></mujoco>'
                        '<frame link="iiwa_link_7" name="tool" rpy="0 0 0" xyz="0 0 0.1"/>'
                        '<drake:collision_filter_group name="arm"><drake:member link="iiwa_link_1"/>'
                        '</drake:collision_filter_group><loop_joint name="l" type="continuous"/></robot>')
    text = text.replace('<dynamics damping="0.5"/>', '<dynamics damping="0.5" spring_reference="0"/>'
                        '<joint_properties friction="0.1"/>')
    text = text.replace('<link name="iiwa_link_1">', '<link name="iiwa_link_1" drake:note="x"><contact>'
                        '<lateral_friction value="1"/></contact>', 1)
    lines = {tag: text[:text.index(tag)].count("\n") + 1 for tag in ("<mujoco>", "<loop_joint", '<link name="iiwa_link_1"')}
    link1 = lines['<link name="iiwa_link_1"']
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        model = hd.RobotModel.from_urdf(text)
    messages = [str(w.message) for w in caught if issubclass(w.category, hd.HodDynamicsWarning)]
    assert all(w.category is hd.errors.URDFExtensionWarning for w in caught)  # a filter can silence them alone
    assert _subjects(caught) == ["<mujoco>", "<frame>", "<drake:collision_filter_group>", "<loop_joint>",
                                 "<self_collision_checking>", "<joint_properties>",
                                 "attribute spring_reference of <dynamics>", "attribute drake:note of <link>",
                                 "<contact>"], messages
    assert (f"<mujoco> in robot 'iiwa7' (line {lines['<mujoco>']}) is not URDF: read past, as urdfdom and "
            "Pinocchio do (MuJoCo compiler options, as Unitree's descriptions carry them)") in messages
    assert any(m.startswith(f"<loop_joint> in robot 'iiwa7' (line {lines['<loop_joint']}) is not URDF") and
               "the model is the tree without it" in m for m in messages)
    spring = next(m for m in messages if m.startswith("attribute spring_reference"))
    assert spring.startswith("attribute spring_reference of <dynamics> in joint 'iiwa_joint_1' (line ")
    assert "joint 'iiwa_joint_2' (line " in spring and "and 4 more is not URDF" in spring
    assert messages[8].startswith(f"<contact> in link 'iiwa_link_1' (line {link1}) is not URDF")
    reference = hd.RobotModel.from_urdf(IIWA7)
    np.testing.assert_array_equal(model.inertias, reference.inertias)
    np.testing.assert_array_equal(model.screws, reference.screws)


def test_a_urdf_element_out_of_place_is_an_extension_warning_naming_where():
    """A stray <origin> directly in <robot> (a KUKA LWR4+ description) or in a <link>, an
    <inertial> directly in <robot> (a Robotiq hand): no URDF reader looks there."""
    text = two_links().replace("</robot>", '<origin xyz="0 0 0" rpy="0 -0 0"/></robot>')
    text = text.replace('<link name="base"/>', '<link name="base"><origin xyz="1 0 0"/></link>')
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        model = hd.RobotModel.from_urdf(text)
    assert [str(w.message) for w in caught] == [
        "<origin> in robot 't' (line 8) is a URDF element, but not one <robot> holds: read past, as urdfdom does",
        "<origin> in link 'base' (line 2) is a URDF element, but not one <link> holds: read past, as urdfdom does"]
    np.testing.assert_array_equal(model.references, hd.RobotModel.from_urdf(two_links()).references)


def test_a_name_close_to_one_the_element_already_has_is_an_extension():
    """<limit velocity k_velocity>: k_velocity is two edits from velocity, which the element has,
    so it is no misspelling of it (a safety-controller gain written in the limit)."""
    text = two_links().replace('velocity="3"', 'velocity="3" k_velocity="10"')
    with pytest.warns(hd.HodDynamicsWarning, match=r"^attribute k_velocity of <limit> in joint 'j1' \(line 5\) is not URDF"):
        hd.RobotModel.from_urdf(text)
    with pytest.raises(hd.ModelError, match=r"^unknown attribute k_velocity=\"10\" of <limit> in joint 'j1' \(line 5\); did you mean 'velocity'\?"):
        hd.RobotModel.from_urdf(two_links().replace('velocity="3"', 'k_velocity="10"'))


@pytest.mark.parametrize("variant", ["bom text", "bom bytes", "bom file", "blank lines text", "blank lines file",
                                     "default namespace", "crlf file"])
def test_legal_inputs_that_used_to_be_refused(variant, tmp_path):
    text = _text(IIWA7)
    source = {
        "bom text": "\ufeff" + text,
        "bom bytes": b"\xef\xbb\xbf" + text.encode(),
        "blank lines text": "\n\n   \n" + text,
        "default namespace": text.replace('<robot name="iiwa7"', '<robot xmlns="http://www.ros.org" name="iiwa7"'),
    }.get(variant)
    if source is None:
        path = tmp_path / "robot.urdf"
        content = {"bom file": "\ufeff" + text, "blank lines file": "\n\n" + text,
                   "crlf file": text.replace("\n", "\r\n")}[variant]
        path.write_bytes(content.encode("utf-8"))
        source = str(path)
    model = hd.RobotModel.from_urdf(source)
    np.testing.assert_array_equal(model.inertias, hd.RobotModel.from_urdf(IIWA7).inertias)


def test_lines_are_counted_in_the_text_as_given():
    """Blank lines before <?xml and CR LF line ends: the reported line is the editor's line."""
    text, line = _misspelling(IIWA7, '<axis xyz="0 0 1"/>', f'<{_MARK}axs xyz="0 0 1"/>')
    for shown, extra in (("\n\n\n" + text, 3), (text.replace("\n", "\r\n"), 0), ("\ufeff" + text, 0)):
        with pytest.raises(hd.ModelError, match=rf"<axs> in joint 'iiwa_joint_1' \(line {line + extra}\)"):
            hd.RobotModel.from_urdf(shown)


def test_attribute_values_with_cr_lf_are_read_as_xml_says():
    """XML turns a line break inside an attribute value into a space (urdfdom gets it wrong)."""
    text = two_links().replace('xyz="0.1 0.2 0.3"', 'xyz="0.1\r\n 0.2\r\n 0.3"')
    np.testing.assert_array_equal(hd.RobotModel.from_urdf(text).references, hd.RobotModel.from_urdf(two_links()).references)


def test_messages_name_element_link_joint_and_line(tmp_path):
    text = two_links().replace('<mass value="1.0"/>', '<mass valu="3.9"/>')
    with pytest.raises(hd.ModelError, match=r"^unknown attribute valu=\"3.9\" of <mass> in link 'a' \(line 6\); did you mean 'value'\?"):
        hd.RobotModel.from_urdf(text)
    with pytest.warns(hd.HodDynamicsWarning), pytest.raises(hd.ModelError, match=r"^<mass> in link 'a' \(line 6\) has no value attribute \(valu=\"3.9\" is not value\)$"):
        hd.RobotModel.from_urdf(text, strict=False)
    mismatched = two_links().replace("</joint>", "</jiont>")
    with pytest.raises(hd.ModelError) as info:
        hd.RobotModel.from_urdf(mismatched)
    assert str(info.value) == "malformed URDF: </jiont> at line 5, column 61 does not close <joint> opened at line 3"
    with pytest.raises(hd.ModelError, match=r"^<origin xyz=\"0.1 0.2\"> in joint 'j1' \(line 4\) must be 3 finite numbers$"):
        hd.RobotModel.from_urdf(two_links().replace('xyz="0.1 0.2 0.3"', 'xyz="0.1 0.2"'))
    not_xml = tmp_path / "robot.urdf"
    not_xml.write_text("robot: {name: x}\n")
    with pytest.raises(hd.ModelError, match=r"^'.*robot.urdf': not a URDF: the text is not XML \(it starts with 'robot: \{name: x\}'"):
        hd.RobotModel.from_urdf(not_xml)
    with pytest.raises(hd.ModelError, match=r"^URDF path '.*' is a directory, not a URDF file$"):
        hd.RobotModel.from_urdf(tmp_path)
    with pytest.raises(hd.ModelError, match=r"^joint 'j1' has unknown type 'revolut' \(line 3\); did you mean 'revolute'\?$"):
        hd.RobotModel.from_urdf(two_links("revolut"))


def test_a_missing_long_text_is_not_printed_whole():
    """Text that is neither XML nor a file: the message shows its start, not 14 kB."""
    with pytest.raises(hd.ModelError) as info:
        hd.RobotModel.from_urdf("x" * 14000)
    assert len(str(info.value)) < 200 and "URDF file not found: 'xxxx" in str(info.value)


@pytest.mark.parametrize("mode", ["error", "warn", "off"])
def test_inertia_check_modes(mode, rng):
    """Identified parameters: a link inertia with a negative principal moment."""
    text = two_links(ixx="-0.05")
    if mode == "error":
        with pytest.raises(hd.ModelError, match=r"^link 'a': rotational inertia is not positive semi-definite "
                                                r"\(principal moments \[-0.05, 0.1, 0.1\] kg m\^2, line 7\)$"):
            hd.RobotModel.from_urdf(text, inertia_check=mode)
        return
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        model = hd.RobotModel.from_urdf(text, inertia_check=mode)
    assert [str(w.message) for w in caught if w.category is hd.HodDynamicsWarning] == (
        ["link 'a': rotational inertia is not positive semi-definite (principal moments [-0.05, 0.1, 0.1] kg m^2, "
         "line 7); the model computes with it as written"] if mode == "warn" else [])
    pinrobot = PinocchioRobot(text, model)
    q, qd, qdd = rng.normal(size=(3, 1))
    assert rel_err(hd.inverse_dynamics(model, q, qd, qdd), pinrobot.rnea(q, qd, qdd)) < 1e-12
    with pytest.raises(hd.ModelError, match=r"inertia_check must be one of \('error', 'warn', 'off'\), got 'maybe'"):
        hd.RobotModel.from_urdf(text, inertia_check="maybe")


def test_negative_mass_stays_an_error_in_every_mode():
    for mode in ("error", "warn", "off"):
        with pytest.raises(hd.ModelError, match=r"link 'a': negative mass -1.0 \(line 6\)"):
            hd.RobotModel.from_urdf(two_links(mass="-1"), inertia_check=mode)


def test_repeated_elements_take_the_first_as_urdfdom_does_and_print_nothing(capsys):
    """UFactory's generated xarm7.urdf repeats <origin> in two joints: urdfdom and urdf_parser_py
    (which reads the values) take the first; urdf_parser_py's warning about it is not printed."""
    first = '<origin rpy="0 0 0" xyz="0 0 0.15"/>'
    text = _text(IIWA7).replace(first, first + '<origin rpy="1 0 0" xyz="0 0 9"/>', 1)
    np.testing.assert_array_equal(hd.RobotModel.from_urdf(text).references, hd.RobotModel.from_urdf(IIWA7).references)
    assert capsys.readouterr().err == ""


def test_what_urdfdom_requires_is_named_with_its_line():
    """<limit> without effort or velocity and <inertial> without <mass>: urdfdom (and so Pinocchio)
    refuses them; the message names element, joint or link and line."""
    text, line = _misspelling(IIWA7, '<limit effort="300" lower', f'<limit {_MARK}lower')
    with pytest.raises(hd.ModelError, match=rf"^<limit> in joint 'iiwa_joint_1' \(line {line}\) has no effort attribute "
                                            r"\(strict=False, or --lenient, reads past it with a warning\)$"):
        hd.RobotModel.from_urdf(text)
    text, line = _misspelling(IIWA7, '<mass value="5"/>', f'{_MARK}')
    with pytest.raises(hd.ModelError, match=r"^<inertial> in link 'iiwa_link_0' \(line \d+\) has no <mass> element$"):
        hd.RobotModel.from_urdf(text)


def test_an_axis_without_xyz_is_refused_with_its_line():
    """The URDF specification requires xyz in <axis> (urdfdom would leave the axis zero)."""
    with pytest.raises(hd.ModelError, match=r"^<axis> in joint 'j1' \(line 4\) has no xyz attribute$"):
        hd.RobotModel.from_urdf(two_links().replace('<axis xyz="0 0 1"/>', "<axis/>"))


# -- one tree or a clear error ------------------------------------------------------------------------
IIWA14 = os.path.join(CORPUS, "kuka_experimental", "lbr_iiwa_14_r820.urdf")  # ROS-Industrial's LBR iiwa 14


def _line(text, needle):
    return text[:text.index(needle)].count("\n") + 1


def _at(text, kind, name):
    """Line of the <kind name="name"> element."""
    return _line(text, f'<{kind} name="{name}"')


def test_a_link_that_is_the_child_of_two_joints_is_refused_naming_both():
    text = _text(IIWA14).replace('<link name="base"/>', '<link name="base"/><joint name="extra" type="fixed">'
                                 '<parent link="link_2"/><child link="link_5"/></joint>')
    with pytest.raises(hd.ModelError) as info:
        hd.RobotModel.from_urdf(text, strict=False)
    assert str(info.value) == (
        f"link 'link_5' (line {_at(text, 'link', 'link_5')}) is the child of two joints, 'joint_a5' "
        f"(line {_at(text, 'joint', 'joint_a5')}) and 'extra' (line {_at(text, 'joint', 'extra')}): "
        "in a URDF each link has one parent joint at most")


def test_a_loop_that_makes_the_first_link_a_child_is_refused_naming_its_joints_and_links():
    """joint_a4's child made the base link: urdfdom and Pinocchio accept it (and take link_4 as the
    root: 3 moving joints); here it is refused, naming the loop."""
    text = _text(IIWA14).replace('<parent link="link_3"/>\n    <child link="link_4"/>',
                                 '<parent link="link_3"/>\n    <child link="base_link"/>')
    assert text != _text(IIWA14)
    pin = pytest.importorskip("pinocchio", reason="pinocchio (pin) not installed")
    assert pin.buildModelFromXML(text).nv == 3
    lines = {j: _line(text, f'<joint name="{j}"') for j in ("joint_a1", "joint_a2", "joint_a3", "joint_a4")}
    message = (f"joints 'joint_a1' (line {lines['joint_a1']}), 'joint_a2' (line {lines['joint_a2']}), 'joint_a3' "
               f"(line {lines['joint_a3']}), 'joint_a4' (line {lines['joint_a4']}) form a loop: links 'base_link' -> "
               "'link_1' -> 'link_2' -> 'link_3' -> 'base_link'; a URDF is a tree (one of these joints has the "
               "wrong <parent> or <child>)")
    for kwargs in ({}, {"strict": False}, {"root_link": "link_4"}):
        with pytest.raises(hd.ModelError) as info:
            hd.RobotModel.from_urdf(text, **kwargs)
        assert str(info.value) == message


def test_a_group_of_links_unreachable_from_the_root_is_refused_naming_the_trees_and_root_link_chooses_one():
    """joint_a4 deleted: link_4 and what hangs from it are a second tree."""
    start = _text(IIWA14).index('<joint name="joint_a4"')
    end = _text(IIWA14).index("</joint>", start) + len("</joint>")
    text = _text(IIWA14)[:start] + _text(IIWA14)[end:]
    with pytest.raises(hd.ModelError) as info:
        hd.RobotModel.from_urdf(text)
    assert str(info.value) == (
        f"the description holds 2 separate trees, with root links 'base_link' (line {_at(text, 'link', 'base_link')}, "
        f"5 links), 'link_4' (line {_at(text, 'link', 'link_4')}, 5 links): choose one with root_link "
        "(--root on the command line), or join them with joints")
    assert hd.RobotModel.from_urdf(text, root_link="base_link").joint_names == ("joint_a1", "joint_a2", "joint_a3")
    assert hd.RobotModel.from_urdf(text, root_link="link_4").joint_names == ("joint_a5", "joint_a6", "joint_a7")


def test_a_world_link_with_nothing_attached_is_no_tree_of_its_own(rng):
    text = _text(IIWA14).replace('<link name="base_link">', '<link name="world"/>\n  <link name="base_link">')
    model = hd.RobotModel.from_urdf(text)
    assert model.root_link == "base_link" and model.n_dof == 7
    lonely = text.replace('<link name="world"/>', '<link name="table"/>')
    with pytest.raises(hd.ModelError, match=r"^the description holds 2 separate trees, with root links 'table' \(line 8, 1 link\)"):
        hd.RobotModel.from_urdf(lonely)


def test_what_stays_an_error_with_strict_false():
    """--lenient reads past names and values the model does not need, never a fault that leaves
    no model: malformed XML, an undefined link, a negative mass, an origin that is not numbers,
    an unknown joint type."""
    cases = [
        (two_links().replace("</robot>", ""), r"malformed URDF"),
        (two_links().replace('<parent link="base"/>', '<parent link="bse"/>'), r"refers to link 'bse', which is not defined"),
        (two_links(mass="-1"), r"negative mass"),
        (two_links().replace('xyz="0.1 0.2 0.3"', 'xyz="0.1 0.2"'), r"must be 3 finite numbers"),
        (two_links("spherical"), r"unknown type 'spherical'"),
        (two_links().replace('<axis xyz="0 0 1"/>', "<axis/>"), r"has no xyz attribute"),
    ]
    for text, match in cases:
        with pytest.raises(hd.ModelError, match=match):
            hd.RobotModel.from_urdf(text, strict=False)
