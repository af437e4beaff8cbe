"""Storage: one embedded LanceDB table of notes (links and version history are columns).

Why columns and not separate tables: one evolution touches the new note and up to a few
neighbours, and must be all-or-nothing. A single `merge_insert` on one table is one atomic
LanceDB commit, so links, rewritten fields, fresh vectors and their version records land together
or not at all.

Writers (several `zk add` processes plus the background worker) serialise on a file lock; readers
never block and always see the latest committed version.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from datetime import timedelta
from pathlib import Path
from typing import Any

from .config import ZkError
from .note import SHORT_ID, Note

SCHEMA_VERSION = 2  # 2: raw_vector (the raw words' embedding, kept beside the enriched one)
NOTES = "notes"
_HEX = re.compile(r"^[0-9a-f]{1,32}$")

# Columns read when the vector is not needed (listing, keyword search, rendering).
TEXT_COLUMNS = [
    "id", "content", "at", "created", "keywords", "tags", "context", "links", "status", "version",
    "history", "notebook", "kind", "session_id", "speaker", "seq", "source", "content_hash", "error",
]


def _arrow_schema(dim: int):
    import pyarrow as pa

    return pa.schema([
        pa.field("id", pa.string(), nullable=False),
        pa.field("content", pa.string()),
        pa.field("at", pa.string()),
        pa.field("created", pa.string()),
        pa.field("keywords", pa.list_(pa.string())),
        pa.field("tags", pa.list_(pa.string())),
        pa.field("context", pa.string()),
        pa.field("links", pa.list_(pa.string())),
        pa.field("status", pa.string()),
        pa.field("version", pa.int32()),
        pa.field("history", pa.string()),
        pa.field("notebook", pa.string()),
        pa.field("kind", pa.string()),
        pa.field("session_id", pa.string()),
        pa.field("speaker", pa.string()),
        pa.field("seq", pa.int64()),
        pa.field("source", pa.string()),
        pa.field("content_hash", pa.string()),
        pa.field("error", pa.string()),
        pa.field("vector", pa.list_(pa.float32(), dim)),
        pa.field("raw_vector", pa.list_(pa.float32(), dim)),
    ])


def sql_str(value: str) -> str:
    """Quote a string literal for a LanceDB filter."""
    return "'" + value.replace("'", "''") + "'"


def note_to_row(note: Note) -> dict[str, Any]:
    return {
        "id": note.id, "content": note.content, "at": note.at, "created": note.created,
        "keywords": list(note.keywords), "tags": list(note.tags), "context": note.context,
        "links": list(note.links), "status": note.status, "version": note.version,
        "history": Note.history_to_json(note.history), "notebook": note.notebook, "kind": note.kind,
        "session_id": note.session_id, "speaker": note.speaker, "seq": note.seq, "source": note.source,
        "content_hash": note.content_hash, "error": note.error,
        "vector": _floats(note.vector),
        # A note written before enrichment has one embedding, of its raw words: both columns hold it.
        "raw_vector": _floats(note.raw_vector if note.raw_vector is not None else note.vector),
    }


def _floats(vector) -> list[float] | None:
    return [float(x) for x in vector] if vector is not None else None


def row_to_note(row: dict[str, Any]) -> Note:
    vector, raw_vector = row.get("vector"), row.get("raw_vector")
    return Note(
        id=row["id"], content=row["content"], at=row["at"], created=row.get("created") or "",
        keywords=list(row.get("keywords") or []), tags=list(row.get("tags") or []),
        context=row.get("context") or "", links=list(row.get("links") or []),
        status=row.get("status") or "pending", version=int(row.get("version") or 1),
        history=Note.history_from_json(row.get("history")), notebook=row.get("notebook") or "main",
        kind=row.get("kind") or "note", session_id=row.get("session_id"), speaker=row.get("speaker"),
        seq=int(row.get("seq") or 0), source=row.get("source"), content_hash=row.get("content_hash") or "",
        error=row.get("error") or "", vector=list(vector) if vector is not None else None,
        raw_vector=list(raw_vector) if raw_vector is not None else None,
    )


class Store:
    """The notes table plus a small meta file (schema version, embedder name and dimension)."""

    def __init__(self, home: Path, embedder_name: str, dim: int):
        self.home = home
        self.db_path = home / "lancedb"
        self.meta_path = home / "meta.json"
        self.embedder_name = embedder_name
        self.dim = dim
        self._open()

    # -- opening, meta, locking -------------------------------------------------------------------
    def _open(self) -> None:
        import lancedb

        try:
            self.home.mkdir(parents=True, exist_ok=True)
        except OSError as exc:
            raise ZkError(f"cannot create the store directory {self.home}: {exc.strerror}") from None
        meta = self.read_meta(self.home)
        if meta:
            if meta.get("schema_version", 0) > SCHEMA_VERSION:
                raise ZkError(
                    f"this store uses schema version {meta['schema_version']}, newer than this zk "
                    f"understands ({SCHEMA_VERSION}); upgrade zettel-amem")
            if meta.get("embedder") != self.embedder_name or meta.get("dim") != self.dim:
                raise ZkError(
                    f"this store was embedded with '{meta.get('embedder')}' ({meta.get('dim')} dims), "
                    f"not '{self.embedder_name}'; set ZK_EMBEDDER={meta.get('embedder')} or use another --home")
        try:
            # read_consistency_interval=0: every read sees commits made by other processes.
            self.db = lancedb.connect(str(self.db_path), read_consistency_interval=timedelta(0))
            with self.write_lock():
                if NOTES not in self.db.list_tables().tables:
                    self.db.create_table(NOTES, schema=_arrow_schema(self.dim))
                if not meta:
                    self._write_meta()
            self.table = self.db.open_table(NOTES)
            if meta and meta.get("schema_version", 0) < SCHEMA_VERSION:
                self._migrate(meta.get("schema_version", 0))
        except ZkError:
            raise
        except Exception as exc:  # noqa: BLE001 - any LanceDB/IO failure means the store is unusable
            raise ZkError(f"cannot open the store at {self.db_path}: {exc}") from None

    def _migrate(self, from_version: int) -> None:
        """Bring an older store up to SCHEMA_VERSION: add every column it lacks, with its default."""
        with self.write_lock():
            present = set(self.table.schema.names)
            missing = {f.name: f for f in _arrow_schema(self.dim) if f.name not in present}
            defaults = {"string": "CAST(NULL AS STRING)", "int32": "CAST(1 AS INT)", "int64": "CAST(0 AS BIGINT)"}
            simple = {name: defaults[str(f.type)] for name, f in missing.items() if str(f.type) in defaults}
            if "raw_vector" in missing:  # v1 -> v2: the only embedding a v1 note has stands for its raw words
                simple["raw_vector"] = "vector"
            if len(simple) != len(missing):
                raise ZkError(f"cannot migrate this store from schema version {from_version}: "
                              f"columns {sorted(set(missing) - set(simple))} need a manual export/import")
            if simple:
                self.table.add_columns(simple)
            self._write_meta()

    @staticmethod
    def read_meta(home: Path) -> dict[str, Any]:
        path = home / "meta.json"
        if not path.exists():
            return {}
        try:
            return json.loads(path.read_text(encoding="utf-8"))
        except (OSError, ValueError) as exc:
            raise ZkError(f"cannot read {path}: {exc}") from None

    def _write_meta(self) -> None:
        tmp = self.meta_path.with_suffix(".tmp")
        tmp.write_text(json.dumps({"schema_version": SCHEMA_VERSION, "embedder": self.embedder_name,
                                   "dim": self.dim}), encoding="utf-8")
        tmp.replace(self.meta_path)

    @contextmanager
    def write_lock(self, timeout: float = 120) -> Iterator[None]:
        from filelock import FileLock, Timeout

        try:
            with FileLock(str(self.home / ".write.lock"), timeout=timeout):
                yield
        except Timeout:
            raise ZkError("the store is busy (another zk is writing); try again") from None
        except PermissionError as exc:
            raise ZkError(f"cannot write to {self.home}: {exc.strerror}") from None

    # -- writes -----------------------------------------------------------------------------------
    def add(self, notes: Iterable[Note], skip_existing: bool = False) -> list[Note]:
        """Append notes in one commit. With `skip_existing`, notes whose content_hash is already stored
        are dropped inside the write lock, so two concurrent imports of one log never both write a turn."""
        notes = list(notes)
        with self.write_lock():
            if skip_existing:
                stored = self.existing_hashes([n.content_hash for n in notes])
                notes = [n for n in notes if n.content_hash not in stored]
            rows = [note_to_row(n) for n in notes]
            if rows:
                self._write(lambda: self.table.add(rows))
        return notes

    def update(self, notes: Iterable[Note]) -> None:
        """Replace whole rows by id in one atomic commit (used for every multi-note change). Update only:
        a note deleted meanwhile (`zk rm`) stays deleted, never re-inserted from a stale copy."""
        rows = [note_to_row(n) for n in notes]
        if not rows:
            return
        with self.write_lock():
            self._write(lambda: self.table.merge_insert("id").when_matched_update_all().execute(rows))

    def delete(self, ids: Iterable[str]) -> None:
        ids = list(ids)
        if ids:
            with self.write_lock():
                self._write(lambda: self.table.delete("id IN (" + ", ".join(sql_str(i) for i in ids) + ")"))

    def _write(self, action) -> None:
        try:
            action()
        except OSError as exc:
            raise ZkError(f"cannot write to the store at {self.db_path}: {exc}") from None

    # -- reads ------------------------------------------------------------------------------------
    def _read(self, action):
        try:
            return action()
        except ZkError:
            raise
        except Exception as exc:  # noqa: BLE001 - a damaged file surfaces here as any Lance error
            raise ZkError(f"cannot read the store at {self.db_path} (damaged?): {str(exc)[:200]}") from None

    def _query(self, where: str | None, columns: list[str] | None = None, limit: int | None = None
               ) -> list[dict[str, Any]]:
        return self._read(lambda: self._query_unchecked(where, columns, limit))

    def _query_unchecked(self, where, columns, limit) -> list[dict[str, Any]]:
        query = self.table.search()
        if where:
            query = query.where(where)
        if columns:
            query = query.select(columns)
        if limit is None:
            limit = max(self.table.count_rows(), 1)
        return query.limit(limit).to_list()

    def get(self, note_id: str, with_vector: bool = False) -> Note | None:
        rows = self._query(f"id = {sql_str(note_id)}", None if with_vector else TEXT_COLUMNS, limit=1)
        return row_to_note(rows[0]) if rows else None

    def get_many(self, ids: Iterable[str], with_vector: bool = False) -> dict[str, Note]:
        ids = list(dict.fromkeys(ids))
        if not ids:
            return {}
        where = "id IN (" + ", ".join(sql_str(i) for i in ids) + ")"
        rows = self._query(where, None if with_vector else TEXT_COLUMNS, limit=len(ids))
        return {r["id"]: row_to_note(r) for r in rows}

    def resolve(self, prefix: str, scope: str | None = None) -> str:
        """Full id for a unique id prefix (among the notes matching `scope`, e.g. one notebook: another
        notebook's ids neither make a prefix ambiguous nor show up in the error), or a clear error."""
        cleaned = prefix.strip().lower()
        if not _HEX.match(cleaned):
            raise ZkError(f"'{prefix}' is not a note id (expected hex characters, e.g. 3f9a12bc)")
        where = f"id LIKE {sql_str(cleaned + '%')}"
        rows = self._query(f"({scope}) AND {where}" if scope else where, ["id"], limit=6)
        if not rows:
            raise ZkError(f"no note with id {cleaned}")
        if len(rows) > 1:
            shown = ", ".join(r["id"][:SHORT_ID + 4] for r in rows[:5])
            raise ZkError(f"id prefix '{cleaned}' is ambiguous: {shown}")
        return rows[0]["id"]

    def notes(self, where: str | None = None, with_vector: bool = False) -> list[Note]:
        return [row_to_note(r) for r in self._query(where, None if with_vector else TEXT_COLUMNS)]

    def backlinks(self, note_id: str) -> list[str]:
        rows = self._query(f"array_has(links, {sql_str(note_id)})", ["id", "at"])
        return [r["id"] for r in sorted(rows, key=lambda r: r["at"])]

    def backlinks_many(self, note_ids: list[str]) -> dict[str, list[str]]:
        """Backlinks of several notes in one scan (retrieval expands every hit at once)."""
        if not note_ids:
            return {}
        wanted = set(note_ids)
        # A long id list makes a huge filter: then one scan of the linking notes is cheaper.
        where = ("array_length(links) > 0" if len(wanted) > 200 else
                 "array_has_any(links, make_array(" + ", ".join(sql_str(i) for i in wanted) + "))")
        out: dict[str, list[str]] = {i: [] for i in note_ids}
        for row in sorted(self._query(where, ["id", "at", "links"]), key=lambda r: r["at"]):
            for target in row["links"] or []:
                if target in wanted:
                    out[target].append(row["id"])
        return out

    def count(self, where: str | None = None) -> int:
        return self._read(lambda: self.table.count_rows(where) if where else self.table.count_rows())

    def nearest(self, vector, k: int, where: str | None = None, column: str = "vector"
                ) -> list[tuple[Note, float]]:
        """Top-k by cosine similarity (1 - cosine distance) over `column` ("vector" = the full, enriched
        embedding; "raw_vector" = the raw words)."""
        if self.count() == 0:
            return []
        query = self.table.search(list(vector), vector_column_name=column).distance_type("cosine") \
            .select([*TEXT_COLUMNS, "_distance"])
        if where:
            query = query.where(where, prefilter=True)
        rows = self._read(lambda: query.limit(k).to_list())
        return [(row_to_note(r), 1.0 - float(r["_distance"])) for r in rows]

    def session_windows(self, centres: list[Note], radius: int, scope: str | None = None) -> dict[str, list[Note]]:
        """For each chat turn in `centres`, the turns of its session within `radius` places of it, nearest
        first (one read for all of them)."""
        turns = [n for n in centres if n.session_id and n.kind == "turn"]
        if not turns or radius < 1:
            return {}
        # Two IN lists (a superset, narrowed below) read several times faster than an OR of ranges.
        sessions = ", ".join(sql_str(s) for s in sorted({n.session_id for n in turns}))
        seqs = ", ".join(str(q) for q in sorted({n.seq + d for n in turns for d in range(-radius, radius + 1)}))
        where = f"kind = 'turn' AND session_id IN ({sessions}) AND seq IN ({seqs})"
        rows = [row_to_note(r) for r in self._query(f"({scope}) AND {where}" if scope else where, TEXT_COLUMNS)]
        out: dict[str, list[Note]] = {}
        for centre in turns:
            around = [n for n in rows if n.session_id == centre.session_id and n.id != centre.id
                      and abs(n.seq - centre.seq) <= radius]
            out[centre.id] = sorted(around, key=lambda n: (abs(n.seq - centre.seq), n.seq))
        return out

    def existing_hashes(self, hashes: list[str]) -> set[str]:
        if not hashes:
            return set()
        found: set[str] = set()
        for start in range(0, len(hashes), 500):
            chunk = hashes[start:start + 500]
            where = "content_hash IN (" + ", ".join(sql_str(h) for h in chunk) + ")"
            found.update(r["content_hash"] for r in self._query(where, ["content_hash"], limit=len(chunk) * 4))
        return found

    def compact(self) -> None:
        """Merge small fragments and drop old table versions (deleted text must not survive on disk)."""
        import warnings

        with self.write_lock(), warnings.catch_warnings():
            warnings.simplefilter("ignore", UserWarning)  # "removes every version": that is the point here
            self.table.optimize(cleanup_older_than=timedelta(0), delete_unverified=True)
