"""Journal answers (#26), session 26c: the classes of error found on the heldout half of
bench/journal_qa.py — a value beside a Latin name that a Korean note starts with ("Duolingo는 그만뒀다"),
a trip's Nth day, an event word no note writes ("adopt"), a number with the unit asked, a sentence about
someone else for "my … now", and a loanword's Hangul meeting its Latin spelling. Scripted model (it must
not be called), real embedder."""

from __future__ import annotations

from datetime import date

from tests.sample import add_dated, ask_through
from zettel_amem.answering.date_guard import guard, note_dates
from zettel_amem.answering.evidence import forms, has_term
from zettel_amem.core.models import Note


def test_an_nth_day_note_dates_the_first_day():
    note = Note(id="n", content="오사카 둘째 날. 구로몬 시장에 갔다.", at="2026-11-21T21:30:00")
    assert ("둘째 날", date(2026, 11, 20)) in note_dates(note)
    english = Note(id="e", content="Third day in Kyoto, rain all day.", at="2026-05-03T20:00:00")
    assert ("Third day", date(2026, 5, 1)) in note_dates(english)
    assert guard("2026-11-20", [note], "오사카에는 언제 갔어?")[1] == []  # grounded by the Nth day


def test_a_loanword_in_hangul_meets_its_latin_spelling_but_reading_is_not_lead():
    assert has_term("듀오링고", forms("Started learning Japanese on Duolingo."))
    assert has_term("duolingo", forms("듀오링고는 그만뒀다."))
    assert not has_term("lead", forms("Started reading a novel."))


def test_an_event_no_note_words_is_dated_by_the_first_note_naming_it(journal):
    add_dated(journal, [("2026-07-25T16:00", "유기견 보호소에서 강아지를 입양했다. 이름은 보리, 두 살 진돗개 믹스."),
                      ("2026-07-29T22:30", "Bori chewed the laces of my Hoka shoes. Lesson learned."),
                      ("2026-11-24T22:00", "오사카에서 돌아왔다. 보리는 그동안 동생 집에 맡겼다."),
                      ("2026-10-03T10:30", "Signed Bori up for puppy training classes on Sunday mornings."),
                      ("2026-11-28T08:20", "Morning run with Bori for the first time, 3 km around Seoul Forest.")])
    answer = ask_through(journal, "When did I adopt Bori?")
    assert answer.text.startswith("2026-07-25")


def test_the_nth_day_of_a_trip_answers_when_it_began(journal):
    add_dated(journal, [("2026-11-21T21:30", "오사카 둘째 날. 사토 선생님이 추천한 구로몬 시장에 갔다."),
                      ("2026-08-15T19:30", "광복절 연휴에 부산 민아네 다시 놀러 갔다.")])
    answer = ask_through(journal, "오사카에는 언제 갔어?")
    assert answer.text.startswith("2026-11-20")


def test_a_number_with_the_unit_asked_wins_over_the_best_note_without_one(journal):
    add_dated(journal, [("2026-04-18T18:15", "아빠 재활 치료가 끝났다. 이제 동네 산책은 혼자 하신다."),
                      ("2026-02-19T21:10", "아빠 무릎 수술 날짜가 3월 4일로 잡혔다. 그 주에 휴가를 내야 한다."),
                      ("2026-11-14T22:10", "본가에서 김장했다. 아빠는 이제 등산도 다니신다고 한다."),
                      ("2026-03-04T16:40", "Dad's knee surgery went well. He will need six weeks of rehab.")])
    answer = ask_through(journal, "아빠 재활은 몇 주 걸린다고 했어?")
    assert "six weeks" in answer.text
