"""URDF (or xacro) -> the arguments of :class:`hod_dynamics.model.RobotModel`.

Data flows through three steps:

1. :func:`read_urdf_text`: a file path, XML text or bytes -> URDF text. A byte-order mark and
   whitespace before ``<?xml`` are accepted; a ``.xacro`` file (or text using ``<xacro:...>``)
   is expanded with the ``xacro`` package, ``$(find pkg)`` resolving through the ament index.
2. :func:`parse_urdf`: URDF text -> :class:`Robot` (links and joints with their line numbers).
   The XML is read with expat, which keeps line numbers; a default XML namespace on
   ``<robot>`` is accepted, as urdfdom (ROS's C++ parser) does. One reader per URDF element
   (``_read_link``, ``_read_inertial``, ``_read_joint``, ``_read_origin``, ``_read_axis``,
   ``_read_limit``, ``_read_dynamics``, ``_read_mimic``). An unknown element or attribute
   inside the elements the dynamics reads is a :class:`ModelError` (``strict=True``) or a
   :class:`HodDynamicsWarning` (``strict=False``) naming it, its line, its link or joint and
   the closest known name: a misspelled ``<axis>`` or ``<inertial>`` would otherwise be
   dropped and give wrong torques. What the URDF world adds (``<gazebo>``,
   ``<transmission>``, ``<ros2_control>``, ``<safety_controller>``, ``<calibration>``,
   sensors, vendor namespaces such as ``drake:``, comments, the content of ``<visual>``,
   ``<collision>`` and ``<material>``) is never checked.
3. :func:`model_arguments_from_urdf`: selects the subtree between ``root_link`` and
   ``tip_links``, merges fixed and locked joints into their parent body (their inertia added
   rigidly), and turns every moving joint into a screw ``X_i`` and a reference configuration
   ``B_i`` (the joint origin, composed with the merged fixed transforms above it). The body
   frame of a moving joint is its child link's URDF frame.
"""

import difflib
import os
import re
import warnings
import xml.parsers.expat as expat
from dataclasses import dataclass, field
from typing import Dict, List, Optional

import numpy as np

from .errors import HodDynamicsWarning, ModelError
from .spatial import body_inertia, rpy_matrix, screw_exp, transform, transform_inertia

_MOVING = {"revolute", "continuous", "prismatic"}
_NOT_1DOF = {"floating", "planar"}
JOINT_TYPES = ("revolute", "continuous", "prismatic", "fixed", "floating", "planar")
INERTIA_CHECKS = ("error", "warn", "off")


def checked_inertia_mode(inertia_check):
    """``inertia_check`` if it is one of :data:`INERTIA_CHECKS`, else ModelError."""
    if inertia_check not in INERTIA_CHECKS:
        raise ModelError(f"inertia_check must be one of {INERTIA_CHECKS}, got {inertia_check!r}")
    return inertia_check


# Attributes and child elements of the URDF elements the dynamics reads (URDF specification,
# as urdfdom parses it). Anything else inside these elements is reported.
_KNOWN = {
    "robot": ({"name", "version"}, {"link", "joint", "material"}),
    "link": ({"name"}, {"inertial", "visual", "collision"}),
    "inertial": (set(), {"origin", "mass", "inertia"}),
    "mass": ({"value"}, set()),
    "inertia": ({"ixx", "ixy", "ixz", "iyy", "iyz", "izz"}, set()),
    "origin": ({"xyz", "rpy"}, set()),
    "joint": ({"name", "type"}, {"origin", "parent", "child", "axis", "limit", "dynamics", "mimic",
                                 "calibration", "safety_controller"}),
    "parent": ({"link"}, set()),
    "child": ({"link"}, set()),
    "axis": ({"xyz"}, set()),
    "limit": ({"lower", "upper", "effort", "velocity"}, set()),
    "dynamics": ({"damping", "friction"}, set()),
    "mimic": ({"joint", "multiplier", "offset"}, set()),
}
# What real robot descriptions add and the dynamics does not read: never reported (urdfdom
# ignores them all). Elements and attributes in a namespace (drake:..., xacro:...) are never
# reported either. Each entry names who writes it.
_EXTENSIONS = {
    # Gazebo, ROS 1 and ROS 2 control, the URDF sensor proposal, Drake's <frame>
    "robot": {"gazebo", "transmission", "ros2_control", "sensor", "frame"},
    # iiwa_stack's <self_collision_checking>, Pinocchio's <collision_checking>, PyBullet's
    # <contact>, ANYbotics' <self_filter>, Gazebo properties written in the link by PAL
    # (TIAGo: <kinematic>, <gravity>, <surface>), sensors, and an <origin> directly in the link
    # (onshape-to-robot, SO-ARM101), which no URDF reader uses
    "link": {"self_collision_checking", "collision_checking", "contact", "self_filter",
             "kinematic", "gravity", "surface", "sensor", "origin"},
}
_TOLERATED = {
    "axis": {"rpy"},  # the ROS URDF tutorial writes <axis xyz="0 1 0" rpy="0 0 0"/>
    "link": {"type"},  # PR2, TIAGo: <link name="..." type="laser">
    "joint": {"dont_collapse"},  # Unitree (G1, Go2): keep a fixed joint in simulators
    "limit": {"command_effort", "current", "gear_velocity"},  # ANYbotics (ANYmal)
    "dynamics": {"D", "K", "mu_coulomb", "mu_viscous"},  # franka_description (Panda)
}


