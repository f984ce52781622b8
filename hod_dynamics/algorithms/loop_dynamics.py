"""Inverse dynamics of a mechanism with kinematic loops and its time derivatives, to any order.

The tree of a :class:`~hod_dynamics.model.loop_model.LoopModel` moves as the closures allow: from
the jet of the actuated coordinates y, y', ..., y^(k+2), :mod:`hod_dynamics.algorithms.loop_closure`
gives the jet of every tree joint q, q', ..., q^(k+2); the tree's recursion (Kumar and Müller
2021) gives ``tau_tree^(0..k)``. The closures act on the tree with the generalised force
``Phi^T lambda`` (Phi the constraint Jacobian, lambda the closure forces), the actuators with
their torques tau_a on the actuated joints (S selects them):

    tau_tree = S^T tau_a + Phi^T lambda

Its passive rows give lambda, its actuated rows tau_a; differentiated k times (normalised Taylor
coefficients, a Cauchy product), order by order::

    Phi_p[0]^T lambda[k] = tau_p[k] - sum_{j=1..k} Phi_p[j]^T lambda[k-j]
    tau_a[k]             = tau_tree,a[k] - sum_{j=0..k} Phi_a[j]^T lambda[k-j]

the same matrix Phi_p[0]^T at every order (inverted once per sample), with Phi's own series from
:mod:`hod_dynamics.algorithms.loop_series`.

Closure forces: lambda multiplies the residual rows (``LoopModel.row_names``). Point rows: the
force (N) that frame B's body applies to frame A's body at the closure point, root link axes.
Weld rotation rows: the moment (N m) on A, root axes. Revolute rows r1, r2: the moment
``lambda_j (e x u_j)`` on A about the axis's normals (the frame of
:func:`~hod_dynamics.algorithms.loop_series.perpendicular_basis`). Where the rows are redundant
(a planar loop closed by a spatial constraint: 2 of a hinge's 5 rows) lambda is not unique and
tau_a is: the forces are carried by an independent set of rows (pivoted QR of Phi_p^T at the
model's assembly, chosen again at a sample where that set is ill-conditioned), the others are 0.

Joint friction, when given, is the actuated joints' (:mod:`hod_dynamics.algorithms.friction`),
added to tau_a; the passive joints have none here.
"""

import math
from dataclasses import dataclass

import numpy as np

from ..arrays import check_finite, check_order, float_array
from ..errors import InputError
from ..model.loop_model import LoopModel
from ..model.robot_model import per_model
from .dispatch import time_derivatives_recursive
from .friction import load_friction
from .loop_closure import closed_assembly, joint_jet
from .loop_series import ClosureSeries


@dataclass(frozen=True)
class LoopDynamics:
    """What :func:`constrained_dynamics` returns (time derivatives, not Taylor coefficients), for
    a batch shape (...) of samples, K = order + 1:

    - ``tau_a`` (..., K, na): the actuator torques (N m or N) and their derivatives, columns
      ``model.actuated_joints`` (friction included when given);
    - ``lam`` (..., K, m): the closure forces lambda^(0..order), columns ``model.row_names``
      (N, N m; see the module docstring), 0 on the rows that ``rows`` leaves out;
    - ``qjet`` (..., order+3, n): the tree's joint jet q^(0..order+2), tree order;
    - ``tau_tree`` (..., K, n): the tree's inverse dynamics along it (no friction);
    - ``rows`` (..., m) bool: the closure rows that carry lambda at each sample.
    """

    tau_a: np.ndarray
    lam: np.ndarray
    qjet: np.ndarray
    tau_tree: np.ndarray
    rows: np.ndarray


def _actuated_jet(model, yjet, rows, name="yjet"):
    """Validated (..., rows, na) jet of the actuated joints (the first ``rows`` rows are used)."""
    a = float_array(name, yjet)
    na = model.n_dof
    if a.ndim < 2 or a.shape[-1] != na or a.shape[-2] < rows:
        raise InputError(f"{name} must have shape (..., r, {na}) with r >= {rows} (rows y^(0..{rows - 1}) of the "
                         f"actuated joints {list(model.actuated_joints)} of '{model.name}'), got {a.shape}")
    a = a[..., :rows, :]
    check_finite(name, a, lambda bad: f"derivative {bad[-2]}, joint '{model.actuated_joints[bad[-1]]}'")
    return a


