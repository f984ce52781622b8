"""URDF (or xacro) -> the arguments of :class:`hod_dynamics.model.RobotModel`.

Data flows through three steps:

1. :func:`read_urdf_text`: a file path, XML text or bytes -> URDF text. A byte-order mark and
   whitespace before ``<?xml`` are accepted; a ``.xacro`` file (or text using ``<xacro:...>``)
   is expanded with the ``xacro`` package, ``$(find pkg)`` resolving through the ament index.
2. :func:`parse_urdf`: URDF text -> urdf_parser_py's ``Robot`` (links and joints with the line
   of their element). expat reads the XML (it keeps line numbers; a default XML namespace on
   ``<robot>`` is accepted, as urdfdom, ROS's C++ parser, does), and
   :func:`hod_dynamics.model.urdf_schema.validate` checks it against the table of URDF elements and
   attributes: a likely misspelling of a URDF name is a :class:`ModelError` (``strict=False``:
   a :class:`HodDynamicsWarning`), any other unknown name an extension reported in one warning
   per name, a missing or malformed required value a ModelError with its line (see that
   module for the rule and what ``strict=False`` reads past). The content of ``<visual>``,
   ``<collision>``, ``<material>``, ``<gazebo>``, ``<transmission>``, ``<sensor>`` and
   ``<ros2_control>`` is never checked. The validated elements are then handed to
   urdf_parser_py, which reads the values (its own warnings collected, never printed); mass and
   inertia are checked on its values, with the lines found here.
3. :func:`model_arguments_from_urdf`: checks that the joints form one tree (a link that is the
   child of two joints, a loop, or several trees without ``root_link`` is a ModelError naming
   links, joints and lines), selects the subtree between ``root_link`` and ``tip_links``, merges fixed and locked joints into their parent body (their inertia added
   rigidly), and turns every moving joint into a screw ``X_i`` and a reference configuration
   ``B_i`` (the joint origin, composed with the merged fixed transforms above it). The body
   frame of a moving joint is its child link's URDF frame.

Longer than 500 lines: the steps from a description's text to the model's arguments share the
line numbers that every error names; the table of what each element may hold is in
:mod:`hod_dynamics.model.urdf_schema`.
"""

import os
import re
import warnings
import xml.etree.ElementTree as ET
import xml.parsers.expat as expat
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Dict

import numpy as np

from ..errors import HodDynamicsWarning, ModelError
from .spatial import body_inertia, rpy_matrix, screw_exp, transform, transform_inertia
from .urdf_schema import Reader, SCHEMA, first, validate

_MOVING = {"revolute", "continuous", "prismatic"}
_NOT_1DOF = {"floating", "planar"}
INERTIA_CHECKS = ("error", "warn", "off")
MAX_URDF_BYTES = 32 * 2**20     # a description larger than this is refused before it is read: the
                                # largest of 1613 public robot files is 0.17 MB (meshes live in files
                                # of their own), and parsing takes about 35 s a GB


def checked_inertia_mode(inertia_check):
    """``inertia_check`` if it is one of :data:`INERTIA_CHECKS`, else ModelError."""
    if inertia_check not in INERTIA_CHECKS:
        raise ModelError(f"inertia_check must be one of {INERTIA_CHECKS}, got {inertia_check!r}")
    return inertia_check


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
        _check_size(len(text), "the URDF text")
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
    _check_size(os.path.getsize(path), f"URDF file '{path}'")
    if path.endswith(".xacro") or xacro_args:
        return expand_xacro(path, xacro_args, f"'{path}'", is_file=True)
    with open(path, "rb") as f:
        text = _decode(f.read(), f"'{path}'")
    if "<xacro:" in text:
        return expand_xacro(path, xacro_args, f"'{path}'", is_file=True)
    return text


def _check_size(size, what):
    """ModelError for a description of more than MAX_URDF_BYTES (``size`` bytes or characters)."""
    if size > MAX_URDF_BYTES:
        raise ModelError(f"{what} is {size / 2**20:,.0f} MB; a robot description is refused above "
                         f"{MAX_URDF_BYTES // 2**20} MB (the largest public ones are under 1 MB: meshes and data "
                         "belong in files of their own)")


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
                         "(pip install xacro, the xacro extra of this package; on a ROS 2 "
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


