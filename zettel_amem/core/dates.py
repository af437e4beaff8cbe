"""Dates as people write them: `--at`, `--since`, `--until` and `zk on DATE`, in English and Korean.

ISO dates and times ("2026-03-29", "2026-03-29T09:15") are read directly, so imports and scripts never
load anything. Everything else goes to `dateparser` (loaded only then: it costs ~0.07 s to import and
~0.2 s for its first parse, which `zk --help` must not pay).

dateparser 1.5 reads "yesterday 9am", "last friday", "3 days ago", "2 weeks ago", "어제", "3일 전" and
"2주 전" itself. A few Korean forms it does not read are rewritten first (`normalise_korean`), each
into something it does read:

- "그저께" / "그제" (the day before yesterday) -> "2일 전"; "모레" -> "2일 후"; "3일전" -> "3일 전";
- "지난주 금요일" / "이번주 …" / "다음주 …" (a weekday of the previous/this/next Monday-to-Sunday week,
  which is not "last friday": on a Saturday that is yesterday, "지난주 금요일" is eight days ago) -> the ISO
  date;
- times of day, which it skips silently in Korean ("어제 오후 3시" came back at the current time):
  "오전/오후 N시 M분" and "N시" -> "HH:MM"; "아침" 08:00, "점심" 12:00, "저녁" 19:00, "밤" 22:00,
  "새벽" 05:00 (English "this morning" is read by dateparser as 09:00).

A phrase that names no time of day ("어제", "last friday") means: at the current time of day for
`--at`, the start of that day for `--since`, `--until` and `zk on`. A count of months or years back
("3 months ago", "1년 전", "3달 전") is the same day that many months or years back, clamped at the month's
end (3 months before May 31 is Feb 28). A phrase that names a whole month or year and no day in it ("last
month", "지난달", "March 2026", "작년", "last year", "2025년") is that range (`When.period`): `zk on` lists
it, `--since` starts and `--until` ends before its first day, each saying how it was read; `--at` refuses
it (which day of it was meant is a guess). dateparser's PREFER_DAY_OF_MONTH "first", which gave March 1
for "March 2026", also moved "3 months ago" to the 1st, so the two are told apart here (`_named_period`).
A phrase whose time was not understood ("yesterday 25:00") is refused rather than quietly moved, and a
date whose day and month could be swapped ("03/04") is read month first and reported in one line.

Every phrase is read from `now()`, which `ZK_TODAY=YYYY-MM-DD` pins to noon of that day (`today()`), so
`zk on 어제`, `--since 7d` and `zk prune --older-than` read the same pinned day as `zk ask`.
"""

from __future__ import annotations

import re
import unicodedata
from dataclasses import dataclass
from datetime import date, datetime, time, timedelta

from .errors import ZkError

_KO_WEEKDAY = {ch: i for i, ch in enumerate("월화수목금토일")}
_KO_WEEK = {"지난": -1, "저번": -1, "이번": 0, "다음": 1}
_WEEKDAY_PHRASE = re.compile(r"(지난|저번|이번|다음)\s*주\s*([월화수목금토일])요일")
_KO_CLOCK = re.compile(r"(오전|오후|아침|저녁|밤|새벽)?\s*(\d{1,2})\s*시(?!간)(?:\s*(\d{1,2})\s*분|\s*반)?")
_KO_PART_OF_DAY = {"새벽": "05:00", "아침": "08:00", "점심": "12:00", "저녁": "19:00", "밤": "22:00"}
_KO_AGO = re.compile(r"(\d+)\s*(초|분|시간|일|주|개월|달|년)\s*(전|후)")
_TIME_HINT = re.compile(r"\d{1,2}\s*(:|시(?!간)|am\b|pm\b|a\.m\.|p\.m\.|h\b)|\bat\s+\d|"
                        r"\b(noon|midnight|morning|evening|night)\b", re.IGNORECASE)
_NUMERIC_DAY_MONTH = re.compile(r"^\s*(\d{1,2})[/.](\d{1,2})(?:[/.](\d{2,4}))?\s*$")
_ISO_LIKE = re.compile(r"^\d{4}-\d")
_SIGNED_COUNT = re.compile(r"[-+\u2212]\s*\d+(?:[.,]\d+)?\s*(?:seconds?|secs?|minutes?|mins?|hours?|hrs?|days?|"
                           r"weeks?|months?|years?|초|분|시간|일|주|개월|달|년)", re.IGNORECASE)
