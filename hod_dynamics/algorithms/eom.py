"""The terms of the joint-space equations of motion M(q) qdd + C(q, qd) qd + g(q) = tau + sum J^T W
that are asked for on their own: the gravity torques g(q) and the Coriolis matrix C(q, qd).
(M is :func:`hod_dynamics.mass_matrix`, J :func:`hod_dynamics.frame_jacobian`.)
"""

import numpy as np

from ..model.validation import check_state
from .dispatch import inverse_dynamics_fixed, one_gravity
from .partials import id_partials


def gravity_torques(model, q):
    """Generalised gravity g(q): the joint torques/forces that hold the robot still at q, with
    the model's gravity vector. q (..., n) -> (..., n), N m (N for prismatic joints). The same
    numbers as Pinocchio's ``computeGeneralizedGravity``."""
    tau = one_gravity(model, q)  # the one-sample fast path, when it applies
    if tau is not None:
        return tau
    return inverse_dynamics_fixed(model, q, None, None)


def coriolis_matrix(model, q, qd):
    """Coriolis/centrifugal matrix C(q, qd) of the Christoffel symbols of the first kind:
    ``C_ij = sum_k G_ijk qd_k`` with ``G_ijk = (dM_ij/dq_k + dM_ik/dq_j - dM_jk/dq_i) / 2``.

    ``C qd`` is the Coriolis and centrifugal torque and ``dM/dt - 2 C`` is skew-symmetric; the
    same matrix as Pinocchio's ``computeCoriolisMatrix``. q, qd (..., n) -> (..., n, n),
    ``[..., i, j]`` (N m s/rad). Computed as ``C = 1/2 d(C qd)/dqd``: the Coriolis torque is
    quadratic in qd with G_ijk symmetric in j and k, and the partials kernels give that
    derivative in O(n^2).
    """
    q, qd = check_state(model, q=q, qd=qd, what="coriolis_matrix")
    return 0.5 * id_partials(model, q, qd, np.zeros_like(q))[1]
