"""Plausible identification against known truths: bounds that hold, the weight chosen by
cross-validation (its fold errors rebuilt by Newton-Euler), the prior column held out, the
determinacy intervals (their ends are bodies that fit the data and the bounds; a point mass
moved along a joint axis stays inside them), and the acceptance: on a truth whose bodies match
their geometry, the links the data determines are found within 10 % and 1 cm."""

import contextlib
import io
import json
import xml.etree.ElementTree as ET

import numpy as np
import pytest

import hod_dynamics as hd
from hod_dynamics import cli
from hod_dynamics.algorithms.friction import fit_friction
from hod_dynamics.errors import InputError
from hod_dynamics.identification.bounds import plausibility_bounds
from hod_dynamics.identification.determinacy import CHI2, determinacy
from hod_dynamics.identification.fit import identify, segment_edges
from hod_dynamics.identification.report import residuals
from hod_dynamics.model.inertia import com_form, parameters_from_inertia, pseudo_inertia
from hod_dynamics.model.spatial import body_inertia
from hod_dynamics.recordings.bag import read_joint_states
from hod_dynamics.replay.analysis import analyze_joint_states
from recordings import Recording, perturbed_model

pytest.importorskip("rosbags")
pytest.importorskip("cvxpy")

PRIOR = hd.load_robot("iiwa14")
TRUTH = perturbed_model(PRIOR, 0.3, seed=5)


@pytest.fixture(scope="module")
def analyses():
    """Two 25 s recordings of the perturbed iiwa (other excitations), analysed with the prior."""
    return [analyze_joint_states(PRIOR, Recording(seed=s, model=TRUTH).states(), order=0) for s in (1, 2)]


@pytest.fixture(scope="module")
def bounded(analyses):
    """The fit of recording 1 with the default bounds (joint-origin ellipsoids, masses x/÷ 2)."""
    bounds = plausibility_bounds(PRIOR, hd.robot_path("iiwa14"))
    return identify(PRIOR, analyses[:1], bounds=bounds, folds=3, weights=(1.0, 100.0), names=["run1"])


def _whitened_rss(model, friction, analysis, noise, mask=None):
    """Sum over the usable samples of ((Newton-Euler torque - effort) / noise)^2."""
    q = analysis.result.qjet
    e = (hd.inverse_dynamics(model, q[:, 0], q[:, 1], q[:, 2], friction=friction) - analysis.effort) / noise
    ok = np.isfinite(e) & ~segment_edges(analysis)[:, None]
    if mask is not None:
        ok &= mask[:, None]
    return float(np.sum(e[ok] ** 2)), int(ok.sum())


def test_tight_bounds_hold_and_are_reported(analyses):
    """Bounds that bind: link 2 may weigh at most 60 % of its truth, link 4's ellipsoid is
    halved, and the total is fixed within 2 %: the fit keeps every one (checked on the
    identified parameters: masses, com_form, tr(J Q_hat)), and the report flags them."""
    truth = hd.inertial_parameters(TRUTH)
    total = truth[:, 0].sum()
    loose = plausibility_bounds(PRIOR, hd.robot_path("iiwa14"))
    ellipsoids = list(loose.ellipsoids)
    ellipsoids[3] = ellipsoids[3].scaled(0.5)
    bounds = plausibility_bounds(PRIOR, ellipsoids=ellipsoids, mass_bounds={"iiwa_link_2": (0.3, 0.6 * truth[1, 0])},
                                 total_mass=total)
    result = identify(PRIOR, analyses[:1], bounds=bounds, regularization=10.0)
    m = result.parameters[:, 0]
    assert np.all(m >= bounds.mass[:, 0] - 1e-6) and np.all(m <= bounds.mass[:, 1] + 1e-6)
    assert m[1] == pytest.approx(0.6 * truth[1, 0], rel=1e-4)            # pressed against its bound
    assert 0.98 * total - 1e-6 <= m.sum() <= 1.02 * total + 1e-6
    for b, e in enumerate(ellipsoids):
        assert np.trace(pseudo_inertia(result.parameters[b]) @ e.matrix) >= -1e-6 * m[b]
        assert e.level(com_form(result.parameters[b])[1]) <= 1 + 1e-6
    assert np.all(np.linalg.eigvalsh(pseudo_inertia(result.parameters)) > 0)
    rows = {r["link"]: r for r in hd.identification.summary(result, {})["plausibility"]}
    assert "mass on its upper bound" in rows["iiwa_link_2"]["flags"]
    assert rows["iiwa_link_4"]["room"] >= -1e-6


