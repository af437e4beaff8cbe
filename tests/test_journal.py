"""Journaling habits through the real CLI: the editor (`zk add` without text, `zk edit`), note templates,
natural-language dates in English and Korean (`--at`, `--since`, `--until`, `zk on`), and the user's own
#tags (`zk tags`, `--tag`). The editor is a script set as $EDITOR, so no terminal is needed."""

from __future__ import annotations

import json
import sys
from datetime import date, datetime, timedelta
from pathlib import Path

import pytest

from tests.harness import modules_after_help
from zettel_amem.core.config import ZkError
from zettel_amem.core.dates import day_range, parse, resolve
from zettel_amem.memory import Memory
from zettel_amem.storage.database import SCHEMA_VERSION
from zettel_amem.storage.store import note_to_row
from zettel_amem.views import Day, Views

EDITOR = '''\
import json, os, pathlib, sys
path = pathlib.Path(sys.argv[-1])
seen = path.read_text(encoding="utf-8")
pathlib.Path(os.environ["EDIT_SEEN"]).write_text(seen, encoding="utf-8")
pathlib.Path(os.environ["EDIT_SEEN"] + ".path").write_text(str(path), encoding="utf-8")
plan = json.loads(pathlib.Path(os.environ["EDIT_PLAN"]).read_text(encoding="utf-8"))
text = seen
for old, new in plan.get("replace", []):
    text = text.replace(old, new)
if "write" in plan:
    text = plan["write"]
path.write_text(text, encoding="utf-8")
sys.exit(plan.get("exit", 0))
'''


@pytest.fixture
def editor(tmp_path, monkeypatch):
    """$EDITOR is a script: `editor(replace=[(old, new)], write=..., exit=...)` sets what it does next;
    `editor.seen()` is the text it was opened on."""
    script = tmp_path / "editor.py"
    script.write_text(EDITOR, encoding="utf-8")
    plan, seen = tmp_path / "plan.json", tmp_path / "seen.txt"
    monkeypatch.delenv("VISUAL", raising=False)
    monkeypatch.setenv("EDITOR", f"{sys.executable} {script}")
    monkeypatch.setenv("EDIT_PLAN", str(plan))
    monkeypatch.setenv("EDIT_SEEN", str(seen))

    def set_plan(**what) -> None:
        plan.write_text(json.dumps(what, ensure_ascii=False), encoding="utf-8")

    set_plan.seen = lambda: seen.read_text(encoding="utf-8")
    set_plan.file = lambda: Path((tmp_path / "seen.txt.path").read_text(encoding="utf-8"))
    return set_plan


def notes(zk_home) -> list:
    return Memory(zk_home).store.notes()


# -- the editor ---------------------------------------------------------------------------------------
def test_add_opens_the_daily_template_and_saves_what_was_written(zk, zk_home, editor):
    editor(replace=[("## 오늘 한 일\n", "## 오늘 한 일\n한강에서 10km 달렸다 #달리기 #Running\n")])
    code, out, err = zk("add", "--template", "daily", "--at", "2026-03-28T21:00", "--json")
    assert code == 0, err
    assert editor.seen().startswith("# 2026-03-28 (토요일)\n") and "## 감사한 일" in editor.seen()
    added = json.loads(out)
    [note] = notes(zk_home)
    assert note.id == added["id"] and note.at == "2026-03-28T21:00:00"
    assert "한강에서 10km 달렸다 #달리기 #Running" in note.content and note.content.startswith("# 2026-03-28")
    assert note.user_tags == ["달리기", "Running"] == added["user_tags"]
    assert not editor.file().exists()  # the file goes once the note is stored


def test_english_template_and_weekday(zk, zk_home, editor):
    editor(replace=[("## Grateful for\n", "## Grateful for\nSunny walk with Mina.\n")])
    code, _, err = zk("add", "-t", "daily-en", "--at", "2026-03-29T08:00")
    assert code == 0, err
    assert editor.seen().startswith("# 2026-03-29 (Sunday)")
    assert "Sunny walk with Mina." in notes(zk_home)[0].content


