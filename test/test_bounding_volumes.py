"""Bounding ellipsoids from a description's geometry: the minimum-volume ellipsoid against its
closed forms, the ellipsoid condition against the densities it stands for, meshes (STL binary
and ASCII, OBJ, COLLADA with node transforms) read as the shapes they hold, the fall-back from
collision to visual geometry to joint origins, and links merged by fixed joints."""

import os
import struct

import numpy as np
import pytest

import hod_dynamics as hd
from hod_dynamics.errors import InputError
from hod_dynamics.identification.bounding_volumes import Ellipsoid, bounding_ellipsoids, enclosing_ellipsoid
from hod_dynamics.model.geometry import body_geometry, mesh_vertices, resolve_mesh
from hod_dynamics.model.inertia import pseudo_inertia

HALF = np.array([0.05, 0.03, 0.12])                 # the test box's half extents, m
CORNERS = np.array([[a, b, c] for a in (-1, 1) for b in (-1, 1) for c in (-1, 1)]) * HALF
TRIANGLES = [(0, 1, 3), (0, 3, 2), (4, 6, 7), (4, 7, 5), (0, 4, 5), (0, 5, 1),
             (2, 3, 7), (2, 7, 6), (0, 2, 6), (0, 6, 4), (1, 5, 7), (1, 7, 3)]


def test_the_enclosing_ellipsoid_of_a_box_is_its_closed_form():
    # the minimum-volume ellipsoid of a box: centred, axes along the box's, semi-axes sqrt(3) times its half extents
    rot = _rotation(0.3, -0.2, 0.5)
    c, Q = enclosing_ellipsoid(CORNERS @ rot.T + [0.1, -0.2, 0.3])
    np.testing.assert_allclose(c, [0.1, -0.2, 0.3], atol=1e-6)
    np.testing.assert_allclose(Q, rot @ np.diag(3 * HALF ** 2) @ rot.T, rtol=2e-4, atol=1e-8)


def test_the_enclosing_ellipsoid_of_points_on_an_ellipsoid_is_that_ellipsoid():
    rng = np.random.default_rng(4)
    A = rng.normal(size=(3, 3))
    Q = A @ A.T * 0.01 + 0.002 * np.eye(3)
    u = rng.normal(size=(400, 3))
    u /= np.linalg.norm(u, axis=1, keepdims=True)
    points = u @ np.linalg.cholesky(Q).T + [0.3, 0.0, -0.1]
    c, found = enclosing_ellipsoid(points)
    np.testing.assert_allclose(c, [0.3, 0.0, -0.1], atol=2e-4)
    np.testing.assert_allclose(found, Q, rtol=5e-3, atol=5e-5)


def test_degenerate_point_sets_get_an_ellipsoid_with_a_volume():
    for points in (np.zeros((1, 3)), np.array([[0, 0, 0], [0, 0, 0.4]]), CORNERS[:, :2] @ np.eye(2, 3)):
        c, Q = enclosing_ellipsoid(points)
        assert np.linalg.eigvalsh(Q)[0] > 0
        e = Ellipsoid(c, Q)
        assert all(e.level(p) <= 1 + 1e-9 for p in points)


