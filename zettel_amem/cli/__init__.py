"""`zk`: parse arguments, call the library (`memory.Memory`), print. Nothing else lives here.

Heavy modules (LanceDB, embedders, llama.cpp) load inside commands, so `zk --help` stays instant.
"""

from __future__ import annotations

import os
import sys

import typer

from ..core.errors import ZkError
from ..ingest import formats  # the import formats' names (their parsers load on use)

# add_completion: `zk --install-completion` / `--show-completion` (Typer's, for the shell it detects);
# `zk completion SHELL` prints the script for a named shell. Note ids complete from the store.
app = typer.Typer(add_completion=True, no_args_is_help=True, rich_markup_mode=None,
                  help="zk: a local-first Zettelkasten that organises itself (A-MEM).")

JSON_OPT = typer.Option(False, "--json", help="Print JSON for scripts.")


class State:
    home: str | None = None
    notebook: str = "main"
    notebook_given: bool = False  # `-n` on the command line: a restore then goes into that notebook


@app.callback()
def _global(home: str | None = typer.Option(None, "--home", help="Data directory, or s3://BUCKET/PREFIX for a "
                                               "notebook shared by several machines (default: $ZK_HOME or the "
                                               "user data dir)."),
            notebook: str | None = typer.Option(None, "--notebook", "-n", help="Notebook to use (default: main)."),
            model: str | None = typer.Option(None, "--model", "-m", help="LLM for this command: a .gguf path, "
                                             "qwen2.5-0.5b, smollm2-135m, or openai:MODEL@http://HOST:PORT/v1 "
                                             "for an OpenAI-compatible server (default: $ZK_LLM_MODEL, "
                                             "config.toml, then the bundled Qwen).")) -> None:
    State.home = home
    State.notebook = notebook if notebook is not None else "main"
    State.notebook_given = notebook is not None
    if model:  # through the environment, so the background worker this command starts uses it too
        os.environ["ZK_LLM_MODEL"] = model


def _complete_id(ctx: typer.Context, incomplete: str) -> list[tuple[str, str]]:
    """Shell completion of a note id: ids of the notebook (from --home/-n on the command line) starting with
    what was typed, each with its date and first words. Any failure completes nothing: completion must
    never print an error into the user's command line."""
    try:
        from ..memory import Memory

        root = ctx.find_root().params
        memory = Memory(root.get("home"), notebook=root.get("notebook") or "main")
        return memory.id_completions(incomplete)
    except Exception:  # noqa: BLE001
        return []


def _id_arg(help: str = "Note id or unique prefix."):
    return typer.Argument(..., metavar="ID", autocompletion=_complete_id, help=help)


def _memory(**kwargs):
    from ..memory import Memory

    return Memory(State.home, notebook=State.notebook, **kwargs)


def _read_stdin() -> str:
    data = sys.stdin.buffer.read()
    try:
        return data.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        raise ZkError(f"standard input is not valid UTF-8 (byte {exc.start})") from None


def _notes_json(memory, notes, **extra_for) -> list[dict]:
    """Notes (or hits) as JSON with their real backlinks, found in one scan for all of them."""
    notes = list(notes)
    back = memory.store.backlinks_many([getattr(n, "note", n).id for n in notes])
    return [n.to_json(back.get(getattr(n, "note", n).id, []),
                      **{k: f(n) for k, f in extra_for.items()}) for n in notes]


def _when(value: str | None, role: str = "at") -> str | None:
    """A date option as ISO time (natural phrases in English or Korean read here); a guessed reading
    ("03/04") is reported in one line on stderr."""
    if value is None:
        return None
    from ..core.dates import resolve

    iso, note = resolve(value, role)
    if note:
        sys.stderr.write(f"zk: note: {note}\n")
    return iso


def _write_in_editor(template: str | None, at: str | None) -> tuple[str | None, object]:
    """`zk add` without text: the editor on an empty file or a filled-in template. (text, file); text
    None when the file came back empty or as the template was (nothing to add)."""
    from datetime import datetime

    from ..core.config import home_dir, templates_override_dirs
    from ..core.prompts import Prompts
    from .editor import discard, edit_text, same_text

    initial = ""
    if template:
        when = datetime.fromisoformat(at) if at else datetime.now()
        initial = Prompts(templates_override_dirs(home_dir(State.home))).note_template(template, when)
    text, path = edit_text(initial, "new")
    if not text.strip() or (template and same_text(text, initial)):
        discard(path)
        return None, None
    return text, path


def _after_write(memory, note, wait: bool):
    """Run the LLM steps now (`--wait`) or leave them to the background worker."""
    from ..runtime.worker import process_or_queue

    try:
        return process_or_queue(memory, note.id, wait)
    except ZkError as exc:  # the model could not even load: the note itself is safe
        raise ZkError(f"{exc} — note {note.short_id} is saved as pending; run `zk process` later") from None


def _result_json(note, result) -> dict:
    data = {"id": note.id, "status": result.status if result else note.status, "session_id": note.session_id,
            "user_tags": note.user_tags}
    if result:
        data.update(links=result.links, evolved=result.evolved, refused=result.refused, updates=result.updates,
                    error=result.error or None,
                    usage={"llm_calls": result.llm_calls, "evaluated_tokens": result.evaluated_tokens,
                           "completion_tokens": result.completion_tokens, "seconds": round(result.seconds, 2)})
    return data