def test_add_without_text_at_a_terminal_opens_the_editor(zk, zk_home, editor, monkeypatch):
    class Terminal:
        def isatty(self) -> bool:
            return True

    editor(write="터미널에서 쓴 메모 #일기\n")
    monkeypatch.setattr(sys, "stdin", Terminal())
    code, _, err = zk("add")
    assert code == 0, err
    assert editor.seen() == ""
    assert [(n.content, n.user_tags) for n in notes(zk_home)] == [("터미널에서 쓴 메모 #일기", ["일기"])]


def test_no_text_and_no_terminal_is_one_line(zk, zk_home):
    code, _, err = zk("add")
    assert code == 1 and len(err.strip().splitlines()) == 1 and "--edit" in err


@pytest.mark.parametrize("plan", [{}, {"write": ""}, {"write": "  \n\n"}])
def test_unchanged_template_or_empty_file_adds_nothing(zk, zk_home, editor, plan):
    editor(**plan)
    code, out, err = zk("add", "--template", "daily", "--json")
    assert code == 0 and json.loads(out)["id"] is None
    code, _, err = zk("add", "--edit")
    assert code == 0 and "nothing added" in err
    assert not (zk_home / "meta.json").exists() or notes(zk_home) == []


def test_missing_editor_and_failing_editor_are_one_line_and_keep_the_text(zk, zk_home, editor, monkeypatch,
                                                                        tmp_path):
    monkeypatch.setenv("EDITOR", str(tmp_path / "no-such-editor"))
    code, _, err = zk("add", "--edit")
    assert code == 1 and len(err.strip().splitlines()) == 1 and "not found" in err and "Traceback" not in err

    monkeypatch.setenv("EDITOR", "")
    monkeypatch.setenv("PATH", str(tmp_path / "empty-bin"))  # no nano, no vi
    code, _, err = zk("add", "--edit")
    assert code == 1 and len(err.strip().splitlines()) == 1 and "no editor found" in err

    monkeypatch.setenv("PATH", "/usr/bin:/bin")
    script = tmp_path / "editor.py"
    monkeypatch.setenv("EDITOR", f"{sys.executable} {script}")
    editor(write="half a thought that must not vanish", exit=3)
    code, _, err = zk("add", "--edit")
    assert code == 1 and len(err.strip().splitlines()) == 1 and "exited with status 3" in err
    kept = Path(err.split("your text is in ")[1].rstrip(")\n"))
    assert kept.read_text(encoding="utf-8") == "half a thought that must not vanish"
    kept.unlink()

    editor(write="bell \x07 in the text")  # refused by validation: the file stays, named in the error
    code, _, err = zk("add", "--edit")
    assert code == 1 and "control characters" in err and f"your text is in {editor.file()}" in err
    editor.file().unlink()
    assert not (zk_home / "meta.json").exists() or notes(zk_home) == []


def test_edit_is_a_version_reannotated_and_relinked_keeping_links(zk, zk_home, editor, fake_model):
    _, out, _ = zk("add", "Knee hurts after the Saturday run.", "--at", "2026-03-28", "--wait", "--json")
    first = json.loads(out)["id"]
    _, out, _ = zk("add", "Doctor says rest the knee for two weeks #건강", "--at", "2026-03-29", "--wait", "--json")
    second = json.loads(out)
    assert second["links"] == [first]
    before = Memory(zk_home).store.get(second["id"])
    assert before.version == 1 and before.status == "ready" and before.keywords

    editor(replace=[("two weeks", "three weeks"), ("#건강", "#건강 #무릎")])
    code, out, err = zk("edit", second["id"][:8], "--wait", "--json")
    assert code == 0, err
    assert "Doctor says rest the knee for two weeks #건강" in editor.seen()
    edited = Memory(zk_home).store.get(second["id"])
    assert edited.content == "Doctor says rest the knee for three weeks #건강 #무릎"
    assert edited.user_tags == ["건강", "무릎"] and edited.links == [first] and edited.status == "ready"
    assert "three" in edited.keywords or "three" in edited.context  # annotated again from the new text
    reasons = [v.reason for v in edited.history]
    assert reasons[0] == "edit" and "annotated again after edit" in reasons
    assert edited.history[0].changes["content"] == {"old": before.content, "new": edited.content}

    _, out, _ = zk("history", second["id"][:8], "--json")
    assert [v["reason"] for v in json.loads(out)["history"]] == reasons
    code, _, _ = zk("revert", second["id"][:8], "--to", "1")
    reverted = Memory(zk_home).store.get(second["id"])
    assert code == 0 and reverted.content == before.content and reverted.user_tags == ["건강"]
    assert reverted.keywords == before.keywords and reverted.links == [first]
    _, out, _ = zk("search", "three weeks", "--json", "--no-links")
    assert all("three weeks" not in h["content"] for h in json.loads(out))  # re-embedded on revert


