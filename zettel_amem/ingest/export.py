"""Backup and restore: `zk export --format jsonl` and `zk import` of that file.

The export holds every note with all of its fields (links, version history, session, status), but
not the vectors: they are recomputed on restore with the store's embedder, which is deterministic,
so a restored store is the same store (same ids, links, versions) without shipping megabytes of floats.
"""

from __future__ import annotations

import hashlib
import io
import json
import re
import uuid
from collections.abc import Callable
from datetime import datetime
from pathlib import Path
from typing import IO, BinaryIO

from ..core.errors import ZkError
from ..core.models import CONSTRUCTED, PENDING, READY, Note, journal_period, session_id_for
from ..core.passages import attach_passages
from ..core.text import has_control_chars, hashtags
from ..memory import Memory, validate_content
from ..storage.database import SCHEMA_VERSION
from ..storage.store import note_to_row, row_to_note

EXPORT_TYPE = "zk-export"


def is_export(head: bytes) -> bool:
    first = head.lstrip(b"\xef\xbb\xbf").split(b"\n", 1)[0]
    try:
        return json.loads(first).get("type") == EXPORT_TYPE
    except (ValueError, AttributeError):
        return False


def export_jsonl(memory: Memory, out: IO[str], all_notebooks: bool = True) -> int:
    """Write a header line, then one line per note (oldest first): every notebook, or only the memory's
    own with `all_notebooks=False` (what `zk export` does unless `--all`). Returns the number of notes."""
    notes = memory.store.notes(None if all_notebooks else memory.notebook)
    notes.sort(key=lambda n: (n.created, n.at, n.seq, n.id))
    header = {"type": EXPORT_TYPE, "schema_version": SCHEMA_VERSION, "embedder": memory.store.embedder_name,
              "notes": len(notes), "notebooks": sorted({n.notebook for n in notes})}
    out.write(json.dumps(header, ensure_ascii=False) + "\n")
    for note in notes:
        row = note_to_row(note)
        row.pop("vector")
        row["history"] = json.loads(row["history"] or "[]")
        out.write(json.dumps({"type": "note", **row}, ensure_ascii=False) + "\n")
    return len(notes)


_NOTE_ID = re.compile(r"^[0-9a-f]{32}$")  # what `uuid4().hex` makes; anything else cannot be `zk rm`-ed safely
_TEXT_FIELDS = ("context", "kind", "session_id", "speaker", "source", "content_hash", "error")
_LIST_FIELDS = ("keywords", "tags", "links", "user_tags")


def _check_field_types(data: dict) -> None:
    """Each scalar and list field of an export line has the type the store keeps (dates ISO, texts strings,
    lists of strings, 64-bit whole numbers, kind note/turn); raises ValueError naming the first that does
    not. Kept apart from `_record_to_note`, which checks what a note needs beyond types."""
    for name in ("at", "created"):
        value = data.get(name)
        if name == "at" or value:
            try:
                datetime.fromisoformat(value)
            except (TypeError, ValueError):
                raise ValueError(f"'{name}' is not an ISO date: {str(value)[:40]!r}") from None
    for name in _TEXT_FIELDS:
        if data.get(name) is not None and not isinstance(data[name], str):
            raise ValueError(f"'{name}' is not a string")
    for name in _LIST_FIELDS:
        value = data.get(name)
        if value is not None and not (isinstance(value, list) and all(isinstance(v, str) for v in value)):
            raise ValueError(f"'{name}' is not a list of strings")
    for name in ("version", "seq"):
        value = data.get(name)
        if value is not None and (not isinstance(value, int) or isinstance(value, bool) or not 0 <= value < 2**63):
            raise ValueError(f"'{name}' is not a whole number")  # (the store holds 64-bit ones)
    if (data.get("kind") or "note") not in ("note", "turn"):
        raise ValueError(f"'kind' is not note or turn: {str(data.get('kind'))[:40]!r}")


