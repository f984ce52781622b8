"""Real robot descriptions against Pinocchio.

The corpus (``data/urdf_corpus``, sources and licences in SOURCES.md): robot descriptions copied
unmodified from public repositories, the URDF files of example-robot-data (read from the installed
package), real xacro descriptions, and variants derived here from real files (a byte-order mark,
CR LF line ends, blank lines before ``<?xml``, identified-style inertias that are not positive
semi-definite). Each description either

- loads and agrees with Pinocchio on the same file (tau, M, first-order partials and tau_dot of two
  random states, to 1e-10), with exactly the warnings listed (extensions, inertias, negative
  ``<dynamics>``); or
- loads, and agrees with Pinocchio on a copy mended where Pinocchio refuses what the rigid-body
  model does not read (:data:`MENDED`, with Pinocchio's refusal of the file as it is); or
- is refused with the message listed, and Pinocchio refuses it for the same fault
  (:data:`REFUSED`, urdfdom's message as Pinocchio prints it).
"""

import glob
import os
import re
import subprocess
import sys
import warnings

import numpy as np
import pytest

import hod_dynamics as hd
from oracles import PinocchioRobot, erd_dir, rel_err

CORPUS = os.path.join(os.path.dirname(os.path.abspath(__file__)), "data", "urdf_corpus")
XACRO_PACKAGE = "ros2_control_demo_example_1"  # the package name rrbot's $(find ...) expects


def corpus_path(name):
    return os.path.join(CORPUS, name)


def corpus_text(name):
    with open(corpus_path(name), encoding="utf-8", newline="") as f:
        return f.read()


def _sources():
    """SOURCES.md's table: file -> (repository, path, commit, licence)."""
    rows = {}
    for line in open(corpus_path("SOURCES.md"), encoding="utf-8"):
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if line.startswith("| `") and len(cells) == 5:
            rows[cells[0].strip("`")] = tuple(cells[1:])
    return rows


def _erd_urdfs():
    """example-robot-data URDF files that Pinocchio parses (none without the package)."""
    try:
        folder = erd_dir()
        import pinocchio as pin
    except BaseException:  # pytest.skip outside a test, or no Pinocchio
        return []
    paths = []
    for path in sorted(glob.glob(os.path.join(folder, "**", "*.urdf"), recursive=True)):
        try:
            pin.buildModelFromUrdf(path)
        except Exception:  # ur3.urdf has no link: urdfdom and we both refuse it
            continue
        paths.append(path)
    return paths


# -- mended copies for Pinocchio: what it refuses is not read by the rigid-body model ----------------
def _with_limits(text):
    """urdfdom refuses revolute (prismatic) joints without <limit> (Drake reads them as unlimited, as
    we do): the oracle gets the same file with limits, which do not enter the dynamics."""
    return re.sub(r'(<joint name="[^"]+" type="(revolute|prismatic)">)', r'\1<limit effort="0" velocity="0"/>', text)


def _friction_made_positive(text):
    """Pinocchio 4 refuses a negative <dynamics friction> (its dry-friction bounds -f, f would
    cross); the rigid-body model does not read it."""
    return re.sub(r'friction="-', 'friction="', text)


def _attributes_on_one_line(text):
    """urdfdom cannot read a number that an editor broke over two lines inside an attribute value
    (XML reads the line break as a space, as we do): it leaves that link's inertia out. The copy
    has those values on one line."""
    def joined(m):
        value = " ".join(m.group(2).split()) if "\n" in m.group(2) else m.group(2)
        return "=" + m.group(1) + value + m.group(1)
    return re.sub(r'=(["\'])(.*?)\1', joined, text, flags=re.S)


def _identified_lwr():
    """bullet3's LWR with the inertias of links 3 and 5 replaced by values that are not positive
    semi-definite, as identified parameter sets often are (one principal moment < 0)."""
    text = corpus_text("bullet3/kuka_lwr.urdf")
    for link, inertia in (("kuka_arm_3_link", 'ixx="0.0136" ixy="0.0021" ixz="-0.0007" iyy="-0.0019" iyz="0.0004" izz="0.0118"'),
                          ("kuka_arm_5_link", 'ixx="0.0126" ixy="0" ixz="0.0093" iyy="0.003" iyz="0" izz="0.0011"')):
        block = re.search(rf'<link name="{link}">.*?<inertia [^>]*/>', text, re.S)
        new = re.sub(r"<inertia [^>]*/>", f"<inertia {inertia}/>", block.group(0))
        text = text.replace(block.group(0), new)
    return text


