"""Joint friction: viscous, smooth Coulomb and a constant offset, with exact time derivatives.

Per joint j, the torque (N m; N for a prismatic joint) the friction adds to the rigid-body
inverse dynamics (the actuator must supply it on top of tau):

    tau_f = viscous * qd + coulomb * tanh(qd / v_s) + offset

``viscous`` >= 0 (N m s/rad), ``coulomb`` >= 0 (N m), ``offset`` (N m, any sign: e.g. a torque
sensor's bias or an unmodelled spring), ``v_s`` > 0 (rad/s) the velocity over which the Coulomb
term changes sign. The tanh makes the model smooth, so that tau_f has derivatives of every
order along a smooth trajectory; a discontinuous sign(qd) would have none at qd = 0. With
|qd| a few v_s, tanh(qd / v_s) is sign(qd) to within 2 exp(-2 |qd| / v_s).

Sources (:func:`load_friction`): the URDF ``<dynamics damping="" friction=""/>`` of each
joint (``damping`` -> viscous, ``friction`` -> coulomb, no offset, ``v_s`` =
:data:`DEFAULT_VS`; a joint without the tag has no friction), a YAML file or mapping
(``friction: {joint: {coulomb, viscous, offset, v_s}}``), or a :class:`FrictionModel`.

Time derivatives: along a trajectory, tau_f^(k) needs qd^(k), i.e. q^(k+1). The tanh of a
jet is computed by truncated Taylor arithmetic (normalised coefficients, as in
:mod:`hod_dynamics.algorithms.jets`): with u = qd / v_s, y = tanh(u) and z = 1 - y^2, y' = z u' gives
y_k = (1/k) sum_{j=1..k} j u_j z_{k-j} and z_k = -sum_{j=0..k} y_j y_{k-j}, exact to every
order.
"""

import os
from dataclasses import dataclass
from typing import Tuple

import numpy as np

from ..errors import InputError, ModelError
from ..yamlfile import read_mapping
from .jets import factorials

DEFAULT_VS = 0.01   # rad/s (m/s): Coulomb transition velocity when the source gives none
PARAMETERS = ("coulomb", "viscous", "offset")
_KEYS = set(PARAMETERS) | {"v_s"}


@dataclass(frozen=True, eq=False)
class FrictionModel:
    """Friction of n joints in ``joint_names`` order (a model's order once loaded for it).

    ``coulomb``, ``viscous``, ``offset``, ``v_s``: (n,) arrays, units in the module docstring.
    A joint with all three coefficients 0 has no friction.
    """

    joint_names: Tuple[str, ...]
    coulomb: np.ndarray
    viscous: np.ndarray
    offset: np.ndarray
    v_s: np.ndarray

    def __post_init__(self):
        object.__setattr__(self, "joint_names", tuple(self.joint_names))
        n = len(self.joint_names)
        for key in PARAMETERS + ("v_s",):
            a = np.array(np.broadcast_to(np.asarray(getattr(self, key), dtype=float), (n,)))
            a.setflags(write=False)
            object.__setattr__(self, key, a)

    @property
    def active(self):
        """(n,) bool: the joints with a non-zero coefficient."""
        return (self.coulomb != 0) | (self.viscous != 0) | (self.offset != 0)

    def torque(self, qd):
        """tau_f (..., n) at joint velocities ``qd`` (..., n)."""
        return self.viscous * qd + self.coulomb * np.tanh(qd / self.v_s) + self.offset

    def jet(self, qdjet):
        """Derivatives tau_f^(0..K-1) (..., K, n) from the velocity jet ``qdjet`` (..., K, n)
        (rows qd, qdd, ..., qd^(K-1)); row 0 is exactly :meth:`torque` of row 0."""
        qdjet = np.asarray(qdjet, dtype=float)
        K = qdjet.shape[-2]
        out = np.empty(qdjet.shape)
        out[..., 0, :] = self.torque(qdjet[..., 0, :])
        if K == 1:
            return out
        fact = factorials(K)[:, None]
        u = np.moveaxis(qdjet, -2, 0) / fact.reshape((K,) + (1,) * (qdjet.ndim - 2) + (1,)) / self.v_s
        y, z = np.empty_like(u), np.empty_like(u)
        y[0] = np.tanh(u[0])
        z[0] = 1.0 - y[0] * y[0]
        for k in range(1, K):
            j = np.arange(1, k + 1).reshape((k,) + (1,) * (u.ndim - 1))
            y[k] = np.sum(j * u[1:k + 1] * z[k - 1::-1][:k], axis=0) / k
            z[k] = -np.sum(y[:k + 1] * y[k::-1], axis=0)
        for k in range(1, K):
            out[..., k, :] = self.viscous * qdjet[..., k, :] + self.coulomb * (y[k] * fact[k])
        return out

    def to_mapping(self, *, only_active=False):
        """``{"friction": {joint: {coulomb, viscous, offset, v_s}}}``, the YAML layout."""
        return {"friction": {nm: {key: float(getattr(self, key)[j]) for key in PARAMETERS + ("v_s",)}
                             for j, nm in enumerate(self.joint_names)
                             if not only_active or self.active[j]}}


