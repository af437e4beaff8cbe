"""Commands about the installation and the store: status, doctor, repair, completion, mcp, and the resident
server (`zk server status|start|stop`)."""

from __future__ import annotations

import sys

import typer

from ..core.errors import ZkError
from ..runtime.resident import describe, server_state
from .common import JSON_OPT, State, home_path, no_notebook, open_memory
from .imports import queue_after_import


def status(as_json: bool = JSON_OPT) -> None:
    """Where the data lives, how many notes, how many still pending, which models."""
    from . import render

    data = open_memory().status()
    state = server_state(home_path())
    data["server"] = state if as_json else describe(state)
    if as_json:
        render.print_json(data)
    else:
        for key, value in data.items():
            render.console.print(f"[bold]{key:>9}[/] {render.escape(str(value))}")


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

    found = plan(home_path(), Path(output).expanduser() if output else None)
    if found is None:
        read_only = writable_problem(home_path())
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

    identify_embedder(found, open_memory().embedder)


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
        queue_after_import(open_memory(), [], spawn_worker=True)
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


def completion(shell: str = typer.Argument(..., help="bash, zsh, fish or powershell.")) -> None:
    """Print the shell completion script (commands, options and note ids), e.g.
    `zk completion bash > ~/.local/share/bash-completion/completions/zk`, or `eval "$(zk completion zsh)"`.
    `zk --install-completion` installs it for the shell you are in."""
    from typer._completion_shared import get_completion_script  # Typer's script; no public name for it

    if shell not in ("bash", "zsh", "fish", "powershell", "pwsh"):
        raise ZkError(f"unknown shell '{shell}' (bash, zsh, fish or powershell)")
    sys.stdout.write(get_completion_script(prog_name="zk", complete_var="_ZK_COMPLETE", shell=shell).rstrip() + "\n")


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


def server(action: str = typer.Argument("status", metavar="[ACTION]",
                                         help="status (the default), start (and wait until it serves) or stop."),
           force: bool = typer.Option(False, "--force", help="stop: end a command it is running (it is "
                                      "killed; what it had committed is kept)."),
           as_json: bool = JSON_OPT) -> None:
    """The resident process that keeps this home warm so commands answer at once: is it running, start, stop."""
    if action not in ("status", "start", "stop"):
        raise ZkError(f"unknown action '{action}' (use status, start or stop)")
    if force and action != "stop":
        raise ZkError("--force goes with stop")
    home = home_path()
    state = _stop_server(home, force) if action == "stop" else \
        {"status": server_state, "start": _start_server}[action](home)
    from . import render

    if as_json:
        render.print_json(state)
    else:
        render.console.print(f"server {render.escape(describe(state))}", soft_wrap=True)


def _start_server(home) -> dict:
    """Start the server now and wait until it serves (any command starts it by itself too)."""
    import time

    from ..runtime.resident import connect, is_notebook, lock_is_held, server_disabled, start_server, why_no_server

    if server_disabled():
        raise ZkError("ZK_NO_SERVER is set: unset it to use a resident server")
    if not home.is_dir() or not is_notebook(home):
        raise no_notebook(home)
    if reason := why_no_server(home):
        raise ZkError(f"cannot start a server: {reason}")
    process = start_server(home)
    deadline = time.monotonic() + 60
    while (connection := connect(home)) is None:
        if process is not None and process.poll() is not None and not lock_is_held(home):
            raise ZkError(f"the server could not start: {_last_log_line(home)}")
        if time.monotonic() > deadline:
            raise ZkError(f"the server did not start within a minute; see {home / 'server.log'}")
        time.sleep(0.1)
    connection.close()
    return server_state(home)


def _last_log_line(home) -> str:
    """The server's last words (its log says why it did not start, in one line)."""
    from ..runtime.resident import LOG_NAME

    try:
        lines = (home / LOG_NAME).read_text(encoding="utf-8", errors="replace").strip().splitlines()
    except OSError:
        lines = []
    last = lines[-1].split(": ", 1)[-1] if lines else "it ended at once"
    return f"{last} (see {home / LOG_NAME})"


def _stop_server(home, force: bool = False) -> dict:
    """Stop the server (a command it is running finishes first; with `force` it is killed after 5 s)."""
    import os
    import signal
    import time

    from ..runtime.resident import lock_is_held

    def signal_and_wait(pid: int, sig: int, seconds: float) -> None:
        try:
            os.kill(pid, sig)
        except (ProcessLookupError, PermissionError):
            return
        deadline = time.monotonic() + seconds
        while lock_is_held(home) and time.monotonic() < deadline:
            time.sleep(0.05)

    state = server_state(home)
    if state["running"] and state.get("pid"):
        signal_and_wait(int(state["pid"]), signal.SIGTERM, 5 if force else 30)
        if force and lock_is_held(home):
            signal_and_wait(int(state["pid"]), signal.SIGKILL, 5)
    after = server_state(home)
    if after["running"]:
        busy = after.get("busy") or {}
        raise ZkError(f"the server (pid {after.get('pid') or '?'}) is still running a command"
                      f"{' (' + busy['command'] + ')' if busy.get('command') else ''}; it stops after it, or "
                      "`zk server stop --force` ends it now")
    return {**after, "stopped": bool(state["running"])}
