"""Parsers for `zk import`: turn chat logs and notes into a stream of `Turn`s.

Pure parsing, no storage. Every parser is a generator that yields `Turn` for each
usable turn and `ParseProblem` for each line or record it had to skip, and never
raises for bad content (only `ValueError` for an unknown format name; `OSError`
from opening an unreadable path propagates).

Time handling: every `Turn.at` is a *naive local wall-clock* datetime. Naive
timestamps in the source are taken as they are; aware ones (``Z``, ``+09:00``)
and unix seconds are converted to the machine's local time and the tzinfo is
dropped, so all values are comparable with each other and with `datetime.now()`.
"""

from __future__ import annotations

import io
import json
import math
import os
import re
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from datetime import datetime, timedelta, timezone
from pathlib import Path
from typing import Any, BinaryIO

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
HEAD_SIZE = 64 * 1024
BOM = b"\xef\xbb\xbf"
# A single line larger than this is reported and skipped instead of being buffered whole.
MAX_LINE_BYTES = 16 * 1024 * 1024
_CHUNK = 64 * 1024


@dataclass
class Turn:
    text: str
    speaker: str | None
    at: datetime | None
    session_key: str
    session_title: str | None
    index: int
    line: int | None
    meta: dict[str, str] = field(default_factory=dict)


@dataclass
class ParseProblem:
    line: int | None  # line of the file, when the format has meaningful lines
    message: str
    record: int | None = None  # else the n-th record (JSON array element, conversation, sample)


Item = Turn | ParseProblem


# --------------------------------------------------------------------------- datetimes

_MONTHS = {
    name: i + 1
    for i, names in enumerate(
        [
            ("january", "jan"),
            ("february", "feb"),
            ("march", "mar"),
            ("april", "apr"),
            ("may",),
            ("june", "jun"),
            ("july", "jul"),
            ("august", "aug"),
            ("september", "sep", "sept"),
            ("october", "oct"),
            ("november", "nov"),
            ("december", "dec"),
        ]
    )
    for name in names
}

_ISO_RE = re.compile(
    r"(?P<y>\d{4})[-/](?P<mo>\d{1,2})[-/](?P<d>\d{1,2})"
    r"(?:[T ]+(?P<h>\d{1,2}):(?P<mi>\d{2})(?::(?P<s>\d{2})(?:[.,](?P<frac>\d+))?)?)?"
    r"\s*(?P<tz>Z|z|UTC|[+-]\d{2}(?::?\d{2})?)?"
)
# LoCoMo: "1:56 pm on 8 May, 2023"
_LOCOMO_RE = re.compile(
    r"(?P<h>\d{1,2}):(?P<mi>\d{2})\s*(?P<ampm>[ap])\.?\s*m\.?\s+on\s+"
    r"(?P<d>\d{1,2})\s+(?P<mon>[A-Za-z]+)\.?,?\s+(?P<y>\d{4})",
    re.IGNORECASE,
)
_NUMBER_RE = re.compile(r"[+-]?(?:\d+(?:\.\d*)?|\.\d+)(?:[eE][+-]?\d+)?")


def _to_local_naive(dt: datetime) -> datetime:
    return dt.astimezone().replace(tzinfo=None) if dt.tzinfo is not None else dt


def _from_unix(seconds: float) -> datetime:
    if not math.isfinite(seconds):
        raise ValueError(f"not a finite timestamp: {seconds!r}")
    # Values this large are almost certainly milliseconds (1e11 s is the year 5138).
    if abs(seconds) >= 1e11:
        seconds /= 1000.0
    try:
        return datetime.fromtimestamp(seconds)
    except (OverflowError, OSError) as exc:
        raise ValueError(f"timestamp out of range: {seconds!r}") from exc


