"""Upkeep of the notes table: its indexes (full-text, scalar, vector), compaction and schema migration.
"""

from __future__ import annotations

import re
import warnings

from ..core.errors import ZkError
from ..core.text import hashtags
from .store_rows import NOTES, NoteRows, arrow_schema, note_to_row, row_to_note

KEYWORD_COLUMNS = ("terms", "enrichment_terms")  # full-text (BM25) indexes over text.keyword_terms


# Scalar indexes: id and hash lookups, a session's turns, backlinks (which notes list an id in `links`).
SCALAR_INDEXES = {"id": "BTREE", "session_id": "BTREE", "content_hash": "BTREE", "links": "LABEL_LIST",
                  "speaker": "BITMAP",  # speaker: who a query names (search's person scope)
                  "at": "BTREE",  # the newest notes (`zk list`) by counts, not by reading every row's time
                  "notebook": "BITMAP"}  # whether a store holds other notebooks, counted, not read


VECTOR_COLUMNS = ("raw_vector", "vector")


# Below this an exact search is fast enough: ~1.6 ms per 1,000 rows per vector column (bench.scale).
VECTOR_INDEX_MIN_ROWS = 20_000


VECTOR_INDEX_GROWTH = 4  # retrain a vector index once the table has grown this many times since it was built


FRAGMENTS_BEFORE_COMPACTION = 16  # each single `zk add` writes one


ROWS_PER_PARTITION = 4_000  # IVF partitions of ~4,000 rows, each with its own HNSW graph


# On a shared store each probed partition costs ~4 object-store requests (Lance loads them one by one), and
# search probes them all up to 32 (store_ranked.ann_probes): the bytes read are the whole index either way.
# Measured at 40k notes (bench.remote_vectors, one ranked list of 100): partitions of 4,000 rows 60 requests,
# 21.7 MB, recall@10 0.93; of 20,000 (with a beam per 2,000 rows, store_ranked.ann_ef) 24, 21.9 MB, 0.98;
# one partition 21, 21.9 MB, but a beam of 2,000 for 0.98 and a slower build (34.7 s against 31.2 s).
# The worker retrains after 4x growth: 1 partition at 20k notes, 4 at 80k, 16 at 320k, all of them probed up
# to 32 (640k notes; a quarter past that, as on a local home, where the bytes, not the requests, are the cost).
SHARED_ROWS_PER_PARTITION = 20_000


def vector_partitions(rows: int, remote: bool) -> int:
    """How many IVF partitions the worker builds over `rows` rows (on a shared store: fewer, larger ones)."""
    return max(1, rows // (SHARED_ROWS_PER_PARTITION if remote else ROWS_PER_PARTITION))


def parse_index_name(name: str) -> tuple[int, int] | None:
    """(rows trained on, partitions) of an ANN index named by `_build_vector_index`: `raw_vector_ann_p2_40000`;
    an older name without the partitions (`raw_vector_ann_40000`) was built by the local rule."""
    found = re.search(r"_ann_(?:p(\d+)_)?(\d+)$", name)
    if not found:
        return None
    rows = int(found.group(2))
    return rows, int(found.group(1)) if found.group(1) else max(1, rows // ROWS_PER_PARTITION)


class Upkeep(NoteRows):
    """Index upkeep, compaction and migration: the worker's idle work and what opening a store needs."""

    def notes_schema(self):
        """The notes table's columns (shared_store.py creates and migrates an object-store table with it)."""
        return arrow_schema(self.dim)

    def ensure_indexes(self) -> None:
        with self.write_lock(check=False):
            self._ensure_indexes()

    def migrate(self, from_version: int) -> None:
        self._migrate(from_version)

    def _migrate(self, from_version: int) -> None:
        """Bring an older store up to SCHEMA_VERSION: add every column it lacks, with its default (a list
        column starts empty); then fill what can be derived (v2: the #tags already written in notes)."""
        import pyarrow as pa

        with self.write_lock():
            present = set(self.table.schema.names)
            missing = {f.name: f for f in arrow_schema(self.dim) if f.name not in present}
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
        return {column: rows for column, (rows, _) in self.vector_index_shapes().items()}

    def vector_index_shapes(self) -> dict[str, tuple[int, int]]:
        """Vector column -> (rows its ANN index was trained on, its IVF partitions), from the index's name:
        no request beyond the manifest a command reads anyway."""
        version = self.version_of(self.table)
        if self._vector_indexes is not None and self._vector_indexes[0] == version:
            return self._vector_indexes[1]
        out = {}
        for index in self.guarded_read(self.table.list_indices):
            shape = parse_index_name(index.name) if index.columns and index.columns[0] in VECTOR_COLUMNS else None
            if shape:
                out[index.columns[0]] = shape
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
        owed = NOTES in self.erase_owed()  # a `zk rm` could not erase a deleted note's text (a full disk)
        if force or unindexed or owed or fragments >= FRAGMENTS_BEFORE_COMPACTION:
            self.upkeep(NOTES, self.table)  # takes the write lock itself; purges when an erase is owed
            done.append(f"compacted {fragments} fragment(s), indexes brought up to date"
                        + (", deleted text erased" if owed else ""))
        with self.write_lock():  # after compaction: a new index is built over the merged files, not remapped
            rows = self.table.count_rows()
            shapes = self.vector_index_shapes()
            for column in VECTOR_COLUMNS:
                if rows >= vector_min_rows and self._retrain(shapes.get(column), rows):
                    self._build_vector_index(column, rows)
                    done.append(f"vector index on {column} ({rows} rows)")
            self.record(NOTES, self.table)
        return done

    def _retrain(self, shape: tuple[int, int] | None, rows: int) -> bool:
        """Whether an ANN index of (trained rows, partitions) is to be built again over `rows` rows: none yet,
        4x growth, or partitions of the other kind of home (a notebook moved between local and shared)."""
        if shape is None:
            return True
        trained, partitions = shape
        return rows >= VECTOR_INDEX_GROWTH * trained or partitions != vector_partitions(trained, bool(self.remote))

    def _build_vector_index(self, column: str, rows: int) -> None:
        """IVF partitions of ~4,000 rows (on a shared store ~20,000), each an HNSW graph over 8-bit scalar-
        quantised vectors: at 100k rows of LoCoMo text it builds in ~25 s (IVF_PQ: 70 s) and answers in ~6 ms
        against ~130 ms exact. Its name records the rows and partitions: search probes by it."""
        for index in self.table.list_indices():
            if index.columns and index.columns[0] == column:
                self.guarded_write(lambda name=index.name: self.table.drop_index(name))
        partitions = vector_partitions(rows, bool(self.remote))
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # lancedb 0.40 calls these parameters deprecated; they still work
            self.guarded_write(lambda: self.table.create_index(
                metric="cosine", vector_column_name=column, index_type="IVF_HNSW_SQ",
                num_partitions=partitions, name=f"{column}_ann_p{partitions}_{rows}"))

    def compact(self) -> None:
        """After a delete: rewrite the files that hold deleted rows and drop old table versions (deleted text
        must not survive on disk); indexes are remapped, not rebuilt."""
        self.upkeep(NOTES, self.table, purge=True)
