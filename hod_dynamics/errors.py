"""The exception family of hod_dynamics.

Every error the library raises on bad input is a :class:`HodDynamicsError`, which is a
``ValueError`` so that generic ``except ValueError`` handlers keep working. The message always
names what is at fault (a joint, a link, a line of the URDF, an argument and its shape).

- :class:`ModelError`: a robot model cannot be built (malformed URDF, unsupported joint type,
  zero axis, unknown link/joint names, negative mass, inertia not positive semi-definite).
- :class:`InputError`: an array handed to an algorithm has the wrong shape or holds NaN/inf,
  or an argument is out of its documented range.
- :class:`TrajectoryError`: a trajectory cannot be built or evaluated (times not increasing,
  unknown or missing joints, too few points).
"""


class HodDynamicsError(ValueError):
    """Base class of every error raised by hod_dynamics on bad input."""


class ModelError(HodDynamicsError):
    """A robot model (URDF or screw description) is invalid or unsupported."""


class InputError(HodDynamicsError):
    """An array argument has the wrong shape, is not finite, or an argument is out of range."""


class TrajectoryError(HodDynamicsError):
    """A trajectory is invalid (times, joint names, sizes, non-finite values)."""
