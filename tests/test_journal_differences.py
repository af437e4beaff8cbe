"""How much a value changed between two months a question names (differences.py): two passages write the
values, none the answer; the rules pick each month's passage and do the arithmetic."""

from __future__ import annotations

from sample import add_dated, ask_through

from zettel_amem.answering import journal_answer as ja
from zettel_amem.answering.differences import answer_difference, asked_months, measured
from zettel_amem.answering.evidence import Evidence
from zettel_amem.answering.questions import analyse
from zettel_amem.answering.view import answer_view
from zettel_amem.core.models import Note


def _evidence(rows: list[tuple[str, str, str, set[str]]]) -> list[Evidence]:
    return [Evidence(Note(id=i, content=c, at=at), 0.6, 0.85, found) for i, at, c, found in rows]


ROWS = [
    ("a-p0", "2026-03-14T21:00", "동물병원 정기검진. 모카는 8.4kg. 선생님이 간식을 줄이라고 하셨다. 목표는 7.5kg.",
     {"모카", "검진"}),
    ("b-p1", "2026-07-02T21:00", "모카 여름 검진은 다음 주 화요일로 잡았다. 집에서 재보니 8kg쯤.", {"모카", "검진"}),
    ("c-p0", "2026-07-12T21:00", "Mocha's summer check-up yesterday: 7.9 kg, and the vet was pleased.",
     {"모카", "검진"}),
    ("d-p2", "2026-05-20T21:00", "모카랑 산책 3km. 비가 와서 짧게.", {"모카"}),
]


def test_the_change_between_two_months_is_computed_from_each_months_passage():
    question = analyse("모카 3월 검진이랑 7월 검진 때 몸무게 몇 kg 빠졌어?")
    assert question.kind == "change" and asked_months(question.text) == [3, 7] and measured(question.text)
    evidence = _evidence(ROWS)
    pick = ja.answer_one(question, evidence)
    view = answer_view(question, evidence, pick)
    # July: the check-up that happened (the 11th), not the plan written on the 2nd; each month's first value
    assert view.headline.startswith("0.5 kg 차이: 8.4 kg (2026-03-14) -> 7.9 kg (2026-07-12)"), view.text()
    assert pick.cited == ["a-p0", "c-p0"]
    assert {"a-p0", "c-p0"} <= {line.passage_id for line in view.supporting}, view.text()  # both values shown


def test_english_months_and_weight_words_are_read_too():
    question = analyse("How much weight did Mocha lose between the March and July check-ups?")
    text, _cited = answer_difference(question, _evidence(ROWS))
    assert text.startswith("0.5 kg difference"), text


def test_a_question_without_two_months_or_a_value_is_answered_as_a_plain_one():
    assert answer_difference(analyse("모카 몸무게 몇 kg 빠졌어?"), _evidence(ROWS)) is None
    assert answer_difference(analyse("모카 3월이랑 7월에 뭐가 빠졌어?"), _evidence(ROWS)) is None
    no_value = analyse("How much weight did Mocha lose between the March and September check-ups?")
    assert answer_difference(no_value, _evidence(ROWS)) is None
    evidence = _evidence(ROWS)
    pick = ja.answer_one(no_value, evidence)
    assert pick.cited and not pick.lead and pick.cited == ja.answer_plain(no_value, evidence).cited  # as plain
    assert answer_view(no_value, evidence, pick).kind == "quote"  # a passage quoted, no difference


def test_a_change_or_a_goal_is_no_reading():
    from zettel_amem.answering.differences import value_in

    kg = measured("몸무게")[0]
    assert value_in("지난달보다 2kg이 늘었다. 목표는 60kg. 오늘은 63.5kg.", kg) == 63.5
    assert value_in("Down to 71.2 kg this morning, I lost 3 kg since May.", kg) == 71.2
    assert value_in("The goal is 68 kg by summer.", kg) is None


def test_zk_ask_answers_a_change_between_two_months_from_page_long_entries(journal, fake_llm):
    add_dated(journal, [
        ("2026-03-14T21:00", "퇴근하고 모카를 데리고 동물병원 정기검진에 갔다. 모카는 8.4kg. 선생님이 간식을 줄이라고 "
                             "하셨다.\n\n저녁에는 언니랑 통화를 했다. 조카가 다음 달에 초등학교에 들어간다고 한다. "
                             "입학 선물로 필통을 보내기로 했다."),
        ("2026-05-20T21:00", "비가 그쳐서 모카랑 호수공원을 한 바퀴 돌았다. 3km쯤. 오는 길에 빵집에서 식빵을 샀다."),
        ("2026-07-11T21:00", "Mocha's summer check-up today: 7.9 kg, and the vet was pleased with her teeth too. "
                             "Afterwards I repotted the basil on the balcony; the old pot had cracked.")])
    answer = ask_through(journal, "모카 3월 검진이랑 7월 검진 때 몸무게 몇 kg 빠졌어?")
    assert answer.text.startswith("0.5 kg 차이: 8.4 kg (2026-03-14) -> 7.9 kg (2026-07-11)"), answer.text
    assert fake_llm.tasks().count("answer") == 0
