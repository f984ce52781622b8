"""Benchmark of the error estimate of analyze-bag: estimated against actual RMS error of tau,
tau' and tau'' per joint, on recordings made the way real ones are (test/recordings.py: the
shipped KUKA iiwa 14 on a five-sine excitation, jittered stamps with late outliers, 0.5 % of
the samples dropped and a burst of 6, a repeated stamp and a duplicate message, receive delays
of 0.3 periods on average so that messages arrive out of stamp order, an encoder of 12 to 24
bits, with or without white sensor noise before the count), against the generator's exact
truth.

For each case it prints the out-of-order message count, per derivative order the smallest and
largest ratio estimate / actual over the 7 joints (the actual error taken over the samples the
estimate covers: more than an end zone from a segment's ends), the worst ratio within the end
zones, the orders flagged "not supported" (joints x orders), and the time of the analysis.
The estimate should be within a factor of 2 of the actual error wherever the data support the
order (an order the data do not support, for motion they cannot resolve, reports that bound). Run:
``python bench/bench_error_estimate.py [--seeds 1 2 3] [--rates 100 200 1000] [--bits 12 16 20 24]
[--noise 0 5e-5] [--duration 25]``.
"""

import argparse
import os
import sys
import time

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path[:0] = [os.path.join(HERE, ".."), os.path.join(HERE, "..", "test")]

from hod_dynamics.replay.analysis import analyze_joint_states  # noqa: E402

from recordings import Recording  # noqa: E402


def ratios(rec, result):
    """(estimate / actual (3, n) away from the end zones, the same within them)."""
    t = result.t
    inside, ends = np.zeros((3, 7)), np.zeros((3, 7))
    for k in range(3):
        zone = np.zeros(len(t), dtype=bool)
        for lo, hi in result.segments:
            zone[lo:hi] = (t[lo:hi] - t[lo] < result.errors.end_zone[k]) | (t[hi - 1] - t[lo:hi] < result.errors.end_zone[k])
        err = result.result.taujet[:, k] - rec.taujet[:, k]
        inside[k] = result.errors.total[k] / np.sqrt(np.mean(err[~zone] ** 2, axis=0))
        ends[k] = result.errors.total_ends[k] / np.sqrt(np.mean(err[zone] ** 2, axis=0))
    return inside, ends


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--seeds", type=int, nargs="+", default=[1, 2, 3])
    parser.add_argument("--rates", type=float, nargs="+", default=[100.0, 200.0, 1000.0])
    parser.add_argument("--bits", type=int, nargs="+", default=[12, 16, 20, 24])
    parser.add_argument("--noise", type=float, nargs="+", default=[0.0, 5e-5])
    parser.add_argument("--duration", type=float, default=25.0)
    args = parser.parse_args()
    print(f"{'seed':>4} {'rate':>6} {'bits':>4} {'noise':>7} {'late':>5}   "
          f"{'estimate / actual: tau':>24} {'tau_dot':>13} {'tau_ddot':>13}   {'ends':>11}  flagged  time")
    worst = [np.inf, 0.0]
    for seed in args.seeds:
        for noise in args.noise:
            for rate in args.rates:
                for bits in args.bits:
                    rec = Recording(seed=seed, rate=rate, duration=args.duration, bits=bits, position_noise=noise,
                                    latency=0.3 / rate)
                    states = rec.states()
                    start = time.perf_counter()
                    result = analyze_joint_states(rec.model, states)
                    elapsed = time.perf_counter() - start
                    inside, ends = ratios(rec, result)
                    # within a factor of 2 where the data support the order; where they do not,
                    # the estimate may be the bound of what the samples cannot resolve
                    held = inside[result.supported] if result.supported.any() else np.array([1.0])
                    worst = [min(worst[0], held.min()), max(worst[1], held.max())]
                    cells = "  ".join(f"{r.min():5.2f}..{r.max():<5.2f}" for r in inside)
                    flagged = int((~result.supported).sum())
                    print(f"{seed:>4} {rate:>6.0f} {bits:>4} {noise:>7.0e} {states.time_base.out_of_order:>5}   "
                          f"{cells:>54}   {ends.min():5.2f}..{ends.max():<5.2f} {flagged:>5}  {elapsed:5.1f} s",
                          flush=True)
    print(f"all cases, the orders the data support: estimate / actual from {worst[0]:.2f} to {worst[1]:.2f} (load average "
          f"{os.getloadavg()[0]:.1f} on {os.cpu_count()} cores)")


if __name__ == "__main__":
    main()