def test_the_fold_errors_are_the_held_out_newton_euler_residuals_of_fits_on_the_other_blocks(analyses, bounded):
    """The cross-validation rebuilt independently: for each fold, the program solved on a
    factor of the other blocks' raw rows (one QR of all of them), scored by the Newton-Euler
    torques of the fitted parameters on the held-out block's samples."""
    from hod_dynamics.identification.base_parameters import base_parameters
    from hod_dynamics.identification.program import ConvexFit

    result = bounded
    cv = result.cross_validation
    analysis = analyses[0]
    base = base_parameters(PRIOR, friction=True)
    q, t = analysis.result.qjet, analysis.t
    Y = base.columns(hd.regressor(PRIOR, q[:, 0], q[:, 1], q[:, 2], friction=True))
    block = np.minimum((3 * (t - t[0]) / (t[-1] - t[0])).astype(int), 2)
    ok = np.isfinite(analysis.effort) & ~segment_edges(analysis)[:, None]
    program = ConvexFit(base.K, result.prior, 21, None, result.bounds)
    assert cv.weights == (1.0, 100.0) and cv.fold_errors.shape == (2, 3)
    for k in range(3):
        train = ok & (block != k)[:, None]
        rows = np.vstack([np.column_stack([Y[train[:, j], j], analysis.effort[train[:, j], j]]) / result.noise[j]
                          for j in range(7)])
        R = np.linalg.qr(rows, mode="r")
        for w, gamma in enumerate(cv.weights):
            full = program.solve(R, len(rows), gamma)
            model = PRIOR.with_inertial_parameters(full[:70].reshape(7, 10))
            friction = hd.FrictionModel(PRIOR.joint_names, coulomb=full[71::3], viscous=full[70::3],
                                        offset=full[72::3], v_s=np.full(7, 0.01))
            rss, count = _whitened_rss(model, friction, analysis, result.noise, block == k)
            assert cv.fold_errors[w, k] == pytest.approx(rss / count, rel=2e-5)
    assert cv.chosen == cv.weights[int(np.argmin(cv.fold_errors.mean(axis=1)))] == result.regularization


def test_the_prior_column_is_held_out(analyses, bounded):
    """The prior's friction comes from the identification recording: its residual on another
    recording is the prior rigid body plus that friction, not friction fitted to that recording."""
    train, check = analyses
    q = train.result.qjet
    residual = train.effort - hd.inverse_dynamics(PRIOR, q[:, 0], q[:, 1], q[:, 2])
    residual[segment_edges(train)] = np.nan
    friction, _ = fit_friction(q[:, 1], residual, PRIOR.joint_names)
    table, _ = residuals(bounded, check)
    qc = check.result.qjet
    expected = hd.inverse_dynamics(PRIOR, qc[:, 0], qc[:, 1], qc[:, 2]) + friction.torque(qc[:, 1]) - check.effort
    for j, name in enumerate(PRIOR.joint_names):
        assert table[name]["prior"] == pytest.approx(np.sqrt(np.nanmean(expected[:, j] ** 2)), rel=1e-6)
    rigid = hd.inverse_dynamics(PRIOR, qc[:, 0], qc[:, 1], qc[:, 2])
    own, _ = fit_friction(qc[:, 1], check.effort - rigid, PRIOR.joint_names)      # the old column's friction
    assert not np.allclose(own.offset, bounded.prior_friction.offset, atol=1e-3)


