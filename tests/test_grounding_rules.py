"""Graph checks (#31), second round: a person, place or technology must be written as a name; a wrong
predicate on a right pair is replaced by the one the types and the sentence allow; the writer's own facts
come from first-person sentences. No model: `grounding.check` over hand-made extractions."""

from __future__ import annotations

import pytest

from zettel_amem.tiers.grounding import ENTITY_TYPES, Rules, check, rule_predicate, trusted, writer_relations

ALL = frozenset(ENTITY_TYPES)
RULES = Rules(cues=True, rule_predicate=True, writer=True)


@pytest.mark.parametrize("name, kind, source", [
    ("개인 최고 기록", "person", "서울 10km 대회. 개인 최고 기록 52분 40초."),  # a common noun, no honorific
    ("검진", "person", "검진 결과는 다음 주에 나온다."),
    ("sea view", "technology", "She loves the new job and the sea view."),  # lower case: a description
    ("DB", "technology", "온비서 DB는 SQLite로 시작."),  # two letters: a word, not a name
    ("Flew", "place", "Flew to Osaka for three days."),  # capitalised only because it starts the sentence
    ("Ran", "person", "Ran 10 km at Yeouido."),
    ("동네 산책", "place", "이제 동네 산책은 혼자 하신다."),  # no place suffix, no particle of place
    ("slowly back", "place", "Ran 6 km without knee pain. Slowly back."),  # a fragment, not a name
    ("Reading", "technology", 'Reading "Project Hail Mary" now.'),  # a verb that starts the sentence
    ("Knee surgery", "project", "Dad's knee surgery went well."),  # a project in Latin letters is a name
])
def test_a_word_typed_as_a_person_place_or_technology_must_be_written_as_a_name(name, kind, source):
    out = check([(name, kind)], [], source, ALL)
    assert out.entities == [] and out.dropped.entities == {f"not a {kind}'s name": 1}


@pytest.mark.parametrize("name, kind, source", [
    ("소라", "person", "온비서 PM은 이제 소라 님이다."),
    ("사토", "person", "토요일마다 사토 선생님께 일본어를 배운다."),
    ("동생", "person", "동생 생일. 같이 떡볶이 먹었다."),  # kinship words name a person
    ("Mina", "person", "Finished it; lent it to Mina."),
    ("Rocky", "person", "Rocky is the best character."),  # starts the sentence as its subject
    ("Mina", "person", "Mina's farewell dinner before Busan."),
    ("Dad", "person", "Dad's knee surgery went well."),
    ("잠실", "place", "무릎이 아파서 대신 잠실에서 걸었다."),
    ("성수동", "place", "성수동 투룸을 알아보는 중."),
    ("PostgreSQL", "technology", "Migrated Onbiseo staging to PostgreSQL."),
    ("온비서", "project", "회사 프로젝트 온비서 킥오프."),  # Korean projects use common words: not checked
    ("Project Hail Mary", "project", 'Reading "Project Hail Mary" now.'),
    ("Seoul Forest", "place", "Seoul Forest was quiet this morning."),
    ("김민수", "person", "김민수랑 저녁."),
])
def test_names_pass(name, kind, source):
    assert check([(name, kind)], [], source, ALL).entities == [(name, kind)]


def test_a_right_pair_with_a_wrong_predicate_gets_the_one_the_types_and_the_sentence_allow():
    entities = [("Mina", "person"), ("Busan", "place"), ("온비서", "project"), ("Heroku", "technology")]
    source = "Visited Mina in Busan last week.\n온비서 서버는 일단 Heroku에 올렸다."
    relations = [("Mina", "uses database", "Busan"), ("온비서", "uses database", "Heroku")]
    assert check(entities, relations, source, ALL, Rules(cues=True)).relations == []
    fixed = check(entities, relations, source, ALL, Rules(cues=True, rule_predicate=True))
    assert fixed.relations == [("Mina", "visited", "Busan"), ("온비서", "hosted on", "Heroku")]


def test_the_rule_abstains_when_no_or_several_predicates_fit():
    assert rule_predicate("person", "place", "Mina's farewell dinner before Busan.") is None  # no cue
    assert rule_predicate("person", "place", "Went to Busan to see a new home.") is None  # two fit
    # A word of change says something moved, not which relation: no "hosted on" from "moved".
    assert rule_predicate("project", "technology", "Moved Onbiseo search to Elasticsearch.") is None
    assert rule_predicate("project", "technology", "Onbiseo server moved to Fly.io.") == ("hosted on", False)
    assert rule_predicate("place", "person", "Visited Mina in Busan.") == ("visited", True)  # ends swapped


def test_the_writer_does_what_a_first_person_sentence_says_and_nothing_another_person_does():
    korean = "본가 다녀옴. 엄마가 목도리를 좋아하셨다."
    assert writer_relations([("본가", "place"), ("엄마", "person")], korean) == [("나", "visited", "본가")]
    english = "Lunch with Mina. She is moving to Busan in April."
    assert writer_relations([("Mina", "person"), ("Busan", "place")], english) == []  # she moves, not I
    assert writer_relations([("Osaka", "place")], "Went to Osaka with my sister.") == [("I", "visited", "Osaka")]
    out = check([("본가", "place")], [], korean, ALL, RULES)
    assert out.relations == [("나", "visited", "본가")] and ("나", "person") in out.entities
    assert check([("본가", "place")], [], korean, ALL, Rules(cues=True)).relations == []  # off: nothing
    assert trusted("나", "visited", "본가")  # the writer's facts reach answers


def test_a_book_or_a_race_is_kept_only_as_the_end_of_a_checked_relation():
    source = "서울 가을 10km 대회 참가 신청 완료.\n회의 끝나고 커피."
    entities = [("10km 대회", "event"), ("커피", "other")]
    kept = check(entities, [], source, frozenset({"person", "place"}),
                 Rules(cues=True, rule_predicate=True, writer=True, end_types=frozenset({"event", "other"})))
    assert kept.relations == [("나", "participates in", "10km 대회")]
    assert ("10km 대회", "event") in kept.entities and ("커피", "other") not in kept.entities
    assert kept.dropped.entities == {"in no checked relation": 1}
