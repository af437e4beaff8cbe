"""Counts from a journal (#26, #36): the passages that tell the subject, each occasion once.

"몇 번 갔어?" / "how many times" counts the times it happened among the passages on the subject, each day
once: an undated passage is the day its entry's one dated passage tells. A time it happened is told: a
passage whose clauses naming the subject all wish, plan, book or negate it ("I should go to the dentist
soon", "no running for two weeks", "치과 예약했다") is no occasion (grammar.happened).
"""

from __future__ import annotations

from ..core.models import Note
from ..core.passages import entry_id_of
from ..core.text import sentences
from .evidence import Evidence, best_sentence, forms, mentions
from .grammar import clauses, happened
from .questions import Question
from .reading import day, event_day, korean, other_language, spelled, told_day
from .view import Pick

COUNT_SHARE = 0.4  # a count: notes with at least this share of the best note's subject words
COUNT_SHOWN = 8  # a count quotes at most this many passages (it still counts them all)


def answer_count(question: Question, evidence: list[Evidence]) -> Pick:
    """For "how many times", the times it happened among the passages on the subject (`occasions`), their
    number the lead. The view shows them in date order."""
    top = evidence[0].words
    near = [e for e in evidence if top and e.words >= COUNT_SHARE * top and tells(question, e)]
    chosen = occasions(question, [e for e in near or evidence[:1] if took_place(question, e)])
    total = len(chosen)
    cited = [e.note.id for e in chosen[:COUNT_SHOWN]]  # best first: the view shows those that fit, by date
    return Pick(cited, lead=f"{total}번" if korean(question) else f"{total} time{'s' if total != 1 else ''}")


def tells(question: Question, item: Evidence) -> bool:
    """Whether a passage names a word of the question itself, in its words or the keywords written for it: its
    tags and context may be a neighbour's, copied there by memory evolution (the small model wrote "dentist"
    into a lunch note's tags)."""
    own = forms(f"{item.note.content} {' '.join(item.note.keywords)}")
    return any(mentions(question, term, own) for term in item.found)


def took_place(question: Question, item: Evidence) -> bool:
    """Whether a passage tells the subject as something that took place: a clause naming a word of the
    question that is no wish, plan, booking or negation (`grammar.happened`); a passage whose own words name
    none of the question (found by its keywords, or in the other language) is not judged."""
    naming = [c for s in sentences(item.note.content) for c in clauses(s)
              if any(mentions(question, t, forms(c)) for t in item.found)]
    return not naming or any(happened(c) for c in naming)


def occasions(question: Question, chosen: list[Evidence]) -> list[Evidence]:
    """For "how many times did I …": each occasion once, at its best passage; an undated passage is the
    time its entry's one dated day tells (`occasion`)."""
    days: dict[str, set[str]] = {}
    for item in chosen:
        days.setdefault(entry_id_of(item.note.id), set()).add(event_day(item.note))
    first: dict[str, Evidence] = {}
    for item in chosen:  # best first, so each occasion keeps its best passage
        first.setdefault(occasion(item.note, days[entry_id_of(item.note.id)]), item)
    return once_per_sentence(question, list(first.values()))


def once_per_sentence(question: Question, evidence: list[Evidence]) -> list[Evidence]:
    """The passages in order, a later one quoting the same sentence as an earlier one left out."""
    return list({best_sentence(e.note, spelled(question)): e for e in reversed(evidence)}.values())[::-1]


def own_tops(question: Question, evidence: list[Evidence]) -> dict[bool, float]:
    """The most of the question a passage names itself, among the passages in the question's language
    (False) and in the other (True): a passage is measured against its own language's best, since a word
    may have no translation among the notes where the names have one."""
    tops = {False: 0.0, True: 0.0}
    for item in evidence:
        other = other_language(question, item.note)
        tops[other] = max(tops[other], item.words)
    return tops


def occasion(note: Note, entry_days: set[str]) -> str:
    """The day a passage's event happened: its own past day ("어제"), or, for a passage that writes none,
    the one earlier day its entry's other passages date (the story the entry tells), else the entry's day."""
    own = event_day(note)
    return (told_day(note, entry_days) or own) if own == day(note) else own
