"""What format detection looks at (`zk import --format auto`): a `Probe` of the input's name and first
bytes, and how strong each kind of evidence is. Each format's own module says what its input looks like
(a `detect(probe)` function); `formats.detect_format` asks them all and takes the strongest answer.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from .turns import BOM

# Evidence, strongest first (a lower number wins; on a tie the format registered first wins):
BY_PATH = 0  # the file's name or a folder (a `.md` file is Markdown whatever it holds)
BY_DOCUMENT = 1  # the head is one whole JSON document, and its first object has the format's shape
BY_RECORD = 2  # the first line is one JSON object that reads as a record of the format
BY_FIRST_LINE = 3  # the first line is JSON (the head may end mid-document), and its first object has the shape
BY_KEYS = 4  # a large document cut at the head: only the key names seen so far

_KEY_RE = re.compile(r'"([A-Za-z_][A-Za-z0-9_]*)"\s*:')
_JSON_OBJECTS_START = re.compile(r"\{|\[\s*\{")
_NOT_JSON = object()
_TOO_DEEP = object()  # JSON nested deeper than Python's json reads


def _loads(text: str) -> Any:
    try:
        return json.loads(text)
    except ValueError:
        return _NOT_JSON
    except RecursionError:
        return _TOO_DEEP


def first_object(doc: Any) -> dict | None:
    """The first JSON object of a document (itself, or the first object of a list)."""
    items = doc if isinstance(doc, list) else [doc]
    return next((x for x in items if isinstance(x, dict)), None)


@dataclass
class Probe:
    """The input as detection sees it: `path` (None for a stream), the decoded head, the head parsed as
    one JSON document, its first line parsed, and the JSON key names in it."""

    path: Path | None
    text: str
    document: Any = field(default=_NOT_JSON)
    first_line: Any = field(default=_NOT_JSON)
    keys: set[str] = field(default_factory=set)
    too_deep: bool = False  # the head starts JSON nested deeper than Python's json reads

    @classmethod
    def of(cls, path: Path | None, head: bytes) -> Probe:
        text = head.removeprefix(BOM).decode("utf-8", errors="replace").lstrip()
        probe = cls(path, text)
        if text and text[0] in "[{":  # only JSON is looked into
            document = _loads(text)  # small files arrive whole in the head
            first_line = _loads(text.split("\n", 1)[0].strip())  # the head may end mid-line
            probe.too_deep = document is _TOO_DEEP
            probe.document, probe.first_line = (_NOT_JSON if x is _TOO_DEEP else x for x in (document, first_line))
            if _JSON_OBJECTS_START.match(text):
                probe.keys = set(_KEY_RE.findall(text))
        return probe

    def is_folder_or_suffix(self, *suffixes: str) -> bool:
        return self.path is not None and (self.path.is_dir() or self.path.suffix.lower() in suffixes)

    def shaped(self, test) -> int | None:
        """BY_DOCUMENT or BY_FIRST_LINE when the first object of the whole head, else of its first line,
        passes `test`; None when neither does."""
        if self.document is not _NOT_JSON and (obj := first_object(self.document)) is not None and test(obj):
            return BY_DOCUMENT
        if self.first_line is not _NOT_JSON and (obj := first_object(self.first_line)) is not None and test(obj):
            return BY_FIRST_LINE
        return None

    def looks_json(self) -> bool:
        """Whether the input is JSON at all (whatever its format): `zk import` refuses JSON that no format
        claims rather than import its lines of syntax as notes (`--format text` still does, on purpose)."""
        return (self.document is not _NOT_JSON or isinstance(self.first_line, dict | list) or bool(self.keys))


def has_mapping(obj: dict) -> bool:
    """A ChatGPT conversation's node tree; an object that has one is no message record."""
    return isinstance(obj.get("mapping"), dict)