def _number(value, what, joint, *, sign=None):
    # YAML reads yes/no/on/off/true as booleans, and float(True) is 1.0: a friction of 1 N m
    # nobody wrote; text such as "1e-3" is a number YAML left as a string
    if isinstance(value, (bool, np.bool_)):
        raise InputError(f"friction of joint '{joint}': {what} must be a number, got {value!r} "
                         "(YAML reads yes/no/on/off/true/false as booleans)")
    try:
        v = float(value)
    except (TypeError, ValueError):
        raise InputError(f"friction of joint '{joint}': {what} must be a number, got {value!r}") from None
    if not np.isfinite(v) or (sign == ">=" and v < 0) or (sign == ">" and v <= 0):
        raise InputError(f"friction of joint '{joint}': {what} must be {sign} 0 and finite, got {value!r}")
    return v


def from_urdf_values(model):
    """The friction a URDF's ``<dynamics>`` tags give ``model`` (``model.damping`` viscous,
    ``model.friction`` Coulomb, v_s = DEFAULT_VS, no offset). A negative value (identification
    output can have one; the model loads with a warning) would feed energy into the joint:
    :class:`ModelError` naming the joint, its URDF line and the value."""
    for key, values in (("damping", model.damping), ("friction", model.friction)):
        for j in np.flatnonzero(values < 0):
            name = model.joint_names[j]
            line = model.joint_lines.get(name)
            where = f"joint '{name}'" + (f" (line {line})" if line is not None else "")
            raise ModelError(f"friction 'urdf': {where} has <dynamics {key}=\"{float(values[j])!r}\">, a "
                             "negative coefficient (as friction it would feed energy into the "
                             "joint); fit the friction, or give a friction file, instead")
    n = model.n_dof
    return FrictionModel(model.joint_names, model.friction, model.damping, np.zeros(n), np.full(n, DEFAULT_VS))


def load_friction(source, model):
    """The friction of ``model``'s joints (model order) from ``source``, or None.

    ``source``: None (no friction), ``"urdf"`` (the URDF ``<dynamics>`` values, see
    :func:`from_urdf_values`), a :class:`FrictionModel` (mapped onto the model by joint name),
    a YAML file path or a mapping ``{joint: {coulomb, viscous, offset[, v_s]}}``, optionally
    under a top-level key ``friction``. Joints not listed have no friction. Raises
    :class:`InputError` naming the joint for unknown joints, missing or unknown fields,
    negative coefficients or a ``v_s`` that is not > 0.
    """
    if source is None:
        return None
    if isinstance(source, str) and source == "urdf":
        return from_urdf_values(model)
    if isinstance(source, FrictionModel):
        specs = source.to_mapping()["friction"]
    else:
        if not isinstance(source, (dict, str, os.PathLike)):
            raise InputError(f"friction must be None, 'urdf', a YAML file or a mapping, got "
                             f"{type(source).__name__}")
        data = read_mapping(source, InputError, "friction")
        specs = data["friction"] if list(data) == ["friction"] else data
    if not isinstance(specs, dict):
        raise InputError(f"friction: 'friction' must map joint names to coefficients, got {type(specs).__name__}")
    unknown = sorted(set(specs) - set(model.joint_names))
    if unknown:
        raise InputError(f"friction for unknown joints {unknown}; model '{model.name}' has {list(model.joint_names)}")
    n = model.n_dof
    values = {key: np.zeros(n) for key in PARAMETERS}
    v_s = np.full(n, DEFAULT_VS)
    for j, nm in enumerate(model.joint_names):
        if nm not in specs:
            continue
        spec = specs[nm]
        if not isinstance(spec, dict):
            raise InputError(f"friction of joint '{nm}' must be a mapping {{coulomb, viscous, offset, v_s}}, "
                             f"got {spec!r}")
        missing, extra = sorted(set(PARAMETERS) - set(spec)), sorted(set(spec) - _KEYS)
        if missing or extra:
            raise InputError(f"friction of joint '{nm}': missing fields {missing}, unknown fields {extra} "
                             f"(expected coulomb, viscous, offset and optionally v_s)")
        values["coulomb"][j] = _number(spec["coulomb"], "coulomb", nm, sign=">=")
        values["viscous"][j] = _number(spec["viscous"], "viscous", nm, sign=">=")
        values["offset"][j] = _number(spec["offset"], "offset", nm)
        if "v_s" in spec:
            v_s[j] = _number(spec["v_s"], "v_s", nm, sign=">")
    return FrictionModel(model.joint_names, v_s=v_s, **values)


