"""Person scope: a query naming someone who speaks in imported chats ranks inside their chats and the
user's own notes naming them, with those notes' own word statistics; the name is not a keyword."""

from __future__ import annotations

from pathlib import Path

from zettel_amem.core.models import Note
from zettel_amem.core.text import name_candidates
from zettel_amem.ingest.importer import import_source
from zettel_amem.memory import Memory
from zettel_amem.retrieval.retrieve import bm25_ranked

OTHER_CHATS = [
    ("Alex", "Sam", ["What book did you read this month?", "I read a book about the history of Rome.",
                     "Was the book good?", "The book was long but I read all of it."]),
    ("Robin", "Noa", ["Did you see the game?", "Yes, what a finish.", "Dinner on Friday?", "Sure, at seven."]),
    ("Kai", "Jun", ["The train was late again.", "Take the bus next time.", "I will.", "Good luck tomorrow."]),
]


def import_chat(memory: Memory, tmp_path: Path, name: str, speakers: tuple[str, str], lines: list[str]) -> None:
    text = "".join(f"{speakers[i % 2]}: {line}\n" for i, line in enumerate(lines))
    path = tmp_path / f"{name}.txt"
    path.write_text(text, encoding="utf-8")
    assert import_source(memory, path).added == len(lines)


def chats(memory: Memory, tmp_path: Path) -> None:
    """Jon's chat and three others: Jon's is an eighth of the notebook, and only Alex's talks of books."""
    import_chat(memory, tmp_path, "jon", ("Jon", "Mina"), ["Finished reading Dune last week, great book.", "Nice!",
                                                           "Now training for a half marathon.", "Good luck!"])
    for i, (first, second, lines) in enumerate(OTHER_CHATS):
        import_chat(memory, tmp_path, f"other{i}", (first, second), lines)


def first_hit(memory: Memory, query: str) -> str:
    return memory.search(query, k=3, follow_links=False, session_turns=0)[0].note.content


def test_a_question_about_someone_ranks_inside_their_chats(memory, tmp_path):
    chats(memory, tmp_path)
    question = "What book did Jon read?"
    memory.settings.search_person_scope = False
    assert first_hit(memory, question) != "Finished reading Dune last week, great book."  # Alex's book talk wins
    memory.settings.search_person_scope = True
    scope = memory.searcher.person_scope(question)
    assert scope is not None and scope.people == ["Jon"] and scope.narrows
    assert len(scope.sessions) == 1 and scope.rows == 4
    assert first_hit(memory, question) == "Finished reading Dune last week, great book."
    assert first_hit(memory, "what is jon training for") == "Now training for a half marathon."  # any case


def test_the_users_own_notes_naming_them_are_inside_the_scope(memory, tmp_path):
    chats(memory, tmp_path)
    lunch = memory.add("Lunch with Jon: he wants to run Chuncheon next spring.", "2026-03-30T13:00")
    memory.add("Chuncheon trip photos are backed up.", "2026-03-31T09:00")  # no Jon: outside
    scope = memory.searcher.person_scope("Where does Jon want to run?")
    assert scope.mentions == [lunch.id] and scope.rows == 5
    hits = memory.search("Where does Jon want to run next spring?", k=2, follow_links=False, session_turns=0)
    assert hits[0].note.id == lunch.id


def test_a_scope_holding_most_of_the_notebook_narrows_nothing(memory, tmp_path):
    import_chat(memory, tmp_path, "jon", ("Jon", "Mina"), ["Finished Dune last week.", "Nice!"])
    memory.add("Dune is my favourite book.", "2026-03-30T13:00")
    scope = memory.searcher.person_scope("What did Jon finish?")
    assert scope is not None and not scope.narrows and scope.mentions == []
    hits = memory.search("What did Jon finish?", k=3, follow_links=False, session_turns=0)
    assert "Dune is my favourite book." in [h.note.content for h in hits]  # a note outside the chat still counts


def test_no_one_is_named_no_scope(memory, tmp_path):
    chats(memory, tmp_path)
    assert memory.searcher.person_scope("What book was read this month?") is None
    assert memory.searcher.person_scope("What did Me say?") is None  # a stop word names no one


def test_a_korean_name_is_found_under_its_particle(memory, tmp_path):
    import_chat(memory, tmp_path, "jimin", ("지민", "민수"), ["요즘 토지를 다시 읽고 있어.", "좋다!"])
    for i, (first, second, lines) in enumerate(OTHER_CHATS):
        import_chat(memory, tmp_path, f"other{i}", (first, second), lines)
    scope = memory.searcher.person_scope("지민이가 요즘 읽는 책은?")
    assert scope is not None and scope.people == ["지민"] and scope.narrows
    assert first_hit(memory, "지민이가 요즘 읽는 책은?") == "요즘 토지를 다시 읽고 있어."


def test_name_candidates_cover_case_pairs_and_korean_particles():
    assert {"Jon", "jon"} <= set(name_candidates("what did jon say"))
    assert "Mi Rae" in name_candidates("When did Mi Rae move?")
    assert {"지민이", "지민"} <= set(name_candidates("지민이가 뭐래?"))
    assert "me" not in {c.lower() for c in name_candidates("tell me")}


def test_bm25_in_place_uses_the_scopes_own_statistics():
    notes = [Note(id=f"{i:032x}", content=str(i), at="2026-03-01") for i in range(4)]
    docs = [(notes[0], ["dune", "book"]), (notes[1], ["book"]), (notes[2], ["book", "rome"]), (notes[3], [])]
    ranked = bm25_ranked(docs, ["dune", "book"], 10)
    assert [n.id for n, _ in ranked] == [notes[0].id, notes[1].id, notes[2].id]  # the rare word decides
    assert ranked[0][1] > ranked[1][1] > ranked[2][1] > 0  # a longer note with the same word scores less
    assert bm25_ranked(docs, [], 10) == [] and bm25_ranked(docs, ["mars"], 10) == []


def test_zk_search_says_whose_chats_it_searched_and_everywhere_looks_at_all(zk, zk_home, tmp_path, embedder):
    memory = Memory(zk_home, embedder=embedder)
    chats(memory, tmp_path)
    code, out, _ = zk("search", "What book did Jon read?", "--no-links")
    assert code == 0 and "Searched Jon's chats (1 session(s))" in out and "--everywhere" in out
    code, out, _ = zk("search", "What book did Jon read?", "--everywhere")
    assert code == 0 and "Searched" not in out
