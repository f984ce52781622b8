"""Benchmark: hod_dynamics against CasADi-generated C and Pinocchio's C++, in the same run.

Routes, on the Panda (example-robot-data, fingers locked), TALOS (reduced) and a 50-link
revolute chain, in microseconds per sample:

- ``hd.time_derivatives`` orders 2, 3 and 4 on a batch of 10,000 jets on one thread
  (``HOD_DYNAMICS_THREADS=1``), and one sample called from Python;
- CasADi's generated C of td2 and td3 (tau and its first 2 or 3 time derivatives by forward-mode
  AD of Pinocchio's symbolic RNEA, ``cmeel-casadi-kin-dyn`` 1.6.14 with Pinocchio 2.6.20),
  compiled with ``gcc -O2`` and with ``gcc -O2 -march=native`` (the strongest build: this
  CPU's vector instructions and FMA) and looped over the same batch in C; and CasADi's td2
  called from Python, one call per sample;
- Pinocchio's C++ (the pin wheel of this venv): td2 in one call from Python (``rnea``,
  ``computeRNEADerivatives``, ``ComputeRNEASecondOrderDerivatives`` and their contraction
  along the trajectory) and the second-order partials written in place into preallocated
  tensors, through a small pybind11 extension;
- ``hd.id_second_partials``, one sample: allocating its result, written into four
  caller-provided arrays with ``out=``, and into a ``SecondPartialsData`` (``out=``, like
  Pinocchio's data: its structurally zero entries are written once, when it is made).

Times are the calling thread's CPU time (the C loop's too), not wall time: on a machine whose
cores are shared with other jobs, wall time also counts the waits for a core, which penalises
long calls (a 10 ms call is preempted, a 5 us one rarely). Measured in interleaved rounds (every
route once per round, median within the round, best median over the rounds), so a change of the
machine's load during the run affects every route alike; the load (``uptime``) is printed with
the table. The values of every route are compared with ours (largest difference relative to the
largest entry).

The tools are benchmark-only: ``--scratch DIR`` (default ``~/.cache/hod_dynamics/bench``,
outside the repository) receives a venv with ``cmeel-casadi-kin-dyn`` (its ``casadi`` is the
cmeel build; PyPI's ``casadi`` is uninstalled because it would shadow it), the generated C, the
C loops and the extension (built against the headers of this venv's ``pin`` wheel; Eigen's
headers come from the scratch venv, since the pin wheel ships none). Needs gcc/g++ and network
access to PyPI on the first run. Compiles one file at a time. Run: ``python
bench/bench_generated.py [--rounds 3]``.
"""

import argparse
import glob
import json
import os
import statistics
import subprocess
import sys
import sysconfig
import time
from unittest import mock

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
TOOLS = os.path.join(HERE, "generated")
sys.path[:0] = [os.path.join(HERE, "..", "test"), os.path.join(HERE, "..")]

import hod_dynamics as hd  # noqa: E402
from hod_dynamics.kernels.backend import THREADS_ENV_VAR  # noqa: E402
from oracles import ERD_ROBOTS, PinocchioRobot, chain_urdf, erd_path, erd_model  # noqa: E402

BATCH = 10_000
PY_CALLS = 1_000  # samples of the per-call routes
CASADI_PACKAGES = ["cmeel-casadi-kin-dyn==1.6.14", "pin==2.6.20", "pybind11"]
# the generated C built twice: portable (-O2) and for this CPU (-O2 -march=native: AVX, FMA),
# the strongest build a user of the generated code would make; suffix of the loop executable
FLAGS = {"": ["-O2"], "_native": ["-O2", "-march=native"]}


def run(cmd, **kw):
    print("+", " ".join(cmd)[:200], flush=True)
    return subprocess.run(cmd, check=True, **kw)


