"""The geometry of a robot description's links, as points in each moving body's frame.

A link's ``<collision>`` (or ``<visual>``) elements hold boxes, cylinders, spheres and meshes.
Each becomes points in the frame of the moving body the link belongs to (its joint's child
link plus the links attached to it by fixed or locked joints, :attr:`RobotModel.frames`):
the corners of a box, two rims of 48 points around a cylinder's ends, 96 points around a
sphere (the rims and the sphere's points a little outside the surface, so that the ellipsoid
fitted to the points holds the exact shape), and a mesh's vertices times the element's ``scale``.

Meshes: STL (binary and ASCII), Wavefront OBJ (``v`` lines) and COLLADA (``.dae``: the
positions of every geometry placed by the scene's node transforms, in metres by the file's
``<unit meter>``; ``up_axis`` is ignored, as URDF tools do). A mesh is found from its
``filename``: ``package://PKG/path`` in PKG's share folder (``share/PKG`` of each prefix of
``AMENT_PREFIX_PATH``, as the ament index finds it, then the folders of ``ROS_PACKAGE_PATH``,
then a folder named PKG above the URDF's own), ``file:///abs/path``, or a path relative to the URDF's folder.

A body's geometry of one kind is complete when every link of the body with a mass in the
description has at least one element of that kind and every element can be read; otherwise
:func:`body_geometry` says why, and the caller falls back (collision, then visual, then the
joint origins: :mod:`hod_dynamics.identification.bounding_volumes`).
"""

import os
import re
import struct
import xml.etree.ElementTree as ET
from dataclasses import dataclass, field
from typing import List, Optional

import numpy as np

from .spatial import rpy_matrix
from .urdf import read_urdf_text

KINDS = ("collision", "visual")


def _unit_sphere(count):
    """(count, 3) points spread evenly over the unit sphere (a Fibonacci lattice)."""
    i = np.arange(count) + 0.5
    polar = np.arccos(1.0 - 2.0 * i / count)
    turn = np.pi * (1.0 + 5.0 ** 0.5) * i
    return np.column_stack([np.cos(turn) * np.sin(polar), np.sin(turn) * np.sin(polar), np.cos(polar)])


# The ellipsoids are fitted to these points: the minimum-volume ellipsoid of points spread evenly
# over a sphere (a circle) is that sphere (the cylinder through the circles), up to the spread's
# unevenness; 1 % (0.3 %) more radius covers it.
_SPHERE = _unit_sphere(96) * 1.01
_RIM = 1.003


def sphere_points(radius=1.0):
    """(96, 3) points whose convex hull holds the sphere of ``radius`` about the origin."""
    return _SPHERE * radius


@dataclass
class BodyGeometry:
    """The geometry of one kind of one moving body: ``points`` (k, 3) m in the body frame (None
    when incomplete), ``shapes`` what they came from, ``problems`` why it is incomplete."""

    points: Optional[np.ndarray]
    shapes: List[str] = field(default_factory=list)
    problems: List[str] = field(default_factory=list)


def _pose(element):
    """4x4 pose of an element's ``<origin>`` (identity without one)."""
    T = np.eye(4)
    origin = element.find("origin") if element is not None else None
    if origin is not None:
        T[:3, :3] = rpy_matrix(np.array((origin.get("rpy") or "0 0 0").split(), dtype=float))
        T[:3, 3] = np.array((origin.get("xyz") or "0 0 0").split(), dtype=float)
    return T


def _shape_points(shape, folder, package_paths):
    """(points (k, 3) in the element's frame, label), or (None, why) for what cannot be read."""
    tag = shape.tag
    if tag == "box":
        half = np.array(shape.get("size", "").split(), dtype=float) / 2
        corners = np.array([[a, b, c] for a in (-1, 1) for b in (-1, 1) for c in (-1, 1)], dtype=float)
        return corners * half, "box"
    if tag == "cylinder":
        r, h = float(shape.get("radius")), float(shape.get("length"))
        a = np.linspace(0.0, 2 * np.pi, 48, endpoint=False)
        rim = np.column_stack([_RIM * r * np.cos(a), _RIM * r * np.sin(a)])
        return np.vstack([np.column_stack([rim, np.full(48, z)]) for z in (-h / 2, h / 2)]), "cylinder"
    if tag == "sphere":
        return _SPHERE * float(shape.get("radius")), "sphere"
    if tag == "mesh":
        name = shape.get("filename") or ""
        path = resolve_mesh(name, folder, package_paths)
        if path is None:
            return None, f"mesh '{name}' not found"
        try:
            points = mesh_vertices(path)
        except (OSError, ValueError, ET.ParseError, struct.error) as exc:
            return None, f"mesh '{name}' unreadable ({exc})"
        scale = np.array((shape.get("scale") or "1 1 1").split(), dtype=float)
        return points * scale, f"mesh {os.path.basename(path)}"
    return None, f"geometry <{tag}> unknown"


