"""Launch files and parameter files: structure everywhere, real launch where launch_ros exists."""

import ast
import glob
import os
import re

import pytest
import yaml

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
LAUNCH_FILES = sorted(glob.glob(os.path.join(ROOT, "launch", "*.launch.py")))


def _calls(path, name):
    tree = ast.parse(open(path, encoding="utf-8").read(), path)
    return [n for n in ast.walk(tree) if isinstance(n, ast.Call) and getattr(n.func, "id", "") == name]


def _kw(call, key):
    for kw in call.keywords:
        if kw.arg == key and isinstance(kw.value, ast.Constant):
            return kw.value.value
    return None


def test_expected_launch_files_exist():
    names = {os.path.basename(p) for p in LAUNCH_FILES}
    assert {"feedforward.launch.py", "demo.launch.py", "robot_state.launch.py", "jtc_feedforward.launch.py"} <= names


@pytest.mark.parametrize("path", LAUNCH_FILES, ids=os.path.basename)
def test_launch_file_structure(path):
    """Every argument declared is read, every argument read is declared, each launch file
    checks its command-line arguments and states them in its docstring."""
    tree = ast.parse(open(path, encoding="utf-8").read(), path)
    assert "generate_launch_description" in {n.name for n in tree.body if isinstance(n, ast.FunctionDef)}
    doc = ast.get_docstring(tree)
    assert doc, "launch file without a docstring explaining its arguments"
    declared = {c.args[0].value for name in ("DeclareLaunchArgument", "boolean_argument") for c in _calls(path, name)}
    used = {c.args[0].value for c in _calls(path, "LaunchConfiguration")}
    used |= {c.args[1].value for name in ("flag", "number") for c in _calls(path, name)}
    if os.path.basename(path) == "jtc_feedforward.launch.py":  # passes feedforward.launch.py's on
        assert declared == used == {"controller"}
    else:
        assert declared and used == declared, f"declared {declared}, used {used}"
    assert _calls(path, "check_arguments"), "the launch file does not refuse unknown arguments"
    assert all(f"``{name}``" in doc for name in declared), (declared, doc)


def test_launched_executables_are_installed_entry_points():
    setup = open(os.path.join(ROOT, "setup.py"), encoding="utf-8").read()
    nodes = set(ast.literal_eval(re.search(r"NODES = (\[.*?\])", setup).group(1)))
    for path in LAUNCH_FILES:
        for call in _calls(path, "Node"):
            if _kw(call, "package") == "hod_dynamics":
                assert _kw(call, "executable") in nodes, (path, _kw(call, "executable"))
                assert os.access(os.path.join(ROOT, "scripts", _kw(call, "executable")), os.X_OK)


def test_feedforward_parameter_file_matches_the_node():
    pytest.importorskip("rclpy", reason="rclpy (ros-rclpy wheels) not installed")
    from hod_dynamics.ros.feedforward_node import PARAMETERS

    data = yaml.safe_load(open(os.path.join(ROOT, "config", "feedforward.yaml"), encoding="utf-8"))
    params = data["/**"]["ros__parameters"]
    names = {spec.name for spec in PARAMETERS}
    assert set(params) <= names, set(params) - names


def test_actuator_configs_load_for_the_shipped_robot():
    import hod_dynamics as hd

    model = hd.load_robot("iiwa14")
    paths = glob.glob(os.path.join(ROOT, "config", "actuators_*.yaml"))
    assert len(paths) >= 2, "the shipped actuator configurations are missing"
    for path in paths:
        assert hd.feedforward.actuators.load_actuators(path, model).elastic.any(), path


def test_launch_descriptions_build_where_launch_ros_is_installed(monkeypatch):
    pytest.importorskip("launch_ros", reason="launch_ros is not installed (no ROS 2 system here)")
    import importlib.util

    for path in LAUNCH_FILES:
        spec = importlib.util.spec_from_file_location("launch_under_test", path)
        module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)
        assert module.generate_launch_description().entities