# -- what each corpus file must give ----------------------------------------------------------------
MUJOCO, DONT_COLLAPSE, CONTACT = "<mujoco>", "attribute dont_collapse of <joint>", "<contact>"
SPRING = ("attribute spring_reference of <dynamics>", "attribute spring_stiffness of <dynamics>")
FRANKA = tuple(f"attribute {a} of <dynamics>" for a in ("D", "K", "mu_coulomb", "mu_viscous"))
DRAKE_ACCELERATION = "attribute drake:acceleration of <limit>"

# file -> (n_dof, the subject of each HodDynamicsWarning in order: an extension, "not PSD: link",
# "negative friction: joint"), for files that load and that Pinocchio builds as they are
AGREE = {
    # FloBaRoID: KUKA LWR4+ models (CAD, measured, Gaz et al.'s identified parameters) and WALK-MAN
    "FloBaRoID/kuka_lwr4.urdf": (7, ()),
    "FloBaRoID/kuka_lwr4_centroepiaggio.urdf": (7, ()),
    "FloBaRoID/kuka_lwr4_cogimon.urdf": (7, ("<origin>",)),  # a stray <origin> directly in <robot>
    "FloBaRoID/kuka_lwr4_gaz.urdf": (7, ("<origin>", "not PSD: lwr_1_link", "not PSD: lwr_5_link",
                                         "not PSD: lwr_6_link", "not PSD: lwr_7_link")),
    "FloBaRoID/threeLinks.urdf": (2, ()),
    "FloBaRoID/walkman_left_arm.urdf": (7, ()),
    "FloBaRoID/walkman_measured.urdf": (29, ()),
    "FloBaRoID/world_kuka.urdf": (0, ()),
    # Drake's models (RobotLocomotion/models and Drake's own examples)
    "RobotLocomotion-models/iiwa14_polytope_collision.urdf": (7, ("<frame>", "<drake:collision_filter_group>",
                                                                  "<self_collision_checking>", DRAKE_ACCELERATION)),
    "RobotLocomotion-models/panda_arm_hand.urdf": (9, ("<drake:collision_filter_group>", DRAKE_ACCELERATION)),
    "RobotLocomotion-models/ur3e_spheres_collision.urdf": (6, (DRAKE_ACCELERATION,)),
    "drake/allegro_hand_description_left.urdf": (16, ("<origin>",)),  # <origin> directly in a <link>
    "drake/atlas_minimal_contact.urdf": (30, ("<frame>",)),
    "drake/double_pendulum.urdf": (2, ("<frame>",)),  # a default XML namespace
    "drake/irb_140.urdf": (6, ("<collision_filter_group>",)),
    "drake/irb_140_robotiq.urdf": (36, ("<collision_filter_group>", "<loop_joint>", "<inertial>")),
    "drake/j2s7s300.urdf": (10, ()),  # Kinova Jaco 7-DoF
    "drake/quadrotor.urdf": (0, ("<frame>", "<force_element>")),
    "drake/robotiq.urdf": (30, ("<loop_joint>", "<inertial>")),  # Robotiq 3-finger hand
    "drake/valkyrie_A_sim_drake_one_neck_dof_wide_ankle_rom.urdf": (30, ("<frame>", "<collision_filter_group>",
                                                                         "<controller_gains>")),
    "drake/wsg_50_mesh_collision.urdf": (2, ("<contact_coefficients>",)),
    # pybullet_data
    "bullet3/kuka_lwr.urdf": (7, ()),
    "bullet3/pybullet_data/TwoJointRobot_w_fixedJoints.urdf": (2, ()),
    "bullet3/pybullet_data/a1.urdf": (12, ()),
    "bullet3/pybullet_data/cartpole.urdf": (2, ()),
    "bullet3/pybullet_data/diff_ring.urdf": (5, (CONTACT, "attribute rpy of <axis>")),
    "bullet3/pybullet_data/laikago_toes.urdf": (12, (CONTACT, "<joint_properties>")),
    "bullet3/pybullet_data/mini_cheetah.urdf": (12, (CONTACT,)),
    "bullet3/pybullet_data/minitaur.urdf": (16, ("<joint_properties>", CONTACT)),
    "bullet3/pybullet_data/minitaur_v1.urdf": (16, ("<joint_properties>", CONTACT)),
    "bullet3/pybullet_data/model.urdf": (7, ()),  # KUKA iiwa
    "bullet3/pybullet_data/panda.urdf": (9, (CONTACT,)),
    "bullet3/pybullet_data/pr2_gripper.urdf": (2, (CONTACT,)),
    "bullet3/pybullet_data/r2d2.urdf": (8, ("<joint_properties>",)),
    "bullet3/pybullet_data/racecar.urdf": (6, ()),
    "bullet3/pybullet_data/spirit40.urdf": (12, (CONTACT,)),
    "bullet3/pybullet_data/vision60.urdf": (12, (CONTACT,)),
    "bullet3/pybullet_data/xarm6_with_gripper.urdf": (12, ()),
    # Unitree
    "unitree_rl_gym/g1_12dof.urdf": (12, (MUJOCO,)),
    "unitree_rl_gym/go2.urdf": (12, (DONT_COLLAPSE,)),
    "unitree_rl_gym/h1.urdf": (10, (MUJOCO,)),
    "unitree_rl_gym/h1_2_12dof.urdf": (12, (MUJOCO,)),
    "unitree_ros/DFQ_right_hand.urdf": (12, (MUJOCO,)),  # Inspire hand
    "unitree_ros/Dex5-URDF-L.urdf": (20, (MUJOCO,)),
    "unitree_ros/Dex5-URDF-R.urdf": (20, (MUJOCO,)),
    "unitree_ros/FTP_left_hand.urdf": (12, (MUJOCO,)),  # Inspire hand
    "unitree_ros/H2.urdf": (31, (MUJOCO, DONT_COLLAPSE)),
    "unitree_ros/R1.urdf": (26, (MUJOCO,)),
    "unitree_ros/a1.urdf": (12, ()),
    "unitree_ros/aliengo.urdf": (12, ()),
    "unitree_ros/b2_description.urdf": (12, (DONT_COLLAPSE,)),
    "unitree_ros/b2w_description.urdf": (16, ()),
    "unitree_ros/dex1_1.urdf": (2, (MUJOCO,)),
    "unitree_ros/dex3_1_l.urdf": (7, (MUJOCO,)),
    "unitree_ros/dex3_1_r.urdf": (7, (MUJOCO,)),
    "unitree_ros/g1_23dof.urdf": (23, (MUJOCO,)),
    "unitree_ros/g1_29dof_rev_1_0.urdf": (29, (MUJOCO, DONT_COLLAPSE)),
    "unitree_ros/g1_29dof_rev_1_0_with_inspire_hand_FTP.urdf": (53, (MUJOCO,)),
    "unitree_ros/g1_29dof_with_hand.urdf": (43, (MUJOCO,)),
    "unitree_ros/g1_d.urdf": (34, (MUJOCO,)),
    "unitree_ros/go1.urdf": (12, ()),
    "unitree_ros/go2_description.urdf": (12, (DONT_COLLAPSE,)),
    "unitree_ros/h1.urdf": (19, (MUJOCO,)),
    "unitree_ros/h1_2.urdf": (51, (MUJOCO,)),
    "unitree_ros/h1_2_handless.urdf": (27, (MUJOCO,)),
    "unitree_ros/h1_with_hand.urdf": (45, ()),
    "unitree_ros/laikago.urdf": (12, ()),
    "unitree_ros/z1.urdf": (6, ()),  # <dynamics damping friction>, transmissions
    # Hello Robot Stretch
    "stretch_urdf/stretch_description_RE1V0_tool_stretch_gripper.urdf": (12, SPRING),
    "stretch_urdf/stretch_description_RE2V0_tool_none.urdf": (10, SPRING),
    "stretch_urdf/stretch_description_SE3_eoa_wrist_dw3_tool_sg3.urdf": (14, SPRING),
    # iCub, Robotiq, Clearpath, Rethink, ANYbotics, SoftBank, Kinova
    "icub-models/iCubGazeboV2_7.urdf": (32, ()),
    "icub-models/iCubNancy01.urdf": (32, ()),
    "icub-models/left_hand_mk3.urdf": (11, ()),
    "robotiq/robotiq-3f-gripper_articulated.urdf": (11, ("<inertial>",)),  # an <inertial> directly in <robot>
    "robotiq/robotiq_c2_model.urdf": (6, ()),
    "husky/husky.urdf": (4, ("attribute rpy of <axis>",)),
    "baxter_common/baxter.urdf": (15, ("<gravity>",)),
    "anymal_c_simple_description/anymal.urdf": (12, ("<self_filter>",)),
    "nao_robot/nao.urdf": (42, ()),
    "ros2_kortex/gen3_lite.urdf": (10, ()),  # empty material names, zero axis on fixed joints
    "ros2_kortex/GEN3-6DOF_NO-VISION_URDF_ARM_V01.urdf": (6, ()),  # CR LF, version="1.0"
    "ros2_kortex/GEN3_URDF_V12_vision.urdf": (7, ()),  # CR LF, rpy of 1e-36
    # ROS and ROS-Industrial descriptions, parsers' test files
    "pinocchio/iiwa2.urdf": (7, ("<self_collision_checking>",)),
    "legged_gym/cassie.urdf": (12, ("not PSD: base",)),  # ixz = 0.015 with principal moments of 1e-5
    "turtlebot3/turtlebot3_burger.urdf": (2, ()),  # wheels without <limit>, xmlns:xacro
    "SO-ARM100/so100.urdf": (6, ()),  # several <visual>, a link and a joint named alike
    "moveit_resources/panda.urdf": (9, FRANKA),  # a <mimic> with only joint
    "abb/irb120.urdf": (6, ()),  # kinematics only (no <inertial>)
    "universal_robot/ur5_robot.urdf": (6, ()),  # a <transmission> with a bare <joint>
    "motoman/sia5d.urdf": (7, ()),
    "kuka_experimental/kr16_2.urdf": (6, ()),  # placeholder inertias
    "kuka_experimental/lbr_iiwa_14_r820.urdf": (7, ()),
    "fanuc/lrmate200id.urdf": (6, ()),
    "kdl_parser/testInertiaRPYmodel1.urdf": (1, ()),
    "sdformat/urdf_joint_parameters.urdf": (5, ()),
    "sdformat/force_torque_sensor.urdf": (2, ()),
    "urdfdom/one_link.urdf": (0, ()),
    "urdfdom/branching_robot.urdf": (0, ()),
    "robot_state_publisher/mimic_joint.urdf": (0, ()),
}
# from_urdf options a file needs: full_robot_v1_0 has a floating camera joint (the chain to the
# tool is the arm); AS2's free base below `world` is compared as a fixed base at its base link
# (Pinocchio's free-flyer joint held at rest; the floating model is checked on its own)
OPTIONS = {
    "urdfdom/full_robot_v1_0.urdf": {"tip_links": ["tool_link"]},
    "unitree_ros/as2.urdf": {"root_link": "base_link"},
}
AGREE.update({"urdfdom/full_robot_v1_0.urdf": (3, ()), "unitree_ros/as2.urdf": (12, (MUJOCO,))})

