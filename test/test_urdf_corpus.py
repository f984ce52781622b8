"""Real robot descriptions against Pinocchio: every file loads (strict by default, no false
alarm) and gives Pinocchio's tau, M, first-order partials and tau_dot to 1e-10.

The corpus: every URDF of example-robot-data that Pinocchio parses (read from the installed
package), the files of ``data/urdf_corpus`` (twenty public repositories, see SOURCES.md), two
real xacro descriptions, and variants derived here from real files: a byte-order mark, CR LF
line ends, blank lines before ``<?xml``, a default XML namespace, and identified-style
inertias that are not positive semi-definite (the KUKA LWR of bullet3 with two link inertias
replaced; Gaz et al.'s identified LWR4+ file is not public in a form we could cite). Two
samples per file keep the whole corpus to a few seconds.
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
    with open(corpus_path(name), encoding="utf-8") as f:
        return f.read()


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


def _with_limits(text):
    """urdfdom refuses revolute joints without <limit> (Drake reads them as unlimited, as we do):
    the oracle gets the same file with limits, which do not enter the dynamics."""
    return re.sub(r'(<joint name="[^"]+" type="revolute">)', r'\1<limit effort="0" velocity="0"/>', text)


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


# id -> (source for us, source for Pinocchio, from_urdf keyword arguments, expected n_dof or None)
CASES = {
    "drake/kuka_iiwa_robot": (corpus_path("drake/kuka_iiwa_robot.urdf"),
                              _with_limits(corpus_text("drake/kuka_iiwa_robot.urdf")), {}, 7),
    "drake/double_pendulum (default xmlns, <frame>)": (corpus_path("drake/double_pendulum.urdf"), None, {}, 2),
    "bullet3/kuka_lwr": (corpus_path("bullet3/kuka_lwr.urdf"), None, {}, 7),
    "pinocchio/iiwa2": (corpus_path("pinocchio/iiwa2.urdf"), None, {}, 7),
    "urdfdom/full_robot_v1_0 (to tool_link)": (corpus_path("urdfdom/full_robot_v1_0.urdf"), None,
                                               {"tip_links": ["tool_link"]}, 3),
    "kdl_parser/testInertiaRPYmodel1": (corpus_path("kdl_parser/testInertiaRPYmodel1.urdf"), None, {}, 1),
    "sdformat/urdf_joint_parameters": (corpus_path("sdformat/urdf_joint_parameters.urdf"), None, {}, 5),
    "sdformat/force_torque_sensor": (corpus_path("sdformat/force_torque_sensor.urdf"), None, {}, 2),
    "urdfdom/one_link (0 DoF)": (corpus_path("urdfdom/one_link.urdf"), None, {}, 0),
    "urdfdom/branching_robot (0 DoF)": (corpus_path("urdfdom/branching_robot.urdf"), None, {}, 0),
    "robot_state_publisher/mimic_joint (0 DoF)": (corpus_path("robot_state_publisher/mimic_joint.urdf"), None, {}, 0),
    "variant: byte-order mark": ("\ufeff" + corpus_text("pinocchio/iiwa2.urdf"),
                                 corpus_text("pinocchio/iiwa2.urdf"), {}, 7),
    "variant: CR LF": (corpus_text("bullet3/kuka_lwr.urdf").replace("\n", "\r\n"),
                       corpus_text("bullet3/kuka_lwr.urdf"), {}, 7),
    "variant: blank lines before <?xml": ("\n\n    " + corpus_text("sdformat/urdf_joint_parameters.urdf"),
                                          corpus_text("sdformat/urdf_joint_parameters.urdf"), {}, 5),
    "variant: identified inertias (not PSD)": (_identified_lwr(), _identified_lwr(), {}, 7),
}
# Robot descriptions as vendors and users publish them (SOURCES.md): file -> expected n_dof.
# Mimic joints are independent joints here and in Pinocchio's default model.
PUBLISHED = {
    "unitree_ros/z1.urdf": 6,  # Unitree Z1 arm: <dynamics damping friction>, transmissions
    "legged_gym/cassie.urdf": 12,  # Agility Cassie as legged_gym ships it (a non-PSD base inertia)
    "ros2_kortex/gen3_lite.urdf": 10,  # Kinova Gen3 lite: empty material names, zero axis on fixed joints
    "ros2_kortex/GEN3-6DOF_NO-VISION_URDF_ARM_V01.urdf": 6,  # Kinova export: CR LF, version="1.0"
    "turtlebot3/turtlebot3_burger.urdf": 2,  # ROBOTIS TurtleBot3: wheels without <limit>, xmlns:xacro
    "SO-ARM100/so100.urdf": 6,  # The Robot Studio's SO-100 (LeRobot): several <visual>, a link and a joint named alike
    "moveit_resources/panda.urdf": 9,  # Franka Panda as MoveIt ships it: franka <dynamics D K mu_*>, <mimic joint> only
    "abb/irb120.urdf": 6,  # ROS-Industrial ABB IRB 120: kinematics only (no <inertial>), <material> in <collision>
    "universal_robot/ur5_robot.urdf": 6,  # ROS-Industrial UR5 (2015): <transmission> with a bare <joint>
    "motoman/sia5d.urdf": 7,  # ROS-Industrial Motoman SIA5D: kinematics only, 7 joints
    "kuka_experimental/kr16_2.urdf": 6,  # ROS-Industrial KUKA KR 16-2: placeholder inertias as published
    "kuka_experimental/lbr_iiwa_14_r820.urdf": 7,  # ROS-Industrial KUKA LBR iiwa 14: kinematics only
    "fanuc/lrmate200id.urdf": 6,  # ROS-Industrial Fanuc LR Mate 200iD: kinematics only
    "ros2_kortex/GEN3_URDF_V12_vision.urdf": 7,  # Kinova Gen3 7-DoF export: CR LF, rpy of 1e-36
}
CASES.update({f"{path[:-5]}": (corpus_path(path), None, {}, n) for path, n in PUBLISHED.items()})
# Real files whose link inertias are not positive semi-definite: a warning naming each link.
NOT_PSD = {
    "variant: identified inertias (not PSD)": ["kuka_arm_3_link", "kuka_arm_5_link"],
    "legged_gym/cassie": ["base"],  # ixz = 0.015 with principal moments of 1e-5
}


def _case(case_id):
    ours, oracle, kwargs, n = CASES[case_id]
    oracle = ours if oracle is None else oracle
    return ours, oracle, kwargs, n


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


def _load(source, kwargs):
    """Our model, with every HodDynamicsWarning of the reading."""
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        model = hd.RobotModel.from_urdf(source, **kwargs)
    return model, [str(w.message) for w in caught if issubclass(w.category, hd.HodDynamicsWarning)]


@pytest.mark.parametrize("case_id", sorted(CASES))
def test_corpus_file_agrees_with_pinocchio(case_id, rng):
    ours, oracle, kwargs, n = _case(case_id)
    model, notes = _load(ours, kwargs)
    assert model.n_dof == n
    links = NOT_PSD.get(case_id, [])
    assert len(notes) == len(links) and all("not positive semi-definite (principal moments" in m for m in notes)
    assert all(f"link '{link}'" in note for link, note in zip(links, notes))
    pinrobot = PinocchioRobot(oracle, model)
    if n == 0:
        check_zero_dof(model, pinrobot)
    else:
        check_against_pinocchio(model, pinrobot, rng)


@pytest.mark.parametrize("path", _erd_urdfs(), ids=lambda p: os.path.relpath(p, erd_dir()))
def test_every_example_robot_data_urdf_agrees_with_pinocchio(path, rng):
    """Strict reading raises no false alarm on any of them; the non-PSD link inertias of
    romeo_laas_small and TIAGo (real files) give warnings and Pinocchio's numbers."""
    model, notes = _load(path, {})
    assert all("rotational inertia is not positive semi-definite" in m for m in notes), notes
    if os.path.basename(path) in ("romeo_laas_small.urdf", "tiago.urdf", "tiago_dual.urdf", "tiago_no_hand.urdf"):
        assert notes
    pinrobot = PinocchioRobot(path, model)
    if model.n_dof == 0:
        check_zero_dof(model, pinrobot)
    else:
        check_against_pinocchio(model, pinrobot, rng)


