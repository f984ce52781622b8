"""Poses and Jacobians of link frames against Pinocchio (forwardKinematics, getFrameJacobian):
Panda, UR5, TALOS and random trees with prismatic, fixed and oddly oriented joints; one sample
and a batch."""

import numpy as np
import pytest

import hod_dynamics as hd


PIN_REFERENCE = {"local": "LOCAL", "world": "WORLD", "local_world_aligned": "LOCAL_WORLD_ALIGNED"}


def _pinocchio_frames(pr, q):
    """{link: (pose (4, 4), {reference: J (6, n) in our row order (omega, v) and joint order})}."""
    pin = pr.pin
    pq = pr.q(q)
    pin.forwardKinematics(pr.model, pr.data, pq)
    pin.computeJointJacobians(pr.model, pr.data, pq)
    pin.updateFramePlacements(pr.model, pr.data)
    out = {}
    for link in pr.ours.frames:
        fid = pr.model.getFrameId(link)
        jacobians = {}
        for ours, theirs in PIN_REFERENCE.items():
            J = np.array(pin.getFrameJacobian(pr.model, pr.data, fid, getattr(pin.ReferenceFrame, theirs)))
            jacobians[ours] = np.vstack([J[3:], J[:3]])[:, pr.vidx]
        out[link] = (pr.data.oMf[fid].homogeneous.copy(), jacobians)
    return out


def test_poses_and_jacobians_match_pinocchio(pinocchio_tree):
    model, pr = pinocchio_tree
    rng = np.random.default_rng(3)
    Q = rng.uniform(-1.5, 1.5, size=(4, model.n_dof))
    expected = [_pinocchio_frames(pr, q) for q in Q]
    assert len(model.frames) > model.n_dof // 2
    for link in model.frames:
        poses = hd.frame_pose(model, Q, link)
        assert poses.shape == (4, 4, 4)
        np.testing.assert_allclose(poses, [e[link][0] for e in expected], rtol=0, atol=1e-10)
        np.testing.assert_allclose(hd.frame_pose(model, Q[0], link), expected[0][link][0], rtol=0, atol=1e-10)
        for reference in PIN_REFERENCE:
            J = hd.frame_jacobian(model, Q, link, reference)
            assert J.shape == (4, 6, model.n_dof)
            np.testing.assert_allclose(J, [e[link][1][reference] for e in expected], rtol=0, atol=1e-10)
            np.testing.assert_allclose(hd.frame_jacobian(model, Q[1], link, reference),
                                       expected[1][link][1][reference], rtol=0, atol=1e-10)


def test_local_jacobian_transpose_is_how_a_link_wrench_enters_tau(panda_pinocchio):
    """J^T W with the local Jacobian is the joint torque a wrench on the link in its frame
    adds (the form ``wrenches=`` takes): inverse dynamics with and without the wrench differ
    by -J^T W."""
    model, _ = panda_pinocchio
    rng = np.random.default_rng(5)
    q, qd, qdd = rng.normal(size=(3, 2, model.n_dof))
    W = rng.normal(size=(2, 6))
    J = hd.frame_jacobian(model, q, "panda_hand")
    with_wrench = hd.inverse_dynamics(model, q, qd, qdd, wrenches={"panda_hand": W})
    np.testing.assert_allclose(hd.inverse_dynamics(model, q, qd, qdd) - with_wrench,
                               np.einsum("bij,bi->bj", J, W), rtol=0, atol=1e-11)


def test_bad_arguments_are_named(panda):
    q = np.zeros(panda.n_dof)
    with pytest.raises(hd.ModelError, match="unknown link 'nose'"):
        hd.frame_pose(panda, q, "nose")
    with pytest.raises(hd.InputError, match="reference must be one of"):
        hd.frame_jacobian(panda, q, "panda_hand", reference="global")
    with pytest.raises(hd.InputError, match="q must have shape"):
        hd.frame_jacobian(panda, np.zeros(3), "panda_hand")
