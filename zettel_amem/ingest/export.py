"""Backup and restore: `zk export --format jsonl` and `zk import` of that file.

The export holds every note with all of its fields (links, version history, session, status), but
not the vectors: they are recomputed on restore with the store's embedder, which is deterministic,
so a restored store is the same store (same ids, links, versions) without shipping megabytes of floats.
"""

from __future__ import annotations

import errno
import hashlib
import json
import os
import re
import uuid
from collections.abc import Callable
from contextlib import nullcontext
from datetime import datetime
from pathlib import Path
from typing import IO, BinaryIO

from ..core.errors import ZkError
from ..core.models import CONSTRUCTED, PENDING, READY, Note, journal_period, session_id_for
from ..core.passages import attach_passages
from ..core.text import has_control_chars, hashtags
from ..memory import Memory, content_hash, validate_content
from ..storage.database import SCHEMA_VERSION
from ..storage.store import note_to_row, row_to_note

EXPORT_TYPE = "zk-export"


def is_export(head: bytes) -> bool:
    first = head.lstrip(b"\xef\xbb\xbf").split(b"\n", 1)[0]
    try:
        return json.loads(first).get("type") == EXPORT_TYPE
    except (ValueError, AttributeError, RecursionError):  # nested too deeply: no export either
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


def write_backup(memory: Memory, target: Path, all_notebooks: bool = True) -> int:
    """`export_jsonl` into the file `target`, all or nothing: written to a temporary file beside it, synced,
    then renamed over it, so a full disk or an interrupt leaves the previous backup as it was (and no cut
    one). A target that is not a regular file (a device, a FIFO) is written in place. Raises a one-line
    ZkError for a folder, a missing folder or a failed write. Returns the number of notes."""
    target = target.expanduser()
    if target.is_dir():
        raise ZkError(f"cannot write {target}: it is a folder; give a file name, e.g. {target / 'backup.jsonl'}")
    if not target.parent.is_dir():
        raise ZkError(f"cannot write {target}: there is no folder {target.parent}")
    real = Path(os.path.realpath(target))  # a symlink stays one: its file is replaced
    if real.exists() and not os.access(real, os.W_OK):  # a backup made read-only on purpose stays as it is
        raise ZkError(f"cannot write {target}: Permission denied")
    if real.exists() and not real.is_file():
        try:
            with open(real, "w", encoding="utf-8") as out:
                return export_jsonl(memory, out, all_notebooks)
        except OSError as exc:
            raise ZkError(f"cannot write {target}: {exc.strerror or exc}") from None
    try:
        return _replace_with_backup(memory, real, all_notebooks)
    except OSError as exc:
        unchanged = f"{target} was not changed" if real.exists() else "nothing was written"
        if exc.errno in (errno.ENOSPC, errno.EDQUOT):
            raise ZkError(f"no space left on the disk of {real.parent}; {unchanged}") from None
        raise ZkError(f"cannot write {target}: {exc.strerror or exc}; {unchanged}") from None


def _replace_with_backup(memory: Memory, real: Path, all_notebooks: bool) -> int:
    temp = real.with_name(f".{real.name}.{uuid.uuid4().hex[:8]}.tmp")
    fd = os.open(temp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o666)  # the umask decides, as for any new file
    try:
        with open(fd, "w", encoding="utf-8") as out:
            count = export_jsonl(memory, out, all_notebooks)
            out.flush()
            os.fsync(out.fileno())
        if real.exists():
            os.chmod(temp, real.stat().st_mode & 0o7777)  # the old backup's permissions (a private 0600 stays so)
        os.replace(temp, real)
    except BaseException:  # a full disk, ^C: the old file is untouched, the partial one goes
        temp.unlink(missing_ok=True)
        raise
    try:  # the rename itself survives a power cut once the folder is synced
        folder = os.open(real.parent, os.O_RDONLY)
        try:
            os.fsync(folder)
        finally:
            os.close(folder)
    except OSError:
        pass
    return count


