"""A model's joints by name: the index of one joint, the order that maps a message's joints onto
the model's. Shared by :class:`~hod_dynamics.model.robot_model.RobotModel` (every joint of the
tree) and :class:`~hod_dynamics.model.loop_model.LoopModel` (the actuated joints of a mechanism)."""

from typing import Sequence

import numpy as np

from ..errors import ModelError


class NamedJoints:
    """Lookups by joint name over ``self.joint_names`` (a tuple of the model's joints)."""

    joint_names: tuple

    def joint_index(self, name: str) -> int:
        """Position of joint ``name`` in :attr:`joint_names`; raises ModelError if unknown."""
        try:
            return self.joint_names.index(name)
        except ValueError:
            raise ModelError(f"unknown joint '{name}'; the model has {list(self.joint_names)}") from None

    def joint_order(self, names: Sequence[str], *, allow_extra: bool = False):
        """Indices mapping ``names`` (e.g. a message's joint order) onto the model order.

        Returns ``idx`` (n_dof,) such that ``values_in_model_order = values[idx]``. Raises
        :class:`ModelError` naming unknown joints (unless ``allow_extra``) and missing ones.
        """
        names = list(names)
        position = {nm: k for k, nm in enumerate(names)}
        if len(position) != len(names):
            dup = sorted({nm for nm in names if names.count(nm) > 1})
            raise ModelError(f"duplicate joint names {dup}")
        unknown = [nm for nm in names if nm not in self.joint_names]
        if unknown and not allow_extra:
            raise ModelError(f"unknown joints {unknown}; the model has {list(self.joint_names)}")
        missing = [nm for nm in self.joint_names if nm not in position]
        if missing:
            raise ModelError(f"missing joints {missing}; the model needs {list(self.joint_names)}")
        return np.array([position[nm] for nm in self.joint_names], dtype=int)
