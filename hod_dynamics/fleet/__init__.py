"""Many recordings: every bag of a fleet analysed as one bag is, on local processes or a Dask
cluster, into one table, and the trends of the fleet's friction and residuals over time.

Modules: :mod:`~.inputs` (bags, URLs and the robot of each), :mod:`~.run` (the run: ``analyze_bags``),
:mod:`~.table` (the fleet table), :mod:`~.trends`. The names below are imported on first use.
"""

from ..deprecation import module_getattr

_FACE = {"analyze_bags": "run", "BagTask": "run", "Options": "run", "Progress": "run", "analyse_task": "run",
         "completed_rows": "run",
         "read_table": "table", "fleet_trends": "trends", "Trend": "trends"}
__all__ = list(_FACE)
# the names of the module this wing was before, for one release
_MOVED = {n: f"{__name__}.run:{n}" for n in ("LOCK", "ROWS", "STAGING", "TABLE_EVERY", "dask_setup", "local_cluster")}
__getattr__ = module_getattr(__name__, _MOVED, {n: f"{__name__}.{m}:{n}" for n, m in _FACE.items()}, globals())
