"""The top-level namespace: what a user of the dynamics needs, cheap to import, old names on notice."""

import json
import os
import re
import subprocess
import sys
import warnings

import numpy as np
import pytest

import hod_dynamics as hd
from hod_dynamics.errors import HodDynamicsDeprecationWarning


def test_the_namespace_holds_the_dynamics_and_every_name_resolves():
    assert len(hd.__all__) <= 30   # the dynamics, and the regressor and parameters of identification
    assert [n for n in dir(hd) if not n.startswith("_")] == sorted(hd.__all__)
    for name in hd.__all__:
        assert getattr(hd, name) is not None, name
    assert not {"feedforward", "analyze_joint_states", "load_actuators", "save_csv"} & set(hd.__all__)


def loaded_by(code, modules):
    """Those of ``modules`` that running ``code`` in a fresh interpreter imports."""
    probe = code + f"\nimport sys\nprint(' '.join(m for m in {list(modules)!r} if m in sys.modules))\n"
    return subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, check=True).stdout.split()


def test_importing_the_package_loads_no_application_layer_and_no_heavy_optional_module():
    assert loaded_by("import hod_dynamics", [
        "scipy.optimize", "scipy.interpolate", "scipy.linalg", "numba", "llvmlite", "matplotlib", "rosbags", "yaml",
        "rclpy", "hod_dynamics.replay", "hod_dynamics.recordings", "hod_dynamics.feedforward",
        "hod_dynamics.identification", "hod_dynamics.fleet", "hod_dynamics.cli", "hod_dynamics.kernels.rnea_kernels",
        "hod_dynamics.kernels.rnea_ir"]) == []


def test_building_the_command_line_parser_loads_no_numerical_stack():
    """Every command builds the whole parser (the help of each), ``info`` and ``--help`` too:
    the defaults it shows come from plain modules, not from those that import scipy.linalg and
    the compiled kernels (half a second of each command's start)."""
    assert loaded_by("from hod_dynamics.cli.entry_point import build_parser\nbuild_parser()", [
        "scipy.linalg", "scipy.interpolate", "numba", "llvmlite", "matplotlib", "cvxpy", "rosbags",
        "hod_dynamics.identification.fit", "hod_dynamics.identification.payload"]) == []


def test_a_lazy_name_is_imported_on_first_use():
    code = ("import sys, hod_dynamics as hd\n"
            "assert 'hod_dynamics.feedforward.trajectory' not in sys.modules\n"
            "T = hd.Trajectory\n"
            "assert 'hod_dynamics.feedforward.trajectory' in sys.modules and hd.feedforward.trajectory.Trajectory is T\n"
            "assert hd.load_trajectory is sys.modules['hod_dynamics.feedforward.trajectory'].load_trajectory\n"
            "assert 'hod_dynamics.replay.analysis' not in sys.modules\n"
            "assert hd.replay.BagAnalysis is sys.modules['hod_dynamics.replay.analysis'].BagAnalysis\n")
    subprocess.run([sys.executable, "-W", "error", "-c", code], check=True)


def test_every_wing_is_an_attribute_on_first_use_and_its_face_names_resolve():
    """hd.model, hd.replay, ...: every wing (a subpackage) resolves in a process that imported
    none, and every name its face offers resolves without a warning."""
    import pathlib

    wings = sorted(p.parent.name for p in pathlib.Path(hd.__file__).parent.glob("*/__init__.py"))
    assert set(wings) == set(hd.WINGS) | {"kernels"}
    code = ("import warnings\nwarnings.simplefilter('error')\nimport hod_dynamics as hd\n"
            f"for wing in {wings!r}:\n"
            "    face = getattr(hd, wing)\n"
            "    missing = [n for n in getattr(face, '__all__', ()) if getattr(face, n, None) is None]\n"
            "    assert not missing, (wing, missing)\n")
    subprocess.run([sys.executable, "-c", code], check=True)


@pytest.mark.parametrize("name", sorted(hd._MOVED))
def test_an_old_name_still_works_and_warns_where_it_went(name):
    module, attr = hd._MOVED[name].split(":")
    place = re.escape(f"{module}.{attr}")
    with pytest.warns(HodDynamicsDeprecationWarning, match=rf"hod_dynamics\.{name} is deprecated .*; use {place}$"):
        old = getattr(hd, name)
    assert old is getattr(sys.modules[module], attr)


