"""Graph checks (#31) with the mock model: noun phrases, the closed vocabulary, support in one sentence,
invalidation only by a newer fact of a functional predicate, the undo, and answers using checked facts."""

from __future__ import annotations

import pytest

from tests.test_tiers import journal
from zettel_amem.core.models import Relation
from zettel_amem.tiers.extraction import conflicts
from zettel_amem.tiers.grounding import (
    ENTITY_TYPES,
    check,
    is_noun_phrase,
    load_check_counts,
    map_predicate,
    strip_particles,
    supporting_sentence,
    trusted,
)

ALL = frozenset(ENTITY_TYPES)


@pytest.mark.parametrize("clause", ["녹차를 마신다", "무릎 괜찮다", "천천히 걸었다", "새 러닝화 샀다",
                                    "이사는 6월 27일", "started reading", "I ran", "3km", "61분", "he", "오늘",
                                    "온비서 프로젝트의 데이터베이스를 옮기기로 했다"])
def test_clauses_pronouns_and_measures_are_not_names(clause):
    assert not is_noun_phrase(clause)


@pytest.mark.parametrize("name", ["온비서", "성수동 투룸", "PostgreSQL", "Seoul autumn 10 km race", "running shoes",
                                  "사토 선생님", "Project Hail Mary", "유기견 보호소", "Fly.io"])
def test_short_noun_phrases_are_names(name):
    assert is_noun_phrase(name)


def test_a_quoted_title_is_a_name_even_when_it_reads_as_a_clause():
    assert not is_noun_phrase("소년이 온다")
    assert is_noun_phrase("소년이 온다", "『소년이 온다』 읽기 시작.")


def test_particles_are_stripped_but_not_from_a_word_that_ends_like_one():
    assert strip_particles("온비서는") == "온비서" and strip_particles("민아가") == "민아"
    assert strip_particles("본가") == "본가" and strip_particles("치과") == "치과"  # one syllable would be left
    assert strip_particles("떡볶이", "같이 떡볶이 먹었다.") == "떡볶이"  # the notes never write "떡볶"


def test_model_wordings_map_to_the_closed_vocabulary_both_languages_and_ways_round():
    assert map_predicate("uses database") == ("uses database", False)
    assert map_predicate("DB") == ("uses database", False)
    assert map_predicate("데이터베이스") == ("uses database", False)
    assert map_predicate("is PM of") == ("has pm", True)  # "지수 is PM of 온비서" -> 온비서 has pm 지수
    assert map_predicate("works_on") == ("works on", False)
    assert map_predicate("finished") == ("reads", False)
    assert map_predicate("likes the taste of") is None


def test_support_needs_one_sentence_naming_both_ends():
    source = "온비서 회의: SQLite로는 부족하다는 결론. PostgreSQL로 옮기기로 했다.\nRan 10 km at Yeouido."
    assert supporting_sentence("온비서", "SQLite", source)
    assert supporting_sentence("Onbiseo", "SQLite", source)  # romanised: 온비서 = onbiseo
    assert supporting_sentence("온비서", "PostgreSQL", source) is None  # different sentences
    assert supporting_sentence("온비서", "PostgreSQL", source, unit="entry")


def test_check_drops_and_counts_what_the_notes_do_not_say():
    source = "온비서 DB는 SQLite로 시작, PM은 지수 님.\n엄마 생신 선물로 목도리를 샀다."
    entities = [("온비서", "project"), ("SQLite", "technology"), ("지수", "person"), ("엄마", "person"),
                ("목도리를 샀다", "other"), ("사용자", "technology"), ("Joon", "person")]
    relations = [("온비서", "uses database", "SQLite"), ("온비서", "has pm", "지수"),
                 ("온비서", "uses database", "사용자"),  # not in the notes
                 ("엄마", "tests", "SQLite"),  # predicate outside the vocabulary
                 ("지수", "colleague of", "엄마"),  # both named, never in one sentence
                 ("온비서", "has pm", "SQLite")]  # a database is no PM
    out = check(entities, relations, source, ALL)
    assert out.entities == [("온비서", "project"), ("SQLite", "technology"), ("지수", "person"), ("엄마", "person")]
    assert out.relations == [("온비서", "uses database", "SQLite"), ("온비서", "has pm", "지수")]
    assert out.dropped.entities == {"not a noun phrase": 1, "not in the notes": 2}
    assert out.dropped.relations == {"an end is not a checked entity": 1, "predicate not in the vocabulary": 1,
                                     "no sentence holds both ends": 1, "types do not fit the predicate": 1}
    only_people = check(entities, relations, source, frozenset({"person"}))
    assert [n for n, _ in only_people.entities] == ["지수", "엄마"] and only_people.relations == []