def test_the_ends_of_a_determinacy_interval_fit_the_data_and_the_bounds(analyses, bounded):
    """Each end of link 4's mass interval is a set of bodies inside their bounds (positive
    semidefinite, inside the ellipsoids, masses within bounds) whose Newton-Euler residual on
    the recording exceeds the fit's by at most chi2 times the inflation; and a point mass moved
    along joint 5's axis from link 5 to link 4 leaves the torques as they are, so link 4's
    interval holds the moved model's mass."""
    rows = determinacy(bounded, extremes=True)
    row = rows[3]
    fit_rss, _ = _whitened_rss(bounded.model, bounded.friction, analyses[0], bounded.noise)
    for end, params in zip(row["mass_interval"], row["mass_extremes"]):
        pi = params[:70].reshape(7, 10)
        assert pi[3, 0] == pytest.approx(end, rel=1e-6)
        assert np.all(np.linalg.eigvalsh(pseudo_inertia(pi)) > -1e-7)
        for b, e in enumerate(bounded.bounds.ellipsoids):
            assert np.trace(pseudo_inertia(pi[b]) @ e.matrix) >= -1e-6 * pi[b, 0]
        assert np.all(pi[:, 0] >= bounded.bounds.mass[:, 0] - 1e-6) and np.all(pi[:, 0] <= bounded.bounds.mass[:, 1] + 1e-6)
        friction = hd.FrictionModel(PRIOR.joint_names, coulomb=params[71::3], viscous=params[70::3],
                                    offset=params[72::3], v_s=np.full(7, 0.01))
        rss, _ = _whitened_rss(PRIOR.with_inertial_parameters(pi), friction, analyses[0], bounded.noise)
        assert rss <= fit_rss + CHI2 * bounded.inflation * (1 + 1e-3) + 1e-6 * fit_rss
    # the null direction: a point mass on joint 5's axis, taken from link 5 and given to link 4
    # (half of what link 5's pseudo-inertia can spare at the point of the axis that spares most)
    pi = bounded.parameters.copy()
    J5 = pseudo_inertia(pi[4])
    spare = {s: 1.0 / (np.r_[0.0, 0.0, s, 1.0] @ np.linalg.solve(J5, np.r_[0.0, 0.0, s, 1.0]))
             for s in np.linspace(-0.3, 0.3, 61)}
    s, most = max(spare.items(), key=lambda item: item[1])
    B = PRIOR.references[4]                                # joint 5's frame in link 4's
    point = parameters_from_inertia(body_inertia(0.5 * most, B[:3, 3] + s * B[:3, 2], np.zeros((3, 3))))
    pi[3] += point                                         # the point in link 4's frame
    pi[4] -= parameters_from_inertia(body_inertia(0.5 * most, [0.0, 0.0, s], np.zeros((3, 3))))
    q = analyses[0].result.qjet[::50]
    moved = PRIOR.with_inertial_parameters(pi)
    assert np.all(np.linalg.eigvalsh(pseudo_inertia(pi)) > 0)          # the moved model is within the bounds
    assert all(e.slack(pseudo_inertia(p)) > 0 for e, p in zip(bounded.bounds.ellipsoids, pi))
    assert np.all(pi[:, 0] >= bounded.bounds.mass[:, 0]) and np.all(pi[:, 0] <= bounded.bounds.mass[:, 1])
    np.testing.assert_allclose(hd.inverse_dynamics(moved, q[:, 0], q[:, 1], q[:, 2]),
                               hd.inverse_dynamics(bounded.model, q[:, 0], q[:, 1], q[:, 2]), atol=1e-9)
    assert row["mass_interval"][0] <= pi[3, 0] <= row["mass_interval"][1]
    assert not row["mass_determined"]


def test_a_recording_without_motion_is_refused_naming_what_it_cannot_determine(tmp_path, capsys):
    still = Recording(seed=3, model=TRUTH, duration=8.0)
    still.position[:] = still.position[0]
    still.velocity[:] = 0.0
    bag = still.write(str(tmp_path / "still.mcap"))
    analysis = analyze_joint_states(PRIOR, read_joint_states(bag), order=0)
    for method in ("consistent", "ols"):
        with pytest.raises(InputError, match=r"hold no motion .*: \d+ of the 64 base parameters are undetermined: "
                                             r"Izz_iiwa_link_1 .* and \d+ more; record an excitation"):
            identify(PRIOR, [analysis], method=method)
    out = tmp_path / "out"
    assert cli.main(["identify", bag, "--urdf", "iiwa14", "--out", str(out), "--no-progress"]) == 2
    err = capsys.readouterr().err.strip()
    assert err.count("\n") == 0 and "hold no motion" in err and "Izz_iiwa_link_1" in err and not out.exists()


