"""The notes table's rows: reading and writing notes by id, notebook, time and session. The filters are
built here (and in the other store_* modules) and nowhere else; see store.py.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable
from typing import Any

from ..core.errors import AmbiguousId, InvalidInput, NotFound, ZkError
from ..core.models import READY, SHORT_ID, Note
from ..core.passages import passage_floats, passages_to_json, row_passages
from ..core.text import keyword_terms
from .database import (
    LAG_TRIES,
    REMOTE_STALENESS_S,
    Database,
    all_of,
    in_list,
    sql_str,
)

NOTES = "notes"

_HEX = re.compile(r"^[0-9a-f]{1,32}$")


# Columns read when the vector is not needed (listing, keyword search, rendering).
TEXT_COLUMNS = [
    "id", "content", "at", "created", "keywords", "tags", "context", "links", "status", "version",
    "history", "notebook", "kind", "session_id", "speaker", "seq", "source", "content_hash", "error", "user_tags",
    "passages", "updated_by",
]


def arrow_schema(dim: int):
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
        # A long entry's passages (JSON: text, offset, resolved dates; null: not computed yet) and their
        # embeddings, one after another (passage count x dim floats).
        pa.field("passages", pa.string()),
        pa.field("passage_vectors", pa.list_(pa.float32())),
        pa.field("updated_by", pa.string()),  # JSON: the typed updates links to this note (Note.updated_by)
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
        "passages": None if note.passages is None else passages_to_json(note.passages),
        "passage_vectors": passage_floats(note.passages),
        "updated_by": json.dumps(note.updated_by, ensure_ascii=False) if note.updated_by else None,
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
        passages=_passages_of(row),
        updated_by=json.loads(row["updated_by"]) if row.get("updated_by") else [],
    )


def _passages_of(row: dict[str, Any]):
    """The row's passages, with their embeddings when the row holds them."""
    if "passages" not in row or row["passages"] is None:
        return None
    return row_passages(row)


def _id_prefix(prefix: str) -> str:
    cleaned = prefix.strip().lower()
    if not _HEX.match(cleaned):
        raise InvalidInput(f"'{prefix}' is not a note id (expected hex characters, e.g. 3f9a12bc)")
    return cleaned


def _unique_id(cleaned: str, found: list[str]) -> str:
    """The one id a prefix names among `found` (the ids starting with it), or a clear error."""
    ids = list(dict.fromkeys(found))  # one id stored twice (an old doubled restore) is one note
    if not ids:
        raise NotFound(f"no note with id {cleaned}")
    if len(ids) > 1 and cleaned in ids:
        return cleaned  # a whole id is never ambiguous, even when it is a prefix of another
    if len(ids) > 1:
        from os.path import commonprefix

        width = max(SHORT_ID + 4, len(commonprefix(ids)) + 1)  # long enough to tell the ids apart
        shown = ", ".join(i[:width] for i in ids[:5]) + (", ..." if len(ids) > 5 else "")
        raise AmbiguousId(f"id prefix '{cleaned}' is ambiguous: {shown}")
    return ids[0]


def _ids_like(store: NoteRows, cleaned: str, notebook: str | None, columns: list[str]) -> list[dict[str, Any]]:
    """Up to 6 rows whose id starts with `cleaned`. On a shared store none may mean only that this read used a
    version from before the note's commit (a read may be REMOTE_STALENESS_S old, a listing may lag the write):
    the newest version is read again, LAG_TRIES times in all with backoff (at most 3 s more), before the id
    counts as not there."""
    import time

    for attempt in range(LAG_TRIES if store.remote else 1):
        if attempt:
            time.sleep(REMOTE_STALENESS_S * attempt)
            store.refresh(store.table)
        rows = store._query(store._where(notebook, f"id LIKE {sql_str(cleaned + '%')}"), columns, limit=6)
        if rows:
            return rows
    return []


