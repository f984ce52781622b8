"""Node parameters from one table: declaration, validation, start-up errors and documentation.

Each node lists :class:`Spec` rows; :func:`declare` declares them all (so every parameter has
a value in ``ros2 param dump`` / get_parameters), :func:`check` validates a value at start-up
(one :class:`StartupError` naming the parameter and what it expects) and at run time (the
reason of a refused set), and :func:`markdown_table` writes the table of doc/ros2_interface.md.

Every parameter is statically typed, arrays included, so that ``ros2 param describe`` and
``ros2 param get`` show the declared type whatever the value (an empty list too). ROS cannot
type an empty list by itself: ``-p name:=[]`` and ``name: []`` in a params file arrive with no
value at all, and ``ros2 param set NODE NAME '[]'`` sends an empty *boolean* array. An empty
list of any kind (and integers where doubles go) is therefore taken as the declared array type:
at declaration from the overrides, and at run time by a pre-set callback; a dump
(``ros2 param dump``) thus loads back as it was written.
"""

import threading
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
_ARRAY_TYPES = {"string_array": Parameter.Type.STRING_ARRAY, "double_array": Parameter.Type.DOUBLE_ARRAY}
_ANY_ARRAY = (Parameter.Type.BYTE_ARRAY, Parameter.Type.BOOL_ARRAY, Parameter.Type.INTEGER_ARRAY,
              Parameter.Type.DOUBLE_ARRAY, Parameter.Type.STRING_ARRAY)


@dataclass(frozen=True)
class Spec:
    """One node parameter: ``kind`` is a key of ``_KINDS``; ``range`` (low, high) inclusive
    for numbers; ``choices``: the values a string may take; ``unit`` is printed after the
    expectation and in doc/ros2_interface.md."""

    name: str
    kind: str
    default: Any
    description: str
    unit: str = ""
    read_only: bool = True
    range: Optional[Tuple[float, float]] = None
    choices: Optional[Tuple[str, ...]] = None

    @property
    def is_array(self):
        return self.kind.endswith("_array")

    def expected(self):
        """What a valid value is, in words."""
        text = _KINDS[self.kind][1]
        if self.choices is not None:
            text = "one of " + ", ".join(repr(c) for c in self.choices)
        if self.range is not None:
            text += f" in [{self.range[0]:g}, {self.range[1]:g}]"
        return text + (f" ({self.unit})" if self.unit else "")


def declare(node, specs, extra=None):
    """Declare every parameter of ``specs`` on ``node`` with its override or default; raise
    StartupError naming the first parameter whose given value is invalid. Then registers the
    :class:`RunTimeChecks` of ``specs`` (and ``extra``, a node's own rules). Warns (one line)
    about given parameters the node does not have, and returns their names."""
    overrides = getattr(node, "_parameter_overrides", {})  # to quote values and find unknown names
    for spec in specs:
        if spec.is_array:
            given = overrides.get(spec.name)
            value = spec.default if given is None else _array_value(spec, given)
            _declare_array(node, spec, value)
            continue
        try:
            node.declare_parameter(spec.name, spec.default, descriptor(spec))
        except (InvalidParameterTypeException, InvalidParameterValueException):
            given = overrides.get(spec.name)
            raise StartupError(_refusal(spec, None if given is None else given.value)) from None
        reason = check(spec, node.get_parameter(spec.name))
        if reason:
            raise StartupError(reason)
    checks = RunTimeChecks(node, specs, extra)
    node.add_pre_set_parameters_callback(checks.pre_set)
    node.add_on_set_parameters_callback(checks.on_set)
    unknown = sorted(name for name in overrides if not node.has_parameter(name)
                     and not name.startswith("qos_overrides."))  # declared later, with publishers
    if unknown:  # rclpy ignores them silently: a misspelt name would look like a default
        node.get_logger().warning(f"ignoring parameters this node does not have: {unknown}")
    return unknown


def _array_value(spec, given):
    """The list an override of an array parameter stands for (no value, i.e. ``[]``, is the
    empty list); raises StartupError for anything else than a list of the declared kind."""
    if given.type_ == Parameter.Type.NOT_SET:
        return []
    typed = _typed_array(spec, given)
    if typed is None:
        raise StartupError(_refusal(spec, given.value))
    return list(typed.value)


def _typed_array(spec, param):
    """``param`` as a Parameter of the spec's array type when it is one: the same value, an
    empty list of any kind, or integers for a double array; else None."""
    kind = _ARRAY_TYPES[spec.kind]
    if param.type_ == kind:
        return param
    if param.type_ in _ANY_ARRAY and len(param.value) == 0:
        return Parameter(param.name, kind, [])
    if kind == Parameter.Type.DOUBLE_ARRAY and param.type_ == Parameter.Type.INTEGER_ARRAY:
        return Parameter(param.name, kind, [float(v) for v in param.value])
    return None


