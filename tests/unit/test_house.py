"""The house rules a maintainer can lean on, checked on the code itself: the import graph has no
cycle (the layers themselves are import-linter's contracts in pyproject.toml, run by make lint);
no module is long without saying why; no test reaches into moto's internals; the store's split
along its ports holds (the fakes mirror the DynamoDB adapter's modules, each use case is given
the ports it uses and no more)."""

from __future__ import annotations

import ast
import importlib
import inspect
import pkgutil
from collections import defaultdict
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

import grimp
import pytest
from chronoq import heartbeat, usecases
from chronoq.aws import store as aws_store
from chronoq.fakes import store as fake_store
from chronoq.usecases import ports

ROOT = Path(__file__).resolve().parents[2]
PACKAGES = ("chronoq", "functions")
#: Where the code a maintainer changes lives (tests apart).
SOURCES = ("layers/core/chronoq", "functions", "cdk", "bench")
#: Where the tests live: held to the same length rule as the code.
TESTS = "tests"
#: Longer than this, a module says why in its docstring, on a line of this form.
MOST_LINES = 500
WHY_LONG = "Why this module is long: "


@pytest.fixture(scope="module")
def graph() -> grimp.ImportGraph:
    return grimp.build_graph(*PACKAGES, cache_dir=None)


def cycles(edges: Mapping[str, Iterable[str]]) -> list[list[str]]:
    """The strongly connected components of more than one node (Tarjan's, without recursion):
    each is a set of nodes that import one another round a cycle."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []
    nodes = sorted(set(edges) | {n for targets in edges.values() for n in targets})
    for root in nodes:
        if root in index:
            continue
        work: list[tuple[str, list[str]]] = [(root, sorted(edges.get(root, ())))]
        index[root] = low[root] = len(index)
        stack.append(root)
        on_stack.add(root)
        while work:
            node, todo = work[-1]
            if todo:
                nxt = todo.pop()
                if nxt not in index:
                    index[nxt] = low[nxt] = len(index)
                    stack.append(nxt)
                    on_stack.add(nxt)
                    work.append((nxt, sorted(edges.get(nxt, ()))))
                elif nxt in on_stack:
                    low[node] = min(low[node], index[nxt])
                continue
            work.pop()
            if work:
                parent = work[-1][0]
                low[parent] = min(low[parent], low[node])
            if low[node] == index[node]:
                component: list[str] = []
                while True:
                    member = stack.pop()
                    on_stack.discard(member)
                    component.append(member)
                    if member == node:
                        break
                if len(component) > 1:
                    found.append(sorted(component))
    return found


def module_edges(graph: grimp.ImportGraph) -> dict[str, set[str]]:
    return {m: set(graph.find_modules_directly_imported_by(m)) for m in graph.modules}


def subpackage_edges(graph: grimp.ImportGraph, depth: int) -> dict[str, set[str]]:
    """The imports between the modules' ancestors ``depth`` names deep (``chronoq.local``,
    ``chronoq.resources``, ...), inside one package or between the two."""
    edges: dict[str, set[str]] = defaultdict(set)
    for importer, imported in module_edges(graph).items():
        for target in imported:
            a, b = ".".join(importer.split(".")[:depth]), ".".join(target.split(".")[:depth])
            if a != b:
                edges[a].add(b)
    return edges


def test_given_the_cycle_finder_when_modules_import_round_a_loop_then_it_names_them() -> None:
    edges = {"a": {"b"}, "b": {"c"}, "c": {"a", "d"}, "d": set(), "e": {"e", "d"}}

    assert cycles(edges) == [["a", "b", "c"]]
    assert cycles({"a": {"b"}, "b": set()}) == []


def test_given_chronoq_when_its_imports_are_read_then_no_module_imports_itself_round_a_cycle(
    graph: grimp.ImportGraph,
) -> None:
    assert cycles(module_edges(graph)) == []


@pytest.mark.parametrize("depth", [2, 3])
def test_given_chronoq_when_its_imports_are_read_by_subpackage_then_none_imports_round_a_cycle(
    graph: grimp.ImportGraph, depth: int
) -> None:
    """E.g. chronoq.resources importing chronoq.execution while chronoq.execution imports
    chronoq.resources: no module cycle, but the two can no longer be layered."""
    assert cycles(subpackage_edges(graph, depth)) == []


def modules(*folders: str) -> list[Path]:
    return sorted(
        path
        for folder in folders
        for path in (ROOT / folder).rglob("*.py")
        if not {"cdk.out", "__pycache__", "node_modules"} & set(path.parts)
    )


def says_why_long(source: str) -> bool:
    """Does the module's docstring hold a line ``Why this module is long: <the reason>``?"""
    docstring = ast.get_docstring(ast.parse(source)) or ""
    return any(
        line.startswith(WHY_LONG) and line.removeprefix(WHY_LONG).strip()
        for line in docstring.splitlines()
    )