NAMES_BEFORE_THE_WINGS = json.load(open(os.path.join(os.path.dirname(__file__), "data",
                                                     "names_before_the_wings.json"), encoding="utf-8"))


@pytest.fixture(scope="module")
def old_paths_imported():
    """{old module: {"missing": names that do not resolve, "warnings": deprecation messages}}:
    every module path of the release before the wings imported, one after the other, in one
    fresh process."""
    code = ("import importlib, json, warnings\n"
            "warnings.simplefilter('always')\n"
            f"names = {NAMES_BEFORE_THE_WINGS!r}\n"
            "out = {}\n"
            "for old, expected in names.items():\n"
            "    with warnings.catch_warnings(record=True) as caught:\n"
            "        module = importlib.import_module('hod_dynamics.' + old)\n"
            "        missing = [n for n in expected if getattr(module, n, None) is None]\n"
            "    out[old] = {'missing': missing, 'warnings': [str(w.message) for w in caught\n"
            "               if w.category.__name__ == 'HodDynamicsDeprecationWarning']}\n"
            "print(json.dumps(out))\n")
    return json.loads(subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                                     check=True).stdout)


@pytest.mark.parametrize("old", sorted(NAMES_BEFORE_THE_WINGS))
def test_every_module_path_of_the_release_before_the_wings_still_serves_its_names(old, old_paths_imported):
    """``import hod_dynamics.analysis`` (and ``from hod_dynamics.validation import real_array``)
    warns once, naming the new place, and every public name the module had (read from its
    source at the last release before the wings, in test/data/names_before_the_wings.json)
    resolves. A path that is a wing now (model, identification, fleet, cli) serves them from
    its face, the names outside the face with a warning each."""
    path = f"hod_dynamics.{old}"
    out = old_paths_imported[old]
    assert out["missing"] == []
    if old in hd.WINGS:
        assert not any(w.startswith(f"{path} is deprecated") for w in out["warnings"])
        return
    new = hd._OLD_MODULES[path][0]
    assert out["warnings"][0] == f"{path} is deprecated and will be removed in the next release; use {new}"
    with pytest.warns(HodDynamicsDeprecationWarning, match=rf"{re.escape(path)} is deprecated .*; use "
                                                           rf"{re.escape(new)}$"):
        assert getattr(hd, old).__name__ == path


def test_an_unknown_name_is_an_attribute_error():
    with pytest.raises(AttributeError, match="module 'hod_dynamics' has no attribute 'nope'"):
        hd.nope  # noqa: B018
    assert not hasattr(hd, "nope")


def test_the_floating_call_of_earlier_releases_warns_and_gives_the_same_numbers():
    solo = hd.load_robot("solo12", floating_base=True)
    rng = np.random.default_rng(3)
    q = np.r_[rng.normal(size=3), 0.0, 0.0, np.sin(0.2), np.cos(0.2), rng.normal(size=12)]
    vjet = rng.normal(size=(4, 18))
    with pytest.warns(HodDynamicsDeprecationWarning, match=r"use time_derivatives_floating\(model, q, vjet, order\)"):
        old = hd.time_derivatives(solo, q, vjet, 2, friction="urdf")
    new = hd.time_derivatives_floating(solo, q, vjet, 2, friction="urdf")
    np.testing.assert_array_equal(old, new)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        hd.time_derivatives_floating(solo, q, vjet, 2)


def test_the_replay_analysis_and_its_fit_import_no_scipy_interpolate_or_optimize():
    """analyze-bag's process imports scipy's interpolate, special and optimize packages for
    nothing: the fit's splines and band solves are the package's own compiled ones (0.4 s of a
    command otherwise); the plots import matplotlib in processes of their own."""
    assert loaded_by("from hod_dynamics.replay import bag_report, analysis, report, plot_processes\n"
                     "from hod_dynamics.recordings import joint_fit, splines, smoothing, bag, bag_writer\n"
                     "from hod_dynamics.cli import analyze_bag", [
                         "scipy.interpolate", "scipy.optimize", "scipy.special", "matplotlib"]) == []
