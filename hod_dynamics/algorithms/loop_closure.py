"""The passive joints of a loop model from its actuated ones: positions, then every derivative.

Positions. Given the actuated positions y, the passive ones solve psi(q) = 0 (the closure
residual without spurious zeros, :meth:`~hod_dynamics.algorithms.loop_series.ClosureSeries.closing`)
by Newton's method with Levenberg-Marquardt steps ``(J^T J + mu D) dq = -J^T psi`` (D = diag(J^T J),
mu divided by 3 after a step that lowers |psi|, else multiplied by 4 and the step refused): near
the solution Gauss-Newton (quadratic, the least-squares step where closure rows are redundant, a
planar loop closed in space), far from it a trust region. A sequence of samples (a trajectory;
any batch, flattened) is solved in order, each sample from the one before moved by the
first-order predictor ``dq_p = -Phi_p^+ Phi_a dy``, the first one from the model's assembly
(itself closed first); a sample is accepted when Newton converged and moved it less than a
quarter of the predicted step and that step is short (STEP), else the way to it is cut into
steps (halved until they close on the branch, doubled again after): the passive joints follow
the branch of the assembly (an open four-bar stays open), whatever the samples' spacing.

Derivatives, order by order. With the passive coefficient j set to 0, the series arithmetic
gives ``phi[j] = Phi_a y[j] + r_j``; the passive one solves ``Phi_p q_p[j] = -phi[j]``, the same
matrix at every order (its pseudo-inverse from one SVD per sample).

The same SVD says whether the actuated joints determine the mechanism: ``rank Phi_p < n_p``
leaves passive joints free (the ones in Phi_p's null space are named), and actuated joints with
a part of their columns outside the range of Phi_p are constrained among themselves (their
torques are not unique): both an :class:`~hod_dynamics.errors.ActuationError`.
"""

import math

import numpy as np

from ..errors import ActuationError, ClosureError
from ..model.robot_model import per_model
from .loop_series import ClosureSeries

TOLERANCE = 1e-11     # max |psi| (m, and the unit vectors' differences) of a closed configuration
MAX_ITERATIONS = 50
RANK_TOLERANCE = 1e-9  # singular values below this share of the largest entry of Phi count as zero
HALVINGS = 20          # a step from one sample to the next is halved down to 2^-HALVINGS of it
STEP = 0.5             # rad or m: the largest predicted change of a passive joint accepted in one step


def newton(loop, y, q, tol=TOLERANCE, max_iter=MAX_ITERATIONS):
    """Close B configurations: ``y`` (B, na) actuated positions, ``q`` (B, n) guesses (their
    actuated entries replaced by y). Returns (q (B, n), converged (B,) bool, max |psi| (B,))."""
    ia, ip = loop.actuated_index, loop.passive_index
    q = np.array(q, dtype=float)
    q[:, ia] = y
    B, npas = len(q), len(ip)
    series = ClosureSeries(loop, B, 1)

    def evaluate(qq):
        series.q[:, 0] = qq
        series.fill(0)
        r, J = series.closing()
        err = np.max(np.abs(r), axis=1) if r.size else np.zeros(B)
        err[~np.isfinite(err)] = np.inf
        return r, J, err, np.where(np.isfinite(err), np.einsum("br,br->b", r, r), np.inf)

    r, J, err, f = evaluate(q)
    mu = np.full(B, 1e-6)
    polished = np.zeros(B, dtype=bool)
    for _ in range(max_iter):
        done = err <= tol
        if not npas or np.all(done & polished):
            break
        polished |= done                  # one more step after convergence polishes to rounding
        Jp = J[:, :, ip]
        H = np.einsum("bri,brj->bij", Jp, Jp)
        d = np.einsum("bii->bi", H)
        d = d + 1e-12 * np.max(d, axis=1, keepdims=True) + 1e-300
        step = -np.linalg.solve(H + mu[:, None, None] * (d[:, :, None] * np.eye(npas)),
                                np.einsum("bri,br->bi", Jp, r)[..., None])[..., 0]
        step[~np.isfinite(step)] = 0.0
        trial = q.copy()
        trial[:, ip] += step
        r2, J2, err2, f2 = evaluate(trial)
        better = (f2 < f) | (done & (f2 <= f))
        q[better], r[better], J[better], err[better], f[better] = (
            trial[better], r2[better], J2[better], err2[better], f2[better])
        mu = np.where(better, np.maximum(mu / 3.0, 1e-12), np.minimum(mu * 4.0, 1e12))
    return q, err <= tol, err


