"""Tests for zettel_amem.ingest.importer: formats, detection, idempotence, sessions, resume after kill -9."""

from __future__ import annotations

import io
import json
import os
import signal
import time
from collections import Counter
from pathlib import Path

import pytest

from tests import harness
from tests.harness import shell
from zettel_amem.core.config import ZkError
from zettel_amem.ingest.importer import ImportReport, import_source
from zettel_amem.memory import Memory
from zettel_amem.tiers.service import Tiers

KOREAN = "민수: 내일 오후 3시에 강남역에서 만나요 🙂"


# `memory` and `embedder` are the shared fixtures (conftest.py): a fresh home, the scripted model.


def _session_turns(memory, prefix: str):
    """The turns of the one session an id prefix names, as `zk show s…` finds them."""
    sessions = Tiers(memory).sessions
    return sessions.turns(sessions.resolve(prefix))


def contents(memory: Memory) -> list[str]:
    return sorted(n.content for n in memory.store.notes())


def write_lines(path: Path, lines: list[str]) -> Path:
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


# --------------------------------------------------------------------------- formats


def test_text_korean_bom_crlf_and_bad_lines(memory: Memory, tmp_path: Path) -> None:
    data = (b"\xef\xbb\xbf[2026-03-29 09:15] " + KOREAN.encode() + b"\r\n"
            b"[2026-03-29 09:16] Alice: see you there\r\n"
            b"Bob: broken \xff byte\r\n"
            b"\r\n"
            b"Bob: bell \x07 inside\r\n"
            b"Alice: last line without a time\r\n")
    log = tmp_path / "chat.txt"
    log.write_bytes(data)
    report = import_source(memory, log)
    assert report.format == "text"
    assert report.added == 3
    assert sorted(f["line"] for f in report.failed) == [3, 5]
    turns = _session_turns(memory, report.session_ids[0])
    assert [(t.speaker, t.seq) for t in turns] == [("민수", 0), ("Alice", 1), ("Alice", 3)]
    korean = turns[0]
    assert korean.content.encode("utf-8") == KOREAN.split(": ", 1)[1].encode("utf-8")
    assert korean.at == "2026-03-29T09:15:00" and korean.kind == "turn" and korean.status == "ready"
    assert turns[2].at == "2026-03-29T09:16:00"  # an untimed turn follows the previous timed one
    assert all(t.source == "chat.txt" for t in turns)


def test_jsonl_malformed_line_reported_rest_imported(memory: Memory, tmp_path: Path) -> None:
    lines = [
        json.dumps({"role": "user", "content": "What is LanceDB?", "session_id": "a"}),
        json.dumps({"role": "assistant", "content": "An embedded vector database.", "session_id": "a"}),
        '{"role": "user", "content": "broken',
        json.dumps({"role": "user", "content": "한국어도 되나요?", "session_id": "b"}, ensure_ascii=False),
        json.dumps({"role": "assistant", "content": "네, 됩니다.", "session_id": "b"}, ensure_ascii=False),
        json.dumps({"role": "user", "content": "Thanks", "session_id": "b"}),
    ]
    report = import_source(memory, write_lines(tmp_path / "t.jsonl", lines))
    assert report.format == "jsonl"
    assert report.added == 5
    assert [f["line"] for f in report.failed] == [3]
    assert "JSON" in report.failed[0]["message"]
    sessions = {s["session_id"]: s for s in Tiers(memory).sessions.list()}
    assert set(sessions) == set(report.session_ids)
    assert sorted(s["turns"] for s in sessions.values()) == [2, 3]
    b = next(s for s in sessions.values() if s["turns"] == 3)
    assert b["speakers"] == ["user", "assistant"]
    assert "네, 됩니다." in contents(memory)


def _chatgpt_export() -> list[dict]:
    def node(nid, parent, children, role, text, t):
        message = None if role is None else {
            "id": nid, "author": {"role": role}, "create_time": t,
            "content": {"content_type": "text", "parts": [text]}}
        return {"id": nid, "message": message, "parent": parent, "children": children}

    mapping = {
        "root": node("root", None, ["sys"], None, "", None),
        "sys": node("sys", "root", ["u1"], "system", "You are helpful.", 1767225600),
        "u1": node("u1", "sys", ["a1"], "user", "Plan a trip to Busan", 1767225601),
        "a1": node("a1", "u1", ["u2"], "assistant", "Day 1: Haeundae beach.", 1767225602),
        "u2": node("u2", "a1", [], "user", "부산 맛집도 알려줘", 1767225603),
    }
    return [{"id": "conv-1", "title": "Busan trip", "create_time": 1767225600, "mapping": mapping,
             "current_node": "u2"}]