def test_given_a_docstring_when_read_then_only_a_line_giving_a_reason_says_why_it_is_long() -> None:
    assert says_why_long('"""Big.\n\nWhy this module is long: one grammar."""\n')
    assert not says_why_long('"""Big.\n\nWhy this module is long:"""\n')
    assert not says_why_long('"""Big, and why this module is long: no."""\n')
    assert not says_why_long("x = 1\n# Why this module is long: not in a docstring\n")


def silent_long_modules(found: Iterable[Path]) -> list[str]:
    """The modules over MOST_LINES lines whose docstring does not say why."""
    texts = {path: path.read_text() for path in found}
    return [
        f"{path.relative_to(ROOT)}: {len(text.splitlines())} lines"
        for path, text in texts.items()
        if len(text.splitlines()) > MOST_LINES and not says_why_long(text)
    ]


def test_given_the_code_when_measured_then_every_module_over_500_lines_says_why() -> None:
    found = modules(*SOURCES)

    assert len(found) > 200  # (the walk finds the code)
    assert silent_long_modules(found) == []


def test_given_the_tests_when_measured_then_every_module_over_500_lines_says_why() -> None:
    found = modules(TESTS)

    assert len(found) > 200  # (the walk finds the tests)
    assert Path(__file__).resolve() in found
    assert silent_long_modules(found) == []


def moto_imports(source: str) -> list[str]:
    """The imports of moto in ``source`` but ``from moto import mock_aws``: whatever else of
    moto a test needs, chronoq.local.emulation owns (and moto_version lists)."""
    found = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Import):
            found += [f"import {a.name}" for a in node.names if a.name.split(".")[0] == "moto"]
        elif isinstance(node, ast.ImportFrom) and (node.module or "").split(".")[0] == "moto":
            names = [a.name for a in node.names]
            if node.module != "moto" or names != ["mock_aws"]:
                found.append(f"from {node.module} import {', '.join(names)}")
    return found


def test_given_imports_of_moto_when_read_then_only_mock_aws_is_allowed() -> None:
    assert moto_imports("from moto import mock_aws\n") == []
    assert moto_imports("import motor\nfrom motorway import x\n") == []
    assert sorted(
        moto_imports(
            "import moto\n"
            "def f():\n"
            "    from moto.core.models import botocore_stubber\n"
            "from moto import mock_aws, settings\n"
        )
    ) == [
        "from moto import mock_aws, settings",
        "from moto.core.models import botocore_stubber",
        "import moto",
    ]


def test_given_the_tests_when_read_then_none_reaches_into_motos_internals() -> None:
    found = {
        str(path.relative_to(ROOT)): imports
        for path in modules("tests")
        if path != Path(__file__).resolve() and (imports := moto_imports(path.read_text()))
    }

    assert found == {}


#: The store's ports (usecases.ports) by the module of chronoq.aws.store and chronoq.fakes.store
#: that implements each.
PORT_MODULES = {
    "after": ports.AfterStore,
    "backfills": ports.BackfillStore,
    "calendars": ports.CalendarStore,
    "erasure": ports.ErasureStore,
    "expect": ports.ExpectStore,
    "flows": ports.FlowStore,
    "idempotency": ports.KeyStore,
    "jobs": ports.JobStore,
    "runs": ports.RunStore,
    "schedule": ports.ScheduleStore,
    "secrets": ports.SecretStore,
    "usage": ports.UsageStore,
}
STORE_PORTS = frozenset(PORT_MODULES.values())


def own_methods(port: type) -> set[str]:
    return {n for n, v in vars(port).items() if inspect.isfunction(v) and not n.startswith("_")}


def port_modules(package: Any) -> dict[str, Any]:
    return {
        m.name: importlib.import_module(f"{package.__name__}.{m.name}")
        for m in pkgutil.iter_modules(package.__path__)
        if not m.name.startswith("_")
    }


def test_given_the_store_when_split_then_its_ports_are_all_of_the_store_and_share_no_method() -> (
    None
):
    composed = {c for c in ports.Store.__mro__ if c is not ports.Store and own_methods(c)}
    names = [n for port in STORE_PORTS for n in own_methods(port)]

    assert composed == STORE_PORTS
    assert len(names) == len(set(names))


@pytest.mark.parametrize("package", [aws_store, fake_store], ids=["aws", "fakes"])
def test_given_a_store_adapter_when_read_then_each_port_has_its_module_implementing_it(
    package: Any,
) -> None:
    """One module per port, the same names in chronoq.aws.store and chronoq.fakes.store, each
    with one class that defines every method of its port, with the port's parameters."""
    modules = port_modules(package)
    assert set(modules) == set(PORT_MODULES)
    for name, module in modules.items():
        port = PORT_MODULES[name]
        [adapter] = [
            c
            for c in vars(module).values()
            if inspect.isclass(c)
            and c.__module__ == module.__name__
            and not issubclass(c, Exception)
        ]
        for method in own_methods(port):
            assert method in vars(adapter), f"{adapter.__qualname__} lacks {port.__name__}.{method}"
            wanted = list(inspect.signature(getattr(port, method)).parameters)
            given = list(inspect.signature(getattr(adapter, method)).parameters)
            assert given == wanted, f"{adapter.__qualname__}.{method}"


