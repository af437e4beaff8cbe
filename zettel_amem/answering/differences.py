"""How much a measured value changed between two times the question names (#36, item 4).

"모카 3월 검진이랑 7월 검진 때 몸무게 몇 kg 빠졌어?" / "How much weight did I lose between March and July?": no
passage writes the answer; two passages write the two values. Arithmetic on dates and
numbers is rules' work: for each month the question names, the best passage on the subject that tells (not
plans) an event of that month and writes a number with the unit measured, then the difference, with both
values and their days, so the reader can check it. A question this cannot read is answered as a plain one.
"""

from __future__ import annotations

import re

from ..core.text import sentences
from .evidence import Evidence
from .questions import Question
from .reading import day, event_day, korean, planned

_MONTHS = ("january february march april may june july august september october november december").split()
# What the question measures (its words) -> how a passage writes the value's unit
MEASURES = (
    (re.compile(r"kg|킬로|kilos?|몸무게|체중|\bweigh", re.I), r"kg|킬로(?!미터)|kilos?", "kg"),
    (re.compile(r"\bkm\b|킬로미터|거리|\bdistance\b|\bfar\b", re.I), r"km|킬로미터|kilomet(?:er|re)s?", "km"),
    (re.compile(r"\bcm\b|센티|\bheight\b|\btall\b", re.I), r"cm|센티(?:미터)?|centimet(?:er|re)s?", "cm"),
)
_NUMBER = r"(\d+(?:\.\d+)?)"


def asked_months(text: str) -> list[int]:
    """The months a question names, in its order: "4월", "October"."""
    found = [(m.start(), int(m.group(1))) for m in re.finditer(r"(?<!\d)(\d{1,2})\s?월", text)]
    found += [(m.start(), _MONTHS.index(m.group(1).lower()) + 1)
              for m in re.finditer(rf"\b({'|'.join(_MONTHS)})\b", text, re.I)]
    return list(dict.fromkeys(month for _, month in sorted(found) if 1 <= month <= 12))


def measured(text: str) -> tuple[str, str] | None:
    """(how a passage writes the unit, the unit's name) of what the question measures, or None."""
    return next(((unit, name) for asked, unit, name in MEASURES if asked.search(text)), None)


# Words that make a number a change or a goal, not a reading: "2kg이 늘었다", "3kg은 빼자", "lost 3 kg since May"
_NOT_A_READING = re.compile(r"보다|늘|빠[졌지]|빼|줄|more|less|lost|lose|gain|put on|goal|target|over|under", re.I)

_GOAL = re.compile(r"목표|보다|\b(goal|target|than|by)\b", re.I)  # ... or before it: "목표는 60kg", "지난달보다 2kg"


def value_in(content: str, unit: str) -> float | None:
    """The first reading a passage writes with the unit ("63.5kg!", "71.2 kilos"), not a change or a goal
    ("2kg이 늘었다", "목표는 60kg": a word of either just after or before it in its sentence)."""
    for sentence in sentences(content):
        for match in re.finditer(rf"(?<![\d.]){_NUMBER}\s?(?:{unit})(?![A-Za-z])", sentence, re.I):
            before = sentence[max(0, match.start() - 10):match.start()]
            if not _NOT_A_READING.search(sentence[match.end():match.end() + 12]) and not _GOAL.search(before):
                return float(match.group(1))
    return None


def plain_number(value: float) -> str:
    return f"{value:.2f}".rstrip("0").rstrip(".")


def answer_difference(question: Question, evidence: list[Evidence]) -> tuple[str, list[str]] | None:
    """The change between the values of the two months asked, or None when the question names no two
    months and no unit, or a month has no passage telling a value."""
    months, unit = asked_months(question.text), measured(question.text)
    if len(months) != 2 or unit is None:
        return None
    read: list[tuple[float, Evidence]] = []
    for month in months:  # evidence is best first: the best passage of the month writing a value
        told = (e for e in evidence if e.found and event_day(e.note)[5:7] == f"{month:02d}" and not planned(e.note))
        found = next(((value, e) for e in told if (value := value_in(e.note.content, unit[0])) is not None), None)
        if found is None:
            return None
        read.append(found)
    (first, a), (second, b) = read
    change = plain_number(abs(second - first))
    shown = f"{plain_number(first)} {unit[1]} ({day(a.note)}) -> {plain_number(second)} {unit[1]} ({day(b.note)})"
    text = f"{change} {unit[1]} 차이: {shown}" if korean(question) else f"{change} {unit[1]} difference: {shown}"
    return text, [a.note.id, b.note.id]
