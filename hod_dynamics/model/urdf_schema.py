"""What a URDF may hold, and how an unknown name is judged: a misspelling or an extension.

The table :data:`SCHEMA` lists, for each URDF element the dynamics reads, its attributes
(required?, how many numbers) and the child elements the URDF specification allows in it (with
ROS 2's ``<ros2_control>``). :func:`validate` walks the elements of that table (expat elements
with their line) and sorts every other name it meets:

- **A likely misspelling** of a URDF name valid at that place is a fault of the file: a misspelled
  ``<axis>`` or ``<inertial>`` would silently change the model. It is a :class:`ModelError`
  naming the element, its line, its link or joint and the suggestion (``strict=False``: a
  :class:`HodDynamicsWarning`, and the name is read past). The rule (:func:`misspelling_of`):
  after case folding, the optimal-string-alignment distance (insertions, deletions, substitutions
  and transpositions of adjacent letters) to a URDF name valid there is at most 1, or at most 2
  when that name has 6 letters or more. The names valid at a place are its elements and
  attributes, each also in the other form (``<origin><rpy/></origin>``, ``<joint axis="...">``
  are the attribute and the element written in the wrong form); an attribute the element already
  has, or a single element it already holds, is no candidate (``<limit velocity k_velocity>``); a
  name in a namespace (``drake:``) is an extension by its form.
  Chosen on data: in 1613 distinct robot files of 35 public repositories (robot descriptions,
  simulators, parsers) the rule takes none of the 53 names that are not URDF for a misspelling,
  and it catches every single insertion, deletion, substitution, transposition and case slip
  of every URDF name (16,824 generated misspellings, 99 % with that very name suggested first or
  second), every two-edit misspelling of the names of 6 letters or more, and 48 % of the
  two-edit misspellings of all names.
- **Anything else is an extension** (vendor elements such as Unitree's ``<mujoco>``, Drake's
  ``<collision_filter_group>`` and ``<loop_joint>``, PyBullet's ``<joint_properties>``, an
  attribute such as Hello Robot's ``spring_reference``, a URDF element where no URDF reader looks
  for it): read past, as urdfdom and Pinocchio do, and reported in one
  :class:`URDFExtensionWarning` (a HodDynamicsWarning) per name (:meth:`Reader.report_extensions`), with where it occurs.

Values: a required attribute that is missing or a value that is not a number is a ModelError with
its line, except where the model does not need the value (``<limit>`` bounds, effort and
velocity, ``<dynamics>`` damping and friction, ``<mimic>``): there ``strict=False`` reads past it
with a warning (a bound left open, a coefficient 0). ``<dynamics>`` values that are negative
(identification output can have them) give a warning naming the joint and the line; only a friction
model built from them (``friction="urdf"``) refuses them.
"""

import warnings

import numpy as np

from ..errors import HodDynamicsWarning, ModelError, URDFExtensionWarning

JOINT_TYPES = ("revolute", "continuous", "prismatic", "fixed", "floating", "planar")

# The validation table: for each URDF element the dynamics reads, its attributes (required?, how
# many numbers: 0 = text, 1 = a number, 3 = three numbers) and the child elements URDF allows in
# it, as urdfdom (ROS's C++ parser) reads them. The children that are themselves in the table are
# checked in turn; <visual>, <collision>, <material>, <transmission>, <gazebo>, <sensor>,
# <ros2_control>, <calibration> and <safety_controller> are URDF the dynamics never reads.
_INERTIA_KEYS = ("ixx", "ixy", "ixz", "iyy", "iyz", "izz")
SCHEMA = {
    "robot": ({"name": (True, 0), "version": (False, 0)},
              {"link", "joint", "material", "transmission", "gazebo", "sensor", "ros2_control"}),
    "link": ({"name": (True, 0)}, {"inertial", "visual", "collision"}),
    "inertial": ({}, {"origin", "mass", "inertia"}),
    "mass": ({"value": (True, 1)}, set()),
    "inertia": ({k: (True, 1) for k in _INERTIA_KEYS}, set()),
    "origin": ({"xyz": (False, 3), "rpy": (False, 3)}, set()),
    "joint": ({"name": (True, 0), "type": (True, 0)},
              {"origin", "parent", "child", "axis", "limit", "dynamics", "mimic", "calibration",
               "safety_controller"}),
    "parent": ({"link": (True, 0)}, set()),
    "child": ({"link": (True, 0)}, set()),
    "axis": ({"xyz": (True, 3)}, set()),  # the URDF specification requires it in an <axis>
    # urdfdom (and urdf_parser_py) refuse a <limit> without effort or velocity
    "limit": ({"lower": (False, 1), "upper": (False, 1), "effort": (True, 1), "velocity": (True, 1)}, set()),
    "dynamics": ({"damping": (False, 1), "friction": (False, 1)}, set()),
    "mimic": ({"joint": (True, 0), "multiplier": (False, 1), "offset": (False, 1)}, set()),
}
# Child elements without which an element means nothing (urdfdom refuses it too).
_REQUIRED_CHILDREN = {"joint": ("parent", "child"), "inertial": ("mass",)}
# Elements a parent may hold several of (the others: URDF readers take the first).
_REPEATABLE = {"link", "joint", "material", "transmission", "gazebo", "sensor", "ros2_control",
               "visual", "collision"}
