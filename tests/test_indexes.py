"""The store's indexes and upkeep (#15): full-text, scalar and ANN indexes, compaction by the idle worker,
and listings that read only what they show. Speed itself is measured by `python -m bench.scale`."""

from __future__ import annotations

import numpy as np
import pytest

from zettel_amem.runtime.worker import drain
from zettel_amem.storage.store import FRAGMENTS_BEFORE_COMPACTION
from zettel_amem.views import Views


def fragments(memory) -> int:
    return memory.store.table.stats()["fragment_stats"]["num_fragments"]


def test_a_new_store_has_its_keyword_and_lookup_indexes(memory):
    memory.add("first note", "2026-03-01")
    indexed = {column for index in memory.store.table.list_indices() for column in index.columns}
    assert {"terms", "enrichment_terms", "id", "session_id", "content_hash", "links"} <= indexed
    assert memory.store.vector_indexes() == {}  # a small table is searched exactly


def test_the_ann_index_finds_what_exact_search_finds_and_sees_newer_notes(memory):
    rng = np.random.default_rng(7)
    texts = [f"note {i}: {' '.join(rng.choice(['knee', 'run', 'coffee', 'meeting', 'book', 'rain'], 3))}"
             for i in range(60)]
    for i, text in enumerate(texts):
        memory.add(text, f"2026-03-{1 + i % 28:02d}")
    query = memory.embedder.embed_query("knee run")
    exact = [n.id for n, _ in memory.store.nearest(query, 10, "main", column="raw_vector")]
    done = memory.store.maintain(vector_min_rows=50)
    assert any(step.startswith("vector index on raw_vector") for step in done)
    assert any(step.startswith("vector index on vector") for step in done)
    assert set(memory.store.vector_indexes()) == {"raw_vector", "vector"}
    indexed = [n.id for n, _ in memory.store.nearest(query, 10, "main", column="raw_vector")]
    assert len(set(indexed) & set(exact)) >= 9  # recall >= 0.9 at 10 on a tiny table (0.95 measured at 100k)
    late = memory.add("knee run knee run, after the index was built", "2026-04-01")
    assert late.id in [n.id for n, _ in memory.store.nearest(memory.embedder.embed_query(late.content), 3, "main",
                                                              column="raw_vector")]
    assert not any("vector index" in step for step in memory.store.maintain(vector_min_rows=50))  # no retraining


def test_upkeep_adds_new_rows_to_a_vector_index_as_segments_and_merges_them_never_into_the_trained_one(memory):
    """LanceDB's own optimize rebuilds a whole vector index to fold in a few rows (116 s at 100k notes);
    the upkeep appends them as a segment, and merges the segments once there are MAX_VECTOR_DELTAS."""
    from zettel_amem.storage.database import MAX_VECTOR_DELTAS

    for i in range(55):
        memory.add(f"base note {i} about rain and coffee", f"2026-03-{1 + i % 28:02d}")
    memory.store.maintain(vector_min_rows=50)

    def segments() -> dict[str, int]:
        return {i.columns[0]: i.num_segments for i in memory.store.table.list_indices()
                if i.columns[0] in ("raw_vector", "vector")}

    assert segments() == {"raw_vector": 1, "vector": 1}
    seen = []
    for round_ in range(MAX_VECTOR_DELTAS + 1):
        late = memory.add(f"knee clinic visit number {round_}", "2026-04-01")
        memory.store.maintain(vector_min_rows=50)
        seen.append(segments()["raw_vector"])
        assert all(not i.num_unindexed_rows for i in memory.store.table.list_indices())
        found = memory.store.nearest(memory.embedder.embed_query(late.content), 1, "main", column="raw_vector")
        assert [n.id for n, _ in found] == [late.id]
    assert seen == [2, 3, 4, 5, 2]  # one segment per upkeep, then the four extra ones merged into one
    assert memory.store.vector_indexes() == {"raw_vector": 55, "vector": 55}  # the trained index is kept


def test_the_idle_worker_compacts_the_fragments_single_adds_leave(memory):
    for i in range(FRAGMENTS_BEFORE_COMPACTION + 2):
        memory.add(f"one quick add number {i}", "2026-03-01")
    assert fragments(memory) >= FRAGMENTS_BEFORE_COMPACTION
    drain(memory, wait=True)  # processes the queue with the fake model, then does the idle upkeep
    assert fragments(memory) <= 2  # LanceDB keeps the newest rows' fragment apart from the indexed one
    assert [h.note.content for h in memory.search("number 7", use_vector=False, follow_links=False)][:1] == [
        "one quick add number 7"]


