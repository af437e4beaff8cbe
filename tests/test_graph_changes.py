"""Graph changes (#31, third round): a change the notes state carries a current fact's predicate over to
the new object ("Moved Onbiseo from Heroku to Fly.io"), roles the notes name give facts ("PM은 지수 님"),
and only such a grounded newer fact of the same subject and predicate ends an older one, as a version
the user can see and undo. Pure rules, then the promotion chain with the mock model."""

from __future__ import annotations

import pytest

from tests.test_tiers import journal
from zettel_amem.tiers.grounding import Fact, Rules, carried_over, check, named_like, role_relations

TYPES = frozenset({"person", "project", "place", "organisation", "technology"})
HOST = Fact(("온비서", "Onbiseo"), "hosted on", ("Heroku",), "organisation")
DB = Fact(("온비서", "Onbiseo"), "uses database", ("SQLite",), "technology")
PM = Fact(("온비서",), "has pm", ("지수 님", "지수"), "person")
HOME = Fact(("나",), "lives in", ("망원동",), "place", "person")


@pytest.mark.parametrize("fact, entities, source, new", [
    (HOST, [("Onbiseo", "project"), ("Fly.io", "organisation")],
     "Moved Onbiseo from Heroku to Fly.io. The monthly bill dropped from $90 to $35.", "Fly.io"),
    # a name the model missed
    (PM, [("온비서", "project")], "온비서 PM이 지수 님에서 현우 님으로 바뀌었다.", "현우 님"),
    (DB, [("온비서", "project")], "온비서 DB를 SQLite 대신 PostgreSQL로 바꿨다.", "PostgreSQL"),
    (DB, [("Onbiseo", "project"), ("PostgreSQL", "technology")],
     "Onbiseo: PostgreSQL replaced SQLite last night.", "PostgreSQL"),
    (DB, [("온비서", "project"), ("PostgreSQL", "technology")],
     "온비서 회의: SQLite로는 부족하다는 결론. PostgreSQL로 옮기기로 했다.", "PostgreSQL"),  # old one named
    (HOME, [("성수동", "place")], "이사 끝! 망원동에서 성수동으로. 짐 정리는 주말까지.", "성수동"),  # writer's home
])
def test_a_change_carries_the_predicate_over_to_the_new_object(fact, entities, source, new):
    kinds = (fact.subject_type, dict(entities).get(new, fact.object_type))
    assert carried_over([fact], entities, source, TYPES) == [((fact.subjects[0], fact.predicate, new), kinds)]


@pytest.mark.parametrize("fact, entities, source", [
    # no word of change
    (HOST, [("Onbiseo", "project"), ("Fly.io", "organisation")], "Onbiseo: the bill went from Heroku to Fly.io."),
    (DB, [("Onbiseo", "project"), ("Elasticsearch", "technology")],
     "Onbiseo's search moved from SQLite FTS to Elasticsearch; the database itself stays SQLite."),  # it stays
    (DB, [("Onbiseo", "project"), ("Elasticsearch", "technology")],
     "Onbiseo's search moved from SQLite FTS to Elasticsearch."),  # moved away from another thing
    # another subject
    (DB, [("Hanbit", "project"), ("PostgreSQL", "technology")], "Moved Hanbit from SQLite to PostgreSQL."),
    (HOME, [("Mina", "person"), ("Busan", "place")], "Mina is moving from 망원동 to Busan."),  # not the writer
    (HOST, [("Onbiseo", "project"), ("Osaka", "place")], "Moved Onbiseo from Heroku to Osaka."),  # no host's type
    # the old one not named
    (DB, [("온비서", "project"), ("PostgreSQL", "technology")], "온비서 staging을 PostgreSQL로 옮겼다."),
])
def test_no_change_without_a_stated_move_of_this_subject_and_predicate(fact, entities, source):
    assert carried_over([fact], entities, source, TYPES) == []