def test_the_ellipsoid_condition_is_the_mean_room_of_the_mass_inside():
    """tr(J Q_hat) = sum_i m_i (1 - level(x_i)) for point masses: >= 0 for any mass inside,
    0 for mass on the surface, negative once some lies far enough outside."""
    rng = np.random.default_rng(0)
    e = Ellipsoid(np.array([0.1, 0.0, 0.2]), np.diag([0.04, 0.01, 0.09]))
    L = np.linalg.cholesky(e.shape)
    for spread, expect in ((0.8, "inside"), (1.0, "surface"), (1.6, "outside")):
        u = rng.normal(size=(300, 3))
        u /= np.linalg.norm(u, axis=1, keepdims=True)
        radius = spread if expect != "inside" else spread * rng.uniform(0, 1, (300, 1)) ** (1 / 3)
        x = (u * radius) @ L.T + e.center
        m = rng.uniform(0.1, 1.0, 300)
        J = np.einsum("i,ij,ik->jk", m, np.c_[x, np.ones(300)], np.c_[x, np.ones(300)])
        direct = np.sum(m * (1 - np.array([e.level(p) for p in x])))
        np.testing.assert_allclose(np.trace(J @ e.matrix), direct, rtol=1e-10, atol=1e-12)
        assert {"inside": direct > 0, "surface": abs(direct) < 1e-9, "outside": direct < 0}[expect]
    point = np.r_[e.center, 1.0]
    assert abs(e.slack(2.0 * np.outer(point, point)) - 1.0) < 1e-12        # all the mass at the centre


def _rotation(r, p, y):
    from hod_dynamics.model.spatial import rpy_matrix

    return rpy_matrix([r, p, y])


def _stl_binary(path, vertices):
    with open(path, "wb") as fh:
        fh.write(b"solid but binary".ljust(80, b" ") + struct.pack("<I", len(TRIANGLES)))
        for tri in TRIANGLES:
            fh.write(struct.pack("<3f", 0, 0, 0) + b"".join(struct.pack("<3f", *vertices[k]) for k in tri) + b"\0\0")


def _stl_ascii(path, vertices):
    lines = ["solid box"]
    for tri in TRIANGLES:
        lines += ["facet normal 0 0 0", " outer loop"] + [f"  vertex {float(x)!r} {float(y)!r} {float(z)!r}"
                                                        for x, y, z in vertices[list(tri)]]
        lines += [" endloop", "endfacet"]
    open(path, "w").write("\n".join(lines + ["endsolid box", ""]))


def _obj(path, vertices):
    open(path, "w").write("".join(f"v {float(x)!r} {float(y)!r} {float(z)!r}\n" for x, y, z in vertices)
                          + "".join(f"f {a + 1} {b + 1} {c + 1}\n" for a, b, c in TRIANGLES))


def _dae(path, vertices, unit=0.001, translate=(10.0, 0.0, 0.0), rotate=(0, 0, 1, 90)):
    """A COLLADA file in millimetres whose scene node moves and turns the box."""
    data = " ".join(repr(float(v) / unit) for v in vertices.ravel())
    open(path, "w").write(f"""<?xml version="1.0"?>
<COLLADA xmlns="http://www.collada.org/2005/11/COLLADASchema" version="1.4.1">
 <asset><unit name="millimeter" meter="{unit}"/><up_axis>Z_UP</up_axis></asset>
 <library_geometries><geometry id="box-mesh"><mesh>
  <source id="box-positions"><float_array id="box-array" count="{vertices.size}">{data}</float_array></source>
  <vertices id="box-vertices"><input semantic="POSITION" source="#box-positions"/></vertices>
 </mesh></geometry></library_geometries>
 <library_visual_scenes><visual_scene id="scene"><node id="n">
  <translate>{' '.join(map(str, translate))}</translate><rotate>{' '.join(map(str, rotate))}</rotate>
  <instance_geometry url="#box-mesh"/>
 </node></visual_scene></library_visual_scenes>
</COLLADA>""")


def test_every_mesh_format_reads_as_the_box_it_holds(tmp_path):
    for name, writer in (("box.stl", _stl_binary), ("ascii.stl", _stl_ascii), ("box.obj", _obj)):
        writer(tmp_path / name, CORNERS)
        got = mesh_vertices(str(tmp_path / name))
        assert {tuple(np.round(v, 6)) for v in got} == {tuple(np.round(v, 6)) for v in CORNERS}, name
    _dae(tmp_path / "box.dae", CORNERS)
    got = mesh_vertices(str(tmp_path / "box.dae"))
    turned = CORNERS @ _rotation(0, 0, np.pi / 2).T + [0.01, 0, 0]     # translate 10 mm, then turn 90 deg about z
    assert {tuple(np.round(v, 6)) for v in got} == {tuple(np.round(v, 6)) for v in turned}
    open(tmp_path / "x.ply", "w").write("ply\n")
    with pytest.raises(ValueError, match="mesh format '.ply' not read"):
        mesh_vertices(str(tmp_path / "x.ply"))


