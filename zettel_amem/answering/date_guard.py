"""Dates in answers come from the notes (#26): find the dates a text writes, make a note's dates
absolute, and remove from an answer any date found in no given note, no note timestamp and not in
the question (a small model's "when?" answer was often today's date)."""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from datetime import date, timedelta

from ..core.date_mentions import date_mentions
from ..core.models import Note
from ..core.relative_dates import day_text, resolve_relative_dates

_MONTHS = "january february march april may june july august september october november december".split()
_MONTH = "|".join(m[:3] + r"[a-z]*\.?" for m in _MONTHS)
_PATTERNS = [
    ("iso", re.compile(r"\b(\d{4})-(\d{1,2})-(\d{1,2})\b")),
    ("ko", re.compile(r"(?:(\d{4})\s*년\s*)?(\d{1,2})\s*월\s*(\d{1,2})\s*일")),
    ("en_md", re.compile(rf"\b({_MONTH})\s+(\d{{1,2}})(?:st|nd|rd|th)?\b(?:,?\s*(\d{{4}}))?", re.I)),
    ("en_dm", re.compile(rf"\b(\d{{1,2}})(?:st|nd|rd|th)?\s+({_MONTH})(?:,?\s*(\d{{4}}))?", re.I)),
]


def _month(name: str) -> int:
    return next(i for i, m in enumerate(_MONTHS, 1) if name.lower().startswith(m[:3]))


def written_dates(text: str, year: int) -> list[tuple[str, date]]:
    """(as written, the date) for each full date in `text`; a date without a year takes `year`."""
    out = []
    for kind, pattern in _PATTERNS:
        for match in pattern.finditer(text):
            if kind == "iso" or kind == "ko":
                y, m, d = match.group(1), match.group(2), match.group(3)
            elif kind == "en_md":
                m, d, y = str(_month(match.group(1))), match.group(2), match.group(3)
            else:
                d, m, y = match.group(1), str(_month(match.group(2))), match.group(3)
            try:
                out.append((match.group(0).strip(), date(int(y) if y else year, int(m), int(d))))
            except ValueError:
                continue
    return out


def note_dates(note: Note) -> list[tuple[str, date]]:
    """The dates a note's text means, made absolute from its timestamp: written ones ("3월 4일", the
    note's year) and relative ones ("어제" in a note of 29 August = 28 August)."""
    try:
        year = int(note.at[:4])
    except ValueError:
        return []
    found = written_dates(note.content, year)
    written = {phrase for phrase, _ in found}
    for mention in date_mentions(note.content, note.at):  # the days a passage's own words date
        if mention.start == mention.end and mention.phrase not in written:
            found.append((mention.phrase, date.fromisoformat(mention.start)))
    return found + nth_day(note)


_ORDINALS = {"둘째": 2, "셋째": 3, "넷째": 4, "다섯째": 5, "second": 2, "third": 3, "fourth": 4, "fifth": 5}
_NTH_DAY = re.compile(r"(둘째|셋째|넷째|다섯째)\s*날|\b(second|third|fourth|fifth) day\b|\bday (\d)\b", re.I)


def nth_day(note: Note) -> list[tuple[str, date]]:
    """A trip's or a stay's first day from a note of its Nth day ("오사카 둘째 날" on 21 November: it
    began on 20 November), so "when did I go?" gets the day it began."""
    try:
        stamp = date.fromisoformat(note.at[:10])
    except ValueError:
        return []
    out = []
    for match in _NTH_DAY.finditer(note.content):
        word = (match.group(1) or match.group(2) or "").lower()
        n = _ORDINALS.get(word) or int(match.group(3) or 0)
        if 1 < n <= 9:
            out.append((match.group(0), stamp - timedelta(days=n - 1)))
    return out


def grounded_days(notes: list[Note], question: str) -> set[tuple[int, int]]:
    """(month, day) of every date the notes and the question give: timestamps, written and relative."""
    days = {(d.month, d.day) for _, d in written_dates(question, 2000)}
    for note in notes:
        try:
            stamp = date.fromisoformat(note.at[:10])
            days.add((stamp.month, stamp.day))
        except ValueError:
            pass
        days |= {(d.month, d.day) for _, d in note_dates(note)}
    return days


