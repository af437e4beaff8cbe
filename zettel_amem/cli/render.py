"""Rich rendering for people (JSON for scripts is written by the CLI directly)."""

from __future__ import annotations

import json
import sys
from collections.abc import Iterable, Iterator
from typing import Any

from rich.console import Console
from rich.markup import escape as _markup_escape
from rich.panel import Panel
from rich.table import Table
from rich.tree import Tree

from ..core.models import Note, ProcessResult, Scope, ServerReach
from ..core.text import one_line, visible
from ..retrieval.retrieve import Hit


def escape(text: str) -> str:
    """Text for Rich markup: `[` escaped, control characters shown (never sent to the terminal raw)."""
    return _markup_escape(visible(text))


# emoji=False: note text is printed as typed ("Press :x: to close" must not become an emoji); markup in
# it is escaped by `escape`.
console = Console(highlight=False, emoji=False)
err_console = Console(stderr=True, highlight=False, emoji=False)


def fresh_consoles() -> None:
    """Make both consoles again, in place, for today's sys.stdout/stderr and environment: a console settles
    its colours and width when it is made, and the resident server (server.py) serves many terminals."""
    console.__init__(highlight=False, emoji=False)
    err_console.__init__(stderr=True, highlight=False, emoji=False)

STATUS_STYLE = {"pending": "yellow", "constructed": "cyan", "ready": "green"}


def print_json(data: Any) -> None:
    sys.stdout.write(json.dumps(data, ensure_ascii=False, indent=2) + "\n")
    sys.stdout.flush()


def _status(note: Note) -> str:
    return f"[{STATUS_STYLE.get(note.status, 'white')}]{note.status}[/]"


def note_line(note: Note, width: int = 90) -> str:
    # The model's tags, dim and without "#": a "#word" on screen is always one the user wrote in the text.
    tags = f" [dim magenta]· {escape(', '.join(note.tags[:3]))}[/]" if note.tags else ""
    return (f"[bold cyan]{escape(note.short_id)}[/] [dim]{escape(note.at[:16].replace('T', ' '))}[/] "
            f"{escape(one_line(note.content, width))}{tags}")


def notes_list(notes: Iterable[Note]) -> None:
    count = 0
    for note in notes:
        flag = "" if note.status == "ready" else f" {_status(note)}"
        # One line per note: cut at the terminal's width (by cells, so Korean stays aligned); piped
        # output keeps the whole line for grep.
        if console.is_terminal:
            console.print(note_line(note) + flag, no_wrap=True, overflow="ellipsis")
        else:
            console.print(note_line(note) + flag, no_wrap=True, crop=False, soft_wrap=True)
        count += 1
    if not count:
        err_console.print("[dim]no notes[/]")


def scope_line(scope: Scope) -> None:
    """Why a search looked only at some notes: the people the query names."""
    people = " and ".join(scope.people)
    mentions = f" and {len(scope.mentions)} note(s) of yours naming them" if scope.mentions else ""
    console.print(f"[dim]Searched {people}'s chats ({len(scope.sessions)} session(s)){mentions}; "
                  "--everywhere searches every note.[/dim]")


def hits_table(hits: list[Hit], title: str | None = None) -> None:
    table = Table(title=title, show_lines=False, expand=False)
    table.add_column("id", style="bold cyan", no_wrap=True)
    table.add_column("score", justify="right")
    table.add_column("date", style="dim", no_wrap=True)
    table.add_column("note")
    for hit in hits:
        via = f"[dim]↳ {'updates' if hit.updates else 'linked from'} {hit.via[:8]}[/] " if hit.via else ""
        score = f"{hit.score:.3f}" if not hit.via else f"[dim]{'newer' if hit.updates else 'link'}[/]"
        repeats = f" [dim](+{hit.repeats} with the same words)[/]" if hit.repeats else ""
        text = " … ".join(one_line(p.text) for p in hit.passages) if hit.passages else one_line(hit.note.content, 100)
        table.add_row(escape(hit.note.short_id), score, escape(hit.note.at[:10]), via + escape(text) + repeats)
    console.print(table)


