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
    assert {"feedforward.launch.py", "demo.launch.py", "robot_state.launch.py"} <= names


@pytest.mark.parametrize("path", LAUNCH_FILES, ids=os.path.basename)
def test_launch_file_structure(path):
    tree = ast.parse(open(path, encoding="utf-8").read(), path)
    assert "generate_launch_description" in {n.name for n in tree.body if isinstance(n, ast.FunctionDef)}
    assert ast.get_docstring(tree), "launch file without a docstring explaining its arguments"
    declared = {c.args[0].value for c in _calls(path, "DeclareLaunchArgument")}
    used = {c.args[0].value for c in _calls(path, "LaunchConfiguration")}
    assert declared and used == declared, f"declared {declared}, used {used}"


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
        assert hd.actuators.load_actuators(path, model).elastic.any(), path


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
]


@pytest.mark.parametrize("launch_file, args, expected", LAUNCH_ERRORS, ids=lambda v: str(v)[:40])
def test_ros2_launch_stops_with_status_1_on_a_bad_argument(launch_file, args, expected, tmp_path):
    """A launch argument naming no file, or a required node that cannot start: ros2 launch
    prints the reason and exits 1 (nothing keeps running)."""
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
