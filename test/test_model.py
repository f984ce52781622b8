"""RobotModel: the papers' screw description, validation, joint-name mapping, immutability."""

import warnings

import numpy as np
import pytest

import hod_dynamics as hd
from hod_dynamics.algorithms.closed_form import (coriolis_matrix_derivatives, external_wrench_derivatives,
                                                 gravity_derivatives, mass_matrix_derivatives)
from hod_dynamics.model.spatial import body_inertia, rpy_matrix, transform
from hod_dynamics.kernels.backend import numba_available
from oracles import rel_err

BACKENDS_AVAILABLE = ["numpy"] + (["numba"] if numba_available() else [])

REV_Z = [0, 0, 1, 0, 0, 0]


def two_r_from_screws(L1=0.5, L2=0.4, m1=3.0, m2=2.0):
    """The 2R of Müller and Kumar 2021, sec. 6.1, written exactly as the paper does (X_i, B_i, M_i)."""
    B1, B2 = np.eye(4), transform(np.eye(3), [L1, 0, 0])
    M = [body_inertia(m1, [L1, 0, 0], np.zeros((3, 3))), body_inertia(m2, [L2, 0, 0], np.zeros((3, 3)))]
    return hd.RobotModel.from_screws([REV_Z, REV_Z], [B1, B2], M, gravity=(0, -9.81, 0))


def test_from_screws_equals_the_shipped_2r_urdf(planar_2r, rng):
    model = two_r_from_screws()
    q, qd, qdd = rng.normal(size=(3, 10, 2))
    assert rel_err(hd.inverse_dynamics(model, q, qd, qdd), hd.inverse_dynamics(planar_2r, q, qd, qdd)) < 1e-13


def test_paper_body_inertia_matrix_of_the_2r():
    """Müller and Kumar 2021 prints M1 = [[L1^2 m1 I-ish, ...]]: check the entries it shows."""
    L1, m1 = 0.5, 3.0
    M1 = body_inertia(m1, [L1, 0, 0], np.zeros((3, 3)))
    assert M1[1, 1] == M1[2, 2] == pytest.approx(L1**2 * m1) and M1[0, 0] == 0
    assert M1[2, 4] == pytest.approx(L1 * m1) and M1[1, 5] == pytest.approx(-L1 * m1)
    assert M1[4, 2] == pytest.approx(L1 * m1) and M1[5, 1] == pytest.approx(-L1 * m1)


def test_from_screws_tree_with_offset_axis_screw(rng):
    """A revolute screw whose axis does not pass through the body origin, X = (e, x cross e)... as
    a URDF joint placed at x: both descriptions give the same dynamics."""
    e, x = np.array([0.0, 0.0, 1.0]), np.array([0.2, 0.0, 0.0])
    M = body_inertia(1.5, [0.3, 0.1, 0.0], np.diag([0.01, 0.02, 0.03]))
    screw = hd.RobotModel.from_screws([np.r_[e, np.cross(x, e)]], [np.eye(4)], [M])
    # same body, joint frame at x: B = translation(x) exp(..), body frame shifted by -x
    urdf_like = hd.RobotModel.from_screws([REV_Z], [transform(np.eye(3), x)],
                                          [hd.model.spatial.transform_inertia(M, transform(np.eye(3), -x))])
    q, qd, qdd = rng.normal(size=(3, 5, 1))
    # twists are expressed in different body frames but joint torques must agree
    assert rel_err(hd.inverse_dynamics(screw, q, qd, qdd), hd.inverse_dynamics(urdf_like, q, qd, qdd)) < 1e-12


