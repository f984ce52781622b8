"""Node parameters from one table: declaration, validation, start-up errors and documentation.

Each node lists :class:`Spec` rows; :func:`declare` declares them all (so every parameter has
a value in ``ros2 param dump`` / get_parameters), :func:`check` validates a value at start-up
(one :class:`StartupError` naming the parameter and what it expects) and at run time (the
reason of a refused set), and :func:`markdown_table` writes the table of doc/ros2_interface.md.

Scalars are statically typed (rclpy checks the type; the range is in the descriptor too).
Arrays are declared with dynamic typing and an empty value, because ROS cannot type an
empty list: ``ros2 param set NODE NAME '[]'`` (a bool array for the CLI) must clear them.
"""

from dataclasses import dataclass
from typing import Any, Optional, Tuple

from rcl_interfaces.msg import (FloatingPointRange, IntegerRange, ParameterDescriptor, ParameterType,
                               SetParametersResult)
from rclpy.exceptions import InvalidParameterTypeException, InvalidParameterValueException
from rclpy.parameter import Parameter

from .process import StartupError

_KINDS = {  # kind: (ROS type, text for "expected ...")
    "string": (ParameterType.PARAMETER_STRING, "a string"),
    "bool": (ParameterType.PARAMETER_BOOL, "true or false"),
    "integer": (ParameterType.PARAMETER_INTEGER, "an integer"),
    "double": (ParameterType.PARAMETER_DOUBLE, "a floating-point number (write 500.0, not 500)"),
    "string_array": (ParameterType.PARAMETER_STRING_ARRAY, "a list of strings"),
    "double_array": (ParameterType.PARAMETER_DOUBLE_ARRAY, "a list of numbers"),
}
_ARRAY_TYPES = {"string_array": (Parameter.Type.STRING_ARRAY,),
                "double_array": (Parameter.Type.DOUBLE_ARRAY, Parameter.Type.INTEGER_ARRAY)}
_EMPTY_OK = (Parameter.Type.BYTE_ARRAY, Parameter.Type.BOOL_ARRAY, Parameter.Type.INTEGER_ARRAY,
             Parameter.Type.DOUBLE_ARRAY, Parameter.Type.STRING_ARRAY)


@dataclass(frozen=True)
class Spec:
    """One node parameter: ``kind`` is a key of ``_KINDS``; ``range`` (low, high) inclusive
    for numbers; ``unit`` is printed after the expectation and in doc/ros2_interface.md."""

    name: str
    kind: str
    default: Any
    description: str
    unit: str = ""
    read_only: bool = True
    range: Optional[Tuple[float, float]] = None

    @property
    def is_array(self):
        return self.kind.endswith("_array")

    def expected(self):
        """What a valid value is, in words."""
        text = _KINDS[self.kind][1]
        if self.range is not None:
            text += f" in [{self.range[0]:g}, {self.range[1]:g}]"
        return text + (f" ({self.unit})" if self.unit else "")


def declare(node, specs):
    """Declare every parameter of ``specs`` on ``node`` with its override or default; raise
    StartupError naming the first parameter whose given value is invalid. Warns (one line)
    about given parameters the node does not have, and returns their names."""
    overrides = getattr(node, "_parameter_overrides", {})  # to quote values and find unknown names
    for spec in specs:
        try:
            if spec.is_array:
                node.declare_parameter(spec.name, list(spec.default), descriptor(spec))
            else:
                node.declare_parameter(spec.name, spec.default, descriptor(spec))
        except (InvalidParameterTypeException, InvalidParameterValueException):
            given = overrides.get(spec.name)
            raise StartupError(_refusal(spec, None if given is None else given.value)) from None
        reason = check(spec, node.get_parameter(spec.name))
        if reason:
            raise StartupError(reason)
    unknown = sorted(name for name in overrides if not node.has_parameter(name)
                     and not name.startswith("qos_overrides."))  # declared later, with publishers
    if unknown:  # rclpy ignores them silently: a misspelt name would look like a default
        node.get_logger().warning(f"ignoring parameters this node does not have: {unknown}")
    return unknown


