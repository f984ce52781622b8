"""The package installs the ROS 2 way: share/ (launch, config, URDFs), the ament index marker and
executables under lib/hod_dynamics, both from `pip install .` (this venv) and from `colcon build`."""

import glob
import os
import shutil
import subprocess
import sys

import pytest

import hod_dynamics as hd

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
SHARE_CONTENT = ["package.xml", "launch/robot_state.launch.py", "urdf/iiwa14.urdf", "urdf/planar_2r.urdf",
                 "config/feedforward.yaml", "config/actuators_sea.yaml", "config/actuators_vsa.yaml"]


def _installed_prefix():
    """The venv prefix when hod_dynamics is pip-installed (not imported from the source tree)."""
    from importlib.metadata import PackageNotFoundError, distribution

    try:
        dist = distribution("hod_dynamics")
    except PackageNotFoundError:
        pytest.skip("hod_dynamics is not pip-installed in this venv (run the README test command)")
    if any(str(f).endswith("direct_url.json") for f in dist.files or []) and \
            '"editable": true' in (dist.read_text("direct_url.json") or ""):
        pytest.skip("hod_dynamics is installed editable: pip installs no data_files then")
    return sys.prefix


def test_config_is_at_the_top_level_beside_launch():
    """config/ beside launch/ as in every ament package, and nowhere else in the source tree."""
    shipped = sorted(os.path.basename(p) for p in glob.glob(os.path.join(ROOT, "config", "*.yaml")))
    assert {"feedforward.yaml", "actuators_sea.yaml", "actuators_vsa.yaml"} <= set(shipped), shipped
    copies = [p for name in shipped for p in glob.glob(os.path.join(ROOT, "hod_dynamics", "**", name), recursive=True)]
    assert not copies, f"a second copy of the configurations: {copies}"
    # run from the source tree, the library finds them there
    assert os.path.realpath(hd.robots.share_path("config")) == os.path.realpath(os.path.join(ROOT, "config"))

SEA_JOINTS = int(hd.actuators.load_actuators("actuators_sea", hd.load_robot("iiwa14")).elastic.sum())


def _share_path_seen_by(python, cwd, env):
    """(hod_dynamics.__file__, share_path("config"), an actuator file loaded by its shipped name)
    in a fresh interpreter outside the source tree, without AMENT_PREFIX_PATH."""
    env = {k: v for k, v in env.items() if k != "AMENT_PREFIX_PATH"}
    code = ("import hod_dynamics as hd; m = hd.load_robot('iiwa14'); "
            "print(hd.__file__); print(hd.robots.share_path('config')); "
            "print(int(hd.actuators.load_actuators('actuators_sea', m).elastic.sum()))")
    run = subprocess.run([python, "-c", code], cwd=cwd, env=env, capture_output=True, text=True, timeout=120)
    assert run.returncode == 0, run.stderr
    return run.stdout.split()


def test_pip_install_finds_config_in_share_without_the_ament_index(tmp_path):
    prefix = _installed_prefix()
    module, config, elastic = _share_path_seen_by(sys.executable, tmp_path, os.environ)
    assert module.startswith(os.path.join(prefix, "lib")), module
    assert os.path.realpath(config) == os.path.realpath(os.path.join(prefix, "share", "hod_dynamics", "config"))
    assert int(elastic) == SEA_JOINTS


def test_pip_install_has_share_and_ament_index_marker(monkeypatch):
    prefix = _installed_prefix()
    ament = pytest.importorskip("ament_index_python.packages", reason="ros-ament-index-python not installed")
    monkeypatch.setenv("AMENT_PREFIX_PATH", prefix)
    share = ament.get_package_share_directory("hod_dynamics")
    assert os.path.realpath(share) == os.path.realpath(os.path.join(prefix, "share", "hod_dynamics"))
    for rel in SHARE_CONTENT:
        assert os.path.isfile(os.path.join(share, rel)), rel
    assert glob.glob(os.path.join(share, "config", "*.yaml")), "no config/*.yaml installed"
    assert "hod_dynamics" in ament.get_packages_with_prefixes()
    # the shipped URDF in share/ is the one the package loads
    assert hd.RobotModel.from_urdf(os.path.join(share, "urdf", "iiwa14.urdf")).n_dof == 7


