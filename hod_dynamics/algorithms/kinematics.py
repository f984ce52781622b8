"""Forward kinematics of URDF links: poses and Jacobians of a link frame.

A link frame sits on body ``b`` with the fixed pose ``P`` (see :class:`~hod_dynamics.model.Frame`);
body ``i`` sits in the root link frame at ``T_i = T_parent B_i exp(X_i q_i)`` (the model's
screws ``X_i`` and references ``B_i``), so the link's pose is ``T_b P``. The twist of the
link frame is ``V = J(q) qd`` with twists ``(omega, v)``, angular part first, as everywhere in
the package (Pinocchio orders motions (v, omega)).
"""

import numpy as np

from ..errors import InputError
from ..model.spatial import Ad, inverse, screw_exp
from ..model.validation import check_state, fixed_base_only

REFERENCES = ("local", "world", "local_world_aligned")


def _poses(model, q, bodies):
    """Poses (B, 4, 4) in the root link frame of the bodies ``bodies`` (a path to the base) for
    joint positions q (B, n): {body: pose}."""
    poses = {}
    for i in sorted(bodies):  # parents are numbered before their children
        C = model.references[i] @ screw_exp(model.screws[i], q[:, i])
        p = model.parents[i]
        poses[i] = C if p < 0 else poses[p] @ C
    return poses


def _frame_poses(model, q, link):
    """(frame, {body: pose (B, 4, 4)} along the link's path to the base, link pose (B, 4, 4),
    batch shape) for q (..., n)."""
    fixed_base_only(model, "frame_pose/frame_jacobian")
    frame = model.frame(link)
    depth = len(model.ancestors[frame.body]) if frame.body >= 0 else 0
    (q,) = check_state(model, q=q, what="frame_pose/frame_jacobian", result=16 * (depth + 2) + 6 * model.n_dof)
    batch = q.shape[:-1]
    flat = q.reshape(-1, model.n_dof)
    path = model.ancestors[frame.body] if frame.body >= 0 else ()
    poses = _poses(model, flat, path)
    base = poses[frame.body] if frame.body >= 0 else np.eye(4)
    return frame, poses, np.broadcast_to(base @ frame.pose, (len(flat), 4, 4)), batch


def frame_pose(model, q, link):
    """Pose of URDF link ``link`` in the root link frame: q (..., n) -> (..., 4, 4), the
    homogeneous transform ``x_root = R x_link + p`` (m). Raises ModelError for an unknown link,
    InputError for a bad ``q``."""
    _, _, pose, batch = _frame_poses(model, q, link)
    return np.array(pose).reshape(batch + (4, 4))


def frame_jacobian(model, q, link, reference="local"):
    """Jacobian of URDF link ``link``'s frame: q (..., n) -> (..., 6, n), rows (omega, v).

    ``J @ qd`` is the twist of the link frame, resolved according to ``reference``:

    - ``"local"``: in the link frame (body twist; Pinocchio's LOCAL). Its transpose maps a
      wrench on the link in the link frame, the form ``wrenches=`` takes, to joint torques.
    - ``"world"``: in the root link frame at its origin (spatial twist; Pinocchio's WORLD).
    - ``"local_world_aligned"``: the link frame's angular velocity and the velocity of its
      origin, both in root link axes (Pinocchio's LOCAL_WORLD_ALIGNED).

    Columns of joints that do not move the link are zero. Units: rad/s and m/s per unit of
    joint velocity. Raises ModelError for an unknown link, InputError for a bad ``reference``
    or ``q``.
    """
    if reference not in REFERENCES:
        raise InputError(f"reference must be one of {REFERENCES}, got {reference!r}")
    frame, poses, pose, batch = _frame_poses(model, q, link)
    B, n = len(pose), model.n_dof
    J = np.zeros((B, 6, n))
    for j, T in poses.items():  # column j: joint j's screw as a spatial twist in the root frame
        J[:, :, j] = (Ad(T) @ model.screws[j])
    if reference == "local":
        J = Ad(inverse(pose)) @ J
    elif reference == "local_world_aligned":  # shift the reference point to the link origin
        shift = np.zeros((B, 4, 4))
        shift[:] = np.eye(4)
        shift[:, :3, 3] = -pose[:, :3, 3]
        J = Ad(shift) @ J
    return J.reshape(batch + (6, n))