def _factor(loop, J, sample0=0):
    """SVD of Phi_p per sample and the actuation checks: J (B, m, n) -> (U_r, s_r, V_r) of Phi_p
    restricted to its rank n_p, i.e. its pseudo-inverse V_r diag(1/s_r) U_r^T. Raises
    ActuationError (the sample counted from ``sample0``)."""
    ia, ip = loop.actuated_index, loop.passive_index
    scale = max(1.0, float(np.max(np.abs(J)))) if J.size else 1.0
    Jp = J[:, :, ip]
    U, s, Vt = np.linalg.svd(Jp, full_matrices=False)           # (B, m, k), (B, k), (B, k, n_p)
    rank = np.sum(s > RANK_TOLERANCE * scale, axis=1)
    bad = np.flatnonzero(rank < len(ip))
    if bad.size:
        b = int(bad[0])
        _, sb, vb = np.linalg.svd(Jp[b])
        free = vb[int(rank[b]):]
        joints = [loop.passive_joints[i] for i in np.flatnonzero(np.max(np.abs(free), axis=0) > 1e-6)]
        raise ActuationError(
            f"the actuated joints {_names(loop.actuated_joints)} do not determine the mechanism '{loop.name}': the "
            f"closures fix {int(rank[b])} of its {len(ip)} passive coordinates (sample {b + sample0}), so the "
            f"passive joints {_names(joints)} can move with the actuated ones held (actuate one of them, lock one, "
            "or add a closure; a rod with ball joints at both ends spins freely about its own axis)",
            kind="underdetermined", joints=joints, sample=b + sample0)
    # actuated columns with a part outside range(Phi_p): the closures constrain the actuated joints
    Ja = J[:, :, ia]
    outside = Ja - U @ (np.swapaxes(U, 1, 2) @ Ja)
    norms = np.linalg.norm(outside, axis=1)                       # (B, na)
    bad = np.flatnonzero(np.any(norms > 1e-7 * scale, axis=1))
    if bad.size:
        b = int(bad[0])
        joints = [loop.actuated_joints[i] for i in np.flatnonzero(norms[b] > 1e-7 * scale)]
        raise ActuationError(
            f"the actuated joints {_names(joints)} of '{loop.name}' are not independent: the closures constrain them among "
            f"themselves (sample {b + sample0}), so their torques are not unique and most of their positions "
            "cannot be closed; actuate fewer joints",
            kind="overdetermined", joints=joints, sample=b + sample0)
    return U, s, Vt


def _names(joints, shown=8):
    """'a', 'b', ... and N more: joint names for a one-line message."""
    text = ", ".join(f"'{j}'" for j in joints[:shown])
    return text + (f" and {len(joints) - shown} more" if len(joints) > shown else "")


def _pinv(factors):
    U, s, Vt = factors
    return np.swapaxes(Vt, 1, 2) @ (np.swapaxes(U, 1, 2) / s[:, :, None])


def _unclosed(loop, q, err, conv, sample0=0, what=None):
    """ClosureError for the first sample that did not close (ActuationError first when the
    actuated joints are constrained among themselves there, the likelier cause)."""
    b = int(np.flatnonzero(~conv)[0])
    series = ClosureSeries(loop, 1, 1)
    series.q[:, 0] = q[b]
    series.fill(0)
    residual = series.residual(0)[0]
    if np.all(np.isfinite(q[b])):
        J = series.jacobian(0)
        if np.linalg.matrix_rank(J[0][:, loop.passive_index]) == len(loop.passive_index):
            _factor(loop, J, b + sample0)
    starts = np.cumsum([0] + [c.n_rows for c in loop.closures])
    worst = max(range(len(loop.closures)), key=lambda c: np.max(np.abs(residual[starts[c]:starts[c + 1]])))
    y = q[b, loop.actuated_index]
    where = what or f"sample {b + sample0}"
    raise ClosureError(
        f"cannot close the loop '{loop.closures[worst].name}' of '{loop.name}' at {where} (actuated positions "
        f"{np.round(y, 6).tolist()}): residual {err[b]:.3g} after Newton's method; the positions may be outside "
        "the mechanism's workspace, or past a singular configuration from its assembly",
        closure=loop.closures[worst].name, sample=b + sample0, residual=float(err[b]))


@per_model
def closed_assembly(loop):
    """The model's assembly closed at its own actuated positions: (n,). Raises ClosureError."""
    q, conv, err = newton(loop, loop.assembly[None, loop.actuated_index], loop.assembly[None])
    if not conv[0]:
        _unclosed(loop, q, err, conv, what="its assembly")
    return q[0]


def _predicted(loop, q_last, y, sample):
    """q_last (n,) moved to the actuated positions y (T, na) by -Phi_p^+ Phi_a dy (``sample``:
    the first of them, for the message of an ActuationError at q_last)."""
    series = ClosureSeries(loop, 1, 1)
    series.q[:, 0] = q_last
    series.fill(0)
    J = series.jacobian(0)
    guess = np.repeat(q_last[None], len(y), axis=0)
    guess[:, loop.actuated_index] = y
    gain = -_pinv(_factor(loop, J, sample))[0] @ J[0][:, loop.actuated_index]
    guess[:, loop.passive_index] += (y - q_last[loop.actuated_index]) @ gain.T
    return guess


