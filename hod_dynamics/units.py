"""SI units of joint-space quantities and their time derivatives, for text and CSV headers.

A revolute or continuous joint moves in rad and is driven by a torque in N m; a prismatic
joint moves in m and is driven by a force in N. The k-th time derivative divides by s^k.
"""

_BASE = {"position": ("rad", "m"), "torque": ("N m", "N")}


def per_second(unit, k):
    """``unit`` divided by s^k: ``per_second("N m", 2) == "N m/s^2"``."""
    return unit if k == 0 else f"{unit}/s" if k == 1 else f"{unit}/s^{k}"


def joint_unit(joint_type, quantity, k=0):
    """Unit of the k-th time derivative of ``quantity`` ("position" or "torque") of a joint of
    type ``joint_type`` ("revolute", "continuous", "prismatic"; None: revolute)."""
    return per_second(_BASE[quantity][joint_type == "prismatic"], k)


def column(name, joint_type, quantity, k=0):
    """CSV column header: the name, a space and the unit in brackets, e.g. ``tau1_j1 [N m/s]``."""
    return f"{name} [{joint_unit(joint_type, quantity, k)}]"


def common_unit(joint_types, quantity, k=0):
    """The unit shared by all joints, or both spellings (``"N m or N"``) for a mixed model."""
    units = dict.fromkeys(joint_unit(t, quantity, k) for t in joint_types)
    return " or ".join(units)


def friction_units(joint_type):
    """(force unit, viscous coefficient unit) of a joint's friction: ("N m", "N m s/rad") for a
    revolute or continuous joint, ("N", "N s/m") for a prismatic one."""
    force, position = joint_unit(joint_type, "torque"), joint_unit(joint_type, "position")
    return force, f"{force} s/{position}"
