"""Benchmark: hod_dynamics against Pinocchio's Python routes, one command, under 3 minutes.

Times in one run, on the Panda (example-robot-data, fingers locked), TALOS (reduced) and a
50-link revolute chain:

- ``hd.time_derivatives`` order 2 and 4, one sample and a batch of 10,000 (us per sample),
  on the default backend (numba when installed; large batches shared by
  ``HOD_DYNAMICS_THREADS`` threads, default one per CPU), order 2 batched on one thread too,
  and, for order 2, on the numpy backend;
- ``hd.id_partials`` and ``hd.id_second_partials`` (one sample; the latter on both backends);
- Pinocchio: ``rnea``; ``computeRNEADerivatives``; the exact first derivative
  ``tau_d = T_q qd + T_v qdd + M q3``; and the route to (tau, tau_d, tau_dd) a Python user has
  (``rnea`` + ``tau_dd`` by a 7-point central difference of that exact ``tau_d``, 7 calls of
  ``computeRNEADerivatives``; neighbouring states from the Taylor polynomial of the jet,
  prepared outside the timed region). Batched Pinocchio rows loop in Python over 1,000 samples.

Floating-base rows (Solo 12, TALOS with a free base; Pinocchio's free flyer in the same run):
``hd.inverse_dynamics``, ``hd.time_derivatives`` order 2 and 4, ``hd.id_partials``,
``hd.mass_matrix`` beside ``rnea``, ``computeRNEADerivatives`` and the FD route.

Then scaling in the number of bodies (chains of 7, 14, 28, 56 joints) and in the order (0..6,
Panda), a 1,000,000-sample profile (time and peak traced memory), the one-sample cost of every
public entry point beside its compiled kernel's own (and Pinocchio's ``crba`` from Python
beside ``mass_matrix``), and the first calls after an install: new processes with an empty
cache of compiled code (``NUMBA_CACHE_DIR``), then with the cache filled.
Medians over repeats; ratios are ours / Pinocchio's route at the same batch size.
Run: ``python bench/bench_speed.py`` (``--quick`` for a shorter run).
"""

import os
import statistics
import subprocess
import sys
import tempfile
import time
import tracemalloc
from unittest import mock

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path[:0] = [HERE, os.path.join(HERE, "..", "test"), os.path.join(HERE, "..")]

import hod_dynamics as hd  # noqa: E402
from bench_partials import median_time  # noqa: E402
from hod_dynamics.kernels.backend import THREADS_ENV_VAR, compute_threads, resolve_backend  # noqa: E402
from oracles import (CENTRAL_7, PinocchioRobot, chain_urdf, floating_pinocchio_robot,  # noqa: E402
                     pinocchio_robot, random_floating_state)

BATCH = 10_000
PIN_BATCH = 1_000
H = 1e-3  # finite-difference step of the Pinocchio route (s)
BUDGET = 0.6


class PinRoutes:
    """Pinocchio's Python routes on states already in Pinocchio's coordinates."""

    def __init__(self, pr, jets):
        self.pin, self.pm, self.data = pr.pin, pr.model, pr.data
        # per sample: (q, qd, qdd, q3, ...) in Pinocchio's coordinates
        self.jets = [[pr.q(x) if r == 0 else pr.v(x) for r, x in enumerate(j)] for j in jets]
        self.vidx = pr.vidx
        self.lower = np.tril_indices(pr.model.nv, -1)
        # neighbouring states t0 + m H (m = -3..3) from the Taylor polynomial of each jet
        shifts = []
        for jet in jets:
            rows = []
            for m in range(-3, 4):
                d = m * H
                st = [sum(jet[r + k] * d ** k / np.prod(np.arange(1, k + 1))
                          for k in range(len(jet) - r)) for r in range(4)]
                rows.append((pr.q(st[0]), pr.v(st[1]), pr.v(st[2]), pr.v(st[3])))
            shifts.append(rows)
        self.shifts = shifts

    def rnea(self, s=0):
        q, v, a = self.jets[s][:3]
        return self.pin.rnea(self.pm, self.data, q, v, a)

    def aba(self, s=0):
        """Forward dynamics with the torque array in the place of qdd (any torque will do)."""
        q, v, a = self.jets[s][:3]
        return self.pin.aba(self.pm, self.data, q, v, a)

    def derivatives(self, s=0):
        q, v, a = self.jets[s][:3]
        return self.pin.computeRNEADerivatives(self.pm, self.data, q, v, a)

    def _tau_d(self, q, v, a, j):
        dq, dv, M = self.pin.computeRNEADerivatives(self.pm, self.data, q, v, a)
        M[self.lower] = M.T[self.lower]  # Pinocchio fills the upper triangle only
        return dq @ v + dv @ a + M @ j

    def tau_d(self, s=0):
        return self._tau_d(*self.jets[s][:4])

    def fd_route(self, s=0):
        """(tau, tau_d, tau_dd): exact tau, tau_d; tau_dd by 7-point differences of tau_d."""
        rows = self.shifts[s]
        tau = self.pin.rnea(self.pm, self.data, *rows[3][:3])
        tds = [self._tau_d(*st) for st in rows]
        tdd = sum(c * td for c, td in zip(CENTRAL_7, tds)) / H
        return tau, tds[3], tdd

    def loop(self, f, count):
        for s in range(count):
            f(s)


