"""Actuator models: motor-side references of rigid, series-elastic and variable-stiffness joints.

Reduced elastic-joint model (M. W. Spong, "Modeling and control of elastic joint robots", 1987),
per joint, all on the joint side of the gear:

    link:  M(q) qdd + C(q, qd) qd + g(q) = tau_J          (tau_J: the torque the spring transmits)
    motor: B thdd + D thd + tau_J = u                      (theta: motor position, u: motor torque)

with the deflection delta = theta - q and the spring tau_J = phi(delta, sigma):

- ``Rigid``: delta = 0, B = D = 0, so theta = q and u = tau.
- ``SEA``: phi = K delta, so theta^(j) = q^(j) + tau^(j) / K.
- ``VSA``: a nonlinear spring phi(delta, sigma), invertible in delta, with a stiffness setting
  sigma(t) (a number or its own trajectory). delta is found per instant by Newton's method
  and its derivatives order by order on Taylor coefficients (implicit differentiation: the
  k-th coefficient of phi(delta, sigma) is phi_delta * delta_k plus terms of lower order).
  The stiffness motor is assumed to track sigma(t) (it is not part of this model).

Gear convention: B (kg m^2) and D (N m s/rad) are reflected to the joint side, B = N^2 B_m,
D = N^2 D_m for a gear ratio N = motor angle / joint angle; theta and u are joint-side. The
motor shaft angle is N theta and the motor's own torque u / N (see
:attr:`hod_dynamics.FeedforwardResult.motor_thetajet`).

Jets here are (B, K) per joint: B samples, rows x^(0..K-1).
"""

from dataclasses import dataclass
from typing import Tuple, Union

import numpy as np

from ..algorithms.jets import cauchy_scale, factorials
from ..errors import InputError, TrajectoryError
from ..model.robots import config_source
from ..yamlfile import read_mapping
from .trajectory import Trajectory


def _positive(value, what, joint, allow_zero=False):
    try:
        v = float(value)
    except (TypeError, ValueError):
        raise InputError(f"joint '{joint}': {what} must be a number, got {value!r}") from None
    if not np.isfinite(v) or v < 0 or (v == 0 and not allow_zero):
        raise InputError(f"joint '{joint}': {what} must be {'>=' if allow_zero else '>'} 0, got {value!r}")
    return v


# -- Taylor arithmetic on (K, B) coefficient arrays --------------------------------------------
def _mul(a, b):
    return cauchy_scale(a, b)


def _exp(a):
    """Coefficients of exp(a(t)): e_k = (1/k) sum_{j=1..k} j a_j e_{k-j}."""
    e = np.empty_like(a)
    e[0] = np.exp(a[0])
    for k in range(1, len(a)):
        j = np.arange(1, k + 1)[:, None]
        e[k] = np.sum(j * a[1:k + 1] * e[k - 1::-1][:k], axis=0) / k
    return e


# -- springs of a VSA ----------------------------------------------------------------------------
@dataclass(frozen=True)
class CubicSpring:
    """phi(delta, sigma) = sigma (k1 delta + k3 delta^3): a hardening spring scaled by the
    stiffness setting sigma > 0 (dimensionless). k1 > 0 (N m/rad), k3 >= 0 (N m/rad^3)."""

    k1: float
    k3: float

    def torque(self, d, s):
        return s * (self.k1 * d + self.k3 * d ** 3)

    def slope(self, d, s):
        """d phi / d delta."""
        return s * (self.k1 + 3.0 * self.k3 * d ** 2)

    def torque_taylor(self, dc, sc):
        """Taylor coefficients (K, B) of phi from those of delta and sigma."""
        return _mul(sc, self.k1 * dc + self.k3 * _mul(dc, _mul(dc, dc)))


@dataclass(frozen=True)
class AntagonisticExponential:
    """Two opposing springs with force a (exp(b x) - 1), both pre-loaded by sigma (rad):
    phi(delta, sigma) = a (exp(b (sigma + delta)) - exp(b (sigma - delta)))
                      = 2 a exp(b sigma) sinh(b delta);
    the stiffness at delta = 0 is 2 a b exp(b sigma). a > 0 (N m), b > 0 (1/rad)."""

    a: float
    b: float

    def torque(self, d, s):
        return self.a * (np.exp(self.b * (s + d)) - np.exp(self.b * (s - d)))

    def slope(self, d, s):
        return self.a * self.b * (np.exp(self.b * (s + d)) + np.exp(self.b * (s - d)))

    def torque_taylor(self, dc, sc):
        return self.a * (_exp(self.b * (sc + dc)) - _exp(self.b * (sc - dc)))


SPRINGS = {"cubic": (CubicSpring, ("k1", "k3")),
           "antagonistic_exponential": (AntagonisticExponential, ("a", "b"))}


# -- actuator models -------------------------------------------------------------------------------
@dataclass(frozen=True)
class Rigid:
    """A stiff joint: theta = q, u = tau."""

    motor_inertia = 0.0
    motor_damping = 0.0
    gear_ratio = 1.0
    elastic = False

    def deflection(self, t, taujet, joint):
        """Deflection jet delta^(0..K-1) (B, K) from the torque jet (B, K) at times t (B,)."""
        return np.zeros_like(taujet)