# "2025년": dateparser reads it as "2025 years ago" (the year 1); rewritten to "2025", which it reads.
_KO_YEAR = re.compile(r"(?<!\d)(\d{4})\s*년(?!\s*(?:전|후|뒤))")
# A count of months or years, or a word of counting back or ahead: "3 months ago", "in a year", "3달 전".
_OFFSET = re.compile(r"(?<!\d)\d{1,3}(?!\d)\s*(?:years?\b|yrs?\b|months?\b|mos?\b|년|개월|달)|"
                     r"\b(?:ago|later|hence|in\s+an?)\b|(?<![가-힣])(?:전|후|뒤)(?![가-힣])", re.IGNORECASE)
_BARE_NUMBER = re.compile(r"[-+\u2212]?\s*\d+")  # "-1" was read as 1 January, "+5" as 1 May
_COUNT_BACK = {"month": "1 month ago, 1달 전", "year": "1 year ago, 1년 전"}
_HINT = "use e.g. 2026-03-29, 2026-03-29T09:15, yesterday 9am, last friday, 3 days ago, 어제, 3일 전"


@dataclass
class When:
    """A parsed date: the moment, whether the phrase fixed a time of day, and a one-line note for the
    user when the reading was a guess (empty otherwise)."""

    value: datetime
    has_time: bool
    natural: bool  # not ISO: read by dateparser
    note: str = ""
    year: bool = False  # a bare year: only a range start/end ("--since 2026")
    period: str = ""  # "month" or "year": the phrase names that whole period (`value`: its first day)


def normalise_korean(text: str, now: datetime) -> str:
    """Rewrite the Korean forms dateparser 1.5 does not read (module docstring) into ones it does."""
    return _normalise(text, now)[0]


def _normalise(text: str, now: datetime) -> tuple[str, int]:
    """`normalise_korean`, and the days to add to what dateparser reads: 1 for "밤 12시" / "자정", the
    midnight that ends the day named ("어제 밤 12시" is today 00:00)."""
    out = text.strip()
    next_day = 0
    out = re.sub(r"그저께|그제", "2일 전", out)
    out = out.replace("모레", "2일 후")

    def weekday(match: re.Match) -> str:
        monday = now.date() - timedelta(days=now.weekday()) + timedelta(weeks=_KO_WEEK[match.group(1)])
        return (monday + timedelta(days=_KO_WEEKDAY[match.group(2)])).isoformat()

    out = _WEEKDAY_PHRASE.sub(weekday, out)

    def clock(match: re.Match) -> str:
        nonlocal next_day
        part, hour = match.group(1), int(match.group(2))
        minute = 30 if match.group(0).rstrip().endswith("반") else int(match.group(3) or 0)
        if part in ("저녁", "밤") and hour == 12 and minute < 60:  # midnight: 00:MM of the next day
            next_day, hour = 1, 0
        elif part in ("오후", "저녁", "밤") and hour < 12:
            hour += 12
        elif part in ("오전", "아침", "새벽") and hour == 12:
            hour = 0
        return f" {hour:02d}:{minute:02d} " if hour < 24 and minute < 60 else match.group(0)

    out = _KO_CLOCK.sub(clock, out)
    if "자정" in out:
        next_day, out = 1, out.replace("자정", " 00:00 ")
    for word, hhmm in _KO_PART_OF_DAY.items():
        out = out.replace(word, f" {hhmm} ")
    out = _KO_AGO.sub(lambda m: f"{m.group(1)}{m.group(2)} {m.group(3)}", out)
    out = _KO_YEAR.sub(lambda m: m.group(1), out)
    return re.sub(r"\s+", " ", out).strip(), next_day


def _iso(text: str) -> datetime | None:
    try:
        parsed = datetime.fromisoformat(text.replace("Z", "+00:00"))
    except ValueError:
        return None
    if parsed.tzinfo is not None:
        try:
            parsed = parsed.astimezone().replace(tzinfo=None)
        except (OverflowError, ValueError, OSError):  # 9999-12-31T23:59-12:00 is past the year 9999 here
            raise ZkError(f"the date '{text}' is out of range (years 1 to 9999 in local time)") from None
    return parsed