@app.command()
def add(text: str | None = typer.Argument(None, help="The note, or - to read it from standard input. Omit it to "
                                          "write the note in $VISUAL/$EDITOR."),
        at: str | None = typer.Option(None, "--at", help="When it happened: 2026-03-29T09:15, yesterday 9am, "
                                      "last friday, 어제, 3일 전, 오늘 아침 …"),
        template: str | None = typer.Option(None, "--template", "-t", help="Open the editor on this note "
                                            "template (e.g. daily, daily-en; templates/NAME.md)."),
        edit: bool = typer.Option(False, "--edit", "-e", help="Write the note in the editor (the default "
                                  "without text when standard input is a terminal)."),
        wait: bool = typer.Option(False, "--wait", help="Run linking and evolution now and show them."),
        as_json: bool = JSON_OPT) -> None:
    """Add a note. It is saved and searchable at once; the LLM work runs in the background.

    Without text (at a terminal), or with --edit / --template, $VISUAL or $EDITOR opens; an empty file or
    an unchanged template adds nothing. #words in the text are your own tags (`zk tags`)."""
    from . import render

    at = _when(at)
    path = None
    if text is not None and (edit or template):
        raise ZkError("give the note as text or write it in the editor (--edit/--template), not both")
    if text is None:
        if not (edit or template or (sys.stdin is not None and sys.stdin.isatty())):
            raise ZkError("no note given: pass the text, - to read standard input, or --edit to use $EDITOR")
        content, path = _write_in_editor(template, at)
        if content is None:
            if as_json:
                render.print_json({"id": None, "status": "not added", "reason": "empty or unchanged"})
            else:
                render.err_console.print("nothing added: the note was empty or the template unchanged")
            return
    else:
        content = _read_stdin() if text == "-" else text
    memory = _memory()
    try:
        note = memory.add(content, at)
    except ZkError as exc:
        if not path:
            raise
        raise ZkError(f"{exc}{advice_for(exc)} (your text is in {path})") from None
    if path:
        from .editor import discard

        discard(path)  # durable in the store (or the offline outbox) now
    if note.status == "outbox":  # a shared store out of reach: kept locally, sent by the next command
        render.print_json({"id": note.id, "status": "outbox", "reason": note.error}) if as_json else \
            sys.stderr.write(f"zk: {_one_line(note.error)}\n")
        return
    try:
        _show_added(memory, note, wait, as_json)
    except ZkError as exc:  # a failure after the write must not read as "not saved" (a retry would double it)
        message = str(exc)
        raise ZkError(message if note.short_id in message else f"note {note.short_id} was saved, but {message}"
                      ) from None
    except KeyboardInterrupt:
        _interrupted(f"note {note.short_id} is saved and stays pending, `zk process` finishes it")


def _show_added(memory, note, wait: bool, as_json: bool) -> None:
    from . import render

    result = _after_write(memory, note, wait)
    if as_json:
        render.print_json(_result_json(note, result))
        return
    stored, linked, evolved = memory.as_added(note, result)
    render.add_result(stored, result, linked, evolved)


@app.command()
def edit(note_id: str = _id_arg(),
         wait: bool = typer.Option(False, "--wait", help="Annotate and link it again now, not in the background."),
         as_json: bool = JSON_OPT) -> None:
    """Fix a note in $VISUAL/$EDITOR. A saved change is a new version (`zk history`, `zk revert`); the note
    is embedded, annotated and linked again (its links are kept). An unchanged file changes nothing."""
    from . import render
    from .editor import discard, edit_text, same_text

    memory = _memory()
    note = memory.resolve(note_id)
    text, path = edit_text(note.content + "\n", note.short_id)
    if same_text(text, note.content):
        discard(path)
        render.print_json({"id": note.id, "changed": False, "version": note.version}) if as_json else \
            render.err_console.print(f"no change: note {note.short_id} stays at version {note.version}")
        return
    if not text.strip():
        discard(path)
        raise ZkError(f"the edited note is empty; nothing changed (to delete it: zk rm {note.short_id})")
    from ..runtime.worker import step_lock

    try:
        with step_lock(memory.home):  # a worker must not write back the old text it read before this
            updated = memory.edit(note.id, text, expected=note.content)
    except ZkError as exc:
        raise ZkError(f"{exc}{advice_for(exc)} (your text is in {path})") from None
    discard(path)
    if updated is None:
        render.err_console.print(f"no change: note {note.short_id} stays at version {note.version}")
        return
    if updated.session_id:  # its session's summary was made from the old text: summarise it again
        from ..tiers.service import Tiers

        Tiers(memory).sessions.requeue(updated.session_id)
    result = _after_write(memory, updated, wait)
    if as_json:
        render.print_json({**_result_json(updated, result), "changed": True, "version": updated.version})
        return
    render.console.print(f"[green]edited[/] {render.note_line(memory.store.get(updated.id) or updated)} "
                         f"[dim]now version {updated.version}[/]")
    if result is not None:
        linked = list(memory.store.get_many(result.links).values())
        evolved = list(memory.store.get_many(result.evolved).values())
        render.add_result(memory.store.get(updated.id) or updated, result, linked, evolved)


@app.command()
def ask(question: str = typer.Argument(..., help="Your question."),
        k: int | None = typer.Option(None, "--k", min=1, help="Notes retrieved before link expansion."),
        as_json: bool = JSON_OPT) -> None:
    """Answer from your notes (streamed), citing the notes it used."""
    from ..tiers.service import Tiers
    from . import render

    memory = _memory()
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
                           "notes": _notes_json(memory, answer.notes, cited=lambda h: h.note.id in cited),
                           "episodes": [h.to_json() for h in hints], "facts": facts, "facts_used": len(facts)})
        return
    render.stream_markdown(answer.pieces)
    render.answer_note(answer.mode, answer.reason, answer.model, answer.server)
    cited = set(answer.cited())
    used = [h for h in answer.notes if h.note.id in cited] or answer.notes
    if used:
        render.hits_table(used, title="cited notes" if cited else "notes given to the model")


@app.command()
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
    from . import render

    memory = _memory()
    memory.start_embedding(query)  # while the store opens
    episodes = [] if tag is not None and not episodes_only else \
        Tiers(memory).context.search_episodes(query, k=3, min_score=memory.settings.context_min_score)
    if episodes_only:
        if as_json:
            render.print_json([{"kind": "episode", **h.to_json()} for h in episodes])
        else:
            render.episodes_table(episodes)
        return
    budget = memory.settings.context_budget_tokens if budget is None else budget
    hits = memory.search(query, limit, follow_links=not no_links, budget_tokens=budget or None, tag=tag,
                         scoped=not everywhere)
    if as_json:
        render.print_json(_notes_json(memory, hits))
        return
    if episodes:
        render.episodes_table(episodes)
    render.hits_table(hits, title="notes" if episodes else None)
    scope = memory.searcher.last_scope
    if scope is not None and scope.narrows:
        render.scope_line(scope)


@app.command("list")
def list_notes(since: str | None = typer.Option(None, "--since", help="Only notes at or after this date "
                                                "(2026-03-01, 어제, last friday, 2 weeks ago …)."),
               until: str | None = typer.Option(None, "--until", help="Only notes before this date."),
               tag: str | None = typer.Option(None, "--tag", help="Only notes with this #tag of yours."),
               limit: int | None = typer.Option(None, "--limit", min=1, help="At most N notes."),
               as_json: bool = JSON_OPT) -> None:
    """Notes, newest first, one line each."""
    from . import render

    memory = _memory()
    notes = memory.list(_when(since, "since"), _when(until, "until"), limit, tag=tag)
    if as_json:
        render.print_json(_notes_json(memory, notes))
    else:
        render.notes_list(notes)


