"""Commands of the upper tiers: context (L0), expand (L1), graph (L2), session close/resummarize, prune."""

from __future__ import annotations

import sys

import typer

from ..core.errors import ZkError
from .common import JSON_OPT, date_option, id_arg, notes_json, open_tiers, read_stdin
from .notes import show_note


def context(message: str = typer.Argument(..., help="The user's new message, or - to read it from standard input."),
            recent: list[str] = typer.Option([], "--recent", "-r", help="An earlier user turn, oldest first "
                                             "(repeatable; the last two are used)."),
            limit: int | None = typer.Option(None, "--limit", "-k", min=0, help="At most N hints (default 3)."),
            min_score: float | None = typer.Option(None, "--min-score", help="Hide hints scoring below this "
                                                   "(default 0.35)."),
            with_instructions: bool = typer.Option(False, "--with-instructions",
                                                   help="Add the paragraph that tells an agent how to use its memory."),
            as_json: bool = JSON_OPT) -> None:
    """L0: a `## Memory Context` block of relevant past episodes for an agent's prompt; nothing if none fits."""
    from . import render

    if min_score is not None and not 0.0 <= min_score <= 1.0:  # NaN fails both comparisons: refused too
        raise ZkError(f"--min-score must be a number from 0 to 1, not {min_score}")
    tiers = open_tiers()
    result = tiers.context.hints(read_stdin() if message == "-" else message, recent, limit, min_score)
    instructions = tiers.context.instructions() if with_instructions else ""
    if as_json:
        render.print_json({"query": result.query, "skipped": result.skipped or None, "top_score": result.top_score,
                           "hints": [h.to_json() for h in result.hints], "facts": result.facts,
                           "facts_used": len(result.facts), "block": result.block(instructions)})
    else:
        sys.stdout.write(result.block(instructions))


def expand(item_id: str = id_arg("Episode id (e…), session id (s…) or note id."),
           as_json: bool = JSON_OPT) -> None:
    """L1: the full episode summary (e…), a session's turns (s…), or a whole note."""
    from . import render, render_tiers

    tiers = open_tiers()
    kind, item = tiers.context.expand(item_id)
    if kind == "note":
        show_note(tiers.memory, item, as_json)
        return
    episode, turns = item
    if as_json:
        data = episode.to_json() if episode else {"session_id": turns[0].session_id, "episode": None}
        render.print_json({**data, "turn_ids": [t.id for t in turns]} if kind == "episode"
                          else {**data, "turns": notes_json(tiers.memory, turns)})
    elif kind == "episode":
        render_tiers.episode_view(episode, turns)
    else:
        if episode:
            render_tiers.episode_view(episode, turns)
        render_tiers.session_view(turns)


def graph(entity: str | None = typer.Argument(None, help="A person, project, place… (omit to list entities)."),
          depth: int = typer.Option(1, "--depth", min=1, max=3, help="Hops of connected entities to show."),
          at: str | None = typer.Option(None, "--at", help="Only relations valid at this date."),
          merge_into: str | None = typer.Option(None, "--merge-into", help="Record that ENTITY is the same as this."),
          unmerge: bool = typer.Option(False, "--unmerge", help="Undo the merge of the entity named ENTITY."),
          restore: str | None = typer.Option(None, "--restore", metavar="RELATION",
                                             help="Undo an invalidation: the relation (id as `zk graph` shows "
                                                  "it) is current again."),
          html: str | None = typer.Option(None, "--html", metavar="FILE", help="Write notes, links and entities "
                                          "as one interactive offline page (search, colours, click to read)."),
          all_notebooks: bool = typer.Option(False, "--all", help="With --html: every notebook, not only -n."),
          as_json: bool = JSON_OPT) -> None:
    """L2: what the graph knows about an entity: relations now and in the past, their episodes, neighbours.

    `zk graph --html FILE` draws the whole notebook instead: open FILE in a browser."""
    from . import render, render_tiers

    tiers = open_tiers()
    if html is not None:
        if entity is not None or merge_into or unmerge or at:
            raise ZkError("--html draws the whole notebook: give no ENTITY, --at, --merge-into or --unmerge")
        _graph_page(tiers, html, all_notebooks, as_json)
        return
    if all_notebooks:
        raise ZkError("--all goes with --html")
    if restore is not None:
        if entity is not None or merge_into or unmerge or at:
            raise ZkError("--restore takes a relation id alone: give no ENTITY, --at, --merge-into or --unmerge")
        _graph_restore(tiers, restore, as_json)
        return
    if merge_into and unmerge:
        raise ZkError("use either --merge-into or --unmerge, not both")
    if entity is None:
        if merge_into or unmerge:
            raise ZkError("--merge-into and --unmerge need an ENTITY")
        rows = tiers.graph.entities()
        render.print_json(rows) if as_json else render_tiers.entities_table(rows)
        return
    if merge_into or unmerge:
        _graph_merge(tiers, entity, merge_into, unmerge, as_json)
        return
    view = tiers.graph.view(entity, depth, date_option(at))
    render.print_json(view) if as_json else render.console.print(render_tiers.graph_tree(view))


