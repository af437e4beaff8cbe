"""Commands that find notes: search (retrieval only) and ask (an answer from the notes found)."""

from __future__ import annotations

import typer

from .common import JSON_OPT, notes_json, open_memory


def ask(question: str = typer.Argument(..., help="Your question."),
        k: int | None = typer.Option(None, "--k", min=1, help="Notes retrieved before link expansion."),
        as_json: bool = JSON_OPT) -> None:
    """Answer from your notes, citing them: a journal's own dated sentences and how sure; over chats, the model."""
    from ..tiers.service import Tiers
    from . import render

    memory = open_memory()
    block, hints, facts = Tiers(memory).context.memory_block(question)  # L0 hints + L2 facts before the notes
    answer = memory.ask(question, k, memory_block=block)
    if as_json:
        for _ in answer.pieces:
            pass
        cited = set(answer.cited())
        render.print_json({"answer": answer.text.strip(), "cited": answer.cited(), "mode": answer.mode,
                           "reason": answer.reason or None, "model": answer.model or None,
                           "model_server": answer.server.to_json() if answer.server else None,
                           "quotes": answer.quotes,
                           "view": answer.view.to_json() if answer.view else None,
                           "confidence": answer.view.confidence if answer.view else None,
                           "notes": notes_json(memory, answer.notes, cited=lambda h: h.note.id in cited),
                           "episodes": [h.to_json() for h in hints], "facts": facts, "facts_used": len(facts)})
        return
    if answer.view is not None:  # a journal answer: the headline, the dated sentences, how sure
        render.answer_view(answer.view)
    else:
        render.stream_markdown(answer.pieces)
    render.answer_note(answer.mode, answer.reason, answer.model, answer.server)
    cited = set(answer.cited())
    used = [h for h in answer.notes if h.note.id in cited] or answer.notes
    if used:  # a declined journal answer called no model: its notes are the closest found
        render.hits_table(used, title="cited notes" if cited else "notes given to the model" if answer.model
                          else "closest notes" if answer.mode == "declined" else "notes found")


def search(query: str = typer.Argument(..., help="What to look for."),
           limit: int | None = typer.Option(None, "--limit", "-k", min=1,
                                            help="Hits before link expansion (default: as many as `zk ask` uses)."),
           no_links: bool = typer.Option(False, "--no-links", help="Do not add linked notes."),
           budget: int | None = typer.Option(None, "--budget", min=0, help="Token budget of the expanded "
                                             "notes, as `zk ask` gives them (default from config; 0: none)."),
           episodes_only: bool = typer.Option(False, "--episodes", help="Only matching episodes (L1)."),
           tag: str | None = typer.Option(None, "--tag", help="Only notes with this #tag of yours."),
           everywhere: bool = typer.Option(False, "--everywhere", help="A query naming someone from your chats "
                                           "still ranks every note (default: their chats and your notes naming "
                                           "them)."),
           as_json: bool = JSON_OPT) -> None:
    """Retrieval only, no LLM: the notes `zk ask` would be given (hybrid search plus linked notes)
    and matching episodes (L1). `--json` prints the notes; `--episodes --json` the episodes.

    `zk expand ID` shows an episode's full summary or a whole note."""
    from ..tiers.service import Tiers
    from . import render, render_tiers

    memory = open_memory()
    memory.start_embedding(query)  # while the store opens
    episodes = [] if tag is not None and not episodes_only else \
        Tiers(memory).context.search_episodes(query, k=3, min_score=memory.settings.context_min_score)
    if episodes_only:
        if as_json:
            render.print_json([{"kind": "episode", **h.to_json()} for h in episodes])
        else:
            render_tiers.episodes_table(episodes)
        return
    budget = memory.settings.context_budget_tokens if budget is None else budget
    hits = memory.search(query, limit, follow_links=not no_links, budget_tokens=budget or None, tag=tag,
                         scoped=not everywhere)
    if as_json:
        render.print_json(notes_json(memory, hits))
        return
    if episodes:
        render_tiers.episodes_table(episodes)
    render.hits_table(hits, title="notes" if episodes else None)
    scope = memory.searcher.last_scope
    if scope is not None and scope.narrows:
        render.scope_line(scope)