# file -> (n_dof, warnings, the copy Pinocchio gets, Pinocchio's refusal of the file as it is)
MENDED = {
    "drake/kuka_iiwa_robot.urdf": (7, (), _with_limits, r"Joint \[iiwa_joint_1\] is of type REVOLUTE but it does not specify limits"),
    "FloBaRoID/kuka_lwr4_identified.urdf": (7, ("negative friction: lwr_3_joint", "negative friction: lwr_4_joint",
                                                "negative friction: lwr_5_joint", "negative friction: lwr_6_joint"),
                                            _friction_made_positive, r"min_dry_friction are greater than max_dry_friction"),
}
# Files that urdfdom reads with an error of its own and builds without part of them: compared with
# Pinocchio on the copy it reads right (file -> (n_dof, warnings, mend, urdfdom's message))
MENDED.update({
    "unitree_ros/Left_Hand.urdf": (10, (), _attributes_on_one_line, r"inertia element ixz is not a valid double"),
})

# file -> (our message, urdfdom's message as Pinocchio prints it, the copy Pinocchio is shown
# when the file has an earlier fault that urdfdom meets first)
REFUSED = {
    "bullet3/pybullet_data/bike.urdf": (r"<origin xyz=\"0.07, 0, -0.69\"> in joint 'handlebar_to_frontwheel' \(line 103\) must be 3 finite numbers",
                                        r"Unable to parse component \[0.07,\]", None),
    "bullet3/pybullet_data/biped2d_pybullet.urdf": (r"<limit lower=\"-1.57.\"> in joint 'torso_to_rightleg' \(line 115\) must be a finite number",
                                                    r"lower value \(-1.57.\) is not a valid float", None),
    "bullet3/pybullet_data/humanoid.urdf": (r"joint 'chest' has unknown type 'spherical' \(line 40\)",
                                            r"Joint \[chest\] has no known type \[spherical\]", None),
    "bullet3/pybullet_data/husky.urdf": (r"<origin xyz=\"\$\(optenv HUSKY_IMU_XYZ 0.19 0 0.149\)\"> in joint 'imu_joint' \(line 97\) must be 3 finite numbers",
                                         r"Unable to parse component \[\$\(optenv\]", None),
    "bullet3/pybullet_data/microtaur.urdf": (r"<origin rpy=\"-3.14159 1.57079 0 0\"> in joint 'dynamixel7_chassis_left' \(line 300\) must be 3 finite numbers",
                                             r"Parser found 4 elements but 3 expected while parsing vector \[-3.14159 1.57079 0 0\]", None),
    "bullet3/pybullet_data/spherical_joint_limit.urdf": (r"joint 'neck' has unknown type 'spherical' \(line 28\)",
                                                         r"Joint \[neck\] has no known type \[spherical\]", None),
    "drake/Acrobot.urdf": (r"joint 'base_weld' \(line 69\) refers to link 'world', which is not defined",
                           r"parent link \[world\] of joint \[base_weld\] not found", None),
    "drake/FourBar.urdf": (r"<limit> in joint 'joint_0' \(line 73\) has no velocity attribute",
                           r"joint \[joint_0\]: limit has no velocity", None),
    "drake/pr2_simplified.urdf": (r"the description holds 3 separate trees, with root links 'world_link' \(line 93, 83 links\), "
                                  r"'r_gripper_l_finger_tip_frame' \(line 2380, 1 link\), 'l_gripper_l_finger_tip_frame' "
                                  r"\(line 3313, 1 link\): choose one with root_link",
                                  r"Two root links found", _with_limits),
}
XACRO_DESCRIPTIONS = ("urdf_tutorial/08-macroed.urdf.xacro", "ros2_control_demos/urdf/rrbot.urdf.xacro",
                      "franka_ros/robots/panda/panda.urdf.xacro")