def test_bounds_that_contradict_each_other_are_one_line_and_exit_2_writing_nothing(tmp_path, capsys):
    bag = Recording(seed=4, model=TRUTH, duration=3.0).write(str(tmp_path / "r.mcap"))
    cases = {("--mass-bounds", "iiwa_link_2=5:3"): "the mass bounds of iiwa_link_2 contradict each other: lower 5 kg "
                                                  "> upper 3 kg",
             ("--total-mass", "4"): "the links' lower mass bounds add up to 10.33 kg, more than the total mass's "
                                    "upper bound 4.08 kg",
             ("--total-mass", "50:60", "--mass-factor", "1.2"): "the links' upper mass bounds add up to 24.8 kg, less "
                                                                "than the total mass's lower bound 50 kg",
             ("--mass-factor", "0.5"): "a mass factor of 0.5 puts each link's lower bound m/f above its upper bound",
             ("--mass-bounds", "iiwa_link_9=1:2"): "no moving link 'iiwa_link_9' in the model",
             ("--mass-bounds", "iiwa_link_3=0:0"): "the mass bounds of iiwa_link_3 leave it no mass"}
    for extra, message in cases.items():
        out = tmp_path / "out"
        assert cli.main(["identify", bag, "--urdf", "iiwa14", "--out", str(out), "--no-progress", *extra]) == 2, extra
        err = capsys.readouterr().err.strip()
        assert err.count("\n") == 0 and message in err and not out.exists(), (extra, err)
    with pytest.raises(InputError, match="the total mass bounds must be finite with 0 < lower <= upper"):
        plausibility_bounds(PRIOR, total_mass=(3.0, 2.0))


# -- the acceptance: a truth whose bodies are the shapes its description draws -------------------
TOOL_CENTRE = np.array([0.35, 0.0, 0.05])      # m, in link 7's frame: a 0.35 m bar from the flange's axis


def _ball(mass, radius, centre):
    """A hollow ball's inertial parameters (thin shell: I = 2/3 m r^2 about its centre)."""
    return parameters_from_inertia(body_inertia(mass, centre, 2.0 / 3.0 * mass * radius ** 2 * np.eye(3)))


def _shell_ellipsoid(pi):
    """(centre, Q) of the ellipsoid on whose surface a thin shell has the inertia ``pi``."""
    m, c, Ic = com_form(pi)
    return c, 3.0 * (0.5 * np.trace(Ic) * np.eye(3) - Ic) / m


def _ellipsoid_obj(path, centre, Q, rings=12, sectors=24):
    """An OBJ mesh of the ellipsoid's surface (a UV sphere mapped through Q^1/2)."""
    w, V = np.linalg.eigh(Q)
    polar = np.linspace(0, np.pi, rings + 1)
    turn = np.linspace(0, 2 * np.pi, sectors, endpoint=False)
    unit = [[0, 0, 1], [0, 0, -1]] + [[np.sin(p) * np.cos(t), np.sin(p) * np.sin(t), np.cos(p)]
                                      for p in polar[1:-1] for t in turn]
    points = np.array(unit) @ (V * np.sqrt(w)).T + centre
    path.write_text("".join(f"v {x!r} {y!r} {z!r}\n" for x, y, z in points.tolist()))


