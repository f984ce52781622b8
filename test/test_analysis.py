"""analyze-bag end to end: model torques from a recorded (noisy) Panda motion against the truth."""

import csv
import json

import numpy as np
import pytest

from hod_dynamics.recordings import joint_fit
from hod_dynamics.replay import analysis, report
from hod_dynamics import cli
from hod_dynamics.recordings.bag import read_joint_states
from hod_dynamics.errors import InputError

pytest.importorskip("rosbags")


def _columns(path):
    """{column name without a unit suffix: values} of a CSV file."""
    with open(path) as fh:
        rows = list(csv.reader(fh))
    return {name.split(" ")[0]: np.array([float(r[i]) for r in rows[1:]]) for i, name in enumerate(rows[0])}


def _relative_rms(cols, prefix, truth, names):
    """Per joint RMS(model - truth) / range(truth), in %."""
    model = np.column_stack([cols[f"{prefix}_{j}"] for j in names])
    return 100 * np.sqrt(np.mean((model - truth) ** 2, axis=0)) / np.ptp(truth, axis=0)


@pytest.mark.parametrize("storage", ["mcap", "sqlite3"])
def test_model_torques_match_the_truth_for_both_storage_formats(storage, panda_recording, panda_bags,
                                                               tmp_path, capsys):
    rec = panda_recording
    out = tmp_path / "out"
    code = cli.main(["analyze-bag", str(panda_bags[storage]), "--urdf", rec.urdf, "--out", str(out),
                     "--no-plot", "--no-progress"] + rec.locks)
    assert code == 0
    assert "panda_joint7" in capsys.readouterr().out
    cols = _columns(out / "samples.csv")
    names = rec.model.joint_names
    np.testing.assert_allclose(cols["t"], rec.t, atol=1e-9)
    tau_err = _relative_rms(cols, "tau0", rec.taujet[:, 0], names)
    tau_dot_err = _relative_rms(cols, "tau1", rec.taujet[:, 1], names)
    assert tau_err.max() < 1.0 and tau_dot_err.max() < 5.0
    # the measured efforts are recorded exactly; the residual is the effort noise (0.2 N m)
    effort = np.column_stack([cols[f"effort_{j}"] for j in names])
    np.testing.assert_allclose(effort, rec.effort, rtol=1e-9, atol=1e-9)
    summary = json.loads((out / "summary.json").read_text())
    assert summary["n_samples"] == len(rec.t) and summary["order"] == 2
    assert set(summary["joints"]) == set(names)   # the extra 'gripper' joint is ignored
    rms = np.array([summary["joints"][j]["residual_rms"] for j in names])
    assert np.all((rms > 0.17) & (rms < 0.25)), rms


def test_plots_and_window_selection(panda_recording, panda_bags, tmp_path):
    rec = panda_recording
    out = tmp_path / "out"
    assert cli.main(["analyze-bag", str(panda_bags["mcap"]), "--urdf", rec.urdf, "--out", str(out),
                     "--start", "1.0", "--end", "2.5", "--order", "1", "--no-derived-bag",
                     "--no-progress"] + rec.locks) == 0
    t = _columns(out / "samples.csv")["t"]
    assert t[0] >= 1.0 and t[-1] <= 2.5 and len(t) == 751
    for name in ("tau", "tau_dot", "residual"):
        assert (out / f"{name}.png").stat().st_size > 20000
    assert not (out / "tau_ddot.png").exists() and not (out / "derived.mcap").exists()


def test_sea_motor_positions_are_q_plus_tau_over_stiffness(panda_recording, panda_bags, tmp_path):
    rec = panda_recording
    config = tmp_path / "sea.yaml"
    config.write_text("actuators:\n  panda_joint2: {type: sea, stiffness: 2000.0, motor_inertia: 0.3,"
                      " motor_damping: 1.0, gear_ratio: 100}\n")
    out = tmp_path / "out"
    assert cli.main(["analyze-bag", str(panda_bags["mcap"]), "--urdf", rec.urdf, "--out", str(out),
                     "--actuators", str(config), "--no-plot", "--no-derived-bag", "--no-progress"]
                    + rec.locks) == 0
    cols = _columns(out / "samples.csv")
    np.testing.assert_allclose(cols["theta_panda_joint2"],
                               cols["qfit_panda_joint2"] + cols["tau0_panda_joint2"] / 2000.0, atol=1e-9)
    np.testing.assert_allclose(cols["theta_panda_joint1"], cols["qfit_panda_joint1"], atol=1e-12)
    np.testing.assert_allclose(cols["u_panda_joint1"], cols["tau0_panda_joint1"], atol=1e-9)


