"""A rigid payload on a known arm: the 10 inertial parameters of a tool or an object attached to
a link, identified from a short recording with the rest of the model fixed.

The arm's model (the prior) stays as it is; the payload adds pi_p (mass, first moments, inertia
about the link's frame origin, in that link's frame) to the moving body the link belongs to:

    tau_measured - tau_arm(q, qd, qdd) = Y_b(q, qd, qdd) T pi_p [+ Y_f(qd) f]

with Y_b the regressor's 10 columns of that body, T the map of parameters from the link's
frame to the body's, and, optionally, joint friction f fitted with it (viscous, Coulomb,
offset per joint; or a known friction model subtracted; or none). The samples are reduced per
joint to a triangular factor, as for the whole arm (:mod:`~hod_dynamics.identification.fit`),
weighted by each joint's noise level from a first pass; standard errors from the weighted
least-squares covariance, inflated by the residual's lag-one autocorrelation.

Excitation: a payload parameter is *not excited* when its standard error exceeds
:data:`TOLERANCE` (10 %) of its natural size: the mass's (or 0.1 kg), times ``size`` (default
:data:`PAYLOAD_SIZE`, 0.1 m: the payload's extent) for a first moment, times size^2 for a
second moment. With any parameter not excited the identification is refused, naming them
(and the friction parameters the recording cannot separate), rather than returning a
payload the data did not determine.

The estimate: the least-squares fit with the payload physically consistent (pseudo-inertia
positive semidefinite: a point mass allowed) and viscous and Coulomb friction >= 0, a small
convex program (cvxpy, Clarabel).
"""

from dataclasses import dataclass, field
from typing import NamedTuple, Optional, Tuple

import numpy as np

from ..algorithms.dynamics import inverse_dynamics
from ..algorithms.friction import DEFAULT_VS, FrictionModel
from ..algorithms.regressors import regressor
from ..errors import InputError
from ..kernels.backend import single_threaded_blas
from ..model.inertia import PARAMETER_NAMES, com_form, inertia_from_parameters, parameters_from_inertia
from ..model.spatial import transform_inertia
from .cross_validation import triangular
from .defaults import PAYLOAD_SIZE
from .fit import CHUNK, check_names, prior_friction, segment_edges

TOLERANCE = 0.10
NAMES = tuple(f"payload {p}" for p in PARAMETER_NAMES)


class Run(NamedTuple):
    """An identification recording: its ``name`` and its analysis."""

    name: str
    analysis: object


@dataclass(frozen=True, eq=False)
class PayloadIdentification:
    """The result of :func:`identify_payload`: ``link`` the link the payload is attached to;
    ``parameters`` (10,) the payload's inertial parameters in that link's frame (m, m c, inertia
    about the link's origin), ``standard_errors`` (10,), ``scales`` (10,) their natural sizes;
    ``model`` the arm with the payload; ``arm`` the arm without; ``friction`` the joint
    friction (fitted, given, or None); ``prior_friction`` the arm's friction fitted on the same
    recordings without the payload (the prior column); ``noise`` (n,) N m; ``recordings``."""

    link: str
    parameters: np.ndarray
    standard_errors: np.ndarray
    scales: np.ndarray
    model: object
    arm: object
    friction: Optional[FrictionModel]
    prior_friction: Optional[FrictionModel]
    noise: np.ndarray
    recordings: Tuple[Run, ...]
    friction_fitted: bool = False
    notes: Tuple[str, ...] = field(default=())

    @property
    def mass(self):
        return float(self.parameters[0])

    @property
    def com(self):
        """(3,) m, in the link's frame."""
        return com_form(self.parameters)[1]

    @property
    def inertia_about_com(self):
        """(3, 3) kg m^2, axes of the link's frame."""
        return com_form(self.parameters)[2]


def identify_payload(model, analyses, link, *, friction=True, v_s=DEFAULT_VS, size=PAYLOAD_SIZE, names=None,
                     progress=None):
    """Identify a rigid payload attached to ``link`` of ``model`` (the arm, known) from
    recordings of the arm carrying it (``analyses``: analyses made with ``model``).

    ``friction``: True (fit viscous, Coulomb and offset friction with the payload), a
    :class:`~hod_dynamics.algorithms.friction.FrictionModel` (known: subtracted), or False
    (none); ``size`` (m) the payload's extent for the excitation test; ``names`` a label per
    recording. Returns :class:`PayloadIdentification`. Raises InputError for a link that is
    not in the model or does not move, recordings without efforts, and recordings that do not
    excite the payload's parameters (named)."""
    with single_threaded_blas():
        return _identify_payload(model, analyses, link, friction, v_s, size, names, progress)


