"""The formats `zk import` reads: one registry line each, and the only place their names are written.

A format is a module with a parser (yielding `Turn`s and `ParseProblem`s, never raising for bad
content) and a `detect(probe)` (detect.py: how strong the evidence is that the input is this format,
or None). Adding one is that module plus a line in `REGISTRY`; parsing, auto-detection, the importer's
choices (count or estimate, folders, enrichment) and the `zk import --format` help all read it here.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, BinaryIO

if TYPE_CHECKING:
    from .detect import Probe
    from .turns import Item

# How a parser reads its input.
STREAMED = "streamed"  # parse(binary stream, default_session), line by line: any size
WHOLE = "whole"  # parse(bytes, default_session): one document read into memory (turns counted up front)
FILES = "files"  # parse(path or stream, default_session): a file, a folder of them, or a stream


def _load(ref: str) -> Any:
    """"module:name" (a module relative to this package when it starts with a dot), imported on first use:
    `zk --help` lists the formats without importing a parser."""
    module, _, name = ref.partition(":")
    return getattr(importlib.import_module(module, __package__), name)


@dataclass(frozen=True)
class Format:
    name: str
    parser: str  # "module:function" yielding Turns and ParseProblems; its input is given by `read`
    read: str  # STREAMED, WHOLE or FILES
    detector: str | None = None  # "module:function" (Probe -> evidence rank or None); None: by name only
    own_writing: bool = False  # the user's notes (enriched like `zk add`), not a chat log (stored as written)
    fallback: bool = False  # what auto-detection picks when no format claims the input

    def detect(self, probe: Probe) -> int | None:
        return _load(self.detector)(probe) if self.detector else None

    def dated_by(self) -> tuple[str, ...]:
        """Meta keys that mark a turn's time as the input's own, for a parser that otherwise guesses it (the
        DATED_BY of its module; empty: every time it gives is the input's)."""
        return tuple(getattr(importlib.import_module(self.parser.partition(":")[0], __package__), "DATED_BY", ()))


# Detection order breaks ties between equally strong evidence: a message inside a ChatGPT export or a
# LoCoMo sample is that export's, not a jsonl record.
REGISTRY: dict[str, Format] = {f.name: f for f in (
    Format("text", ".plaintext:parse_text", STREAMED, fallback=True),
    Format("chatgpt", ".chatgpt:parse_chatgpt", WHOLE, ".chatgpt:detect"),
    Format("locomo", ".locomo:parse_locomo", WHOLE, ".locomo:detect"),
    Format("jsonl", ".jsonl:parse_jsonl", STREAMED, ".jsonl:detect"),
    Format("markdown", ".markdown:parse_markdown", FILES, ".markdown:detect", own_writing=True),
)}


def names() -> list[str]:
    return list(REGISTRY)


def listed(last: str = "or") -> str:
    """The format names for a sentence: "a, b or c"."""
    *rest, end = names()
    return f"{', '.join(rest)} {last} {end}" if rest else end


def get(name: str) -> Format:
    """The format called `name`; ValueError for an unknown one."""
    if name not in REGISTRY:
        raise ValueError(f"unknown format {name!r}; expected one of {', '.join(REGISTRY)}")
    return REGISTRY[name]


def reads_folders(name: str) -> bool:
    return name == "auto" or get(name).read == FILES


def detect_format(path: Path | None, head: bytes) -> str:
    """The format of the input at `path` (None for a stream) that starts with `head`: the strongest
    evidence wins, the format registered first on a tie, the fallback when none claims it."""
    from .detect import Probe

    return _pick(Probe.of(path, head))


def is_unknown_json(path: Path | None, head: bytes) -> bool:
    """Whether the input is JSON that no format claims: `zk import` refuses it rather than import its
    lines of JSON syntax as notes (`--format text` still does, on purpose)."""
    from .detect import Probe

    probe = Probe.of(path, head)
    return _pick(probe) == _fallback().name and probe.looks_json()


def is_too_deep_json(path: Path | None, head: bytes) -> bool:
    """Whether the input starts with JSON nested deeper than it can be read, and no format claims it:
    `zk import` refuses it in one line rather than import its brackets as text."""
    from .detect import Probe

    probe = Probe.of(path, head)
    return probe.too_deep and _pick(probe) == _fallback().name


def _pick(probe: Probe) -> str:
    found = [(rank, order, f.name) for order, f in enumerate(REGISTRY.values())
             if (rank := f.detect(probe)) is not None]
    return min(found)[2] if found else _fallback().name


def _fallback() -> Format:
    return next(f for f in REGISTRY.values() if f.fallback)


def parse(source: Path | BinaryIO, fmt: str, *, default_session: str) -> Iterator[Item]:
    """Yield the turns of `source` in order, with a ParseProblem for each skipped line or record. Every
    read is lazy, so an unreadable path raises OSError on the first iteration whatever the format."""
    form = get(fmt)
    if isinstance(source, str):
        source = Path(source)
    parser = _load(form.parser)
    if form.read == FILES:
        return parser(source, default_session)
    if form.read == STREAMED:
        return _streamed(source, parser, default_session)
    return _whole(source, parser, default_session)


def _streamed(source: Path | BinaryIO, parser: Callable[[BinaryIO, str], Iterator[Item]], default_session: str
              ) -> Iterator[Item]:
    if isinstance(source, Path):
        with source.open("rb") as fh:
            yield from parser(fh, default_session)
    else:
        yield from parser(source, default_session)


def _whole(source: Path | BinaryIO, parser: Callable[[bytes, str], Iterator[Item]], default_session: str
           ) -> Iterator[Item]:
    from .turns import read_all

    yield from parser(read_all(source), default_session)
