"""Issue #16, the break-it report: each numbered case, reproduced through the real CLI, plus the
damaged-store cases that `zk doctor` finds and `zk repair` recovers from."""

from __future__ import annotations

import io
import json
import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from zettel_amem import cli
from zettel_amem.database import manifest_versions
from zettel_amem.memory import Memory

ROOT = Path(__file__).resolve().parents[1]


@pytest.fixture
def zk(zk_home, embedder, capsys, monkeypatch):
    """`zk ARGS` in this process (the real entry point), with the session's embedder."""
    import zettel_amem.embed

    monkeypatch.setattr(zettel_amem.embed, "load_embedder", lambda *args, **kwargs: embedder)

    def run(*args, stdin: bytes | None = None):
        monkeypatch.setattr(sys, "argv", ["zk", *args])
        monkeypatch.setattr(sys, "stdin", io.TextIOWrapper(io.BytesIO(stdin or b""), encoding="utf-8"))
        code = 0
        try:
            cli.main()
        except SystemExit as exc:
            code = exc.code or 0
        out, err = capsys.readouterr()
        return code, out, err

    return run


def one_line(err: str) -> bool:
    return len(err.strip().splitlines()) == 1 and "Traceback" not in err and ".rs:" not in err \
        and "internal error" not in err


def shell(command: str, home: Path, timeout: float = 300) -> subprocess.CompletedProcess:
    env = {**os.environ, "ZK_HOME": str(home), "ZK_NO_WORKER": "1",
           "PYTHONPATH": os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")])}
    zk_cmd = f"{sys.executable} -m zettel_amem"
    return subprocess.run(["bash", "-c", command.replace("zk ", zk_cmd + " ")], env=env, capture_output=True,
                          text=True, timeout=timeout)


def newest_data_file(table_dir: Path) -> Path:
    return max((table_dir / "data").glob("*.lance"), key=lambda p: p.stat().st_mtime_ns)


# -- 1. pipes ---------------------------------------------------------------------------------------
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


# -- 2, 3: damage -----------------------------------------------------------------------------------
def _notes(zk, count: int) -> list[str]:
    ids = []
    for i in range(count):
        code, out, err = zk("add", f"note number {i}", "--json")
        assert code == 0, err
        ids.append(json.loads(out)["id"])
    return ids


def test_2_a_failing_add_on_a_damaged_store_writes_nothing(zk, zk_home, tmp_path):
    _notes(zk, 2)
    victim = newest_data_file(zk_home / "lancedb" / "notes.lance")
    shutil.move(victim, tmp_path / "away.lance")
    for _ in range(3):
        code, _, err = zk("add", "retried note")
        assert code == 1 and one_line(err) and "missing" in err and "nothing was written" in err, err
    shutil.move(tmp_path / "away.lance", victim)
    assert sorted(n.content for n in Memory(zk_home).store.notes()) == ["note number 0", "note number 1"]


def test_2_an_error_after_the_write_says_the_note_was_saved(zk, zk_home, monkeypatch):
    from zettel_amem.store import Store

    def broken_get(self, *args, **kwargs):
        from zettel_amem.config import ZkError

        raise ZkError("cannot read the store")

    monkeypatch.setattr(Store, "get", broken_get)
    code, _, err = zk("add", "saved before the failure")
    assert code == 1 and one_line(err) and "was saved" in err
    monkeypatch.undo()
    [note] = Memory(zk_home).store.notes()
    assert note.short_id in err


def test_3_missing_newest_manifest_is_noticed_and_repaired(zk, zk_home):
    _notes(zk, 4)
    table = zk_home / "lancedb" / "notes.lance"
    versions = manifest_versions(table)
    newest = versions[-1]
    (table / "_versions" / f"{(1 << 64) - 1 - newest}.manifest").unlink()
    code, out, err = zk("list")
    assert code == 0 and one_line(err) and "newest commit(s) are missing" in err and len(out.splitlines()) == 3
    code, _, err = zk("add", "must not be written over the rolled-back store")
    assert code == 1 and one_line(err) and "nothing was written" in err
    assert manifest_versions(table)[-1] == newest - 1  # no new commit reused the lost version number
    code, out, _ = zk("doctor", "--json")
    report = json.loads(out)
    assert code == 1 and any(not c["ok"] and "newest commit" in c["message"] for c in report["checks"])
    import lancedb

    on_disk = lancedb.connect(str(zk_home / "lancedb")).open_table("notes")
    on_disk.checkout(manifest_versions(table)[-1])
    expected = on_disk.count_rows()  # what the newest version still on disk holds
    code, out, err = zk("repair", "--yes", "--json")
    repaired = json.loads(out)
    assert code == 0, err
    assert repaired["recovered"] == repaired["restored"] == expected == 3 and repaired["lost"] == 0
    assert (Path(repaired["kept"]) / "lancedb" / "notes.lance").is_dir()  # set aside, not deleted
    code, out, _ = zk("doctor")
    assert "FAIL table" not in out
    assert zk("add", "writes work again")[0] == 0


def test_3_truncated_data_file_recovers_every_readable_note(zk, zk_home, embedder):
    ids = _notes(zk, 5)
    table = zk_home / "lancedb" / "notes.lance"
    # Rewrite note 0 (a new row in a new data file), then damage that file: its older state is read back.
    memory = Memory(zk_home, embedder=embedder)
    first = memory.store.get(ids[0], with_vector=True)
    first.context = "rewritten"
    memory.store.update([first])
    rewritten = newest_data_file(table)
    # And damage note 3's only copy.
    third = sorted((table / "data").glob("*.lance"), key=lambda p: p.stat().st_mtime_ns)[3]
    for path in (rewritten, third):
        with open(path, "r+b") as fh:
            fh.truncate(path.stat().st_size // 2)
    for args in (["list"], ["export"], ["show", ids[1]]):
        code, _, err = zk(*args)
        assert code == 1 and one_line(err) and "truncated" in err and "zk doctor" in err, (args, err)
    code, out, _ = zk("doctor")
    assert code == 1 and "truncated" in out
    code, out, err = zk("repair", "--json")  # no consent (no terminal, no --yes): nothing changes
    data = json.loads(out)
    assert code == 1 and data["restored"] is None and Path(data["file"]).exists()
    assert zk("list")[0] == 1  # still the damaged store
    import lancedb

    t = lancedb.connect(str(table.parent)).open_table("notes")
    t.checkout(manifest_versions(table)[-1])
    newest_rows = t.count_rows()
    code, out, err = zk("repair", "--yes", "--json")
    data = json.loads(out)
    assert code == 0, err
    # Every row of the newest version except note 3's (whose only copy is cut) and the rewritten note 0
    # (whose older state comes from an older version).
    assert (data["newest_rows"], data["recovered"], data["from_older"], data["lost"]) == (newest_rows, 4, 1, 1)
    restored = {n.id: n for n in Memory(zk_home, embedder=embedder).store.notes()}
    assert set(restored) == set(ids) - {ids[3]}
    assert restored[ids[0]].context == ""  # the state before the lost rewrite


def test_3_missing_table_directory_is_never_rebuilt_empty(zk, zk_home, tmp_path):
    _notes(zk, 2)
    shutil.move(zk_home / "lancedb", tmp_path / "unmounted")
    for args in (["list"], ["add", "over an unmounted drive"], ["export"]):
        code, _, err = zk(*args)
        assert code == 1 and one_line(err) and "missing" in err and "mounted" in err, (args, err)
    assert not (zk_home / "lancedb" / "notes.lance").exists()  # nothing built in its place
    code, out, _ = zk("doctor")
    assert code == 1 and "FAIL table notes: missing" in out
    code, out, _ = zk("repair", "--yes")
    assert code == 1 and "nothing was changed" in out
    shutil.move(tmp_path / "unmounted", zk_home / "lancedb")  # the drive is back: everything is there
    assert zk("list")[0] == 0 and len(Memory(zk_home).store.notes()) == 2


def test_3_damaged_meta_json_is_one_line(zk, zk_home):
    _notes(zk, 1)
    meta = json.loads((zk_home / "meta.json").read_text())
    (zk_home / "meta.json").write_text(json.dumps({**meta, "schema_version": "1"}))
    code, _, err = zk("list")
    assert code == 1 and one_line(err) and "schema_version" in err
    code, out, _ = zk("doctor")
    assert code == 1 and "meta.json is damaged" in out


# -- 4, 6: restores ---------------------------------------------------------------------------------
def _export_line(note_id: str, content: str, notebook: str = "main", **extra) -> str:
    return json.dumps({"type": "note", "id": note_id, "content": content, "at": "2026-03-01T08:00:00",
                       "created": "2026-03-01T08:00:00", "keywords": [], "tags": [], "context": "",
                       "links": [], "status": "pending", "version": 1, "history": [], "notebook": notebook,
                       "kind": "note", "session_id": None, "speaker": None, "seq": 0, "source": None,
                       "content_hash": "", "error": "", **extra})


def test_4_crafted_restore_records_are_checked_one_by_one(zk, zk_home, tmp_path):
    good = "9473a2824303" + "0" * 20
    lines = [json.dumps({"type": "zk-export", "schema_version": 1, "notes": 7}),
             _export_line(good, "first"),
             _export_line(good, "first"),  # an exact repeat
             _export_line(good, "same id, other words"),
             _export_line("ab", "short id"),
             _export_line("not-hex!", "odd id", links=[good, "zz"]),
             _export_line("c" * 32, "\x1b]0;pwned\x07 terminal title"),
             _export_line("d" * 32, "bad date", at="yesterday"),
             "{broken json"]
    backup = tmp_path / "crafted.jsonl"
    backup.write_text("\n".join(lines) + "\n", encoding="utf-8")
    code, out, err = zk("import", str(backup), "--json")
    report = json.loads(out)
    assert code == 3
    assert report["added"] == 4  # first, the renumbered duplicate, "ab", "not-hex!"
    messages = {f["line"]: f["message"] for f in report["failed"]}
    assert set(messages) == {3, 4, 5, 6, 7, 8, 9}
    assert "repeat" in messages[3] and "restored as" in messages[4] and "not a note id" in messages[5]
    assert "control characters" in messages[7] and "ISO date" in messages[8]
    notes = Memory(zk_home).store.notes()
    assert len({n.id for n in notes}) == len(notes) == 4
    assert all(len(n.id) == 32 for n in notes)
    for note in notes:  # every restored note can be removed again
        code, _, err = zk("rm", note.id[:8], "--yes")
        assert code == 0, err
    assert Memory(zk_home).store.notes() == []


def test_6_restore_follows_notebook_and_ignores_format(zk, zk_home, tmp_path):
    code, _, _ = zk("-n", "work", "add", "work note")
    backup = tmp_path / "work.jsonl"
    assert zk("-n", "work", "export", "-o", str(backup))[0] == 0
    other = tmp_path / "other"
    assert zk("--home", str(other), "-n", "personal", "import", str(backup))[0] == 0
    code, out, _ = zk("--home", str(other), "-n", "personal", "list", "--json")
    assert [n["content"] for n in json.loads(out)] == ["work note"]
    assert json.loads(zk("--home", str(other), "-n", "work", "list", "--json")[1]) == []
    code, out, _ = zk("--home", str(tmp_path / "third"), "import", str(backup), "--format", "text", "--json")
    assert code == 0 and json.loads(out)["format"] == "zk-export"
    assert [n.content for n in Memory(tmp_path / "third").store.notes()] == ["work note"]
    zk("add", "main note")
    both = tmp_path / "all.jsonl"
    zk("export", "--all", "-o", str(both))
    code, _, err = zk("--home", str(tmp_path / "fourth"), "-n", "x", "import", str(both))
    assert code == 1 and one_line(err) and "2 notebooks" in err


# -- 5: escape sequences ----------------------------------------------------------------------------
def test_5_terminal_escapes_are_shown_not_sent(zk, zk_home, embedder):
    memory = Memory(zk_home, embedder=embedder)
    hostile = "knee \x1b]0;pwned\x07 report \x9b2J done"
    note = memory.new_note("placeholder", "2026-03-01")
    note.content = hostile  # as an older zk or a crafted store could hold it
    note.context = "ctx \x1b[31mred"
    memory.add_notes([note])
    for args in (["list"], ["show", note.id[:8]], ["search", "knee report"]):
        code, out, err = zk(*args)
        assert code == 0, err
        assert "\x1b" not in out and "\x07" not in out and "\x9b" not in out, args
        assert "\\x1b" in out, args
    code, out, _ = zk("show", note.id[:8], "--json")
    assert json.loads(out)["content"] == hostile  # --json stays exact


# -- 7: ChatGPT cycle -------------------------------------------------------------------------------
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


# -- 8: internal errors -----------------------------------------------------------------------------
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


# -- 9: Ctrl-C --------------------------------------------------------------------------------------
def _interrupt_add(home: Path, model_env: dict, text: str, after_stored: float) -> tuple[int, float, str]:
    env = {**os.environ, "ZK_HOME": str(home), "ZK_NO_WORKER": "1", **model_env,
           "PYTHONPATH": os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")])}
    proc = subprocess.Popen([sys.executable, "-m", "zettel_amem", "add", "--wait", text], env=env,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    start = time.monotonic()
    while not (home / "meta.json").exists() and time.monotonic() - start < 120:
        time.sleep(0.05)
    time.sleep(after_stored)
    sent = time.monotonic()
    proc.send_signal(signal.SIGINT)
    _, err = proc.communicate(timeout=120)
    return proc.returncode, time.monotonic() - sent, err


def test_9_ctrl_c_during_add_wait_says_so_and_keeps_the_note(tmp_path):
    home = tmp_path / "home"
    code, seconds, err = _interrupt_add(home, {"ZK_LLM_MODEL": "python:tests.fake_llm:FakeLLM",
                                               "ZK_FAKE_DELAY": "30"}, "interrupted while the model works", 5.0)
    assert code == 130 and seconds < 1.5 and one_line(err) and "interrupted" in err, (code, seconds, err)
    [note] = Memory(home).store.notes()
    assert note.status == "pending" and note.short_id in err


@pytest.mark.slow
def test_9_ctrl_c_stops_the_real_model_within_a_second(tmp_path):
    """A long note makes a prompt that llama.cpp evaluates for many seconds; Ctrl-C must not wait for it."""
    text = " ".join(f"Day {i}: ran {i % 9 + 1} km at Yeouido, knee fine, coffee with Mina after." for i in range(60))
    code, seconds, err = _interrupt_add(tmp_path / "home", {}, text, 4.0)
    assert code == 130 and seconds < 1.5 and one_line(err) and "interrupted" in err, (code, seconds, err)
    assert [n.status for n in Memory(tmp_path / "home").store.notes()] == ["pending"]


# -- 10: read-only store ----------------------------------------------------------------------------
def test_10_reading_commands_work_on_a_read_only_store(zk, zk_home, tmp_path):
    _notes(zk, 2)
    if os.geteuid() == 0:  # root writes through file modes: use a read-only bind mount instead
        if shutil.which("unshare") is None or subprocess.run(["unshare", "-m", "true"]).returncode:
            pytest.skip("root without mount namespaces: no way to make the store read-only")
        ro = tmp_path / "ro"
        ro.mkdir()
        wrap = f"unshare -m bash -c 'mount --bind {zk_home} {ro} && mount -o remount,ro,bind {ro} && %s'"
        home = ro
    else:
        for path in [zk_home, *zk_home.rglob("*")]:
            path.chmod(path.stat().st_mode & ~0o222)
        wrap, home = "%s", zk_home
    listed = shell(wrap % f"zk --home {home} list --json", zk_home)
    assert listed.returncode == 0, listed.stderr
    assert len(json.loads(listed.stdout)) == 2
    exported = shell(wrap % f"zk --home {home} export", zk_home)
    assert exported.returncode == 0 and len(exported.stdout.splitlines()) == 3, exported.stderr
    added = shell(wrap % f"zk --home {home} add 'not possible'", zk_home)
    assert added.returncode == 1 and one_line(added.stderr), added.stderr
    if os.geteuid() != 0:
        for path in [zk_home, *zk_home.rglob("*")]:
            path.chmod(path.stat().st_mode | 0o200)


# -- 11: rm with a damaged episodes table -----------------------------------------------------------
def test_11_rm_refuses_before_deleting_when_another_table_is_damaged(zk, zk_home, embedder):
    from zettel_amem.models import Episode
    from zettel_amem.tier_store import TierStore

    [note_id] = _notes(zk, 1)
    memory = Memory(zk_home, embedder=embedder)
    TierStore(memory.store).put_episodes([Episode(id="e" + "1" * 15, session_id="s" + "1" * 15)])
    newest_data_file(zk_home / "lancedb" / "episodes.lance").unlink()
    code, _, err = zk("rm", note_id[:8], "--yes")
    assert code == 1 and one_line(err) and "episodes table" in err and "nothing was written" in err
    assert Memory(zk_home).store.get(note_id) is not None  # not deleted behind an error


# -- 12: huge notes ---------------------------------------------------------------------------------
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