def test_list_returns_the_newest_first_with_limits_dates_and_tags(memory):
    notes = [memory.add(text, at) for text, at in [
        ("oldest #Run", "2026-01-01T08:00"), ("middle", "2026-02-01T08:00"), ("newer #run", "2026-03-01T08:00"),
        ("newest", "2026-04-01T08:00")]]
    views = Views(memory)
    assert [n.content for n in views.notes(limit=2)] == ["newest", "newer #run"]
    assert [n.content for n in views.notes()] == [n.content for n in reversed(notes)]
    assert [n.content for n in views.notes(tag="RUN")] == ["newer #run", "oldest #Run"]
    assert [n.content for n in views.notes(since="2026-02-01", until="2026-03-15")] == ["newer #run", "middle"]


def test_status_counts_without_reading_notes(memory):
    memory.add("one", "2026-03-01")
    memory.add("two", "2026-03-02")
    status = memory.status()
    assert (status["notes"], status["pending"], status["queue"]) == (2, 2, 2)
    drain(memory, wait=True)
    assert memory.status()["pending"] == 0
    assert memory.store.count_by("status", "main") == {"ready": 2}


def test_a_vector_search_visits_every_partition_of_a_small_index_and_a_quarter_of_a_large_one():
    from zettel_amem.storage.store import ANN_PROBE_ALL_UP_TO, ann_probes

    assert ann_probes(0) == 1
    assert ann_probes(25) == 25  # 100k notes: all (half of them found 0.90 of the exact top 10)
    assert ann_probes(ANN_PROBE_ALL_UP_TO + 1) == ANN_PROBE_ALL_UP_TO
    assert ann_probes(250) == 62  # 1M notes: recall 0.97 at 10 (bench.scale)


def test_search_probes_the_partitions_an_index_was_built_with_and_a_moved_notebook_is_retrained(memory, monkeypatch):
    """A shared store builds fewer, larger IVF partitions than a local home (each probed one costs object-store
    requests); the index's name records how many, so search probes those, whichever rule built it, and the
    worker retrains an index built by the other kind of home once (a notebook moved to or from a bucket)."""
    from types import SimpleNamespace

    import zettel_amem.storage.store_ranked as ranked
    import zettel_amem.storage.store_upkeep as upkeep
    from zettel_amem.storage.store_upkeep import Upkeep, parse_index_name, vector_partitions

    assert parse_index_name("raw_vector_ann_40000") == (40_000, 10)  # named before the rule had two kinds
    assert parse_index_name("raw_vector_ann_p2_40000") == (40_000, 2) and parse_index_name("vector_idx") is None
    assert (vector_partitions(40_000, False), vector_partitions(40_000, True), vector_partitions(25_000, True)) == (
        10, 2, 1)
    local, shared = SimpleNamespace(remote=None), SimpleNamespace(remote=object())
    assert not Upkeep._retrain(local, (40_000, 10), 50_000) and Upkeep._retrain(shared, (40_000, 10), 50_000)
    assert not Upkeep._retrain(shared, (40_000, 2), 50_000) and Upkeep._retrain(local, (40_000, 2), 50_000)
    assert Upkeep._retrain(shared, (20_000, 1), 80_000)  # 4x growth
    # The beam: as measured on a local home; on a shared store wider for a larger partition, within a cap.
    assert ranked.ann_ef(100, 40_000, 10, False) == 100 and ranked.ann_ef(100, 40_000, 2, True) == 1_000
    assert ranked.ann_ef(100, 10**6, 1, True) == ranked.SHARED_EF_MAX and ranked.ann_ef(100, 8_000, 4, True) == 100

    monkeypatch.setattr(upkeep, "ROWS_PER_PARTITION", 10)  # a local home's rule, scaled down to 55 notes
    for i in range(55):
        memory.add(f"note {i} about rain and coffee", f"2026-03-{1 + i % 28:02d}")
    memory.store.maintain(vector_min_rows=50)
    assert memory.store.vector_index_shapes() == {"raw_vector": (55, 5), "vector": (55, 5)}
    probed = []
    monkeypatch.setattr(ranked, "ann_probes", lambda partitions: probed.append(partitions) or partitions)
    monkeypatch.setattr(upkeep, "ROWS_PER_PARTITION", 4_000)  # the rule changes; the index built stays
    found = memory.store.nearest(memory.embedder.embed_query("note 7 about rain"), 5, "main", column="raw_vector")
    assert probed == [5] and len(found) == 5