# -- the scratch tools ----------------------------------------------------------------------------
class Scratch:
    """Paths and builds of the benchmark-only tools in ``root``."""

    def __init__(self, root):
        self.root = root
        self.venv = os.path.join(root, "casadi-venv")
        self.py = os.path.join(self.venv, "bin", "python")
        self.gen = os.path.join(root, "gen")
        os.makedirs(self.gen, exist_ok=True)

    def cmeel(self, *parts):
        return glob.glob(os.path.join(self.venv, "lib", "python3*", "site-packages",
                                      "cmeel.prefix", *parts))[0]

    def env(self):
        """The scratch venv's environment: its cmeel libraries on the loader path."""
        return dict(os.environ, LD_LIBRARY_PATH=self.cmeel("lib"))

    def setup(self):
        if not os.path.exists(self.py):
            run([sys.executable, "-m", "venv", self.venv])
        have = subprocess.run([self.py, "-m", "pip", "freeze"], capture_output=True,
                              text=True).stdout
        if "cmeel-casadi-kin-dyn==1.6.14" not in have.replace("_", "-"):
            run([self.py, "-m", "pip", "install", "-q"] + CASADI_PACKAGES)
        if "\ncasadi==" in "\n" + have:  # PyPI's casadi shadows the cmeel build
            run([self.py, "-m", "pip", "uninstall", "-y", "-q", "casadi"])

    def generate(self, name, spec):
        """td2 and td3 of ``spec`` as C, and their C loops (built once)."""
        path = os.path.join(self.gen, f"{name}.json")
        with open(path, "w") as f:
            json.dump(spec, f)
        if not os.path.exists(os.path.join(self.gen, f"td3_{name}.c")):
            run([self.py, os.path.join(TOOLS, "casadi_td.py"), "generate", path, self.gen],
                env=self.env())
        for td in ("td2", "td3"):
            for suffix, flags in FLAGS.items():
                exe = os.path.join(self.gen, f"loop_{td}_{name}{suffix}")
                loop = os.path.join(TOOLS, "casadi_loop.c")
                if not os.path.exists(exe) or os.path.getmtime(exe) < os.path.getmtime(loop):
                    fn = f"{td}_{name}"
                    run(["gcc"] + flags + [f"-DFN={fn}", "-include", os.path.join(self.gen, fn + ".h"),
                                           loop, os.path.join(self.gen, fn + ".c"), "-o", exe, "-lm"])
        return path

    def extension(self):
        """Import the pybind11 extension of Pinocchio's C++ (built once)."""
        src = os.path.join(TOOLS, "pin_second_order.cpp")
        out = os.path.join(self.root, "pin_second_order" + sysconfig.get_config_var("EXT_SUFFIX"))
        if not os.path.exists(out) or os.path.getmtime(out) < os.path.getmtime(src):
            prefix = glob.glob(os.path.join(sys.prefix, "lib", "python3*", "site-packages",
                                            "cmeel.prefix"))[0]
            pybind = subprocess.run([self.py, "-c", "import pybind11; print(pybind11.get_include())"],
                                    capture_output=True, text=True, check=True).stdout.strip()
            # the compile definitions of Pinocchio's CMake target (pinocchioTargets.cmake)
            defs = ["NDEBUG", "BOOST_MPL_CFG_NO_PREPROCESSED_HEADERS", "BOOST_MPL_LIMIT_LIST_SIZE=30",
                    "BOOST_MPL_LIMIT_VECTOR_SIZE=30", "BOOST_FUSION_INVOKE_MAX_ARITY=12",
                    "PINOCCHIO_ENABLE_TEMPLATE_INSTANTIATION"]
            lib = os.path.join(prefix, "lib")
            run(["g++", "-O2", "-std=c++17", "-shared", "-fPIC"] + [f"-D{d}" for d in defs]
                + [f"-I{p}" for p in (os.path.join(prefix, "include"), self.cmeel("include", "eigen3"),
                                      pybind, sysconfig.get_paths()["include"])]
                + [src, "-o", out, f"-L{lib}", "-lpinocchio_default", "-lboost_serialization",
                   f"-Wl,-rpath,{lib}"])
        sys.path.insert(0, self.root)
        import pin_second_order

        return pin_second_order


# -- robots ---------------------------------------------------------------------------------------
def robots():
    """(name, our model, PinocchioRobot, spec for the CasADi generator)."""
    for name in ("panda", "talos"):
        path, locked = erd_path(name), ERD_ROBOTS[name][1] or {}
        model = erd_model(name)
        with open(path) as f:
            urdf = f.read()
        yield name, model, PinocchioRobot(path, model, locked or None), urdf, locked
    text = chain_urdf(50)
    model = hd.RobotModel.from_urdf(text)
    yield "chain50", model, PinocchioRobot(text, model), text, {}


