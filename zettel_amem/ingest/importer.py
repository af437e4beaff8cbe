"""The library side of `zk import`: parsed turns -> raw notes, streamed, batched, idempotent, resumable.

One turn, one note. LoCoMo-style questions are answered from evidence that is a single turn, and a
turn has exactly one speaker and one time; grouping consecutive short turns would blur both and
make a retrieved note cite more than it supports. Short turns cost one embedding row each, which
the batched bulk path makes cheap; the LLM later skips trivial ones (`text.is_trivial`).

Identity (what makes an import idempotent and resumable) is `content_hash` over the validated
content and the speaker, plus where the turn sits, never the file name or the import time:

- a turn with its own timestamp: that time, the notebook and the session key the log gives (jsonl
  session ids, ChatGPT conversation ids, LoCoMo sample/session, markdown file paths; `DEFAULT_SESSION`
  for a log that names none), and an occurrence number (the n-th identical turn within one import
  gets n mixed in), so an overlapping newer export of the same chat adds only its new turns;
- a turn without a timestamp in a log that names no session ("Speaker: text" lines piped in): the
  session it was placed in instead of a time, with occurrence numbers counted from that session's
  start. Such a log continues a stored session only when its first turns line up with that
  session's turns (`HEAD_TURNS` of them, or the session's whole opening for a short chat): a
  re-import, an appended or a sliding-window export. Otherwise it is a new session, so two chats
  that both open with "A: hi" keep every turn. A turn found at its own place in the continued
  session is a duplicate whatever its hash (a line deleted in a newer export shifts the later
  ones, which are then found by their hash instead);
- markdown: only a front-matter date counts as the log's time (the file's mtime changes with every
  edit); the session key is the file's path inside the imported folder.

Sessions: `session_id = "s" + sha256(notebook, session key)[:15]`. A log without its own session key
is its own session: the stored session its first turns line up with (`seq` shifted to follow on),
else one derived from its first turns. Either way it is stable across re-imports, renamed files and
stdin, and never depends on the file name.

Times: `Note.at` is the log's time (seconds precision); a turn without one inherits the previous
timed turn of its session, else the import time. Order within a session is `seq` (= `Turn.index`),
never `at` (a LoCoMo session has one time for all its turns).

Durability: every batch is embedded once and written in one atomic store commit; turns whose hash
is already stored are dropped before embedding. A killed import re-run from the start therefore
skips what was committed and finishes the rest, with nothing lost or duplicated. Chat turns are stored
`ready`, searched as written: with the bundled model the LLM steps did not pay for themselves on chats
(`enrich_turns`, README). With `enrich` (and for markdown notes) they are stored `pending`, and the
enrichment runs later through the usual queue (`Memory.process_pending`).
Two imports of the same log running at the same time cannot both write a turn: the store re-checks
the hashes inside its write lock (`Store.add(skip_existing=True)`).
"""

from __future__ import annotations

import io
from collections.abc import Callable, Iterator
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import BinaryIO

from ..core import dates
from ..core.errors import NotFound, ZkError
from ..core.models import READY, Note, session_id_for
from ..core.text import is_blank
from ..memory import Memory, content_hash
from . import formats
from .formats import STREAMED, WHOLE
from .turns import HEAD_SIZE, DocumentProblem, ParseProblem, Turn, peek_head

DEFAULT_SESSION = "log"  # session key of turns whose log names no session
HEAD_TURNS = 3  # first turns of a session-less log that must line up to continue a stored session

Progress = Callable[[int, "int | None"], None]


@dataclass
class ImportReport:
    format: str
    added: int = 0
    skipped_duplicates: int = 0
    failed: list[dict] = field(default_factory=list)  # {"line": int|None, "record": int|None, "message": str}
    session_ids: list[str] = field(default_factory=list)

    def to_json(self) -> dict:
        return asdict(self)


class EndsOnce(io.RawIOBase):
    """A stream whose first end is its last. A terminal gives an end of input for each Ctrl-D and then goes
    on reading; format detection reads to one end and the import to another, so without this the first
    Ctrl-D at a terminal would not end `zk import -`."""

    def __init__(self, stream: BinaryIO):
        self.stream, self.ended = stream, False

    def readable(self) -> bool:
        return True

    def readinto(self, buffer) -> int:
        if self.ended:
            return 0
        data = getattr(self.stream, "read1", self.stream.read)(len(buffer))
        if not data:
            self.ended = True
            return 0
        buffer[: len(data)] = data
        return len(data)


