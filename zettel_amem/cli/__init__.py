"""`zk`: parse arguments, call the library (`memory.Memory`, `views.Views`, `tiers.service.Tiers`), print.
Nothing else lives here.

One module per group of commands (notes, browse, find, imports, tiers, admin); common.py holds the Typer
app, the global options and the helpers they share; main.py the entry point and its error handling.
Adding a command: write its function in its group's module, then add one row to COMMANDS below (its place
there is its place in `zk --help`).
"""

from __future__ import annotations

import typer

from . import admin, browse, find, imports, notes, tiers
from .common import app
from .main import advice_for, main

# Sub-command groups: name -> the help line of `zk NAME --help`.
GROUPS = {"session": "Close sessions into episodes, or summarise one again."}

# Every command, in the order `zk --help` lists them: (name, function); "GROUP NAME" for a group's command.
COMMANDS = [
    ("add", notes.add),
    ("edit", notes.edit),
    ("ask", find.ask),
    ("search", find.search),
    ("list", browse.list_notes),
    ("on", browse.on),
    ("tags", browse.tags),
    ("show", notes.show),
    ("links", notes.links),
    ("process", imports.process),
    ("import", imports.import_),
    ("sync", imports.sync),
    ("sessions", browse.sessions),
    ("history", notes.history),
    ("revert", notes.revert),
    ("rm", notes.rm),
    ("export", imports.export),
    ("status", admin.status),
    ("doctor", admin.doctor),
    ("repair", admin.repair),
    ("server", admin.server),
    ("context", tiers.context),
    ("expand", tiers.expand),
    ("graph", tiers.graph),
    ("session close", tiers.session_close),
    ("session resummarize", tiers.session_resummarize),
    ("prune", tiers.prune),
    ("stats", browse.stats),
    ("completion", admin.completion),
    ("mcp", admin.mcp),
]


def register(target: typer.Typer) -> None:
    """Add GROUPS and COMMANDS to `target` (Typer lists commands in the order they were added, then groups)."""
    groups = {}
    for name, help_text in GROUPS.items():
        groups[name] = typer.Typer(no_args_is_help=True, help=help_text)
        target.add_typer(groups[name], name=name)
    for name, function in COMMANDS:
        group, _, command = name.rpartition(" ")
        (groups[group] if group else target).command(command)(function)


register(app)

__all__ = ["COMMANDS", "GROUPS", "advice_for", "app", "main"]
