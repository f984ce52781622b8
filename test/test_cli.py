"""The hod-dynamics command line: the demo (main job), info, and one-line errors."""

import csv
import json
import os
import re
import subprocess
import sys

import numpy as np
import pytest

import hod_dynamics as hd
from hod_dynamics import cli
from hod_dynamics.model import paper_examples as paper
from hod_dynamics.kernels.backend import resolve_backend


def test_demo_writes_csv_and_plot_consistent_with_the_library(tmp_path, capsys):
    assert cli.main(["demo", "--out", str(tmp_path), "--order", "2", "--duration", "0.5", "--rate", "100"]) == 0
    out = capsys.readouterr().out
    assert "peak |tau^(k)| per joint" in out
    with open(tmp_path / "demo_torque_jets.csv") as f:
        rows = list(csv.reader(f))
    header, data = rows[0], np.array(rows[1:], dtype=float)
    assert header[0] == "t [s]" and len(header) == 1 + 7 + 3 * 7 and len(data) == 51
    model = hd.load_robot("iiwa14", gravity=paper.IIWA_GRAVITY)
    t = data[:, 0]
    expected = hd.time_derivatives(model, paper.gaz_trajectory_jet(t, 5), 2,
                                   wrenches={"iiwa_link_7": paper.iiwa_wrench_jet(t, 3)})
    np.testing.assert_allclose(data[:, 8:15], expected[:, 0], rtol=1e-8, atol=1e-8)
    assert os.path.getsize(tmp_path / "demo_torque_jets.png") > 20000


def test_info_lists_joints(capsys):
    assert cli.main(["info", hd.robot_path("iiwa14"), "--lock", "iiwa_joint_7=0.5"]) == 0
    out = capsys.readouterr().out
    assert "iiwa14: 6 moving joints" in out and "iiwa_joint_6" in out


def test_errors_are_one_line_with_exit_code_2(capsys):
    assert cli.main(["info", "/no/such.urdf"]) == 2
    err = capsys.readouterr().err.strip()
    assert err.count("\n") == 0 and "URDF file not found: '/no/such.urdf'" in err
    assert cli.main(["info", hd.robot_path("iiwa14"), "--lock", "iiwa_joint_7"]) == 2
    assert "--lock expects JOINT=VALUE" in capsys.readouterr().err


# -- every failure a user can cause: one line on stderr, exit code 2, no traceback ---------------
def _cli(args, *, block=(), cwd=None):
    """Start the installed command line (``python -m hod_dynamics``) in a new process, with the
    modules ``block`` made unimportable (as if not installed). Returns the Popen."""
    code = "import sys\n"
    code += "".join(f"sys.modules[{name!r}] = None\n" for name in block)
    code += "from hod_dynamics.cli import main\nsys.exit(main(sys.argv[1:]))\n"
    env = dict(os.environ, MPLBACKEND="Agg")
    return subprocess.Popen([sys.executable, "-c", code, *args], cwd=cwd, env=env, text=True,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE)


def _finish(proc):
    out, err = proc.communicate(timeout=240)
    return proc.returncode, out, err