def test_chatgpt_export(memory: Memory, tmp_path: Path) -> None:
    path = tmp_path / "conversations.json"
    path.write_text(json.dumps(_chatgpt_export(), ensure_ascii=False), encoding="utf-8")
    progress: list[tuple[int, int | None]] = []
    report = import_source(memory, path, on_progress=lambda done, total: progress.append((done, total)))
    assert report.format == "chatgpt"
    assert (report.added, report.failed) == (3, [])
    assert progress[-1] == (3, 3)
    [session] = Tiers(memory).sessions.list()
    assert session["title"] == "Busan trip" and session["turns"] == 3
    turns = _session_turns(memory, session["session_id"][:6])
    assert [t.speaker for t in turns] == ["user", "assistant", "user"]
    assert turns[-1].content == "부산 맛집도 알려줘"


def _locomo(sessions: int = 2) -> list[dict]:
    conv: dict = {"speaker_a": "Caroline", "speaker_b": "Melanie"}
    for s in range(1, sessions + 1):
        conv[f"session_{s}_date_time"] = f"1:56 pm on {s} May, 2023"
        conv[f"session_{s}"] = [
            {"speaker": "Caroline" if i % 2 == 0 else "Melanie", "dia_id": f"D{s}:{i + 1}",
             "text": f"session {s} turn {i}: talking about painting and the LGBTQ support group"}
            for i in range(s + 2)
        ]
    return [{"sample_id": "conv-26", "conversation": conv, "qa": []}]


def test_locomo_sessions(memory: Memory, tmp_path: Path) -> None:
    path = tmp_path / "locomo.json"
    path.write_text(json.dumps(_locomo()), encoding="utf-8")
    report = import_source(memory, path)
    assert report.format == "locomo"
    assert report.added == 3 + 4 and len(report.session_ids) == 2
    listed = Tiers(memory).sessions.list()
    assert [s["turns"] for s in listed] == [4, 3]  # newest (session 2, 2 May) first
    assert listed[0]["title"] == "Caroline & Melanie, session 2"
    assert listed[0]["first_at"] == listed[0]["last_at"] == "2023-05-02T13:56:00"
    assert [t.seq for t in _session_turns(memory, listed[1]["session_id"])] == [0, 1, 2]


def test_markdown_folder(memory: Memory, tmp_path: Path) -> None:
    vault = tmp_path / "vault"
    (vault / "sub").mkdir(parents=True)
    (vault / ".obsidian").mkdir()
    (vault / "trip.md").write_text("---\ntitle: Busan trip\ndate: 2026-01-02\ntags: [travel]\n---\n"
                                   "# Day one\n\nHaeundae at sunrise.\n\n해운대 일출이 멋졌다.\n",
                                   encoding="utf-8")
    (vault / "sub" / "idea.md").write_text("A note without front matter.\n", encoding="utf-8")
    (vault / ".obsidian" / "x.md").write_text("hidden\n", encoding="utf-8")
    report = import_source(memory, vault)
    assert report.format == "markdown"
    assert report.added == 3 and len(report.session_ids) == 2
    titles = {s["title"]: s["turns"] for s in Tiers(memory).sessions.list()}
    assert titles == {"Busan trip": 2, "idea": 1}
    assert "해운대 일출이 멋졌다." in contents(memory)
    # editing a file without a front-matter date changes its mtime, not the identity of its paragraphs
    os.utime(vault / "sub" / "idea.md", (1_600_000_000, 1_600_000_000))
    again = import_source(memory, vault, fmt="markdown")
    assert (again.added, again.skipped_duplicates) == (0, 3)


def test_stdin_stream_auto_detection(memory: Memory) -> None:
    stream = io.BytesIO("\n".join(json.dumps({"role": r, "content": c}) for r, c in
                                  [("user", "hello"), ("assistant", "hi there")]).encode())
    report = import_source(memory, stream)
    assert report.format == "jsonl" and report.added == 2
    assert {n.source for n in memory.store.notes()} == {"stdin"}
    with pytest.raises(ZkError, match="unknown format"):
        import_source(memory, io.BytesIO(b"x"), fmt="csv")
    with pytest.raises(ZkError, match="no such file"):
        import_source(memory, Path("/nonexistent/zk-import.txt"))


