"""Generated fleets: recordings (:class:`recordings.Recording`) of several robots over weeks,
each run at its own time with its own motion, and joint friction that may drift.

A fleet robot is a real 7-joint arm description: the shipped KUKA iiwa 14 (model name
``iiwa14``) and the KUKA LWR4+ of FloBaRoID (``test/data/urdf_corpus/FloBaRoID/kuka_lwr4.urdf``,
model name ``kuka-lwr``). Every recording keeps the generator's realism (jittered stamps, drops,
encoder quantisation, torque-sensor noise); only its start time and friction change: the
friction torque is recomputed with the recording's friction and the same sensor noise added.
"""

import os

import numpy as np

from hod_dynamics.algorithms.friction import FrictionModel
from recordings import T0_NS, Recording

HERE = os.path.dirname(os.path.abspath(__file__))
LWR4 = os.path.join(HERE, "data", "urdf_corpus", "FloBaRoID", "kuka_lwr4.urdf")
ROBOTS = {"iiwa14": None, "kuka-lwr": LWR4}       # model name -> URDF (None: the shipped iiwa 14)
DAY_NS = 86400 * 10**9


def fleet_recording(robot, seed, day, *, coulomb_scale=None, duration=6.0, rate=100.0):
    """The recording of ``robot`` (a key of :data:`ROBOTS`) started ``day`` days (a float) after
    the generator's epoch, its motion from ``seed``; ``coulomb_scale`` (7,) multiplies the
    generator's Coulomb friction per joint (None: unchanged)."""
    rec = Recording(seed=seed, duration=duration, rate=rate, urdf=ROBOTS[robot])
    noise = rec.effort - rec.taujet[:, 0] - rec.friction_jet[:, 0]       # the torque sensor's
    if coulomb_scale is not None:
        f = rec.friction
        rec.friction = FrictionModel(f.joint_names, f.coulomb * np.asarray(coulomb_scale, float), f.viscous,
                                     f.offset, f.v_s)
        rec.friction_jet = rec.friction.jet(rec.qjet(rec.t, 5)[:, 1:4])
        rec.effort = rec.taujet[:, 0] + rec.friction_jet[:, 0] + noise
    shift = int(round(day * DAY_NS))
    rec.stamps_ns = rec.stamps_ns + shift
    rec.receive_ns = rec.receive_ns + shift
    rec.exact_ns = rec.exact_ns + shift
    rec.start_ns = T0_NS + shift
    return rec


def drifting_fleet(folder, *, weeks=8, per_week=2, drift=0.02, robot="kuka-lwr", joint=1, duration=6.0,
                   rate=100.0):
    """Bags of both robots, ``per_week`` a week each over ``weeks`` weeks, written into
    ``folder`` as rosbag2 folders ``<robot>_<k>`` (MCAP storage): the Coulomb friction of joint index ``joint`` of
    ``robot`` rises by ``drift`` (a fraction) a week, compounded; everything else keeps the
    generator's friction. Returns {bag path: (robot, day, coulomb scale (7,))}."""
    os.makedirs(folder, exist_ok=True)
    bags = {}
    for r, name in enumerate(ROBOTS):
        for k in range(weeks * per_week):
            day = 7.0 * k / per_week + 0.3 * r + 0.01 * k
            scale = np.ones(7)
            if name == robot:
                scale[joint] = (1 + drift) ** (day / 7.0)
            rec = fleet_recording(name, 1000 * r + k + 1, day, coulomb_scale=scale, duration=duration, rate=rate)
            path = rec.write(os.path.join(folder, f"{name}_{k:02d}"))
            bags[str(path)] = (name, day, scale)
    return bags