def jets(model, count, rows, seed=0):
    rng = np.random.default_rng(seed)
    return rng.uniform(-1, 1, (count, rows, model.n_dof)) / (1.0 + np.arange(rows))[:, None]


def median_of(f, count, inner=1):
    """Median over ``count`` repeats of the thread's CPU time (s) per call of f, timed over
    ``inner`` calls: on a machine shared with other jobs, wall time counts the waits for a
    core too, which a long call suffers more than a short one."""
    f()
    times = []
    for _ in range(count):
        t0 = time.thread_time()
        for _ in range(inner):
            f()
        times.append((time.thread_time() - t0) / inner)
    return statistics.median(times)


def rel(a, b):
    return float(np.max(np.abs(np.asarray(a) - np.asarray(b))) / np.max(np.abs(b)))


class Case:
    """One robot: every route as a function returning microseconds per sample."""

    def __init__(self, scratch, ext, name, model, pr, urdf, locked, batch):
        self.name, self.model, self.n, self.scratch = name, model, model.n_dof, scratch
        spec = {"name": name, "urdf": urdf, "joints": list(model.joint_names), "locked": locked}
        self.spec = scratch.generate(name, spec)
        self.batch = batch
        self.jet = {r: jets(model, batch, r + 3) for r in (2, 3, 4)}
        self.bin = {}
        for r in (2, 3):
            self.bin[r] = os.path.join(scratch.gen, f"jets{r}_{name}.bin")
            self.jet[r].tofile(self.bin[r])
        self.npy = os.path.join(scratch.gen, f"jets2_{name}.npy")
        np.save(self.npy, self.jet[2][:PY_CALLS])
        # Pinocchio's C++: the same model (locked joints removed), its coordinates
        self.pin = ext.Robot(pr.model.saveToString())
        nv = self.pin.nv
        self.vidx = pr.vidx
        # q in Pinocchio's coordinates (continuous joints: cos, sin), rows qd..q4 in its order
        self.pin_q = [pr.q(j[0]) for j in self.jet[2][:PY_CALLS]]
        self.pin_rows = np.zeros((PY_CALLS, 4, nv))
        self.pin_rows[:, :, pr.vidx] = self.jet[2][:PY_CALLS, 1:]
        s = self.jet[2][0]
        self.state = s[0], s[1], s[2]
        self.pin_state = (self.pin_q[0], self.pin_rows[0, 0].copy(), self.pin_rows[0, 1].copy())
        self.out = tuple(np.empty((self.n,) * 3) for _ in range(4))
        self.errors = {}

    # -- routes (us per sample) --
    def hod_batch(self, order):
        jet = self.jet[order]
        with mock.patch.dict(os.environ, {THREADS_ENV_VAR: "1"}):
            return median_of(lambda: hd.time_derivatives(self.model, jet, order), 3) / self.batch * 1e6

    def hod_one(self, order):
        jet = self.jet[order][0]
        return median_of(lambda: hd.time_derivatives(self.model, jet, order), 100, 20) * 1e6

    def casadi_c(self, order, suffix=""):
        """The generated C looped in C; ``suffix`` "_native": the build with -march=native."""
        K = order + 1
        out = os.path.join(self.scratch.gen, f"out{order}_{self.name}{suffix}.bin")
        res = run([os.path.join(self.scratch.gen, f"loop_td{order}_{self.name}{suffix}"), self.bin[order],
                   str(self.batch), str((K + 2) * self.n), str(K * self.n), "3", out],
                  capture_output=True, text=True)
        got = np.fromfile(out).reshape(self.batch, K, self.n)
        ours = hd.time_derivatives(self.model, self.jet[order][:100], order)
        self.errors[f"CasADi td{order}{suffix}"] = rel(got[:100], ours)
        return float(res.stdout)

    def casadi_python(self):
        out = os.path.join(self.scratch.gen, f"outpy_{self.name}.npy")
        res = run([self.scratch.py, os.path.join(TOOLS, "casadi_td.py"), "time", self.spec, self.npy,
                   out], capture_output=True, text=True, env=self.scratch.env())
        ours = hd.time_derivatives(self.model, self.jet[2][:10], 2)
        self.errors["CasADi td2 from Python"] = rel(np.load(out), ours)
        return float(res.stdout.split()[-1]) * 1e6

    def pin_td2(self):
        td2, qs, rows = self.pin.td2, self.pin_q, self.pin_rows
        count = min(PY_CALLS, max(20, int(2e5 / self.n ** 3)))  # O(n^3): fewer on big robots
        t = median_of(lambda: [td2(q, r) for q, r in zip(qs[:count], rows)], 3) / count * 1e6
        got = np.array([td2(q, r)[:, self.vidx] for q, r in zip(qs[:5], rows)])
        self.errors["Pinocchio td2"] = rel(got, hd.time_derivatives(self.model, self.jet[2][:5], 2))
        return t

    def pin_second(self):
        f, (q, v, a) = self.pin.second_partials, self.pin_state
        t = median_of(lambda: f(q, v, a), *self._reps()) * 1e6
        ix = np.ix_(self.vidx, self.vidx, self.vidx)
        theirs = [np.asarray(x)[ix] for x in self.pin.tensors()]
        ours = hd.id_second_partials(self.model, *self.state)
        self.errors["Pinocchio second partials"] = max(rel(o, p) for o, p in zip(ours, theirs))
        return t

    def hod_second(self, out=None):
        """``out``: None (allocating), "arrays" (four caller arrays) or "data" (a
        SecondPartialsData, Pinocchio-style: its structural zeros are written once)."""
        q, v, a = self.state
        if out == "data":
            if not hasattr(hd, "SecondPartialsData"):  # a version without it
                return float("nan")
            kw = {"out": hd.algorithms.SecondPartialsData(self.model)}
        elif out == "arrays":
            kw = {"out": self.out}
            try:
                hd.id_second_partials(self.model, q, v, a, **kw)
            except TypeError:  # a version without out=
                return float("nan")
        else:
            kw = {}
        if out:  # the same numbers as the allocating call
            got = hd.id_second_partials(self.model, q, v, a, **kw)
            fresh = hd.id_second_partials(self.model, q, v, a)
            assert all(np.array_equal(x, y) for x, y in zip(got, fresh)), out
        return median_of(lambda: hd.id_second_partials(self.model, q, v, a, **kw),
                         *self._reps()) * 1e6

    def _reps(self):
        """(repeats, calls per repeat) of about 2 ms each for the O(n^3) partials."""
        return 15, max(1, min(100, int(2e5 / self.n ** 3)))


