"""Joint friction: exact time derivatives on jets, URDF <dynamics>, YAML files and their errors."""

import numpy as np
import pytest

import hod_dynamics as hd
from hod_dynamics.errors import InputError, ModelError
from hod_dynamics.algorithms.friction import DEFAULT_VS, FrictionModel, load_friction, save_friction

from oracles import BACKENDS, CENTRAL_7, rel_err, sinusoid_jet

H = 1e-3     # FD step; the tanh's time scale here is v_s / |qdd| >= 0.05 s, so (H / 0.05)^6 ~ 1e-11


def _friction(model, v_s=0.1):
    n = model.n_dof
    return FrictionModel(model.joint_names, coulomb=np.linspace(2.0, 0.5, n), viscous=np.linspace(1.0, 0.2, n),
                         offset=np.linspace(-0.4, 0.4, n), v_s=np.full(n, v_s))


def _zero_crossing_time(n, seed):
    """A time at which the first joint's velocity crosses 0 (tanh at its steepest)."""
    t = np.linspace(0.0, 5.0, 50001)
    qd = sinusoid_jet(n, t, 2, seed)[:, 1, 0]
    return float(t[np.flatnonzero(np.diff(np.sign(qd)))[0]])


@pytest.mark.parametrize("method", ["recursive", "closed_form"])
@pytest.mark.parametrize("backend", BACKENDS)
def test_friction_jets_equal_finite_differences_of_the_order_below(iiwa, backend, method):
    friction = _friction(iiwa)
    t0 = _zero_crossing_time(iiwa.n_dof, seed=3)
    jets = sinusoid_jet(iiwa.n_dof, t0 + H * np.arange(-3, 4), 7, seed=3)     # (7, 7, n)
    kwargs = dict(backend=backend) if method == "recursive" else {}
    out = hd.time_derivatives(iiwa, jets, 4, method=method, friction=friction, **kwargs)
    rigid = hd.time_derivatives(iiwa, jets, 4, method=method, **kwargs)
    assert np.abs(jets[3, 1, 0]) < 1e-3                       # qd of joint 1 crosses 0 here
    fd = np.tensordot(CENTRAL_7, out, axes=(0, 0)) / H
    for k in range(1, 5):
        assert rel_err(out[3, k], fd[k - 1]) < 1e-8, k
        # the friction part alone, too: its derivatives are not hidden by the rigid body's
        fdf = np.tensordot(CENTRAL_7, out[:, k - 1] - rigid[:, k - 1], axes=(0, 0)) / H
        assert rel_err(out[3, k] - rigid[3, k], fdf) < 1e-8, k


@pytest.mark.parametrize("backend", BACKENDS)
def test_order_0_with_friction_is_inverse_dynamics_bit_for_bit(iiwa, backend, monkeypatch):
    monkeypatch.setenv("HOD_DYNAMICS_BACKEND", backend)
    friction = _friction(iiwa)
    jets = sinusoid_jet(iiwa.n_dof, np.linspace(0.0, 3.0, 40), 7, seed=5)
    for order in (0, 1, 4):
        tau = hd.time_derivatives(iiwa, jets[:, :order + 3], order, friction=friction)
        ref = hd.inverse_dynamics(iiwa, jets[:, 0], jets[:, 1], jets[:, 2], friction=friction)
        np.testing.assert_array_equal(tau[:, 0], ref)
    rigid = hd.inverse_dynamics(iiwa, jets[:, 0], jets[:, 1], jets[:, 2])
    expected = (friction.viscous * jets[:, 1] + friction.coulomb * np.tanh(jets[:, 1] / friction.v_s)
                + friction.offset)
    np.testing.assert_allclose(ref - rigid, expected, rtol=1e-12, atol=1e-12)


def test_feedforward_and_profile_add_the_friction(iiwa, tmp_path):
    traj = hd.load_trajectory("iiwa14_demo")
    friction = _friction(iiwa)
    path = save_friction(friction, tmp_path / "friction.yaml")
    t = np.linspace(traj.start, traj.end, 50)
    rigid = hd.feedforward.trajectory_feedforward.feedforward(iiwa, traj, t, 2)
    for source in (friction, str(path), friction.to_mapping()):
        with_f = hd.feedforward.trajectory_feedforward.feedforward(iiwa, traj, t, 2, friction=source)
        np.testing.assert_allclose(with_f.taujet - rigid.taujet, friction.jet(rigid.qjet[:, 1:4]), atol=1e-9)