def open_source(source: str, stdin: BinaryIO) -> Path | BinaryIO:
    """What `zk import SOURCE` reads: "-" is standard input; a FIFO, `<(...)` or `/dev/stdin` on a pipe
    is opened once and read as a stream (opening it again would lose what format detection read);
    a regular file or a folder stays a path."""
    if source == "-":
        return io.BufferedReader(EndsOnce(stdin))
    path = Path(source).expanduser()
    if path.exists() and not path.is_file() and not path.is_dir():
        try:
            return path.open("rb")
        except OSError as exc:
            raise ZkError(f"cannot read {source}: {exc.strerror or exc}") from None
    return path


def backup_kind(stream: Path | BinaryIO, fmt: str) -> tuple[str | None, Path | BinaryIO]:
    """What `zk import` was given: "vault" (a folder `zk export --format markdown` wrote), "export" (a
    JSONL backup: restored with the same ids, links and versions whatever the format option says and
    wherever it comes from, `zk export | zk --home new import -`) or None (notes and chats to import).
    Returns the stream to read on (a pipe's head, once peeked, is kept in front of it)."""
    from .export import is_export
    from .vault import is_vault, looks_like_vault

    if isinstance(stream, Path) and stream.is_dir():
        vault = is_vault(stream) or looks_like_vault(stream)  # a copy without the hidden marker is one too
        return ("vault" if vault and formats.reads_folders(fmt) else None), stream
    if isinstance(stream, Path):
        head = read_head(stream)
    else:
        head, stream = peek_head(stream)
    return ("export" if fmt == "zk-export" or is_export(head) else None), stream


BINARY_SHARE = 0.1  # past this share of undecodable bytes and control characters a head is no text


def looks_binary(head: bytes) -> bool:
    """Whether the first bytes of an input are binary data (`/dev/urandom`, an image): a share of them is
    no UTF-8 or a control character. A stray NUL or a bad byte in a real log stays a skipped line."""
    text = head.decode("utf-8", errors="replace")
    if not text:
        return False
    bad = sum(ch == "\ufffd" or (ord(ch) < 32 and ch not in "\t\n\r\f\v") for ch in text)
    return bad / len(text) > BINARY_SHARE


def read_head(path: Path) -> bytes:
    """The first bytes of a regular file, for format detection ("" for anything else)."""
    try:
        with path.open("rb") as fh:
            return fh.read(4096)
    except IsADirectoryError:
        return b""
    except FileNotFoundError:
        raise NotFound(f"no such file or folder: {path}") from None
    except OSError as exc:
        raise ZkError(f"cannot read {path}: {exc.strerror or exc}") from None


def _open_for_detection(source: Path | BinaryIO) -> tuple[bytes, Path | BinaryIO]:
    if isinstance(source, Path):
        if source.is_dir():
            return b"", source
        with source.open("rb") as fh:
            return fh.read(HEAD_SIZE), source
    return peek_head(source)


def _estimate_total(source: Path | BinaryIO, fmt: str) -> int | None:
    """Non-blank lines of a file a streamed format reads: one turn a line for plain text, close to it for
    message records."""
    if formats.get(fmt).read != STREAMED or not isinstance(source, Path) or not source.is_file():
        return None
    total, carry = 0, b""
    with source.open("rb") as fh:
        while chunk := fh.read(1 << 20):
            lines = (carry + chunk).split(b"\n")
            carry = lines.pop()[-4096:]  # the unfinished line; only whether it is blank matters
            total += sum(1 for line in lines if line.strip())
    return total + (1 if carry.strip() else 0) or None