# -- the parsed URDF (attribute names as urdf_parser_py's, so readers of either feel at home) ---
@dataclass
class Origin:
    xyz: np.ndarray
    rpy: np.ndarray


@dataclass
class Inertial:
    mass: float
    inertia: np.ndarray  # (3, 3) about the centre of mass, in the inertial frame (kg m^2)
    origin: Optional[Origin]


@dataclass
class Link:
    name: str
    inertial: Optional[Inertial]
    line: int


@dataclass
class Limit:
    lower: Optional[float]
    upper: Optional[float]
    effort: Optional[float]
    velocity: Optional[float]


@dataclass
class Dynamics:
    damping: float
    friction: float


@dataclass
class Mimic:
    joint: str
    multiplier: float
    offset: float


@dataclass
class Joint:
    name: str
    type: str
    parent: str
    child: str
    origin: Optional[Origin]
    axis: Optional[np.ndarray]
    limit: Optional[Limit]
    dynamics: Optional[Dynamics]
    mimic: Optional[Mimic]
    line: int


@dataclass
class Robot:
    name: str
    links: List[Link]
    joints: List[Joint]


# -- step 1: source -> text -------------------------------------------------------------------
def read_urdf_text(source, *, xacro_args=None):
    """URDF XML text from ``source``: a path to a ``.urdf``/``.xacro`` file, the XML (or
    xacro) text itself, or its bytes. ``xacro_args`` (``{name: value}``) are the xacro
    arguments; giving them, a ``.xacro`` file or text with ``<xacro:...>`` elements runs xacro."""
    if isinstance(source, (bytes, bytearray)):
        source = _decode(bytes(source), "the URDF bytes")
    if isinstance(source, os.PathLike):
        source = os.fspath(source)
    if not isinstance(source, str):
        raise ModelError(f"URDF source must be a path or XML text, got {type(source).__name__}")
    text = source.lstrip("\ufeff")
    if text.lstrip().startswith("<"):
        if xacro_args or "<xacro:" in text:
            return expand_xacro(text, xacro_args, "the xacro text")
        return text
    path = source
    if os.path.isdir(path):
        raise ModelError(f"URDF path '{path}' is a directory, not a URDF file")
    if not os.path.isfile(path):
        shown = repr(path) if len(path) <= 200 and "\n" not in path else repr(path[:60]) + " ..."
        raise ModelError(f"URDF file not found: {shown} (pass a path to a .urdf or .xacro file, "
                         "or the XML text itself)")
    if path.endswith(".xacro") or xacro_args:
        return expand_xacro(path, xacro_args, f"'{path}'", is_file=True)
    with open(path, "rb") as f:
        text = _decode(f.read(), f"'{path}'")
    if "<xacro:" in text:
        return expand_xacro(path, xacro_args, f"'{path}'", is_file=True)
    return text


def xacro_args_from_strings(items, what="xacro argument"):
    """``["name:=value", ...]`` (the form of the xacro command line) -> ``{name: value}``;
    ModelError naming ``what`` for an entry without ``:=``."""
    out = {}
    for item in items or []:
        name, sep, value = str(item).partition(":=")
        if not sep or not name.strip():
            raise ModelError(f"{what} expects NAME:=VALUE, got '{item}'")
        out[name.strip()] = value
    return out


