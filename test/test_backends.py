"""Compute backends (numba kernel vs numpy) and blocked processing of large batches.

The numba kernel is an independent implementation of the recursion (3x3 blocks, loops over
samples); the numpy path is the reference it must reproduce. Tests that need numba skip,
naming it, when it is not installed; the numpy path is tested either way.
"""

import itertools
import os
import re

import numpy as np
import pytest

import hod_dynamics as hd
from hod_dynamics.algorithms import dispatch
from hod_dynamics.kernels.backend import ENV_VAR, numba_available, resolve_backend
from hod_dynamics.model.spatial import body_inertia, rotation_matrix, transform

from oracles import BACKENDS, PinocchioRobot, needs_numba, random_urdf, rel_err

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def _wrenches(model, rng, batch, order):
    """Random wrench jets on two links: one with the batch axes, one without."""
    links = [model.link_names[-1], model.link_names[len(model.link_names) // 2]]
    return {links[0]: rng.uniform(-2, 2, batch + (order + 1, 6)),
            links[1]: rng.uniform(-2, 2, (order + 1, 6))}


@needs_numba
@pytest.mark.parametrize("seed", [1, 2, 5])
def test_numba_equals_numpy_on_trees(seed, rng):
    """Trees with prismatic, continuous and oddly oriented joints, orders 0..6, wrenches."""
    model = hd.RobotModel.from_urdf(random_urdf(14, seed))
    assert model.is_prismatic.any()
    # (3, 67): more samples than one block of lanes, and a partial block; (5,) and (): few
    # samples, which the kernel runs one by one without lanes
    for order, batch in itertools.product(range(7), [(3, 67), (5,), ()]):
        jets = rng.uniform(-1.5, 1.5, batch + (order + 3, model.n_dof))
        wrenches = _wrenches(model, rng, batch, order)
        fast = hd.time_derivatives(model, jets, order, wrenches=wrenches, backend="numba")
        ref = hd.time_derivatives(model, jets, order, wrenches=wrenches, backend="numpy")
        assert fast.shape == ref.shape == batch + (order + 1, model.n_dof)
        assert rel_err(fast, ref) < 1e-13, (order, batch, rel_err(fast, ref))


@needs_numba
def test_numba_equals_numpy_single_sample_and_panda(panda, rng):
    jet = rng.uniform(-1, 1, (6, 7))
    fast = hd.time_derivatives(panda, jet, 3, backend="numba")
    assert fast.shape == (4, 7)
    assert rel_err(fast, hd.time_derivatives(panda, jet, 3, backend="numpy")) < 1e-13
    tau = hd.inverse_dynamics(panda, *jet[:3])
    assert rel_err(tau, fast[0]) < 1e-13


@needs_numba
def test_numba_equals_numpy_far_along_continuous_joints_and_for_pitched_screws(rng):
    """The compiled kernels run in joint-aligned body frames with their own (vectorised) sin
    and cos, which hand over to libm beyond SINCOS_LIMIT rad; a screw with a pitch (which
    from_screws accepts) has no such frame and runs the general form. Both match numpy,
    in batches (lanes), a few samples and one sample."""
    from hod_dynamics.kernels.llvm import SINCOS_LIMIT
    from hod_dynamics.kernels.rnea_ir import geometry

    assert SINCOS_LIMIT < 2e6  # the angles below reach beyond it
    tree = hd.RobotModel.from_urdf(random_urdf(8, 4))
    B = np.array([transform(rotation_matrix(q / np.linalg.norm(q)), p)
                  for q, p in zip(rng.normal(size=(3, 4)), rng.uniform(-0.5, 0.5, (3, 3)))])
    M = [body_inertia(m, c, np.diag(d)) for m, c, d in zip([2.0, 1.5, 1.0], rng.uniform(
        -0.2, 0.2, (3, 3)), rng.uniform(0.01, 0.05, (3, 3)))]
    pitched = hd.RobotModel.from_screws([[0, 0, 1, 0.1, 0, 0.05], [0, 1, 0, 0, 0, 1],
                                         [1, 0, 0, 0, 0.3, 0]], B, M, parents=[-1, 0, 0])
    assert geometry(tree) is not None and geometry(pitched) is None
    for model, scale in [(tree, 1.0), (tree, 3e3), (tree, 2e6), (pitched, 1.0)]:
        jets = rng.uniform(-1, 1, (40, 6, model.n_dof))
        jets[:, 0] *= scale
        for batch in (jets, jets[:3], jets[0]):
            fast = hd.time_derivatives(model, batch, 3, backend="numba")
            assert rel_err(fast, hd.time_derivatives(model, batch, 3, backend="numpy")) < 1e-13


def test_env_var_and_keyword_select_the_backend(monkeypatch):
    monkeypatch.setenv(ENV_VAR, "numpy")
    assert resolve_backend() == "numpy"
    monkeypatch.setenv(ENV_VAR, "auto")
    assert resolve_backend() == ("numba" if numba_available() else "numpy")
    assert resolve_backend("numpy") == "numpy"
    monkeypatch.setenv(ENV_VAR, "fortran")
    with pytest.raises(hd.InputError, match=ENV_VAR):
        resolve_backend()


def test_unknown_backend_keyword_raises(panda):
    with pytest.raises(hd.InputError, match="backend"):
        hd.time_derivatives(panda, np.zeros((5, 7)), 2, backend="gpu")


@pytest.mark.skipif(numba_available(), reason="only meaningful without numba")
def test_numba_requested_without_numba_raises(panda):
    with pytest.raises(hd.InputError, match="numba"):
        hd.time_derivatives(panda, np.zeros((5, 7)), 2, backend="numba")


@pytest.mark.parametrize("backend", BACKENDS)
def test_blocks_give_the_same_result(panda, rng, monkeypatch, backend):
    """Batches split into blocks (tiny blocks forced here) equal one block, with wrenches
    whose batch shape broadcasts (one per row of the batch, and one for all samples)."""
    batch = (5, 9)
    jets = rng.uniform(-1, 1, batch + (5, 7))
    wrenches = {"panda_hand": rng.uniform(-1, 1, (5, 1, 3, 6)),
                "panda_link3": rng.uniform(-1, 1, (3, 6))}
    whole = hd.time_derivatives(panda, jets, 2, wrenches=wrenches, backend=backend)
    monkeypatch.setattr(dispatch, "NUMPY_BLOCK_BYTES", 4 * 7 * 640 * 4)  # 4 samples per block
    monkeypatch.setattr(dispatch, "NUMBA_BLOCK", 4)
    blocked = hd.time_derivatives(panda, jets, 2, wrenches=wrenches, backend=backend)
    assert blocked.shape == batch + (3, 7)
    assert rel_err(blocked, whole) < 1e-14
    # and each sample alone (no blocks at all)
    W = np.broadcast_to(wrenches["panda_hand"], batch + (3, 6))
    for s in [(0, 0), (4, 8), (2, 5)]:
        one = hd.time_derivatives(panda, jets[s], 2, backend=backend, wrenches={
            "panda_hand": W[s], "panda_link3": wrenches["panda_link3"]})
        assert rel_err(one, whole[s]) < 1e-13


def test_blocks_bound_the_working_memory(panda, rng, monkeypatch):
    """The numpy path's peak memory (numpy allocations, traced) follows the block budget, not
    the batch: 4,000 samples in one block would need ~70 MB of working arrays."""
    import tracemalloc

    jets = rng.uniform(-1, 1, (4000, 5, 7))
    monkeypatch.setattr(dispatch, "NUMPY_BLOCK_BYTES", 2**20)
    tracemalloc.start()
    try:
        out = hd.time_derivatives(panda, jets, 2, backend="numpy")
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert peak < out.nbytes + 8 * 2**20, peak
    assert rel_err(out[-3:], hd.time_derivatives(panda, jets[-3:], 2, backend="numpy")) < 1e-14


def test_empty_batch(panda):
    out = hd.time_derivatives(panda, np.zeros((0, 5, 7)), 2)
    assert out.shape == (0, 3, 7)


# -- partial derivatives -------------------------------------------------------------------------
@needs_numba
@pytest.mark.parametrize("seed", [1, 3])
def test_partials_numba_equals_numpy_on_trees(seed, rng):
    """Branching trees with prismatic joints, a batch of states: the first-order partials and
    all four second-order tensors. Two formulations: the compiled kernel runs the backward
    pass of Singh, Russell and Wensing (2022), the numpy path differentiates the world-frame
    recursion along every direction (directional tangents)."""
    model = hd.RobotModel.from_urdf(random_urdf(11, seed))
    assert model.is_prismatic.any()
    n = model.n_dof
    q, qd, qdd = rng.uniform(-1.5, 1.5, (3, 2, 3, n))
    for f, shape in ((hd.id_partials, (n, n)), (hd.id_second_partials, (n, n, n))):
        fast = f(model, q, qd, qdd, backend="numba")
        ref = f(model, q, qd, qdd, backend="numpy")
        for a, b in zip(fast, ref):
            assert a.shape == b.shape == (2, 3) + shape
            assert rel_err(a, b) < 1e-13, (f.__name__, rel_err(a, b))


@needs_numba
def test_partials_numba_single_sample_panda(panda, rng):
    q, qd, qdd = rng.uniform(-1, 1, (3, 7))
    for f, shape in ((hd.id_partials, (7, 7)), (hd.id_second_partials, (7, 7, 7))):
        fast = f(panda, q, qd, qdd, backend="numba")
        ref = f(panda, q, qd, qdd, backend="numpy")
        assert all(a.shape == shape and rel_err(a, b) < 1e-13 for a, b in zip(fast, ref))


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("batch", [(), (3, 40)])
def test_non_finite_jet_named_in_the_callers_shape(backend, batch, panda):
    """The compiled kernel tests finiteness as it reads; the error still names the value's
    index in the caller's shape (derivative and joint), whatever the path."""
    jet = np.zeros(batch + (5, 7))
    index = tuple(b - 1 for b in batch) + (3, 5)
    jet[index] = np.nan
    with pytest.raises(hd.InputError, match=re.escape(
            f"qjet holds a non-finite value at index {index} (derivative 3, joint "
            f"'{panda.joint_names[5]}')")):
        hd.time_derivatives(panda, jet, 2, backend=backend)


@pytest.mark.parametrize("backend", BACKENDS)
def test_each_backend_matches_pinocchio_directly(backend, random_tree, panda_pinocchio, rng):
    """Each backend against the independent oracle, not only against the other backend: tau
    (rnea) and the first-order partials (computeRNEADerivatives), one sample and a batch."""
    text, tree = random_tree
    for model, pin in ((tree, PinocchioRobot(text, tree)), panda_pinocchio):
        n = model.n_dof
        for batch in ((), (20,)):
            q = rng.uniform(np.maximum(model.lower, -2), np.minimum(model.upper, 2), batch + (n,))
            qd, qdd = rng.normal(size=(2,) + batch + (n,))
            jet = np.stack([q, qd, qdd], axis=-2)
            tau = hd.time_derivatives(model, jet, 0, backend=backend)[..., 0, :]
            parts = hd.id_partials(model, q, qd, qdd, backend=backend)
            flat = [a.reshape(-1, n) for a in (q, qd, qdd)]
            ref_tau = np.array([pin.rnea(*s) for s in zip(*flat)])
            assert rel_err(tau.reshape(-1, n), ref_tau) < 1e-10
            for s, state in enumerate(zip(*flat)):
                for ours, ref in zip(parts, pin.rnea_derivatives(*state)):
                    assert rel_err(ours.reshape(-1, n, n)[s], ref) < 1e-10


@pytest.mark.parametrize("backend", BACKENDS)
def test_nan_broadcast_into_an_empty_batch_is_refused(backend, panda):
    empty, bad = np.zeros((0, 7)), np.full(7, np.nan)
    for f in (hd.id_partials, hd.id_second_partials):
        with pytest.raises(hd.InputError, match=r"^qd holds a non-finite value at index \(0,\)"):
            f(panda, empty, bad, np.zeros(7), backend=backend)
    assert hd.id_partials(panda, empty, np.zeros(7), np.zeros(7), backend=backend)[0].shape == \
        (0, 7, 7)


@needs_numba
def test_read_only_and_broadcast_inputs_reuse_the_compiled_kernels(panda, rng):
    """numba compiles one variant per argument type and a read-only array is its own type:
    read-only or broadcast inputs must not trigger a second compile (seconds, in a 1 kHz loop)."""
    from hod_dynamics.kernels.llvm import run
    from hod_dynamics.kernels.rnea_ir import run_gravity, run_one, run_state
    from hod_dynamics.kernels.backend import partials_kernels

    jet = rng.uniform(-1, 1, (5, 7))
    hd.time_derivatives(panda, jet, 2, backend="numba")
    hd.id_second_partials(panda, *jet[:3], backend="numba")
    hd.id_second_partials(panda, *rng.uniform(-1, 1, (3, 4, 7)), backend="numba")  # the batch kernel
    hd.id_partials(panda, *jet[:3], backend="numba")
    callers = (run, run_one, run_state, run_gravity)
    k = partials_kernels()
    callers += (k.run_mass, k.run_forward, k.run_first, k.run_second)
    hd.mass_matrix(panda, jet[0])
    hd.forward_dynamics(panda, *jet[:3])
    compiled = [len(f.signatures) for f in callers]
    frozen = jet.copy()
    frozen.setflags(write=False)
    many = np.broadcast_to(jet, (4, 5, 7))  # read-only view
    hd.time_derivatives(panda, frozen, 2, backend="numba")
    hd.time_derivatives(panda, many, 2, backend="numba")
    for f in (hd.id_partials, hd.id_second_partials):
        f(panda, frozen[0], frozen[1], frozen[2], backend="numba")
        f(panda, many[:, 0], frozen[1], np.broadcast_to(frozen[2], (4, 7)), backend="numba")
    hd.inverse_dynamics(panda, frozen[0], frozen[1], frozen[2], backend="numba")
    hd.inverse_dynamics(panda, many[0, 0], frozen[1], frozen[2], backend="numba")
    hd.gravity_torques(panda, frozen[0])
    hd.mass_matrix(panda, frozen[0])
    hd.mass_matrix(panda, many[:, 0])
    hd.forward_dynamics(panda, frozen[0], frozen[1], frozen[2])
    hd.forward_dynamics(panda, many[0, 0], frozen[1], frozen[2])
    assert [len(f.signatures) for f in callers] == compiled


@needs_numba
def test_threads_split_large_batches_without_changing_a_bit(panda, rng, monkeypatch):
    """Large batches are shared among threads (the kernel releases the GIL): the chunks, their
    wrench blocks and a NaN in a later chunk behave exactly as in one thread."""
    from hod_dynamics.kernels import backend

    batch = (2, 2600)  # 5200 samples: up to 5 chunks of >= MIN_CHUNK
    jets = rng.uniform(-1, 1, batch + (5, 7))
    wrenches = _wrenches(panda, rng, batch, 2)
    monkeypatch.setenv(backend.THREADS_ENV_VAR, "1")
    one = hd.time_derivatives(panda, jets, 2, wrenches=wrenches, backend="numba")
    for threads in ("2", "3", "5"):
        monkeypatch.setenv(backend.THREADS_ENV_VAR, threads)
        np.testing.assert_array_equal(
            hd.time_derivatives(panda, jets, 2, wrenches=wrenches, backend="numba"), one)
    assert [len(backend.map_chunks(lambda a, b: (a, b), 0, 5200))] == [5]
    assert backend.map_chunks(lambda a, b: (a, b), 0, 5200)[-1][1] == 5200
    jets[1, 2000, 4, 2] = np.inf
    with pytest.raises(hd.InputError, match=re.escape("at index (1, 2000, 4, 2)")):
        hd.time_derivatives(panda, jets, 2, backend="numba")
    for bad in ("0", "two", "-1"):
        monkeypatch.setenv(backend.THREADS_ENV_VAR, bad)
        with pytest.raises(hd.InputError, match=backend.THREADS_ENV_VAR):
            hd.time_derivatives(panda, jets[:, :2000], 2, backend="numba")


@needs_numba
def test_a_forked_child_builds_its_own_thread_pool(panda, rng, monkeypatch):
    """Threads do not survive fork: a child of a process that has used the pool must not wait
    forever on its parent's (absent) workers."""
    import multiprocessing

    from hod_dynamics.kernels import backend

    monkeypatch.setenv(backend.THREADS_ENV_VAR, "2")
    jets = rng.uniform(-1, 1, (4096, 5, 7))
    expected = hd.time_derivatives(panda, jets, 2, backend="numba")  # the parent's pool exists
    _FORK_STATE["model"] = panda  # inherited by the forked child
    ctx = multiprocessing.get_context("fork")
    with ctx.Pool(1) as pool:
        result = pool.apply_async(_time_derivatives_in_child, (jets,)).get(timeout=60)
    np.testing.assert_array_equal(result, expected)


_FORK_STATE = {}


def _time_derivatives_in_child(jets):
    return hd.time_derivatives(_FORK_STATE["model"], jets, 2, backend="numba")


_WITHOUT_NUMBA = """
import sys, warnings
import numpy as np
sys.modules["numba"] = None  # numba cannot be imported
import hod_dynamics as hd
from hod_dynamics.kernels.backend import NumbaUnavailableWarning
model = hd.load_robot("iiwa14")
jets = np.random.default_rng(0).uniform(-1, 1, (3, 5, 7))
with warnings.catch_warnings(record=True) as caught:
    warnings.simplefilter("always")
    auto = hd.time_derivatives(model, jets, 2)
    hd.inverse_dynamics(model, jets[:, 0], jets[:, 1], jets[:, 2])
    hd.id_partials(model, jets[:, 0], jets[:, 1], jets[:, 2])
assert hd.kernels.backend.resolve_backend() == "numpy"
assert len(caught) == 1 and caught[0].category is NumbaUnavailableWarning, [str(w.message) for w in caught]
print(caught[0].message)
np.save(sys.argv[1], auto)
"""


def test_without_numba_the_numpy_path_runs_with_one_warning(tmp_path, iiwa):
    import subprocess
    import sys

    out = tmp_path / "tau.npy"
    run = subprocess.run([sys.executable, "-c", _WITHOUT_NUMBA, str(out)], capture_output=True, text=True,
                         timeout=120)
    assert run.returncode == 0, run.stderr
    assert "numba cannot be imported" in run.stdout and "running the numpy path" in run.stdout
    jets = np.random.default_rng(0).uniform(-1, 1, (3, 5, 7))
    np.testing.assert_allclose(np.load(out), hd.time_derivatives(iiwa, jets, 2), rtol=1e-13, atol=1e-12)


_NUMPY_ONLY = """
import os, sys
import numpy as np
import hod_dynamics as hd
model = hd.load_robot("iiwa14")
z, jet = np.zeros(7), np.zeros((5, 7))
if os.environ.get("HOD_DYNAMICS_BACKEND") == "numpy":  # the default backend: every entry point
    hd.time_derivatives(model, jet, 2), hd.inverse_dynamics(model, z, z, z), hd.gravity_torques(model, z)
    hd.mass_matrix(model, z), hd.forward_dynamics(model, z, z, z), hd.id_partials(model, z, z, z)
    hd.id_second_partials(model, z, z, z)
else:  # the keyword, on the entry points that take it
    hd.time_derivatives(model, jet, 2, backend="numpy"), hd.inverse_dynamics(model, z, z, z, backend="numpy")
    hd.id_partials(model, z, z, z, backend="numpy"), hd.id_second_partials(model, z, z, z, backend="numpy")
print("numba" in sys.modules)
"""


@pytest.mark.parametrize("env", ["numpy", None])
def test_the_numpy_backend_does_not_import_numba(env):
    """One sample on the numpy backend (the variable or the keyword) imports no numba and
    compiles nothing: the one-sample fast paths ask for the backend before they plan."""
    import os
    import subprocess
    import sys

    environ = {k: v for k, v in os.environ.items() if k != "HOD_DYNAMICS_BACKEND"}
    if env:
        environ["HOD_DYNAMICS_BACKEND"] = env
    run = subprocess.run([sys.executable, "-c", _NUMPY_ONLY], capture_output=True, text=True,
                         timeout=120, env=environ)
    assert run.returncode == 0, run.stderr
    assert run.stdout.split() == ["False"]


@needs_numba
def test_kernels_cached_tells_whether_a_first_use_compiles(tmp_path, panda, rng):
    """After a use in this process numba's cache holds the kernel; with an empty cache folder
    (a fresh install) the first use of every kernel would compile."""
    import os
    import subprocess
    import sys

    from hod_dynamics.kernels import backend
    from hod_dynamics.kernels.backend import kernels_cached

    hd.time_derivatives(panda, rng.uniform(-1, 1, (2, 4, 7)), 1, backend="numba")
    assert kernels_cached("time_derivatives") is True and kernels_cached("rnea") is True
    code = ("from hod_dynamics.kernels.backend import compile_notice, kernels_cached, KERNEL_GROUPS; "
            "print(*[kernels_cached(g) for g in KERNEL_GROUPS]); print(compile_notice())")
    run = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120,
                         env=dict(os.environ, NUMBA_CACHE_DIR=str(tmp_path), PYTHONPATH=ROOT))
    assert run.returncode == 0, run.stderr
    cached, notice = run.stdout.splitlines()
    assert cached.split() == ["False"] * len(backend.KERNEL_GROUPS), cached
    assert notice.startswith(backend.COMPILE_NOTICE)
    for group in backend.KERNEL_GROUPS.values():
        assert f"{group[2]}, about {group[3]} s" in notice
    assert backend.compile_notice("time_derivatives") is None
    with pytest.raises(hd.InputError, match="which must be one of"):
        backend.compile_notice("rnea_jets")


# One process, an empty numba cache: the first call of each of time_derivatives, id_partials and
# id_second_partials announces its compile, once, naming the function and about how long it
# takes, before numba compiles anything. To check "before" and to keep the test short, the
# notice stops the call (an exception raised where it is shown): the compile never starts.
_FIRST_CALLS = r"""
import json, sys, warnings
import numpy as np
import hod_dynamics as hd
from hod_dynamics import backend

class Stop(BaseException):
    pass

shown = []
def show(message, category, filename, lineno, file=None, line=None):
    if not issubclass(category, hd.errors.KernelCompileWarning):  # e.g. a robot description's extensions
        return
    shown.append([category.__name__, str(message), filename])
    raise Stop
warnings.showwarning = show
handled = []
def handler(text):
    handled.append(text)
    raise Stop

iiwa, z = hd.load_robot("iiwa14"), np.zeros((3, 7))
calls = {"time_derivatives": lambda: hd.time_derivatives(iiwa, np.zeros((5, 7)), 2),
         "id_partials": lambda: hd.id_partials(iiwa, *z),
         "id_second_partials": lambda: hd.id_second_partials(iiwa, *z)}
report = {}
for name, call in calls.items():
    before, n, m = backend.compile_notice(name), len(shown), len(handled)
    try:
        if name == "time_derivatives":  # routed to a handler, as the command line and the node do
            with backend.compile_notices(handler):
                call()
        else:
            call()
        finished = True
    except Stop:
        finished = False
    report[name] = dict(before=before, finished=finished, shown=shown[n:], handled=handled[m:],
                        after=backend.compile_notice(name))
# a compile in a worker thread: the notice points at the line of the main thread that waits
from concurrent.futures import ThreadPoolExecutor
solo = hd.load_robot("solo12", floating_base=True)
q0 = np.r_[0.0, 0.0, 0.3, 0.0, 0.0, 0.0, 1.0, np.zeros(12)]
n = len(shown)
with ThreadPoolExecutor(1) as pool:
    try:
        pool.submit(hd.time_derivatives_floating, solo, q0, np.zeros((3, 18)), 1).result()
    except Stop:
        pass
report["floating"] = dict(shown=shown[n:])
# a notice made an error by a warnings filter is not raised
backend._announced.discard("floating")
with warnings.catch_warnings():
    warnings.simplefilter("error")
    backend._announce(backend._dispatcher("floating"))
json.dump(report, sys.stdout)
"""


@needs_numba
def test_first_call_of_each_kernel_announces_its_compile_once_before_compiling(tmp_path):
    import json
    import os
    import subprocess
    import sys

    from hod_dynamics.kernels import backend

    run = subprocess.run([sys.executable, "-c", _FIRST_CALLS], capture_output=True, text=True, timeout=300,
                         env=dict(os.environ, NUMBA_CACHE_DIR=str(tmp_path), PYTHONPATH=ROOT))
    assert run.returncode == 0, run.stderr
    report = json.loads(run.stdout)
    floating = report.pop("floating")["shown"]  # compiled in a worker thread
    assert len(floating) == 1 and floating[0][0] == "KernelCompileWarning" and floating[0][2] == "<string>", floating
    assert floating[0][1].startswith(f"{backend.COMPILE_NOTICE}: {backend.KERNEL_GROUPS['floating'][2]}")
    for name, case in report.items():
        what, seconds = backend.KERNEL_GROUPS[name][2:]
        assert not case["finished"], f"{name}: the call finished: no notice stopped it before compiling"
        notices = case["handled"] if name == "time_derivatives" else [text for _, text, _ in case["shown"]]
        assert len(notices) == 1, (name, case)
        assert notices[0] == case["before"], (name, case)  # compile_notice told it beforehand
        assert notices[0].startswith(f"{backend.COMPILE_NOTICE}: {what}, about {seconds} s"), notices[0]
        assert "numba" in notices[0] and "later runs" in notices[0], notices[0]
        assert case["after"] is None, (name, case)
        if name != "time_derivatives":  # a KernelCompileWarning pointing at the caller's line
            assert case["shown"][0][0] == "KernelCompileWarning" and case["shown"][0][2] == "<string>", case
        else:
            assert not case["shown"], case


_ONE_KERNEL = r"""
import sys, warnings
import numpy as np
import hod_dynamics as hd
from hod_dynamics import backend

iiwa, solo = hd.load_robot("iiwa14"), hd.load_robot("solo12", floating_base=True)
q = np.r_[0.0, 0.0, 0.3, 0.0, 0.0, 0.0, 1.0, np.zeros(12)]
before = backend.compile_notice("id_partials")
with warnings.catch_warnings(record=True) as caught:
    warnings.simplefilter("always")
    hd.id_partials(iiwa, *np.zeros((3, 7)))
    hd.id_partials(iiwa, *np.zeros((3, 4, 7)))
    hd.id_partials(solo, q, np.zeros(18), np.zeros(18))  # a new variant of the same kernel
print(before is not None, sum(issubclass(w.category, hd.errors.KernelCompileWarning) for w in caught),
      backend.compile_notice("id_partials"))
"""


@needs_numba
def test_a_compile_is_announced_once_per_install(tmp_path):
    """A real compile (the first-order partials, the shortest): one notice in the process that
    compiles, none in the next process, which loads numba's cache."""
    import os
    import subprocess
    import sys

    env = dict(os.environ, NUMBA_CACHE_DIR=str(tmp_path), PYTHONPATH=ROOT)
    first, second = (subprocess.run([sys.executable, "-c", _ONE_KERNEL], capture_output=True, text=True,
                                    timeout=300, env=env) for _ in range(2))
    assert first.returncode == 0 and second.returncode == 0, first.stderr + second.stderr
    assert first.stdout.split() == ["True", "1", "None"], first.stdout + first.stderr
    assert second.stdout.split() == ["False", "0", "None"], second.stdout + second.stderr
    assert "KernelCompileWarning" not in second.stderr


_FIT = """
import warnings
import numpy as np
import hod_dynamics as hd
from hod_dynamics.kernels import backend
t = np.arange(400) * 0.01
noisy = np.c_[np.sin(t), np.cos(2 * t)] + 1e-4 * np.random.default_rng(0).standard_normal((400, 2))
with warnings.catch_warnings(record=True) as caught:
    warnings.simplefilter("always")
    hd.Trajectory.from_samples(["a", "b"], t, noisy)
    hd.Trajectory.from_samples(["a", "b"], t, noisy + 1e-3)
texts = [str(w.message) for w in caught if issubclass(w.category, hd.errors.KernelCompileWarning)]
print(len(texts))
print(texts[0] if texts else "")
"""


@needs_numba
def test_the_first_fit_of_recorded_positions_announces_its_compile_once(tmp_path):
    """The fit's compiled band solves (recordings.banded: several seconds on an empty cache)
    are announced like the kernels, once, with their estimate; the next process, which loads
    numba's cache, says nothing."""
    import os
    import subprocess
    import sys

    from hod_dynamics.kernels import backend

    env = dict(os.environ, NUMBA_CACHE_DIR=str(tmp_path), PYTHONPATH=ROOT)
    first, second = (subprocess.run([sys.executable, "-c", _FIT], capture_output=True, text=True, timeout=300,
                                    env=env) for _ in range(2))
    assert first.returncode == 0 and second.returncode == 0, first.stderr + second.stderr
    count, text = first.stdout.splitlines()
    what, seconds = backend.OTHER_GROUPS["fit"][2:]
    assert count == "1" and text.startswith(f"{backend.COMPILE_NOTICE}: {what}, about {seconds} s"), first.stdout
    assert second.stdout.splitlines()[0] == "0", second.stdout
