"""Realistic joint-state recordings of a shipped robot, generated the way real ones are made.

:class:`Recording` drives the shipped KUKA iiwa 14 (7 joints, or another 7-joint arm) along a smooth excitation
trajectory (per joint a sum of five sines, 0.08 to 0.9 Hz, as used for identification runs,
so that every joint reverses often) and records it as a robot controller and a recording PC
would:

- the controller samples on an exact grid (``rate`` Hz); the data carries the truth there;
- positions: the exact q quantised by a 20-bit-per-turn encoder (6e-6 rad steps);
- efforts: the exact rigid-body tau plus joint friction (viscous ``d qd``, smooth Coulomb
  ``fc tanh(qd / v_s)``, a constant offset; realistic sizes, :data:`FRICTION`) plus
  torque-sensor noise (white, :data:`EFFORT_NOISE` N m);
- header stamps: the PC's clock, jittering by ``jitter`` of the period (normal), with rare
  late outliers of 30 % of the period, and the bag's receive times a little later still;
- dropped samples (about 0.5 %, singly, and one burst of 6), one stamp repeated on the next
  sample (new data, same stamp), one message recorded twice (exact duplicate), and
  optionally a step of the header clock.

The truth (``taujet`` rigid-body tau^(0..2) and ``friction_jet``) is exact at every kept
sample. :meth:`Recording.write` records the bag with jittered stamps (``exact=False``) or the
exact grid (``exact=True``): the same samples, only the stamps differ. Two different runs of
the same robot: two seeds.
"""

import numpy as np

import hod_dynamics as hd
from hod_dynamics.friction import FrictionModel

T0_NS = 1_700_000_000 * 10**9
ENCODER_STEP = 2 * np.pi / 2**20        # rad
EFFORT_NOISE = 0.3                      # N m, torque sensor
V_S = 0.01                              # rad/s, the generator's Coulomb transition velocity
FRICTION = dict(coulomb=[3.0, 3.5, 2.0, 2.0, 1.0, 0.8, 0.5], viscous=[1.2, 1.5, 0.8, 0.8, 0.4, 0.3, 0.2],
                offset=[0.4, -0.6, 0.2, -0.3, 0.15, -0.1, 0.05])


