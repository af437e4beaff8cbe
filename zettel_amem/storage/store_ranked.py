"""Ranked retrieval: BM25 and vector top-k lists, and a person scope's notes (search fuses them).
"""

from __future__ import annotations

from typing import Any

from ..core.models import PENDING, Note, Scope
from ..core.passages import FORMER_CUT_CHARS, cut_short, passages_from_json
from .database import (
    in_list,
    sql_str,
)
from .store_rows import TEXT_COLUMNS, NoteRows, row_to_note

# HNSW's default beam misses a third of the true top 10 for question-like queries (recall 0.57 at 100k).
# Measured at 100k (bench.scale): half the 25 partitions with a beam of 400 found 0.90 of the exact top 10
# (0.88 of the top 100); every partition with a beam of 100 and a 3x re-rank, 0.99 (0.98), and no slower.
# At 1M (250 partitions) a quarter of them: 0.97 of the top 10, warm search p95 145 ms (half: 0.98, 190 ms).
ANN_EF, ANN_REFINE, ANN_REFINE_UP_TO = 100, 3, 20
ANN_PROBE_ALL_UP_TO = 32  # partitions; past this, a quarter of them (at least 32)
PASSAGE_ROWS_KEPT = 2000  # rows `passage_rows` remembers (~10 KB each with their vectors)


# A shared store builds fewer, larger partitions (store_upkeep.SHARED_ROWS_PER_PARTITION), and a larger HNSW
# graph needs a wider beam: at 40k random vectors (bench.remote_vectors) 2 partitions of 20k with a beam of
# 100 found 0.45 of the exact top 10, with 1,000 (one per 2,000 rows) 0.98 (10 of 4k with 100: 0.93).
SHARED_EF_PER_ROWS, SHARED_EF_MAX = 2_000, 4_000  # the cap bounds the CPU of a partition grown 4x since training


