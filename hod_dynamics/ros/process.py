"""Running a node as a process: init, clean shutdown on SIGINT/SIGTERM, exit codes."""

import signal

import rclpy
from rclpy.executors import ExternalShutdownException, SingleThreadedExecutor
from rclpy.signals import SignalHandlerOptions

from ..errors import HodDynamicsError


class StartupError(HodDynamicsError):
    """A node cannot start (invalid robot model or configuration)."""


def run(make_node, name, args=None, make_executor=SingleThreadedExecutor):
    """Create a node with ``make_node()`` and spin it with ``make_executor()`` until SIGINT or
    SIGTERM; return the exit code (both factories are called after ``rclpy.init``).

    0 after a signal; 1 (after one fatal log line, no traceback) when the node raises a
    :class:`HodDynamicsError` while starting. SIGINT/SIGTERM become KeyboardInterrupt in the
    spinning thread, so the executor stops before the context is shut down (rclpy's own
    handler would shut it down under a running callback).
    """
    rclpy.init(args=args, signal_handler_options=SignalHandlerOptions.NO)
    for sig in (signal.SIGINT, signal.SIGTERM):
        signal.signal(sig, signal.default_int_handler)
    try:
        node = make_node()
    except HodDynamicsError as exc:
        rclpy.logging.get_logger(name).fatal(str(exc))
        rclpy.try_shutdown()
        return 1
    executor = make_executor()
    executor.add_node(node)
    try:
        executor.spin()
    except (KeyboardInterrupt, ExternalShutdownException):
        pass
    finally:
        executor.shutdown()
        node.destroy_node()
        rclpy.try_shutdown()
    return 0
