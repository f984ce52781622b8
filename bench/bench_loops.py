"""Benchmark: tau_a^(k) of mechanisms with loops, hod_dynamics against differences of a Pinocchio route.

Pinocchio has constrained forward dynamics but no inverse dynamics of a mechanism with actuated
and passive joints and no time derivatives of it. Its users get tau_a^(k) so: close the passive
joints at each time (Newton's method on the closure points with Pinocchio's frame placements and
Jacobians), their velocities and accelerations from the closure Jacobian and its drift (frame
classical accelerations), the tree's torques by ``rnea``, tau_a from ``[S, J^T] (tau_a, lambda) =
tau`` by least squares; and the derivatives by central differences in time of that route, at
h = 1 ms (5 points for orders 1 and 2, 7 for order 3: 1, 5, 5, 7 evaluations per sample for k = 0..3).
hod_dynamics computes tau_a^(0..k) exactly (``hd.time_derivatives`` of the loop model).

Per mechanism (the shipped four-bar, the parallel ankle of test/data/loops) and k = 0..3: microseconds
per sample of hod_dynamics on a batch of N samples of a motion and one sample at a time, of the
Pinocchio route (warm-started from the sample before, as a trajectory allows), the ratio, and the
error of the differences against the exact value. Run: ``python bench/bench_loops.py [N]``.
"""

import os
import statistics
import sys
import time
import warnings

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path[:0] = [os.path.join(HERE, "..", "test"), os.path.join(HERE, "..")]

import hod_dynamics as hd  # noqa: E402
import loop_oracles as L  # noqa: E402

H = 1e-3
# central stencils: offsets and weights of the k-th derivative (error O(h^4), O(h^4), O(h^4))
STENCILS = {1: (np.arange(-2, 3), np.array([1, -8, 0, 8, -1]) / 12.0),
            2: (np.arange(-2, 3), np.array([-1, 16, -30, 16, -1]) / 12.0),
            3: (np.arange(-3, 4), np.array([1, -8, 13, 0, -13, 8, -1]) / 8.0)}
POINTS = {0: np.array([0]), 1: np.arange(-2, 3), 2: np.arange(-2, 3), 3: np.arange(-3, 4)}


class PinocchioRoute:
    """Constrained inverse dynamics of a loop model from Pinocchio's functions (the closures'
    point rows: all the four-bar and the ankle need)."""

    def __init__(self, loop, urdf):
        pin_loop = L.PinocchioLoop(loop, urdf)
        self.pin, self.loop, self.model = pin_loop.pin, loop, pin_loop.model
        self.data, self.frames, self.S = self.model.createData(), pin_loop.frame_ids, pin_loop.S
        self.to_q, self.to_v, self.vidx = pin_loop._q, pin_loop._v, pin_loop.vidx
        self.ia, self.ip = loop.actuated_index, loop.passive_index

    def _closure(self, q):
        """Point residual (3c,) and its Jacobian (3c, n) (root axes) at tree positions q."""
        pin, model, data = self.pin, self.model, self.data
        qq = self.to_q(q)
        pin.computeJointJacobians(model, data, qq)
        pin.updateFramePlacements(model, data)
        res, jac = [], []
        for fa, fb in self.frames:
            res.append(data.oMf[fa].translation - data.oMf[fb].translation)
            JA = pin.getFrameJacobian(model, data, fa, pin.ReferenceFrame.LOCAL_WORLD_ALIGNED)
            JB = pin.getFrameJacobian(model, data, fb, pin.ReferenceFrame.LOCAL_WORLD_ALIGNED)
            jac.append((JA[:3] - JB[:3])[:, self.vidx])
        return np.concatenate(res), np.vstack(jac)

    def tau_a(self, y, yd, ydd, q):
        """tau_a (na,) at the actuated state, closing from q (n,); returns (tau_a, closed q)."""
        pin, model, data, ia, ip = self.pin, self.model, self.data, self.ia, self.ip
        q = q.copy()
        q[ia] = y
        for _ in range(20):
            r, J = self._closure(q)
            if np.max(np.abs(r)) < 1e-12:
                break
            q[ip] -= np.linalg.lstsq(J[:, ip], r, rcond=None)[0]
        r, J = self._closure(q)
        qd = np.zeros(len(q))
        qd[ia] = yd
        qd[ip] = -np.linalg.lstsq(J[:, ip], J[:, ia] @ yd, rcond=None)[0]
        pin.forwardKinematics(model, data, self.to_q(q), self.to_v(qd), np.zeros(model.nv))
        pin.updateFramePlacements(model, data)
        drift = np.concatenate([
            pin.getFrameClassicalAcceleration(model, data, fa, pin.ReferenceFrame.LOCAL_WORLD_ALIGNED).linear
            - pin.getFrameClassicalAcceleration(model, data, fb, pin.ReferenceFrame.LOCAL_WORLD_ALIGNED).linear
            for fa, fb in self.frames])
        qdd = np.zeros(len(q))
        qdd[ia] = ydd
        qdd[ip] = -np.linalg.lstsq(J[:, ip], J[:, ia] @ ydd + drift, rcond=None)[0]
        tau = pin.rnea(model, data, self.to_q(q), self.to_v(qd), self.to_v(qdd))
        self._closure(q)
        J = np.vstack([(pin.getFrameJacobian(model, data, fa, pin.ReferenceFrame.LOCAL_WORLD_ALIGNED)[:3]
                        - pin.getFrameJacobian(model, data, fb, pin.ReferenceFrame.LOCAL_WORLD_ALIGNED)[:3])
                       for fa, fb in self.frames])
        solution = np.linalg.lstsq(np.hstack([self.S, J.T]), tau, rcond=1e-12)[0]
        return solution[:len(ia)], q

    def derivatives(self, t, motion, k, q):
        """tau_a^(0..k) (k+1, na) at time t by the stencils, each point closed from q."""
        jet = L.sine_jet(t + POINTS[k] * H, K=3, **motion)
        values = {}
        for offset, row in zip(POINTS[k], jet):
            values[offset], closed = self.tau_a(row[0], row[1], row[2], q)
            if offset == 0:
                q = closed
        out = [values[0]]
        for j in range(1, k + 1):
            offsets, weights = STENCILS[j]
            out.append(sum(w * values[o] for o, w in zip(offsets, weights)) / H ** j)
        return np.array(out), q