def test_de_luca_2r_dynamic_coefficients(rng):
    """De Luca's lecture slides (Robotics 2, dynamic model): 2R with COMs at d1, d2 and inertias
    I1zz, I2zz; tau via a1..a5."""
    l1, d1, d2, m1, m2, I1, I2, g0 = 0.7, 0.3, 0.25, 4.0, 2.5, 0.05, 0.02, 9.81
    M = [body_inertia(m1, [d1, 0, 0], np.diag([0.01, 0.01, I1])), body_inertia(m2, [d2, 0, 0], np.diag([0.01, 0.01, I2]))]
    model = hd.RobotModel.from_screws([REV_Z, REV_Z], [np.eye(4), transform(np.eye(3), [l1, 0, 0])], M,
                                      gravity=(0, -g0, 0))
    a1 = I1 + m1 * d1**2 + I2 + m2 * d2**2 + m2 * l1**2
    a2, a3 = m2 * l1 * d2, I2 + m2 * d2**2
    a4, a5 = g0 * (m1 * d1 + m2 * l1), g0 * m2 * d2
    q, qd, qdd = rng.normal(size=(3, 20, 2))
    (q1, q2), (v1, v2), (ac1, ac2) = q.T, qd.T, qdd.T
    c2, s2, c1, c12 = np.cos(q2), np.sin(q2), np.cos(q1), np.cos(q1 + q2)
    u1 = (a1 + 2 * a2 * c2) * ac1 + (a2 * c2 + a3) * ac2 - a2 * s2 * (v2**2 + 2 * v1 * v2) + a4 * c1 + a5 * c12
    u2 = (a2 * c2 + a3) * ac1 + a3 * ac2 + a2 * s2 * v1**2 + a5 * c12
    assert rel_err(hd.inverse_dynamics(model, q, qd, qdd), np.stack([u1, u2], -1)) < 1e-12
    Mq = hd.mass_matrix(model, q)
    assert rel_err(Mq[:, 0, 0], a1 + 2 * a2 * c2) < 1e-12 and rel_err(Mq[:, 1, 1], np.full(20, a3)) < 1e-12


def test_model_is_immutable(iiwa):
    with pytest.raises(ValueError):
        iiwa.screws[0, 0] = 5.0
    with pytest.raises(AttributeError):
        iiwa.gravity = (0, 0, 0)
    with pytest.raises(TypeError):
        iiwa.frames["iiwa_link_ee"] = iiwa.frames["iiwa_link_0"]
    with pytest.raises(ValueError):
        iiwa.frames["iiwa_link_ee"].pose[0, 3] = 1.0


def test_with_gravity_copies(iiwa):
    g = iiwa.with_gravity((0, 0, -9.80665))
    assert g.gravity[2] == -9.80665 and iiwa.gravity[2] == -9.81 and g.joint_names == iiwa.joint_names


def test_joint_order_maps_message_order(iiwa):
    names = list(reversed(iiwa.joint_names)) + ["gripper"]
    idx = iiwa.joint_order(names, allow_extra=True)
    assert [names[i] for i in idx] == list(iiwa.joint_names)
    with pytest.raises(hd.ModelError, match=r"unknown joints \['gripper'\]"):
        iiwa.joint_order(names)
    with pytest.raises(hd.ModelError, match=r"missing joints \['iiwa_joint_7'\]"):
        iiwa.joint_order(iiwa.joint_names[:6])
    with pytest.raises(hd.ModelError, match="unknown joint 'x'"):
        iiwa.joint_index("x")


@pytest.mark.parametrize("kwargs, match", [
    (dict(screws=[[0, 0, 2, 0, 0, 0]]), r"joint 'joint1': screw .* must have a unit angular part"),
    (dict(screws=[[0, 0, 0, 0, 0, 0]]), r"joint 'joint1': screw"),
    (dict(inertias=[-np.eye(6)]), r"link 'link1'.*negative mass"),
    (dict(inertias=[np.diag([1, 1, -1, 1, 1, 1.0])], inertia_check="error"), r"link 'link1'.*not positive semi-definite"),
    (dict(references=[np.diag([1, 1, 1, 2.0])]), r"joint 'joint1': reference configuration is not a rigid"),
    (dict(parents=[3]), r"joint 'joint1': parent body index 3"),
    (dict(references=[rpy_matrix([0, 0, 0])]), r"references has shape \(1, 3, 3\), expected \(1, 4, 4\)"),
])
def test_from_screws_validation(kwargs, match):
    args = dict(screws=[REV_Z], references=[np.eye(4)], inertias=[body_inertia(1.0, [0, 0, 0.1], np.eye(3) * 0.01)])
    args.update(kwargs)
    with pytest.raises(hd.ModelError, match=match):
        hd.RobotModel.from_screws(args.pop("screws"), args.pop("references"), args.pop("inertias"), **args)


def test_per_model_cache_keeps_no_model_alive(planar_2r, rng):
    """The compiled-kernel layouts are cached per model without holding models forever."""
    import gc
    import weakref

    from hod_dynamics.model.robot_model import per_model

    calls = []

    @per_model
    def derived(model):
        calls.append(model.name)
        return model.n_dof

    model = hd.RobotModel.from_urdf(hd.model.robots.robot_path("planar_2r"))
    assert derived(model) == derived(model) == 2 and len(calls) == 1
    ref = weakref.ref(model)
    del model
    gc.collect()
    assert ref() is None


