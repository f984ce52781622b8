"""The robot model: an immutable kinematic tree of rigid bodies with 1-DoF joints.

Bodies are numbered ``0 .. n-1`` in topological order (every parent before its children);
body ``i`` is moved by joint ``i``. In the notation of Müller and Kumar 2021 and
Kumar and Müller 2021:

- ``parents[i]``: index of the parent body, ``-1`` for the fixed base.
- ``screws[i]``: the joint screw ``X_i = (omega, v)`` in the frame of body ``i`` (revolute:
  ``(e, 0)``-like with ``|e| = 1``; prismatic: ``(0, e)``).
- ``references[i]``: ``B_i``, the pose (4x4) of body ``i``'s frame in its parent body's frame at
  ``q_i = 0``; the relative configuration is ``C_{parent,i}(q_i) = B_i exp(X_i q_i)``.
- ``inertias[i]``: the 6x6 body inertia of body ``i`` about its frame origin, in its frame,
  ``[[Theta, m c~], [-m c~, m I]]`` (angular first, kg and m).
- ``gravity``: gravity acceleration in the base frame (m/s^2); it enters the algorithms as the
  base acceleration ``dV_0 = (0, -g)`` (Luh, Walker and Paul, "On-line computational scheme for
  mechanical manipulators", 1980).

A *floating* model (``floating=True``) has a free base body instead of a fixed base: body
``-1`` is the root link, with its own inertia ``base_inertia`` (6x6, about the root link frame
origin, in that frame), and ``gravity`` is then given in the world frame. Its configuration has
``nq = 7 + n`` entries (base position, base quaternion (qx, qy, qz, qw), joints) and its
velocity ``nv = 6 + n`` (base body twist (omega, v) in the base frame, joint rates); see
:mod:`hod_dynamics.algorithms.floating`.
"""

import warnings
import weakref
from dataclasses import dataclass, field, fields
from functools import cached_property, wraps
from types import MappingProxyType
from typing import Mapping, Optional, Tuple

import numpy as np

from ..arrays import check_finite, real_array
from ..errors import HodDynamicsWarning, InputError, ModelError
from .inertia import PARAMETER_NAMES, inertia_from_parameters, parameters_from_inertia
from .joint_names import NamedJoints
from .spatial import Ad, ad, inverse
from .urdf import checked_inertia_mode

_TOL = 1e-9


@dataclass(frozen=True, eq=False)
class Frame:
    """Where a URDF link sits in the model: on body ``body`` (``-1``: the base) with pose
    ``pose`` (4x4, read-only) of the link frame in that body's frame."""

    body: int
    pose: np.ndarray

    def __post_init__(self):
        object.__setattr__(self, "body", int(self.body))
        object.__setattr__(self, "pose", _readonly(self.pose))


def _rebuilt(cls, values):
    """A model from its pickled fields (see :meth:`RobotModel.__reduce__`)."""
    return cls(**values)


def _readonly(a, dtype=float):
    a = np.array(a, dtype=dtype)
    a.setflags(write=False)
    return a


