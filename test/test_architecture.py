"""The module map: wings with one-way doors as doc/ARCHITECTURE.md states them, read from every
import (those inside functions included); no circle of imports; the "uses" column of every
module's row equal to its imports; long modules say why; every exception and warning lives in
errors.py; the core never imports ROS."""

import ast
import os
import re

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
PACKAGE = os.path.join(ROOT, "hod_dynamics")
ARCHITECTURE = os.path.join(ROOT, "doc", "ARCHITECTURE.md")
LONG = 600  # lines: only a code generator may be longer, and it says why at its top ("Longer than ...")
ROS = ("rclpy", "launch", "launch_ros", "rcl_interfaces", "builtin_interfaces", "std_msgs",
       "std_srvs", "sensor_msgs", "trajectory_msgs", "diagnostic_msgs", "rosgraph_msgs",
       "ament_index_python", "control_msgs", "action_msgs")
TOP = "top level"  # the wing of the modules directly in hod_dynamics/


def modules():
    """{dotted name below hod_dynamics ("model.robot_model", "ros.process", "__init__"): path}."""
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


def package_imports():
    """{module: {package modules it imports (itself and the top-level face aside): first line}}."""
    known = modules()
    out = {}
    for name, path in known.items():
        uses = {}
        for line, target in imports(name, path, known):
            if target in known and target != name:
                uses.setdefault(target, line)
        out[name] = uses
    return out


def wing_of(module):
    """The wing of a module: its subpackage ("model", "ros", ...), or the top level."""
    head = module.split(".")[0]
    return head if head in _WINGS_WITH_FOLDERS else TOP


_WINGS_WITH_FOLDERS = {os.path.basename(os.path.dirname(p)) for n, p in modules().items()
                       if p.endswith("__init__.py") and n != "__init__"}


def _section(title):
    text = open(ARCHITECTURE, encoding="utf-8").read()
    return text.split(f"\n## {title}", 1)[1].split("\n## ", 1)[0]


def _table_rows(text):
    """The cells of every row of the markdown tables in ``text`` (header and rule left out)."""
    rows = []
    for line in text.splitlines():
        if line.startswith("|") and not re.match(r"\|\s*-", line):
            rows.append([c.strip() for c in line.strip().strip("|").split("|")])
    return [r for r in rows if r and r[0] not in ("wing", "module")]


def doors():
    """{wing: the wings it may import} from the table under "## Wings" of doc/ARCHITECTURE.md."""
    rules = {}
    for cells in _table_rows(_section("Wings")):
        wing = re.findall(r"`([\w.]+)/?`", cells[0])
        wing = wing[0].rstrip("/") if wing else cells[0]
        rules[wing] = set(w.rstrip("/") for w in re.findall(r"`([\w./]+)`", cells[2])) | (
            {TOP} if "top level" in cells[2] else set())
    return rules


def documented_uses():
    """{module: set of package modules in its "uses" cell} from the tables under "## Modules"."""
    found = {}
    for cells in _table_rows(_section("Modules")):
        names = re.findall(r"`([\w.]+)`", cells[0])
        if not names:
            continue
        module = names[0].removeprefix("hod_dynamics.").removesuffix(".py")
        assert module not in found, f"{module} has two rows under Modules"
        found[module] = set(re.findall(r"`([\w.]+)`", cells[-1]))
    return found


def circles(graph):
    """The strongly connected components of more than one module (Tarjan), each sorted."""
    index, low, stack, on, out, counter = {}, {}, [], set(), [], [0]

    def visit(v):
        index[v] = low[v] = counter[0]
        counter[0] += 1
        stack.append(v)
        on.add(v)
        for w in graph.get(v, ()):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                on.discard(w)
                comp.append(w)
                if w == v:
                    break
            if len(comp) > 1:
                out.append(sorted(comp))

    for v in sorted(graph):
        if v not in index:
            visit(v)
    return out


def test_every_module_has_a_row_in_the_module_map():
    documented, known = documented_uses(), modules()
    assert sorted(documented) == sorted(known), (
        "doc/ARCHITECTURE.md Modules and the package differ: "
        f"unlisted {sorted(set(known) - set(documented))}, gone {sorted(set(documented) - set(known))}")