def test_check_state_broadcasts_and_names_the_bad_argument(iiwa):
    q = np.zeros(7)
    out = hd.model.validation.check_state(iiwa, q=q, qd=np.ones((3, 7)))
    assert [a.shape for a in out] == [(3, 7), (3, 7)]
    assert out[0] is not q and np.shares_memory(out[0], q)
    same = hd.model.validation.check_state(iiwa, q=q, qd=q)
    assert same[0] is q  # already a float array of the common shape: no copy
    with pytest.raises(hd.InputError, match=r"qd holds a non-finite value at index \(1, 4\)"):
        bad = np.ones((2, 7))
        bad[1, 4] = np.nan
        hd.model.validation.check_state(iiwa, q=q, qd=bad)
    with pytest.raises(hd.InputError, match="do not broadcast"):
        hd.model.validation.check_state(iiwa, q=np.zeros((2, 7)), qd=np.zeros((3, 7)))


# -- zero degrees of freedom --------------------------------------------------------------------
@pytest.fixture(scope="module")
def fixed_only():
    """A robot with no moving joint (every joint fixed): n_dof == 0."""
    return hd.RobotModel.from_urdf("""<robot name="table"><link name="world"/>
        <joint name="legs" type="fixed"><parent link="world"/><child link="top"/><origin xyz="0 0 0.7"/></joint>
        <link name="top"><inertial><mass value="12"/><inertia ixx="1" ixy="0" ixz="0" iyy="1" iyz="0" izz="1"/></inertial></link>
        </robot>""")


def test_zero_dof_model_every_public_function_returns_empty_results(fixed_only):
    m = fixed_only
    assert m.n_dof == 0 and m.frame("top").body == -1
    for batch in [(), (4,), (2, 3)]:
        z = np.zeros(batch + (0,))
        jet = np.zeros(batch + (5, 0))
        results = {
            "inverse_dynamics": (hd.inverse_dynamics(m, z, z, z, wrenches={"top": np.ones(6)}), batch + (0,)),
            "mass_matrix": (hd.mass_matrix(m, z), batch + (0, 0)),
            "kinetic_energy": (hd.kinetic_energy(m, z, z), batch),
            "time_derivatives closed_form": (hd.time_derivatives(m, jet, 2, method="closed_form"), batch + (3, 0)),
            "mass_matrix_derivatives": (mass_matrix_derivatives(m, jet, 2), batch + (3, 0, 0)),
            "coriolis_matrix_derivatives": (coriolis_matrix_derivatives(m, jet, 2), batch + (3, 0, 0)),
            "gravity_derivatives": (gravity_derivatives(m, jet, 2), batch + (3, 0)),
            "external_wrench_derivatives": (external_wrench_derivatives(m, jet, 2,
                                                                        {"top": np.zeros(batch + (3, 6))}),
                                            batch + (3, 0)),
            "id_partials_directional": (hd.algorithms.id_partials_directional(m, z, z, z, z, z, z)[0], batch + (0, 0)),
            "id_second_order_rate": (hd.algorithms.id_second_order_rate(m, z, z, z, z), batch + (0,)),
        }
        for backend in BACKENDS_AVAILABLE:
            results[f"time_derivatives {backend}"] = (hd.time_derivatives(m, jet, 2, backend=backend), batch + (3, 0))
            for k, a in enumerate(hd.id_partials(m, z, z, z, backend=backend)):
                results[f"id_partials {backend} {k}"] = (a, batch + (0, 0))
            for k, a in enumerate(hd.id_second_partials(m, z, z, z, backend=backend)):
                results[f"id_second_partials {backend} {k}"] = (a, batch + (0, 0, 0))
        for name, (value, shape) in results.items():
            assert np.shape(value) == shape, (name, np.shape(value), shape)
        np.testing.assert_array_equal(hd.kinetic_energy(m, z, z), np.zeros(batch))
    with pytest.raises(hd.InputError, match=r"q must have shape \(\.\.\., 0\) for model 'table'"):
        hd.inverse_dynamics(m, np.zeros(3), np.zeros(3), np.zeros(3))


def test_zero_dof_from_screws():
    m = hd.RobotModel.from_screws(np.zeros((0, 6)), [], [])
    assert m.n_dof == 0 and hd.inverse_dynamics(m, [], [], []).shape == (0,)