def test_edit_that_relinks_records_the_new_links(zk, zk_home, editor, fake_model):
    ids = []
    for day, text in enumerate(["Ran 5 km by the river.", "Bought new running shoes.", "Ran 8 km at dawn."], 1):
        _, out, _ = zk("add", text, "--at", f"2026-03-0{day}", "--wait", "--json")
        ids.append(json.loads(out)["id"])
    third = Memory(zk_home).store.get(ids[2])
    assert len(third.links) == 1
    editor(replace=[("Ran 8 km at dawn.", "Ran 8 km at dawn in the new shoes.")])
    import tests.fake_llm as fake

    original = fake.FakeLLM.__init__

    def links_two(self):  # this time the model links to two candidates
        original(self)
        self.link = lambda user, cands: {"links": cands[:2], "updates": []}

    pytest.MonkeyPatch().setattr(fake.FakeLLM, "__init__", links_two)
    try:
        code, _, err = zk("edit", ids[2][:8], "--wait")
    finally:
        fake.FakeLLM.__init__ = original
    assert code == 0, err
    edited = Memory(zk_home).store.get(ids[2])
    assert edited.links[0] == third.links[0] and len(edited.links) == 2  # kept, then the new one
    relinked = [v for v in edited.history if v.reason == "linked again after edit"]
    assert relinked and relinked[0].changes["links"] == {"old": third.links, "new": edited.links}


def test_unchanged_or_emptied_edit_changes_nothing(zk, zk_home, editor):
    _, out, _ = zk("add", "같은 내용 그대로", "--json")
    note_id = json.loads(out)["id"]
    editor(replace=[("그대로", "그대로   ")])  # trailing spaces and the final newline are no change
    code, _, err = zk("edit", note_id[:8])
    assert code == 0 and "no change" in err
    editor(write="")
    code, _, err = zk("edit", note_id[:8])
    assert code == 1 and len(err.strip().splitlines()) == 1 and "empty" in err
    editor(replace=[("같은", "다른")], exit=1)
    code, _, err = zk("edit", note_id[:8])
    assert code == 1 and "exited with status 1" in err
    note = Memory(zk_home).store.get(note_id)
    assert note.content == "같은 내용 그대로" and note.version == 1 and note.history == []


def test_template_overrides_and_unknown_template(zk, zk_home, editor, tmp_path):
    from zettel_amem.core.config import config_dir

    (config_dir() / "templates").mkdir(parents=True, exist_ok=True)
    (config_dir() / "templates" / "gym.md").write_text("운동 $date $weekday_ko\n", encoding="utf-8")
    (zk_home / "templates").mkdir(parents=True, exist_ok=True)
    (zk_home / "templates" / "daily.md").write_text("My own daily for $date: $5 stays\n", encoding="utf-8")
    editor(replace=[("stays", "stays, ran 5 km")])
    code, _, err = zk("add", "-t", "daily", "--at", "2026-03-28")
    assert code == 0, err
    assert editor.seen() == "My own daily for 2026-03-28: $5 stays\n"
    editor(replace=[("운동", "운동 스쿼트")])
    code, _, err = zk("add", "-t", "gym", "--at", "2026-03-28")
    assert code == 0 and editor.seen() == "운동 2026-03-28 토요일\n"
    code, _, err = zk("add", "-t", "nope")
    assert code == 1 and "no note template 'nope'" in err and "daily-en" in err and "gym" in err


