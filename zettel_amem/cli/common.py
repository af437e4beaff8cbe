"""What every command shares: the Typer app with the global options (--home, -n, --model), the notebook
they choose (`open_memory`, `open_tiers`), and the helpers for arguments, dates and JSON output.

The commands live in one module per group (notes, browse, find, imports, tiers, admin) and are registered
from the COMMANDS table in cli/__init__.py. Heavy modules (LanceDB, embedders, llama.cpp) load inside
commands, so `zk --help` stays instant.
"""

from __future__ import annotations

import os
import sys

import typer

from ..core.errors import ZkError

# add_completion: `zk --install-completion` / `--show-completion` (Typer's, for the shell it detects);
# `zk completion SHELL` prints the script for a named shell. Note ids complete from the store.
app = typer.Typer(add_completion=True, no_args_is_help=True, rich_markup_mode=None,
                  help="zk: a local-first Zettelkasten that organises itself (A-MEM).")

JSON_OPT = typer.Option(False, "--json", help="Print JSON for scripts.")
MAX_NOTEBOOK_CHARS = 100


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
    if notebook is not None and (not notebook.strip() or len(notebook) > MAX_NOTEBOOK_CHARS
                                 or any(ord(ch) < 32 or 0xDC80 <= ord(ch) <= 0xDCFF for ch in notebook)):
        raise ZkError(f"a notebook name is 1 to {MAX_NOTEBOOK_CHARS} characters of UTF-8 text, not blank, on one "
                      "line")
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
        from ..views import Views

        root = ctx.find_root().params
        memory = Memory(root.get("home"), notebook=root.get("notebook") or "main")
        return Views(memory).id_completions(incomplete)
    except Exception:  # noqa: BLE001
        return []


def id_arg(help: str = "Note id or unique prefix."):
    """A note-id argument whose ids complete from the store in the shell."""
    return typer.Argument(..., metavar="ID", autocompletion=_complete_id, help=help)


# Commands that only read: on a home that does not exist, or a folder that holds no notebook (`--home .`),
# they say so and create nothing (a mistyped `--home` must not leave an empty store behind that a later
# `zk add` fills by mistake).
READS_ONLY = frozenset({"ask", "search", "list", "on", "tags", "show", "links", "sessions", "history", "export",
                        "status", "context", "expand", "graph", "stats"})


def confirm_deletion(question: str, refusal: str) -> None:
    """Ask `question` before deleting; where no one can be asked (stdin is no terminal) refuse with one line
    (`refusal` names the --yes that deletes without asking), as every deleting command does."""
    if sys.stdin is None or not sys.stdin.isatty():
        raise ZkError(refusal)
    if not typer.confirm(question):
        raise typer.Exit(1)


def open_memory(**kwargs):
    """The notebook chosen with --home and -n (nothing is loaded until it is used)."""
    from ..memory import Memory

    _refuse_missing_home()
    return Memory(State.home, notebook=State.notebook, **kwargs)


def _refuse_missing_home() -> None:
    try:
        from typer._click.globals import get_current_context  # Typer vendors click: its context, not click's
    except ImportError:  # a Typer that uses click itself
        from click import get_current_context

    from ..core.config import home_dir
    from ..core.location import is_store_uri

    context = get_current_context(silent=True)
    given = State.home or os.environ.get("ZK_HOME")
    if context is None or context.info_name not in READS_ONLY or (given and is_store_uri(given)):
        return
    from ..runtime.resident import is_notebook

    home = home_dir(State.home)
    if not home.exists() or not (is_notebook(home) or (home / "config.toml").exists()):
        raise no_notebook(home)


def no_notebook(home) -> ZkError:
    """What a command that needs an existing notebook says of a home that does not exist."""
    return ZkError(f"no notebook at {home}; check --home / ZK_HOME, or start one there with zk add")


def open_tiers():
    """The upper tiers (sessions, episodes, graph) of the chosen notebook."""
    from ..tiers.service import Tiers

    return Tiers(open_memory())


def tiers_of(memory):
    """The upper tiers over a notebook already open."""
    from ..tiers.service import Tiers

    return Tiers(memory)


def home_path():
    """The local data directory chosen with --home (this machine's folder for an object-store home)."""
    from ..core.config import home_dir

    return home_dir(State.home)


def read_stdin() -> str:
    data = sys.stdin.buffer.read()
    try:
        return data.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        raise ZkError(f"standard input is not valid UTF-8 (byte {exc.start})") from None


def notes_json(memory, notes, **extra_for) -> list[dict]:
    """Notes (or hits) as JSON with their real backlinks, found in one scan for all of them."""
    notes = list(notes)
    back = memory.store.backlinks_many([getattr(n, "note", n).id for n in notes])
    return [n.to_json(back.get(getattr(n, "note", n).id, []),
                      **{k: f(n) for k, f in extra_for.items()}) for n in notes]


def date_option(value: str | None, role: str = "at") -> str | None:
    """A date option as ISO time (natural phrases in English or Korean read here); a guessed reading
    ("03/04") is reported in one line on stderr."""
    if value is None:
        return None
    from ..core.dates import resolve

    iso, note = resolve(value, role)
    if note:
        sys.stderr.write(f"zk: note: {note}\n")
    return iso
