"""The generated kernels (LLVM IR compiled at run time, hod_dynamics.kernels.rnea_ir and _partials_ir):
every route of every entry point gives the numbers of the numpy reference and of Pinocchio, on
trees with prismatic, fixed and oddly oriented joints; a batch fills vectors of eight samples,
so batch sizes around multiples of eight; bad input is named; compiled code is cached on disk
by content and loaded by later processes."""

import os
import subprocess
import sys

import numpy as np
import pytest

import hod_dynamics as hd
from hod_dynamics.kernels.backend import ENV_VAR, numba_available
from oracles import PinocchioRobot, random_urdf, rel_err

needs_numba = pytest.mark.skipif(not numba_available(), reason="numba is not installed")

BATCHES = [(), (1,), (7,), (8,), (9,), (2, 9)]  # one sample, a partial vector, one, one and a bit


@pytest.fixture(scope="module", params=[(14, 2), (9, 1)])  # two roots, prismatic joints
def tree(request):
    text = random_urdf(*request.param)
    model = hd.RobotModel.from_urdf(text)
    assert model.is_prismatic.any() and not model.is_prismatic.all()
    return model, PinocchioRobot(text, model)


def _numpy(monkeypatch, f):
    """f() on the numpy backend (the entry points without a backend keyword read the variable)."""
    with monkeypatch.context() as m:
        m.setenv(ENV_VAR, "numpy")
        return f()


@needs_numba
def test_every_route_gives_the_numpy_numbers(tree, monkeypatch):
    """One sample as it is (the fast path), one sample as a read-only array (the general path),
    and batches through vectors of eight samples, against the numpy backend."""
    model, _ = tree
    n = model.n_dof
    rng = np.random.default_rng(3)
    for batch in BATCHES:
        q, qd, qdd = rng.uniform(-2, 2, (3,) + batch + (n,))
        jet = rng.uniform(-1, 1, batch + (5, n))
        frozen = q.copy()
        frozen.setflags(write=False)
        calls = {
            "time_derivatives": lambda q: hd.time_derivatives(model, np.concatenate(
                [q[..., None, :], jet[..., 1:, :]], axis=-2), 2),
            "inverse_dynamics": lambda q: hd.inverse_dynamics(model, q, qd, qdd),
            "gravity_torques": lambda q: hd.gravity_torques(model, q),
            "mass_matrix": lambda q: hd.mass_matrix(model, q),
            "forward_dynamics": lambda q: hd.forward_dynamics(model, q, qd, 10 * qdd),
            "id_partials": lambda q: hd.id_partials(model, q, qd, qdd),
            "id_second_partials": lambda q: hd.id_second_partials(model, q, qd, qdd),
        }
        for name, call in calls.items():
            reference = _numpy(monkeypatch, lambda: call(q))
            for route in (q, frozen):
                got = call(route)
                assert np.shape(got) == np.shape(reference), (name, batch)
                assert rel_err(got, reference) < 1e-12, (name, batch, rel_err(got, reference))


@needs_numba
def test_every_entry_point_matches_pinocchio(tree):
    model, pr = tree
    pin = pr.pin
    rng = np.random.default_rng(5)
    q, qd, qdd = rng.uniform(-2, 2, (3, 9, model.n_dof))
    for b in (0, 8):  # the first and the ninth sample: another vector of eight
        args = pr.q(q[b]), pr.v(qd[b]), pr.v(qdd[b])
        tau = np.array(pin.rnea(pr.model, pr.data, *args))[pr.vidx]
        assert rel_err(hd.inverse_dynamics(model, q, qd, qdd)[b], tau) < 1e-10
        assert rel_err(hd.inverse_dynamics(model, q[b], qd[b], qdd[b]), tau) < 1e-10
        jet = np.stack([q, qd, qdd], axis=-2)
        assert rel_err(hd.time_derivatives(model, jet, 0)[b, 0], tau) < 1e-10
        gravity = np.array(pin.computeGeneralizedGravity(pr.model, pr.data, args[0]))[pr.vidx]
        assert rel_err(hd.gravity_torques(model, q)[b], gravity) < 1e-10
        M = pr.crba(q[b])
        assert rel_err(hd.mass_matrix(model, q)[b], M) < 1e-10
        assert rel_err(hd.mass_matrix(model, q[b]), M) < 1e-10
        a = np.array(pin.aba(pr.model, pr.data, args[0], args[1], pr.v(10 * qdd[b])))[pr.vidx]
        assert rel_err(hd.forward_dynamics(model, q, qd, 10 * qdd)[b], a) < 1e-10
        assert rel_err(hd.forward_dynamics(model, q[b], qd[b], 10 * qdd[b]), a) < 1e-10
        dq, dv, Mp = pr.rnea_derivatives(q[b], qd[b], qdd[b])
        for ours, ref in zip(hd.id_partials(model, q[b], qd[b], qdd[b]), (dq, dv, Mp)):
            assert rel_err(ours, ref) < 1e-10
        assert rel_err(M, Mp) < 1e-12 and np.abs(M).max() > 1e-3  # not a vacuous comparison