# -- natural dates ------------------------------------------------------------------------------------
NOW = datetime(2026, 3, 28, 14, 30)  # a Saturday afternoon


@pytest.mark.parametrize("phrase, at, since", [
    ("yesterday 9am", "2026-03-27T09:00:00", "2026-03-27T09:00:00"),
    ("last friday", "2026-03-27T14:30:00", "2026-03-27T00:00:00"),
    ("3 days ago", "2026-03-25T14:30:00", "2026-03-25T00:00:00"),
    ("2 weeks ago", "2026-03-14T14:30:00", "2026-03-14T00:00:00"),
    ("어제", "2026-03-27T14:30:00", "2026-03-27T00:00:00"),
    ("그저께", "2026-03-26T14:30:00", "2026-03-26T00:00:00"),
    ("지난주 금요일", "2026-03-20T14:30:00", "2026-03-20T00:00:00"),  # the previous week's Friday
    ("3일 전", "2026-03-25T14:30:00", "2026-03-25T00:00:00"),
    ("오늘 아침", "2026-03-28T08:00:00", "2026-03-28T08:00:00"),
    ("어제 오후 3시", "2026-03-27T15:00:00", "2026-03-27T15:00:00"),
    ("그제 밤", "2026-03-26T22:00:00", "2026-03-26T22:00:00"),
    ("2주전", "2026-03-14T14:30:00", "2026-03-14T00:00:00"),
    ("2 hours ago", "2026-03-28T12:30:00", "2026-03-28T12:30:00"),
    ("2026-03-01", "2026-03-01T00:00:00", "2026-03-01T00:00:00"),
    ("2026-03-01T09:15", "2026-03-01T09:15:00", "2026-03-01T09:15:00"),
])
def test_date_phrases_in_english_and_korean(phrase, at, since):
    assert resolve(phrase, "at", NOW)[0] == at
    assert resolve(phrase, "since", NOW)[0] == since


@pytest.mark.parametrize("phrase, message", [
    ("yesterday-ish", "understood no date in it"),
    ("blah yesterday", "understood only 'yesterday' (2026-03-27)"),
    ("yesterday 25:00", "understood 2026-03-27 (Fri) but not the time"),
    ("🙂", "understood no date in it"),
])
def test_unreadable_dates_say_what_was_understood(phrase, message):
    with pytest.raises(ZkError, match="cannot read the") as info:
        parse(phrase, NOW)
    assert message in str(info.value) and "\n" not in str(info.value)


def test_ambiguous_day_month_is_read_and_reported(zk, zk_home):
    assert parse("03/04", NOW).note.startswith("'03/04' is ambiguous: read as 2026-03-04")
    code, out, err = zk("add", "봄 소풍", "--at", "03/04", "--json")
    assert code == 0 and "ambiguous" in err and len(err.strip().splitlines()) == 1
    assert notes(zk_home)[0].at.startswith("2026-03-04") or notes(zk_home)[0].at[5:10] == "03-04"


def test_at_since_until_and_on_through_the_cli(zk, zk_home):
    yesterday = (datetime.now() - timedelta(days=1)).date()
    for text, when in [("어제 아침 달리기 #달리기", "어제 아침"), ("yesterday evening call with Mina", "yesterday 7pm"),
                       ("그저께 일기", "그저께"), ("오늘 메모", "오늘")]:
        code, _, err = zk("add", text, "--at", when)
        assert code == 0, err
    code, out, _ = zk("on", "어제", "--json")
    day = json.loads(out)
    assert [n["content"] for n in day] == ["어제 아침 달리기 #달리기", "yesterday evening call with Mina"]
    assert day[0]["at"] == f"{yesterday.isoformat()}T08:00:00" and day[1]["at"].endswith("T19:00:00")
    code, out, _ = zk("on", "yesterday")
    assert code == 0 and out.startswith(f"{yesterday.isoformat()} ({yesterday:%a}) 2 note(s)")
    _, out, _ = zk("list", "--since", "그저께", "--until", "오늘", "--json")
    assert len(json.loads(out)) == 3
    _, out, _ = zk("list", "--since", "어제", "--json")
    assert {n["content"] for n in json.loads(out)} == {"어제 아침 달리기 #달리기", "yesterday evening call with Mina",
                                                      "오늘 메모"}
    code, _, err = zk("on", "언젠가쯤")
    assert code == 1 and len(err.strip().splitlines()) == 1 and "cannot read the date" in err


