"""Shared by the launch files (imports launch, so only the launch files import it).

- :func:`boolean_argument` declares a true/false argument whose other values launch itself
  refuses, naming the argument (``choices``); :func:`flag` reads it.
- :func:`check_arguments` refuses, naming it, a ``name:=value`` on the ``ros2 launch`` command
  line that the launch file does not declare (a misspelt ``urdff:=...`` would otherwise be
  ignored without a word), when the file is the one ``ros2 launch`` runs: an included file
  cannot tell its includer's arguments from its own.
- :func:`number` reads a numeric argument, naming it when it is not a number.

- :func:`existing_file` resolves a launch argument that names a file (a path, or the name of
  a shipped file: ``config/`` or ``urdf/``, found by :func:`hod_dynamics.share_path` as the
  library and the nodes find them, on the colcon and the pip route alike) and raises :class:`LaunchArgumentError`
  when it does not exist: ``ros2 launch`` then prints ``Caught exception in launch ...:
  <message>`` and exits with status 1 before starting any node.
- :func:`required` makes a node required: when it exits with a non-zero code (an error, or
  killed by a signal), the launch shuts down with the reason and ``ros2 launch`` exits with
  status 1.
"""

import difflib
import os
import signal
import sys

from launch.actions import DeclareLaunchArgument, RegisterEventHandler
from launch.event_handlers import OnProcessExit
from launch.substitutions import LaunchConfiguration

from ..errors import LaunchArgumentError

TRUE_FALSE = ["true", "false", "True", "False"]
ROS2LAUNCH_ARGUMENTS = {"launch-prefix", "launch-prefix-filter"}  # added by ros2 launch's options


def boolean_argument(name, default, description):
    """DeclareLaunchArgument for true/false: launch refuses any other value, naming it."""
    return DeclareLaunchArgument(name, default_value=default, description=description, choices=TRUE_FALSE)


def flag(context, name):
    """The value of a :func:`boolean_argument` as a bool."""
    return LaunchConfiguration(name).perform(context).lower() == "true"


def number(context, name, unit):
    """The value of a numeric launch argument as a float; LaunchArgumentError naming it otherwise."""
    value = LaunchConfiguration(name).perform(context)
    try:
        return float(value)
    except ValueError:
        raise LaunchArgumentError(f"launch argument {name}:={value}: expected a number ({unit})") from None


def check_arguments(context, launch_file, declared):
    """Raise LaunchArgumentError for a ``name:=value`` of ``ros2 launch``'s command line that
    ``launch_file`` (its ``__file__``) does not declare (``declared``: the names), with the
    closest declared name; only when ``launch_file`` is the file ``ros2 launch`` runs."""
    if not _run_by_ros2_launch(launch_file):
        return
    known = set(declared) | ROS2LAUNCH_ARGUMENTS
    for item in context.argv:
        name, sep, value = item.partition(":=")
        if sep and name not in known:
            close = difflib.get_close_matches(name, sorted(declared), n=1)
            hint = f" (did you mean {close[0]}?)" if close else ""
            raise LaunchArgumentError(
                f"launch argument {item}: {os.path.basename(launch_file)} has no argument '{name}'{hint}; "
                f"its arguments: {', '.join(declared)}")


def _run_by_ros2_launch(launch_file):
    """True when this process is ``ros2 launch [options] <package> <file> ...`` or ``ros2 launch
    <path> ...`` naming ``launch_file``."""
    argv = sys.argv
    if len(argv) < 3 or os.path.basename(argv[0]) != "ros2" or argv[1] != "launch":
        return False
    words = [a for a in argv[2:] if ":=" not in a and not a.startswith("-")]
    return os.path.basename(launch_file) in {os.path.basename(w) for w in words}


def existing_file(argument, value, folder, suffix):
    """The file a launch argument names: ``value`` itself when it is a file, else the shipped
    ``<folder>/<value><suffix>`` (``suffix`` added when missing; ``folder`` a kind of
    :func:`hod_dynamics.share_path`); '' stays ''. Raises LaunchArgumentError naming the
    argument and both places looked at."""
    if not value or os.path.isfile(value):
        return value
    from ..model.robots import share_path

    shipped = os.path.join(share_path(folder), value if value.endswith(suffix) else value + suffix)
    if os.path.isfile(shipped):
        return shipped
    raise LaunchArgumentError(f"launch argument {argument}:={value}: no such file, and no shipped "
                              f"{folder}/{os.path.basename(shipped)}")


def required_package(package, apt_name):
    """Raise LaunchArgumentError (one line: what is missing and how to install it) when the ROS
    package ``package`` is not installed."""
    from ament_index_python.packages import PackageNotFoundError, get_package_share_directory

    try:
        get_package_share_directory(package)
    except PackageNotFoundError:
        raise LaunchArgumentError(f"this launch file needs the {package} package, which is not installed "
                                  f"(sudo apt install {apt_name})") from None


def required(node, name):
    """[node, an exit handler]: a failure of ``node`` (named ``name`` in the reason) ends the
    launch with status 1."""
    def on_exit(event, context):
        code = event.returncode
        if code == 0:
            return None
        if code < 0:  # ended by a signal it did not handle (it handles SIGINT and SIGTERM)
            raise RuntimeError(f"required node {name} was killed by {signal.Signals(-code).name}; shutting down")
        raise RuntimeError(f"required node {name} exited with code {code} "
                           "(its FATAL line above says why); shutting down")

    return [node, RegisterEventHandler(OnProcessExit(target_action=node, on_exit=on_exit))]
