"""What every import format yields, and the reading every parser shares: `Turn` and `ParseProblem`,
datetimes (naive local wall-clock), line and document input with their limits, and the turn checks.

Time handling: every `Turn.at` is a *naive local wall-clock* datetime. Naive timestamps in the source
are taken as they are; aware ones (``Z``, ``+09:00``) and unix seconds are converted to the machine's
local time and the tzinfo is dropped, so all values are comparable with each other and with
`datetime.now()`.
"""

from __future__ import annotations

import contextlib
import io
import json
import math
import re
from collections.abc import Iterator
from dataclasses import dataclass, field
from datetime import datetime, timedelta, timezone
from pathlib import Path
from typing import Any, BinaryIO

HEAD_SIZE = 64 * 1024
BOM = b"\xef\xbb\xbf"
# A single line larger than this is reported and skipped instead of being buffered whole.
MAX_LINE_BYTES = 16 * 1024 * 1024
# Past this many bytes without a line break the input is no text (`zk import /dev/zero` ran until killed):
# the import stops there with one line. A document read whole (JSON) stops at the same size.
MAX_UNBROKEN_BYTES = 4 * MAX_LINE_BYTES
MAX_DOCUMENT_BYTES = 16 * MAX_LINE_BYTES
_CHUNK = 64 * 1024
STOP = b"\x00stop"  # iter_raw_lines: the input has no line break for MAX_UNBROKEN_BYTES; nothing follows


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


class DocumentProblem(ParseProblem):
    """The whole document could not be read (not JSON, not UTF-8): a format read whole imports nothing, and
    `zk import` says so in one line naming the file."""

    def sentence(self, name: str) -> str:
        """"deep.json is not valid JSON (nested too deeply)", "a.json is not valid JSON (line 3: …)"."""
        what, _, detail = self.message.partition(": ")
        where = f"line {self.line}: " if self.line else ""
        return f"{name} is {what} ({where}{detail})" if detail else f"{name}: {where}{self.message}"


Item = Turn | ParseProblem


# -- datetimes --------------------------------------------------------------------------------

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


def maybe_datetime(value: Any) -> datetime | None:
    if value is None or isinstance(value, bool) or not isinstance(value, (str, int, float)):
        return None
    try:
        return parse_datetime(value)
    except ValueError:
        return None


# -- input ------------------------------------------------------------------------------------


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


def check_turn(turn: Turn) -> ParseProblem | None:
    for value in (turn.text, turn.speaker or "", *turn.meta.values(), turn.session_key):
        why = _bad_string(value)
        if why:
            return ParseProblem(turn.line, f"turn text or fields {why}; skipped")
    return None


def record_turn(turn: Turn, record: int) -> Turn | ParseProblem:
    """A turn of a JSON document's `record`-th record, or the problem that keeps it out (the shared
    emitter of the whole-document formats: a caller counts `index` only for turns)."""
    problem = check_turn(turn)
    if problem:
        problem.line, problem.record = None, record
        return problem
    return turn


def iter_raw_lines(stream: BinaryIO) -> Iterator[tuple[int, bytes | None]]:
    """Yield (1-based line number, bytes without EOL); None for a line too long to keep; STOP (and no more)
    when no line break comes for MAX_UNBROKEN_BYTES.

    Reads fixed-size chunks so any object with `.read(n)` works and memory stays bounded.
    """
    partial: list[bytes] = []  # pieces of the current line not yet ended by a newline
    partial_len = 0
    overflow = False  # inside an over-long line: drop bytes until its newline
    dropped = 0  # bytes of the over-long line dropped so far
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
            partial, partial_len, dropped = [], 0, 0
            lineno += 1
            start = nl + 1
        if overflow:
            dropped += len(chunk) - start
            if dropped > MAX_UNBROKEN_BYTES:
                yield lineno, STOP
                return
        elif start < len(chunk):
            partial.append(chunk[start:])
            partial_len += len(chunk) - start
            if partial_len > MAX_LINE_BYTES:
                overflow, dropped, partial, partial_len = True, partial_len, [], 0
    if overflow:
        yield lineno, None
    elif partial:
        yield lineno, b"".join(partial)


def iter_lines(stream: BinaryIO) -> Iterator[tuple[int, str | ParseProblem]]:
    """Decoded lines (BOM and CR removed) or a ParseProblem for an unusable line."""
    for lineno, raw in iter_raw_lines(stream):
        if raw is STOP:
            yield lineno, ParseProblem(lineno, f"no line break in {MAX_UNBROKEN_BYTES // 2**20} MiB: not a text "
                                       "file; stopped reading here")
            return
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


def decode_document(data: bytes) -> str | ParseProblem:
    data = data.removeprefix(BOM)
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        # Report the line of the first bad byte so the user can find it.
        line = data.count(b"\n", 0, exc.start) + 1
        return ParseProblem(line, "invalid UTF-8 bytes; the whole document was skipped")


def load_json_document(data: bytes) -> Any | DocumentProblem:
    text = decode_document(data)
    if isinstance(text, ParseProblem):
        return DocumentProblem(text.line, text.message)
    try:
        return json.loads(text)
    except json.JSONDecodeError as exc:
        return DocumentProblem(exc.lineno, f"not valid JSON: {exc.msg}")
    except RecursionError:
        return DocumentProblem(None, "not valid JSON: nested too deeply")


def read_all(source: Path | BinaryIO) -> bytes:
    """The whole document; ZkError past MAX_DOCUMENT_BYTES (a device or a runaway pipe never ends)."""
    from ..core.errors import ZkError

    chunks, size = [], 0
    with open(source, "rb") if isinstance(source, Path) else contextlib.nullcontext(source) as stream:
        while chunk := stream.read(_CHUNK):
            chunks.append(bytes(chunk))
            size += len(chunk)
            if size > MAX_DOCUMENT_BYTES:
                raise ZkError(f"the input is larger than {MAX_DOCUMENT_BYTES // 2**20} MiB, more than one "
                              "document can be; split it, or import it as lines (--format text or jsonl)")
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


# -- fields shared by the JSON formats ---------------------------------------------------------


def scalar(value: Any) -> str | None:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, (str, int, float)):
        return str(value)
    return None


def content_text(content: Any) -> str:
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


