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
import os
import re
import struct
import warnings
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from datetime import timedelta
from pathlib import Path
from typing import Any

from .config import ZkError, ZkWarning
from .note import SHORT_ID, Note
from .text import hashtags

SCHEMA_VERSION = 2  # 2: raw_vector (the raw words' embedding beside the enriched one), user_tags (#tags)
NOTES = "notes"
_HEX = re.compile(r"^[0-9a-f]{1,32}$")
_U64 = (1 << 64) - 1  # LanceDB's v2 manifest names count down: `_versions/{2**64 - 1 - version}.manifest`
# Data file names inside a manifest (protobuf; the names are plain strings in it).
_DATA_FILE = re.compile(rb"(?:[01]{24}[0-9a-f]{26}|[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12})"
                        rb"\.lance")
_RUST_PATH = re.compile(r",?\s*/[^\s,]*\.rs:\d+(?::\d+)?")

# Columns read when the vector is not needed (listing, keyword search, rendering).
TEXT_COLUMNS = [
    "id", "content", "at", "created", "keywords", "tags", "context", "links", "status", "version",
    "history", "notebook", "kind", "session_id", "speaker", "seq", "source", "content_hash", "error", "user_tags",
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
        pa.field("user_tags", pa.list_(pa.string())),
        pa.field("vector", pa.list_(pa.float32(), dim)),
        pa.field("raw_vector", pa.list_(pa.float32(), dim)),
    ])


def sql_str(value: str) -> str:
    """Quote a string literal for a LanceDB filter."""
    return "'" + value.replace("'", "''") + "'"


def lance_message(exc: BaseException) -> str:
    """A LanceDB/Lance error as one line for a user: no Rust source paths, no crate registry paths,
    and the two kinds of damage a user can act on named plainly."""
    text = _RUST_PATH.sub("", " ".join(str(exc).split()))
    text = text.replace("lance error: ", "").replace("LanceError(IO): ", "")
    missing = re.search(r"Not found: (\S+?\.lance)\b", text)
    if missing:
        return f"a data file is missing ({'/'.join(missing.group(1).split('/')[-3:])})"
    if "failed to fill whole buffer" in text or "Out of range" in text:
        return "a data file is truncated or damaged"
    return text[:200]


