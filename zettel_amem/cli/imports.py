"""Commands that move notes in and out, and finish the model's work on them: process, import, sync, export."""

from __future__ import annotations

import sys

import typer

from ..core.errors import NotErased, ZkError
from ..ingest import formats  # the import formats' names (their parsers load on use)
from .common import JSON_OPT, State, confirm_deletion, open_memory, tiers_of
from .notes import not_erased_line, remove_note

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


def process(limit: int | None = typer.Option(None, "--limit", help="Process at most N notes."),
            quiet: bool = typer.Option(False, "--quiet", "-q", help="No progress output."),
            background: bool = typer.Option(False, "--background", hidden=True),
            jobs: int | None = JOBS_OPT,
            as_json: bool = JSON_OPT) -> None:
    """Finish pending work now: notes (construction, links, evolution), then sessions into episodes."""
    from . import render, render_tiers

    memory = open_memory()
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
            render_tiers.episode_summary(episodes)
    if any(r.error for r in [*results, *episodes]):
        raise typer.Exit(1)


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
    from ..ingest.importer import backup_kind, open_source
    from . import render

    memory = open_memory()
    stream = open_source(source, sys.stdin.buffer)  # a pipe (`<(...)`, /dev/stdin) is read exactly once
    kind, stream = backup_kind(stream, fmt)
    if kind in ("vault", "export"):
        _restore(memory, kind, stream, wait and not no_llm, quiet, as_json, spawn=not no_llm)
        return
    enrich = True if enrich else None  # None: the enrich_turns setting
    report = _import_turns(memory, stream, fmt, "stdin" if source == "-" else source, enrich, quiet or as_json)
    if not quiet and not as_json:
        render.import_summary(report)
    jobs = _jobs(memory, jobs) if not no_llm else 1
    queue_after_import(memory, report.session_ids,
                       spawn_worker=not wait and not no_llm and bool(report.session_ids), jobs=jobs)
    if wait and not no_llm:
        _process_foreground(memory, quiet or as_json, jobs=jobs)
    if as_json:
        render.print_json(report.to_json())
    if report.failed:
        raise typer.Exit(3)  # imported what it could; something was skipped


def _import_turns(memory, stream, fmt: str, name: str, enrich: bool | None, quiet: bool):
    """`zk import` of a chat log or notes, with a progress bar unless `quiet`; the import's report."""
    from ..ingest.importer import import_source
    from . import render

    if quiet:
        return import_source(memory, stream, fmt, source_name=name, enrich=enrich)
    with render.progress() as bar:
        task = bar.add_task("importing turns", total=None)
        how = "detected" if fmt == "auto" else "given"
        return import_source(memory, stream, fmt, source_name=name, enrich=enrich,
                             on_progress=lambda done, total: bar.update(task, completed=done, total=total),
                             on_format=lambda found: bar.update(task, description=f"importing {found} ({how})"))


def _restore(memory, kind: str, stream, wait: bool, quiet: bool, as_json: bool, spawn: bool) -> None:
    """`zk import` of a backup: a vault (the same notes back with their ids, and the edits made in it) or a
    JSONL export. Exit code 3 when something could not be restored."""
    from . import render

    if kind == "vault":
        with _vault_locked(memory, stream):
            report = _vault_in(memory, stream, wait, quiet or as_json, spawn=spawn)
        render.print_json(report.to_json()) if as_json else render.vault_read(report, quiet)
        if report.failed:
            raise typer.Exit(3)
        return
    from ..ingest.export import restore

    report = restore(memory, stream, notebook=memory.notebook if State.notebook_given else None)
    # Episodes are rebuilt from the restored chats; restored pending notes are finished.
    queue_after_import(memory, report["session_ids"], spawn_worker=bool(report["added"]))
    render.print_json(report) if as_json else render.export_restored(report)
    if report["failed"]:
        raise typer.Exit(3)


def queue_after_import(memory, session_ids: list[str], spawn_worker: bool, jobs: int = 1) -> None:
    """Queue the imported sessions' episodes, then start the worker unless this command does the work."""
    from ..tiers.service import Tiers

    Tiers(memory).after_import(session_ids, spawn_worker, jobs)


def _vault_locked(memory, folder):
    """The vault's lock (one sync, import or export of a vault at a time), saying so when it must wait."""
    from ..ingest.vault import vault_lock

    def waiting() -> None:
        sys.stderr.write(f"zk: another zk sync of {folder} is running; waiting for it to finish\n")

    return vault_lock(memory.home, folder, waiting)


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
    queue_after_import(memory, report.session_ids, spawn_worker=changed and spawn and not wait)
    if wait and changed:
        _process_foreground(memory, quiet)
    return report


def _vault_out(memory, folder, quiet: bool) -> dict:
    from ..ingest.vault import export_vault
    from . import render

    tiers = tiers_of(memory)
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
        confirm_deletion(f"delete {len(notes)} note(s) whose pages were deleted in the vault ({listed})?",
                         f"--prune would delete {len(notes)} note(s) ({listed}); add --yes to delete them "
                         "without asking")
    kept = [(n, why) for n in notes if (why := remove_note(memory, n).not_erased) is not None]
    if kept:  # deleted, but a full disk kept their old text in the files
        raise NotErased(not_erased_line([n for n, _ in kept], kept[0][1]))
    return [n.id for n in notes]


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
    from ..storage.locks import require_writable
    from . import render

    memory = open_memory()
    require_writable(memory.home)  # a read-only home: the one line, before the vault is read or written
    path = Path(folder).expanduser()
    with _vault_locked(memory, path):  # from reading the marker to writing it: a second sync sees this one's work
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


def export(folder: str | None = typer.Argument(None, metavar="DIR", help="With --format markdown: the vault "
                                               "folder (new, empty, or an earlier export to update)."),
           fmt: str = typer.Option("jsonl", "--format", "-f", help="jsonl (a full backup) or markdown (a folder "
                                   "of notes, episodes and entities for Obsidian)."),
           output: str | None = typer.Option(None, "--output", "-o", help="File (jsonl) or folder (markdown) to "
                                             "write (jsonl default, or -: stdout)."),
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
    memory = open_memory()
    if fmt == "markdown":
        from pathlib import Path

        from . import render

        if not target:
            raise ZkError("zk export --format markdown needs a folder: zk export --format markdown DIR")
        if all_notebooks:
            raise ZkError("a vault holds one notebook; export each with -n NAME")
        with _vault_locked(memory, Path(target).expanduser()):
            report = _vault_out(memory, Path(target), as_json)
        render.print_json(report) if as_json else render.vault_written(report)
        return
    if folder:
        raise ZkError("a JSONL export goes to a file: use -o FILE (or stdout)")
    from pathlib import Path

    from ..ingest.export import export_jsonl, write_backup

    if output and output != "-":  # `-o -`: standard output, as without -o
        count = write_backup(memory, Path(output), all_notebooks)
        sys.stderr.write(f"exported {count} note(s) to {output}\n")
        return
    try:
        export_jsonl(memory, sys.stdout, all_notebooks)
        sys.stdout.flush()
    except BrokenPipeError:  # `zk export | head`: main() ends quietly
        raise
    except OSError as exc:  # stdout on a full disk (`> /mnt/full/backup.jsonl`)
        raise ZkError(f"cannot write the backup to standard output: {exc.strerror or exc}") from None