def save_friction(friction, path, *, comments=()):
    """Write ``friction`` as YAML (loadable by :func:`load_friction`) with ``comments`` lines on top."""
    import yaml

    with open(path, "w", encoding="utf-8") as fh:
        for line in ("joint friction: tau_f = viscous * qd + coulomb * tanh(qd / v_s) + offset (SI units)",
                     *comments):
            fh.write(f"# {line}\n")
        yaml.safe_dump(friction.to_mapping(), fh, sort_keys=False)
    return path


# -- friction identified from a torque residual ------------------------------------------------------
def fit_friction(qd, residual, joint_names, v_s=DEFAULT_VS):
    """Least-squares friction of each joint: ``residual`` (m, n) = measured effort - rigid-body
    model ~ coulomb tanh(qd / v_s) + viscous qd + offset, with coulomb, viscous >= 0.

    ``qd`` (m, n) joint velocities. Returns ``(FrictionModel, stats)``: stats per joint name
    the standard errors ``coulomb_se``, ``viscous_se``, ``offset_se`` (ordinary least squares,
    as if the samples were independent) and ``residual_rms_before`` / ``residual_rms_after``
    (N m). NaN residuals (samples without effort) are left out.
    """
    n = len(joint_names)
    params, stats = np.zeros((3, n)), {}
    for j, name in enumerate(joint_names):
        ok = np.isfinite(residual[:, j])
        r = residual[ok, j]
        X = np.column_stack([np.tanh(qd[ok, j] / v_s), qd[ok, j], np.ones(ok.sum())])
        p = _bounded_least_squares(X.T @ X, X.T @ r)
        after = r - X @ p
        dof = max(len(r) - 3, 1)
        cov = np.linalg.pinv(X.T @ X) * (after @ after) / dof
        se = np.sqrt(np.clip(np.diag(cov), 0.0, None))
        params[:, j] = p
        stats[name] = {"coulomb_se": float(se[0]), "viscous_se": float(se[1]), "offset_se": float(se[2]),
                       "residual_rms_before": _rms(r), "residual_rms_after": _rms(after)}
    return FrictionModel(tuple(joint_names), params[0], params[1], params[2], np.full(n, v_s)), stats


def _bounded_least_squares(A, b):
    """argmin |X p - r|^2 over p = (coulomb, viscous, offset) with coulomb, viscous >= 0, from
    the normal equations A = X'X (3, 3), b = X'r: the best of the four active sets (each of the
    two bounded parameters free or held at 0) whose solution is feasible (a convex problem:
    that is its minimum)."""
    best, best_cost = np.zeros(3), np.inf
    for free in ([0, 1, 2], [1, 2], [0, 2], [2]):
        p = np.zeros(3)
        p[free] = np.linalg.lstsq(A[np.ix_(free, free)], b[free], rcond=None)[0]
        cost = p @ A @ p - 2 * p @ b
        if p[0] >= 0 and p[1] >= 0 and cost < best_cost - 1e-12 * abs(best_cost if np.isfinite(best_cost) else 0):
            best, best_cost = p, cost
    return best


def _rms(x):
    """RMS of the finite entries of ``x`` (NaN when there are none)."""
    x = np.asarray(x, dtype=float)
    return float(np.sqrt(np.nanmean(np.square(x)))) if np.isfinite(x).any() else float("nan")
