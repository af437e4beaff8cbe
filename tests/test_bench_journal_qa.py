"""The journal QA benchmark's scorer (bench/journal_qa.py): key facts, the 240-character cut, dates
found in no note, and the question file's shape."""

import json

from bench import journal_qa as jq


def test_every_fact_must_appear_any_alternative_any_case_and_spacing():
    facts = [["PostgreSQL", "포스트그레"], ["SQLite"]]
    assert jq.is_right("sqlite until January, then Postgre SQL", facts)
    assert not jq.is_right("PostgreSQL", facts)  # one fact missing
    assert jq.is_right("2026년 3월 4일", [["3월 4일", "March 4"]])
    assert not jq.is_right("anything", [])  # a question without facts is never "right" by accident


def test_only_the_first_240_characters_count():
    padding = "x" * 250
    assert not jq.is_right(padding + " PostgreSQL", [["PostgreSQL"]])
    assert jq.is_right("PostgreSQL " + padding, [["PostgreSQL"]])


def test_dates_in_any_form_and_ungrounded_ones():
    assert jq.dates_in("2026-03-04, 3월 4일, March 4, 4 March 2026") == {(3, 4)}
    entries = [("2026-02-19T21:10:00", "아빠 무릎 수술 날짜가 3월 4일로 잡혔다.")]
    assert jq.ungrounded_dates("수술은 3월 4일", "언제?", entries) == set()
    assert jq.ungrounded_dates("On 2026-02-19", "when?", entries) == set()  # the note's own timestamp
    assert jq.ungrounded_dates("On 2026-12-01", "when?", entries) == {(12, 1)}  # today's date: in no note
    assert jq.ungrounded_dates("On December 1", "What happened on December 1?", entries) == set()
    dentist = [("2026-08-29T09:00:00", "어제 치과에서 충치 하나 치료했다.")]
    assert jq.ungrounded_dates("2026-08-28", "언제?", dentist) == set()  # "어제" made absolute
    hire = [("2026-07-28T21:30:00", "His replacement starts next Monday.")]  # a Tuesday
    assert jq.ungrounded_dates("2026-08-03", "When did he start?", hire) == set()  # as the passage resolves it
    assert jq.ungrounded_dates("2026-08-04", "When did he start?", hire) == {(8, 4)}


def test_summary_counts_declines_and_splits():
    rows = [{"category": "not_recorded", "split": "tune", "right": True, "declined": True, "mode": "declined",
             "seconds": 1.0, "ungrounded_dates": []},
            {"category": "when", "split": "heldout", "right": False, "declined": True, "mode": "declined",
             "seconds": 3.0, "ungrounded_dates": [[12, 1]]}]
    summary = jq.summarise(rows)
    assert summary["overall"] == 50.0
    assert summary["not_recorded_declined"] == 100.0 and summary["answerable_declined"] == 100.0
    assert summary["splits"] == {"tune": 100.0, "heldout": 0.0}
    assert summary["ungrounded_date_answers"] == 1


def test_question_file_has_every_category_split_in_halves():
    questions = json.loads(jq.QUESTIONS.read_text(encoding="utf-8"))
    assert len(questions) >= 80 and len({q["id"] for q in questions}) == len(questions)
    for category in jq.CATEGORIES:
        chosen = [q for q in questions if q["category"] == category]
        assert len(chosen) >= 8
        tune = sum(q["split"] == "tune" for q in chosen)
        assert abs(tune - (len(chosen) - tune)) <= 1
        assert all(q["facts"] for q in chosen) or category == "not_recorded"


def test_journal_is_read_with_dates():
    entries = jq.load_entries()
    assert len(entries) == 75 and entries[0][0] == "2026-01-03T08:10:00"