def _read(text: str, now: datetime, day_of_month: str = "current") -> tuple[datetime | None, str]:
    """dateparser's reading of `text` and its period ("day", "week", "month", "year"). `day_of_month` is
    where it puts a month or year without a day: "current" keeps now's day (clamped at the month's end),
    which is what a count back means ("3 months ago" on May 31: Feb 28)."""
    from dateparser.date import DateDataParser  # only here: ~0.3 s the first time

    parser = DateDataParser(languages=["en", "ko"], settings={
        "PREFER_DATES_FROM": "past", "RELATIVE_BASE": now, "RETURN_AS_TIMEZONE_AWARE": False,
        "PREFER_DAY_OF_MONTH": day_of_month})
    try:
        data = parser.get_date_data(text)
    except Exception:  # noqa: BLE001 - dateparser may raise on odd input (overflow, bad numbers): unreadable
        return None, ""
    found = data.date_obj
    if found is not None and found.tzinfo is not None:
        found = found.astimezone().replace(tzinfo=None)
    return found, data.period or ""


def _natural(text: str, now: datetime) -> datetime | None:
    return _read(text, now)[0]


def _named_period(text: str, now: datetime) -> tuple[str, date] | None:
    """("month" or "year", its first day) for a phrase that names a whole month or year and no day in it
    ("last month", "지난달", "March 2026", "작년", "2025"): read with the 1st and with the last day of the
    month preferred, it lands on two days. None for a phrase that names a day, or counts back to one
    ("3 months ago", "1년 전": the same day of the month, `_read`)."""
    if _OFFSET.search(text):
        return None
    first, period = _read(text, now, "first")
    last, _ = _read(text, now, "last")
    if first is None or last is None or first.date() == last.date() or period not in ("month", "year"):
        return None
    return period, first.date().replace(month=1 if period == "year" else first.month, day=1)


