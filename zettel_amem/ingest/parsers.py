"""Parsers for `zk import`: chat logs and notes become a stream of `Turn`s, one module per format
(plaintext, jsonl, chatgpt, locomo, markdown) over the shared reading in `turns.py`.

Pure parsing, no storage. Every parser is a generator that yields `Turn` for each usable turn and
`ParseProblem` for each line or record it had to skip, and never raises for bad content (only
`ValueError` for an unknown format name; `OSError` from opening an unreadable path propagates).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path
from typing import BinaryIO

from .chatgpt import parse_chatgpt
from .detect import detect_format
from .jsonl import parse_jsonl
from .locomo import parse_locomo
from .markdown import parse_markdown
from .plaintext import parse_text
from .turns import HEAD_SIZE, Item, ParseProblem, Turn, parse_datetime, peek_head, read_all

__all__ = [
    "FORMATS",
    "HEAD_SIZE",
    "ParseProblem",
    "Turn",
    "detect_format",
    "parse",
    "parse_datetime",
    "peek_head",
]

FORMATS = ("text", "jsonl", "chatgpt", "locomo", "markdown")



def _streamed(
    source: Path | BinaryIO, fn: Callable[[BinaryIO, str], Iterator[Item]], default_session: str
) -> Iterator[Item]:
    if isinstance(source, Path):
        with source.open("rb") as fh:
            yield from fn(fh, default_session)
    else:
        yield from fn(source, default_session)


def parse(source: Path | BinaryIO, fmt: str, *, default_session: str) -> Iterator[Turn | ParseProblem]:
    """Yield the turns of `source` in order, with a ParseProblem for each skipped line or record.

    "text" and "jsonl" are streamed line by line; "chatgpt" and "locomo" are single JSON
    documents and are read whole; "markdown" takes a directory (recursive), a file or a stream.
    """
    if fmt not in FORMATS:
        raise ValueError(f"unknown format {fmt!r}; expected one of {', '.join(FORMATS)}")
    if isinstance(source, str):
        source = Path(source)
    if fmt == "markdown":
        return parse_markdown(source, default_session)
    if fmt == "text":
        return _streamed(source, parse_text, default_session)
    if fmt == "jsonl":
        return _streamed(source, parse_jsonl, default_session)
    # Document formats are read whole (lazily, so OSError surfaces on first iteration like the others).
    parser = parse_chatgpt if fmt == "chatgpt" else parse_locomo
    return _document(source, parser, default_session)


def _document(
    source: Path | BinaryIO, parser: Callable[[bytes, str], Iterator[Item]], default_session: str
) -> Iterator[Item]:
    yield from parser(read_all(source), default_session)