def show_note(note: Note, backlinks: list[Note], links: list[Note]) -> None:
    body = Table.grid(padding=(0, 1))
    body.add_column(style="bold")
    body.add_column()
    body.add_row("id", escape(note.id))
    body.add_row("at", escape(note.at))
    body.add_row("status", _status(note) + (f"  [red]{escape(note.error)}[/]" if note.error else ""))
    body.add_row("version", str(note.version))
    if note.session_id:
        speaker = f" ({escape(note.speaker)})" if note.speaker else ""
        body.add_row("session", f"{note.session_id} #{note.seq}{speaker}")
    body.add_row("content", escape(note.content))
    if note.passages:
        body.add_row("passages", f"{len(note.passages)}" + "".join(
            f"\n  {escape(d.phrase)} = {d.start if d.start == d.end else f'{d.start}..{d.end}'}"
            f"{' (plan)' if d.plan else ''}" for p in note.passages for d in p.dates))
    body.add_row("context", escape(note.context) or "[dim]-[/]")
    body.add_row("keywords", escape(", ".join(note.keywords)) or "[dim]-[/]")
    body.add_row("your tags", escape(" ".join("#" + t for t in note.user_tags)) or "[dim]-[/]")
    body.add_row("model tags", escape(", ".join(note.tags)) or "[dim]-[/]")
    body.add_row("links →", "\n".join(typed_link(note, n, "→") + note_line(n, 70) for n in links) or "[dim]-[/]")
    body.add_row("← linked by", "\n".join(typed_link(note, n, "←") + note_line(n, 70) for n in backlinks)
                 or "[dim]-[/]")
    if note.updated_by:
        body.add_row("updated by", "\n".join(_value(e) for e in note.updated_by))
    console.print(Panel(body, title=f"note {note.short_id}", title_align="left"))
    if note.history:
        history_table(note)


def _value(item) -> str:
    """One item of a listed field: a term, or a typed update as "PASSAGE ← NEWER PASSAGE" (short ids)."""
    if isinstance(item, dict):
        return f"{_short(item.get('passage', ''))} ← {_short(item.get('by', ''))}"
    return str(item)


def _short(unit_id: str) -> str:
    entry, _, number = unit_id.partition("-p")
    return entry[:8] + (f"-p{number}" if number else "")


def history_table(note: Note) -> None:
    table = Table(title="history", title_justify="left")
    table.add_column("v", justify="right")
    table.add_column("when", style="dim")
    table.add_column("cause")
    table.add_column("field")
    table.add_column("old → new")
    for version in note.history:
        for name, change in version.changes.items():
            old, new = (", ".join(map(_value, v)) if isinstance(v, list) else str(v)
                        for v in (change["old"], change["new"]))
            table.add_row(str(version.version), version.at.replace("T", " "),
                          f"{version.reason} by {version.cause[:8]}" if version.cause else version.reason,
                          name, f"[red]{escape(one_line(old, 60))}[/]\n[green]{escape(one_line(new, 60))}[/]")
    console.print(table)


def typed_link(note: Note, other: Note, arrow: str) -> str:
    """"updates " where the link is typed (supersede.py): `note` updates `other` (→) or the reverse (←)."""
    older, newer = (other, note) if arrow == "→" else (note, other)
    return "[magenta]updates[/] " if any(e["by"].split("-p")[0] == newer.id for e in older.updated_by) else ""


def links_tree(root: Note, expand_fn, depth: int) -> Tree:
    tree = Tree(note_line(root))

    def grow(branch: Tree, note: Note, level: int, seen: set[str]) -> None:
        if level > depth:
            return
        outgoing, incoming = expand_fn(note)
        for arrow, group in (("→", outgoing), ("←", incoming)):
            for other in group:
                child = branch.add(f"[bold]{arrow}[/] " + typed_link(note, other, arrow) + note_line(other, 70))
                if other.id not in seen:
                    grow(child, other, level + 1, seen | {other.id})

    grow(tree, root, 1, {root.id})
    return tree


