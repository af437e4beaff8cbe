"""Storage of the upper tiers: `episodes`, `entities` and `relations` tables beside `notes`.

Same database, same write lock and the same atomic `merge_insert` as the notes table (store.py); a
store without these tables (older, or one that never closed a session) gets them on first write.
Every row carries its notebook; the listing methods take one, so a private notebook's episodes and
facts never reach another notebook's context (only the worker's queue reads across notebooks).

Rows are usually read without their vector (smaller reads); writing such a row back keeps the
stored vector, so a rewrite never silently drops an embedding. `keep_vectors=False` really clears it.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from .note import Entity, Episode, Relation
from .store import Store, sql_str

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

    def __init__(self, store: Store):
        self.store = store
        self._tables: dict[str, Any] = {}

    def _table(self, name: str, create: bool = False):
        if name not in self._tables:
            db = self.store.db
            if name not in db.list_tables().tables:
                if not create:
                    return None
                with self.store.write_lock():
                    if name not in db.list_tables().tables:
                        self.store.record(name, db.create_table(name, schema=_schema(name, self.store.dim)))
            self._tables[name] = db.open_table(name)
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

        return [_from_row(name, r) for r in self.store._read(read)]

    def _upsert(self, name: str, records: Iterable, keep_vectors: bool = True) -> None:
        rows = [_to_row(r) for r in records]
        if not rows:
            return
        table = self._table(name, create=True)
        with self.store.write_lock():
            missing = [r["id"] for r in rows if "vector" in r and r["vector"] is None]
            if keep_vectors and missing:
                where = "id IN (" + ", ".join(sql_str(i) for i in missing) + ") AND vector IS NOT NULL"
                stored = self.store._read(lambda: table.search().where(where).select(["id", "vector"])
                                          .limit(len(missing)).to_list())
                vectors = {r["id"]: [float(x) for x in r["vector"]] for r in stored}
                for row in rows:
                    if row.get("vector") is None and row["id"] in vectors:
                        row["vector"] = vectors[row["id"]]
            self.store._write(lambda: table.merge_insert("id").when_matched_update_all()
                              .when_not_matched_insert_all().execute(rows))
            self.store.record(name, table)

    def _delete(self, name: str, where: str) -> None:
        table = self._table(name)
        if table is not None:
            with self.store.write_lock():
                self.store._write(lambda: table.delete(where))
                self.store.record(name, table)

    def _nearest(self, name: str, vector, k: int, where: str) -> list[tuple[Any, float]]:
        table = self._table(name)
        if table is None or table.count_rows() == 0:
            return []
        columns = [n for n in table.schema.names if n != "vector"] + ["_distance"]
        query = table.search(list(vector)).distance_type("cosine").select(columns).where(where, prefilter=True)
        rows = self.store._read(lambda: query.limit(k).to_list())
        return [(_from_row(name, r), 1.0 - float(r["_distance"])) for r in rows]

    @staticmethod
    def _scope(notebook: str, extra: str | None = None) -> str:
        where = f"notebook = {sql_str(notebook)}"
        return f"{where} AND ({extra})" if extra else where

    # -- episodes ---------------------------------------------------------------------------------
    def episodes(self, notebook: str, where: str | None = None, with_vector: bool = False) -> list[Episode]:
        return self._rows(EPISODES, self._scope(notebook, where), with_vector)

    def episode(self, episode_id: str, with_vector: bool = False) -> Episode | None:
        found = self._rows(EPISODES, f"id = {sql_str(episode_id)}", with_vector)
        return found[0] if found else None

    def put_episodes(self, episodes: Iterable[Episode], keep_vectors: bool = True) -> None:
        self._upsert(EPISODES, episodes, keep_vectors)

    def nearest_episodes(self, vector, k: int, notebook: str) -> list[tuple[Episode, float]]:
        return self._nearest(EPISODES, vector, k, self._scope(notebook, "vector IS NOT NULL"))

    # -- entities ---------------------------------------------------------------------------------
    def entities(self, notebook: str, where: str | None = None, with_vector: bool = False) -> list[Entity]:
        return self._rows(ENTITIES, self._scope(notebook, where), with_vector)

    def put_entities(self, entities: Iterable[Entity]) -> None:
        self._upsert(ENTITIES, entities)

    def delete_entities(self, ids: list[str]) -> None:
        if ids:
            self._delete(ENTITIES, "id IN (" + ", ".join(sql_str(i) for i in ids) + ")")

    def nearest_entities(self, vector, k: int, notebook: str) -> list[tuple[Entity, float]]:
        return self._nearest(ENTITIES, vector, k, self._scope(notebook))

    # -- relations --------------------------------------------------------------------------------
    def relations(self, notebook: str, where: str | None = None) -> list[Relation]:
        return self._rows(RELATIONS, self._scope(notebook, where))

    def put_relations(self, relations: Iterable[Relation]) -> None:
        self._upsert(RELATIONS, relations)

    def delete_relations(self, ids: list[str]) -> None:
        if ids:
            self._delete(RELATIONS, "id IN (" + ", ".join(sql_str(i) for i in ids) + ")")

    def compact(self) -> None:
        import warnings
        from datetime import timedelta

        for name in (EPISODES, ENTITIES, RELATIONS):
            table = self._table(name)
            if table is not None:
                with self.store.write_lock(), warnings.catch_warnings():
                    warnings.simplefilter("ignore", UserWarning)
                    self.store._write(lambda t=table: t.optimize(cleanup_older_than=timedelta(0),
                                                                 delete_unverified=True))
                    self.store.record(name, table)