# Values the model does not need: strict=False reads past a missing or malformed one with a
# warning, using the replacement given here (None: as if not written).
_NOT_NEEDED = {("limit", "lower"): None, ("limit", "upper"): None, ("limit", "effort"): "inf",
               ("limit", "velocity"): "inf", ("dynamics", "damping"): None,
               ("dynamics", "friction"): None, ("mimic", "multiplier"): None,
               ("mimic", "offset"): None, ("mimic", "joint"): None}
_URDF_ELEMENTS = set(SCHEMA).union(*(children for _, children in SCHEMA.values()))
# Namespace declarations are XML, not extensions.
_XML_ATTRIBUTES = ("xmlns", "xmlns:", "xsi:")

# Who writes the extensions met in public robot descriptions (shown with their warning).
_WHO = {
    "mujoco": "MuJoCo compiler options, as Unitree's descriptions carry them",
    "collision_filter_group": "Drake's collision filter groups",
    "loop_joint": "Drake's joint closing a kinematic loop: the model is the tree without it, "
                  "as Pinocchio's and urdfdom's are",
    "joint_properties": "PyBullet's joint damping and friction",
    "frame": "Drake's named frames",
    "force_element": "Drake's force elements",
    "contact": "PyBullet's contact parameters",
    "self_collision_checking": "iiwa_stack's self-collision shapes",
    "collision_checking": "collision shapes for Pinocchio's collision checking",
    "self_filter": "ANYbotics' self-filter shapes",
    "kinematic": "a Gazebo property written in the link",
    "gravity": "a Gazebo property written in the link",
    "surface": "a Gazebo property written in the link",
    "spring_reference": "Gazebo's joint spring (SDFormat)",
    "spring_stiffness": "Gazebo's joint spring (SDFormat)",
    "dont_collapse": "Gazebo's option to keep a fixed joint (Unitree)",
    "D": "franka_description's joint model", "K": "franka_description's joint model",
    "mu_coulomb": "franka_description's joint friction", "mu_viscous": "franka_description's joint friction",
    "armature": "rotor inertia for MuJoCo",
    "command_effort": "ANYbotics' actuator limits", "current": "ANYbotics' actuator limits",
    "gear_velocity": "ANYbotics' actuator limits",
}


# -- the misspelling rule ------------------------------------------------------------------------
def _osa_distance(a, b):
    """Optimal string alignment distance: insertions, deletions, substitutions and
    transpositions of adjacent letters, each 1."""
    previous2, previous = None, list(range(len(b) + 1))
    for i in range(1, len(a) + 1):
        row = [i] + [0] * len(b)
        for j in range(1, len(b) + 1):
            row[j] = min(previous[j] + 1, row[j - 1] + 1, previous[j - 1] + (a[i - 1] != b[j - 1]))
            if i > 1 and j > 1 and a[i - 1] == b[j - 2] and a[i - 2] == b[j - 1]:
                row[j] = min(row[j], previous2[j - 2] + 1)
        previous2, previous = previous, row
    return previous[-1]


def misspelling_of(name, candidates):
    """The names of ``candidates`` that ``name`` is a likely misspelling of, closest first
    (empty: not a misspelling). Case is ignored; the distance (:func:`_osa_distance`) may be
    1, or 2 for a candidate of 6 letters or more."""
    folded = name.lower()
    scored = []
    for candidate in candidates:
        d = _osa_distance(folded, candidate.lower())
        if d <= (2 if len(candidate) >= 6 else 1):
            scored.append((d, candidate))
    return [c for _, c in sorted(scored)]


