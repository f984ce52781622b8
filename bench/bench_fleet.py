"""Throughput of analyze-bags: bags per minute with 1 and 2 workers, on the local pool (a Dask
LocalCluster the run starts) and on a Dask cluster reached by its address (as ``--dask``), and
the scaling from 1 to 2 workers. The reference is the same bags analysed one after another in
this process (``workers=0``): the cost of a bag without any engine. (There is no Pinocchio
counterpart to time: the work per bag is the replay analysis, timed against Pinocchio by
bench_bag.py.)

    python bench/bench_fleet.py [--bags 16] [--duration 60] [--rate 500] [--outputs full|table]
                                [--sizing]

Each bag is a generated recording of a 7-joint arm (test/recordings.py: jittered stamps,
drops, encoder quantisation, sensor noise, friction), two robots alternating. ``--outputs
full`` writes what analyze-bag writes (samples.csv, summary.json, plots, friction.yaml,
derived.mcap); ``table`` only summary.json and friction.yaml (--no-plot --no-derived-bag
--no-samples-csv). ``--sizing`` times one 10-minute 1 kHz recording in this process, output by
output (the figures doc/fleet.md sizes a fleet with). The machine's load average is printed
first and last: timings taken beside other heavy jobs are not evidence.
"""

import argparse
import os
import shutil
import sys
import tempfile
import time
import warnings

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path[:0] = [os.path.dirname(HERE), os.path.join(os.path.dirname(HERE), "test")]

import hod_dynamics as hd  # noqa: E402
from fleet_recordings import LWR4, fleet_recording  # noqa: E402

MAPPING = {"iiwa14_*": "iiwa14", "kuka-lwr_*": LWR4}


def load():
    return "load average " + ", ".join(f"{x:.2f}" for x in os.getloadavg())


def make_bags(folder, count, duration, rate):
    for k in range(count):
        robot = ("iiwa14", "kuka-lwr")[k % 2]
        fleet_recording(robot, 500 + k, 1.0 * k, duration=duration, rate=rate).write(
            os.path.join(folder, f"{robot}_{k:03d}"))


def timed_run(bags, out, outputs, **engine):
    """(wall s, first-to-last-finish s, bags) of one analyze_bags run into a fresh ``out``."""
    shutil.rmtree(out, ignore_errors=True)
    finished = []
    start = time.perf_counter()
    frame = hd.analyze_bags(os.path.join(bags, "*"), MAPPING, out, friction="fit", force=True,
                            progress=lambda p: finished.append(time.perf_counter()) if p.name else None,
                            **outputs, **engine)
    wall = time.perf_counter() - start
    assert (frame["status"] == "ok").all(), frame[frame["status"] != "ok"]["status"].tolist()
    return wall, finished[-1] - finished[0], len(finished)


def sizing(folder):
    """One 10-minute 1 kHz recording analysed in this process: seconds per step and bytes out."""
    from hod_dynamics.replay.bag_report import analyze_bag

    bag = fleet_recording("iiwa14", 7, 0.0, duration=600.0, rate=1000.0).write(os.path.join(folder, "ten_minutes"))
    size = sum(os.path.getsize(os.path.join(bag, f)) for f in os.listdir(bag))
    model = hd.load_robot("iiwa14")
    analyze_bag(bag, model, None, friction="fit")            # kernels loaded, caches warm
    rows = []
    for label, kw in (("table only (summary.json, friction.yaml)", dict(plots=False, derived_bag=False, samples=False)),
                      ("+ plots", dict(plots=True, derived_bag=False, samples=False)),
                      ("full (+ samples.csv, derived.mcap)", dict(plots=True, derived_bag=True, samples=True))):
        out = os.path.join(folder, "sizing_out")
        shutil.rmtree(out, ignore_errors=True)
        start = time.perf_counter()
        report = analyze_bag(bag, model, out, friction="fit", **kw)
        total = time.perf_counter() - start
        written = sum(os.path.getsize(p) for p in report.paths)
        rows.append((label, total, report.seconds, written))
    print(f"\none 10-minute 1 kHz recording ({size / 2**20:.0f} MB bag), in this process; {load()}")
    print(f"  {'outputs':<44}{'total s':>9}{'fit+dynamics s':>16}{'written MB':>12}")
    for label, total, fit, written in rows:
        print(f"  {label:<44}{total:9.1f}{fit:16.1f}{written / 2**20:12.1f}")


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--bags", type=int, default=16)
    parser.add_argument("--duration", type=float, default=60.0, help="s per recording")
    parser.add_argument("--rate", type=float, default=500.0, help="Hz")
    parser.add_argument("--outputs", choices=("full", "table"), default="full")
    parser.add_argument("--sizing", action="store_true", help="also time one 10-minute 1 kHz recording")
    args = parser.parse_args()
    warnings.simplefilter("ignore")
    from distributed import Client, LocalCluster

    outputs = {} if args.outputs == "full" else dict(plots=False, derived_bag=False, samples_csv=False)
    print(f"bench_fleet: {args.bags} bags of {args.duration:g} s at {args.rate:g} Hz, outputs {args.outputs}; "
          f"{os.cpu_count()} CPUs; {load()}")
    with tempfile.TemporaryDirectory(prefix="bench_fleet_") as tmp:
        bags = os.path.join(tmp, "bags")
        make_bags(bags, args.bags, args.duration, args.rate)
        out = os.path.join(tmp, "out")
        timed_run(bags, out, outputs, workers=0)           # numba's cache and the page cache warm
        results = {"in this process, one after another": timed_run(bags, out, outputs, workers=0)}
        for n in (1, 2):
            results[f"local pool, {n} worker{'s' if n > 1 else ''}"] = timed_run(bags, out, outputs, workers=n)
        for n in (1, 2):
            with LocalCluster(n_workers=n, threads_per_worker=1, processes=True, host="127.0.0.1",
                              dashboard_address=None, silence_logs=50,
                              env={"HOD_DYNAMICS_THREADS": str(max(1, (os.cpu_count() or 1) // n))}) as cluster:
                with Client(cluster.scheduler_address) as client:
                    client.run(lambda: __import__("hod_dynamics.replay.analysis"))
                    results[f"Dask cluster by address, {n} worker{'s' if n > 1 else ''}"] = timed_run(
                        bags, out, outputs, client=client)
        print(f"\n  {'engine':<40}{'wall s':>8}{'bags/min':>10}{'steady bags/min':>17}")
        rate = {}
        for label, (wall, span, n) in results.items():
            rate[label] = 60 * n / wall
            steady = 60 * (n - 1) / span if span > 0 else float("nan")
            print(f"  {label:<40}{wall:8.1f}{rate[label]:10.2f}{steady:17.2f}")
        print("\n  scaling, 2 workers / 1 worker (wall clock, pool start included):")
        for kind in ("local pool", "Dask cluster by address"):
            two, one = rate[f"{kind}, 2 workers"], rate[f"{kind}, 1 worker"]
            print(f"    {kind:<28}{two / one:6.2f}x")
        if args.sizing:
            sizing(tmp)
    print(f"\nbench_fleet done; {load()}")


if __name__ == "__main__":
    main()
