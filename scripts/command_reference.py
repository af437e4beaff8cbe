"""Generate the `zk` command reference from the Typer app itself, so it cannot drift (the idea of cog).

    python scripts/command_reference.py            # print the block
    python scripts/command_reference.py --write    # rewrite it in README.md, between the markers
    python scripts/command_reference.py --check    # exit 1 if the file's block is out of date

Why from the app and not from `zk --help` output: the app's commands and parameters are the source of
truth; walking them needs no subprocess and no terminal width. `tests/test_readme.py` checks that the
block in the file equals this output and that every command in it also answers `zk --help`.
"""

from __future__ import annotations

import argparse
import re
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
DEFAULT_FILE = ROOT / "README.md"
START = "<!-- commands:start -->"
END = "<!-- commands:end -->"


def root_command():
    """The click command Typer builds for `zk` (importing the CLI module is lazy: no models load)."""
    if str(ROOT) not in sys.path:
        sys.path.insert(0, str(ROOT))
    import typer

    from zettel_amem.cli import app
    return typer.main.get_command(app)


def _subcommands(cmd) -> list[tuple[str, object]]:
    """Visible sub-commands in the order `--help` lists them (Typer's groups keep definition order)."""
    commands = getattr(cmd, "commands", None) or {}
    return [(name, sub) for name, sub in commands.items() if not getattr(sub, "hidden", False)]


def walk(cmd=None, path: tuple[str, ...] = ()) -> list[tuple[tuple[str, ...], object]]:
    """Every visible command and sub-command, depth first: ((), root), (("add",), add), ..."""
    cmd = cmd if cmd is not None else root_command()
    found = [(path, cmd)]
    for name, sub in _subcommands(cmd):
        found.extend(walk(sub, path + (name,)))
    return found


def one_line_help(cmd) -> str:
    """The first sentence of the help, as `--help` shortens it (a trailing ', e.g.' is dropped)."""
    text = cmd.get_short_help_str(limit=10_000) if cmd.help or cmd.short_help else ""
    return re.sub(r",? e\.g\.$", ".", text.strip())


def _argument(param) -> str:
    if param.metavar and param.metavar.startswith("["):
        return param.metavar  # Typer already wrote an optional, repeated argument ("[ID]...")
    name = param.metavar or param.name.upper()
    name += "..." if param.nargs == -1 else ""
    return name if param.required else f"[{name}]"


def _option(param) -> str:
    names = sorted(param.opts + param.secondary_opts, key=lambda o: (o.startswith("--"), o))
    text = "/".join(names)
    return f"{text} (required)" if param.required else text


def usage(path: tuple[str, ...], cmd) -> str:
    args = [_argument(p) for p in cmd.params if p.param_type_name == "argument"]
    if _subcommands(cmd):
        args.append("COMMAND")
    return " ".join(["zk", *path, *args])


def options(cmd) -> str:
    opts = [p for p in cmd.params if p.param_type_name == "option" and not getattr(p, "hidden", False)]
    return ", ".join(f"`{_option(p)}`" for p in opts)


def _cell(text: str) -> str:
    return text.replace("|", "\\|").replace("\n", " ")


def render(cmd=None) -> str:
    """The Markdown table between the markers (without them)."""
    rows = ["| command | what it does | options |", "|---|---|---|"]
    for path, sub in walk(cmd):
        rows.append(f"| `{_cell(usage(path, sub))}` | {_cell(one_line_help(sub))} | {_cell(options(sub))} |")
    return "\n".join(rows) + "\n"


def block_of(text: str) -> str | None:
    """What a file holds between the markers, or None when it has no (or a broken) block."""
    if text.count(START) != 1 or text.count(END) != 1 or text.index(START) > text.index(END):
        return None
    return text.split(START, 1)[1].split(END, 1)[0].strip("\n") + "\n"


def splice(text: str, block: str) -> str:
    if block_of(text) is None:
        raise SystemExit(f"the file needs exactly one {START} ... {END} pair")
    before, rest = text.split(START, 1)
    after = rest.split(END, 1)[1]
    return f"{before}{START}\n{block}{END}{after}"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--file", type=Path, default=DEFAULT_FILE, help="Markdown file holding the markers.")
    mode = parser.add_mutually_exclusive_group()
    mode.add_argument("--write", action="store_true", help="Rewrite the block in the file.")
    mode.add_argument("--check", action="store_true", help="Exit 1 if the file's block is out of date.")
    args = parser.parse_args(argv)
    block = render()
    if not (args.write or args.check):
        sys.stdout.write(block)
        return 0
    text = args.file.read_text(encoding="utf-8")
    if args.check:
        if block_of(text) == block:
            return 0
        print(f"{args.file}: command reference out of date; run python scripts/command_reference.py --write",
              file=sys.stderr)
        return 1
    new = splice(text, block)
    if new != text:
        args.file.write_text(new, encoding="utf-8")
    print(f"{args.file}: command reference {'updated' if new != text else 'already up to date'}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