def _decode(data, what):
    """Text of XML bytes: UTF-8 (with or without byte-order mark) or the declared encoding."""
    if data.startswith(b"\xef\xbb\xbf"):
        return data[3:].decode("utf-8")
    declared = re.match(rb"\s*<\?xml[^>]*encoding=[\"']([A-Za-z0-9._-]+)[\"']", data)
    encoding = declared.group(1).decode("ascii") if declared else "utf-8"
    try:
        return data.decode(encoding)
    except (LookupError, UnicodeDecodeError) as exc:
        raise ModelError(f"{what} cannot be decoded as {encoding}: {exc}") from None


def expand_xacro(source, xacro_args=None, what="the xacro text", *, is_file=False):
    """URDF text of a xacro file (``is_file``) or xacro text, with ``xacro_args``
    ``{name: value}``; ``$(find pkg)`` resolves through the ament index."""
    try:
        import xacro
    except ImportError:
        raise ModelError(f"{what} is a xacro description: expanding it needs the 'xacro' package "
                         "(pip install 'hod_dynamics[xacro]' or pip install xacro; on a ROS 2 "
                         "system: apt install ros-$ROS_DISTRO-xacro)") from None
    mappings = {str(k): str(v) for k, v in dict(xacro_args or {}).items()}
    try:
        if is_file:
            doc = xacro.process_file(source, mappings=mappings)
        else:
            xacro.init_stacks(None)
            doc = xacro.parse(source)
            xacro.process_doc(doc, mappings=mappings)
    except Exception as exc:  # XacroException, ament's PackageNotFoundError, XML errors, ...
        raise ModelError(f"xacro could not expand {what}: {type(exc).__name__}: {exc}") from None
    return doc.toprettyxml(indent="  ")


# -- step 2: text -> Robot ----------------------------------------------------------------------
@dataclass
class _Element:
    tag: str
    attrib: Dict[str, str]
    line: int
    children: list = field(default_factory=list)


def _xml_tree(text):
    """Root :class:`_Element` of XML text, with 1-based line numbers of the text as given."""
    body = text.lstrip("\ufeff")
    stripped = body.lstrip()
    offset = body[:len(body) - len(stripped)].count("\n")  # lines before the XML declaration
    if not stripped.startswith("<"):
        start = stripped[:40].splitlines()[0] if stripped else ""
        raise ModelError(f"not a URDF: the text is not XML (it starts with {start!r}; a URDF "
                         "starts with '<?xml' or '<robot')")
    parser = expat.ParserCreate()
    roots, stack = [], []

    def start(tag, attrib):
        element = _Element(tag, attrib, parser.CurrentLineNumber + offset)
        (stack[-1].children if stack else roots).append(element)
        stack.append(element)

    parser.StartElementHandler = start
    parser.EndElementHandler = lambda tag: stack.pop()
    try:
        parser.Parse(stripped, True)
    except expat.ExpatError as exc:
        raise ModelError(_xml_error(exc, stripped, stack, offset)) from None
    return roots[0]


def _xml_error(exc, text, stack, offset):
    """One clear sentence for an expat error: where, and which element is involved."""
    line, column = exc.lineno + offset, exc.offset + 1
    reason = expat.ErrorString(exc.code)
    if exc.code == expat.errors.codes[expat.errors.XML_ERROR_TAG_MISMATCH] and stack:
        row = text.splitlines()[exc.lineno - 1] if exc.lineno <= len(text.splitlines()) else ""
        start = row.rfind("</", 0, exc.offset + 1)  # expat points at the name, after "</"
        closing = re.match(r"</\s*([^\s>]*)", row[start:]) if start >= 0 else None
        name = f"</{closing.group(1)}>" if closing else "a closing tag"
        column = start + 1 if closing else column
        return (f"malformed URDF: {name} at line {line}, column {column} does not close "
                f"<{stack[-1].tag}> opened at line {stack[-1].line}")
    if exc.code == expat.errors.codes[expat.errors.XML_ERROR_NO_ELEMENTS] and stack:
        return (f"malformed URDF: the text ends (line {line}) before <{stack[-1].tag}> opened at "
                f"line {stack[-1].line} is closed")
    inside = f" (inside <{stack[-1].tag}> opened at line {stack[-1].line})" if stack else ""
    return f"malformed URDF: {reason} at line {line}, column {column}{inside}"


