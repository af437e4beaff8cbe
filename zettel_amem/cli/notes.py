"""Commands on one note: add, edit, show, links, history, revert, rm."""

from __future__ import annotations

import sys
from collections.abc import Iterator
from contextlib import contextmanager

import typer

from ..core.errors import ZkError
from ..core.text import is_blank
from .common import JSON_OPT, State, confirm_deletion, date_option, id_arg, notes_json, open_memory, read_stdin
from .main import advice_for, error_line, interrupted


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

    at = date_option(at)
    content, path = _content_of(text, at, template, edit)
    if content is None:
        render.print_json({"id": None, "status": "not added", "reason": "empty or unchanged"}) if as_json else \
            render.err_console.print("nothing added: the note was empty or the template unchanged")
        return
    memory = open_memory()
    with _keeping_text(path):
        note = memory.add(content, at)
    if path:
        from .editor import discard

        discard(path)  # durable in the store (or the offline outbox) now
    _report_added(memory, note, wait, as_json)


@contextmanager
def _keeping_text(path) -> Iterator[None]:
    """Any failure to store what was typed in the editor (`path`; None: not typed there) names the file
    that still holds the text."""
    if path is None:
        yield
        return
    try:
        yield
    except ZkError as exc:
        raise ZkError(f"{exc}{advice_for(exc)} (your text is in {path})") from None
    except Exception as exc:  # noqa: BLE001 - an unexpected failure too: the typed words must be findable
        raise ZkError(f"cannot save the note ({type(exc).__name__}: {exc}); your text is in {path}") from None


def _content_of(text: str | None, at: str | None, template: str | None, edit: bool) -> tuple[str | None, object]:
    """The note's text: the argument, standard input (`-`), or the editor. (text, the editor's file or None);
    text None when the editor came back empty or with the template unchanged."""
    if text is not None and (edit or template):
        raise ZkError("give the note as text or write it in the editor (--edit/--template), not both")
    if text is not None:
        return (read_stdin() if text == "-" else text), None
    if not (edit or template or (sys.stdin is not None and sys.stdin.isatty())):
        raise ZkError("no note given: pass the text, - to read standard input, or --edit to use $EDITOR")
    return _write_in_editor(template, at)


def _report_added(memory, note, wait: bool, as_json: bool) -> None:
    """After the write: the note kept in the outbox, or its model step (now or queued) and what it did."""
    from . import render

    if note.status == "outbox":  # a shared store out of reach: kept locally, sent by the next command
        render.print_json({"id": note.id, "status": "outbox", "reason": note.error}) if as_json else \
            sys.stderr.write(f"zk: {error_line(note.error)}\n")
        return
    try:
        _show_added(memory, note, wait, as_json)
    except ZkError as exc:  # a failure after the write must not read as "not saved" (a retry would double it)
        message = str(exc)
        raise ZkError(message if note.short_id in message else f"note {note.short_id} was saved, but {message}"
                      ) from None
    except KeyboardInterrupt:
        interrupted(f"note {note.short_id} is saved and stays pending, `zk process` finishes it")


def _write_in_editor(template: str | None, at: str | None) -> tuple[str | None, object]:
    """`zk add` without text: the editor on an empty file or a filled-in template. (text, file); text
    None when the file came back empty or as the template was (nothing to add)."""
    from datetime import datetime

    from ..core import dates
    from ..core.config import home_dir, templates_override_dirs
    from ..core.prompts import Prompts
    from ..storage.locks import require_writable
    from .editor import discard, edit_text, same_text

    home = home_dir(State.home)
    initial = ""
    if template:
        when = datetime.fromisoformat(at) if at else dates.now()  # ZK_TODAY pins it, as it pins the note's time
        initial = Prompts(templates_override_dirs(home)).note_template(template, when)
    require_writable(home)  # a read-only home says so before anything is typed in vain
    text, path = edit_text(initial, "new")
    if is_blank(text) or (template and same_text(text, initial)):
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


def _show_added(memory, note, wait: bool, as_json: bool) -> None:
    from . import render

    result = _after_write(memory, note, wait)
    if as_json:
        render.print_json(_result_json(note, result))
        return
    stored, linked, evolved = memory.as_added(note, result)
    render.add_result(stored, result, linked, evolved)


def edit(note_id: str = id_arg(),
         wait: bool = typer.Option(False, "--wait", help="Annotate and link it again now, not in the background."),
         as_json: bool = JSON_OPT) -> None:
    """Fix a note in $VISUAL/$EDITOR. A saved change is a new version (`zk history`, `zk revert`); the note
    is embedded, annotated and linked again (its links are kept). An unchanged file changes nothing."""
    from ..storage.locks import require_writable
    from . import render
    from .editor import discard, edit_text, same_text

    memory = open_memory()
    note = memory.resolve(note_id)
    require_writable(memory.home)  # a read-only home says so before anything is typed in vain
    text, path = edit_text(note.content + "\n", note.short_id)
    if same_text(text, note.content):
        discard(path)
        render.print_json({"id": note.id, "changed": False, "version": note.version}) if as_json else \
            render.err_console.print(f"no change: note {note.short_id} stays at version {note.version}")
        return
    if is_blank(text):
        discard(path)
        raise ZkError(f"the edited note is empty; nothing changed (to delete it: zk rm {note.short_id})")
    from ..runtime.worker import step_lock

    with _keeping_text(path):
        with step_lock(memory.home):  # a worker must not write back the old text it read before this
            updated = memory.edit(note.id, text, expected=note.content)
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