def warning_subject(message):
    """What a HodDynamicsWarning is about: '<mujoco>', 'attribute X of <Y>', 'not PSD: link',
    'negative friction: joint'."""
    found = re.match(r"(<[^>]+>|attribute \S+ of <\w+>) in ", message)
    if found:
        return found.group(1)
    found = re.match(r"link '([^']+)': rotational inertia is not positive semi-definite", message)
    if found:
        return f"not PSD: {found.group(1)}"
    found = re.match(r"joint '([^']+)' \(line \d+\): <dynamics (\w+)=\"-[^\"]*\"> is negative", message)
    if found:
        return f"negative {found.group(2)}: {found.group(1)}"
    return message


def check_against_pinocchio(model, pinrobot, rng, samples=2):
    """tau, M, d tau/d q, d tau/d qd and tau_dot of two random states agree to 1e-10.

    Pinocchio's tau_dot is its partials applied to the trajectory (chain rule):
    d tau/d q qd + d tau/d qd qdd + M q3."""
    n = model.n_dof
    q, qd, qdd, q3 = rng.uniform(-1.2, 1.2, size=(4, samples, n))
    tau = hd.inverse_dynamics(model, q, qd, qdd)
    dtau_dq, dtau_dqd, M = hd.id_partials(model, q, qd, qdd)
    jet = hd.time_derivatives(model, np.stack([q, qd, qdd, q3], axis=-2), 1)
    for s in range(samples):
        p_dq, p_dv, p_M = pinrobot.rnea_derivatives(q[s], qd[s], qdd[s])
        assert rel_err(tau[s], pinrobot.rnea(q[s], qd[s], qdd[s])) < 1e-10
        assert rel_err(jet[s, 0], tau[s]) < 1e-12
        assert rel_err(M[s], pinrobot.crba(q[s])) < 1e-10
        assert rel_err(hd.mass_matrix(model, q[s]), p_M) < 1e-10
        assert rel_err(dtau_dq[s], p_dq) < 1e-10
        assert rel_err(dtau_dqd[s], p_dv) < 1e-10
        assert rel_err(jet[s, 1], p_dq @ qd[s] + p_dv @ qdd[s] + p_M @ q3[s]) < 1e-10