class _Reader:
    """The reading context: strictness, the problems let through, message helpers."""

    def __init__(self, strict, inertia_check):
        self.strict, self.inertia_check = bool(strict), checked_inertia_mode(inertia_check)

    def problem(self, message):
        """An unknown element or attribute: an error when strict, else a warning."""
        if self.strict:
            raise ModelError(message + " (strict=False, or --lenient, reads past it with a warning)")
        warnings.warn(message, HodDynamicsWarning, stacklevel=2)

    def check(self, element, where):
        """Report unknown attributes and child elements of a URDF element read by the dynamics."""
        attributes, children = _KNOWN[element.tag]
        for name, value in element.attrib.items():
            if ":" in name or name == "xmlns" or name in attributes or name in _TOLERATED.get(element.tag, ()):
                continue
            self.problem(f"unknown attribute {name}=\"{value}\" of <{element.tag}> in {where} "
                         f"(line {element.line})" + _did_you_mean(name, attributes, "'{}'"))
        for child in element.children:
            if ":" in child.tag or child.tag in children or child.tag in _EXTENSIONS.get(element.tag, ()):
                continue
            self.problem(f"unknown element <{child.tag}> in {where} (line {child.line})"
                         + _did_you_mean(child.tag, children, "<{}>"))


def _did_you_mean(name, candidates, form):
    close = difflib.get_close_matches(name, sorted(candidates), n=1, cutoff=0.6)
    return f"; did you mean {form.format(close[0])}?" if close else ""


def _first(element, tag):
    """The first child ``<tag>`` (URDF readers take the first of repeated elements)."""
    return next((c for c in element.children if c.tag == tag), None)


def _required(element, attribute, where):
    value = element.attrib.get(attribute)
    if value is None or not value.strip():
        close = difflib.get_close_matches(attribute, [a for a in element.attrib if a != attribute], n=1, cutoff=0.6)
        hint = f" ({close[0]}=\"{element.attrib[close[0]]}\" is not {attribute})" if close else ""
        raise ModelError(f"<{element.tag}> in {where} (line {element.line}) has no {attribute} "
                         f"attribute{hint}")
    return value.strip()


def _numbers(element, attribute, where, count, default=None):
    """``count`` finite floats of an attribute (``default`` when absent)."""
    value = element.attrib.get(attribute)
    if value is None:
        if default is None:
            _required(element, attribute, where)
        return np.array(default, dtype=float)
    try:
        numbers = np.array([float(x) for x in value.split()], dtype=float)
    except ValueError:
        numbers = None
    if numbers is None or numbers.shape != (count,) or not np.all(np.isfinite(numbers)):
        what = "a finite number" if count == 1 else f"{count} finite numbers"
        raise ModelError(f"<{element.tag} {attribute}=\"{value}\"> in {where} (line {element.line}) "
                         f"must be {what}")
    return numbers


def _number(element, attribute, where, default=None):
    return float(_numbers(element, attribute, where, 1, None if default is None else [default])[0])


def parse_urdf(text, *, strict=True, inertia_check="warn"):
    """:class:`Robot` of URDF XML text; ModelError naming the fault (element, line, link or
    joint). See the module docstring for ``strict``; ``inertia_check`` in :data:`INERTIA_CHECKS`
    says what a rotational inertia that is not positive semi-definite gives."""
    reader = _Reader(strict, inertia_check)
    root = _xml_tree(text)
    if root.tag != "robot":
        raise ModelError(f"malformed URDF: the root element is <{root.tag}>, not <robot>")
    name = root.attrib.get("name") or "robot"
    reader.check(root, f"robot '{name}'")
    links = [_read_link(e, reader) for e in root.children if e.tag == "link"]
    joints = [_read_joint(e, reader) for e in root.children if e.tag == "joint"]
    if not links:
        raise ModelError(f"malformed URDF: robot '{name}' has no <link>")
    for kind, items in (("link", links), ("joint", joints)):
        seen = {}
        for item in items:
            if item.name in seen:
                raise ModelError(f"{kind} '{item.name}' is defined twice (lines {seen[item.name]} "
                                 f"and {item.line})")
            seen[item.name] = item.line
    return Robot(name, links, joints)