@pytest.mark.parametrize("phrase, at", [
    ("어제 밤 12시", "2026-03-28T00:00:00"),  # the midnight that ends yesterday, not its noon
    ("어제 저녁 12시", "2026-03-28T00:00:00"),
    ("어제 밤 12시 30분", "2026-03-28T00:30:00"),
    ("어제 자정", "2026-03-28T00:00:00"),
    ("어제 밤 11시", "2026-03-27T23:00:00"),
    ("어제 오후 12시", "2026-03-27T12:00:00"),  # noon stays noon
    ("20260329", "2026-03-29T00:00:00"),  # ISO basic
])
def test_28_midnight_and_iso_basic(phrase, at):
    """Issue #28 item 16."""
    assert resolve(phrase, "at", NOW)[0] == at


@pytest.mark.parametrize("phrase, message", [
    ("1", "a bare number is not a date"), ("12", "a bare number is not a date"),
    ("1700000000", "a bare number is not a date"),
    pytest.param("1" * 1000, "a bare number is not a date", id="1000-digits"),
    ("-1", "a bare number is not a date"), ("+5", "a bare number is not a date"),  # -1 was 1 January
    ("\u22122", "a bare number is not a date"), ("-2026", "a bare number is not a date"),
    ("-1 days ago", "a count cannot be signed"), ("+3 days ago", "a count cannot be signed"),
    ("-2일 전", "a count cannot be signed"),
    ("yesterday\x1b[31m", "control characters"), ("어제\t밤", "control characters"), ("어제\x00", "control characters"),
])
def test_28_bare_numbers_signed_counts_and_control_characters_are_refused(phrase, message):
    for role in ("at", "since", "until", "day"):
        with pytest.raises(ZkError, match=message) as info:
            resolve(phrase, role, NOW)
        assert "\n" not in str(info.value) and "\x1b" not in str(info.value)


MAY_31 = datetime(2026, 5, 31, 14, 30)


@pytest.mark.parametrize("phrase, now, day", [
    ("3 months ago", MAY_31, "2026-02-28"), ("3달 전", MAY_31, "2026-02-28"), ("3개월 전", MAY_31, "2026-02-28"),
    ("1 year ago", MAY_31, "2025-05-31"), ("1년 전", MAY_31, "2025-05-31"), ("a year ago", MAY_31, "2025-05-31"),
    ("2 months ago", MAY_31, "2026-03-31"), ("in 2 months", MAY_31, "2026-07-31"),
    ("3 months ago", datetime(2028, 5, 31, 9, 0), "2028-02-29"),  # clamped at the month's end, leap year
    ("3 months ago", datetime(2026, 12, 6, 7, 52), "2026-09-06"), ("100 years ago", NOW, "1926-03-28"),
    ("1 year 2 months ago", NOW, "2025-01-28"),
])
def test_53_a_count_of_months_or_years_back_keeps_the_day(phrase, now, day):
    """Issue #53 C4: "3 months ago" was the 1st of the month (dateparser's day-of-month preference)."""
    assert resolve(phrase, "at", now) == (f"{day}T{now:%H:%M:%S}", "")  # the time of day, as for "3 days ago"
    for role in ("since", "until", "day"):
        assert resolve(phrase, role, now) == (f"{day}T00:00:00", "")