# -- `NoteRows.newest`'s reads by the `at` column alone (a big notebook's whole rows are never all read) --
def _newest_taken(store: NoteRows, where: str | None, limit: int) -> list[Note] | None:
    """`newest` on a shared store in two reads: the `at` column with row ids, then the whole rows of the
    newest few taken by row id. The general path reads the ordering columns of those rows, then looks
    their ids up in the id index: two more reads, and a scalar-index lookup costs five ranged GETs
    once the index outgrows a single one. None (use the general path) when many notes share the
    cutoff's time, or when a commit between the two reads moved the rows (compaction renumbers them)."""
    import pyarrow.compute as pc

    def scan():
        query = store.table.search().select(["at"]).with_row_id(True).limit(max(store.table.count_rows(), 1))
        return (query.where(where) if where else query).to_arrow()

    stamps = store.guarded_read(scan)
    at = stamps["at"]
    if len(at.drop_null()) > limit:
        cutoff = pc.min(pc.take(at, pc.top_k_unstable(at, k=limit)))
        stamps = stamps.filter(pc.fill_null(pc.greater_equal(at, cutoff), False))
    if len(stamps) > 4 * limit:
        return None
    if not len(stamps):
        return []
    expected = dict(zip(stamps["_rowid"].to_pylist(), stamps["at"].to_pylist(), strict=True))
    rows = store.guarded_read(lambda: store.table.take_row_ids(list(expected)).select(TEXT_COLUMNS)
                              .with_row_id().to_list())
    if len(rows) != len(expected) or any(expected.get(r["_rowid"], "?") != r["at"] for r in rows):
        return None
    rows.sort(key=lambda r: (r["at"] or "", r["created"] or "", r["seq"] or 0), reverse=True)
    return [row_to_note(r) for r in rows[:limit]]


def _newest_at(store: NoteRows, where: str | None, limit: int) -> str | None:
    """The `at` of the `limit`-th newest matching note (None: there are no more than `limit`), from the
    `at` column alone: at 1M notes, reading four ordering columns of every row took ~2 s and 800 MB."""
    import pyarrow.compute as pc

    def run():
        query = store.table.search().select(["at"]).limit(max(store.table.count_rows(), 1))
        return (query.where(where) if where else query).to_arrow()["at"]

    stamps = store.guarded_read(run).drop_null()
    if len(stamps) <= limit:
        return None
    return pc.min(pc.take(stamps, pc.top_k_unstable(stamps, k=limit))).as_py()


# -- `NoteRows.newest`'s cutoff through the `at` index: what it reads is bounded, whatever the table's size --
CUTOFF_ROWS = 200  # the ordering columns of at most this many matching notes are read (or 2 x `limit`)
CUTOFF_PROBES = 40  # index counts tried before the `at` column is read instead (a bisection of seconds)
_FIRST_STEP_S = 86_400  # the search steps back from its upper bound a day first, then four times as far each time
_NEVER, _LAST = "0001-01-01T00:00:00", "9999-12-31T23:59:59"


def _seconds(at: str) -> int:
    """An ISO time as whole seconds since 0001-01-01 (the order of the strings, which is what filters use)."""
    from datetime import datetime

    moment = datetime.fromisoformat(at[:19])
    return (moment.toordinal() - 1) * 86_400 + moment.hour * 3600 + moment.minute * 60 + moment.second


def _iso(seconds: int) -> str:
    from datetime import datetime, timedelta

    return (datetime(1, 1, 1) + timedelta(seconds=seconds)).isoformat()


def _recent_candidate(store: NoteRows, notebook: str | None, since: str | None, until: str | None,
                      limit: int) -> str | None:
    """A first guess at the cutoff: the `limit`-th newest `at` among the last rows written (notes are mostly
    written in the order they happen), read by position: 4 x `limit` rows, whatever the table's size."""
    rows = store.guarded_read(lambda: store.table.search().select(["at", "notebook"])
                              .offset(max(store.table.count_rows() - 4 * limit, 0)).limit(4 * limit).to_list())
    stamps = sorted((r["at"] for r in rows if r["at"] and (notebook is None or r["notebook"] == notebook)
                     and (since is None or r["at"] >= since) and (until is None or r["at"] < until)), reverse=True)
    return stamps[limit - 1] if len(stamps) >= limit else None


