"""First-order partial derivatives of inverse dynamics, in the style of IDSVA (S. Singh, R. P. Russell, P. M. Wensing, "Analytical second-order partial derivatives of
rigid-body inverse dynamics", IEEE/RSJ IROS 2022).

Everything is resolved in the base (world) frame, where a change of ``q_j`` moves the whole
subtree of joint j rigidly about the world screw ``S_j``. For body l with parent p (twists
``(omega, v)``, wrenches ``(t, f)``, ``ad*(V) = -ad(V)^T``, "k <= l": k is l or an ancestor of l):

- ``S_l = Ad(T_l) X_l``; ``V_l = sum_{k<=l} S_k qd_k``; ``Sd_l = ad(V_p) S_l`` (= dS_l/dt);
  ``A_l = (0, -g) + sum_{k<=l} (S_k qdd_k + Sd_k qd_k)`` (spatial acceleration incl. gravity);
  ``alpha_l = ad(A_p) S_l + ad(V_p) Sd_l``; world inertia ``I_l``, its rate
  ``Id_l = ad*(V_l) I_l - I_l ad(V_l)``, momentum ``h_l = I_l V_l``,
  force ``f_l = I_l A_l + ad*(V_l) h_l``; ``tau_i = S_i^T sum_{l>=i} f_l``.
- Subtree (composite) sums ``Ic, Bc, hc, F`` of ``I, Id, h, f``.

Differentiating with the rigid-subtree rule (``d S_l / d q_k = ad(S_k) S_l``,
``d I_l / d q_k = ad*(S_k) I_l - I_l ad(S_k)`` for k <= l) gives, for every pair (i, j),

- j <= i: ``d tau_i / d x_j = S_i^T (Ic_i x_j + Bc_i y_j + ad*(y_j) hc_i)``,
- i <  j: ``d tau_i / d x_j = S_i^T (z_j + Ic_j x_j + Bc_j y_j + ad*(y_j) hc_j)``,
- 0 when i and j lie on different branches,

with ``(x, y, z) = (alpha, Sd, ad*(S) F)`` for ``x = q``, ``(2 Sd, S, 0)`` for ``x = qd`` and
``(S, 0, 0)`` for ``x = qdd`` (the mass matrix). The second-order partials differentiate this
assembly once more (:mod:`hod_dynamics.algorithms.second_partials`).

A floating base adds the free joint's six columns as one joint at the root, in the base frame
of the moment (:func:`_floating_partials`). The compiled kernel computes the same formulas
(:mod:`hod_dynamics.kernels.partials_ir`, which also packs the model arrays it reads).

Sums along the tree (paths to the base, subtrees) are O(n) loops over bodies on whole arrays;
no Python loop runs over samples.
"""

import numpy as np

from ..arrays import batch_size
from ..errors import InputError
from ..kernels.backend import kernel_array, partials_kernels, resolve_backend
from ..model.robot_model import per_model
from ..model.spatial import rotate_inverse
from ..model.validation import check_model, check_velocity, name_non_finite, split_configuration
from .dispatch import one_world, world_plan
from .world_frame import adstar_times, flat_states, inputs, mv, outer, select, world_state


# -- assembly of d tau_i / d x_j ------------------------------------------------------------------
def _assemble(st, wrt):
    """d tau / d wrt (B, n, n) from the primal state."""
    x, y, z = inputs(st, wrt)
    low = outer(mv(st.Ic, st.S), x)
    w = mv(st.Ic, x)
    if y is not None:
        low = low + outer(mv(st.Bc, st.S) - adstar_times(st.S, st.hc), y)
        w = w + mv(st.Bc, y) + adstar_times(y, st.hc)
    if z is not None:
        w = w + z
    return select(st, low, outer(st.S, w))


# -- public API -----------------------------------------------------------------------------------