def test_each_user_failure_is_one_line_and_exit_2(tmp_path, panda_recording, panda_bags):
    rec = panda_recording
    a_file = tmp_path / "a_file"
    a_file.write_text("not a folder\n")
    bag = [str(panda_bags["mcap"]), "--urdf", rec.urdf, "--no-progress"] + rec.locks
    cases = {  # what the user did -> words the one line must hold
        ("demo", "--no-plot", "--out", "/dev/null/x"): "--out '/dev/null/x': cannot create the folder",
        ("demo", "--out", str(a_file)): "exists and is not a folder",
        ("analyze-bag", *bag, "--out", str(a_file)): "exists and is not a folder",
        # 10^10 samples: refused up front with the estimate, on any machine
        ("demo", "--rate", "1e7", "--duration", "1000"): "needs about",
        ("demo", "--order", "50"): "argument --order: 50 is outside 0..8",
        ("analyze-bag", *bag, "--out", str(tmp_path / "o"), "--order", "3"): "outside 0..2",
        ("demo", "--rate", "nan"): "--rate: nan must be a finite number > 0",
        ("info", "no_such_robot"): "no shipped robot has that name (shipped: iiwa14, planar_2r",
        ("analyze-bag", str(tmp_path / "missing.mcap"), "--urdf", "iiwa14", "--out", str(tmp_path / "o")): "bag not found",
        ("info", "iiwa14", "--lock", "iiwa_joint_7"): "--lock expects JOINT=VALUE",
        ("frobnicate",): "invalid choice: 'frobnicate'",
        # odd input that used to pass without a word
        ("info", "iiwa14", "--lock", "iiwa_joint_7=0", "--lock", "iiwa_joint_7=1"):
            "--lock iiwa_joint_7 is given twice (0 and 1): give each joint once",
        ("info", "iiwa14", "--lock", "iiwa_joint_7=nan"): "the position must be a finite number",
        ("demo", "--rate", "1e-3", "--out", str(tmp_path / "o")): "gives one sample; the demo needs at least 2",
        ("analyze-bag", *bag, "--out", str(tmp_path / "o"), "--end", "nan"): "--end: nan must be a finite number >= 0",
        ("analyze-bag", *bag, "--out", str(tmp_path / "o"), "--start", "-1"): "--start: -1 must be a finite number >= 0",
        ("analyze-bag", *bag, "--out", str(tmp_path / "o"), "--smoothing", "inf"): "--smoothing: inf must be a finite",
        # identify's numbers refused by the parser, before any bag is read, as analyze-bag's are
        ("identify", *bag, "--out", str(tmp_path / "o"), "--smoothing", "-1"): "--smoothing: -1 must be a finite",
        ("identify", *bag, "--out", str(tmp_path / "o"), "--regularization", "nan"): "--regularization: nan must be a",
    }
    procs = {args: _cli(args) for args in cases}
    for args, words in cases.items():
        code, out, err = _finish(procs[args])
        assert code == 2 and "Traceback" not in err + out, (args, code, err)
        assert err.count("\n") == 1 and err.startswith("hod-dynamics: error: ") and words in err, (args, err)
    assert not (tmp_path / "o").exists()  # a failed command removes the folder it made
    assert a_file.read_text() == "not a folder\n"  # nothing lost


def test_a_failed_command_removes_only_what_it_created(tmp_path):
    """The demo fails while writing (its plot's path is a folder): the CSV it wrote is removed,
    what the folder held before stays; a folder it created is removed with its parents."""
    out = tmp_path / "existing"
    (out / "demo_torque_jets.png").mkdir(parents=True)   # savefig cannot write there
    (out / "mine.txt").write_text("keep me\n")
    code, _, err = _finish(_cli(["demo", "--duration", "0.1", "--out", str(out)]))
    # on an empty kernel cache the compile notice comes first, a line of its own (not an error)
    err = "".join(line for line in err.splitlines(keepends=True) if "compiling kernels" not in line)
    assert code == 2 and "Traceback" not in err and err.count("\n") == 1, err
    assert sorted(os.listdir(out)) == ["demo_torque_jets.png", "mine.txt"]
    assert (out / "mine.txt").read_text() == "keep me\n"
    made = tmp_path / "new" / "deeper"
    code, _, err = _finish(_cli(["analyze-bag", str(tmp_path / "missing.mcap"), "--urdf", "iiwa14",
                                 "--out", str(made)]))
    assert code == 2 and "bag not found" in err
    assert sorted(os.listdir(tmp_path)) == ["existing"]


def test_locking_a_recorded_joint_is_said_in_a_note(tmp_path, panda_recording, panda_bags):
    rec = panda_recording
    code, out, err = _finish(_cli(["analyze-bag", str(panda_bags["mcap"]), "--urdf", rec.urdf, "--out",
                                   str(tmp_path / "bag"), "--no-progress", "--no-plot", "--no-derived-bag",
                                   "--lock", "panda_joint7=0.3", *rec.locks]))
    assert code == 0, err
    note = "--lock panda_joint7: the bag records this joint; its recorded motion is not used, the model holds it at 0.3"
    assert f"note: {note}" in out, out
    assert note in json.loads((tmp_path / "bag" / "summary.json").read_text())["notes"]  # every note printed is there


