"""A robot description with identified inertias and friction: the prior URDF, rewritten.

Everything of the prior description stays as it is (links, joints, names, origins, axes,
limits, visuals, extensions, comments); only each moving body's ``<inertial>`` and each
joint's ``<dynamics damping friction>`` change. The file is the expanded URDF (no xacro).

Bodies and links: a moving body is its link plus every link attached to it by fixed joints
(and by joints locked when the model was built). The identified inertia of the body goes to
its link's ``<inertial>``, in the URDF's form (mass, centre of mass as the origin, inertia
about the centre of mass, no rotation); links attached by fixed joints lose their
``<inertial>`` (their mass is in the body's now), so that every reader that merges fixed
joints (Pinocchio, KDL, this package) gets the identified body. Links attached by locked
joints keep their own inertia (they move when the joint is not locked), and the body's link
gets the rest.

Friction: ``damping`` is the viscous coefficient and ``friction`` the Coulomb one; the offset
and the transition velocity have no URDF attribute and live in friction.yaml.
"""

import xml.etree.ElementTree as ET

import numpy as np

from ..errors import ModelError
from .inertia import com_form, inertia_from_parameters, parameters_from_inertia
from .spatial import body_inertia, rpy_matrix, transform_inertia
from .urdf import read_urdf_text


def _number(x):
    """The shortest text that reads back to the same double."""
    return repr(float(x))


def _numbers(values):
    return " ".join(_number(v) for v in values)


class _Description:
    """The parsed prior (ElementTree, comments kept) with lookups by link and joint name."""

    def __init__(self, text):
        parser = ET.XMLParser(target=ET.TreeBuilder(insert_comments=True))
        self.root = ET.fromstring(text.lstrip("\ufeff").lstrip(), parser=parser)
        tag = self.root.tag
        self.ns = tag[:tag.index("}") + 1] if tag.startswith("{") else ""
        self.links = {e.get("name"): e for e in self.root.findall(self.ns + "link")}
        self.joints = {e.get("name"): e for e in self.root.findall(self.ns + "joint")}
        self.parent_joint = {}
        for joint in self.joints.values():
            child = joint.find(self.ns + "child")
            if child is not None:
                self.parent_joint[child.get("link")] = joint

    def attached_by(self, link, body_link):
        """"fixed" when ``link`` hangs from ``body_link`` by fixed joints only, else "locked"."""
        while link != body_link and link in self.parent_joint:
            joint = self.parent_joint[link]
            if joint.get("type") != "fixed":
                return "locked"
            link = joint.find(self.ns + "parent").get("link")
        return "fixed"

    def link_parameters(self, name):
        """pi (10,) of a URDF link about its own frame (zero without ``<inertial>``)."""
        inertial = self.links[name].find(self.ns + "inertial")
        if inertial is None:
            return np.zeros(10)
        origin = inertial.find(self.ns + "origin")
        xyz = np.zeros(3) if origin is None else np.array((origin.get("xyz") or "0 0 0").split(), dtype=float)
        rpy = np.zeros(3) if origin is None else np.array((origin.get("rpy") or "0 0 0").split(), dtype=float)
        mass = inertial.find(self.ns + "mass")
        m = 0.0 if mass is None else float(mass.get("value", 0.0))
        el = inertial.find(self.ns + "inertia")
        keys = ("ixx", "ixy", "ixz", "iyy", "iyz", "izz")
        v = dict.fromkeys(keys, 0.0) if el is None else {k: float(el.get(k, 0.0)) for k in keys}
        Ic = np.array([[v["ixx"], v["ixy"], v["ixz"]], [v["ixy"], v["iyy"], v["iyz"]], [v["ixz"], v["iyz"], v["izz"]]])
        R = rpy_matrix(rpy)
        return parameters_from_inertia(body_inertia(m, xyz, R @ Ic @ R.T))


def _body_links(model):
    """Per moving body (the order of :func:`~hod_dynamics.inertial_parameters`): its link and
    the other links merged into it, with their poses in the body frame."""
    bodies = ([(-1, model.root_link)] if model.floating else []) + list(enumerate(model.link_names))
    out = []
    for index, link in bodies:
        merged = [(name, f.pose) for name, f in model.frames.items() if f.body == index and name != link]
        out.append((link, merged))
    return out


