"""The modules of drover.jobspec import each other without a cycle, counting every import at
any level (in a function, under TYPE_CHECKING), and none imports another's private name."""

from __future__ import annotations

import ast
from pathlib import Path

import drover.jobspec

PACKAGE = "drover.jobspec"
ROOT = Path(drover.jobspec.__file__).parent


def _module_name(path: Path) -> str:
    parts = path.relative_to(ROOT).with_suffix("").parts
    return ".".join((PACKAGE, *parts)).removesuffix(".__init__")


def _imports(tree: ast.AST, modules: set[str]) -> list[tuple[str, str]]:
    """(module imported, name taken from it or "") for each drover.jobspec import in `tree`.
    ``from drover.jobspec import x`` imports the module x when there is one, else the
    package's name x."""
    out: list[tuple[str, str]] = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            out += [(a.name, "") for a in node.names if a.name.startswith(PACKAGE)]
        elif isinstance(node, ast.ImportFrom) and node.module and node.module.startswith(PACKAGE):
            for alias in node.names:
                sub = f"{node.module}.{alias.name}"
                out.append((sub, "") if sub in modules else (node.module, alias.name))
    return out


def _graph() -> tuple[dict[str, set[str]], list[str]]:
    """Each module's drover.jobspec imports, and every private name imported across modules."""
    sources = {_module_name(p): p for p in sorted(ROOT.rglob("*.py"))}
    graph: dict[str, set[str]] = {}
    private: list[str] = []
    for name, path in sources.items():
        imports = _imports(ast.parse(path.read_text(), str(path)), set(sources))
        graph[name] = {module for module, _ in imports}
        private += [f"{name} imports {module}.{n}" for module, n in imports if n.startswith("_")]
    return graph, private


def _cycle(graph: dict[str, set[str]]) -> list[str]:
    """A cycle of `graph` as the path around it, or [] when there is none."""
    done: set[str] = set()
    path: list[str] = []

    def visit(node: str) -> list[str]:
        if node in path:
            return [*path[path.index(node) :], node]
        if node in done:
            return []
        path.append(node)
        for target in sorted(graph.get(node, ())):
            if found := visit(target):
                return found
        path.pop()
        done.add(node)
        return []

    for node in sorted(graph):
        if found := visit(node):
            return found
    return []


def test_the_cycle_finder_finds_a_cycle() -> None:
    assert _cycle({"a": {"b"}, "b": {"c"}, "c": {"a"}}) == ["a", "b", "c", "a"]
    assert _cycle({"a": {"b", "c"}, "b": {"c"}, "c": set()}) == []


def test_the_jobspec_modules_import_each_other_without_a_cycle() -> None:
    graph, _ = _graph()
    assert f"{PACKAGE}.evaluate" in graph and graph[f"{PACKAGE}.job"], graph
    assert _cycle(graph) == []


def test_no_private_name_crosses_modules() -> None:
    _, private = _graph()
    assert private == []
