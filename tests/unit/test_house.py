"""The house rules a maintainer can lean on, checked on the code itself: the import graph has no
cycle (the layers themselves are import-linter's contracts in pyproject.toml, run by make lint)."""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable, Mapping

import grimp
import pytest

PACKAGES = ("chronoq", "functions")


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