# -- step 2: text -> validated XML -> urdf_parser_py's Robot --------------------------------
@dataclass
class _Element:
    tag: str
    attrib: Dict[str, str]
    line: int
    children: list = field(default_factory=list)


def _xml_tree(text):
    """Root :class:`_Element` of XML text, with 1-based line numbers of the text as given."""
    # NUL bytes after the document (a C program's terminator written to the file; PyBullet's
    # humanoid.urdf ends so) are not XML, but no URDF reader minds them
    body = text.lstrip("\ufeff").rstrip("\x00")
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


def _for_urdf_parser_py(element):
    """xml.etree element of what urdf_parser_py reads for the dynamics: the elements and
    attributes of :data:`_SCHEMA` (namespace declarations, extensions and what strict=False let
    through left out). Left out on purpose, for urdf_parser_py is stricter there than urdfdom
    and the dynamics never reads them: ``<visual>``, ``<collision>``, ``<material>`` (it
    refuses a ``<texture>`` without filename, a ``<capsule>``, ...), ``<transmission>``,
    ``<gazebo>``, ``<calibration>``, ``<safety_controller>``."""
    attributes, children = SCHEMA[element.tag]
    node = ET.Element(element.tag, {k: v for k, v in element.attrib.items() if k in attributes})
    for child in element.children:
        if child.tag in children and child.tag in SCHEMA:
            node.append(_for_urdf_parser_py(child))
    return node


@contextmanager
def _captured_parser_messages(messages):
    """urdf_parser_py prints its warnings (unknown tags, repeated elements) to stderr: collect
    them instead (the validation pass has named every one that matters)."""
    from urdf_parser_py.xml_reflection import core

    saved = core.on_error
    core.on_error = messages.append
    try:
        yield
    finally:
        core.on_error = saved


def parse_urdf(text, *, strict=True, inertia_check="warn"):
    """urdf_parser_py's ``Robot`` of URDF XML text, each link and joint with the ``line`` of its
    element; ModelError naming the fault (element, line, link or joint). See the module
    docstring for ``strict``; ``inertia_check`` in :data:`INERTIA_CHECKS` says what a
    rotational inertia that is not positive semi-definite gives."""
    from urdf_parser_py.urdf import URDF

    reader = Reader(strict, checked_inertia_mode(inertia_check))
    root = _xml_tree(text)
    links, joints = validate(root, reader)
    reader.report_extensions()
    messages = []
    try:
        with _captured_parser_messages(messages):
            robot = URDF.from_xml_string(ET.tostring(_for_urdf_parser_py(root), encoding="unicode"))
    except Exception as exc:  # urdf_parser_py raises bare Exception, AssertionError, ParseError...
        raise ModelError(f"malformed URDF: {exc}") from None
    for link in robot.links:
        element = links[link.name]
        link.line = element.line
        if link.inertial is not None:
            _check_inertial(link.inertial, first(element, "inertial"), f"link '{link.name}'", reader)
    for joint in robot.joints:
        element = joints[joint.name]
        joint.line = element.line
        if joint.limit is not None:  # urdf_parser_py gives 0 for an absent bound; we keep it open
            given = first(element, "limit").attrib
            joint.limit.lower = joint.limit.lower if "lower" in given else None
            joint.limit.upper = joint.limit.upper if "upper" in given else None
            _check_limit_order(joint)
    return robot


def _check_limit_order(joint):
    """A HodDynamicsWarning for a joint whose <limit> lower is above its upper: no position
    satisfies both (often the two swapped). The dynamics does not read them; what plans within
    them (``excite``) refuses the joint."""
    lim = joint.limit
    if joint.type == "continuous" or lim.lower is None or lim.upper is None or not lim.lower > lim.upper:
        return
    warnings.warn(f"joint '{joint.name}' (line {joint.line}): <limit lower=\"{lim.lower:g}\" upper=\"{lim.upper:g}\"> "
                  "has lower above upper (swapped?): no position is within them; the dynamics does not use them, "
                  "excite refuses them", HodDynamicsWarning, stacklevel=5)