def parse_datetime(value: str | int | float) -> datetime:
    """Parse a timestamp into a naive local datetime; raise ValueError on anything else.

    Accepts ISO 8601 (``2026-03-29T09:15:00Z``, ``+09:00``/``+0900`` offsets, fractions),
    ``YYYY-MM-DD HH:MM``, a bare date, unix seconds (int/float or numeric string,
    milliseconds auto-detected) and LoCoMo's ``1:56 pm on 8 May, 2023``.
    """
    if isinstance(value, bool):
        raise ValueError("a boolean is not a timestamp")
    if isinstance(value, (int, float)):
        try:
            return _from_unix(float(value))
        except OverflowError as exc:  # int too large for a float
            raise ValueError(f"timestamp out of range: {value!r}") from exc
    if not isinstance(value, str):
        raise ValueError(f"unsupported timestamp type: {type(value).__name__}")
    s = value.strip()
    if _NUMBER_RE.fullmatch(s):
        return _from_unix(float(s))
    m = _ISO_RE.fullmatch(s)
    if m:
        frac = (m["frac"] or "0")[:6].ljust(6, "0")
        dt = datetime(
            int(m["y"]), int(m["mo"]), int(m["d"]),
            int(m["h"] or 0), int(m["mi"] or 0), int(m["s"] or 0), int(frac),
        )  # fmt: skip
        tz = m["tz"]
        if tz:
            if tz.upper() in ("Z", "UTC"):
                offset = timedelta(0)
            else:
                digits = tz[1:].replace(":", "")
                offset = timedelta(hours=int(digits[:2]), minutes=int(digits[2:] or 0))
                if tz[0] == "-":
                    offset = -offset
            try:
                dt = _to_local_naive(dt.replace(tzinfo=timezone(offset)))
            except (OverflowError, OSError) as exc:
                raise ValueError(f"date/time out of range: {value!r}") from exc
        return dt
    m = _LOCOMO_RE.fullmatch(s)
    if m:
        month = _MONTHS.get(m["mon"].lower())
        hour = int(m["h"])
        if month is None or not 1 <= hour <= 12:
            raise ValueError(f"unrecognised date/time: {value!r}")
        hour = hour % 12 + (12 if m["ampm"].lower() == "p" else 0)
        return datetime(int(m["y"]), month, int(m["d"]), hour, int(m["mi"]))
    raise ValueError(f"unrecognised date/time: {value!r}")


def _maybe_datetime(value: Any) -> datetime | None:
    if value is None or isinstance(value, bool) or not isinstance(value, (str, int, float)):
        return None
    try:
        return parse_datetime(value)
    except ValueError:
        return None


# --------------------------------------------------------------------------- low-level input


def _bad_string(s: str) -> str | None:
    """Why a decoded string cannot be stored, or None when it is fine."""
    if "\x00" in s:
        return "contains a NUL character"
    try:
        s.encode("utf-8")
    except UnicodeEncodeError:
        # Only reachable through JSON escapes such as "\ud800" (a lone surrogate).
        return "contains invalid Unicode (a lone surrogate escape)"
    return None


def _check_turn(turn: Turn) -> ParseProblem | None:
    for value in (turn.text, turn.speaker or "", *turn.meta.values(), turn.session_key):
        why = _bad_string(value)
        if why:
            return ParseProblem(turn.line, f"turn text or fields {why}; skipped")
    return None


def _record_turn(turn: Turn, record: int) -> Turn | ParseProblem:
    """A turn of a JSON document's `record`-th record, or the problem that keeps it out (the shared
    emitter of the whole-document formats: a caller counts `index` only for turns)."""
    problem = _check_turn(turn)
    if problem:
        problem.line, problem.record = None, record
        return problem
    return turn


