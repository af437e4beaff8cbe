"""Journal answers (#26), the failure classes of bench/journal_qa.py fixed in session 26b: a value that
changed in a note of the other language, a name no note gives, a plan and the event it planned, and words
that meet the other language through the embedder (not the model). Scripted model (it must not be called),
real embedder."""

from __future__ import annotations

from tests.sample import add_dated, ask_through
from zettel_amem.answering.term_bridge import bridge_terms, month_bridge


def test_a_name_no_note_gives_is_not_recorded(journal):
    add_dated(journal, [("2026-05-30T15:20", "동생 생일. 같이 망원시장에서 떡볶이 먹었다."),
                      ("2026-11-24T22:00", "오사카에서 돌아왔다. 보리는 그동안 동생 집에 맡겼다."),
                      ("2026-07-25T16:00", "유기견 보호소에서 강아지를 입양했다. 이름은 보리, 두 살 진돗개 믹스.")])
    sister = ask_through(journal, "동생 이름이 뭐야?")
    assert sister.mode == "declined" and "이름" in sister.reason and sister.cited() == []  # said in Korean
    dog = ask_through(journal, "강아지 이름이 뭐야?")
    assert dog.mode == "extractive" and "보리" in dog.text


def test_a_plan_gives_way_to_the_event_of_the_month_it_planned(journal, monkeypatch):
    monkeypatch.setenv("ZK_TODAY", "2026-12-01")
    add_dated(journal, [("2026-02-08T09:00", "Signed up for the Seoul autumn 10 km race in October."),
                      ("2026-10-18T11:20", "서울 가을 10km 대회 완주! 52분 40초, 개인 최고 기록."),
                      ("2026-07-04T08:30", "First run from the new place: 8 km loop around Seoul Forest.")])
    assert ask_through(journal, "When did I run the Seoul autumn 10 km race?").text.startswith("2026-10-18")
    assert "52분 40초" in ask_through(journal, "What was my time in the Seoul autumn 10 km race?").text


def test_terms_meet_the_other_language_through_the_notes_own_words(memory):
    """The embedder pairs a question word with a word of the notes in the other language when each
    is the other's nearest; a name the journal never writes ("Tokyo") is not translated."""
    from zettel_amem.core.models import Note

    texts = ["엄마 생신 선물로 목도리를 샀다.", "아빠 재활 치료가 끝났다.", "강아지를 입양했다. 이름은 보리.",
             "오사카에서 라멘을 먹었다.", "Ran 10 km at Yeouido in 58 minutes.", "My mom called about dinner.",
             "Dad's knee surgery went well; rehab next.", "Started learning Japanese on Duolingo."]
    notes = [Note(id=f"{i:032x}", content=t, at=f"2026-0{1 + i % 9}-01T10:00:00") for i, t in enumerate(texts)]
    embed = memory.answerer.word_vectors
    bridged = bridge_terms(["mom", "rehab", "tokyo"], "What did Mom say about rehab in Tokyo?", notes, embed)
    assert bridged.get("mom", [""])[0] == "엄마" and bridged.get("rehab") == ["재활"] and "tokyo" not in bridged
    assert month_bridge("november") == ["11월"] and month_bridge("11월") == ["november"]
    assert month_bridge("nov") == [] and month_bridge("13월") == []