def resolve_mesh(filename, folder=None, package_paths=None):
    """The path of a mesh ``filename`` (see the module docstring), or None when not found.
    ``package_paths``: {package: folder} tried first."""
    if filename.startswith("package://"):
        package, _, rest = filename[len("package://"):].partition("/")
        for base in _package_folders(package, folder, package_paths or {}):
            candidate = os.path.join(base, rest)
            if os.path.isfile(candidate):
                return candidate
        return None
    if filename.startswith("file://"):
        filename = filename[len("file://"):]
    if not os.path.isabs(filename):
        if folder is None:
            return None
        filename = os.path.join(folder, filename)
    return filename if os.path.isfile(filename) else None


def _package_folders(package, folder, package_paths):
    """Candidate share folders of a ROS package (see the module docstring)."""
    if package in package_paths:
        yield package_paths[package]
    for prefix in filter(None, os.environ.get("AMENT_PREFIX_PATH", "").split(os.pathsep)):
        yield os.path.join(prefix, "share", package)      # where the ament index puts a package's share
    for root in filter(None, os.environ.get("ROS_PACKAGE_PATH", "").split(os.pathsep)):
        yield os.path.join(root, package)
    here = os.path.abspath(folder) if folder else None
    while here and os.path.dirname(here) != here:
        if os.path.basename(here) == package:
            yield here
        yield os.path.join(here, package)
        here = os.path.dirname(here)


def mesh_vertices(path):
    """(k, 3) vertices of an STL, OBJ or COLLADA file (file units; COLLADA in metres).
    Raises ValueError for another format or a file without vertices."""
    ext = os.path.splitext(path)[1].lower()
    with open(path, "rb") as fh:
        data = fh.read()
    if ext == ".stl":
        points = _stl(data)
    elif ext == ".obj":
        points = np.array([line.split()[1:4] for line in data.decode("utf-8", "replace").splitlines()
                           if line.startswith("v ")], dtype=float).reshape(-1, 3)
    elif ext == ".dae":
        points = _collada(data)
    else:
        raise ValueError(f"mesh format '{ext}' not read (STL, OBJ and DAE are)")
    if not len(points) or not np.all(np.isfinite(points)):
        raise ValueError("no finite vertices")
    return points


def _stl(data):
    """Vertices of a binary or ASCII STL (a binary file may begin with 'solid' too: its size
    tells them apart)."""
    if len(data) >= 84:
        count = struct.unpack("<I", data[80:84])[0]
        if len(data) == 84 + 50 * count:
            record = np.dtype([("normal", "<f4", 3), ("vertices", "<f4", (3, 3)), ("attribute", "<u2")])
            return np.frombuffer(data, dtype=record, count=count, offset=84)["vertices"].reshape(-1, 3).astype(float)
    text = data.decode("utf-8", "replace")
    if not text.lstrip().lower().startswith("solid"):
        raise ValueError("neither a binary STL (size) nor an ASCII one ('solid')")
    return np.array(re.findall(r"vertex\s+(\S+)\s+(\S+)\s+(\S+)", text), dtype=float).reshape(-1, 3)


def _collada(data):
    """Positions of every COLLADA geometry, placed by the visual scene's node transforms (all
    geometries as they are when no scene places them), in metres."""
    root = ET.fromstring(data)
    ns = root.tag[:root.tag.index("}") + 1] if root.tag.startswith("{") else ""
    unit = root.find(f"{ns}asset/{ns}unit")
    metre = float(unit.get("meter", "1")) if unit is not None else 1.0
    geometries = {}
    for geometry in root.iter(f"{ns}geometry"):
        mesh = geometry.find(f"{ns}mesh")
        if mesh is None:
            continue
        sources = {s.get("id"): s for s in mesh.findall(f"{ns}source")}
        vertices = mesh.find(f"{ns}vertices")
        ids = [i.get("source", "").lstrip("#") for i in (vertices.findall(f"{ns}input") if vertices is not None else [])
               if i.get("semantic") == "POSITION"]
        for sid in ids:
            array = sources.get(sid, ET.Element("x")).find(f"{ns}float_array")
            if array is not None and array.text:
                geometries.setdefault(geometry.get("id"), []).append(np.array(array.text.split(), dtype=float))
    geometries = {k: np.concatenate(v).reshape(-1, 3) for k, v in geometries.items()}
    placed = []
    for scene in root.iter(f"{ns}visual_scene"):
        for node in scene.findall(f"{ns}node"):
            placed += _placed(node, np.eye(4), geometries, ns)
    points = placed or list(geometries.values())
    if not points:
        raise ValueError("no geometry with POSITION vertices")
    return np.vstack(points) * metre