@app.command()
def on(date: str = typer.Argument(..., metavar="DATE", help="A day: 2026-03-29, yesterday, last friday, 어제, "
                                  "그저께, 지난주 금요일, 3일 전 …"),
       tag: str | None = typer.Option(None, "--tag", help="Only notes with this #tag of yours."),
       as_json: bool = JSON_OPT) -> None:
    """The notes of one day, oldest first."""
    from ..core.dates import day_range
    from . import render

    day, start, end, note = day_range(date)
    if note:
        sys.stderr.write(f"zk: note: {note}\n")
    memory = _memory()
    notes = sorted(memory.list(start, end, tag=tag), key=lambda n: (n.at, n.created, n.seq))
    if as_json:
        render.print_json(_notes_json(memory, notes))
        return
    render.day_header(day, len(notes))
    render.notes_list(notes)


@app.command()
def tags(as_json: bool = JSON_OPT) -> None:
    """Your own #tags (written in notes), with how many notes carry each; the model's tags are not listed."""
    from . import render

    rows = _memory().tag_counts()
    render.print_json(rows) if as_json else render.tags_table(rows)


@app.command()
def show(note_id: str = _id_arg("Note id, session id (s...) or a unique prefix."),
         as_json: bool = JSON_OPT) -> None:
    """Every field of a note, its links both ways and its version history; or a session's turns."""
    from . import render

    memory = _memory()
    if note_id.strip().lower().startswith("s"):  # session ids start with "s", note ids are hex
        from ..tiers.service import Tiers

        sessions = Tiers(memory).sessions
        turns = sessions.turns(sessions.resolve(note_id))
        if as_json:
            render.print_json({"session_id": turns[0].session_id, "title": turns[0].source,
                               "turns": _notes_json(memory, turns)})
        else:
            render.session_view(turns)
        return
    _show_note(memory, memory.resolve(note_id), as_json)


def _show_note(memory, note, as_json: bool) -> None:
    """`zk show ID` (also `zk expand ID` of a note): every field, links both ways, history."""
    from . import render

    backlinks = memory.backlinks(note.id)
    if as_json:
        render.print_json(note.to_json(backlinks, history=[v.to_dict() for v in note.history],
                                       created=note.created, error=note.error or None,
                                       passages=[p.to_json() for p in note.passages or []]))
        return
    found = memory.store.get_many([*note.links, *backlinks])
    render.show_note(note, [found[i] for i in backlinks if i in found], [found[i] for i in note.links if i in found])


@app.command()
def links(note_id: str = _id_arg(),
          depth: int = typer.Option(1, "--depth", min=1, max=3, help="How many hops to show."),
          as_json: bool = JSON_OPT) -> None:
    """What a note links to (→) and what links to it (←), as a tree."""
    from . import render

    memory = _memory()
    root = memory.resolve(note_id)

    def both_ways(note):
        back = memory.backlinks(note.id)
        found = memory.store.get_many([*note.links, *back])
        return [found[i] for i in note.links if i in found], [found[i] for i in back if i in found]

    if as_json:
        def node(note, level, seen):
            data = {"id": note.id, "content": note.content, "at": note.at, "updated_by": note.updated_by}
            if level <= depth:  # leaves are not expanded: no backlink scan for them
                outgoing, incoming = both_ways(note)
                data["links"] = [node(o, level + 1, seen | {o.id}) if o.id not in seen else {"id": o.id}
                                 for o in outgoing]
                data["backlinks"] = [node(i, level + 1, seen | {i.id}) if i.id not in seen else {"id": i.id}
                                     for i in incoming]
            return data

        render.print_json(node(root, 1, {root.id}))
        return
    render.console.print(render.links_tree(root, both_ways, depth))


def _promote(memory, quiet: bool, done: list) -> None:
    """The promotion chain after the notes: close past journal days, then summarise and extract."""
    from ..tiers.service import Tiers
    from . import render

    tiers = Tiers(memory)
    tiers.close_due_periods()
    total = len(tiers.promotion.pending())
    if quiet or total == 0:
        done.extend(tiers.promotion.process_pending())
        return
    with render.progress() as bar:
        task = bar.add_task("summarising sessions", total=total)
        done.extend(tiers.promotion.process_pending(lambda r, i, n: bar.update(task, completed=i, total=n)))


JOBS_OPT = typer.Option(None, "--jobs", "-j", min=1, help="Notes enriched at once (N requests in flight; "
                        "for an openai: server; default: [llm] jobs, else 1).")


def _jobs(memory, requested: int | None) -> int:
    """How many notes to enrich at once. The in-process llama.cpp model runs one at a time."""
    from ..core.config import is_server_llm

    jobs = requested or memory.settings.llm_jobs or 1
    if jobs > 1 and not is_server_llm(memory.settings.llm_model):
        sys.stderr.write(f"zk: --jobs {jobs}: the in-process llama.cpp model enriches one note at a time; "
                         "using 1 (point zk at a server with --model openai:MODEL@URL for parallel work)\n")
        return 1
    return jobs


def _process_foreground(memory, quiet: bool, episodes: list | None = None, limit: int | None = None,
                        jobs: int = 1) -> list:
    """Drain the queue here (waiting for a running background worker), with a progress bar; then the
    episodes (their results are appended to `episodes`). With `limit`: at most that many notes, no episodes.
    `jobs` notes are in flight at once."""
    from ..runtime.worker import drain
    from . import render

    episodes = [] if episodes is None else episodes
    then = lambda: _promote(memory, quiet, episodes)  # noqa: E731
    total = len(memory.pending_ids(all_notebooks=True))
    if limit is not None:
        total = min(total, limit)
    if quiet or total == 0:
        return drain(memory, wait=True, then=then, limit=limit, jobs=jobs) or []
    with render.progress() as bar:
        task = bar.add_task("processing notes", total=total)

        def advance(result, index, count):
            bar.update(task, completed=index, total=count)

        return drain(memory, advance, wait=True, then=then, limit=limit, jobs=jobs) or []


@app.command()
def process(limit: int | None = typer.Option(None, "--limit", help="Process at most N notes."),
            quiet: bool = typer.Option(False, "--quiet", "-q", help="No progress output."),
            background: bool = typer.Option(False, "--background", hidden=True),
            jobs: int | None = JOBS_OPT,
            as_json: bool = JSON_OPT) -> None:
    """Finish pending work now: notes (construction, links, evolution), then sessions into episodes."""
    from . import render

    memory = _memory()
    jobs = _jobs(memory, jobs)
    if background:
        from ..tiers.service import Tiers

        Tiers(memory).work_in_background(jobs)
        return
    episodes: list = []
    if limit is not None and limit < 1:
        raise ZkError("--limit must be at least 1")
    results = _process_foreground(memory, quiet or as_json, episodes, limit, jobs)
    if as_json:
        render.print_json([r.__dict__ for r in results] + [{"kind": "episode", **r.__dict__} for r in episodes])
    elif not quiet:
        render.process_summary(results)
        if episodes:
            render.episode_summary(episodes)
    if any(r.error for r in [*results, *episodes]):
        raise typer.Exit(1)