def test_namespaced_erd_panda_loads_like_the_original(rng):
    """A default XML namespace on <robot> (Drake's 2017 PR2 has one): same model."""
    path = os.path.join(erd_dir(), "panda_description", "urdf", "panda.urdf")
    text = open(path, encoding="utf-8").read()
    spaced = re.sub(r"<robot ", '<robot xmlns="http://drake.mit.edu" xmlns:drake="http://drake.mit.edu" ', text, count=1)
    assert spaced != text
    a, b = hd.RobotModel.from_urdf(text), hd.RobotModel.from_urdf(spaced)
    assert a.joint_names == b.joint_names
    np.testing.assert_array_equal(a.inertias, b.inertias)
    np.testing.assert_array_equal(a.references, b.references)


# -- xacro -------------------------------------------------------------------------------------
@pytest.fixture
def rrbot_package(tmp_path, monkeypatch):
    """ros2_control_demos' rrbot files installed as the package its $(find ...) names, in an
    ament index of its own (prefix/share/ament_index/resource_index/packages/<name>)."""
    pytest.importorskip("xacro", reason="xacro (the [xacro] extra) not installed")
    pytest.importorskip("ament_index_python", reason="ament_index_python not installed")
    share = tmp_path / "share" / XACRO_PACKAGE
    for sub in ("urdf", "ros2_control"):
        (share / sub).mkdir(parents=True)
        for path in glob.glob(corpus_path(f"ros2_control_demos/{sub}/*")):
            (share / sub / os.path.basename(path)).write_text(open(path, encoding="utf-8").read())
    marker = tmp_path / "share" / "ament_index" / "resource_index" / "packages" / XACRO_PACKAGE
    marker.parent.mkdir(parents=True)
    marker.write_text("")
    monkeypatch.setenv("AMENT_PREFIX_PATH", os.pathsep.join(filter(None, [str(tmp_path), os.environ.get("AMENT_PREFIX_PATH")])))
    return share / "urdf" / "rrbot.urdf.xacro"


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
    model = hd.RobotModel.from_urdf(path)
    _same_model(model, hd.RobotModel.from_urdf(expanded))
    assert model.n_dof == 8 and "gripper_extension" in model.joint_names
    check_against_pinocchio(model, PinocchioRobot(expanded, model), rng)


def test_xacro_errors_name_the_file_and_the_cause(rrbot_package, monkeypatch, tmp_path):
    monkeypatch.setenv("AMENT_PREFIX_PATH", str(tmp_path / "nowhere"))
    with pytest.raises(hd.ModelError, match=r"xacro could not expand '.*rrbot.urdf.xacro'.*ros2_control_demo_example_1"):
        hd.RobotModel.from_urdf(rrbot_package)


def test_missing_xacro_package_is_named(monkeypatch):
    monkeypatch.setitem(sys.modules, "xacro", None)  # import xacro now raises ImportError
    with pytest.raises(hd.ModelError, match=r"needs the 'xacro' package \(pip install 'hod_dynamics\[xacro\]'"):
        hd.RobotModel.from_urdf(corpus_path("urdf_tutorial/08-macroed.urdf.xacro"))
