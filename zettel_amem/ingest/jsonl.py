"""JSON lines (and a JSON array of messages): one message object per line, OpenAI-style roles and content."""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any, BinaryIO

from .detect import BY_KEYS, BY_RECORD, Probe, has_mapping
from .turns import (
    Item,
    ParseProblem,
    Turn,
    check_turn,
    content_text,
    iter_lines,
    maybe_datetime,
    scalar,
)

_TIME_KEYS = ("timestamp", "created_at", "time", "date", "create_time")
_SESSION_KEYS = ("session", "session_id", "conversation_id", "thread_id")


class _Sessions:
    """Per-session turn counters, so `index` restarts at 0 in each session."""

    def __init__(self) -> None:
        self._next: dict[str, int] = {}

    def take(self, key: str) -> int:
        n = self._next.get(key, 0)
        self._next[key] = n + 1
        return n


def _message_turn(
    obj: Any, where: int | None, line: int | None, default_session: str, sessions: _Sessions
) -> Item | None:
    if not isinstance(obj, dict):
        return ParseProblem(line, f"expected a JSON object, got {type(obj).__name__}; skipped",
                            None if line is not None else where)
    if "content" not in obj and isinstance(obj.get("message"), dict):
        obj = {**obj, **obj["message"]}  # {"message": {"role", "content"}, "timestamp": ...}
    content = obj.get("content")
    if content is None:
        content = obj.get("text")
    text = content_text(content).strip()
    if not text:
        return None  # tool calls, function results without text, etc.
    role = scalar(obj.get("role"))
    name = scalar(obj.get("name")) or scalar(obj.get("speaker"))
    meta: dict[str, str] = {}
    if role:
        meta["role"] = role
    if (msg_id := scalar(obj.get("id"))) is not None:
        meta["id"] = msg_id
    at = None
    for key in _TIME_KEYS:
        if obj.get(key) is not None:
            at = maybe_datetime(obj[key])
            if at is None and (raw := scalar(obj[key])) is not None:
                meta["timestamp"] = raw  # keep what we could not parse rather than lose it
            break
    session = next((s for k in _SESSION_KEYS if (s := scalar(obj.get(k)))), default_session)
    title = scalar(obj.get("session_title")) or scalar(obj.get("title"))
    turn = Turn(text, name or role, at, session, title, 0, line, meta)
    problem = check_turn(turn)
    if problem:
        problem.line, problem.record = line, (None if line is not None else where)
        return problem
    turn.index = sessions.take(session)
    return turn


def _jsonl_line(lineno: int, stripped: str, default_session: str, sessions: _Sessions) -> Iterator[Item]:
    try:
        obj = json.loads(stripped)
    except json.JSONDecodeError as exc:
        yield ParseProblem(lineno, f"not valid JSON: {exc.msg}")
        return
    except RecursionError:
        yield ParseProblem(lineno, "not valid JSON: nested too deeply")
        return
    for item in obj if isinstance(obj, list) else [obj]:  # a line may hold an array of messages
        result = _message_turn(item, lineno, lineno, default_session, sessions)
        if result is not None:
            yield result


def parse_jsonl(stream: BinaryIO, default_session: str) -> Iterator[Item]:
    sessions = _Sessions()
    lines = iter_lines(stream)
    first = True
    for lineno, line in lines:
        if isinstance(line, ParseProblem):
            yield line
            continue
        stripped = line.strip()
        if not stripped:
            continue
        if first and stripped.startswith("[") and not _is_json(stripped):
            # Looks like a JSON array spread over many lines: it has to be parsed as one document.
            yield from _parse_json_array(lineno, line, lines, default_session, sessions)
            return
        first = False
        yield from _jsonl_line(lineno, stripped, default_session, sessions)


def _is_json(text: str) -> bool:
    try:
        json.loads(text)
    except (ValueError, RecursionError):
        return False
    return True


def _parse_json_array(
    first_lineno: int,
    first_line: str,
    lines: Iterator[tuple[int, str | ParseProblem]],
    default_session: str,
    sessions: _Sessions,
) -> Iterator[Item]:
    collected: list[tuple[int, str | ParseProblem]] = [(first_lineno, first_line)]
    collected.extend(lines)
    bad = next((x for _, x in collected if isinstance(x, ParseProblem)), None)
    try:
        if bad is not None:
            raise ValueError("unreadable line")
        doc = json.loads("\n".join(x for _, x in collected if isinstance(x, str)))
    except (ValueError, RecursionError) as exc:
        texts = [(n, x.strip()) for n, x in collected if isinstance(x, str) and x.strip()]
        if sum(_is_json(x) for _, x in texts) * 2 >= len(texts):
            # Mostly valid lines: it was JSONL with a broken first line, so go line by line.
            for n, x in collected:
                if isinstance(x, ParseProblem):
                    yield x
                elif x.strip():
                    yield from _jsonl_line(n, x.strip(), default_session, sessions)
        elif isinstance(bad, ParseProblem):
            yield ParseProblem(bad.line, f"{_reason(bad)} inside a JSON array; the whole array was skipped")
        elif isinstance(exc, json.JSONDecodeError):
            yield ParseProblem(first_lineno + exc.lineno - 1, f"not valid JSON: {exc.msg}")
        else:
            yield ParseProblem(first_lineno, "not valid JSON: nested too deeply")
        return
    for record, item in enumerate(doc if isinstance(doc, list) else [doc], start=1):
        result = _message_turn(item, record, None, default_session, sessions)
        if result is not None:
            yield result


def _reason(problem: ParseProblem) -> str:
    return problem.message.split(";", 1)[0]


def _is_message(obj: dict) -> bool:
    return "content" in obj or "role" in obj


def detect(probe: Probe) -> int | None:
    """Message objects: a first line that is one (a `text` field is enough there), a document or line
    whose first object is one, or a cut document with `role`/`content` keys."""
    line = probe.first_line
    record = isinstance(line, dict) and not has_mapping(line) and (_is_message(line) or "text" in line)
    ranks = [probe.shaped(_is_message), BY_RECORD if record else None,
             BY_KEYS if {"role", "content"} & probe.keys else None]
    return min((r for r in ranks if r is not None), default=None)
