"""Long entries cut into passages (passages.py) and the dates they write made absolute (date_mentions.py)."""

from __future__ import annotations

import pytest

from zettel_amem.core.date_mentions import date_mentions
from zettel_amem.core.passages import make_passages, split_sentences

KOREAN_PAGE = ("오늘은 아침 7시 출근. 병동이 정신없었다 환자가 세 명이나 새로 들어왔다. "
               "퇴근하고 엄마랑 통화했는데 다음 주 금요일에 올라오신다고 하셨다. 어제 밤 11시쯤 고양이 두부가 토해서 "
               "동물병원에 갔다. 의사 선생님이 체중이 4.2kg이라고 하셨다.\n\n이번 달 적금은 월 30만 원으로 올렸다.")


def test_korean_and_english_sentences_are_cut_where_they_end():
    assert split_sentences(KOREAN_PAGE) == [
        "오늘은 아침 7시 출근.", "병동이 정신없었다", "환자가 세 명이나 새로 들어왔다.",
        "퇴근하고 엄마랑 통화했는데 다음 주 금요일에 올라오신다고 하셨다.",
        "어제 밤 11시쯤 고양이 두부가 토해서 동물병원에 갔다.",
        "의사 선생님이 체중이 4.2kg이라고 하셨다.", "이번 달 적금은 월 30만 원으로 올렸다."]
    english = "Dr. Kim said the result was 3.5 mg/dL. J. R. R. Tolkien wrote it! Was it fine? Yes… mostly."
    assert split_sentences(english) == ["Dr. Kim said the result was 3.5 mg/dL.", "J. R. R. Tolkien wrote it!",
                                        "Was it fine?", "Yes… mostly."]


@pytest.mark.parametrize("text", ["하다 보니 벌써 11시가 넘었다.", "바다 보러 가자고 하셨다.", "작년보다 많이 먹었다."])
def test_a_korean_word_ending_in_da_mid_sentence_is_no_end(text):
    assert split_sentences(text) == [text]


def test_passages_keep_subjects_apart_and_join_only_tiny_sentences():
    passages = make_passages(KOREAN_PAGE + " Long day.", "2026-04-07T22:00")
    texts = [p.text for p in passages]
    assert "어제 밤 11시쯤 고양이 두부가 토해서 동물병원에 갔다." in texts  # its own passage
    assert texts[-1] == "이번 달 적금은 월 30만 원으로 올렸다. Long day."  # a tiny sentence joins its neighbour
    for passage in passages:  # offsets point into the entry
        assert (KOREAN_PAGE + " Long day.")[passage.start:passage.start + len(passage.text)] == passage.text
    cat = next(p for p in passages if "두부" in p.text)
    assert [(d.phrase, d.start, d.plan) for d in cat.dates] == [("어제", "2026-04-06", False)]
    call = next(p for p in passages if "엄마" in p.text)
    assert [(d.phrase, d.start, d.plan) for d in call.dates] == [("다음 주 금요일", "2026-04-17", True)]


def test_a_short_note_is_its_own_passage():
    assert make_passages("Knee hurts since Saturday's run.", "2026-03-29") == []
    one_sentence = "한 문장으로 된 조금 긴 메모지만 마침표가 하나뿐이라 나눌 곳이 없으면 통째로 한 구절이 되고 "
    assert make_passages(one_sentence * 2 + "끝.", "2026-03-29") == []


