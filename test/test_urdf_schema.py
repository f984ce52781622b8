"""The misspelling rule and the extensions: every URDF name misspelt is caught, no extension met in
public robot descriptions is taken for a misspelling, and strict=False reads past what the model
does not need."""

import itertools
import os
import re
import string
import warnings

import numpy as np
import pytest

import hod_dynamics as hd
from hod_dynamics.model.urdf_schema import SCHEMA, misspelling_of

CORPUS = os.path.join(os.path.dirname(os.path.abspath(__file__)), "data", "urdf_corpus")
FULL = os.path.join(CORPUS, "urdfdom", "full_robot_v1_0.urdf")  # urdfdom's every-feature test robot
LETTERS = string.ascii_lowercase + "_"


def _names(tag):
    """The URDF names valid in <tag>: its attributes and child elements (the rule's candidates)."""
    attributes, children = SCHEMA[tag]
    return set(attributes) | set(children)


def _single_edits(name):
    """Every deletion, insertion, substitution (letters and '_'), transposition of adjacent
    letters, and case slip of ``name``, by kind."""
    edits = {
        "deletion": {name[:i] + name[i + 1:] for i in range(len(name))},
        "insertion": {name[:i] + c + name[i:] for i in range(len(name) + 1) for c in LETTERS},
        "substitution": {name[:i] + c + name[i + 1:] for i in range(len(name)) for c in LETTERS if c != name[i]},
        "transposition": {name[:i] + name[i + 1] + name[i] + name[i + 2:] for i in range(len(name) - 1)},
        "case slip": {name.capitalize(), name.upper()} | {name[:i] + name[i].upper() + name[i + 1:] for i in range(len(name))},
    }
    return {kind: {e for e in found if e and e != name} for kind, found in edits.items()}


def test_every_single_edit_and_case_slip_of_every_urdf_name_is_caught():
    """All 16,824 misspellings one edit away from a URDF name (in the element where that name is
    valid, and not itself a name valid there) are refused, most with that very name suggested."""
    counts, suggested = {}, 0
    for tag in SCHEMA:
        valid = _names(tag)
        for name in sorted(valid):
            for kind, typos in _single_edits(name).items():
                for typo in typos - valid:
                    close = misspelling_of(typo, valid)
                    assert close, (tag, name, typo)
                    counts[kind] = counts.get(kind, 0) + 1
                    suggested += name in close[:2]
    total = sum(counts.values())
    assert counts == {"deletion": 273, "insertion": 8655, "substitution": 7343, "transposition": 225, "case slip": 328}
    assert suggested / total > 0.99  # the others are ambiguous (ixy -> iy: ixy, iyy or iyz)


def test_two_edits_of_a_name_of_six_letters_or_more_are_caught():
    """Two edits (here: two substitutions, or a deletion and a transposition) of the longer names:
    inertial, collision, safety_controller, multiplier, velocity, friction, ..."""
    for tag in SCHEMA:
        valid = _names(tag)
        for name in (n for n in sorted(valid) if len(n) >= 6):
            for i, j in itertools.combinations(range(len(name)), 2):
                typo = name[:i] + "q" + name[i + 1:j] + "q" + name[j + 1:]
                if typo not in valid:
                    assert name in misspelling_of(typo, valid), (tag, typo)
            assert name in misspelling_of(name[2] + name[1] + name[0] + name[3:], valid)