ROUTES = [  # (label, method, args)
    ("hod time_derivatives order 2, batch, one thread", "hod_batch", (2,)),
    ("CasADi generated C, td2, C loop (gcc -O2)", "casadi_c", (2,)),
    ("CasADi generated C, td2, C loop (gcc -O2 -march=native)", "casadi_c", (2, "_native")),
    ("hod order 3, batch, one thread", "hod_batch", (3,)),
    ("CasADi generated C, td3, C loop (gcc -O2)", "casadi_c", (3,)),
    ("CasADi generated C, td3, C loop (gcc -O2 -march=native)", "casadi_c", (3, "_native")),
    ("hod order 4, batch, one thread", "hod_batch", (4,)),
    ("hod order 2, one sample from Python", "hod_one", (2,)),
    ("hod order 3, one sample", "hod_one", (3,)),
    ("hod order 4, one sample", "hod_one", (4,)),
    ("Pinocchio C++ td2 in one call, from Python", "pin_td2", ()),
    ("CasADi td2 from Python (per call)", "casadi_python", ()),
    ("hod id_second_partials, one sample", "hod_second", ()),
    ("hod id_second_partials, one sample, out= arrays", "hod_second", ("arrays",)),
    ("hod id_second_partials, one sample, out=SecondPartialsData", "hod_second", ("data",)),
    ("Pinocchio C++ second-order partials (in place)", "pin_second", ()),
]


def _route(label):
    return [r[0] for r in ROUTES].index(label)


_TD = {k: _route(label) for k, label in ((2, "hod time_derivatives order 2, batch, one thread"),
                                         (3, "hod order 3, batch, one thread"),
                                         (4, "hod order 4, batch, one thread"))}
_C = {(k, s): _route(f"CasADi generated C, td{k}, C loop (gcc -O2{' -march=native' if s else ''})")
      for k in (2, 3) for s in ("", "_native")}