def _check_inertial(inertial, element, where, reader):
    """Mass >= 0 (ModelError) and principal moments >= 0, as ``inertia_check`` says:
    identified parameter sets are often not physically consistent, and Pinocchio computes
    with them all the same."""
    mass_line = first(element, "mass").line
    if inertial.mass < 0:
        raise ModelError(f"{where}: negative mass {inertial.mass} (line {mass_line})")
    if inertial.inertia is None or reader.inertia_check == "off":
        return
    moments = np.linalg.eigvalsh(np.array(inertial.inertia.to_matrix(), dtype=float))
    if moments.min() >= -1e-9 * max(1.0, np.abs(moments).max()):
        return
    line = first(element, "inertia").line
    message = (f"{where}: rotational inertia is not positive semi-definite (principal moments "
               f"{np.round(moments, 12).tolist()} kg m^2, line {line})")
    if reader.inertia_check == "error":
        raise ModelError(message)
    warnings.warn(message + "; the model computes with it as written", HodDynamicsWarning, stacklevel=5)


# -- step 3: urdf_parser_py's Robot -> model arguments -----------------------------------------
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
    return transform(rpy_matrix(np.asarray(origin.rpy, dtype=float)), np.asarray(origin.xyz, dtype=float))


def _link_inertia(link):
    """6x6 inertia of a URDF link about its own frame origin, in its frame (zero if massless)."""
    inertial = link.inertial
    if inertial is None:
        return np.zeros((6, 6))
    T = _origin(inertial.origin)
    R, c = T[:3, :3], T[:3, 3]
    inertia = np.zeros((3, 3)) if inertial.inertia is None else np.array(inertial.inertia.to_matrix(), dtype=float)
    return body_inertia(float(inertial.mass), c, R @ inertia @ R.T)


def _joint_screw(joint):
    """Unit screw (6,) of a moving URDF joint in its child link frame."""
    axis = np.array(joint.axis if joint.axis is not None else (1.0, 0.0, 0.0), dtype=float)
    norm = np.linalg.norm(axis)
    if not np.isfinite(norm) or norm < 1e-12:
        raise ModelError(f"joint '{joint.name}': axis {axis.tolist()} is zero or not finite "
                         f"(line {joint.line})")
    e = axis / norm
    return np.concatenate([np.zeros(3), e]) if joint.type == "prismatic" else np.concatenate([e, np.zeros(3)])


# -- the link graph: one tree, or a clear error -------------------------------------------------
def _link_tree(robot):
    """(parent joint of each link that has one, root links in document order) of a description
    whose joints form trees; ModelError naming links, joints and lines for a joint that refers
    to an undefined link, a link that is the child of two joints, or a loop."""
    links = {link.name: link for link in robot.links}
    parent_joint = {}
    for j in robot.joints:
        for end in (j.parent, j.child):
            if end not in links:
                raise ModelError(f"joint '{j.name}' (line {j.line}) refers to link '{end}', which "
                                 "is not defined")
        if j.child in parent_joint:
            other = parent_joint[j.child]
            raise ModelError(f"link '{j.child}' (line {links[j.child].line}) is the child of two "
                             f"joints, '{other.name}' (line {other.line}) and '{j.name}' (line "
                             f"{j.line}): in a URDF each link has one parent joint at most")
        parent_joint[j.child] = j
    _refuse_loops(parent_joint, {name: i for i, name in enumerate(links)})
    return parent_joint, [link.name for link in robot.links if link.name not in parent_joint]


def _refuse_loops(parent_joint, order):
    """ModelError naming the joints (with lines) and links of a loop, if the parent joints of
    the links form one (a joint whose <child> is a link above it); the loop is told from the
    link written first (``order``: link -> index in the document)."""
    done = set()
    for start in parent_joint:
        path, link = [], start
        while link in parent_joint and link not in done:
            if link in path:
                loop = path[path.index(link):][::-1]  # parent to child
                first = min(range(len(loop)), key=lambda i: order[loop[i]])
                loop = loop[first:] + loop[:first]
                joints = ", ".join(f"'{parent_joint[l].name}' (line {parent_joint[l].line})" for l in loop[1:] + loop[:1])
                chain = " -> ".join(f"'{l}'" for l in loop + loop[:1])
                raise ModelError(f"joints {joints} form a loop: links {chain}; a URDF is a tree "
                                 "(one of these joints has the wrong <parent> or <child>)")
            path.append(link)
            link = parent_joint[link].parent
        done.update(path)


