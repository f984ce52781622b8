"""Inertial parameters and friction identified from recordings: the base parameters of a model,
excitation trajectories within the joint limits, and the physically consistent fit with its
validation and outputs (an identified URDF, a friction YAML).

Modules: :mod:`~.base_parameters`, :mod:`~.excitation`, :mod:`~.fit` (``identify``). The names below are
imported on first use (cvxpy and scipy are heavy).
"""

from ..deprecation import module_getattr

_FACE = {"BaseParameters": "base_parameters",
         "Excitation": "excitation", "optimise_excitation": "excitation", "write_waypoints": "excitation",
         "Recording": "fit", "Identification": "fit", "identify": "fit", "reduce_recording": "fit",
         "residuals": "fit", "residual_series": "fit", "evaluate": "fit", "summary": "fit", "write_outputs": "fit"}
__all__ = list(_FACE)
# the constants of the module this wing was before, for one release
_MOVED = {n: f"{__name__}.fit:{n}" for n in ("CHUNK", "EDGE_SECONDS", "METHODS", "MIN_ROWS_PER_PARAMETER", "OUTLIER",
                                            "PRIOR_FLOOR", "PRIOR_SHAPE_FLOOR", "REGULARIZATION", "UNIDENTIFIABLE")}
__getattr__ = module_getattr(__name__, _MOVED, {n: f"{__name__}.{m}:{n}" for n, m in _FACE.items()}, globals())
