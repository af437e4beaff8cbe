"""Dates written inside a passage, resolved at write time to absolute days from the entry's own time.

"어제 밤 11시쯤" in an entry of 7 April is 6 April; "다음 주 금요일 시험" in that entry is a plan for
17 April; "last Friday" written on a Tuesday is the Friday four days before. Each mention becomes a
`DateMention`: the phrase as written, the first and last day it covers (ISO; a week or a month is a
range) and whether it lies after the entry's day (a plan, not something that happened). Stored with the
passage (passages.py), so "when" answers read a date the writer gave, never the entry's timestamp alone.

Vague phrases ("a while ago", "예전에") resolve to nothing: a wrong date is worse than none. Rules only:
this is arithmetic, which a small model does badly.
"""

from __future__ import annotations

import re
from datetime import date, timedelta
from functools import lru_cache

from .models import DateMention
from .relative_dates import NOT_A_SPAN, NOT_TWICE, apply_rules

_WEEKDAYS_EN = ["monday", "tuesday", "wednesday", "thursday", "friday", "saturday", "sunday"]
_WEEKDAYS_KO = "월화수목금토일"
_NUMBERS = {"a": 1, "an": 1, "one": 1, "two": 2, "three": 3, "four": 4, "five": 5, "six": 6, "seven": 7,
            "eight": 8, "nine": 9, "ten": 10, "couple of": 2, "a couple of": 2, "few": 3, "a few": 3,
            "한": 1, "두": 2, "세": 3, "네": 4, "다섯": 5, "여섯": 6, "일곱": 7, "여덟": 8, "아홉": 9, "열": 10}
# Korean native day counts: 이틀 = two days, 사흘 = three ...
_KO_DAYS = {"하루": 1, "이틀": 2, "사흘": 3, "나흘": 4, "닷새": 5, "엿새": 6, "이레": 7, "열흘": 10, "보름": 15}
_N_EN = r"(\d{1,2}|a couple of|couple of|a few|an?|one|two|three|four|five|six|seven|eight|nine|ten)"
_N_KO = r"(\d{1,2}|한|두|세|네|다섯|여섯|일곱|여덟|아홉|열)"
_WD_EN = "|".join(_WEEKDAYS_EN)
_SHIFT_EN = {"last": -1, "this": 0, "next": 1}
_MONTHS_EN = ["january", "february", "march", "april", "may", "june", "july", "august", "september", "october",
              "november", "december"]
_MONTH_EN = (r"(" + "|".join(_MONTHS_EN) + r"|jan|feb|mar|apr|jun|jul|aug|sept|sep|oct|nov|dec)\.?(?![a-z])")


def _monday(day: date) -> date:
    return day - timedelta(days=day.weekday())


