"""The store on disk: schema versions (newer refused, older migrated), damage that `zk doctor` finds and
`zk repair` recovers from, writes refused before anything is written, and a read-only store.
`test_N_...` are the numbered cases of the break-it report (issue #16)."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from pathlib import Path

import pytest

from tests.harness import one_line, shell
from zettel_amem.core.config import ZkError
from zettel_amem.memory import Memory
from zettel_amem.storage.database import manifest_versions
from zettel_amem.storage.store import note_to_row


def test_newer_schema_is_refused_and_older_schema_is_migrated(zk_home, embedder, tmp_path):
    import lancedb
    import pyarrow as pa

    memory = Memory(zk_home, embedder=embedder)
    memory.add("hello", "2026-03-01")
    meta = json.loads((zk_home / "meta.json").read_text())
    (zk_home / "meta.json").write_text(json.dumps({**meta, "schema_version": 99}))
    with pytest.raises(ZkError, match="newer than this zk"):
        Memory(zk_home, embedder=embedder).store  # noqa: B018
    # An "old" store: written before the error/speaker columns existed, schema version 0.
    old_home = tmp_path / "old"
    db = lancedb.connect(str(old_home / "lancedb"))
    dropped = ("error", "speaker", "terms", "enrichment_terms")  # the old store has no keyword terms either
    fields = [f for f in memory.store.table.schema if f.name not in dropped]
    table = db.create_table("notes", schema=pa.schema(fields))
    row = {k: v for k, v in note_to_row(memory.store.notes(with_vector=True)[0]).items() if k not in dropped}
    table.add([row])
    (old_home / "meta.json").write_text(json.dumps({"schema_version": 0, "embedder": "e5-small", "dim": 384}))
    migrated = Memory(old_home, embedder=embedder)
    [note] = migrated.store.notes()
    assert note.content == "hello" and note.error == "" and note.speaker is None
    assert json.loads((old_home / "meta.json").read_text())["schema_version"] >= 1
    migrated.add("after migration", "2026-03-02")
    assert len(migrated.store.notes()) == 2
    # The migration wrote the old note's keyword terms and built the full-text index over them.
    assert [h.note.content for h in migrated.search("hello", use_vector=False)] == ["hello"]


def test_a_cold_start_does_not_import_lancedbs_rest_client(zk, zk_home):
    """`zk search` on a local store never loads the REST endpoints of LanceDB namespaces (half its cold
    start); the client still loads in full the first time something asks the package for a name."""
    import subprocess
    import sys

    zk("add", "knee hurts after the long run")
    code = ("import sys; from zettel_amem.memory import Memory; m = Memory(sys.argv[1]); "
            "print(len(m.search('knee', use_vector=False)), 'lance_namespace_urllib3_client.api' in sys.modules); "
            "from lance_namespace_urllib3_client import ApiClient; print(ApiClient.__name__)")
    out = subprocess.run([sys.executable, "-c", code, str(zk_home)], capture_output=True, text=True, check=True,
                         env={**os.environ, "ZK_NO_WORKER": "1"}).stdout.split()
    assert out == ["1", "False", "ApiClient"]


def newest_data_file(table_dir: Path) -> Path:
    return max((table_dir / "data").glob("*.lance"), key=lambda p: p.stat().st_mtime_ns)


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
    from zettel_amem.storage.store import Store

    def broken_get(self, *args, **kwargs):
        from zettel_amem.core.config import ZkError

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
    assert on_disk.count_rows() == 3  # what the newest version still on disk holds
    code, out, err = zk("repair", "--yes", "--json")
    repaired = json.loads(out)
    assert code == 0, err
    # The lost commit's own data file gives its note back (issue #28).
    assert repaired["recovered"] == repaired["restored"] == 4 and repaired["lost"] == 0
    assert repaired["lost_commits"] == [{"version": newest, "operation": "append", "rows": 1, "unreadable_files": 0}]
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
    # Reads show the newest version whose files are whole (before note 3), with one warning line (#28).
    for args in (["list"], ["export"], ["show", ids[1]]):
        code, _, err = zk(*args)
        assert code == 0 and len(err.splitlines()) == 1 and "truncated" in err and "zk repair" in err, (args, err)
    code, _, err = zk("add", "not over the damage")
    assert code == 1 and one_line(err) and "truncated" in err and "zk doctor" in err, err
    code, out, _ = zk("doctor")
    assert code == 1 and "truncated" in out
    code, out, err = zk("repair", "--json")  # no consent (no terminal, no --yes): nothing changes
    data = json.loads(out)
    assert code == 1 and data["restored"] is None and Path(data["file"]).exists()
    assert zk("add", "still refused")[0] == 1  # still the damaged store
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


def test_a_new_store_whose_creation_never_committed_opens(zk, zk_home):
    """A first `zk add` killed inside table creation (or one racing another first open) leaves the table's
    folder without a commit: the next open creates it under the lock instead of failing "not found"."""
    (zk_home / "lancedb" / "notes.lance" / "_versions").mkdir(parents=True)
    code, out, err = zk("add", "the first note after an aborted start", "--json")
    assert code == 0, err
    assert [n.content for n in Memory(zk_home).store.notes()] == ["the first note after an aborted start"]


def test_3_damaged_meta_json_is_one_line(zk, zk_home):
    _notes(zk, 1)
    meta = json.loads((zk_home / "meta.json").read_text())
    (zk_home / "meta.json").write_text(json.dumps({**meta, "schema_version": "1"}))
    code, _, err = zk("list")
    assert code == 1 and one_line(err) and "schema_version" in err
    code, out, _ = zk("doctor")
    assert code == 1 and "meta.json is damaged" in out


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


@pytest.mark.skipif(not hasattr(os, "geteuid") or os.geteuid() == 0, reason="root writes anywhere")
def test_read_only_store_is_one_line_and_unchanged(zk, zk_home):
    Memory(zk_home).add("written before the store became read-only", "2026-03-01")
    modes = {p: p.stat().st_mode for p in [zk_home, *zk_home.rglob("*")]}
    for path in modes:
        path.chmod(modes[path] & ~0o222)
    try:
        code, _, err = zk("add", "one more")
        assert code == 1 and len(err.strip().splitlines()) == 1 and "Traceback" not in err
    finally:
        for path, mode in modes.items():
            path.chmod(mode)
    assert [n.content for n in Memory(zk_home).store.notes()] == ["written before the store became read-only"]


def _read_only(home: Path, tmp_path: Path) -> tuple[str, Path, str]:
    """(a wrapper that runs a bash command line with `home` seen read-only, the path to give zk there, a
    command that makes that path read-only from inside the wrapper, as a remount mid-command would).
    Root writes through file modes: a bind mount remounted read-only in a mount namespace instead."""
    if os.geteuid() != 0:
        freeze = f"chmod -R a-w {home}"
        return f"{freeze} && %s", home, freeze
    if shutil.which("unshare") is None or subprocess.run(["unshare", "-m", "true"]).returncode:
        pytest.skip("root without mount namespaces: no way to make the store read-only")
    mount = tmp_path / "ro"
    mount.mkdir()
    freeze = f"mount -o remount,ro,bind {mount}"
    return f"unshare -m bash -c 'mount --bind {home} {mount} && {freeze} && %s'", mount, freeze


def _thaw(home: Path) -> None:
    if os.geteuid() != 0:
        for path in [home, *home.rglob("*")]:
            path.chmod(path.stat().st_mode | 0o200)


def test_every_writing_command_on_a_read_only_home_is_the_one_line_add_gives(zk, zk_home, tmp_path):
    """Issue #53 C5: rm, edit, sync, process and prune ended in "internal error: OSError"; `zk edit` opened
    the editor first. Each is now the line `zk add` gives, and the editor never opens."""
    from tests.harness import FAKE_MODEL, zk_command

    note_id = _notes(zk, 1)[0][:8]
    zk("add", "무릎이 아파서 병원에 다녀왔다", check=True)
    wrap, home, _ = _read_only(zk_home, tmp_path)
    opened = tmp_path / "editor-opened"
    editor = tmp_path / "editor.sh"
    editor.write_text(f"#!/bin/sh\ntouch {opened}\necho '고친 문장' >> \"$1\"\n")
    editor.chmod(0o755)
    commands = {"add": "add 'one more'", "rm": f"rm {note_id} --yes", "edit": f"edit {note_id}",
                "sync": f"sync {tmp_path / 'vault'}", "process": "process --limit 1", "prune": "prune --older-than 1y"}
    program = " ".join(zk_command())
    script = tmp_path / "commands.sh"
    script.write_text("".join(f"echo @@{name}; EDITOR={editor} ZK_LLM_MODEL={FAKE_MODEL} {program} --home {home} "
                              f"{args} 2>&1 </dev/null; echo @@rc=$?\n" for name, args in commands.items()))
    try:
        done = shell(wrap % f"bash {script}", zk_home)
    finally:
        _thaw(zk_home)
    said = {part.split("\n", 1)[0]: part.split("\n", 1)[1] for part in done.stdout.split("@@")[1:]
            if not part.startswith("rc=")}
    codes = [line for line in done.stdout.splitlines() if line.startswith("@@rc=")]
    assert set(said) == set(commands) and codes == ["@@rc=1"] * len(commands), done.stdout + done.stderr
    for name, out in said.items():
        assert f"zk: error: cannot write to {home}: " in out, (name, out)
        assert out.strip().splitlines()[-1].startswith("zk: error: cannot write to"), (name, out)
        assert "internal error" not in out and "Traceback" not in out, (name, out)
    assert not opened.exists()  # checked before the editor opened: nothing was typed in vain
    assert sorted(n.content for n in Memory(zk_home).store.notes()) == ["note number 0", "무릎이 아파서 병원에 다녀왔다"
                                                                       ]


def test_an_edit_that_cannot_be_saved_names_the_file_with_the_typed_text(zk, zk_home, tmp_path):
    """Issue #53 C5: the home turns read-only while the editor is open (a remount); the one line names the
    file that holds what was typed."""
    note_id = _notes(zk, 1)[0][:8]
    wrap, home, freeze = _read_only(zk_home, tmp_path)
    wrap = wrap.replace(f" && {freeze}", "").replace(f"{freeze} && ", "")  # writable until the editor closes
    editor = tmp_path / "editor.sh"
    editor.write_text(f"#!/bin/sh\necho '고친 문장, fixed sentence' >> \"$1\"\n{freeze}\n")
    editor.chmod(0o755)
    kept = tmp_path / "kept"
    kept.mkdir()
    try:
        done = shell(wrap % f"TMPDIR={kept} EDITOR={editor} zk --home {home} edit {note_id}", zk_home)
    finally:
        _thaw(zk_home)
    [typed] = list(kept.glob("zk-*.md"))
    assert done.returncode == 1 and one_line(done.stderr), done.stderr
    assert done.stderr.startswith(f"zk: error: cannot write to {home}: ") and f"your text is in {typed}" in done.stderr
    assert "고친 문장, fixed sentence" in typed.read_text(encoding="utf-8")
    assert [n.content for n in Memory(zk_home).store.notes()] == ["note number 0"]


# -- 11: rm with a damaged episodes table -----------------------------------------------------------
def test_11_rm_refuses_before_deleting_when_another_table_is_damaged(zk, zk_home, embedder):
    from zettel_amem.core.models import Episode
    from zettel_amem.storage.tier_store import TierStore

    [note_id] = _notes(zk, 1)
    memory = Memory(zk_home, embedder=embedder)
    TierStore(memory.store).put_episodes([Episode(id="e" + "1" * 15, session_id="s" + "1" * 15)])
    newest_data_file(zk_home / "lancedb" / "episodes.lance").unlink()
    code, _, err = zk("rm", note_id[:8], "--yes")
    assert code == 1 and one_line(err) and "episodes table" in err and "nothing was written" in err
    assert Memory(zk_home).store.get(note_id) is not None  # not deleted behind an error


def test_a_read_whose_version_upkeep_dropped_reads_the_newest_once(memory):
    """The worker's upkeep drops every old version of a local table at once, with the files of a version
    another process's read began on (seen as "a data file is missing" from the MCP server's search): the read
    runs again on the newest version, once; a file still missing then is damage, said in one line."""
    memory.add("a note so the table exists")
    missing = "lance error: Not found: /home/x/lancedb/notes.lance/data/0a1b.lance, /rustc/abc/src/io.rs:12:5"
    calls: list[int] = []

    def dropped_once() -> str:
        calls.append(1)
        if len(calls) == 1:
            raise OSError(missing)
        return "the newest version"

    assert memory.store.guarded_read(dropped_once) == "the newest version" and len(calls) == 2

    def always_missing() -> str:
        raise OSError(missing)

    with pytest.raises(ZkError, match=r"a data file is missing \(x/lancedb/notes.lance\)$"):
        memory.store.guarded_read(always_missing)