@pytest.mark.parametrize("phrase, label, first, last", [
    ("last year", "2025", "2025-01-01", "2025-12-31"), ("작년", "2025", "2025-01-01", "2025-12-31"),
    ("2025년", "2025", "2025-01-01", "2025-12-31"),  # dateparser read "2025년" as 2025 years ago
    ("올해", "2026", "2026-01-01", "2026-12-31"),
    ("last month", "2026-04", "2026-04-01", "2026-04-30"), ("지난달", "2026-04", "2026-04-01", "2026-04-30"),
    ("March 2026", "2026-03", "2026-03-01", "2026-03-31"), ("2026년 2월", "2026-02", "2026-02-01", "2026-02-28"),
])
def test_53_a_whole_month_or_year_is_a_range_and_no_day(phrase, label, first, last):
    kind = "year" if len(label) == 4 else "month"
    since, note = resolve(phrase, "since", MAY_31)
    assert since == f"{first}T00:00:00" and note == f"'{phrase}' read as {label}, the whole {kind}: from {first} on"
    until, note = resolve(phrase, "until", MAY_31)
    assert until == f"{first}T00:00:00" and f"before {first}" in note  # --until is exclusive, as `--until 2026`
    day = Day(*day_range(phrase, MAY_31))
    end = (date.fromisoformat(last) + timedelta(days=1)).isoformat()
    assert (day.date.isoformat(), day.start, day.end, day.label) == (first, f"{first}T00:00:00", f"{end}T00:00:00",
                                                                      label)
    assert day.note == f"'{phrase}' read as {label}, the whole {kind}: {first} to {last}"
    with pytest.raises(ZkError, match=f"names a whole {kind} \\({label}\\), not a day") as info:
        resolve(phrase, "at", MAY_31)  # which day of it is a guess: refused, never the 1st silently
    assert "\n" not in str(info.value)


def test_53_months_and_years_through_the_cli(zk, zk_home, monkeypatch):
    """The report's case (today 2026-12-06): `zk on "3달 전"` listed the 1 September note, `--since "1 year
    ago"` kept a note three days before a year ago, `--at -1` filed a note on 1 January."""
    monkeypatch.setenv("ZK_TODAY", "2026-12-06")
    for text, at in [("first of september", "2026-09-01T10:00"), ("sixth of september", "2026-09-06T10:00"),
                     ("three days before a year ago", "2025-12-03T10:00"), ("a year ago today", "2025-12-06T10:00"),
                     ("작년 봄", "2025-04-02T10:00"), ("november", "2026-11-30T23:00")]:
        zk("add", text, "--at", at, check=True)
    for phrase in ("3달 전", "3 months ago"):
        assert [n["content"] for n in zk("on", phrase, "--json", check=True).json()] == ["sixth of september"]
    since = zk("list", "--since", "1 year ago", "--json", check=True).json()
    assert {n["content"] for n in since} == {"first of september", "sixth of september", "a year ago today",
                                              "november"}
    code, out, err = zk("on", "작년")
    assert code == 0 and out.startswith("2025 3 note(s)") and "'작년' read as 2025, the whole year" in err
    listed = zk("list", "--since", "last month", "--until", "this month", "--json", check=True).json()
    assert [n["content"] for n in listed] == ["november"]
    assert [n["content"] for n in zk("list", "--until", "작년", "--json", check=True).json()] == []
    code, out, err = zk("add", "어느 날", "--at", "작년")
    assert code == 1 and len(err.strip().splitlines()) == 1 and "names a whole year (2025), not a day" in err
    for bare in ("-1", "+5"):
        code, _, err = zk("add", "x", "--at", bare)
        assert code == 1 and f"cannot read the date '{bare}': a bare number is not a date" in err
    assert len(zk("list", "--json", check=True).json()) == 6