def _identify_payload(model, analyses, link, friction, v_s, size, names, progress):
    frame = payload_frame(model, link)
    if not (np.isfinite(size) and size > 0):
        raise InputError(f"size must be a length > 0 (m), got {size!r}")
    analyses = list(analyses)
    if not analyses:
        raise InputError("payload identification needs at least one recording")
    names = list(names) if names is not None else [f"recording {k + 1}" for k in range(len(analyses))]
    check_names(names, len(analyses), "names")
    say = progress or (lambda message: None)
    fit_friction = friction is True
    known = friction if isinstance(friction, FrictionModel) else None
    T = _link_to_body(frame.pose)
    n = model.n_dof
    k = 10 + (3 * n if fit_friction else 0)
    factors, counts = np.zeros((n, k + 1, k + 1)), np.zeros(n, dtype=int)
    for name, analysis in zip(names, analyses):
        say(f"regressor of {name} ({len(analysis.t)} samples)")
        for X, target, ok in _rows(model, analysis, frame.body, T, fit_friction, known, v_s):
            for j in range(n):
                rows = np.column_stack([X[ok[:, j], j], target[ok[:, j], j]])
                counts[j] += int(ok[:, j].sum())
                factors[j] = triangular(np.vstack([factors[j], rows]), k + 1)
    if counts.sum() < 10 * k:
        raise InputError(f"the recordings hold {counts.sum()} joint samples with an effort, too few for the {k} "
                         "payload and friction parameters (record longer: tens of seconds)")
    theta, noise, R = _weighted(factors, counts, k)
    inflation = _inflation(model, analyses, frame.body, T, fit_friction, known, v_s, theta, noise)
    se = _standard_errors(R, k, counts.sum(), inflation)
    m_scale = max(abs(theta[0]), 0.1)
    scales = np.array([m_scale] + [m_scale * size] * 3 + [m_scale * size ** 2] * 6)
    _check_excited(se, scales, model.joint_names if fit_friction else ())
    say("payload fit (semidefinite program)")
    full = _consistent(R, k, scales, fit_friction, n)
    pi = full[:10]
    fric = known
    if fit_friction:
        f = full[10:].reshape(n, 3)
        fric = FrictionModel(model.joint_names, coulomb=np.maximum(f[:, 1], 0), viscous=np.maximum(f[:, 0], 0),
                             offset=f[:, 2], v_s=np.full(n, v_s))
    from ..model.robot_model import inertial_parameters

    total = inertial_parameters(model)
    total[frame.body] += T @ pi
    runs = tuple(Run(name, a) for name, a in zip(names, analyses))
    return PayloadIdentification(link, pi, se[:10], scales, model.with_inertial_parameters(total), model, fric,
                                 prior_friction(model, analyses, v_s), noise, runs, fit_friction)


def payload_frame(model, link):
    """The model's :class:`~hod_dynamics.model.robot_model.Frame` of ``link``; InputError naming
    the links when it is unknown or fixed to the base."""
    if not isinstance(link, str) or link not in model.frames:
        moving = sorted(name for name, f in model.frames.items() if f.body >= 0)
        raise InputError(f"no link {link!r} in model '{model.name}' to attach a payload to (its moving links: "
                         f"{', '.join(moving)})")
    frame = model.frames[link]
    if frame.body < 0:
        raise InputError(f"link {link!r} is fixed to the base of model '{model.name}': a payload on it changes no "
                         "joint torque; attach it to a link that moves")
    return frame


def _link_to_body(pose):
    """(10, 10) the map of inertial parameters in a link's frame to its body's (the link's pose in it)."""
    return np.column_stack([parameters_from_inertia(transform_inertia(inertia_from_parameters(e), pose))
                            for e in np.eye(10)])


def _rows(model, analysis, body, T, fit_friction, known, v_s, chunk=CHUNK):
    """Per chunk of samples: X (m, n, k) the payload's (and friction's) columns, target (m, n)
    the effort the arm does not explain, ok (m, n) the usable samples."""
    effort = analysis.effort
    if effort is None:
        raise InputError(f"the joint states on {analysis.states.topic} carry no efforts; identification needs the "
                         "measured joint torques")
    q = analysis.result.qjet
    edges = segment_edges(analysis)
    for a in range(0, len(q), chunk):
        b = min(a + chunk, len(q))
        Y = regressor(model, q[a:b, 0], q[a:b, 1], q[a:b, 2], friction=fit_friction, v_s=v_s)
        X = Y[..., 10 * body:10 * body + 10] @ T
        if fit_friction:       # the friction columns follow the bodies' (3 per joint)
            X = np.concatenate([X, Y[..., Y.shape[-1] - 3 * model.n_dof:]], axis=-1)
        target = effort[a:b] - inverse_dynamics(model, q[a:b, 0], q[a:b, 1], q[a:b, 2])
        if known is not None:
            target = target - known.torque(q[a:b, 1])
        yield X, target, np.isfinite(target) & ~edges[a:b, None]