class Recording:
    """A recording of ``duration`` s at ``rate`` Hz (see the module docstring)."""

    def __init__(self, seed=1, rate=200.0, duration=25.0, jitter=0.02, clock_step=None, urdf=None, model=None):
        """``urdf``: another 7-joint arm's description (a path) to record instead of the iiwa 14;
        ``model``: the robot that moves, when it differs from its description (a known truth
        for identification: inertias other than the URDF's)."""
        self.urdf = hd.robot_path("iiwa14") if urdf is None else str(urdf)
        self.model = hd.RobotModel.from_urdf(self.urdf) if model is None else model
        names = self.model.joint_names
        rng = np.random.default_rng(seed)
        n = self.model.n_dof
        self.freq = rng.uniform(0.08, 0.9, (5, n))
        self.phase = rng.uniform(0, 2 * np.pi, (5, n))
        self.amp = rng.uniform(0.5, 1.0, (5, n)) * np.array([0.25, 0.2, 0.25, 0.2, 0.3, 0.3, 0.35]) / 2
        self.center = np.array([0.0, 0.4, 0.0, -1.2, 0.0, 0.8, 0.0])
        self.friction = FrictionModel(names, v_s=np.full(n, V_S), **{k: np.array(v) for k, v in FRICTION.items()})
        period = 1.0 / rate
        # the controller's grid, minus dropped samples (singles and one burst)
        k = np.arange(int(round(duration * rate)))
        drop = rng.choice(np.arange(20, len(k) - 20), len(k) // 200, replace=False)
        burst = int(len(k) * 0.6)
        k = np.delete(k, np.r_[drop, np.arange(burst, burst + 6)])
        self.k = k
        self.t = k * period
        qjet = self.qjet(self.t, 5)
        self.taujet = hd.time_derivatives(self.model, qjet, 2)                  # rigid body, exact
        self.friction_jet = self.friction.jet(qjet[:, 1:4])
        self.position = np.round(qjet[:, 0] / ENCODER_STEP) * ENCODER_STEP
        self.velocity = qjet[:, 1]
        self.effort = self.taujet[:, 0] + self.friction_jet[:, 0] + EFFORT_NOISE * rng.standard_normal((len(k), n))
        # the PC's stamps: latency, jitter, rare 30 % late outliers; receive times after them
        late = rng.random(len(k)) < 0.005
        self.stamps_ns = T0_NS + np.round(1e9 * (self.t + 0.0004 + jitter * period * rng.standard_normal(len(k))
                                                 + 0.3 * period * late)).astype(np.int64)
        self.stamps_ns[len(k) // 3] = self.stamps_ns[len(k) // 3 - 1]          # a repeated stamp, new data
        self.receive_ns = self.stamps_ns + np.round(1e9 * rng.exponential(0.0003, len(k))).astype(np.int64) + 200_000
        if clock_step is not None:
            at, jump = clock_step
            self.stamps_ns[self.t >= at] += int(round(jump * 1e9))
        self.exact_ns = T0_NS + np.round(self.t * 1e9).astype(np.int64)
        self.duplicate = len(k) // 2                                             # recorded twice

    def qjet(self, t, rows):
        """Exact jet (len(t), rows, 7) of q_j = c_j + sum_i a_ij sin(2 pi f_ij t + phi_ij)."""
        t = np.asarray(t, dtype=float)[:, None, None]
        w = 2 * np.pi * self.freq
        return np.stack([self.center * (r == 0) + (self.amp * w ** r * np.sin(w * t + self.phase + r * np.pi / 2)).sum(axis=1)
                         for r in range(rows)], axis=1)

    def write(self, path, *, exact=False, effort=True, storage="mcap"):
        """Record the bag at ``path`` (jittered stamps, or ``exact`` grid stamps); returns ``path``."""
        from hod_dynamics.bag import write_joint_states

        stamps = self.exact_ns if exact else self.stamps_ns
        receive = self.exact_ns if exact else self.receive_ns
        rows = np.r_[np.arange(self.duplicate + 1), np.arange(self.duplicate, len(self.t))]
        write_joint_states(path, stamps[rows], self.model.joint_names, self.position[rows], self.velocity[rows],
                           self.effort[rows] if effort else None, storage=storage, receive_ns=receive[rows])
        return path


def perturbed_model(model, fraction=0.3, seed=0):
    """``model`` with every body's inertia changed by up to ``fraction`` and physically
    consistent (a known truth for identification tests): the mass and each principal moment
    about the centre of mass scaled by factors in [1 - fraction, 1 + fraction], the principal
    axes turned by up to ``fraction`` / 3 rad, the centre of mass moved by up to ``fraction``
    of its distance from the body's frame origin (1 cm at least); the largest principal moment
    is then kept at most 0.95 times the sum of the other two (the strict triangle inequality,
    which some shipped inertias break by a fraction of a percent)."""
    from scipy.spatial.transform import Rotation

    from hod_dynamics.inertia import com_form, inertial_parameters, parameters_from_inertia
    from hod_dynamics.spatial import body_inertia

    rng = np.random.default_rng(seed)
    new = []
    for pi in inertial_parameters(model):
        m, c, Ic = com_form(pi)
        d, axes = np.linalg.eigh(Ic)
        d = d * rng.uniform(1 - fraction, 1 + fraction, 3)
        d = np.sort(np.maximum(d, 1e-6))
        d[2] = min(d[2], 0.95 * (d[0] + d[1]))
        turn = Rotation.from_rotvec(rng.normal(size=3) / np.sqrt(3) * rng.uniform(0, fraction / 3)).as_matrix()
        axes = turn @ axes
        shift = rng.normal(size=3)
        shift *= rng.uniform(0, fraction) * max(np.linalg.norm(c), 0.01) / np.linalg.norm(shift)
        mass = m * rng.uniform(1 - fraction, 1 + fraction)
        new.append(parameters_from_inertia(body_inertia(mass, c + shift, axes @ np.diag(d) @ axes.T)))
    return model.with_inertial_parameters(np.array(new))
