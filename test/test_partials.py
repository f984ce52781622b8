"""Partial derivatives of inverse dynamics against Pinocchio, finite differences and the
time derivatives of the recursive algorithm."""

import numpy as np
import pytest

import hod_dynamics as hd
from oracles import (BACKENDS, CENTRAL_7, ERD_ROBOTS, PinocchioRobot, erd_path, needs_numba,
                     pinocchio_robot, rel_err, sinusoid_jet)


def _states(model, count, seed=0):
    rng = np.random.default_rng(seed)
    return rng.uniform(-1.5, 1.5, (3, count, model.n_dof))


def _pinocchio_fd(pr, q, qd, qdd, h=1e-5):
    """Central differences of Pinocchio's (dtau_dq, dtau_dqd, M) w.r.t. q and qd: two arrays
    (3, n, n, n), the direction last."""
    def diff(dq, dv):
        plus = pr.rnea_derivatives(q + h * dq, qd + h * dv, qdd)
        minus = pr.rnea_derivatives(q - h * dq, qd - h * dv, qdd)
        return (np.array(plus) - np.array(minus)) / (2 * h)
    zero = np.zeros(len(q))
    return (np.stack([diff(e, zero) for e in np.eye(len(q))], -1),
            np.stack([diff(zero, e) for e in np.eye(len(q))], -1))


# -- first order ----------------------------------------------------------------------------------
def _check_first_order(model, pr, count=3):
    q, qd, qdd = _states(model, count)
    ours = hd.id_partials(model, q, qd, qdd)
    for s in range(count):
        ref = pr.rnea_derivatives(q[s], qd[s], qdd[s])
        for name, a, b in zip(("dtau_dq", "dtau_dqd", "M"), ours, ref):
            assert rel_err(a[s], b) < 1e-10, (name, rel_err(a[s], b))


def test_first_order_matches_pinocchio_erd(erd_robot):
    _, model, pr = erd_robot
    _check_first_order(model, pr)


def test_first_order_matches_pinocchio_random_tree(random_tree):
    text, model = random_tree
    _check_first_order(model, PinocchioRobot(text, model))


def test_mass_matrix_and_batch_shapes(panda):
    q, qd, qdd = _states(panda, 6, seed=3)
    shaped = [a.reshape(2, 3, -1) for a in (q, qd, qdd)]
    flat, batched = hd.id_partials(panda, q, qd, qdd), hd.id_partials(panda, *shaped)
    for a, b in zip(flat, batched):
        assert b.shape == (2, 3, 7, 7)
        np.testing.assert_array_equal(a.reshape(2, 3, 7, 7), b)
    np.testing.assert_allclose(flat[2], hd.mass_matrix(panda, q), rtol=0, atol=1e-13)
    second = hd.id_second_partials(panda, *shaped)
    assert [t.shape for t in second] == [(2, 3, 7, 7, 7)] * 4


# -- second order ---------------------------------------------------------------------------------
def _check_second_order_fd(model, pr):
    q, qd, qdd = (a[0] for a in _states(model, 1, seed=7))
    d2qq, d2vv, d2qv, dMdq = hd.id_second_partials(model, q, qd, qdd)
    fd_q, fd_v = _pinocchio_fd(pr, q, qd, qdd)
    assert rel_err(d2qq, fd_q[0]) < 1e-6
    assert rel_err(d2qv, fd_v[0]) < 1e-6
    assert rel_err(d2vv, fd_v[1]) < 1e-6
    assert rel_err(dMdq, fd_q[2]) < 1e-6
    assert rel_err(np.zeros_like(fd_v[2]), fd_v[2]) < 1e-6  # M does not depend on qd


@pytest.mark.parametrize("name", ["panda", "hyq", "talos"])
def test_second_order_matches_fd_of_pinocchio_erd(name):
    _check_second_order_fd(*pinocchio_robot(name))


def test_second_order_matches_fd_of_pinocchio_random_tree(random_tree):
    text, model = random_tree
    _check_second_order_fd(model, PinocchioRobot(text, model))