def _taken(store: NoteRows, chosen: list[dict[str, Any]]) -> list[Note]:
    """The whole notes of `chosen` (rows read with their row ids), in that order: taken by row id, without a
    lookup in the id index (which took twice as long at 100k notes); looked up by id when a commit since
    the first read moved the rows (a compaction renumbers them)."""
    expected = {r["_rowid"]: r["id"] for r in chosen}
    try:
        rows = store.guarded_read(lambda: store.table.take_row_ids(list(expected)).select(TEXT_COLUMNS)
                                  .with_row_id().to_list()) if expected else []
    except ZkError:
        rows = []
    if len(rows) == len(expected) and all(expected.get(r["_rowid"]) == r["id"] for r in rows):
        by_id = {r["id"]: r for r in rows}
        return [row_to_note(by_id[r["id"]]) for r in chosen]
    found = store.get_many([r["id"] for r in chosen])
    return [found[r["id"]] for r in chosen if r["id"] in found]


def _index_cutoff(store: NoteRows, where: str | None, limit: int, guess: str | None,
                  until: str | None) -> tuple[bool, str | None]:
    """The `at` at or after which between `limit` and CUTOFF_ROWS (or 2 x `limit`) matching notes lie, found by
    counting through the `at` index (a count reads index pages, not rows): the guess (and the second after it:
    many notes may share the guess's), else a search down from tomorrow (or `until`), a day back, then four
    times further each step, bisecting once it has gone past. (True, None): so few notes match that all are
    read; (False, None): not found in CUTOFF_PROBES counts, and the caller reads the `at` column. A second
    shared by more than that many notes is the cutoff itself (all of them are read)."""
    from ..core.models import now_iso

    most = max(CUTOFF_ROWS, 2 * limit)

    def count(seconds: int | None) -> int:
        clause = all_of(None, where, seconds is not None and f"at >= {sql_str(_iso(seconds))}")
        return store.guarded_read(lambda: store.table.count_rows(clause) if clause else store.table.count_rows())

    if count(None) <= most:
        return True, None
    low, high = _seconds(_NEVER), _seconds(_LAST)  # as many notes as match at or after low, none after high
    try:
        probes = [_seconds(guess), _seconds(guess) + 1] if guess else []
    except ValueError:  # a time stored in another form: no guess
        probes = []
    probes.append(_seconds(until) if until else _seconds(now_iso()) + _FIRST_STEP_S)
    step = _FIRST_STEP_S
    for _ in range(CUTOFF_PROBES):
        if high - low <= 1:
            break
        first = bool(probes)
        if first:
            probe = probes.pop(0)
            if not low < probe < high:
                continue
        else:
            probe = high - step if step and high - step > low else (low + high + 1) // 2
        found = count(probe)
        if limit <= found <= most:
            return True, _iso(probe)
        if found < limit:
            high, step = probe, step if first else step * 4
        else:
            low, step = probe, step if first else 0  # the search went past: bisect from here on
    if high - low <= 1 and count(low) >= limit:  # more than `most` notes share one second
        return True, _iso(low)
    return False, None