def process_summary(results: list[ProcessResult]) -> None:
    if not results:
        console.print("[dim]nothing to process[/]")
        return
    done = sum(r.status == "ready" for r in results)
    failed = [r for r in results if r.error]
    links = sum(len(r.links) for r in results)
    evolved = sum(len(r.evolved) for r in results)
    calls = sum(r.llm_calls for r in results)
    refused = sum(len(r.refused) for r in results)
    console.print(f"processed {len(results)} note(s): {done} ready, {links} link(s), {evolved} neighbour(s) "
                  f"evolved ({refused} rewrite(s) refused: not grounded, or evolved enough), {calls} LLM call(s), "
                  f"{sum(r.seconds for r in results):.1f}s")
    for r in failed:
        err_console.print(f"[red]{r.id[:8]} still pending:[/] {escape(r.error)}")


def add_result(note: Note, result: ProcessResult | None, linked: list[Note], evolved: list[Note]) -> None:
    console.print(f"[green]saved[/] {note_line(note)}")
    if result is None:
        return
    if result.error:
        err_console.print(f"[yellow]kept as pending:[/] {escape(result.error)} (run `zk process` later)")
        return
    detail = f" ({result.skipped})" if result.skipped else ""
    console.print(f"[dim]{result.llm_calls} LLM call(s), {result.seconds:.1f}s{detail}[/]")
    for other in linked:
        console.print("  [bold]→[/] " + note_line(other, 70))
    for other in evolved:
        console.print(f"  [yellow]evolved[/] {note_line(other, 60)} [dim]v{other.version}: "
                      f"{escape(one_line(other.context, 60))}[/]")
    for other in linked:
        if other.id in result.updates:
            console.print(f"  [magenta]updates[/] {note_line(other, 60)} [dim](its value is now history)[/]")
    if result.refused:
        console.print(f"  [dim]{len(result.refused)} rewrite(s) refused: sharing no word with the neighbour, or "
                      "the neighbour evolved enough[/]")


def stream_markdown(pieces: Iterator[str]) -> str:
    """Show the answer as Markdown while it streams (plain text when not a terminal)."""
    text = ""
    if not console.is_terminal:
        for piece in pieces:
            text += piece
            sys.stdout.write(visible(piece))
            sys.stdout.flush()
        sys.stdout.write("\n")
        return text
    from rich.live import Live
    from rich.markdown import Markdown

    with console.status("thinking…"):  # the first piece is the whole (short) answer of a JSON reply
        first = next(pieces, "")
    with Live(Markdown(first), console=console, refresh_per_second=12, vertical_overflow="visible") as live:
        text = first
        for piece in pieces:
            text += piece
            live.update(Markdown(visible(text)))
    return text


SURENESS_STYLE = {"sure": "bold green", "likely": "yellow", "unsure": "dim"}


def answer_view(view) -> None:
    """A journal answer as a person checks it (answering/view.py): how sure, the headline, then each
    supporting sentence with its day and entry id ("closest" ones for a question no entry answers)."""
    if not console.is_terminal:
        sys.stdout.write(visible(f"[{view.confidence}] {view.text()}") + "\n")
        return
    style = SURENESS_STYLE.get(view.confidence, "dim")
    console.print(f"[{style}]{view.confidence}[/] [bold]{escape(visible(view.headline))}[/]", soft_wrap=True)
    if view.kind == "declined" and view.supporting:
        console.print("  [dim]closest:[/]")
    for line in view.supporting:
        dates = "; ".join(f"{written} = {day}" for written, day in line.dates)
        said = (f" [dim]({escape(dates)})[/]" if dates else "") + (" [yellow](older)[/]" if line.older else "")
        console.print(f"  [dim]{line.day}[/] [cyan]{line.entry_id[:8]}[/] {escape(visible(line.text))}{said}",
                      soft_wrap=True)