@pytest.fixture(scope="module")
def designed(tmp_path_factory):
    """The known truth: the shipped iiwa's links 1-6 with their inertias perturbed by up to 30 %
    (seed 5), each a thin shell on an ellipsoid that the description draws as its collision
    mesh (1 % larger), and link 7 a 2 kg hollow ball (4 cm) at the end of a 0.35 m bar from
    the flange's axis (the tool: the description draws a 4.5 cm sphere there and guesses
    1.6 kg). Recorded for 60 s (friction, 0.3 N m noise, 20-bit encoders, jitter, drops) and
    identified by the command with --determinacy. Returns (identification.json, truth)."""
    folder = tmp_path_factory.mktemp("designed")
    truth = hd.inertial_parameters(TRUTH)
    truth[6] = _ball(2.0, 0.04, TOOL_CENTRE + [0.0, 0.004, -0.003])
    root = ET.parse(hd.robot_path("iiwa14")).getroot()
    links = {link.get("name"): link for link in root.findall("link")}
    for b in range(6):
        centre, Q = _shell_ellipsoid(truth[b])
        _ellipsoid_obj(folder / f"link{b + 1}.obj", centre, Q * 1.01 ** 2)
        collision = ET.SubElement(links[f"iiwa_link_{b + 1}"], "collision")
        ET.SubElement(ET.SubElement(collision, "geometry"), "mesh", filename=f"link{b + 1}.obj")
    link7 = links["iiwa_link_7"]
    link7.remove(link7.find("inertial"))
    inertial = ET.SubElement(link7, "inertial")
    ET.SubElement(inertial, "origin", xyz=" ".join(map(repr, TOOL_CENTRE.tolist())))
    ET.SubElement(inertial, "mass", value="1.6")
    ET.SubElement(inertial, "inertia", ixx="0.0017", iyy="0.0017", izz="0.0017", ixy="0", ixz="0", iyz="0")
    collision = ET.SubElement(link7, "collision")
    ET.SubElement(collision, "origin", xyz=" ".join(map(repr, TOOL_CENTRE.tolist())))
    ET.SubElement(ET.SubElement(collision, "geometry"), "sphere", radius="0.045")
    urdf = folder / "iiwa14_tool.urdf"
    ET.ElementTree(root).write(urdf)
    prior = hd.RobotModel.from_urdf(str(urdf))
    bag = Recording(seed=1, urdf=str(urdf), model=prior.with_inertial_parameters(truth), duration=60.0).write(
        str(folder / "run.mcap"))
    out = folder / "out"
    with contextlib.redirect_stdout(io.StringIO()):
        assert cli.main(["identify", bag, "--urdf", str(urdf), "--out", str(out), "--determinacy", "--no-plot",
                         "--no-progress"]) == 0
    return json.loads((out / "identification.json").read_text()), truth


def test_well_excited_links_of_a_known_truth_are_found_within_10_percent_and_1_cm(designed):
    """Well excited: the determinacy interval (what the data and the bounds leave possible, at
    95 %) lies within 10 % of the identified mass, within 1 cm of each identified centre of
    mass coordinate. On this truth: link 7's mass and centre of mass (the tool, far from its
    joint's axis), and link 6's centre of mass; no other mass (joint torques determine only
    combinations: a point mass on a joint's axis can belong to either link)."""
    data, truth = designed
    rows = {row["link"]: row for row in data["determinacy"]}
    assert rows["iiwa_link_7"]["mass_determined"] and rows["iiwa_link_7"]["com_determined"]
    assert rows["iiwa_link_6"]["com_determined"]
    assert [link for link, row in rows.items() if row["mass_determined"]] == ["iiwa_link_7"]
    for b, (link, row) in enumerate(rows.items()):
        body = data["bodies"][link]
        m, c, _ = com_form(truth[b])
        if row["mass_determined"]:
            assert abs(body["mass"] / m - 1) < 0.10, link
            assert row["mass_interval"][0] <= m <= row["mass_interval"][1]
        if row["com_determined"]:
            assert np.linalg.norm(np.array(body["com"]) - c) < 0.01, link
            assert all(lo <= x <= hi for x, (lo, hi) in zip(c, row["com_interval"]))
    assert data["cross_validation"]["chosen"] == data["regularization"]
    assert all(lo - 1e-6 <= r["mass"] <= hi + 1e-6 for r in data["plausibility"] for lo, hi in [r["mass_bounds"]])


def test_every_flag_that_sets_or_relaxes_a_bound_is_in_the_help_and_in_command_line_md():
    import argparse
    import os

    from hod_dynamics.cli.identify_options import add_options

    parser = argparse.ArgumentParser(prog="identify")
    add_options(parser)
    flags = [o for action in parser._actions for o in action.option_strings if o.startswith("--") and o != "--help"]
    assert len(flags) == 14
    doc = open(os.path.join(os.path.dirname(__file__), "..", "doc", "command_line.md"), encoding="utf-8").read()
    shown = cli.build_parser()._subparsers._group_actions[0].choices["identify"].format_help()
    for flag in flags:
        assert f"`{flag}" in doc and flag in shown, flag
