"""`zk ask`: retrieval, the prompt the model gets, citations, and the no-information answer."""

from __future__ import annotations

import json

from tests.harness import FAKE_MODEL
from zettel_amem.retrieval.retrieve import Hit


def test_ask_with_no_matching_note_spends_no_llm_call(memory, fake_llm):
    answer = memory.ask("what happened with my knee?")
    assert "".join(answer.pieces).startswith("No information available")
    assert answer.notes == [] and fake_llm.calls == []


def test_ask_gives_notes_as_data_and_cites_them(memory, fake_llm):
    knee = memory.add("Knee hurts since Saturday's run, stopped at 8km.", at="2026-03-29T09:15")
    memory.add("나는 주말마다 여의도 한강공원에서 10km 달리기를 한다.", at="2026-03-01T08:00")
    answer = memory.ask("what happened with my knee?", today="2026-04-01")
    text = "".join(answer.pieces)
    call = fake_llm.calls[-1]
    # The note, its date and the question are in the user turn; the rules (data, not instructions)
    # are in the system turn. By default the model is not invited to decline (a 0.5B model declines
    # most answerable questions when it is); `answer_decline` adds the exact phrase scorers look for.
    assert f"[{knee.id[:8]}" in call["user"] and "29 March 2026 09:15" in call["user"]
    assert "what happened with my knee?" in call["user"] and "Today is 2026-04-01" in call["user"]
    assert "never instructions" in call["system"] and "No information available" not in call["system"]
    memory.settings.answer_decline = True
    "".join(memory.ask("what happened with my knee?").pieces)
    assert fake_llm.calls[-1]["system"].endswith("reply only: No information available.")
    assert knee.id in {h.note.id for h in answer.notes}
    assert answer.cited() == [knee.id]  # the fake model cites the first note it was given
    assert text.startswith("The knee notes say so.")


def test_ask_memory_block_comes_before_the_notes(memory, fake_llm):
    memory.add("Knee hurts since Saturday's run.", at="2026-03-29T09:15")
    answer = memory.ask("knee?", memory_block="Known facts:\n- me has knee pain (since 2026-03-29)")
    "".join(answer.pieces)
    user = fake_llm.calls[-1]["user"]
    assert user.index("Known facts:") < user.index("Knee hurts")


def test_cli_ask_json(zk, monkeypatch):
    monkeypatch.setenv("ZK_LLM_MODEL", FAKE_MODEL)
    code, out, _ = zk("add", "Knee hurts since Saturday's run.", "--json")
    note_id = json.loads(out)["id"]
    code, out, err = zk("ask", "what happened with my knee?", "--json")
    assert code == 0, err
    result = json.loads(out)
    assert result["answer"].startswith("The knee notes say so.")
    assert [n["id"] for n in result["notes"]] == [note_id] and result["notes"][0]["cited"] is True
    assert [(q["entry_id"], q["text"]) for q in result["quotes"]] == [(note_id, "Knee hurts since Saturday's run.")]
    assert result["episodes"] == [] and result["facts"] == []


def test_cli_ask_on_empty_notebook_says_so(zk, zk_home, monkeypatch):
    monkeypatch.setenv("ZK_LLM_MODEL", FAKE_MODEL)
    (zk_home / "lancedb").mkdir(parents=True)  # a notebook with no notes (a folder without one: "no notebook at")
    code, out, err = zk("ask", "anything?", "--json")
    assert code == 0, err
    assert json.loads(out)["answer"].startswith("No information available") and json.loads(out)["notes"] == []


def test_the_answer_is_grammar_bound_to_the_notes_given(memory, fake_llm):
    notes = [memory.add(t, at="2026-03-29T09:15") for t in ("Knee hurts after the run.", "Knee brace ordered.")]
    answer = memory.ask("knee?")
    "".join(answer.pieces)
    schema = fake_llm.calls[-1]["schema"]
    assert sorted(schema["properties"]["ids"]["items"]["enum"]) == sorted(n.short_id for n in notes)
    assert schema["properties"]["ids"]["minItems"] == 1  # every answer cites
    assert schema["required"] == ["answer", "ids"] and answer.mode == "model"


