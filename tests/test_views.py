"""views.py through the library: `Views(memory)` lists a notebook's notes newest first (dates, tags, limit),
one day's notes oldest first within the day's bounds, the user's #tags counted, note ids for completion
and a note's neighbours; read-only, on the scripted model."""

from __future__ import annotations

import pytest

from zettel_amem.core.errors import ZkError
from zettel_amem.memory import Memory
from zettel_amem.views import Day, Views, count_tags


def _note(memory, content: str, at: str, created: str, seq: int = 0):
    note = memory.new_note(content, at)
    note.created, note.seq = created, seq
    return note


def test_a_day_is_its_notes_oldest_first_within_its_bounds(memory):
    memory.add_notes([
        _note(memory, "evening run", "2026-03-29T18:00", "2026-03-29T18:05:00"),
        _note(memory, "the night before", "2026-03-28T23:59:59", "2026-03-29T00:01:00"),
        _note(memory, "written second", "2026-03-29T08:00", "2026-03-29T10:00:00"),
        _note(memory, "written first", "2026-03-29T08:00", "2026-03-29T09:00:00"),
        _note(memory, "turn 2", "2026-03-29T12:00", "2026-03-30T09:00:00", seq=2),
        _note(memory, "turn 1", "2026-03-29T12:00", "2026-03-30T09:00:00", seq=1),
        _note(memory, "the next midnight", "2026-03-30T00:00", "2026-03-30T00:00:00"),
    ])
    views = Views(memory)
    # By the time they happened, then when they were written, then their place in a chat.
    expected = ["written first", "written second", "turn 1", "turn 2", "evening run"]
    assert [n.content for n in views.day("2026-03-29")] == expected
    day = Day.of("2026-03-29")
    assert (str(day.date), day.start, day.end) == ("2026-03-29", "2026-03-29T00:00:00", "2026-03-30T00:00:00")
    assert [n.content for n in views.day(day)] == expected
    assert [n.content for n in views.day("2026-03-30")] == ["the next midnight"]
    assert views.day("2026-03-27") == []


def test_a_day_keeps_only_the_tag_asked_for(memory):
    memory.add("swim #Sport", "2026-03-29T07:00")
    memory.add("lunch", "2026-03-29T12:00")
    memory.add("run #sport", "2026-03-29T18:00")
    memory.add("run the day after #sport", "2026-03-30T18:00")
    assert [n.content for n in Views(memory).day("2026-03-29", tag="#SPORT")] == ["swim #Sport", "run #sport"]


def test_an_unreadable_day_fails_in_one_line_before_reading(memory):
    with pytest.raises(ZkError):
        Views(memory).day("no such day at all")


def test_notes_are_newest_first_within_since_until_and_limit(memory):
    for text, at in [("january", "2026-01-15T08:00"), ("february", "2026-02-15T08:00"),
                     ("march", "2026-03-15T08:00"), ("april", "2026-04-15T08:00")]:
        memory.add(text, at)
    views = Views(memory)
    assert [n.content for n in views.notes()] == ["april", "march", "february", "january"]
    assert [n.content for n in views.notes(since="2026-02-15T08:00")] == ["april", "march", "february"]
    assert [n.content for n in views.notes(until="2026-02-15T08:00")] == ["january"]  # until is exclusive
    assert [n.content for n in views.notes(since="2026-02-01", until="2026-04-01", limit=1)] == ["march"]
    with pytest.raises(ZkError, match="at least 1"):
        views.notes(limit=0)


def test_views_see_only_their_own_notebook(zk_home, fake_llm, embedder, memory):
    memory.add("in main #shared", "2026-03-29T08:00")
    other = Memory(zk_home, llm=fake_llm, embedder=embedder, notebook="work")
    other.add("at work #shared #work", "2026-03-29T09:00")
    assert [n.content for n in Views(memory).day("2026-03-29")] == ["in main #shared"]
    assert [n.content for n in Views(other).notes()] == ["at work #shared #work"]
    assert [r["tag"] for r in Views(memory).tags()] == ["shared"]


def test_tags_are_counted_most_used_first_with_their_first_spelling(memory):
    memory.add("first run #Run", "2026-03-01T08:00")
    memory.add("second run #run #knee", "2026-03-02T08:00")
    memory.add("a swim #swim", "2026-03-05T08:00")
    memory.add("third run #RUN", "2026-03-03T08:00")
    memory.add("no tags here", "2026-03-09T08:00")
    assert Views(memory).tags() == [
        {"tag": "Run", "count": 3, "last": "2026-03-03T08:00:00"},
        {"tag": "knee", "count": 1, "last": "2026-03-02T08:00:00"},
        {"tag": "swim", "count": 1, "last": "2026-03-05T08:00:00"},
    ]


def test_count_tags_of_no_notes_is_empty():
    assert count_tags([]) == []


def test_id_completions_name_the_notebooks_notes_and_never_create_a_store(memory, tmp_path, fake_llm, embedder):
    note = memory.add("a note to complete", "2026-03-29T08:00")
    found = Views(memory).id_completions(note.id[:3])
    assert (note.id[:8], "2026-03-29 a note to complete") in found
    # Eight characters typed (any case): the whole id, to tell apart notes whose short ids are the same.
    assert Views(memory).id_completions(note.id[:8].upper()) == [(note.id, "2026-03-29 a note to complete")]
    assert Views(memory).id_completions("zz") == []  # not hex: no note id starts so
    empty = tmp_path / "no-store-yet"
    assert Views(Memory(empty, llm=fake_llm, embedder=embedder)).id_completions("") == []
    assert not (empty / "lancedb").exists()


def test_neighbours_are_the_links_then_the_backlinks(evolving):
    first = evolving.add("knee hurts after running", "2026-03-01T08:00")
    second = evolving.add("knee still hurts after the long run", "2026-03-02T08:00")
    evolving.process(first.id)
    evolving.process(second.id)  # the evolving model links the new note to its candidates
    views = Views(evolving)
    second = evolving.store.get(second.id)
    assert first.id in second.links
    assert [n.id for n in views.neighbours(second)] == [first.id]
    assert [n.id for n in views.neighbours(evolving.store.get(first.id))] == [second.id]