def check_zero_dof(model, pinrobot):
    """A model with no moving joint: Pinocchio's has no velocity either; our results are empty."""
    assert pinrobot.model.nv == 0 and model.n_dof == 0
    z = np.zeros((2, 0))
    assert hd.inverse_dynamics(model, z, z, z).shape == (2, 0)
    assert hd.time_derivatives(model, np.zeros((2, 4, 0)), 1).shape == (2, 2, 0)
    assert [a.shape for a in hd.id_partials(model, z, z, z)] == [(2, 0, 0)] * 3


def _load(source, kwargs=None):
    """Our model, with every HodDynamicsWarning of the reading."""
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        model = hd.RobotModel.from_urdf(source, **(kwargs or {}))
    return model, [str(w.message) for w in caught if issubclass(w.category, hd.HodDynamicsWarning)]


def _compare(model, oracle, rng):
    pinrobot = PinocchioRobot(oracle, model)
    if model.n_dof == 0:
        check_zero_dof(model, pinrobot)
    else:
        check_against_pinocchio(model, pinrobot, rng)


@pytest.mark.parametrize("name", sorted(AGREE))
def test_corpus_file_agrees_with_pinocchio(name, rng):
    n, subjects = AGREE[name]
    model, notes = _load(corpus_path(name), OPTIONS.get(name))
    assert model.n_dof == n
    assert tuple(warning_subject(m) for m in notes) == subjects, notes
    _compare(model, corpus_path(name), rng)


