"""Backups: `zk export` then `zk import` restores an identical store (ids, history, vectors); a backup
is restored, not imported as chat, whether piped or named; crafted or damaged backup records are checked
one by one. `test_N_...` are the numbered cases of the break-it report (issue #16)."""

from __future__ import annotations

import io
import json
import os
import shutil
import subprocess
from pathlib import Path

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests import harness
from tests.fake_llm import EvolvingFakeLLM
from tests.harness import one_line
from tests.sample import RUNS, TEXT_WITH_ESCAPES, add_all
from zettel_amem.ingest.export import export_jsonl, restore
from zettel_amem.memory import Memory


def test_export_then_import_restores_an_identical_store(evolving, tmp_path, embedder):
    from zettel_amem.ingest.importer import import_source

    add_all(evolving, RUNS)
    chat = tmp_path / "chat.txt"
    chat.write_text("민수: 무릎 괜찮아?\nAmy: better now\n", encoding="utf-8")
    import_source(evolving, chat, "auto")
    evolving.revert(max(evolving.store.notes(), key=lambda n: n.version).id)
    out = io.StringIO()
    count = export_jsonl(evolving, out)
    path = tmp_path / "backup.jsonl"
    path.write_text(out.getvalue(), encoding="utf-8")
    fresh = Memory(tmp_path / "restored", llm=EvolvingFakeLLM(), embedder=embedder)
    report = restore(fresh, path)
    assert report["added"] == count == len(evolving.store.notes())
    original = {n.id: n for n in evolving.store.notes(with_vector=True)}
    restored = {n.id: n for n in fresh.store.notes(with_vector=True)}
    assert original.keys() == restored.keys()
    for note_id, note in original.items():
        other = restored[note_id]
        for field in ("content", "at", "created", "keywords", "tags", "context", "links", "status", "version",
                      "notebook", "kind", "session_id", "speaker", "seq", "source", "content_hash"):
            assert getattr(note, field) == getattr(other, field), field
        assert [v.to_dict() for v in note.history] == [v.to_dict() for v in other.history]
        assert np.allclose(note.vector, other.vector, atol=1e-5)
    assert restore(fresh, path)["added"] == 0  # restoring twice adds nothing


def test_a_backup_piped_or_named_jsonl_is_restored_not_imported_as_chat(evolving, tmp_path, zk):
    add_all(evolving, RUNS[:3])
    out = io.StringIO()
    export_jsonl(evolving, out)
    backup = out.getvalue().encode("utf-8")
    (tmp_path / "backup.jsonl").write_bytes(backup)
    original = {n.id: n.content for n in evolving.store.notes()}
    named = ["import", str(tmp_path / "backup.jsonl"), "--format", "jsonl"]
    for args, stdin in ((["import", "-"], backup), (named, None)):
        home = tmp_path / f"home-{len(stdin or b'')}"
        done = zk("--home", str(home), *args, "--json", stdin=stdin, check=True)
        assert done.json()["format"] == "zk-export"
        restored = Memory(home, embedder=evolving.embedder)
        assert {n.id: n.content for n in restored.store.notes()} == original  # same ids, no chat turns


# -- 4, 6: restores (issue #16) ---------------------------------------------------------------------
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


_IDS = st.one_of(st.just("ab"), st.just("9473a2824303"), st.text(max_size=40), st.integers(), st.none(),
                 st.sampled_from(["a" * 32, "A" * 32, "b" * 32, "0" * 31, "g" * 32]))


