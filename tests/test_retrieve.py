"""Retrieval: hybrid ranking, expansion de-duplicated and within budget, Korean keyword matching."""

from __future__ import annotations

from zettel_amem.core.models import Note
from zettel_amem.core.text import estimate_tokens, keyword_terms
from zettel_amem.retrieval.retrieve import (
    Hit,
    Signal,
    expand,
    fold_repeats,
    fuse,
    fuse_signals,
    render_for_context,
    smooth_by_session,
)


def make(i: str, content: str, links=()) -> Note:
    return Note(id=i * 32, content=content, at=f"2026-03-0{len(i)}T08:00", links=list(links))


def test_korean_keyword_terms_find_a_word_inside_an_inflected_one():
    assert "무릎" in keyword_terms("무릎이")
    assert "무릎" in keyword_terms("무릎")  # a two-syllable query is its own term


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
    # Expansion never displaces a direct hit: both hits first, then their neighbours in hit order.
    assert [(h.note.id, h.via, h.score) for h in hits] == \
        [(c.id, None, 1.0), (b.id, None, 0.5), (d.id, c.id, 0.0), (a.id, c.id, 0.0)]


def test_neighbours_only_fill_the_budget_the_hits_left():
    hits = [Hit(make(ch, "word " * 30), 1.0) for ch in "abc"]
    extra = make("z", "word " * 30)
    cost = estimate_tokens(render_for_context(extra))
    out = expand(hits, lambda n: [extra], budget_tokens=cost * 3 + 1)
    assert [h.note.id for h in out] == [h.note.id for h in hits]  # the neighbour did not push out hit c


def test_enrichment_only_adds_to_a_notes_score():
    a, b, c = make("a", "x"), make("b", "y"), make("c", "z")
    raw = [Signal("vector", [(a, 0.9), (b, 0.8), (c, 0.7)]), Signal("keywords", [(a, 2.0), (b, 1.0)])]
    plain = {h.note.id: h.score for h in fuse_signals(raw, 3)}
    # b's enrichment is poor (it is not found by it); c's enrichment is good.
    enriched = fuse_signals([*raw, Signal("enriched-vector", [(c, 0.9)], 0.5)], 3)
    total = 2.5 / 2  # the scores are rescaled by the total weight; compare unscaled contributions
    for hit in enriched:
        assert hit.score * total >= plain[hit.note.id] - 1e-9
    assert enriched[0].note.id == a.id and enriched[0].signals == {"vector": 0, "keywords": 0}


def test_session_smoothing_lifts_the_answer_next_to_the_question():
    turns = [Note(id=f"{i:032x}", content=t, at="2026-03-01T08:00", kind="turn", session_id="s1", seq=i)
             for i, t in enumerate(["Where did you run on Saturday?", "Yeouido, along the river.", "Nice!"])]
    other = make("e", "unrelated")
    hits = [Hit(turns[0], 1.0), Hit(other, 0.6)]
    windows = {turns[0].id: [turns[1], turns[2]]}
    smoothed = smooth_by_session(hits, windows, (0.5, 0.25))
    assert [h.note.id for h in smoothed] == [turns[0].id, other.id, turns[1].id, turns[2].id]
    assert smoothed[2].score == 0.5 / 1.75 and smoothed[0].score == 1.0 / 1.75
    assert smooth_by_session(hits, windows, (0.0, 0.0)) == hits


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


def test_keyword_index_sees_other_writers_and_upkeep(memory, zk_home, embedder):
    """The full-text index lives in the store: a note written by another process is found at once (before
    any index update), still after `maintain` folds it into the index, and never after `zk rm`."""
    from zettel_amem.memory import Memory

    memory.add("alpha knee note", "2026-03-01")
    assert [h.note.content for h in memory.search("knee", use_vector=False)] == ["alpha knee note"]
    other = Memory(zk_home, embedder=embedder)  # another process, in effect
    beta = other.add("beta knee story", "2026-03-02")
    found = {h.note.content for h in memory.search("knee", use_vector=False)}
    assert found == {"alpha knee note", "beta knee story"}
    assert other.store.maintain(force=True)
    assert {h.note.content for h in memory.search("knee", use_vector=False)} == found
    other.remove(beta.id)
    assert [h.note.content for h in memory.search("knee", use_vector=False)] == ["alpha knee note"]


