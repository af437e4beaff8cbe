"""Relative dates inside a note's text, resolved against the note's own time.

"Lost my job yesterday", written on 2023-01-20, is about 19 January 2023. A 0.5B model cannot do that
arithmetic when answering "when did Jon lose his job?", so zk does it in code: construction appends
the resolved dates to the note's context (indexed and embedded), and the answer prompt shows them next to
every note, enriched or not. English and Korean phrases; anything vaguer ("a while ago", "예전에") is
left alone, because a wrong date is worse than none.
"""

from __future__ import annotations

import re
from datetime import date, timedelta
from typing import Any

_MONTHS = ["January", "February", "March", "April", "May", "June", "July", "August", "September",
           "October", "November", "December"]
_WEEKDAYS_EN = ["monday", "tuesday", "wednesday", "thursday", "friday", "saturday", "sunday"]
_WEEKDAYS_KO = ["월", "화", "수", "목", "금", "토", "일"]
_NUMBERS = {"a": 1, "an": 1, "one": 1, "two": 2, "three": 3, "four": 4, "five": 5, "six": 6, "seven": 7,
            "eight": 8, "nine": 9, "ten": 10, "a couple of": 2, "couple of": 2, "한": 1, "두": 2, "세": 3,
            "네": 4, "다섯": 5}
_N = r"(\d{1,2}|a couple of|couple of|an?|one|two|three|four|five|six|seven|eight|nine|ten)"
_N_KO = r"(\d{1,2}|한|두|세|네|다섯)"


def day_text(day: date, korean: bool = False) -> str:
    """A day the way people (and LoCoMo's answers) write it: "7 May 2023" / "2023년 5월 7일"."""
    return f"{day.year}년 {day.month}월 {day.day}일" if korean else f"{day.day} {_MONTHS[day.month - 1]} {day.year}"


def month_text(day: date, korean: bool = False) -> str:
    return f"{day.year}년 {day.month}월" if korean else f"{_MONTHS[day.month - 1]} {day.year}"