_RECORDS = st.fixed_dictionaries(
    {"id": _IDS, "content": st.one_of(TEXT_WITH_ESCAPES, st.text(max_size=30), st.integers(), st.none()),
     "at": st.one_of(st.just("2026-03-01T08:00:00"), st.text(max_size=20), st.none()),
     "links": st.one_of(st.lists(_IDS, max_size=3), st.text(max_size=5)),
     "version": st.one_of(st.integers(-2, 5), st.text(max_size=3)),
     "notebook": st.one_of(st.just("main"), st.just("work"), st.text(max_size=8), st.integers()),
     "history": st.one_of(st.just([]), st.lists(st.dictionaries(st.text(max_size=5), st.integers()), max_size=2))})


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(records=st.lists(_RECORDS, max_size=6), raw=st.lists(st.text(max_size=30), max_size=2))
def test_crafted_restore_records_are_checked_one_by_one(records, raw, tmp_path_factory, embedder, zk):
    """Any export-shaped file: never a traceback, every skipped or renumbered record reported, and the
    store holds only valid, unique note ids that `zk rm` can remove."""
    home = tmp_path_factory.mktemp("restore")
    lines = [json.dumps({"type": "zk-export", "schema_version": 1})]
    lines += [json.dumps({"type": "note", **r}) for r in records] + [r.replace("\n", " ") for r in raw]
    path = home / "backup.jsonl"
    path.write_text("\n".join(lines) + "\n", encoding="utf-8", errors="surrogatepass")
    code, out, err = zk("--home", str(home / "h"), "import", str(path), "--json")
    assert "Traceback" not in err and "internal error" not in err, err
    if code not in (0, 3):
        assert code == 1 and len(err.strip().splitlines()) == 1, err
        return
    report = json.loads(out)
    body = [line for line in lines[1:] if line.strip()]
    restored_or_reported = report["added"] + report["skipped_duplicates"] + len({f["line"] for f in report["failed"]})
    assert restored_or_reported >= len(body)  # every record is restored or has its line
    assert (code == 3) == bool(report["failed"])
    notes = Memory(home / "h", embedder=embedder).store.notes()
    assert len({n.id for n in notes}) == len(notes) == report["added"]
    assert all(len(n.id) == 32 and all(c in "0123456789abcdef" for c in n.id) for n in notes)
    assert all(len(link) == 32 for n in notes for link in n.links)


# -- the break-it report (issue #53): C11, a backup written all or nothing; C9, records nested too deeply -------
def _backup_of(zk, tmp_path, notes: list[str], name: str = "backup.jsonl") -> list[str]:
    for text in notes:
        zk("add", text, check=True)
    path = tmp_path / name
    zk("export", "--all", "-o", str(path), check=True)
    return path.read_text(encoding="utf-8").splitlines(keepends=True)


def test_c11_a_failed_export_leaves_the_old_backup_as_it_was(zk, tmp_path, monkeypatch):
    import errno

    from zettel_amem.ingest import export

    folder = tmp_path / "backups"
    folder.mkdir()
    good = _backup_of(zk, folder, ["어제의 백업 yesterday's backup"])
    target = folder / "backup.jsonl"
    target.chmod(0o600)
    real_export = export.export_jsonl

    def disk_fills(memory, out, all_notebooks=True):  # half a record in, the disk is full
        out.write(json.dumps({"type": "zk-export", "notes": 6}) + "\n" + '{"type": "note", "content": "오늘')
        out.flush()
        raise OSError(errno.ENOSPC, "No space left on device")

    def interrupted(memory, out, all_notebooks=True):
        real_export(memory, out, all_notebooks)
        raise KeyboardInterrupt

    zk("add", "오늘의 새 노트 today's note", check=True)
    for failing in (disk_fills, interrupted):
        monkeypatch.setattr(export, "export_jsonl", failing)
        code, _, err = zk("export", "--all", "-o", str(target))
        assert code == (1 if failing is disk_fills else 130), err  # one line or "interrupted"
        assert target.read_text(encoding="utf-8").splitlines(keepends=True) == good  # the old backup, whole
        assert sorted(p.name for p in folder.iterdir()) == ["backup.jsonl"]  # no temporary file left behind
    monkeypatch.setattr(export, "export_jsonl", disk_fills)
    _, _, err = zk("export", "--all", "-o", str(target))
    assert one_line(err) and "no space left" in err and f"{target} was not changed" in err
    monkeypatch.setattr(export, "export_jsonl", real_export)
    zk("export", "--all", "-o", str(target), check=True)
    assert len(target.read_text(encoding="utf-8").splitlines()) == 3  # the header and both notes
    assert target.stat().st_mode & 0o777 == 0o600  # a private backup stays private