def _iter_raw_lines(stream: BinaryIO) -> Iterator[tuple[int, bytes | None]]:
    """Yield (1-based line number, bytes without EOL); None for a line too long to keep.

    Reads fixed-size chunks so any object with `.read(n)` works and memory stays bounded.
    """
    partial: list[bytes] = []  # pieces of the current line not yet ended by a newline
    partial_len = 0
    overflow = False  # inside an over-long line: drop bytes until its newline
    lineno = 1
    # read1 returns what a pipe has ready, so `tail -f log | zk import -` is not held up by a full chunk.
    read = getattr(stream, "read1", stream.read)
    while chunk := read(_CHUNK):
        chunk = bytes(chunk)
        start = 0
        while (nl := chunk.find(b"\n", start)) >= 0:
            if overflow:
                yield lineno, None
                overflow = False
            else:
                piece = chunk[start:nl]
                yield lineno, b"".join([*partial, piece]) if partial else piece
            partial, partial_len = [], 0
            lineno += 1
            start = nl + 1
        if start < len(chunk) and not overflow:
            partial.append(chunk[start:])
            partial_len += len(chunk) - start
            if partial_len > MAX_LINE_BYTES:
                overflow, partial, partial_len = True, [], 0
    if overflow:
        yield lineno, None
    elif partial:
        yield lineno, b"".join(partial)


def _iter_lines(stream: BinaryIO) -> Iterator[tuple[int, str | ParseProblem]]:
    """Decoded lines (BOM and CR removed) or a ParseProblem for an unusable line."""
    for lineno, raw in _iter_raw_lines(stream):
        if raw is None:
            yield lineno, ParseProblem(lineno, f"line longer than {MAX_LINE_BYTES} bytes; skipped")
            continue
        if lineno == 1 and raw.startswith(BOM):
            raw = raw[len(BOM) :]
        if raw.endswith(b"\r"):
            raw = raw[:-1]
        try:
            text = raw.decode("utf-8")
        except UnicodeDecodeError as exc:
            yield lineno, ParseProblem(lineno, f"invalid UTF-8 bytes at column {exc.start + 1}; line skipped")
            continue
        if "\x00" in text:
            yield lineno, ParseProblem(lineno, "line contains NUL bytes; skipped")
            continue
        yield lineno, text


def _decode_document(data: bytes) -> str | ParseProblem:
    data = data.removeprefix(BOM)
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        # Report the line of the first bad byte so the user can find it.
        line = data.count(b"\n", 0, exc.start) + 1
        return ParseProblem(line, "invalid UTF-8 bytes; the whole document was skipped")


def _load_json_document(data: bytes) -> Any | ParseProblem:
    text = _decode_document(data)
    if isinstance(text, ParseProblem):
        return text
    try:
        return json.loads(text)
    except json.JSONDecodeError as exc:
        return ParseProblem(exc.lineno, f"not valid JSON: {exc.msg}")
    except RecursionError:
        return ParseProblem(None, "not valid JSON: nested too deeply")


def _read_all(source: Path | BinaryIO) -> bytes:
    if isinstance(source, Path):
        return source.read_bytes()
    chunks = []
    while chunk := source.read(_CHUNK):
        chunks.append(bytes(chunk))
    return b"".join(chunks)


class _Prefixed(io.RawIOBase):
    """A read-only stream that replays already-read bytes, then continues the original."""

    def __init__(self, head: bytes, rest: BinaryIO) -> None:
        super().__init__()
        self._head = head
        self._rest = rest

    def readable(self) -> bool:
        return True

    def readinto(self, b: Any) -> int:
        view = memoryview(b)
        if self._head:
            n = min(len(view), len(self._head))
            view[:n] = self._head[:n]
            self._head = self._head[n:]
            return n
        data = getattr(self._rest, "read1", self._rest.read)(len(view))
        if not data:
            return 0
        view[: len(data)] = data
        return len(data)


def peek_head(stream: BinaryIO, size: int = HEAD_SIZE) -> tuple[bytes, BinaryIO]:
    """Read up to `size` bytes for `detect_format` and return a stream that still starts at 0.

    Needed for stdin, which cannot seek back.
    """
    parts: list[bytes] = []
    got = 0
    while got < size:
        chunk = stream.read(size - got)
        if not chunk:
            break
        parts.append(bytes(chunk))
        got += len(chunk)
    head = b"".join(parts)
    return head, io.BufferedReader(_Prefixed(head, stream), buffer_size=_CHUNK)


