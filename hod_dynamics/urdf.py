"""URDF -> the arguments of :class:`hod_dynamics.model.RobotModel`.

Parsing is urdf_parser_py's; this module only walks the tree: selects the subtree between
``root_link`` and ``tip_links``, merges fixed and locked joints into their parent body (their
inertia added rigidly), and turns every moving joint into a screw ``X_i`` and a reference
configuration ``B_i`` (the joint origin, composed with the merged fixed transforms above it).
The body frame of a moving joint is its child link's URDF frame.
"""

import os
from contextlib import contextmanager

import numpy as np

from .errors import ModelError
from .spatial import body_inertia, rpy_matrix, screw_exp, transform, transform_inertia

_MOVING = {"revolute", "continuous", "prismatic"}
_NOT_1DOF = {"floating", "planar"}


@contextmanager
def _quiet_parser(messages):
    """urdf_parser_py prints warnings (unknown tags) to stderr; collect them instead."""
    from urdf_parser_py.xml_reflection import core

    saved = core.on_error
    core.on_error = messages.append
    try:
        yield
    finally:
        core.on_error = saved


def read_urdf_text(source):
    """URDF XML text from ``source``: a path to a file, or the XML text itself."""
    if isinstance(source, bytes):
        source = source.decode("utf-8")
    if isinstance(source, os.PathLike):
        source = os.fspath(source)
    if not isinstance(source, str):
        raise ModelError(f"URDF source must be a path or XML text, got {type(source).__name__}")
    if source.lstrip().startswith("<"):
        return source
    if not os.path.isfile(source):
        raise ModelError(f"URDF file not found: '{source}' (pass a path to a .urdf file or the "
                         "XML text itself)")
    with open(source, encoding="utf-8") as f:
        return f.read()


# Elements the dynamics never reads. urdf_parser_py is stricter about some of them than
# urdfdom (ROS's C++ parser), e.g. a <texture> without filename or a ros_control
# <transmission>, so real robot descriptions (PR2, iCub) would fail on what does not matter.
_UNUSED = {"robot": ("material", "transmission", "gazebo"), "link": ("visual", "collision")}


def _dynamics_only(text):
    """The URDF text without visual/collision/material/transmission/gazebo elements."""
    import xml.etree.ElementTree as ET

    try:
        root = ET.fromstring(text.encode("utf-8") if text.lstrip().startswith("<?xml") else text)
    except ET.ParseError as exc:
        raise ModelError(f"malformed URDF (line {exc.position[0]}, column {exc.position[1]}): {exc}") from None
    if root.tag != "robot":
        raise ModelError(f"malformed URDF: the root element is <{root.tag}>, not <robot>")
    for element in [root] + root.findall("link"):
        for child in [c for c in element if c.tag in _UNUSED.get(element.tag, ())]:
            element.remove(child)
    return ET.tostring(root, encoding="unicode")


def parse_urdf(text):
    """Parse URDF XML text with urdf_parser_py; ModelError naming the fault on malformed input."""
    from urdf_parser_py.urdf import URDF

    messages = []
    try:
        with _quiet_parser(messages):
            robot = URDF.from_xml_string(_dynamics_only(text))
    except ModelError:
        raise
    except Exception as exc:  # the parser raises bare Exception, AssertionError, ParseError...
        raise ModelError(f"malformed URDF: {exc}") from exc
    if robot is None or not robot.links:
        raise ModelError("malformed URDF: no <robot> element with links found")
    return robot


def _origin(origin):
    """4x4 pose of a URDF <origin> (identity when absent)."""
    if origin is None:
        return np.eye(4)
    xyz = origin.xyz if origin.xyz is not None else (0.0, 0.0, 0.0)
    rpy = origin.rpy if origin.rpy is not None else (0.0, 0.0, 0.0)
    return transform(rpy_matrix(rpy), np.asarray(xyz, dtype=float))


def _link_inertia(link):
    """6x6 inertia of a URDF link about its own frame origin, in its frame (zero if massless)."""
    inertial = link.inertial
    if inertial is None:
        return np.zeros((6, 6))
    mass = float(inertial.mass or 0.0)
    if mass < 0:
        raise ModelError(f"link '{link.name}': negative mass {mass}")
    i = inertial.inertia
    I = np.zeros((3, 3)) if i is None else np.array(
        [[i.ixx, i.ixy, i.ixz], [i.ixy, i.iyy, i.iyz], [i.ixz, i.iyz, i.izz]], dtype=float)
    ev = np.linalg.eigvalsh(I)
    if not np.all(np.isfinite(I)) or ev.min() < -1e-9 * max(1.0, abs(ev).max()):
        raise ModelError(f"link '{link.name}': inertia is not positive semi-definite "
                         f"(principal moments {np.round(ev, 12).tolist()})")
    T = _origin(inertial.origin)
    R, c = T[:3, :3], T[:3, 3]
    return body_inertia(mass, c, R @ I @ R.T)


