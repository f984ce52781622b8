"""Entry points of the ROS 2 executables ``feedforward_node`` and ``demo_trajectory_publisher``.

A top-level module on purpose: it blocks SIGINT and SIGTERM before anything else is imported
(``hod_dynamics`` and rclpy take about a second to import), so a Ctrl-C or a ``ros2 launch``
shutdown at any moment of the start is taken by :func:`hod_dynamics.ros.process.run` and
ends the process cleanly with exit code 0. Every thread started later inherits the blocked
mask: the signals are only ever received by the main thread's ``sigtimedwait``.

    python -m hod_dynamics_nodes feedforward_node --ros-args -p urdf_path:=robot.urdf

The launchers in ``lib/hod_dynamics`` (pip route) go further: they start the interpreter
without ``site`` (``python -S``), block the signals in their first statement, then run
``site.main()`` (the .pth files of a venv take a few hundred ms, and the ROS wheels' one
re-executes the interpreter, which keeps the blocked mask and pending signals) and
:func:`main`. Only the interpreter's own start (tens of ms) is left to the kernel's defaults.
"""

import signal
import sys

STOP_SIGNALS = (signal.SIGINT, signal.SIGTERM)


NODE_NAMES = {"feedforward_node": "hod_feedforward", "demo_trajectory_publisher": "hod_demo_trajectory"}


def _run(module):
    signal.pthread_sigmask(signal.SIG_BLOCK, STOP_SIGNALS)
    import importlib

    try:
        import rclpy  # noqa: F401
    except ImportError as exc:  # a pip install without the [ros] extra, or no ROS sourced
        reason = " ".join(str(exc).split())
        print(f"[FATAL] [{NODE_NAMES[module]}]: cannot start: rclpy cannot be imported ({reason}): "
              'install hod_dynamics with its [ros] extra (pip install ".[ros]" in its source folder: '
              "the ROS 2 Python wheels from PyPI), or source a ROS 2 installation "
              "(source /opt/ros/<distro>/setup.bash)", file=sys.stderr, flush=True)
        sys.exit(1)
    from hod_dynamics.ros.process import exit_process

    exit_process(importlib.import_module(f"hod_dynamics.ros.{module}").main())


def feedforward_node():
    """``ros2 run hod_dynamics feedforward_node``: never returns (exit code 0, or 1 on a start-up error)."""
    _run("feedforward_node")


def demo_trajectory_publisher():
    """``ros2 run hod_dynamics demo_trajectory_publisher``: never returns."""
    _run("demo_trajectory_publisher")


def main():
    """``sys.argv[1]`` names the node; the rest are its arguments (``--ros-args ...``)."""
    signal.pthread_sigmask(signal.SIG_BLOCK, STOP_SIGNALS)
    if len(sys.argv) < 2 or sys.argv[1] not in ("feedforward_node", "demo_trajectory_publisher"):
        sys.exit("usage: python -m hod_dynamics_nodes {feedforward_node,demo_trajectory_publisher} [ARGS...]")
    _run(sys.argv.pop(1))


if __name__ == "__main__":
    main()