def _record_to_note(data: object) -> tuple[Note, list[str]]:
    """One export line as a Note, every field checked; raises ValueError naming the first bad field.
    Returns the note and the link targets that were dropped (not note ids)."""
    if not isinstance(data, dict) or data.get("type", "note") != "note":
        raise ValueError("not a note record")
    if not isinstance(data.get("id"), str):
        raise ValueError("its id is missing or not a string")
    content = data.get("content")
    if not isinstance(content, str):
        raise ValueError("its content is missing or not a string")
    try:
        validate_content(content)
    except ZkError as exc:
        raise ValueError(str(exc)) from None
    _check_field_types(data)
    notebook = data.get("notebook") or "main"
    if not isinstance(notebook, str) or not notebook.strip() or has_control_chars(notebook):
        raise ValueError("'notebook' is not a notebook name")
    history = data.get("history") or []
    if not isinstance(history, list) or not all(isinstance(v, dict) for v in history):
        raise ValueError("'history' is not a list of versions")
    links = list(data.get("links") or [])
    dropped = [i for i in links if not _NOTE_ID.match(i)]
    row = {**data, "notebook": notebook, "links": [i for i in links if _NOTE_ID.match(i)],
           "history": json.dumps(history, ensure_ascii=False), "vector": None}
    if "user_tags" not in data:  # an export from before schema 2: the #tags are in the text
        row["user_tags"] = hashtags(content)
    if row.get("status") not in (PENDING, CONSTRUCTED, READY):
        row["status"] = PENDING  # an unknown stage: run the pipeline again rather than trust it
    row.pop("type", None)
    try:
        note = row_to_note(row)
    except (KeyError, TypeError, ValueError) as exc:
        raise ValueError(f"its history cannot be read ({exc.__class__.__name__})") from None
    return note, dropped


def restore(memory: Memory, path: Path | BinaryIO, batch_size: int = 128,
            on_progress: Callable[[int, int | None], None] | None = None, notebook: str | None = None) -> dict:
    """Load an export (a file, or a binary stream such as stdin) into this home; notes whose id
    already exists are left as they are.

    Every record is checked before it is stored, and each one not restored as it is gets a line in
    `failed`: a broken field skips the record; an id that is not a note id (`ab`, `xyz`) or that an
    earlier record of the file already used is given a new id (its words are never dropped); an exact
    repeat of an earlier record is skipped. `notebook` (the user's explicit `-n`) puts the notes into
    that notebook; a backup of several notebooks is then refused, since merging them is not a restore.
    """
    run = _Restore(memory, batch_size, on_progress, notebook)
    name = str(path) if isinstance(path, Path) else getattr(path, "name", None) or "stdin"
    name = name if isinstance(name, str) else "stdin"
    opened = open(path, encoding="utf-8-sig") if isinstance(path, Path) else io.TextIOWrapper(
        path, encoding="utf-8-sig")
    try:
        with opened as lines:
            _check_header(lines.readline(), name, notebook)
            for number, line in enumerate(lines, 2):
                if line.strip():
                    run.take(number, line)
        run.flush()
    except UnicodeDecodeError as exc:
        raise ZkError(f"{name} is not valid UTF-8 (byte {exc.start}); {run.added} note(s) restored before it") from None
    return {"format": EXPORT_TYPE, "added": run.added, "skipped_duplicates": run.skipped, "failed": run.failed,
            "session_ids": list(run.sessions), "notebook": notebook}


def _check_header(first_line: str, name: str, notebook: str | None) -> None:
    """Refuse what is not a zk export this version can read, and a backup of several notebooks for `-n`."""
    try:
        header = json.loads(first_line or "{}")
    except ValueError:
        header = {}
    if not isinstance(header, dict) or header.get("type") != EXPORT_TYPE:
        raise ZkError(f"{name} is not a zk export")
    schema = header.get("schema_version", 0)
    if not isinstance(schema, int) or isinstance(schema, bool):
        raise ZkError(f"{name}: the export's schema_version {schema!r} is not a number")
    if schema > SCHEMA_VERSION:
        raise ZkError(f"{name} comes from a newer zk (schema {schema}); upgrade zettel-amem")
    listed = header.get("notebooks")
    if notebook is not None and isinstance(listed, list) and len(listed) > 1:
        raise ZkError(f"{name} holds {len(listed)} notebooks ({', '.join(map(str, listed[:5]))}); restore it "
                      "without -n (each note goes back to its own notebook), or export one notebook")