URDF = """<robot name="two">
  <link name="base"/>
  <link name="a"><inertial><mass value="2"/><origin xyz="0.1 0 0"/>
    <inertia ixx="0.01" iyy="0.02" izz="0.03" ixy="0" ixz="0" iyz="0"/></inertial></link>
  <link name="b"><inertial><mass value="1"/><origin xyz="0.1 0 0"/>
    <inertia ixx="0.01" iyy="0.01" izz="0.01" ixy="0" ixz="0" iyz="0"/></inertial></link>
  <link name="c"><inertial><mass value="0.5"/><origin xyz="0 0 0.05"/>
    <inertia ixx="0.01" iyy="0.01" izz="0.01" ixy="0" ixz="0" iyz="0"/></inertial></link>
  <joint name="j1" type="revolute"><parent link="base"/><child link="a"/><axis xyz="0 0 1"/>
    <limit lower="-3" upper="3" effort="50" velocity="2"/>{dyn1}</joint>
  <joint name="j2" type="continuous"><parent link="a"/><child link="b"/><origin xyz="0.3 0 0"/>
    <axis xyz="0 1 0"/>{dyn2}</joint>
  <joint name="j3" type="prismatic"><parent link="b"/><child link="c"/><origin xyz="0.2 0 0"/>
    <axis xyz="0 0 1"/><limit lower="0" upper="0.2" effort="100" velocity="0.5"/>{dyn3}</joint>
</robot>"""


def test_urdf_dynamics_tags_are_read_and_a_joint_without_one_has_no_friction():
    model = hd.RobotModel.from_urdf(URDF.format(dyn1='<dynamics damping="0.7" friction="1.5"/>',
                                                dyn2='<dynamics friction="0.4"/>', dyn3=""))
    np.testing.assert_array_equal(model.damping, [0.7, 0.0, 0.0])
    np.testing.assert_array_equal(model.friction, [1.5, 0.4, 0.0])
    friction = load_friction("urdf", model)
    np.testing.assert_array_equal(friction.v_s, DEFAULT_VS)
    qd = np.array([[0.5, -0.2, 0.3]])
    q, qdd = np.zeros((1, 3)), np.zeros((1, 3))
    extra = hd.inverse_dynamics(model, q, qd, qdd, friction="urdf") - hd.inverse_dynamics(model, q, qd, qdd)
    np.testing.assert_allclose(extra, [[0.7 * 0.5 + 1.5 * np.tanh(50.0), -0.4 * np.tanh(20.0), 0.0]], rtol=1e-14)
    # without any tag: zeros, and "urdf" adds nothing
    bare = hd.RobotModel.from_urdf(URDF.format(dyn1="", dyn2="", dyn3=""))
    assert not bare.damping.any() and not bare.friction.any()
    np.testing.assert_array_equal(hd.inverse_dynamics(bare, q, qd, qdd, friction="urdf"),
                                  hd.inverse_dynamics(bare, q, qd, qdd))


def test_negative_urdf_dynamics_load_with_a_warning_and_friction_urdf_refuses_them():
    """Identification output can have a negative coefficient: the rigid-body model loads (a
    warning names joint and line); a friction model built from it is refused, naming the joint,
    its line and the value."""
    text = URDF.format(dyn1="", dyn2='<dynamics damping="-1" friction="0.2"/>', dyn3="")
    line = text[:text.index("<dynamics")].count("\n") + 1
    joint_line = text[:text.index('<joint name="j2"')].count("\n") + 1
    with pytest.warns(hd.HodDynamicsWarning, match=rf"^joint 'j2' \(line {line}\): <dynamics damping=\"-1\"> is negative"):
        model = hd.RobotModel.from_urdf(text)
    np.testing.assert_array_equal(model.damping, [0.0, -1.0, 0.0])
    assert model.joint_lines["j2"] == joint_line
    q = np.zeros((1, 3))
    tau = hd.inverse_dynamics(model, q, q + 0.3, q)  # the rigid-body model does not use them
    np.testing.assert_array_equal(tau, hd.inverse_dynamics(hd.RobotModel.from_urdf(URDF.format(dyn1="", dyn2="", dyn3="")), q, q + 0.3, q))
    message = rf"^friction 'urdf': joint 'j2' \(line {joint_line}\) has <dynamics damping=\"-1.0\">, a negative coefficient"
    with pytest.raises(ModelError, match=message):
        load_friction("urdf", model)
    with pytest.raises(ModelError, match=message):
        hd.inverse_dynamics(model, q, q, q, friction="urdf")