def one_thread():
    """Large batches on one thread (HOD_DYNAMICS_THREADS=1), to show what the threads add."""
    return mock.patch.dict(os.environ, {THREADS_ENV_VAR: "1"})


def jets_for(model, count, rows, seed=0):
    rng = np.random.default_rng(seed)
    scale = 1.0 / (1.0 + np.arange(rows))[:, None]  # milder high derivatives
    return rng.uniform(-1, 1, (count, rows, model.n_dof)) * scale


def us(t):
    return f"{t * 1e6:.1f}"


def bench_robot(name, model, pr, quick):
    n = model.n_dof
    B = 1_000 if quick else BATCH
    j2, j4 = jets_for(model, B, 5), jets_for(model, B, 7)
    routes = PinRoutes(pr, j2[:PIN_BATCH])
    pin_1 = {"rnea": median_time(routes.rnea, BUDGET),
             "rnea_derivatives": median_time(routes.derivatives, BUDGET),
             "aba": median_time(routes.aba, BUDGET),
             "tau_d": median_time(routes.tau_d, BUDGET),
             "fd_route": median_time(routes.fd_route, BUDGET)}
    pin_B = {"fd_route": median_time(lambda: routes.loop(routes.fd_route, 200), BUDGET) / 200,
             "rnea_derivatives": median_time(lambda: routes.loop(routes.derivatives, PIN_BATCH),
                                             BUDGET) / PIN_BATCH,
             "aba": median_time(lambda: routes.loop(routes.aba, PIN_BATCH), BUDGET) / PIN_BATCH}
    # accuracy of the Pinocchio route against the exact jets (same samples)
    ours = hd.time_derivatives(model, j2[:20], 2)
    fd = np.array([np.array(routes.fd_route(s)[2])[routes.vidx] for s in range(20)])
    fd_err = np.max(np.abs(fd - ours[:, 2])) / np.max(np.abs(ours[:, 2]))
    rows, times = [], {}

    def add(label, batch, t, ref_key):
        ref = (pin_1 if batch == 1 else pin_B)[ref_key]
        times[label, 1 if batch == 1 else "batch"] = (t, t / ref)
        rows.append(f"| {name} (n={n}) | {label} | {batch} | {us(t)} | {t / ref:.3f} |")

    for key, label in (("rnea", "pin.rnea"), ("aba", "pin.aba"), ("rnea_derivatives", "pin.computeRNEADerivatives"),
                       ("tau_d", "pin exact tau_d"), ("fd_route", "pin tau, tau_d, tau_dd (FD)")):
        add(label, 1, pin_1[key], key)
    add("pin tau, tau_d, tau_dd (FD), Python loop", PIN_BATCH, pin_B["fd_route"], "fd_route")
    for order, jet in ((2, j2), (4, j4)):
        add(f"hd.time_derivatives order {order}", 1,
            median_time(lambda: hd.time_derivatives(model, jet[0], order), BUDGET), "fd_route")
        add(f"hd.time_derivatives order {order}", B,
            median_time(lambda: hd.time_derivatives(model, jet, order), BUDGET) / B, "fd_route")
    with one_thread():
        add("hd.time_derivatives order 2, one thread", B,
            median_time(lambda: hd.time_derivatives(model, j2, 2), BUDGET) / B, "fd_route")
    add("hd.time_derivatives order 2, numpy backend", 1, median_time(
        lambda: hd.time_derivatives(model, j2[0], 2, backend="numpy"), BUDGET), "fd_route")
    Bn = min(B, 1000)
    add("hd.time_derivatives order 2, numpy backend", Bn, median_time(
        lambda: hd.time_derivatives(model, j2[:Bn], 2, backend="numpy"), BUDGET) / Bn, "fd_route")
    q, qd, qdd = j2[0, 0], j2[0, 1], j2[0, 2]
    add("hd.id_partials", 1, median_time(lambda: hd.id_partials(model, q, qd, qdd), BUDGET),
        "rnea_derivatives")
    add("hd.id_second_partials", 1,
        median_time(lambda: hd.id_second_partials(model, q, qd, qdd), BUDGET), "rnea_derivatives")
    add("hd.id_second_partials, numpy backend", 1, median_time(
        lambda: hd.id_second_partials(model, q, qd, qdd, backend="numpy"), BUDGET),
        "rnea_derivatives")
    # forward dynamics: M from the partials kernel and an LU solve, against Pinocchio's ABA
    add("hd.forward_dynamics", 1, median_time(lambda: hd.forward_dynamics(model, q, qd, qdd), BUDGET), "aba")
    qB, qdB, tauB = j2[:PIN_BATCH, 0], j2[:PIN_BATCH, 1], j2[:PIN_BATCH, 2]
    add("hd.forward_dynamics", PIN_BATCH, median_time(lambda: hd.forward_dynamics(model, qB, qdB, tauB), BUDGET)
        / PIN_BATCH, "aba")
    rows.append(f"| {name} (n={n}) | (error of the Pinocchio FD tau_dd, relative to max) | | "
                f"{fd_err:.1e} | |")
    return rows, times