# --------------------------------------------------------------------------- idempotence


def test_import_twice_adds_nothing(memory: Memory, tmp_path: Path) -> None:
    log = write_lines(tmp_path / "a.txt", ["Alice: hi", "Bob: ok", "Alice: ok", "Bob: ok", KOREAN])
    first = import_source(memory, log)
    assert first.added == 5  # a timeless log that repeats "Bob: ok" keeps both
    renamed = tmp_path / "renamed.txt"
    renamed.write_bytes(log.read_bytes())
    second = import_source(memory, renamed)
    assert (second.added, second.skipped_duplicates) == (0, first.added)
    assert second.session_ids == first.session_ids
    third = import_source(memory, io.BytesIO(log.read_bytes()), source_name="stdin")
    assert (third.added, third.skipped_duplicates) == (0, 5)
    assert memory.store.count() == 5
    assert isinstance(first, ImportReport) and first.to_json()["added"] == 5


def test_overlapping_newer_export_adds_only_new_turns(memory: Memory, tmp_path: Path) -> None:
    timed = [f"[2026-03-{10 + i:02d} 09:00] {'Alice' if i % 2 else 'Bob'}: message {i}" for i in range(10)]
    old = import_source(memory, write_lines(tmp_path / "export-1.txt", timed[:6]))
    newer = import_source(memory, write_lines(tmp_path / "export-2.txt", timed[3:]))  # sliding window
    assert (old.added, newer.added, newer.skipped_duplicates) == (6, 4, 3)
    assert contents(memory) == sorted(f"message {i}" for i in range(10))
    assert newer.session_ids == old.session_ids  # the newer export continues the same session
    assert [t.seq for t in _session_turns(memory, old.session_ids[0])] == list(range(10))

    other = Memory(memory.home, embedder=memory.embedder, notebook="untimed")
    chat = ["Ann: hello", "Ben: ok", "Ann: ok", "Ben: bye"]
    first = import_source(other, write_lines(tmp_path / "u1.txt", chat[:3]))
    grown = import_source(other, write_lines(tmp_path / "u2.txt", chat + ["Ann: ok", "Ben: see you"]))
    assert (first.added, grown.added, grown.skipped_duplicates) == (3, 3, 3)
    assert grown.session_ids == first.session_ids
    assert [t.content for t in _session_turns(other, first.session_ids[0])] == \
        ["hello", "ok", "ok", "bye", "ok", "see you"]
    assert len(Tiers(memory).sessions.list()) == 1  # notebooks stay apart


def test_untimed_chats_sharing_an_opening_stay_apart(memory: Memory, tmp_path: Path) -> None:
    monday = import_source(memory, write_lines(tmp_path / "mon.txt", ["A: hi", "B: 안녕하세요 반가워요"]))
    tuesday = import_source(memory, write_lines(tmp_path / "tue.txt", ["A: hi", "C: a different chat", "A: ok"]))
    assert (monday.added, tuesday.added, tuesday.skipped_duplicates) == (2, 3, 0)
    assert tuesday.session_ids != monday.session_ids
    assert [(t.seq, t.content) for t in _session_turns(memory, tuesday.session_ids[0])] == \
        [(0, "hi"), (1, "a different chat"), (2, "ok")]
    again = import_source(memory, write_lines(tmp_path / "tue-again.txt", ["A: hi", "C: a different chat",
                                                                         "A: ok", "C: bye"]))
    assert (again.added, again.skipped_duplicates, again.session_ids) == (1, 3, tuesday.session_ids)
    # a sliding window that repeats "ok": the old "ok" is matched by its place, the new one is kept
    window = import_source(memory, write_lines(tmp_path / "window.txt", ["C: a different chat", "A: ok",
                                                                         "C: bye", "A: ok"]))
    assert (window.added, window.skipped_duplicates, window.session_ids) == (1, 3, tuesday.session_ids)
    assert [t.content for t in _session_turns(memory, tuesday.session_ids[0])] == \
        ["hi", "a different chat", "ok", "bye", "ok"]
    assert memory.store.count() == 7
    # two lines of overlap are too few to tell a continuation from another chat: a new session
    short = import_source(memory, write_lines(tmp_path / "short.txt", ["C: bye", "A: ok", "C: later"]))
    assert short.added == 3 and short.session_ids != tuesday.session_ids


