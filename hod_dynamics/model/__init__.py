"""The robot model: a URDF read and checked, the immutable :class:`RobotModel` it becomes, the
inertial parameters of its bodies, the checks every entry point makes of a model and its arrays,
the shipped robots and the URDF writer.

Modules: :mod:`~hod_dynamics.model.urdf_schema` (what a URDF may hold), :mod:`~.urdf` (a URDF
to the model's arguments), :mod:`~.robot_model` (the model), :mod:`~.spatial` (SE(3) in the
papers' notation), :mod:`~.inertia` (a body's ten parameters), :mod:`~.validation` (the checks),
:mod:`~.robots` (shipped data), :mod:`~.urdf_writer` (a model back to a URDF),
:mod:`~.paper_examples` (the published test case).
"""

from ..deprecation import module_getattr
from .robot_model import Frame, RobotModel, inertial_parameters, per_model
from .robots import load_robot, model_from_description, robot_path, shipped_robots

__all__ = ["RobotModel", "Frame", "per_model", "inertial_parameters", "load_robot", "robot_path",
           "shipped_robots", "model_from_description"]
__getattr__ = module_getattr(__name__, {})  # the modules of the wing on first use (hd.model.spatial)