def bench_floating(name, quick):
    """Floating-base rows (free base, Pinocchio's JointModelFreeFlyer in the same run): tau,
    partials and the FD route to (tau, tau_d, tau_dd) as for the fixed-base robots; the
    neighbouring states of the FD route are ``pin.integrate`` of the velocity's Taylor
    polynomial (the timing of the route; its accuracy is measured for fixed bases above)."""
    model, pr = floating_pinocchio_robot(name)
    pin, pm, data = pr.pin, pr.model, pr.data
    n, B = model.n_dof, (1_000 if quick else BATCH)
    rng = np.random.default_rng(0)
    q, v, a = random_floating_state(model, rng, (B,))
    vjet2 = np.stack([v, a, 0.5 * a[::-1], 0.3 * v[::-1]], axis=-2)  # v and 3 derivatives
    vjet4 = np.concatenate([vjet2, 0.2 * vjet2[:, :2]], axis=-2)
    pq, pv, pa, pj = pr.q(q[0]), pr.v(v[0]), pr.v(a[0]), pr.v(vjet2[0, 2])
    lower = np.tril_indices(pm.nv, -1)

    def tau_d(qq, vv, aa, jj):
        dq, dv, M = pin.computeRNEADerivatives(pm, data, qq, vv, aa)
        M[lower] = M.T[lower]
        return dq @ vv + dv @ aa + M @ jj

    pv3 = pr.v(vjet2[0, 3])
    shifts = []
    for m in range(-3, 4):
        d = m * H
        shifts.append((pin.integrate(pm, pq, pv * d + pa * d * d / 2 + pj * d ** 3 / 6),
                       pv + pa * d + pj * d * d / 2, pa + pj * d + pv3 * d * d / 2, pj + pv3 * d))

    def fd_route():
        tau = pin.rnea(pm, data, *shifts[3][:3])
        tds = [tau_d(*st) for st in shifts]
        return tau, tds[3], sum(c * td for c, td in zip(CENTRAL_7, tds)) / H

    pin_1 = {"rnea": median_time(lambda: pin.rnea(pm, data, pq, pv, pa), BUDGET),
             "rnea_derivatives": median_time(
                 lambda: pin.computeRNEADerivatives(pm, data, pq, pv, pa), BUDGET),
             "tau_d": median_time(lambda: tau_d(pq, pv, pa, pj), BUDGET),
             "fd_route": median_time(fd_route, BUDGET)}
    rows = []

    def add(label, batch, t, ref_key):
        rows.append(f"| {name} floating (n=6+{n}) | {label} | {batch} | {us(t)} | "
                    f"{t / pin_1[ref_key]:.3f} |")

    for key, label in (("rnea", "pin.rnea (free flyer)"),
                       ("rnea_derivatives", "pin.computeRNEADerivatives"),
                       ("tau_d", "pin exact tau_d"), ("fd_route", "pin tau, tau_d, tau_dd (FD)")):
        add(label, 1, pin_1[key], key)
    add("hd.inverse_dynamics", 1,
        median_time(lambda: hd.inverse_dynamics(model, q[0], v[0], a[0]), BUDGET), "rnea")
    for order, jet in ((2, vjet2), (4, vjet4)):
        add(f"hd.time_derivatives order {order}", 1,
            median_time(lambda: hd.time_derivatives_floating(model, q[0], jet[0], order), BUDGET),
            "fd_route")
        add(f"hd.time_derivatives order {order}", B,
            median_time(lambda: hd.time_derivatives_floating(model, q, jet, order), BUDGET) / B,
            "fd_route")
    Bn = min(B, 1000)
    add("hd.time_derivatives order 2, numpy backend", Bn, median_time(
        lambda: hd.time_derivatives_floating(model, q[:Bn], vjet2[:Bn], 2, backend="numpy"), BUDGET) / Bn,
        "fd_route")
    add("hd.id_partials", 1,
        median_time(lambda: hd.id_partials(model, q[0], v[0], a[0]), BUDGET), "rnea_derivatives")
    add("hd.id_partials, numpy backend", 1, median_time(
        lambda: hd.id_partials(model, q[0], v[0], a[0], backend="numpy"), BUDGET),
        "rnea_derivatives")
    add("hd.mass_matrix", 1, median_time(lambda: hd.mass_matrix(model, q[0]), BUDGET),
        "rnea_derivatives")
    return rows