def best(f, repeat=3):
    times = []
    for _ in range(repeat):
        t0 = time.perf_counter()
        f()
        times.append(time.perf_counter() - t0)
    return min(times)


def bench(name, loop, motion, urdf, n):
    t = np.linspace(0.2, 1.8, n)
    yjet = L.sine_jet(t, K=6, **motion)
    hd.time_derivatives(loop, yjet[:4], 3)                                  # compile, close the assembly
    route = PinocchioRoute(loop, urdf)
    q_start = hd.constrained_dynamics(loop, yjet[:1, :3], 0).qjet[0, 0]
    print(f"\n{name}: {loop.tree.n_dof} tree joints, {loop.n_dof} actuated, {loop.n_rows} closure rows; "
          f"{n} samples over {t[-1] - t[0]:.1f} s; us per sample")
    print("  k | ours, batch | ours, one sample | Pinocchio + differences | ratio (batch) | ratio (one) | "
          "error of the differences (max |x^(k)|)")
    for k in range(4):
        rows = yjet[:, :k + 3]
        batch = best(lambda: hd.time_derivatives(loop, rows, k)) / n * 1e6
        exact = hd.time_derivatives(loop, rows, k)
        closed = hd.constrained_dynamics(loop, rows, k).qjet[:, 0]
        singles = []
        for s in range(0, n, max(1, n // 40)):
            t0 = time.perf_counter()
            hd.constrained_dynamics(loop, rows[s:s + 1], k, guess=closed[s:s + 1])
            singles.append(time.perf_counter() - t0)
        one = statistics.median(singles) * 1e6
        q = q_start.copy()
        errors = []
        t0 = time.perf_counter()
        for s in range(n):
            values, q = route.derivatives(t[s], motion, k, q)
            errors.append(np.max(np.abs(values[k] - exact[s, k])))
        pinocchio = (time.perf_counter() - t0) / n * 1e6
        print(f"  {k} | {batch:11.1f} | {one:16.0f} | {pinocchio:23.0f} | {pinocchio / batch:13.1f} | "
              f"{pinocchio / one:11.2f} | {max(errors):.1e} ({np.abs(exact[:, k]).max():.3g})")


def main():
    n = int(sys.argv[1]) if len(sys.argv) > 1 else 400
    warnings.simplefilter("ignore", hd.HodDynamicsWarning)
    print(f"load average {open('/proc/loadavg').read().split()[:3]}, backend "
          f"{hd.kernels.backend.resolve_backend(None)}")
    bench("four-bar (planar_fourbar)", L.fourbar(), L.FOURBAR_MOTION, L.FOURBAR_URDF, n)
    bench("parallel ankle", L.ankle(), L.ANKLE_MOTION, L.ANKLE_URDF, n)
    print(f"\nload average {open('/proc/loadavg').read().split()[:3]}")


if __name__ == "__main__":
    main()
