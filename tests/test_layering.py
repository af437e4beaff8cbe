"""Module boundaries, enforced: each layer (a subpackage of zettel_amem, named for what it does) imports
only the layers below it (ALLOWED, bottom up):

core -> storage, backends, retrieval -> runtime, amem -> answering -> memory (the front door) -> views,
ingest, tiers -> mcp, cli.

Also enforced: only storage builds a filter string; no module reaches another module's private
members; only the CLI prints. Storage never knows about the LLM; the LLM never knows about storage.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parents[1] / "zettel_amem"

# Each layer (a subpackage, or one of the few modules at the top) and the layers it may import, bottom up.
# Within a layer modules import each other freely (tests/test_code_shape.py forbids cycles).
ALLOWED = {
    "core": set(),  # types, errors, settings, text and dates helpers, prompts, passages: pure
    "storage": {"core"},  # the only layer that builds a filter; never knows about the LLM
    "backends": {"core"},  # embedder and LLM backends; never know about storage
    "runtime": {"core", "storage"},  # the background worker and its lease
    "parts": set(),  # a notebook's parts, loaded on first use
    "retrieval": {"core"},  # ranking and search over what storage returns (pure: the embedder is passed in)
    "amem": {"core", "backends", "retrieval"},  # construct, link, evolve, typed updates: the A-MEM pipeline
    "answering": {"core", "backends", "retrieval", "amem"},  # answers from retrieved notes
    "memory": {"core", "storage", "backends", "runtime", "parts", "retrieval", "amem", "answering"},  # front door
    "views": {"core", "storage", "memory"},  # list, day and tag views over a notebook
    "ingest": {"core", "storage", "memory"},  # parsers and importers, the vault
    "tiers": {"core", "storage", "backends", "runtime", "retrieval", "amem", "memory"},  # sessions, episodes, graph
    "mcp": {"core", "backends", "retrieval", "memory", "views", "tiers"},  # the MCP server and its tools
    "client": {"runtime", "cli"},  # `zk`: the standard library (runtime/resident.py) until it runs a command here
    "cli": {"core", "storage", "backends", "runtime", "retrieval", "memory", "views", "ingest", "tiers", "mcp"},
}
# The only layer that may build a filter string.
STORAGE = "storage"
# Text that only a LanceDB filter contains.
FILTER_MARKS = (" LIKE ", " IS NULL", " IS NOT NULL", "array_length(", "array_has", " IN (", "notebook = ")


def _type_checking_only(tree: ast.AST) -> set[int]:
    """ids of import nodes inside `if TYPE_CHECKING:` (annotations only, never run)."""
    out = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.If) and getattr(node.test, "id", "") == "TYPE_CHECKING":
            out.update(id(n) for n in ast.walk(node))
    return out


def internal_imports(path: Path, source: str | None = None) -> set[str]:
    """Top-level layers (first component under zettel_amem) that a module imports."""
    package = ["zettel_amem", *path.relative_to(PACKAGE).parts[:-1]]
    found = set()
    tree = ast.parse(path.read_text(encoding="utf-8") if source is None else source)
    annotations_only = _type_checking_only(tree)
    for node in ast.walk(tree):
        if id(node) in annotations_only:
            continue
        if isinstance(node, ast.ImportFrom) and node.level > 0:
            base = package[: len(package) - (node.level - 1)]
            targets = [base + node.module.split(".")] if node.module else [base + [a.name] for a in node.names]
            found.update(t[1] for t in targets if len(t) > 1)
        elif isinstance(node, ast.Import):
            found.update(a.name.split(".")[1] for a in node.names if a.name.startswith("zettel_amem."))
    return found


def layer_of(path: Path) -> str:
    parts = path.relative_to(PACKAGE).parts
    return parts[0] if len(parts) > 1 else path.stem


def layer_problem(path: Path, source: str | None = None) -> str | None:
    layer = layer_of(path)
    if layer in ("__init__", "__main__"):
        return None
    if layer not in ALLOWED:
        return f"new layer {path.relative_to(PACKAGE)}: put the module in a layer's folder, or add a row to ALLOWED"
    extra = internal_imports(path, source) - ALLOWED[layer] - {layer}
    return f"{path.relative_to(PACKAGE)} imports {sorted(extra)}" if extra else None


def test_every_module_respects_its_layer():
    problems = [p for p in map(layer_problem, PACKAGE.rglob("*.py")) if p]
    assert not problems, "\n".join(problems)


def test_at_most_a_few_modules_beside_the_layer_folders():
    top = sorted(p.stem for p in PACKAGE.glob("*.py") if p.stem not in ("__init__", "__main__"))
    assert len(top) <= 4, f"{top}: a module at the top is a layer of its own; put it in a layer's folder"


@pytest.mark.parametrize("layer", sorted(ALLOWED))
def test_each_rule_fails_when_a_forbidden_import_is_added(layer):
    """Each row is live: a module of the layer that imports any layer outside its row is reported
    (relative and absolute imports alike)."""
    path = PACKAGE / layer / "dummy.py" if (PACKAGE / layer).is_dir() else PACKAGE / f"{layer}.py"
    dots = ".." if path.parent != PACKAGE else "."
    forbidden = sorted(set(ALLOWED) - ALLOWED[layer] - {layer})
    assert forbidden or layer == "cli", layer
    for other in forbidden:
        for source in (f"from {dots}{other} import something\n", f"import zettel_amem.{other}.thing\n"):
            problem = layer_problem(path, source)
            assert problem and other in problem, (layer, source)
    allowed = sorted(ALLOWED[layer])[:1]
    for other in allowed:  # and an allowed import passes
        assert layer_problem(path, f"from {dots}{other} import something\n") is None


def test_only_the_cli_and_render_print():
    for path in PACKAGE.rglob("*.py"):
        if layer_of(path) == "cli":
            continue
        tree = ast.parse(path.read_text(encoding="utf-8"))
        calls = [n for n in ast.walk(tree) if isinstance(n, ast.Call) and getattr(n.func, "id", None) == "print"]
        assert not calls, f"{path.name} prints; return data and let the CLI render it"


def _modules():
    for root in (PACKAGE, PACKAGE.parent / "bench"):
        for path in sorted(root.rglob("*.py")):
            if "vendor" not in path.parts:
                yield path


def test_only_storage_builds_filters():
    """Queries are methods that take arguments (`store.notes(notebook, since=...)`); a filter string
    written above storage is a query that storage cannot change, index or check."""
    problems = []
    for path in _modules():
        if PACKAGE in path.parents and layer_of(path) == STORAGE:
            continue
        tree = ast.parse(path.read_text(encoding="utf-8"))
        for node in ast.walk(tree):
            if isinstance(node, ast.ImportFrom) and any(a.name == "sql_str" for a in node.names):
                problems.append(f"{path.name}:{node.lineno} imports sql_str")
            if isinstance(node, ast.Constant) and isinstance(node.value, str) \
                    and any(mark in node.value for mark in FILTER_MARKS):
                problems.append(f"{path.name}:{node.lineno} writes a filter: {node.value[:50]!r}")
    assert not problems, "\n".join(problems)


def _private_names_defined(tree: ast.AST) -> set[str]:
    """Private names a module defines itself: functions, classes, attributes set on self/cls, assignments."""
    names = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
            names.add(node.name)
        elif isinstance(node, ast.Attribute) and isinstance(node.ctx, ast.Store):
            names.add(node.attr)
        elif isinstance(node, ast.Name) and isinstance(node.ctx, ast.Store):
            names.add(node.id)
    return {n for n in names if n.startswith("_") and not n.startswith("__")}


def test_no_module_reaches_another_modules_private_members():
    """`x._name` is fine on self/cls and on objects of the module's own classes; reaching into another
    module's internals (`memory._scope`, `store._query`) couples the two where no test can see it."""
    allowed = {"_exit"}  # os._exit: documented, the only way out of a thread that holds the GIL in C
    problems = []
    for path in _modules():
        tree = ast.parse(path.read_text(encoding="utf-8"))
        own = _private_names_defined(tree) | allowed
        for node in ast.walk(tree):
            if isinstance(node, ast.Attribute) and node.attr.startswith("_") and not node.attr.startswith("__"):
                if isinstance(node.value, ast.Name) and node.value.id in ("self", "cls"):
                    continue
                if node.attr not in own:
                    problems.append(f"{path.relative_to(PACKAGE.parent)}:{node.lineno} reaches {ast.unparse(node)}")
            if isinstance(node, ast.ImportFrom) and node.module and "zettel_amem" in (node.module or "") \
                    or isinstance(node, ast.ImportFrom) and node.level > 0:
                problems += [f"{path.relative_to(PACKAGE.parent)}:{node.lineno} imports private {a.name}"
                             for a in node.names if a.name.startswith("_") and not a.name.startswith("__")]
    assert not problems, "\n".join(problems)



def test_the_cli_does_not_decide_by_where_the_store_lives():
    """Whether the tables are local or on an object store changes what the library does (what it reads
    back, which reads it saves), never what the CLI asks for: a `location.remote` test in the CLI is a
    library decision made where no library test sees it."""
    for path in [*(PACKAGE / "cli").rglob("*.py"), *(PACKAGE / "mcp").rglob("*.py")]:
        name = path.relative_to(PACKAGE)
        tree = ast.parse(path.read_text(encoding="utf-8"))
        found = [n.lineno for n in ast.walk(tree) if isinstance(n, ast.Attribute) and n.attr == "remote"
                 and isinstance(n.value, ast.Attribute) and n.value.attr == "location"]
        assert not found, f"{name} tests location.remote at lines {found}; move the decision into the library"
