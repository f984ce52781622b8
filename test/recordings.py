"""Realistic joint-state recordings of a shipped robot, generated the way real ones are made.

:class:`Recording` drives the shipped KUKA iiwa 14 (7 joints, or another 7-joint arm) along a smooth excitation
trajectory (per joint a sum of five sines, 0.08 to 0.9 Hz, as used for identification runs,
so that every joint reverses often; or, with ``motion="slow"``, three sines under 0.3 Hz)
and records it as a robot controller and a recording PC would:

- the controller samples on an exact grid (``rate`` Hz); the data carries the truth there;
- positions: the exact q, plus optionally a structural ``vibration`` (amplitude rad,
  frequency Hz: a sine on every joint; or a band (lo, hi) Hz: sines across it with phases of
  their own, of the same RMS as that sine; part of the truth) and white sensor noise
  (``position_noise`` rad, before the count), quantised by a ``bits``-per-turn encoder
  (20 bits: 6e-6 rad steps);
- efforts: the exact rigid-body tau plus joint friction (viscous ``d qd``, smooth Coulomb
  ``fc tanh(qd / v_s)``, a constant offset; realistic sizes, :data:`FRICTION`) plus
  torque-sensor noise (white, :data:`EFFORT_NOISE` N m);
- header stamps: the PC's clock, jittering by ``jitter`` of the period (normal), with rare
  late outliers of 30 % of the period; the bag's receive times later still by an
  exponentially distributed delay of mean ``latency`` s plus 0.2 ms, and the bag holds the
  messages in receive order (so a delay longer than a period puts messages out of stamp
  order, as at 1 kHz with the default latency);
- dropped samples (about 0.5 %, singly, and one burst of 6; none with ``drops=False``), one
  stamp repeated on the next sample (new data, same stamp), one message recorded twice
  (exact duplicate), and optionally a step of the header clock.

The truth (``taujet`` rigid-body tau^(0..2) and ``friction_jet``) is exact at every kept
sample. :meth:`Recording.write` records the bag with jittered stamps (``exact=False``) or the
exact grid (``exact=True``): the same samples, only the stamps differ; optionally with a
gripper publishing its fingers on the same topic, or with the arm's joints split over two
drivers. Two different runs of the same robot: two seeds.
"""

import numpy as np

import hod_dynamics as hd
from hod_dynamics.algorithms.friction import FrictionModel

T0_NS = 1_700_000_000 * 10**9
ENCODER_BITS = 20
ENCODER_STEP = 2 * np.pi / 2**ENCODER_BITS        # rad
EFFORT_NOISE = 0.3                      # N m, torque sensor
V_S = 0.01                              # rad/s, the generator's Coulomb transition velocity
FRICTION = dict(coulomb=[3.0, 3.5, 2.0, 2.0, 1.0, 0.8, 0.5], viscous=[1.2, 1.5, 0.8, 0.8, 0.4, 0.3, 0.2],
                offset=[0.4, -0.6, 0.2, -0.3, 0.15, -0.1, 0.05])
FINGERS = ("finger_left", "finger_right")
VIBRATION_LINES = 9                     # sines of a vibration band


