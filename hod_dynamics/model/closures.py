"""Loop closures: two frames of a kinematic tree that must coincide, and where they are written down.

A mechanism with kinematic loops is described as a tree (the URDF) plus *closures*. A closure
names frame A (a pose in the frame of link ``link_a``) and frame B (a pose in the frame of link
``link_b``) and how they are joined:

========== ==== ==========================================================================
kind       rows what coincides
========== ==== ==========================================================================
point      3    the origins of A and B (a ball joint)
revolute   5    the origins, and the axis ``axis`` of A with the same axis of B (a hinge)
weld       6    the whole frames (a rigid joint)
========== ==== ==========================================================================

The revolute axis is one unit vector, the same numbers in frame A and in frame B (the semantics
of Drake's ``<loop_joint>``: A's axis, seen from B, is the axis).

Where closures come from:

- a URDF's loop elements: Drake's ``<loop_joint name type>`` (or ``<drake:loop_joint>``) with
  ``<axis xyz>`` (frame A; default (1, 0, 0) as in Drake), ``<link1 link xyz rpy>`` (frame A)
  and ``<link2 link xyz rpy>`` (frame B); ``type`` continuous or revolute gives a revolute
  closure, fixed a weld, ball or spherical a point. Drake's ``<drake:ball_constraint>``
  (``<drake:ball_constraint_body_A name>``, ``<drake:ball_constraint_p_AP value>``, the same for
  B and ``p_BQ``) gives a point closure. ``<transmission>`` elements name actuated joints.
- a YAML file, in this package's form::

      actuated_joints: [crank_joint]
      assembly: {coupler_joint: -0.95, rocker_joint: 2.19}     # optional: near an assembly
      closures:
        - {name: rocker_ground, type: revolute, axis: [0, 1, 0],
           frame_a: {link: rocker, xyz: [0.3, 0, 0]}, frame_b: {link: ground, xyz: [0.4, 0, 0]}}

  (``type`` point, revolute or weld; a frame is a link name or ``{link, xyz, rpy}``), or in
  the form of the closed-loop robots of Gepetto's example-parallel-robots: ``closed_loop:
  [[frame_A, frame_B], ...]`` (link names), ``type: [6d | 3d, ...]`` (weld, point) and
  ``name_mot: [actuated joints]``.

Nothing here needs the tree; :mod:`hod_dynamics.model.loop_model` puts the frames on its bodies.
"""

import math
from dataclasses import dataclass
from typing import Optional, Tuple

import numpy as np

from ..errors import ModelError
from ..yamlfile import read_mapping
from .spatial import rpy_matrix, transform
from .urdf import _xml_tree, read_urdf_text

ROWS = {"point": 3, "revolute": 5, "weld": 6}
# the spellings of URDF loop elements and closure files -> kind
KIND_NAMES = {"point": "point", "ball": "point", "spherical": "point", "3d": "point",
              "revolute": "revolute", "continuous": "revolute", "hinge": "revolute",
              "weld": "weld", "fixed": "weld", "6d": "weld"}
# the names of the rows of each kind (closure forces are named after them)
ROW_NAMES = {"point": ("x", "y", "z"), "revolute": ("x", "y", "z", "r1", "r2"),
             "weld": ("x", "y", "z", "rx", "ry", "rz")}
# the URDF elements this module reads (their URDFExtensionWarning is not needed when it does)
URDF_ELEMENTS = ("loop_joint", "drake:loop_joint", "drake:ball_constraint")


def pose(xyz=(0.0, 0.0, 0.0), rpy=(0.0, 0.0, 0.0)):
    """4x4 transform of a URDF origin: ``xyz`` (m), ``rpy`` (rad, R = Rz(yaw) Ry(pitch) Rx(roll))."""
    return transform(rpy_matrix(rpy), np.asarray(xyz, dtype=float))


