"""Chats' date discipline on the real bundled Qwen2.5-0.5B (#36): whatever day the model writes, the answer
keeps only days a cited turn dates; the chat's last session (the prompt's "today") never stands on its own."""

from __future__ import annotations

import pytest

from zettel_amem.answering.date_guard import grounded_days, written_dates

pytestmark = pytest.mark.slow

TURNS = [("Caroline", "I went to a LGBTQ support group yesterday and it was so powerful.", "2023-05-08T13:56"),
         ("Melanie", "Wow, that's cool, Caroline! What happened that was so awesome?", "2023-05-08T13:57"),
         ("Melanie", "I ran a charity race for mental health last Saturday, it was rewarding.", "2023-05-25T13:14"),
         ("Caroline", "Happy new year, Mel! Busy week at the centre, lots of new faces.", "2024-01-04T10:00"),
         ("Melanie", "Happy new year! The kids are back at school today.", "2024-01-04T10:01")]


@pytest.fixture(scope="module")
def chat(tmp_path_factory, embedder):
    from zettel_amem.backends.llm.llama import load_llm
    from zettel_amem.memory import Memory

    memory = Memory(tmp_path_factory.mktemp("chat-dates"), llm=load_llm("qwen2.5-0.5b"), embedder=embedder)
    notes = [memory.new_note(text, at, speaker=who, kind="turn", session_id=at[:10], seq=i)
             for i, (who, text, at) in enumerate(TURNS)]
    memory.add_notes(notes)
    return memory


@pytest.mark.parametrize("question", ["When did Caroline go to the LGBTQ support group?",
                                      "When did Melanie run the charity race?"])
def test_every_date_in_a_real_answer_is_one_a_cited_turn_dates(chat, question):
    answer = chat.ask(question, today="2024-01-04")
    text = "".join(answer.pieces)
    assert answer.mode == "model" and answer.cited(), (answer.mode, answer.reason)
    cited = [h.note for h in answer.notes if h.note.id in answer.cited()]
    dated = grounded_days(cited, question)
    assert all((d.month, d.day) in dated for _, d in written_dates(text, 2023)), (text, answer.reason)
    assert [q["entry_id"] for q in answer.quotes] == answer.cited()  # `zk ask --json` names each sentence used
