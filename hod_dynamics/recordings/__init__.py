"""Recorded joint states, without dynamics: bags read and written, the time base of jittered
stamps, the noise of encoders, the smoothing fit of the positions and its derivatives.

Modules: :mod:`~.bag` (reading), :mod:`~.bag_writer` (writing), :mod:`~.msgfields` (stamps and
message fields), :mod:`~.timebase`, :mod:`~.position_noise`, :mod:`~.smoothing`,
:mod:`~.joint_fit`. The names below are imported on first use (rosbags and scipy are heavy).
"""

from ..deprecation import module_getattr

_FACE = {"JointStates": "bag", "read_joint_states": "bag", "read_planned_positions": "bag",
         "JointStream": "bag_writer", "write_joint_states": "bag_writer", "write_joint_state_streams": "bag_writer",
         "write_derived_bag": "bag_writer", "read_derived_bag": "bag_writer",
         "TimeBase": "timebase", "resolve_time_base": "timebase", "PositionNoise": "position_noise",
         "estimate_noise": "position_noise", "JointFit": "joint_fit", "fit_joint_states": "joint_fit"}
__all__ = list(_FACE)
__getattr__ = module_getattr(__name__, {}, {n: f"{__name__}.{m}:{n}" for n, m in _FACE.items()}, globals())