@pytest.mark.parametrize("name", sorted(MENDED))
def test_corpus_file_agrees_with_pinocchio_on_a_copy_it_can_read(name, rng, capfd):
    """Pinocchio refuses (or misreads) the file for something the rigid-body model does not read;
    the copy it gets is mended there only."""
    n, subjects, mend, refusal = MENDED[name]
    pin = pytest.importorskip("pinocchio", reason="pinocchio (pin) not installed")
    capfd.readouterr()
    try:
        pin.buildModelFromUrdf(corpus_path(name))
        said = ""
    except Exception as exc:  # urdfdom prints its reason, Pinocchio raises its own
        said = str(exc)
    assert re.search(refusal, said + capfd.readouterr().err), said
    model, notes = _load(corpus_path(name))
    assert model.n_dof == n
    assert tuple(warning_subject(m) for m in notes) == subjects, notes
    mended = mend(corpus_text(name))
    assert mended != corpus_text(name)
    _compare(model, mended, rng)


@pytest.mark.parametrize("name", sorted(REFUSED))
def test_corpus_file_is_refused_as_pinocchio_refuses_it(name, capfd):
    ours, theirs, shown = REFUSED[name]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", hd.HodDynamicsWarning)  # extensions met before the fault
        with pytest.raises(hd.ModelError, match=rf"^'{re.escape(corpus_path(name))}': {ours}"):
            hd.RobotModel.from_urdf(corpus_path(name))
    pin = pytest.importorskip("pinocchio", reason="pinocchio (pin) not installed")
    capfd.readouterr()
    text = corpus_text(name) if shown is None else shown(corpus_text(name))
    with pytest.raises(Exception):
        pin.buildModelFromXML(text)
    assert re.search(theirs, capfd.readouterr().err)


def test_as2_loads_as_a_free_base_below_world():
    """Unitree AS2: `world`, then a floating joint to base_link: a floating model whose
    configuration has Pinocchio's size."""
    model, notes = _load(corpus_path("unitree_ros/as2.urdf"))
    pin = pytest.importorskip("pinocchio", reason="pinocchio (pin) not installed")
    pm = pin.buildModelFromUrdf(corpus_path("unitree_ros/as2.urdf"))
    assert model.floating and model.root_link == "base_link"
    assert (model.nq, model.nv) == (pm.nq, pm.nv) == (19, 18)


def test_corpus_counts_sources_and_outcomes(capsys):
    """Every file of the folder is cited in SOURCES.md (and every cited file is there); the
    counts of descriptions, repositories and outcomes."""
    sources = _sources()
    on_disk = {os.path.relpath(p, CORPUS) for p in glob.glob(os.path.join(CORPUS, "**", "*"), recursive=True)
               if os.path.isfile(p) and not p.endswith("SOURCES.md")}
    assert on_disk == set(sources)
    descriptions = set(AGREE) | set(MENDED) | set(REFUSED) | set(XACRO_DESCRIPTIONS)
    assert {f for f in on_disk if f.endswith(".urdf")} == set(AGREE) | set(MENDED) | set(REFUSED)
    repositories = {repo for repo, _, _, _ in sources.values()}
    assert all(re.fullmatch(r"[0-9a-f]{40}", commit) and licence for _, _, commit, licence in sources.values())
    counts = dict(files=len(on_disk), descriptions=len(descriptions), repositories=len(repositories),
                  agree=len(AGREE) + len(XACRO_DESCRIPTIONS), agree_on_a_mended_copy=len(MENDED),
                  refused_as_pinocchio_refuses=len(REFUSED))
    with capsys.disabled():
        print("\nURDF corpus: {files} files, {descriptions} descriptions from {repositories} repositories: "
              "{agree} agree with Pinocchio, {agree_on_a_mended_copy} agree with Pinocchio on a copy it can read, "
              "{refused_as_pinocchio_refuses} refused as Pinocchio refuses them".format(**counts))
    assert counts == dict(files=126, descriptions=117, repositories=31, agree=105, agree_on_a_mended_copy=3,
                          refused_as_pinocchio_refuses=9)


