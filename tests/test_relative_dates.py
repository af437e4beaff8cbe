"""Relative dates in a note's text, resolved from the note's own time (English and Korean)."""

from __future__ import annotations

import pytest

from zettel_amem.core.models import Note
from zettel_amem.core.relative_dates import dated_phrases, resolve_relative_dates
from zettel_amem.retrieval.retrieve import render_for_context

AT = "2023-05-08T13:56"  # a Monday


@pytest.mark.parametrize("text, phrase, value", [
    ("I went to a support group yesterday.", "yesterday", "7 May 2023"),
    ("Ran a race the day before yesterday", "the day before yesterday", "6 May 2023"),
    ("We moved last week", "last week", "the week before 8 May 2023"),
    ("Painted it last Friday", "last Friday", "5 May 2023"),
    ("Bought it last monday", "last monday", "1 May 2023"),  # written on a Monday: the one before
    ("Started 3 days ago", "3 days ago", "5 May 2023"),
    ("Lost it two weeks ago", "two weeks ago", "about 24 April 2023"),
    ("Joined a few months back, left last month", "last month", "April 2023"),
    ("It happened a couple of years ago", "a couple of years ago", "2021"),
    ("Graduated last year", "last year", "2022"),
    ("어제 한강에서 달렸다", "어제", "2023년 5월 7일"),
    ("그저께 병원에 갔다", "그저께", "2023년 5월 6일"),
    ("지난주 금요일에 무릎을 다쳤다", "지난주 금요일", "2023년 5월 5일"),
    ("지난주에 이사했다", "지난주", "2023년 5월 8일 전 주"),
    ("3일 전에 시작했다", "3일 전", "2023년 5월 5일"),
    ("두 달 전에 그만뒀다", "두 달 전", "2023년 3월"),
    ("작년에 졸업했다", "작년", "2022년"),
    ("재작년에 졸업했다", "재작년", "2021년"),  # not 작년 inside it
    ("재재작년 여름", "재재작년", "2020년"),
    ("내후년에 이사 간다", "내후년", "2025년"),
    ("지지난달에 샀다", "지지난달", "2023년 3월"),
    ("다다음 달에 온다", "다다음 달", "2023년 7월"),
])
def test_phrases_resolve_from_the_notes_time(text, phrase, value):
    assert (phrase, value) in resolve_relative_dates(text, AT)


def test_vague_or_absent_dates_resolve_to_nothing():
    for text in ("a while ago we met", "예전에 살던 집", "I ran 10km", "last but not least", ""):
        assert resolve_relative_dates(text, AT) == []
    assert resolve_relative_dates("yesterday", "not a date") == []


def test_a_span_counted_from_the_day_and_the_week_before_last_are_not_last_week_or_next_year():
    """"over the next year" is twelve months from the day, not the calendar's next year; "지지난주" is the
    week before last: resolved as last week it would be a wrong date in the note (#60)."""
    for text in ("Over the next year I want to save more.", "It rained in the last week of May.",
                 "We met often over the last month or so.", "지지난주에 만났다", "다다음 주에 온다"):
        assert resolve_relative_dates(text, AT) == [], text
    assert resolve_relative_dates("Next year I want to save more.", AT) == [("Next year", "2024")]


def test_overlapping_phrases_resolve_once():
    assert resolve_relative_dates("the day before yesterday", AT) == [("the day before yesterday", "6 May 2023")]
    assert dated_phrases("지난주 금요일, 어제", AT) == "지난주 금요일 = 2023년 5월 5일; 어제 = 2023년 5월 7일"


def test_the_answer_prompt_shows_the_day_and_the_resolved_date():
    note = Note(id="a" * 32, content="Lost my job as a banker yesterday.", at="2023-01-20T16:04", speaker="Jon")
    line = render_for_context(note)
    assert line == "[aaaaaaaa] 20 January 2023 16:04 Jon: Lost my job as a banker yesterday. " \
                   "[yesterday = 19 January 2023]"
    note.context = "Jon lost his banking job. [yesterday = 19 January 2023]"
    assert render_for_context(note).count("19 January 2023") == 1  # construction already resolved it
    korean = Note(id="b" * 32, content="어제 무릎을 다쳤다", at="2026-03-29T09:15")
    assert render_for_context(korean).startswith("[bbbbbbbb] 2026년 3월 29일 09:15 어제")


def test_28_a_signed_count_is_no_date():
    """Issue #28 item 16: "-1 days ago" is not "1 day ago" (the sign was dropped)."""
    assert resolve_relative_dates("moved -1 days ago, then -2일 전; 112일 전 no", AT) == []
    assert dated_phrases("3 days ago and 3일 전", AT) == "3 days ago = 5 May 2023; 3일 전 = 2023년 5월 5일"
