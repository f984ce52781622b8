"""Many recordings (hod_dynamics.fleet, hod_dynamics.fleet.trends, hod-dynamics analyze-bags): generated
fleets of two real arm descriptions, analysed on a real Dask cluster on loopback (dask scheduler
and dask worker processes, shared by the module's tests), in a local pool and in this process;
workers killed mid-run; re-runs; Ctrl-C; friction drift."""

import contextlib
import glob
import importlib.util
import json
import os
import shutil
import signal
import subprocess
import sys
import time

import numpy as np
import pytest

pytest.importorskip("distributed")
pytest.importorskip("pandas")

import hod_dynamics as hd  # noqa: E402
from hod_dynamics import cli
from hod_dynamics.fleet import run as fleet, trends  # noqa: E402

from fleet_recordings import LWR4, drifting_fleet, fleet_recording  # noqa: E402

MAPPING = {"iiwa14_*": "iiwa14", "kuka-lwr_*": LWR4}
FAST = dict(friction="fit", plots=False, derived_bag=False)   # the per-bag outputs the table needs
NUMERIC = [name for name, kind, _ in fleet.COLUMNS if kind == "float64"]


@pytest.fixture(scope="module")
def fleet_bags(tmp_path_factory):
    """14 bags: 6 of the iiwa 14 and 5 of the LWR4+ (4 s at 100 Hz, one every other day), a
    truncated MCAP file, an empty bag (a JointState topic, no message) and a bag of the LWR4+
    named like the iiwa's (so analysed with a model whose joints it lacks)."""
    from hod_dynamics.recordings.bag_writer import write_joint_states

    root = tmp_path_factory.mktemp("fleet")
    paths = []
    for robot, count in (("iiwa14", 6), ("kuka-lwr", 5)):
        for k in range(count):
            rec = fleet_recording(robot, 100 * len(robot) + k, 2.0 * k, duration=4.0)
            paths.append(rec.write(root / f"{robot}_{k:02d}"))
    data = open(glob.glob(str(paths[0] / "*.mcap"))[0], "rb").read()
    (root / "iiwa14_corrupt.mcap").write_bytes(data[: len(data) * 6 // 10])
    write_joint_states(root / "iiwa14_empty", np.zeros(0, np.int64), [f"iiwa_joint_{i}" for i in range(1, 8)],
                       np.zeros((0, 7)))
    fleet_recording("kuka-lwr", 77, 3.0, duration=4.0).write(root / "iiwa14_wrong_arm")
    return root


class DaskProcesses:
    """A Dask cluster started the ordinary way: ``dask scheduler`` and ``workers`` ``dask worker``
    processes (each with its nanny, which starts a killed worker again) on 127.0.0.1, each in
    a process group of its own; :meth:`close` ends them by their PIDs and leaves none."""

    def __init__(self, folder, workers=2):
        import socket

        with socket.socket() as s:              # a free port on loopback
            s.bind(("127.0.0.1", 0))
            port = s.getsockname()[1]
        self.address = f"tcp://127.0.0.1:{port}"
        self.workers = workers
        env = dict(os.environ, PYTHONPATH=os.pathsep.join([os.getcwd()] + sys.path))
        start = (lambda name, *argv: subprocess.Popen(
            [sys.executable, "-m", "dask", *argv], env=env, stdin=subprocess.DEVNULL, start_new_session=True,
            stdout=subprocess.DEVNULL, stderr=open(folder / f"{name}.log", "w")))
        self.processes = [start("scheduler", "scheduler", "--host", "127.0.0.1", "--port", str(port),
                                "--no-dashboard")]
        self.processes += [start(f"worker{i}", "worker", self.address, "--nthreads", "1", "--host", "127.0.0.1",
                                 "--no-dashboard", "--name", f"worker{i}") for i in range(workers)]
        self.wait_for_workers()

    def wait_for_workers(self, timeout=120):
        """Block until every worker is connected (a nanny restarts a killed one)."""
        from distributed import Client

        with Client(self.address, timeout=timeout, set_as_default=False) as client:
            client.wait_for_workers(self.workers, timeout=timeout)

    def close(self):
        """SIGTERM to the workers (all at once), then to the scheduler; SIGKILL to what lives 10 s
        after; returns the PIDs of the processes of their groups that were still alive then
        (none expected)."""
        for group in (self.processes[1:], self.processes[:1]):
            for proc in group:
                proc.terminate()
            deadline = time.monotonic() + 10
            for proc in group:
                try:
                    proc.wait(timeout=max(0.1, deadline - time.monotonic()))
                except subprocess.TimeoutExpired:
                    proc.kill()
                    proc.wait()
        deadline = time.monotonic() + 10
        while any(_living_in_group(p.pid) for p in self.processes) and time.monotonic() < deadline:
            time.sleep(0.2)
        left = [pid for p in self.processes for pid in _living_in_group(p.pid)]
        for p in self.processes:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(p.pid, signal.SIGKILL)
        return left


@pytest.fixture(scope="module")
def cluster(tmp_path_factory):
    """One real Dask cluster for this module's tests (see :class:`DaskProcesses`); after them,
    no process of it is left."""
    procs = DaskProcesses(tmp_path_factory.mktemp("dask_logs"))
    try:
        yield procs
    finally:
        left = procs.close()
    assert not left, f"processes of the Dask cluster still alive: {left}"


@pytest.fixture
def client(cluster):
    """A client of the module's cluster, every worker connected (a test may kill one)."""
    from distributed import Client

    cluster.wait_for_workers()
    with Client(cluster.address) as c:
        yield c


def assert_same_table(a, b):
    """Row for row: the same bags, joints, statuses and strings; floats equal to 1e-12."""
    assert len(a) == len(b)
    for name, kind, _ in fleet.COLUMNS:
        if kind == "float64":
            np.testing.assert_allclose(a[name].to_numpy(float), b[name].to_numpy(float), rtol=1e-12, atol=1e-12,
                                       equal_nan=True, err_msg=name)
        else:
            assert a[name].tolist() == b[name].tolist(), name


def statuses(frame):
    return dict(zip(frame.drop_duplicates("bag")["bag"], frame.drop_duplicates("bag")["status"]))


@pytest.fixture(scope="module")
def dask_run(fleet_bags, cluster, tmp_path_factory):
    """The fleet analysed on the cluster by the command a user types, in a process of its own:
    ``analyze-bags --dask tcp://127.0.0.1:PORT`` (its client is no default client). Returns
    (out, the table it wrote, the finished process)."""
    out = tmp_path_factory.mktemp("dask_out")
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([os.getcwd()] + sys.path))
    proc = subprocess.run([sys.executable, "-m", "hod_dynamics", "analyze-bags", str(fleet_bags / "*"), "--urdf",
                           "iiwa14_*=iiwa14", "--urdf", f"kuka-lwr_*={LWR4}", "--out", str(out), "--friction", "fit",
                           "--dask", cluster.address, "--no-plot", "--no-derived-bag"], env=env,
                          stdin=subprocess.DEVNULL, capture_output=True, text=True, timeout=600)
    return out, fleet.read_table(str(out)), proc


def test_a_dask_cluster_on_loopback_gives_the_local_pools_table_row_for_row(fleet_bags, dask_run, tmp_path, capsys):
    out, on_cluster, proc = dask_run
    # dask scheduler + 2 dask worker processes, reached by --dask tcp://127.0.0.1:PORT
    assert proc.returncode == 0 and "Traceback" not in proc.stderr, proc.stderr
    assert "14 bags: 11 analysed, 3 not (listed in the summary)" in proc.stdout
    assert f"wrote {out / 'fleet.parquet'}" in proc.stdout
    assert cli.main(["analyze-bags", str(fleet_bags / "*"), "--urdf", "iiwa14_*=iiwa14", "--urdf",
                     f"kuka-lwr_*={LWR4}", "--out", str(tmp_path), "--friction", "fit", "--workers", "2",
                     "--no-plot", "--no-derived-bag"]) == 0
    captured = capsys.readouterr()
    local = fleet.read_table(str(tmp_path))
    assert_same_table(on_cluster, local)
    # 14 bags, 11 analysed: 7 joints each; three rows carry their errors
    assert on_cluster["bag"].nunique() == 14 and len(on_cluster) == 11 * 7 + 3
    st = statuses(on_cluster)
    assert st["iiwa14_corrupt"].startswith(f"cannot read bag '{fleet_bags / 'iiwa14_corrupt.mcap'}' (File end magic "
                                           "is invalid.): the file is corrupt, truncated or not a ROS bag")
    assert st["iiwa14_empty"] == "topic '/joint_states' holds no messages; record joint states or pick another topic"
    assert st["iiwa14_wrong_arm"].startswith("joints ['iiwa_joint_1', 'iiwa_joint_2', 'iiwa_joint_3'")
    assert sum(s == "ok" for s in st.values()) == 11
    ok = on_cluster[on_cluster["status"] == "ok"]
    assert set(ok["robot"]) == {"iiwa14", "kuka-lwr"} and ok[NUMERIC].notna().all().all()
    assert str(ok["start"].dtype) == "datetime64[ns, UTC]" and ok["start"].min().year == 2023
    # the friction the generator put in, found in every bag (the standard errors say how well)
    lwr = ok[ok["joint"] == "lwr_1_joint"]
    assert np.all(np.abs(lwr["coulomb"] - 3.5) < 6 * lwr["coulomb_se"] + 0.05), lwr[["coulomb", "coulomb_se"]]
    # the command line: one plain line per bag (stderr is not a terminal), the summary on stdout
    lines = [ln for ln in captured.err.splitlines() if ln.startswith("[")]
    assert len(lines) == 14 and lines[-1].startswith("[14/14] ")
    assert "14 bags: 11 analysed, 3 not (listed in the summary)" in captured.out
    assert f"wrote {tmp_path / 'fleet.parquet'}" in captured.out
    # the table as written: pyarrow's schema, UTC times
    import pyarrow.parquet as pq

    schema = pq.read_schema(str(out / "fleet.parquet"))
    assert schema.names == [name for name, _, _ in fleet.COLUMNS] and str(schema.field("start").type) == \
        "timestamp[ns, tz=UTC]"


def test_each_bag_folder_holds_what_analyze_bag_writes_and_the_same_numbers(fleet_bags, dask_run, tmp_path):
    out, frame, _ = dask_run
    bag = fleet_bags / "kuka-lwr_02"
    assert cli.main(["analyze-bag", str(bag), "--urdf", LWR4, "--out", str(tmp_path), "--friction", "fit",
                     "--no-plot", "--no-derived-bag", "--no-progress"]) == 0
    alone = json.loads((tmp_path / "summary.json").read_text())
    worker = json.loads((out / "kuka-lwr_02" / "summary.json").read_text())
    assert alone == worker
    assert sorted(os.listdir(out / "kuka-lwr_02")) == sorted(os.listdir(tmp_path) + [fleet.ROWS])
    rows = frame[frame["bag"] == "kuka-lwr_02"].set_index("joint")
    for joint, e in alone["joints"].items():
        assert rows.loc[joint, "residual_rms"] == e["residual_rms"]
        assert rows.loc[joint, "coulomb"] == alone["friction"]["joints"][joint]["coulomb"]
        assert rows.loc[joint, "coulomb_se"] == alone["friction"]["joints"][joint]["coulomb_se"]
    slim = tmp_path / "slim"
    assert cli.main(["analyze-bag", str(bag), "--urdf", LWR4, "--out", str(slim), "--friction", "fit",
                     "--no-plot", "--no-derived-bag", "--no-samples-csv", "--no-progress"]) == 0
    assert sorted(os.listdir(slim)) == ["friction.yaml", "summary.json"]
    # a bag that failed on its input has a folder with its row only; no staging debris
    assert os.listdir(out / "iiwa14_corrupt") == [fleet.ROWS]
    assert not os.path.exists(out / fleet.STAGING)


def test_a_rerun_skips_the_complete_bags_and_force_or_a_changed_bag_redoes_them(fleet_bags, dask_run, cluster,
                                                                                 client, tmp_path, capsys):
    out, first, _ = dask_run
    copy = tmp_path / "out"
    shutil.copytree(out, copy)
    seen = []
    run = (lambda **kw: hd.analyze_bags(str(fleet_bags / "*"), MAPPING, str(copy), client=client,
                                        progress=lambda p: seen.append((p.done, p.skipped, p.analysed)), **FAST,
                                        **kw))
    again = run()
    assert seen[-1] == (14, 14, 0)                # nothing analysed: all 14 complete
    assert_same_table(first, again)
    # the command line on the cluster by its address (--dask): the same
    assert cli.main(["analyze-bags", str(fleet_bags / "*"), "--urdf", "iiwa14_*=iiwa14", "--urdf", f"kuka-lwr_*={LWR4}",
                     "--out", str(copy), "--friction", "fit", "--dask", cluster.address, "--no-plot",
                     "--no-derived-bag"]) == 0
    assert "14 of 14 bags complete from an earlier run with the same settings (--force redoes them)" in \
        capsys.readouterr().err
    assert_same_table(first, fleet.read_table(str(copy)))
    os.utime(fleet_bags / "iiwa14_03" / "iiwa14_03.mcap")     # the recording was written again
    seen.clear()
    run()
    assert seen[-1] == (14, 13, 1)
    seen.clear()
    run(force=True)
    assert seen[-1] == (14, 0, 14)
    # other settings: the bags again (two of them here)
    seen.clear()
    hd.analyze_bags([str(fleet_bags / "iiwa14_00"), str(fleet_bags / "iiwa14_01")], MAPPING, str(copy), workers=0,
                    time_base="header", progress=lambda p: seen.append((p.done, p.skipped, p.analysed)), **FAST)
    assert seen[-1] == (2, 0, 2)


def _kill_a_busy_worker(client, killed):
    """At the first bag finished, SIGKILL a worker process that is analysing a bag (its nanny
    starts a new one)."""
    def progress(p):
        if p.name is None or killed:
            return
        busy = {w: keys for w, keys in client.processing().items() if keys}
        pids = client.run(os.getpid, workers=list(busy)[:1])
        for address, pid in pids.items():
            os.kill(pid, signal.SIGKILL)
            killed.append((address, busy[address]))
    return progress


def test_a_worker_killed_mid_run_has_its_bags_run_again_and_every_bag_ends_with_a_complete_row(fleet_bags, dask_run,
                                                                                               client, tmp_path):
    _, reference, _ = dask_run
    killed = []
    frame = hd.analyze_bags(str(fleet_bags / "*"), MAPPING, str(tmp_path), client=client,
                            progress=_kill_a_busy_worker(client, killed), **FAST)
    assert killed and killed[0][1], "no worker was busy when killed"
    assert_same_table(reference, frame)
    assert_same_table(reference, fleet.read_table(str(tmp_path)))
    assert not os.path.exists(tmp_path / fleet.STAGING)
    for bag in reference["bag"].unique():
        assert os.path.isfile(tmp_path / bag / fleet.ROWS)


def _allowed_failures(client, value):
    """Set the scheduler's allowed-failures (distributed.scheduler.allowed-failures, read when it
    starts) to ``value``; returns the value it had."""
    def swap(dask_scheduler):
        old, dask_scheduler.allowed_failures = dask_scheduler.allowed_failures, value
        return old
    return client.run_on_scheduler(swap)


def test_a_bag_whose_workers_die_too_often_is_reported_and_the_next_run_does_it(fleet_bags, dask_run, client,
                                                                                 tmp_path):
    _, reference, _ = dask_run
    before = _allowed_failures(client, 0)
    try:
        killed = []
        frame = hd.analyze_bags(str(fleet_bags / "*"), MAPPING, str(tmp_path), client=client,
                                progress=_kill_a_busy_worker(client, killed), **FAST)
    finally:
        assert _allowed_failures(client, before) == 0
    died = frame[frame["status"].str.startswith("the Dask workers analysing this bag died")]
    assert len(died) >= 1 and died["joint"].isna().all() and died[NUMERIC].isna().all().all()
    assert (frame["status"] == "ok").sum() == 77 - 7 * len(died)
    for bag in died["bag"]:
        assert not os.path.exists(tmp_path / bag)     # nothing half-written where the bag's outputs go
    seen = []
    again = hd.analyze_bags(str(fleet_bags / "*"), MAPPING, str(tmp_path), workers=0,
                            progress=lambda p: seen.append((p.skipped, p.analysed)), **FAST)
    assert seen[-1] == (14 - len(died), len(died))
    assert_same_table(reference, again)


def _living_in_group(pgid):
    """Processes of the process group ``pgid`` that are not zombies (waiting to be reaped)."""
    living = []
    for pid in filter(str.isdigit, os.listdir("/proc")):
        try:
            stat = open(f"/proc/{pid}/stat").read()
        except OSError:
            continue
        fields = stat[stat.rindex(")") + 2:].split()
        if int(fields[2]) == pgid and fields[0] != "Z":
            living.append(int(pid))
    return living


def _default_sigint():
    """In the child before it runs the command: SIGINT's default action (Python then turns it into
    KeyboardInterrupt)."""
    signal.signal(signal.SIGINT, signal.SIG_DFL)


def test_ctrl_c_stops_cleanly_and_leaves_the_table_of_what_finished(fleet_bags, tmp_path):
    """SIGINT to the command's process group (what a terminal's Ctrl-C does): exit 130 with one
    line, the table of the bags finished, no staging debris, no process left; the same command
    again does the rest."""
    out = tmp_path / "out"
    cmd = [sys.executable, "-m", "hod_dynamics", "analyze-bags", str(fleet_bags / "*"), "--urdf", "iiwa14_*=iiwa14",
           "--urdf", f"kuka-lwr_*={LWR4}", "--out", str(out), "--friction", "fit", "--workers", "1", "--no-plot",
           "--no-derived-bag"]
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([os.getcwd()] + sys.path))
    # SIGINT as a terminal's foreground job has it: a test run started in the background by a
    # non-interactive shell ignores SIGINT, the command would inherit that and never stop
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env,
                            start_new_session=True, preexec_fn=_default_sigint)
    lines = []
    for line in proc.stderr:
        lines.append(line)
        if line.startswith("[2/14]"):
            os.killpg(proc.pid, signal.SIGINT)
            break
    _, rest = proc.communicate(timeout=60)
    err = "".join(lines) + rest
    assert proc.returncode == 130, err
    assert err.splitlines()[-1].startswith("hod-dynamics: interrupted; "), err
    finished = fleet.read_table(str(out))
    done = finished["bag"].nunique()
    assert 2 <= done < 14
    assert not os.path.exists(out / fleet.STAGING)
    deadline = time.monotonic() + 10                # the workers went with the command
    while _living_in_group(proc.pid) and time.monotonic() < deadline:
        time.sleep(0.2)
    assert not _living_in_group(proc.pid)
    assert "Traceback" not in err, err
    seen = []
    hd.analyze_bags(str(fleet_bags / "*"), MAPPING, str(out), workers=0,
                    progress=lambda p: seen.append((p.skipped, p.analysed)), **FAST)
    assert seen[-1] == (done, 14 - done)