def manifest_versions(table_dir: Path) -> list[int]:
    """Table versions whose manifest is on disk, oldest first (both manifest naming schemes)."""
    try:
        names = os.listdir(table_dir / "_versions")
    except OSError:
        return []
    found = []
    for name in names:
        stem, _, ext = name.partition(".")
        if ext == "manifest" and stem.isdigit():
            number = int(stem)
            found.append(_U64 - number if number > _U64 // 2 else number)
    return sorted(found)


def manifest_path(table_dir: Path, version: int) -> Path | None:
    for name in (f"{_U64 - version}.manifest", f"{version}.manifest"):
        if (table_dir / "_versions" / name).exists():
            return table_dir / "_versions" / name
    return None


def data_file_problems(table_dir: Path, version: int | None = None, verified: set | None = None) -> list[str]:
    """Data files the table's newest manifest (or `version`'s) names that are missing or cut short.
    A complete Lance file ends with the magic bytes `LANC`; files already verified (Lance never
    rewrites a data file) are skipped through `verified`."""
    if version is None:
        versions = manifest_versions(table_dir)
        if not versions:
            return []
        version = versions[-1]
    path = manifest_path(table_dir, version)
    if path is None:
        return [f"manifest of version {version} is missing"]
    try:
        raw = path.read_bytes()
    except OSError as exc:
        return [f"{path.name} cannot be read ({exc.strerror})"]
    # A manifest file: [inline transaction] [u32 length + manifest protobuf] ... footer [u64 position of
    # the manifest, u16 u16 version, b"LANC"]. Only the manifest part lists the version's data files
    # (the transaction of a compaction names the files it replaced).
    try:
        start = struct.unpack("<Q", raw[-16:-8])[0]
        length = struct.unpack("<I", raw[start:start + 4])[0]
        if raw[-4:] != b"LANC" or start + 4 + length > len(raw):
            raise ValueError
    except (struct.error, ValueError):
        return [f"manifest of version {version} is damaged"]
    names = sorted({m.decode() for m in _DATA_FILE.findall(raw[start + 4:start + 4 + length])})
    problems = []
    for name in names:
        data = table_dir / "data" / name
        try:
            size = data.stat().st_size
            if verified is not None and (data, size) in verified:
                continue
            with open(data, "rb") as fh:
                fh.seek(max(size - 4, 0))
                ok = size >= 8 and fh.read(4) == b"LANC"
        except FileNotFoundError:
            problems.append(f"data file {name} is missing")
            continue
        except OSError as exc:
            problems.append(f"data file {name} cannot be read ({exc.strerror})")
            continue
        if not ok:
            problems.append(f"data file {name} is truncated")
        elif verified is not None:
            verified.add((data, size))
    return problems


def meta_problem(meta: Any) -> str | None:
    """What is wrong with meta.json's fields, or None."""
    if not isinstance(meta, dict):
        return "it is not a JSON object"
    for key, kind, what in (("schema_version", int, "a number"), ("embedder", str, "a string"),
                            ("dim", int, "a number"), ("tables", dict, "an object")):
        value = meta.get(key)
        if value is not None and (not isinstance(value, kind) or isinstance(value, bool)):
            return f"{key} is {json.dumps(value)[:40]}, not {what}"
    for name, recorded in (meta.get("tables") or {}).items():
        counts = [recorded.get(k) for k in ("version", "rows")] if isinstance(recorded, dict) else [None]
        if not all(isinstance(v, int) and not isinstance(v, bool) for v in counts):
            return f"tables.{name} is not a version and a row count"
    return None


def note_to_row(note: Note) -> dict[str, Any]:
    return {
        "id": note.id, "content": note.content, "at": note.at, "created": note.created,
        "keywords": list(note.keywords), "tags": list(note.tags), "context": note.context,
        "links": list(note.links), "status": note.status, "version": note.version,
        "history": Note.history_to_json(note.history), "notebook": note.notebook, "kind": note.kind,
        "session_id": note.session_id, "speaker": note.speaker, "seq": note.seq, "source": note.source,
        "content_hash": note.content_hash, "error": note.error, "user_tags": list(note.user_tags),
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
        error=row.get("error") or "", user_tags=list(row.get("user_tags") or []),
        vector=list(vector) if vector is not None else None,
        raw_vector=list(raw_vector) if raw_vector is not None else None,
    )


class Store:
    """The notes table plus a small meta file (schema version, embedder name and dimension, and each
    table's version and row count after the last write, so a store that lost commits or vanished is
    noticed instead of silently read as older or empty)."""

    def __init__(self, home: Path, embedder_name: str, dim: int):
        self.home = home
        self.db_path = home / "lancedb"
        self.meta_path = home / "meta.json"
        self.embedder_name = embedder_name
        self.dim = dim
        self.damage: str | None = None  # why this store must not be written (it can still be read)
        self._verified: set = set()  # data files found complete; Lance never rewrites one
        self._warned = False
        self._open()

    # -- opening, meta, locking -------------------------------------------------------------------
    def _open(self) -> None:
        import lancedb

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
        recorded = meta.get("tables", {}).get(NOTES)
        if recorded and not (self.db_path / f"{NOTES}.lance").is_dir():
            # Never build a new, empty store over one that is gone (a moved folder, a drive not mounted).
            raise ZkError(f"the notes table is missing ({self.db_path / (NOTES + '.lance')}), but meta.json "
                          f"records {recorded.get('rows', '?')} row(s) at version {recorded.get('version', '?')}; "
                          "nothing was written — is the drive mounted? `zk doctor` checks the store")
        try:
            if not self.home.exists() or not (self.db_path / f"{NOTES}.lance").is_dir():
                try:
                    self.home.mkdir(parents=True, exist_ok=True)
                except OSError as exc:
                    raise ZkError(f"cannot create the store directory {self.home}: {exc.strerror}") from None
            # read_consistency_interval=0: every read sees commits made by other processes.
            self.db = lancedb.connect(str(self.db_path), read_consistency_interval=timedelta(0))
            if not (self.db_path / f"{NOTES}.lance").is_dir():
                with self.write_lock(check=False):  # only a new store takes the lock to open: reads work read-only
                    if NOTES not in self.db.list_tables().tables:
                        self.db.create_table(NOTES, schema=_arrow_schema(self.dim))
                    if not meta:
                        self._write_meta()
            self.table = self.db.open_table(NOTES)
            self.damage = self.compare_with_meta(meta)
            if meta and meta.get("schema_version", 0) < SCHEMA_VERSION:
                self._migrate(meta.get("schema_version", 0))
        except ZkError:
            raise
        except Exception as exc:  # noqa: BLE001 - any LanceDB/IO failure means the store is unusable
            raise ZkError(f"cannot open the store at {self.db_path}: {lance_message(exc)}; "
                          "`zk doctor` checks it") from None

    def compare_with_meta(self, meta: dict[str, Any]) -> str | None:
        """Why the tables on disk are older than meta.json says (their newest commits lost), or None.

        meta.json is written after each commit, so a table may be newer than it (a crash in between),
        never older: an older table lost its newest manifest(s), and a write now would silently build
        on the old version and overwrite the lost one's number."""
        for name, recorded in sorted((meta.get("tables") or {}).items()):
            table_dir = self.db_path / f"{name}.lance"
            version = int(recorded.get("version") or 0)
            if not table_dir.is_dir():
                return (f"the {name} table is missing, but meta.json records {recorded.get('rows', '?')} row(s) "
                        f"at version {version}")
            if manifest_path(table_dir, version) is not None:
                continue
            newest = (manifest_versions(table_dir) or [0])[-1]
            if newest < version:
                return (f"the {name} table is at version {newest}, but meta.json records version {version} "
                        f"with {recorded.get('rows', '?')} row(s): its newest commit(s) are missing")
        return None

    def _migrate(self, from_version: int) -> None:
        """Bring an older store up to SCHEMA_VERSION: add every column it lacks, with its default (a list
        column starts empty); then fill what can be derived (v2: the #tags already written in notes)."""
        import pyarrow as pa

        with self.write_lock():
            present = set(self.table.schema.names)
            missing = {f.name: f for f in _arrow_schema(self.dim) if f.name not in present}
            defaults = {"string": "CAST(NULL AS STRING)", "int32": "CAST(1 AS INT)", "int64": "CAST(0 AS BIGINT)"}
            simple = {name: defaults[str(f.type)] for name, f in missing.items() if str(f.type) in defaults}
            if "raw_vector" in missing:  # v1 -> v2: the only embedding a v1 note has stands for its raw words
                simple["raw_vector"] = "vector"
            lists = [f for name, f in missing.items() if name not in simple and pa.types.is_list(f.type)]
            if len(simple) + len(lists) != len(missing):
                raise ZkError(f"cannot migrate this store from schema version {from_version}: "
                              f"columns {sorted(set(missing) - set(simple))} need a manual export/import")
            if simple:
                self.table.add_columns(simple)
            if lists:
                self.table.add_columns(pa.schema(lists))  # all-null columns, read back as []
            if "user_tags" in missing:
                tagged = [row_to_note(r) for r in self._query("content LIKE '%#%'")]
                for note in tagged:
                    note.user_tags = hashtags(note.content)
                rows = [note_to_row(n) for n in tagged if n.user_tags]
                if rows:
                    self._write(lambda: self.table.merge_insert("id").when_matched_update_all().execute(rows))
            self._write_meta()
            self.record(NOTES, self.table)

    @staticmethod
    def read_meta(home: Path) -> dict[str, Any]:
        """meta.json, its fields checked: a damaged file is one clear error, never a TypeError later."""
        path = home / "meta.json"
        if not path.exists():
            return {}
        try:
            meta = json.loads(path.read_text(encoding="utf-8"))
        except (OSError, ValueError) as exc:
            raise ZkError(f"cannot read {path}: {exc}; `zk doctor` checks the store") from None
        problem = meta_problem(meta)
        if problem:
            raise ZkError(f"{path} is damaged: {problem}; `zk doctor` checks the store")
        return meta

    def _write_meta(self, tables: dict[str, dict] | None = None) -> None:
        """Write meta.json atomically (under the write lock), keeping what it already records."""
        try:
            old = json.loads(self.meta_path.read_text(encoding="utf-8")) if self.meta_path.exists() else {}
        except (OSError, ValueError):
            old = {}
        merged = {**(old.get("tables") or {}), **(tables or {})} if isinstance(old, dict) else dict(tables or {})
        data = {"schema_version": SCHEMA_VERSION, "embedder": self.embedder_name, "dim": self.dim}
        if merged:
            data["tables"] = merged
        tmp = self.meta_path.with_suffix(".tmp")
        tmp.write_text(json.dumps(data), encoding="utf-8")
        tmp.replace(self.meta_path)

    def record(self, name: str, table) -> None:
        """After a commit: the table's version and row count go into meta.json (see compare_with_meta)."""
        try:
            self._write_meta({name: {"version": int(table.version), "rows": int(table.count_rows())}})
        except OSError:
            pass  # the commit itself is durable; a missing record only weakens the next check

    @contextmanager
    def write_lock(self, timeout: float = 120, check: bool = True) -> Iterator[None]:
        """The one writer lock. With `check`, a damaged store (lost commits, a missing or truncated data
        file in any table) refuses the write before anything is written."""
        from filelock import FileLock, Timeout

        try:
            with FileLock(str(self.home / ".write.lock"), timeout=timeout):
                if check:
                    self.check_writable()
                yield
        except Timeout:
            raise ZkError("the store is busy (another zk is writing); try again") from None
        except PermissionError as exc:
            raise ZkError(f"cannot write to {self.home}: {exc.strerror}") from None
        except OSError as exc:
            if exc.errno in (13, 30):  # EACCES, EROFS: a read-only home or a mounted backup
                raise ZkError(f"cannot write to {self.home}: {exc.strerror}") from None
            raise

    def check_writable(self) -> None:
        """Raise a one-line ZkError when writing would build on a damaged store."""
        if self.damage:
            raise ZkError(f"{self.damage}; nothing was written — run `zk doctor`, then `zk repair`")
        damage = self.compare_with_meta(self.read_meta(self.home))
        if damage:
            self.damage = damage
            raise ZkError(f"{damage}; nothing was written — run `zk doctor`, then `zk repair`")
        for table_dir in sorted(self.db_path.glob("*.lance")):
            problems = data_file_problems(table_dir, verified=self._verified)
            if problems:
                raise ZkError(f"the {table_dir.stem} table is damaged ({problems[0]}"
                              f"{f' and {len(problems) - 1} more' if len(problems) > 1 else ''}); nothing was "
                              "written — run `zk doctor`, then `zk repair`")

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
                self.record(NOTES, self.table)
        return notes

    def update(self, notes: Iterable[Note]) -> None:
        """Replace whole rows by id in one atomic commit (used for every multi-note change). Update only:
        a note deleted meanwhile (`zk rm`) stays deleted, never re-inserted from a stale copy."""
        rows = [note_to_row(n) for n in notes]
        if not rows:
            return
        with self.write_lock():
            self._write(lambda: self.table.merge_insert("id").when_matched_update_all().execute(rows))
            self.record(NOTES, self.table)

    def delete(self, ids: Iterable[str]) -> None:
        ids = list(ids)
        if ids:
            with self.write_lock():
                self._write(lambda: self.table.delete("id IN (" + ", ".join(sql_str(i) for i in ids) + ")"))
                self.record(NOTES, self.table)

    def _write(self, action) -> None:
        try:
            action()
        except OSError as exc:
            raise ZkError(f"cannot write to the store at {self.db_path}: {lance_message(exc)}") from None
        except ZkError:
            raise
        except Exception as exc:  # noqa: BLE001 - a Lance error during a commit: one line, nothing half-done
            raise ZkError(f"cannot write to the store at {self.db_path}: {lance_message(exc)}; "
                          "`zk doctor` checks it") from None

    # -- reads ------------------------------------------------------------------------------------
    def _read(self, action):
        if self.damage and not self._warned:  # readable, but older than it should be: say so once
            self._warned = True
            warnings.warn(ZkWarning(f"{self.damage}; showing what is left, writes are refused until `zk repair`"),
                          stacklevel=2)
        try:
            return action()
        except ZkError:
            raise
        except Exception as exc:  # noqa: BLE001 - a damaged file surfaces here as any Lance error
            raise ZkError(f"cannot read the store at {self.db_path}: {lance_message(exc)}; "
                          "run `zk doctor`") from None

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
        ids = list(dict.fromkeys(r["id"] for r in rows))  # one id stored twice (an old doubled restore) is one note
        if not ids:
            raise ZkError(f"no note with id {cleaned}")
        if len(ids) > 1 and cleaned in ids:
            return cleaned  # a whole id is never ambiguous, even when it is a prefix of another
        if len(ids) > 1:
            shown = ", ".join(i[:SHORT_ID + 4] for i in ids[:5])
            raise ZkError(f"id prefix '{cleaned}' is ambiguous: {shown}")
        return ids[0]

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
        with self.write_lock(), warnings.catch_warnings():
            warnings.simplefilter("ignore", UserWarning)  # "removes every version": that is the point here
            self._write(lambda: self.table.optimize(cleanup_older_than=timedelta(0), delete_unverified=True))
            self.record(NOTES, self.table)