def _filled(memory, stamps: list[str], notebook: str = "main") -> list:
    """Notes at these times written in this order in one commit (vectors made up: listing reads none)."""
    rng = np.random.default_rng(len(stamps))
    notes = []
    for i, at in enumerate(stamps):
        note = memory.new_note(f"note {i} of {notebook} at {at}", at)
        note.notebook, note.seq = notebook, i  # the order of notes written in one second
        vector = rng.normal(size=memory.store.dim)
        note.vector = note.raw_vector = (vector / np.linalg.norm(vector)).tolist()
        notes.append(note)
    memory.store.add(notes)
    return notes


def _spaced(start: str, count: int, seconds: int) -> list[str]:
    from datetime import datetime, timedelta

    first = datetime.fromisoformat(start)
    return [(first + timedelta(seconds=seconds * i)).isoformat() for i in range(count)]


def _rows_read(monkeypatch) -> list[int]:
    """The rows every LanceDB query returns from now on (a count reads none)."""
    import lancedb.query

    read: list[int] = []
    for name in ("to_arrow", "to_list"):
        original = getattr(lancedb.query.LanceQueryBuilder, name)

        def counted(self, *args, _original=original, **kwargs):
            result = _original(self, *args, **kwargs)
            read.append(len(result) if isinstance(result, list) else result.num_rows)
            return result

        monkeypatch.setattr(lancedb.query.LanceQueryBuilder, name, counted)
    return read


def test_listing_the_newest_reads_a_bounded_number_of_rows_at_any_size(memory, monkeypatch):
    """Issue #59: served `zk list --limit 20` grew with the store (71 -> 98 ms from 1k to 20k notes): it read
    the time of every note. Through the `at` index it counts instead and reads a few hundred rows at most,
    the same at 3,000 notes as at 300."""
    from zettel_amem.storage.store_rows import CUTOFF_ROWS

    views, read = Views(memory), []
    stamps = _spaced("2024-01-01T08:00:00", 3_000, 600)
    for written in (stamps[:300], stamps[300:]):  # 300 notes, then 3,000
        _filled(memory, written)
        memory.store.maintain(force=True)
        assert "at" in memory.store.indexed_columns()
        spied = _rows_read(monkeypatch)
        newest = views.notes(limit=20)
        monkeypatch.undo()
        read.append(sum(spied))
        everything = sorted(memory.store.notes(), key=lambda n: (n.at, n.created, n.seq), reverse=True)
        assert [n.id for n in newest] == [n.id for n in everything[:20]]
    assert read[0] == read[1] and read[1] <= 4 * 20 + CUTOFF_ROWS + 20, read


@pytest.mark.parametrize("case", ["in order", "old import last", "future", "one second", "notebooks", "no index"])
def test_the_newest_found_through_the_index_are_the_newest(memory, monkeypatch, case):
    """Every way the cutoff is found gives what sorting every note gives: notes written in time order (the
    last rows written are the guess), an old chat imported last (a search down from tomorrow), notes dated in
    the future, many notes in one second, another notebook and date bounds, and a store without the index."""
    import zettel_amem.storage.store_rows as rows

    monkeypatch.setattr(rows, "CUTOFF_ROWS", 30)  # the search's paths, on a small store
    recent = _spaced("2026-11-01T08:00:00", 400, 3_600)
    stamps = {"in order": recent, "old import last": recent + _spaced("2019-05-01T10:00:00", 900, 60),
              "future": recent + _spaced("2031-01-01T00:00:00", 200, 86_400),
              "one second": recent + ["2026-11-20T12:00:00"] * 120, "notebooks": recent,
              "no index": recent}[case]
    _filled(memory, stamps)
    if case == "notebooks":
        _filled(memory, _spaced("2026-11-10T08:30:00", 500, 600), "work")
    if case != "no index":
        memory.store.maintain(force=True)
    since, until = ("2026-11-05", "2026-11-15") if case == "notebooks" else (None, None)
    everything = [n for n in memory.store.notes("main") if (since is None or n.at >= since)
                  and (until is None or n.at < until)]
    everything.sort(key=lambda n: (n.at, n.created, n.seq), reverse=True)
    for limit in (1, 20, 45):
        newest = memory.store.newest("main", limit, since=since, until=until)
        assert [n.id for n in newest] == [n.id for n in everything[:limit]], (case, limit)
