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
    assert os.path.realpath(hd.model.robots.share_path("config")) == os.path.realpath(os.path.join(ROOT, "config"))

SEA_JOINTS = int(hd.feedforward.actuators.load_actuators("actuators_sea", hd.load_robot("iiwa14")).elastic.sum())


def _share_path_seen_by(python, cwd, env):
    """(hod_dynamics.__file__, share_path("config"), an actuator file loaded by its shipped name)
    in a fresh interpreter outside the source tree, without AMENT_PREFIX_PATH."""
    env = {k: v for k, v in env.items() if k != "AMENT_PREFIX_PATH"}
    code = ("import hod_dynamics as hd; m = hd.load_robot('iiwa14'); "
            "print(hd.__file__); print(hd.model.robots.share_path('config')); "
            "print(int(hd.feedforward.actuators.load_actuators('actuators_sea', m).elastic.sum()))")
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


def _copy_source(dst):
    """Copy the package's files (those git tracks or would track) to ``dst``, as a clone has them."""
    files = subprocess.run(["git", "ls-files", "--cached", "--others", "--exclude-standard"], cwd=ROOT,
                           capture_output=True, text=True)
    if files.returncode != 0:
        pytest.skip("not a git checkout: cannot list the package's files")
    for rel in files.stdout.split():
        if os.path.isfile(os.path.join(ROOT, rel)):
            os.makedirs(os.path.dirname(os.path.join(dst, rel)), exist_ok=True)
            shutil.copy2(os.path.join(ROOT, rel), os.path.join(dst, rel))
    return dst


@pytest.mark.parametrize("how", [[], ["--symlink-install"]], ids=["copies", "symlink-install"])
def test_colcon_build_layout(tmp_path, how):
    """colcon build, and colcon build --symlink-install (which runs setup.py through a symlink in
    build/): the same share/, executables and configuration."""
    colcon = shutil.which("colcon", path=os.path.dirname(sys.executable)) or shutil.which("colcon")
    if colcon is None:
        pytest.skip("colcon (colcon-core, colcon-ros) is not installed")
    src = tmp_path / "src"
    _copy_source(str(src / "hod_dynamics"))
    run = subprocess.run([colcon, "build", "--base-paths", "src", *how], cwd=tmp_path, capture_output=True,
                         text=True, timeout=300)
    assert run.returncode == 0, run.stdout + run.stderr
    prefix = tmp_path / "install" / "hod_dynamics"
    for rel in SHARE_CONTENT:
        assert (prefix / "share" / "hod_dynamics" / rel).is_file(), rel
    assert (prefix / "share" / "ament_index" / "resource_index" / "packages" / "hod_dynamics").is_file()
    assert (prefix / "lib" / "hod_dynamics" / "hod-dynamics").is_file()
    # the command is on PATH after `source install/setup.bash` (colcon puts <prefix>/bin there)
    setup = tmp_path / "install" / "setup.sh"
    shell = subprocess.run(["sh", "-c", f". {setup} && command -v hod-dynamics && hod-dynamics robots"],
                           env={k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "AMENT_PREFIX_PATH")},
                           capture_output=True, text=True, timeout=120)
    assert shell.returncode == 0, shell.stdout + shell.stderr
    assert shell.stdout.splitlines()[0] == str(prefix / "bin" / "hod-dynamics") and "iiwa14" in shell.stdout
    # the colcon executables run the nodes through hod_dynamics_nodes (signals blocked first)
    site = next(prefix.glob("lib/python*/site-packages"))
    node = subprocess.run([str(prefix / "lib" / "hod_dynamics" / "feedforward_node"), "--ros-args", "-p", "order:=12"],
                          env=dict(os.environ, PYTHONPATH=str(site)), capture_output=True, text=True, timeout=120)
    assert node.returncode == 1 and "[FATAL]" in node.stderr and "parameter order" in node.stderr, node.stderr
    assert sorted(p.name for p in (prefix / "share" / "hod_dynamics" / "config").glob("*")) == \
        sorted(os.path.basename(p) for p in glob.glob(os.path.join(ROOT, "config", "*")))
    if how:  # a symlinked (develop) install: the workspace's setup.sh puts the source tree on the path
        seen = subprocess.run(["sh", "-c", f". {setup} && {sys.executable} -c 'import hod_dynamics; "
                               "print(hod_dynamics.__file__)'"], capture_output=True, text=True, timeout=120, cwd=tmp_path,
                              env={k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "AMENT_PREFIX_PATH")})
        assert os.path.realpath(seen.stdout.strip()).startswith(str(src)), seen.stdout + seen.stderr
        return
    # the installed package finds its configurations in the install's share/, without the ament index
    module, config, elastic = _share_path_seen_by(sys.executable, tmp_path, dict(os.environ, PYTHONPATH=str(site)))
    assert module.startswith(str(site)), module
    assert config == str(prefix / "share" / "hod_dynamics" / "config") and int(elastic) == SEA_JOINTS


