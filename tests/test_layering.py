"""Module boundaries, enforced: each layer imports only the layers below it.

cli -> tiers (episodes, graph, tier_store) -> memory/render/worker -> pipeline (construct, link, evolve,
retrieve) -> store/embed/llm/prompts
-> note/text/config. Storage never knows about the LLM; the LLM never knows about storage; only the
CLI prints.
"""

from __future__ import annotations

import ast
from pathlib import Path

PACKAGE = Path(__file__).resolve().parents[1] / "zettel_amem"

ALLOWED = {
    "config": set(),
    "text": set(),
    "relative_dates": set(),
    "note": set(),
    "prompts": {"config", "text"},
    "store": {"config", "note", "text"},
    "embed": {"config"},
    "llm": {"config", "llm"},
    "construct": {"config", "llm", "note", "prompts", "relative_dates", "text"},
    "link": {"config", "construct", "llm", "note", "prompts", "text"},
    "evolve": {"config", "link", "note", "text"},
    "retrieve": {"note", "relative_dates", "text"},
    "answer": {"config", "prompts", "retrieve"},
    "dates": {"config"},
    "editor": {"config"},
    "memory": {"answer", "config", "construct", "dates", "evolve", "link", "llm", "note", "prompts", "retrieve",
               "store", "text", "embed"},
    "ingest": {"config", "ingest", "memory", "note", "store", "text"},
    "tier_store": {"note", "store"},
    "episodes": {"config", "construct", "llm", "note", "prompts", "text"},
    "graph": {"llm", "note", "prompts", "text"},
    "tiers": {"config", "embed", "episodes", "graph", "llm", "memory", "note", "prompts", "retrieve", "store", "text",
              "tier_store", "worker"},
    "worker": {"note"},
    "render": {"note", "retrieve", "text"},
    "health": {"config", "store"},  # storage health below the CLI: diagnose and read what is left
    "doctor": {"config", "embed", "health", "ingest", "llm", "memory", "note", "store", "worker"},
    "graphpage": {"note", "text"},
    "mcp_server": {"config", "llm", "memory", "note", "retrieve", "tiers"},
    "cli": {"config", "dates", "doctor", "editor", "graphpage", "health", "mcp_server", "memory", "render", "worker",
            "ingest", "note", "prompts", "tiers"},
}


def internal_imports(path: Path) -> set[str]:
    """Top-level layers (first component under zettel_amem) that a module imports."""
    package = ["zettel_amem", *path.relative_to(PACKAGE).parts[:-1]]
    found = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
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
