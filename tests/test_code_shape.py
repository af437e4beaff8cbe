"""The code's shape, checked: no import cycle between the package's modules (annotation-only and
function-level imports count too: a cycle is a cycle whenever it is paid), no function over 60 lines,
no class over 280 (docstrings and comments included: what a reader has to hold at once)."""

from __future__ import annotations

import ast
from pathlib import Path

PACKAGE = Path(__file__).resolve().parents[1] / "zettel_amem"
MAX_FUNCTION_LINES = 60
MAX_CLASS_LINES = 280
# Known exceptions, each with the change that removes it.
CYCLE_ALLOWED: set[str] = set()
TOO_LONG_ALLOWED: set[str] = set()


def _sources(package: Path = PACKAGE) -> dict[str, Path]:
    """Module name -> file, for every module of the package (vendor/ holds no Python)."""
    out = {}
    for path in sorted(package.rglob("*.py")):
        parts = list(path.relative_to(package.parent).with_suffix("").parts)
        if parts[-1] == "__init__":
            parts.pop()
        out[".".join(parts)] = path
    return out


def _imports(name: str, path: Path, modules: set[str]) -> set[str]:
    """The package's modules that `name` imports, anywhere in it."""
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    found = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            found.update(a.name for a in node.names if a.name in modules)
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".")
                base = base[: len(base) - (node.level - 1)]
                target = ".".join(base + (node.module.split(".") if node.module else []))
            else:
                target = node.module or ""
            for alias in node.names:  # `from . import formats`: the submodule itself
                sub = f"{target}.{alias.name}"
                found.add(sub if sub in modules else target)
    return {m for m in found if m in modules and m != name}


def _cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """Strongly connected components of more than one module (Tarjan)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    out: list[list[str]] = []

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        on_stack.add(v)
        for w in sorted(graph[v]):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            component = []
            while True:
                w = stack.pop()
                on_stack.discard(w)
                component.append(w)
                if w == v:
                    break
            if len(component) > 1:
                out.append(sorted(component))

    for v in sorted(graph):
        if v not in index:
            visit(v)
    return out


def _graph() -> dict[str, set[str]]:
    sources = _sources()
    return {name: _imports(name, path, set(sources)) for name, path in sources.items()}


def cycle_path(graph: dict[str, set[str]], component: list[str]) -> list[str]:
    """One import path around a cycle, start to start (`a -> b -> c -> a`): what to cut, not just who."""
    start, inside = component[0], set(component)
    came_from: dict[str, str] = {}
    frontier = [start]
    while frontier:  # breadth first inside the component: the shortest way back to the start
        nxt = []
        for v in frontier:
            for w in sorted(graph[v] & inside):
                if w == start:
                    path = [v]
                    while path[-1] != start:
                        path.append(came_from[path[-1]])
                    return [start, *reversed(path[:-1]), start] if v != start else [start, start]
                if w not in came_from:
                    came_from[w] = v
                    nxt.append(w)
        frontier = nxt
    return component


def test_no_import_cycle():
    graph = _graph()
    for allowed in CYCLE_ALLOWED:
        graph[allowed] = set()  # its edges are the known exception; every other cycle still fails
    paths = [" -> ".join(cycle_path(graph, c)) for c in _cycles(graph)]
    assert paths == [], "import cycles:\n" + "\n".join(paths)


def test_the_cycle_check_finds_a_cycle_and_prints_its_path():
    graph = {"a": {"b"}, "b": {"c", "d"}, "c": {"a"}, "d": {"a"}, "e": {"a"}}
    assert _cycles(graph) == [["a", "b", "c", "d"]]
    assert cycle_path(graph, ["a", "b", "c", "d"]) == ["a", "b", "c", "a"]
    assert cycle_path({"x": {"y"}, "y": {"x"}}, ["x", "y"]) == ["x", "y", "x"]


def test_the_cycle_check_finds_the_annotation_cycles_that_were_removed():
    # #29's last two: answer.py named Memory, shared_store.py named Store (each under TYPE_CHECKING only)
    removed = (("zettel_amem.answering.answer", "zettel_amem.memory"),
               ("zettel_amem.storage.shared_store", "zettel_amem.storage.store"))
    for module, back in removed:
        graph = _graph()
        graph[module].add(back)
        assert any({module, back} <= set(c) for c in _cycles(graph)), (module, back)


def too_long(package: Path = PACKAGE) -> list[str]:
    """Every function over MAX_FUNCTION_LINES and class over MAX_CLASS_LINES (tests/test_recipes.py runs
    this on a copy of the package after each CONTRIBUTING recipe)."""
    problems = []
    for name, path in _sources(package).items():
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            limit = MAX_CLASS_LINES if isinstance(node, ast.ClassDef) else MAX_FUNCTION_LINES if isinstance(
                node, ast.FunctionDef | ast.AsyncFunctionDef) else None
            length = (node.end_lineno or node.lineno) - node.lineno + 1 if limit else 0
            if limit and length > limit and f"{name}:{node.name}" not in TOO_LONG_ALLOWED:
                problems.append(f"{path.relative_to(package.parent)}:{node.lineno} {node.name} is {length} lines "
                                f"(at most {limit})")
    return problems


def test_no_function_or_class_is_too_long():
    assert too_long() == []