def descriptor(spec):
    """ParameterDescriptor of a spec (dynamic typing for arrays, see the module docstring)."""
    d = ParameterDescriptor(description=spec.description + (f" ({spec.unit})" if spec.unit else ""),
                            read_only=spec.read_only)
    if spec.is_array:
        d.dynamic_typing = True
        d.additional_constraints = f"{_KINDS[spec.kind][1]}; [] clears it"
        return d
    d.type = _KINDS[spec.kind][0]
    if spec.range is not None and spec.kind == "integer":
        d.integer_range = [IntegerRange(from_value=int(spec.range[0]), to_value=int(spec.range[1]), step=1)]
    elif spec.range is not None:
        d.floating_point_range = [FloatingPointRange(from_value=float(spec.range[0]),
                                                     to_value=float(spec.range[1]), step=0.0)]
    return d


def check(spec, param):
    """None when the rclpy Parameter ``param`` is a valid value of ``spec``, else the reason
    (one line naming the parameter, what it expects and what it got)."""
    value = param.value
    if spec.is_array:
        if param.type_ in _EMPTY_OK and len(value) == 0:
            return None
        if param.type_ not in _ARRAY_TYPES[spec.kind]:
            return _refusal(spec, value)
    elif spec.range is not None and not spec.range[0] <= value <= spec.range[1]:
        return _refusal(spec, value)
    return None


def value_of(node, spec):
    """The parameter's value as Python data: arrays as lists (floats for double arrays)."""
    value = node.get_parameter(spec.name).value
    if not spec.is_array:
        return value
    return [float(v) for v in value] if spec.kind == "double_array" else [str(v) for v in value]


def checker(specs, extra=None):
    """An on-set-parameters callback: refuses values that :func:`check` refuses, deleting a
    parameter (it would vanish from get_parameters), then asks ``extra(name, value)`` (a
    reason or None) for node-specific rules."""
    by_name = {s.name: s for s in specs}

    def callback(params):
        for p in params:
            spec = by_name.get(p.name)
            if spec is None:
                continue
            if p.type_ == Parameter.Type.NOT_SET:
                return SetParametersResult(successful=False, reason=(
                    f"parameter {p.name} cannot be deleted" + ("; set [] to clear it" if spec.is_array else "")))
            reason = check(spec, p)
            if reason is None and extra is not None:
                reason = extra(p.name, p.value)
            if reason:
                return SetParametersResult(successful=False, reason=reason)
        return SetParametersResult(successful=True)

    return callback


def markdown_table(specs):
    """The doc/ros2_interface.md table of ``specs``: name, type, default, unit/range, read-only, meaning."""
    rows = ["| parameter | type | default | range / unit | run time | meaning |",
            "| --- | --- | --- | --- | --- | --- |"]
    for s in specs:
        default = "[]" if s.is_array and not s.default else repr(s.default) if s.kind == "string" else str(s.default)
        default = default.replace("True", "true").replace("False", "false")
        limits = ", ".join(x for x in ((f"[{s.range[0]:g}, {s.range[1]:g}]" if s.range else ""), s.unit) if x)
        rows.append(f"| `{s.name}` | {s.kind} | `{default}` | {limits or '-'} | "
                    f"{'read-only' if s.read_only else 'settable'} | {s.description} |")
    return "\n".join(rows)


def _refusal(spec, value):
    if hasattr(value, "__len__") and not isinstance(value, str):
        value = list(value)
    shown = "nothing" if value is None else f"{value!r}" if not isinstance(value, str) else repr(value)
    kind = "" if value is None else f" ({Parameter.Type.from_parameter_value(value).name.lower()})"
    return f"parameter {spec.name}: expected {spec.expected()}, got {shown}{kind}"
