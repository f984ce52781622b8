"""The feedforward node's parameters through the services ``ros2 param`` uses: a dump (as
``ros2 param dump`` writes it) loads back, ``[]`` is taken for every array from ``-p``, a params
file and a set, and the declared types show whatever the value. Real rclpy over DDS; the dump
is loaded by the installed executable as its own process (``ros2 param load`` of ros2cli 0.36.1
cannot load a dump with rclpy 9.1.2 at all, so the services are called directly)."""

import signal
from contextlib import contextmanager

import yaml

from ros_harness import (context, feedforward_node, harness, installed_executable, start_process,  # noqa: F401
                         wait_for)

import hod_dynamics as hd  # noqa: E402
from hod_dynamics.ros.feedforward_node import PARAMETERS  # noqa: E402
from rcl_interfaces.msg import Parameter as ParameterMsg, ParameterType, ParameterValue  # noqa: E402
from rcl_interfaces.srv import (DescribeParameters, GetParameters, ListParameters,  # noqa: E402
                                SetParameters)
from rclpy.parameter import parameter_value_to_python  # noqa: E402

NODE = "/hod_feedforward"
ARRAYS = {s.name: s.kind for s in PARAMETERS if s.is_array}
ARRAY_TYPES = {"double_array": ParameterType.PARAMETER_DOUBLE_ARRAY,
               "string_array": ParameterType.PARAMETER_STRING_ARRAY}


def values(harness, node=NODE):
    """{name: ParameterValue} from list_parameters then get_parameters, as ros2 param dump does."""
    names = sorted(harness.call(ListParameters, f"{node}/list_parameters", ListParameters.Request()).result.names)
    got = harness.call(GetParameters, f"{node}/get_parameters", GetParameters.Request(names=names)).values
    return dict(zip(names, got))


def dump(harness, node=NODE):
    """The YAML ``ros2 param dump NODE`` prints (ros2param's dump verb: the node's full name,
    ros__parameters, dotted names nested)."""
    tree = {}
    for name, value in values(harness, node).items():
        *parents, leaf = name.split(".")
        branch = tree
        for part in parents:
            branch = branch.setdefault(part, {})
        branch[leaf] = parameter_value_to_python(value)
    return yaml.dump({node: {"ros__parameters": tree}}, default_flow_style=False)


def describe(harness, names, node=NODE):
    request = DescribeParameters.Request(names=list(names))
    return {d.name: d for d in harness.call(DescribeParameters, f"{node}/describe_parameters", request).descriptors}


def run_installed(args):
    return start_process([installed_executable("feedforward_node"), "--ros-args"] + args)


@contextmanager
def installed_node(harness, args):
    """The installed node with ROS arguments ``args``, serving while the block runs, then
    stopped with SIGINT; ``proc.output`` is what it printed, and it must exit with 0."""
    proc = run_installed(args)
    try:
        wait_for(lambda: harness.client.count_publishers(f"{NODE}/feedforward") > 0 or proc.poll() is not None,
                 20, "the node")
        assert proc.poll() is None, proc.communicate()
        yield proc
    finally:
        if proc.poll() is None:
            proc.send_signal(signal.SIGINT)
        out, err = proc.communicate(timeout=30)
        proc.output = out + err
    assert proc.returncode == 0, proc.output


def test_a_dump_loads_back_as_it_was(harness, tmp_path):
    """Dump a running node configured with every kind of value, start the node from the dump
    (--params-file), and dump again: the same text."""
    urdf = hd.robot_path("iiwa14")
    with installed_node(harness, ["-p", f"urdf_path:={urdf}", "-p", "publish_rate:=250.0", "-p", "order:=3",
                                  "-p", "effort_rate_limits:=[100.0, 100.0, 50.0, 50.0, 20.0, 10.0, 10.0]",
                                  "-p", "profile_dir:=/tmp/profiles",
                                  "-p", "initial_positions:=[0.0, 0.1, 0.0, -1.0, 0.0, 0.5, 0.0]"]):
        text = dump(harness)
    loaded = yaml.safe_load(text)[NODE]["ros__parameters"]
    assert loaded["xacro_args"] == [] and loaded["effort_rate_limits"] == [100.0, 100.0, 50.0, 50.0, 20.0, 10.0, 10.0]
    path = tmp_path / "dump.yaml"
    path.write_text(text)
    with installed_node(harness, ["--params-file", str(path)]):
        again = dump(harness)
    assert again == text