@pytest.mark.parametrize("phrase, at, start, end, plan", [
    ("어제 밤", "2026-04-07T23:00", "2026-04-06", "2026-04-06", False),
    ("그저께", "2026-04-07", "2026-04-05", "2026-04-05", False),
    ("지난주 금요일", "2026-04-07", "2026-04-03", "2026-04-03", False),  # 2026-04-07 is a Tuesday
    ("다음 주 금요일", "2026-04-07", "2026-04-17", "2026-04-17", True),
    ("지난 일요일", "2026-04-07", "2026-04-05", "2026-04-05", False),
    ("다음 월요일", "2026-04-07", "2026-04-13", "2026-04-13", True),
    ("이번 주 토요일", "2026-04-07", "2026-04-11", "2026-04-11", True),
    ("이번 주말", "2026-04-07", "2026-04-11", "2026-04-12", True),
    ("사흘 전", "2026-04-07", "2026-04-04", "2026-04-04", False),
    ("3주 뒤", "2026-04-07", "2026-04-28", "2026-04-28", True),
    ("지난달", "2026-04-07", "2026-03-01", "2026-03-31", False),
    ("4월 2일", "2026-04-07", "2026-04-02", "2026-04-02", False),
    ("last Saturday", "2026-04-07", "2026-04-04", "2026-04-04", False),
    ("two days ago", "2026-04-07", "2026-04-05", "2026-04-05", False),
    ("in two weeks", "2026-04-07", "2026-04-21", "2026-04-21", True),
    ("next Monday", "2026-04-07", "2026-04-13", "2026-04-13", True),
    ("the day before yesterday", "2026-04-07", "2026-04-05", "2026-04-05", False),
    ("last week", "2026-04-07", "2026-03-30", "2026-04-05", False),
    ("on the 3rd of May", "2026-04-07", "2026-05-03", "2026-05-03", True),
    ("March 30", "2026-04-07", "2026-03-30", "2026-03-30", False),
    ("on Friday", "2026-04-12", "2026-04-10", "2026-04-10", False),  # written on a Sunday
    ("Tuesday night", "2026-04-12", "2026-04-07", "2026-04-07", False),
    ("for the 22nd", "2026-04-07", "2026-04-22", "2026-04-22", True),
    ("22일에", "2026-04-07", "2026-04-22", "2026-04-22", True),
    # the longer word is not the shorter inside it: 재작년 is not 작년, 지지난주 not 지난주 (#60)
    ("재작년", "2026-04-07", "2024-01-01", "2024-12-31", False),
    ("내후년", "2026-04-07", "2028-01-01", "2028-12-31", True),
    ("지지난주", "2026-04-07", "2026-03-23", "2026-03-29", False),
    ("지지난주 금요일", "2026-04-07", "2026-03-27", "2026-03-27", False),
    ("다다음 주", "2026-04-07", "2026-04-20", "2026-04-26", True),
    ("지지난달", "2026-04-07", "2026-02-01", "2026-02-28", False),
])
def test_date_phrases_resolve_from_the_entry_time(phrase, at, start, end, plan):
    [mention] = date_mentions(f"{phrase} 일이 있었다 / it happened {phrase}"[: len(phrase) + 8], at)
    assert (mention.start, mention.end, mention.plan) == (start, end, plan)


def test_vague_or_bare_words_resolve_to_nothing():
    assert date_mentions("예전에 한 번 갔었다. A while ago I went to the market 5 times.", "2026-04-07") == []
    assert date_mentions("어제", "not a date") == []
    # a day of the month needs its particle of time; an ordinal of times or floors is no day
    # a span counted from the day is no calendar year or month (#60)
    assert date_mentions("Over the next year I save. In the last week of May it rained.", "2026-04-07") == []
    assert date_mentions("30일 동안 매일 걸었다. Third try, for the 3rd time, on the 5th floor. Down 10 in the 4th "
                         "and I scored.", "2026-04-07") == []


@pytest.mark.parametrize("text, at, start, plan", [
    # a weekday later in the week than the entry, told as past: last week's (written on a Thursday)
    ("We finally tried the climbing wall on Saturday. I fell off twice.", "2026-03-12",
     "2026-03-07", False),
    ("The plumber came on Friday.", "2026-09-15", "2026-09-11", False),
    ("토요일에 엄마랑 시장에 갔다.", "2026-11-04", "2026-10-31", False),
    # the same weekday planned: this week's, a plan
    ("I'll see her on Saturday.", "2026-03-12", "2026-03-14", True),
    ("I'm meeting Jun on Saturday. Yesterday I went to the gym.", "2026-03-12", "2026-03-14", True),
    ("토요일에 시장에 가기로 했다.", "2026-11-04", "2026-11-07", True),
    ("토요일에 시장에 갈 거다.", "2026-11-04", "2026-11-07", True),
    # arranged in the past, still to come: a plan
    ("I booked a table for us on Saturday night.", "2026-03-12", "2026-03-14", True),
    ("Mom called and said she'd come up on Saturday.", "2026-03-12", "2026-03-14", True),
    ("엄마가 토요일에 올라오신다고 했다.", "2026-11-04", "2026-11-07", True),
])
def test_a_weekday_written_alone_is_read_by_its_tense(text, at, start, plan):
    mention = date_mentions(text, at)[0]
    assert (mention.start, mention.plan) == (start, plan)


def test_what_happens_every_week_is_no_date():
    assert date_mentions("매주 토요일 오전에 테니스를 친다. 일요일마다 수영을 한다.", "2026-11-04") == []
    assert date_mentions("Every Sunday night I do the laundry; each Monday I rest.", "2026-11-04") == []