def _graph_restore(tiers, relation_id: str, as_json: bool) -> None:
    """`zk graph --restore RELATION`: an invalidated relation is current again."""
    from . import render

    rel = tiers.graph.restore(relation_id)
    if as_json:
        render.print_json({"id": rel.id, "current": True, "valid_from": rel.valid_from})
    else:
        render.console.print(f"relation {rel.id[:8]} is current again")


def _graph_merge(tiers, entity: str, merge_into: str | None, unmerge: bool, as_json: bool) -> None:
    """`zk graph ENTITY --merge-into OTHER` (the two are one entity) or `--unmerge` (undone)."""
    from . import render

    changed = tiers.graph.unmerge(entity) if unmerge else tiers.graph.merge(entity, merge_into)
    if as_json:
        render.print_json(changed.to_json())
    else:
        render.console.print(f"'{render.escape(changed.name)}' " + (
            "stands alone again" if unmerge else f"is now the same entity as '{render.escape(merge_into)}'"))


def _graph_page(tiers, path: str, all_notebooks: bool, as_json: bool) -> None:
    from pathlib import Path

    from . import render
    from .graphpage import graph_data, render_page

    memory = tiers.memory
    notes = memory.store.notes(None if all_notebooks else memory.notebook)
    notebooks = sorted({n.notebook for n in notes} | {memory.notebook}) if all_notebooks else [memory.notebook]
    entities = [e for nb in notebooks for e in tiers.store.entities(nb)]
    relations = [r for nb in notebooks for r in tiers.store.relations(nb)]
    data = graph_data(notes, entities, relations)
    title = "zk · " + (", ".join(notebooks) if all_notebooks else memory.notebook)
    target = Path(path).expanduser()
    try:
        target.write_text(render_page(data, title), encoding="utf-8")
    except OSError as exc:
        raise ZkError(f"cannot write {target}: {exc.strerror or exc}") from None
    summary = {"file": str(target), "notes": data["notes"], "entities": data["entities"], "links": data["links"],
               "nodes": len(data["nodes"]), "edges": len(data["edges"])}
    if as_json:
        render.print_json(summary)
    else:
        render.console.print(f"wrote {render.escape(str(target))}: {data['notes']} notes, {data['entities']} "
                             f"entities, {data['links']} links (open it in a browser; it works offline)")


def session_close(ids: list[str] = typer.Argument(None, metavar="[ID]...", help="Session (s…) or episode (e…) "
                                                  "ids; default: this week's (or day's) journal."),
                  wait: bool = typer.Option(False, "--wait", help="Summarise now, in the foreground."),
                  as_json: bool = JSON_OPT) -> None:
    """Mark sessions complete: they are summarised into episodes (by the background worker, or now)."""
    from ..core import dates
    from ..core.models import journal_period, session_id_for
    from ..runtime.worker import step_lock, work_lock
    from . import render

    tiers = open_tiers()
    memory = tiers.memory
    targets = [tiers.sessions.resolve(i) for i in ids] if ids else [
        session_id_for(memory.notebook, journal_period(dates.now().isoformat(), memory.settings.journal_session).key)]
    episodes = tiers.sessions.close_many(targets)
    results = []
    if wait:
        with work_lock(memory, wait=True):  # never alongside the background worker
            results = [tiers.promotion.process_episode(e.id, lambda: step_lock(memory.home)) for e in episodes]
    elif memory.settings.auto_worker:
        from ..runtime.worker import spawn

        spawn(memory.home)
    if as_json:
        render.print_json([{**e.to_json(), "result": next((r.__dict__ for r in results if r.id == e.id), None)}
                           for e in episodes])
        return
    for episode in episodes:
        episode = tiers.store.episode(episode.id) or episode
        render.console.print(f"[bold cyan]{episode.id[:9]}[/] {episode.status}: {render.escape(episode.abstract)}")
    if any(r.error for r in results):
        raise typer.Exit(1)


def session_resummarize(item_id: str = typer.Argument(..., metavar="ID", help="Session (s…) or episode (e…) id."),
                        as_json: bool = JSON_OPT) -> None:
    """Summarise a session again from its raw turns (never from the old summary) and re-extract its facts."""
    from ..runtime.worker import work_lock
    from . import render, render_tiers

    tiers = open_tiers()
    with work_lock(tiers.memory, wait=True):
        result = tiers.promotion.resummarize(item_id)
    episode = tiers.store.episode(result.id)
    if as_json:
        render.print_json({**episode.to_json(), "result": result.__dict__})
    else:
        render_tiers.episode_view(episode, [])
    if result.error:
        raise typer.Exit(1)


def prune(older_than: str = typer.Option(..., "--older-than", help="Age, e.g. 180d, 26w, 6m, 1y."),
          as_json: bool = JSON_OPT) -> None:
    """Remove episode summaries that ended before the given age. Raw notes and graph facts stay."""
    from . import render

    removed = open_tiers().promotion.prune(older_than)
    if as_json:
        render.print_json({"pruned": removed})
    else:
        render.console.print(f"pruned {len(removed)} episode summar{'y' if len(removed) == 1 else 'ies'}; "
                             "raw notes and graph facts kept")
