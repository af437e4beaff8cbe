"""Storage of the upper tiers: `episodes`, `entities` and `relations` tables beside `notes`.

Same database, same write lock and the same atomic `merge_insert` as the notes table (store.py); a
store without these tables (older, or one that never closed a session) gets them on first write.
Every row carries its notebook; the listing methods take one, so a private notebook's episodes and
facts never reach another notebook's context (only the worker's queue reads across notebooks).

Rows are usually read without their vector (smaller reads); writing such a row back keeps the
stored vector, so a rewrite never silently drops an embedding. `keep_vectors=False` really clears it.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Any

from ..core.models import Entity, Episode, Relation
from .database import Database, all_of, in_list, sql_str

EPISODES, ENTITIES, RELATIONS = "episodes", "entities", "relations"


def _schema(table: str, dim: int):
    import pyarrow as pa

    s, ls = pa.string(), pa.list_(pa.string())
    fields = {
        EPISODES: [("id", s), ("session_id", s), ("notebook", s), ("title", s), ("start", s), ("end", s),
                   ("turns", pa.int64()), ("summary", s), ("abstract", s), ("status", s), ("created", s),
                   ("error", s), ("vector", pa.list_(pa.float32(), dim))],
        ENTITIES: [("id", s), ("name", s), ("type", s), ("notebook", s), ("key", s), ("merged_into", s),
                   ("merge_reason", s), ("created", s), ("episodes", ls), ("vector", pa.list_(pa.float32(), dim))],
        RELATIONS: [("id", s), ("subject", s), ("predicate", s), ("object", s), ("notebook", s),
                    ("episode_id", s), ("valid_from", s), ("invalid_from", s), ("invalidated_by", s),
                    ("created", s)],
    }[table]
    return pa.schema([pa.field(name, kind) for name, kind in fields])


_TYPES = {EPISODES: Episode, ENTITIES: Entity, RELATIONS: Relation}


def _to_row(record) -> dict[str, Any]:
    row = dict(record.__dict__)
    if "vector" in row and row["vector"] is not None:
        row["vector"] = [float(x) for x in row["vector"]]
    return row


def _from_row(table: str, row: dict[str, Any]):
    kind = _TYPES[table]
    names = kind.__dataclass_fields__
    values = {k: v for k, v in row.items() if k in names}
    if "episodes" in values:
        values["episodes"] = list(values["episodes"] or [])
    if values.get("vector") is not None:
        values["vector"] = list(values["vector"])
    for key, value in list(values.items()):
        if value is None and key not in ("merged_into", "invalid_from", "invalidated_by", "vector"):
            values.pop(key)  # fall back to the dataclass default
    return kind(**values)


class TierStore:
    """Episodes and the entity graph of one Store (shares its database, lock and error handling)."""

    def __init__(self, store: Database | Callable[[], Database]):
        # A callable opens the database on first use: `Tiers(memory)` costs nothing until a tier is read.
        self._source = store
        self._tables: dict[str, Any] = {}

    @property
    def store(self) -> Database:
        if callable(self._source):
            self._source = self._source()
        return self._source

    def _table(self, name: str, create: bool = False):
        if name not in self._tables:
            db = self.store.db
            try:
                if name not in db.list_tables().tables:
                    raise LookupError(name)
                table = db.open_table(name)
            except (LookupError, ValueError):  # absent, or another process is creating it right now
                if not create:
                    return None  # nothing stored in it yet, as far as this read is concerned
                with self.store.write_lock():  # creation happens under the lock: after it, it is complete
                    if self.store.remote:  # other machines may create it at this moment (shared_store.py)
                        from .shared_store import create_once

                        table = create_once(self.store, name, _schema(name, self.store.dim))
                    else:
                        if name not in db.list_tables().tables:
                            self.store.record(name, db.create_table(name, schema=_schema(name, self.store.dim)))
                        table = db.open_table(name)
            self._tables[name] = table
        return self._tables[name]

    # -- generic rows -----------------------------------------------------------------------------
    def _rows(self, name: str, where: str | None = None, with_vector: bool = False) -> list:
        table = self._table(name)
        if table is None:
            return []

        def read():
            query = table.search()
            if where:
                query = query.where(where)
            if not with_vector and "vector" in table.schema.names:
                query = query.select([n for n in table.schema.names if n != "vector"])
            return query.limit(max(table.count_rows(), 1)).to_list()

        return [_from_row(name, r) for r in self.store.guarded_read(read)]

    def _upsert(self, name: str, records: Iterable, keep_vectors: bool = True) -> None:
        rows = [_to_row(r) for r in records]
        if not rows:
            return
        table = self._table(name, create=True)
        with self.store.write_lock():
            missing = [r["id"] for r in rows if "vector" in r and r["vector"] is None]
            if keep_vectors and missing:
                where = f"{in_list('id', missing)} AND vector IS NOT NULL"
                stored = self.store.guarded_read(lambda: table.search().where(where).select(["id", "vector"])
                                          .limit(len(missing)).to_list())
                vectors = {r["id"]: [float(x) for x in r["vector"]] for r in stored}
                for row in rows:
                    if row.get("vector") is None and row["id"] in vectors:
                        row["vector"] = vectors[row["id"]]
            self.store.guarded_write(lambda: table.merge_insert("id").when_matched_update_all()
                              .when_not_matched_insert_all().execute(rows))
            self.store.record(name, table)

    def _delete(self, name: str, where: str) -> None:
        table = self._table(name)
        if table is not None:
            with self.store.write_lock():
                self.store.guarded_write(lambda: table.delete(where))
                self.store.record(name, table)

    def _nearest(self, name: str, vector, k: int, where: str | None) -> list[tuple[Any, float]]:
        table = self._table(name)
        if table is None or table.count_rows() == 0:
            return []
        columns = [n for n in table.schema.names if n != "vector"] + ["_distance"]
        query = table.search(list(vector)).distance_type("cosine").select(columns)
        if where:
            query = query.where(where, prefilter=True)
        rows = self.store.guarded_read(lambda: query.limit(k).to_list())
        return [(_from_row(name, r), 1.0 - float(r["_distance"])) for r in rows]

    # -- episodes ---------------------------------------------------------------------------------
    def episodes(self, notebook: str | None, status: Iterable[str] = (), not_status: str | None = None,
                 with_vector: bool = False, summarised: bool = False) -> list[Episode]:
        """Episodes of a notebook (None: every notebook, for the worker's queue), optionally only those in
        one of `status`, or not in `not_status`; `summarised`: only those with an abstract."""
        status = list(status)
        return self._rows(EPISODES, all_of(notebook, status and in_list("status", status),
                                           not_status and f"status != {sql_str(not_status)}",
                                           "abstract != ''" if summarised else None), with_vector)

    def episode(self, episode_id: str, with_vector: bool = False) -> Episode | None:
        found = self._rows(EPISODES, f"id = {sql_str(episode_id)}", with_vector)
        return found[0] if found else None

    def put_episodes(self, episodes: Iterable[Episode], keep_vectors: bool = True) -> None:
        self._upsert(EPISODES, episodes, keep_vectors)

    def nearest_episodes(self, vector, k: int, notebook: str) -> list[tuple[Episode, float]]:
        return self._nearest(EPISODES, vector, k, all_of(notebook, "vector IS NOT NULL"))

    # -- entities ---------------------------------------------------------------------------------
    def entities(self, notebook: str, key: str | None = None, canonical_only: bool = False,
                 with_vector: bool = False) -> list[Entity]:
        """A notebook's entities; `key`: only those with that name key; `canonical_only`: not merged away."""
        return self._rows(ENTITIES, all_of(notebook, key is not None and f"key = {sql_str(key)}",
                                                "merged_into IS NULL" if canonical_only else None), with_vector)

    def put_entities(self, entities: Iterable[Entity]) -> None:
        self._upsert(ENTITIES, entities)

    def delete_entities(self, ids: list[str]) -> None:
        if ids:
            self._delete(ENTITIES, in_list("id", ids))

    def nearest_entities(self, vector, k: int, notebook: str) -> list[tuple[Entity, float]]:
        return self._nearest(ENTITIES, vector, k, all_of(notebook))

    # -- relations --------------------------------------------------------------------------------
    def relations(self, notebook: str, current_only: bool = False) -> list[Relation]:
        """A notebook's relations; `current_only`: those not invalidated."""
        return self._rows(RELATIONS, all_of(notebook, "invalid_from IS NULL" if current_only else None))

    def relations_of_episode(self, episode_id: str) -> list[Relation]:
        return self._rows(RELATIONS, f"episode_id = {sql_str(episode_id)}")

    def relations_invalidated_by(self, relation_ids: list[str]) -> list[Relation]:
        return self._rows(RELATIONS, in_list("invalidated_by", relation_ids)) if relation_ids else []

    def put_relations(self, relations: Iterable[Relation]) -> None:
        self._upsert(RELATIONS, relations)

    def delete_relations(self, ids: list[str]) -> None:
        if ids:
            self._delete(RELATIONS, in_list("id", ids))

    def put_rows(self, name: str, rows: list[dict[str, Any]]) -> None:
        """Rows as a repair read them back from a damaged table, written as they were (vectors included)."""
        self._upsert(name, [_from_row(name, row) for row in rows])

    def owe_erase(self) -> None:
        """Before deletes and cleared summaries: the tier tables' files owe an erase until `compact` has run
        (`Database.owe_erase`; a purge that fails on a full disk leaves the debt for `zk doctor`)."""
        with self.store.write_lock():
            self.store.owe_erase([EPISODES, ENTITIES, RELATIONS])

    def compact(self) -> None:
        """After deletes: no deleted summary or name survives on disk (see `Database.upkeep`)."""
        for name in (EPISODES, ENTITIES, RELATIONS):
            table = self._table(name)
            if table is not None:
                self.store.upkeep(name, table, purge=True)
            else:
                self.store.settle_erase(name)  # no table, no deleted text