def test_c11_export_targets_that_cannot_be_written_are_one_line(zk, tmp_path, monkeypatch):
    zk("add", "무릎이 아프다 my knee hurts", check=True)
    folder = tmp_path / "backups"
    folder.mkdir()
    for target, says in ((folder, "is a folder"), (tmp_path / "missing" / "x.jsonl", "no folder"),
                         (Path("/dev/full"), "No space left")):
        code, _, err = zk("export", "-o", str(target))
        assert code == 1 and one_line(err) and says in err and str(target) in err, err
    assert list(folder.iterdir()) == []
    monkeypatch.chdir(tmp_path)
    code, out, err = zk("export", "-o", "-")  # standard output, and only the backup there
    assert code == 0 and not (tmp_path / "-").exists()
    records = [json.loads(line) for line in out.splitlines()]
    assert records[0]["type"] == "zk-export" and [r["content"] for r in records[1:]] == ["무릎이 아프다 my knee hurts"]


def test_c11_a_backup_cut_short_never_restores_silently(zk, tmp_path):
    lines = _backup_of(zk, tmp_path, [f"{i}번째 노트: 오늘은 {i}km 달렸다 ran {i} km" for i in range(1, 7)])
    whole = "".join(lines).encode("utf-8")
    at_line_end = tmp_path / "cut-at-line.jsonl"
    at_line_end.write_bytes("".join(lines[:5]).encode("utf-8"))  # the header and 4 of the 6 notes
    code, out, err = zk("--home", str(tmp_path / "a"), "import", str(at_line_end), "--json")
    report = json.loads(out)
    assert code == 3 and report["added"] == 4
    assert [f["message"] for f in report["failed"]] == ["the backup holds 4 of 6 notes (cut short?)"]
    mid_character = whole.rindex("번째".encode()) + 1  # inside a Korean character of the last record
    cut = tmp_path / "cut-mid-record.jsonl"
    cut.write_bytes(whole[:mid_character])
    code, out, err = zk("--home", str(tmp_path / "b"), "import", str(cut), "--json")
    report = json.loads(out)
    assert code == 3 and report["added"] == 5
    assert {f["line"]: f["message"] for f in report["failed"]} == {
        7: "the backup ends in the middle of this record (cut short?); skipped",
        None: "the backup holds 5 of 6 notes (cut short?)"}
    code, _, err = zk("--home", str(tmp_path / "c"), "import", str(cut))  # as a user sees it
    assert code == 3 and "cut short" in err and "5 of 6" in err


def test_c9_a_record_nested_too_deeply_is_skipped_and_the_rest_restored(zk, tmp_path):
    lines = _backup_of(zk, tmp_path, [f"note {i} 노트 {i}" for i in range(12)])
    record = json.loads(lines[7])
    deep_links = json.dumps({**record, "id": "e" * 32}).replace('"links": []', '"links": ' + "[" * 100_000 + "]"
                                                                 * 100_000)
    deep_history = json.dumps({**record, "id": "f" * 32, "history": [{  # readable, but deep enough that the
        "version": 1, "at": "2026-03-01T08:00:00", "reason": "evolution",  # store's reads would fail on it
        "changes": {"content": {"old": json.loads("[" * 900 + "]" * 900), "new": "x"}}}]})
    lines[7:7] = [deep_links + "\n", deep_history + "\n"]
    backup = tmp_path / "with-deep.jsonl"
    backup.write_text("".join(lines), encoding="utf-8")
    home = tmp_path / "restored"
    code, out, err = zk("--home", str(home), "import", str(backup), "--json")
    report = json.loads(out)
    assert code == 3 and report["added"] == 12, err
    messages = {f["line"]: f["message"] for f in report["failed"]}
    assert messages[8] == "not valid JSON: nested too deeply; skipped"
    assert set(messages) == {8, 9} and "nested" in messages[9]
    listed = zk("--home", str(home), "list", "--json", "--limit", "100")
    assert listed.exit_code == 0 and len(listed.json()) == 12, listed.stderr