def test_every_array_given_as_empty_from_a_params_file_and_the_command_line(harness, tmp_path):
    path = tmp_path / "empty.yaml"
    path.write_text(yaml.dump({"/**": {"ros__parameters": {name: [] for name in ARRAYS}}}))
    with installed_node(harness, ["--params-file", str(path), "-p", f"urdf_path:={hd.robot_path('iiwa14')}",
                                  "-p", "tip_links:=[]", "-p", "xacro_args:=[]"]) as proc:
        got = values(harness)
        descriptors = describe(harness, ARRAYS)
    output = proc.output
    for name, kind in ARRAYS.items():  # typed as declared although empty
        assert got[name].type == descriptors[name].type == ARRAY_TYPES[kind], name
        assert parameter_value_to_python(got[name]) == [], name
    assert "model from parameter urdf_path" in output  # gravity [] is the default: the model loaded


def test_describe_and_get_show_the_declared_types_and_sets_of_empty_lists_keep_them(harness):
    node = feedforward_node(harness)
    descriptors = describe(harness, [s.name for s in PARAMETERS])
    kinds = {"string": ParameterType.PARAMETER_STRING, "bool": ParameterType.PARAMETER_BOOL,
             "integer": ParameterType.PARAMETER_INTEGER, "double": ParameterType.PARAMETER_DOUBLE, **ARRAY_TYPES}
    for spec in PARAMETERS:
        d = descriptors[spec.name]
        assert d.type == kinds[spec.kind] and d.read_only == spec.read_only, spec.name
        assert spec.description in d.description

    def send(value):
        request = SetParameters.Request(parameters=[ParameterMsg(name="effort_rate_limits", value=value)])
        return harness.call(SetParameters, f"{NODE}/set_parameters", request).results[0]

    # what `ros2 param set /hod_feedforward effort_rate_limits ...` sends: [1, 2, ...] integers, '[]' booleans
    ints = ParameterValue(type=ParameterType.PARAMETER_INTEGER_ARRAY, integer_array_value=[5] * 7)
    assert send(ints).successful and node.get_parameter("effort_rate_limits").value == [5.0] * 7
    empty = ParameterValue(type=ParameterType.PARAMETER_BOOL_ARRAY, bool_array_value=[])
    assert send(empty).successful
    got = values(harness)["effort_rate_limits"]
    assert got.type == ParameterType.PARAMETER_DOUBLE_ARRAY and list(got.double_array_value) == []
    assert describe(harness, ["effort_rate_limits"])["effort_rate_limits"].type == ParameterType.PARAMETER_DOUBLE_ARRAY
    # refusals name the parameter and keep the type
    result = send(ParameterValue(type=ParameterType.PARAMETER_STRING_ARRAY, string_array_value=["a"]))
    assert not result.successful
    assert result.reason == "parameter effort_rate_limits: expected a list of numbers (N m/s), got ['a'] (string_array)"
    rate = SetParameters.Request(parameters=[ParameterMsg(name="profile_rate", value=ParameterValue(
        type=ParameterType.PARAMETER_INTEGER, integer_value=5000))])
    result = harness.call(SetParameters, f"{NODE}/set_parameters", rate).results[0]
    assert not result.successful and result.reason.startswith(
        "parameter profile_rate: expected a floating-point number (write 500.0, not 500) in [1, 100000] (Hz), got 5000")
    assert describe(harness, ["effort_rate_limits"])["effort_rate_limits"].type == ParameterType.PARAMETER_DOUBLE_ARRAY


def test_settable_parameters_set_back_from_a_dump_through_set_parameters(harness):
    """What `ros2 param load` does on a running node (with the top key `/**`): every settable
    parameter accepted, every read-only one refused as read-only, nothing changed."""
    node = feedforward_node(harness, effort_rate_limits=[10.0] * 7, profile_rate=2000.0)
    before = values(harness)
    request = SetParameters.Request(parameters=[ParameterMsg(name=n, value=v) for n, v in before.items()])
    results = harness.call(SetParameters, f"{NODE}/set_parameters", request).results
    refused = {p.name: r.reason for p, r in zip(request.parameters, results) if not r.successful}
    settable = {s.name for s in PARAMETERS if not s.read_only} | {"use_sim_time"}
    assert set(before) - set(refused) == settable, refused
    assert all(reason.startswith("Trying to set a read-only parameter") for reason in refused.values()), refused
    assert values(harness) == before and node.get_parameter("profile_rate").value == 2000.0


def test_a_params_file_with_a_yaml_error_names_its_line_and_column(tmp_path):
    path = tmp_path / "broken.yaml"
    path.write_text("/**:\n  ros__parameters:\n    order: 2\n   publish_rate: [1.0\n")
    proc = run_installed(["--params-file", str(path)])
    out, err = proc.communicate(timeout=30)
    assert proc.returncode == 1
    fatal = [line for line in (out + err).splitlines() if "[FATAL]" in line]
    assert len(fatal) == 1 and fatal[0].endswith(
        f"--params-file {path}: YAML error at line 4, column 4: expected <block end>, but found "
        "'<block mapping start>' (while parsing a block mapping)"), out + err
