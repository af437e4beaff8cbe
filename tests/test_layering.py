"""Module boundaries, enforced: each layer imports only the layers below it.

cli/mcp_server -> tiers (sessions, promotion, context, graph_queries) -> memory (pipeline, search,
answer, changes) -> the LLM steps (construct, link, evolve, episodes, extraction) and retrieve -> storage
(database, store, tier_store), embed, llm, prompts -> models/errors/text/config.

Also enforced: only storage builds a filter string; no module reaches another module's private
members; only the CLI prints. Storage never knows about the LLM; the LLM never knows about storage.
"""

from __future__ import annotations

import ast
from pathlib import Path

PACKAGE = Path(__file__).resolve().parents[1] / "zettel_amem"

ALLOWED = {
    # the bottom: types, errors, text helpers, settings
    "errors": set(),
    "models": set(),
    "text": set(),
    "relative_dates": set(),
    "date_mentions": {"models", "relative_dates"},  # dates written in a passage, made absolute at write time
    "passages": {"date_mentions", "models"},  # an entry cut into passages (pure: the embedder is passed in)
    "config": {"errors", "location"},
    "location": {"errors"},  # where the tables live: a folder or an object-store URI
    "dates": {"errors"},
    "editor": {"errors"},
    "prompts": {"errors", "text"},
    # storage (the only modules that build a filter), embeddings, model backends
    "database": {"errors", "location", "store_errors"},
    "store": {"database", "errors", "shared_store", "store_links", "store_ranked", "store_rows", "store_upkeep",
              "versions"},  # the notes table: one class per job (below), composed
    "store_rows": {"database", "errors", "models", "passages", "text"},
    "store_links": {"database", "models", "store_rows"},
    "store_ranked": {"database", "models", "store_rows", "store_upkeep"},
    "store_upkeep": {"database", "errors", "store_rows", "text"},
    "shared_store": {"database", "errors", "store_errors"},  # opening the notes table of an object-store home
    "store_errors": {"errors", "location"},  # why a shared store cannot be used, in one line
    "lease": {"database", "shared_store"},  # the shared store's worker lease (a row in a table)
    "tier_store": {"database", "models", "shared_store"},  # shared_store: creating a table on an object store
    "versions": {"database"},  # which table versions read after a crash; the rows of lost commits
    "health": {"database", "errors", "store", "versions"},  # storage health: diagnose and read what is left
    "repair": {"database", "errors", "health", "store", "tier_store"},  # rebuild only what is damaged
    "remote": {"database", "health", "location", "store_errors"},  # doctor's probe of a store
    "outbox": {"errors", "models", "store"},  # notes kept offline for a shared store
    "embed": {"config", "errors"},
    "llm": {"config", "errors", "llm", "models"},
    # the LLM steps, each a pure function of a model and prompts
    "construct": {"config", "llm", "models", "prompts", "relative_dates", "text"},
    "link": {"config", "construct", "llm", "models", "prompts", "text"},
    "evolve": {"config", "link", "models", "text"},
    "episodes": {"config", "construct", "llm", "models", "prompts", "text"},
    "grounding": {"text"},  # pure checks of what the graph may store (#31)
    "extraction": {"grounding", "llm", "models", "prompts", "text"},
    "retrieve": {"models", "passages", "relative_dates", "text"},
    "passage_rank": {"passages", "retrieve", "text"},  # entries ranked by their best passages
    # services over a notebook's parts (parts.py: store, embedder, model, settings, loaded on first use)
    "parts": set(),
    "changes": {"errors", "evolve", "models", "passages"},
    "supersede": {"evolve", "models", "passages", "questions", "text"},  # typed updates links, checked and recorded
    "pipeline": {"construct", "embed", "errors", "evolve", "link", "llm", "models", "passages", "retrieve",
                 "supersede", "text"},
    "search": {"errors", "models", "passage_rank", "passages", "retrieve", "text"},
    "answer": {"config", "dates", "errors", "journal_answer", "llm", "models", "passages", "prompts", "retrieve",
               "supersede", "term_bridge", "text"},
    "term_bridge": {"evidence", "models", "questions"},
    # journal answers (#26): pure functions of the question and the retrieved notes, no model, no store
    "questions": {"prompts", "text"},
    "evidence": {"models", "questions", "text"},
    "date_guard": {"date_mentions", "models"},
    "journal_answer": {"date_guard", "date_mentions", "evidence", "models", "questions", "text"},
    "memory": {"answer", "changes", "config", "dates", "embed", "errors", "evolve", "llm", "location", "models",
               "outbox", "parts", "passages", "pipeline", "prompts", "retrieve", "search", "store", "text"},
    "worker": {"lease", "models"},
    "ingest": {"database", "errors", "ingest", "memory", "models", "passages", "store", "text"},
    "sessions": {"dates", "errors", "models", "tier_store"},
    "promotion": {"dates", "embed", "episodes", "errors", "extraction", "grounding", "llm", "models", "sessions",
                  "text", "tier_store", "worker"},
    "context": {"embed", "errors", "grounding", "models", "retrieve", "sessions", "text", "tier_store"},
    "graph_queries": {"dates", "embed", "errors", "models", "text", "tier_store"},
    "tiers": {"context", "graph_queries", "grounding", "memory", "models", "promotion", "sessions", "tier_store",
              "worker"},
    # the front ends
    "render": {"models", "retrieve", "text"},
    "graphpage": {"models", "text"},
    "doctor": {"config", "database", "embed", "errors", "health", "ingest", "llm", "location", "memory", "models",
               "remote", "store", "worker"},
    "mcp_server": {"errors", "llm", "memory", "models", "retrieve", "tiers"},
    "cli": {"config", "dates", "doctor", "editor", "errors", "graphpage", "health", "ingest", "mcp_server", "memory",
            "models", "prompts", "render", "repair", "tiers", "worker"},
}
# The only layers that may build a filter string.
STORAGE = {"database", "store", "store_rows", "store_links", "store_ranked", "store_upkeep", "tier_store",
           "health", "versions", "repair", "shared_store", "lease"}