def test_c11_a_full_disk_keeps_the_old_backup(zk, zk_home, tmp_path):
    """The report's case on a real full disk: a 256 KB tmpfs (root in a mount namespace; skipped elsewhere)."""
    if os.geteuid() != 0 or shutil.which("unshare") is None or subprocess.run(["unshare", "-m", "true"]).returncode:
        pytest.skip("needs root with mount namespaces to mount a small tmpfs")
    old_home, disk = tmp_path / "old-home", tmp_path / "disk"
    zk("--home", str(old_home), "add", "어제의 백업 yesterday's backup", check=True)
    for i in range(3):  # today's notebook: its backup no longer fits
        zk("add", f"{i}: " + "오늘은 무릎이 괜찮았다 my knee was fine today. " * 600, check=True)
    disk.mkdir()
    backup = disk / "backup.jsonl"
    done = harness.shell(f"unshare -m bash -c 'mount -t tmpfs -o size=256k tmpfs {disk} && "
                         f"zk --home {old_home} export --all -o {backup} && md5sum {backup} && "
                         f"head -c 200000 /dev/zero > {disk}/filler; zk export --all -o {backup}; echo exit=$?; "
                         f"md5sum {backup}; ls -A {disk}'", zk_home)
    before, after, *rest = [line for line in done.stdout.splitlines() if not line.startswith("exit=")]
    assert "exit=1" in done.stdout and before == after, done.stdout + done.stderr
    assert rest == ["backup.jsonl", "filler"]  # no temporary file left behind
    err = done.stderr.strip().splitlines()[-1]
    assert "no space left" in err and f"{backup} was not changed" in err, done.stderr


def test_d13_a_backup_restored_into_another_notebook_of_the_same_home_is_copied(zk, zk_home, evolving, tmp_path):
    """D13 (break-it-d): `zk -n other import backup.jsonl` in the home the backup came from restored nothing
    ("11 already present": the ids are there, in notebook main). The notes come in as copies with new ids,
    links, versions and chat sessions naming the copies, and the line says so; a second restore adds nothing;
    the original notebook is untouched. The same through a pipe (`zk export | zk -n other import -`)."""
    ids = add_all(evolving, RUNS[:4])  # linked and evolved notes, with versions naming each other
    chat = tmp_path / "chat.jsonl"
    chat.write_text('{"role": "user", "content": "무릎이 아프다"}\n{"role": "assistant", "content": "Rest it."}\n',
                    encoding="utf-8")
    zk("import", str(chat), "--no-llm", "-q", check=True)
    backup = tmp_path / "main.jsonl"
    zk("export", "-o", str(backup), check=True)
    main_before = {n.id: n for n in Memory(zk_home).store.notes("main")}
    assert len(main_before) == len(ids) + 2 and any(n.links for n in main_before.values())

    code, out, err = zk("-n", "other", "import", str(backup))
    assert code == 0, err
    assert (f"restored {len(main_before)} note(s) into notebook 'other' ({len(main_before)} as new notes with new "
            "ids: notebook 'main' of this home holds their ids), 0 already present") in " ".join(out.split())
    store = Memory(zk_home).store
    copies = store.notes("other")
    assert len(copies) == len(main_before) and not {n.id for n in copies} & set(main_before)
    by_text = {n.content: n for n in copies}
    for original in main_before.values():
        copy = by_text[original.content]
        copied_ids = {n.id for n in copies}
        assert all(i in copied_ids for i in copy.links) and len(copy.links) == len(original.links)
        assert all(v.cause in copied_ids | {None} for v in copy.history)
        if copy.kind == "turn":  # a chat of its own: another notebook's session is not shared
            assert copy.session_id != original.session_id
            assert store.notebook_of_session(copy.session_id) == "other"
    assert {n.id: n.links for n in store.notes("main")} == {i: n.links for i, n in main_before.items()}
    code, out, err = zk("-n", "other", "import", str(backup), "--json")
    assert code == 0 and (out := json.loads(out))["added"] == 0 and out["skipped_duplicates"] == len(main_before)

    piped = harness.shell("zk export | zk -n piped import - --json", zk_home)
    report = json.loads(piped.stdout)
    assert piped.returncode == 0 and report["added"] == report["copied"] == len(main_before), piped.stderr
    assert report["copied_from"] == ["main"]
    assert len(Memory(zk_home).store.notes("piped")) == len(main_before)
