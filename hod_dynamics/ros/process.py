"""Running a node as a process: init, start-up errors, clean shutdown on SIGINT/SIGTERM, exit codes.

Shutdown is clean by construction. SIGINT and SIGTERM are blocked in every thread (the
executables block them before their first import, :mod:`hod_dynamics_nodes`; :func:`run`
blocks them again for other callers), so no Python signal handler ever runs: no
KeyboardInterrupt can land inside a ``Thread.join`` (on CPython 3.10 to 3.12 that marks a
still-running thread as stopped, and the executor thread was then unwound inside rclpy's C++
code at interpreter exit: ``terminate called without an active exception``). The main thread
takes the signals with ``sigtimedwait``; the executor thread spins until it is asked to stop
and woken by a guard condition, and is joined without a timeout; a node's ``halt()``, when it
has one, then ends work that an executor thread may be waiting on (a worker process) before
the executor's threads are joined. The process then ends with
``os._exit`` after an orderly ROS shutdown, so interpreter finalization never unwinds a
thread (a numba compilation in a background thread cannot be interrupted).
"""

import os
import signal
import sys
import threading

import rclpy
import rclpy.logging
import yaml
from rclpy.exceptions import InvalidParameterTypeException, InvalidParameterValueException
from rclpy.executors import ExternalShutdownException, SingleThreadedExecutor
from rclpy.signals import SignalHandlerOptions

from ..errors import HodDynamicsError, StartupError

STOP_SIGNALS = (signal.SIGINT, signal.SIGTERM)


def realtime_priority(priority):
    """Put the calling thread under the SCHED_FIFO real-time policy at ``priority`` (1-99; 0:
    leave it to the default scheduler), as ros2_control's controller manager does with its
    ``thread_priority``. Returns None, or why it could not (no privilege: an rtprio limit in
    /etc/security/limits.conf or CAP_SYS_NICE allows it; not Linux).

    Why: on a computer whose cores are busy (a worker process computing, a compile), the default
    scheduler lets a thread woken by its timer wait for a core for milliseconds, an idle core
    included; a real-time thread takes the core at once."""
    if priority <= 0:
        return None
    try:
        os.sched_setscheduler(0, os.SCHED_FIFO, os.sched_param(priority))  # 0: this thread
    except (OSError, AttributeError) as exc:
        return str(exc) or type(exc).__name__
    return None


def run(make_node, name, args=None, make_executor=SingleThreadedExecutor):
    """Create a node with ``make_node()`` and spin it with ``make_executor()`` until SIGINT or
    SIGTERM; return the exit code (both factories are called after ``rclpy.init``).

    0 after a signal, whenever it arrives (a signal during start-up is kept pending and taken
    once the node exists); 1 after one FATAL log line, no traceback, when the ROS arguments
    cannot be read (a ``--params-file`` that does not exist), when the node raises a
    :class:`HodDynamicsError` or an rclpy parameter exception while starting (then nothing is
    destroyed and rclpy is not shut down: the caller ends the process), or when an error
    escapes a callback. Must be called from the main thread.
    """
    signal.pthread_sigmask(signal.SIG_BLOCK, STOP_SIGNALS)  # before any thread exists
    logger = rclpy.logging.get_logger(name)
    try:
        _check_params_files(sys.argv if args is None else args)
        rclpy.init(args=args, signal_handler_options=SignalHandlerOptions.NO)
    except StartupError as exc:
        logger.fatal(str(exc))
        return 1
    except Exception as exc:  # rclpy's RCLError: ROS arguments rcl cannot parse
        logger.fatal(f"cannot read the ROS arguments: {_first_line(exc)}")
        return 1
    try:
        node = make_node()
    except (HodDynamicsError, InvalidParameterTypeException, InvalidParameterValueException) as exc:
        logger.fatal(_first_line(exc))
        # Nothing served: leave the half-built node and the context to the process's end.
        # Destroying them (rclpy.try_shutdown destroys the tracked node) can deadlock inside
        # the DDS layer while other participants are being discovered (seen with several nodes
        # starting at once), and a failed start must end, not hang.
        return 1
    executor = spinner = None
    code = 0
    try:
        executor = make_executor()
        executor.add_node(node)
        spinner = _Spinner(executor, node)
        spinner.start()
        while spinner.is_alive():
            if signal.sigtimedwait(STOP_SIGNALS, 0.5) is not None:
                break
    finally:
        if spinner is not None:
            spinner.stop()
            spinner.join()  # no timeout: signals are blocked, nothing can interrupt it
            if spinner.failure is not None:  # a callback raised: not a clean exit
                logger.fatal(f"stopped by an error in a callback: {spinner.failure!r}")
                code = 1
        halt = getattr(node, "halt", None)
        if halt is not None:  # end the node's own work first: the executor's threads may wait on it
            halt()
        if executor is not None:
            executor.shutdown()
        node.destroy_node()
        rclpy.try_shutdown()
    return code


def exit_process(code):
    """End the process with ``code`` without interpreter finalization (see the module
    docstring): flush Python's streams, then ``os._exit``."""
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except (OSError, ValueError):
            pass
    os._exit(code)


def _check_params_files(argv):
    """Raise StartupError naming a ``--params-file`` that cannot be read as a YAML mapping
    (rcl would fail with a traceback-like message of its own)."""
    for flag, path in zip(argv, argv[1:]):
        if flag != "--params-file":
            continue
        try:
            with open(path, encoding="utf-8") as f:
                data = yaml.safe_load(f)
        except OSError as exc:
            raise StartupError(f"--params-file {path}: {exc.strerror}") from None
        except yaml.YAMLError as exc:
            raise StartupError(f"--params-file {path}: {_yaml_fault(exc)}") from None
        if not isinstance(data, dict):
            raise StartupError(f"--params-file {path}: expected a YAML mapping "
                               "'<node name or /**>: {ros__parameters: {...}}'") from None


def _yaml_fault(exc):
    """A YAML error in one line with its place: "line L, column C: <problem>" (1-based, as
    editors count), PyYAML's context ("while parsing a block mapping") after it."""
    mark = getattr(exc, "problem_mark", None)
    problem = getattr(exc, "problem", None) or _first_line(exc)
    context = getattr(exc, "context", None)
    where = f"line {mark.line + 1}, column {mark.column + 1}: " if mark is not None else ""
    return f"YAML error at {where}{problem}" + (f" ({context})" if context else "")


def _first_line(exc):
    text = str(exc).strip()
    return text.splitlines()[0] if text else type(exc).__name__


class _Spinner(threading.Thread):
    """Spins an executor until :meth:`stop`; keeps the exception that stopped it, if any."""

    def __init__(self, executor, node):
        super().__init__(name="executor")
        self.executor, self.failure = executor, None
        self._stopping = threading.Event()
        self._wake = node.create_guard_condition(lambda: None)

    def run(self):
        try:
            while not self._stopping.is_set():
                self.executor.spin_once(timeout_sec=1.0)
        except ExternalShutdownException:
            pass
        except Exception as exc:  # reported by run() as a fatal error, exit code 1
            self.failure = exc

    def stop(self):
        """Ask the loop to end after the callback in progress, and wake it now."""
        self._stopping.set()
        self._wake.trigger()