@app.command("import")
def import_(source: str = typer.Argument(..., help="File, Markdown folder, or - for standard input."),
            fmt: str = typer.Option("auto", "--format", "-f",
                                    help=f"auto, {formats.listed()}."),
            enrich: bool = typer.Option(False, "--enrich", help="Let the model annotate and link the chat "
                                        "turns too (setting enrich_turns; off by default: ~9 s a turn "
                                        "for little recall with the bundled model)."),
            no_llm: bool = typer.Option(False, "--no-llm", help="Store and embed only; the model's work "
                                        "(episodes, enrichment) waits for `zk process`."),
            wait: bool = typer.Option(False, "--wait", help="Do the model's work now, in the foreground."),
            quiet: bool = typer.Option(False, "--quiet", "-q", help="No progress output."),
            jobs: int | None = JOBS_OPT,
            as_json: bool = JSON_OPT) -> None:
    """Import a chat log or notes: each turn becomes a note in its session; re-imports add nothing."""

    from ..ingest.importer import backup_kind, import_source, open_source
    from . import render

    memory = _memory()
    stream = open_source(source, sys.stdin.buffer)  # a pipe (`<(...)`, /dev/stdin) is read exactly once
    name = "stdin" if source == "-" else source
    kind, stream = backup_kind(stream, fmt)
    if kind == "vault":  # the same notes back with their ids, and the edits made in the vault
        report = _vault_in(memory, stream, wait and not no_llm, quiet or as_json, spawn=not no_llm)
        render.print_json(report.to_json()) if as_json else render.vault_read(report, quiet)
        if report.failed:
            raise typer.Exit(3)
        return
    if kind == "export":
        from ..ingest.export import restore

        report = restore(memory, stream, notebook=memory.notebook if State.notebook_given else None)
        # Episodes are rebuilt from the restored chats; restored pending notes are finished.
        _queue_after_import(memory, report["session_ids"], spawn_worker=bool(report["added"]))
        render.print_json(report) if as_json else render.export_restored(report)
        if report["failed"]:
            raise typer.Exit(3)
        return
    enrich = True if enrich else None  # None: the enrich_turns setting
    if quiet or as_json:
        report = import_source(memory, stream, fmt, source_name=name, enrich=enrich)
    else:
        with render.progress() as bar:
            task = bar.add_task("importing turns", total=None)
            how = "detected" if fmt == "auto" else "given"
            report = import_source(memory, stream, fmt, source_name=name, enrich=enrich,
                                   on_progress=lambda done, total: bar.update(task, completed=done, total=total),
                                   on_format=lambda found: bar.update(task, description=f"importing {found} ({how})"))
    if not quiet and not as_json:
        render.import_summary(report)
    jobs = _jobs(memory, jobs) if not no_llm else 1
    _queue_after_import(memory, report.session_ids,
                        spawn_worker=not wait and not no_llm and bool(report.session_ids), jobs=jobs)
    if wait and not no_llm:
        _process_foreground(memory, quiet or as_json, jobs=jobs)
    if as_json:
        render.print_json(report.to_json())
    if report.failed:
        raise typer.Exit(3)  # imported what it could; something was skipped


def _queue_after_import(memory, session_ids: list[str], spawn_worker: bool, jobs: int = 1) -> None:
    """Queue the imported sessions' episodes, then start the worker unless this command does the work."""
    from ..tiers.service import Tiers

    Tiers(memory).after_import(session_ids, spawn_worker, jobs)


def _vault_in(memory, folder, wait: bool, quiet: bool, spawn: bool = True):
    """Read a vault's edits back (`zk import DIR`, `zk sync DIR`), then queue what changed for the model,
    as `zk edit` and `zk import` do."""
    from ..ingest.vault_sync import take_in
    from ..runtime.worker import step_lock
    from ..tiers.service import Tiers
    from . import render

    with render.progress(transient=True, disable=quiet) as bar:
        task = bar.add_task("reading the vault", total=None)
        report = take_in(memory, folder, guard=lambda: step_lock(memory.home),
                         on_progress=lambda done, total: bar.update(task, completed=done, total=total))
    tiers = Tiers(memory)
    for session_id in report.edited_sessions:  # summarised from the old text: summarise it again
        tiers.sessions.requeue(session_id)
    changed = bool(report.added or report.edited or report.conflicts)
    _queue_after_import(memory, report.session_ids, spawn_worker=changed and spawn and not wait)
    if wait and changed:
        _process_foreground(memory, quiet)
    return report


def _vault_out(memory, folder, quiet: bool) -> dict:
    from ..ingest.vault import export_vault
    from . import render

    tiers = _tiers_of(memory)
    episodes = [e for e in tiers.store.episodes(memory.notebook) if e.status != "pruned"]
    entities = tiers.store.entities(memory.notebook)
    relations = tiers.store.relations(memory.notebook)
    with render.progress(transient=True, disable=quiet) as bar:
        task = bar.add_task("writing the vault", total=None)
        return export_vault(memory, folder, episodes, entities, relations,
                            lambda i, n: bar.update(task, completed=i, total=n))


def _prune(memory, deleted: list[dict], yes: bool) -> list[str]:
    """Delete the notes whose pages were deleted in the vault, after asking (or with --yes)."""
    notes = [n for d in deleted if (n := memory.store.get(d["id"])) is not None and n.notebook == memory.notebook]
    if not notes:
        return []
    listed = ", ".join(n.short_id for n in notes[:10]) + (" …" if len(notes) > 10 else "")
    if not yes:
        if sys.stdin is None or not sys.stdin.isatty():
            raise ZkError(f"--prune would delete {len(notes)} note(s) ({listed}); add --yes to delete them "
                          "without asking")
        if not typer.confirm(f"delete {len(notes)} note(s) whose pages were deleted in the vault ({listed})?"):
            raise typer.Exit(1)
    for note in notes:
        _remove_note(memory, note)
    return [n.id for n in notes]


