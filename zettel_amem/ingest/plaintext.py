"""Plain text logs: one note per line, with an optional timestamp and "Speaker:" prefix."""

from __future__ import annotations

import re
from collections.abc import Iterator
from datetime import datetime
from typing import BinaryIO

from .turns import (
    Item,
    ParseProblem,
    Turn,
    iter_lines,
    parse_datetime,
)

_TS = r"\d{4}[-/]\d{1,2}[-/]\d{1,2}[T ]\d{1,2}:\d{2}(?::\d{2}(?:[.,]\d+)?)?(?:\s*(?:Z|[+-]\d{2}:?\d{2}))?"
# "[2026-03-29 09:15] " or "2026-03-29 09:15 ", optionally followed by a "- " separator (WhatsApp style).
_TEXT_TS_RE = re.compile(rf"(?:\[(?P<b>{_TS})\]|(?P<p>{_TS})(?=\s))\s*(?:[-–]\s+)?")
# A speaker label is the text before the first ": " - it cannot contain a colon itself, so
# "http://x" or "Note 10:30" never produce one.
_SPEAKER_RE = re.compile(r"(?P<s>[^:\s][^:]{0,39}?)\s*:\s+(?P<t>\S.*)", re.DOTALL)
_SPEAKER_BAD_CHARS = set('/\\"?!;,[]{}<>=|`*#')
_MAX_SPEAKER_WORDS = 4


def _split_speaker(line: str) -> tuple[str | None, str]:
    """Split "Speaker: text"; a label that looks like prose rather than a name is not a speaker.

    Rules: at most 40 chars and 4 words, at least one letter, no URL/markup punctuation.
    """
    m = _SPEAKER_RE.fullmatch(line)
    if not m:
        return None, line
    speaker = m["s"].strip()
    if (
        len(speaker.split()) > _MAX_SPEAKER_WORDS
        or not any(ch.isalpha() for ch in speaker)
        or _SPEAKER_BAD_CHARS.intersection(speaker)
    ):
        return None, line
    return speaker, m["t"]


def parse_text(stream: BinaryIO, default_session: str) -> Iterator[Item]:
    index = 0
    for lineno, line in iter_lines(stream):
        if isinstance(line, ParseProblem):
            yield line
            continue
        body = line.strip()
        if not body:
            continue
        at: datetime | None = None
        m = _TEXT_TS_RE.match(body)
        if m:
            try:
                at = parse_datetime(m["b"] or m["p"])
                body = body[m.end() :].strip()
            except ValueError:
                at = None  # e.g. month 13: keep the line as plain text
        if not body:
            continue
        speaker, text = _split_speaker(body)
        yield Turn(text.strip(), speaker, at, default_session, None, index, lineno, {})
        index += 1