def _two_link_urdf(collision, visual="", fixed_tool=""):
    """A 2-joint arm: link1 (0.4 m to joint 2), link2 with the given geometry, optionally a tool
    on link2 by a fixed joint."""
    return f"""<?xml version="1.0"?>
<robot name="two">
  <link name="base"/>
  <joint name="j1" type="revolute"><parent link="base"/><child link="link1"/><axis xyz="0 0 1"/>
    <limit lower="-3" upper="3" effort="10" velocity="2"/></joint>
  <link name="link1"><inertial><origin xyz="0 0 0.2"/><mass value="2"/>
    <inertia ixx="0.03" iyy="0.03" izz="0.002" ixy="0" ixz="0" iyz="0"/></inertial></link>
  <joint name="j2" type="revolute"><parent link="link1"/><child link="link2"/><origin xyz="0 0 0.4" rpy="1.5707963267948966 0 0"/>
    <axis xyz="0 0 1"/><limit lower="-3" upper="3" effort="10" velocity="2"/></joint>
  <link name="link2"><inertial><origin xyz="0.15 0 0"/><mass value="1"/>
    <inertia ixx="0.001" iyy="0.01" izz="0.01" ixy="0" ixz="0" iyz="0"/></inertial>
    {collision}{visual}</link>
  {fixed_tool}
</robot>"""


def test_a_mesh_ellipsoid_equals_the_box_primitive_ellipsoid_and_a_missing_mesh_falls_back(tmp_path):
    origin = '<origin xyz="0.15 0 0" rpy="0 0.2 0"/>'
    box = f'<collision>{origin}<geometry><box size="{" ".join(map(str, 2 * HALF))}"/></geometry></collision>'
    folder = tmp_path / "my_robot_description"
    (folder / "meshes").mkdir(parents=True)
    (folder / "urdf").mkdir()
    _stl_binary(folder / "meshes" / "box.stl", CORNERS)
    mesh = f'<collision>{origin}<geometry><mesh filename="package://my_robot_description/meshes/box.stl"/></geometry></collision>'
    ellipsoids = {}
    for label, geometry in (("box", box), ("mesh", mesh)):
        path = folder / "urdf" / f"{label}.urdf"
        path.write_text(_two_link_urdf(geometry))
        model = hd.RobotModel.from_urdf(str(path))
        ellipsoids[label] = bounding_ellipsoids(model, str(path))[1]
        assert ellipsoids[label].source == "collision"
    np.testing.assert_allclose(ellipsoids["mesh"].shape, ellipsoids["box"].shape, rtol=1e-4, atol=1e-9)
    np.testing.assert_allclose(ellipsoids["mesh"].center, [0.15, 0, 0], atol=1e-7)
    # a mesh that is not there: the visual sphere, and without it the joint origins
    gone = mesh.replace("box.stl", "gone.stl")
    visual = '<visual><origin xyz="0.1 0 0"/><geometry><sphere radius="0.07"/></geometry></visual>'
    path = folder / "urdf" / "gone.urdf"
    path.write_text(_two_link_urdf(gone, visual))
    model = hd.RobotModel.from_urdf(str(path))
    e = bounding_ellipsoids(model, str(path))[1]
    assert e.source == "visual" and e.level([0.17, 0, 0]) <= 1 + 1e-9 and e.level([0.1, 0.0725, 0]) > 1
    path.write_text(_two_link_urdf(gone))
    e = bounding_ellipsoids(model, str(path))[1]
    assert e.source == "joints" and "gone.stl' not found" in e.detail
    with pytest.raises(InputError, match="no bounding volume from \\['collision'\\] .*link link1 has a mass"):
        bounding_ellipsoids(model, str(path), sources=("collision",))