# The names that are not URDF met in 1613 distinct robot files of 35 public repositories (robot
# descriptions, simulators, parsers), with the number of files: none is a likely misspelling.
EXTENSIONS_MET = {
    ("axis", "attribute", "rpy"): 6, ("dynamics", "attribute", "D"): 5, ("dynamics", "attribute", "K"): 5,
    ("dynamics", "attribute", "armature"): 4, ("dynamics", "attribute", "coulomb_window"): 1,
    ("dynamics", "attribute", "mu_coulomb"): 5, ("dynamics", "attribute", "mu_viscous"): 5,
    ("dynamics", "attribute", "spring_reference"): 12, ("dynamics", "attribute", "spring_stiffness"): 12,
    ("joint", "attribute", "dont_collapse"): 11, ("joint", "attribute", "drake_ignore"): 2,
    ("joint", "element", "controller_gains"): 1, ("joint", "element", "joint_properties"): 25,
    ("limit", "attribute", "acceleration"): 1, ("limit", "attribute", "command_effort"): 2,
    ("limit", "attribute", "current"): 2, ("limit", "attribute", "drake:acceleration"): 16,
    ("limit", "attribute", "gear_velocity"): 2, ("limit", "attribute", "twist"): 1,
    ("link", "attribute", "concave"): 2, ("link", "attribute", "drake_ignore"): 2,
    ("link", "attribute", "type"): 3, ("link", "element", "audio_source"): 1,
    ("link", "element", "bullet"): 1, ("link", "element", "collision_checking"): 1,
    ("link", "element", "contact"): 1101, ("link", "element", "contact_coefficients"): 1,
    ("link", "element", "gravity"): 4, ("link", "element", "kinematic"): 3, ("link", "element", "origin"): 3,
    ("link", "element", "self_collision_checking"): 17, ("link", "element", "self_filter"): 2,
    ("link", "element", "surface"): 1, ("robot", "element", "bullet"): 1, ("robot", "element", "cable"): 1,
    ("robot", "element", "collision_filter_group"): 13, ("robot", "element", "deformable"): 2,
    ("robot", "element", "drake:collision_filter_group"): 16, ("robot", "element", "drake:joint"): 4,
    ("robot", "element", "force_element"): 6, ("robot", "element", "frame"): 34,
    ("robot", "element", "inertial"): 7, ("robot", "element", "loop_joint"): 5,
    ("robot", "element", "mujoco"): 61, ("robot", "element", "origin"): 2,
    ("robot", "element", "parameter"): 1, ("robot", "element", "reduced_deformable"): 3,
    ("robot", "element", "velocity"): 3, ("robot", "element", "xacro:BB2-08S2C-38"): 1,
    ("robot", "element", "xacro:bridge_plate"): 1, ("robot", "element", "xacro:camera_mount"): 1,
    ("robot", "element", "xacro:pointgrey_flea3"): 1, ("robot", "element", "xacro:sick_lms1xx_mount"): 1,
}


def test_no_extension_met_in_public_robot_descriptions_is_taken_for_a_misspelling():
    assert len(EXTENSIONS_MET) == 53
    for (tag, _, name) in EXTENSIONS_MET:
        assert name not in _names(tag)
        assert misspelling_of(name, _names(tag)) == [], (tag, name)


def test_names_a_few_letters_from_a_short_urdf_name_are_extensions():
    """Short URDF names take one edit only: <mount> is not <joint>, rate= is not name=."""
    assert misspelling_of("mount", _names("robot")) == []
    assert misspelling_of("rate", _names("link")) == []
    assert misspelling_of("frame", _names("robot")) == []
    assert misspelling_of("jiont", _names("robot")) == ["joint"]
    assert misspelling_of("Limt", _names("joint")) == ["limit"]


def test_a_name_in_a_namespace_is_an_extension_however_close():
    with open(FULL, encoding="utf-8") as f:
        text = f.read().replace('<robot name="full_robot"', '<robot xmlns:d="urn:d" name="full_robot"')
    text = text.replace('<mimic joint="shoulder_joint"', '<d:origin xyz="0 0 0"/><mimic d:joint="x" joint="shoulder_joint"')
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        hd.RobotModel.from_urdf(text, tip_links=["tool_link"])
    assert [str(w.message).split(" in ")[0] for w in caught] == ["<d:origin>", "attribute d:joint of <mimic>"]


# -- every URDF name misspelt in a real file -----------------------------------------------------------
def _full_robot():
    """urdfdom's every-feature robot, with the robot-level elements it lacks (written as ROS's
    tools write them)."""
    with open(FULL, encoding="utf-8") as f:
        text = f.read()
    return text.replace("</robot>", '<transmission name="t"><type>transmission_interface/SimpleTransmission</type>'
                        '</transmission><gazebo reference="base_link"/><sensor name="s" update_rate="10">'
                        '<parent link="base_link"/></sensor><ros2_control name="r" type="system"/>\n</robot>')


def _misspelt(name):
    """The first two letters swapped (or, where that changes nothing, the last one dropped)."""
    swapped = name[1] + name[0] + name[2:]
    return swapped if swapped != name else name[:-1]


def _cases():
    cases = []
    for tag, (attributes, children) in SCHEMA.items():
        cases += [(tag, "element", c) for c in sorted(children)]
        cases += [(tag, "attribute", a) for a in sorted(attributes)]
    return cases