def _read_link(element, reader):
    name = _required(element, "name", "a link")
    where = f"link '{name}'"
    reader.check(element, where)
    inertial = _first(element, "inertial")
    return Link(name, None if inertial is None else _read_inertial(inertial, where, reader),
                element.line)


def _read_inertial(element, where, reader):
    """Mass, rotational inertia about the centre of mass and the inertial frame of a link."""
    reader.check(element, where)
    mass_element, inertia_element = _first(element, "mass"), _first(element, "inertia")
    mass = 0.0
    if mass_element is not None:
        reader.check(mass_element, where)
        mass = _number(mass_element, "value", where)
        if mass < 0:
            raise ModelError(f"{where}: negative mass {mass} (line {mass_element.line})")
    inertia = np.zeros((3, 3))
    if inertia_element is not None:
        reader.check(inertia_element, where)
        xx, xy, xz, yy, yz, zz = (_number(inertia_element, k, where)
                                  for k in ("ixx", "ixy", "ixz", "iyy", "iyz", "izz"))
        inertia = np.array([[xx, xy, xz], [xy, yy, yz], [xz, yz, zz]])
        _check_inertia(inertia, where, inertia_element.line, reader)
    origin = _first(element, "origin")
    return Inertial(mass, inertia, None if origin is None else _read_origin(origin, where, reader))


def _check_inertia(inertia, where, line, reader):
    """Principal moments >= 0, as inertia_check says: identified parameter sets are often not
    physically consistent, and Pinocchio computes with them all the same."""
    moments = np.linalg.eigvalsh(inertia)
    if reader.inertia_check == "off" or moments.min() >= -1e-9 * max(1.0, np.abs(moments).max()):
        return
    message = (f"{where}: rotational inertia is not positive semi-definite (principal moments "
               f"{np.round(moments, 12).tolist()} kg m^2, line {line})")
    if reader.inertia_check == "error":
        raise ModelError(message)
    warnings.warn(message + "; the model computes with it as written", HodDynamicsWarning, stacklevel=5)


def _read_origin(element, where, reader):
    reader.check(element, where)
    return Origin(_numbers(element, "xyz", where, 3, [0.0, 0.0, 0.0]),
                  _numbers(element, "rpy", where, 3, [0.0, 0.0, 0.0]))


def _read_joint(element, reader):
    name = _required(element, "name", "a joint")
    where = f"joint '{name}'"
    reader.check(element, where)
    jtype = _required(element, "type", where)
    if jtype not in JOINT_TYPES:
        raise ModelError(f"joint '{name}' has unknown type '{jtype}' (line {element.line})"
                         + _did_you_mean(jtype, JOINT_TYPES, "'{}'"))
    ends = {}
    for end in ("parent", "child"):
        e = _first(element, end)
        if e is None:
            raise ModelError(f"joint '{name}' (line {element.line}) has no <{end}> element")
        reader.check(e, where)
        ends[end] = _required(e, "link", where)
    parts = {tag: _first(element, tag) for tag in ("origin", "axis", "limit", "dynamics", "mimic")}
    read = {"origin": _read_origin, "axis": _read_axis, "limit": _read_limit,
            "dynamics": _read_dynamics, "mimic": _read_mimic}
    values = {tag: None if e is None else read[tag](e, where, reader) for tag, e in parts.items()}
    return Joint(name, jtype, ends["parent"], ends["child"], line=element.line, **values)


def _read_axis(element, where, reader):
    reader.check(element, where)
    return _numbers(element, "xyz", where, 3, [1.0, 0.0, 0.0])


def _read_limit(element, where, reader):
    reader.check(element, where)
    values = {k: (_number(element, k, where) if k in element.attrib else None)
              for k in ("lower", "upper", "effort", "velocity")}
    return Limit(**values)


def _read_dynamics(element, where, reader):
    reader.check(element, where)
    return Dynamics(_number(element, "damping", where, 0.0), _number(element, "friction", where, 0.0))


def _read_mimic(element, where, reader):
    reader.check(element, where)
    return Mimic(_required(element, "joint", where), _number(element, "multiplier", where, 1.0),
                 _number(element, "offset", where, 0.0))