@dataclass(frozen=True, eq=False)
class RobotModel(NamedJoints):
    """Immutable rigid-body tree; build it with :meth:`from_urdf` or :meth:`from_screws`.

    Attributes (``n = n_dof``): ``joint_names`` (n,) the actuated DoF order used by every
    array of the package; ``joint_types`` ("revolute", "continuous" or "prismatic"; a helical screw given to
    :meth:`from_screws` counts as "revolute");
    ``link_names`` (n,) the link moved by each joint; ``parents``, ``screws``, ``references``,
    ``inertias``, ``gravity`` as in the module docstring; ``lower``/``upper`` position limits
    (rad or m, +-inf when unlimited), ``velocity_limits`` (rad/s or m/s) and ``effort_limits``
    (N m or N), inf when not given; ``frames`` maps every kept link name to a :class:`Frame`;
    ``damping`` (N m s/rad or N s/m) and ``friction`` (N m or N) (n,) the URDF
    ``<dynamics damping friction>`` values as written, 0 where a joint has no tag (see
    :mod:`hod_dynamics.algorithms.friction`: they are used only when a caller asks for friction);
    ``joint_lines`` maps each joint's name to the line of its ``<joint>`` element in the URDF
    (empty for a model built from screws), for messages.
    """

    name: str
    joint_names: Tuple[str, ...]
    joint_types: Tuple[str, ...]
    link_names: Tuple[str, ...]
    parents: np.ndarray
    screws: np.ndarray
    references: np.ndarray
    inertias: np.ndarray
    gravity: np.ndarray
    lower: np.ndarray
    upper: np.ndarray
    velocity_limits: np.ndarray
    effort_limits: np.ndarray
    root_link: str = "base"
    frames: Mapping[str, Frame] = field(default_factory=dict)  # link -> Frame or (body, pose)
    damping: Optional[np.ndarray] = None    # (n,) URDF <dynamics damping>, N m s/rad; None: zeros
    friction: Optional[np.ndarray] = None   # (n,) URDF <dynamics friction>, N m; None: zeros
    floating: bool = False
    base_inertia: Optional[np.ndarray] = None  # floating models: (6, 6); None -> zeros
    joint_lines: Mapping[str, int] = field(default_factory=dict)  # joint -> line of its URDF <joint>

    def __post_init__(self):
        n = len(self.joint_names)
        for key in ("damping", "friction"):
            if getattr(self, key) is None:
                object.__setattr__(self, key, np.zeros(n))
        for key, dtype in (("parents", int),):
            object.__setattr__(self, key, _readonly(getattr(self, key), dtype))
        for key in ("screws", "references", "inertias", "gravity", "lower", "upper",
                    "velocity_limits", "effort_limits", "damping", "friction"):
            object.__setattr__(self, key, _readonly(getattr(self, key)))
        object.__setattr__(self, "joint_names", tuple(self.joint_names))
        object.__setattr__(self, "joint_types", tuple(self.joint_types))
        object.__setattr__(self, "link_names", tuple(self.link_names))
        object.__setattr__(self, "floating", bool(self.floating))
        object.__setattr__(self, "joint_lines", MappingProxyType(dict(self.joint_lines)))
        object.__setattr__(self, "base_inertia", _readonly(
            np.zeros((6, 6)) if self.base_inertia is None else self.base_inertia))
        self._validate(n)
        frames = dict(self.frames) or dict({self.root_link: (-1, np.eye(4))},
                                           **{ln: (i, np.eye(4)) for i, ln in enumerate(self.link_names)})
        object.__setattr__(self, "frames", MappingProxyType(
            {k: f if isinstance(f, Frame) else Frame(*f) for k, f in frames.items()}))

    def __reduce__(self):
        """Pickle as the constructor's fields (for worker processes: multiprocessing, Dask); the
        read-only mappings are plain dicts in the pickle, derived caches are rebuilt on use."""
        values = {f.name: getattr(self, f.name) for f in fields(self)}
        values.update(frames=dict(self.frames), joint_lines=dict(self.joint_lines))
        return _rebuilt, (type(self), values)

    # -- validation -------------------------------------------------------------------------
    def _validate(self, n):
        """Shapes, names, screws, references and inertias (finite, symmetric, mass >= 0); a
        model with no moving joint (n = 0) is valid: every array has a joint axis of length 0."""
        if not isinstance(self.name, str):
            raise ModelError(f"model name must be a string, got {type(self.name).__name__}")
        shapes = {"joint_types": (len(self.joint_types),), "link_names": (len(self.link_names),),
                  "parents": self.parents.shape, "screws": self.screws.shape,
                  "references": self.references.shape, "inertias": self.inertias.shape,
                  "lower": self.lower.shape, "upper": self.upper.shape,
                  "velocity_limits": self.velocity_limits.shape,
                  "effort_limits": self.effort_limits.shape, "damping": self.damping.shape,
                  "friction": self.friction.shape}
        expected = {"joint_types": (n,), "link_names": (n,), "parents": (n,), "screws": (n, 6),
                    "references": (n, 4, 4), "inertias": (n, 6, 6), "lower": (n,),
                    "upper": (n,), "velocity_limits": (n,), "effort_limits": (n,), "damping": (n,),
                    "friction": (n,)}
        for key, shape in shapes.items():
            if shape != expected[key]:
                raise ModelError(f"model '{self.name}': {key} has shape {shape}, expected "
                                 f"{expected[key]} for {n} joints")
        if self.gravity.shape != (3,) or not np.all(np.isfinite(self.gravity)):
            raise ModelError(f"model '{self.name}': gravity must be 3 finite numbers, got "
                             f"{self.gravity.tolist()}")
        if len(set(self.joint_names)) != n:
            raise ModelError(f"model '{self.name}': joint names are not unique: "
                             f"{list(self.joint_names)}")
        for i, name in enumerate(self.joint_names):
            self._validate_joint(i, name)
        if self.base_inertia.shape != (6, 6):
            raise ModelError(f"model '{self.name}': base_inertia has shape "
                             f"{self.base_inertia.shape}, expected (6, 6)")
        self._validate_inertia(self.base_inertia, f"base body (root link '{self.root_link}')")

    def _validate_joint(self, i, name):
        p = self.parents[i]
        if not -1 <= p < i:
            raise ModelError(f"joint '{name}': parent body index {p} must be -1 (base) or a "
                             f"body listed before it (< {i})")
        X = self.screws[i]
        w, v = X[:3], X[3:]
        nw, nv = np.linalg.norm(w), np.linalg.norm(v)
        if not np.all(np.isfinite(X)) or (abs(nw - 1) > 1e-6 and not (nw == 0 and abs(nv - 1) < 1e-6)):
            raise ModelError(f"joint '{name}': screw {X.tolist()} must have a unit angular "
                             "part (revolute) or a zero angular and unit linear part (prismatic)")
        B = self.references[i]
        R = B[:3, :3]
        if (not np.all(np.isfinite(B)) or np.abs(R.T @ R - np.eye(3)).max() > 1e-6
                or np.linalg.det(R) < 0 or np.abs(B[3] - [0, 0, 0, 1]).max() > 0):
            raise ModelError(f"joint '{name}': reference configuration is not a rigid transform")
        self._validate_inertia(self.inertias[i], f"body of joint '{name}' (link "
                                                   f"'{self.link_names[i]}')")

    @staticmethod
    def _validate_inertia(M, what):
        """Finite, symmetric, mass >= 0. Positive semi-definiteness is the builders' question
        (``inertia_check``): identified parameter sets often lack it and still compute."""
        if not np.all(np.isfinite(M)) or np.abs(M - M.T).max() > _TOL * max(1.0, np.abs(M).max()):
            raise ModelError(f"{what}: inertia matrix is not finite and symmetric")
        mass = M[3, 3]
        if mass < 0:
            raise ModelError(f"{what}: negative mass {mass}")

    def _check_inertias(self, inertia_check):
        """Apply ``inertia_check`` ("error", "warn", "off") to the 6x6 body inertias."""
        if checked_inertia_mode(inertia_check) == "off":
            return
        for i, M in enumerate(self.inertias):
            ev = np.linalg.eigvalsh(M)
            if ev.min() >= -_TOL * max(1.0, ev.max()):
                continue
            message = (f"body of joint '{self.joint_names[i]}' (link '{self.link_names[i]}'): inertia "
                       f"is not positive semi-definite (eigenvalues {np.round(ev, 12).tolist()})")
            if inertia_check == "error":
                raise ModelError(message)
            warnings.warn(message + "; the model computes with it as written", HodDynamicsWarning,
                          stacklevel=3)

    # -- builders ---------------------------------------------------------------------------
    @classmethod
    def from_screws(cls, screws, references, inertias, *, parents=None, joint_names=None,
                    link_names=None, gravity=(0.0, 0.0, -9.81), lower=None, upper=None,
                    velocity_limits=None, effort_limits=None, name="robot", inertia_check="warn"):
        """Build a model the way the papers write one down (Müller and Kumar 2021).

        ``screws`` (n, 6): joint screws ``X_i = (omega, v)`` in body frame i; ``references``
        (n, 4, 4): ``B_i``, pose of body i in its parent's frame at ``q_i = 0``; ``inertias``
        (n, 6, 6): body inertias about the body frame origin (see
        :func:`hod_dynamics.model.spatial.body_inertia`). ``parents`` defaults to a serial chain
        ``(-1, 0, 1, ...)``; names default to ``joint1..n`` / ``link1..n``; limits to +-inf.
        ``inertia_check`` ("error", "warn" or "off") says what a body inertia that is not
        positive semi-definite gives: a ModelError, a :class:`HodDynamicsWarning` (the model
        computes with it as given) or nothing.
        """
        try:
            screws = np.asarray(screws, dtype=float)
        except (TypeError, ValueError):
            raise ModelError("screws must be an (n, 6) array of real numbers") from None
        if screws.ndim != 2 or screws.shape[1] != 6:
            raise ModelError(f"screws must have shape (n, 6), got {screws.shape}")
        n = screws.shape[0]
        parents = np.arange(-1, n - 1) if parents is None else parents
        joint_names = joint_names or [f"joint{i + 1}" for i in range(n)]
        link_names = link_names or [f"link{i + 1}" for i in range(n)]
        types = ["revolute" if np.any(X[:3]) else "prismatic" for X in screws]
        inf = np.full(n, np.inf)
        if n == 0:  # empty lists carry no shape
            references, inertias = np.zeros((0, 4, 4)), np.zeros((0, 6, 6))
        model = cls(name=name, joint_names=joint_names, joint_types=types, link_names=link_names,
                    parents=parents, screws=screws, references=references, inertias=inertias,
                    gravity=gravity,
                    lower=-inf if lower is None else lower, upper=inf if upper is None else upper,
                    velocity_limits=inf if velocity_limits is None else velocity_limits,
                    effort_limits=inf if effort_limits is None else effort_limits)
        model._check_inertias(inertia_check)
        return model

    @classmethod
    def from_urdf(cls, source, *, root_link=None, tip_links=None, locked_joints=None,
                  gravity=(0.0, 0.0, -9.81), strict=True, inertia_check="warn", xacro_args=None,
                  floating_base=False, loops=None, actuated_joints=None, assembly=None):
        """Build a model from a URDF (or xacro) file path, or URDF XML (or xacro) text.

        - ``root_link``: the link fixed to the world (default: the URDF root, the root of the
          one tree the description holds; a description of several trees needs it).
        - ``tip_links``: keep only the chains from the root to these links (other links and
          their masses are dropped), e.g. ``["panda_link8"]``.
        - ``locked_joints``: ``{joint_name: position}``; those joints are frozen rigidly at
          that position (rad or m) and merged like fixed joints, e.g. the Panda fingers.
        - ``gravity``: gravity acceleration in the root link frame (m/s^2); in the world frame
          for a floating base.
        - ``strict``: an unknown element or attribute whose name is a likely misspelling of a
          URDF name valid at that place (``<axs>``, ``<inertal>``, ``valu=``, ``<Axis>``) is a
          :class:`ModelError` naming it, its line, its link or joint and the suggestion (a
          misspelled ``<axis>`` would silently give wrong torques), and so is a missing or
          malformed value the model does not need (``<limit>``, ``<dynamics>``, ``<mimic>``);
          ``strict=False`` makes them warnings (:class:`HodDynamicsWarning`) and reads past.
          Any other unknown name is an extension (Unitree's ``<mujoco>``, Drake's
          ``<loop_joint>``, PyBullet's ``<joint_properties>``, ...): a HodDynamicsWarning in
          both modes, the model is built. Negative ``<dynamics>`` values give a warning naming
          the joint and the line. What stays an error in both modes: malformed XML, a missing
          or malformed name, origin, axis, mass or inertia, an undefined link, a link that is
          the child of two joints, a loop, several trees without ``root_link``, an unknown
          joint type, a negative mass (see :mod:`hod_dynamics.model.urdf_schema`).
        - ``inertia_check``: a link inertia that is not positive semi-definite (identified
          parameter sets) gives a :class:`HodDynamicsWarning` naming the link and its principal
          moments (``"warn"``, the default; the model computes with it as written, like
          Pinocchio), a :class:`ModelError` (``"error"``) or nothing (``"off"``). A negative
          mass is always an error.
        - ``xacro_args``: ``{name: value}`` arguments of a xacro file or text. A ``.xacro``
          file, or text with ``<xacro:...>`` elements, is expanded with the ``xacro`` package
          (the ``[xacro]`` extra); ``$(find pkg)`` resolves through the ament index.
        - ``floating_base``: the root link becomes a free body (a legged robot, a humanoid):
          ``model.floating`` is True, ``nq = 7 + n``, ``nv = 6 + n``. A URDF whose root is a
          massless link (e.g. ``world``) with a single ``floating`` joint below it gives the
          same model without the flag (the child of that joint is the free base).
        - ``loops`` and ``actuated_joints``: a mechanism with kinematic loops. Either given,
          the result is a :class:`~hod_dynamics.model.loop_model.LoopModel`: this tree closed by
          the URDF's loop elements (``loops`` None or ``"urdf"``: Drake's ``<loop_joint>`` and
          ``<drake:ball_constraint>``) or by a closure file (``loops``: a YAML path, YAML text
          or mapping, or a sequence of :class:`~hod_dynamics.model.closures.Closure`; see
          :mod:`hod_dynamics.model.closures`), with the joints ``actuated_joints`` actuated
          (default: the closure file's, else the URDF's ``<transmission>`` joints) and every
          other joint passive. ``assembly`` ((n,) positions or ``{joint: position}``): tree
          positions at or near an assembly, where the solve of the passive joints starts (the
          closure file's, else zeros). See doc/loops.md.

        Fixed joints are merged into their parent body; a robot with no moving joint gives a
        model with ``n_dof == 0``. Other ``floating`` joints and all ``planar`` joints inside
        the kept tree raise :class:`ModelError`; mimic tags are ignored (the mimicking joint
        is an independent DoF). Raises :class:`ModelError` naming the fault (element, line,
        link or joint).
        """
        from .urdf import model_arguments_from_urdf

        def tree():
            return cls(**model_arguments_from_urdf(source, root_link=root_link, tip_links=tip_links,
                                                   locked_joints=locked_joints, gravity=gravity,
                                                   strict=strict, inertia_check=inertia_check,
                                                   xacro_args=xacro_args, floating_base=floating_base))

        if loops is None and actuated_joints is None:
            if assembly is not None:
                raise ModelError("assembly is for a mechanism with loops: give loops= or actuated_joints= too")
            return tree()
        from .loop_model import loop_model_from_urdf

        return loop_model_from_urdf(tree, source, loops, actuated_joints, assembly, xacro_args)

    def with_loops(self, loops, actuated_joints=None, *, assembly=None):
        """This tree as a mechanism with loops: a :class:`~hod_dynamics.model.loop_model.LoopModel`
        closed by ``loops`` (a sequence of :class:`~hod_dynamics.model.closures.Closure`, or a
        closure file: YAML path, YAML text or mapping), with ``actuated_joints`` actuated (default:
        the closure file's) and the solve of the passive joints starting at ``assembly``. Raises
        ModelError naming an unknown link or joint (see :meth:`from_urdf`)."""
        from .loop_model import with_loops

        return with_loops(self, loops, actuated_joints, assembly)

    def with_gravity(self, gravity):
        """A copy of this model with another gravity vector (base frame, m/s^2)."""
        kwargs = {k: getattr(self, k) for k in self.__dataclass_fields__}
        kwargs["gravity"] = gravity
        return type(self)(**kwargs)

    def with_inertial_parameters(self, pi):
        """A copy of this model whose bodies have the inertial parameters ``pi``: (n_bodies,
        10) or (10 n_bodies,), in the layout of :func:`hod_dynamics.inertial_parameters`
        (kinematics, limits, names and friction unchanged). Raises InputError for a wrong
        shape or a non-finite entry, ModelError for a negative mass."""
        return model_with_parameters(self, pi)

    # -- derived, cached data -----------------------------------------------------------------
    @property
    def n_dof(self) -> int:
        """Number of actuated 1-DoF joints (= bodies)."""
        return len(self.joint_names)

    @property
    def nq(self) -> int:
        """Size of a configuration: n_dof, or 7 + n_dof for a floating base (position,
        quaternion (qx, qy, qz, qw), joints)."""
        return self.n_dof + (7 if self.floating else 0)

    @property
    def nv(self) -> int:
        """Size of a velocity: n_dof, or 6 + n_dof for a floating base (body twist
        (omega, v) of the base in the base frame, joint rates)."""
        return self.n_dof + (6 if self.floating else 0)

    @cached_property
    def ad_screws(self):
        """``ad(X_i)`` for every joint: (n, 6, 6)."""
        return ad(self.screws)

    @cached_property
    def Ad_references_inv(self):
        """``Ad(B_i^-1)``: maps twists from the parent frame to body i's frame at q_i = 0."""
        return Ad(inverse(self.references))

    @cached_property
    def children(self) -> Tuple[Tuple[int, ...], ...]:
        """Child body indices of every body."""
        kids = [[] for _ in range(self.n_dof)]
        for i, p in enumerate(self.parents):
            if p >= 0:
                kids[p].append(i)
        return tuple(tuple(k) for k in kids)

    @cached_property
    def ancestors(self) -> Tuple[Tuple[int, ...], ...]:
        """For every body, the bodies on its path to the base, itself first."""
        out = []
        for i in range(self.n_dof):
            chain, j = [], i
            while j >= 0:
                chain.append(j)
                j = self.parents[j]
            out.append(tuple(chain))
        return tuple(out)

    @cached_property
    def is_prismatic(self):
        """Boolean (n,) array, True for prismatic joints."""
        return ~np.any(self.screws[:, :3] != 0, axis=1)

    @property
    def masses(self):
        """Mass of every body (kg), (n,)."""
        return self.inertias[:, 3, 3]

    def frame(self, link: str) -> Frame:
        """The :class:`Frame` of a URDF link; raises ModelError if the link is not in the model."""
        try:
            return self.frames[link]
        except KeyError:
            raise ModelError(f"unknown link '{link}'; the model has {sorted(self.frames)}") from None

    def __repr__(self):
        return (f"RobotModel(name={self.name!r}, n_dof={self.n_dof}, root_link={self.root_link!r},"
                f"{' floating=True,' if self.floating else ''} joints={list(self.joint_names)})")