def _guess(model, guess, B):
    if guess is None:
        return None
    g = float_array("guess", guess)
    n = model.tree.n_dof
    if g.shape == (n,) or (g.ndim >= 2 and g.shape[-1] == n and int(np.prod(g.shape[:-1])) == B):
        check_finite("guess", g, lambda bad: f"joint '{model.tree.joint_names[bad[-1]]}'")
        return g if g.ndim == 1 else g.reshape(B, n)
    raise InputError(f"guess must hold the {n} tree joint positions {list(model.tree.joint_names)}, once or "
                     f"per sample, got shape {g.shape}")


@per_model
def _assembly_rows(model):
    """The independent closure rows at the model's closed assembly (pivoted QR of Phi_p^T) and
    the condition number of Phi_p on them there."""
    series = ClosureSeries(model, 1, 1)
    series.q[:, 0] = closed_assembly(model)
    series.fill(0)
    Jp = series.jacobian(0)[0][:, model.passive_index]
    rows = _pick_rows(Jp)
    return rows, float(np.linalg.cond(Jp[rows]))


def _pick_rows(Jp):
    from scipy.linalg import qr

    _, _, pivots = qr(Jp.T, pivoting=True, mode="economic")
    return np.sort(pivots[:Jp.shape[1]])


def _select_rows(model, Jp):
    """Indices (B, n_p) of independent rows of Phi_p (B, m, n_p): the assembly's, chosen
    again at a sample where they are a thousand times worse conditioned than there."""
    B, m, npas = Jp.shape
    if m == npas:
        return np.broadcast_to(np.arange(m), (B, m)).copy()
    chosen, reference = _assembly_rows(model)
    rows = np.broadcast_to(chosen, (B, npas)).copy()
    cond = np.linalg.cond(np.take_along_axis(Jp, rows[:, :, None], axis=1))
    for b in np.flatnonzero(~(cond <= max(1e3 * reference, 1e6))):
        rows[b] = _pick_rows(Jp[b])
    return rows


def _forces(model, Phi, tc):
    """lambda and tau_a coefficients (B, K, m), (B, K, na) from Phi's coefficients (B, K, m, n)
    and tau_tree's (B, K, n); and the rows used (B, m) bool."""
    ia, ip = model.actuated_index, model.passive_index
    B, K, m, _ = Phi.shape
    sel = _select_rows(model, Phi[:, 0][:, :, ip])
    rows = np.zeros((B, m), dtype=bool)
    rows[np.arange(B)[:, None], sel] = True
    chosen = np.take_along_axis(Phi, sel[:, None, :, None], axis=2)          # (B, K, n_p, n)
    passive, actuated = chosen[..., ip], chosen[..., ia]
    inverse = np.linalg.inv(np.swapaxes(passive[:, 0], 1, 2))                 # (Phi_p,sel[0]^T)^-1
    lam = np.zeros((B, K, len(ip)))
    for k in range(K):
        rhs = tc[:, k][:, ip] - sum(np.einsum("bri,br->bi", passive[:, j], lam[:, k - j]) for j in range(1, k + 1))
        lam[:, k] = np.einsum("bij,bj->bi", inverse, rhs)
    tau_a = tc[:, :, ia].copy()
    for k in range(K):
        for j in range(k + 1):
            tau_a[:, k] -= np.einsum("bri,br->bi", actuated[:, j], lam[:, k - j])
    full = np.zeros((B, K, m))
    np.put_along_axis(full, np.broadcast_to(sel[:, None, :], (B, K, len(ip))), lam, axis=2)
    return full, tau_a, rows


