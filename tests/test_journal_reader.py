"""The model reads (#36 item 6, answering/reader.py): with `answer_journal_reader` on, the model is shown
the question and the best few passages and picks the one that answers, by number (grammar-bound); the
answer is that passage's own words. Scripted model, real embedder; the real model's test is in
tests/test_journal_answers_real.py."""

from __future__ import annotations

import re

import pytest

from tests.sample import add_dated, ask_through
from zettel_amem.answering.reader import passages_block, read_schema
from zettel_amem.backends.llm import LLMError

ENTRIES = [("2026-03-02T21:00", "Marco taught the altos the new canon. He wants the room kept at 20 degrees."),
           ("2026-03-09T21:00", "Marco's last rehearsal was on Saturday. The choir gave him a fountain pen."),
           ("2026-03-16T21:00", "First rehearsal without Marco since he left. We sang the canon twice, badly.")]


@pytest.fixture
def journal(memory):
    memory.settings.answer_journal = True
    add_dated(memory, ENTRIES)
    return memory


def _shown(fake_llm) -> list[str]:
    """The passages the last read call showed, in order."""
    user = [c for c in fake_llm.calls if c["task"] == "read"][-1]["user"]
    return re.findall(r"^\[\d+\] \(\S+\) (.*)$", user, re.MULTILINE)


def test_the_passage_the_model_picks_is_the_answer(journal, fake_llm):
    fake_llm.read = lambda user, count: {"passage": 1 + next(i for i, line in enumerate(
        re.findall(r"^\[\d+\].*$", user, re.MULTILINE)) if "fountain pen" in line)}
    assert "fountain pen" not in ask_through(journal, "What did we give Marco?").view.line.text  # the rules' pick
    journal.settings.answer_journal_reader = True
    answer = ask_through(journal, "What did we give Marco?")
    assert "fountain pen" in answer.view.line.text and answer.view.line.day == "2026-03-09"
    assert answer.text == answer.view.headline and "fountain pen" in answer.text
    assert answer.mode == "extractive" and answer.reason.startswith("the model fake chose passage")
    assert fake_llm.tasks() == ["read"]
    assert len(_shown(fake_llm)) == len(ENTRIES)  # at most answer_reader_passages (5)


def test_none_chosen_or_a_failed_call_keeps_the_rules_answer(journal, fake_llm):
    rules = ask_through(journal, "What did we give Marco?").text
    assert fake_llm.tasks() == []  # off by default: no model call
    journal.settings.answer_journal_reader = True
    none = ask_through(journal, "What did we give Marco?")
    assert none.text == rules and "chose none" in none.reason
    fake_llm.enqueue("read", LLMError("the server at http://127.0.0.1:9 did not answer"))
    failed = ask_through(journal, "What did we give Marco?")
    assert failed.text == rules and failed.reason.startswith("the model fake failed (the server at")


def test_now_questions_are_left_to_the_rules(journal, fake_llm):
    journal.settings.answer_journal_reader = True
    ask_through(journal, "What temperature does Marco want the room at now?")
    assert fake_llm.tasks() == []
    ask_through(journal, "When was Marco's last rehearsal?")
    assert fake_llm.tasks() == ["read"]


def test_a_count_counts_the_passages_the_model_read_as_times_it_happened(journal, fake_llm):
    rules = ask_through(journal, "How many times did we sing the canon?")
    journal.settings.answer_journal_reader = True
    lines = []
    # the rules now leave the lesson out too ("sing" meets "sang"); the count is still the model's picks
    fake_llm.read_all = lambda user, count: (lines.extend(re.findall(r"^\[\d+\].*$", user, re.MULTILINE)) or
                                             {"passages": [1 + i for i, line in enumerate(lines) if "sang" in line]})
    answer = ask_through(journal, "How many times did we sing the canon?")
    occasions = answer.view.supporting  # one line per time it happened
    assert answer.text.startswith("1 time:") and rules.text.startswith("1 time:")
    assert len(occasions) == 1 and "We sang the canon twice" in occasions[0].text, answer.view.text()
    assert "found it in 1 of the best 3 passages" in answer.reason and fake_llm.tasks() == ["read"]
    fake_llm.read_all = lambda user, count: {"passages": []}  # none: the rules' count stands
    assert ask_through(journal, "How many times did we sing the canon?").view.text() == rules.view.text()


def test_the_prompt_shows_few_clipped_passages_and_the_reply_is_one_number(journal, fake_llm):
    journal.settings.answer_journal_reader = True
    journal.settings.answer_reader_passages = 2
    ask_through(journal, "What did the choir give Marco when he left?")
    assert len(_shown(fake_llm)) == 2
    schema = [c for c in fake_llm.calls if c["task"] == "read"][-1]["schema"]
    assert schema == read_schema(2) and schema["properties"]["passage"]["enum"] == [0, 1, 2]
    long = journal.new_note("가" * 1000, "2026-03-20T21:00")
    assert len(passages_block([long])) < 270  # clipped, with its number and day