def test_second_order_matches_7_point_stencil_of_ours(random_tree):
    """6th-order central differences of our exact first-order partials, all directions in one
    batched call: agreement to ~1e-12 (asserted 1e-10)."""
    _, model = random_tree
    n, h = model.n_dof, 2e-3
    q, qd, qdd = (a[0] for a in _states(model, 1, seed=11))
    steps = h * np.arange(-3, 4)[:, None, None] * np.eye(n)  # (7, n, n): stencil x direction
    Tq = hd.id_partials(model, q + steps, qd, qdd)
    Tv = hd.id_partials(model, q, qd + steps, qdd)
    fd_q = [np.moveaxis(np.tensordot(CENTRAL_7, t, axes=(0, 0)) / h, 0, -1) for t in Tq]
    fd_v = [np.moveaxis(np.tensordot(CENTRAL_7, t, axes=(0, 0)) / h, 0, -1) for t in Tv]
    d2qq, d2vv, d2qv, dMdq = hd.id_second_partials(model, q, qd, qdd)
    assert rel_err(d2qq, fd_q[0]) < 1e-10
    assert rel_err(d2qv, fd_v[0]) < 1e-10
    assert rel_err(d2vv, fd_v[1]) < 1e-10
    assert rel_err(dMdq, fd_q[2]) < 1e-10
    # the other route to the mixed tensor: d/dq_j of dtau_dqd[i, k]
    assert rel_err(d2qv, np.swapaxes(fd_q[1], 1, 2)) < 1e-10


def test_symmetries(random_tree):
    _, model = random_tree
    q, qd, qdd = _states(model, 4, seed=5)
    d2qq, d2vv, d2qv, dMdq = hd.id_second_partials(model, q, qd, qdd)
    scale = max(1.0, np.abs(d2qq).max())
    assert np.abs(d2qq - np.swapaxes(d2qq, -1, -2)).max() < 1e-12 * scale
    assert np.abs(d2vv - np.swapaxes(d2vv, -1, -2)).max() < 1e-12 * max(1.0, np.abs(d2vv).max())
    assert np.abs(dMdq - np.swapaxes(dMdq, -2, -3)).max() < 1e-12 * max(1.0, np.abs(dMdq).max())
    # d2tau/dqd2 depends on q only; dM/dq depends on q only
    other = hd.id_second_partials(model, q, 2.0 * qd + 1.0, -qdd)
    assert rel_err(other[1], d2vv) < 1e-12
    assert rel_err(other[3], dMdq) < 1e-12


def test_directional_equals_contracted_tensors(random_tree):
    _, model = random_tree
    rng = np.random.default_rng(2)
    q, qd, qdd, dq, dqd, dqdd = rng.uniform(-1, 1, (6, 3, model.n_dof))
    d2qq, d2vv, d2qv, dMdq = hd.id_second_partials(model, q, qd, qdd)
    DTq, DTv, DM = hd.algorithms.id_partials_directional(model, q, qd, qdd, dq, dqd, dqdd)
    ein = np.einsum
    assert rel_err(DTq, ein("bijk,bk->bij", d2qq, dq) + ein("bijk,bk->bij", d2qv, dqd)
                   + ein("bikj,bk->bij", dMdq, dqdd)) < 1e-12
    assert rel_err(DTv, ein("bikj,bk->bij", d2qv, dq) + ein("bijk,bk->bij", d2vv, dqd)) < 1e-12
    assert rel_err(DM, ein("bijk,bk->bij", dMdq, dq)) < 1e-12


# -- rebuilding tau_dot and tau_ddot from the partials ------------------------------------------
def _check_rebuild(model):
    n = model.n_dof
    jet = sinusoid_jet(n, np.linspace(0.0, 3.0, 5), 5, seed=4)  # (5, 5, n): q .. q^(4)
    q, qd, qdd, q3, q4 = np.moveaxis(jet, 1, 0)
    ref = hd.time_derivatives(model, jet, 2, method="recursive")
    Tq, Tv, M = hd.id_partials(model, q, qd, qdd)
    mv = lambda A, x: np.einsum("...ij,...j->...i", A, x)  # noqa: E731
    tau_d = mv(Tq, qd) + mv(Tv, qdd) + mv(M, q3)
    assert rel_err(tau_d, ref[:, 1]) < 1e-10
    # from the full tensors (tau_dd = d/dt of tau_d = dtau_dq qd + dtau_dqd qdd + M q3)
    d2qq, d2vv, d2qv, dMdq = hd.id_second_partials(model, q, qd, qdd)
    ein = np.einsum
    tau_dd = (ein("bijk,bj,bk->bi", d2qq, qd, qd) + 2 * ein("bijk,bj,bk->bi", d2qv, qd, qdd)
              + ein("bijk,bj,bk->bi", d2vv, qdd, qdd) + 2 * ein("bijk,bk,bj->bi", dMdq, qd, q3)
              + mv(Tq, qdd) + mv(Tv, q3) + mv(M, q4))
    assert rel_err(tau_dd, ref[:, 2]) < 1e-10
    # from the O(n^2) directional route
    fast = hd.algorithms.id_second_order_rate(model, q, qd, qdd, q3) + mv(Tq, qdd) + mv(Tv, q3) + mv(M, q4)
    assert rel_err(fast, ref[:, 2]) < 1e-10


