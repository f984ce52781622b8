"""Benchmark: the first use of each kernel group on an empty cache, the time the compile notices
quote (``KERNEL_GROUPS`` in hod_dynamics/kernels/backend.py).

Each measurement runs in a process of its own with ``NUMBA_CACHE_DIR`` an empty folder (numba's
cache and the generated kernels' objects both go there): the first call that compiles the group
is timed, then the same call again in that process (the compiled code), and the difference is
the compile. The groups are driven the way their public functions are: time_derivatives order 2
on the shipped iiwa 14 (one sample and a batch: both paths of the generated kernel), a floating
base (Solo 12 of example-robot-data through Pinocchio's package; or a generated floating tree),
a helical joint, id_partials / mass_matrix / forward_dynamics, id_second_partials, the regressor,
the fit of recorded positions (``OTHER_GROUPS``: a 25 s 200 Hz recording read from a bag).
Then time_derivatives of orders 4 to 50 (one sample and 1000 samples): the generated kernel's
compile against the numpy path's time for the same call (the reference: the path that compiles
nothing), and the ratio. Pinocchio's rnea on the same one sample is timed beside it.
Run: ``python bench/bench_compile.py [--orders 4 8 16 24 32 50] [--groups ...]``.
"""

import argparse
import json
import os
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.join(HERE, "..")

GROUP_CALL = """
import json, sys, time, warnings
import numpy as np
import hod_dynamics as hd
warnings.simplefilter("ignore")
group = sys.argv[1]
iiwa = hd.load_robot("iiwa14")
z = np.zeros(7)
if group == "time_derivatives":
    call = lambda: (hd.time_derivatives(iiwa, np.zeros((5, 7)) + 0.1, 2),
                    hd.time_derivatives(iiwa, np.zeros((64, 5, 7)) + 0.1, 2), hd.inverse_dynamics(iiwa, z, z, z),
                    hd.gravity_torques(iiwa, z))
elif group == "floating":
    from hod_dynamics.algorithms.floating import time_derivatives_floating
    solo = hd.load_robot("solo12", floating_base=True)
    q = np.r_[0, 0, 0.3, 0, 0, 0, 1.0, np.zeros(12)]
    call = lambda: time_derivatives_floating(solo, q, np.zeros((4, 18)) + 0.1, 2)
elif group == "pitched":
    screws = np.array([[0, 0, 1, 0, 0, 0.01], [0, 1, 0, 0, 0, 0], [0, 1, 0, 0, 0, 0]], float)
    refs = np.array([np.eye(4)] * 3)
    for i in range(1, 3):
        refs[i][2, 3] = 0.3
    inert = np.array([np.diag([0.1, 0.1, 0.1, 1, 1, 1.0])] * 3)
    m = hd.RobotModel.from_screws(screws, refs, inert, name="helical")
    call = lambda: hd.time_derivatives(m, np.zeros((5, 3)) + 0.1, 2)
elif group == "id_partials":
    call = lambda: (hd.id_partials(iiwa, z + 0.1, z, z), hd.mass_matrix(iiwa, z + 0.1),
                    hd.forward_dynamics(iiwa, z + 0.1, z, z))
elif group == "id_second_partials":
    call = lambda: hd.id_second_partials(iiwa, z + 0.1, z, z)
elif group == "regressor":
    from hod_dynamics.algorithms.regressors import regressor
    call = lambda: regressor(iiwa, z + 0.1, z, z)
elif group == "fit":
    # the fit of a recording (25 s at 200 Hz, three sines per joint, 1e-4 rad noise) read from a
    # bag: every compiled band solve and spline of recordings.banded, as analyze-bag calls them
    import tempfile
    from hod_dynamics.recordings.bag import read_joint_states
    from hod_dynamics.recordings.bag_writer import write_joint_states
    from hod_dynamics.recordings.joint_fit import fit_joint_states
    t = np.arange(5000) / 200.0
    rng = np.random.default_rng(0)
    q = sum(a * np.sin(2 * np.pi * f * t[:, None] + p) for a, f, p in rng.uniform(0.05, 0.8, (3, 3, 7)))
    bag = tempfile.mkdtemp() + "/run"
    write_joint_states(bag, 1_700_000_000 * 10**9 + np.round(t * 1e9).astype(np.int64), iiwa.joint_names,
                       q + 1e-4 * rng.standard_normal(q.shape), None, None)
    states = read_joint_states(bag)
    call = lambda: fit_joint_states(states, iiwa.joint_names, 2)
start = time.perf_counter()
call()
first = time.perf_counter() - start
start = time.perf_counter()
call()
again = time.perf_counter() - start
print(json.dumps({"first": first, "again": again}))
"""