# --------------------------------------------------------------------------- detection

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
    if path is not None and (path.is_dir() or path.suffix.lower() in (".md", ".markdown")):
        return "markdown"
    text = head.removeprefix(BOM).decode("utf-8", errors="replace").lstrip()
    if not text or text[0] not in "[{":
        return "text"
    # Small files arrive whole in the head: classify by structure.
    try:
        found = _classify_json(json.loads(text))
    except (ValueError, RecursionError):
        found = None
    if found:
        return found
    # One JSON object per line (the head may end mid-line, so only trust the first line).
    first_line = text.split("\n", 1)[0].strip()
    try:
        first_obj = json.loads(first_line)
    except (ValueError, RecursionError):
        first_obj = None
    if isinstance(first_obj, dict) and not isinstance(first_obj.get("mapping"), dict):
        if _is_message(first_obj) or "text" in first_obj:
            return "jsonl"
    if first_obj is not None:
        found = _classify_json(first_obj)
        if found:
            return found
    # A large document cut at HEAD_SIZE: fall back to the key names seen so far.
    if _JSON_OBJECTS_START.match(text):
        keys = set(_KEY_RE.findall(text))
        if "mapping" in keys and ({"current_node", "author", "parent", "children"} & keys):
            return "chatgpt"
        if "conversation" in keys and ({"qa", "sample_id", "speaker_a", "session_1"} & keys):
            return "locomo"
        if "qa" in keys and {"question", "evidence"} <= keys:
            return "locomo"
        if {"role", "content"} & keys:
            return "jsonl"
    return "text"


# --------------------------------------------------------------------------- text


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


def _parse_text(stream: BinaryIO, default_session: str) -> Iterator[Item]:
    index = 0
    for lineno, line in _iter_lines(stream):
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


# --------------------------------------------------------------------------- jsonl

_TIME_KEYS = ("timestamp", "created_at", "time", "date", "create_time")
_SESSION_KEYS = ("session", "session_id", "conversation_id", "thread_id")


def _content_text(content: Any) -> str:
    """Text of an OpenAI-style content: a string or a list of parts."""
    if isinstance(content, str):
        return content
    if isinstance(content, dict):
        content = [content]
    if not isinstance(content, list):
        return ""
    texts: list[str] = []
    for part in content:
        if isinstance(part, str):
            texts.append(part)
        elif isinstance(part, dict):
            value = part.get("text")
            if isinstance(value, dict):  # Assistants API: {"text": {"value": ...}}
                value = value.get("value")
            if isinstance(value, str):
                texts.append(value)
    return "\n".join(t for t in texts if t.strip())


def _scalar(value: Any) -> str | None:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, (str, int, float)):
        return str(value)
    return None


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
    text = _content_text(content).strip()
    if not text:
        return None  # tool calls, function results without text, etc.
    role = _scalar(obj.get("role"))
    name = _scalar(obj.get("name")) or _scalar(obj.get("speaker"))
    meta: dict[str, str] = {}
    if role:
        meta["role"] = role
    if (msg_id := _scalar(obj.get("id"))) is not None:
        meta["id"] = msg_id
    at = None
    for key in _TIME_KEYS:
        if obj.get(key) is not None:
            at = _maybe_datetime(obj[key])
            if at is None and (raw := _scalar(obj[key])) is not None:
                meta["timestamp"] = raw  # keep what we could not parse rather than lose it
            break
    session = next((s for k in _SESSION_KEYS if (s := _scalar(obj.get(k)))), default_session)
    title = _scalar(obj.get("session_title")) or _scalar(obj.get("title"))
    turn = Turn(text, name or role, at, session, title, 0, line, meta)
    problem = _check_turn(turn)
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


def _parse_jsonl(stream: BinaryIO, default_session: str) -> Iterator[Item]:
    sessions = _Sessions()
    lines = _iter_lines(stream)
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


# --------------------------------------------------------------------------- chatgpt