def test_rebuild_time_derivatives_robots(panda, iiwa, planar_2r):
    for model in (panda, iiwa, planar_2r):
        _check_rebuild(model)


def test_rebuild_time_derivatives_random_tree(random_tree):
    _check_rebuild(random_tree[1])


# -- bad input ------------------------------------------------------------------------------------
@pytest.mark.parametrize("func", ["id_partials", "id_second_partials", "id_partials_directional",
                                  "id_second_order_rate"])
def test_bad_input_raises(func, planar_2r):
    f = getattr(hd, func)
    extra = {"id_partials_directional": 3, "id_second_order_rate": 1}.get(func, 0)
    good = [np.zeros(2)] * (3 + extra)
    names = ["q", "qd", "qdd", "dq", "dqd", "dqdd"] if extra == 3 else ["q", "qd", "qdd", "q3"]
    f(planar_2r, *good)
    for k, name in enumerate(names[:3 + extra]):
        args = list(good)
        args[k] = np.zeros(3)
        with pytest.raises(hd.InputError, match=rf"^{name} must have shape"):
            f(planar_2r, *args)
        args[k] = np.array([0.0, np.nan])
        with pytest.raises(hd.InputError, match=rf"^{name} holds a non-finite"):
            f(planar_2r, *args)
    with pytest.raises(hd.InputError, match="do not broadcast"):
        f(planar_2r, np.zeros((2, 2)), np.zeros((3, 2)), *good[2:])


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("func", ["id_partials", "id_second_partials"])
def test_non_finite_named_in_the_callers_batch_shape(func, backend, panda):
    """The compiled kernels test finiteness themselves; the error still names the argument
    and the index in the shape the caller passed, and nothing is returned."""
    q, qd, qdd = np.zeros((3, 2, 3, 7))
    qd = qd.copy()
    qd[1, 2, 5] = np.inf
    with pytest.raises(hd.InputError, match=r"^qd holds a non-finite value at index "
                                            r"\(1, 2, 5\) \(joint '"):
        getattr(hd, func)(panda, q, qd, qdd, backend=backend)
    # broadcast input: a one-row qdd with a NaN is named as the caller gave it
    row = np.zeros((1, 7))
    row[0, 6] = np.nan
    with pytest.raises(hd.InputError, match=r"^qdd holds a non-finite value at index \(0, 6\)"):
        getattr(hd, func)(panda, q, np.zeros((2, 3, 7)), row, backend=backend)


def test_second_order_blocks_agree(panda, monkeypatch):
    """Large batches run in blocks; the blocked result equals the one-block result."""
    import hod_dynamics.algorithms.second_partials as second_partials

    q, qd, qdd = _states(panda, 5, seed=9)
    whole = hd.id_second_partials(panda, q, qd, qdd)
    monkeypatch.setattr(second_partials, "_SECOND_ORDER_BLOCK", 2 * 7 ** 3)  # blocks of 2 samples
    for a, b in zip(whole, hd.id_second_partials(panda, q, qd, qdd)):
        np.testing.assert_allclose(b, a, rtol=0, atol=1e-12 * np.abs(a).max())


