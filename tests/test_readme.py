"""The README stays a README: small, and its command reference agrees with the app and with `zk --help`.

The reference is generated from the Typer app (`scripts/command_reference.py`, the idea of cog), so a
changed command fails here until the block is regenerated. Every `zk ...` shown in README.md or docs/*.md
must name a command that exists. No model loads: `zk --help` is lazy.
"""

from __future__ import annotations

import importlib.util
import io
import os
import re
import subprocess
import sys
from contextlib import redirect_stdout
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
README = ROOT / "README.md"
DOCS = sorted((ROOT / "docs").glob("*.md"))
MAX_README_BYTES = 15360
# Options of `zk` itself that take a value: skipped to find the command word (`zk -n work add ...`).
GLOBAL_WITH_VALUE = {"--home", "--notebook", "-n", "--model", "-m"}


def _load_reference():
    spec = importlib.util.spec_from_file_location("command_reference", ROOT / "scripts" / "command_reference.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


ref = _load_reference()


def _zk_help(*args: str) -> str:
    """`zk ARGS --help` through the real CLI entry point, in a fresh interpreter running this tree."""
    env = {**os.environ, "PYTHONPATH": str(ROOT) + os.pathsep + os.environ.get("PYTHONPATH", ""),
           "COLUMNS": "200"}
    proc = subprocess.run([sys.executable, "-m", "zettel_amem", *args, "--help"], capture_output=True,
                          text=True, env=env, timeout=60, cwd=ROOT)
    assert proc.returncode == 0, proc.stderr
    return proc.stdout


def _listed_commands(help_text: str) -> set[str]:
    """The names in the `Commands:` section of a --help page."""
    section = help_text.split("\nCommands:\n", 1)[1]
    return {m.group(1) for m in re.finditer(r"^  (\S+)", section, re.MULTILINE)}


def _block_paths(block: str) -> list[tuple[str, ...]]:
    """Command paths of the reference table's rows: `zk session close [ID]...` -> ("session", "close")."""
    paths = []
    for usage in re.findall(r"^\| `zk([^`]*)`", block, re.MULTILINE):
        words = usage.split()
        paths.append(tuple(w for w in words[:next((i for i, w in enumerate(words)
                                                    if not re.fullmatch(r"[a-z][a-z-]*", w)), len(words))]))
    return paths


def test_readme_is_under_15_kb():
    size = len(README.read_bytes())
    assert size < MAX_README_BYTES, f"README.md is {size} bytes; move detail to docs/ (limit {MAX_README_BYTES})"


def test_command_reference_block_is_generated_from_the_app():
    block = ref.block_of(README.read_text(encoding="utf-8"))
    assert block is not None, f"README.md needs one {ref.START} ... {ref.END} block"
    assert block == ref.render(), "command reference is out of date: run python scripts/command_reference.py --write"


def test_reference_covers_every_command_and_option_of_the_app():
    block = ref.block_of(README.read_text(encoding="utf-8"))
    paths = _block_paths(block)
    assert ("session", "close") in paths and ("session", "resummarize") in paths
    assert set(paths) == {path for path, _ in ref.walk()}
    for path, cmd in ref.walk():
        if not path:
            continue
        row = next(line for line in block.splitlines() if line.startswith(f"| `{ref.usage(path, cmd)}`"))
        for param in cmd.params:
            if param.param_type_name == "option" and not getattr(param, "hidden", False):
                assert all(name in row for name in param.opts), (path, param.opts)


def test_reference_agrees_with_zk_help():
    """Every command in the block is listed by the real `zk --help` (and `zk GROUP --help`), and back."""
    paths = _block_paths(ref.block_of(README.read_text(encoding="utf-8")))
    groups = {path[:-1] for path in paths if path}
    for group in groups:
        listed = _listed_commands(_zk_help(*group))
        in_block = {path[-1] for path in paths if len(path) == len(group) + 1 and path[:-1] == group}
        assert in_block == listed, (group, in_block ^ listed)
    assert "close" in _listed_commands(_zk_help("session"))


def _code_of(markdown: str) -> list[str]:
    """Lines of fenced code blocks, and inline code spans of the prose."""
    parts = re.split(r"^```.*$", markdown, flags=re.MULTILINE)
    code = [line for block in parts[1::2] for line in block.splitlines()]
    spans = [span for prose in parts[0::2] for span in re.findall(r"`([^`\n]+)`", prose)]
    return code + spans


def _commands_shown(markdown: str) -> set[tuple[str, ...]]:
    """(command,) or (group, sub-command) for every `zk ...` invocation in code; () for `zk --option`."""
    shown = set()
    for line in _code_of(markdown):
        for match in re.finditer(r"(?:^|[\s|;&($])zk((?:[ \t]+[^\s#|;&)]+)+)", line):
            words = match.group(1).split()
            while words and words[0] in GLOBAL_WITH_VALUE:
                words = words[2:]
            if not words or words[0].startswith("-"):
                shown.add(())
                continue
            if not re.fullmatch(r"[a-z][a-z-]*", words[0]):
                continue  # prose such as "zk 2026" or a placeholder, not a command
            sub = words[1] if words[0] == "session" and len(words) > 1 else ""
            shown.add((words[0], sub) if re.fullmatch(r"[a-z][a-z-]*", sub) else (words[0],))
    return shown


@pytest.mark.parametrize("doc", [README, *DOCS], ids=lambda p: p.name)
def test_every_zk_command_shown_in_the_docs_exists(doc):
    known = {path for path, _ in ref.walk()}
    shown = _commands_shown(doc.read_text(encoding="utf-8"))
    if doc == README:
        assert {("add",), ("ask",), ("edit",)} <= shown  # the parser finds the README's examples
    assert shown - known == set(), f"{doc.name} shows commands zk does not have"
    root = ref.root_command()
    for path in sorted(shown):
        out = io.StringIO()
        with redirect_stdout(out):
            code = root.main([*path, "--help"], prog_name="zk", standalone_mode=False)
        assert code in (0, None) and f"Usage: zk {' '.join(path)}".rstrip() in out.getvalue(), path
