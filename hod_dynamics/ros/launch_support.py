"""Shared by the launch files (imports launch, so only the launch files import it).

- :func:`existing_file` resolves a launch argument that names a file (a path, or the name of
  a shipped file: ``config/`` or ``urdf/``, found by :func:`hod_dynamics.share_path` as the
  library and the nodes find them, on the colcon and the pip route alike) and raises :class:`LaunchArgumentError`
  when it does not exist: ``ros2 launch`` then prints ``Caught exception in launch ...:
  <message>`` and exits with status 1 before starting any node.
- :func:`required` makes a node required: when it exits with a non-zero code (an error, or
  killed by a signal), the launch shuts down with the reason and ``ros2 launch`` exits with
  status 1.
"""

import os
import signal

from launch.actions import RegisterEventHandler
from launch.event_handlers import OnProcessExit

from ..errors import LaunchArgumentError


def existing_file(argument, value, folder, suffix):
    """The file a launch argument names: ``value`` itself when it is a file, else the shipped
    ``<folder>/<value><suffix>`` (``suffix`` added when missing; ``folder`` a kind of
    :func:`hod_dynamics.share_path`); '' stays ''. Raises LaunchArgumentError naming the
    argument and both places looked at."""
    if not value or os.path.isfile(value):
        return value
    from hod_dynamics.robots import share_path

    shipped = os.path.join(share_path(folder), value if value.endswith(suffix) else value + suffix)
    if os.path.isfile(shipped):
        return shipped
    raise LaunchArgumentError(f"launch argument {argument}:={value}: no such file, and no shipped "
                              f"{folder}/{os.path.basename(shipped)}")


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