def test_28_a_bare_year_is_the_year_through_the_cli(tmp_path):
    """`--since 2026` is the whole year from 1 January; `--at`/`zk on` refuse a bare year in one line;
    the last day of the calendar works in `zk on` as in `--at` (real subprocesses)."""
    from tests import harness

    env = harness.zk_env(tmp_path / "home")
    for text, at in [("new year", "2026-01-02T10:00"), ("december", "2026-12-01T10:00"), ("old", "2025-06-01T10:00"),
                     ("end of time", "9999-12-31T23:59")]:
        harness.run("add", text, "--at", at, env=env, check=True)
    listed = json.loads(harness.run("list", "--since", "2026", "--until", "2027", "--json", env=env,
                                    check=True).stdout)
    assert sorted(n["content"] for n in listed) == ["december", "new year"]
    before = json.loads(harness.run("list", "--until", "2026", "--json", env=env, check=True).stdout)
    assert [n["content"] for n in before] == ["old"]
    for args in (["add", "x", "--at", "2026"], ["on", "2026"], ["list", "--since", "1700000000"],
                 ["add", "x", "--at", "-1 days ago"], ["add", "x", "--at", "yesterday\x1b[31m"]):
        done = harness.run(*args, env=env)
        assert done.returncode == 1 and harness.one_line(done.stderr), (args, done.stderr)
    last = harness.run("on", "9999-12-31", "--json", env=env)
    assert last.returncode == 0, last.stderr
    assert [n["content"] for n in json.loads(last.stdout)] == ["end of time"]


def test_help_does_not_load_dateparser():
    _, loaded = modules_after_help("dateparser")
    assert loaded == []


# -- the user's own tags ------------------------------------------------------------------------------
def test_user_tags_list_search_and_counts(zk, zk_home):
    for text in ["오늘 #달리기 10km, 무릎은 괜찮다", "Long run by the river #running #달리기",
                 "Read two chapters of the novel #books", "Issue #42 is closed, nothing to tag here"]:
        zk("add", text)
    _, out, _ = zk("tags", "--json")
    assert json.loads(out)[:3] == [
        {"tag": "달리기", "count": 2, "last": json.loads(out)[0]["last"]},
        {"tag": "books", "count": 1, "last": json.loads(out)[1]["last"]},
        {"tag": "running", "count": 1, "last": json.loads(out)[2]["last"]}]
    assert len(json.loads(out)) == 3  # "#42" is a number, not a tag
    code, out, _ = zk("tags")
    assert code == 0 and "#달리기" in out and "2" in out
    _, out, _ = zk("list", "--tag", "달리기", "--json")
    assert sorted(n["content"][:6] for n in json.loads(out)) == ["Long r", "오늘 #달리"]
    _, out, _ = zk("list", "--tag", "#RUNNING", "--json")
    assert [n["user_tags"] for n in json.loads(out)] == [["running", "달리기"]]
    _, out, _ = zk("search", "river run", "--tag", "books", "--json")
    assert [n["content"] for n in json.loads(out)] == ["Read two chapters of the novel #books"]
    _, out, _ = zk("search", "run", "--tag", "달리기", "--json")
    assert {n["content"][:6] for n in json.loads(out)} == {"Long r", "오늘 #달리"}


def test_evolution_never_rewrites_user_tags(zettel_evolving):
    memory = zettel_evolving
    first = memory.add("Ran 10 km along the Han river #달리기 #training", "2026-03-01")
    memory.process(first.id)
    memory.llm.link = lambda user, ids: {"links": ids[:1], "updates": [
        {"id": ids[0], "later": "knee fine", "tags": ["river"]}]}
    second = memory.add("Ran 12 km along the Han river, knee fine", "2026-03-02")
    result = memory.process(second.id)
    evolved = memory.store.get(first.id)
    assert first.id in result.evolved and "river" in evolved.tags  # the model's tags did change
    assert evolved.user_tags == ["달리기", "training"]
    assert all("user_tags" not in v.changes for v in evolved.history)


@pytest.fixture
def zettel_evolving(zk_home, embedder):
    from tests.fake_llm import EvolvingFakeLLM

    memory = Memory(zk_home, llm=EvolvingFakeLLM(), embedder=embedder)
    memory.settings.link_min_similarity = 0.0
    return memory


