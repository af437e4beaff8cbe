"""The notes table: one embedded LanceDB table (links and version history are columns), behind methods
that take arguments. Filters are built here and nowhere else.

Why columns and not separate tables: one evolution touches the new note and up to a few
neighbours, and must be all-or-nothing. A single `merge_insert` on one table is one atomic
LanceDB commit, so links, rewritten fields, fresh vectors and their version records land together
or not at all.

Every listing method takes the notebook it reads (None: every notebook, only for the worker's queue,
`zk status` and exports).
"""

from __future__ import annotations

import re
import shutil
import warnings
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from .database import (
    EMBEDDER_KEY,
    SCHEMA_VERSION,
    Database,
    all_of,
    in_list,
    lance_message,
    manifest_versions,
    sql_str,
)
from .errors import AmbiguousId, InvalidInput, NotFound, StoreDamaged, ZkError
from .models import PENDING, READY, SHORT_ID, Note, Scope
from .text import hashtags, keyword_terms
from .versions import TableVersion, describe, readable_view, table_versions

NOTES = "notes"
KEYWORD_COLUMNS = ("terms", "enrichment_terms")  # full-text (BM25) indexes over text.keyword_terms
# Scalar indexes: id and hash lookups, a session's turns, backlinks (which notes list an id in `links`).
SCALAR_INDEXES = {"id": "BTREE", "session_id": "BTREE", "content_hash": "BTREE", "links": "LABEL_LIST",
                  "speaker": "BITMAP"}  # speaker: who a query names (search's person scope)
VECTOR_COLUMNS = ("raw_vector", "vector")
# Below this an exact search is fast enough: ~1.6 ms per 1,000 rows per vector column (bench.scale).
VECTOR_INDEX_MIN_ROWS = 20_000
VECTOR_INDEX_GROWTH = 4  # retrain a vector index once the table has grown this many times since it was built
FRAGMENTS_BEFORE_COMPACTION = 16  # each single `zk add` writes one
ROWS_PER_PARTITION = 4_000  # IVF partitions of ~4,000 rows, each with its own HNSW graph
# HNSW's default beam misses a third of the true top 10 for question-like queries (recall 0.57 at 100k).
# Measured at 100k (bench.scale): half the 25 partitions with a beam of 400 found 0.90 of the exact top 10
# (0.88 of the top 100); every partition with a beam of 100 and a 3x re-rank, 0.99 (0.98), and no slower.
# At 1M (250 partitions) a quarter of them: 0.97 of the top 10, warm search p95 145 ms (half: 0.98, 190 ms).
ANN_EF, ANN_REFINE, ANN_REFINE_UP_TO = 100, 3, 20
ANN_PROBE_ALL_UP_TO = 32  # partitions; past this, a quarter of them (at least 32)


def ann_probes(partitions: int) -> int:
    """How many IVF partitions a vector search visits."""
    partitions = max(1, partitions)
    return partitions if partitions <= ANN_PROBE_ALL_UP_TO else max(ANN_PROBE_ALL_UP_TO, partitions // 4)


_HEX = re.compile(r"^[0-9a-f]{1,32}$")

# Columns read when the vector is not needed (listing, keyword search, rendering).
TEXT_COLUMNS = [
    "id", "content", "at", "created", "keywords", "tags", "context", "links", "status", "version",
    "history", "notebook", "kind", "session_id", "speaker", "seq", "source", "content_hash", "error", "user_tags",
]


# Columns a ranking reads (search fuses several ranked lists of 100): what fusion, session smoothing and
# filtering look at, and the links (read with the hits in full). Each column costs every list a read per
# row: these 7 instead of 12 take 1.5-2 ms off each list at 100k notes. Notes read this way are for
# ranking only and never written back; search re-reads the few it returns in full.
RANK_COLUMNS = ["id", "content", "at", "kind", "session_id", "seq", "links"]


def rank_columns(tagged: bool = False) -> list[str]:
    """RANK_COLUMNS, and the user's #tags when a tag filter looks at them."""
    return [*RANK_COLUMNS, "user_tags"] if tagged else RANK_COLUMNS


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
        # The keyword index's terms (text.keyword_terms, space-joined): raw words, and what the LLM added.
        pa.field("terms", pa.string()),
        pa.field("enrichment_terms", pa.string()),
        pa.field("vector", pa.list_(pa.float32(), dim)),
        pa.field("raw_vector", pa.list_(pa.float32(), dim)),
    ])


