"""Dates in answers come from the notes (#26): find the dates a text writes, make a note's dates
absolute, and remove from an answer any date found in no given note, no note timestamp and not in
the question (a small model's "when?" answer was often today's date)."""

from __future__ import annotations

import re
from datetime import date, timedelta

from ..core.date_mentions import date_mentions
from ..core.models import Note

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