def _chatgpt_thread(mapping: dict[str, Any], current: Any) -> list[str]:
    """Node ids from the root to `current` (the branch the user last saw)."""
    if not isinstance(current, str) or current not in mapping:
        # No usable current_node: start at a root and always take the newest child.
        roots = [k for k, v in mapping.items() if not isinstance(v, dict) or v.get("parent") not in mapping]
        if not roots:
            return []
        current = roots[0]
        seen = {current}
        while True:
            node = mapping.get(current)
            children = node.get("children") if isinstance(node, dict) else None
            nxt = [c for c in children or [] if isinstance(c, str) and c in mapping and c not in seen]
            if not nxt:
                break
            current = nxt[-1]
            seen.add(current)
    path: list[str] = []
    seen_back: set[str] = set()
    node_id: Any = current
    while isinstance(node_id, str) and node_id in mapping and node_id not in seen_back:
        seen_back.add(node_id)  # guard against parent cycles in a damaged export
        path.append(node_id)
        node = mapping[node_id]
        node_id = node.get("parent") if isinstance(node, dict) else None
    path.reverse()
    return path


def _chatgpt_text(message: dict[str, Any]) -> str:
    content = message.get("content")
    if not isinstance(content, dict):
        return ""
    parts = content.get("parts")
    if isinstance(parts, list):
        return _content_text(parts).strip()
    text = content.get("text")
    return text.strip() if isinstance(text, str) else ""


def _parse_chatgpt(data: bytes, default_session: str) -> Iterator[Item]:
    doc = _load_json_document(data)
    if isinstance(doc, ParseProblem):
        yield doc
        return
    if isinstance(doc, dict) and isinstance(doc.get("conversations"), list):
        doc = doc["conversations"]
    conversations = doc if isinstance(doc, list) else [doc]
    for record, conv in enumerate(conversations, start=1):
        if not isinstance(conv, dict) or not isinstance(conv.get("mapping"), dict):
            yield ParseProblem(None, "no 'mapping' object; conversation skipped", record)
            continue
        title = _scalar(conv.get("title"))
        conv_time = _maybe_datetime(conv.get("create_time"))
        key = _scalar(conv.get("id")) or _scalar(conv.get("conversation_id"))
        if not key:
            stamp = _scalar(conv.get("create_time"))
            key = f"{title}@{stamp}" if title or stamp else f"{default_session}#{record}"
        mapping: dict[str, Any] = conv["mapping"]
        index = 0
        thread = _chatgpt_thread(mapping, conv.get("current_node"))
        if not thread and mapping:  # every node has a parent in the mapping: a cycle, no root to start at
            yield ParseProblem(None, f"conversation {title or key!r}: its messages form a cycle with no first "
                               "message and no current_node; conversation skipped", record)
            continue
        for node_id in thread:
            message = mapping[node_id].get("message") if isinstance(mapping[node_id], dict) else None
            if not isinstance(message, dict):
                continue
            author = message.get("author")
            author = author if isinstance(author, dict) else {}
            role = _scalar(author.get("role")) or "unknown"
            metadata = message.get("metadata")
            if role == "system" or (
                isinstance(metadata, dict) and metadata.get("is_visually_hidden_from_conversation")
            ):
                continue
            text = _chatgpt_text(message)
            if not text:
                continue
            meta = {"role": role, "message_id": _scalar(message.get("id")) or node_id}
            at = _maybe_datetime(message.get("create_time")) or conv_time
            item = _record_turn(Turn(text, _scalar(author.get("name")) or role, at, key, title, index, None, meta),
                                record)
            yield item
            index += isinstance(item, Turn)


# --------------------------------------------------------------------------- locomo

_SESSION_RE = re.compile(r"session_(\d+)")


