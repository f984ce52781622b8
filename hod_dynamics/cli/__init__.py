"""The ``hod-dynamics`` command line (also ``python -m hod_dynamics``): one module per command.

    hod-dynamics demo [--order K] [--duration S] [--rate HZ] [--out DIR] [--no-plot]
    hod-dynamics info URDF [--root LINK] [--tip LINK] [--lock JOINT=VALUE] [--lenient]
                      [--xacro-arg NAME:=VALUE]
    hod-dynamics robots
    hod-dynamics analyze-bag BAG --urdf URDF --out DIR [--time-base auto] [--friction fit|FILE] ...
    hod-dynamics analyze-bags BAG_OR_GLOB ... --urdf URDF|PATTERN=URDF|MAPPING.yaml --out DIR
                      [--friction fit|FILE] [--workers N] [--dask ADDRESS] [--force] ...
    hod-dynamics identify BAG [BAG ...] --urdf URDF --out DIR [--validate BAG ...] [--method ols|consistent]
    hod-dynamics excite --urdf URDF --out traj.yaml [--duration S] [--harmonics H]

Every failure the user can cause (bad arguments, a missing or malformed file, an output folder
that cannot be written, a job that would not fit in memory) prints one line
``hod-dynamics: error: ...`` on stderr and exits with code 2; a closed output pipe
(``hod-dynamics info X | head -2``) ends the command quietly.

:func:`main` runs it (:func:`run`, the executable, then ends the process with its exit code);
:func:`build_parser` is its argparse parser. Each command's module adds its
subparser (``add_parser``) and holds its ``cmd_*`` function; the work itself is in the library
modules each command calls.
"""

from ..deprecation import module_getattr
from .entry_point import build_parser, main, run

__all__ = ["main", "build_parser", "run"]

# the names of the module this wing was before, for one release
_MOVED = {name: f"{__name__}.{module}:{name}" for module, names in {
    "common": ("PROG", "check_memory"), "demo": ("DEMO_MAX_ORDER", "PLOT_POINTS", "WARM_BUDGET", "cmd_demo",
                                                 "demo_memory", "peak_table"),
    "info": ("cmd_info", "cmd_robots"),
    "analyze_bag": ("BAG_MAX_ORDER", "GAPS_PRINTED", "bag_memory", "cmd_analyze_bag", "summary_lines"),
    "analyze_bags": ("cmd_analyze_bags",), "identify": ("cmd_identify", "identification_lines"),
    "excite": ("cmd_excite",)}.items() for name in names}
__getattr__ = module_getattr(__name__, _MOVED)