def show(note_id: str = id_arg("Note id, session id (s...) or a unique prefix."),
         as_json: bool = JSON_OPT) -> None:
    """Every field of a note, its links both ways and its version history; or a session's turns."""
    from . import render, render_tiers

    memory = open_memory()
    if note_id.strip().lower().startswith("s"):  # session ids start with "s", note ids are hex
        from ..tiers.service import Tiers

        sessions = Tiers(memory).sessions
        turns = sessions.turns(sessions.resolve(note_id))
        if as_json:
            render.print_json({"session_id": turns[0].session_id, "title": turns[0].source,
                               "turns": notes_json(memory, turns)})
        else:
            render_tiers.session_view(turns)
        return
    show_note(memory, memory.resolve(note_id), as_json)


def show_note(memory, note, as_json: bool) -> None:
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


def links(note_id: str = id_arg(),
          depth: int = typer.Option(1, "--depth", min=1, max=3, help="How many hops to show."),
          as_json: bool = JSON_OPT) -> None:
    """What a note links to (→) and what links to it (←), as a tree."""
    from . import render

    memory = open_memory()
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


def history(note_id: str = id_arg(),
            as_json: bool = JSON_OPT) -> None:
    """Every recorded change of a note: what changed, caused by which note, when."""
    from . import render

    note = open_memory().resolve(note_id)
    if as_json:
        render.print_json({"id": note.id, "version": note.version, "history": [v.to_dict() for v in note.history]})
    elif note.history:
        render.history_table(note)
    else:
        render.console.print(f"note {note.short_id} has never been changed (version {note.version})")


def revert(note_id: str = id_arg(),
           to: int | None = typer.Option(None, "--to", help="Version to restore (default: the one before)."),
           as_json: bool = JSON_OPT) -> None:
    """Undo evolution: restore an earlier version (recorded as a new version; nothing is lost)."""
    from . import render

    memory = open_memory()
    note = memory.revert(note_id, to)
    if as_json:
        render.print_json(note.to_json(memory.backlinks(note.id), history=[v.to_dict() for v in note.history]))
    else:
        render.console.print(f"note {note.short_id} is now version {note.version} ({note.history[-1].reason})")


def rm(note_id: str = id_arg(),
       yes: bool = typer.Option(False, "--yes", "-y", help="Do not ask for confirmation."),
       as_json: bool = JSON_OPT) -> None:
    """Delete a note for good: its links both ways, its history, and its text on disk."""
    from . import render

    memory = open_memory()
    note = memory.resolve(note_id)
    if not yes:
        confirm_deletion(f"delete note {note.short_id}?",
                         f"zk rm deletes note {note.short_id} for good; add --yes to delete it without asking")
    removal = remove_note(memory, note)
    if as_json:
        render.print_json({"id": note.id, "deleted": True, "erased": removal.not_erased is None,
                           "unlinked": removal.unlinked, "restored": removal.restored})
    elif removal.not_erased is None:
        done = [f"removed links from {len(removal.unlinked)} note(s)"] if removal.unlinked else []
        done += [f"undid its changes to {len(removal.restored)} note(s)"] if removal.restored else []
        render.console.print(f"deleted {note.short_id}" + ("; " + ", ".join(done) if done else ""))
    if removal.not_erased is not None:  # deleted, not yet erased from the files: done in part, exit 3
        sys.stderr.write(f"zk: error: {error_line(not_erased_line([note], removal.not_erased))}\n")
        raise typer.Exit(3)


def not_erased_line(notes: list, why: str) -> str:
    """The line for notes deleted whose old text a full disk kept in the store's files."""
    which = notes[0].short_id if len(notes) == 1 else f"{len(notes)} notes"
    its = "its" if len(notes) == 1 else "their"
    return (f"deleted {which}, but {its} old text could not be erased yet ({why}): run `zk doctor` after "
            "freeing space")


def remove_note(memory, note):
    """`zk rm` of one note (also `zk sync --prune`): the note, its links, its words in its session's summary.
    The removal's `not_erased` says why its text is still in the store's files (a full disk), or None."""
    from ..core.errors import NotErased
    from ..runtime.worker import step_lock
    from ..tiers.service import Tiers

    with step_lock(memory.home):  # a worker must not write back a note or summary read before this
        memory.store.check_writable()  # every table, episodes included: refuse before deleting anything
        removal = memory.remove(note.id)
        try:
            Tiers(memory).promotion.forget_note(note)  # its words must not live on in its session's summary
        except NotErased as exc:  # the summary is cleared; its old text waits for an erase, as the note's may
            removal.not_erased = removal.not_erased or str(exc)
        except ZkError as exc:
            raise ZkError(f"deleted note {note.short_id}, but its session's summary could not be updated "
                          f"({exc}); `zk doctor` checks the store") from None
    return removal