@pytest.mark.parametrize("backend", BACKENDS)
def test_second_partials_into_caller_arrays(panda, backend):
    """``out=``: the tensors land in the caller's arrays (returned as they are), the same
    numbers as freshly allocated ones, and a wrong array is refused by name before anything
    is written."""
    q, qd, qdd = _states(panda, 3, seed=4)
    out = tuple(np.full((3, 7, 7, 7), np.nan) for _ in range(4))
    got = hd.id_second_partials(panda, q, qd, qdd, backend=backend, out=out)
    assert all(a is b for a, b in zip(got, out))
    for a, b in zip(out, hd.id_second_partials(panda, q, qd, qdd, backend=backend)):
        np.testing.assert_array_equal(a, b)
    bad = [out[:3], out[:3] + (np.empty((3, 7, 7, 7), dtype=np.float32),),
           out[:2] + (np.empty((2, 7, 7, 7)), out[3]), out[:3] + (np.empty((3, 7, 7, 14))[..., ::2],)]
    for wrong, message in zip(bad, ["out must be a tuple of 4 arrays", r"out\[3\] .* float32",
                                    r"out\[2\] .* shape \(3, 7, 7, 7\), got shape "
                                    r"\(2, 7, 7, 7\)$", r"out\[3\] must be a writable C-.* got "
                                    r"an array that is not C-contiguous$"]):
        with pytest.raises(hd.InputError, match=message):
            hd.id_second_partials(panda, q, qd, qdd, backend=backend, out=wrong)


@pytest.mark.parametrize("backend", BACKENDS)
def test_second_partials_out_overwritten_on_a_tree(random_tree, backend):
    """On a branched tree most entries are structurally zero and the compiled kernel writes
    them from a list made once per model: arrays full of NaN, then the same arrays again for
    another state, hold exactly the freshly allocated tensors (one sample and a batch)."""
    _, model = random_tree
    n = model.n_dof
    assert (model.parents[1:] != np.arange(n - 1)).any()  # a tree, not a chain
    states = _states(model, 2, seed=11)
    for batch in ((), (2,)):
        out = tuple(np.full(batch + (n, n, n), np.nan) for _ in range(4))
        for s in range(2):
            q, qd, qdd = (a[s] for a in states) if not batch else (a + s for a in states)
            got = hd.id_second_partials(model, q, qd, qdd, backend=backend, out=out)
            fresh = hd.id_second_partials(model, q, qd, qdd, backend=backend)
            for a, b in zip(got, fresh):
                np.testing.assert_array_equal(a, b)


# -- SecondPartialsData (Pinocchio-style data) ----------------------------------------------------
def _branched_tree_with_zeros(random_tree):
    _, model = random_tree
    n = model.n_dof
    fresh = hd.id_second_partials(model, *(a[0] for a in _states(model, 1, seed=2)))
    assert sum(int(np.count_nonzero(t == 0.0)) for t in fresh) > n ** 3  # many structural zeros
    return model


@pytest.mark.parametrize("backend", BACKENDS)
def test_second_partials_data_equals_fresh_tensors(random_tree, backend):
    """out=SecondPartialsData: the same read-only arrays every call, holding exactly what a
    fresh call returns, call after call (the structural zeros, written once, stay zero), for
    one sample and for a batch shape."""
    model = _branched_tree_with_zeros(random_tree)
    n = model.n_dof
    data = hd.algorithms.SecondPartialsData(model)
    states = _states(model, 4, seed=5)
    first = None
    for s in range(4):
        q, qd, qdd = (a[s] for a in states)
        got = hd.id_second_partials(model, q, qd, qdd, backend=backend, out=data)
        first = first or got
        assert all(a is b for a, b in zip(got, first)) and got == data.tensors
        assert [t.shape for t in got] == [(n, n, n)] * 4
        assert not any(t.flags.writeable for t in got)
        for a, b in zip(got, hd.id_second_partials(model, q, qd, qdd, backend=backend)):
            np.testing.assert_array_equal(a, b)
    batch = hd.algorithms.SecondPartialsData(model, batch_shape=(2, 2))
    shaped = [a.reshape(2, 2, n) for a in states]
    got = hd.id_second_partials(model, *shaped, backend=backend, out=batch)
    assert [t.shape for t in got] == [(2, 2, n, n, n)] * 4
    for a, b in zip(got, hd.id_second_partials(model, *shaped, backend=backend)):
        np.testing.assert_array_equal(a, b)
    assert "batch_shape=(2, 2)" in repr(batch)


def test_second_partials_data_matches_fd_of_pinocchio_talos():
    """TALOS (93 % of its 131,072 entries structurally zero) through a SecondPartialsData,
    against central differences of Pinocchio's first-order partials, twice in a row."""
    model, pr = pinocchio_robot("talos")
    data = hd.algorithms.SecondPartialsData(model)
    states = _states(model, 2, seed=17)
    for s in range(2):
        q, qd, qdd = (a[s] for a in states)
        d2qq, d2vv, d2qv, dMdq = hd.id_second_partials(model, q, qd, qdd, out=data)
        fd_q, fd_v = _pinocchio_fd(pr, q, qd, qdd)
        assert rel_err(d2qq, fd_q[0]) < 1e-6 and rel_err(dMdq, fd_q[2]) < 1e-6
        assert rel_err(d2qv, fd_v[0]) < 1e-6 and rel_err(d2vv, fd_v[1]) < 1e-6


