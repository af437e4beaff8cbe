"""Chats' date discipline (#36): a date in a model's answer must be one a cited turn dates. The 0.5B
model often answered "when?" with the prompt's "today" (the chat's last session); the date guard let it
pass because some turn's timestamp held that day."""

from __future__ import annotations

from zettel_amem.answering.date_guard import held_to_citations
from zettel_amem.retrieval.retrieve import Hit


def turns(memory):
    said = [("Caroline", "I went to a LGBTQ support group yesterday and it was so powerful.", "2023-05-08T13:56"),
            ("Melanie", "I ran a charity race for mental health last Saturday.", "2023-05-25T13:14"),
            ("Caroline", "Happy new year! Busy week at the centre.", "2024-01-04T10:00")]
    notes = [memory.new_note(text, at, speaker=who, kind="turn", session_id=f"s{i}", seq=0)
             for i, (who, text, at) in enumerate(said)]
    memory.add_notes(notes)
    return notes


def test_the_prompts_today_is_replaced_by_the_day_the_cited_turn_dates(memory, fake_llm):
    group, race, last = turns(memory)
    hits = [Hit(group, 0.9), Hit(race, 0.5), Hit(last, 0.4)]
    fake_llm.enqueue("answer", {"answer": "2024-01-04", "ids": [group.short_id]})
    answer = memory.ask("When did Caroline go to the LGBTQ support group?", hits=hits, today="2024-01-04")
    assert "".join(answer.pieces) == "7 May 2023" and answer.mode == "model"
    assert answer.cited() == [group.id] and "2024-01-04" in answer.reason
    # a day only an uncited turn gives (the last session's) is not the answer either
    fake_llm.enqueue("answer", {"answer": "On 4 January 2024", "ids": [race.short_id]})
    answer = memory.ask("When did Melanie run a charity race?", hits=hits, today="2024-01-04")
    assert "".join(answer.pieces) == "On 20 May 2023"  # "last Saturday" in a turn of Thursday 25 May


def test_a_day_another_given_turn_tells_stands_and_that_turn_is_cited(memory, fake_llm):
    """The 0.5B model often takes the date from the right turn and cites its neighbours."""
    group, race, last = turns(memory)
    fake_llm.enqueue("answer", {"answer": "7 May 2023", "ids": [last.short_id]})
    answer = memory.ask("When did Caroline go to the LGBTQ support group?",
                        hits=[Hit(last, 0.9), Hit(group, 0.5)], today="2024-01-04")
    assert "".join(answer.pieces) == "7 May 2023" and answer.cited() == [last.id, group.id]
    assert [q["entry_id"] for q in answer.quotes] == [last.id, group.id]  # `zk ask --json`: the sentence used
    assert answer.quotes[1]["text"] == "I went to a LGBTQ support group yesterday and it was so powerful."
    held = held_to_citations("8 May 2023", [last], "When?", korean=False, given=[last, group])
    assert held.text == "4 January 2024" and held.tellers == []  # only a turn's words tell, not its timestamp


def test_a_date_the_cited_turn_gives_stays_written_as_the_notes_show_it(memory, fake_llm):
    group, race, last = turns(memory)
    hits = [Hit(group, 0.9), Hit(race, 0.5)]
    fake_llm.enqueue("answer", {"answer": "2023-05-07", "ids": [group.short_id]})
    answer = memory.ask("When did Caroline go to the LGBTQ support group?", hits=hits, today="2024-01-04")
    assert "".join(answer.pieces) == "7 May 2023" and answer.reason == ""
    fake_llm.enqueue("answer", {"answer": "The day before 8 May 2023", "ids": [group.short_id]})
    answer = memory.ask("When did Caroline go to the LGBTQ support group?", hits=hits, today="2024-01-04")
    assert "".join(answer.pieces) == "The day before 8 May 2023"  # the turn's own day, read by the model
    fake_llm.enqueue("answer", {"answer": "8 May 2023", "ids": [group.short_id]})
    answer = memory.ask("When did Caroline go to the LGBTQ support group?", hits=hits, today="2024-01-04")
    assert "".join(answer.pieces) == "7 May 2023"  # the day it was said gives way to the day it tells
    fake_llm.enqueue("answer", {"answer": "the Saturday before", "ids": [race.short_id]})
    answer = memory.ask("When did Melanie run a charity race?", hits=hits, today="2024-01-04")
    assert "".join(answer.pieces) == "the Saturday before"  # no whole day: left as the model wrote it


def test_the_rule_alone_keeps_the_questions_dates_and_writes_korean_days(memory):
    group, _race, _last = turns(memory)
    held = held_to_citations("2023-05-07", [group], "캐롤라인은 언제 모임에 갔어?", korean=True)
    assert (held.text, held.replaced) == ("2023년 5월 7일", [])
    held = held_to_citations("1 June 2023", [group], "What happened after 1 June 2023?", korean=False)
    assert (held.text, held.replaced) == ("1 June 2023", [])
    assert held_to_citations("Tomorrow", [group], "When is the next meeting?", korean=False).text == "9 May 2023"
    held = held_to_citations("7 May 2023 and 17 May 2023", [group], "When?", korean=False)
    assert held.text == "7 May 2023 and 7 May 2023" and held.replaced == ["17 May 2023"]
    held = held_to_citations("12 March 2023", [], "When?", korean=False)
    assert (held.text, held.replaced) == ("", ["12 March 2023"])  # nothing cited: nothing dates it