def robots(quick):
    model, pr = pinocchio_robot("panda")
    yield "panda", model, pr
    if not quick:
        model, pr = pinocchio_robot("talos")
        yield "talos", model, pr
    text = chain_urdf(50)
    model = hd.RobotModel.from_urdf(text)
    yield "chain50", model, PinocchioRobot(text, model)


def scaling_dof(quick):
    """Order-2 cost on chains of 7..56 joints; returns the growth exponent of the batched cost
    on one thread (slope of log time against log joints: 1 is linear). The batched times are
    taken in interleaved rounds (each size once per round, median over rounds), so a change
    of the machine's speed during the run does not bend the slope."""
    print("\n| chain joints | hd order 2, 1 sample (us) | hd order 2, batch, one thread "
          "(us/sample) | batch per joint (us) | pin FD route, 1 sample (us) | hd single / pin |")
    print("| ---: | ---: | ---: | ---: | ---: | ---: |")
    B = 1_000 if quick else BATCH
    sizes = (7, 14, 28, 56)
    cases = []
    for n in sizes:
        text = chain_urdf(n)
        model = hd.RobotModel.from_urdf(text)
        cases.append((text, model, jets_for(model, B, 5)))
    rounds = [[] for _ in sizes]
    with one_thread():  # the algorithm's growth, without the noise of sharing cores
        for _, model, jet in cases:
            hd.time_derivatives(model, jet, 2)
        for _ in range(9):
            for times, (_, model, jet) in zip(rounds, cases):
                t0 = time.perf_counter()
                hd.time_derivatives(model, jet, 2)
                times.append((time.perf_counter() - t0) / B)
    batched = [statistics.median(times) for times in rounds]
    for n, tB, (text, model, jet) in zip(sizes, batched, cases):
        t1 = median_time(lambda: hd.time_derivatives(model, jet[0], 2), BUDGET)
        routes = PinRoutes(PinocchioRobot(text, model), jet[:1])
        tp = median_time(routes.fd_route, BUDGET)
        print(f"| {n} | {us(t1)} | {us(tB)} | {tB / n * 1e6:.3f} | {us(tp)} | {t1 / tp:.3f} |",
              flush=True)
    exponent = np.polyfit(np.log(sizes), np.log(batched), 1)[0]
    print(f"\ngrowth of the batched cost (one thread) with the number of joints: "
          f"t ~ n^{exponent:.2f}")
    return exponent