@pytest.mark.parametrize("entities, source, expected", [
    ([("온비서", "project")], "회사 프로젝트 '온비서' 킥오프. PM은 지수 님, 백엔드는 내가 맡기로. DB는 SQLite로 시작.",
     [("온비서", "has pm", "지수 님"), ("온비서", "uses database", "SQLite")]),
    ([("온비서", "project")], "현우 님이 육아휴직에 들어가서 온비서 PM은 이제 소라 님이다.",
     [("온비서", "has pm", "소라 님")]),
    ([], "팀장님이 바뀌었다. 박 팀장님이 본사로 가시고 새 팀장은 이정민 님.", [("나", "reports to", "이정민 님")]),
    ([], "Our new team lead is Sora.", [("I", "reports to", "Sora")]),
    ([("온비서", "project")], "온비서 PM이 지수 님에서 현우 님으로 바뀌었다.", []),  # the PM who left holds nothing
    ([("Onbiseo", "project"), ("Mina", "person")], "Onbiseo call at 5 pm Mina joined.", []),  # a time, not a PM
    ([("Mina", "person")], "Mina's manager is Tom now.", []),  # someone else's manager
    ([("Onbiseo", "project"), ("Hanbit", "project")], "Onbiseo and Hanbit: PM is Sora.", []),  # whose PM?
    ([("Onbiseo", "project")], "The database itself stays on Onbiseo's server.", []),  # no name after the role
])
def test_roles_the_notes_name_give_facts(entities, source, expected):
    assert [triple for triple, _ in role_relations(entities, source, TYPES)] == expected


KOREAN_CHANGES = [
    ("2026-01-07T19:05", "온비서 킥오프. PM은 지수 님. DB는 SQLite로 시작."),
    ("2026-02-11T19:40", "온비서 PM이 지수 님에서 현우 님으로 바뀌었다."),
    ("2026-02-23T18:30", "온비서 DB를 SQLite 대신 PostgreSQL로 바꿨다."),
    ("2026-03-04T10:00", "온비서 회의. Moved the blog from Heroku to Fly.io."),  # a move of nothing the graph holds
]


def test_stated_changes_end_the_old_facts_once_as_versions_to_undo(memory, fake_llm, zk):
    # The model names only the project: the facts come from the roles and the changes the notes state.
    fake_llm.extract = lambda user: {"entities": [{"name": "온비서", "type": "project"}], "relations": []}
    tiers = journal(memory, KOREAN_CHANGES)
    relations = tiers.graph.view("온비서")["entity"]["relations"]
    facts = {(r["predicate"], r["object"]): r for r in relations}
    assert set(facts) == {("has pm", "지수 님"), ("has pm", "현우 님"), ("uses database", "SQLite"),
                          ("uses database", "PostgreSQL")}, relations
    ended = {key: r["invalid_from"][:10] for key, r in facts.items() if not r["current"]}
    assert ended == {("has pm", "지수 님"): "2026-02-11", ("uses database", "SQLite"): "2026-02-23"}
    assert facts[("has pm", "지수 님")]["invalidated_by"] == facts[("has pm", "현우 님")]["id"]
    old = facts[("uses database", "SQLite")]["id"][:8]
    assert f"zk graph --restore {old}" in zk("graph", "온비서", check=True).stdout.replace("\n", " ")
    assert zk("graph", "--restore", old, "--json", check=True).json()["current"] is True
    again = {(r["predicate"], r["object"]): r["current"] for r in tiers.graph.view("온비서")["entity"]["relations"]}
    assert again[("uses database", "SQLite")] and again[("uses database", "PostgreSQL")]


def test_the_carry_over_and_roles_are_settings(memory, fake_llm):
    fake_llm.extract = lambda user: {"entities": [{"name": "온비서", "type": "project"}], "relations": []}
    memory.settings.graph_roles = memory.settings.graph_carry = False
    tiers = journal(memory, KOREAN_CHANGES[:2])
    assert tiers.store.relations("main") == []


def test_a_word_for_a_kind_of_thing_is_no_project_and_gives_no_role():
    # The real model named "프로젝트" the project of this note; the role then went to the common noun.
    source = "회사 프로젝트 온비서 킥오프. PM은 지수 님, 백엔드는 내가 맡기로 했다."
    assert not named_like("프로젝트", "project", source) and named_like("온비서", "project", source)
    assert check([("프로젝트", "project")], [], source, TYPES, Rules(roles=True)).relations == []
    assert [t for t, _ in role_relations([("온비서", "project")], source, TYPES)] == [("온비서", "has pm", "지수 님")]
