"""Inertial parameters and friction identified from recordings: the base parameters of a model,
excitation trajectories within the joint limits, the physically consistent and plausible fit
(bounding volumes, mass bounds, the weight chosen by cross-validation) with its validation and
outputs (an identified URDF, a friction YAML, a plausibility report), how far the data pins
each link, and payloads.

Modules: :mod:`~.base_parameters`, :mod:`~.excitation`, :mod:`~.fit` (``identify``),
:mod:`~.program` (the convex program), :mod:`~.bounding_volumes`, :mod:`~.bounds`,
:mod:`~.cross_validation`, :mod:`~.plausibility`, :mod:`~.determinacy`, :mod:`~.payload`,
:mod:`~.report` (residuals and files). The names below are imported on first use (cvxpy and
scipy are heavy).
"""

from ..deprecation import module_getattr

_FACE = {"BaseParameters": "base_parameters",
         "Excitation": "excitation", "optimise_excitation": "excitation", "write_waypoints": "excitation",
         "Recording": "fit", "Identification": "fit", "identify": "fit", "reduce_recording": "fit",
         "residual_series": "fit", "prior_friction": "fit",
         "residuals": "report", "evaluate": "report", "summary": "report", "write_outputs": "report",
         "Ellipsoid": "bounding_volumes", "bounding_ellipsoids": "bounding_volumes",
         "Bounds": "bounds", "plausibility_bounds": "bounds", "CrossValidation": "cross_validation",
         "plausibility_report": "plausibility", "determinacy": "determinacy",
         "PayloadIdentification": "payload", "identify_payload": "payload"}
__all__ = list(_FACE)
# the constants of the module this wing was before, for one release
_MOVED = {n: f"{__name__}.fit:{n}" for n in ("CHUNK", "EDGE_SECONDS", "METHODS", "MIN_ROWS_PER_PARAMETER", "OUTLIER",
                                            "PRIOR_FLOOR", "REGULARIZATION", "UNIDENTIFIABLE")}
_MOVED["PRIOR_SHAPE_FLOOR"] = f"{__name__}.program:PRIOR_SHAPE_FLOOR"
__getattr__ = module_getattr(__name__, _MOVED, {n: f"{__name__}.{m}:{n}" for n, m in _FACE.items()}, globals())