def _weighted(factors, counts, k):
    """(theta (k,), noise (n,), whitened factor R (k+1, k+1)) by two passes (least squares, then
    rows weighted by each joint's residual level)."""
    def solve(R):
        return np.linalg.lstsq(R[:k, :k], R[:k, k], rcond=1e-12)[0]

    R = triangular(factors.reshape(-1, k + 1), k + 1)
    theta = solve(R)
    e = np.einsum("jrc,c->jr", factors, np.append(theta, -1.0))
    noise = np.sqrt((e ** 2).sum(axis=1) / np.maximum(counts - k / len(counts), 1.0))
    noise = np.maximum(noise, 1e-6 * max(noise.max(), 1e-12))
    R = triangular((factors / noise[:, None, None]).reshape(-1, k + 1), k + 1)
    return solve(R), noise, R


def _inflation(model, analyses, body, T, fit_friction, known, v_s, theta, noise):
    """(1 + rho) / (1 - rho) of the whitened residual's lag-one autocorrelation rho (pooled,
    clipped to [0, 0.98]), as for the arm's fit."""
    num = den = 0.0
    for analysis in analyses:
        parts = [np.where(ok, (X @ theta - target) / noise, np.nan)
                 for X, target, ok in _rows(model, analysis, body, T, fit_friction, known, v_s)]
        e = np.vstack(parts)
        x, y = e[:-1], e[1:]
        ok = np.isfinite(x) & np.isfinite(y)
        num += float(np.sum(x[ok] * y[ok]))
        den += float(np.sum(x[ok] ** 2))
    rho = min(max(num / den, 0.0), 0.98) if den > 0 else 0.0
    return (1.0 + rho) / (1.0 - rho)


def _standard_errors(R, k, rows, inflation):
    """(k,) standard errors from the whitened factor; inf for parameters in directions the
    factor does not determine (relative singular value below 1e-10)."""
    U, s, Vt = np.linalg.svd(R[:k, :k])
    s2 = R[k, k] ** 2 / max(rows - k, 1) * inflation
    good = s > 1e-10 * s[0]
    var = (Vt[good].T ** 2 / s[good] ** 2).sum(axis=1) * s2
    dead = np.abs(Vt[~good]).max(axis=0) > 1e-6 if (~good).any() else np.zeros(k, dtype=bool)
    return np.where(dead, np.inf, np.sqrt(var))


def _check_excited(se, scales, joints):
    """InputError naming the payload parameters whose standard error exceeds TOLERANCE of their
    scale, and the friction parameters the recordings do not determine."""
    bad = [f"{NAMES[i]} (standard error {se[i]:.3g}, {_percent(se[i] / scales[i])} of its size {scales[i]:.3g})"
           for i in range(10) if not se[i] <= TOLERANCE * scales[i]]
    kinds = ("viscous", "Coulomb", "offset")
    bad += [f"{kinds[i % 3]} friction of {joints[i // 3]}" for i in range(len(joints) * 3) if not np.isfinite(se[10 + i])]
    if bad:
        raise InputError(f"the recordings do not excite the payload enough to identify {len(bad)} parameter(s): "
                         + "; ".join(bad) + "; record a longer or livelier motion of the joints that carry it (e.g. "
                         "from hod-dynamics excite)")


def _percent(x):
    return "all" if not np.isfinite(x) else f"{100 * x:.0f} %"


def _consistent(R, k, scales, fit_friction, n):
    """(k,) the least-squares parameters with the payload's pseudo-inertia positive semidefinite
    and viscous and Coulomb friction >= 0."""
    from ..errors import HodDynamicsError
    from ..model.inertia import pseudo_inertia
    from .program import cvxpy_module, solve

    cp = cvxpy_module()
    scale = np.r_[scales, np.ones(k - 10)]
    x = cp.Variable(k)
    basis = pseudo_inertia(np.eye(10)).reshape(10, 16).T * (scales / scales[0])
    J = cp.reshape(basis @ x[:10], (4, 4), order="F")
    constraints = [J >> 0]
    if fit_friction:
        idx = 10 + 3 * np.arange(n)
        constraints += [x[idx] >= 0, x[idx + 1] >= 0]
    problem = cp.Problem(cp.Minimize(cp.sum_squares((R[:k, :k] * scale) @ x - R[:k, k])), constraints)
    status = solve(problem, cp)
    if x.value is None or status not in ("optimal", "optimal_inaccurate"):
        raise HodDynamicsError(f"the payload fit did not converge (solver status '{status}')")
    return np.asarray(x.value) * scale