def _rel(ident: str, predicate: str, obj: str, day: str) -> Relation:
    return Relation(id=ident, subject="onbiseo", predicate=predicate, object=obj, valid_from=f"2026-{day}T10:00")


def test_only_a_newer_fact_of_a_functional_predicate_ends_an_older_one():
    same = lambda i: i  # noqa: E731
    old = [_rel("a", "uses database", "sqlite", "01-07"), _rel("b", "uses", "heroku", "01-19")]
    moved = [_rel("c", "uses database", "postgres", "02-23"), _rel("d", "uses", "flyio", "06-16")]
    assert [(e.id, n.id) for e, n in conflicts(moved, old, same)] == [("a", "c")]  # "uses" ends nothing
    same_day = [_rel("e", "uses database", "mysql", "01-07")]
    assert conflicts(same_day, old, same) == []  # which came first that day is unknown
    still = [_rel("f", "uses database", "elastic", "10-25"), _rel("g", "uses database", "sqlite", "10-25")]
    assert conflicts(still, old, same) == []  # the newer episode still states the older object


def test_trusted_facts_are_vocabulary_facts_between_names():
    assert trusted("온비서", "uses database", "PostgreSQL")
    assert not trusted("온비서", "uses database system", "PostgreSQL")  # free text from an older store
    assert not trusted("무릎 괜찮다", "friend of", "엄마")


MOVE = [("2026-03-02T10:00", "Onbiseo uses SQLite for the first prototype."),
        ("2026-05-04T09:00", "Onbiseo uses PostgreSQL now; the SQLite file was migrated."),
        ("2026-06-10T08:00", "Onbiseo uses Redis for the cache.")]


def test_a_move_ends_the_old_fact_once_and_can_be_undone(memory, fake_llm, zk):
    tiers = journal(memory, MOVE)
    relations = {r["object"]: r for r in tiers.graph.view("Onbiseo")["entity"]["relations"]}
    assert not relations["SQLite"]["current"] and relations["SQLite"]["invalid_from"][:10] == "2026-05-04"
    # Redis (June) ends PostgreSQL under the fake's rule ("uses" -> "uses database"): the fact it ends is
    # the current one only; SQLite keeps its first end.
    assert relations["PostgreSQL"]["invalid_from"][:10] == "2026-06-10"
    assert relations["SQLite"]["invalidated_by"] == relations["PostgreSQL"]["id"]
    shown = zk("graph", "Onbiseo", check=True).stdout
    assert f"zk graph --restore {relations['SQLite']['id'][:8]}" in shown.replace("\n", " ")
    restored = zk("graph", "--restore", relations["SQLite"]["id"][:8], "--json", check=True).json()
    assert restored["current"] is True
    again = {r["object"]: r for r in tiers.graph.view("Onbiseo")["entity"]["relations"]}
    assert again["SQLite"]["current"] and not again["PostgreSQL"]["current"]
    assert zk("graph", "--restore", relations["SQLite"]["id"][:8]).exit_code != 0  # current now: nothing to undo
    bad = zk("graph", "--restore", "zzzz")
    assert bad.exit_code != 0 and "Traceback" not in bad.stderr


def test_drops_are_counted_for_stats(memory, fake_llm, zk):
    fake_llm.extract = lambda user: {"entities": [{"name": "Onbiseo", "type": "project"},
                                                  {"name": "커피를 끊었다", "type": "person"}],
                                     "relations": [{"subject": "Onbiseo", "predicate": "loves",
                                                    "object": "커피를 끊었다"}]}
    journal(memory, [("2026-03-02T10:00", "Onbiseo 회의. 커피를 끊었다.")])
    checks = zk("stats", "--json", check=True).json()["graph_checks"]
    assert checks == load_check_counts(memory.home)
    assert checks["entities"] == {"not a noun phrase": 1}
    assert checks["relations"] == {"predicate not in the vocabulary": 1}


def test_ask_and_context_report_the_checked_facts_they_used(memory, fake_llm, zk):
    journal(memory, MOVE[:2])
    context = zk("context", "What database does Onbiseo use?", "--json", check=True).json()
    assert context["facts_used"] == len(context["facts"]) >= 1
    assert "Known facts:" in context["block"] and "uses database PostgreSQL" in context["block"]
    asked = zk("ask", "What database does Onbiseo use?", "--json", check=True).json()
    assert asked["facts_used"] == len(asked["facts"]) >= 1
    # A fact from before the checks (free-text predicate) is never given to the model.
    tiers_store = memory.store
    assert tiers_store is not None
    from zettel_amem.tiers.service import Tiers

    tiers = Tiers(memory)
    rel = tiers.store.relations("main")[0]
    rel.predicate = "is basically"
    tiers.store.put_relations([rel])
    after = zk("ask", "What database does Onbiseo use?", "--json", check=True).json()
    assert after["facts_used"] == asked["facts_used"] - 1