def _tree_size(root, robot):
    """Number of links in the tree of ``root``."""
    below = {}
    for j in robot.joints:
        below.setdefault(j.parent, []).append(j.child)
    count, stack = 0, [root]
    while stack:
        link = stack.pop()
        count += 1
        stack.extend(below.get(link, ()))
    return count


def _chosen_root(robot, roots, root_link):
    """``root_link`` (checked), or the root of the one tree the description holds. Several
    trees: ModelError naming their root links (line, size) and how to choose one. A link named
    ``world`` with no joint is not a tree of its own."""
    links = {link.name: link for link in robot.links}
    if root_link is not None:
        if root_link not in links:
            raise ModelError(f"unknown root link '{root_link}'; links are {sorted(links)}")
        return root_link
    attached = {j.parent for j in robot.joints} | {j.child for j in robot.joints}
    trees = [r for r in roots if r != "world" or r in attached] or roots
    if len(trees) == 1:
        return trees[0]
    sizes = {r: _tree_size(r, robot) for r in trees[:6]}
    shown = ", ".join(f"'{r}' (line {links[r].line}, {n} link{'s' if n != 1 else ''})" for r, n in sizes.items())
    more = f" and {len(trees) - 6} more" if len(trees) > 6 else ""
    raise ModelError(f"the description holds {len(trees)} separate trees, with root links {shown}{more}: "
                     f"choose one with root_link (--root on the command line), or join them with joints")


def _kept_links(robot, parent_joint, root_link, tip_links):
    """The set of links to keep (None: the whole subtree of ``root_link``)."""
    if not tip_links:
        return None
    link_names = {link.name for link in robot.links}
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
    return keep


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


def joint_dynamics(joint):
    """(damping, friction) of a URDF joint's ``<dynamics>`` tag as written, 0 for a value or a
    tag not given (negative values included: the reading warned about them)."""
    dyn = getattr(joint, "dynamics", None)
    return tuple(0.0 if dyn is None or getattr(dyn, key, None) is None else float(getattr(dyn, key))
                 for key in ("damping", "friction"))


def _floating_root(robot, root_link, floating_base):
    """(root link, floating) after the URDF convention for a free base: a massless root link
    (e.g. ``world``) whose only child joint is ``floating`` stands for the world, and that
    joint's child is the free base (the joint's origin is then just a configuration)."""
    below = [j for j in robot.joints if j.parent == root_link]
    if len(below) != 1 or below[0].type != "floating":
        return root_link, floating_base
    inertial = next(link for link in robot.links if link.name == root_link).inertial
    if inertial is not None and float(inertial.mass or 0.0) > 0:
        raise ModelError(f"joint '{below[0].name}' is floating but its parent link "
                         f"'{root_link}' has mass: only a massless world link may sit above "
                         "a free base")
    return below[0].child, True


def model_arguments_from_urdf(source, *, root_link=None, tip_links=None, locked_joints=None,
                              gravity=(0.0, 0.0, -9.81), strict=True, inertia_check="warn",
                              xacro_args=None, floating_base=False):
    """Keyword arguments for ``RobotModel(...)`` from a URDF path or text (see from_urdf);
    a ModelError about the content of a file names the file first."""
    text = read_urdf_text(source, xacro_args=xacro_args)
    try:
        robot = parse_urdf(text, strict=strict, inertia_check=inertia_check)
        parent_joint, roots = _link_tree(robot)
        chosen = _chosen_root(robot, roots, root_link)
    except ModelError as exc:
        label = _file_label(source)
        if label is None:
            raise
        raise ModelError(f"{label}: {exc}") from None
    if root_link is None:
        root_link, floating = _floating_root(robot, chosen, bool(floating_base))
    else:
        floating = bool(floating_base)
    keep = _kept_links(robot, parent_joint, root_link, tip_links)
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

    names, types, link_names, parents, screws, refs, inertias, limits, dynamics = ([] for _ in range(9))
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
            dynamics.append(joint_dynamics(j))
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
        frames=frames, damping=np.array(dynamics, dtype=float).reshape(-1, 2)[:, 0],
        friction=np.array(dynamics, dtype=float).reshape(-1, 2)[:, 1], floating=floating, base_inertia=base_inertia,
        joint_lines={name: joint_by_name[name].line for name in names})