def scaling_order(model, quick):
    print("\n| order (Panda) | 1 sample (us) | batch (us/sample) |")
    print("| ---: | ---: | ---: |")
    B = 1_000 if quick else BATCH
    for order in range(7):
        jet = jets_for(model, B, order + 3)
        t1 = median_time(lambda: hd.time_derivatives(model, jet[0], order), BUDGET)
        tB = median_time(lambda: hd.time_derivatives(model, jet, order), BUDGET) / B
        print(f"| {order} | {us(t1)} | {us(tB)} |", flush=True)


def million(model):
    """A 1,000,000-sample order-2 profile: wall time and peak memory traced beyond the input."""
    jet = jets_for(model, 1_000_000, 5)
    tracemalloc.start()
    t0 = time.perf_counter()
    out = hd.time_derivatives(model, jet, 2)
    dt = time.perf_counter() - t0
    peak = tracemalloc.get_traced_memory()[1]
    tracemalloc.stop()
    print(f"\n1,000,000 samples, Panda order 2: {dt:.2f} s ({us(dt / 1e6)} us per sample); peak "
          f"traced memory {peak / 2**20:.0f} MB, of which the result is "
          f"{out.nbytes / 2**20:.0f} MB (input {jet.nbytes / 2**20:.0f} MB, not counted)")
    return peak - out.nbytes


def per_call(f, inner, repeats=9):
    """Median over ``repeats`` of the thread's CPU time (s) per call of f, timed over ``inner``
    calls (one call lasts about a microsecond: a single timing would measure the clock)."""
    f()
    times = []
    for _ in range(repeats):
        t0 = time.thread_time()
        for _ in range(inner):
            f()
        times.append((time.thread_time() - t0) / inner)
    return statistics.median(times)


def one_sample_routes(model, pr):
    """(entry point, kernel call, public call) of every public entry point on one sample: the
    kernel is the compiled function called directly on prepared arrays (its numba caller, as
    the entry point calls it); the public call is what a user writes."""
    from hod_dynamics.kernels import partials_ir as P
    from hod_dynamics.kernels import rnea_ir as R
    from hod_dynamics.algorithms import dispatch
    from hod_dynamics.algorithms.second_partials import _second_plan

    n = model.n_dof
    rng = np.random.default_rng(7)
    q, qd, qdd = rng.uniform(-1, 1, (3, n))
    geo = R.geometry(model)
    R.prepare_one_sample()
    routes = []
    for order in (0, 1, 2, 3, 4):
        jet = rng.uniform(-1, 1, (order + 3, n))
        out, a = np.empty((order + 1, n)), R.kernel_address(order + 1, 1)
        routes.append((f"time_derivatives order {order}",
                       lambda a=a, jet=jet, out=out: R.run_one(a, geo, jet, out),
                       lambda jet=jet, order=order: hd.time_derivatives(model, jet, order)))
    out = np.empty(n)
    a = R.kernel_address(1, 1, False, "state")
    routes.append(("inverse_dynamics", lambda a=a: R.run_state(a, geo, q, qd, qdd, out),
                   lambda: hd.inverse_dynamics(model, q, qd, qdd)))
    a = R.kernel_address(1, 1, False, "gravity")
    routes.append(("gravity_torques", lambda a=a: R.run_gravity(a, geo, q, out), lambda: hd.gravity_torques(model, q)))
    plan = dispatch.world_plan(model)
    for which, caller, args, shape, call in (
            ("crba", P.run_mass, (q,), (n, n), lambda: hd.mass_matrix(model, q)),
            ("forward_dynamics", P.run_forward, (q, qd, qdd), (n,),
             lambda: hd.forward_dynamics(model, q, qd, qdd)),
            ("first_partials", P.run_first, (q, qd, qdd), (3, n, n),
             lambda: hd.id_partials(model, q, qd, qdd))):
        P.prepare(caller)
        a, o = P.kernel_address(which), np.empty(shape)
        label = {"crba": "mass_matrix", "first_partials": "id_partials"}.get(which, which)
        routes.append((label, lambda a=a, o=o, caller=caller, args=args: caller(a, plan.model, *args, o),
                       call))
    hd.id_second_partials(model, q, qd, qdd)
    sp = _second_plan(model)
    T, work, a = np.empty((4, n, n, n)), np.empty(sp.work), P.kernel_address("second_partials")
    routes.append(("id_second_partials",
                   lambda: P.run_second(a, sp.model, q, qd, qdd, T[0], T[1], T[2], T[3], work, True),
                   lambda: hd.id_second_partials(model, q, qd, qdd)))
    pq = pr.q(q)
    routes.append(("Pinocchio crba from Python", None,
                   lambda: pr.pin.crba(pr.model, pr.data, pq)))
    return routes