def locked_parts(source, model, *, xacro_args=None):
    """(n_bodies, 10): the inertial parameters, in each body's frame, of the links attached
    to it by locked joints (which keep their own inertia in the written URDF), from the URDF
    ``source`` that ``model`` was built from."""
    description = _Description(read_urdf_text(source, xacro_args=xacro_args))
    out = np.zeros((len(_body_links(model)), 10))
    for b, (link, merged) in enumerate(_body_links(model)):
        for name, pose in merged:
            if description.attached_by(name, link) == "locked":
                M = transform_inertia(inertia_from_parameters(description.link_parameters(name)), pose)
                out[b] += parameters_from_inertia(M)
    return out


def identified_urdf(source, model, parameters, friction=None, *, xacro_args=None, comment=None):
    """The text of the prior URDF ``source`` (path or text, the one ``model`` was built from)
    with the body inertias ``parameters`` ((n_bodies, 10) as
    :func:`~hod_dynamics.inertial_parameters`) and, when given, the viscous and Coulomb
    coefficients of ``friction`` (a :class:`~hod_dynamics.algorithms.friction.FrictionModel`) in the
    joints' ``<dynamics>``. ``comment``: a line written at the top. Raises ModelError when the
    description does not match the model."""
    description = _Description(read_urdf_text(source, xacro_args=xacro_args))
    ns = description.ns
    parameters = np.asarray(parameters, dtype=float).reshape(-1, 10)
    bodies = _body_links(model)
    if len(bodies) != len(parameters):
        raise ModelError(f"{len(parameters)} parameter rows for the {len(bodies)} bodies of model '{model.name}'")
    for (link, merged), pi in zip(bodies, parameters):
        if link not in description.links:
            raise ModelError(f"link '{link}' of model '{model.name}' is not in the URDF")
        own = pi.copy()
        for name, pose in merged:
            if description.attached_by(name, link) == "locked":
                own -= parameters_from_inertia(transform_inertia(inertia_from_parameters(description.link_parameters(name)), pose))
            else:
                _remove_inertial(description.links[name], ns)
        _set_inertial(description.links[link], own, ns)
    if friction is not None:
        for j, name in enumerate(friction.joint_names):
            if name not in description.joints:
                raise ModelError(f"joint '{name}' of the friction model is not in the URDF")
            _set_dynamics(description.joints[name], friction.viscous[j], friction.coulomb[j], ns)
    if ns:
        ET.register_namespace("", ns[1:-1])
    if comment:
        description.root.insert(0, ET.Comment(f" {comment} "))
    ET.indent(description.root, space="  ")
    return '<?xml version="1.0"?>\n' + ET.tostring(description.root, encoding="unicode") + "\n"


def _remove_inertial(element, ns):
    for inertial in element.findall(ns + "inertial"):
        element.remove(inertial)
    if len(element) == 0:
        element.text = None      # written as an empty element


def _set_inertial(element, pi, ns):
    """Replace the link's ``<inertial>`` by pi's (mass, com origin, inertia about the com)."""
    index = next((k for k, child in enumerate(element) if child.tag == ns + "inertial"), 0)
    _remove_inertial(element, ns)
    m, c, Ic = com_form(pi)
    inertial = ET.Element(ns + "inertial")
    ET.SubElement(inertial, ns + "origin", xyz=_numbers(c), rpy="0 0 0")
    ET.SubElement(inertial, ns + "mass", value=_number(m))
    ET.SubElement(inertial, ns + "inertia", ixx=_number(Ic[0, 0]), ixy=_number(Ic[0, 1]), ixz=_number(Ic[0, 2]),
                  iyy=_number(Ic[1, 1]), iyz=_number(Ic[1, 2]), izz=_number(Ic[2, 2]))
    element.insert(index, inertial)


def _set_dynamics(element, viscous, coulomb, ns):
    """Set ``damping`` and ``friction`` of the joint's ``<dynamics>`` (created when missing;
    other attributes, such as a vendor's, kept)."""
    dynamics = element.find(ns + "dynamics")
    if dynamics is None:
        dynamics = ET.SubElement(element, ns + "dynamics")
    dynamics.set("damping", _number(max(viscous, 0.0)))
    dynamics.set("friction", _number(max(coulomb, 0.0)))