def test_korean_keyword_search_finds_the_word_inside_an_inflected_one(memory):
    knee = memory.add("토요일 달리기 이후로 무릎이 아파서 멈췄다.", "2026-03-28")
    memory.add("회사 근처 헬스장 등록", "2026-03-29")
    for _ in range(2):  # before and after the rows are folded into the index
        assert [h.note.id for h in memory.search("무릎", use_vector=False, follow_links=False)] == [knee.id]
        memory.store.maintain(force=True)


def test_filler_is_not_a_vector_hit(memory):
    knee = memory.add("Knee hurts since Saturday's run, stopped at 8km.", "2026-03-29T09:15")
    filler = memory.add("ok", "2026-03-29T09:16")
    ids = [h.note.id for h in memory.search("무릎", follow_links=False)]
    assert ids == [knee.id]
    assert filler.id in [h.note.id for h in memory.search("ok", follow_links=False)]  # found by its word


def test_session_turns_follow_their_hit_and_links_come_after_all_hits():
    a, b, link = make("a", "first"), make("b", "second"), make("c", "linked")
    before, after = make("d", "turn before a"), make("e", "turn after a")
    out = expand([Hit(a, 1.0), Hit(b, 0.5)], lambda n: [link] if n.id == a.id else [], None,
                 session_of=lambda n: [before, after] if n.id == a.id else [])
    assert [h.note.id for h in out] == [a.id, before.id, after.id, b.id, link.id]
    assert [h.via for h in out] == [None, a.id, a.id, None, a.id]


def test_a_repeated_line_takes_one_place_and_counts_its_copies():
    copies = [make(ch, "What are you  reading these days?") for ch in "abc"]
    other = make("d", "I finished Becoming by Michelle Obama.")
    loud = make("e", "WHAT ARE YOU READING THESE DAYS?")
    hits = fold_repeats([Hit(copies[0], 0.9), Hit(copies[1], 0.8), Hit(loud, 0.7), Hit(copies[2], 0.6),
                         Hit(other, 0.5)])
    assert [(h.note.id, h.repeats) for h in hits] == [(copies[0].id, 3), (other.id, 0)]
    assert hits[0].to_json()["repeats"] == 3


def test_search_gives_the_place_of_a_repeated_line_to_the_next_distinct_note(memory):
    for day in range(1, 6):
        memory.add("What book are you reading now?", f"2026-03-0{day}")
    answer = memory.add("Reading a book about Korean history now.", "2026-03-06")
    hits = memory.search("what book are you reading", k=2, follow_links=False, session_turns=0)
    assert [h.note.content for h in hits] == ["What book are you reading now?", answer.content]
    assert hits[0].repeats == 4


def test_enrichment_is_ranked_unless_the_model_made_it_worse(memory, fake_llm, zk_home):
    """SmolLM2-135M's enrichment lowered LoCoMo recall: with it, search ranks the raw words only unless
    `search_enrichment_weight` is set; other models' enrichment ranks beside the raw words at 0.5."""
    from zettel_amem.core.config import Settings

    note = memory.add("Knee hurts after the long run on Saturday.", "2026-03-29T09:15")
    memory.process(note.id)
    assert memory.resolve(note.id).context  # enriched by the (fake) model

    def signals() -> set[str]:
        return set(memory.search("knee", 3, follow_links=False)[0].signals)

    assert {"enriched-vector", "enriched-keywords"} <= signals()
    memory.settings.llm_model = "smollm2-135m"
    assert signals() == {"vector", "keywords"}
    (zk_home / "config.toml").write_text("search_enrichment_weight = 0.3\n", encoding="utf-8")
    memory.settings.search_enrichment_weight = Settings.load(zk_home).search_enrichment_weight
    assert memory.settings.enrichment_weight() == 0.3 and "enriched-vector" in signals()