# -- step 3: Robot -> model arguments -------------------------------------------------------------
def _file_label(source):
    """'path' of a file source (None for text), marked when lines refer to a xacro expansion."""
    if isinstance(source, (bytes, bytearray)):
        return None
    path = os.fspath(source) if isinstance(source, (str, os.PathLike)) else None
    if path is None or path.lstrip("\ufeff").lstrip().startswith("<"):
        return None
    return repr(path) + (" (lines of its xacro expansion)" if path.endswith(".xacro") else "")


def _origin(origin):
    """4x4 pose of a URDF <origin> (identity when absent)."""
    if origin is None:
        return np.eye(4)
    return transform(rpy_matrix(origin.rpy), origin.xyz)


def _link_inertia(link):
    """6x6 inertia of a URDF link about its own frame origin, in its frame (zero if massless)."""
    inertial = link.inertial
    if inertial is None:
        return np.zeros((6, 6))
    T = _origin(inertial.origin)
    R, c = T[:3, :3], T[:3, 3]
    return body_inertia(inertial.mass, c, R @ inertial.inertia @ R.T)


def _joint_screw(joint):
    """Unit screw (6,) of a moving URDF joint in its child link frame."""
    axis = np.array(joint.axis if joint.axis is not None else (1.0, 0.0, 0.0), dtype=float)
    norm = np.linalg.norm(axis)
    if not np.isfinite(norm) or norm < 1e-12:
        raise ModelError(f"joint '{joint.name}': axis {axis.tolist()} is zero or not finite "
                         f"(line {joint.line})")
    e = axis / norm
    return np.concatenate([np.zeros(3), e]) if joint.type == "prismatic" else np.concatenate([e, np.zeros(3)])


def _select_links(robot, root_link, tip_links):
    """Root link name and the set of links to keep (None: the whole subtree of the root)."""
    link_names = {link.name for link in robot.links}
    parent_joint = {}
    for j in robot.joints:
        for end in (j.parent, j.child):
            if end not in link_names:
                raise ModelError(f"joint '{j.name}' (line {j.line}) refers to link '{end}', which "
                                 "is not defined")
        if j.child in parent_joint:
            raise ModelError(f"link '{j.child}' is the child of two joints, '{parent_joint[j.child].name}' "
                             f"and '{j.name}' (line {j.line}): a URDF is a tree")
        parent_joint[j.child] = j
    if root_link is None:
        roots = sorted(link_names - set(parent_joint))
        if len(roots) != 1:
            raise ModelError(f"URDF must have exactly one root link, found {roots}")
        root_link = roots[0]
    elif root_link not in link_names:
        raise ModelError(f"unknown root link '{root_link}'; links are {sorted(link_names)}")
    if not tip_links:
        return root_link, None
    if isinstance(tip_links, str):
        tip_links = [tip_links]
    keep = {root_link}
    for tip in tip_links:
        if tip not in link_names:
            raise ModelError(f"unknown tip link '{tip}'; links are {sorted(link_names)}")
        path, link = [], tip
        while link != root_link:
            if link not in parent_joint:
                raise ModelError(f"tip link '{tip}' is not below root link '{root_link}'")
            path.append(link)
            link = parent_joint[link].parent
        keep.update(path)
    return root_link, keep


def _limits(joint):
    """(lower, upper, velocity, effort) of a URDF joint, +-inf where the URDF gives none."""
    lim = joint.limit
    lower, upper = -np.inf, np.inf
    vel = eff = np.inf
    if lim is not None:
        if joint.type != "continuous":
            lower = lim.lower if lim.lower is not None else -np.inf
            upper = lim.upper if lim.upper is not None else np.inf
        vel = lim.velocity if lim.velocity else np.inf
        eff = lim.effort if lim.effort else np.inf
    return lower, upper, vel, eff


def _floating_root(robot, root_link, floating_base):
    """(root link, floating) after the URDF convention for a free base: a massless root link
    (e.g. ``world``) whose only child joint is ``floating`` stands for the world, and that
    joint's child is the free base (the joint's origin is then just a configuration)."""
    if root_link is not None:
        return root_link, floating_base
    roots = sorted({link.name for link in robot.links} - {j.child for j in robot.joints})
    if len(roots) != 1:
        return None, floating_base  # _select_links names the fault
    below = [j for j in robot.joints if j.parent == roots[0]]
    links = {link.name: link for link in robot.links}
    if len(below) == 1 and below[0].type == "floating":
        inertial = links[roots[0]].inertial
        if inertial is not None and float(inertial.mass or 0.0) > 0:
            raise ModelError(f"joint '{below[0].name}' is floating but its parent link "
                             f"'{roots[0]}' has mass: only a massless world link may sit above "
                             "a free base")
        return below[0].child, True
    return None, floating_base