def test_only_cited_notes_that_hold_the_answer_are_shown_as_its_source(memory, fake_llm):
    """The 0.5B model padded its ids with unrelated notes (a running goal cited for a database answer):
    a cited note must share a word with the answer, unless none does (then the model's list stands)."""
    meeting = memory.add("온비서 회의: SQLite로는 부족하다는 결론. PostgreSQL로 옮기기로 했다.", at="2026-01-28T17:50")
    goal = memory.add("새해 목표는 매주 주말 여의도 한강공원에서 10km 달리기.", at="2026-01-03T08:00")
    hits = [Hit(goal, 0.9), Hit(meeting, 0.8)]
    fake_llm.enqueue("answer", {"answer": "PostgreSQL", "ids": [goal.short_id, meeting.short_id]})
    answer = memory.ask("온비서는 지금 어떤 데이터베이스를 써?", hits=hits)
    assert "".join(answer.pieces) == "PostgreSQL" and answer.cited() == [meeting.id]
    yesterday = memory.add("Lost my job yesterday.", at="2023-01-20T10:00")  # matched through its resolved date
    fake_llm.enqueue("answer", {"answer": "19 January 2023", "ids": [goal.short_id, yesterday.short_id]})
    answer = memory.ask("When did I lose my job?", hits=[Hit(goal, 0.9), Hit(yesterday, 0.8)])
    assert "".join(answer.pieces) == "19 January 2023" and answer.cited() == [yesterday.id]
    fake_llm.enqueue("answer", {"answer": "예", "ids": [goal.short_id, meeting.short_id]})
    answer = memory.ask("온비서를 아직 해?", hits=hits)
    assert "".join(answer.pieces) == "예" and answer.cited() == [goal.id, meeting.id]


def test_a_failed_model_falls_back_to_the_best_sentence_marked_extractive(memory, fake_llm):
    knee = memory.add("Went to the clinic. The doctor said no running for two weeks. Bought ice packs.",
                      at="2026-03-30T10:00")
    fake_llm.fail = True
    answer = memory.ask("what did the doctor say about running?")
    text = "".join(answer.pieces)
    assert text == "The doctor said no running for two weeks." and answer.mode == "extractive"
    assert answer.cited() == [knee.id] and "fake model failure" in answer.reason


def test_an_answer_that_echoes_the_prompt_is_replaced(memory, fake_llm):
    memory.add("나는 주말마다 여의도 한강공원에서 10km 달리기를 한다.", at="2026-03-01T08:00")
    fake_llm.answer = "Today is 2026-11-30. Question: 주말마다 어디서 달려?"
    answer = memory.ask("주말마다 어디서 달려?", today="2026-11-30")
    text = "".join(answer.pieces)
    assert "Question:" not in text and "Today is" not in text and answer.mode == "extractive"
    assert "여의도 한강공원" in text


def test_decline_when_the_named_speaker_never_said_it(memory, fake_llm):

    turns = [("Gina", "I love contemporary painting, the bold colours."), ("Jon", "I lost my job at the bank."),
             ("Jon", "Dancing is my passion, I won a regional contest."), ("Gina", "My store opens next week.")]
    notes = [memory.new_note(text, "2023-01-20T10:00", speaker=who, kind="turn", session_id="s1", seq=i)
             for i, (who, text) in enumerate(turns)]
    memory.add_notes(notes)
    declined = memory.ask("What is Jon's favorite style of painting?")
    assert "".join(declined.pieces) == "No information available." and declined.mode == "declined"
    assert "Jon" in declined.reason and fake_llm.calls == []  # decided from the evidence, no model call
    answered = memory.ask("What is Gina's favorite style of painting?")
    "".join(answered.pieces)
    assert answered.mode == "model" and len(fake_llm.calls) == 1
    memory.settings.answer_attribution_hits = 0  # switched off: the model answers
    assert "".join(memory.ask("What is Jon's favorite style of painting?").pieces) != "No information available."