def test_planned_trajectory_gives_the_tracking_error(panda_recording, panda, tmp_path):
    rec = panda_recording
    tp = np.arange(0.0, 6.001, 0.01)
    planned = ("/plan", int(rec.stamps_ns[0]), tp, np.hstack([rec.qjet(tp, 1)[:, 0], np.zeros((len(tp), 1))]))
    bag = rec.write(tmp_path / "with_plan", "mcap", planned=planned)
    out = tmp_path / "out"
    assert cli.main(["analyze-bag", str(bag), "--urdf", rec.urdf, "--out", str(out), "--trajectory-topic",
                     "/plan", "--no-plot", "--no-derived-bag", "--no-progress"] + rec.locks) == 0
    summary = json.loads((out / "summary.json").read_text())
    tracking = np.array([summary["joints"][j]["tracking_rms"] for j in panda.joint_names])
    # measured = truth + 1e-4 rad noise; linear interpolation of the 100 Hz plan adds < 1.5e-4 rad
    assert np.all(tracking > 0.9e-4) and np.all(tracking < 1.8e-4), tracking


def test_analyze_rejects_bad_input(panda_recording, panda_bags, iiwa):
    states = read_joint_states(panda_bags["mcap"])
    with pytest.raises(InputError, match="order must be 0, 1 or 2"):
        analysis.analyze_joint_states(panda_recording.model, states, order=3)
    with pytest.raises(InputError, match=r"joints \['iiwa_joint_1'.*of the model are in no message"):
        analysis.analyze_joint_states(iiwa, states)
    with pytest.raises(InputError, match="only 5 joint state samples"):
        analysis.analyze_joint_states(panda_recording.model, states.select(0.0, 0.009))


def test_segments_split_at_long_gaps_only():
    t = np.r_[np.arange(100), np.arange(103, 200), np.arange(250, 400), np.arange(411, 420)] * 0.005
    # the 3-period hole is bridged, the 50-period gap splits, the 9-sample tail joins its neighbour
    assert joint_fit.fit_segments(t, 0.005) == [(0, 197), (197, 356)]


def test_columns_of_samples_csv_may_carry_units(panda_recording, panda_bags, tmp_path):
    """samples.csv is read by column name; a unit after a space (``tau0_j [N m]``) is allowed."""
    out = tmp_path / "out"
    rec = panda_recording
    assert cli.main(["analyze-bag", str(panda_bags["mcap"]), "--urdf", rec.urdf, "--out", str(out), "--end", "0.5",
                     "--no-plot", "--no-derived-bag", "--no-progress"] + rec.locks) == 0
    cols = _columns(out / "samples.csv")
    for j in rec.model.joint_names:
        for prefix in ("tau0", "tau1", "tau2", "effort", "residual"):
            assert f"{prefix}_{j}" in cols
    np.testing.assert_allclose(cols[f"residual_{j}"], cols[f"tau0_{j}"] - cols[f"effort_{j}"], atol=1e-8)


def test_a_continuous_joint_reported_wrapped_is_unwrapped_before_the_fit():
    import hod_dynamics as hd
    from hod_dynamics.recordings.bag import JointStates
    from test_friction import URDF

    model = hd.RobotModel.from_urdf(URDF.format(dyn1="", dyn2="", dyn3=""))
    t = np.arange(2000) / 500.0
    q = np.column_stack([0.3 * np.sin(t), 1.5 * t, 0.1 + 0.05 * np.sin(2 * t)])   # j2 turns through 3 pi
    wrapped = q.copy()
    wrapped[:, 1] = np.angle(np.exp(1j * q[:, 1]))
    stamps = 10**18 + np.round(t * 1e9).astype(np.int64)
    states = JointStates("/js", model.joint_names, int(stamps[0]), stamps, t, wrapped, None, None)
    result = analysis.analyze_joint_states(model, states, order=1, smoothing=0.0)
    np.testing.assert_allclose(result.result.qjet[:, 1, 1], 1.5, atol=1e-6)
    np.testing.assert_allclose(result.position[:, 1], q[:, 1], atol=1e-12)