def parse(value: str, now: datetime | None = None) -> When:
    """Read a date as the user wrote it; ZkError with one line naming what was understood if it can't."""
    now = (now or _now()).replace(microsecond=0)
    text = value.strip()
    if not text:
        raise ZkError(f"cannot read the date '{value}' ({_HINT})")
    if any(unicodedata.category(ch) == "Cc" for ch in value):  # "yesterday\x1b[31m" was read as 14:29
        raise ZkError(f"cannot read the date {_shown(value)}: it contains control characters")
    if _BARE_NUMBER.fullmatch(text) and not (len(text) in (4, 8) and text.isascii() and text.isdigit()):  # 20260329
        raise ZkError(f"cannot read the date {_shown(value)}: a bare number is not a date ({_HINT})")
    if len(text) == 4 and text.isascii() and text.isdigit():
        return _year(text, value)
    iso = _iso(text)
    if iso is not None:
        return When(iso.replace(microsecond=0), has_time="T" in text or " " in text, natural=False)
    if _ISO_LIKE.match(text):  # meant as ISO but invalid ("2026-13-01"): never guess another reading
        raise ZkError(f"cannot read the date '{value}': not a valid ISO date or time ({_HINT})")
    if len(text) > 80:
        raise ZkError(f"cannot read the date '{text[:40]}…' (too long; {_HINT})")
    if _SIGNED_COUNT.search(text):  # dateparser drops the sign: "-1 days ago" came back as yesterday
        raise ZkError(f"cannot read the date {_shown(value)}: a count cannot be signed (write e.g. 1 day ago)")
    rewritten, next_day = _normalise(text, now)
    found = _natural(rewritten, now)
    if found is None and now.year >= 9999 and _natural(rewritten, now.replace(year=2000)) is not None:
        # read from an ordinary day it is a date: from this one ("tomorrow" on 9999-12-31) it is past the calendar
        raise ZkError(f"the date '{value}' is out of range (years 1 to 9999)")
    if found is None:
        raise ZkError(f"cannot read the date '{value}': {_understood(rewritten, now)} ({_HINT})")
    period = None if next_day else _named_period(rewritten, now)
    if period is not None:
        if _TIME_HINT.search(rewritten):
            raise ZkError(f"cannot read the time in '{value}': it names a whole {period[0]}, not a day (write a "
                          f"date with the time, e.g. {period[1].isoformat()} 09:00)")
        return When(datetime.combine(period[1], time()), has_time=False, natural=True, period=period[0])
    try:
        found += timedelta(days=next_day)
    except OverflowError:
        raise ZkError(f"the date '{value}' is out of range (years 1 to 9999)") from None
    # Whether the phrase fixed a time of day: the same phrase read from another clock time lands on
    # the same time only if it did ("yesterday 9am" does, "yesterday" and "3 days ago" do not).
    other = now.replace(hour=(now.hour + 7) % 24, minute=(now.minute + 17) % 60, second=(now.second + 11) % 60)
    moved = _natural(rewritten, other)
    if moved is not None and next_day:
        moved += timedelta(days=next_day)
    fixed = moved is not None and moved.time() == found.time() and (found.time() != time() or bool(
        _TIME_HINT.search(rewritten)))  # a weekday comes back at 00:00 from any clock: that is no time
    shift = found - now
    exact = moved is not None and moved - other == shift and shift % timedelta(days=1) != timedelta(0)
    has_time = fixed or exact  # "10시간 전", "2 hours ago": a moment, not a day
    if not has_time and _TIME_HINT.search(rewritten):
        raise ZkError(f"cannot read the time in '{value}': understood {found.date().isoformat()} "
                      f"({found:%a}) but not the time of day (write e.g. 9am, 21:30, 오후 3시)")
    note = ""
    numeric = _NUMERIC_DAY_MONTH.match(text)
    if numeric and int(numeric.group(1)) <= 12 and int(numeric.group(2)) <= 12 and numeric.group(1) != numeric.group(2):
        note = (f"'{text}' is ambiguous: read as {found.date().isoformat()} (month/day); "
                "write the ISO date if you meant day/month")
    return When(found.replace(microsecond=0), has_time=has_time, natural=True, note=note)


def _shown(value: str) -> str:
    """The user's phrase in an error line: quoted, control characters escaped, cut."""
    return repr(value[:60] + ("…" if len(value) > 60 else ""))


def _year(text: str, value: str) -> When:
    """A bare year ("2026"): its first moment, for `--since`/`--until` (the whole year from, or before it).
    `--at` and `zk on` refuse it (`resolve`): a note or a day needs a date."""
    year = int(text)
    if year < 1:
        raise ZkError(f"the date '{value}' is out of range (years 1 to 9999)")
    return When(datetime(year, 1, 1), has_time=False, natural=False, note="", year=True)


def _understood(text: str, now: datetime) -> str:
    """For an unreadable phrase: which part of it did look like a date, if any."""
    try:
        from dateparser.search import search_dates

        parts = search_dates(text, languages=["en", "ko"], settings={"RELATIVE_BASE": now,
                                                                      "PREFER_DATES_FROM": "past"})
    except Exception:  # noqa: BLE001 - only used to word the error
        parts = None
    if not parts:
        return "understood no date in it"
    piece, when = parts[0]
    return f"understood only '{piece}' ({when.date().isoformat()})"


def resolve(value: str | None, role: str = "at", now: datetime | None = None) -> tuple[str, str]:
    """(ISO time, note) for an option value. `role`: "at" keeps the current time of day for a phrase
    that names none; "since", "until" and "day" take the start of that day (an ISO date already does).
    A phrase naming a whole month or year is its first day for "since", "until" and "day" (with a note
    saying so) and refused for "at". Without `now`: `now()` (ZK_TODAY pins it)."""
    now = (now or _now()).replace(microsecond=0)
    if value is None:
        return now.isoformat(), ""
    return _bound(parse(value, now), value, role, now)