class NoteRows(Database):
    """Reads and writes of whole notes; the private query helpers every store job shares."""

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

    def delete_for_good(self, ids: Iterable[str], updated: Iterable[Note] = ()) -> None:
        """Delete notes (`zk rm`) and write `updated` (the notes that lost a link to them or the words they
        wrote) in one commit: the store is as it was, or without them. First the home records that the
        table's files owe an erase (`owe_erase`); `compact` then erases the deleted text and settles it."""
        ids = list(ids)
        rows = [note_to_row(n) for n in updated if n.id not in ids]
        if not ids:
            return
        gone = in_list("id", ids)

        def commit() -> None:
            if rows:  # the rows not given and not matched by `gone` stay as they are
                (self.table.merge_insert("id").when_matched_update_all()
                 .when_not_matched_by_source_delete(gone).execute(rows))
            else:
                self.table.delete(gone)

        with self.write_lock():
            try:
                owed_before = self.owe_erase([NOTES])
            except ZkError as exc:
                raise ZkError(f"{exc}; nothing was deleted") from None
            try:
                self.guarded_write(commit)
            except ZkError as exc:
                if not owed_before:  # nothing was deleted: nothing to erase
                    self.settle_erase(NOTES)
                if "No space left" in str(exc) or "os error 28" in str(exc):
                    raise ZkError(f"cannot write to the store at {self.where}: no space left on the disk; "
                                  "nothing was deleted") from None
                raise
            self.record(NOTES, self.table)

    def existing_hashes(self, hashes: list[str]) -> set[str]:
        found: set[str] = set()
        for start in range(0, len(hashes), 500):
            chunk = hashes[start:start + 500]
            found.update(r["content_hash"] for r in self._query(in_list("content_hash", chunk), ["content_hash"],
                                                                 limit=len(chunk) * 4))
        return found

    # -- reads: filters are private to the store classes ----------------------------------------------
    def _query(self, where: str | None, columns: list[str] | None = None, limit: int | None = None,
               row_ids: bool = False) -> list[dict[str, Any]]:
        def run():
            query = self.table.search().with_row_id(True) if row_ids else self.table.search()
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
        if limit and keep is None and self.remote:
            found = _newest_taken(self, where, limit)
            if found is not None:
                return found
        if limit and keep is None:  # the cutoff by the `at` index; without one, by the `at` column of every row
            found, cutoff = False, None
            if not self.remote and "at" in self.indexed_columns():
                guess = _recent_candidate(self, self._notebook_filter(notebook), since, until, limit)
                found, cutoff = _index_cutoff(self, where, limit, guess, until)
            cutoff = cutoff if found else _newest_at(self, where, limit)
            where = all_of(None, where, cutoff is not None and f"at >= {sql_str(cutoff)}")
        columns = ["id", "at", "created", "seq", *(["user_tags"] if keep else [])]
        rows = [r for r in self._query(where, columns, row_ids=True) if keep is None or keep(r["user_tags"] or [])]
        rows.sort(key=lambda r: (r["at"] or "", r["created"] or "", r["seq"] or 0), reverse=True)
        return _taken(self, [r for r in (rows[:limit] if limit else rows) if r["id"]])

    def indexed_columns(self) -> set[str]:
        """The columns a scalar, full-text or vector index covers (read once per table version)."""
        version = self.version_of(self.table)
        known = getattr(self, "_indexed", None)
        if known is None or known[0] != version:
            columns = {c for index in self.guarded_read(self.table.list_indices) for c in index.columns}
            self._indexed = known = (version, columns)
        return known[1]

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
        key = (self.version_of(self.table), notebook)
        if key not in self._sole_notebook:
            others = self.guarded_read(lambda: self.table.count_rows(f"notebook != {sql_str(notebook)}"))
            self._sole_notebook = {key: others == 0}
        return None if self._sole_notebook[key] else notebook

    def count(self, notebook: str | None = None, unfinished: bool = False) -> int:
        """Rows of a notebook (None: all); `unfinished`: only those with LLM work left. Read from the
        table's metadata and one column, never the rows."""
        where = self._where(notebook, f"status != {sql_str(READY)}" if unfinished else None)
        return self.guarded_read(lambda: self.table.count_rows(where) if where else self.table.count_rows())

    def resolve(self, prefix: str, notebook: str | None = None) -> str:
        """Full id for a unique id prefix (among one notebook's notes: another notebook's ids neither
        make a prefix ambiguous nor show up in the error), or a clear error."""
        cleaned = _id_prefix(prefix)
        rows = _ids_like(self, cleaned, notebook, ["id"])
        return _unique_id(cleaned, [r["id"] for r in rows])

    def find(self, prefix: str, notebook: str | None = None) -> Note:
        """The note of a unique id prefix, as `get(resolve(prefix))` in one read: on a shared store each
        read is a scalar-index lookup and a few ranged GETs per column, so two reads cost twice that."""
        cleaned = _id_prefix(prefix)
        rows = _ids_like(self, cleaned, notebook, TEXT_COLUMNS)
        chosen = _unique_id(cleaned, [r["id"] for r in rows])
        return row_to_note(next(r for r in rows if r["id"] == chosen))

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