@app.command()
def sync(folder: str = typer.Argument(..., metavar="DIR", help="The vault folder (new, empty, or one zk wrote)."),
         prune: bool = typer.Option(False, "--prune", help="Delete the notes whose pages were deleted in the "
                                    "vault (asks first)."),
         yes: bool = typer.Option(False, "--yes", "-y", help="With --prune: do not ask."),
         wait: bool = typer.Option(False, "--wait", help="Annotate and link edited and new notes now, not in the "
                                   "background."),
         as_json: bool = JSON_OPT) -> None:
    """Two-way sync with an Obsidian vault: edits there become versions, new pages notes.

    The vault is then updated, never overwriting what changed there. A note changed on both sides keeps
    both texts (the vault's newest, zk's one version back); a page deleted there is reported, and --prune
    deletes its note."""
    from pathlib import Path

    from ..ingest.vault import open_vault
    from . import render

    memory = _memory()
    path = Path(folder).expanduser()
    marker = open_vault(path, memory.notebook)  # refuses a folder it must not write into, before reading it
    report, pruned = None, []
    if marker.raw:  # an existing vault (a new or empty folder has nothing to read back)
        report = _vault_in(memory, path, wait, as_json)
        if prune and report.deleted:
            pruned = _prune(memory, report.deleted, yes)
    written = _vault_out(memory, path, as_json)
    if as_json:
        render.print_json({"read": report.to_json() if report else None, "pruned": pruned, "written": written})
    else:
        if report:
            render.vault_read(report, False, pruned)
        render.vault_written(written)
    if report and report.failed:
        raise typer.Exit(3)


@app.command()
def sessions(limit: int | None = typer.Option(None, "--limit", min=1, help="At most N sessions."),
             as_json: bool = JSON_OPT) -> None:
    """Sessions, newest first: imported conversations and journal weeks (`zk add` entries; or days)."""
    from ..tiers.service import Tiers
    from . import render

    found = Tiers(_memory()).sessions.list(limit)
    if as_json:
        render.print_json(found)
    else:
        render.sessions_table(found)


@app.command()
def history(note_id: str = _id_arg(),
            as_json: bool = JSON_OPT) -> None:
    """Every recorded change of a note: what changed, caused by which note, when."""
    from . import render

    note = _memory().resolve(note_id)
    if as_json:
        render.print_json({"id": note.id, "version": note.version, "history": [v.to_dict() for v in note.history]})
    elif note.history:
        render.history_table(note)
    else:
        render.console.print(f"note {note.short_id} has never been changed (version {note.version})")


@app.command()
def revert(note_id: str = _id_arg(),
           to: int | None = typer.Option(None, "--to", help="Version to restore (default: the one before)."),
           as_json: bool = JSON_OPT) -> None:
    """Undo evolution: restore an earlier version (recorded as a new version; nothing is lost)."""
    from . import render

    memory = _memory()
    note = memory.revert(note_id, to)
    if as_json:
        render.print_json(note.to_json(memory.backlinks(note.id), history=[v.to_dict() for v in note.history]))
    else:
        render.console.print(f"note {note.short_id} is now version {note.version} ({note.history[-1].reason})")


@app.command()
def rm(note_id: str = _id_arg(),
       yes: bool = typer.Option(False, "--yes", "-y", help="Do not ask for confirmation."),
       as_json: bool = JSON_OPT) -> None:
    """Delete a note for good: its links both ways, its history, and its text on disk."""
    from . import render

    memory = _memory()
    note = memory.resolve(note_id)
    if not yes and sys.stdin is not None and sys.stdin.isatty() and not typer.confirm(f"delete note {note.short_id}?"):
        raise typer.Exit(1)
    removal = _remove_note(memory, note)
    if as_json:
        render.print_json({"id": note.id, "deleted": True, "unlinked": removal.unlinked,
                           "restored": removal.restored})
    else:
        done = [f"removed links from {len(removal.unlinked)} note(s)"] if removal.unlinked else []
        done += [f"undid its changes to {len(removal.restored)} note(s)"] if removal.restored else []
        render.console.print(f"deleted {note.short_id}" + ("; " + ", ".join(done) if done else ""))


def _remove_note(memory, note):
    """`zk rm` of one note (also `zk sync --prune`): the note, its links, its words in its session's summary."""
    from ..runtime.worker import step_lock
    from ..tiers.service import Tiers

    with step_lock(memory.home):  # a worker must not write back a note or summary read before this
        memory.store.check_writable()  # every table, episodes included: refuse before deleting anything
        removal = memory.remove(note.id)
        try:
            Tiers(memory).promotion.forget_note(note)  # its words must not live on in its session's summary
        except ZkError as exc:
            raise ZkError(f"deleted note {note.short_id}, but its session's summary could not be updated "
                          f"({exc}); `zk doctor` checks the store") from None
    return removal


@app.command()
def export(folder: str | None = typer.Argument(None, metavar="DIR", help="With --format markdown: the vault "
                                               "folder (new, empty, or an earlier export to update)."),
           fmt: str = typer.Option("jsonl", "--format", "-f", help="jsonl (a full backup) or markdown (a folder "
                                   "of notes, episodes and entities for Obsidian)."),
           output: str | None = typer.Option(None, "--output", "-o", help="File (jsonl) or folder (markdown) to "
                                             "write (jsonl default: stdout)."),
           all_notebooks: bool = typer.Option(False, "--all", help="Every notebook (a full backup), not only "
                                              "the current one (-n). jsonl only."),
           as_json: bool = JSON_OPT) -> None:
    """Back up notes, links, versions and sessions as JSONL, or write an Obsidian vault; `zk import` restores
    either.

    The vault has one page per note, episode and entity, linked with [[wikilinks]]. Re-exporting into the
    same folder updates it, never overwriting a file changed there since or one zk did not write (`zk sync
    DIR` also reads the vault's edits back).

    Episodes and the graph are not in the JSONL: restoring queues the sessions again and the worker
    rebuilds them from the raw turns."""
    if fmt not in ("jsonl", "markdown"):
        raise ZkError(f"unknown export format '{fmt}' (jsonl or markdown)")
    if folder and output:
        raise ZkError("give the destination once: DIR or --output")
    target = folder or output
    memory = _memory()
    if fmt == "markdown":
        from pathlib import Path

        from . import render

        if not target:
            raise ZkError("zk export --format markdown needs a folder: zk export --format markdown DIR")
        if all_notebooks:
            raise ZkError("a vault holds one notebook; export each with -n NAME")
        report = _vault_out(memory, Path(target), as_json)
        render.print_json(report) if as_json else render.vault_written(report)
        return
    if folder:
        raise ZkError("a JSONL export goes to a file: use -o FILE (or stdout)")
    from ..ingest.export import export_jsonl

    if output:
        with open(output, "w", encoding="utf-8") as out:
            count = export_jsonl(memory, out, all_notebooks)
        sys.stderr.write(f"exported {count} note(s) to {output}\n")
    else:
        export_jsonl(memory, sys.stdout, all_notebooks)