def test_untimed_exports_that_drop_a_line_or_repeat_an_opening(memory: Memory, tmp_path: Path) -> None:
    lines = [f"A: line {i}" for i in range(8)]
    first = import_source(memory, write_lines(tmp_path / "v1.txt", lines))
    edited = import_source(memory, write_lines(tmp_path / "v2.txt", lines[:3] + lines[4:] + ["A: line 8"]))
    assert (edited.added, edited.skipped_duplicates, edited.session_ids) == (1, 7, first.session_ids)
    assert sorted(contents(memory)) == sorted(f"line {i}" for i in range(9))

    other = Memory(memory.home, embedder=memory.embedder, notebook="repeats")
    import_source(other, write_lines(tmp_path / "r1.txt", ["A: ok"] * 4 + ["B: X"]))
    window = import_source(other, write_lines(tmp_path / "r2.txt", ["A: ok"] * 3 + ["B: X"]))
    assert (window.added, window.skipped_duplicates) == (0, 4)
    assert other.store.count("repeats") == 5


def test_a_short_log_joins_a_chat_only_where_that_chat_starts(memory: Memory, tmp_path: Path) -> None:
    chat = import_source(memory, write_lines(tmp_path / "chat.txt", ["A: hi", "B: hello", "A: how are you"]))
    middle = import_source(memory, write_lines(tmp_path / "one.txt", ["B: hello"]))
    tail = import_source(memory, write_lines(tmp_path / "two.txt", ["A: how are you", "B: fine"]))
    assert (middle.added, tail.added) == (1, 2)  # different chats that share a line: nothing dropped
    assert len({*chat.session_ids, *middle.session_ids, *tail.session_ids}) == 3
    again = import_source(memory, write_lines(tmp_path / "one-again.txt", ["B: hello"]))
    assert (again.added, again.session_ids) == (0, middle.session_ids)
    grown = import_source(memory, write_lines(tmp_path / "grown.txt", ["B: hello", "A: and you?"]))
    assert (grown.added, grown.session_ids) == (1, middle.session_ids)  # a longer export of the short chat


def test_batches_and_progress(memory: Memory, tmp_path: Path, monkeypatch) -> None:
    log = write_lines(tmp_path / "many.txt", [f"Speaker{i % 3}: line {i}" for i in range(130)])
    sizes: list[int] = []
    real = memory.add_notes
    monkeypatch.setattr(memory, "add_notes", lambda notes, **kw: (sizes.append(len(notes)), real(notes, **kw))[1])
    progress: list[tuple[int, int | None]] = []
    report = import_source(memory, log, batch_size=50, on_progress=lambda d, t: progress.append((d, t)))
    assert report.added == 130 and sizes == [50, 50, 30]
    assert progress == [(50, 130), (100, 130), (130, 130)]


def test_session_prefix_errors(memory: Memory, tmp_path: Path) -> None:
    lines = [json.dumps({"content": f"turn {i}", "session_id": f"k{i}"}) for i in range(40)]
    report = import_source(memory, write_lines(tmp_path / "s.jsonl", lines))
    assert len(report.session_ids) == 40
    shared = Counter(s[:2] for s in report.session_ids).most_common(1)[0][0]  # 40 ids, 16 first digits
    with pytest.raises(ZkError, match="ambiguous"):
        _session_turns(memory, shared)
    with pytest.raises(ZkError, match="not a session or episode id"):
        _session_turns(memory, "zz'; --")
    unknown = next(f"s{c}" for c in "0123456789abcdef" if not any(s.startswith(f"s{c}")
                                                                   for s in report.session_ids))
    with pytest.raises(ZkError, match="no session"):
        _session_turns(memory, unknown)
    one = report.session_ids[7]
    assert [t.content for t in _session_turns(memory, one[1:])] == ["turn 7"]


# --------------------------------------------------------------------------- resume after kill -9