# -- variants of real files -----------------------------------------------------------------------
VARIANTS = {
    "byte-order mark": ("\ufeff" + corpus_text("pinocchio/iiwa2.urdf"), corpus_text("pinocchio/iiwa2.urdf"), 7,
                        ("<self_collision_checking>",)),
    "CR LF": (corpus_text("bullet3/kuka_lwr.urdf").replace("\n", "\r\n"), corpus_text("bullet3/kuka_lwr.urdf"), 7, ()),
    "blank lines before <?xml": ("\n\n    " + corpus_text("sdformat/urdf_joint_parameters.urdf"),
                                 corpus_text("sdformat/urdf_joint_parameters.urdf"), 5, ()),
    "identified inertias (not PSD)": (_identified_lwr(), _identified_lwr(), 7,
                                      ("not PSD: kuka_arm_3_link", "not PSD: kuka_arm_5_link")),
}


@pytest.mark.parametrize("variant", sorted(VARIANTS))
def test_variant_of_a_corpus_file_agrees_with_pinocchio(variant, rng):
    ours, oracle, n, subjects = VARIANTS[variant]
    model, notes = _load(ours)
    assert model.n_dof == n
    assert tuple(warning_subject(m) for m in notes) == subjects, notes
    _compare(model, oracle, rng)


@pytest.mark.parametrize("path", _erd_urdfs(), ids=lambda p: os.path.relpath(p, erd_dir()))
def test_every_example_robot_data_urdf_agrees_with_pinocchio(path, rng):
    """Strict reading refuses none of them; their warnings are extensions (PAL's Gazebo
    properties in TIAGo's links, ANYbotics' limits, franka's <dynamics>, ...) or the non-PSD
    link inertias of romeo_laas_small and TIAGo (real files), with Pinocchio's numbers."""
    model, notes = _load(path)
    kinds = [warning_subject(m) for m in notes]
    assert all(k.startswith(("<", "attribute ", "not PSD: ")) for k in kinds), notes
    if os.path.basename(path) in ("romeo_laas_small.urdf", "tiago.urdf", "tiago_dual.urdf", "tiago_no_hand.urdf"):
        assert any(k.startswith("not PSD: ") for k in kinds)
    _compare(model, path, rng)


def test_namespaced_erd_panda_loads_like_the_original(rng):
    """A default XML namespace on <robot> (Drake's 2017 PR2 has one): same model."""
    path = os.path.join(erd_dir(), "panda_description", "urdf", "panda.urdf")
    text = open(path, encoding="utf-8").read()
    spaced = re.sub(r"<robot ", '<robot xmlns="http://drake.mit.edu" xmlns:drake="http://drake.mit.edu" ', text, count=1)
    assert spaced != text
    a, _ = _load(text)
    b, _ = _load(spaced)
    assert a.joint_names == b.joint_names
    np.testing.assert_array_equal(a.inertias, b.inertias)
    np.testing.assert_array_equal(a.references, b.references)


# -- xacro -------------------------------------------------------------------------------------
def _install_package(tmp_path, monkeypatch, package, folder, subfolders):
    """The corpus ``folder``'s ``subfolders`` installed as ``package`` in an ament index of its
    own (prefix/share/ament_index/resource_index/packages/<package>), as $(find package) expects."""
    pytest.importorskip("xacro", reason="xacro (the [xacro] extra) not installed")
    pytest.importorskip("ament_index_python", reason="ament_index_python not installed")
    share = tmp_path / "share" / package
    for sub in subfolders:
        for path in glob.glob(corpus_path(f"{folder}/{sub}/**/*"), recursive=True):
            if os.path.isfile(path):
                target = share / sub / os.path.relpath(path, corpus_path(f"{folder}/{sub}"))
                target.parent.mkdir(parents=True, exist_ok=True)
                target.write_bytes(open(path, "rb").read())
    marker = tmp_path / "share" / "ament_index" / "resource_index" / "packages" / package
    marker.parent.mkdir(parents=True, exist_ok=True)
    marker.write_text("")
    monkeypatch.setenv("AMENT_PREFIX_PATH", os.pathsep.join(filter(None, [str(tmp_path), os.environ.get("AMENT_PREFIX_PATH")])))
    return share


@pytest.fixture
def rrbot_package(tmp_path, monkeypatch):
    """ros2_control_demos' rrbot files installed as the package its $(find ...) names."""
    share = _install_package(tmp_path, monkeypatch, XACRO_PACKAGE, "ros2_control_demos", ("urdf", "ros2_control"))
    return share / "urdf" / "rrbot.urdf.xacro"