# Text that only a LanceDB filter contains.
FILTER_MARKS = (" LIKE ", " IS NULL", " IS NOT NULL", "array_length(", "array_has", " IN (", "notebook = ")


def _type_checking_only(tree: ast.AST) -> set[int]:
    """ids of import nodes inside `if TYPE_CHECKING:` (annotations only, never run)."""
    out = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.If) and getattr(node.test, "id", "") == "TYPE_CHECKING":
            out.update(id(n) for n in ast.walk(node))
    return out


def internal_imports(path: Path) -> set[str]:
    """Top-level layers (first component under zettel_amem) that a module imports."""
    package = ["zettel_amem", *path.relative_to(PACKAGE).parts[:-1]]
    found = set()
    tree = ast.parse(path.read_text(encoding="utf-8"))
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


def test_every_module_respects_its_layer():
    problems = []
    for path in PACKAGE.rglob("*.py"):
        layer = layer_of(path)
        if layer in ("__init__", "__main__"):
            continue
        assert layer in ALLOWED, f"new module {path.name}: add it to ALLOWED with its allowed imports"
        extra = internal_imports(path) - ALLOWED[layer] - {layer}
        if extra:
            problems.append(f"{path.relative_to(PACKAGE)} imports {sorted(extra)}")
    assert not problems, "\n".join(problems)


def test_only_the_cli_and_render_print():
    for path in PACKAGE.rglob("*.py"):
        if layer_of(path) in ("cli", "render"):
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
        if path.parent == PACKAGE and path.stem in STORAGE:
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
    for name in ("cli.py", "mcp_server.py"):
        tree = ast.parse((PACKAGE / name).read_text(encoding="utf-8"))
        found = [n.lineno for n in ast.walk(tree) if isinstance(n, ast.Attribute) and n.attr == "remote"
                 and isinstance(n.value, ast.Attribute) and n.value.attr == "location"]
        assert not found, f"{name} tests location.remote at lines {found}; move the decision into the library"