class _Restore:
    """One restore's records, checked one by one and stored in batches (`restore`)."""

    def __init__(self, memory: Memory, batch_size: int, on_progress: Callable[[int, int | None], None] | None,
                 notebook: str | None):
        self.memory, self.batch_size, self.on_progress, self.notebook = memory, batch_size, on_progress, notebook
        self.added = self.skipped = 0
        self.batch: list[Note] = []
        self.failed: list[dict] = []
        self.seen: dict[str, tuple[int, str]] = {}  # id -> (line of its first record, a digest of that record)
        self.sessions: dict[str, None] = {}  # imported chats among the restored notes: to become episodes again
        self.source_notebook: str | None = None

    def report(self, number: int, message: str) -> None:
        self.failed.append({"line": number, "record": None, "message": message})

    def take(self, number: int, line: str) -> None:
        try:
            note, dropped = _record_to_note(json.loads(line))
        except ValueError as exc:  # json's decode error is a ValueError too
            self.report(number, f"not a valid note record ({str(exc)[:120]}); skipped")
            return
        digest = hashlib.sha256(line.strip().encode("utf-8", "surrogatepass")).hexdigest()
        seen = self.seen
        if note.id in seen and seen[note.id][1] == digest:
            self.report(number, f"a repeat of line {seen[note.id][0]}; skipped")
            return
        if not _NOTE_ID.match(note.id) or note.id in seen:
            why = (f"id {note.id[:40]!r} is not a note id" if not _NOTE_ID.match(note.id)
                   else f"id {note.id[:12]} was already used on line {seen[note.id][0]}")
            note.id = uuid.uuid4().hex
            self.report(number, f"{why}; restored as {note.id[:8]}")
        seen.setdefault(note.id, (number, digest))
        if dropped:
            self.report(number, f"dropped {len(dropped)} link(s) that are not note ids")
        if self.notebook is not None and not self._into_notebook(number, note):
            return
        self.batch.append(note)
        if len(self.batch) >= self.batch_size:
            self.flush()

    def _into_notebook(self, number: int, note: Note) -> bool:
        """Move the note into the `-n` notebook; False (reported) for a note of a second notebook."""
        self.source_notebook = self.source_notebook or note.notebook
        if note.notebook != self.source_notebook:
            self.report(number, f"belongs to notebook '{note.notebook}', not '{self.source_notebook}' like the "
                        f"notes before it; restore without -n to keep it; skipped")
            return False
        if note.notebook != self.notebook:
            _move(note, self.notebook, self.memory.settings.journal_session)
        return True

    def flush(self) -> None:
        batch, memory = self.batch, self.memory
        if not batch:
            return
        existing = set(memory.store.get_many([n.id for n in batch]))
        fresh = [n for n in batch if n.id not in existing]
        self.skipped += len(batch) - len(fresh)
        if fresh:
            vectors = memory.embedder.embed_passages([n.embedding_text() for n in fresh])
            for note, vector in zip(fresh, vectors):
                note.vector = vector.tolist()
            attach_passages(fresh, memory.embedder.embed_passages)
            memory.store.add(fresh)
            self.added += len(fresh)
            self.sessions.update((n.session_id, None) for n in fresh if n.session_id and n.kind == "turn")
        batch.clear()
        if self.on_progress:
            self.on_progress(self.added + self.skipped, None)


def _move(note: Note, notebook: str, journal_session: str) -> None:
    """Into another notebook: a journal entry joins that notebook's week (or day) session there."""
    note.notebook = notebook
    if note.kind == "note":
        note.session_id = session_id_for(notebook, journal_period(note.at, journal_session).key)


# Shared with the vault's import (vault_sync.py): a page is checked exactly as a backup record is.
record_to_note = _record_to_note
move_to_notebook = _move