def per_model(func):
    """Cache ``func(model)`` for as long as the model lives (models are immutable).

    For the arrays an algorithm derives from a model once (compiled-kernel layouts, tree
    masks); unlike ``functools.lru_cache`` it keeps no model alive.
    """
    cache = weakref.WeakKeyDictionary()

    @wraps(func)
    def cached(model):
        try:
            return cache[model]
        except KeyError:
            value = cache[model] = func(model)
            return value

    return cached


# -- what takes a whole model: the argument check, the bodies' inertial parameters --------------
def check_model(model):
    """``model`` if it is a :class:`RobotModel`, else InputError (a robot's name, a URDF path or
    a Pinocchio model handed where the model goes)."""
    if not isinstance(model, RobotModel):
        if hasattr(model, "closures") and hasattr(model, "tree"):   # a LoopModel
            raise InputError(f"'{model.name}' is a mechanism with loops (LoopModel), which this function does not "
                             "take; its tree is model.tree (inverse_dynamics, time_derivatives, "
                             "constrained_dynamics and the feedforward take the mechanism)")
        shown = repr(model) if len(repr(model)) <= 60 else repr(model)[:60] + "..."
        raise InputError(f"model must be a hod_dynamics RobotModel (RobotModel.from_urdf(...) or "
                         f"load_robot(name)), got {type(model).__name__} {shown}")
    return model


