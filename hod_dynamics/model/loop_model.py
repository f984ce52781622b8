"""A mechanism with kinematic loops: a tree, its loop closures and the joints that are actuated.

The tree is a :class:`~hod_dynamics.RobotModel` (a URDF read as today: one tree, the
loop-closing joints left out); the closures (:mod:`hod_dynamics.model.closures`) say which
frames of its links must coincide; the *actuated* joints are the ones the user names, every
other tree joint is *passive* (moved by the loop). The mechanism's coordinates are the actuated
joints' positions y: the passive positions follow from y through the closures.

A :class:`LoopModel` presents itself in those coordinates: ``joint_names``, ``n_dof``, the
limits and ``<dynamics>`` values are the actuated joints', so that the functions that take a
model and a trajectory of its joints (:func:`~hod_dynamics.inverse_dynamics`,
:func:`~hod_dynamics.time_derivatives`, the feedforward, the replay of a recording) take a
loop model and a trajectory of its actuated joints. ``tree`` is the whole tree.

Refused here, with one line each (:class:`~hod_dynamics.errors.ModelError`): a closure that names
a link the tree does not hold, both frames of a closure on one rigid body, unknown or repeated
actuated joints, no closure, a floating base. Whether the actuated joints determine the
mechanism is a question of its configurations, answered where they are computed
(:mod:`hod_dynamics.algorithms.loop_closure`).
"""

import difflib
import os
import warnings
from dataclasses import dataclass
from typing import Tuple

import numpy as np

from ..errors import InputError, ModelError, URDFExtensionWarning
from .closures import ROW_NAMES, URDF_ELEMENTS, Closure, closure_file, urdf_closures
from .joint_names import NamedJoints


def _readonly(values, dtype=float):
    a = np.array(values, dtype=dtype)
    a.setflags(write=False)
    return a


def _hint(name, known):
    close = difflib.get_close_matches(name, list(known), n=1)
    return f" (did you mean '{close[0]}'?)" if close else ""