# -- ros2 launch itself, where ros2launch is installed --------------------------------------------
LAUNCH_ERRORS = [  # (launch file, arguments, text of the error line)
    ("feedforward.launch.py", ["config:=nope"], "launch argument config:=nope: no such file"),
    ("feedforward.launch.py", ["urdf:=/nonexistent/robot.urdf"], "launch argument urdf:=/nonexistent/robot.urdf"),
    ("demo.launch.py", ["actuators:=nope"], "launch argument actuators:=nope: no such file"),
    ("feedforward.launch.py", ["urdf:={bad_urdf}"], "required node hod_feedforward exited with code 1"),
    ("feedforward.launch.py", ["urdff:=iiwa14"], "launch argument urdff:=iiwa14: feedforward.launch.py has no "
     "argument 'urdff' (did you mean urdf?); its arguments: urdf, xacro_args, config, actuators, friction, "
     "namespace, use_sim_time"),
    ("demo.launch.py", ["perod:=5.0"], "launch argument perod:=5.0: demo.launch.py has no argument 'perod' "
     "(did you mean period?)"),
    ("demo.launch.py", ["period:=abc"], "launch argument period:=abc: expected a number (s)"),
    ("demo.launch.py", ["use_sim_time:=maybe"], 'Argument "use_sim_time" provided value "maybe" is not valid. '
     "Valid options are: ['true', 'false', 'True', 'False']"),
    ("feedforward.launch.py", ["urdf:=iiwa14", "use_sim_time:=yes"], 'Argument "use_sim_time" provided value "yes"'),
    ("jtc_feedforward.launch.py", ["urdf:=iiwa14", "controler:=arm"], "launch argument controler:=arm: "
     "jtc_feedforward.launch.py has no argument 'controler' (did you mean controller?)"),
]


@pytest.mark.parametrize("launch_file, args, expected", LAUNCH_ERRORS, ids=lambda v: str(v)[:40])
def test_ros2_launch_stops_with_status_1_on_a_bad_argument(launch_file, args, expected, tmp_path):
    """A launch argument naming no file, misspelt, a boolean that is neither true nor false, a
    number that is not one, or a required node that cannot start: ros2 launch prints the
    reason naming the argument and exits 1 (nothing keeps running)."""
    pytest.importorskip("ros2launch", reason="ros2launch is not installed (no ROS 2 system)")
    import subprocess
    import sys

    bad = tmp_path / "bad.urdf"
    bad.write_text("<robot name='x'><link name='a'/><joint name='j' type='revolute'>")
    cmd = [os.path.join(os.path.dirname(sys.executable), "ros2"), "launch", "hod_dynamics", launch_file]
    proc = subprocess.run(cmd + [a.format(bad_urdf=bad) for a in args], capture_output=True, text=True,
                          timeout=120)
    assert proc.returncode == 1, proc.stdout + proc.stderr
    assert expected in proc.stdout + proc.stderr


def test_ros2_interface_page_lists_every_node_parameter_as_the_nodes_declare_them():
    """doc/ros2_interface.md's parameter tables are the nodes' parameter tables (names, types, defaults,
    ranges, units, read-only flags): regenerate them with parameters.markdown_table."""
    pytest.importorskip("rclpy", reason="rclpy (ros-rclpy wheels) not installed")
    from hod_dynamics.ros.demo_trajectory_publisher import PARAMETERS as DEMO
    from hod_dynamics.ros.feedforward_node import PARAMETERS as FEEDFORWARD
    from hod_dynamics.ros.parameters import markdown_table

    readme = open(os.path.join(ROOT, "doc", "ros2_interface.md"), encoding="utf-8").read()
    for specs in (FEEDFORWARD, DEMO):
        assert markdown_table(specs) in readme, markdown_table(specs)


# -- ros2_control examples: joint_trajectory_controller fed by ~/trajectory_with_effort ----------
# Parameter names of joint_trajectory_controller (ros2_controllers, joint_trajectory_controller/src/
# joint_trajectory_controller_parameters.yaml) that the examples use, and its command interface sets.
JTC_PARAMETERS = {"joints", "command_interfaces", "state_interfaces", "allow_nonzero_velocity_at_trajectory_end",
                  "gains"}
JTC_GAINS = {"p", "i", "d", "ff_velocity_scale"}


@pytest.mark.parametrize("name, interfaces", [("jtc_iiwa14_effort", ["effort"]),
                                              ("jtc_iiwa14_position_effort", ["position", "effort"])])
