"""The top-level namespace: what a user of the dynamics needs, cheap to import, old names on notice."""

import re
import subprocess
import sys
import warnings

import numpy as np
import pytest

import hod_dynamics as hd
from hod_dynamics.errors import HodDynamicsDeprecationWarning


def test_the_namespace_holds_the_dynamics_and_every_name_resolves():
    assert len(hd.__all__) <= 31   # the dynamics, and the regressor and parameters of identification
    for name in hd.__all__:
        assert getattr(hd, name) is not None, name
    assert not {"feedforward", "analyze_joint_states", "load_actuators", "save_csv"} & set(hd.__all__)


def test_importing_the_package_loads_no_application_layer_and_no_heavy_optional_module():
    code = ("import sys, hod_dynamics\n"
            "heavy = ['scipy.optimize', 'scipy.interpolate', 'scipy.linalg', 'numba', 'matplotlib',\n"
            "         'rosbags', 'yaml', 'rclpy', 'hod_dynamics.analysis', 'hod_dynamics.bag',\n"
            "         'hod_dynamics.actuators', 'hod_dynamics.trajectory_feedforward', 'hod_dynamics._kernels']\n"
            "print(' '.join(m for m in heavy if m in sys.modules))\n")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == ""


def test_a_lazy_name_is_imported_on_first_use():
    code = ("import sys, hod_dynamics as hd\n"
            "assert 'hod_dynamics.trajectory' not in sys.modules\n"
            "T = hd.Trajectory\n"
            "assert 'hod_dynamics.trajectory' in sys.modules and hd.trajectory.Trajectory is T\n"
            "assert hd.load_trajectory is sys.modules['hod_dynamics.trajectory'].load_trajectory\n"
            "assert hd.paper_examples.IIWA_WRENCH_LINK\n")
    subprocess.run([sys.executable, "-W", "error", "-c", code], check=True)


def test_every_public_module_is_an_attribute_on_first_use():
    """hd.reference_stream, hd.joint_fit, ... as hd.analysis: every module without a leading
    underscore (the machinery of old names aside) resolves, in a process that imported none."""
    import pathlib

    names = sorted(p.stem for p in pathlib.Path(hd.__file__).parent.glob("*.py")
                   if not p.stem.startswith("_") and p.stem != "deprecation")
    code = ("import hod_dynamics as hd\n"
            f"missing = [m for m in {names!r} if getattr(hd, m, None) is None]\n"
            "assert not missing, missing\n")
    subprocess.run([sys.executable, "-c", code], check=True)


@pytest.mark.parametrize("name", sorted(hd._MOVED))
def test_an_old_name_still_works_and_warns_where_it_went(name):
    module, attr = hd._MOVED[name].split(":")
    place = re.escape(f"{module}.{attr}")
    with pytest.warns(HodDynamicsDeprecationWarning, match=rf"hod_dynamics\.{name} is deprecated .*; use {place}$"):
        old = getattr(hd, name)
    assert old is getattr(sys.modules[module], attr)


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