@dataclass(frozen=True, eq=False)
class Closure:
    """One loop closure: frame A (``pose_a``, 4x4, in link ``link_a``'s frame) and frame B
    (``pose_b`` in link ``link_b``'s frame) coincide as a point (``kind="point"``, 3 rows), up
    to a rotation about ``axis`` (``"revolute"``, 5 rows; a unit vector, the same numbers in
    frames A and B) or rigidly (``"weld"``, 6 rows). ``kind`` may be given in any spelling of
    :data:`KIND_NAMES`. Raises ModelError naming the closure for a bad kind, pose or axis."""

    name: str
    kind: str
    link_a: str
    link_b: str
    pose_a: Optional[np.ndarray] = None
    pose_b: Optional[np.ndarray] = None
    axis: Optional[np.ndarray] = None

    def __post_init__(self):
        kind = KIND_NAMES.get(str(self.kind).lower())
        if kind is None:
            raise ModelError(f"closure '{self.name}': unknown type {self.kind!r}; one of "
                             f"{sorted(set(KIND_NAMES))}")
        object.__setattr__(self, "kind", kind)
        for key in ("pose_a", "pose_b"):
            object.__setattr__(self, key, self._rigid(key, getattr(self, key)))
        axis = None
        if kind == "revolute":
            axis = self._vector("axis", (1.0, 0.0, 0.0) if self.axis is None else self.axis)
            if np.linalg.norm(axis) < 1e-12:
                raise ModelError(f"closure '{self.name}': the axis must not be zero")
            axis = axis / np.linalg.norm(axis)
            axis.setflags(write=False)
        object.__setattr__(self, "axis", axis)
        for key in ("link_a", "link_b"):
            if not isinstance(getattr(self, key), str) or not getattr(self, key):
                raise ModelError(f"closure '{self.name}': {key} must be a link name, got {getattr(self, key)!r}")

    def _vector(self, what, value):
        try:
            v = np.array(value, dtype=float).reshape(-1)
        except (TypeError, ValueError):
            v = np.zeros(0)
        if v.shape != (3,) or not np.all(np.isfinite(v)):
            raise ModelError(f"closure '{self.name}': {what} must be 3 finite numbers, got {value!r}")
        return v

    def _rigid(self, key, value):
        if value is None:
            P = np.eye(4)
        else:
            try:
                P = np.array(value, dtype=float)
            except (TypeError, ValueError):
                P = np.zeros(0)
        if (P.shape != (4, 4) or not np.all(np.isfinite(P)) or np.abs(P[3] - [0, 0, 0, 1]).max() > 0
                or np.abs(P[:3, :3].T @ P[:3, :3] - np.eye(3)).max() > 1e-9 or np.linalg.det(P[:3, :3]) < 0):
            raise ModelError(f"closure '{self.name}': {key} must be a 4x4 rigid transform")
        P.setflags(write=False)
        return P

    @property
    def n_rows(self) -> int:
        """Number of scalar constraints: 3, 5 or 6."""
        return ROWS[self.kind]


def _local(tag):
    """An element name without its namespace prefix (``drake:loop_joint`` -> ``loop_joint``)."""
    return tag.rsplit(":", 1)[-1]


def _numbers(text, what):
    try:
        values = [float(v) for v in str(text).split()]
    except ValueError:
        values = []
    if len(values) != 3 or not all(math.isfinite(v) for v in values):
        raise ModelError(f"{what}: expected 3 numbers, got {text!r}")
    return values


def _child(element, name):
    return next((c for c in element.children if _local(c.tag) == name), None)


def _loop_joint(element):
    """The :class:`Closure` of a Drake ``<loop_joint>`` element (expat element with its line)."""
    name = element.attrib.get("name")
    where = f"<{element.tag} name='{name}'> (line {element.line})"
    if not name:
        raise ModelError(f"<{element.tag}> without a name (line {element.line})")
    frames = []
    for key in ("link1", "link2"):
        node = _child(element, key)
        if node is None or not node.attrib.get("link"):
            raise ModelError(f"{where}: missing <{key} link=\"...\" xyz rpy>")
        frames.append((node.attrib["link"], pose(_numbers(node.attrib.get("xyz", "0 0 0"), f"{where} {key} xyz"),
                                                 _numbers(node.attrib.get("rpy", "0 0 0"), f"{where} {key} rpy"))))
    axis = _child(element, "axis")
    axis = (1.0, 0.0, 0.0) if axis is None else _numbers(axis.attrib.get("xyz"), f"{where} <axis xyz>")
    kind = element.attrib.get("type", "continuous")
    if str(kind).lower() not in KIND_NAMES:
        raise ModelError(f"{where}: unsupported type {kind!r} (continuous, revolute, fixed or ball)")
    return Closure(name, kind, frames[0][0], frames[1][0], frames[0][1], frames[1][1], axis)


def _ball_constraint(element, index):
    """The point :class:`Closure` of a ``<drake:ball_constraint>`` element."""
    parts = {_local(c.tag): c.attrib for c in element.children}
    where = f"<{element.tag}> (line {element.line})"
    try:
        link_a, link_b = parts["ball_constraint_body_A"]["name"], parts["ball_constraint_body_B"]["name"]
        p_a = _numbers(parts["ball_constraint_p_AP"]["value"], f"{where} p_AP")
        p_b = _numbers(parts["ball_constraint_p_BQ"]["value"], f"{where} p_BQ")
    except KeyError as exc:
        raise ModelError(f"{where}: missing {exc.args[0]} (body_A name, p_AP value, body_B name, p_BQ "
                         "value)") from None
    return Closure(f"ball_constraint_{index}", "point", link_a, link_b, pose(p_a), pose(p_b))