ORDER_CALL = """
import json, sys, time, warnings
import numpy as np
import hod_dynamics as hd
warnings.simplefilter("ignore")
K, batch = int(sys.argv[1]), int(sys.argv[2])
iiwa = hd.load_robot("iiwa14")
jet = np.random.default_rng(0).uniform(-1, 1, (batch, K + 3, 7)) if batch > 1 else \\
    np.random.default_rng(0).uniform(-1, 1, (K + 3, 7))
out = {}
for backend in ("numpy", "numba"):
    start = time.perf_counter()
    hd.time_derivatives(iiwa, jet, K, backend=backend)
    out[backend] = time.perf_counter() - start
start = time.perf_counter()
hd.time_derivatives(iiwa, jet, K, backend="numba")
out["numba_again"] = time.perf_counter() - start
print(json.dumps(out))
"""

PINOCCHIO = """
import time, sys
import numpy as np, pinocchio as pin
m = pin.buildModelFromUrdf(sys.argv[1]); d = m.createData()
q = np.zeros(7) + 0.1
start = time.perf_counter()
for _ in range(1000):
    pin.rnea(m, d, q, q, q)
print((time.perf_counter() - start) / 1000)
"""


def cold(code, *argv):
    """Run ``code`` in a process of its own on an empty cache; its printed JSON."""
    with tempfile.TemporaryDirectory() as cache:
        env = dict(os.environ, NUMBA_CACHE_DIR=cache, PYTHONPATH=os.pathsep.join([ROOT, os.environ.get(
            "PYTHONPATH", "")]))
        env.pop("HOD_DYNAMICS_BACKEND", None)
        done = subprocess.run([sys.executable, "-c", code, *map(str, argv)], env=env, capture_output=True, text=True)
        if done.returncode != 0:
            return {"error": done.stderr.strip().splitlines()[-1] if done.stderr.strip() else "failed"}
        return json.loads(done.stdout.strip().splitlines()[-1])


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--groups", nargs="+", default=["time_derivatives", "floating", "pitched", "id_partials",
                                                        "id_second_partials", "regressor", "fit"])
    parser.add_argument("--orders", type=int, nargs="*", default=[4, 8, 12, 16, 24, 32, 50])
    args = parser.parse_args()
    sys.path.insert(0, ROOT)
    import hod_dynamics as hd
    from hod_dynamics.kernels.backend import KERNEL_GROUPS, OTHER_GROUPS

    groups = {**KERNEL_GROUPS, **OTHER_GROUPS}
    print("first use of each kernel group on an empty cache (s): first call, the call again, compile = the "
          "difference; the estimate the notice quoted")
    for group in args.groups:
        r = cold(GROUP_CALL, group)
        if "error" in r:
            print(f"  {group:<20} failed: {r['error']}")
            continue
        print(f"  {group:<20} first {r['first']:6.2f}  again {r['again']:7.4f}  compile {r['first'] - r['again']:6.2f}"
              f"   (notice: about {groups[group][3]} s)  load {os.getloadavg()[0]:.2f}", flush=True)
    ref = subprocess.run([sys.executable, "-c", PINOCCHIO, hd.robot_path("iiwa14")], capture_output=True, text=True)
    pin = float(ref.stdout.strip()) if ref.returncode == 0 else float("nan")
    print(f"time_derivatives of order K, iiwa 14, empty cache (s): numpy path | compile + first call | compiled "
          f"call again | numpy / compiled-first; Pinocchio rnea (order 0) one sample: {1e6 * pin:.1f} us")
    for K in args.orders:
        for batch in (1, 1000):
            r = cold(ORDER_CALL, K, batch)
            if "error" in r:
                print(f"  K={K:<3} batch {batch:<5} failed: {r['error']}")
                continue
            print(f"  order {K:<3} batch {batch:<5} numpy {r['numpy']:8.4f}  numba first {r['numba']:7.2f}  again "
                  f"{r['numba_again']:8.5f}  ratio {r['numpy'] / r['numba']:7.4f}  load {os.getloadavg()[0]:.2f}",
                  flush=True)


if __name__ == "__main__":
    main()