def note_to_row(note: Note) -> dict[str, Any]:
    return {
        "id": note.id, "content": note.content, "at": note.at, "created": note.created,
        "keywords": list(note.keywords), "tags": list(note.tags), "context": note.context,
        "links": list(note.links), "status": note.status, "version": note.version,
        "history": Note.history_to_json(note.history), "notebook": note.notebook, "kind": note.kind,
        "session_id": note.session_id, "speaker": note.speaker, "seq": note.seq, "source": note.source,
        "content_hash": note.content_hash, "error": note.error, "user_tags": list(note.user_tags),
        "terms": " ".join(keyword_terms(f"{note.speaker or ''} {note.content}")),  # "what did Gina say"
        "enrichment_terms": " ".join(keyword_terms(note.enrichment_text())),
        "vector": _floats(note.vector),
        # A note written before enrichment has one embedding, of its raw words: both columns hold it.
        "raw_vector": _floats(note.raw_vector if note.raw_vector is not None else note.vector),
    }


def scope_filter(scope: Scope) -> str:
    """The notes of a person scope: the sessions the people speak in, and the notes naming them."""
    parts = [in_list("session_id", scope.sessions)] if scope.sessions else []
    parts += [in_list("id", scope.mentions)] if scope.mentions else []
    return " OR ".join(f"({p})" for p in parts) or "false"


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


def open_damage(store: Store, meta: dict[str, Any], tables: dict[str, TableVersion]) -> str | None:
    """Why a store just opened may be read but not written (tables read at an older version, lost
    commits), or None. A store with notes and no meta.json is refused: which embedder wrote it is not
    known, and a write would label it with the one configured now."""
    if not meta and store.table.count_rows():
        embedder = (store.table.schema.metadata or {}).get(EMBEDDER_KEY.encode(), b"?").decode()
        raise StoreDamaged(f"meta.json is missing, but the store holds {store.table.count_rows()} note(s) "
                           f"(embedded with '{embedder}'); nothing was read or written — `zk repair` re-creates it",
                           written=True)
    pinned = describe(tables)
    if pinned and tables.get(NOTES) and tables[NOTES].pinned:
        recorded = (meta.get("tables") or {}).get(NOTES) or {}
        pinned += f", with {store.table.count_rows()} of the {recorded.get('rows', '?')} note(s) of the last write"
    return "; ".join(filter(None, [pinned, store.compare_with_meta(meta)])) or None