@dataclass(frozen=True)
class SEA:
    """Series elastic actuator: spring ``stiffness`` K (N m/rad), ``motor_inertia`` B
    (kg m^2) and ``motor_damping`` D (N m s/rad) reflected to the joint side, ``gear_ratio``
    N (motor angle / joint angle, only used for the motor-side outputs)."""

    stiffness: float
    motor_inertia: float
    motor_damping: float = 0.0
    gear_ratio: float = 1.0
    elastic = True

    def deflection(self, t, taujet, joint):
        return taujet / self.stiffness


@dataclass(frozen=True)
class VSA:
    """Variable stiffness actuator: tau_J = spring(delta, sigma) with ``spring`` a
    :class:`CubicSpring` or :class:`AntagonisticExponential` and ``stiffness`` sigma either
    a number or a one-column :class:`Trajectory` sigma(t) (C^m with m >= the derivative order
    needed). B, D and N as for :class:`SEA`."""

    spring: Union[CubicSpring, AntagonisticExponential]
    stiffness: Union[float, Trajectory]
    motor_inertia: float
    motor_damping: float = 0.0
    gear_ratio: float = 1.0
    elastic = True

    def stiffness_jet(self, t, K):
        """sigma^(0..K-1) at times t: (B, K)."""
        if isinstance(self.stiffness, Trajectory):
            if self.stiffness.continuity < K - 1:
                raise TrajectoryError(f"stiffness trajectory '{self.stiffness.joint_names[0]}' is "
                                      f"C^{self.stiffness.continuity} but sigma^({K - 1}) is needed")
            return self.stiffness.jet(t, K - 1)[..., 0]
        out = np.zeros(np.shape(t) + (K,))
        out[..., 0] = self.stiffness
        return out

    def deflection(self, t, taujet, joint):
        K = taujet.shape[-1]
        f = factorials(K)
        sc = (self.stiffness_jet(t, K) / f).T
        tc = (taujet / f).T
        dc = np.zeros_like(tc)
        dc[0] = self._invert(tc[0], sc[0], joint)
        slope = self.spring.slope(dc[0], sc[0])
        for k in range(1, K):
            # coefficient k of phi is slope * delta_k + (terms of delta_{<k}, sigma_{<=k})
            dc[k] = (tc[k] - self.spring.torque_taylor(dc[:k + 1], sc[:k + 1])[k]) / slope
        return (dc * f[:, None]).T

    def _invert(self, tau, sigma, joint):
        """delta with spring(delta, sigma) = tau, vectorised Newton from the linearisation."""
        if np.any(sigma <= 0) and isinstance(self.spring, CubicSpring):
            raise InputError(f"joint '{joint}': stiffness setting must stay > 0, got min {sigma.min()}")
        d0 = tau / self.spring.slope(np.zeros_like(tau), sigma)
        # convex/concave odd springs: Newton from the linearisation converges monotonically;
        # once a step is below tol, the quadratic convergence has reached machine precision
        tol = 1e-13 * max(1.0, float(np.abs(d0).max(initial=0.0)))
        from scipy.optimize import newton  # here: scipy.optimize takes a quarter second to import

        d = newton(lambda d: self.spring.torque(d, sigma) - tau, d0,
                   fprime=lambda d: self.spring.slope(d, sigma), tol=tol, rtol=0.0,
                   maxiter=100, disp=False)
        residual = np.abs(self.spring.torque(d, sigma) - tau)
        if not np.all(residual <= 1e-9 * np.maximum(1.0, np.abs(tau))):
            raise InputError(f"joint '{joint}': cannot invert the spring for tau = "
                             f"{tau[np.argmax(residual)]:.6g} N m")
        return d


# -- a set of actuators, one per joint -------------------------------------------------------------
@dataclass(frozen=True)
class ActuatorSet:
    """One actuator per joint of a model, in ``joint_names`` (the model's) order."""

    joint_names: Tuple[str, ...]
    actuators: tuple

    @property
    def elastic(self):
        """Boolean (n,) array: True where the joint is elastic."""
        return np.array([a.elastic for a in self.actuators])

    @property
    def gear_ratio(self):
        return np.array([a.gear_ratio for a in self.actuators], dtype=float)

    def motor_references(self, t, qjet, taujet):
        """Motor positions and torque from the link trajectory and its inverse dynamics.

        ``t`` (B,) s; ``qjet`` (B, >=K, n) and ``taujet`` (B, K, n), K >= 3 rows when a
        joint is elastic.
        Returns ``thetajet`` (B, K, n) (theta^(0..K-1), joint side) and ``u`` (B, n) (N m,
        joint side): theta = q + delta, u = B thdd + D thd + tau.
        """
        K = taujet.shape[-2]
        theta = np.array(qjet[..., :K, :], dtype=float)
        if not self.elastic.any():
            return theta, np.array(taujet[..., 0, :])
        if K < 3:
            raise InputError(f"the motor torque u of elastic joints needs tau up to tau'' "
                             f"(3 rows), got {K}")
        for j, (name, act) in enumerate(zip(self.joint_names, self.actuators)):
            if act.elastic:
                theta[..., j] += act.deflection(t, taujet[..., j], name)
        B = np.array([a.motor_inertia for a in self.actuators])
        D = np.array([a.motor_damping for a in self.actuators])
        u = B * theta[..., 2, :] + D * theta[..., 1, :] + taujet[..., 0, :]
        return theta, u