def _tiers_of(memory):
    from ..tiers.service import Tiers

    return Tiers(memory)


@app.command()
def status(as_json: bool = JSON_OPT) -> None:
    """Where the data lives, how many notes, how many still pending, which models."""
    from . import render

    data = _memory().status()
    if as_json:
        render.print_json(data)
    else:
        for key, value in data.items():
            render.console.print(f"[bold]{key:>9}[/] {render.escape(str(value))}")


@app.command()
def doctor(as_json: bool = JSON_OPT) -> None:
    """Check everything zk needs: config, the store (damage, schema), pending work, the worker, the
    models, the llama.cpp build and disk space. One line each; exit code 1 if anything needs you."""
    from . import render
    from .doctor import checks

    findings = checks(State.home)
    if as_json:
        render.print_json({"ok": all(f.ok for f in findings), "checks": [f.to_json() for f in findings]})
    else:
        render.findings(findings)
    if not all(f.ok for f in findings):
        raise typer.Exit(1)


@app.command()
def repair(yes: bool = typer.Option(False, "--yes", "-y", help="Restore without asking (for scripts)."),
           output: str | None = typer.Option(None, "--output", "-o", help="Save the readable notes to FILE "
                                             "instead of the home (for a read-only home)."),
           as_json: bool = JSON_OPT) -> None:
    """Recover a damaged store: save every note that can still be read to a file, then, with your consent,
    rebuild only the damaged tables from it (their files kept, never deleted) and re-create meta.json."""
    from pathlib import Path

    from ..storage.health import writable_problem
    from ..storage.repair import plan
    from . import render

    found = plan(_home(), Path(output).expanduser() if output else None)
    if found is None:
        read_only = writable_problem(_home())
        render.print_json({"damaged": False, "read_only": read_only}) if as_json else render.console.print(
            "the store is healthy; nothing to repair" + (f" ({render.escape(read_only)})" if read_only else ""))
        return
    data = {**found.to_json(), "restored": None, "kept": None}
    if not as_json:
        _show_repair_plan(found)
    stop = None
    if found.missing:
        stop = ("nothing readable in the notes table; nothing was changed (is the drive mounted? a backup: "
                "`zk import FILE`)")
    elif found.read_only:
        stop = (f"{found.read_only}: nothing was changed" + (f"; `zk --home NEW import {found.file}` restores the "
                                                              "saved notes elsewhere" if found.file else ""))
    elif not found.embedder:
        _identify_embedder(found)
    if stop is None and not yes:
        asked = sys.stdin is not None and sys.stdin.isatty() and not as_json
        if not (asked and typer.confirm(_repair_question(found))):
            stop = "nothing was changed; `zk repair --yes` repairs it" + (
                f", or `zk --home NEW import {found.file}` restores the saved notes elsewhere" if found.file else "")
    if stop is not None:
        render.print_json(data) if as_json else render.console.print(render.escape(stop), soft_wrap=True)
        raise typer.Exit(1)
    _repair_consented(found, data, as_json)


def _identify_embedder(found) -> None:
    """meta.json is lost and no table records the embedder: the configured one, if it reproduces the
    stored vectors."""
    from ..storage.repair import identify_embedder

    identify_embedder(found, _memory().embedder)


def _repair_question(found) -> str:
    notes = f" with the {len(found.notes.rows)} note(s) read" if found.notes else ""
    tables = ", ".join([*found.tables, *found.emptied]) or "none"
    return (f"rebuild the damaged table(s) ({tables}){notes} and re-create meta.json? (the damaged files are "
            "kept, renamed, next to the new ones)")


def _show_repair_plan(found) -> None:
    """What was read, what comes back in an older state or from a lost commit, and what does not come back."""
    from ..storage.repair import describe_note
    from . import render

    for finding in found.problems:
        render.err_console.print(f"[red]{render.escape(finding.check)}:[/] {render.escape(finding.message)}",
                                 soft_wrap=True)
    for name, rec in found.tables.items():
        what = "note(s)" if name == "notes" else f"{name} row(s)"
        held = (f"version {rec.newest} holds {rec.newest_rows}" if rec.newest is not None
                else "no version file reads, every row comes from the commits' own files")
        line = (f"read {len(rec.rows)} {what}: {held} ({len(rec.versions)} version(s) on disk; {rec.from_older} "
                f"from older versions, {rec.lost} unreadable)")
        saved = f"; saved to {found.file}" if name == "notes" and found.file else ""
        render.console.print(render.escape(line + saved), soft_wrap=True)
        for commit in rec.lost_commits:
            render.console.print(render.escape(_lost_commit_line(name, commit)), soft_wrap=True)
        rows = {r["id"]: r for r in rec.rows}
        for label, ids in (("newest version read back from a lost commit", rec.changed),
                           ("newest version lost, restored as it was before", rec.older)):
            for note_id in ids[:20] if name == "notes" else []:
                render.console.print(f"  {label}: {render.escape(describe_note(rows[note_id]))}", soft_wrap=True)
            if name == "notes" and len(ids) > 20:
                render.console.print(f"  … and {len(ids) - 20} more ({label})")
    for name in found.emptied:
        render.console.print(f"nothing of the {name} table could be read: it starts empty (the worker derives new "
                             "rows from the notes; merges you made by hand do not come back)", soft_wrap=True)


def _lost_commit_line(table: str, commit) -> str:
    line = f"{table} version {commit.version} ({commit.operation}) was lost"
    if commit.rows:
        line += f"; the {len(commit.rows)} row(s) it wrote were read back from its own files"
    if commit.unreadable_files:
        line += f"; {commit.unreadable_files} of its data file(s) are damaged too: what they held is lost"
    if commit.operation == "delete":
        line += "; what it deleted is back (delete it again)"
    elif commit.operation == "unknown" and not commit.rows:
        line += "; its record cannot be read: what it changed is lost"
    elif not commit.rows and not commit.unreadable_files:
        line += "; it wrote no rows: nothing is missing"
    return line