@dataclass(frozen=True, eq=False)
class LoopModel(NamedJoints):
    """A kinematic tree with loop closures and actuated joints; build it with
    :meth:`RobotModel.from_urdf(..., loops=..., actuated_joints=...)
    <hod_dynamics.RobotModel.from_urdf>` or :meth:`RobotModel.with_loops
    <hod_dynamics.RobotModel.with_loops>`.

    Fields: ``tree`` (:class:`~hod_dynamics.RobotModel`), ``closures`` (tuple of
    :class:`~hod_dynamics.model.closures.Closure`), ``actuated_joints`` (names, tree order),
    ``assembly`` (n_tree,) tree positions at or near an assembly of the mechanism (rad or m;
    zeros unless given): the solve of the passive positions starts there and follows the
    branch it is on (an open or crossed four-bar, knee forward or back).

    Derived: ``passive_joints``; ``actuated_index`` / ``passive_index`` (their positions in
    ``tree.joint_names``); ``closure_frames`` ((body, pose) of frames A and B of every closure,
    body -1 the root, pose 4x4 in that body's frame); ``n_rows`` (closure rows m) and
    ``row_names`` (``<closure>.x``, ``.y``, ``.z``, then ``.r1``, ``.r2`` or ``.rx``, ``.ry``,
    ``.rz``); and, over the actuated joints, what a model of the mechanism's coordinates has:
    ``name``, ``joint_names``, ``joint_types``, ``n_dof`` (= nq = nv), ``lower``, ``upper``,
    ``velocity_limits``, ``effort_limits``, ``damping``, ``friction``, ``joint_lines``,
    ``gravity``, ``root_link``, ``floating`` (False).
    """

    tree: object
    closures: Tuple[Closure, ...]
    actuated_joints: Tuple[str, ...]
    assembly: object = None

    def __post_init__(self):
        tree = self.tree
        if not hasattr(type(tree), "with_loops"):
            raise InputError(f"the tree of a loop model must be a hod_dynamics RobotModel, got {type(tree).__name__}")
        if tree.floating:
            raise ModelError(f"model '{tree.name}': loop closures need a fixed base (a floating base with loops "
                             "is not supported)")
        closures = tuple(self.closures)
        if not closures:
            raise ModelError(f"model '{tree.name}': no loop closures (a URDF without <loop_joint> or "
                             "<drake:ball_constraint>, or an empty closure file)")
        if not all(isinstance(c, Closure) for c in closures):
            raise InputError("closures must be hod_dynamics.model.closures.Closure objects")
        names = [c.name for c in closures]
        if len(set(names)) != len(names):
            raise ModelError(f"closure names are repeated: {sorted({n for n in names if names.count(n) > 1})}")
        object.__setattr__(self, "closures", closures)
        self._set_joints(tree, self.actuated_joints)
        object.__setattr__(self, "closure_frames", tuple(self._frames(tree, closures)))
        object.__setattr__(self, "assembly", self._assembly(tree, self.assembly))
        object.__setattr__(self, "row_names", tuple(f"{c.name}.{r}" for c in closures for r in ROW_NAMES[c.kind]))
        object.__setattr__(self, "n_rows", len(self.row_names))

    def _set_joints(self, tree, actuated):
        if isinstance(actuated, str) or actuated is None:
            raise ModelError(f"actuated_joints must be a list of joint names of '{tree.name}', got {actuated!r}")
        actuated = [str(a) for a in actuated]
        unknown = [a for a in actuated if a not in tree.joint_names]
        if unknown:
            raise ModelError("actuated joints " + ", ".join(f"'{a}'{_hint(a, tree.joint_names)}" for a in unknown)
                             + f" are not moving joints of '{tree.name}' ({list(tree.joint_names)})")
        if len(set(actuated)) != len(actuated):
            raise ModelError(f"actuated joints repeated: {sorted({a for a in actuated if actuated.count(a) > 1})}")
        if not actuated:
            raise ModelError(f"model '{tree.name}': no actuated joint named (actuated_joints=[...])")
        chosen = set(actuated)
        ia = [i for i, nm in enumerate(tree.joint_names) if nm in chosen]
        ip = [i for i, nm in enumerate(tree.joint_names) if nm not in chosen]
        object.__setattr__(self, "actuated_index", _readonly(ia, int))
        object.__setattr__(self, "passive_index", _readonly(ip, int))
        object.__setattr__(self, "actuated_joints", tuple(tree.joint_names[i] for i in ia))
        object.__setattr__(self, "passive_joints", tuple(tree.joint_names[i] for i in ip))

    @staticmethod
    def _frames(tree, closures):
        """(body, pose in the body frame) of frames A and B of every closure."""
        for c in closures:
            bodies = []
            for link, P in ((c.link_a, c.pose_a), (c.link_b, c.pose_b)):
                if link not in tree.frames:
                    raise ModelError(f"closure '{c.name}' names link '{link}'{_hint(link, tree.frames)}, which is "
                                     f"not in the tree of '{tree.name}' (a link left out by tip_links, or below "
                                     "root_link, is not in it)")
                frame = tree.frames[link]
                bodies.append(frame.body)
                yield frame.body, _readonly(frame.pose @ P)
            if bodies[0] == bodies[1]:
                raise ModelError(f"closure '{c.name}': links '{c.link_a}' and '{c.link_b}' are one rigid body of "
                                 "the tree (joined by fixed or locked joints); a closure joins two bodies")

    @staticmethod
    def _assembly(tree, assembly):
        """(n,) tree positions from None (zeros), a mapping {joint: position} or an (n,) array."""
        q = np.zeros(tree.n_dof)
        if isinstance(assembly, dict):
            unknown = [j for j in assembly if j not in tree.joint_names]
            if unknown:
                raise ModelError("assembly names joints " + ", ".join(
                    f"'{j}'{_hint(j, tree.joint_names)}" for j in unknown) + f" that '{tree.name}' does not move")
            for j, value in assembly.items():
                q[tree.joint_names.index(j)] = value
        elif assembly is not None:
            try:
                q = np.array(assembly, dtype=float).reshape(-1)
            except (TypeError, ValueError):
                q = np.zeros(0)
            if q.shape != (tree.n_dof,):
                raise ModelError(f"assembly must give the {tree.n_dof} tree joint positions {list(tree.joint_names)} "
                                 f"or map joint names to positions, got {assembly!r}")
        if not np.all(np.isfinite(q)):
            raise ModelError(f"assembly positions must be finite, got {q.tolist()}")
        return _readonly(q)

    # -- the mechanism in its actuated coordinates ---------------------------------------------
    @property
    def name(self):
        return self.tree.name

    @property
    def joint_names(self):
        return self.actuated_joints

    @property
    def n_dof(self):
        return len(self.actuated_joints)

    nq = nv = n_dof

    @property
    def floating(self):
        return False

    @property
    def gravity(self):
        return self.tree.gravity

    @property
    def root_link(self):
        return self.tree.root_link

    @property
    def joint_types(self):
        return tuple(self.tree.joint_types[i] for i in self.actuated_index)

    @property
    def joint_lines(self):
        return {j: self.tree.joint_lines[j] for j in self.actuated_joints if j in self.tree.joint_lines}

    def _actuated(self, key):
        return _readonly(getattr(self.tree, key)[self.actuated_index])

    lower = property(lambda self: self._actuated("lower"))
    upper = property(lambda self: self._actuated("upper"))
    velocity_limits = property(lambda self: self._actuated("velocity_limits"))
    effort_limits = property(lambda self: self._actuated("effort_limits"))
    damping = property(lambda self: self._actuated("damping"))
    friction = property(lambda self: self._actuated("friction"))

    # -- copies ----------------------------------------------------------------------------------
    def with_assembly(self, assembly):
        """This mechanism with another ``assembly`` (an (n_tree,) array or {joint: position})."""
        return LoopModel(self.tree, self.closures, self.actuated_joints, assembly)

    def with_gravity(self, gravity):
        """This mechanism with another gravity vector (root link frame, m/s^2)."""
        return LoopModel(self.tree.with_gravity(gravity), self.closures, self.actuated_joints, self.assembly)

    def with_inertial_parameters(self, pi):
        """This mechanism with the tree's bodies given the inertial parameters ``pi`` (see
        :meth:`RobotModel.with_inertial_parameters <hod_dynamics.RobotModel.with_inertial_parameters>`)."""
        return LoopModel(self.tree.with_inertial_parameters(pi), self.closures, self.actuated_joints, self.assembly)

    def __repr__(self):
        return (f"LoopModel(name={self.name!r}, closures={[c.name for c in self.closures]}, "
                f"actuated_joints={list(self.actuated_joints)}, passive_joints={list(self.passive_joints)})")