def test_every_wing_has_its_doors_written_down():
    rules = doors()
    wings = {wing_of(m) for m in modules() if m != "__init__"}
    assert wings == set(rules), f"wings {sorted(wings)}, rules for {sorted(rules)}"
    for wing, allowed in rules.items():
        assert allowed <= set(rules), f"{wing} may import unknown wings {sorted(allowed - set(rules))}"


def test_no_import_runs_up_a_wing():
    """A module imports its own wing and the wings its row under "## Wings" names, nothing else
    (the package's own doors, ``__init__`` (the public surface) and ``__main__`` (``python -m``),
    import what they offer)."""
    rules = doors()
    upward = []
    for name, uses in sorted(package_imports().items()):
        if name in ("__init__", "__main__"):
            continue
        wing = wing_of(name)
        for target, line in sorted(uses.items()):
            other = TOP if target == "__init__" else wing_of(target)
            if other != wing and other not in rules[wing]:
                upward.append(f"hod_dynamics/{name.replace('.', '/')}.py:{line} imports {target} "
                              f"({other}, not a door of {wing})")
    assert not upward, "\n".join(upward)


def test_the_command_line_and_the_ros_layer_never_import_each_other_and_recordings_no_dynamics():
    rules = doors()
    assert "ros" not in rules["cli"] and "cli" not in rules["ros"]
    assert rules["recordings"] <= {TOP}, "recordings/ imports the top level only: no dynamics"
    for name, uses in package_imports().items():
        if wing_of(name) == "recordings":
            assert all(wing_of(t) in ("recordings", TOP) and t != "__init__" for t in uses), (name, uses)


def test_no_circle_of_imports():
    """No module reaches itself through imports, at the top of a module or inside a function
    (a package face counts as the modules it imports)."""
    graph = {name: set(uses) for name, uses in package_imports().items()}
    found = circles(graph)
    assert not found, "circles of imports: " + "; ".join(" -> ".join(c) for c in found)


def test_the_uses_column_is_what_each_module_imports():
    documented, actual = documented_uses(), package_imports()
    wrong = []
    for name, uses in sorted(actual.items()):
        real = set(uses) - {"__init__"}
        if documented.get(name, set()) != real:
            wrong.append(f"{name}: the map says {sorted(documented.get(name, set()))}, the code imports "
                         f"{sorted(real)}")
    assert not wrong, "\n".join(wrong)


def test_the_readers_see_lazy_imports_and_would_fail_on_an_upward_one_or_a_circle(tmp_path):
    """The reader of imports finds imports inside functions, relative and absolute ones; the
    circle finder finds a loop through three modules."""
    known = {"model.robot_model": "", "algorithms.dynamics": "", "ros.process": "", "errors": "",
             "model": ""}
    source = tmp_path / "robot_model.py"
    source.write_text("from ..errors import InputError\n\ndef f():\n    from ..algorithms.dynamics import x\n"
                      "    import hod_dynamics.ros.process\n    from .. import errors\n")
    assert imports("model.robot_model", str(source), known) == [
        (1, "errors"), (4, "algorithms.dynamics"), (5, "ros.process"), (6, "errors")]
    assert circles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]
    assert circles({"a": {"b"}, "b": set()}) == []


def test_the_core_never_imports_ros():
    known = modules()
    for name, path in known.items():
        if name.startswith("ros"):
            continue
        ros = sorted({t for _, t in imports(name, path, known) if t in ROS})
        assert not ros, f"hod_dynamics/{name}.py imports {ros}"


@pytest.mark.parametrize("name", sorted(modules()))
def test_only_a_code_generator_is_long_and_it_says_why_at_its_top(name):
    path = modules()[name]
    source = open(path, encoding="utf-8").read()
    count = source.count("\n")
    if count <= LONG:
        return
    doc = ast.get_docstring(ast.parse(source)) or ""
    assert name.endswith("_ir") and re.search(r"^Longer than .*", doc, re.M), (
        f"hod_dynamics/{name.replace('.', '/')}.py has {count} lines: split it (only the generators of "
        "LLVM IR may be longer, with a paragraph starting 'Longer than' at their top)")


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