@pytest.mark.parametrize("backend", BACKENDS)
def test_second_partials_data_bad_input_loses_nothing(panda, backend):
    """A NaN, a wrong shape or a wrong batch is refused by name and the data keeps the tensors
    of the last good call; a model of another tree, a floating model and a malformed batch
    shape are refused when the data is used or made; a model of the same tree (a second load
    of the robot, another robot) is served."""
    data = hd.algorithms.SecondPartialsData(panda)
    q, qd, qdd = (a[0] for a in _states(panda, 1, seed=3))
    kept = [t.copy() for t in hd.id_second_partials(panda, q, qd, qdd, backend=backend, out=data)]
    bad = qd.copy()
    bad[4] = np.nan
    for args, message in (((q, bad, qdd), r"^qd holds a non-finite value at index \(4,\)"),
                          ((q, qd, np.zeros(8)), r"^qdd must have shape \(\.\.\., 7\)"),
                          ((q, qd, np.zeros((2, 7))), r"batch shape \(\), the inputs broadcast to batch shape \(2,\)")):
        with pytest.raises(hd.InputError, match=message):
            hd.id_second_partials(panda, *args, backend=backend, out=data)
        for a, b in zip(data.tensors, kept):
            np.testing.assert_array_equal(a, b)
    batch = hd.algorithms.SecondPartialsData(panda, batch_shape=(3,))
    states = _states(panda, 3, seed=4)
    before = [t.copy() for t in hd.id_second_partials(panda, *states, backend=backend, out=batch)]
    late = states + 0.25  # other states, but the last sample's qdd holds an infinity: the
    late[2, 2, 0] = np.inf  # first two must not be written either
    arrays = tuple(t.copy() for t in before)
    for out in (batch, arrays):
        with pytest.raises(hd.InputError, match=r"^qdd holds a non-finite value at index \(2, 0\)"):
            hd.id_second_partials(panda, *late, backend=backend, out=out)
        for a, b in zip(out.tensors if out is batch else out, before):
            np.testing.assert_array_equal(a, b)
    again = hd.RobotModel.from_urdf(erd_path("panda"), locked_joints=ERD_ROBOTS["panda"][1])
    assert again is not panda
    got = hd.id_second_partials(again, q, qd, qdd, backend=backend, out=data)
    for a, b in zip(got, kept):
        np.testing.assert_array_equal(a, b)
    iiwa = hd.load_robot("iiwa14")  # another robot on the same tree (a chain of 7): served
    got = hd.id_second_partials(iiwa, q, qd, qdd, backend=backend, out=data)
    for a, b in zip(got, hd.id_second_partials(iiwa, q, qd, qdd, backend=backend)):
        np.testing.assert_array_equal(a, b)
    with pytest.raises(hd.InputError, match=r"SecondPartialsData of model 'panda' \(7 joints\), "
                                            r"not of a tree like model 'planar_2r' \(2 joints\)"):
        hd.id_second_partials(hd.load_robot("planar_2r"), q[:2], qd[:2], qdd[:2], backend=backend,
                              out=data)
    with pytest.raises(hd.InputError, match="floating-base"):
        hd.algorithms.SecondPartialsData(hd.RobotModel.from_urdf(erd_path("solo12"), floating_base=True))
    for shape in ((-1,), "ab", 3, (2.5,), (True,)):
        with pytest.raises(hd.InputError, match="batch_shape must be a tuple"):
            hd.algorithms.SecondPartialsData(panda, batch_shape=shape)
    with pytest.raises(hd.InputError, match="model must be a hod_dynamics RobotModel"):
        hd.algorithms.SecondPartialsData("panda")