_NOTE_ID = re.compile(r"^[0-9a-f]{32}$")  # what `uuid4().hex` makes; anything else cannot be `zk rm`-ed safely
_SKIPPED = object()
# A record's deepest value (a version's change of a list field) is 6 levels down. Far deeper nesting is
# refused: stored, it would be read back with the store's own reads deep in a call stack (a RecursionError
# on every read of that note).
MAX_NESTING = 32
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


def _nested_deeper_than(value: object, limit: int) -> bool:
    """Whether lists and objects nest more than `limit` levels in `value` (walked without recursion)."""
    stack = [(value, 1)]
    while stack:
        item, depth = stack.pop()
        if isinstance(item, dict | list):
            if depth > limit:
                return True
            stack.extend((child, depth + 1) for child in (item.values() if isinstance(item, dict) else item))
    return False


def _record_to_note(data: object) -> tuple[Note, list[str]]:
    """One export line as a Note, every field checked; raises ValueError naming the first bad field.
    Returns the note and the link targets that were dropped (not note ids)."""
    if not isinstance(data, dict) or data.get("type", "note") != "note":
        raise ValueError("not a note record")
    if _nested_deeper_than(data, MAX_NESTING):
        raise ValueError(f"nested more than {MAX_NESTING} levels deep")
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
    A note whose id another notebook of this home holds (a backup of one notebook restored into another)
    comes in as a copy with a new id (`copied`, and the notebooks holding the ids in `copied_from`).
    A backup cut short says so: its last record cut mid-line, and fewer records than its header counts.
    """
    run = _Restore(memory, batch_size, on_progress, notebook)
    name = str(path) if isinstance(path, Path) else getattr(path, "name", None) or "stdin"
    name = name if isinstance(name, str) else "stdin"
    # Read as bytes and decoded line by line: a backup cut inside a character (a full disk) loses that
    # record only, and says so.
    with open(path, "rb") if isinstance(path, Path) else nullcontext(path) as lines:
        listed = _check_header(lines.readline().decode("utf-8-sig", errors="replace"), name, notebook)
        for number, line in enumerate(lines, 2):
            if line.strip():
                run.take(number, line)
    run.flush()
    run.compare_count(listed)
    return {"format": EXPORT_TYPE, "added": run.added, "skipped_duplicates": run.skipped, "failed": run.failed,
            "session_ids": list(run.sessions), "notebook": notebook, "copied": sum(run.copied.values()),
            "copied_from": sorted(run.copied)}


def _check_header(first_line: str, name: str, notebook: str | None) -> int | None:
    """Refuse what is not a zk export this version can read, and a backup of several notebooks for `-n`.
    Returns the number of notes the header says the backup holds (None when it does not say)."""
    try:
        header = json.loads(first_line or "{}")
    except (ValueError, RecursionError):
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
    count = header.get("notes")
    return count if isinstance(count, int) and not isinstance(count, bool) else None


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
        self.records = 0  # the whole records read (a last line cut mid-record is not one)
        self.copied: dict[str, int] = {}  # notebook of this home that holds the ids -> notes restored as copies
        self.session_held: dict[tuple[str, str], bool] = {}  # (session, notebook) -> another notebook holds it

    def report(self, number: int | None, message: str) -> None:
        self.failed.append({"line": number, "record": None, "message": message})

    def compare_count(self, listed: int | None) -> None:
        """A backup cut at a line's end reads as a whole one: the header's count tells."""
        if listed is not None and self.records < listed:
            self.report(None, f"the backup holds {self.records} of {listed} notes (cut short?)")

    def decode(self, number: int, line: bytes) -> object:
        """The line's JSON; _SKIPPED (and a line in `failed`) when it is not JSON."""
        self.records += 1
        try:
            return json.loads(line.decode("utf-8"))
        except RecursionError:  # a crafted line: skip it, restore the rest
            self.report(number, "not valid JSON: nested too deeply; skipped")
        except ValueError as exc:  # UnicodeDecodeError and json's decode error are ValueErrors
            if not line.endswith(b"\n"):  # the file's last line, ending mid-record: a backup cut short
                self.records -= 1
                self.report(number, "the backup ends in the middle of this record (cut short?); skipped")
            elif isinstance(exc, UnicodeDecodeError):
                self.report(number, f"not valid UTF-8 (byte {exc.start + 1} of the line); skipped")
            else:
                self.report(number, f"not a valid note record ({str(exc)[:120]}); skipped")
        return _SKIPPED

    def take(self, number: int, line: bytes) -> None:
        if (data := self.decode(number, line)) is _SKIPPED:
            return
        try:
            note, dropped = _record_to_note(data)
        except ValueError as exc:
            self.report(number, f"not a valid note record ({str(exc)[:120]}); skipped")
            return
        digest = hashlib.sha256(line.strip()).hexdigest()
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
        copies = self._copy_what_others_hold(batch)
        existing = set(memory.store.get_many([n.id for n in batch]))
        fresh = [n for n in batch if n.id not in existing]
        for note in fresh:
            if note.id in copies:
                self.copied[copies[note.id]] = self.copied.get(copies[note.id], 0) + 1
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

    def _copy_what_others_hold(self, batch: list[Note]) -> dict[str, str]:
        """A note whose id another notebook of this home holds (a backup of notebook A restored into B with
        `zk -n B import`) comes in as a copy with an id of its own; so does a chat turn's session. Every id
        a note names (links, updates links, its versions' causes) that another notebook holds is named as
        its copy. A copy's id is derived from the old id and the notebook: a second restore finds it present.
        Returns each copy's id -> the notebook that holds the note's own id."""
        store, copies = self.memory.store, {}
        named = {i for n in batch for i in _NAMED_ID.findall(_named_text(n))}
        held = {i: there.notebook for i, there in store.get_many(sorted(named | {n.id for n in batch})).items()}
        for note in batch:
            elsewhere = {i for i, notebook in held.items() if notebook != note.notebook}
            if note.id in elsewhere:
                old, note.id = note.id, copy_id(note.id, note.notebook)
                copies[note.id] = held[old]
                note.content_hash = content_hash(note.content, note.speaker, note.at, f"{note.notebook}\x1fcopy:{old}")
            if elsewhere & set(_NAMED_ID.findall(_named_text(note))):
                _rename_ids(note, {i: copy_id(i, note.notebook) for i in elsewhere})
            if note.kind == "turn" and note.session_id and self._session_elsewhere(note):
                note.session_id = session_id_for(note.notebook, note.session_id)
        return copies

    def _session_elsewhere(self, note: Note) -> bool:
        """Whether another notebook of this home holds the turn's session (its episode is that notebook's)."""
        key = (note.session_id, note.notebook)
        if key not in self.session_held:
            there = self.memory.store.notebook_of_session(note.session_id)
            self.session_held[key] = there is not None and there != note.notebook
        return self.session_held[key]