def test_joint_origin_ellipsoids_hold_the_segments_to_the_children_and_the_prior_inertia_with_the_margin():
    model = hd.load_robot("iiwa14")
    pi = hd.inertial_parameters(model)
    margin = 0.1
    for b, e in enumerate(bounding_ellipsoids(model, hd.robot_path("iiwa14"), margin=margin)):
        assert e.source == "joints"        # the shipped iiwa has no geometry
        ends = [np.zeros(3)] + [model.references[c][:3, 3] for c in model.children[b]] + [pi[b, 1:4] / pi[b, 0]]
        for p in ends:
            for d in np.eye(3):
                assert e.level(p + margin * d) <= 1 + 1e-9 and e.level(p - margin * d) <= 1 + 1e-9
        assert e.slack(pseudo_inertia(pi[b])) > 0        # the prior itself fits
    wider = bounding_ellipsoids(model, None, margin=margin, scale=1.5)
    np.testing.assert_allclose(wider[3].semi_axes, 1.5 * bounding_ellipsoids(model, None, margin=margin)[3].semi_axes)


def test_a_link_fixed_to_a_body_brings_its_geometry_in_the_bodys_frame(tmp_path):
    tool = """<joint name="tool_joint" type="fixed"><parent link="link2"/><child link="tool"/>
    <origin xyz="0.3 0 0" rpy="0 0 1.5707963267948966"/></joint>
  <link name="tool"><inertial><mass value="0.5"/><inertia ixx="1e-4" iyy="1e-4" izz="1e-4" ixy="0" ixz="0" iyz="0"/></inertial>
    <collision><origin xyz="0.02 0 0"/><geometry><box size="0.04 0.02 0.02"/></geometry></collision></link>"""
    link2 = '<collision><geometry><cylinder radius="0.03" length="0.1"/></geometry></collision>'
    path = tmp_path / "tool.urdf"
    path.write_text(_two_link_urdf(link2, fixed_tool=tool))
    model = hd.RobotModel.from_urdf(str(path))
    geometry = body_geometry(str(path), model)[1]
    assert geometry.problems == [] and len(geometry.points) == 96 + 8
    box = geometry.points[-8:] if "tool" in geometry.shapes[-1] else geometry.points[:8]
    # the tool's box: 4 cm along the tool's x, which is the body's y (turned 90 deg about z), 0.3 m out along x
    np.testing.assert_allclose(np.ptp(box, axis=0), [0.02, 0.04, 0.02], atol=1e-12)
    np.testing.assert_allclose(box.mean(axis=0), [0.3, 0.02, 0.0], atol=1e-12)
    # a link with a mass but no collision geometry makes the body's collision geometry incomplete
    path.write_text(_two_link_urdf(link2, fixed_tool=tool.replace("<collision>", "<visual>").replace("</collision>",
                                                                                                   "</visual>")))
    assert body_geometry(str(path), model)[1].problems == ["link tool has a mass but no <collision>"]


def test_package_uris_are_found_under_ament_prefix_path(tmp_path, monkeypatch):
    share = tmp_path / "install" / "share" / "arm_description" / "meshes"
    share.mkdir(parents=True)
    _obj(share / "m.obj", CORNERS)
    monkeypatch.setenv("AMENT_PREFIX_PATH", str(tmp_path / "elsewhere") + os.pathsep + str(tmp_path / "install"))
    assert resolve_mesh("package://arm_description/meshes/m.obj") == str(share / "m.obj")
    assert resolve_mesh("package://arm_description/meshes/none.obj") is None
    assert resolve_mesh("file://" + str(share / "m.obj")) == str(share / "m.obj")