def test_a_friction_drift_of_2_percent_a_week_names_that_robot_and_joint_and_no_other(client, tmp_path):
    """Two robots, a bag each every 3.5 days for 6 weeks (4 s at 100 Hz); the Coulomb friction of
    the LWR4+'s second joint rises 2 % a week (compounded). A single bag's Coulomb estimate has
    a standard error of about 0.8 % of its level."""
    drifting_fleet(tmp_path / "bags", weeks=6, per_week=2, drift=0.02, robot="kuka-lwr", joint=1, duration=4.0)
    frame = hd.analyze_bags(str(tmp_path / "bags" / "*"), MAPPING, str(tmp_path / "out"), client=client,
                            friction="fit", derived_bag=False, plots=False)
    assert (frame["status"] == "ok").all() and frame["bag"].nunique() == 24
    ok = frame[frame["joint"] == "lwr_1_joint"]
    assert np.median(ok["coulomb_se"] / ok["coulomb"]) < 0.01
    text = (tmp_path / "out" / "fleet_summary.txt").read_text()
    named = [ln for ln in text.splitlines() if ln.startswith("  robot ")]
    assert len(named) == 1 and named[0].startswith("  robot kuka-lwr, joint lwr_1_joint: Coulomb friction "), text
    others = [j for j in frame["joint"].unique() if j != "lwr_1_joint"]
    assert "iiwa14" not in text and not [j for j in others if j in text], text
    series = trends.trends_frame(trends.fleet_trends(frame)).set_index(["robot", "joint", "quantity"])
    found = series.loc[("kuka-lwr", "lwr_1_joint", "coulomb")]
    assert 0.01 < found["slope_per_week"] / found["level"] < 0.03
    # the drift is far beyond the threshold, and every other series far inside it
    assert found["p"] < found["alpha"] / 100
    assert series.drop(("kuka-lwr", "lwr_1_joint", "coulomb"))["p"].min() > 10 * found["alpha"]
    # plots=False: no PNG, trends.png neither (--no-plot); the figure of these trends drawn apart
    assert not (tmp_path / "out" / "trends.png").exists()
    trends.write_trend_report(frame, str(tmp_path / "out"))
    assert (tmp_path / "out" / "trends.png").stat().st_size > 10_000