def _bound(when: When, value: str, role: str, now: datetime) -> tuple[str, str]:
    """`resolve` for a parsed date."""
    if when.year and role not in ("since", "until"):
        raise ZkError(f"'{value.strip()}' is a year, not a day: write a date (e.g. {value.strip()}-01-01), or use "
                      f"--since {value.strip()} --until {int(value) + 1} for the whole year")
    if when.period:
        label, first, last, _ = period_span(when)
        if role == "at":
            raise ZkError(f"'{value.strip()}' names a whole {when.period} ({label}), not a day: write a date "
                          f"(e.g. {first.isoformat()}) or count back ({_COUNT_BACK[when.period]})")
        reading = {"since": f"from {first.isoformat()} on", "until": f"before {first.isoformat()} (--until "
                   "is exclusive)", "day": f"{first.isoformat()} to {last.isoformat()}"}[role]
        return when.value.isoformat(), f"'{value.strip()}' read as {label}, the whole {when.period}: {reading}"
    moment = when.value
    if when.natural and not when.has_time:
        moment = datetime.combine(moment.date(), now.time() if role == "at" else time())
    return moment.isoformat(), when.note


def period_span(when: When) -> tuple[str, date, date, str]:
    """A month or year phrase's range: (label "2026-03" or "2025", first day, last day, the exclusive end
    as ISO time; the calendar's last day ends at its last microsecond)."""
    first = when.value.date()
    if when.period == "year":
        label, last = f"{first.year:04d}", first.replace(month=12, day=31)
    else:
        label = f"{first.year:04d}-{first.month:02d}"
        last = (first.replace(day=28) + timedelta(days=4)).replace(day=1) - timedelta(days=1) \
            if first < date(9999, 12, 1) else date.max
    end = (last + timedelta(days=1)).isoformat() + "T00:00:00" if last < date.max else datetime.max.isoformat()
    return label, first, last, end


def day_range(value: str, now: datetime | None = None) -> tuple[date, str, str, str, str]:
    """`zk on DATE`: (the day, its start, the next day's start, note, label). A phrase naming a whole month
    or year ("지난달", "last year") is that range: (its first day, its start, its end, note, "2025")."""
    now = (now or _now()).replace(microsecond=0)
    when = parse(value, now)
    start, note = _bound(when, value, "day", now)
    if when.period:
        label, first, _, end = period_span(when)
        return first, start, end, note, label
    day = datetime.fromisoformat(start).date()
    # The last day of the calendar ends at its last microsecond (an `--at 9999-12-31T23:59` note exists).
    end = (day + timedelta(days=1)).isoformat() + "T00:00:00" if day < date.max else datetime.max.isoformat()
    return day, day.isoformat() + "T00:00:00", end, note, ""


def parse_when(value: str | None, role: str = "at") -> str:
    """Normalise --at / --since / --until values to ISO wall-clock time (seconds precision): ISO as
    given, or a natural phrase in English or Korean ("yesterday 9am", "어제", "3일 전").
    `role` "since"/"until" takes the start of the day for a phrase that names no time."""
    return resolve(value, role)[0]


def today() -> date:
    """Today's date; the environment variable ZK_TODAY=YYYY-MM-DD pins it (benchmarks and tests ask a
    journal "as of" a fixed day, so an answer never depends on when it was run)."""
    pinned = _pinned_day()
    return pinned if pinned is not None else date.today()


PINNED_TIME = time(12)  # ZK_TODAY's time of day (`now`)


def now() -> datetime:
    """The moment every "today", "어제", "7d" and "3 days ago" is read from (seconds precision): the clock,
    or with ZK_TODAY pinned, noon of that day. Noon and not the clock's time of day, so a pinned run reads
    the same moments whenever it runs (the point of pinning), and "N hours ago" stays on the pinned day for
    N < 12. Creation stamps (`models.now_iso`) keep the real clock."""
    pinned = _pinned_day()
    if pinned is not None:
        return datetime.combine(pinned, PINNED_TIME)
    return datetime.now().replace(microsecond=0)


_now = now  # for the functions whose `now` parameter hides it


def _pinned_day() -> date | None:
    """ZK_TODAY's date, None when unset; ZkError for a value that is not an ISO date."""
    import os

    pinned = os.environ.get("ZK_TODAY", "").strip()
    if not pinned:
        return None
    try:
        return date.fromisoformat(pinned)
    except ValueError:
        raise ZkError(f"ZK_TODAY must be a date like 2026-12-01, not '{pinned}'") from None