def test_schema_1_store_gains_user_tags_from_its_notes(zk_home, embedder, tmp_path):
    import lancedb
    import pyarrow as pa

    memory = Memory(zk_home, embedder=embedder)
    memory.add("예전 메모 #옛날 #old", "2026-03-01")
    memory.add("no tags in this one", "2026-03-02")
    old_home = tmp_path / "v1"
    db = lancedb.connect(str(old_home / "lancedb"))
    table = db.create_table("notes", schema=pa.schema([f for f in memory.store.table.schema if f.name != "user_tags"]))
    rows = map(note_to_row, memory.store.notes(with_vector=True))
    table.add([{k: v for k, v in r.items() if k != "user_tags"} for r in rows])
    (old_home / "meta.json").write_text(json.dumps({"schema_version": 1, "embedder": memory.store.embedder_name,
                                                    "dim": memory.store.dim}))
    migrated = Memory(old_home, embedder=embedder)
    assert {n.content: n.user_tags for n in migrated.store.notes()} == {"예전 메모 #옛날 #old": ["옛날", "old"],
                                                                        "no tags in this one": []}
    assert json.loads((old_home / "meta.json").read_text())["schema_version"] == SCHEMA_VERSION
    migrated.add("after #migration", "2026-03-03")
    assert Views(migrated).tags()[0]["count"] == 1 and len(Views(migrated).notes(tag="migration")) == 1


# -- on the real bundled model ------------------------------------------------------------------------
@pytest.mark.slow
def test_edit_on_the_real_model_reannotates_and_keeps_links(zk, zk_home, editor, embedder, monkeypatch):
    """`zk edit --wait` with Qwen2.5-0.5B: the edited text is annotated again from its new words, the
    earlier links stay, and `zk revert --to 1` brings back the text and its first annotation."""
    import zettel_amem.backends.embed
    import zettel_amem.backends.llm.llama
    from zettel_amem.backends.llm.llama import load_llm

    qwen = load_llm("qwen2.5-0.5b")
    monkeypatch.setattr(zettel_amem.backends.llm.llama, "load_llm", lambda *args, **kwargs: qwen)
    monkeypatch.setattr(zettel_amem.backends.embed, "load_embedder", lambda *args, **kwargs: embedder)
    zk_home.mkdir(parents=True, exist_ok=True)
    (zk_home / "config.toml").write_text("link_min_similarity = 0.0\n", encoding="utf-8")
    ids = []
    for at, text in [("2026-03-01T08:00", "I run 10 km at Yeouido Hangang Park every weekend. #running"),
                     ("2026-03-08T09:30", "My knee hurts after the Saturday run, so I stopped at 8 km. #running")]:
        code, out, err = zk("add", text, "--at", at, "--wait", "--json")
        assert code == 0, err
        ids.append(json.loads(out)["id"])
    before = Memory(zk_home).store.get(ids[1])
    assert before.status == "ready" and before.keywords
    editor(replace=[("so I stopped at 8 km", "so I swam 1 km at the Jamsil pool instead")])
    code, out, err = zk("edit", ids[1][:8], "--wait", "--json")
    assert code == 0, err
    edited = Memory(zk_home).store.get(ids[1])
    assert edited.status == "ready" and "Jamsil pool" in edited.content and edited.user_tags == ["running"]
    assert set(before.links) <= set(edited.links)  # kept
    assert edited.history[0].reason == "edit"
    code, _, err = zk("revert", ids[1][:8], "--to", "1")
    reverted = Memory(zk_home).store.get(ids[1])
    assert code == 0 and reverted.content == before.content and reverted.keywords == before.keywords
    assert (reverted.tags, reverted.context) == (before.tags, before.context)


def test_a_schema_1_jsonl_backup_restores_with_user_tags(zk, zk_home, tmp_path):
    header = {"type": "zk-export", "schema_version": 1, "embedder": "e5-small", "notes": 1}
    row = {"type": "note", "id": "ab" * 16, "content": "옛 백업 #복원 #backup", "at": "2026-03-01T08:00:00",
           "created": "2026-03-01T08:00:00", "keywords": [], "tags": [], "context": "", "links": [],
           "status": "ready", "version": 1, "history": [], "notebook": "main", "kind": "note"}
    backup = tmp_path / "old.jsonl"
    backup.write_text(json.dumps(header) + "\n" + json.dumps(row, ensure_ascii=False) + "\n", encoding="utf-8")
    code, _, err = zk("import", str(backup))
    assert code == 0, err
    assert Memory(zk_home).store.get("ab" * 16).user_tags == ["복원", "backup"]