def test_resume_after_kill(memory: Memory, tmp_path: Path) -> None:
    total = 3000
    lines = [f"{('Ann', 'Ben', '지민')[i % 3]}: line {i}" + (" ok" if i % 7 else "") for i in range(total)]
    lines[10::500] = ["Ben: ok"] * len(lines[10::500])  # repeated identical turns must all survive
    log = write_lines(tmp_path / "big.txt", lines)
    env = harness.zk_env(memory.home)
    command = ["import", str(log), "--no-llm", "--json"]
    proc = harness.start(*command, env=env, stderr=None)  # the real `zk import`
    killed_at = 0
    try:
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline and proc.poll() is None:
            if (memory.home / "meta.json").exists() and memory.store.count() >= 200:
                os.kill(proc.pid, signal.SIGKILL)
                break
            time.sleep(0.05)
    finally:
        if proc.poll() is None:
            os.kill(proc.pid, signal.SIGKILL)
        proc.wait()
    assert proc.returncode == -signal.SIGKILL, "the import finished before it could be killed"
    killed_at = memory.store.count()
    assert 0 < killed_at < total

    rerun = harness.run(*command, env=env, check=True)  # the same command again
    report = json.loads(rerun.stdout)
    assert report["failed"] == []
    assert report["added"] + report["skipped_duplicates"] == total
    assert report["skipped_duplicates"] == killed_at
    expected = Counter(line.split(": ", 1)[1] for line in lines)
    notes = memory.store.notes()
    assert Counter(n.content for n in notes) == expected
    assert len({n.content_hash for n in notes}) == total
    assert sorted(n.seq for n in notes) == list(range(total))


def test_stdin_pipe_through_the_real_cli(tmp_path: Path) -> None:
    env = harness.zk_env(tmp_path / "cli-home")
    log = "민수: 오늘 무릎 괜찮아?\r\nAmy: better, thanks\r\n{broken\x00\r\n민수: 다행이다\r\n".encode()
    cmd = ["import", "-", "--json"]
    first = harness.run(*cmd, input=b"\xef\xbb\xbf" + log, env=env)
    assert first.returncode == 3, first.stderr  # imported, but one line was skipped
    report = json.loads(first.stdout)
    assert report["format"] == "text" and report["added"] == 3
    assert [f["line"] for f in report["failed"]] == [3]
    again = harness.run(*cmd, input=log, env=env)
    assert json.loads(again.stdout)["added"] == 0 and json.loads(again.stdout)["skipped_duplicates"] == 3
    listed = harness.run("list", "--json", env=env)
    contents = sorted(n["content"] for n in json.loads(listed.stdout))
    assert contents == sorted(["오늘 무릎 괜찮아?", "better, thanks", "다행이다"])


# -- the break-it report (issue #16), cases 1 and 7: pipes and a ChatGPT cycle ---------------------
def test_1_import_from_a_pipe_reads_every_turn_once(tmp_path):
    chat = tmp_path / "chat.txt"
    chat.write_text("".join(f"{'Amy' if i % 2 else 'Ben'}: turn number {i} about the 10 km race plan\n"
                            for i in range(1500)), encoding="utf-8")
    assert chat.stat().st_size > 64 * 1024  # larger than what format detection reads first
    home = tmp_path / "home"
    piped = shell(f"zk import <(cat {chat}) --no-llm --json", home)
    assert piped.returncode == 0, piped.stderr
    report = json.loads(piped.stdout)
    assert (report["added"], report["failed"]) == (1500, [])
    again = json.loads(shell(f"cat {chat} | zk import /dev/stdin --no-llm --json", home).stdout)
    assert (again["added"], again["skipped_duplicates"]) == (0, 1500)  # the same turns: nothing doubled
    notes = Memory(home).store.notes()
    assert sorted(n.content for n in notes) == sorted(line.split(": ", 1)[1] for line in
                                                      chat.read_text(encoding="utf-8").splitlines())
    # A backup through process substitution is restored, every note.
    restored = shell(f"zk --home {tmp_path / 'copy'} import <(zk export --all) --json", home)
    assert restored.returncode == 0, restored.stderr
    assert json.loads(restored.stdout)["added"] == 1500