def _repair_consented(found, data: dict, as_json: bool) -> None:
    from ..storage.repair import apply
    from . import render

    report = apply(found)
    store = report.pop("store")
    restored = report["restored"]
    data.update(restored=restored.get("notes", 0), restored_tables=restored, kept=str(report["kept"]))
    read = len(found.notes.rows) if found.notes else 0
    if found.notes and store.count(unfinished=True):  # restored notes with model work left: the worker goes on
        _queue_after_import(_memory(), [], spawn_worker=True)
    if as_json:
        render.print_json(data)
        return
    if found.notes:
        render.console.print(f"restored [green]{restored['notes']}[/] of the {read} note(s) read into a fresh notes "
                             "table", soft_wrap=True)
    for name in (n for n in found.tables if n != "notes"):
        render.console.print(f"restored {restored[name]} {name} row(s) into a fresh {name} table", soft_wrap=True)
    render.console.print(f"meta.json re-created; healthy tables kept as they were; the damaged files are kept in "
                         f"{render.escape(str(report['kept']))}", soft_wrap=True)


def _home():
    from ..core.config import home_dir

    return home_dir(State.home)


# -- upper tiers ------------------------------------------------------------------------------------
def _tiers():
    from ..tiers.service import Tiers

    return Tiers(_memory())


@app.command()
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

    tiers = _tiers()
    result = tiers.context.hints(_read_stdin() if message == "-" else message, recent, limit, min_score)
    instructions = tiers.context.instructions() if with_instructions else ""
    if as_json:
        render.print_json({"query": result.query, "skipped": result.skipped or None, "top_score": result.top_score,
                           "hints": [h.to_json() for h in result.hints], "facts": result.facts,
                           "facts_used": len(result.facts), "block": result.block(instructions)})
    else:
        sys.stdout.write(result.block(instructions))


@app.command()
def expand(item_id: str = _id_arg("Episode id (e…), session id (s…) or note id."),
           as_json: bool = JSON_OPT) -> None:
    """L1: the full episode summary (e…), a session's turns (s…), or a whole note."""
    from . import render

    tiers = _tiers()
    kind, item = tiers.context.expand(item_id)
    if kind == "note":
        _show_note(tiers.memory, item, as_json)
        return
    episode, turns = item
    if as_json:
        data = episode.to_json() if episode else {"session_id": turns[0].session_id, "episode": None}
        render.print_json({**data, "turn_ids": [t.id for t in turns]} if kind == "episode"
                          else {**data, "turns": _notes_json(tiers.memory, turns)})
    elif kind == "episode":
        render.episode_view(episode, turns)
    else:
        if episode:
            render.episode_view(episode, turns)
        render.session_view(turns)


@app.command()
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
    from . import render

    tiers = _tiers()
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
        rel = tiers.graph.restore(restore)
        if as_json:
            render.print_json({"id": rel.id, "current": True, "valid_from": rel.valid_from})
        else:
            render.console.print(f"relation {rel.id[:8]} is current again")
        return
    if merge_into and unmerge:
        raise ZkError("use either --merge-into or --unmerge, not both")
    if entity is None:
        if merge_into or unmerge:
            raise ZkError("--merge-into and --unmerge need an ENTITY")
        rows = tiers.graph.entities()
        render.print_json(rows) if as_json else render.entities_table(rows)
        return
    if merge_into or unmerge:
        changed = tiers.graph.unmerge(entity) if unmerge else tiers.graph.merge(entity, merge_into)
        if as_json:
            render.print_json(changed.to_json())
        else:
            render.console.print(f"'{render.escape(changed.name)}' " + (
                "stands alone again" if unmerge else f"is now the same entity as '{render.escape(merge_into)}'"))
        return
    view = tiers.graph.view(entity, depth, _when(at))
    render.print_json(view) if as_json else render.console.print(render.graph_tree(view))


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


session_app = typer.Typer(no_args_is_help=True, help="Close sessions into episodes, or summarise one again.")
app.add_typer(session_app, name="session")


@session_app.command("close")
def session_close(ids: list[str] = typer.Argument(None, metavar="[ID]...", help="Session (s…) or episode (e…) "
                                                  "ids; default: this week's (or day's) journal."),
                  wait: bool = typer.Option(False, "--wait", help="Summarise now, in the foreground."),
                  as_json: bool = JSON_OPT) -> None:
    """Mark sessions complete: they are summarised into episodes (by the background worker, or now)."""
    from ..core.models import journal_period, now_iso, session_id_for
    from ..runtime.worker import step_lock, work_lock
    from . import render

    tiers = _tiers()
    memory = tiers.memory
    targets = [tiers.sessions.resolve(i) for i in ids] if ids else [
        session_id_for(memory.notebook, journal_period(now_iso(), memory.settings.journal_session).key)]
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


@session_app.command("resummarize")
def session_resummarize(item_id: str = typer.Argument(..., metavar="ID", help="Session (s…) or episode (e…) id."),
                        as_json: bool = JSON_OPT) -> None:
    """Summarise a session again from its raw turns (never from the old summary) and re-extract its facts."""
    from ..runtime.worker import work_lock
    from . import render

    tiers = _tiers()
    with work_lock(tiers.memory, wait=True):
        result = tiers.promotion.resummarize(item_id)
    episode = tiers.store.episode(result.id)
    if as_json:
        render.print_json({**episode.to_json(), "result": result.__dict__})
    else:
        render.episode_view(episode, [])
    if result.error:
        raise typer.Exit(1)


@app.command()
def prune(older_than: str = typer.Option(..., "--older-than", help="Age, e.g. 180d, 26w, 6m, 1y."),
          as_json: bool = JSON_OPT) -> None:
    """Remove episode summaries that ended before the given age. Raw notes and graph facts stay."""
    from . import render

    removed = _tiers().promotion.prune(older_than)
    if as_json:
        render.print_json({"pruned": removed})
    else:
        render.console.print(f"pruned {len(removed)} episode summar{'y' if len(removed) == 1 else 'ies'}; "
                             "raw notes and graph facts kept")


@app.command()
def stats(as_json: bool = JSON_OPT) -> None:
    """Counts per tier, and how `zk context` has been doing (hints per call, top scores)."""
    from . import render

    data = _tiers().stats()
    render.print_json(data) if as_json else render.stats_view(data)


@app.command()
def completion(shell: str = typer.Argument(..., help="bash, zsh, fish or powershell.")) -> None:
    """Print the shell completion script (commands, options and note ids), e.g.
    `zk completion bash > ~/.local/share/bash-completion/completions/zk`, or `eval "$(zk completion zsh)"`.
    `zk --install-completion` installs it for the shell you are in."""
    from typer._completion_shared import get_completion_script  # Typer's script; no public name for it

    if shell not in ("bash", "zsh", "fish", "powershell", "pwsh"):
        raise ZkError(f"unknown shell '{shell}' (bash, zsh, fish or powershell)")
    sys.stdout.write(get_completion_script(prog_name="zk", complete_var="_ZK_COMPLETE", shell=shell).rstrip() + "\n")


