"""The published test case of Müller and Kumar 2021 and Kumar and Müller 2021: KUKA iiwa
trajectory of Gaz et al. (2019, eq. 31)
and the end-effector wrench of the authors' MATLAB example. Analytic, so every derivative is exact.
"""

import numpy as np

GAZ_AMPLITUDES = np.array([-1.2943753211777664, 0.7175341454355011, -0.5691380764966176,
                           0.5848944158627155, 1.6216297151633214, -0.9187855709752027,
                           0.4217605991935227])
GAZ_FREQUENCIES = np.array([1.7073873117335832, 3.079992797637052, 2.1084514453622774,
                            3.5903916041026207, 1.4183262544423447, 2.285625793808507,
                            5.927533308659986])
IIWA_GRAVITY = (0.0, 0.0, -9.80665)
IIWA_WRENCH_LINK = "iiwa_link_7"


def _cos_jet(t, rows, amplitude, omega, phase=0.0):
    """Rows k = 0..rows-1 of d^k/dt^k [amplitude cos(omega t + phase)]: (len(t), rows, m)."""
    t = np.atleast_1d(np.asarray(t, dtype=float))[:, None, None]
    k = np.arange(rows)[None, :, None]
    return amplitude * omega ** k * np.cos(omega * t + phase + k * np.pi / 2)


def gaz_trajectory_jet(t, rows):
    """q_i(t) = a_i cos(w_i t) and its derivatives: t (T,) -> (T, rows, 7), rad and s."""
    return _cos_jet(t, rows, GAZ_AMPLITUDES, GAZ_FREQUENCIES)


def iiwa_wrench_jet(t, rows):
    """W(t) = 10 sin(pi t) (1, 1, 1, 1, 1, 1) and its derivatives: (T, rows, 6), N m and N."""
    return _cos_jet(t, rows, np.full(6, 10.0), np.full(6, np.pi), phase=-np.pi / 2)