def _month(day: date, shift: int) -> tuple[date, date]:
    index = day.year * 12 + day.month - 1 + shift
    first = date(index // 12, index % 12 + 1, 1)
    following = date((index + 1) // 12, (index + 1) % 12 + 1, 1)
    return first, following - timedelta(days=1)


def _week(day: date, shift: int) -> tuple[date, date]:
    monday = _monday(day) + timedelta(weeks=shift)
    return monday, monday + timedelta(days=6)


def _weekend(day: date, shift: int) -> tuple[date, date]:
    saturday = _monday(day) + timedelta(weeks=shift, days=5)
    return saturday, saturday + timedelta(days=1)


def _count(word: str) -> int:
    word = word.lower().strip()
    return int(word) if word.isdigit() else _NUMBERS.get(word, _KO_DAYS.get(word, 1))


def _shifted(day: date, count: int, unit: str) -> tuple[date, date]:
    """`count` units after `day` (before when negative): a day, about a week's day, or a whole month."""
    unit = unit.lower()
    if unit.startswith(("day", "일", "하루")) or unit in _KO_DAYS:
        one = day + timedelta(days=count)
        return one, one
    if unit.startswith(("week", "주")):
        one = day + timedelta(weeks=count)
        return one, one
    if unit.startswith(("month", "달", "개월")):
        return _month(day, count)
    return date(day.year + count, 1, 1), date(day.year + count, 12, 31)


def _last_weekday(day: date, weekday: int) -> date:
    """The latest `weekday` strictly before `day` ("last Friday" written on a Tuesday)."""
    return day - timedelta(days=(day.weekday() - weekday) % 7 or 7)


def _next_weekday(day: date, weekday: int) -> date:
    return day + timedelta(days=(weekday - day.weekday()) % 7 or 7)


# What happens every week is no date: "every Sunday night", "매주 일요일", "일요일마다"
_HABIT_EN = rf"\b(?:every|each)\s+(?:{_WD_EN})\b(?:\s+(?:night|morning|afternoon|evening))?"
_HABIT_KO = r"매주\s?[월화수목금토일]요일(?:마다)?|(?<![가-힣])[월화수목금토일]요일마다"
# A sentence that tells what happened: an English past form, a Korean past ending (a syllable closed by ㅆ,
# not "있"); one that plans: "will", "going to", "기로", "예정", "ㄹ 거", or arranges in the past what is to come
# ("booked a table for Saturday night", "said she'd come on Friday", "토요일에 오신다고 했다"): no past.
_PAST_EN = re.compile(r"\b(?:was|were|had|did|went|came|got|made|took|gave|saw|met|said|told|left|sat|ran|ate|"
                      r"bought|paid|sold|spent|found|felt|brought|began|drove|flew|wrote|won|lost|\w{2,}(?<!e)ed)\b",
                      re.I)
_FUTURE = re.compile(r"\b(?:will|would|going to|gonna|plan(?:s|ned|ning)? to|hope to|looking forward|can't wait"
                     r"|excited|booked|scheduled|arranged|promised|agreed|decided|reserved|invited|asked|signed up"
                     r"|expect(?:s|ed)?|due)\b|'(?:ll|d)\b|\b(?:am|are|is)\s+\w+ing\b|'(?:m|re)\s+\w+ing\b"
                     r"|기로|예정|려고|겠|예약|약속|자고|[다라]고\s?(?:했|하셨|하더|그러)|[할갈볼올줄날]\s?(?:거|게|까|생각)",
                     re.I)


def tense(text: str) -> str:
    """"future", "past" or "" (no cue) of a sentence or a passage (also what answers read: a clause planned
    for later tells no time it happened)."""
    return _tense(text)


def _tense(text: str) -> str:
    """`tense`."""
    if _FUTURE.search(text):
        return "future"
    closed = [c for c in re.findall("[\uac00-\ud7a3]", text) if (ord(c) - 0xAC00) % 28 == 20 and c != "있"]
    return "past" if _PAST_EN.search(text) or closed else ""


# A weekday stated in the present as when something is ("the meeting is on Monday", "회의는 월요일이야"): a schedule
_SCHEDULED = re.compile(rf"\b(?:is|are|'s|'re)\s+(?:\w+\s+)?on\s+(?:{_WD_EN})\b"
                        r"|요일(?:이야|이다|이래|이에요|입니다)", re.I)


def _bare_weekday(day: date, weekday: int, match: re.Match[str]) -> tuple[date, date]:
    """A weekday written alone: this week's, or, when that lies ahead and its sentence (else its passage)
    tells what happened ("we finally tried the climbing wall on Saturday. I fell off twice", written on
    a Thursday), last week's; when it has passed and its sentence plans it or states it in the present as a
    schedule ("it is on Monday", written on a Tuesday), next week's."""
    this_week = _monday(day) + timedelta(days=weekday)
    text = match.string
    start = max(text.rfind(stop, 0, match.start()) for stop in ".!?\n") + 1
    ends = [i for i in (text.find(stop, match.end()) for stop in ".!?\n") if i >= 0]
    sentence = text[start:min(ends, default=len(text))]
    # the sentence's tense, else the passage's (a diary tells a story in one tense)
    if this_week > day and (_tense(sentence) or _tense(text)) == "past":
        return _one(this_week - timedelta(weeks=1))
    if this_week < day and _scheduled(sentence):
        return _one(this_week + timedelta(weeks=1))
    return _one(this_week)


def _scheduled(sentence: str) -> bool:
    """Whether a sentence plans what it dates ("will", "booked", "기로") or states it in the present as a
    schedule ("the meeting is on Monday", "회의는 월요일이야")."""
    return _tense(sentence) == "future" or bool(_SCHEDULED.search(sentence))


def _one(day: date) -> tuple[date, date]:
    return day, day


def _calendar(day: date, month: int, dom: int, year: int | None = None) -> tuple[date, date]:
    """A day written without its year ("4월 6일", "April 6") is in the entry's year."""
    try:
        one = date(year or day.year, month, dom)
    except ValueError:
        return _one(day)
    return one, one


def _month_number(word: str) -> int:
    return next(i for i, m in enumerate(_MONTHS_EN, 1) if m.startswith(word.lower()[:3]))


def _english_rules(day: date) -> list[tuple[str, object]]:
    return [
        (_HABIT_EN, lambda m: None),
        (r"\b(\d{4})-(\d{2})-(\d{2})\b", lambda m: _calendar(day, int(m.group(2)), int(m.group(3)), int(m.group(1)))),
        (rf"\b{_MONTH_EN} (\d{{1,2}})(?:st|nd|rd|th)?\b(?!:)",
         lambda m: _calendar(day, _month_number(m.group(1)), int(m.group(2)))),
        (rf"\b(\d{{1,2}})(?:st|nd|rd|th)? (?:of )?{_MONTH_EN}\b",
         lambda m: _calendar(day, _month_number(m.group(2)), int(m.group(1)))),
        (r"\bthe day before yesterday\b", lambda m: _one(day - timedelta(days=2))),
        (r"\bthe day after tomorrow\b", lambda m: _one(day + timedelta(days=2))),
        (r"\b(?:yesterday|last night)\b", lambda m: _one(day - timedelta(days=1))),
        (r"\b(?:today|tonight|this (?:morning|afternoon|evening))\b", lambda m: _one(day)),
        (r"\btomorrow\b", lambda m: _one(day + timedelta(days=1))),
        (rf"\blast ({_WD_EN})\b", lambda m: _one(_last_weekday(day, _WEEKDAYS_EN.index(m.group(1).lower())))),
        (rf"\bnext ({_WD_EN})\b",
         lambda m: _one(_monday(day) + timedelta(weeks=1, days=_WEEKDAYS_EN.index(m.group(1).lower())))),
        (rf"\bthis ({_WD_EN})\b",
         lambda m: _one(_monday(day) + timedelta(days=_WEEKDAYS_EN.index(m.group(1).lower())))),
        # a bare weekday is this week's, as Korean "금요일" is: "got home on Friday night", written on Sunday;
        # one later in the week told in the past is last week's (`_bare_weekday`)
        (rf"\bon ({_WD_EN})\b|\b({_WD_EN}) (?:night|morning|afternoon|evening)\b",
         lambda m: _bare_weekday(day, _WEEKDAYS_EN.index((m.group(1) or m.group(2)).lower()), m)),
        (r"\b(last|this|next) weekend\b", lambda m: _weekend(day, _SHIFT_EN[m.group(1).lower()])),
        (NOT_A_SPAN + r"\b(last|this|next) week\b", lambda m: _week(day, _SHIFT_EN[m.group(1).lower()])),
        (NOT_A_SPAN + r"\b(last|this|next) month\b", lambda m: _month(day, _SHIFT_EN[m.group(1).lower()])),
        (NOT_A_SPAN + r"\b(last|this|next) year\b", lambda m: _shifted(day, _SHIFT_EN[m.group(1).lower()],
                                                          "year")),
        (rf"(?<![-+\u2212])\b{_N_EN} (days?|weeks?|months?|years?) ago\b",
         lambda m: _shifted(day, -_count(m.group(1)), m.group(2))),
        (rf"\bin {_N_EN} (days?|weeks?|months?)\b", lambda m: _shifted(day, _count(m.group(1)), m.group(2))),
        (rf"\b{_N_EN} (days?|weeks?) (?:later|from now)\b", lambda m: _shifted(day, _count(m.group(1)), m.group(2))),
        # a day of the month alone is the entry's month's: "the dentist is booked for the 22nd", "paid it on the
        # 9th after payday" (not "the 3rd time", "in the 2nd half", "up 3 in the 9th and …")
        (r"\b(?:on|for|by|until|till|from|before|after|since) the (\d{1,2})(?:st|nd|rd|th)\b"
         r"(?=\s*(?:[.,;:!?)]|$)|\s+[^\sA-Za-z0-9]|\s+(?:after|before|and|or|to|at|in|when|so|but|because|until|I|we|he|she|they)\b)",
         lambda m: _calendar(day, day.month, int(m.group(1)))),
    ]


def _korean_rules(day: date) -> list[tuple[str, object]]:
    shifts = {"지난": -1, "저번": -1, "이번": 0, "다음": 1, "담": 1}
    twice = {"지지난": -2, "다다음": 2}
    return [
        (_HABIT_KO, lambda m: None),
        (r"(?<!\d)(\d{1,2})\s?월\s?(\d{1,2})\s?일", lambda m: _calendar(day, int(m.group(1)), int(m.group(2)))),
        # 재작년 / 지지난달 / 다다음 주 hold 작년 / 지난달 / 다음 주: the longer word first, or none
        (r"재재작년", lambda m: _shifted(day, -3, "year")),
        (r"재작년", lambda m: _shifted(day, -2, "year")),
        (r"내후년", lambda m: _shifted(day, 2, "year")),
        (r"지지난\s?달", lambda m: _month(day, -2)),
        (r"다다음\s?달", lambda m: _month(day, 2)),
        (NOT_TWICE + r"(지난|저번|이번|다음|담)\s?주\s?([월화수목금토일])요일",
         lambda m: _one(_monday(day) + timedelta(weeks=shifts[m.group(1)], days=_WEEKDAYS_KO.index(m.group(2))))),
        (r"(지지난|다다음)\s?주\s?([월화수목금토일])요일", lambda m: _one(
            _monday(day) + timedelta(weeks=twice[m.group(1)], days=_WEEKDAYS_KO.index(m.group(2))))),
        (r"(지지난|다다음)\s?주(?![말년])", lambda m: _week(day, twice[m.group(1)])),
        (NOT_TWICE + r"(지난|저번)\s?([월화수목금토일])요일",
         lambda m: _one(_last_weekday(day, _WEEKDAYS_KO.index(m.group(2))))),
        (NOT_TWICE + r"(다음|담)\s?([월화수목금토일])요일",
         lambda m: _one(_next_weekday(day, _WEEKDAYS_KO.index(m.group(2))))),
        (r"(이번)\s?([월화수목금토일])요일",
         lambda m: _one(_monday(day) + timedelta(days=_WEEKDAYS_KO.index(m.group(2))))),
        (r"(그저께|그제|엊그제)", lambda m: _one(day - timedelta(days=2))),
        (r"(어제|어젯밤|간밤)", lambda m: _one(day - timedelta(days=1))),
        (r"(글피)", lambda m: _one(day + timedelta(days=3))),
        (r"(모레)", lambda m: _one(day + timedelta(days=2))),
        (r"(내일)", lambda m: _one(day + timedelta(days=1))),
        (r"(오늘|오늘\s?아침|오늘\s?밤)", lambda m: _one(day)),
        (NOT_TWICE + r"(지난|저번|이번|다음|담)\s?주말", lambda m: _weekend(day, shifts[m.group(1)])),
        (NOT_TWICE + r"(지난|저번|이번|다음|담)\s?주(?![말년])", lambda m: _week(day, shifts[m.group(1)])),
        (r"(지난|저번|이번|다음|담)\s?달", lambda m: _month(day, shifts[m.group(1)])),
        (r"(작년|지난해)", lambda m: _shifted(day, -1, "year")),
        (r"(올해)", lambda m: _shifted(day, 0, "year")),
        (r"(내년)", lambda m: _shifted(day, 1, "year")),
        (r"(?<![-+\u2212\d])(하루|이틀|사흘|나흘|닷새|엿새|이레|열흘|보름)\s?(전|뒤|후)",
         lambda m: _shifted(day, _KO_DAYS[m.group(1)] * (-1 if m.group(2) == "전" else 1), "day")),
        (rf"(?<![-+\u2212\d]){_N_KO}\s?(일|주|달|개월|년)\s?(전|뒤|후)",
         lambda m: _shifted(day, _count(m.group(1)) * (-1 if m.group(3) == "전" else 1), m.group(2))),
        (r"(?<![가-힣])([월화수목금토일])요일", lambda m: _bare_weekday(day, _WEEKDAYS_KO.index(m.group(1)), m)),
        # "22일에 온대": a day of the month alone, with a particle of time ("30일 동안" is a span, not a day)
        (r"(?<![\d.])(\d{1,2})일(?=에|부터|까지|날)", lambda m: _calendar(day, day.month, int(m.group(1)))),
    ]


def date_mentions(text: str, at: str) -> list[DateMention]:
    """Every relative date phrase of `text` (English and Korean), resolved from `at` (the entry's ISO
    time), in the order written. An unreadable `at` resolves nothing."""
    return list(_date_mentions(text, at))


def forget_cached_dates() -> None:
    """Drop the cached readings: what is read after a rule changed (a test, an ablation) is read again."""
    _date_mentions.cache_clear()


@lru_cache(maxsize=16384)  # an answer reads the same passages' dates several times (the server, every command)
def _date_mentions(text: str, at: str) -> tuple[DateMention, ...]:
    try:
        day = date.fromisoformat(at[:10])
    except ValueError:
        return ()
    found = apply_rules(_english_rules(day), text, re.IGNORECASE)
    if re.search("[\uac00-\ud7a3]", text):
        found += apply_rules(_korean_rules(day), text, 0)
    out = []
    for _, phrase, resolved in sorted(found, key=lambda item: item[0]):
        if resolved is None:  # a habit ("every Sunday"): no date
            continue
        first, last = resolved
        out.append(DateMention(phrase, first.isoformat(), last.isoformat(), plan=first > day))
    return tuple(dict.fromkeys(out))