def test_package_xml_declares_the_runtime_dependencies():
    import xml.etree.ElementTree as ET

    root = ET.parse(os.path.join(ROOT, "package.xml")).getroot()
    assert root.get("format") == "3" and root.findtext("name") == "hod_dynamics"
    deps = {e.text for e in root.iter("exec_depend")}
    assert {"rclpy", "trajectory_msgs", "sensor_msgs", "std_msgs", "std_srvs", "control_msgs", "action_msgs",
            "python3-numpy",
            "python3-scipy", "python3-yaml", "python3-numba", "urdfdom_py", "xacro", "python3-matplotlib",
            "python3-rosbags-pip"} <= deps
    # only robot_state.launch.py uses robot_state_publisher: not a dependency (the launch file says so)
    assert "robot_state_publisher" not in deps
    assert root.find("export/build_type").text == "ament_python"


def test_the_plain_pip_install_brings_what_the_commands_need():
    """`pip install .` alone brings the compiled kernels (numba), the bag analysis (rosbags,
    pyarrow) and the plots (matplotlib); there is no empty extra."""
    from importlib.metadata import PackageNotFoundError, metadata, requires

    try:
        required = requires("hod_dynamics") or []
    except PackageNotFoundError:
        pytest.skip("hod_dynamics is not pip-installed in this venv")
    core = {r.split(">")[0].split("=")[0].split("<")[0].strip().lower() for r in required if "extra ==" not in r}
    assert {"numba", "rosbags", "pyarrow", "matplotlib", "numpy", "scipy", "pyyaml", "urdf-parser-py"} <= core
    extras = set(metadata("hod_dynamics").get_all("Provides-Extra") or [])
    assert extras == {"ros", "xacro", "identification", "fleet", "test", "all"}, extras