@needs_numba
def test_second_partials_one_sample_path_compiles_nothing_new(panda):
    """The one-sample path hands the caller's arrays to the compiled kernel as they are, and
    numba's dispatch checks their types: read-only, strided, float32, integer, list and
    subclass inputs, and float32 or strided out arrays, give the numbers of the common call
    (or its error) and never make numba compile another variant (seconds in a control loop)."""
    from hod_dynamics.kernels.backend import partials_kernels

    q, qd, qdd = (a[0] for a in _states(panda, 1, seed=8))
    expected = hd.id_second_partials(panda, q, qd, qdd)
    kernel = partials_kernels().run_second
    variants = len(kernel.signatures)
    frozen = q.copy()
    frozen.setflags(write=False)
    for args in ((frozen, qd, qdd), (np.repeat(q, 2)[::2], qd, qdd), (q.astype(np.float32), qd, qdd),
                 (q, qd.tolist(), qdd), (np.zeros(7, dtype=int), qd, qdd),
                 (q.view(np.matrix).A1, qd, qdd)):
        got = hd.id_second_partials(panda, *args)
        reference = hd.id_second_partials(panda, *(np.array(a, dtype=float) for a in args))
        for a, b in zip(got, reference):
            np.testing.assert_array_equal(a, b)
    for a, b in zip(hd.id_second_partials(panda, frozen, qd, qdd), expected):
        np.testing.assert_array_equal(a, b)
    out = tuple(np.empty((7, 7, 7)) for _ in range(4))
    with pytest.raises(hd.InputError, match=r"out\[1\] .* float32"):
        hd.id_second_partials(panda, q, qd, qdd, out=(out[0], out[1].astype(np.float32)) + out[2:])
    with pytest.raises(hd.InputError, match=r"out\[3\] must be a writable C-contiguous"):
        hd.id_second_partials(panda, q, qd, qdd, out=out[:3] + (np.empty((7, 7, 14))[..., ::2],))
    assert len(kernel.signatures) == variants == 1


@needs_numba
def test_second_partials_from_threads_at_once(random_tree):
    """The compiled kernel runs without the GIL and keeps a work array per thread: calls from
    several threads at once, plain and into a data of their own, give each its own numbers."""
    from concurrent.futures import ThreadPoolExecutor

    model = _branched_tree_with_zeros(random_tree)
    states = _states(model, 6, seed=21)
    expected = [hd.id_second_partials(model, *(a[s] for a in states)) for s in range(6)]

    def worker(s):
        data = hd.algorithms.SecondPartialsData(model)
        for _ in range(30):
            for t in (s, (s + 3) % 6):
                args = [a[t] for a in states]
                for got in (hd.id_second_partials(model, *args),
                            hd.id_second_partials(model, *args, out=data)):
                    if not all(np.array_equal(a, b) for a, b in zip(got, expected[t])):
                        return False
        return True

    with ThreadPoolExecutor(3) as pool:
        assert all(pool.map(worker, range(3)))


@pytest.mark.parametrize("backend", BACKENDS)
def test_second_partials_inputs_that_are_views_of_out(backend, monkeypatch):
    """An input that shares memory with an out array (a view of it) is read before anything
    is written: the same numbers as from separate inputs, one sample and a batch (a batch's
    later samples, or the numpy path's later blocks, would otherwise be read after the
    earlier ones overwrote them)."""
    import hod_dynamics.algorithms.second_partials as second_partials

    model = hd.load_robot("iiwa14")
    monkeypatch.setattr(second_partials, "_SECOND_ORDER_BLOCK", 7 ** 3)  # numpy: blocks of 1 sample
    for batch in ((), (2,), (3,)):
        states = _states(model, 3, seed=31)[:, :batch[0] if batch else 1]
        states = states.reshape((3,) + batch + (7,))
        expected = hd.id_second_partials(model, *states, backend=backend)
        for which in range(3):
            for t in range(4):
                out = tuple(np.zeros(batch + (7, 7, 7)) for _ in range(4))
                # a C-contiguous (B, 7) block inside the first sample's tensor
                view = out[t][(0,) * len(batch) + (0, slice(0, batch[0]))] if batch else out[t][0, 0]
                view[...] = states[which]
                args = [view if k == which else states[k] for k in range(3)]
                hd.id_second_partials(model, *args, backend=backend, out=out)
                for a, b in zip(out, expected):
                    np.testing.assert_array_equal(a, b, err_msg=f"batch {batch}, input {which}, out[{t}]")