def guard(answer: str, notes: list[Note], question: str) -> tuple[str, list[str]]:
    """The answer without the dates found in no note, timestamp or the question; and those removed."""
    known = grounded_days(notes, question)
    removed = [written for written, d in written_dates(answer, 2000) if (d.month, d.day) not in known]
    for written in removed:
        answer = answer.replace(written, "")
    return " ".join(answer.split()), removed


def told_day(note: Note) -> date | None:
    """The day a note dates what it tells: the one day its words give ("yesterday" in a turn of 8 May:
    7 May), written or relative, else the day it was written. (reading.event_day is the passage
    version: relative dates only, plans left out.)"""
    days = {d for _, d in note_dates(note)}
    if len(days) == 1:
        return days.pop()
    try:
        return date.fromisoformat(note.at[:10])
    except ValueError:
        return None


@dataclass
class HeldDates:
    """`held_to_citations`' result: the answer, the dates it replaced, and the given notes whose own words
    date a day the answer keeps (cited from now on)."""

    text: str
    replaced: list[str] = field(default_factory=list)
    tellers: list[Note] = field(default_factory=list)


def held_to_citations(answer: str, cited: list[Note], question: str, korean: bool,
                      given: list[Note] | None = None) -> HeldDates:
    """A model's answer whose every date a cited note dates (#36). A day no cited note gives (its day, a
    date it writes or resolves) stands if another `given` note's own words date it (that note is cited
    too); otherwise it is replaced by the day the first cited note dates its event, or removed when
    nothing is cited: the prompt's "today" or a neighbour's session day is not an answer. The day a turn
    was said gives way to the one day its words date ("I went yesterday"); "tomorrow" in the answer is
    read from the cited turn; a kept ISO date is written as the notes show it ("5 July 2023")."""
    year = next((int(n.at[:4]) for n in cited if n.at[:4].isdigit()), 2000)
    known = grounded_days(cited, question)
    fallback = next((d for d in map(told_day, cited) if d is not None), None)
    written_on = cited[0].at[:10] if cited else ""
    held = HeldDates(answer)
    for written, day in written_dates(answer, year):
        teller = None if (day.month, day.day) in known else teller_of(day, given or [])
        if teller is not None:
            held.tellers.append(teller)
        elif (day.month, day.day) not in known:
            held.replaced.append(written)
            held.text = swap(held.text, written, day_text(fallback, korean) if fallback else "")
            continue
        elif day.isoformat() == written_on != str(fallback) and only_a_date(answer, written, question):
            held.text = swap(held.text, written, day_text(fallback, korean))  # the day it tells, not when said
            continue
        if re.fullmatch(r"\d{4}-\d{1,2}-\d{1,2}", written):
            held.text = swap(held.text, written, day_text(day, korean))
    if cited:  # "tomorrow" in an answer is the cited turn's tomorrow; only whole days are written out
        for phrase, value in resolve_relative_dates(held.text, cited[0].at):
            if written_dates(value, year) and not value.startswith(("about", "약")):
                held.text = swap(held.text, phrase, value)
    held.text = " ".join(held.text.split())
    return held


def swap(text: str, written: str, new: str) -> str:
    """`written` replaced where it stands alone ("7 May 2023" is not touched inside "17 May 2023")."""
    return re.sub(rf"(?<![\w-]){re.escape(written)}(?![\w-])", lambda _: new, text)


def teller_of(day: date, notes: list[Note]) -> Note | None:
    """The first note whose own words (not its timestamp) date `day`."""
    return next((n for n in notes if (day.month, day.day) in {(d.month, d.day) for _, d in note_dates(n)}), None)


def only_a_date(answer: str, written: str, question: str) -> bool:
    """The answer is that date alone ("8 May 2023", "On 8 May 2023."), and the question does not name it."""
    alone = re.fullmatch(rf"(?:on\s+)?{re.escape(written)}\.?", answer.strip(), re.I)
    return bool(alone) and written not in question
