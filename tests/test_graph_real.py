"""The graph checks (#31) on the real bundled Qwen2.5-0.5B: a five-note Korean journal."""

from __future__ import annotations

import re

import pytest

from zettel_amem.core.text import name_key
from zettel_amem.memory import Memory
from zettel_amem.tiers.grounding import WRITERS

pytestmark = pytest.mark.slow

# Five weeks, five episodes; the project's database changes in the fourth.
KOREAN = [
    ("2026-01-07T19:05", "회사 프로젝트 온비서 킥오프. 온비서 DB는 SQLite를 사용한다."),
    ("2026-01-14T21:00", "동생이랑 망원시장에서 떡볶이를 먹었다. 맛있었다."),
    ("2026-01-21T20:00", "엄마 생신 선물로 목도리를 샀다. 토요일에 본가에 간다."),
    ("2026-02-23T18:30", "온비서 DB를 PostgreSQL로 옮겼다. 검색이 네 배 빨라졌다."),
    ("2026-03-04T16:40", "아빠 무릎 수술이 잘 끝났다. 재활은 6주 걸린다."),
]
CLAUSE_END = re.compile(r"(다|요|었|았|했|겠)$")


def test_a_korean_journal_gives_noun_phrases_and_one_true_invalidation(zk_home, embedder):
    from zettel_amem.backends.llm.llama import load_llm
    from zettel_amem.core.models import EPISODE_READY
    from zettel_amem.tiers.service import Tiers

    memory = Memory(zk_home, llm=load_llm("qwen2.5-0.5b"), embedder=embedder)
    memory.settings.construct = memory.settings.link = False  # this test is about the graph
    for at, text in KOREAN:
        memory.add(text, at)
    memory.process_pending()
    tiers = Tiers(memory)
    assert len(tiers.sessions.close_due(today="2026-11-29")) == 5
    results = tiers.promotion.process_pending()
    assert [r.status for r in results] == [EPISODE_READY] * 5, results

    notes = name_key(" ".join(text for _, text in KOREAN))
    entities = tiers.graph.entities()
    assert entities, "the graph says nothing"
    for entity in entities:  # every entity is a short name written in the notes, never a clause
        name = entity["name"]
        if name in WRITERS.values():
            continue  # the writer: the first person a journal leaves out ("본가에 간다")
        assert name_key(name) in notes, name
        assert len(name.split()) <= 4 and not CLAUSE_END.search(name.replace(" ", "")), name

    relations = tiers.store.relations("main")
    names = {e.id: e.name for e in tiers.store.entities("main")}
    ended = [(names[r.subject], r.predicate, names[r.object]) for r in relations if r.invalid_from]
    current_db = {names[r.object] for r in relations if r.predicate == "uses database" and not r.invalid_from}
    stated = [(names[r.subject], r.predicate, names[r.object], r.valid_from[:10]) for r in relations]
    assert ended == [("온비서", "uses database", "SQLite")], stated  # the old database, and nothing else
    assert current_db == {"PostgreSQL"}, stated

