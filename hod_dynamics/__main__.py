"""``python -m hod_dynamics``: the ``hod-dynamics`` command line."""

from .cli.entry_point import run

run()
