"""How journal answers read their evidence (#26, #36): the vocabulary every answerer shares.

A passage's day and its quote, the question's terms with their translations, the passages near the best
one, which language a passage is in, the question word fewest passages hold (what the best passage is
about), and when a passage says its event happens: a later month it plans for, or the one past day it
dates.
"""

from __future__ import annotations

import re

from ..core.date_mentions import date_mentions
from ..core.models import Note
from .evidence import Evidence
from .questions import Question

_MONTHS = ("january february march april may june july august september october november december").split()


def korean(question: Question) -> bool:
    return question.language == "Korean"


def day(note: Note) -> str:
    return note.at[:10]


def spelled(question: Question) -> list[str]:
    """The question's terms with their translations (for picking a note's sentence)."""
    return [s for t in question.terms for s in question.spellings(t)]


def on_subject(evidence: list[Evidence], share: float) -> list[Evidence]:
    """The notes whose score is within `share` of the best one's (the best included)."""
    return [e for e in evidence if evidence and e.score >= share * evidence[0].score]


def other_language(question: Question, note: Note) -> bool:
    hangul = bool(re.search("[\uac00-\ud7a3]", note.content))
    return hangul != korean(question)


def rarest_term(note: Note, evidence: list[Evidence]) -> str:
    """The note's question term that the fewest retrieved notes hold ("" if it holds none)."""
    found = next((e.found for e in evidence if e.note.id == note.id), set())
    return min(sorted(found), key=lambda t: sum(t in e.found for e in evidence)) if found else ""


def told_day(note: Note, entry_days: set[str]) -> str:
    """The one day other than the note's own among the days its entry's passages date (the story the entry
    tells, "어제 치과에 들렀다. … 스케일링만 받았다"), or "" when there is none or several."""
    earlier = entry_days - {day(note)}
    return next(iter(earlier)) if len(earlier) == 1 else ""


def event_day(note: Note) -> str:
    """The day a passage dates its event: the one past day it writes ("어제"), else the day it was written."""
    days = {m.start for m in date_mentions(note.content, note.at) if m.start == m.end and not m.plan}
    return days.pop() if len(days) == 1 else day(note)


def planned_month(note: Note) -> int:
    """The later month a note plans for ("Booked the ferry for October" in February; "10월 여행은
    가기로 했다" in April), or 0."""
    own = int(note.at[5:7]) if note.at[5:7].isdigit() else 13
    months = [_MONTHS.index(m.lower()) + 1 for m in re.findall(rf"\b(?:in|by|until)\s+({'|'.join(_MONTHS)})\b",
                                                               note.content, re.I)]
    months += [int(m) for m in re.findall(r"(?<!\d)(\d{1,2})월(?!\s*\d{1,2}\s*일)", note.content)]
    return next((m for m in months if own < m <= 12), 0)
