"""Excitation trajectories: at rest at both ends, within the limits as the waypoint spline the
robot will follow (loaded as the demo publisher loads it), better conditioned than random series."""

import numpy as np
import pytest
import yaml

import hod_dynamics as hd
from hod_dynamics import cli
from hod_dynamics.errors import InputError
from hod_dynamics.identification.excitation import _series_jet, optimise_excitation, write_waypoints


def test_series_derivatives_are_exact_and_the_motion_starts_and_ends_at_rest(iiwa, rng):
    ex = optimise_excitation(iiwa, duration=10.0, harmonics=4, starts=2, iterations=0, seed=1)
    t0, h = 1.3, 1e-4
    jet = ex.jet([t0], 4)[0]
    fd = (ex.jet([t0 + h], 3)[0] - ex.jet([t0 - h], 3)[0]) / (2 * h)
    np.testing.assert_allclose(fd, jet[1:], rtol=0, atol=1e-6 * np.abs(jet).max())
    ends = ex.jet([0.0, ex.period, ex.duration], 5)
    np.testing.assert_allclose(ends[:, 1:], 0.0, atol=1e-9)
    np.testing.assert_allclose(ends[:, 0], ends[[0, 0, 0], 0], atol=1e-12)


def test_optimised_trajectory_file_keeps_the_limits_and_beats_random_series(iiwa, tmp_path):
    ex = optimise_excitation(iiwa, duration=10.0, harmonics=4, starts=6, iterations=4, seed=0)
    assert ex.random_condition_number / ex.condition_number > 2.0
    path = write_waypoints(ex, str(tmp_path / "excite.yaml"), robot="iiwa14")
    traj = hd.load_trajectory(path)                      # as the demo trajectory publisher loads it
    assert traj.joint_names == iiwa.joint_names and traj.end == pytest.approx(10.0)
    report = traj.check_limits(iiwa, dt=0.002)           # positions, velocities, efforts of the URDF
    assert report.ok, str(report)
    t = np.linspace(0.0, 10.0, 5001)
    jet = traj.jet(t, 2)
    assert np.all(np.abs(jet[:, 2]) <= ex.limits[:, 3])  # accelerations
    np.testing.assert_allclose(jet[:, 0], ex.jet(t, 1)[:, 0], atol=1e-5)   # the spline follows the series


def test_command_writes_a_waypoint_file_and_reports_the_conditioning(tmp_path, capsys):
    out = tmp_path / "traj.yaml"
    assert cli.main(["excite", "--urdf", "planar_2r", "--out", str(out), "--duration", "6", "--harmonics", "3",
                     "--no-progress"]) == 0
    printed = capsys.readouterr().out
    assert "condition number of the base regressor" in printed and f"wrote {out}" in printed
    data = yaml.safe_load(out.read_text())
    assert data["joint_names"] == ["joint1", "joint2"] and data["times"][-1] == pytest.approx(6.0)
    assert cli.main(["excite", "--urdf", "planar_2r", "--out", str(out), "--duration", "7", "--period", "2",
                     "--no-progress"]) == 2
    assert "not a whole number of periods" in capsys.readouterr().err


def test_bad_arguments_are_named(iiwa):
    with pytest.raises(InputError, match="harmonics must be an integer >= 3, got 2: four coefficients"):
        optimise_excitation(iiwa, harmonics=2)
    with pytest.raises(InputError, match="takes fixed-base models"):
        optimise_excitation(hd.load_robot("solo12", floating_base=True))