@needs_numba
@pytest.mark.parametrize("batch", [(), (11,)])
def test_a_nan_is_named_on_every_route(panda, batch):
    q = np.zeros(batch + (7,))
    bad = q.copy()
    bad[(..., 3)] = np.nan
    jet = np.zeros(batch + (4, 7))
    jet[(..., 2, 5)] = np.inf
    with pytest.raises(hd.InputError, match=r"qjet holds a non-finite value .*derivative 2, joint 'panda_joint6'"):
        hd.time_derivatives(panda, jet, 1)
    for call, name in ((lambda: hd.inverse_dynamics(panda, q, bad, q), "qd"),
                       (lambda: hd.gravity_torques(panda, bad), "q"),
                       (lambda: hd.mass_matrix(panda, bad), "q"),
                       (lambda: hd.forward_dynamics(panda, q, q, bad), "tau"),
                       (lambda: hd.id_partials(panda, q, q, bad), "qdd"),
                       (lambda: hd.id_second_partials(panda, bad, q, q), "q")):
        with pytest.raises(hd.InputError, match=rf"^{name} holds a non-finite value.*'panda_joint4'"):
            call()


@needs_numba
def test_a_singular_mass_matrix_is_refused():
    """A joint whose link (and subtree) has no mass moves no mass: M is singular, on one sample
    and in a batch, as numpy's LU says too."""
    from hod_dynamics.model.spatial import body_inertia, transform

    refs = [transform(np.eye(3), [0.0, 0.0, 0.3 * k]) for k in range(3)]
    inertias = [body_inertia(2.0, [0.1, 0, 0], np.diag([0.1, 0.2, 0.3])),
                body_inertia(1.0, [0, 0.1, 0], np.diag([0.05, 0.05, 0.02])), np.zeros((6, 6))]
    model = hd.RobotModel.from_screws([[0, 0, 1, 0, 0, 0], [0, 1, 0, 0, 0, 0], [1, 0, 0, 0, 0, 0]],
                                      refs, inertias, parents=[-1, 0, 1])
    q = np.full(3, 0.3)
    assert np.linalg.matrix_rank(hd.mass_matrix(model, q)) == 2
    for args in ((q, q, q), (np.tile(q, (9, 1)), q, q)):
        with pytest.raises(hd.InputError, match="mass matrix is singular"):
            hd.forward_dynamics(model, *args)


@needs_numba
def test_threads_share_large_batches_of_inverse_dynamics(panda, monkeypatch):
    """Chunks on three threads give the bits of one thread (the state and gravity kernels)."""
    from hod_dynamics.kernels import backend

    q, qd, qdd = np.random.default_rng(1).uniform(-1, 1, (3, 5000, 7))
    monkeypatch.setenv(backend.THREADS_ENV_VAR, "1")
    one = hd.inverse_dynamics(panda, q, qd, qdd), hd.gravity_torques(panda, q)
    monkeypatch.setenv(backend.THREADS_ENV_VAR, "3")
    np.testing.assert_array_equal(hd.inverse_dynamics(panda, q, qd, qdd), one[0])
    np.testing.assert_array_equal(hd.gravity_torques(panda, q), one[1])
    assert rel_err(one[1], hd.inverse_dynamics(panda, q, 0 * q, 0 * q)) < 1e-13  # another kernel


_COLD = """
import time, numpy as np, hod_dynamics as hd
from hod_dynamics.kernels import llvm as _llvm
model = hd.load_robot("iiwa14")
z = np.zeros(7)
hd.time_derivatives(model, np.zeros((5, 7)), 2)
hd.time_derivatives(model, np.zeros((20, 5, 7)), 2)
for f in (hd.inverse_dynamics, hd.forward_dynamics, hd.id_partials, hd.id_second_partials):
    f(model, z, z, z)
hd.mass_matrix(model, z)
print(sorted(_llvm.compiled_here))
"""


@needs_numba
def test_compiled_code_is_cached_by_content_and_loaded_by_later_processes(tmp_path):
    """A first process with an empty cache compiles each kernel it uses and stores its machine
    code; a second one compiles nothing. (One subprocess pair: the cold-start check.)"""
    env = dict(os.environ, NUMBA_CACHE_DIR=str(tmp_path), PYTHONPATH=os.getcwd())
    runs = [subprocess.run([sys.executable, "-c", _COLD], capture_output=True, text=True,
                           env=env, timeout=600) for _ in range(2)]
    for run in runs:
        assert run.returncode == 0, run.stderr
    first, second = (eval(run.stdout.splitlines()[-1]) for run in runs)
    assert {"crba", "first_partials", "forward_dynamics", "second_partials",
            "rnea_jet_K3_w1", "rnea_jet_K3_w8", "rnea_state_K1_w1"} <= set(first)
    assert second == []
    objects = sorted(os.listdir(tmp_path / "hod_dynamics"))
    assert len(objects) == len(first) and all(name.endswith(".o") for name in objects)
