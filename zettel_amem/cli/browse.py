"""Commands that list what a notebook holds: list, on, tags, sessions, stats (views.py reads them)."""

from __future__ import annotations

import sys

import typer

from .common import JSON_OPT, date_option, notes_json, open_memory, open_tiers


def list_notes(since: str | None = typer.Option(None, "--since", help="Only notes at or after this date "
                                                "(2026-03-01, 어제, last friday, 2 weeks ago …)."),
               until: str | None = typer.Option(None, "--until", help="Only notes before this date."),
               tag: str | None = typer.Option(None, "--tag", help="Only notes with this #tag of yours."),
               limit: int | None = typer.Option(None, "--limit", min=1, help="At most N notes."),
               as_json: bool = JSON_OPT) -> None:
    """Notes, newest first, one line each."""
    from ..views import Views
    from . import render

    memory = open_memory()
    notes = Views(memory).notes(date_option(since, "since"), date_option(until, "until"), limit, tag=tag)
    if as_json:
        render.print_json(notes_json(memory, notes))
    else:
        render.notes_list(notes)


def on(date: str = typer.Argument(..., metavar="DATE", help="A day: 2026-03-29, yesterday, last friday, 어제, "
                                  "그저께, 지난주 금요일, 3일 전 …; a month or year (지난달, last year): all of it."),
       tag: str | None = typer.Option(None, "--tag", help="Only notes with this #tag of yours."),
       as_json: bool = JSON_OPT) -> None:
    """The notes of one day, oldest first."""
    from ..views import Day, Views
    from . import render

    day = Day.of(date)  # a date that cannot be read fails before the notebook opens
    if day.note:
        sys.stderr.write(f"zk: note: {day.note}\n")
    memory = open_memory()
    notes = Views(memory).day(day, tag=tag)
    if as_json:
        render.print_json(notes_json(memory, notes))
        return
    render.day_header(day.date, len(notes), day.label)
    render.notes_list(notes)


def tags(as_json: bool = JSON_OPT) -> None:
    """Your own #tags (written in notes), with how many notes carry each; the model's tags are not listed."""
    from ..views import Views
    from . import render

    rows = Views(open_memory()).tags()
    render.print_json(rows) if as_json else render.tags_table(rows)


def sessions(limit: int | None = typer.Option(None, "--limit", min=1, help="At most N sessions."),
             as_json: bool = JSON_OPT) -> None:
    """Sessions, newest first: imported conversations and journal weeks (`zk add` entries; or days)."""
    from . import render, render_tiers

    found = open_tiers().sessions.list(limit)
    if as_json:
        render.print_json(found)
    else:
        render_tiers.sessions_table(found)


def stats(as_json: bool = JSON_OPT) -> None:
    """Counts per tier, and how `zk context` has been doing (hints per call, top scores)."""
    from . import render

    data = open_tiers().stats()
    render.print_json(data) if as_json else render.stats_view(data)
