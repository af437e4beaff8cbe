"""Retrieval: hybrid ranking, expansion de-duplicated and within budget, Korean keyword matching."""

from __future__ import annotations

from zettel_amem.note import Note
from zettel_amem.retrieve import Hit, KeywordIndex, expand, fuse, render_for_context, tokens
from zettel_amem.text import estimate_tokens


def make(i: str, content: str, links=()) -> Note:
    return Note(id=i * 32, content=content, at=f"2026-03-0{len(i)}T08:00", links=list(links))


def test_korean_keyword_matches_inside_words():
    notes = [make("a", "토요일 달리기 이후로 무릎이 아파서 멈췄다."), make("b", "회사 근처 헬스장 등록")]
    ranked = KeywordIndex(notes).rank("무릎", 5)
    assert [n.id for n, _ in ranked] == [notes[0].id]
    assert "무릎" in tokens("무릎이")


def test_fusion_prefers_notes_found_by_both():
    a, b, c = make("a", "x"), make("b", "y"), make("c", "z")
    hits = fuse([(a, 0.9), (b, 0.8)], [(b, 3.0), (c, 1.0)], k=3)
    assert [h.note.id for h in hits] == [b.id, a.id, c.id]
    assert 0 < hits[-1].score < hits[0].score <= 1.0


def test_expansion_is_deduplicated_and_marks_where_links_came_from():
    a, b, c = make("a", "first"), make("b", "second"), make("c", "third")
    graph = {a.id: [b, c], b.id: [a, c], c.id: [a, b]}
    hits = expand([Hit(a, 1.0), Hit(b, 0.9), Hit(c, 0.8)], lambda n: graph[n.id], budget_tokens=None)
    assert [h.note.id for h in hits] == [a.id, b.id, c.id]
    assert all(h.via is None for h in hits)  # linked notes that are hits themselves keep their scores
    assert [h.score for h in hits] == [1.0, 0.9, 0.8]
    d = make("d", "fourth")
    graph[c.id] = [d, a]
    hits = expand([Hit(c, 1.0), Hit(b, 0.5)], lambda n: graph[n.id], budget_tokens=None)
    assert [(h.note.id, h.via, h.score) for h in hits] == \
        [(c.id, None, 1.0), (d.id, c.id, 0.0), (a.id, c.id, 0.0), (b.id, None, 0.5)]


def test_expansion_stays_within_the_token_budget():
    notes = [make(ch, "word " * 40) for ch in "abcdef"]
    cost = estimate_tokens(render_for_context(notes[0]))
    hits = expand([Hit(n, 1.0) for n in notes], lambda n: [], budget_tokens=cost * 3 + 1)
    assert len(hits) == 3
    assert sum(estimate_tokens(render_for_context(h.note)) for h in hits) <= cost * 3 + 1


def test_search_through_memory_expands_links_both_ways(memory, fake_llm):
    a = memory.add("Signed up for the autumn 10km race.", "2026-03-10T20:00")
    memory.process(a.id)
    fake_llm.link = lambda user, ids: {"links": ids[:1], "updates": []}
    b = memory.add("Bought a pair of trail shoes for the race.", "2026-03-12T20:00")
    memory.process(b.id)
    hits = memory.search("autumn 10km race", k=1)
    ids = [h.note.id for h in hits]
    assert ids[0] == a.id and b.id in ids  # b only links *to* a: found through the backlink
    assert len(ids) == len(set(ids))


def test_keyword_index_is_reused_but_sees_other_writers(memory, zk_home, embedder):
    from zettel_amem.memory import Memory

    memory.add("alpha knee note", "2026-03-01")
    assert [h.note.content for h in memory.search("knee", use_vector=False)] == ["alpha knee note"]
    index = memory.keyword_index()
    assert memory.keyword_index() is index  # same store version: no rebuild
    Memory(zk_home, embedder=embedder).add("beta knee story", "2026-03-02")  # another process, in effect
    found = {h.note.content for h in memory.search("knee", use_vector=False)}
    assert found == {"alpha knee note", "beta knee story"}


def test_filler_is_not_a_vector_hit(memory):
    knee = memory.add("Knee hurts since Saturday's run, stopped at 8km.", "2026-03-29T09:15")
    filler = memory.add("ok", "2026-03-29T09:16")
    ids = [h.note.id for h in memory.search("무릎", follow_links=False)]
    assert ids == [knee.id]
    assert filler.id in [h.note.id for h in memory.search("ok", follow_links=False)]  # found by its word