def urdf_closures(source, *, xacro_args=None):
    """The closures a URDF declares, and the joints its ``<transmission>`` elements name.

    ``source``: a URDF file path or its text (xacro as for
    :meth:`~hod_dynamics.RobotModel.from_urdf`). Returns ``(closures, transmission_joints)``,
    both tuples in document order. Raises ModelError naming the element and its line for a
    malformed loop element."""
    root = _xml_tree(read_urdf_text(source, xacro_args=xacro_args))
    closures, joints = [], []
    for element in root.children:
        tag = _local(element.tag)
        if tag == "loop_joint":
            closures.append(_loop_joint(element))
        elif tag == "ball_constraint":
            closures.append(_ball_constraint(element, sum(c.kind == "point" for c in closures)))
        elif tag == "transmission":
            joints += [c.attrib["name"] for c in element.children
                       if _local(c.tag) == "joint" and c.attrib.get("name") and c.attrib["name"] not in joints]
    return tuple(closures), tuple(joints)


@dataclass(frozen=True)
class ClosureFile:
    """What a closure file holds: ``closures``, and the ``actuated_joints`` and ``assembly``
    (``{joint: position}`` near an assembly of the mechanism) when it names them, else None."""

    closures: Tuple[Closure, ...]
    actuated_joints: Optional[Tuple[str, ...]] = None
    assembly: Optional[dict] = None


def _yaml_frame(spec, what):
    if isinstance(spec, str):
        return spec, np.eye(4)
    if not isinstance(spec, dict) or "link" not in spec:
        raise ModelError(f"{what}: expected a link name or {{link, xyz, rpy}}, got {spec!r}")
    unknown = sorted(set(spec) - {"link", "xyz", "rpy"})
    if unknown:
        raise ModelError(f"{what}: unknown keys {unknown} (a frame has link, xyz, rpy)")
    return str(spec["link"]), pose(_numbers(" ".join(map(str, spec.get("xyz", (0, 0, 0)))), f"{what} xyz"),
                                   _numbers(" ".join(map(str, spec.get("rpy", (0, 0, 0)))), f"{what} rpy"))


def _names(value, what):
    if isinstance(value, str) or not all(isinstance(v, str) for v in value or ()):
        raise ModelError(f"{what} must be a list of joint names, got {value!r}")
    return tuple(value)


_KEYS = {"closures", "actuated_joints", "assembly"}
_GEPETTO_KEYS = {"closed_loop", "type", "name_mot", "joint_name", "joint_type"}


def closure_file(source):
    """The closures (and actuated joints, assembly) of a YAML file, YAML text or mapping in one
    of the two forms of the module docstring. Raises ModelError naming the entry at fault."""
    data = read_mapping(source, ModelError, "closure file")
    if "closed_loop" in data:
        return _gepetto_file(data)
    unknown = sorted(set(data) - _KEYS)
    if unknown:
        raise ModelError(f"closure file: unknown keys {unknown}; it holds {sorted(_KEYS)} (or Gepetto's "
                         "closed_loop, type, name_mot)")
    closures = []
    for i, spec in enumerate(data.get("closures") or []):
        if not isinstance(spec, dict):
            raise ModelError(f"closure file: closure {i} must be a mapping, got {spec!r}")
        name = str(spec.get("name", f"closure_{i}"))
        extra = sorted(set(spec) - {"name", "type", "axis", "frame_a", "frame_b"})
        if extra:
            raise ModelError(f"closure '{name}': unknown keys {extra} (name, type, axis, frame_a, frame_b)")
        link_a, pose_a = _yaml_frame(spec.get("frame_a"), f"closure '{name}' frame_a")
        link_b, pose_b = _yaml_frame(spec.get("frame_b"), f"closure '{name}' frame_b")
        closures.append(Closure(name, spec.get("type", "point"), link_a, link_b, pose_a, pose_b, spec.get("axis")))
    actuated = data.get("actuated_joints")
    assembly = data.get("assembly")
    if assembly is not None and not isinstance(assembly, dict):
        raise ModelError(f"closure file: assembly must map joint names to positions, got {assembly!r}")
    return ClosureFile(tuple(closures), None if actuated is None else _names(actuated, "actuated_joints"),
                       assembly)


def _gepetto_file(data):
    """Gepetto's example-parallel-robots form: ``closed_loop`` pairs of link names, ``type``
    (6d weld, 3d point), ``name_mot`` the motors."""
    unknown = sorted(set(data) - _GEPETTO_KEYS)
    if unknown:
        raise ModelError(f"closure file: unknown keys {unknown} beside closed_loop (type, name_mot)")
    pairs = data["closed_loop"] or []
    kinds = data.get("type") or ["6d"] * len(pairs)
    if len(kinds) != len(pairs):
        raise ModelError(f"closure file: {len(pairs)} closed_loop pairs but {len(kinds)} types")
    closures = []
    for pair, kind in zip(pairs, kinds):
        if isinstance(pair, str) or len(pair) != 2:
            raise ModelError(f"closure file: a closed_loop entry is a pair of link names, got {pair!r}")
        closures.append(Closure(f"{pair[0]}~{pair[1]}", kind, str(pair[0]), str(pair[1])))
    motors = data.get("name_mot")
    return ClosureFile(tuple(closures), None if motors is None else _names(motors, "name_mot"))