def store_ports(hint: Any) -> frozenset[type]:
    """The store's ports a type annotation asks for (a port, or a protocol made of some)."""
    return frozenset(c for c in getattr(hint, "__mro__", ()) if c in STORE_PORTS)


METHOD_PORT = {method: port for port in STORE_PORTS for method in own_methods(port)}


def _is(node: ast.expr, name: str, on_self: bool) -> bool:
    if on_self:
        return (
            isinstance(node, ast.Attribute)
            and node.attr == name
            and isinstance(node.value, ast.Name)
            and node.value.id == "self"
        )
    return isinstance(node, ast.Name) and node.id == name


def hints_of(thing: Any) -> dict[str, Any]:
    """The annotations of a function or a class's fields, each evaluated in its module (None
    for one naming what the module imports for type checking only: never one of the ports)."""
    namespace = vars(inspect.getmodule(thing))
    annotations: dict[str, Any] = {}
    for holder in reversed(getattr(thing, "__mro__", (thing,))):
        annotations.update(getattr(holder, "__annotations__", {}))
    hints = {}
    for name, text in annotations.items():
        try:
            hints[name] = eval(text, namespace) if isinstance(text, str) else text  # noqa: S307
        except (NameError, TypeError, SyntaxError):
            hints[name] = None
    return hints


def _parameters(callee: Any) -> tuple[list[str], dict[str, Any]]:
    hints = hints_of(callee)
    names = list(inspect.signature(callee).parameters)
    if inspect.isfunction(callee) and names[:1] == ["self"]:
        names = names[1:]
    return names, hints


def ports_used(
    scope: ast.AST, name: str, on_self: bool, namespace: dict[str, Any], owner: type | None
) -> frozenset[type]:
    """The ports whose methods ``scope`` calls on ``name`` (``self.name``), and those of each
    parameter it passes it to (what that callee asks for: held to the same rule)."""
    used: set[type] = set()
    for node in ast.walk(scope):
        if (
            isinstance(node, ast.Attribute)
            and _is(node.value, name, on_self)
            and node.attr in METHOD_PORT
        ):
            used.add(METHOD_PORT[node.attr])
        if not isinstance(node, ast.Call):
            continue
        positions = [i for i, a in enumerate(node.args) if _is(a, name, on_self)]
        keywords = [k.arg for k in node.keywords if k.arg and _is(k.value, name, on_self)]
        if not positions and not keywords:
            continue
        text = ast.unparse(node.func)
        if text.startswith("self.") and owner is not None:
            callee = getattr(owner, text.removeprefix("self."))
        else:
            callee = eval(text, namespace)  # noqa: S307 - a dotted name of chronoq's own code
        names, hints = _parameters(callee)
        for parameter in [names[i] for i in positions] + keywords:
            used |= store_ports(hints.get(parameter))
    return frozenset(used)


def given_stores(module: Any) -> list[tuple[str, frozenset[type], frozenset[type]]]:
    """(where, the ports asked for, the ports used) of every field and parameter of the
    module's classes and functions typed with the store's ports."""
    tree = ast.parse(inspect.getsource(module))
    namespace = vars(module)
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.ClassDef) and node.name in namespace:
            cls = namespace[node.name]
            if getattr(cls, "_is_protocol", False):
                continue
            for field, hint in hints_of(cls).items():
                if asked := store_ports(hint):
                    used = ports_used(node, field, True, namespace, cls)
                    found.append((f"{module.__name__}.{node.name}.{field}", asked, used))
        if isinstance(node, ast.FunctionDef):
            owner = next(
                (
                    namespace.get(c.name)
                    for c in ast.walk(tree)
                    if isinstance(c, ast.ClassDef) and node in c.body
                ),
                None,
            )
            function = getattr(owner, node.name, None) if owner else namespace.get(node.name)
            if function is None or not inspect.isfunction(function):
                continue
            hints = hints_of(function)
            for parameter in list(inspect.signature(function).parameters)[1 if owner else 0 :]:
                if asked := store_ports(hints.get(parameter)):
                    used = ports_used(node, parameter, False, namespace, owner)
                    where = f"{module.__name__}.{node.name}({parameter})"
                    found.append((where, asked, used))
    return found


def use_cases() -> list[Any]:
    return [
        importlib.import_module(f"chronoq.usecases.{m.name}")
        for m in pkgutil.iter_modules(usecases.__path__)
        if m.name != "ports"
    ] + [heartbeat]


def test_given_the_use_cases_when_read_then_each_is_given_only_the_ports_of_the_store_it_uses() -> (
    None
):
    """A use case (or a function of one) typed with more of the store than it calls, itself or
    through what it passes its store to, is given more than it uses."""
    found = [given for module in use_cases() for given in given_stores(module)]
    wider = {
        where: sorted(p.__name__ for p in asked - used)
        for where, asked, used in found
        if asked - used
    }

    assert len(found) > 20  # (the reading finds the use cases' stores)
    assert wider == {}
