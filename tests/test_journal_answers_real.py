"""Journal answers (#26) on the real bundled Qwen2.5-0.5B: notes added with their dates and processed
by the real pipeline (the model annotates), then `Memory.ask` (the path of `zk ask`), which calls no model:
the question's terms meet the other language through the embedder (term_bridge.py). Current state after
a change, "when", and "not recorded", in Korean and in English."""

from __future__ import annotations

import pytest

from tests.test_journal_answers import JOURNAL
from zettel_amem.memory import Memory

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def journal(tmp_path_factory, embedder):
    from zettel_amem.llm.llama import load_llm

    memory = Memory(tmp_path_factory.mktemp("journal-real"), llm=load_llm("qwen2.5-0.5b"), embedder=embedder)
    memory.settings.answer_journal = True
    for at, text in JOURNAL:
        memory.add(text, at=at)
    memory.process_pending()
    return memory


def ask(memory, question: str):
    answer = memory.ask(question)
    "".join(answer.pieces)
    return answer


@pytest.mark.parametrize(("question", "value"), [("온비서는 지금 어떤 데이터베이스를 써?", "PostgreSQL"),
                                                 ("What laptop do I use for work now?", "MacBook")])
def test_current_state_after_a_change_is_the_new_value(journal, question, value):
    answer = ask(journal, question)
    assert value in answer.text and answer.mode == "extractive" and answer.cited()


@pytest.mark.parametrize(("question", "day"), [("아빠 무릎 수술은 언제였어?", "2026-03-04"),
                                               ("When did I adopt Bori?", "2026-07-25")])
def test_when_answers_the_date_from_the_notes(journal, question, day, monkeypatch):
    monkeypatch.setenv("ZK_TODAY", "2026-12-01")
    answer = ask(journal, question)
    assert answer.text.startswith(day) and "2026-12-01" not in answer.text


@pytest.mark.parametrize("question", ["내 혈액형이 뭐야?", "Which gym do I go to?"])
def test_not_recorded_is_declined(journal, question):
    answer = ask(journal, question)
    assert answer.mode == "declined" and answer.reason and answer.cited() == []


@pytest.mark.parametrize(("question", "value"), [("내 강아지 이름이 뭐야?", "Bori"),
                                                 ("When was Dad's knee surgery?", "2026-03-04")])
def test_a_question_finds_the_note_in_the_other_language(journal, question, value):
    """Korean question, English note and the reverse: the words meet through the embedder (term_bridge)."""
    answer = ask(journal, question)
    assert value in answer.text and answer.mode == "extractive"
