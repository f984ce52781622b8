"""The identified URDF: the prior description with new inertials and <dynamics>, read back by
this package (strict) and by Pinocchio as the same bodies, whatever fixed, locked or floating
structure the description has."""

import os

import numpy as np
import pytest

import hod_dynamics as hd
from hod_dynamics.algorithms.friction import FrictionModel
from hod_dynamics.model.urdf_writer import identified_urdf, locked_parts
from oracles import ERD_ROBOTS, erd_path
from recordings import perturbed_model

CORPUS = os.path.join(os.path.dirname(os.path.abspath(__file__)), "data", "urdf_corpus")


def _friction(model, rng):
    n = model.n_dof
    return FrictionModel(model.joint_names, coulomb=rng.uniform(0, 2, n), viscous=rng.uniform(0, 1, n),
                         offset=np.zeros(n), v_s=np.full(n, 0.01))


@pytest.mark.parametrize("name", ["panda", "baxter", "double_pendulum (default xmlns)", "solo12 (floating)"])
def test_the_written_bodies_read_back_in_this_package_and_pinocchio(name, rng):
    pin = pytest.importorskip("pinocchio")
    kwargs = {}
    if name.startswith("double_pendulum"):
        source = os.path.join(CORPUS, "drake", "double_pendulum.urdf")
    else:
        key = name.split()[0]
        source = erd_path(key)
        kwargs = {"locked_joints": ERD_ROBOTS[key][1]} if ERD_ROBOTS[key][1] else {}
        kwargs.update(floating_base=True) if "floating" in name else None
    prior = hd.RobotModel.from_urdf(source, **kwargs)
    truth = perturbed_model(prior, 0.3, seed=2)
    friction = _friction(prior, rng)
    text = identified_urdf(source, prior, hd.inertial_parameters(truth), friction, comment="test")
    again = hd.RobotModel.from_urdf(text, inertia_check="error", **kwargs)
    assert again.joint_names == prior.joint_names and np.array_equal(again.references, prior.references)
    np.testing.assert_allclose(hd.inertial_parameters(again), hd.inertial_parameters(truth), rtol=1e-13, atol=1e-16)
    np.testing.assert_array_equal(again.damping, friction.viscous)
    np.testing.assert_array_equal(again.friction, friction.coulomb)
    if name.startswith("double_pendulum"):
        return  # Pinocchio's URDF parser does not take a default XML namespace
    pm = pin.buildModelFromXML(text, pin.JointModelFreeFlyer()) if "floating" in name else pin.buildModelFromXML(text)
    locks = kwargs.get("locked_joints")
    if locks:
        q0 = pin.neutral(pm)
        for joint, value in locks.items():
            q0[pm.joints[pm.getJointId(joint)].idx_q] = value
        pm = pin.buildReducedModel(pm, [pm.getJointId(j) for j in locks], q0)
    ids = ([1] if "floating" in name else []) + [pm.getJointId(nm) for nm in prior.joint_names]
    theirs = np.array([pm.inertias[i].toDynamicParameters() for i in ids])
    np.testing.assert_allclose(theirs, hd.inertial_parameters(truth), rtol=1e-12, atol=1e-15)


def test_links_on_fixed_joints_give_their_mass_to_the_body_and_locked_ones_keep_theirs(panda):
    source = erd_path("panda")
    locks = ERD_ROBOTS["panda"][1]
    pi = hd.inertial_parameters(panda) * 1.2
    text = identified_urdf(source, panda, pi)
    fingers = locked_parts(source, panda)
    assert np.count_nonzero(np.abs(fingers).sum(axis=1)) == 1       # the hand's body carries both fingers
    unlocked = hd.RobotModel.from_urdf(text)                          # the fingers move again
    hand_link = panda.link_names[-1]
    original = hd.RobotModel.from_urdf(source)
    finger = original.link_names.index("panda_leftfinger")
    np.testing.assert_allclose(unlocked.inertias[finger], original.inertias[finger])   # kept as they were
    assert panda.frames["panda_link8"].body == 6 and '<link name="panda_link8" />' in text   # fixed: merged
    np.testing.assert_allclose(hd.inertial_parameters(hd.RobotModel.from_urdf(text, locked_joints=locks)), pi,
                               rtol=1e-12, atol=1e-15)
    assert hand_link in text