class Recording:
    """A recording of ``duration`` s at ``rate`` Hz (see the module docstring)."""

    def __init__(self, seed=1, rate=200.0, duration=25.0, jitter=0.02, clock_step=None, urdf=None, model=None, *,
                 bits=ENCODER_BITS, position_noise=0.0, drops=True, latency=0.0003, motion="excitation",
                 vibration=None, center=None, amplitude=None, friction=None):
        """``urdf``: another 7-joint arm's description (a path) to record instead of the iiwa 14;
        ``model``: the robot that moves, when it differs from its description (a known truth
        for identification: inertias other than the URDF's), or a robot of other joints (a
        mechanism with loops: its actuated joints are recorded) with its ``center`` (rad),
        ``amplitude`` (rad, the scale of each joint's sines) and ``friction`` ({coulomb,
        viscous, offset}: (n,) each) (default: the arm's, the first n values); the other
        arguments as in the module docstring."""
        self.urdf = hd.robot_path("iiwa14") if urdf is None else str(urdf)
        self.model = hd.RobotModel.from_urdf(self.urdf) if model is None else model
        self.rate, self.seed, self.jitter, self.latency = rate, seed, jitter, latency
        names = self.model.joint_names
        rng = np.random.default_rng(seed)
        n = self.model.n_dof
        self.freq = rng.uniform(0.08, 0.9, (5, n))
        self.phase = rng.uniform(0, 2 * np.pi, (5, n))
        scale = np.resize([0.25, 0.2, 0.25, 0.2, 0.3, 0.3, 0.35], n) if amplitude is None else amplitude
        self.amp = rng.uniform(0.5, 1.0, (5, n)) * scale / 2
        if motion == "slow":          # three sines under 0.3 Hz, as large as the excitation
            self.freq[3:] = 1.0
            self.amp[3:] = 0.0
            self.freq[:3] = 0.05 + 0.25 * (self.freq[:3] - 0.08) / 0.82
        elif motion != "excitation":
            raise ValueError(f"motion must be 'excitation' or 'slow', got {motion!r}")
        self.center = np.resize([0.0, 0.4, 0.0, -1.2, 0.0, 0.8, 0.0], n) if center is None else center
        self.vibration = None
        if vibration is not None:
            # a structural vibration: one sine, or a band (lo, hi) Hz of VIBRATION_LINES sines with
            # phases of their own per joint, as large in RMS as the one sine of that amplitude
            amp, freq = vibration
            band = np.atleast_1d(np.asarray(freq, dtype=float))
            lines = np.linspace(band[0], band[-1], VIBRATION_LINES) if len(band) > 1 else band
            vib_rng = np.random.default_rng([seed, 77])
            self.vibration = (amp / np.sqrt(len(lines)), lines,
                              vib_rng.uniform(0, 2 * np.pi, (len(lines), n)) if len(lines) > 1
                              else np.arange(n)[None, :] * 0.9)
        friction = {k: np.resize(v, n) for k, v in FRICTION.items()} if friction is None else friction
        self.friction = FrictionModel(names, v_s=np.full(n, V_S), **{k: np.array(v) for k, v in friction.items()})
        period = 1.0 / rate
        # the controller's grid, minus dropped samples (singles and one burst)
        k = np.arange(int(round(duration * rate)))
        if drops:
            drop = rng.choice(np.arange(20, len(k) - 20), len(k) // 200, replace=False)
            burst = int(len(k) * 0.6)
            k = np.delete(k, np.r_[drop, np.arange(burst, burst + 6)])
        self.k = k
        self.t = k * period
        qjet = self.qjet(self.t, 5)
        self.taujet = hd.time_derivatives(self.model, qjet, 2)                  # rigid body, exact
        self.friction_jet = self.friction.jet(qjet[:, 1:4])
        self.encoder_step = 2 * np.pi / 2**bits
        self.velocity = qjet[:, 1]
        self.effort = self.taujet[:, 0] + self.friction_jet[:, 0] + EFFORT_NOISE * rng.standard_normal((len(k), n))
        # the PC's stamps: latency, jitter, rare 30 % late outliers; receive times after them
        late = rng.random(len(k)) < 0.005
        self.stamps_ns = T0_NS + np.round(1e9 * (self.t + 0.0004 + jitter * period * rng.standard_normal(len(k))
                                                 + 0.3 * period * late)).astype(np.int64)
        self.stamps_ns[len(k) // 3] = self.stamps_ns[len(k) // 3 - 1]          # a repeated stamp, new data
        self.receive_ns = self.stamps_ns + np.round(1e9 * rng.exponential(latency, len(k))).astype(np.int64) + 200_000
        # the message that repeats its predecessor's stamp comes after it (one publisher)
        rep = len(k) // 3
        self.receive_ns[rep] = max(self.receive_ns[rep], self.receive_ns[rep - 1] + 1000)
        if clock_step is not None:
            at, jump = clock_step
            self.stamps_ns[self.t >= at] += int(round(jump * 1e9))
        self.exact_ns = T0_NS + np.round(self.t * 1e9).astype(np.int64)
        self.duplicate = len(k) // 2                                             # recorded twice
        noise = position_noise * rng.standard_normal((len(k), n)) if position_noise else 0.0
        self.position = self.encode(qjet[:, 0] + noise)

    def encode(self, q):
        """Encoder counts of the positions q (rad): q rounded to the encoder step."""
        return np.round(q / self.encoder_step) * self.encoder_step

    def qjet(self, t, rows):
        """Exact jet (len(t), rows, n) of q_j = c_j + sum_i a_ij sin(2 pi f_ij t + phi_ij) (+ the vibration)."""
        t = np.asarray(t, dtype=float)[:, None, None]
        w = 2 * np.pi * self.freq
        jet = np.stack([self.center * (r == 0) + (self.amp * w ** r * np.sin(w * t + self.phase + r * np.pi / 2)).sum(axis=1)
                        for r in range(rows)], axis=1)
        if self.vibration is not None:
            amp, freqs, phases = self.vibration
            for freq, phase in zip(freqs, phases):
                wv = 2 * np.pi * freq
                jet += np.stack([amp * wv ** r * np.sin(wv * t[:, :, 0] + phase + r * np.pi / 2)
                                 for r in range(rows)], axis=1)
        return jet

    def truth(self, t=None, friction=False):
        """Exact tau^(0..2) (len(t), 3, 7) at times t (default: the kept samples), with friction or not."""
        if t is None:
            return self.taujet + self.friction_jet if friction else self.taujet
        qjet = self.qjet(t, 5)
        tau = hd.time_derivatives(self.model, qjet, 2)
        return tau + self.friction.jet(qjet[:, 1:4]) if friction else tau

    def _rows(self):
        """The recorded rows: every kept sample, one of them twice."""
        return np.r_[np.arange(self.duplicate + 1), np.arange(self.duplicate, len(self.t))]

    def stream(self, exact=False, effort=True, joints=None):
        """The arm's messages as a :class:`~hod_dynamics.recordings.bag_writer.JointStream` (``joints``: indices of the
        joints carried, default all)."""
        from hod_dynamics.recordings.bag_writer import JointStream

        cols = np.arange(self.model.n_dof) if joints is None else np.asarray(joints)
        rows = self._rows()
        stamps = self.exact_ns if exact else self.stamps_ns
        receive = self.exact_ns if exact else self.receive_ns
        return JointStream([self.model.joint_names[c] for c in cols], stamps[rows], self.position[rows][:, cols],
                           self.velocity[rows][:, cols], self.effort[rows][:, cols] if effort else None,
                           receive[rows])

    def gripper_stream(self, rate=50.0, exact=False):
        """A gripper driver's messages (joints finger_left, finger_right at ``rate`` Hz, its own clock
        phase and jitter, over the recording's span)."""
        from hod_dynamics.recordings.bag_writer import JointStream

        rng = np.random.default_rng(self.seed + 1000)
        t = np.arange(0.0031, self.t[-1], 1.0 / rate)
        opening = 0.02 + 0.015 * np.sin(2 * np.pi * 0.2 * t)
        position = np.column_stack([opening, opening])
        stamps = T0_NS + np.round(1e9 * (t + (0 if exact else 0.0004 + 0.02 / rate * rng.standard_normal(len(t))))
                                  ).astype(np.int64)
        receive = stamps + np.round(1e9 * rng.exponential(self.latency, len(t))).astype(np.int64) + 200_000
        return JointStream(FINGERS, stamps, position, np.zeros_like(position), 5.0 + position, receive)

    def second_driver(self, joints, offset=0.37, rate=None, exact=False):
        """The messages of a second driver that publishes the arm joints ``joints`` (indices) on its
        own grid: sampled ``offset`` periods after the arm's samples (at ``rate`` Hz, default the
        recording's), with its own drops, jitter and receive delays. Returns (JointStream, its
        sample times s)."""
        from hod_dynamics.recordings.bag_writer import JointStream

        rng = np.random.default_rng(self.seed + 2000)
        rate = self.rate if rate is None else rate
        k = np.arange(int(np.floor(self.t[-1] * rate)))
        drop = rng.choice(np.arange(10, len(k) - 10), len(k) // 200, replace=False)
        k = np.delete(k, drop)
        t = (k + offset) / rate
        qjet = self.qjet(t, 2)
        cols = np.asarray(joints)
        position = self.encode(qjet[:, 0])[:, cols]
        # a joint torque sensor measures the friction too, as the first driver's efforts do
        torque = self.truth(t, friction=True)[:, 0][:, cols] + EFFORT_NOISE * rng.standard_normal((len(t), len(cols)))
        period = 1.0 / rate
        stamps = T0_NS + np.round(1e9 * (t + (0 if exact else 0.0004 + self.jitter * period * rng.standard_normal(len(t))))
                                  ).astype(np.int64)
        receive = stamps + np.round(1e9 * rng.exponential(self.latency, len(t))).astype(np.int64) + 200_000
        return JointStream([self.model.joint_names[c] for c in cols], stamps, position, qjet[:, 1][:, cols], torque,
                           receive), t

    def states(self, exact=False, time_base="auto"):
        """The :class:`~hod_dynamics.recordings.bag.JointStates` a bag of :meth:`write` reads back as (the
        messages in receive order), without the bag."""
        from hod_dynamics.recordings.bag import JointStates

        s = self.stream(exact)
        order = np.argsort(s.receive_ns, kind="stable")
        stamps = s.stamps_ns[order]
        states = JointStates("/joint_states", tuple(s.joint_names), int(stamps[0]), stamps, (stamps - stamps[0]) * 1e-9,
                             s.position[order], s.velocity[order], s.effort[order], 0, s.receive_ns[order])
        return states.with_time_base(time_base)

    def write(self, path, *, exact=False, effort=True, storage="mcap", streams=()):
        """Record the bag at ``path`` (jittered stamps, or ``exact`` grid stamps), with the
        further ``streams`` (:class:`~hod_dynamics.recordings.bag_writer.JointStream`) on the same topic; returns ``path``."""
        from hod_dynamics.recordings.bag_writer import write_joint_state_streams

        write_joint_state_streams(path, [self.stream(exact, effort)] + list(streams), storage=storage)
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

    from hod_dynamics.model.inertia import com_form, parameters_from_inertia
    from hod_dynamics.model.robot_model import inertial_parameters
    from hod_dynamics.model.spatial import body_inertia

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