# -- the reading context -------------------------------------------------------------------------
class Reader:
    """The reading context: strictness, the extensions met, message helpers."""

    def __init__(self, strict, inertia_check):
        self.strict, self.inertia_check = bool(strict), inertia_check
        self.extensions = {}  # (form, place, name) -> [(where, line), ...] in document order

    def problem(self, message):
        """A fault of the file that strict reading refuses (a misspelling, a value the model
        does not need): a ModelError when strict, else a warning."""
        if self.strict:
            raise ModelError(message + " (strict=False, or --lenient, reads past it with a warning)")
        warnings.warn(message, HodDynamicsWarning, stacklevel=2)

    def extension(self, form, place, name, where, line):
        self.extensions.setdefault((form, place, name), []).append((where, line))

    def report_extensions(self):
        """One HodDynamicsWarning per extension name: where it occurs (the first three places),
        and who writes it when known."""
        for (form, place, name), seen in self.extensions.items():
            lines = {}
            for where, line in seen:
                lines.setdefault(where, []).append(line)
            shown = ", ".join(f"{where} ({_lines(found)})" for where, found in list(lines.items())[:3])
            if len(lines) > 3:
                shown += f" and {len(lines) - 3} more"
            what = f"<{name}>" if form == "element" else f"attribute {name} of <{place}>"
            if form == "element" and name in _URDF_ELEMENTS:
                note = f"a URDF element, but not one <{place}> holds: read past, as urdfdom does"
            else:
                who = _WHO.get(name) or (f"namespace {name.split(':')[0]}:" if ":" in name else None)
                note = "not URDF: read past, as urdfdom and Pinocchio do" + (f" ({who})" if who else "")
            warnings.warn(f"{what} in {shown} is {note}", URDFExtensionWarning, stacklevel=4)


def _lines(found):
    """'line 9', 'lines 29, 32', 'lines 481, 507, 519 and 6 more'."""
    if len(found) == 1:
        return f"line {found[0]}"
    more = f" and {len(found) - 3} more" if len(found) > 3 else ""
    return "lines " + ", ".join(map(str, found[:3])) + more


def _suggestion(candidate, form, attributes):
    """How a suggestion reads: in the form of the unknown name, or saying the other form."""
    if candidate in attributes:
        return f"'{candidate}'" if form == "attribute" else f"the attribute {candidate}=\"...\""
    return f"<{candidate}>" if form == "element" else f"a child element <{candidate}>"


def _judge(reader, form, element, name, where, line, given):
    """An unknown ``name`` (form "element" or "attribute") in ``element``: a misspelling (an
    error, or a warning when not strict) or an extension (recorded)."""
    attributes, children = SCHEMA[element.tag]
    same, other = (children, attributes) if form == "element" else (attributes, children)
    candidates = [c for c in same if c not in given] + [c for c in other if c not in given]
    close = [] if ":" in name else misspelling_of(name, candidates)  # a namespace marks an extension
    if not close:
        reader.extension(form, element.tag, name, where, line)
        return
    suggestions = " or ".join(_suggestion(c, form, attributes) for c in close[:2])
    value = f"=\"{element.attrib[name]}\"" if form == "attribute" else ""
    shown = f"<{name}>" if form == "element" else f"{name}{value} of <{element.tag}>"
    reader.problem(f"unknown {form} {shown} in {where} (line {line}); did you mean {suggestions}?")


def _check_attribute(element, attribute, required, count, where, reader):
    """A missing required attribute or a value that is not ``count`` finite numbers (``count``
    0: any text): a ModelError naming element, line and ``where``, or (a value the model does
    not need, strict=False) a warning and the replacement of :data:`_NOT_NEEDED`."""
    value = element.attrib.get(attribute)
    if value is None or not value.strip():
        if not required:
            return
        close = misspelling_of(attribute, [a for a in element.attrib if a != attribute])
        hint = f" ({close[0]}=\"{element.attrib[close[0]]}\" is not {attribute})" if close else ""
        fault = (f"<{element.tag}> in {where} (line {element.line}) has no {attribute} "
                 f"attribute{hint}")
    elif count == 0:
        return
    else:
        try:
            numbers = [float(x) for x in value.split()]
        except ValueError:
            numbers = None
        if numbers is not None and len(numbers) == count and np.all(np.isfinite(numbers)):
            return
        what = "a finite number" if count == 1 else f"{count} finite numbers"
        fault = (f"<{element.tag} {attribute}=\"{value}\"> in {where} (line {element.line}) "
                 f"must be {what}")
    key = (element.tag, attribute)
    if key not in _NOT_NEEDED:
        raise ModelError(fault)
    reader.problem(fault)
    replacement = _NOT_NEEDED[key]
    if replacement is None:
        element.attrib.pop(attribute, None)
    else:
        element.attrib[attribute] = replacement


