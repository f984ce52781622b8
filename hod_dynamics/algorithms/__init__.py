"""The algorithms of the dynamics: the recursive Newton-Euler algorithm on Taylor jets (Kumar and
Müller 2021) and the entry points built on it, the closed-form terms and their derivatives, the
mass matrix, forward dynamics, first- and second-order partials, floating bases, kinematics,
joint friction and the regressors of identification.

The names below are the entry points; the top-level :mod:`hod_dynamics` holds the ones most
users need. Modules: :mod:`~.jets` (truncated Taylor arithmetic), :mod:`~.recursive` (the
reference recursion), :mod:`~.dispatch` (numpy or compiled), :mod:`~.dynamics`,
:mod:`~.floating`, :mod:`~.closed_form`, :mod:`~.crba`, :mod:`~.forward`, :mod:`~.eom`,
:mod:`~.world_frame`, :mod:`~.partials`, :mod:`~.second_partials`, :mod:`~.kinematics`,
:mod:`~.friction`, :mod:`~.regressors`.
"""

from ..deprecation import module_getattr
from .closed_form import (coriolis_matrix_derivatives, external_wrench_derivatives, gravity_derivatives,
                          mass_matrix_derivatives)
from .crba import kinetic_energy, mass_matrix
from .dynamics import inverse_dynamics, time_derivatives
from .eom import coriolis_matrix, gravity_torques
from .floating import time_derivatives_floating
from .forward import forward_dynamics
from .friction import FrictionModel, fit_friction, load_friction, save_friction
from .kinematics import frame_jacobian, frame_pose
from .partials import id_partials
from .regressors import regressor, regressor_time_derivatives
from .second_partials import (SecondPartialsData, id_partials_directional, id_second_order_rate,
                              id_second_partials)

__all__ = ["inverse_dynamics", "time_derivatives", "time_derivatives_floating", "forward_dynamics",
           "mass_matrix", "kinetic_energy", "gravity_torques", "coriolis_matrix",
           "mass_matrix_derivatives", "coriolis_matrix_derivatives", "gravity_derivatives",
           "external_wrench_derivatives", "id_partials", "id_second_partials", "id_partials_directional",
           "id_second_order_rate", "SecondPartialsData", "frame_pose", "frame_jacobian", "FrictionModel",
           "load_friction", "save_friction", "fit_friction", "regressor", "regressor_time_derivatives"]
__getattr__ = module_getattr(__name__, {})  # the modules of the wing on first use (hd.algorithms.jets)