def answer_note(mode: str, reason: str, model: str = "", server: ServerReach | None = None) -> None:
    """Say how an answer was made: by which model, extracted from a note (and why), or declined (and why);
    then, in one line, a configured model server that cannot be reached (unless the reason named it)."""
    if mode == "model":
        said = f"; {reason}" if reason else ""  # e.g. a date held to the notes it cites
        err_console.print(f"[dim](answered by the model {escape(model or '?')}{escape(said)})", soft_wrap=True)
    elif mode == "extractive" and model:
        err_console.print(f"[yellow](extractive: the best sentence of the best note; the model {escape(model)} "
                          f"failed: {escape(reason or 'no reason given')})", soft_wrap=True)
    elif mode == "extractive":
        err_console.print(f"[dim](extractive: {escape(reason or 'no model was called')})", soft_wrap=True)
    elif mode == "declined":
        err_console.print(f"[dim](declined: {escape(reason or 'the notes do not answer it')})", soft_wrap=True)
    if server is not None and not server.reachable and server.address not in reason:
        err_console.print(f"[yellow]the model server at {escape(server.address)} cannot be reached "
                          f"({escape(server.problem)}); is it running? `zk doctor` checks it", soft_wrap=True)


def progress(transient: bool = False, disable: bool = False):
    """A Rich progress bar on stderr with counts and ETA (stdout stays clean for pipes)."""
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeRemainingColumn

    # A transient bar on a stderr that is no terminal would leave only an empty line behind (`zk sync 2>log`).
    disable = disable or (transient and not err_console.is_terminal)
    return Progress(TextColumn("[progress.description]{task.description}"), BarColumn(), MofNCompleteColumn(),
                    TimeRemainingColumn(), console=err_console, transient=transient, disable=disable)


def import_summary(report) -> None:
    console.print(f"format [bold]{report.format}[/]: [green]{report.added} added[/], "
                  f"{report.skipped_duplicates} already present, "
                  f"{len(report.failed)} skipped, {len(report.session_ids)} session(s)")
    problems(report.failed)


def problems(failed: list[dict]) -> None:
    """What an import or a restore skipped or changed, one line each (the first 20)."""
    for problem in failed[:20]:
        where = (f"line {problem['line']}: " if problem.get("line") else
                 f"record {problem['record']}: " if problem.get("record") else "")
        err_console.print(f"[yellow]{where}[/]{escape(problem['message'])}")
    if len(failed) > 20:
        err_console.print(f"[yellow]… and {len(failed) - 20} more[/]")


# -- upper tiers ------------------------------------------------------------------------------------
def stats_view(stats: dict) -> None:
    for section in ("notes", "episodes", "entities", "relations"):
        values = ", ".join(f"{k} {v}" for k, v in stats[section].items())
        console.print(f"[bold]{section:>10}[/] {values}")
    ctx = stats["context"]
    console.print(f"[bold]{'context':>10}[/] {ctx['calls']} call(s), {ctx['skipped_trivial']} trivial skipped, "
                  f"{ctx['no_hint']} with no hint (threshold {ctx['min_score']})")
    if ctx["hints"]:
        console.print("           hints per call: " + ", ".join(f"{k}: {v}" for k, v in ctx["hints"].items()))
    if ctx["top_score"]["p50"] is not None:
        q = ctx["top_score"]
        console.print(f"           top score p10 {q['p10']:.3f} · p50 {q['p50']:.3f} · p90 {q['p90']:.3f}")
    checks = stats.get("note_checks") or {}
    if any(checks.values()):  # what the model wrote that was not true of its note, and was not kept
        console.print(f"[bold]{'not kept':>10}[/] {checks['context']} context(s) (the note's own sentence instead), "
                      f"{checks['keywords']} keyword(s), {checks['tags']} tag(s), {checks['evolution']} rewrite(s) "
                      "of other notes")


