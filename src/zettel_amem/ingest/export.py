"""Backup and restore: `zk export --format jsonl` and `zk import` of that file.

The export holds every note with all of its fields (links, version history, session, status), but
not the vectors: they are recomputed on restore with the store's embedder, which is deterministic,
so a restored store is the same store (same ids, links, versions) without shipping megabytes of floats.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import IO

from ..config import ZkError
from ..memory import Memory
from ..note import Note
from ..store import SCHEMA_VERSION, note_to_row, row_to_note

EXPORT_TYPE = "zk-export"


def is_export(head: bytes) -> bool:
    first = head.lstrip(b"\xef\xbb\xbf").split(b"\n", 1)[0]
    try:
        return json.loads(first).get("type") == EXPORT_TYPE
    except (ValueError, AttributeError):
        return False


def export_jsonl(memory: Memory, out: IO[str], all_notebooks: bool = True) -> int:
    """Write a header line, then one line per note (oldest first). Returns the number of notes."""
    notes = memory.store.notes(None if all_notebooks else memory._scope())
    notes.sort(key=lambda n: (n.created, n.at, n.seq, n.id))
    header = {"type": EXPORT_TYPE, "schema_version": SCHEMA_VERSION, "embedder": memory.store.embedder_name,
              "notes": len(notes)}
    out.write(json.dumps(header, ensure_ascii=False) + "\n")
    for note in notes:
        row = note_to_row(note)
        row.pop("vector")
        row["history"] = json.loads(row["history"] or "[]")
        out.write(json.dumps({"type": "note", **row}, ensure_ascii=False) + "\n")
    return len(notes)


def restore(memory: Memory, path: Path, batch_size: int = 128,
            on_progress: Callable[[int, int | None], None] | None = None) -> dict:
    """Load an export into this home; notes whose id already exists are left as they are."""
    added = skipped = 0
    batch: list[Note] = []

    def flush() -> None:
        nonlocal added, skipped
        if not batch:
            return
        existing = set(memory.store.get_many([n.id for n in batch]))
        fresh = [n for n in batch if n.id not in existing]
        skipped += len(batch) - len(fresh)
        if fresh:
            vectors = memory.embedder.embed_passages([n.embedding_text() for n in fresh])
            for note, vector in zip(fresh, vectors):
                note.vector = vector.tolist()
            memory.store.add(fresh)
            added += len(fresh)
        batch.clear()
        if on_progress:
            on_progress(added + skipped, None)

    with open(path, encoding="utf-8-sig") as lines:
        header = json.loads(lines.readline() or "{}")
        if header.get("type") != EXPORT_TYPE:
            raise ZkError(f"{path} is not a zk export")
        if header.get("schema_version", 0) > SCHEMA_VERSION:
            raise ZkError(f"{path} comes from a newer zk (schema {header['schema_version']}); upgrade zettel-amem")
        for number, line in enumerate(lines, 2):
            if not line.strip():
                continue
            try:
                data = json.loads(line)
                data["history"] = json.dumps(data.get("history") or [], ensure_ascii=False)
                data.pop("type", None)
                batch.append(row_to_note({**data, "vector": None}))
            except (ValueError, KeyError, TypeError) as exc:
                raise ZkError(f"{path}:{number}: not a valid export line ({exc})") from None
            if len(batch) >= batch_size:
                flush()
    flush()
    return {"format": EXPORT_TYPE, "added": added, "skipped_duplicates": skipped, "failed": [], "session_ids": []}
