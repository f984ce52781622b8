"""Shared fixtures: robots (shipped, example-robot-data, random trees) and the ROS 2 environment.

Every test process discovers DDS peers on loopback only and in its own domain.
"""

import os

import numpy as np
import pytest

# Loopback-only discovery, private domain per test run (Kilted ignores ROS_LOCALHOST_ONLY).
os.environ["ROS_AUTOMATIC_DISCOVERY_RANGE"] = "LOCALHOST"
os.environ.setdefault("ROS_DOMAIN_ID", str(1 + os.getpid() % 100))

import hod_dynamics as hd  # noqa: E402

from oracles import ERD_ROBOTS, erd_model, pinocchio_robot, random_urdf  # noqa: E402


@pytest.fixture
def rng():
    return np.random.default_rng(12345)


@pytest.fixture(scope="session")
def iiwa():
    return hd.load_robot("iiwa14")


@pytest.fixture(scope="session")
def planar_2r():
    return hd.load_robot("planar_2r")


@pytest.fixture(scope="session", params=sorted(ERD_ROBOTS))
def erd_robot(request):
    """(name, our model, PinocchioRobot) for every example-robot-data robot."""
    model, pinrobot = pinocchio_robot(request.param)
    return request.param, model, pinrobot


@pytest.fixture(scope="session")
def panda():
    return erd_model("panda")


@pytest.fixture(scope="session")
def panda_pinocchio():
    """(our Panda model, PinocchioRobot of the same URDF), fingers locked."""
    return pinocchio_robot("panda")


@pytest.fixture(scope="session", params=[(12, 1), (25, 2), (40, 3)])
def random_tree(request):
    """(urdf text, model) of a random tree with fixed, prismatic and oddly oriented joints."""
    n, seed = request.param
    text = random_urdf(n, seed)
    return text, hd.RobotModel.from_urdf(text)


@pytest.fixture(scope="session", params=["panda", "ur5", "talos", "tree_12_1", "tree_25_7"])
def pinocchio_tree(request):
    """(our model, PinocchioRobot) of Panda, UR5, TALOS and two random trees (prismatic, fixed
    and oddly oriented joints): the robots the kinematics and forward dynamics are checked on."""
    from oracles import PinocchioRobot

    if request.param.startswith("tree"):
        n, seed = map(int, request.param.split("_")[1:])
        text = random_urdf(n, seed)
        model = hd.RobotModel.from_urdf(text)
        return model, PinocchioRobot(text, model)
    return pinocchio_robot(request.param)


@pytest.fixture(scope="session")
def iiwa_pinocchio(iiwa):
    """(our iiwa14 with the paper's gravity (0, 0, -9.80665), PinocchioRobot of the same URDF)."""
    from oracles import PinocchioRobot

    model = iiwa.with_gravity(hd.model.paper_examples.IIWA_GRAVITY)
    return model, PinocchioRobot(hd.robot_path("iiwa14"), model)