def _months_back(day: date, months: int) -> date:
    index = day.year * 12 + day.month - 1 - months
    return date(index // 12, index % 12 + 1, 1)


def _weekday_before(day: date, weekday: int) -> date:
    """The latest `weekday` strictly before `day` ("last friday" written on a Sunday: two days before)."""
    back = (day.weekday() - weekday) % 7 or 7
    return day - timedelta(days=back)


def _ago(count: int, unit: str, day: date, korean: bool) -> str:
    if unit.startswith(("day", "일")):
        return day_text(day - timedelta(days=count), korean)
    if unit.startswith(("week", "주")):
        return ("약 " if korean else "about ") + day_text(day - timedelta(weeks=count), korean)
    if unit.startswith(("month", "달", "개월")):
        return month_text(_months_back(day, count), korean)
    return f"{day.year - count}년" if korean else str(day.year - count)


# "the last year", "the next week or two": a span of time counted from the day, not the calendar's year or week
# ("over the last year" = the past twelve months; "the last week of May" names no week of the entry's)
NOT_A_SPAN = r"(?<!\bthe )"
# "지지난주", "다다음 주": the week before last / after next, not last / next week
NOT_TWICE = r"(?<![지다])"


def _english(text: str, day: date) -> list[tuple[str, str]]:
    rules: list[tuple[str, object]] = [
        (r"\bthe day before yesterday\b", lambda m: day_text(day - timedelta(days=2))),
        (r"\byesterday\b", lambda m: day_text(day - timedelta(days=1))),
        (r"\blast night\b", lambda m: day_text(day - timedelta(days=1))),
        (r"\btomorrow\b", lambda m: day_text(day + timedelta(days=1))),
        (r"\blast weekend\b", lambda m: f"the weekend before {day_text(day)}"),
        (NOT_A_SPAN + r"\blast week\b", lambda m: f"the week before {day_text(day)}"),
        (NOT_A_SPAN + r"\bnext week\b", lambda m: f"the week after {day_text(day)}"),
        (NOT_A_SPAN + r"\blast month\b", lambda m: month_text(_months_back(day, 1))),
        (r"\bthis month\b", lambda m: month_text(day)),
        (NOT_A_SPAN + r"\bnext month\b", lambda m: month_text(_months_back(day, -1))),
        (NOT_A_SPAN + r"\blast year\b", lambda m: str(day.year - 1)),
        (r"\bthis year\b", lambda m: str(day.year)),
        (NOT_A_SPAN + r"\bnext year\b", lambda m: str(day.year + 1)),
        (r"\blast (" + "|".join(_WEEKDAYS_EN) + r")\b",
         lambda m: day_text(_weekday_before(day, _WEEKDAYS_EN.index(m.group(1).lower())))),
        (r"(?<![-+\u2212])\b" + _N + r" (days?|weeks?|months?|years?) ago\b",  # "-1 days ago" is no date
         lambda m: _ago(_count(m.group(1)), m.group(2).lower(), day, False)),
    ]
    return _apply(rules, text, re.IGNORECASE)


def _korean(text: str, day: date) -> list[tuple[str, str]]:
    monday_last_week = day - timedelta(days=day.weekday() + 7)
    rules: list[tuple[str, object]] = [
        # 재작년 / 지지난달 / 다다음 주 hold 작년 / 지난달 / 다음 주: the longer word first, or none ("지지난주"
        # resolved as last week is a wrong date; no date beats a wrong one)
        (r"재재작년", lambda m: f"{day.year - 3}년"),
        (r"재작년", lambda m: f"{day.year - 2}년"),
        (r"내후년", lambda m: f"{day.year + 2}년"),
        (r"지지난\s?달", lambda m: month_text(_months_back(day, 2), True)),
        (r"다다음\s?달", lambda m: month_text(_months_back(day, -2), True)),
        (NOT_TWICE + r"지난\s?주\s?([월화수목금토일])요일",
         lambda m: day_text(monday_last_week + timedelta(days=_WEEKDAYS_KO.index(m.group(1))), True)),
        (r"(그저께|그제)", lambda m: day_text(day - timedelta(days=2), True)),
        (r"어제", lambda m: day_text(day - timedelta(days=1), True)),
        (r"모레", lambda m: day_text(day + timedelta(days=2), True)),
        (r"내일", lambda m: day_text(day + timedelta(days=1), True)),
        (NOT_TWICE + r"지난\s?주말", lambda m: f"{day_text(day, True)} 전 주말"),
        (NOT_TWICE + r"지난\s?주(?![말])", lambda m: f"{day_text(day, True)} 전 주"),
        (NOT_TWICE + r"다음\s?주(?![말])", lambda m: f"{day_text(day, True)} 다음 주"),
        (r"지난\s?달", lambda m: month_text(_months_back(day, 1), True)),
        (r"다음\s?달", lambda m: month_text(_months_back(day, -1), True)),
        (r"(작년|지난해)", lambda m: f"{day.year - 1}년"),
        (r"(내년)", lambda m: f"{day.year + 1}년"),
        (r"(?<![-+\u2212\d])" + _N_KO + r"\s?(일|주|달|개월|년)\s?전",
         lambda m: _ago(_count(m.group(1)), m.group(2), day, True)),
    ]
    return _apply(rules, text, 0)


def _count(word: str) -> int:
    word = word.lower()
    return int(word) if word.isdigit() else _NUMBERS[word]


_QUOTES = {'"': '"', "“": "”", "‘": "’", "'": "'", "「": "」", "『": "』", "《": "》", "〈": "〉", "«": "»"}
_CALENDAR = {m.lower() for m in _MONTHS} | set(_WEEKDAYS_EN)


def _quoted(text: str, start: int) -> bool:
    """Whether `start` falls inside a quotation on its line ("the book 'Yesterday Once More'")."""
    line_start = text.rfind("\n", 0, start) + 1
    before = text[line_start:start]
    for opening, closing in _QUOTES.items():
        if opening == closing:
            if opening == "'":  # an apostrophe ("Saturday's") is no quotation mark: count only word-edge ones
                marks = len(re.findall(r"(?:^|(?<=\s))'|'(?=\s|$|[.,;:!?])", before))
            else:
                marks = before.count(opening)
            if marks % 2:
                return True
        elif before.rfind(opening) > before.rfind(closing):
            return True
    return False


def _titled(text: str, span: tuple[int, int]) -> bool:
    """Whether the phrase is written as a title: every word that is not a month or weekday capitalised, and
    not because a sentence starts there ("I watched Last Week Tonight", "a song called Yesterday")."""
    words = re.findall(r"[A-Za-z]+", text[span[0]:span[1]])
    plain = [w for w in words if w.lower() not in _CALENDAR]
    if not plain or not all(w[0].isupper() for w in plain):
        return False
    before = text[:span[0]].rstrip(" \t\"“‘'(")
    return bool(before) and before[-1] not in ".!?\n:;"


def apply_rules(rules, text: str, flags: int) -> list[tuple[int, str, Any]]:
    """(offset, phrase, what the rule made of it) for each rule's matches, first rule first, never two
    resolutions for overlapping text (also date_mentions.py's). A phrase inside quotation marks or written as
    a title is no date: a book called "Yesterday", the show Last Week Tonight. A phrase that would land past
    the calendar ("tomorrow" on 9999-12-31) resolves to nothing."""
    taken: list[tuple[int, int]] = []
    found: list[tuple[int, str, Any]] = []
    for pattern, resolve in rules:
        for match in re.finditer(pattern, text, flags):
            span = match.span()
            if any(span[0] < end and start < span[1] for start, end in taken):
                continue
            if _quoted(text, span[0]) or _titled(text, span):
                taken.append(span)
                continue
            taken.append(span)
            try:
                found.append((span[0], match.group(0), resolve(match)))
            except OverflowError:
                continue
    return found


def _apply(rules, text: str, flags: int) -> list[tuple[str, str]]:
    return [(phrase, value) for _, phrase, value in sorted(apply_rules(rules, text, flags))]


def resolve_relative_dates(text: str, at: str) -> list[tuple[str, str]]:
    """(phrase as written, the date it means) for each relative date in `text`, a note written at `at`
    (ISO). An unreadable `at` resolves nothing."""
    try:
        day = date.fromisoformat(at[:10])
    except ValueError:
        return []
    out = _english(text, day)
    if re.search("[\uac00-\ud7a3]", text):
        out += _korean(text, day)
    return list(dict.fromkeys(out))


def dated_phrases(text: str, at: str) -> str:
    """"yesterday = 19 January 2023; 3일 전 = 2023년 1월 17일", or "" when the text has no relative date."""
    return "; ".join(f"{phrase} = {value}" for phrase, value in resolve_relative_dates(text, at))
