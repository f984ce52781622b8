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


@pytest.fixture(scope="session")
def iiwa_pinocchio(iiwa):
    """(our iiwa14 with the paper's gravity (0, 0, -9.80665), PinocchioRobot of the same URDF)."""
    from oracles import PinocchioRobot

    model = iiwa.with_gravity(hd.paper_examples.IIWA_GRAVITY)
    return model, PinocchioRobot(hd.robot_path("iiwa14"), model)
