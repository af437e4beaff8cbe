"""The offline outbox of a shared (object-store) notebook: notes written while the store could not be
reached, kept on this machine until a command reaches it again.

The file is a `zk export` file (`outbox.jsonl` in the local home): a header line, then one backup line
per note, so it is also a backup `zk import` can restore by hand. Each append is written and fsynced
(file and folder) before `zk add` says the note is kept. Sending is idempotent: a note keeps the id it
got offline, notes whose id the store already holds are skipped (a send that was cut off after its
commit is not doubled), and the file is removed only after the commit. Only this machine's processes
send its outbox, one at a time (a local lock: the file is local), so no two sends race for one id.
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from ..core.errors import ZkError
from ..core.models import Note
from .locks import take_lock
from .store import note_to_row, row_to_note

OUTBOX = "outbox.jsonl"
HEADER = {"type": "zk-export", "outbox": True}  # restore reads the type; the counts are not needed


def record(note: Note) -> dict:
    """A note as a backup line (`zk export --format jsonl`): every field but the vectors."""
    row = note_to_row(note)
    row.pop("vector")
    row.pop("raw_vector")
    row["history"] = json.loads(row["history"] or "[]")
    return {"type": "note", **row}


def _fsync_dir(folder: Path) -> None:
    try:
        fd = os.open(folder, os.O_RDONLY)
    except OSError:
        return
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


class Outbox:
    def __init__(self, home: Path):
        self.home = home
        self.path = home / OUTBOX

    @contextmanager
    def lock(self) -> Iterator[None]:
        lock = take_lock(self.home, ".outbox.lock")
        try:
            yield
        finally:
            lock.release()

    def append(self, note: Note) -> int:
        """Keep one note, durably. Returns how many notes wait now."""
        line = json.dumps(record(note), ensure_ascii=False) + "\n"
        with self.lock():
            fresh = not self.path.exists()
            try:
                with open(self.path, "a", encoding="utf-8") as fh:
                    if fresh:
                        fh.write(json.dumps(HEADER) + "\n")
                    fh.write(line)
                    fh.flush()
                    os.fsync(fh.fileno())
                if fresh:
                    _fsync_dir(self.home)
            except OSError as exc:
                raise ZkError(f"cannot reach the store, and cannot keep the note in {self.path}: "
                              f"{exc.strerror or exc}; nothing was saved") from None
            return self._count()

    def _count(self) -> int:
        try:
            with open(self.path, encoding="utf-8") as fh:
                return max(sum(1 for line in fh if line.strip()) - 1, 0)
        except OSError:
            return 0

    def count(self) -> int:
        return self._count() if self.path.exists() else 0

    def notes(self) -> list[Note]:
        """The waiting notes, oldest first. A line cut short by a crash mid-append is the last one and
        was never reported as kept: it is skipped."""
        out = []
        with open(self.path, encoding="utf-8") as fh:
            for line in fh:
                try:
                    data = json.loads(line)
                except ValueError:
                    continue
                if not isinstance(data, dict) or data.get("type") != "note":
                    continue
                data.pop("type")
                data["history"] = json.dumps(data.get("history") or [], ensure_ascii=False)
                out.append(row_to_note(data))
        return out

    def send(self, present, write) -> int:
        """Send every waiting note: `present(ids)` says which ids the store holds already, `write(notes)`
        commits the rest. Returns how many were written; the file goes once they are committed."""
        if not self.path.exists():
            return 0
        with self.lock():
            if not self.path.exists():  # another process of this machine sent it meanwhile
                return 0
            notes = self.notes()
            held = present([n.id for n in notes])
            fresh = [n for n in notes if n.id not in held]
            if fresh:
                write(fresh)
            self.path.unlink()
            _fsync_dir(self.home)
        return len(fresh)
