"""ZK_TODAY pins "today" for every date phrase, not only `zk ask`'s (issue 37): `dates.now()` is noon of
the pinned day, and `zk on 어제`, `--since 7d` and `zk prune --older-than` read from it."""

from __future__ import annotations

from datetime import date, datetime

import pytest

from zettel_amem.core import dates
from zettel_amem.core.errors import ZkError


@pytest.fixture
def pinned(monkeypatch):
    monkeypatch.setenv("ZK_TODAY", "2026-03-02")  # a Monday


def test_now_is_noon_of_the_pinned_day_and_the_clock_without_it(pinned, monkeypatch):
    assert dates.now() == datetime(2026, 3, 2, 12, 0) and dates.today() == date(2026, 3, 2)
    monkeypatch.delenv("ZK_TODAY")
    before = datetime.now().replace(microsecond=0)
    assert before <= dates.now() <= datetime.now() and dates.now().microsecond == 0
    monkeypatch.setenv("ZK_TODAY", "next monday")
    with pytest.raises(ZkError, match="ZK_TODAY must be a date"):
        dates.now()


@pytest.mark.parametrize("phrase, since", [
    ("yesterday", "2026-03-01"), ("어제", "2026-03-01"), ("today", "2026-03-02"), ("오늘", "2026-03-02"),
    ("7d", "2026-02-23"), ("7 days ago", "2026-02-23"), ("3일 전", "2026-02-27"), ("그저께", "2026-02-28"),
    ("last friday", "2026-02-27"), ("지난주 금요일", "2026-02-27"), ("이번주 월요일", "2026-03-02"),
    ("2 weeks ago", "2026-02-16"),
])
def test_phrases_read_from_the_pinned_day(pinned, phrase, since):
    assert dates.parse_when(phrase, "since") == f"{since}T00:00:00"
    assert dates.day_range(phrase)[0].isoformat() == since
    assert dates.parse_when(phrase) == f"{since}T12:00:00"  # --at: the pinned time of day, noon


def test_a_phrase_with_a_time_or_hours_keeps_it(pinned):
    assert dates.parse_when("yesterday 9am") == "2026-03-01T09:00:00"
    assert dates.parse_when("어제 오후 3시") == "2026-03-01T15:00:00"
    assert dates.parse_when("2 hours ago") == "2026-03-02T10:00:00"


def test_no_date_is_the_pinned_now(pinned):
    """`zk add` without --at and `zk prune --older-than` (its cutoff is `parse_when(None)` - the age)."""
    assert dates.parse_when(None) == "2026-03-02T12:00:00"
    assert dates.resolve(None)[0] == "2026-03-02T12:00:00"


@pytest.mark.parametrize("phrase", ["tomorrow", "내일", "next week"])
def test_a_phrase_past_the_last_day_a_date_can_have_says_so(monkeypatch, phrase):
    """Read from 9999-12-31, "tomorrow" is a date past the calendar, not an unreadable phrase."""
    monkeypatch.setenv("ZK_TODAY", "9999-12-31")
    with pytest.raises(ZkError, match=r"out of range \(years 1 to 9999\)"):
        dates.parse_when(phrase)
    with pytest.raises(ZkError, match="understood no date"):  # an unreadable phrase is still called that
        dates.parse_when("blah")


def test_an_explicit_now_still_wins(pinned):
    assert dates.parse_when("어제", "since") == "2026-03-01T00:00:00"
    assert dates.resolve("어제", "since", datetime(2026, 7, 10, 9, 0))[0] == "2026-07-09T00:00:00"


def test_zk_on_and_list_since_through_the_cli(zk, zk_home, pinned):
    for text, at in [("monday run", "2026-02-23T07:00"), ("sunday walk", "2026-03-01T08:00"),
                     ("old note", "2026-02-20T09:00")]:
        zk("add", text, "--at", at, check=True)
    zk("add", "written today", check=True)
    day = zk("on", "어제", "--json", check=True).json()
    assert [n["content"] for n in day] == ["sunday walk"]
    assert [n["at"] for n in zk("on", "오늘", "--json", check=True).json()] == ["2026-03-02T12:00:00"]
    listed = zk("list", "--since", "7d", "--json", check=True).json()
    assert {n["content"] for n in listed} == {"monday run", "sunday walk", "written today"}
