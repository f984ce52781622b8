"""The inverse dynamics as a linear map of the inertial parameters, and its time derivatives.

Newton-Euler gives every body's wrench linearly in its ten inertial parameters pi_b
(:mod:`hod_dynamics.model.inertia`): with ``E_p`` the spatial inertia of the unit parameter p,

    W_b = sum_p pi_b,p (E_p (dV_b + G_b) - ad(V_b)^T E_p V_b),

and a joint torque is ``tau_j = X_j^T sum_{b in subtree(j)} Ad_{C_{b,j}}^T W_b``. So
``tau = Y(q, qd, qdd) pi`` with ``pi = inertial_parameters(model).ravel()`` (Atkeson, An and
Hollerbach 1986; Khalil and Dombre, "Modeling, identification and control of robots", ch. 12).
Along a trajectory the twists, accelerations and transforms are jets, and so is every column:
the same Taylor arithmetic as :mod:`hod_dynamics.algorithms.recursive` (Kumar and Müller 2021) gives
``Y^(k)`` exactly, with ``Y^(k) pi = tau^(k)``.

Columns: 10 per moving body in the order of :func:`~hod_dynamics.model.robot_model.inertial_parameters`
(a floating base's body first), each block in Pinocchio's ``dynamicParameters`` order. Rows:
the model's joints (a floating model: the base wrench (torque, force) in the base frame first).
With ``friction=True``, three columns per joint follow, (viscous, coulomb, offset) of joint j at
``10 n_bodies + 3 j``: ``qd_j``, ``tanh(qd_j / v_s)`` and 1 in row j (and their derivatives), so
that ``Y @ r_[pi, friction_parameters(f)]`` adds the friction torque of
:class:`~hod_dynamics.algorithms.friction.FrictionModel` ``f``.
"""

import numpy as np

from ..arrays import batch_size, check_order
from ..errors import InputError
from ..kernels.backend import is_kernel_array, kernel_array, map_chunks, regressor_kernels, resolve_backend
from ..model.inertia import inertia_from_parameters
from ..model.validation import (check_jet, check_model, check_state, check_velocity, fixed_base_only,
                                floating_base_only)
from .floating import flat_motion
from .friction import DEFAULT_VS, FrictionModel
from .jets import cauchy_bias, cauchy_matTvec, factorials, to_taylor
from .recursive import body_acceleration, forward_taylor, root_taylor

_UNIT_INERTIAS = inertia_from_parameters(np.eye(10))      # E_p (10, 6, 6)
FRICTION_COLUMNS = ("viscous", "coulomb", "offset")


def n_columns(model, friction=False):
    """Number of columns of the regressor of ``model``: 10 per moving body (+ 3 per joint)."""
    return 10 * (model.n_dof + model.floating) + (3 * model.n_dof if friction else 0)


def regressor(model, q, qd, qdd, *, friction=False, v_s=DEFAULT_VS, backend=None):
    """The joint-torque regressor Y (..., nv, n_cols): ``Y @ pi.ravel() == inverse_dynamics``.

    ``q, qd, qdd`` (..., n) as for :func:`~hod_dynamics.inverse_dynamics` (a floating model:
    ``q`` (..., 7+n), ``v``, ``a`` (..., 6+n), and the rows start with the base wrench);
    ``pi = inertial_parameters(model)``. Columns: 10 per moving body (Pinocchio's
    ``dynamicParameters`` order, body frames, inertia about the frame origin, as Pinocchio's
    ``computeJointTorqueRegressor``), then with ``friction=True`` 3 per joint (viscous,
    coulomb, offset; ``v_s`` rad/s the Coulomb transition velocity, one number or (n,)).
    ``backend``: "numba", "numpy" or "auto". Returns (..., nv, n_cols) in N m (N) per unit
    parameter. Raises InputError naming the faulty argument.
    """
    if check_model(model).floating:
        v, a = check_velocity(model, qd, "v"), check_velocity(model, qdd, "a")
        try:
            v, a = np.broadcast_arrays(v, a)
        except ValueError:
            raise InputError(f"batch shapes do not broadcast: v {v.shape}, a {a.shape}") from None
        return regressor_time_derivatives_floating(model, q, np.stack([v, a], axis=-2), 0, friction=friction,
                                                   v_s=v_s, backend=backend)[..., 0, :, :]
    q, qd, qdd = check_state(model, q=q, qd=qd, qdd=qdd, what="regressor")
    return regressor_time_derivatives(model, np.stack([q, qd, qdd], axis=-2), 0, friction=friction,
                                      v_s=v_s, backend=backend)[..., 0, :, :]