@pytest.mark.parametrize("tag, form, name", _cases(), ids=lambda v: str(v))
def test_every_urdf_element_and_attribute_misspelt_in_a_real_file_is_refused_with_its_suggestion(tag, form, name):
    text = _full_robot()
    typo = _misspelt(name)
    if form == "element":
        parent = re.search(rf"<{tag}[\s>/][^<]*(?:<(?!/{tag}>)[^<]*)*?<{name}[\s>/]", text)
        assert parent, (tag, name)
        start = parent.end() - len(name) - 1
        closing = re.compile(rf"</{name}>")
        end = closing.search(text, start)
        self_closing = text.index(">", start)
        changed = text[:start] + typo + text[start + len(name):]
        if end is not None and text[self_closing - 1] != "/" and end.start() < len(text):
            shift = len(typo) - len(name)
            changed = changed[:end.start() + shift] + f"</{typo}>" + changed[end.end() + shift:]
        suggestion = f"<{name}>"
    else:
        element = re.search(rf"<{tag}\s[^>]*?\b{name}=\"", text)
        assert element, (tag, name)
        start = element.end() - len(name) - 2
        changed = text[:start] + typo + text[start + len(name):]
        suggestion = f"'{name}'"
        start = element.start()  # an attribute is reported with the line where its element starts
    line = changed[:start].count("\n") + 1
    with pytest.raises(hd.ModelError) as info:
        hd.RobotModel.from_urdf(changed)
    message = str(info.value)
    shown = f"<{typo}>" if form == "element" else f"{typo}=\""
    assert message.startswith(f"unknown {form} {shown}"), message
    assert f"(line {line}); did you mean {suggestion}" in message, message
    assert re.search(r" in (robot|link|joint) '[^']+' \(line|in a (link|joint) \(line", message), message
    assert message.endswith("(strict=False, or --lenient, reads past it with a warning)")


# -- strict=False: what the model does not need is read past ------------------------------------------
def test_lenient_reads_past_a_malformed_limit_that_strict_refuses_as_urdfdom_does():
    """PyBullet's biped2d has <limit lower="-1.57."> (urdfdom refuses it): the bound is left open."""
    path = os.path.join(CORPUS, "bullet3", "pybullet_data", "biped2d_pybullet.urdf")
    with pytest.raises(hd.ModelError, match=r"<limit lower=\"-1.57.\"> in joint 'torso_to_rightleg' \(line 115\) must be a finite number"):
        hd.RobotModel.from_urdf(path)
    with pytest.warns(hd.HodDynamicsWarning, match=r"^<limit lower=\"-1.57.\"> in joint 'torso_to_rightleg' \(line 115\)"):
        model = hd.RobotModel.from_urdf(path, strict=False)
    j = model.joint_index("torso_to_rightleg")
    assert model.lower[j] == -np.inf and np.isfinite(model.upper[j])


def test_lenient_reads_past_a_limit_without_velocity_and_a_mimic_without_joint():
    """Drake's four-bar linkage has a <limit> without velocity (urdfdom refuses it)."""
    path = os.path.join(CORPUS, "drake", "FourBar.urdf")
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        model = hd.RobotModel.from_urdf(path, strict=False)
    messages = [str(w.message) for w in caught]
    assert "<limit> in joint 'joint_0' (line 73) has no velocity attribute" in messages
    assert model.velocity_limits[model.joint_index("joint_0")] == np.inf
    text = _full_robot().replace('<mimic joint="shoulder_joint"', "<mimic")
    with pytest.raises(hd.ModelError, match=r"<mimic> in joint 'platform_joint' \(line \d+\) has no joint attribute"):
        hd.RobotModel.from_urdf(text, tip_links=["tool_link"])
    with pytest.warns(hd.HodDynamicsWarning, match=r"<mimic> in joint 'platform_joint' \(line \d+\) has no joint attribute"):
        hd.RobotModel.from_urdf(text, strict=False, tip_links=["tool_link"])


def test_lenient_reads_a_malformed_dynamics_value_as_zero():
    text = open(FULL, encoding="utf-8").read().replace('<dynamics damping="1.0" friction="0.1"/>',
                                                        '<dynamics damping="1.0" friction="0.1 N m"/>')
    with pytest.raises(hd.ModelError, match=r"^<dynamics friction=\"0.1 N m\"> in joint '\w+' \(line 60\) must be a finite number"):
        hd.RobotModel.from_urdf(text, tip_links=["tool_link"])
    with pytest.warns(hd.HodDynamicsWarning, match=r"^<dynamics friction=\"0.1 N m\"> in joint"):
        model = hd.RobotModel.from_urdf(text, strict=False, tip_links=["tool_link"])
    assert model.friction[0] == 0 and model.damping[0] == 1.0