def test_the_threshold_separates_a_drift_from_the_noise_of_single_bags():
    """The statistics alone, on series drawn like the table's: Coulomb estimates with ~1 %
    standard errors and a scatter between bags 1.5 x larger than those errors claim (what a
    least-squares error that takes the samples as independent misses). Without drift the
    p-values are calibrated (1 % of 2,000 series below 0.01) and none of 2,000 series is named
    at a 1 % false alarm for the 2,000; a 2 %/week drift over 6 weeks of 4 bags a week is named
    in every one of 200 draws judged as one of a 42-series fleet; 3 bags are never enough."""
    import pandas as pd

    rng = np.random.default_rng(5)
    t0 = pd.Timestamp("2025-01-01", tz="UTC")

    def series(slope, alpha, n=24, weeks=6.0):
        days = np.sort(rng.uniform(0, 7 * weeks, n))
        times = [t0 + pd.Timedelta(days=d) for d in days]
        se = 0.01 * rng.uniform(0.7, 1.3, n)
        y = (1 + slope) ** (days / 7) + 1.5 * se * rng.standard_normal(n)
        return trends.series_trend("r", "j", "coulomb", times, y, se, alpha=alpha)

    null = [series(0.0, 0.01 / 2000) for _ in range(2000)]
    assert not any(t.moved for t in null)
    assert 0.005 < np.mean([t.p < 0.01 for t in null]) < 0.02
    assert all(series(0.02, 0.01 / 42).moved for _ in range(200))
    few = series(0.10, 0.01 / 42, n=3)
    assert not few.moved and few.p > 0.01 / 42
    assert series(0.0, 0.01, n=2).reason == "2 bags: a trend needs 3 or more"
    # without standard errors the scatter alone: a noiseless line is sure, a constant never moves
    times = [t0 + pd.Timedelta(days=7 * k) for k in range(5)]
    exact = trends.series_trend("r", "j", "residual_rms", times, 1.0 + 0.1 * np.arange(5), None, alpha=1e-6)
    assert exact.moved and exact.p < 1e-30 and abs(exact.slope - 0.1) < 1e-12
    flat = trends.series_trend("r", "j", "viscous", times, np.zeros(5), None, alpha=0.5)
    assert not flat.moved