@app.command()
def mcp(http: int | None = typer.Option(None, "--http", min=1, max=65535, metavar="PORT",
                                        help="Serve streamable HTTP on 127.0.0.1:PORT instead of stdio (every "
                                             "request needs the notebook's bearer token)."),
        print_token: bool = typer.Option(False, "--print-token", help="Print the notebook's bearer token for "
                                         "--http (made on first use, kept 0600 in the data dir) and exit."),
        new_token: bool = typer.Option(False, "--new-token", help="Replace the token with a new one (clients "
                                       "holding the old one are refused) and print it."),
        as_json: bool = JSON_OPT) -> None:
    """Serve this notebook's memory to agents over MCP (stdio by default).

    MCP is the Model Context Protocol. Tools: add_note, search, context, expand, graph, show, links, ask;
    notes as zk://note/{id}. The server is bound to the notebook chosen with -n."""
    from ..core.config import home_dir
    from ..mcp.server import TOKEN_FILE, serve, token_for

    if print_token or new_token:
        home = home_dir(State.home)
        token = token_for(home, State.notebook, new=new_token)
        if as_json:
            from . import render

            render.print_json({"notebook": State.notebook, "token": token, "file": str(home / TOKEN_FILE)})
        else:
            sys.stdout.write(token + "\n")
        return
    from ..runtime.worker import spawn

    token = token_for(home_dir(State.home), State.notebook) if http is not None else None
    if http is not None:
        sys.stderr.write(f"zk: MCP server for notebook '{State.notebook}' on http://127.0.0.1:{http}/mcp; send "
                         f"'Authorization: Bearer TOKEN' (`zk -n {State.notebook} mcp --print-token`)\n")
    serve(State.home, State.notebook, http, spawn_worker=spawn, token=token)


def _one_line(message: str) -> str:
    """An error is one line: control characters the user typed (a CR in a date) are shown escaped, and
    known secrets (the model server's API key, a URL password) masked."""
    from ..core.errors import mask_secrets

    message = mask_secrets(message)
    return "".join(ch if ch.isprintable() else ch.encode("unicode_escape").decode("ascii")
                   for ch in message.strip())


def _interrupted(detail: str = "") -> None:
    """Ctrl-C: one line, then exit at once. Every write is already committed (or never started), so
    the interpreter's slow teardown (unloading the model, LanceDB's threads; ~2 s here) is skipped."""
    sys.stderr.write("zk: interrupted" + (f"; {detail}" if detail else "") + "\n")
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except (OSError, ValueError):
            pass
    os._exit(130)


_HELD_WARNINGS: list[str] = []  # DamageWarnings, said when the command ends


def _install_warning_line() -> None:
    """`ZkWarning`s (unknown config keys, a store that can only be read) are one line each on stderr."""
    import warnings

    from ..core.errors import DamageWarning, ZkNotice, ZkWarning

    warnings.simplefilter("always", ZkWarning)
    if getattr(warnings.showwarning, "__name__", "") == "_zk_showwarning":
        return
    original = warnings.showwarning

    def _zk_showwarning(message, category, *rest, **kwargs) -> None:
        if issubclass(category, DamageWarning):
            _HELD_WARNINGS.append(f"zk: warning: {_one_line(str(message))}\n")
        elif issubclass(category, ZkWarning):
            label = "note" if issubclass(category, ZkNotice) else "warning"
            sys.stderr.write(f"zk: {label}: {_one_line(str(message))}\n")
        else:
            original(message, category, *rest, **kwargs)

    warnings.showwarning = _zk_showwarning


def _say_held_warnings(error: Exception | None = None) -> None:
    """The damage warnings of this command, unless it failed on the damage itself (its error says it)."""
    from ..core.errors import StoreDamaged

    if not isinstance(error, StoreDamaged):
        sys.stderr.writelines(_HELD_WARNINGS)
    _HELD_WARNINGS.clear()


def advice_for(exc: Exception) -> str:
    """What to run next, for the kinds of failure where a command helps (the library's messages say only
    what happened: the same errors reach MCP clients and scripts)."""
    from ..core.errors import NoteTooLong, StoreDamaged, StoreUnreachable

    if isinstance(exc, StoreUnreachable):
        return ("; is the network up and the endpoint right (AWS_ENDPOINT_URL or store_endpoint)? Reads need "
                "the store (`zk add` keeps notes in the local outbox meanwhile)")
    if isinstance(exc, StoreDamaged):
        return "; run `zk doctor`, then `zk repair`" if exc.refused_write else "; `zk doctor` checks the store"
    if isinstance(exc, NoteTooLong):
        return "; split it into smaller notes (`zk import FILE` stores each line of a text file as its own note)"
    return ""


def main() -> None:
    """Entry point: one clear line on stderr and a non-zero exit for every expected failure."""
    _install_warning_line()
    _HELD_WARNINGS.clear()  # an earlier main() in this process (tests) ended without saying them
    try:
        code = typer.main.get_command(app).main(prog_name="zk", standalone_mode=False)
        _say_held_warnings()
        if isinstance(code, int) and code:  # click returns (not raises) Exit codes in this mode
            sys.exit(code)
    except ZkError as exc:
        _say_held_warnings(exc)
        sys.stderr.write(f"zk: error: {_one_line(str(exc) + advice_for(exc))}\n")
        sys.exit(1)
    except (KeyboardInterrupt, EOFError):
        _interrupted()
    except BrokenPipeError:
        sys.exit(0)
    except SystemExit:
        _say_held_warnings()
        raise
    except Exception as exc:  # noqa: BLE001 - last resort: never show a traceback to a user
        _say_held_warnings()
        # Typer vendors its own click; its usage errors are recognised by shape, not by class.
        if type(exc).__name__ == "NoArgsIsHelpError":  # bare `zk`: show the help, like --help
            sys.stdout.write(exc.format_message().removeprefix("Usage: ").join(["Usage: ", "\n"]))
            sys.exit(0)
        if hasattr(exc, "format_message") and hasattr(exc, "exit_code"):
            sys.stderr.write(f"zk: error: {_one_line(exc.format_message())}\n")
            sys.exit(exc.exit_code or 2)
        if type(exc).__name__ in ("Abort", "Exit"):
            sys.stderr.write("zk: interrupted\n") if type(exc).__name__ == "Abort" else None
            sys.exit(getattr(exc, "exit_code", 1) or (1 if type(exc).__name__ == "Abort" else 0))
        if os.environ.get("ZK_DEBUG"):
            raise
        sys.stderr.write(f"zk: internal error: {type(exc).__name__}: {_one_line(str(exc))} "
                         "(set ZK_DEBUG=1 for details)\n")
        sys.exit(2)