def regressor_time_derivatives(model, qjet, order, *, friction=False, v_s=DEFAULT_VS, backend=None):
    """The regressor and its exact time derivatives: (..., order+1, n, n_cols), row k
    ``Y^(k)`` with ``Y^(k) @ pi.ravel() == time_derivatives(model, qjet, order)[..., k, :]``.

    ``qjet`` (..., order+3, n): q, qd, ..., q^(order+2) as for
    :func:`~hod_dynamics.time_derivatives` (floating models:
    :func:`regressor_time_derivatives_floating`). Columns as for :func:`regressor`; the
    friction columns' derivatives use qd^(0..order). ``backend``: "numba", "numpy" or "auto".
    """
    fixed_base_only(model, "regressor_time_derivatives")
    order = check_order(order)
    jet = check_jet(model, qjet, order + 3, what="regressor_time_derivatives")
    batch = jet.shape[:-2]
    flat = jet.reshape((batch_size(batch),) + jet.shape[-2:])
    return _regressor(model, flat, order, None, batch, friction, v_s, backend)


def regressor_time_derivatives_floating(model, q, vjet, order, *, friction=False, v_s=DEFAULT_VS, backend=None):
    """:func:`regressor_time_derivatives` of a floating model: ``q`` (..., 7+n) the
    configuration, ``vjet`` (..., order+2, 6+n) the velocity jet, as for
    :func:`~hod_dynamics.time_derivatives_floating`. Returns (..., order+1, 6+n, n_cols): the
    base wrench rows (torque, force in the base frame), then the joints; the base body's
    columns first."""
    floating_base_only(model, "regressor_time_derivatives_floating(model, q, vjet, order)")
    order = check_order(order)
    batch, flat, root = flat_motion(model, q, vjet, order)
    return _regressor(model, flat, order, root, batch, friction, v_s, backend)


def _regressor(model, flat, order, root, batch, friction, v_s, backend):
    """(*batch, order+1, nv, n_cols) of the validated flat joint jet (B, order+3, n) and the
    floating base's ``root`` (or None)."""
    K = order + 1
    compiled = resolve_backend(backend) == "numba"
    # the compiled kernel writes every entry of its (contiguous) output: no zeroing pass first
    make = np.empty if compiled and not friction else np.zeros
    Y = make((flat.shape[0], K, model.nv, n_columns(model, friction)))
    rigid = Y[..., :n_columns(model)]
    if compiled:
        _regressor_numba(model, flat, K, root, rigid)
    else:
        _regressor_numpy(model, flat, K, root, rigid)
    if friction:
        Y[..., model.nv - model.n_dof:, n_columns(model):] = friction_regressor(flat[:, 1:K + 1], v_s)
    return Y.reshape(batch + Y.shape[1:])


def friction_regressor(qdjet, v_s=DEFAULT_VS):
    """The friction columns (..., K, n, 3n) of the velocity jet ``qdjet`` (..., K, n) (rows qd,
    qdd, ..., qd^(K-1)): row j holds, at columns 3j..3j+2, the derivatives of ``qd_j``,
    ``tanh(qd_j / v_s)`` and 1 (the viscous, Coulomb and offset terms of
    :class:`~hod_dynamics.algorithms.friction.FrictionModel`)."""
    qdjet = np.asarray(qdjet, dtype=float)
    *batch, K, n = qdjet.shape
    v_s = np.broadcast_to(np.asarray(v_s, dtype=float), (n,))
    if not np.all(v_s > 0):
        raise InputError(f"v_s must be > 0 (rad/s), got {v_s.tolist()}")
    unit = np.ones(n)
    coulomb = FrictionModel(tuple(map(str, range(n))), unit, 0 * unit, 0 * unit, v_s).jet(qdjet)
    out = np.zeros(tuple(batch) + (K, n, 3 * n))
    j = np.arange(n)
    out[..., j, 3 * j] = qdjet
    out[..., j, 3 * j + 1] = coulomb
    out[..., 0, j, 3 * j + 2] = 1.0
    return out


