"""CasADi-generated C of tau and its time derivatives (benchmark tool; runs in its own venv).

Runs in a venv with ``cmeel-casadi-kin-dyn`` (symbolic Pinocchio 2.6 through CasADi SX; PyPI's
``casadi`` uninstalled, it shadows the cmeel build). Two commands:

    python casadi_td.py generate SPEC.json OUTDIR   # td2_<robot>.c, td3_<robot>.c
    python casadi_td.py time SPEC.json JETS.npy     # CasADi td2 called from Python, us per call

``SPEC.json``: ``{"name", "urdf" (XML text), "joints" (our order), "locked" {name: value}}``.
The generated function maps one jet x (rows, n) row-major (q, qd, qdd, ... in our joint order)
to tau^(0..K-1) (K, n): the locked joints are constants of the expression, as in our model.
tau^(k) comes from forward-mode AD along the trajectory: d/dt f(x) = J_f(x) x', applied
K - 1 times (``casadi.jtimes``), the route a CasADi user takes to exact time derivatives.
"""

import json
import os
import statistics
import sys
import time

import casadi as cs
import casadi_kin_dyn as ckd
import numpy as np


def td_function(spec, K):
    """CasADi Function x (K+2) * n -> tau^(0..K-1) (K * n) for spec's robot."""
    kd = ckd.CasadiKinDyn(spec["urdf"])
    rnea = kd.rnea()
    n, nq, nv = len(spec["joints"]), kd.nq(), kd.nv()
    x = cs.SX.sym("x", (K + 2) * n)
    rows = [x[r * n:(r + 1) * n] for r in range(K + 2)]
    # every joint here has one velocity coordinate: its index in v is its rank in the tree;
    # continuous joints have two configuration coordinates (cos q, sin q)
    vidx = {name: k for k, name in enumerate(kd.joint_names()[1:])}
    idx = [vidx[name] for name in spec["joints"]]

    def config():
        """q in Pinocchio's coordinates (locked joints: constants)."""
        v = cs.SX.zeros(nq)
        for k, name in enumerate(spec["joints"]):
            i = kd.joint_iq(name)
            if kd.joint_nq(name) == 2:
                v[i], v[i + 1] = cs.cos(rows[0][k]), cs.sin(rows[0][k])
            else:
                v[i] = rows[0][k]
        for name, value in spec["locked"].items():
            v[kd.joint_iq(name)] = value
        return v

    def velocity(r):
        """Row r >= 1 of the jet in Pinocchio's velocity coordinates (locked joints: 0)."""
        v = cs.SX.zeros(nv)
        for k, i in enumerate(idx):
            v[i] = rows[r][k]
        return v

    tau = rnea(config(), velocity(1), velocity(2))[idx]
    out = [tau]
    for k in range(1, K):
        # d/dt of tau^(k-1)(q, ..., q^(k+1)) along (qd, ..., q^(k+2))
        X, Xd = x[:(k + 2) * n], x[n:(k + 3) * n]
        out.append(cs.jtimes(out[-1], X, Xd))
    return cs.Function(f"td{K - 1}_{spec['name']}", [x], [cs.vertcat(*out)])


def generate(spec, outdir):
    for K in (3, 4):
        f = td_function(spec, K)
        name = f.name()
        cwd = os.getcwd()
        os.chdir(outdir)
        try:
            f.generate(f"{name}.c", {"with_header": True})
        finally:
            os.chdir(cwd)
        print(name, f.n_instructions(), flush=True)


def time_python(spec, jets):
    """s per call of the SX function td2 from Python (numpy in, numpy out), best of 3 medians
    of the thread's CPU time over 10 calls."""
    f = td_function(spec, 3)
    xs = [np.ascontiguousarray(j).ravel() for j in jets]
    f(xs[0])
    best = []
    for _ in range(3):
        times = []
        for k in range(0, len(xs), 10):
            t0 = time.thread_time()
            for x in xs[k:k + 10]:
                np.asarray(f(x))
            times.append((time.thread_time() - t0) / len(xs[k:k + 10]))
        best.append(statistics.median(times))
    out = np.array([np.asarray(f(x)).reshape(3, -1) for x in xs[:10]])
    return min(best), out


def main():
    cmd, spec = sys.argv[1], json.load(open(sys.argv[2]))
    if cmd == "generate":
        generate(spec, sys.argv[3])
    else:
        jets = np.load(sys.argv[3])
        t, out = time_python(spec, jets)
        np.save(sys.argv[4], out)
        print(t)


if __name__ == "__main__":
    main()
