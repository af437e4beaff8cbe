"""What a search on a shared store asks before ranking, in one scan (`Store.prepare_search`): whether the
notebook is the table's only one, whether it has enriched notes, and which names in the query speak in its
chats. Asked one by one they were three reads, and every read opens each data file written since the
worker's upkeep: Lance fetches a file smaller than a block whole on every open (docs/benchmarks.md,
"Object storage: the reads of one search"). The answers, and so the search results, are the same.
"""

from __future__ import annotations

import uuid

import numpy as np
import pytest

from tests.s3_server import BUCKET

CANDIDATES = ([], ["Mina", "mina"], ["Jon", "jon", "Paris"], ["Nobody"])


def _fill(memory, notebook: str, speaker: str, enriched: bool, count: int = 12, own: int = 0) -> None:
    """`count` chat turns of `speaker` (every third one enriched when `enriched`) in two sessions, and `own`
    notes of the user's outside chats (some naming the speaker)."""
    from zettel_amem.core.models import READY

    rng = np.random.default_rng(len(notebook))
    notes = []
    for i in range(count + own):
        when = f"2026-03-{1 + i % 28:02d}T09:{i:02d}:00"
        note = memory.new_note(f"{speaker} turn {i}: knee after the run, 무릎 {i}", when, kind="turn",
                               speaker=speaker, session_id=f"{notebook}-s{i // 6}", seq=i % 6) if i < count \
            else memory.new_note(f"my own note {i}: {'met ' + speaker + ', ' if i % 4 == 0 else ''}ran, knee ok", when)
        note.status = READY
        note.context = f"{speaker} talks about a knee" if enriched and i % 3 == 0 else ""
        vector = rng.standard_normal(memory.store.dim).astype(np.float32)
        note.vector = note.raw_vector = (vector / np.linalg.norm(vector)).tolist()
        notes.append(note)
    memory.store.add(notes)


@pytest.fixture
def shared_two(s3, zk_home, embedder, monkeypatch):
    """A shared store with two notebooks: `main` (Mina's turns, some enriched) and `work` (Jon's, none)."""
    from zettel_amem.memory import Memory

    for key, value in {**s3.env(), "ZK_HOME": f"s3://{BUCKET}/reads-{uuid.uuid4().hex[:8]}",
                       "ZK_LOCAL_DIR": str(zk_home)}.items():
        monkeypatch.setenv(key, value)
    _fill(Memory(embedder=embedder), "main", "Mina", enriched=True, own=20)  # Mina's chats: a narrow scope
    _fill(Memory(embedder=embedder, notebook="work"), "work", "Jon", enriched=False)
    return lambda notebook="main": Memory(embedder=embedder, notebook=notebook)


def _answers(store, notebook: str, candidates: list[str]) -> tuple:
    return store._notebook_filter(notebook), store.has_enriched(notebook), store.speakers(candidates, notebook)


def test_one_scan_answers_as_the_three_reads_did(shared_two, s3):
    for notebook in ("main", "work", "empty"):
        for candidates in CANDIDATES:
            prepared = shared_two(notebook).store
            prepared.prepare_search(notebook, candidates)
            s3.take_counts()
            answers = _answers(prepared, notebook, candidates)
            assert s3.take_counts()["total"] == 0, (notebook, candidates)  # all three known already
            assert answers == _answers(shared_two(notebook).store, notebook, candidates), (notebook, candidates)
    store = shared_two().store
    store.prepare_search("main", ["Mina", "Jon"])
    assert store._notebook_filter("main") == "main" and store.has_enriched("main")
    assert store.speakers(["Mina", "Jon"], "main") == {"Mina": {"main-s0", "main-s1"}}  # Jon speaks in `work`


def test_a_lone_notebook_needs_no_filter_and_a_raw_one_no_enrichment(s3, zk_home, embedder, monkeypatch):
    from zettel_amem.memory import Memory

    for key, value in {**s3.env(), "ZK_HOME": f"s3://{BUCKET}/lone-{uuid.uuid4().hex[:8]}",
                       "ZK_LOCAL_DIR": str(zk_home)}.items():
        monkeypatch.setenv(key, value)
    _fill(Memory(embedder=embedder), "main", "Mina", enriched=False)
    store = Memory(embedder=embedder).store
    store.prepare_search("main", ["Mina"])
    assert _answers(store, "main", ["Mina"]) == (None, False, {"Mina": {"main-s0", "main-s1"}})
    assert _answers(Memory(embedder=embedder).store, "main", ["Mina"]) == (None, False,
                                                                          {"Mina": {"main-s0", "main-s1"}})


@pytest.mark.parametrize("query", ["knee", "무릎 knee", "what did Mina say about the run?", "Jon"])
def test_search_finds_the_same_notes_in_the_same_order(shared_two, monkeypatch, query):
    from zettel_amem.storage.store import Store

    for notebook in ("main", "work"):
        memory = shared_two(notebook)
        prepared = [(h.note.id, h.score) for h in memory.search(query)]
        if notebook == "main" and "Mina" in query:
            assert memory.searcher.last_scope.narrows  # ranked inside her chats and the notes naming her
        with monkeypatch.context() as patch:
            patch.setattr(Store, "prepare_search", lambda self, notebook, candidates: None)
            asked = [(h.note.id, h.score) for h in shared_two(notebook).search(query)]
        assert prepared and prepared == asked, (notebook, query)