def with_loops(tree, closures, actuated_joints=None, assembly=None, *, transmissions=()):
    """The :class:`LoopModel` of ``tree`` closed by ``closures``: a sequence of
    :class:`~hod_dynamics.model.closures.Closure`, or a closure file (YAML path, YAML text or
    mapping, see :func:`~hod_dynamics.model.closures.closure_file`). ``actuated_joints`` and
    ``assembly`` given here win over a closure file's; without either, the actuated joints are
    ``transmissions`` (the joints a URDF's ``<transmission>`` elements name)."""
    if isinstance(closures, (str, dict, os.PathLike)):
        found = closure_file(closures)
        closures = found.closures
        actuated_joints = found.actuated_joints if actuated_joints is None else actuated_joints
        assembly = found.assembly if assembly is None else assembly
    elif isinstance(closures, Closure):
        closures = (closures,)
    if actuated_joints is None:
        if not transmissions:
            raise ModelError(f"name the actuated joints of '{tree.name}' (actuated_joints=[...], or "
                             "actuated_joints in the closure file, or <transmission> elements in the URDF)")
        actuated_joints = transmissions
    try:
        closures = tuple(closures)
    except TypeError:
        raise InputError(f"loops must be 'urdf', a closure file (YAML path or text, a mapping) or a sequence "
                         f"of Closure, got {type(closures).__name__}") from None
    return LoopModel(tree, closures, actuated_joints, assembly)


def loop_model_from_urdf(build_tree, source, loops, actuated_joints, assembly, xacro_args=None):
    """What :meth:`RobotModel.from_urdf` returns when given ``loops`` or ``actuated_joints``:
    the tree from ``build_tree()``; the closures from the URDF's loop elements (``loops`` None,
    True or ``"urdf"``) or from ``loops`` (see :func:`with_loops`); the URDF's extension
    warnings about the loop elements it read are not repeated (they are read now)."""
    from_urdf = loops is None or loops is True or (isinstance(loops, str) and loops.strip().lower() == "urdf")
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        tree = build_tree()
    for w in caught:
        read = from_urdf and issubclass(w.category, URDFExtensionWarning) and str(w.message).startswith(
            tuple(f"<{name}>" for name in URDF_ELEMENTS))
        if not read:
            warnings.warn_explicit(w.message, w.category, w.filename, w.lineno)
    closures, transmissions = urdf_closures(source, xacro_args=xacro_args)
    if not from_urdf:
        closures = loops
    elif not closures:
        raise ModelError(f"model '{tree.name}': the URDF declares no loop closure (<loop_joint>, "
                         "<drake:ball_constraint>); give them with loops=<closure file>")
    return with_loops(tree, closures, actuated_joints, assembly, transmissions=transmissions)
