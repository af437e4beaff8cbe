"""Question kinds are two tables (#37): `questions.KINDS` (name, cue), tried in order by `kind_of`, and
`journal_answer.ANSWERERS` (kind -> answerer), looked up by `answer_one`. A new kind is a row in each
and one function; these tests add a dummy kind by patching the tables only."""

from __future__ import annotations

import re

from zettel_amem.answering import journal_answer, questions
from zettel_amem.answering.evidence import Evidence
from zettel_amem.answering.journal_answer import answer_journal
from zettel_amem.answering.questions import Question, analyse, kind_of
from zettel_amem.answering.view import Pick
from zettel_amem.core.models import Note

WHERE = re.compile(r"\bwhere\b|어디서", re.I)
NOTES = [Note(id="laptop", content="Bought a ThinkPad X1 at the Yongsan electronics market.",
              at="2026-01-10T09:00:00"),
         Note(id="run", content="Ran 10km along the river in the morning.", at="2026-01-11T07:00:00")]


def close_to_all(text: str, notes: list[Note]) -> list[float]:
    """Every note close in meaning (the words decide which is best)."""
    return [0.9 for _ in notes]


def where_answerer(question: Question, evidence: list[Evidence]) -> Pick:
    """Picks the last passage (the rules' best is the first) and leads with a line of its own."""
    return Pick([evidence[-1].note.id], lead=f"dummy answer for {question.kind} from {evidence[-1].note.id}")


def test_the_shipped_kinds_are_tried_in_table_order():
    assert [name for name, _ in questions.KINDS] == ["why", "when", "count", "story", "now"]
    assert kind_of("Where did I buy the ThinkPad?") == questions.PLAIN
    assert set(journal_answer.ANSWERERS) >= {name for name, _ in questions.KINDS} | {questions.PLAIN}


def test_a_registered_kind_is_detected_and_answered_by_its_answerer(monkeypatch):
    monkeypatch.setattr(questions, "KINDS", (*questions.KINDS, ("where", WHERE)))
    monkeypatch.setitem(journal_answer.ANSWERERS, "where", where_answerer)
    assert kind_of("Where did I buy the ThinkPad?") == "where"
    assert analyse("노트북은 어디서 샀어?").kind == "where"
    reply = answer_journal("Where did I buy the ThinkPad?", NOTES, close_to_all)
    assert (reply.text, reply.cited[0], reply.mode) == ("dummy answer for where from run", "run", "extractive")
    assert reply.cited == ["run"]  # what the answer rests on, not the lines shown beside it (#59, D9)
    assert "run" in [line.passage_id for line in reply.view.supporting]  # the passage it picked is shown


def test_the_earlier_row_wins_when_two_cues_match(monkeypatch):
    both = "Why did I buy the ThinkPad where I did?"
    assert kind_of("Why do I run now?") == "why"
    monkeypatch.setattr(questions, "KINDS", (*questions.KINDS, ("where", WHERE)))
    assert kind_of(both) == "why"  # "why" comes first
    monkeypatch.setattr(questions, "KINDS", (("where", WHERE), *questions.KINDS))
    assert kind_of(both) == "where"
    monkeypatch.setattr(questions, "KINDS", tuple(reversed(questions.KINDS)))
    assert kind_of("Why do I run now?") == "now"  # the shipped order says "why"


def test_a_kind_without_an_answerer_gets_the_best_note(monkeypatch):
    monkeypatch.setattr(questions, "KINDS", (("where", WHERE), *questions.KINDS))
    reply = answer_journal("Where did I buy the ThinkPad?", NOTES, close_to_all)
    assert reply.cited[0] == "laptop" and reply.view.kind == "quote" and reply.view.line.passage_id == "laptop"
    assert reply.view.line.text.startswith("Bought a ThinkPad X1"), reply.view.text()


def test_when_asks_only_where_a_question_starts():
    assert kind_of("When did I move?") == kind_of("Where did I live, and when did I move?") == "when"
    assert kind_of("이사한 날짜는?") == kind_of("언제 이사했어?") == "when"
    assert kind_of("What month did I move?") == kind_of("Which year did we meet?") == "when"  # any time unit
    # "when he left" is the time of what is asked, not the question
    assert kind_of("What did the choir give Marco when he left?") == questions.PLAIN
    assert kind_of("Who drove me home when the car broke down?") == questions.PLAIN
