"""Running a node as a process: init, clean shutdown on SIGINT/SIGTERM, exit codes."""

import signal
import threading

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
    node = executor = spinner = None
    code = 0
    try:
        node = make_node()
        executor = make_executor()
        executor.add_node(node)
        # spin in a worker thread: the main thread stays in Python, where signals arrive
        spinner = _Spinner(executor)
        spinner.start()
        while spinner.is_alive():
            spinner.join(timeout=0.2)
    except KeyboardInterrupt:
        pass
    except HodDynamicsError as exc:
        rclpy.logging.get_logger(name).fatal(str(exc))
        code = 1
    finally:
        if spinner is not None and spinner.failure is not None:  # a callback raised: not a clean exit
            rclpy.logging.get_logger(name).fatal(f"stopped by an error in a callback: {spinner.failure!r}")
            code = 1
        for sig in (signal.SIGINT, signal.SIGTERM):  # a second signal must not cut the clean-up short
            signal.signal(sig, signal.SIG_IGN)
        if executor is not None:
            executor.shutdown()
        if spinner is not None and spinner.is_alive():  # a signal may land before start()
            spinner.join(timeout=5)
        if node is not None:
            node.destroy_node()
        rclpy.try_shutdown()
    return code


class _Spinner(threading.Thread):
    """Spins an executor; keeps the exception that stopped it, if any."""

    def __init__(self, executor):
        super().__init__(name="executor", daemon=True)
        self.executor, self.failure = executor, None

    def run(self):
        try:
            self.executor.spin()
        except ExternalShutdownException:
            pass
        except Exception as exc:  # reported by run() as a fatal error, exit code 1
            self.failure = exc