def id_partials(model, q, qd, qdd, *, backend=None):
    """First-order partial derivatives of inverse dynamics tau(q, qd, qdd).

    ``q, qd, qdd`` (..., n) in the model's joint order (rad, rad/s, rad/s^2; m for prismatic),
    broadcast together. Returns ``(dtau_dq, dtau_dqd, M)``, each (..., n, n) with
    ``[..., i, j] = d tau_i / d x_j`` (``M = d tau / d qdd`` is the mass matrix). Same numbers
    as Pinocchio's ``computeRNEADerivatives``. Raises InputError naming a bad argument.
    ``backend``: "numba", "numpy" or "auto" (None: see :mod:`hod_dynamics.kernels.backend`).

    Floating models: ``q`` (..., 7+n), ``qd = v``, ``qdd = a`` (..., 6+n); each result is
    (..., 6+n, 6+n), rows the base wrench (torque, force) then the joints, columns the base
    twist (omega, v) then the joints. ``dtau_dq`` is the derivative along the tangent of the
    configuration, ``q -> q (+) dq`` with the base pose moved to ``H exp(dq_base)`` (body
    frame, :func:`hod_dynamics.algorithms.floating.integrate`): Pinocchio's convention, in our
    (angular, linear) order.
    """
    out = one_world(model, "first_partials", (q, qd, qdd), backend)  # the fast path
    if out is not None:
        return out[0], out[1], out[2]
    if check_model(model).floating:
        return _floating_partials(model, q, qd, qdd, resolve_backend(backend) == "numba")
    compiled = resolve_backend(backend) == "numba"
    batch, flat = flat_states(model, "id_partials", finite=not compiled, q=q, qd=qd, qdd=qdd)
    n = model.n_dof
    if compiled:
        out = np.empty((3,) + batch + (n, n))
        plan = world_plan(model)
        if partials_kernels().first(plan.model, *flat,
                                    out.reshape(3, batch_size(batch), n, n)) != 0:
            name_non_finite(model, q=q, qd=qd, qdd=qdd)
        return tuple(out)
    st = world_state(model, *flat)
    return tuple(_assemble(st, wrt).reshape(batch + (n, n)) for wrt in ("q", "qd", "qdd"))


@per_model
def _with_free_joint(model):
    """The fixed-base tree of a floating model with the free joint as 6 leading columns.

    Columns 0..5 are the unit twists (omega_x, .., v_z) of the base body; the base inertia
    sits on column 5's body, the others are massless. :func:`world_state` (``base=6``) makes the
    six one joint (they all move the base body, whose twist is their sum).
    """
    from ..model.robot_model import RobotModel

    n = model.n_dof
    parents = np.r_[np.arange(-1, 5), np.where(model.parents < 0, 5, model.parents + 6)]
    inertias = np.concatenate([np.zeros((5, 6, 6)), model.base_inertia[None], model.inertias])
    refs = np.concatenate([np.broadcast_to(np.eye(4), (6, 4, 4)), model.references])
    names = [f"free_{c}" for c in ("wx", "wy", "wz", "vx", "vy", "vz")]
    return RobotModel(name=model.name, joint_names=names + list(model.joint_names),
                      joint_types=["revolute"] * 3 + ["prismatic"] * 3 + list(model.joint_types),
                      link_names=names + list(model.link_names), parents=parents,
                      screws=np.concatenate([np.eye(6), model.screws]), references=refs,
                      inertias=inertias, gravity=model.gravity, lower=np.full(n + 6, -np.inf),
                      upper=np.full(n + 6, np.inf), velocity_limits=np.full(n + 6, np.inf),
                      effort_limits=np.full(n + 6, np.inf), root_link=model.root_link)


def _floating_partials(model, q, v, a, compiled=False):
    """id_partials of a floating model, computed in the base frame of the moment.

    There the base pose is the identity and gravity is ``R^T g``; a tangent step of the base
    moves the whole robot rigidly (gravity stays), exactly as a joint at the root would: so
    the world-frame formulas hold with the free joint's six columns as one joint whose parent
    is the world (``world_state(..., base=6)``).
    """
    _, quat, joints = split_configuration(model, q)
    v = check_velocity(model, v, "qd")
    a = check_velocity(model, a, "qdd")
    nv = model.nv
    try:
        batch = np.broadcast_shapes(joints.shape[:-1], v.shape[:-1], a.shape[:-1])
    except ValueError:
        raise InputError(f"batch shapes do not broadcast: q {np.shape(q)}, qd {v.shape}, "
                         f"qdd {a.shape}") from None
    B = batch_size(batch)

    def flat(x, m):
        return x.reshape(B, m) if x.shape[:-1] == batch else np.broadcast_to(
            x, batch + (m,)).reshape(B, m)

    g0 = np.zeros((B, 6))
    g0[:, 3:] = -rotate_inverse(flat(quat, 4), model.gravity)
    qa = np.zeros((B, nv))
    qa[:, 6:] = flat(joints, model.n_dof)
    tree = _with_free_joint(model)
    if compiled:
        out = np.empty((3,) + batch + (nv, nv))
        kernels = partials_kernels()
        if kernels.first(kernels.model_arrays(tree, free_joint=True), qa,
                         kernel_array(flat(v, nv)), kernel_array(flat(a, nv)),
                         out.reshape(3, B, nv, nv), 6, g0) != 0:
            raise InputError("a non-finite value reached the floating partials")  # checked above
        return tuple(out)
    st = world_state(tree, qa, flat(v, nv), flat(a, nv), g0=g0, base=6)
    return tuple(_assemble(st, wrt).reshape(batch + (nv, nv)) for wrt in ("q", "qd", "qdd"))


__all__ = ["id_partials"]