def test_ros2_control_examples_wire_the_controller_jtc_feedforward_launch_feeds(name, interfaces):
    import hod_dynamics as hd

    data = yaml.safe_load(open(os.path.join(ROOT, "config", name + ".yaml"), encoding="utf-8"))
    launch = open(os.path.join(ROOT, "launch", "jtc_feedforward.launch.py"), encoding="utf-8").read()
    controller = re.search(r'"controller", default_value="(\w+)"', launch).group(1)
    manager = data["controller_manager"]["ros__parameters"]
    assert manager[controller]["type"] == "joint_trajectory_controller/JointTrajectoryController"
    params = data[controller]["ros__parameters"]
    assert set(params) <= JTC_PARAMETERS, set(params) - JTC_PARAMETERS
    assert params["joints"] == list(hd.load_robot("iiwa14").joint_names)
    assert params["command_interfaces"] == interfaces
    assert {"position", "velocity"} <= set(params["state_interfaces"])  # required with effort commands
    if interfaces == ["effort"]:  # the PID and the feedforward added to it
        assert set(params["gains"]) == set(params["joints"])
        assert all(set(g) <= JTC_GAINS and g["p"] > 0 and g["ff_velocity_scale"] == 0.0
                   for g in params["gains"].values())
    else:  # no PID: positions forwarded, effort passed through
        assert "gains" not in params


def test_jtc_feedforward_launch_hands_each_trajectory_to_the_controller_topic():
    """ros2 launch jtc_feedforward.launch.py: a trajectory sent to the node reaches
    /joint_trajectory_controller/joint_trajectory once, with its header stamp, the 100 Hz points
    and effort = tau at every point; Ctrl-C (SIGINT to the process group) ends the launch with
    status 0."""
    pytest.importorskip("ros2launch", reason="ros2launch is not installed (no ROS 2 system)")
    import signal
    import subprocess
    import sys
    import threading
    import time

    import numpy as np
    import rclpy
    from rclpy.executors import SingleThreadedExecutor
    from builtin_interfaces.msg import Time
    from trajectory_msgs.msg import JointTrajectory

    import hod_dynamics as hd
    from hod_dynamics.ros.conversions import trajectory_msg

    cmd = [os.path.join(os.path.dirname(sys.executable), "ros2"), "launch", "hod_dynamics",
           "jtc_feedforward.launch.py", "urdf:=iiwa14"]
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, start_new_session=True)
    context = rclpy.Context()
    rclpy.init(context=context)
    node = rclpy.create_node("hod_jtc_probe", context=context)
    got = []
    node.create_subscription(JointTrajectory, "/joint_trajectory_controller/joint_trajectory", got.append, 10)
    pub = node.create_publisher(JointTrajectory, "/hod_feedforward/trajectory", 10)
    executor = SingleThreadedExecutor(context=context)
    executor.add_node(node)
    spinner = threading.Thread(target=executor.spin, daemon=True)
    spinner.start()
    try:
        end = time.monotonic() + 60
        while (pub.get_subscription_count() == 0
               or node.count_publishers("/joint_trajectory_controller/joint_trajectory") == 0):
            assert time.monotonic() < end and proc.poll() is None, "the node did not come up"
            time.sleep(0.05)
        model = hd.load_robot("iiwa14")
        stamp = Time(sec=1_900_000_000, nanosec=7)  # a start time the planner chose
        pub.publish(trajectory_msg(model.joint_names, [0.0, 0.5, 1.0], np.outer([0.0, 0.3, 0.0], np.ones(7)),
                                   stamp=stamp))
        while not got and time.monotonic() < end:
            time.sleep(0.05)
        time.sleep(0.5)  # a second message would arrive meanwhile
    finally:
        os.killpg(proc.pid, signal.SIGINT)
        out, _ = proc.communicate(timeout=60)
        executor.shutdown()
        spinner.join(timeout=10)
        rclpy.try_shutdown(context=context)
    assert len(got) == 1 and len(got[0].points) == 101, out
    msg = got[0]
    assert (msg.header.stamp.sec, msg.header.stamp.nanosec) == (1_900_000_000, 7)
    assert list(msg.joint_names) == list(model.joint_names)
    t = np.array([p.time_from_start.sec + 1e-9 * p.time_from_start.nanosec for p in msg.points])
    np.testing.assert_allclose(t, np.arange(101) / 100.0, rtol=0, atol=1e-9)
    q, qd, qdd, effort = (np.array([getattr(p, f) for p in msg.points])
                          for f in ("positions", "velocities", "accelerations", "effort"))
    np.testing.assert_allclose(effort, hd.inverse_dynamics(model, q, qd, qdd), rtol=1e-9, atol=1e-9)
    assert abs(q[50, 0] - 0.3) < 1e-12 and np.abs(qd[[0, -1]]).max() < 1e-12  # through the waypoint, at rest
    assert proc.returncode == 0 and "process has finished cleanly" in out, out