def _steps(loop, q_last, y, sample):
    """Newton from the predictions of q_last to y (T, na): the leading run of samples that
    closed within a quarter of their predicted step, a step of at most STEP (q (T, n), how
    many). Both bounds keep the branch: the other branch of a loop is further from a
    prediction than a quarter of a step that short, except near the singular configurations
    between the branches."""
    ip = loop.passive_index
    guess = _predicted(loop, q_last, y, sample)
    q, conv, _ = newton(loop, y, guess)
    moved = np.max(np.abs(q[:, ip] - guess[:, ip]), axis=1)
    predicted = np.max(np.abs(guess[:, ip] - q_last[ip]), axis=1)
    ok = conv & (moved <= 0.25 * predicted + 1e-9) & (predicted <= STEP)
    return q, len(ok) if ok.all() else int(np.argmin(ok))


def _continued(loop, q_last, y, sample):
    """One sample closed from q_last through intermediate actuated positions on the straight
    line to y: a step that does not close on the branch is halved (down to 2^-HALVINGS of the
    whole), one that does is doubled for the next: (n,)."""
    y0 = q_last[loop.actuated_index]
    q, done, step = q_last, 0.0, 0.5
    while done < 1.0:
        step = min(step, 1.0 - done)
        moved, k = _steps(loop, q, (y0 + (done + step) * (y - y0))[None], sample)
        if k:
            q, done, step = moved[0], done + step, 2.0 * step
        elif step > 2.0 ** -HALVINGS:
            step /= 2.0
        else:
            break
    if done >= 1.0:
        return q
    q, conv, err = newton(loop, y[None], q_last[None])
    if not conv[0]:
        _unclosed(loop, q, err, conv, sample)
    raise ClosureError(
        f"the loops of '{loop.name}' close at sample {sample} (actuated positions {np.round(y, 6).tolist()}) only "
        "on another branch than the sample before: the motion passes a singular configuration (a toggle, "
        "a gimbal lock of a chain of revolute joints) between them", closure=None, sample=sample, residual=0.0)


def follow(loop, y, start):
    """Close the samples y (T, na) in order from the closed configuration ``start`` (n,), each
    from the one before (chunks predicted and solved together while they stay on the branch;
    a step halved where a sample does not). Returns q (T, n)."""
    out = np.empty((len(y), loop.tree.n_dof))
    last, i, chunk = start, 0, 16
    while i < len(y):
        q, k = _steps(loop, last, y[i:i + chunk], i)
        if k == 0 and chunk > 1:
            chunk = 1
            continue
        if k == 0:
            q, k = _continued(loop, last, y[i], i)[None], 1
        out[i:i + k] = q[:k]
        last, i = out[i + k - 1], i + k
        chunk = min(256, 2 * chunk) if k == len(q) else max(1, k)
    return out


def positions(loop, y, guess=None):
    """Tree positions q (B, n) closing every loop at the actuated positions y (B, na).

    ``guess``: None follows the samples in order from the model's assembly (:func:`follow`);
    (n,) tree positions follow them from there instead (closed first); (B, n) are one guess
    per sample, each closed by Newton's method on its own (a sample that does not close raises).
    Raises ClosureError, ActuationError."""
    if guess is not None and np.ndim(guess) == 2:
        q, conv, err = newton(loop, y, guess)
        if not conv.all():
            _unclosed(loop, q, err, conv)
        return q
    if guess is None:
        start = closed_assembly(loop)
    else:
        q, conv, err = newton(loop, np.asarray(guess)[None, loop.actuated_index], np.asarray(guess)[None])
        if not conv[0]:
            _unclosed(loop, q, err, conv, what="the guess")
        start = q[0]
    return follow(loop, y, start)


def joint_jet(loop, yjet, guess=None):
    """The tree's joint jet from the actuated one: ``yjet`` (B, K, na) rows y^(0..K-1) ->
    (series (the :class:`ClosureSeries` of the motion, all K coefficients filled), factors of
    Phi_p per sample (see :func:`_factor`)). ``series.q`` holds the normalised Taylor
    coefficients q[j] = q^(j) / j! (B, K, n)."""
    B, K, _ = yjet.shape
    ia, ip = loop.actuated_index, loop.passive_index
    series = ClosureSeries(loop, B, K)
    series.q[:, 0] = positions(loop, yjet[:, 0], guess)
    fact = np.array([1.0 / math.factorial(j) for j in range(K)])
    series.q[:, 1:, ia] = yjet[:, 1:] * fact[1:, None]
    series.fill(0)
    factors = _factor(loop, series.jacobian(0))
    P = _pinv(factors)                                               # (B, n_p, m), every order
    for k in range(1, K):
        series.fill(k)                                   # with q_p[k] = 0: phi[k] = Phi_a y[k] + r_k
        series.q[:, k, ip] = -np.einsum("bij,bj->bi", P, series.residual(k))
        series.fill(k)
    return series, factors