def entry_points(robots_):
    """The one-sample cost of every public entry point against its kernel's own (interleaved
    rounds: entry point and kernel back to back, best median over the rounds)."""
    if resolve_backend() != "numba":
        return {}
    print("\n| robot | entry point, one sample | entry point (us) | its kernel (us) | entry / kernel |")
    print("| --- | --- | ---: | ---: | ---: |")
    results = {}
    for name, model, pr in robots_:
        routes = one_sample_routes(model, pr)
        inner = max(20, int(2000 / model.n_dof))
        best = {}
        for _ in range(5):
            for label, kernel, call in routes:
                for key, f in (("kernel", kernel), ("entry", call)):
                    if f is not None:
                        t = per_call(f, inner, 5)
                        best[label, key] = min(best.get((label, key), np.inf), t)
        for label, kernel, _ in routes:
            e = best[label, "entry"]
            k = best.get((label, "kernel"))
            ratio = f"{e / k:.2f}" if k else ""
            print(f"| {name} (n={model.n_dof}) | {label} | {us(e)} | {us(k) if k else ''} | {ratio} |")
        results[name] = best
    return results


COLD_SNIPPET = """
import sys, time
t0 = time.perf_counter()
import numpy as np
import hod_dynamics as hd
model = hd.load_robot("iiwa14")
t1 = time.perf_counter()
z = np.zeros(7)
calls = {"time_derivatives": lambda: hd.time_derivatives(model, np.zeros((5, 7)), 2),
         "id_second_partials": lambda: hd.id_second_partials(model, z, z, z),
         "every kernel": lambda: [
             hd.time_derivatives(model, np.zeros(b + (k + 3, 7)), k) for b in ((), (20,))
             for k in range(5)] + [
             f(model, *a) for f in (hd.inverse_dynamics, hd.forward_dynamics, hd.id_partials,
                                    hd.id_second_partials)
             for a in ((z, z, z), (np.zeros((20, 7)), z, z))] + [
             hd.gravity_torques(model, z), hd.gravity_torques(model, np.zeros((20, 7))),
             hd.mass_matrix(model, z), hd.mass_matrix(model, np.zeros((20, 7)))]}
first = calls[sys.argv[1]]()
print(t1 - t0, time.perf_counter() - t1)
"""


def compile_time():
    """First calls after an install: each in a new process with an empty cache of compiled
    code (NUMBA_CACHE_DIR, which the generated kernels share), then again with the cache
    filled. Wall time, on this machine as it is (load printed)."""
    if resolve_backend() != "numba":
        print("\nnumba not installed: numpy backend only")
        return {}
    times = {}
    print(f"\nfirst calls in a new process (KUKA iiwa, 7 joints; 1-minute load "
          f"{os.getloadavg()[0]:.2f}): import + model, then the call")
    print("\n| first call | empty cache: import (s) | empty cache: call (s) | cached: call (s) |")
    print("| --- | ---: | ---: | ---: |")
    for what in ("time_derivatives", "id_second_partials", "every kernel"):
        with tempfile.TemporaryDirectory() as cache:
            env = dict(os.environ, NUMBA_CACHE_DIR=cache, PYTHONPATH=os.path.join(HERE, ".."))
            cold, warm = (subprocess.run([sys.executable, "-c", COLD_SNIPPET, what], env=env,
                                         check=True, capture_output=True, text=True).stdout.split()
                          for _ in range(2))
        times[what] = float(cold[1])
        print(f"| {what} | {float(cold[0]):.2f} | {float(cold[1]):.2f} | {float(warm[1]):.2f} |",
              flush=True)
    return times