def _joint_screw(joint):
    """Unit screw (6,) of a moving URDF joint in its child link frame."""
    axis = np.array(joint.axis if joint.axis is not None else (1.0, 0.0, 0.0), dtype=float)
    norm = np.linalg.norm(axis)
    if not np.isfinite(norm) or norm < 1e-12:
        raise ModelError(f"joint '{joint.name}': axis {axis.tolist()} is zero or not finite")
    e = axis / norm
    return np.concatenate([np.zeros(3), e]) if joint.type == "prismatic" else np.concatenate([e, np.zeros(3)])


def _select_links(robot, root_link, tip_links):
    """Root link name and the set of links to keep (None: the whole subtree of the root)."""
    link_names = {link.name for link in robot.links}
    parent_joint = {j.child: j for j in robot.joints}
    for j in robot.joints:
        for end in (j.parent, j.child):
            if end not in link_names:
                raise ModelError(f"joint '{j.name}' refers to link '{end}', which is not defined")
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
            lower = float(lim.lower) if lim.lower is not None else -np.inf
            upper = float(lim.upper) if lim.upper is not None else np.inf
        vel = float(lim.velocity) if lim.velocity else np.inf
        eff = float(lim.effort) if lim.effort else np.inf
    return lower, upper, vel, eff


def joint_dynamics(joint):
    """(damping, friction) of a URDF joint's ``<dynamics>`` tag, 0 for a value or a tag not given.
    Negative values raise ModelError (they would feed energy into the joint)."""
    dyn = getattr(joint, "dynamics", None)
    values = []
    for key in ("damping", "friction"):
        v = 0.0 if dyn is None or getattr(dyn, key, None) is None else float(getattr(dyn, key))
        if not np.isfinite(v) or v < 0:
            raise ModelError(f"joint '{joint.name}': <dynamics {key}=\"{getattr(dyn, key)}\"> must be a finite "
                             "number >= 0")
        values.append(v)
    return tuple(values)


def model_arguments_from_urdf(source, *, root_link=None, tip_links=None, locked_joints=None,
                              gravity=(0.0, 0.0, -9.81)):
    """Keyword arguments for ``RobotModel(...)`` from a URDF path or text (see from_urdf)."""
    robot = parse_urdf(read_urdf_text(source))
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

    names, types, link_names, parents, screws, refs, inertias, limits, dynamics = ([] for _ in range(9))
    frames = {root_link: (-1, np.eye(4))}

    def kept_children(link):
        return [j for j in child_joints.get(link, []) if keep is None or j.child in keep]

    stack = list(reversed(kept_children(root_link)))
    while stack:  # depth-first preorder: every parent body gets its index before its children
        j = stack.pop()
        body, T = frames[j.parent]
        if j.type in _NOT_1DOF:
            raise ModelError(f"joint '{j.name}' has type '{j.type}', which is not a 1-DoF "
                             "joint (only 1-DoF joints can be modelled or locked); choose "
                             "root_link/tip_links that exclude it")
        if j.type not in _MOVING and j.type != "fixed":
            raise ModelError(f"joint '{j.name}' has unknown type '{j.type}'")
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
        if body >= 0:  # the link's inertia joins its body, in the body frame; the base's is moot
            inertias[body] = inertias[body] + transform_inertia(_link_inertia(links[j.child]), T)
        stack.extend(reversed(kept_children(j.child)))

    lim = np.array(limits, dtype=float).reshape(-1, 4)
    return dict(
        name=robot.name or "robot", joint_names=names, joint_types=types, link_names=link_names,
        parents=np.array(parents, dtype=int), screws=np.array(screws).reshape(-1, 6),
        references=np.array(refs).reshape(-1, 4, 4), inertias=np.array(inertias).reshape(-1, 6, 6),
        gravity=gravity, lower=lim[:, 0], upper=lim[:, 1], velocity_limits=lim[:, 2],
        effort_limits=lim[:, 3], root_link=root_link,
        frames=frames, damping=np.array(dynamics, dtype=float).reshape(-1, 2)[:, 0],
        friction=np.array(dynamics, dtype=float).reshape(-1, 2)[:, 1])