_COLD_START = """
import json, logging, sys, warnings
import hod_dynamics as hd
bag, out, engine = sys.argv[1:]
logged = []
handler = logging.Handler()
handler.emit = lambda record: logged.append(record.getMessage())
logging.getLogger("distributed.worker").addHandler(handler)
with warnings.catch_warnings(record=True) as caught:
    warnings.simplefilter("always")
    if engine == "dask":
        from distributed import Client, LocalCluster
        with LocalCluster(n_workers=1, threads_per_worker=1, processes=False, dashboard_address=None) as c, \\
                Client(c) as client:
            frame = hd.analyze_bags([bag], "iiwa14", out, client=client, friction="fit", plots=False,
                                    derived_bag=False)
    else:
        frame = hd.analyze_bags([bag], "iiwa14", out, workers=0, friction="fit", plots=False, derived_bag=False)
warned = [str(w.message) for w in caught if issubclass(w.category, hd.errors.KernelCompileWarning)]
print(json.dumps({"status": sorted(set(frame["status"])), "notes": [n for n in frame["notes"] if isinstance(n, str)],
                  "summary_notes": json.load(open(out + "/iiwa14_00/summary.json")).get("notes"),
                  "warned": len(warned), "logged": sum("compiling kernels" in m for m in logged)}))
"""