def ann_ef(k: int, rows: int, partitions: int, remote: bool) -> int:
    """HNSW's beam inside each probed partition: max(ANN_EF, k) on a local home (bench.scale); on a shared
    store that beam per SHARED_EF_PER_ROWS rows per partition, counting the rows written since training
    (later segments of the same partitions hold them: a bound on one graph's size)."""
    beam = max(ANN_EF, k)
    if not remote:
        return beam
    return max(beam, min(SHARED_EF_MAX, beam * rows // (max(1, partitions) * SHARED_EF_PER_ROWS)))


def ann_probes(partitions: int) -> int:
    """How many IVF partitions a vector search visits."""
    partitions = max(1, partitions)
    return partitions if partitions <= ANN_PROBE_ALL_UP_TO else max(ANN_PROBE_ALL_UP_TO, partitions // 4)


# Columns a ranking reads (search fuses several ranked lists of 100): what fusion, session smoothing and
# filtering look at, and the links (read with the hits in full). Each column costs every list a read per
# row: these 7 instead of 12 take 1.5-2 ms off each list at 100k notes. Notes read this way are for
# ranking only and never written back; search re-reads the few it returns in full.
RANK_COLUMNS = ["id", "content", "at", "kind", "session_id", "seq", "links"]


def rank_columns(tagged: bool = False) -> list[str]:
    """RANK_COLUMNS, and the user's #tags when a tag filter looks at them."""
    return [*RANK_COLUMNS, "user_tags"] if tagged else RANK_COLUMNS


def scope_filter(scope: Scope) -> str:
    """The notes of a person scope: the sessions the people speak in, and the notes naming them."""
    parts = [in_list("session_id", scope.sessions)] if scope.sessions else []
    parts += [in_list("id", scope.mentions)] if scope.mentions else []
    return " OR ".join(f"({p})" for p in parts) or "false"


class Ranked(NoteRows):
    """Ranked lists over the notes table (each best first) and what ranking reads."""

    def has_enriched(self, notebook: str | None = None) -> bool:
        """Whether any note of the notebook has what the LLM adds (a context); remembered per table version,
        so a store the LLM never touched does not pay for the enrichment signals on every search."""
        key = (self.version_of(self.table), notebook)
        if self._has_enriched is None or self._has_enriched[0] != key:
            self._has_enriched = (key, self.guarded_read(lambda: self.table.count_rows(self._where(notebook,
                                                                                              "context != ''"))) > 0)
        return self._has_enriched[1]

    def has_passages(self, notebook: str | None = None) -> bool:
        """Whether any entry of the notebook was cut into passages (a long one); remembered per table
        version, so a notebook of short notes and chats ranks as it always did, at no cost."""
        key = (self.version_of(self.table), notebook)
        if self._has_passages is None or self._has_passages[0] != key:
            where = self._where(notebook, "passages IS NOT NULL AND passages != '[]'")
            # the first such row, not a count: a count reads every entry's passages (0.31 s at 100k entries,
            # most of a search's time there; this 0.02 s)
            found = self.guarded_read(lambda: self.table.search().where(where).select(["id"]).limit(1).to_list())
            self._has_passages = (key, bool(found))
        return self._has_passages[1]

    def prepare_search(self, notebook: str, candidates: list[str]) -> None:
        """On a shared store, what a search asks before ranking, in one scan: whether `notebook` is the
        table's only one (`_notebook_filter`), whether it has enriched notes (`has_enriched`) or long entries
        cut into passages (`has_passages`) and which of
        `candidates` speak in its chats (`speakers`), each remembered for this table version. Asked one by
        one they are three reads, and every read opens every data file the indexes do not cover: Lance
        fetches a file smaller than a block whole on each open, so each note added since the worker's
        upkeep costs a GET per read. Locally nothing is done here: the three reads are faster there (two
        counts build no rows; this returns one per enriched note)."""
        if not self.remote or not notebook:
            return
        import pyarrow.compute as pc

        key = (self.version_of(self.table), notebook)
        other = f"notebook != {sql_str(notebook)}"
        said = f"{in_list('speaker', candidates)} AND session_id IS NOT NULL" if candidates else "false"
        cut = "passages IS NOT NULL AND passages != '[]'"
        columns = {"other": other, "enriched": "context != ''", "said": said, "cut": cut, "speaker": "speaker",
                   "session_id": "session_id"}

        def run():
            query = self.table.search().where(f"({other}) OR (context != '') OR ({said}) OR ({cut})").select(columns)
            return query.limit(max(self.table.count_rows(), 1)).to_arrow()

        rows = self.guarded_read(run)  # one row per enriched note: counted here, not made into dicts
        sole = not pc.any(pc.fill_null(rows["other"], False)).as_py()
        mine = rows if sole else rows.filter(pc.equal(rows["other"], False))  # as `_where(notebook)` filters
        self._sole_notebook = {key: sole}
        self._has_enriched = (key, bool(pc.any(pc.fill_null(mine["enriched"], False)).as_py()))
        self._has_passages = (key, bool(pc.any(pc.fill_null(mine["cut"], False)).as_py()))
        found: dict[str, set[str]] = {}
        for row in mine.filter(pc.fill_null(mine["said"], False)).select(["speaker", "session_id"]).to_pylist():
            found.setdefault(row["speaker"], set()).add(row["session_id"])
        self._speakers = ((*key, tuple(candidates)), found)

    # -- passages (passage_rank.py) ------------------------------------------------------------------
    def without_passages(self, limit: int) -> list[Note]:
        """Up to `limit` entries (not chat turns) whose passages were never made (a store from before
        passages), with their vectors, to be cut and written back."""
        return self._notes("passages IS NULL AND (kind IS NULL OR kind != 'turn')", with_vector=True, limit=limit)

    def cut_short(self, limit: int) -> list[Note]:
        """Up to `limit` entries whose passages stop before their text ends (an older zk cut only an entry's
        first FORMER_CUT_CHARS characters), with their vectors, to be cut again (`fill_passages`)."""
        where = (f"character_length(content) > {FORMER_CUT_CHARS} AND passages IS NOT NULL AND passages != '[]' "
                 "AND (kind IS NULL OR kind != 'turn')")
        rows = self._query(where, ["id", "content", "passages"])
        short = [r["id"] for r in rows if cut_short(r["content"], passages_from_json(r["passages"]))]
        return list(self.get_many(short[:limit], with_vector=True).values())

    def passage_rows(self, ids: list[str]) -> dict[str, dict[str, Any]]:
        """id -> the columns that rank a note by its passages: passages, their vectors, the raw vector."""
        if not ids:
            return {}
        version = self.version_of(self.table)
        # read once per table version: `zk ask` ranks the same notes twice (kept small: `zk mcp` lives long)
        if self._passage_rows[0] != version or len(self._passage_rows[1]) > PASSAGE_ROWS_KEPT:
            self._passage_rows = (version, {})
        known = self._passage_rows[1]
        missing = [i for i in dict.fromkeys(ids) if i not in known]
        if missing:
            rows = self._query(in_list("id", missing), ["id", "passages", "passage_vectors", "raw_vector"],
                               limit=len(missing))
            known.update({r["id"]: r for r in rows})
        return {i: known[i] for i in ids if i in known}

    # -- people -----------------------------------------------------------------------------------
    def speakers(self, candidates: list[str], notebook: str | None = None) -> dict[str, set[str]]:
        """Which of `candidates` speak in chat sessions, each with the sessions they speak in: two columns
        of their turns, found through the speaker index (or by `prepare_search`)."""
        if not candidates:
            return {}
        key = (self.version_of(self.table), notebook, tuple(candidates))
        if self._speakers is not None and self._speakers[0] == key:
            return {name: set(sessions) for name, sessions in self._speakers[1].items()}
        rows = self._query(self._where(notebook, in_list("speaker", candidates), "session_id IS NOT NULL"),
                           ["speaker", "session_id"])
        out: dict[str, set[str]] = {}
        for row in rows:
            out.setdefault(row["speaker"], set()).add(row["session_id"])
        self._speakers = (key, {name: set(sessions) for name, sessions in out.items()})  # `zk ask` asks twice
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
        rows_now = self.count()
        if rows_now == 0:
            return []
        where = self._where(notebook, exclude and f"id != {sql_str(exclude)}",
                            f"status != {sql_str(PENDING)}" if processed else None,
                            "array_length(user_tags) > 0" if tagged else None, "context != ''" if enriched else None,
                       within and scope_filter(within))
        columns = rank_columns(tagged) if light else TEXT_COLUMNS
        query = self.table.search(list(vector), vector_column_name=column).distance_type("cosine") \
            .select([*columns, "_distance"])
        if where:
            query = query.where(where, prefilter=True)
        trained, partitions = self.vector_index_shapes().get(column, (0, 0))
        if trained:  # many partitions, a narrow HNSW beam: cheaper than few and wide at the same recall
            beam = ann_ef(k, rows_now, partitions, bool(self.remote))
            query = query.nprobes(ann_probes(partitions)).ef(beam)
            if k <= ANN_REFINE_UP_TO:  # a short list is re-ranked on the full vectors; a long one needs not
                query = query.ef(max(beam, ANN_REFINE * k)).refine_factor(ANN_REFINE)
        fresh = self.guarded_read(lambda: self._unindexed(column)) if trained and self.remote else None
        if fresh:
            rows = self._index_and_fresh(query, fresh, (vector, k, column, columns), where)
        else:
            rows = self.guarded_read(lambda: query.limit(k).to_list())
        return [(row_to_note(r), 1.0 - float(r["_distance"])) for r in rows]

    def _unindexed(self, column: str):
        """(dataset, its fragments the ANN index of `column` does not cover yet: rows written since the
        worker's last upkeep), or None when it covers them all."""
        dataset = self.table.to_lance()
        covered: set[int] = set()
        for index in dataset.describe_indices():
            if list(index.field_names) == [column]:
                for segment in index.segments:
                    covered.update(segment.fragment_ids)
        fresh = [f for f in dataset.get_fragments() if f.fragment_id not in covered]
        return (dataset, fresh) if fresh else None

    def _index_and_fresh(self, query, fresh, search: tuple, where: str | None) -> list[dict]:
        """A shared store's top-k while some rows are not indexed yet: the index alone (`fast_search`), and
        an exact search of the unindexed fragments, merged by distance. Lance would otherwise re-read the
        full vector of every index hit, one ranged GET each, to compare it with the exact ones: ~100 GETs
        and 6 s for a list of 100 at 40k notes on the loopback server, against ~60 and 0.6 s this way."""
        import numpy as np

        (dataset, fragments), (vector, k, column, columns) = fresh, search

        def run() -> list[dict]:
            indexed = query.fast_search().limit(k).to_list()
            table = dataset.scanner(columns=[*columns, column], filter=where, fragments=fragments).to_table()
            if not table.num_rows:
                return indexed
            vectors = np.asarray(table[column].to_pylist(), dtype=np.float32)  # a few rows: an exact cosine here
            query_vector = np.asarray(vector, dtype=np.float32)
            norms = np.linalg.norm(vectors, axis=1) * np.linalg.norm(query_vector)
            distances = 1.0 - (vectors @ query_vector) / np.where(norms > 0, norms, 1.0)
            exact = [{**row, "_distance": float(d)} for row, d in zip(table.drop_columns([column]).to_pylist(),
                                                                      distances, strict=True)]
            return sorted(indexed + exact, key=lambda r: r["_distance"])[:k]

        return self.guarded_read(run)