def model_arguments_from_urdf(source, *, root_link=None, tip_links=None, locked_joints=None,
                              gravity=(0.0, 0.0, -9.81), strict=True, inertia_check="warn",
                              xacro_args=None, floating_base=False):
    """Keyword arguments for ``RobotModel(...)`` from a URDF path or text (see from_urdf);
    a ModelError about the content of a file names the file first."""
    text = read_urdf_text(source, xacro_args=xacro_args)
    try:
        robot = parse_urdf(text, strict=strict, inertia_check=inertia_check)
    except ModelError as exc:
        label = _file_label(source)
        if label is None:
            raise
        raise ModelError(f"{label}: {exc}") from None
    root_link, floating = _floating_root(robot, root_link, bool(floating_base))
    root_link, keep = _select_links(robot, root_link, tip_links)
    locked = dict(locked_joints or {})
    joint_by_name = {j.name: j for j in robot.joints}
    unknown = sorted(set(locked) - set(joint_by_name))
    if unknown:
        raise ModelError(f"locked joints {unknown} are not in the URDF; joints are "
                         f"{sorted(joint_by_name)}")
    links = {link.name: link for link in robot.links}
    child_joints = {}
    for j in robot.joints:  # document order, so the DoF order follows the file
        child_joints.setdefault(j.parent, []).append(j)

    names, types, link_names, parents, screws, refs, inertias, limits = ([] for _ in range(8))
    frames = {root_link: (-1, np.eye(4))}
    # a fixed base's own inertia is moot (not even validated); a floating base's is its body's
    base_inertia = _link_inertia(links[root_link]) if floating else None

    def kept_children(link):
        return [j for j in child_joints.get(link, []) if keep is None or j.child in keep]

    stack = list(reversed(kept_children(root_link)))
    while stack:  # depth-first preorder: every parent body gets its index before its children
        j = stack.pop()
        body, T = frames[j.parent]
        if j.type in _NOT_1DOF:
            raise ModelError(f"joint '{j.name}' has type '{j.type}', which is not a 1-DoF "
                             "joint (only 1-DoF joints can be modelled or locked, and a "
                             "floating joint only as the single joint below a massless world "
                             "root link); choose root_link/tip_links that exclude it")
        T = T @ _origin(j.origin)
        if j.type == "fixed" or j.name in locked:
            if j.name in locked:
                value = float(locked[j.name])
                if not np.isfinite(value):
                    raise ModelError(f"locked joint '{j.name}': position {value} is not finite")
                T = T @ screw_exp(_joint_screw(j), value)
            frames[j.child] = (body, T)
        else:
            body = len(names)
            names.append(j.name)
            types.append(j.type)
            link_names.append(j.child)
            parents.append(frames[j.parent][0])
            screws.append(_joint_screw(j))
            refs.append(T)
            inertias.append(np.zeros((6, 6)))
            limits.append(_limits(j))
            T = np.eye(4)
            frames[j.child] = (body, T)
        if body >= 0:  # the link's inertia joins its body, in the body frame
            inertias[body] = inertias[body] + transform_inertia(_link_inertia(links[j.child]), T)
        elif floating:  # rigidly on a floating base (on a fixed base it is moot)
            base_inertia = base_inertia + transform_inertia(_link_inertia(links[j.child]), T)
        stack.extend(reversed(kept_children(j.child)))

    lim = np.array(limits, dtype=float).reshape(-1, 4)
    return dict(
        name=robot.name, joint_names=names, joint_types=types, link_names=link_names,
        parents=np.array(parents, dtype=int), screws=np.array(screws).reshape(-1, 6),
        references=np.array(refs).reshape(-1, 4, 4), inertias=np.array(inertias).reshape(-1, 6, 6),
        gravity=gravity, lower=lim[:, 0], upper=lim[:, 1], velocity_limits=lim[:, 2],
        effort_limits=lim[:, 3], root_link=root_link,
        frames=frames, floating=floating, base_inertia=base_inertia)