@pytest.mark.parametrize("backend", BACKENDS)
def test_second_partials_out_faults_named_and_subclasses_served(panda, backend):
    """Every route takes the same out arrays: an ndarray subclass is written like an ndarray
    (one sample and a batch); a read-only or misfit array is refused naming what is wrong."""
    class Tensor(np.ndarray):
        pass

    for batch in ((), (2,)):
        states = _states(panda, 2, seed=6)[:, :batch[0] if batch else 1].reshape((3,) + batch + (7,))
        out = tuple(np.zeros(batch + (7, 7, 7)).view(Tensor) for _ in range(4))
        got = hd.id_second_partials(panda, *states, backend=backend, out=out)
        assert all(a is b for a, b in zip(got, out))
        for a, b in zip(out, hd.id_second_partials(panda, *states, backend=backend)):
            np.testing.assert_array_equal(a, b)
        frozen = np.zeros(batch + (7, 7, 7))
        frozen.setflags(write=False)
        for wrong, fault in ((frozen, "a read-only array"),
                             (np.zeros(batch + (7, 7, 7), dtype=np.float32), "dtype float32"),
                             (np.zeros(batch + (7, 7, 7), order="F") if batch else np.zeros((7, 7, 14))[..., ::2],
                              "an array that is not C-contiguous"),
                             ([0.0], "list")):
            with pytest.raises(hd.InputError, match=r"^out\[2\] must be a writable C-contiguous "
                                                    rf"float64 array of shape .*, got {fault}$"):
                hd.id_second_partials(panda, *states, backend=backend,
                                      out=(out[0], out[1], wrong, out[3]))


@needs_numba
def test_second_partials_data_after_numpy_then_numba(random_tree):
    """The numpy backend computes the structurally zero entries to rounding (1e-16, not 0),
    which the compiled kernel into a SecondPartialsData never writes: after a numpy fill the
    next compiled one clears them, so the data equals a fresh compiled call exactly (one
    sample and a batch)."""
    model = _branched_tree_with_zeros(random_tree)
    n = model.n_dof
    states = _states(model, 6, seed=13)
    for batch, pick in (((), lambda s: [a[s] for a in states]),
                        ((2,), lambda s: [a[2 * (s % 2):2 * (s % 2) + 2] for a in states])):
        data = hd.algorithms.SecondPartialsData(model, batch_shape=batch)
        for s, backend in enumerate(("numpy", "numpy", "numba", "numpy", "numba", "numba")):
            got = hd.id_second_partials(model, *pick(s), backend=backend, out=data)
            fresh = hd.id_second_partials(model, *pick(s), backend=backend)
            for a, b in zip(got, fresh):
                np.testing.assert_array_equal(a, b, err_msg=f"batch {batch}, call {s} ({backend})")
        assert got[0].shape == batch + (n, n, n)


@needs_numba
def test_second_partials_first_use_from_threads_at_once():
    """A fresh process whose first second-order partials come from six threads at once, each
    on its own model: every thread gets its tensors. (The one-sample kernel may compile one
    variant only; a thread that waited for numba's compiler while another finished its first
    run must find that variant, not a disabled compiler.)"""
    import os
    import subprocess
    import sys

    code = """
import sys, threading
import numpy as np
sys.path.insert(0, sys.argv[1])
import hod_dynamics as hd
from oracles import random_urdf
models = [hd.load_robot("iiwa14")] + [hd.RobotModel.from_urdf(random_urdf(5 + i, i)) for i in range(5)]
hd.inverse_dynamics(models[0], np.zeros(7), np.zeros(7), np.zeros(7))  # numba imported
barrier, failed = threading.Barrier(len(models)), []
def first_use(model):
    q, qd, qdd = np.random.default_rng(0).uniform(-1, 1, (3, model.n_dof))
    barrier.wait()
    try:
        got = hd.id_second_partials(model, q, qd, qdd, backend="numba")
        ref = hd.id_second_partials(model, q, qd, qdd, backend="numpy")
        assert all(np.allclose(a, b, rtol=1e-10, atol=1e-10) for a, b in zip(got, ref))
    except Exception as exc:
        failed.append(f"{model.name}: {type(exc).__name__}: {exc}")
threads = [threading.Thread(target=first_use, args=(m,)) for m in models]
[t.start() for t in threads]
[t.join() for t in threads]
print(failed)
"""
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    for _ in range(2):
        run = subprocess.run([sys.executable, "-c", code, os.path.join(root, "test")], cwd=root,
                             capture_output=True, text=True, timeout=300)
        assert run.returncode == 0, run.stderr
        assert run.stdout.strip() == "[]", run.stdout
