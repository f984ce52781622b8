"""The module map: imports run one way, in the layer order doc/ARCHITECTURE.md states; long modules
say why; every exception and warning lives in errors.py; the core never imports ROS."""

import ast
import os
import re

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
PACKAGE = os.path.join(ROOT, "hod_dynamics")
LONG = 500  # lines: a module longer than this says why at its top ("Longer than ...")
ROS = ("rclpy", "launch", "launch_ros", "rcl_interfaces", "builtin_interfaces", "std_msgs",
       "std_srvs", "sensor_msgs", "trajectory_msgs", "diagnostic_msgs", "rosgraph_msgs",
       "ament_index_python")


def modules():
    """{dotted name below hod_dynamics ("model", "ros.process", "__init__"): path}."""
    found = {}
    for folder, _, files in os.walk(PACKAGE):
        for name in files:
            if name.endswith(".py"):
                path = os.path.join(folder, name)
                dotted = os.path.relpath(path, PACKAGE)[:-3].replace(os.sep, ".")
                found["__init__" if dotted == "__init__" else dotted.removesuffix(".__init__")] = path
    return found


def imports(name, path, known):
    """Every import of the module (at its top or inside a function) as (line, module name): a
    module of the package in the form of ``modules()``, or the top-level name of another package."""
    package = name.split(".")[:-1] if not path.endswith("__init__.py") else name.split(".")
    if name == "__init__":
        package = []
    found = []
    for node in ast.walk(ast.parse(open(path, encoding="utf-8").read(), path)):
        if isinstance(node, ast.Import):
            targets = [a.name for a in node.names]
        elif isinstance(node, ast.ImportFrom) and node.level:  # relative: within the package
            base = package[:len(package) - node.level + 1]
            stem = base + (node.module.split(".") if node.module else [])
            targets = []
            for alias in node.names:
                sub = ".".join(stem + [alias.name])
                targets.append(sub if sub in known else ".".join(stem) or "__init__")
            found += [(node.lineno, t) for t in targets]
            continue
        elif isinstance(node, ast.ImportFrom):
            targets = [node.module]
        else:
            continue
        for target in targets:
            if target == "hod_dynamics" or target.startswith("hod_dynamics."):
                inner = target.removeprefix("hod_dynamics").removeprefix(".") or "__init__"
                found.append((node.lineno, inner if inner in known else inner.rsplit(".", 1)[0]))
            else:
                found.append((node.lineno, target.split(".")[0]))
    return found


def layers():
    """{module: layer index} from the list under "## Layers" in doc/ARCHITECTURE.md, bottom
    first: one numbered line per layer naming its modules in backquotes."""
    text = open(os.path.join(ROOT, "doc", "ARCHITECTURE.md"), encoding="utf-8").read()
    section = text.split("\n## Layers", 1)[1].split("\n## ", 1)[0]
    order = {}
    for line in section.splitlines():
        match = re.match(r"\s*(\d+)\. ", line)
        if match:
            for module in re.findall(r"`([\w.]+)`", line.split(":", 1)[1] if ":" in line else line):
                assert module not in order, f"{module} is listed twice under Layers"
                order[module.removesuffix(".py")] = int(match.group(1))
    return order


def test_every_module_has_a_place_in_the_layer_order():
    order = layers()
    assert sorted(order) == sorted(modules()), (
        "doc/ARCHITECTURE.md Layers and the package differ: "
        f"unlisted {sorted(set(modules()) - set(order))}, gone {sorted(set(order) - set(modules()))}")


def test_no_import_runs_up_the_layers():
    order, known = layers(), modules()
    upward = []
    for name, path in sorted(known.items()):
        for line, target in imports(name, path, known):
            if target in known and target != name and order[target] > order[name]:
                upward.append(f"{os.path.relpath(path, ROOT)}:{line} imports {target} "
                              f"(layer {order[target]} above its own {order[name]})")
    assert not upward, "\n".join(upward)


def test_the_layer_test_sees_lazy_imports_and_would_fail_on_an_upward_one(tmp_path):
    """The reader of imports finds imports inside functions, relative and absolute ones."""
    known = {"model": "", "dynamics": "", "ros.process": "", "errors": ""}
    source = tmp_path / "model.py"
    source.write_text("from .errors import InputError\n\ndef f():\n    from .dynamics import x\n"
                      "    import hod_dynamics.ros.process\n    from . import errors\n")
    assert imports("model", str(source), known) == [(1, "errors"), (4, "dynamics"),
                                                    (5, "ros.process"), (6, "errors")]


def test_the_core_never_imports_ros():
    known = modules()
    for name, path in known.items():
        if name.startswith("ros"):
            continue
        ros = sorted({t for _, t in imports(name, path, known) if t in ROS})
        assert not ros, f"hod_dynamics/{name}.py imports {ros}"


@pytest.mark.parametrize("name", sorted(modules()))
def test_a_long_module_says_why_at_its_top(name):
    path = modules()[name]
    source = open(path, encoding="utf-8").read()
    count = source.count("\n")
    if count <= LONG:
        return
    doc = ast.get_docstring(ast.parse(source)) or ""
    assert re.search(r"^Longer than .*", doc, re.M), (
        f"hod_dynamics/{name.replace('.', '/')}.py has {count} lines: say why at its top "
        "(a paragraph starting 'Longer than') or split it")


def test_every_exception_and_warning_the_package_defines_is_in_errors_py():
    known = modules()
    stray = []
    for name, path in known.items():
        for node in ast.walk(ast.parse(open(path, encoding="utf-8").read())):
            if isinstance(node, ast.ClassDef) and any(
                    re.search(r"(Error|Exception|Warning)$", ast.unparse(b)) for b in node.bases):
                if name != "errors":
                    stray.append(f"{name}.{node.name}")
    assert not stray, stray