def _declare_array(node, spec, value):
    """Declare an array parameter statically typed with ``value`` (a list, possibly empty).

    rclpy's declare_parameter infers the type of a default from its items, which an empty list
    does not have (it becomes a byte array); the node's common declaration path takes the typed
    Parameter as it is. Where that path does not exist (another rclpy), the array is declared
    with dynamic typing instead."""
    param = Parameter(spec.name, _ARRAY_TYPES[spec.kind], list(value))
    declare_typed = getattr(node, "_declare_parameter_common", None)
    if declare_typed is None:
        d = descriptor(spec)
        d.dynamic_typing = True
        node.declare_parameter(spec.name, param.value, d)
        return
    declare_typed([param], {spec.name: descriptor(spec)})


def descriptor(spec):
    """ParameterDescriptor of a spec: its type, description (with the unit), read-only flag,
    range, and for arrays what the list holds."""
    d = ParameterDescriptor(description=spec.description + (f" ({spec.unit})" if spec.unit else ""),
                            read_only=spec.read_only, type=_KINDS[spec.kind][0])
    if spec.is_array:
        d.additional_constraints = f"{_KINDS[spec.kind][1]}; [] clears it"
    elif spec.choices is not None:
        d.additional_constraints = spec.expected()
    elif spec.range is not None and spec.kind == "integer":
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
        if _typed_array(spec, param) is None:
            return _refusal(spec, value)
    elif param.type_.value != _KINDS[spec.kind][0]:
        return _refusal(spec, value)
    elif spec.range is not None and not spec.range[0] <= value <= spec.range[1]:
        return _refusal(spec, value)
    elif spec.choices is not None and value not in spec.choices:
        return _refusal(spec, value)
    return None


def value_of(node, spec):
    """The parameter's value as Python data: arrays as lists (floats for double arrays)."""
    value = node.get_parameter(spec.name).value
    if not spec.is_array:
        return value
    return [float(v) for v in value] if spec.kind == "double_array" else [str(v) for v in value]


class RunTimeChecks:
    """The callbacks that check values set at run time (``ros2 param set``, the parameter
    services): register :meth:`pre_set` as the node's pre-set-parameters callback and
    :meth:`on_set` as its on-set-parameters callback (:func:`declare` does both).

    :meth:`pre_set` types empty lists and integer lists as the declared arrays (see the module
    docstring). A value of a settable parameter that the table refuses (a wrong type, out of
    range, a deletion) would be refused by rclpy's own type check with a bare "Wrong parameter
    type" before any on-set callback could name the parameter; so pre_set swaps it for the
    current value and keeps the reason, and :meth:`on_set` refuses that set with it. ``extra(name,
    value)`` (a reason or None) adds a node's own rules."""

    def __init__(self, node, specs, extra=None):
        self.node, self.extra = node, extra
        self.specs = {s.name: s for s in specs}
        self._refused = {}  # id(the stand-in Parameter) -> reason, from pre_set to on_set
        self._lock = threading.Lock()

    def pre_set(self, params):
        out = []
        for p in params:
            spec = self.specs.get(p.name)
            if spec is None or spec.read_only:  # rclpy refuses read-only ones, naming them
                out.append(p)
                continue
            typed = _typed_array(spec, p) if spec.is_array and p.type_ != Parameter.Type.NOT_SET else None
            if typed is not None:
                p = typed
            reason = (f"parameter {p.name} cannot be deleted" + ("; set [] to clear it" if spec.is_array else "")
                      if p.type_ == Parameter.Type.NOT_SET else check(spec, p))
            if reason:
                p = Parameter(p.name, self.node.get_parameter(p.name).type_, self.node.get_parameter(p.name).value)
                with self._lock:
                    self._refused[id(p)] = (p, reason)
            out.append(p)
        return out

    def on_set(self, params):
        for p in params:
            with self._lock:
                refused = self._refused.pop(id(p), None)
            reason = refused[1] if refused is not None and refused[0] is p else None
            if reason is None and p.name in self.specs and self.extra is not None:
                reason = self.extra(p.name, p.value)
            if reason:
                return SetParametersResult(successful=False, reason=reason)
        return SetParametersResult(successful=True)


def markdown_table(specs):
    """The doc/ros2_interface.md table of ``specs``: name, type, default, unit/range, read-only, meaning."""
    rows = ["| parameter | type | default | range / unit | run time | meaning |",
            "| --- | --- | --- | --- | --- | --- |"]
    for s in specs:
        default = "[]" if s.is_array and not s.default else repr(s.default) if s.kind == "string" else str(s.default)
        default = default.replace("True", "true").replace("False", "false")
        limits = ", ".join(x for x in ((f"[{s.range[0]:g}, {s.range[1]:g}]" if s.range else ""),
                                       " or ".join(f"`{c}`" for c in s.choices or ()), s.unit) if x)
        rows.append(f"| `{s.name}` | {s.kind} | `{default}` | {limits or '-'} | "
                    f"{'read-only' if s.read_only else 'settable'} | {s.description} |")
    return "\n".join(rows)


def _refusal(spec, value):
    if hasattr(value, "__len__") and not isinstance(value, str):
        value = list(value)
    shown = "nothing" if value is None else f"{value!r}" if not isinstance(value, str) else repr(value)
    kind = "" if value is None else f" ({Parameter.Type.from_parameter_value(value).name.lower()})"
    return f"parameter {spec.name}: expected {spec.expected()}, got {shown}{kind}"