def test_samples_csv_without_pyarrow_holds_the_same_numbers(panda_recording, panda_bags, tmp_path, monkeypatch):
    """A ROS installation may lack pyarrow (rosdep has no key for it): Python's writer then
    writes the same doubles (every number reads back bit for bit)."""
    import sys

    rec = panda_recording
    states = read_joint_states(str(panda_bags["mcap"]), None).select(0.0, 1.0)
    result = analysis.analyze_joint_states(rec.model, states, order=2)
    arrow = report.write_samples_csv(result, str(tmp_path / "arrow.csv"), rows_per_write=100)
    monkeypatch.setitem(sys.modules, "pyarrow", None)  # import pyarrow raises ImportError
    plain = report.write_samples_csv(result, str(tmp_path / "plain.csv"), rows_per_write=100)
    with open(arrow) as a, open(plain) as p:
        rows_a, rows_p = list(csv.reader(a)), list(csv.reader(p))
    assert rows_a[0] == rows_p[0] and len(rows_a) == len(rows_p) == len(result.t) + 1
    values_a = np.array(rows_a[1:], dtype=float)
    values_p = np.array(rows_p[1:], dtype=float)
    assert np.array_equal(values_a, values_p, equal_nan=True)


def test_the_error_table_names_the_end_zone_of_every_order(panda_recording, panda_bags, tmp_path, capsys):
    """Each order's smoothing has its own width, so its own end zone: the header of the printed
    table gives each, as summary.json does."""
    rec = panda_recording
    out = tmp_path / "out"
    assert cli.main(["analyze-bag", str(panda_bags["mcap"]), "--urdf", rec.urdf, "--out", str(out), "--no-plot",
                     "--no-derived-bag", "--no-samples-csv", "--no-progress"] + rec.locks) == 0
    (header,) = [line for line in capsys.readouterr().out.splitlines() if line.startswith("error estimate of")]
    zones = json.loads((out / "summary.json").read_text())["error_estimate"]["end_zone"]
    assert len({f"{z:.2g}" for z in zones.values()}) == 3, zones    # the orders' zones differ here
    for k in range(3):
        assert f"tau{k} {zones[f'tau{k}']:.2g} s" in header, (header, zones)


def test_friction_given_as_yaml_text_is_labelled_given(panda_recording, panda_bags, tmp_path):
    """friction_source: the file's name for a file, "given" for YAML text (not the text itself)."""
    rec = panda_recording
    states = read_joint_states(str(panda_bags["mcap"]), None).select(0.0, 1.0)
    text = "friction: {panda_joint1: {coulomb: 1.5, viscous: 0.2, offset: 0.0}}"
    path = tmp_path / "arm_friction.yaml"
    path.write_text(text + "\n")
    for friction, label in ((text, "given"), (str(path), "arm_friction.yaml")):
        result = analysis.analyze_joint_states(rec.model, states, order=0, friction=friction, error_estimate=False)
        assert result.friction_source == label and result.summary()["friction"]["source"] == label
        assert result.friction.coulomb[0] == 1.5


def test_every_printed_note_is_in_summary_json_library_warnings_too(panda_recording, tmp_path, capsys):
    """A driver that publishes NaN for the effort of a joint without a torque sensor: the
    library warnings this raises are printed as notes, and summary.json's notes are the printed
    notes, in order."""
    from hod_dynamics.recordings.bag_writer import write_joint_states

    rec = panda_recording
    effort = rec.effort.copy()
    effort[:, 6] = np.nan
    bag = write_joint_states(tmp_path / "nan_effort", rec.stamps_ns, list(rec.model.joint_names), rec.position,
                             None, effort)
    out = tmp_path / "out"
    assert cli.main(["analyze-bag", str(bag), "--urdf", rec.urdf, "--out", str(out), "--no-plot", "--no-derived-bag",
                     "--no-samples-csv", "--no-progress"] + rec.locks) == 0
    printed = [line[len("note: "):] for line in capsys.readouterr().out.splitlines() if line.startswith("note: ")]
    assert any("Warning: " in note for note in printed), printed
    assert json.loads((out / "summary.json").read_text())["notes"] == printed