class PandaRecording:
    """A known smooth Panda motion sampled like a robot log (``rate`` Hz for ``duration`` s):
    exact jets, true tau^(0..2), and noisy measurements (positions 1e-4 rad, efforts 0.2 N m)."""

    AMP = np.array([0.6, 0.4, 0.5, 0.5, 0.8, 0.6, 0.9])
    OMEGA = 2 * np.pi * np.array([0.35, 0.5, 0.3, 0.45, 0.6, 0.4, 0.55])
    CENTER = np.array([0.0, 0.2, 0.0, -1.8, 0.0, 1.6, 0.8])
    PHASE = 0.7 * np.arange(7)
    T0_NS = 1_700_000_000 * 10**9
    POSITION_NOISE, EFFORT_NOISE = 1e-4, 0.2

    def __init__(self, model, rate=500.0, duration=6.0, seed=7):
        from oracles import ERD_ROBOTS, erd_path

        self.model, self.urdf = model, erd_path("panda")
        self.locks = [arg for nm, v in ERD_ROBOTS["panda"][1].items() for arg in ("--lock", f"{nm}={v}")]
        self.t = np.arange(int(round(duration * rate))) / rate
        self.stamps_ns = self.T0_NS + np.round(self.t * 1e9).astype(np.int64)
        self.taujet = hd.time_derivatives(model, self.qjet(self.t, 5), 2)
        rng = np.random.default_rng(seed)
        self.position = self.qjet(self.t, 1)[:, 0] + self.POSITION_NOISE * rng.standard_normal(self.taujet[:, 0].shape)
        self.effort = self.taujet[:, 0] + self.EFFORT_NOISE * rng.standard_normal(self.position.shape)

    def qjet(self, t, rows):
        """Exact jet (len(t), rows, 7) of q_j = c_j + a_j sin(w_j t + phi_j)."""
        t = np.asarray(t, dtype=float)[:, None]
        return np.stack([self.CENTER * (k == 0) + self.AMP * self.OMEGA ** k
                         * np.sin(self.OMEGA * t + self.PHASE + k * np.pi / 2) for k in range(rows)], axis=1)

    def write(self, path, storage, **kwargs):
        """Record as a rosbag2 bag with an extra joint 'gripper' the model does not have."""
        from hod_dynamics.recordings.bag_writer import write_joint_states

        extra = np.zeros((len(self.t), 1))
        write_joint_states(path, self.stamps_ns, list(self.model.joint_names) + ["gripper"],
                           np.hstack([self.position, extra]), np.hstack([self.qjet(self.t, 2)[:, 1], extra]),
                           np.hstack([self.effort, extra]), storage=storage, **kwargs)
        return path


@pytest.fixture(scope="session")
def panda_recording(panda):
    return PandaRecording(panda)


@pytest.fixture(scope="session")
def panda_bags(panda_recording, tmp_path_factory):
    """{"mcap": path of the .mcap file, "sqlite3": path of the bag folder} of the recording
    (the two ways users pass a bag)."""
    pytest.importorskip("rosbags")
    root = tmp_path_factory.mktemp("bags")
    mcap = panda_recording.write(root / "rec_mcap", "mcap")
    return {"mcap": mcap / "rec_mcap.mcap", "sqlite3": panda_recording.write(root / "rec_db3", "sqlite3")}


# -- a progress line at least every minute -----------------------------------------------------------
# With -q the dots of a file share one line, which a CI log (line-buffered) shows only when the
# file ends: a slow file looked silent for minutes. A line at least every PROGRESS_EVERY seconds says
# how far the run is; a test that runs longer than that is named while it runs.
PROGRESS_EVERY = float(os.environ.get("HOD_TEST_PROGRESS_SECONDS", "60"))  # s


class _Progress:
    """A pytest plugin: the progress lines (a watcher thread for the tests that run long)."""

    def __init__(self, reporter):
        import threading
        import time

        self.reporter = reporter
        self.start = self.last = time.monotonic()
        self.done = self.total = 0
        self.current = None
        self.lock = threading.Lock()
        self.stop = threading.Event()
        threading.Thread(target=self._watch, name="test-progress", daemon=True).start()

    def line(self, text):
        import time

        with self.lock:
            self.last = time.monotonic()
            minutes, seconds = divmod(int(self.last - self.start), 60)
            # on a line of its own: -q writes the dots of a file on one line
            self.reporter.write(f"\n[{minutes:d} min {seconds:02d} s] {text}\n", flush=True)

    def _watch(self):
        import time

        while not self.stop.wait(5.0):
            current = self.current
            if current is not None and time.monotonic() - self.last >= PROGRESS_EVERY:
                self.line(f"{self.done} of {self.total} tests done; running {current}")

    def pytest_collection_finish(self, session):
        self.total = len(session.items)

    def pytest_runtest_logstart(self, nodeid, location):
        self.current = nodeid

    def pytest_runtest_logfinish(self, nodeid, location):
        import time

        self.done += 1
        self.current = None
        if time.monotonic() - self.last >= PROGRESS_EVERY:
            self.line(f"{self.done} of {self.total} tests done")

    def pytest_unconfigure(self, config):
        self.stop.set()


@pytest.hookimpl(trylast=True)  # after the terminal reporter is registered
def pytest_configure(config):
    reporter = config.pluginmanager.get_plugin("terminalreporter")
    if reporter is not None and not config.option.collectonly:
        config.pluginmanager.register(_Progress(reporter), "hod-progress")