class _Importer:
    def __init__(self, memory: Memory, fmt: str, source_name: str, batch_size: int,
                 on_progress: Progress | None, total: int | None, enrich: bool):
        self.memory = memory
        self.enrich = enrich
        self.notebook = memory.notebook
        self.report = ImportReport(format=fmt)
        self.dated_by = formats.get(fmt).dated_by()
        self.source_name = source_name
        self.batch_size = max(1, batch_size)
        self.on_progress = on_progress
        self.total = total
        self.import_time = dates.now().isoformat()  # ZK_TODAY pins it, as it pins `zk add`'s time
        self.batch: list[Note] = []
        self.done = 0  # parsed items (turns and problems) consumed so far
        self.occurrences: dict[str, int] = {}  # base hash -> times seen (one small entry per turn)
        self.last_at: dict[str, str] = {}
        self.default_session_id: str | None = None
        self.default_seq_offset = 0
        self.head: list[tuple[Turn, Note]] = []  # first turns of a session-less log, not yet placed
        self.stored_turns: dict[int, Note] = {}  # by seq: the stored chat a session-less log continues
        self.sessions: dict[str, None] = {}  # ordered set of session ids touched

    # -- per turn ---------------------------------------------------------------------------------
    def _log_time(self, turn: Turn) -> str:
        """The log's own timestamp for identity; "" when the log has none."""
        if turn.at is None:
            return ""
        if self.dated_by and not any(k in turn.meta for k in self.dated_by):
            return ""  # the parser fell back to a guess (a file's mtime, which changes on every edit)
        return turn.at.isoformat()

    def _scope(self, turn: Turn, note: Note) -> str:
        """What a turn's identity is scoped to: the log's own session key, or, for an untimed turn of
        a session-less log, the session it was placed in (so two chats that share a line stay apart)."""
        key = note.session_id if turn.session_key == DEFAULT_SESSION and not self._log_time(turn) else turn.session_key
        return f"{self.notebook}\x1f{key}"

    def _base_hash(self, turn: Turn, note: Note) -> str:
        return content_hash(note.content, turn.speaker, self._log_time(turn), self._scope(turn, note))

    def _session_turns(self, session_id: str) -> dict[int, Note]:
        return {n.seq: n for n in self.memory.store.session_turns(session_id)}

    def _lines_up(self, head: list[tuple[Turn, Note]], stored: dict[int, Note], first_seq: int) -> bool:
        """Whether the log's first turns continue the stored session from `first_seq`: every stored
        turn at their positions says the same, and either `HEAD_TURNS` of them do, or the log starts
        where the session starts and only runs past its end (a longer export of a short chat). A
        shorter overlap could be a different chat that happens to open with one of its lines."""
        matched, past_end, last = 0, True, max(stored)
        for turn, note in head:
            position = first_seq + turn.index - head[0][0].index
            there = stored.get(position)
            if there is None:
                past_end = past_end and position > last
            elif (there.content, there.speaker) != (note.content, note.speaker):
                return False
            else:
                matched += 1
        at_start = first_seq == min(stored) and head[0][0].index == 0
        return matched >= HEAD_TURNS or (at_start and past_end)

    def _find_session(self, head: list[tuple[Turn, Note]]) -> tuple[str, int, dict[int, Note]]:
        """(session id, seq offset, its stored turns by seq) of a session-less log, decided from its
        first turns."""
        turn, note = head[0]
        if self._log_time(turn):  # a timed first turn is found by its identity, which has its time
            stored = self.memory.store.notes_with_hash(self._base_hash(turn, note))
            if stored and stored[0].session_id:
                session_id = stored[0].session_id
                return session_id, stored[0].seq - turn.index, self._session_turns(session_id)
        else:  # an untimed one: a stored chat whose turns line up with the log's first turns
            candidates = self.memory.store.turns_saying(self.notebook, note.content, note.speaker)
            for candidate in sorted(candidates, key=lambda c: (c.created, c.seq)):
                stored_turns = self._session_turns(candidate.session_id or "")
                if self._lines_up(head, stored_turns, candidate.seq):
                    return candidate.session_id or "", candidate.seq - turn.index, stored_turns
        opening = "\x1e".join(content_hash(n.content, t.speaker, self._log_time(t)) for t, n in head)
        return session_id_for(self.notebook, f"{DEFAULT_SESSION}:{content_hash(opening)}"), 0, {}

    def _display_time(self, turn: Turn) -> str:
        if turn.at is not None:
            when = turn.at.replace(microsecond=0).isoformat()
            self.last_at[turn.session_key] = when
            return when
        return self.last_at.get(turn.session_key, self.import_time)

    def take(self, turn: Turn) -> None:
        if is_blank(turn.text):  # a blank line, or one of only invisible characters (a zero-width space)
            return
        try:
            note = self.memory.new_note(turn.text, self._display_time(turn), kind="turn",
                                        speaker=turn.speaker, seq=turn.index)
            if not self.enrich:  # searched as written: no LLM work is queued for it (config.enrich_turns)
                note.status = READY
        except ZkError as exc:
            self.fail(turn.line, f"{self._where(turn)}{exc}; skipped")
            return
        if turn.session_key == DEFAULT_SESSION and self.default_session_id is None:
            self.head.append((turn, note))  # the session is decided once the first turns are in
            if len(self.head) >= HEAD_TURNS:
                self._resolve_default_session()
            return
        self._place(turn, note)

    def _resolve_default_session(self) -> None:
        head, self.head = self.head, []
        if not head:
            return
        self.default_session_id, self.default_seq_offset, self.stored_turns = self._find_session(head)
        # Continuing a stored chat: turns already at their positions are known, and occurrence
        # numbers count on from the stored turns before the log's first one (a sliding window).
        first = head[0][0].index + self.default_seq_offset
        for seq, stored in self.stored_turns.items():
            if seq < first:
                base = content_hash(stored.content, stored.speaker, "", f"{self.notebook}\x1f{stored.session_id}")
                self.occurrences[base] = self.occurrences.get(base, 0) + 1
        for turn, note in head:
            self._place(turn, note)

    def _place(self, turn: Turn, note: Note) -> None:
        """Give the turn its session and identity, and queue it for the batch."""
        default = turn.session_key == DEFAULT_SESSION
        if default:
            assert self.default_session_id is not None
            note.session_id = self.default_session_id
            note.seq += self.default_seq_offset
            note.source = turn.session_title or self.source_name
        else:
            note.session_id = session_id_for(self.notebook, turn.session_key)
            note.source = turn.session_title or turn.session_key
        base = self._base_hash(turn, note)
        n = self.occurrences.get(base, 0)
        self.occurrences[base] = n + 1  # the n-th identical turn: n mixed in, so none is dropped
        note.content_hash = base if n == 0 else content_hash(
            note.content, turn.speaker, self._log_time(turn), f"{self._scope(turn, note)}\x1f{n}")
        there = self.stored_turns.get(note.seq) if default else None
        if there is not None and (there.content, there.speaker) == (note.content, note.speaker):
            note.content_hash = there.content_hash  # already stored at this very place: a duplicate
        self.sessions.setdefault(note.session_id)
        self.batch.append(note)

    @staticmethod
    def _where(turn: Turn) -> str:
        return "" if turn.line is not None else f"{turn.session_title or turn.session_key} #{turn.index}: "

    def fail(self, line: int | None, message: str, record: int | None = None) -> None:
        self.report.failed.append({"line": line, "record": record, "message": message})

    # -- per batch --------------------------------------------------------------------------------
    def flush(self) -> None:
        batch, self.batch = self.batch, []
        if batch:
            stored = self.memory.store.existing_hashes([n.content_hash for n in batch])
            fresh = [n for n in batch if n.content_hash not in stored]
            self.report.skipped_duplicates += len(batch) - len(fresh)
            if fresh:  # one embedding batch, one atomic commit; re-checked under the write lock
                added = self.memory.add_notes(fresh, skip_existing=True)
                self.report.added += len(added)
                self.report.skipped_duplicates += len(fresh) - len(added)
        if self.on_progress:
            total = self.total if self.total is None else max(self.total, self.done)
            self.on_progress(self.done, total)

    def run(self, items: Iterator[Turn | ParseProblem]) -> ImportReport:
        for item in items:
            self.done += 1
            if isinstance(item, ParseProblem):
                self.fail(item.line, item.message, item.record)
            else:
                self.take(item)
            if len(self.batch) >= self.batch_size:
                self.flush()
        self._resolve_default_session()  # a log shorter than HEAD_TURNS
        self.total = self.done
        self.flush()
        self.report.session_ids = list(self.sessions)
        return self.report