def test_colcon_build_layout(tmp_path):
    colcon = shutil.which("colcon", path=os.path.dirname(sys.executable)) or shutil.which("colcon")
    if colcon is None:
        pytest.skip("colcon (colcon-core, colcon-ros) is not installed")
    src = tmp_path / "src"
    src.mkdir()
    files = subprocess.run(["git", "ls-files", "--cached", "--others", "--exclude-standard"], cwd=ROOT,
                           capture_output=True, text=True)
    if files.returncode != 0:
        pytest.skip("not a git checkout: cannot list the package's files")
    for rel in files.stdout.split():
        dst = src / "hod_dynamics" / rel
        dst.parent.mkdir(parents=True, exist_ok=True)
        if os.path.isfile(os.path.join(ROOT, rel)):
            shutil.copy2(os.path.join(ROOT, rel), dst)
    run = subprocess.run([colcon, "build", "--base-paths", "src"], cwd=tmp_path, capture_output=True,
                         text=True, timeout=300)
    assert run.returncode == 0, run.stdout + run.stderr
    prefix = tmp_path / "install" / "hod_dynamics"
    for rel in SHARE_CONTENT:
        assert (prefix / "share" / "hod_dynamics" / rel).is_file(), rel
    assert (prefix / "share" / "ament_index" / "resource_index" / "packages" / "hod_dynamics").is_file()
    assert (prefix / "lib" / "hod_dynamics" / "hod-dynamics").is_file()
    # the colcon executables run the nodes through hod_dynamics_nodes (signals blocked first)
    site = next(prefix.glob("lib/python*/site-packages"))
    node = subprocess.run([str(prefix / "lib" / "hod_dynamics" / "feedforward_node"), "--ros-args", "-p", "order:=12"],
                          env=dict(os.environ, PYTHONPATH=str(site)), capture_output=True, text=True, timeout=120)
    assert node.returncode == 1 and "[FATAL]" in node.stderr and "parameter order" in node.stderr, node.stderr
    # the installed package finds its configurations in the install's share/, without the ament index
    assert sorted(p.name for p in (prefix / "share" / "hod_dynamics" / "config").glob("*.yaml")) == \
        sorted(os.path.basename(p) for p in glob.glob(os.path.join(ROOT, "config", "*.yaml")))
    module, config, elastic = _share_path_seen_by(sys.executable, tmp_path, dict(os.environ, PYTHONPATH=str(site)))
    assert module.startswith(str(site)), module
    assert config == str(prefix / "share" / "hod_dynamics" / "config") and int(elastic) == SEA_JOINTS


def test_package_xml_declares_the_runtime_dependencies():
    import xml.etree.ElementTree as ET

    root = ET.parse(os.path.join(ROOT, "package.xml")).getroot()
    assert root.get("format") == "3" and root.findtext("name") == "hod_dynamics"
    deps = {e.text for e in root.iter("exec_depend")}
    assert {"rclpy", "trajectory_msgs", "sensor_msgs", "std_msgs", "std_srvs", "python3-numpy",
            "python3-scipy", "python3-yaml", "python3-numba", "urdfdom_py", "xacro"} <= deps
    assert root.find("export/build_type").text == "ament_python"


def test_numba_is_a_core_dependency_of_the_pip_install():
    """`pip install .` alone brings the compiled kernels (numba in install_requires)."""
    from importlib.metadata import PackageNotFoundError, requires

    try:
        required = requires("hod_dynamics") or []
    except PackageNotFoundError:
        pytest.skip("hod_dynamics is not pip-installed in this venv")
    core = [r for r in required if "extra ==" not in r]
    assert any(r.startswith("numba") for r in core), core
