"""Every exception and warning that hod_dynamics defines.

Every error the library raises on bad input is a :class:`HodDynamicsError`, which is a
``ValueError`` so that generic ``except ValueError`` handlers keep working. The message always
names what is at fault (a joint, a link, a line of the URDF, an argument and its shape).

- :class:`ModelError`: a robot model cannot be built (malformed URDF, a misspelt element or
  attribute with ``strict=True``, unsupported joint type, zero axis, unknown link/joint names,
  a link that is the child of two joints, a loop, several trees without ``root_link``, negative
  mass, inertia not positive semi-definite with ``inertia_check="error"``, negative
  ``<dynamics>`` values used as friction).
- :class:`InputError`: an array handed to an algorithm has the wrong shape or holds NaN/inf,
  or an argument is out of its documented range.
- :class:`ActuationError` (a ModelError): the actuated joints of a mechanism with loops do not
  determine it (passive joints left free) or are constrained among themselves.
- :class:`ClosureError` (an InputError): a configuration of a mechanism with loops cannot be
  closed (actuated positions outside its workspace, or past a singular configuration).
- :class:`TrajectoryError`: a trajectory cannot be built or evaluated (times not increasing,
  unknown or missing joints, too few points, derivatives beyond the spline's continuity).

:class:`HodDynamicsWarning` (a ``UserWarning``) is the category of the warnings the library
issues when it reads past something doubtful (an extension of URDF, ``strict=False``,
``inertia_check="warn"``, negative ``<dynamics>`` values); :class:`URDFExtensionWarning`, a
subclass, is the one for the extensions of a robot description.
One of them is not about doubtful input: :class:`KernelCompileWarning` says that a compiled
kernel is about to be compiled (once per install, seconds to tens of seconds, the first call
waits); it is never raised, even where a filter makes HodDynamicsWarnings errors.

The programs built on the library raise their own subclasses: :class:`CommandError` (the
``hod-dynamics`` command: one line, exit code 2), :class:`StartupError` (a node that cannot
start: one FATAL line, exit code 1), :class:`WorkerStopped` (the feedforward node's worker
process was stopped or died during a request), :class:`LaunchArgumentError` (a launch file's
argument).

Two warnings are not about a robot description, and are not HodDynamicsWarnings, so that
making those errors (``filterwarnings("error", category=HodDynamicsWarning)``) does not make
these errors too: :class:`NumbaUnavailableWarning` (a ``RuntimeWarning``: the numpy path runs
instead of the compiled one) and :class:`HodDynamicsDeprecationWarning` (a
``DeprecationWarning``: a name that still works for one release and then goes; Python shows
it in ``__main__`` and under test runners, and ``-W error::DeprecationWarning`` makes it an
error).
"""


class HodDynamicsError(ValueError):
    """Base class of every error raised by hod_dynamics on bad input."""


class ModelError(HodDynamicsError):
    """A robot model (URDF or screw description) is invalid or unsupported."""


class InputError(HodDynamicsError):
    """An argument has the wrong type (not a model, not real numbers), the wrong shape, is not
    finite, or is out of range."""


class ActuationError(ModelError):
    """The actuated joints of a mechanism with loops do not determine its motion
    (``kind == "underdetermined"``: the passive joints ``joints`` can move with the actuated
    ones held) or are not independent (``kind == "overdetermined"``: the closures constrain the
    actuated joints ``joints`` among themselves, so their torques are not unique). ``sample``:
    the (flattened) sample where it was found."""

    def __init__(self, message, *, kind, joints, sample=0):
        super().__init__(message)
        self.kind, self.joints, self.sample = kind, tuple(joints), int(sample)


class ClosureError(InputError):
    """A configuration of a mechanism with loops cannot be closed: at (flattened) sample
    ``sample`` the loop ``closure`` keeps the residual ``residual`` (m, or the difference of unit
    vectors) after Newton's method (actuated positions outside the workspace), or closes only
    on another branch than the sample before (``closure`` None: a singular configuration lies
    between them)."""

    def __init__(self, message, *, closure, sample, residual):
        super().__init__(message)
        self.closure, self.sample, self.residual = closure, int(sample), float(residual)


class TrajectoryError(HodDynamicsError):
    """A trajectory is invalid (times, joint names, sizes, non-finite values)."""


class HodDynamicsWarning(UserWarning):
    """A robot description was read past something doubtful: an element or attribute that is
    not URDF (an extension), a misspelling with ``strict=False``, an inertia that is not
    positive semi-definite with ``inertia_check="warn"``, or a negative ``<dynamics>`` value. Filter it with ``warnings.filterwarnings("error",
    category=hd.HodDynamicsWarning)`` to make it an error."""


class KernelCompileWarning(HodDynamicsWarning):
    """A compiled (numba) kernel is about to be compiled on its first use after an install:
    the call that triggered it takes seconds to tens of seconds longer, once (numba caches the
    machine code). Issued once per kernel and process, before compiling, naming the kernel,
    why and about how long. It is a notice, never a fault: made an error by a warnings filter,
    it is not raised. Silence it with ``warnings.filterwarnings("ignore",
    category=hd.errors.KernelCompileWarning)``."""


class URDFExtensionWarning(HodDynamicsWarning):
    """A robot description holds an element or attribute that is not URDF and no likely
    misspelling of it (a vendor's or simulator's extension, such as Unitree's ``<mujoco>`` or
    Drake's ``<loop_joint>``): read past, as urdfdom and Pinocchio do. One warning per name,
    saying where it occurs. Filter it with ``warnings.filterwarnings("ignore",
    category=hd.errors.URDFExtensionWarning)``."""


class CommandError(HodDynamicsError):
    """A failure the user of the ``hod-dynamics`` command caused that is not a library input
    error (an output folder, the memory a job needs, a command-line option)."""


class StartupError(HodDynamicsError):
    """A node cannot start (invalid parameter, robot model or configuration)."""


class WorkerStopped(HodDynamicsError):
    """The feedforward node's worker process was stopped (the node is shutting down) or died
    during a request."""


class LaunchArgumentError(RuntimeError):
    """A launch argument names a file that does not exist."""


class NumbaUnavailableWarning(RuntimeWarning):
    """numba cannot be imported: the (much slower) numpy path runs instead."""


class HodDynamicsDeprecationWarning(DeprecationWarning):
    """A name or a call that still works for one release, and what replaces it."""
