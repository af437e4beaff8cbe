"""Journal answers (#26) on the real bundled Qwen2.5-0.5B: notes added with their dates and processed
by the real pipeline (the model annotates), then `Memory.ask` (the path of `zk ask`), which calls no model:
the question's terms meet the other language through the embedder (term_bridge.py). Current state after
a change, "when", and "not recorded", in Korean and in English."""

from __future__ import annotations

import pytest

from tests.sample import ask_through
from tests.test_journal_answers import JOURNAL
from zettel_amem.memory import Memory

pytestmark = pytest.mark.slow
# session 26c: a trip's second day, a rehab's length in the other language (three notes, ~15 s to process)
MORE = [("2026-11-21T21:30", "오사카 둘째 날. 사토 선생님이 추천한 구로몬 시장에 갔다."),
        ("2026-03-04T16:40", "Dad's knee surgery went well. He will need six weeks of rehab."),
        ("2026-04-18T18:15", "아빠 재활 치료가 끝났다. 이제 동네 산책은 혼자 하신다.")]


@pytest.fixture(scope="module")
def journal(tmp_path_factory, embedder):
    from zettel_amem.backends.llm.llama import load_llm

    memory = Memory(tmp_path_factory.mktemp("journal-real"), llm=load_llm("qwen2.5-0.5b"), embedder=embedder)
    memory.settings.answer_journal = True
    for at, text in JOURNAL + MORE:
        memory.add(text, at=at)
    memory.process_pending()
    return memory



@pytest.mark.parametrize(("question", "value"), [("온비서는 지금 어떤 데이터베이스를 써?", "PostgreSQL"),
                                                 ("What laptop do I use for work now?", "MacBook")])
def test_current_state_after_a_change_is_the_new_value(journal, question, value):
    answer = ask_through(journal, question)
    assert value in answer.text and answer.mode == "extractive" and answer.cited()


@pytest.mark.parametrize(("question", "day"), [("아빠 무릎 수술은 언제였어?", "2026-03-04"),
                                               ("When did I adopt Bori?", "2026-07-25")])
def test_when_answers_the_date_from_the_notes(journal, question, day, monkeypatch):
    monkeypatch.setenv("ZK_TODAY", "2026-12-01")
    answer = ask_through(journal, question)
    assert answer.text.startswith(day) and "2026-12-01" not in answer.text


@pytest.mark.parametrize("question", ["내 혈액형이 뭐야?", "Which gym do I go to?"])
def test_not_recorded_is_declined(journal, question):
    answer = ask_through(journal, question)
    assert answer.mode == "declined" and answer.reason and answer.cited() == []


@pytest.mark.parametrize(("question", "value"), [("내 강아지 이름이 뭐야?", "Bori"),
                                                 ("When was Dad's knee surgery?", "2026-03-04")])
def test_a_question_finds_the_note_in_the_other_language(journal, question, value):
    """Korean question, English note and the reverse: the words meet through the embedder (term_bridge)."""
    answer = ask_through(journal, question)
    assert value in answer.text and answer.mode == "extractive"


@pytest.mark.parametrize(("question", "value"), [("오사카에는 언제 갔어?", "2026-11-20"),
                                                 ("When did I go to Osaka?", "2026-11-20"),
                                                 ("아빠 재활은 몇 주 걸린다고 했어?", "six weeks"),
                                                 ("How many weeks of rehab did Dad need?", "six weeks")])
def test_the_first_day_of_a_trip_and_the_number_asked(journal, question, value, monkeypatch):
    """"둘째 날" dates the trip's start; "몇 주"/"how many weeks" takes the note with a number of weeks."""
    monkeypatch.setenv("ZK_TODAY", "2026-12-01")
    answer = ask_through(journal, question)
    assert value in answer.text and answer.mode == "extractive"