def _stiffness_setting(value, joint):
    if isinstance(value, dict):
        unknown = sorted(set(value) - {"times", "values", "continuity"})
        if unknown:
            raise InputError(f"joint '{joint}': unknown stiffness keys {unknown} "
                             "(expected times, values, continuity)")
        values = np.asarray(value.get("values", []), dtype=float).reshape(-1, 1)
        return Trajectory.from_waypoints([f"{joint}/stiffness"], value.get("times", []), values,
                                         continuity=value.get("continuity", 6))
    return float(value)


def _actuator_from_spec(joint, spec):
    if spec is not None and not isinstance(spec, dict):
        raise InputError(f"joint '{joint}': actuator spec must be a mapping, got {spec!r}")
    spec = dict(spec or {})
    kind = spec.pop("type", "rigid")
    keys = {"rigid": set(), "sea": {"stiffness", "motor_inertia", "motor_damping", "gear_ratio"},
            "vsa": {"spring", "stiffness", "motor_inertia", "motor_damping", "gear_ratio"}}
    if kind not in keys:
        raise InputError(f"joint '{joint}': unknown actuator type {kind!r}; expected one of {sorted(keys)}")
    spring_keys = set()
    if kind == "vsa":
        spring = spec.get("spring", "cubic")
        if spring not in SPRINGS:
            raise InputError(f"joint '{joint}': unknown spring {spring!r}; expected one of {sorted(SPRINGS)}")
        spring_keys = set(SPRINGS[spring][1])
    unknown = sorted(set(spec) - keys[kind] - spring_keys)
    if unknown:
        raise InputError(f"joint '{joint}': unknown {kind} parameters {unknown}; "
                         f"expected {sorted(keys[kind] | spring_keys)}")
    missing = sorted({"stiffness", "motor_inertia"} - set(spec)) if kind != "rigid" else []
    if missing:
        raise InputError(f"joint '{joint}': {kind} needs {missing}")
    if kind == "rigid":
        return Rigid()
    common = dict(motor_inertia=_positive(spec["motor_inertia"], "motor_inertia", joint),
                  motor_damping=_positive(spec.get("motor_damping", 0.0), "motor_damping", joint, True),
                  gear_ratio=_positive(spec.get("gear_ratio", 1.0), "gear_ratio", joint))
    if kind == "sea":
        return SEA(stiffness=_positive(spec["stiffness"], "stiffness", joint), **common)
    cls, names = SPRINGS[spec["spring"] if "spring" in spec else "cubic"]
    params = {}
    for nm in names:
        if nm not in spec:
            raise InputError(f"joint '{joint}': spring needs parameter '{nm}'")
        params[nm] = _positive(spec[nm], nm, joint, allow_zero=(nm == "k3"))
    return VSA(spring=cls(**params), stiffness=_stiffness_setting(spec["stiffness"], joint), **common)


def load_actuators(source, model):
    """Per-joint actuators of ``model`` from a dict or a YAML file.

    ``source``: a path to a YAML file, the name of a shipped one (``"actuators_sea"``,
    ``"actuators_vsa"``), YAML text, or a mapping ``{joint_name: spec}``, optionally under a
    top-level key ``actuators``. A spec is ``{type: rigid}``,
    ``{type: sea, stiffness, motor_inertia, motor_damping=0, gear_ratio=1}`` or
    ``{type: vsa, spring: cubic|antagonistic_exponential, <spring parameters: k1, k3 | a, b>,
    stiffness: <number or {times, values, continuity}>, motor_inertia, motor_damping,
    gear_ratio}`` (SI units, joint side). Joints not listed are rigid. Returns an
    :class:`ActuatorSet`; unknown joints, types or parameters raise :class:`InputError`
    naming them.
    """
    if isinstance(source, ActuatorSet):
        return source
    source = read_mapping(config_source(source), InputError, "actuator configuration")
    specs = source.get("actuators", source) or {}
    if not isinstance(specs, dict):
        raise InputError(f"'actuators' must map joint names to specs, got {type(specs).__name__}")
    unknown = sorted(set(specs) - set(model.joint_names))
    if unknown:
        raise InputError(f"actuators for unknown joints {unknown}; model '{model.name}' has "
                         f"{list(model.joint_names)}")
    acts = tuple(_actuator_from_spec(nm, specs.get(nm)) for nm in model.joint_names)
    return ActuatorSet(tuple(model.joint_names), acts)