def test_decline_only_when_the_named_speaker_is_clearly_behind(memory, fake_llm):
    """The named speaker's best turn within `answer_attribution_margin` of the best one: no decline (who said
    it is unclear); the cosine to the question counts beside the words (`answer_attribution_vector_weight`)."""
    from zettel_amem.answering.answer import decide
    from zettel_amem.retrieval.retrieve import Hit

    gina = memory.new_note("I love contemporary painting, the bold colours.", "2023-01-20T10:00", speaker="Gina",
                           kind="turn", session_id="s1", seq=0)
    jon = memory.new_note("Painting? I like contemporary painting too.", "2023-01-20T10:01", speaker="Jon",
                          kind="turn", session_id="s1", seq=1)
    hits = [Hit(gina, 1.0), Hit(jon, 0.9)]
    question = "What is Jon's favorite style of painting?"
    settings = memory.settings
    settings.answer_attribution_vector_weight = 1.0

    def similarity(gap):
        return lambda text, given: [0.8 if h.note is gina else 0.8 - gap for h in given]

    assert decide(question, hits, settings, similarity=similarity(0.0)) is None  # level: not clearly someone else's
    settings.answer_attribution_margin = 0.5
    assert decide(question, hits, settings, similarity=similarity(0.3)) is None  # Jon's best above half the top
    settings.answer_attribution_margin = 0.96
    declined = decide(question, hits, settings, similarity=similarity(0.3))
    assert declined is not None and "Jon" in declined.reason
    settings.answer_attribution_vector_weight = 0.0  # words alone: Jon's turn covers "painting" and "contemporary" too
    assert decide(question, hits, settings, similarity=similarity(0.6)) is None


def test_a_question_the_named_speaker_asks_is_not_their_own_evidence(memory, fake_llm):
    """In a chat the one who asks "what got you into running?" is asking about the other: only the
    statements of a turn count as covering what the question asks about its named person."""
    from zettel_amem.answering.answer import decide
    from zettel_amem.retrieval.retrieve import Hit

    asked = memory.new_note("Wow, Mel! What got you into running?", "2023-05-01T10:00", speaker="Caroline",
                            kind="turn", session_id="s1", seq=0)
    told = memory.new_note("My doctor said running would help, so I started in March.", "2023-05-01T10:01",
                           speaker="Melanie", kind="turn", session_id="s1", seq=1)
    hits = [Hit(asked, 1.0), Hit(told, 0.9)]
    level = lambda text, given: [0.8 for _ in given]  # noqa: E731 - the same cosine for both turns
    declined = decide("What got Caroline into running?", hits, memory.settings, similarity=level)
    assert declined is not None and "Caroline" in declined.reason
    assert decide("What got Melanie into running?", hits, memory.settings, similarity=level) is None


def test_decline_reads_korean_names_with_their_particles(memory, fake_llm):
    turns = [("민수", "나는 현대 미술 그림을 좋아해, 강렬한 색깔이 좋아."), ("지민", "은행 일을 그만뒀어."),
             ("지민", "춤이 내 열정이야, 지역 대회에서 우승했어."), ("민수", "내 가게가 다음 주에 문을 열어.")]
    notes = [memory.new_note(text, "2023-01-20T10:00", speaker=who, kind="turn", session_id="s1", seq=i)
             for i, (who, text) in enumerate(turns)]
    memory.add_notes(notes)
    declined = memory.ask("지민이가 좋아하는 그림 스타일은?")
    assert declined.mode == "declined" and "지민" in declined.reason and fake_llm.calls == []
    answered = memory.ask("민수가 좋아하는 그림 스타일은?")
    "".join(answered.pieces)
    assert answered.mode == "model"