def test_yaml_round_trip_and_joints_not_listed_have_no_friction(iiwa, tmp_path):
    path = tmp_path / "f.yaml"
    path.write_text("friction:\n  iiwa_joint_2: {coulomb: 2.5, viscous: 0.5, offset: -0.2, v_s: 0.02}\n")
    f = load_friction(str(path), iiwa)
    assert f.coulomb[1] == 2.5 and f.v_s[1] == 0.02 and f.offset[1] == -0.2
    assert not f.active[[0, 2, 3, 4, 5, 6]].any()
    again = load_friction(str(save_friction(f, tmp_path / "g.yaml")), iiwa)
    for key in ("coulomb", "viscous", "offset", "v_s"):
        np.testing.assert_array_equal(getattr(again, key), getattr(f, key))


@pytest.mark.parametrize("spec, words", [
    ({"iiwa_joint_9": {"coulomb": 1, "viscous": 0, "offset": 0}}, r"unknown joints \['iiwa_joint_9'\]"),
    ({"iiwa_joint_1": {"coulomb": -1, "viscous": 0, "offset": 0}}, r"joint 'iiwa_joint_1': coulomb must be >= 0"),
    ({"iiwa_joint_1": {"coulomb": 1, "viscous": 0.5}}, r"joint 'iiwa_joint_1': missing fields \['offset'\]"),
    ({"iiwa_joint_1": {"coulomb": 1, "viscous": 0, "offset": 0, "v_s": 0}}, r"v_s must be > 0"),
    ({"iiwa_joint_1": {"coulomb": 1, "viscous": 0, "offset": 0, "stiction": 2}}, r"unknown fields \['stiction'\]"),
    ({"iiwa_joint_1": {"coulomb": "a lot", "viscous": 0, "offset": 0}}, r"coulomb must be a number"),
])
def test_bad_friction_specs_raise_naming_the_joint(iiwa, spec, words):
    with pytest.raises(InputError, match=words):
        load_friction({"friction": spec}, iiwa)
    with pytest.raises(InputError, match=words):
        hd.inverse_dynamics(iiwa, np.zeros(7), np.zeros(7), np.zeros(7), friction={"friction": spec})


def test_on_a_floating_model_friction_goes_to_the_joint_rows():
    model = hd.RobotModel.from_urdf(URDF.format(dyn1='<dynamics damping="0.7" friction="1.5"/>',
                                                dyn2='<dynamics friction="0.4"/>', dyn3=""), floating_base=True)
    rng = np.random.default_rng(2)
    quat = rng.standard_normal(4)
    q = np.r_[0.1, 0.2, 0.3, quat / np.linalg.norm(quat), 0.2, -0.3, 0.05]
    vjet = rng.standard_normal((5, 6 + model.n_dof))
    friction = load_friction("urdf", model)
    with_f = hd.time_derivatives_floating(model, q, vjet, 3, friction="urdf")
    rigid = hd.time_derivatives_floating(model, q, vjet, 3)
    np.testing.assert_array_equal(with_f[:, :6], rigid[:, :6])
    np.testing.assert_allclose(with_f[:, 6:] - rigid[:, 6:], friction.jet(vjet[:4, 6:]), rtol=1e-12, atol=1e-12)
    tau = hd.inverse_dynamics(model, q, vjet[0], vjet[1], friction="urdf")
    np.testing.assert_array_equal(tau, with_f[0])
