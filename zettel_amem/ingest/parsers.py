"""Parsers for `zk import`: chat logs and notes become a stream of `Turn`s, one module per format over
the shared reading in `turns.py`; which formats there are, and how each is read, is `formats.py`.

Pure parsing, no storage. Every parser is a generator that yields `Turn` for each usable turn and
`ParseProblem` for each line or record it had to skip, and never raises for bad content (only
`ValueError` for an unknown format name; `OSError` from opening an unreadable path propagates).
"""

from __future__ import annotations

from .formats import REGISTRY, detect_format, parse
from .turns import HEAD_SIZE, ParseProblem, Turn, parse_datetime, peek_head

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

FORMATS = tuple(REGISTRY)  # the formats registered when this was imported (formats.names() is live)
