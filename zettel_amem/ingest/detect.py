"""Which format a file or stream is, from its name and first bytes (`zk import --format auto`)."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

from .turns import (
    BOM,
)

_KEY_RE = re.compile(r'"([A-Za-z_][A-Za-z0-9_]*)"\s*:')
_JSON_OBJECTS_START = re.compile(r"\{|\[\s*\{")


def _is_message(obj: Any) -> bool:
    return isinstance(obj, dict) and ("content" in obj or "role" in obj)


def _is_locomo(obj: Any) -> bool:
    return (
        isinstance(obj, dict)
        and isinstance(obj.get("conversation"), dict)
        and ("qa" in obj or "sample_id" in obj or "speaker_a" in obj["conversation"])
    )


def _classify_json(doc: Any) -> str | None:
    items = doc if isinstance(doc, list) else [doc]
    dicts = [x for x in items if isinstance(x, dict)]
    if not dicts:
        return None
    first = dicts[0]
    if isinstance(first.get("mapping"), dict):
        return "chatgpt"
    if _is_locomo(first):
        return "locomo"
    if _is_message(first):
        return "jsonl"
    return None


def detect_format(path: Path | None, head: bytes) -> str:
    """Guess the format from the path (None for stdin) and the first bytes of the input."""
    return _detect(path, head)[0]


def is_unknown_json(path: Path | None, head: bytes) -> bool:
    """Whether the input is JSON that no format matches: `zk import` refuses it rather than import its
    lines of JSON syntax as notes (`--format text` still does, on purpose)."""
    fmt, looks_json = _detect(path, head)
    return fmt == "text" and looks_json


def _detect(path: Path | None, head: bytes) -> tuple[str, bool]:
    """(format, whether the input looked like JSON)."""
    if path is not None and (path.is_dir() or path.suffix.lower() in (".md", ".markdown")):
        return "markdown", False
    text = head.removeprefix(BOM).decode("utf-8", errors="replace").lstrip()
    if not text or text[0] not in "[{":
        return "text", False
    # Small files arrive whole in the head: classify by structure.
    looks_json = False
    try:
        found = _classify_json(json.loads(text))
        looks_json = True
    except (ValueError, RecursionError):
        found = None
    if found:
        return found, True
    # One JSON object per line (the head may end mid-line, so only trust the first line).
    first_line = text.split("\n", 1)[0].strip()
    try:
        first_obj = json.loads(first_line)
        looks_json = looks_json or isinstance(first_obj, dict | list)
    except (ValueError, RecursionError):
        first_obj = None
    if isinstance(first_obj, dict) and not isinstance(first_obj.get("mapping"), dict):
        if _is_message(first_obj) or "text" in first_obj:
            return "jsonl", True
    if first_obj is not None:
        found = _classify_json(first_obj)
        if found:
            return found, True
    # A large document cut at HEAD_SIZE: fall back to the key names seen so far.
    if _JSON_OBJECTS_START.match(text):
        keys = set(_KEY_RE.findall(text))
        if "mapping" in keys and ({"current_node", "author", "parent", "children"} & keys):
            return "chatgpt", True
        if "conversation" in keys and ({"qa", "sample_id", "speaker_a", "session_1"} & keys):
            return "locomo", True
        if "qa" in keys and {"question", "evidence"} <= keys:
            return "locomo", True
        if {"role", "content"} & keys:
            return "jsonl", True
        looks_json = looks_json or bool(keys)
    return "text", looks_json