def test_info_says_how_to_load_a_floating_base_robot(capsys):
    assert cli.main(["info", "solo12"]) == 0
    out = capsys.readouterr().out
    assert "note: solo12 is a floating-base robot" in out and 'load_robot("solo12", floating_base=True)' in out
    assert cli.main(["info", "iiwa14"]) == 0
    assert "floating" not in capsys.readouterr().out


def test_demo_coarse_rate_gets_a_note_and_the_peaks_name_the_joints(tmp_path, capsys):
    assert cli.main(["demo", "--out", str(tmp_path), "--order", "1", "--duration", "2", "--rate", "5",
                     "--no-plot"]) == 0
    out = capsys.readouterr().out
    assert "note: --rate 5 Hz takes fewer than 20 samples per period" in out
    table = out.split("peak |tau^(k)| per joint:\n")[1].splitlines()
    assert table[0].split() == ["joint", "tau", "[N", "m]", "tau'", "[N", "m/s]"]
    assert [row.split()[0] for row in table[1:8]] == list(hd.load_robot("iiwa14").joint_names)


def test_a_closed_pipe_ends_quietly():
    proc = _cli(["info", "iiwa14"])
    proc.stdout.close()  # the reader went away before the first line (`| head -0`)
    err = proc.stderr.read()
    proc.wait(timeout=60)
    assert err == "" and proc.returncode == 141


def test_without_matplotlib_the_plots_are_skipped_and_everything_else_written(tmp_path, panda_recording,
                                                                             panda_bags):
    rec = panda_recording
    demo = _cli(["demo", "--duration", "0.2", "--out", str(tmp_path / "demo")], block=["matplotlib"])
    bag = _cli(["analyze-bag", str(panda_bags["mcap"]), "--urdf", rec.urdf, "--out", str(tmp_path / "bag"),
                "--no-progress", *rec.locks], block=["matplotlib"])
    for proc, folder, written in ((demo, "demo", ["demo_torque_jets.csv"]),
                                  (bag, "bag", ["samples.csv", "summary.json", "derived.mcap"])):
        code, out, err = _finish(proc)
        assert code == 0 and "Traceback" not in err, err
        assert out.count("plots skipped: matplotlib is not installed") == 1, out
        assert sorted(os.listdir(tmp_path / folder)) == sorted(written)


def test_shipped_names_version_and_module_entry_point(capsys, iiwa):
    assert cli.main(["info", "iiwa14"]) == 0
    out = capsys.readouterr().out
    assert "iiwa14: 7 moving joints" in out and "units: position rad" in out
    assert hd.feedforward.actuators.load_actuators("actuators_sea", iiwa).elastic.any()
    assert hd.model.robots.share_path("config", "actuators_sea") == hd.model.robots.share_path("config", "actuators_sea.yaml")
    with pytest.raises(hd.InputError, match="no shipped config file 'nope'; available: .*actuators_sea"):
        hd.model.robots.share_path("config", "nope")
    proc = subprocess.run([sys.executable, "-m", "hod_dynamics", "--version"], capture_output=True, text=True)
    assert proc.returncode == 0 and proc.stdout.strip() == f"hod-dynamics {hd.__version__}"


def test_demo_names_the_backend_and_times_the_warm_run_apart(tmp_path, capsys):
    assert cli.main(["demo", "--out", str(tmp_path), "--order", "1", "--duration", "0.1", "--no-plot"]) == 0
    out = capsys.readouterr().out
    assert f"backend: {resolve_backend()};" in out and "(once per process)" in out
    assert re.search(r"computed tau\^\(0\.\.1\) in [\d.]+ ms warm \([\d.]+ us per sample, median of \d+ runs\)", out)
    header = open(tmp_path / "demo_torque_jets.csv").readline().strip().split(",")
    assert header[:2] == ["t [s]", "q_iiwa_joint_1 [rad]"] and "tau1_iiwa_joint_7 [N m/s]" in header