def targets(times, exponent, extra_memory, entries, cold):
    """The speed targets of the project beside this run's numbers (a report, not a test: timings on a
    shared machine vary by up to 2x between runs)."""
    p, c = times["panda"], times["chain50"]
    td2, td4, sp = ("hd.time_derivatives order 2", "hd.time_derivatives order 4",
                    "hd.id_second_partials")
    rows = [("Panda order 2, batch: us per sample", p[td2, "batch"][0] * 1e6, "<= 3"),
            ("  the same on one thread (HOD_DYNAMICS_THREADS=1)",
             p[td2 + ", one thread", "batch"][0] * 1e6, "(reference)"),
            ("Panda order 2, batch: speed-up over the Pinocchio FD route",
             1 / p[td2, "batch"][1], ">= 25"),
            ("Panda order 2, one sample (us)", p[td2, 1][0] * 1e6, "<= 40"),
            ("Panda order 4, one sample (us)", p[td4, 1][0] * 1e6, "<= 100"),
            ("50-link chain order 2, one sample (us)", c[td2, 1][0] * 1e6, "<= 250"),
            ("50-link chain order 2, batch: us per sample", c[td2, "batch"][0] * 1e6, "<= 20"),
            ("  the same on one thread (HOD_DYNAMICS_THREADS=1)",
             c[td2 + ", one thread", "batch"][0] * 1e6, "(reference)"),
            ("growth exponent in the number of joints (batch, one thread)", exponent, "~ 1"),
            ("id_second_partials Panda (us)", p[sp, 1][0] * 1e6, "<= 100"),
            ("id_second_partials 50-link chain (ms)", c[sp, 1][0] * 1e3, "<= 10")]
    if extra_memory is not None:
        rows.append(("1,000,000 samples: working memory beyond the result (MB)",
                     extra_memory / 2**20, "bounded (blocks)"))
    for name, best in entries.items():
        labels = sorted({label for label, _ in best if (label, "kernel") in best})
        worst = max(labels, key=lambda label: best[label, "entry"] / best[label, "kernel"])
        rows.append((f"{name}, one sample: largest entry point / kernel ({worst})",
                     best[worst, "entry"] / best[worst, "kernel"], "<= 2"))
        if name == "panda":
            rows.append(("Panda: inverse_dynamics / time_derivatives order 0",
                         best["inverse_dynamics", "entry"] / best["time_derivatives order 0", "entry"],
                         "<= 1"))
            rows.append(("Panda: mass_matrix / Pinocchio crba from Python",
                         best["mass_matrix", "entry"] / best["Pinocchio crba from Python", "entry"],
                         "<= 2"))
    for what, goal in (("time_derivatives", "<= 3"), ("id_second_partials", "<= 3"),
                       ("every kernel", "<= 10")):
        if what in cold:
            rows.append((f"first call after an install (s): {what}", cold[what], goal))
    print("\n| target | this run | goal |\n| --- | ---: | --- |")
    for label, value, goal in rows:
        print(f"| {label} | {value:.2f} | {goal} |")


def main():
    quick = "--quick" in sys.argv
    start = time.perf_counter()
    print(f"backend: {resolve_backend()} (set HOD_DYNAMICS_BACKEND=numpy for the numpy path); "
          f"large batches on {compute_threads()} threads ({THREADS_ENV_VAR})\n")
    print("| robot | route | batch | us / sample (median) | ratio to Pinocchio |")
    print("| --- | --- | ---: | ---: | ---: |")
    panda, times = None, {}
    for name, model, pr in robots(quick):
        panda = panda or model
        rows, times[name] = bench_robot(name, model, pr, quick)
        print("\n".join(rows), flush=True)
    for name in ("solo12", "talos"):
        print("\n".join(bench_floating(name, quick)), flush=True)
    print("\nratio: time / the Pinocchio route at the same batch size: (tau, tau_d, tau_dd) FD "
          "route for time_derivatives, computeRNEADerivatives for the partials; floating rows: "
          "to Pinocchio's one-sample time (rnea for inverse_dynamics, computeRNEADerivatives "
          "for id_partials and mass_matrix)")
    exponent = scaling_dof(quick)
    scaling_order(panda, quick)
    extra_memory = None if quick else million(panda)
    entries = entry_points([r for r in robots(quick)])
    cold = compile_time()
    targets(times, exponent, extra_memory, entries, cold)
    print(f"\n(total {time.perf_counter() - start:.0f} s)")


if __name__ == "__main__":
    main()