_SP = {out: _route(f"hod id_second_partials, one sample{label}") for out, label in (
    (None, ""), ("arrays", ", out= arrays"), ("data", ", out=SecondPartialsData"))}
_PIN2 = _route("Pinocchio C++ second-order partials (in place)")
_NATIVE = {"chain50": 4.0}  # the factor over -march=native where it is not 1.3

GOALS = [  # (label, ours, theirs, factor or {robot: factor}): ours `factor` times faster
    ("td2 batch vs CasADi C td2 -O2", _TD[2], _C[2, ""], 1.3),
    ("td3 batch vs CasADi C td3 -O2", _TD[3], _C[3, ""], 1.3),
    ("td4 batch vs CasADi C td3 -O2", _TD[4], _C[3, ""], 1.3),
    ("td2 batch vs CasADi C td2 -O2 -march=native", _TD[2], _C[2, "_native"], (1.3, _NATIVE)),
    ("td3 batch vs CasADi C td3 -O2 -march=native", _TD[3], _C[3, "_native"], (1.3, _NATIVE)),
    ("td4 batch vs CasADi C td3 -O2 -march=native", _TD[4], _C[3, "_native"], (1.3, _NATIVE)),
    ("order 2 one sample vs Pinocchio C++ td2 from Python", _route("hod order 2, one sample from Python"),
     _route("Pinocchio C++ td2 in one call, from Python"), 2.0),
    ("id_second_partials vs Pinocchio C++ (in place)", _SP[None], _PIN2, 1.0),
    ("id_second_partials out= arrays vs Pinocchio C++ (in place)", _SP["arrays"], _PIN2, 1.0),
    ("id_second_partials out=SecondPartialsData vs Pinocchio C++ (in place)", _SP["data"], _PIN2, 1.0),
]


def _factor(goal, robot):
    """The factor of a goal for one robot: a number, or (default, {robot: factor})."""
    if isinstance(goal, tuple):
        return goal[1].get(robot, goal[0])
    return goal


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--scratch", default=os.path.expanduser("~/.cache/hod_dynamics/bench"))
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--batch", type=int, default=BATCH)
    args = parser.parse_args()
    start = time.perf_counter()
    scratch = Scratch(args.scratch)
    scratch.setup()
    ext = scratch.extension()
    cases = [Case(scratch, ext, *r, args.batch) for r in robots()]
    best = {}
    for rnd in range(args.rounds):
        print(f"round {rnd + 1}: {os.getloadavg()[0]:.2f} load", flush=True)
        for case in cases:
            for k, (_, method, a) in enumerate(ROUTES):
                t = getattr(case, method)(*a)
                best[case.name, k] = min(best.get((case.name, k), np.inf), t)
    load = subprocess.run(["uptime"], capture_output=True, text=True).stdout.strip()
    print(f"\nmachine: {os.cpu_count()} CPUs; uptime after the run: {load}")
    print(f"{args.rounds} interleaved rounds, best median, us per sample; batch {args.batch:,}\n")
    names = [c.name for c in cases]
    print("| route | " + " | ".join(f"{c.name} ({c.n})" for c in cases) + " |")
    print("| --- |" + " ---: |" * len(cases))
    for k, (label, _, _) in enumerate(ROUTES):
        print(f"| {label} | " + " | ".join(f"{best[nm, k]:.3g}" for nm in names) + " |")
    print("\n| goal: ours faster by | " + " | ".join(names) + " |")
    print("| --- |" + " ---: |" * len(cases))
    for label, a, b, goal in GOALS:
        cells = []
        for nm in names:
            ratio, factor = best[nm, b] / best[nm, a], _factor(goal, nm)
            cells.append(f"{ratio:.2f}x {'met' if ratio >= factor else 'NOT met'} (>= {factor}x)")
        print(f"| {label} | " + " | ".join(cells) + " |")
    print("\nlargest difference from ours, relative to the largest entry:")
    for case in cases:
        print(f"  {case.name}: " + ", ".join(f"{k} {v:.1e}" for k, v in case.errors.items()))
    print(f"\n(total {time.perf_counter() - start:.0f} s)")


if __name__ == "__main__":
    main()
