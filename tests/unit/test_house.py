"""The house rules a maintainer can lean on, checked on the code itself: the import graph has no
cycle (the layers themselves are import-linter's contracts in pyproject.toml, run by make lint);
no module is long without saying why; no test reaches into moto's internals."""

from __future__ import annotations

import ast
from collections import defaultdict
from collections.abc import Iterable, Mapping
from pathlib import Path

import grimp
import pytest

ROOT = Path(__file__).resolve().parents[2]
PACKAGES = ("chronoq", "functions")
#: Where the code a maintainer changes lives (tests apart).
SOURCES = ("layers/core/chronoq", "functions", "cdk", "bench")
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


def test_given_the_code_when_measured_then_every_module_over_500_lines_says_why() -> None:
    found = modules(*SOURCES)
    lines = {path: path.read_text() for path in found}
    silent = [
        f"{path.relative_to(ROOT)}: {len(text.splitlines())} lines"
        for path, text in lines.items()
        if len(text.splitlines()) > MOST_LINES and not says_why_long(text)
    ]

    assert len(found) > 200  # (the walk finds the code)
    assert silent == []


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