def _negative_dynamics(element, where):
    """Negative <dynamics> damping or friction (identification output can have them): a
    warning naming joint and line; the model keeps the values (friction="urdf" refuses them)."""
    for key in ("damping", "friction"):
        value = element.attrib.get(key)
        if value is not None and float(value) < 0:
            warnings.warn(f"{where} (line {element.line}): <dynamics {key}=\"{value}\"> is negative "
                          "(physically odd, as identified models can be): the rigid-body model does "
                          "not use it; friction=\"urdf\" refuses it", HodDynamicsWarning, stacklevel=5)


def _validate(element, where, reader):
    """Check one element of :data:`SCHEMA` and, in turn, its children that are in it: unknown
    attributes and children (misspelling or extension), required attributes and children,
    numbers."""
    attributes, children = SCHEMA[element.tag]
    present = set(element.attrib) | {c.tag for c in element.children if c.tag not in _REPEATABLE}
    for name in list(element.attrib):
        if name in attributes or name.startswith(_XML_ATTRIBUTES):
            continue
        _judge(reader, "attribute", element, name, where, element.line, present - {name})
    for child in element.children:
        if child.tag not in children:
            _judge(reader, "element", element, child.tag, where, child.line, present - {child.tag})
    for name, (required, count) in attributes.items():
        _check_attribute(element, name, required, count, where, reader)
    if element.tag == "joint" and element.attrib["type"].strip() not in JOINT_TYPES:
        jtype = element.attrib["type"].strip()
        close = misspelling_of(jtype, JOINT_TYPES)
        raise ModelError(f"{where} has unknown type '{jtype}' (line {element.line})"
                         + (f"; did you mean '{close[0]}'?" if close else
                            f" (URDF joint types: {', '.join(JOINT_TYPES)})"))
    for tag in _REQUIRED_CHILDREN.get(element.tag, ()):
        if first(element, tag) is None:
            raise ModelError(f"<{element.tag}> in {where} (line {element.line}) has no <{tag}> element")
    if element.tag == "dynamics":
        _negative_dynamics(element, where)
    if element.tag == "mimic" and "joint" not in element.attrib:
        return False  # strict=False read past a <mimic> without joint: leave it out
    kept = []
    for child in element.children:
        if child.tag in children and child.tag in SCHEMA and child.tag not in ("link", "joint"):
            if _validate(child, where, reader) is False:
                continue
        kept.append(child)
    element.children[:] = kept
    return True


def first(element, tag):
    """The first child ``<tag>`` (URDF readers take the first of repeated elements)."""
    return next((c for c in element.children if c.tag == tag), None)


def validate(root, reader):
    """The ``<link>`` and ``<joint>`` elements of a validated ``<robot>`` root element, by name
    (see the module docstring); ModelError for a fault that leaves no model."""
    if root.tag != "robot":
        raise ModelError(f"malformed URDF: the root element is <{root.tag}>, not <robot>")
    name = root.attrib.get("name") or "robot"
    _validate(root, f"robot '{name}'", reader)
    found = {"link": {}, "joint": {}}
    for element in root.children:
        if element.tag not in found:
            continue
        item = element.attrib.get("name")  # as written: urdfdom and urdf_parser_py do not strip names
        # a missing name is refused by the schema, after a misspelt one has been named
        _validate(element, f"{element.tag} '{item}'" if item else f"a {element.tag}", reader)
        seen = found[element.tag]
        if item in seen:
            raise ModelError(f"{element.tag} '{item}' is defined twice (lines {seen[item].line} "
                             f"and {element.line})")
        seen[item] = element
    if not found["link"]:
        raise ModelError(f"malformed URDF: robot '{name}' has no <link>")
    return found["link"], found["joint"]