@pytest.fixture
def franka_description(tmp_path, monkeypatch):
    """franka_ros's franka_description (the Panda's xacro files and YAML parameters)."""
    share = _install_package(tmp_path, monkeypatch, "franka_description", "franka_ros", ("robots",))
    return share / "robots" / "panda" / "panda.urdf.xacro"


def _xacro_command(path, *args):
    """The expansion by the xacro command-line tool (the package's own entry point)."""
    out = subprocess.run([sys.executable, "-c", "import sys, xacro; sys.argv[0] = 'xacro'; xacro.main()",
                          str(path), *args], capture_output=True, text=True, check=True, env=os.environ.copy())
    return out.stdout


def _same_model(a, b):
    assert a.joint_names == b.joint_names and a.link_names == b.link_names and a.name == b.name
    for key in ("parents", "screws", "references", "inertias", "lower", "upper", "velocity_limits", "effort_limits"):
        np.testing.assert_array_equal(getattr(a, key), getattr(b, key), err_msg=key)
    assert sorted(a.frames) == sorted(b.frames)


def test_xacro_with_macros_properties_math_args_and_find_equals_its_expansion(rrbot_package, rng):
    """ros2_control_demos' rrbot: a macro with a block parameter, properties, math
    (mass / 12.0 * (...), -pi/2), the xacro:arg prefix, $(find) includes and a <ros2_control>
    block. The model of the xacro (file and text) equals the model of the xacro tool's output
    and agrees with Pinocchio."""
    expanded = _xacro_command(rrbot_package, "prefix:=left_")
    reference = hd.RobotModel.from_urdf(expanded)
    assert reference.joint_names == ("left_joint1", "left_joint2")
    from_file = hd.RobotModel.from_urdf(rrbot_package, xacro_args={"prefix": "left_"})
    from_text = hd.RobotModel.from_urdf(rrbot_package.read_text(), xacro_args={"prefix": "left_"})
    _same_model(from_file, reference)
    _same_model(from_text, reference)
    # the default argument: no prefix
    assert hd.RobotModel.from_urdf(str(rrbot_package)).joint_names == ("joint1", "joint2")
    check_against_pinocchio(from_file, PinocchioRobot(expanded, from_file), rng)


def test_urdf_tutorial_macroed_xacro_equals_its_expansion(rng):
    pytest.importorskip("xacro", reason="xacro (the [xacro] extra) not installed")
    path = corpus_path("urdf_tutorial/08-macroed.urdf.xacro")
    expanded = _xacro_command(path)
    model, notes = _load(path)
    assert [warning_subject(m) for m in notes] == ["attribute rpy of <axis>"]  # as the tutorial writes it
    _same_model(model, hd.RobotModel.from_urdf(expanded))
    assert model.n_dof == 8 and "gripper_extension" in model.joint_names
    check_against_pinocchio(model, PinocchioRobot(expanded, model), rng)


def test_xacro_errors_name_the_file_and_the_cause(rrbot_package, monkeypatch, tmp_path):
    monkeypatch.setenv("AMENT_PREFIX_PATH", str(tmp_path / "nowhere"))
    with pytest.raises(hd.ModelError, match=r"xacro could not expand '.*rrbot.urdf.xacro'.*ros2_control_demo_example_1"):
        hd.RobotModel.from_urdf(rrbot_package)


def test_missing_xacro_package_is_named(monkeypatch):
    monkeypatch.setitem(sys.modules, "xacro", None)  # import xacro now raises ImportError
    with pytest.raises(hd.ModelError, match=r"needs the 'xacro' package \(pip install xacro, the xacro extra of this package; "):
        hd.RobotModel.from_urdf(corpus_path("urdf_tutorial/08-macroed.urdf.xacro"))


def test_franka_ros_panda_with_gaz_identified_inertias_equals_its_expansion(franka_description, rng):
    """franka_ros's Panda: a xacro with includes, YAML loaded by xacro (joint limits, and the
    inertias Gaz et al. identified, written for Gazebo only), franka's <dynamics D K mu_*>. The
    model of the xacro equals the model of the xacro tool's output and agrees with Pinocchio."""
    args = {"hand": "true", "gazebo": "true"}
    expanded = _xacro_command(franka_description, *(f"{k}:={v}" for k, v in args.items()))
    model, notes = _load(franka_description, {"xacro_args": args})
    _same_model(model, _load(expanded)[0])
    assert model.n_dof == 9 and model.root_link == "world"
    assert tuple(warning_subject(m) for m in notes) == FRANKA
    np.testing.assert_allclose(model.masses[0], 4.970684)  # link 1, Gaz et al. (2019)
    check_against_pinocchio(model, PinocchioRobot(expanded, model), rng)