REMOTE_BATCH = 1000  # turns per commit on a shared (object-store) notebook


def _checked_source(source: Path | BinaryIO | str, fmt: str) -> Path | BinaryIO:
    """The source as a Path (a str made one, `~` expanded) or the stream itself, once the format is one zk
    knows and a path exists and is a folder only for a format that reads folders; raises ZkError (or
    NotFound) before anything is read."""
    if isinstance(source, str):
        source = Path(source)
    if fmt != "auto" and fmt not in formats.REGISTRY:
        raise ZkError(f"unknown format '{fmt}'; choose auto or one of: {', '.join(formats.names())}")
    if isinstance(source, Path):
        source = source.expanduser()
        if not source.exists():
            raise NotFound(f"no such file or folder: {source}")
        if source.is_dir() and not formats.reads_folders(fmt):
            folders = [f.name for f in formats.REGISTRY.values() if f.read == formats.FILES]
            raise ZkError(f"{source} is a folder; only --format {' or '.join(folders)} imports folders")
    return source


def _parsed(source: Path | BinaryIO, fmt: str, name: str) -> tuple[Iterator[Turn | ParseProblem], int | None]:
    """The source's turns and problems, read lazily, and their total for progress: exact for a format read
    whole (parsed from one in-memory document anyway: counted), else `_estimate_total`'s (None when it
    cannot tell). A document that cannot be read at all is a ZkError naming it: nothing to import."""
    items: Iterator[Turn | ParseProblem] = formats.parse(source, fmt, default_session=DEFAULT_SESSION)
    if formats.get(fmt).read == WHOLE:
        parsed = list(items)
        if len(parsed) == 1 and isinstance(parsed[0], DocumentProblem):
            raise ZkError(parsed[0].sentence(name))
        return iter(parsed), len(parsed)
    return items, _estimate_total(source, fmt)


