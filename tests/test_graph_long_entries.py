"""The graph on page-long diary entries (#36): what the bundled model proposed on a year of long entries
and the checks now refuse, and the same person or place named in two languages or with a title made one
entity. No model: `grounding.check` over hand-made extractions, `extraction.same_by_spelling`."""

from __future__ import annotations

import pytest

from zettel_amem.tiers.extraction import same_by_spelling, sound_key
from zettel_amem.tiers.grounding import ENTITY_TYPES, check

ALL = frozenset(ENTITY_TYPES)
SOURCE = ("Mom gave me Dad's old tie. 가마에서 금 간 첫 그릇을 버릴까 고민했다. 도하 씨가 장미 한 송이를 만들었다. "
          "오븐 앞에서 하루 종일. 새 집에 이삿짐이 왔다. 집에 와서 잤다. 루카스 노트를 다시 봤다. "
          "소연 씨가 커튼을 달아줬다. "
          "Dr. Yeom at the Forest Animal Hospital was kind. 여수에서 사흘. 택시를 탔다.")


@pytest.mark.parametrize("name, kind, reason", [
    ("Dad's old tie", "technology", "not a technology's name"),  # lower-case words: a description
    ("금 간 첫 그릇", "technology", "not a noun phrase"),  # a clause ("the first bowl that cracked")
    ("장미 한 송", "technology", "not a technology's name"),  # a Korean phrase is no product's name
    ("루카스 노트", "technology", "not a technology's name"),
    ("버릴까", "technology", "not a noun phrase"),  # "-ㄹ까": a verb asking itself
    ("오븐 앞", "place", "not a place's name"),  # a position, not a place
    ("새 집", "place", "not a place's name"),  # "a new home": what kind of place, not which
    ("집", "place", "not a place's name"),
])
def test_what_the_model_made_of_long_entries_is_refused(name, kind, reason):
    out = check([(name, kind)], [], SOURCE, ALL)
    assert out.entities == [], out.entities
    assert sum(out.dropped.entities.values()) == 1


@pytest.mark.parametrize("name, kind", [
    ("Forest Animal Hospital", "place"), ("Dr. Yeom", "person"), ("여수", "place"), ("택시", "technology"),
])
def test_names_of_long_entries_pass(name, kind):
    assert check([(name, kind)], [], SOURCE, ALL).entities == [(name, kind)]


def test_a_name_with_an_honorific_is_a_person_whatever_type_it_was_given():
    assert check([("소연 씨", "project")], [], SOURCE, ALL).entities == [("소연 씨", "person")]


@pytest.mark.parametrize("a, b, reason", [
    ("민규 씨", "Minkyu", "same sound"),  # honorific dropped, k/g spelled either way
    ("Lucas", "루카스", "same sound"),  # the loanword's added vowel
    ("Jisoo", "지수", "same sound"),
    ("Kim Minsu", "김민수", "same sound"),
    ("Bori", "보리", "romanisation"),
    ("Mom", "엄마", "same family word"),
    ("I", "나", "the writer"),
])
def test_one_person_in_two_languages_is_one_entity(a, b, reason):
    assert same_by_spelling(a, b) == reason


@pytest.mark.parametrize("a, b", [("Mina", "민수"), ("Gina", "지나"), ("Mom", "아빠"), ("보리", "보리차"),
                                  ("Yeom", "Yum")])
def test_different_names_stay_apart(a, b):
    assert same_by_spelling(a, b) is None


def test_a_sound_key_drops_titles_and_spelling_variants():
    assert sound_key("Dr. Yeom") == sound_key("염 원장님") == "yum"
    assert sound_key("Eunyoung") == sound_key("은영")