def body_names(model):
    """The link name of every moving body in the order of :func:`inertial_parameters` (a
    floating model's base body, its root link, first)."""
    return ((model.root_link,) if model.floating else ()) + tuple(model.link_names)


def inertial_parameters(model):
    """The inertial parameters of every moving body of ``model``: (n_bodies, 10).

    Row b is pi of body b in Pinocchio's ``dynamicParameters`` order (m, m c_x, m c_y, m c_z,
    I_xx, I_xy, I_yy, I_xz, I_yz, I_zz), in the body's frame (the frame of its joint, the child
    link's URDF frame), inertia about the frame origin; kg, kg m, kg m^2. Links attached by
    fixed (or locked) joints are part of their body. Bodies are in the model's joint order;
    a floating model has ``n_dof + 1`` of them, its base body (the root link) first, so that
    ``regressor(model, q, v, a) @ inertial_parameters(model).ravel()`` is
    ``inverse_dynamics(model, q, v, a)``.
    """
    model = check_model(model)
    pi = parameters_from_inertia(model.inertias)
    if model.floating:
        pi = np.concatenate([parameters_from_inertia(model.base_inertia)[None], pi])
    return pi


def checked_parameters(model, pi, name="pi"):
    """``pi`` as a float (n_bodies, 10) array for ``model`` (a flat (10 n_bodies,) vector is
    accepted); InputError naming the shape or the first non-finite entry."""
    a = real_array(name, pi)
    nb = model.n_dof + (1 if model.floating else 0)
    if a.shape == (10 * nb,):
        a = a.reshape(nb, 10)
    if a.shape != (nb, 10):
        raise InputError(f"{name} must have shape ({nb}, 10) or ({10 * nb},) for model '{model.name}' "
                         f"({nb} moving bodies {list(body_names(model))}), got {a.shape}")
    names = body_names(model)
    check_finite(name, a, lambda bad: f"parameter {PARAMETER_NAMES[bad[1]]} of body '{names[bad[0]]}'")
    return a


def model_with_parameters(model, pi):
    """A copy of ``model`` whose body inertias are ``pi`` (see
    :meth:`~hod_dynamics.RobotModel.with_inertial_parameters`)."""
    pi = checked_parameters(model, pi)
    bad = np.flatnonzero(pi[:, 0] < 0)
    if len(bad):
        raise ModelError(f"body '{body_names(model)[bad[0]]}': negative mass {pi[bad[0], 0]} kg")
    kwargs = {k: getattr(model, k) for k in model.__dataclass_fields__}
    M = inertia_from_parameters(pi)
    if model.floating:
        kwargs["base_inertia"], M = M[0], M[1:]
    kwargs["inertias"] = M
    return type(model)(**kwargs)