@pytest.mark.skipif(importlib.util.find_spec("numba") is None, reason="needs numba")
def test_a_kernel_compile_on_a_cold_cache_stays_out_of_the_table(fleet_bags, tmp_path):
    """With numba's cache empty, the first bag compiles the kernels (the dynamics' and the fit's).
    The compile notices are about the process, not the bag: on a Dask worker it goes to the worker's log, in the caller's
    process to the caller (a KernelCompileWarning before the first bag); never into a row's
    notes or summary.json, so the table does not depend on which worker compiled."""
    runs = {}
    for engine in ("dask", "serial"):
        env = dict(os.environ, NUMBA_CACHE_DIR=str(tmp_path / f"cache_{engine}"),
                   PYTHONPATH=os.pathsep.join([os.getcwd()] + sys.path))
        runs[engine] = subprocess.Popen([sys.executable, "-c", _COLD_START, str(fleet_bags / "iiwa14_00"),
                                         str(tmp_path / f"out_{engine}"), engine], env=env, stdout=subprocess.PIPE,
                                        stderr=subprocess.PIPE, text=True)
    for engine, proc in runs.items():
        out, err = proc.communicate(timeout=600)
        assert proc.returncode == 0, err
        seen = json.loads(out.splitlines()[-1])
        assert seen["status"] == ["ok"], seen
        assert not [n for n in seen["notes"] + (seen["summary_notes"] or []) if "KernelCompile" in n], seen
        # two notices: the dynamics' kernels and the fit's band solves
        assert (seen["logged"], seen["warned"]) == ((2, 0) if engine == "dask" else (0, 2)), (engine, seen)


