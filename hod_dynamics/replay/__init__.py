"""Replay of recorded joint states: the model's torques and their derivatives along the fit of
the recorded positions, against the measured efforts; how large an error the data leave in
each; the notes a user should read; the report's files.

Modules: :mod:`~.analysis`, :mod:`~.error_estimate`, :mod:`~.notes`, :mod:`~.report`,
:mod:`~.bag_report` (one bag read, analysed and written). The names below are imported on first use.
"""

from ..deprecation import module_getattr

_FACE = {"BagAnalysis": "analysis", "analyze_joint_states": "analysis", "TorqueErrors": "error_estimate",
         "torque_errors": "error_estimate", "write_report": "report", "write_samples_csv": "report",
         "BagReport": "bag_report", "analyze_bag": "bag_report"}
__all__ = list(_FACE)
__getattr__ = module_getattr(__name__, {}, {n: f"{__name__}.{m}:{n}" for n, m in _FACE.items()}, globals())