def friction_parameters(friction):
    """The friction columns' parameters (3n,) of a :class:`~hod_dynamics.algorithms.friction.FrictionModel`:
    (viscous, coulomb, offset) of each joint in its order."""
    return np.stack([friction.viscous, friction.coulomb, friction.offset], axis=-1).ravel()


# -- numpy reference ---------------------------------------------------------------------------
def _parameter_wrenches(acc, V, K):
    """Body wrench coefficients per unit parameter (K, B, 10, 6): ``E_p acc_k + sum_j
    -ad(V_j)^T E_p V_{k-j}`` from acc (K, B, 6) and V (K+1, B, 6)."""
    E = _UNIT_INERTIAS
    return (np.einsum("prc,kbc->kbpr", E, acc)
            + cauchy_bias(V[:, :, None, :], np.einsum("prc,kbc->kbpr", E, V[:K]), K))


def regressor_taylor(model, qc, wc, K, root=None):
    """Taylor coefficients (K, B, nv, 10 n_bodies) of the regressor from those of q and qd
    (``qc``, ``wc`` (K+1, B, n)); ``root`` as for :func:`~hod_dynamics.algorithms.recursive.rnea_taylor`.

    Each body's parameter wrenches are carried down to the root, and every joint on the way
    takes its projection ``X_j^T`` (O(n depth) per sample; the reference, not the fast path).
    """
    n, B = model.n_dof, qc.shape[1]
    A, V, acc = forward_taylor(model, qc, wc, K, root)
    floating = root is not None
    rows, cols = 6 * floating, 10 * floating
    Y = np.zeros((K, B, model.nv, n_columns(model)))
    for i in range(n):
        U = _parameter_wrenches(acc[i], V[i], K)
        c = cols + 10 * i
        j = i
        while j >= 0:
            Y[:, :, rows + j, c:c + 10] = U @ model.screws[j]
            U = cauchy_matTvec(A[:K, :, j, None], U, K)
            j = model.parents[j]
        if floating:
            Y[:, :, :6, c:c + 10] = np.swapaxes(U, -1, -2)
    if floating:
        VR, GR = root
        Y[:, :, :6, :10] = np.swapaxes(_parameter_wrenches(body_acceleration(VR, GR, K), VR, K), -1, -2)
    return Y


def _regressor_numpy(model, flat, K, root, out):
    """out (B, K, nv, 10 n_bodies) from the joint jet ``flat`` (B, K+2, n) (and the floating
    base's ``root = (quat (B, 4), vbase (B, K+1, 6))``), in blocks of samples."""
    B = flat.shape[0]
    block = max(1, 2**22 // ((K + 1) * max(model.nv, 1) * out.shape[-1] * 8))
    for a in range(0, B, block):
        b = min(a + block, B)
        qc, wc = to_taylor(flat[a:b, :K + 1]), to_taylor(flat[a:b, 1:K + 2])
        r = None if root is None else root_taylor(model, root[0][a:b], root[1][a:b], K)
        Y = regressor_taylor(model, qc, wc, K, r) * factorials(K)[:, None, None, None]
        out[a:b] = np.moveaxis(Y, 0, 1)


# -- compiled path -----------------------------------------------------------------------------
def _regressor_numba(model, flat, K, root, out):
    """out (B, K, nv, 10 n_bodies) by the compiled kernel, in threads for large batches."""
    compiled = regressor_kernels()
    kernel, arrays = compiled.regressor_jets, compiled.regressor_arrays(model)
    jet = kernel_array(flat)
    if root is None:
        quat, vbase = np.zeros((0, 4)), np.zeros((0, K + 1, 6))
    else:
        quat, vbase = kernel_array(root[0]), kernel_array(root[1])
    work = out if is_kernel_array(out) else np.empty(out.shape)

    def chunk(a, b):
        return kernel(*arrays, jet[a:b], quat[a:b] if len(quat) else quat,
                      vbase[a:b] if len(vbase) else vbase, K, work[a:b])

    if not all(map_chunks(chunk, 0, flat.shape[0])):  # the checks named every fault already
        raise InputError("the joint jet holds a non-finite value")
    if work is not out:
        out[...] = work