_NAMED_ID = re.compile(r"[0-9a-f]{32}")


def copy_id(note_id: str, notebook: str) -> str:
    """The id of a note's copy in `notebook` (the same on every restore of the same backup)."""
    return hashlib.sha256(f"{notebook}\x1fcopy\x1f{note_id}".encode()).hexdigest()[:32]


def _named_text(note: Note) -> str:
    """The note's fields that name other notes, as one text (ids are found in it by `_NAMED_ID`)."""
    return json.dumps([note.links, note.updated_by, [v.to_dict() for v in note.history]], ensure_ascii=False)


def _rename_ids(note: Note, renamed: dict[str, str]) -> None:
    """Name each id in `renamed` by its new id wherever the note names it (passage ids `<id>-pN` too)."""
    def swap(text: str) -> str:
        return _NAMED_ID.sub(lambda m: renamed.get(m.group(0), m.group(0)), text)

    note.links = [swap(i) for i in note.links]
    note.updated_by = json.loads(swap(json.dumps(note.updated_by, ensure_ascii=False)))
    note.history = Note.history_from_json(swap(Note.history_to_json(note.history)))


def _move(note: Note, notebook: str, journal_session: str) -> None:
    """Into another notebook: a journal entry joins that notebook's week (or day) session there."""
    note.notebook = notebook
    if note.kind == "note":
        note.session_id = session_id_for(notebook, journal_period(note.at, journal_session).key)


# Shared with the vault's import (vault_sync.py): a page is checked exactly as a backup record is.
record_to_note = _record_to_note
move_to_notebook = _move