def test_from_screws_inertia_check():
    bad = np.diag([1, 1, -1, 1, 1, 1.0])
    with pytest.warns(hd.HodDynamicsWarning, match=r"link 'link1'.*not positive semi-definite.*computes with it as written"):
        m = hd.RobotModel.from_screws([REV_Z], [np.eye(4)], [bad])
    np.testing.assert_array_equal(m.inertias[0], bad)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        hd.RobotModel.from_screws([REV_Z], [np.eye(4)], [bad], inertia_check="off")


# -- foreign input -------------------------------------------------------------------------------
def test_foreign_input_is_refused_with_an_input_error_naming_the_argument(iiwa):
    z = np.zeros(7)
    cases = [
        (lambda: hd.inverse_dynamics(iiwa, ["0.1"] * 6 + ["a"], z, z), r"^q must be an array of real numbers, got text such as '0.1'"),
        (lambda: hd.inverse_dynamics(iiwa, z, [[0.0] * 7, [0.0] * 3], z), r"^qd must be an array of real numbers with one common shape; got ragged list"),
        (lambda: hd.inverse_dynamics("iiwa14", z, z, z), r"^model must be a hod_dynamics RobotModel \(RobotModel.from_urdf\(\.\.\.\) or load_robot\(name\)\), got str 'iiwa14'"),
        (lambda: hd.mass_matrix(hd.robot_path("iiwa14"), z), r"^model must be a hod_dynamics RobotModel .* got str '/"),
        (lambda: hd.inverse_dynamics(iiwa, z + 1j, z, z), r"^q holds complex numbers \(dtype complex128\); pass real numbers"),
        (lambda: hd.id_partials(iiwa, z, z, z.astype(complex)), r"^qdd holds complex numbers"),
        (lambda: hd.time_derivatives(iiwa, np.zeros((3, 7), complex), 0), r"^qjet holds complex numbers"),
        (lambda: hd.time_derivatives("panda", np.zeros((3, 7)), 0), r"^model must be a hod_dynamics RobotModel"),
        (lambda: hd.inverse_dynamics(iiwa, z, z, z, wrenches={"iiwa_link_7": ["a"] * 6}),
         r"^wrench on link 'iiwa_link_7' must be an array of real numbers"),
        (lambda: hd.inverse_dynamics(iiwa, z, z, z, wrenches={"iiwa_link_7": np.ones(6) * 1j}),
         r"^wrench on link 'iiwa_link_7' holds complex numbers"),
    ]
    for call, match in cases:
        with pytest.raises(hd.InputError, match=match):
            call()
    # numbers given as a list of ints are fine (numeric text is not: see test_validation)
    assert hd.inverse_dynamics(iiwa, list(range(7)), z, z).shape == (7,)


def test_trajectory_jet_beyond_the_spline_degree_is_a_trajectory_error():
    traj = hd.load_trajectory(hd.feedforward.trajectory.shipped_trajectories()[0])
    k = traj.spline.k
    with pytest.warns(hd.HodDynamicsWarning, match=rf"n_derivatives={k} exceeds the continuity"):
        assert traj.jet(0.5, k).shape == (k + 1, traj.n_joints)
    with pytest.raises(hd.TrajectoryError, match=rf"^n_derivatives=10 exceeds the degree {k} of the trajectory spline \(C\^{traj.continuity}\)"):
        traj.jet([0.1, 0.2], 10)
    with pytest.raises(hd.TrajectoryError, match=r"^evaluation times t must be an array of real numbers, got text such as 'soon'"):
        traj.jet("soon", 1)


def test_a_model_pickles_to_the_same_model_for_worker_processes():
    """Worker processes (multiprocessing, Dask) receive models by pickle: the copy has the same
    fields, frames and joint lines, the same torques, and a pickle that is the same bytes for
    the same model (so that it can serve as the model's fingerprint)."""
    import pickle

    for model in (hd.load_robot("iiwa14"), hd.load_robot("solo12", floating_base=True)):
        copy = pickle.loads(pickle.dumps(model))
        assert copy.name == model.name and copy.joint_lines == model.joint_lines and copy.floating == model.floating
        assert set(copy.frames) == set(model.frames)
        assert all(np.array_equal(copy.frames[k].pose, model.frames[k].pose) for k in model.frames)
        assert pickle.dumps(copy) == pickle.dumps(model)
        assert not copy.inertias.flags.writeable
    iiwa = hd.load_robot("iiwa14")
    q = np.random.default_rng(4).normal(size=(6, 5, 7))
    np.testing.assert_array_equal(hd.time_derivatives(pickle.loads(pickle.dumps(iiwa)), q, 2),
                                  hd.time_derivatives(iiwa, q, 2))
