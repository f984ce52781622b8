"""Benchmark: partial derivatives of inverse dynamics, hod_dynamics vs Pinocchio.

Times ``id_partials``, ``id_second_partials`` and ``id_second_order_rate`` (the O(n^2)
contraction the second time derivative needs) on the Panda (example-robot-data, fingers
locked) and a 50-link random revolute chain, against Pinocchio's ``computeRNEADerivatives``
(first order; its PyPI Python API has no second-order derivatives), single sample and batches.
Median over repeats, microseconds per sample. Run: ``python bench/bench_partials.py``.
"""

import os
import statistics
import sys
import time

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path[:0] = [os.path.join(HERE, "..", "test"), os.path.join(HERE, "..")]

import hod_dynamics as hd  # noqa: E402
from oracles import PinocchioRobot, chain_urdf, pinocchio_robot  # noqa: E402

BATCH = 1000
# the full second-order tensors of the 50-link chain take n^3 floats x 4 per sample (4 MB):
# a batch of 1000 would need several GB, so that row uses a smaller batch
SECOND_ORDER_BATCH = {"panda": 1000, "chain50": 20}


def median_time(f, budget=1.5, max_repeats=200):
    """Median wall time (s) of f() over repeats within roughly ``budget`` seconds."""
    f()
    times = []
    start = time.perf_counter()
    while len(times) < 3 or (time.perf_counter() - start < budget and len(times) < max_repeats):
        t0 = time.perf_counter()
        f()
        times.append(time.perf_counter() - t0)
    return statistics.median(times)


def robots():
    model, pr = pinocchio_robot("panda")
    yield "panda", model, pr
    text = chain_urdf(50)
    model = hd.RobotModel.from_urdf(text)
    yield "chain50", model, PinocchioRobot(text, model)


def bench_robot(name, model, pr):
    n = model.n_dof
    rng = np.random.default_rng(0)
    q, qd, qdd, q3 = rng.uniform(-1, 1, (4, BATCH, n))
    pq = [pr.q(x) for x in q]
    pv, pa = [pr.v(x) for x in qd], [pr.v(x) for x in qdd]
    pin, pm, pdata = pr.pin, pr.model, pr.data

    def pin_batch():
        for a, b, c in zip(pq, pv, pa):
            pin.computeRNEADerivatives(pm, pdata, a, b, c)

    t_pin1 = median_time(lambda: pin.computeRNEADerivatives(pm, pdata, pq[0], pv[0], pa[0]))
    t_pinB = median_time(pin_batch) / BATCH
    B2 = SECOND_ORDER_BATCH[name]
    rows = [
        ("id_partials", 1, median_time(lambda: hd.id_partials(model, q[0], qd[0], qdd[0]))),
        ("id_partials", BATCH, median_time(lambda: hd.id_partials(model, q, qd, qdd)) / BATCH),
        ("id_second_partials", 1,
         median_time(lambda: hd.id_second_partials(model, q[0], qd[0], qdd[0]))),
        ("id_second_partials", B2,
         median_time(lambda: hd.id_second_partials(model, q[:B2], qd[:B2], qdd[:B2])) / B2),
        ("id_second_order_rate", 1,
         median_time(lambda: hd.algorithms.id_second_order_rate(model, q[0], qd[0], qdd[0], q3[0]))),
        ("id_second_order_rate", BATCH,
         median_time(lambda: hd.algorithms.id_second_order_rate(model, q, qd, qdd, q3)) / BATCH),
    ]
    out = [f"| {name} (n={n}) | pin.computeRNEADerivatives | 1 | {t_pin1 * 1e6:.1f} | 1.0 |",
           f"| {name} (n={n}) | pin.computeRNEADerivatives (Python loop) | {BATCH} | "
           f"{t_pinB * 1e6:.1f} | 1.0 |"]
    for label, batch, t in rows:
        ref = t_pin1 if batch == 1 else t_pinB
        out.append(f"| {name} (n={n}) | hd.{label} | {batch} | {t * 1e6:.1f} | {t / ref:.1f} |")
    return out


def main():
    start = time.perf_counter()
    print("| robot | function | batch | us / sample (median) | ratio to Pinocchio 1st order |")
    print("| --- | --- | ---: | ---: | ---: |")
    for name, model, pr in robots():
        for line in bench_robot(name, model, pr):
            print(line, flush=True)
    print(f"\n(total {time.perf_counter() - start:.1f} s; ratio: time / Pinocchio first-order "
          "time at the same batch size)")


if __name__ == "__main__":
    main()