def payload_urdf(result, *, name="payload"):
    """A URDF fragment: a fixed joint from ``result.link`` to a link ``name`` holding the payload's
    inertia (mass, centre of mass as the origin, inertia about it), to paste into the robot's
    description before ``</robot>``."""
    m, c, Ic = com_form(result.parameters)
    v = lambda x: repr(float(x))  # noqa: E731  the shortest text that reads back to the same double
    origin = f"a payload on {result.link} identified by hod-dynamics identify from {', '.join(r.name for r in result.recordings)}"
    while "--" in origin:               # not allowed inside an XML comment
        origin = origin.replace("--", "-")
    return "\n".join([
        f"<!-- {origin} -->",
        f'<joint name="{name}_joint" type="fixed">',
        f'  <parent link="{result.link}"/>',
        f'  <child link="{name}"/>',
        '  <origin xyz="0 0 0" rpy="0 0 0"/>',
        "</joint>",
        f'<link name="{name}">',
        "  <inertial>",
        f'    <origin xyz="{v(c[0])} {v(c[1])} {v(c[2])}" rpy="0 0 0"/>',
        f'    <mass value="{v(m)}"/>',
        f'    <inertia ixx="{v(Ic[0, 0])}" ixy="{v(Ic[0, 1])}" ixz="{v(Ic[0, 2])}" iyy="{v(Ic[1, 1])}" '
        f'iyz="{v(Ic[1, 2])}" izz="{v(Ic[2, 2])}"/>',
        "  </inertial>",
        "</link>", ""])


def payload_mapping(result):
    """The payload as a YAML-ready dict: link, mass, centre of mass, inertia about it, the 10
    parameters and their standard errors, in the link's frame, SI units."""
    m, c, Ic = com_form(result.parameters)
    return {"payload": {
        "link": result.link, "mass": float(m), "com": [float(x) for x in c],
        "inertia_about_com": {"ixx": float(Ic[0, 0]), "ixy": float(Ic[0, 1]), "ixz": float(Ic[0, 2]),
                              "iyy": float(Ic[1, 1]), "iyz": float(Ic[1, 2]), "izz": float(Ic[2, 2])},
        "parameters": {p: float(x) for p, x in zip(PARAMETER_NAMES, result.parameters)},
        "standard_errors": {p: float(x) for p, x in zip(PARAMETER_NAMES, result.standard_errors)}}}


def write_payload(result, out, validation=(), validation_names=(), *, plots=True, command=""):
    """Write ``payload.urdf`` (:func:`payload_urdf`), ``payload.yaml`` (:func:`payload_mapping`),
    ``friction.yaml`` (fitted friction), ``identification.json`` (the payload, its standard
    errors, the noise, the residuals of the arm without and with the payload on every
    recording) and, with ``plots``, ``torque_<recording>.png`` of every validation recording
    (of the identification ones without) into ``out``. Returns (paths, the JSON dict)."""
    import json
    import os

    import yaml

    from ..algorithms.friction import save_friction
    from .report import evaluate, plot_torques, write_text

    evaluation = evaluate(result, validation, validation_names)
    os.makedirs(out, exist_ok=True)
    paths = [write_text(os.path.join(out, "payload.urdf"), payload_urdf(result)),
             write_text(os.path.join(out, "payload.yaml"), yaml.safe_dump(payload_mapping(result), sort_keys=False))]
    if result.friction_fitted:
        paths.append(save_friction(result.friction, os.path.join(out, "friction.yaml"), comments=[
            f"identified with a payload on {result.link} by hod-dynamics identify --payload"]))
    model = result.model
    data = dict(payload_mapping(result), robot=model.name, joints=list(model.joint_names),
                friction="fitted" if result.friction_fitted else "given" if result.friction is not None else None,
                samples={r.name: int(len(r.analysis.t)) for r in result.recordings},
                noise_std={nm: float(v) for nm, v in zip(model.joint_names, result.noise)},
                residual_rms={name: {"role": role, "joints": table} for name, (role, _, table, _) in evaluation.items()},
                notes=list(result.notes), command=command)
    if result.friction is not None:
        data["friction_model"] = result.friction.to_mapping()["friction"]
    if result.prior_friction is not None:
        data["prior_friction_model"] = result.prior_friction.to_mapping()["friction"]
    paths.append(write_text(os.path.join(out, "identification.json"), json.dumps(data, indent=2) + "\n"))
    if plots:
        paths += plot_torques(model, evaluation, out)
    return paths, data