def _parse_locomo(data: bytes, default_session: str) -> Iterator[Item]:
    doc = _load_json_document(data)
    if isinstance(doc, ParseProblem):
        yield doc
        return
    samples = doc if isinstance(doc, list) else [doc]
    for record, sample in enumerate(samples, start=1):
        conv = sample.get("conversation") if isinstance(sample, dict) else None
        if not isinstance(conv, dict):
            yield ParseProblem(None, "no 'conversation' object; sample skipped", record)
            continue
        sample_id = _scalar(sample.get("sample_id")) or f"{default_session}-{record}"
        speakers = [s for s in (_scalar(conv.get("speaker_a")), _scalar(conv.get("speaker_b"))) if s]
        numbered = sorted(
            (int(m[1]), value)
            for k, value in conv.items()
            if (m := _SESSION_RE.fullmatch(k)) and isinstance(value, list)
        )
        for number, turns in numbered:
            raw_time = conv.get(f"session_{number}_date_time")
            at = _maybe_datetime(raw_time)
            key = f"{sample_id}/session_{number}"
            title = f"{' & '.join(speakers)}, session {number}" if speakers else f"session {number}"
            index = 0
            for t in turns:
                if not isinstance(t, dict):
                    yield ParseProblem(None, f"{key}: a turn is not a JSON object; skipped", record)
                    continue
                text = (_scalar(t.get("text")) or "").strip()
                caption = (_scalar(t.get("blip_caption")) or "").strip()
                if caption:
                    text = f"{text} [image: {caption}]".lstrip()
                if not text:
                    continue
                meta = {"sample_id": sample_id}
                if (dia_id := _scalar(t.get("dia_id"))) is not None:
                    meta["dia_id"] = dia_id
                if at is None and isinstance(raw_time, str):
                    meta["date_time"] = raw_time
                item = _record_turn(Turn(text, _scalar(t.get("speaker")), at, key, title, index, None, meta), record)
                yield item
                index += isinstance(item, Turn)


# --------------------------------------------------------------------------- markdown

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
    for lineno, line in _iter_lines(stream):
        if isinstance(line, ParseProblem):
            yield ParseProblem(line.line, prefix + line.message)
            continue
        # Skipped lines become blank so paragraphs and line numbers stay where they were.
        while len(lines) < lineno - 1:
            lines.append("")
        lines.append(line)
    fields, consumed = _front_matter(lines)
    at = None
    for key in ("date", "created", "created_at"):
        if key in fields:
            at = _maybe_datetime(fields[key])
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
        problem = _check_turn(turn)
        if problem:
            yield ParseProblem(start, prefix + problem.message)
            continue
        yield turn
        index += 1


def _markdown_files(root: Path) -> list[Path]:
    found: list[Path] = []
    # os.walk does not follow directory symlinks, so a link loop cannot trap us.
    for dirpath, dirnames, filenames in os.walk(root):
        dirnames[:] = [d for d in dirnames if not d.startswith(".")]  # .git, .obsidian, .trash
        for name in filenames:
            if name.lower().endswith((".md", ".markdown")) and not name.startswith("."):
                found.append(Path(dirpath, name))
    return sorted(found, key=lambda p: p.relative_to(root).as_posix())


def _parse_markdown(source: Path | BinaryIO, default_session: str) -> Iterator[Item]:
    if not isinstance(source, Path):
        yield from _parse_markdown_doc(source, default_session, None, None)
        return
    if not source.is_dir():
        mtime = datetime.fromtimestamp(source.stat().st_mtime)
        with source.open("rb") as fh:
            yield from _parse_markdown_doc(fh, source.name, source.name, mtime)
        return
    for path in _markdown_files(source):
        rel = path.relative_to(source).as_posix()
        try:
            mtime = datetime.fromtimestamp(path.stat().st_mtime)
            fh = path.open("rb")
        except OSError as exc:
            # One unreadable note must not abort a whole vault import.
            yield ParseProblem(None, f"{rel}: cannot read file ({exc.strerror or exc}); skipped")
            continue
        with fh:
            yield from _parse_markdown_doc(fh, rel, rel, mtime)


# --------------------------------------------------------------------------- entry point


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
        return _parse_markdown(source, default_session)
    if fmt == "text":
        return _streamed(source, _parse_text, default_session)
    if fmt == "jsonl":
        return _streamed(source, _parse_jsonl, default_session)
    # Document formats are read whole (lazily, so OSError surfaces on first iteration like the others).
    parser = _parse_chatgpt if fmt == "chatgpt" else _parse_locomo
    return _document(source, parser, default_session)


def _document(
    source: Path | BinaryIO, parser: Callable[[bytes, str], Iterator[Item]], default_session: str
) -> Iterator[Item]:
    yield from parser(_read_all(source), default_session)
