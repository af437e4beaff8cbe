"""Markdown notes (a file, a stream or a folder such as an Obsidian vault): one note per block, front
matter for dates and titles."""

from __future__ import annotations

import io
import re
from collections.abc import Iterator
from datetime import datetime
from pathlib import Path
from typing import BinaryIO

from .detect import BY_PATH, Probe
from .folder import Refused, read_inside, walk_files
from .turns import (
    Item,
    ParseProblem,
    Turn,
    check_turn,
    iter_lines,
    maybe_datetime,
)

# Front-matter fields that give a note its date (else the file's mtime, which changes with every edit;
# formats.py: only these make the time part of a turn's identity).
DATED_BY = ("date", "created", "created_at")
_HEADING_RE = re.compile(r"#{1,6}(\s|$)")
_FENCE_RE = re.compile(r"(`{3,}|~{3,})")


def _unquote(value: str) -> str:
    value = value.strip()
    if len(value) >= 2 and value[0] == value[-1] and value[0] in "'\"":
        return value[1:-1]
    return value


def _front_matter(lines: list[str]) -> tuple[dict[str, str], int]:
    """Simple YAML front matter -> ({key: value}, number of lines consumed).

    Supports `key: value`, `key: [a, b]` and `key:` followed by `- item` lines; lists
    become comma-joined strings. Anything fancier is kept as its raw text.
    """
    if not lines or lines[0].strip() != "---":
        return {}, 0
    end = next((i for i in range(1, len(lines)) if lines[i].strip() in ("---", "...")), None)
    if end is None:
        return {}, 0  # no closing fence: it was a horizontal rule, not front matter
    fields: dict[str, str] = {}
    lists: dict[str, list[str]] = {}
    current: str | None = None
    for raw in lines[1:end]:
        if not raw.strip() or raw.lstrip().startswith("#"):
            continue
        item = raw.strip()
        if current is not None and item.startswith("- "):
            lists.setdefault(current, []).append(_unquote(item[2:]))
            continue
        if raw[:1].isspace():
            continue  # nested mapping values: not supported, ignored
        key, sep, value = raw.partition(":")
        if not sep or not key.strip():
            current = None
            continue
        key, value = key.strip(), value.strip()
        current = key
        if value.startswith("[") and value.endswith("]"):
            lists[key] = [_unquote(v) for v in value[1:-1].split(",") if v.strip()]
        elif value:
            fields[key] = _unquote(value)
            current = None
    for key, values in lists.items():
        fields[key] = ",".join(values)
    return fields, end + 1


def _markdown_blocks(lines: list[str], first: int) -> Iterator[tuple[int, str]]:
    """(1-based start line, text) per paragraph; headings join the paragraph after them."""
    block: list[str] = []
    start = 0
    pending: tuple[int, str] | None = None  # heading-only block waiting for its paragraph
    fence: str | None = None

    def flush() -> Iterator[tuple[int, str]]:
        nonlocal block, pending
        text = "\n".join(block).strip()
        block = []
        if not text:
            return
        if pending is not None:
            text = f"{pending[1]}\n\n{text}"
            begin = pending[0]
            pending = None
        else:
            begin = start
        if all(_HEADING_RE.match(x.lstrip()) for x in text.splitlines() if x.strip()):
            pending = (begin, text)
        else:
            yield begin, text

    for offset, line in enumerate(lines):
        lineno = first + offset
        m = _FENCE_RE.match(line.lstrip())
        if fence is None and m:
            fence = m[1][0] * 3
        elif fence is not None and line.lstrip().startswith(fence):
            fence = None
        if fence is None and not line.strip():
            yield from flush()
            continue
        if not block:
            start = lineno
        block.append(line)
    yield from flush()
    if pending is not None:
        yield pending


def _parse_markdown_doc(
    stream: BinaryIO, session_key: str, label: str | None, mtime: datetime | None
) -> Iterator[Item]:
    prefix = f"{label}: " if label else ""
    lines: list[str] = []
    for lineno, line in iter_lines(stream):
        if isinstance(line, ParseProblem):
            yield ParseProblem(line.line, prefix + line.message)
            continue
        # Skipped lines become blank so paragraphs and line numbers stay where they were.
        while len(lines) < lineno - 1:
            lines.append("")
        lines.append(line)
    fields, consumed = _front_matter(lines)
    at = None
    for key in DATED_BY:
        if key in fields:
            at = maybe_datetime(fields[key])
            if at:
                break
    at = at or mtime
    title = fields.get("title")
    body = lines[consumed:]
    if title is None:
        title = next((x.lstrip("#").strip() for x in body if re.match(r"#\s", x)), None)
    if title is None and label:
        title = Path(label).stem
    index = 0
    for start, text in _markdown_blocks(body, consumed + 1):
        turn = Turn(text, None, at, session_key, title, index, start, dict(fields))
        problem = check_turn(turn)
        if problem:
            yield ParseProblem(start, prefix + problem.message)
            continue
        yield turn
        index += 1


def parse_markdown(source: Path | BinaryIO, default_session: str) -> Iterator[Item]:
    if not isinstance(source, Path):
        yield from _parse_markdown_doc(source, default_session, None, None)
        return
    if not source.is_dir():
        mtime = datetime.fromtimestamp(source.stat().st_mtime)
        with source.open("rb") as fh:
            yield from _parse_markdown_doc(fh, source.name, source.name, mtime)
        return
    # A folder may come from anywhere (a synced vault, a clone, a zip): only its regular files are read,
    # a link only if it stays inside it, each with a size cap (folder.py); the rest is one line each.
    for path in walk_files(source, (".md", ".markdown")):
        rel = path.relative_to(source).as_posix()
        try:
            data = read_inside(source, path)
            mtime = datetime.fromtimestamp(path.stat().st_mtime)
        except Refused as exc:
            yield ParseProblem(None, str(exc))
            continue
        except OSError as exc:
            # One unreadable note must not abort a whole vault import.
            yield ParseProblem(None, f"{rel}: cannot read file ({exc.strerror or exc}); skipped")
            continue
        yield from _parse_markdown_doc(io.BytesIO(data), rel, rel, mtime)


def detect(probe: Probe) -> int | None:
    """A folder (a vault) or a `.md` file, whatever it holds."""
    return BY_PATH if probe.is_folder_or_suffix(".md", ".markdown") else None