def findings(items) -> None:
    """`zk doctor`: one line per check, OK in green or what to do in red."""
    for item in items:
        mark = "[green]  ok[/]" if item.ok else "[red]FAIL[/]"
        console.print(f"{mark} [bold]{escape(item.check)}[/]: {escape(item.message)}", soft_wrap=True)


def tags_table(rows: list[dict]) -> None:
    """`zk tags`: the user's #tags with how many notes carry each."""
    if not rows:
        err_console.print("[dim]no #tags yet: write them in a note, e.g. 오늘 #달리기 10km[/]")
        return
    table = Table(show_header=True)
    table.add_column("tag", style="magenta")
    table.add_column("notes", justify="right")
    table.add_column("last used", style="dim")
    for row in rows:
        table.add_row("#" + escape(row["tag"]), str(row["count"]), row["last"][:10])
    console.print(table)


def day_header(day, count: int, label: str = "") -> None:
    """`zk on DATE`: which day (or month or year: `label`) was understood, before its notes."""
    console.print(f"[bold]{label or f'{day.isoformat()} ({day:%a})'}[/] [dim]{count} note(s)[/]")


def vault_read(report, quiet: bool = False, pruned: list[str] | tuple = ()) -> None:
    """`zk import VAULT` / `zk sync VAULT`: what came back, then one line per page that did something (on
    stderr), the pages of notes from another notebook in one line, and each page skipped."""
    if not quiet:
        console.print(f"read the vault: [green]{report.added}[/] new note(s), {report.edited} edited, "
                      f"{report.conflicts} conflict(s), {report.unchanged + report.skipped_duplicates} unchanged"
                      + (f", {len(report.failed)} page(s) skipped" if report.failed else ""))
    moved = [c for c in report.changes if c["what"] == "other notebook"]
    for change in report.changes:
        if change["what"] != "other notebook":
            colour = {"conflict": "red", "edited": "green", "added": "green"}.get(change["what"], "yellow")
            err_console.print(f"[{colour}]{change['what']}[/] {escape(change['message'])}", soft_wrap=True)
    if moved:
        err_console.print(f"[yellow]new ids[/] {len(moved)} page(s) hold notes of another notebook: imported into "
                          f"'{escape(report.notebook)}' as new notes (the other notebook keeps its own)",
                          soft_wrap=True)
    if pruned:
        err_console.print(f"[red]deleted[/] {len(pruned)} note(s) whose pages were deleted in the vault")
    for problem in report.failed:
        err_console.print(f"[yellow]skipped[/] {escape(problem['message'])}", soft_wrap=True)


def vault_written(report: dict) -> None:
    """`zk export --format markdown DIR` (and the second half of `zk sync`): counts, then each file kept."""
    console.print(f"vault {escape(report['folder'])}: {report['notes']} note(s), {report['episodes']} episode(s), "
                  f"{report['entities']} entities; {report['written']} file(s) written, {report['unchanged']} "
                  f"unchanged, {report['removed']} removed" + (f", {len(report['kept'])} kept" if report["kept"]
                                                                else ""))
    for line in report["kept"]:
        err_console.print(f"[yellow]kept[/] {escape(line)}", soft_wrap=True)


def export_restored(report: dict) -> None:
    """`zk import BACKUP.jsonl`: what was restored, and every record not restored as it was."""
    held = ("notebook " if len(report.get("copied_from") or []) == 1 else "notebooks ") + ", ".join(
        f"'{escape(name)}'" for name in report.get("copied_from") or [])
    console.print(f"restored [green]{report['added']}[/] note(s)"
                  + (f" into notebook '{escape(report['notebook'])}'" if report["notebook"] else "")
                  + (f" ({report['copied']} as new notes with new ids: {held} of this home "
                     f"{'holds' if ',' not in held else 'hold'} their ids)" if report.get("copied") else "")
                  + f", {report['skipped_duplicates']} already present, "
                  f"{len(report['failed'])} not restored as they were")
    problems(report["failed"])
