"""``python -m hod_dynamics``: the ``hod-dynamics`` command line."""

import sys

from .cli import main

sys.exit(main())