def constrained_dynamics(model, yjet, order, *, guess=None, friction=None, method="recursive", backend=None):
    """Actuator torques and closure forces of a mechanism with loops and their time derivatives
    up to ``order``, exactly, from the motion of its actuated joints.

    Args:
        model: a :class:`~hod_dynamics.model.loop_model.LoopModel`.
        yjet: (..., order+3, na) rows y, y', ..., y^(order+2) of the actuated joints (rad or m;
            more rows are ignored), columns ``model.actuated_joints``; any batch shape.
        order: k >= 0.
        guess: None: the samples (the batch flattened) are a motion, closed in order from the
            model's assembly (see :mod:`hod_dynamics.algorithms.loop_closure`); (n_tree,): from
            these tree positions instead; (..., n_tree): one start per sample, closed each on its
            own (positions known to be near, e.g. a previous solution).
        friction: None, ``"urdf"``, a YAML path, a mapping or a FrictionModel of the actuated
            joints (see :func:`~hod_dynamics.algorithms.friction.load_friction`).
        method: ``"recursive"`` or ``"closed_form"``, the tree's (see
            :func:`~hod_dynamics.time_derivatives`); backend: as there.

    Returns:
        :class:`LoopDynamics` (tau_a, lam, qjet, tau_tree, rows).

    Raises:
        InputError for bad shapes, values or order; ClosureError where a configuration cannot be
        closed; ActuationError where the actuated joints do not determine the mechanism.
    """
    if not isinstance(model, LoopModel):
        raise InputError(f"constrained_dynamics takes a mechanism with loops (LoopModel), got {type(model).__name__}")
    order = check_order(order)
    K = order + 1
    jet = _actuated_jet(model, yjet, order + 3)
    batch = jet.shape[:-2]
    flat = jet.reshape((-1, order + 3, model.n_dof))
    fric = load_friction(friction, model)
    n, m = model.tree.n_dof, model.n_rows
    series, _ = joint_jet(model, flat, _guess(model, guess, len(flat)))
    fact = np.array([1.0 / math.factorial(j) for j in range(order + 3)])
    qjet = series.q / fact[None, :, None]
    if method == "recursive":
        tau = time_derivatives_recursive(model.tree, qjet, order, None, backend)
    elif method == "closed_form":
        from .closed_form import time_derivatives_closed_form

        tau = time_derivatives_closed_form(model.tree, qjet, order, None)
    else:
        raise InputError(f"method must be 'recursive' or 'closed_form', got {method!r}")
    Phi = np.stack([series.jacobian(j, order) for j in range(K)], axis=1)     # (B, K, m, n)
    lam, tau_a, rows = _forces(model, Phi, tau * fact[None, :K, None])
    tau_a = tau_a / fact[None, :K, None]
    if fric is not None:
        tau_a = tau_a + fric.jet(flat[:, 1:order + 2])
    return LoopDynamics(tau_a=tau_a.reshape(batch + (K, model.n_dof)), lam=(lam / fact[None, :K, None]).reshape(
        batch + (K, m)), qjet=qjet.reshape(batch + (order + 3, n)), tau_tree=tau.reshape(batch + (K, n)),
        rows=rows.reshape(batch + (m,)))


def loop_time_derivatives(model, yjet, order, *, friction=None, method="recursive", backend=None, wrenches=None):
    """:func:`~hod_dynamics.time_derivatives` of a loop model: tau_a^(0..order) (..., order+1, na)."""
    if wrenches:
        raise InputError(f"wrenches on the links of the mechanism with loops '{model.name}' are not supported")
    return constrained_dynamics(model, yjet, order, friction=friction, method=method, backend=backend).tau_a


def loop_inverse_dynamics(model, y, yd, ydd, *, friction=None, backend=None, wrenches=None):
    """:func:`~hod_dynamics.inverse_dynamics` of a loop model: tau_a (..., na) of the actuated
    positions, velocities and accelerations (..., na) each, broadcast together."""
    arrays = {"q": float_array("q", y), "qd": float_array("qd", yd), "qdd": float_array("qdd", ydd)}
    for key, a in arrays.items():
        if a.ndim == 0 or a.shape[-1] != model.n_dof:
            raise InputError(f"{key} must have shape (..., {model.n_dof}) (the actuated joints "
                             f"{list(model.actuated_joints)} of '{model.name}'), got shape {a.shape}")
    try:
        shape = np.broadcast_shapes(*(a.shape for a in arrays.values()))
    except ValueError:
        raise InputError("batch shapes do not broadcast: " + ", ".join(
            f"{k} {a.shape}" for k, a in arrays.items())) from None
    jet = np.stack([np.broadcast_to(a, shape) for a in arrays.values()], axis=-2)
    return loop_time_derivatives(model, jet, 0, friction=friction, backend=backend, wrenches=wrenches)[..., 0, :]