class Store(Database):
    """The notes table of one home (the database's meta file, lock and guards come from `Database`)."""

    def __init__(self, home: Path, embedder_name: str, dim: int, location=None):
        super().__init__(home, embedder_name, dim, location)
        self._vector_indexes: tuple[int, dict[str, int]] | None = None  # (table version, what it has)
        self._has_enriched: tuple[tuple[int, str | None], bool] | None = None
        self._sole_notebook: dict[tuple[int, str], bool] = {}
        self._open()

    def _open(self) -> None:
        meta = self.read_meta(self.home)
        if self.remote:
            from .shared_store import open_shared

            open_shared(self, meta, NOTES)
            return
        recorded = meta.get("tables", {}).get(NOTES)
        if recorded and not self.table_dir(NOTES).is_dir():
            # Never build a new, empty store over one that is gone (a moved folder, a drive not mounted).
            raise StoreDamaged(f"the notes table is missing ({self.table_dir(NOTES)}), but meta.json "
                          f"records {recorded.get('rows', '?')} row(s) at version {recorded.get('version', '?')}; "
                          "nothing was written — is the drive mounted?")
        tables = table_versions(self.db_path, self._verified)
        notes = tables.get(NOTES)
        if notes and notes.problem and notes.readable is None:
            raise StoreDamaged(f"the notes table cannot be read: no version of it is whole ({notes.problem})",
                               written=True)
        view = readable_view(self.db_path, tables, self)
        if view is not None and (notes is None or notes.readable is None):  # never create a table in a view
            raise StoreDamaged(f"{describe(tables)}; nothing was written", written=True)
        try:
            self.connect(meta, view)
            if not self.table_dir(NOTES).is_dir():
                self._create_table(meta)
            try:
                self.table = self.db.open_table(NOTES)
            except ValueError:  # "not found": the folder is there, its first commit is not
                if recorded:
                    raise
                # Another zk is creating this new store right now; it does so under the lock, so once the
                # lock is ours the table is complete (or still absent, and we create it).
                self._create_table(meta)
                self.table = self.db.open_table(NOTES)
            self.damage = open_damage(self, meta, tables)
            if meta and meta.get("schema_version", 0) < SCHEMA_VERSION:
                self._migrate(meta.get("schema_version", 0))
        except ZkError:
            raise
        except Exception as exc:  # noqa: BLE001 - any LanceDB/IO failure means the store is unusable
            raise StoreDamaged(f"cannot open the store at {self.db_path}: {lance_message(exc)}") from None

    # For shared_store.py, which opens the table of an object-store home.
    def notes_schema(self):
        return _arrow_schema(self.dim)

    def ensure_indexes(self) -> None:
        with self.write_lock(check=False):
            self._ensure_indexes()

    def migrate(self, from_version: int) -> None:
        self._migrate(from_version)

    def _create_table(self, meta: dict[str, Any]) -> None:
        """Create the notes table of a new store under the lock (only a new store takes the lock to open:
        reads of an existing one work read-only)."""
        with self.write_lock(check=False):
            folder = self.table_dir(NOTES)
            if folder.is_dir() and not manifest_versions(folder):
                shutil.rmtree(folder)  # a creation killed before its first commit: it holds no rows
            if NOTES not in self.db.list_tables().tables:
                self.db.create_table(NOTES, schema=_arrow_schema(self.dim).with_metadata(
                    {EMBEDDER_KEY: self.embedder_name}))
                self.table = self.db.open_table(NOTES)
                self._ensure_indexes()
            if not meta:
                self._write_meta()

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
                    self.guarded_write(lambda: self.table.merge_insert("id").when_matched_update_all().execute(rows))
            if "terms" in missing:  # v2 -> v3: every note's keyword terms, written once; then the indexes
                every = [row_to_note(r) for r in self._query(None)]
                for start in range(0, len(every), 5000):
                    rows = [note_to_row(n) for n in every[start:start + 5000]]
                    self.guarded_write(
                        lambda rows=rows: self.table.merge_insert("id").when_matched_update_all().execute(rows))
            self._ensure_indexes()
            self._write_meta()
            self.record(NOTES, self.table)

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
                self.guarded_write(lambda: self.table.add(rows))
                self.record(NOTES, self.table)
        if skip_existing and notes and self.remote:
            notes = self._drop_racing_copies(notes)
        return notes

    def _drop_racing_copies(self, notes: list[Note]) -> list[Note]:
        """On a shared store the hash check above is not atomic across machines: two machines importing
        one log at once can both write a turn. After the commit, each hash written is looked up; of
        several rows with one hash the smallest id stays and the others are deleted. Every machine
        picks the same survivor, so racing clean-ups delete the same rows (idempotent), and at least the
        later committer sees both copies. Returns the notes of this batch that survived."""
        hashes = sorted({n.content_hash for n in notes})
        gone: set[str] = set()
        for attempt in range(5):  # the other machine's clean-up of the same rows may conflict with ours
            rows = [r for start in range(0, len(hashes), 500) for r in self._query(
                in_list("content_hash", hashes[start:start + 500]), ["id", "content_hash"])]
            ids: dict[str, set[str]] = {}
            for row in rows:
                ids.setdefault(row["content_hash"], set()).add(row["id"])
            losers = sorted(i for group in ids.values() for i in sorted(group)[1:])
            try:
                self.delete(losers)
                gone.update(losers)
                break
            except ZkError:
                if attempt == 4:
                    raise
                self.refresh(self.table)
        return [n for n in notes if n.id not in gone and n.content_hash in ids and n.id in ids[n.content_hash]]

    def update(self, notes: Iterable[Note]) -> None:
        """Replace whole rows by id in one atomic commit (used for every multi-note change). Update only:
        a note deleted meanwhile (`zk rm`) stays deleted, never re-inserted from a stale copy."""
        rows = [note_to_row(n) for n in notes]
        if not rows:
            return
        with self.write_lock():
            self.guarded_write(lambda: self.table.merge_insert("id").when_matched_update_all().execute(rows))
            self.record(NOTES, self.table)

    def delete(self, ids: Iterable[str]) -> None:
        ids = list(ids)
        if ids:
            with self.write_lock():
                self.guarded_write(lambda: self.table.delete(in_list("id", ids)))
                self.record(NOTES, self.table)

    # -- indexes and upkeep -------------------------------------------------------------------------
    def _ensure_indexes(self) -> None:
        """Create every full-text and scalar index the table lacks (the caller holds the write lock). An
        index covers the rows it was built or last optimised over; LanceDB reads newer rows exactly, so a
        note is found the moment it is written, and `maintain` folds it into the index later."""
        have = {column for index in self.table.list_indices() for column in index.columns}
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # lancedb 0.40's create_index() takes no FTS/scalar config yet
            for column in KEYWORD_COLUMNS:
                if column not in have:  # the terms are ours already: split on spaces, change nothing
                    self.guarded_write(lambda c=column: self.table.create_fts_index(
                        c, use_tantivy=False, base_tokenizer="whitespace", lower_case=False, stem=False,
                        remove_stop_words=False, ascii_folding=False, max_token_length=None, with_position=False))
            for column, kind in SCALAR_INDEXES.items():
                if column not in have:
                    self.guarded_write(lambda c=column, k=kind: self.table.create_scalar_index(c, index_type=k))

    def vector_indexes(self) -> dict[str, int]:
        """Vector column -> the row count its ANN index was trained on (recorded in the index's name)."""
        version = self.table.version
        if self._vector_indexes is not None and self._vector_indexes[0] == version:
            return self._vector_indexes[1]
        out = {}
        for index in self.table.list_indices():
            if index.columns and index.columns[0] in VECTOR_COLUMNS and index.name.rsplit("_", 1)[-1].isdigit():
                out[index.columns[0]] = int(index.name.rsplit("_", 1)[-1])
        self._vector_indexes = (version, out)
        return out

    def maintain(self, force: bool = False, vector_min_rows: int = VECTOR_INDEX_MIN_ROWS) -> list[str]:
        """The worker's idle work, never done inside `zk add`: merge the small fragments many single adds
        leave, fold new rows into every index, and build (or, after 4x growth, retrain) an ANN index on
        each vector column once the table has `vector_min_rows` notes. Returns what it did."""
        done: list[str] = []
        with self.write_lock():
            self._ensure_indexes()
            fragments = self.table.stats()["fragment_stats"]["num_fragments"]
            unindexed = any(getattr(i, "num_unindexed_rows", 0) for i in self.table.list_indices())
        if force or unindexed or fragments >= FRAGMENTS_BEFORE_COMPACTION:
            self.upkeep(NOTES, self.table)  # takes the write lock itself
            done.append(f"compacted {fragments} fragment(s), indexes brought up to date")
        with self.write_lock():  # after compaction: a new index is built over the merged files, not remapped
            rows = self.table.count_rows()
            trained = self.vector_indexes()
            for column in VECTOR_COLUMNS:
                if rows >= vector_min_rows and (column not in trained or rows >= VECTOR_INDEX_GROWTH * trained[column]):
                    self._build_vector_index(column, rows)
                    done.append(f"vector index on {column} ({rows} rows)")
            self.record(NOTES, self.table)
        return done

    def _build_vector_index(self, column: str, rows: int) -> None:
        """IVF partitions of ~4,000 rows, each an HNSW graph over 8-bit scalar-quantised vectors: at 100k
        rows of LoCoMo text it builds in ~25 s (IVF_PQ: 70 s) and answers in ~6 ms against ~130 ms exact."""
        for index in self.table.list_indices():
            if index.columns and index.columns[0] == column:
                self.guarded_write(lambda name=index.name: self.table.drop_index(name))
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # lancedb 0.40 calls these parameters deprecated; they still work
            self.guarded_write(lambda: self.table.create_index(
                metric="cosine", vector_column_name=column, index_type="IVF_HNSW_SQ",
                num_partitions=max(1, rows // ROWS_PER_PARTITION), name=f"{column}_ann_{rows}"))

    # -- reads: filters are private to this class ---------------------------------------------------
    def _query(self, where: str | None, columns: list[str] | None = None, limit: int | None = None
               ) -> list[dict[str, Any]]:
        def run():
            query = self.table.search()
            if where:
                query = query.where(where)
            if columns:
                query = query.select(columns)
            return query.limit(limit if limit is not None else max(self.table.count_rows(), 1)).to_list()

        return self.guarded_read(run)

    def _notes(self, where: str | None, with_vector: bool = False, limit: int | None = None) -> list[Note]:
        return [row_to_note(r) for r in self._query(where, None if with_vector else TEXT_COLUMNS, limit)]

    def get(self, note_id: str, with_vector: bool = False) -> Note | None:
        found = self._notes(f"id = {sql_str(note_id)}", with_vector, limit=1)
        return found[0] if found else None

    def get_many(self, ids: Iterable[str], with_vector: bool = False) -> dict[str, Note]:
        ids = list(dict.fromkeys(ids))
        if not ids:
            return {}
        return {n.id: n for n in self._notes(in_list("id", ids), with_vector, limit=len(ids))}

    def notes(self, notebook: str | None = None, *, with_vector: bool = False, since: str | None = None,
              until: str | None = None, tagged: bool = False, unfinished: bool = False) -> list[Note]:
        """Notes of a notebook (None: all), unordered. `since`/`until`: ISO bounds on `at` (until
        exclusive); `tagged`: only notes with a #tag of the user's; `unfinished`: not yet `ready`."""
        return self._notes(all_of(
            notebook, since and f"at >= {sql_str(since)}", until and f"at < {sql_str(until)}",
            "array_length(user_tags) > 0" if tagged else None,
            f"status != {sql_str(READY)}" if unfinished else None), with_vector)

    def newest(self, notebook: str, limit: int | None, *, since: str | None = None, until: str | None = None,
               keep=None) -> list[Note]:
        """The `limit` newest notes (by `at`, then creation and position), newest first. Only the ordering
        columns of the matching rows are read, then the whole rows of the few shown. `keep(user_tags)`:
        a last test on each note's #tags (a case-insensitive tag match)."""
        where = self._where(notebook, since and f"at >= {sql_str(since)}", until and f"at < {sql_str(until)}",
                            "array_length(user_tags) > 0" if keep else None)
        if limit and keep is None:  # one column of every matching row, then the ordering columns of a few
            cutoff = self._newest_at(where, limit)
            where = all_of(None, where, cutoff is not None and f"at >= {sql_str(cutoff)}")
        columns = ["id", "at", "created", "seq", *(["user_tags"] if keep else [])]
        rows = [r for r in self._query(where, columns) if keep is None or keep(r["user_tags"] or [])]
        rows.sort(key=lambda r: (r["at"] or "", r["created"] or "", r["seq"] or 0), reverse=True)
        ids = [r["id"] for r in rows[:limit] if r["id"]] if limit else [r["id"] for r in rows]
        found = self.get_many(ids)
        return [found[i] for i in ids if i in found]

    def _newest_at(self, where: str | None, limit: int) -> str | None:
        """The `at` of the `limit`-th newest matching note (None: there are no more than `limit`), from the
        `at` column alone: at 1M notes, reading four ordering columns of every row took ~2 s and 800 MB."""
        import pyarrow.compute as pc

        def run():
            query = self.table.search().select(["at"]).limit(max(self.table.count_rows(), 1))
            return (query.where(where) if where else query).to_arrow()["at"]

        stamps = self.guarded_read(run).drop_null()
        if len(stamps) <= limit:
            return None
        return pc.min(pc.take(stamps, pc.top_k_unstable(stamps, k=limit))).as_py()

    def count_by(self, column: str, notebook: str | None = None) -> dict[str, int]:
        """How many notes hold each value of a plain column (`status`, `kind`): one column read."""
        counts: dict[str, int] = {}
        for row in self._query(self._where(notebook), [column]):
            counts[row[column]] = counts.get(row[column], 0) + 1
        return dict(sorted(counts.items()))

    def unfinished_ids(self, notebook: str | None = None) -> list[str]:
        """Ids of the notes with LLM work left (not `ready`), oldest first; only the ordering columns are read."""
        rows = self._query(self._where(notebook, f"status != {sql_str(READY)}"), ["id", "created", "at", "seq"])
        return [r["id"] for r in sorted(rows, key=lambda r: (r["created"] or "", r["at"] or "", r["seq"] or 0))]

    def _where(self, notebook: str | None, *clauses: str | None | bool) -> str | None:
        """A read's filter: the notebook (when the store holds others too) and every clause given."""
        return all_of(self._notebook_filter(notebook), *clauses)

    def _notebook_filter(self, notebook: str | None) -> str | None:
        """The notebook a read must filter on: None when every note is in it (the usual one-notebook store).
        A filter that keeps every row still costs each vector and keyword search a pass over all of them
        (~3 ms each at 100k); the answer is remembered per table version."""
        if notebook is None:
            return None
        key = (self.table.version, notebook)
        if key not in self._sole_notebook:
            others = self.guarded_read(lambda: self.table.count_rows(f"notebook != {sql_str(notebook)}"))
            self._sole_notebook = {key: others == 0}
        return None if self._sole_notebook[key] else notebook

    def has_enriched(self, notebook: str | None = None) -> bool:
        """Whether any note of the notebook has what the LLM adds (a context); remembered per table version,
        so a store the LLM never touched does not pay for the enrichment signals on every search."""
        key = (self.table.version, notebook)
        if self._has_enriched is None or self._has_enriched[0] != key:
            self._has_enriched = (key, self.guarded_read(lambda: self.table.count_rows(self._where(notebook,
                                                                                              "context != ''"))) > 0)
        return self._has_enriched[1]

    def count(self, notebook: str | None = None, unfinished: bool = False) -> int:
        """Rows of a notebook (None: all); `unfinished`: only those with LLM work left. Read from the
        table's metadata and one column, never the rows."""
        where = self._where(notebook, f"status != {sql_str(READY)}" if unfinished else None)
        return self.guarded_read(lambda: self.table.count_rows(where) if where else self.table.count_rows())

    def resolve(self, prefix: str, notebook: str | None = None) -> str:
        """Full id for a unique id prefix (among one notebook's notes: another notebook's ids neither
        make a prefix ambiguous nor show up in the error), or a clear error."""
        cleaned = prefix.strip().lower()
        if not _HEX.match(cleaned):
            raise InvalidInput(f"'{prefix}' is not a note id (expected hex characters, e.g. 3f9a12bc)")
        rows = self._query(self._where(notebook, f"id LIKE {sql_str(cleaned + '%')}"), ["id"], limit=6)
        ids = list(dict.fromkeys(r["id"] for r in rows))  # one id stored twice (an old doubled restore) is one note
        if not ids:
            raise NotFound(f"no note with id {cleaned}")
        if len(ids) > 1 and cleaned in ids:
            return cleaned  # a whole id is never ambiguous, even when it is a prefix of another
        if len(ids) > 1:
            shown = ", ".join(i[:SHORT_ID + 4] for i in ids[:5])
            raise AmbiguousId(f"id prefix '{cleaned}' is ambiguous: {shown}")
        return ids[0]

    def ids_starting(self, prefix: str, notebook: str, limit: int = 500) -> list[dict[str, Any]]:
        """(id, content, at) rows whose id starts with `prefix` (shell completion)."""
        return self._query(self._where(notebook, f"id LIKE {sql_str(prefix + '%')}"), ["id", "content", "at"], limit)

    def changed_by(self, note_id: str) -> list[Note]:
        """Notes whose version history names `note_id` (the notes it evolved), with vectors."""
        return [n for n in self._notes(f"history LIKE {sql_str('%' + note_id + '%')}", True) if n.id != note_id]

    def notes_with_hash(self, content_hash: str) -> list[Note]:
        return self._notes(f"content_hash = {sql_str(content_hash)}")

    def turns_saying(self, notebook: str, content: str, speaker: str | None) -> list[Note]:
        """Chat turns (in a session) with exactly this text and speaker: where a re-imported log may resume."""
        said_by = "speaker IS NULL" if speaker is None else f"speaker = {sql_str(speaker)}"
        return self._notes(self._where(notebook, "kind = 'turn'", "session_id IS NOT NULL",
                                        f"content = {sql_str(content)}", said_by))

    # -- sessions ---------------------------------------------------------------------------------
    def session_turns(self, session_id: str, notebook: str | None = None) -> list[Note]:
        """A session's notes in order (turns by position, journal entries by time)."""
        notes = self._notes(self._where(notebook, f"session_id = {sql_str(session_id)}"))
        return sorted(notes, key=lambda n: (n.seq, n.at, n.created))

    def session_notes(self, notebook: str, prefix: str = "") -> list[Note]:
        """Every note of the notebook that belongs to a session (whose id starts with `prefix`)."""
        which = f"session_id LIKE {sql_str(prefix + '%')}" if prefix else "session_id IS NOT NULL"
        return self._notes(self._where(notebook, which))

    def notebook_of_session(self, session_id: str) -> str | None:
        rows = self._query(f"session_id = {sql_str(session_id)}", ["notebook"], limit=1)
        return rows[0]["notebook"] if rows else None

    def journal_rows_before(self, day: str) -> list[dict[str, Any]]:
        """(session_id, notebook, at) of every journal entry (`kind` note, in a session) before `day`."""
        return self._query(f"kind = 'note' AND session_id IS NOT NULL AND at < {sql_str(day)}",
                           ["session_id", "notebook", "at"])

    def session_windows(self, centres: list[Note], radius: int, notebook: str | None = None
                        ) -> dict[str, list[Note]]:
        """For each chat turn in `centres`, the turns of its session within `radius` places of it, nearest
        first (one read for all of them)."""
        turns = [n for n in centres if n.session_id and n.kind == "turn"]
        if not turns or radius < 1:
            return {}
        # Two IN lists (a superset, narrowed below) read several times faster than an OR of ranges.
        seqs = ", ".join(str(q) for q in sorted({n.seq + d for n in turns for d in range(-radius, radius + 1)}))
        sessions = in_list("session_id", sorted({n.session_id for n in turns}))
        rows = self._notes(self._where(notebook, "kind = 'turn'", sessions, f"seq IN ({seqs})"))
        out: dict[str, list[Note]] = {}
        for centre in turns:
            around = [n for n in rows if n.session_id == centre.session_id and n.id != centre.id
                      and abs(n.seq - centre.seq) <= radius]
            out[centre.id] = sorted(around, key=lambda n: (abs(n.seq - centre.seq), n.seq))
        return out

    # -- links ------------------------------------------------------------------------------------
    def backlinks(self, note_id: str) -> list[str]:
        rows = self._query(f"array_has_any(links, make_array({sql_str(note_id)}))", ["id", "at"])  # indexed
        return [r["id"] for r in sorted(rows, key=lambda r: r["at"])]

    def _linking_rows(self, note_ids: list[str], columns: list[str]) -> list[dict[str, Any]]:
        """Rows of the notes that link to any of `note_ids`, each once, oldest first."""
        # The links index answers array_has_any; a very long id list makes a huge filter, so it goes in chunks.
        ordered = sorted(set(note_ids))
        rows = [row for start in range(0, len(ordered), 200) for row in self._query(
            "array_has_any(links, make_array(" + ", ".join(sql_str(i) for i in ordered[start:start + 200]) + "))",
            columns)]
        return sorted({r["id"]: r for r in rows}.values(), key=lambda r: r["at"])

    def backlinks_many(self, note_ids: list[str]) -> dict[str, list[str]]:
        """Backlinks of several notes in one read (retrieval expands every hit at once)."""
        if not note_ids:
            return {}
        wanted = set(note_ids)
        out: dict[str, list[str]] = {i: [] for i in note_ids}
        for row in self._linking_rows(note_ids, ["id", "at", "links"]):
            for target in row["links"] or []:
                if target in wanted:
                    out[target].append(row["id"])
        return out

    def notes_and_linking(self, ids: list[str], targets: list[str]) -> tuple[dict[str, Note], list[Note]]:
        """The notes `ids` (as `get_many`) and the notes linking to any of `targets` (as `linking_notes`),
        in one read: search needs both for its hits, and one read costs less than two at once."""
        ids, targets = list(dict.fromkeys(ids)), sorted(set(targets))
        if not targets or len(targets) > 200:
            return self.get_many(ids), self.linking_notes(targets)
        clauses = [f"array_has_any(links, make_array({', '.join(sql_str(t) for t in targets)}))"]
        clauses += [in_list("id", ids)] if ids else []
        notes = self._notes(" OR ".join(f"({c})" for c in clauses))
        wanted, aimed = set(ids), set(targets)
        linking = sorted((n for n in notes if aimed.intersection(n.links)), key=lambda n: n.at)
        return {n.id: n for n in notes if n.id in wanted}, linking

    def linking_notes(self, note_ids: list[str]) -> list[Note]:
        """The whole notes that link to any of `note_ids`, oldest first: backlinks and their text in one
        read (search would otherwise read the ids, then the notes)."""
        return [row_to_note(r) for r in self._linking_rows(note_ids, TEXT_COLUMNS)] if note_ids else []

    # -- people -----------------------------------------------------------------------------------
    def speakers(self, candidates: list[str], notebook: str | None = None) -> dict[str, set[str]]:
        """Which of `candidates` speak in chat sessions, each with the sessions they speak in: two columns
        of their turns, found through the speaker index."""
        if not candidates:
            return {}
        rows = self._query(self._where(notebook, in_list("speaker", candidates), "session_id IS NOT NULL"),
                           ["speaker", "session_id"])
        out: dict[str, set[str]] = {}
        for row in rows:
            out.setdefault(row["speaker"], set()).add(row["session_id"])
        return out

    def mentioning(self, terms: list[str], k: int, notebook: str | None = None) -> list[str]:
        """Ids of up to `k` of the user's own notes (not chat turns) whose words hold any of `terms` (a
        name's keyword terms), best BM25 first."""
        if not terms:
            return []
        where = self._where(notebook, "kind IS NULL OR kind != 'turn'")
        query = self.table.search(" ".join(terms), query_type="fts", fts_columns="terms").select(["id", "_score"])
        if where:
            query = query.where(where, prefilter=True)
        return [r["id"] for r in self.guarded_read(lambda: query.limit(k).to_list()) if r["_score"] > 0]

    def count_within(self, scope: Scope, notebook: str | None = None) -> int:
        where = self._where(notebook, scope_filter(scope))
        return self.guarded_read(lambda: self.table.count_rows(where))

    def within(self, scope: Scope, notebook: str | None = None, *, enrichment: bool = False
               ) -> list[tuple[Note, list[str], list[str]]]:
        """Every note of a person scope for ranking in place: (note with RANK_COLUMNS and both vectors,
        its keyword terms, its enrichment terms; the latter read only with `enrichment`)."""
        columns = [*RANK_COLUMNS, "raw_vector", "terms", *(["vector", "context", "enrichment_terms"] if enrichment
                                                           else [])]
        rows = self._query(self._where(notebook, scope_filter(scope)), columns)
        return [(row_to_note(r), (r["terms"] or "").split(), (r.get("enrichment_terms") or "").split())
                for r in rows]

    # -- keywords ---------------------------------------------------------------------------------
    def keyword_search(self, terms: list[str], k: int, notebook: str | None = None, *,
                       column: str = "terms", tagged: bool = False, light: bool = False,
                       within: Scope | None = None) -> list[tuple[Note, float]]:
        """Top-k by BM25 over the full-text index of `column` ("terms": the raw words; "enrichment_terms":
        what the LLM added), for query terms from `text.keyword_terms`. Best first; only positive scores.
        `light`: notes hold only RANK_COLUMNS (for ranking; never write them back); `within`: only the
        notes of a person scope."""
        if not terms:
            return []
        where = self._where(notebook, "array_length(user_tags) > 0" if tagged else None,
                       within and scope_filter(within))
        query = self.table.search(" ".join(terms), query_type="fts", fts_columns=column) \
            .select([*(rank_columns(tagged) if light else TEXT_COLUMNS), "_score"])
        if where:
            query = query.where(where, prefilter=True)
        rows = self.guarded_read(lambda: query.limit(k).to_list())
        return [(row_to_note(r), float(r["_score"])) for r in rows if r["_score"] > 0]

    # -- vectors ----------------------------------------------------------------------------------
    def nearest(self, vector, k: int, notebook: str | None = None, *, column: str = "vector",
                exclude: str | None = None, processed: bool = False, tagged: bool = False,
                enriched: bool = False, light: bool = False, within: Scope | None = None
                ) -> list[tuple[Note, float]]:
        """Top-k by cosine similarity (1 - cosine distance) over `column` ("vector" = the full, enriched
        embedding; "raw_vector" = the raw words). `exclude`: one note id left out; `processed`: only notes
        past construction (link candidates); `tagged`: only notes with #tags; `enriched`: only notes with a
        context (the enriched embedding differs from the raw one); `light`: notes hold only RANK_COLUMNS
        (for ranking; never write them back); `within`: only the notes of a person scope."""
        if self.count() == 0:
            return []
        where = self._where(notebook, exclude and f"id != {sql_str(exclude)}",
                            f"status != {sql_str(PENDING)}" if processed else None,
                            "array_length(user_tags) > 0" if tagged else None, "context != ''" if enriched else None,
                       within and scope_filter(within))
        query = self.table.search(list(vector), vector_column_name=column).distance_type("cosine") \
            .select([*(rank_columns(tagged) if light else TEXT_COLUMNS), "_distance"])
        if where:
            query = query.where(where, prefilter=True)
        trained = self.vector_indexes().get(column)
        if trained:  # many partitions, a narrow HNSW beam: cheaper than few and wide at the same recall
            query = query.nprobes(ann_probes(trained // ROWS_PER_PARTITION)).ef(max(ANN_EF, k))
            if k <= ANN_REFINE_UP_TO:  # a short list is re-ranked on the full vectors; a long one needs not
                query = query.ef(max(ANN_EF, ANN_REFINE * k)).refine_factor(ANN_REFINE)
        rows = self.guarded_read(lambda: query.limit(k).to_list())
        return [(row_to_note(r), 1.0 - float(r["_distance"])) for r in rows]

    def existing_hashes(self, hashes: list[str]) -> set[str]:
        found: set[str] = set()
        for start in range(0, len(hashes), 500):
            chunk = hashes[start:start + 500]
            found.update(r["content_hash"] for r in self._query(in_list("content_hash", chunk), ["content_hash"],
                                                                 limit=len(chunk) * 4))
        return found

    def compact(self) -> None:
        """After a delete: rewrite the files that hold deleted rows and drop old table versions (deleted text
        must not survive on disk); indexes are remapped, not rebuilt."""
        self.upkeep(NOTES, self.table, purge=True)