def _placed(node, T, geometries, ns):
    """The geometries under a COLLADA ``<node>`` (and its children), transformed to the scene."""
    for child in node:
        tag = child.tag[len(ns):]
        values = np.array((child.text or "").split(), dtype=float)
        if tag == "matrix" and values.size == 16:
            T = T @ values.reshape(4, 4)
        elif tag == "translate" and values.size == 3:
            S = np.eye(4)
            S[:3, 3] = values
            T = T @ S
        elif tag == "rotate" and values.size == 4:
            S = np.eye(4)
            S[:3, :3] = _axis_angle(values[:3], np.radians(values[3]))
            T = T @ S
        elif tag == "scale" and values.size == 3:
            T = T @ np.diag(np.r_[values, 1.0])
    out = []
    for child in node:
        tag = child.tag[len(ns):]
        if tag == "instance_geometry" and child.get("url", "").lstrip("#") in geometries:
            P = geometries[child.get("url").lstrip("#")]
            out.append(P @ T[:3, :3].T + T[:3, 3])
        elif tag == "node":
            out += _placed(child, T, geometries, ns)
    return out


def _axis_angle(axis, angle):
    """Rotation matrix of ``angle`` rad about ``axis`` (3,)."""
    k = np.asarray(axis, dtype=float) / np.linalg.norm(axis)
    K = np.array([[0, -k[2], k[1]], [k[2], 0, -k[0]], [-k[1], k[0], 0]])
    return np.eye(3) + np.sin(angle) * K + (1 - np.cos(angle)) * K @ K


def body_geometry(source, model, kind="collision", *, xacro_args=None, package_paths=None):
    """[:class:`BodyGeometry`] per moving body of ``model`` (the order of
    :func:`~hod_dynamics.inertial_parameters`), from the ``kind`` ("collision" or "visual")
    elements of the description ``source`` (path or text) ``model`` was built from."""
    if kind not in KINDS:
        raise ValueError(f"kind must be one of {KINDS}, got {kind!r}")
    text = read_urdf_text(source, xacro_args=xacro_args)
    root = ET.fromstring(text.lstrip("\ufeff").lstrip())
    _strip_namespace(root)
    links = {e.get("name"): e for e in root.findall("link")}
    folder = None
    if isinstance(source, (str, os.PathLike)) and not str(source).lstrip().startswith("<"):
        folder = os.path.dirname(os.path.abspath(os.fspath(source)))
    offset = 1 if model.floating else 0
    out = [BodyGeometry(None) for _ in range(model.n_dof + offset)]
    members = {}
    for name, frame in model.frames.items():
        if frame.body >= 0 or model.floating:
            members.setdefault(frame.body + offset, []).append((name, frame.pose))
    for b, entry in enumerate(out):
        points = []
        for name, pose in sorted(members.get(b, []), key=lambda item: item[0]):
            link = links.get(name)
            elements = [] if link is None else link.findall(kind)
            if not elements:
                if link is not None and _has_mass(link):
                    entry.problems.append(f"link {name} has a mass but no <{kind}>")
                continue
            for element in elements:
                geometry = element.find("geometry")
                shape = geometry[0] if geometry is not None and len(geometry) else None
                if shape is None:
                    entry.problems.append(f"link {name}: <{kind}> without a shape")
                    continue
                P, label = _shape_points(shape, folder, package_paths)
                if P is None:
                    entry.problems.append(f"link {name}: {label}")
                    continue
                T = pose @ _pose(element)
                points.append(P @ T[:3, :3].T + T[:3, 3])
                entry.shapes.append(f"{name}: {label}")
        if points and not entry.problems:
            entry.points = np.vstack(points)
    return out


def _has_mass(link):
    mass = link.find("inertial/mass")
    try:
        return mass is not None and float(mass.get("value", 0.0)) > 0.0
    except ValueError:
        return False


def _strip_namespace(root):
    """Drop a default XML namespace from every tag (descriptions written with xmlns)."""
    for element in root.iter():
        if isinstance(element.tag, str) and element.tag.startswith("{"):
            element.tag = element.tag.split("}", 1)[1]