def import_source(memory: Memory, source: Path | BinaryIO, fmt: str = "auto", *,
                  source_name: str | None = None, batch_size: int = 64,
                  on_progress: Progress | None = None,
                  on_format: Callable[[str], None] | None = None, enrich: bool | None = None) -> ImportReport:
    """Import a chat log / notes into `memory` as raw turn notes; see the module docstring.

    `enrich` (default: the `enrich_turns` setting) stores chat turns `pending`, for the LLM steps; else
    they are `ready` as written. Markdown notes are the user's own writing: always enriched, as `zk add`.

    `source` is a file, a markdown folder, or a binary stream (stdin). `fmt` is one of
    `formats.names()` or "auto". `on_progress(items_done, total_or_None)` is called after each batch;
    the total is exact for LoCoMo/ChatGPT, an estimate (non-blank lines) for text/jsonl files, None
    for streams and folders, and equals `items_done` in the final call. `on_format(format)` is called
    once the format is known (detected or given), before any turn is read.
    Problems with single lines or turns land in `report.failed`; only an unusable source raises ZkError.
    """
    source = _checked_source(source, fmt)
    name = source_name or (source.name if isinstance(source, Path) else "stdin")
    try:
        if fmt == "auto":
            head, source = _open_for_detection(source)
            path = source if isinstance(source, Path) else None
            fmt = formats.detect_format(path, head)
            if looks_binary(head):
                raise ZkError(f"{name} is not a text file (its first bytes are binary data); nothing imported")
            if formats.is_too_deep_json(path, head):
                raise ZkError(f"{name} is not valid JSON (nested too deeply)")
            if formats.is_unknown_json(path, head):
                raise ZkError(f"{name} is JSON of no format zk knows (it reads {', '.join(formats.names())}, and "
                              "zk's own backups); `--format text` imports it line by line")
        if on_format:
            on_format(fmt)
        items, total = _parsed(source, fmt, name)
        enrich = (memory.settings.enrich_turns if enrich is None else enrich) or formats.get(fmt).own_writing
        if memory.store.remote:  # each commit is requests, and each batch looks up the hashes of the ones before
            batch_size = max(batch_size, REMOTE_BATCH)
        importer = _Importer(memory, fmt, name, batch_size, on_progress, total, enrich)
        report = importer.run(items)
    except OSError as exc:
        raise ZkError(f"cannot read {name}: {exc.strerror or exc}") from None
    if report.added and not memory.store.remote:
        # A bulk write: fold it into the indexes now rather than when the LLM queue is drained, hours later
        # (the rows are searchable either way; indexed, a big import is searched at indexed speed). On a
        # shared store that upkeep is the worker's, one machine at a time (lease.py).
        memory.store.maintain()
    return report


__all__ = ["DEFAULT_SESSION", "ImportReport", "import_source", "open_source", "read_head", "session_id_for"]