def test_a_plain_pip_install_runs_the_commands_and_a_node_says_what_it_lacks(tmp_path, panda_recording, panda_bags):
    """A venv with `pip install .` and nothing else (no extras, no ROS): demo, info and
    analyze-bag run whole, with their plots; analyze-bags says in one line what the fleet extra
    would bring; a node executable prints one FATAL line naming the [ros] extra and exits with 1. (The numpy backend, so that the test does not wait for numba.)"""
    venv = tmp_path / "venv"
    made = subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(venv)], capture_output=True, text=True)
    assert made.returncode == 0, made.stderr
    python, bindir = str(venv / "bin" / "python"), venv / "bin"
    src = _copy_source(str(tmp_path / "src"))
    install = subprocess.run([sys.executable, "-m", "pip", "--python", python, "install", "-q", src],
                             capture_output=True, text=True, timeout=1200)
    assert install.returncode == 0, install.stdout + install.stderr
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "VIRTUAL_ENV", "AMENT_PREFIX_PATH")}
    env.update(HOD_DYNAMICS_BACKEND="numpy", MPLBACKEND="Agg", PATH=f"{bindir}{os.pathsep}{env.get('PATH', '')}")

    def run(*args, exe="hod-dynamics"):
        return subprocess.run([str(bindir / exe) if "/" not in exe else exe, *args], cwd=tmp_path, env=env,
                              capture_output=True, text=True, timeout=600)

    info = run("info", "solo12")
    assert info.returncode == 0 and "12 moving joints" in info.stdout, info.stdout + info.stderr
    demo = run("demo", "--duration", "0.2", "--order", "2", "--out", "demo")
    assert demo.returncode == 0, demo.stdout + demo.stderr
    assert (tmp_path / "demo" / "demo_torque_jets.png").stat().st_size > 20000
    rec = panda_recording
    bag = run("analyze-bag", str(panda_bags["mcap"]), "--urdf", rec.urdf, "--out", "bag", "--friction", "fit",
              "--no-progress", *rec.locks)
    assert bag.returncode == 0, bag.stdout + bag.stderr
    assert "skipped" not in bag.stdout + bag.stderr and "Traceback" not in bag.stderr
    for name in ("samples.csv", "summary.json", "derived.mcap", "friction.yaml", "tau.png", "tau_dot.png",
                 "tau_ddot.png", "residual.png", "friction.png"):
        assert (tmp_path / "bag" / name).stat().st_size > 0, name
    fleet = run("analyze-bags", str(panda_bags["mcap"]), "--urdf", rec.urdf, "--out", "fleet", "--no-progress")
    assert fleet.returncode == 2 and not (tmp_path / "fleet").exists(), fleet.stdout + fleet.stderr
    assert fleet.stderr.strip().splitlines() == [
        "hod-dynamics: error: analysing many bags needs pandas and Dask distributed: pip install 'dask[distributed]' "
        "pandas (the fleet extra of hod_dynamics)"]
    node = run("--ros-args", "-p", "urdf_path:=iiwa14", exe=str(venv / "lib" / "hod_dynamics" / "feedforward_node"))
    lines = node.stderr.strip().splitlines()
    assert node.returncode == 1 and len(lines) == 1 and not node.stdout, node.stdout + node.stderr
    assert lines[0].startswith("[FATAL] [hod_feedforward]: cannot start: rclpy cannot be imported") and \
        'pip install ".[ros]"' in lines[0] and "ROS 2 installation" in lines[0], lines[0]


def test_bootstrap_reinstalls_only_when_the_installed_source_changed(tmp_path, monkeypatch):
    """tools/bootstrap.py skips `pip install` when the venv's stamp holds the hash of this
    source and the extras the job needs; any change to an installed file, or a job needing
    more extras, reinstalls; tests, benchmarks and docs outside the install do not."""
    import importlib.util

    spec = importlib.util.spec_from_file_location("bootstrap_under_test", os.path.join(ROOT, "tools", "bootstrap.py"))
    boot = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(boot)
    src = _copy_source(str(tmp_path / "src"))
    venv = tmp_path / "src" / ".venv"
    (venv / "bin").mkdir(parents=True)
    os.symlink(sys.executable, venv / "bin" / "python")
    monkeypatch.setattr(boot, "ROOT", src)
    monkeypatch.setattr(boot, "VENV", str(venv))
    monkeypatch.setattr(boot, "PY", str(venv / "bin" / "python"))
    monkeypatch.setattr(boot, "STAMP", str(venv / "hod_dynamics.install"))
    digest = boot.source_hash()
    assert not boot.up_to_date("ros", digest)  # never installed
    (venv / "hod_dynamics.install").write_text(f"{digest} all\n")
    assert boot.up_to_date("ros", digest) and boot.up_to_date("all", digest)
    (venv / "hod_dynamics.install").write_text(f"{digest} ros\n")
    assert boot.up_to_date("ros", digest) and not boot.up_to_date("all", digest)
    with open(os.path.join(src, "test", "test_cli.py"), "a") as fh:   # not installed: no reinstall
        fh.write("\n# a comment\n")
    os.makedirs(os.path.join(src, "hod_dynamics", "__pycache__"), exist_ok=True)
    with open(os.path.join(src, "hod_dynamics", "__pycache__", "x.nbi"), "w") as fh:  # numba's cache
        fh.write("x")
    assert boot.source_hash() == digest
    for changed in (os.path.join("hod_dynamics", "cli", "entry_point.py"), os.path.join("config", "feedforward.yaml")):
        assert os.path.isfile(os.path.join(src, changed)), changed  # an installed file, changed
        with open(os.path.join(src, changed), "a") as fh:
            fh.write("\n# changed\n")
        assert boot.source_hash() != digest, changed
        assert not boot.up_to_date("ros", boot.source_hash())
