"""Backup and restore: `zk export --format jsonl` and `zk import` of that file.

The export holds every note with all of its fields (links, version history, session, status), but
not the vectors: they are recomputed on restore with the store's embedder, which is deterministic,
so a restored store is the same store (same ids, links, versions) without shipping megabytes of floats.
"""

from __future__ import annotations

import io
import json
from collections.abc import Callable
from pathlib import Path
from typing import IO, BinaryIO

from ..config import ZkError
from ..memory import Memory
from ..note import Note
from ..store import SCHEMA_VERSION, note_to_row, row_to_note
from ..text import hashtags

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


def restore(memory: Memory, path: Path | BinaryIO, batch_size: int = 128,
            on_progress: Callable[[int, int | None], None] | None = None) -> dict:
    """Load an export (a file, or a binary stream such as stdin) into this home; notes whose id
    already exists are left as they are."""
    added = skipped = 0
    batch: list[Note] = []
    sessions: dict[str, None] = {}  # imported chats among the restored notes: to become episodes again

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
            sessions.update((n.session_id, None) for n in fresh if n.session_id and n.kind == "turn")
        batch.clear()
        if on_progress:
            on_progress(added + skipped, None)

    name = str(path) if isinstance(path, Path) else "stdin"
    opened = open(path, encoding="utf-8-sig") if isinstance(path, Path) else io.TextIOWrapper(
        path, encoding="utf-8-sig")
    with opened as lines:
        header = json.loads(lines.readline() or "{}")
        if header.get("type") != EXPORT_TYPE:
            raise ZkError(f"{name} is not a zk export")
        if header.get("schema_version", 0) > SCHEMA_VERSION:
            raise ZkError(f"{name} comes from a newer zk (schema {header['schema_version']}); upgrade zettel-amem")
        for number, line in enumerate(lines, 2):
            if not line.strip():
                continue
            try:
                data = json.loads(line)
                data["history"] = json.dumps(data.get("history") or [], ensure_ascii=False)
                data.pop("type", None)
                if "user_tags" not in data:  # an export from before schema 2: the #tags are in the text
                    data["user_tags"] = hashtags(data.get("content") or "")
                batch.append(row_to_note({**data, "vector": None}))
            except (ValueError, KeyError, TypeError) as exc:
                raise ZkError(f"{name}:{number}: not a valid export line ({exc})") from None
            if len(batch) >= batch_size:
                flush()
    flush()
    return {"format": EXPORT_TYPE, "added": added, "skipped_duplicates": skipped, "failed": [],
            "session_ids": list(sessions)}