def test_urls_mappings_with_robot_names_and_bag_names(fleet_bags, dask_run, tmp_path):
    """fsspec URLs (a rosbag2 folder and an MCAP file inside a zip archive, a file:// URL) give
    the rows of the local bags; a YAML mapping names the robots; a bag no pattern matches gets
    a row saying so; bags of the same name in two folders get folders of their own."""
    import zipfile

    _, reference, _ = dask_run
    archive = tmp_path / "bags.zip"
    with zipfile.ZipFile(archive, "w") as zf:
        for f in glob.glob(str(fleet_bags / "iiwa14_01" / "*")):
            zf.write(f, f"iiwa14_01/{os.path.basename(f)}")
        zf.write(glob.glob(str(fleet_bags / "kuka-lwr_03" / "*.mcap"))[0], "kuka-lwr_03.mcap")
    (tmp_path / "fleet.yaml").write_text(f"iiwa14_*: iiwa14\nkuka-lwr_*: {{urdf: {LWR4}, robot: lwr-cell-7}}\n")
    urls = [f"zip://iiwa14_01::file://{archive}", f"zip://kuka-lwr_03.mcap::file://{archive}",
            f"file://{fleet_bags / 'iiwa14_02'}", str(fleet_bags / "kuka-lwr_04")]
    frame = hd.analyze_bags(urls + [str(fleet_bags / "iiwa14_empty")], str(tmp_path / "fleet.yaml"), None,
                            workers=0, **FAST)
    assert list(frame.drop_duplicates("bag")["bag"]) == ["iiwa14_01", "kuka-lwr_03", "iiwa14_02", "kuka-lwr_04",
                                                         "iiwa14_empty"]
    ok = frame[frame["status"] == "ok"]
    assert set(ok.loc[ok["bag"].str.startswith("kuka"), "robot"]) == {"lwr-cell-7"}
    for bag in ("iiwa14_01", "kuka-lwr_03", "iiwa14_02"):
        a, b = frame[frame["bag"] == bag], reference[reference["bag"] == bag]
        np.testing.assert_allclose(a[NUMERIC].to_numpy(float), b[NUMERIC].to_numpy(float), rtol=1e-12)
    nomatch = hd.analyze_bags([str(fleet_bags / "iiwa14_00"), str(fleet_bags / "kuka-lwr_00")], {"iiwa14_*": "iiwa14"},
                              workers=0, **FAST)
    assert statuses(nomatch)["kuka-lwr_00"] == "no pattern of the --urdf mapping matches bag 'kuka-lwr_00'"
    assert fleet.bag_names(["/a/x/run.mcap", "/b/x/run.mcap", "/a/y/run", "s3://bucket/z/other.db3"]) == \
        ["a__x__run", "b__x__run", "y__run", "other"]


