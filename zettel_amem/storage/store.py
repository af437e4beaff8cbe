"""The notes table: one embedded LanceDB table (links and version history are columns), behind methods
that take arguments. Filters are built in storage (these modules, `database` and the other tables) only.

Why columns and not separate tables: one evolution touches the new note and up to a few
neighbours, and must be all-or-nothing. A single `merge_insert` on one table is one atomic
LanceDB commit, so links, rewritten fields, fresh vectors and their version records land together
or not at all.

Every listing method takes the notebook it reads (None: every notebook, only for the worker's queue,
`zk status` and exports).

The work is split by job, one class a module, and `Store` is all of them: `NoteRows` (store_rows.py,
reads and writes of notes), `Ranked` (store_ranked.py, ranked lists), `Links` (store_links.py,
backlinks) and `Upkeep` (store_upkeep.py, indexes, compaction, migration); opening is here.
"""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Any

from ..core.errors import StoreDamaged, ZkError
from .database import (
    EMBEDDER_KEY,
    SCHEMA_VERSION,
    lance_message,
    manifest_versions,
)
from .store_links import Links
from .store_ranked import ANN_PROBE_ALL_UP_TO, Ranked, ann_probes
from .store_rows import NOTES, TEXT_COLUMNS, arrow_schema, note_to_row, row_to_note
from .store_upkeep import FRAGMENTS_BEFORE_COMPACTION, Upkeep
from .versions import TableVersion, describe, readable_view, table_versions

# What other modules import from here (each job's module has the rest).
__all__ = ["ANN_PROBE_ALL_UP_TO", "FRAGMENTS_BEFORE_COMPACTION", "NOTES", "TEXT_COLUMNS", "Store", "ann_probes",
           "note_to_row", "open_damage", "row_to_note"]


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


class Store(Ranked, Links, Upkeep):
    """The notes table of one home (the database's meta file, lock and guards come from `Database`; each
    job's methods from its class)."""

    def __init__(self, home: Path, embedder_name: str, dim: int, location=None):
        super().__init__(home, embedder_name, dim, location)
        self._vector_indexes: tuple[int, dict[str, tuple[int, int]]] | None = None  # (table version, what it has)
        self._has_enriched: tuple[tuple[int, str | None], bool] | None = None
        self._has_passages: tuple[tuple[int, str | None], bool] | None = None
        self._sole_notebook: dict[tuple[int, str], bool] = {}
        self._passage_rows: tuple[int | None, dict[str, dict]] = (None, {})  # (version, id -> row), passage_rows
        self._speakers: tuple[tuple, dict[str, set[str]]] | None = None  # (version, notebook, candidates), found
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
            if not meta:
                # meta.json was read before the lock; another zk may have created this store since (it
                # writes meta.json under the lock, before any note): read it again before judging.
                meta = self.read_meta(self.home)
                self.check_meta(meta)
            self.damage = open_damage(self, meta, tables)
            if meta and meta.get("schema_version", 0) < SCHEMA_VERSION:
                self._migrate(meta.get("schema_version", 0))
        except ZkError:
            raise
        except Exception as exc:  # noqa: BLE001 - any LanceDB/IO failure means the store is unusable
            raise StoreDamaged(f"cannot open the store at {self.db_path}: {lance_message(exc)}") from None

    def _create_table(self, meta: dict[str, Any]) -> None:
        """Create the notes table of a new store under the lock (only a new store takes the lock to open:
        reads of an existing one work read-only)."""
        with self.write_lock(check=False):
            folder = self.table_dir(NOTES)
            if folder.is_dir() and not manifest_versions(folder):
                shutil.rmtree(folder)  # a creation killed before its first commit: it holds no rows
            if NOTES not in self.db.list_tables().tables:
                self.db.create_table(NOTES, schema=arrow_schema(self.dim).with_metadata(
                    {EMBEDDER_KEY: self.embedder_name}))
                self.table = self.db.open_table(NOTES)
                self._ensure_indexes()
            if not meta:
                self._write_meta()