def test_7_chatgpt_mapping_cycle_is_reported(zk, tmp_path):
    msg = lambda i, parent: {"id": i, "parent": parent, "children": [], "message": {  # noqa: E731
        "id": i, "author": {"role": "user"}, "content": {"parts": [f"message {i}"]}, "create_time": 1.7e9}}
    conversations = [{"id": "c1", "title": "loop", "mapping": {"a": msg("a", "b"), "b": msg("b", "a")}},
                     {"id": "c2", "title": "fine", "current_node": "x", "mapping": {"x": msg("x", None)}}]
    path = tmp_path / "conversations.json"
    path.write_text(json.dumps(conversations), encoding="utf-8")
    code, out, _ = zk("import", str(path), "--format", "chatgpt", "--no-llm", "--json")
    report = json.loads(out)
    assert code == 3 and report["added"] == 1
    assert len(report["failed"]) == 1 and "cycle" in report["failed"][0]["message"]


# -- the break-it report (issue #53), C9: JSON nested too deeply ---------------------------------------
def test_c9_json_nested_too_deeply_is_one_line_naming_the_file(zk, zk_home, tmp_path):
    depth = 100_000
    deep = tmp_path / "깊은 deep.json"
    deep.write_text("[" * depth + "]" * depth, encoding="utf-8")
    chatgpt = tmp_path / "conversations.json"  # a ChatGPT export whose message parts hold the nesting
    chatgpt.write_text('[{"title": "t", "mapping": {"a": {"parent": null, "children": [], "message": {"author": '
                       '{"role": "user"}, "content": {"parts": ' + "[" * depth + "]" * depth + "}}}}}]",
                       encoding="utf-8")
    for path in (deep, chatgpt):
        for fmt in ("auto", "chatgpt", "locomo"):
            code, _, err = zk("import", str(path), "--format", fmt, "--no-llm", "-q")
            assert code == 1 and harness.one_line(err), err
            assert f"{path.name} is not valid JSON (nested too deeply)" in err
    vault = tmp_path / "vault"  # a vault whose marker is nested too deeply
    vault.mkdir()
    (vault / ".zk-vault.json").write_text('{"a": ' * depth + "1" + "}" * depth, encoding="utf-8")
    code, _, err = zk("import", str(vault), "-q")
    assert code == 1 and harness.one_line(err) and "nested too deeply" in err, err
    assert Memory(zk_home).store.count() == 0
    chat = tmp_path / "chat.jsonl"  # one such line in a chat log: that line is skipped, the rest imported
    chat.write_text('{"role": "user", "content": "무릎이 아프다"}\n' + "[" * depth + "]" * depth + "\n",
                    encoding="utf-8")
    code, out, err = zk("import", str(chat), "--no-llm", "--json")
    report = json.loads(out)
    assert code == 3 and report["added"] == 1
    assert report["failed"] == [{"line": 2, "record": None, "message": "not valid JSON: nested too deeply"}]


# --------------------------------------------------------------------------- enrichment of chat turns


def test_chat_turns_are_searched_as_written_unless_enriched(tmp_path: Path, embedder) -> None:
    """Off by default (config.enrich_turns): imported chat turns are ready at once and no model call is
    queued. `enrich` (or the setting) queues them for the model; markdown notes are always queued."""
    from tests.fake_llm import FakeLLM

    log = write_lines(tmp_path / "chat.txt", ["민수: 내일 강남역에서 만나요", "Amy: see you at Gangnam"])
    llm = FakeLLM()
    plain = Memory(tmp_path / "plain", llm=llm, embedder=embedder)
    plain.settings.auto_worker = False
    import_source(plain, log)
    assert {n.status for n in plain.store.notes()} == {"ready"}
    assert plain.pipeline.pending_ids() == [] and plain.process_pending() == [] and llm.calls == []
    assert plain.search("강남역")[0].note.content == "내일 강남역에서 만나요"

    for how in ("flag", "setting"):
        enriched = Memory(tmp_path / how, llm=llm, embedder=embedder)
        enriched.settings.auto_worker = False
        enriched.settings.enrich_turns = how == "setting"
        import_source(enriched, log, enrich=True if how == "flag" else None)
        assert len(enriched.pipeline.pending_ids()) == 2
        assert [r.status for r in enriched.process_pending()] == ["ready", "ready"]
        assert all(n.keywords for n in enriched.store.notes())
    assert llm.tasks().count("annotate") == 4

    vault = tmp_path / "vault"
    vault.mkdir()
    (vault / "knee.md").write_text("Knee hurts after the run.\n", encoding="utf-8")
    import_source(plain, vault)
    assert len(plain.pipeline.pending_ids()) == 1  # the user's own writing, enriched as `zk add` is