def test_the_command_line_refuses_bad_input_in_one_line(fleet_bags, tmp_path, capsys):
    def error(argv):
        assert cli.main(["analyze-bags"] + argv + ["--out", str(tmp_path / "o"), "--no-progress"]) == 2
        return capsys.readouterr().err.strip().splitlines()[-1]

    bag = str(fleet_bags / "iiwa14_00")
    assert error([str(tmp_path / "nothing*"), "--urdf", "iiwa14"]) == (
        f"hod-dynamics: error: no bag matches '{tmp_path / 'nothing*'}' (a bag is a .mcap, .db3 or .bag file or a "
        "rosbag2 folder with metadata.yaml)")
    assert error([bag, "--urdf", "iiwa14", "--workers", "2", "--dask", "tcp://127.0.0.1:1"]) == (
        "hod-dynamics: error: --workers and --dask exclude each other: the cluster has its own workers")
    assert error([bag, "--urdf", "iiwa14", "--dask", "tcp://127.0.0.1:9"]).startswith(
        "hod-dynamics: error: --dask tcp://127.0.0.1:9: cannot connect to the scheduler")
    assert error([bag, "--urdf", "iiwa14", "--workers", "-1"]) == (
        "hod-dynamics: error: workers must be an integer >= 0, got -1")
    assert error([bag, "--urdf", "a*=iiwa14", "--urdf", "nonsense"]).startswith(
        "hod-dynamics: error: --urdf 'nonsense': give one URDF for every bag, or PATTERN=URDF")
    assert error([bag, "--urdf", "iiwa14", "--friction", str(tmp_path / "none.yaml")]).startswith(
        "hod-dynamics: error: friction")


def test_a_locked_joint_the_bag_records_is_noted_in_its_summary_and_row(tmp_path, panda_recording, panda_bags):
    """As analyze-bag says: --lock of a joint the bag records gets the same note, in the bag's
    summary.json and in the notes of its rows of the table."""
    rec = panda_recording
    out = tmp_path / "fleet"
    assert cli.main(["analyze-bags", str(panda_bags["mcap"]), "--urdf", rec.urdf, "--out", str(out), "--workers", "0",
                     "--no-progress", "--no-plot", "--no-derived-bag", "--no-samples-csv",
                     "--lock", "panda_joint7=0.3", *rec.locks]) == 0
    note = "--lock panda_joint7: the bag records this joint; its recorded motion is not used, the model holds it at 0.3"
    (summary,) = glob.glob(str(out / "*" / "summary.json"))
    assert note in json.load(open(summary))["notes"]
    frame = fleet.read_table(str(out))
    assert len(frame) == 6 and (frame["status"] == "ok").all()
    assert all(note in notes for notes in frame["notes"])
