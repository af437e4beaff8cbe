"""A vault or a Markdown folder from anywhere (a synced share, a clone, a zip): only regular files inside
it are read, nothing is written through a link, an interrupted export is finished by the next one, file
names are portable, zk's own marker lines in a note survive, and JSON of no known format is refused."""

from __future__ import annotations

import errno
import json
import os
import unicodedata
import uuid
from pathlib import Path

import pytest

from tests.harness import one_line, run, zk_env
from zettel_amem.core.models import Entity
from zettel_amem.ingest.vault import MARKER
from zettel_amem.memory import Memory


@pytest.fixture
def zk(zk, fake_model):
    return zk


def add(zk, text: str, at: str = "2026-03-02T10:00") -> str:
    return zk("add", "-", "--at", at, "--json", stdin=text, check=True).json()["id"]


def seed_entities(home: Path, names: list[str]) -> None:
    from zettel_amem.tiers.service import Tiers

    memory = Memory(home)
    Tiers(memory).store.put_entities([Entity(id=uuid.uuid4().hex, name=name, type="other", key=name.casefold(),
                                             created="2026-03-01T10:00:00", episodes=[],
                                             vector=[0.01] * memory.embedder.dim) for name in names])


def test_zk_marker_lines_inside_a_note_survive_a_round_trip(zk, tmp_path):
    """F1: everything after a `<!-- zk:links -->` line of the note's own text was lost."""
    texts = ["Before the marker\n<!-- zk:links -->\nAfter the marker: this sentence must survive",
             "quoted twice\n<!--\\ zk:links -->\n<!-- zk:links -->\n<!-- zk:other -->  \nend #tag",
             "---\nfoo: bar\n---\nlooks like front matter\n---"]
    for i, text in enumerate(texts):
        add(zk, text, f"2026-03-0{i + 1}T10:00")
    vault = tmp_path / "vault"
    zk("export", "-f", "markdown", str(vault), check=True)
    fresh = tmp_path / "fresh"
    zk("--home", str(fresh), "import", str(vault), check=True)
    assert sorted(n.content for n in Memory(fresh).store.notes()) == sorted(texts)


def test_plain_folder_import_reads_no_file_outside_it(zk, tmp_path):
    """F7: file links to /etc/passwd or a secret became notes."""
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "secret.txt").write_text("SECRET-OUTSIDE-THE-VAULT token=abc123\n")
    folder = tmp_path / "md"
    (folder / "sub").mkdir(parents=True)
    (folder / "ok.md").write_text("normal note in the folder\n")
    (folder / "inside.md").symlink_to(folder / "ok.md")  # a link that stays inside is read
    (folder / "passwd.md").symlink_to("/etc/passwd")
    (folder / "sub" / "readme.md").symlink_to(outside / "secret.txt")
    code, out, err = zk("import", str(folder), "--no-llm", "--json")
    assert code == 3
    report = json.loads(out)
    assert report["added"] == 2 and len(report["failed"]) == 2  # ok.md, and inside.md: a link to it
    assert all("outside the folder" in p["message"] for p in report["failed"])
    contents = " ".join(n.content for n in Memory(os.environ["ZK_HOME"]).store.notes())
    assert "SECRET" not in contents and "root:" not in contents


def test_a_vault_page_linking_outside_is_not_read(zk, tmp_path):
    add(zk, "a real note")
    vault = tmp_path / "vault"
    zk("export", "-f", "markdown", str(vault), check=True)
    outside = tmp_path / "outside.md"
    outside.write_text(f'---\nid: "{uuid.uuid4().hex}"\nat: "2026-01-01T00:00:00"\n---\nplanted outside\n')
    (vault / "notes" / "planted.md").symlink_to(outside)
    code, out, err = zk("--home", str(tmp_path / "fresh"), "import", str(vault))
    assert code == 3 and "notes/planted.md: a link to a file outside the folder" in err
    assert [n.content for n in Memory(tmp_path / "fresh").store.notes()] == ["a real note"]


def test_fifos_devices_and_huge_files_are_skipped_not_waited_on(tmp_path):
    """F8: a FIFO hung the import forever; a link to /dev/zero spun or ate all memory."""
    folder = tmp_path / "md"
    folder.mkdir()
    (folder / "a.md").write_text("# ok\nfine note\n")
    os.mkfifo(folder / "pipe.md")
    (folder / "zero.md").symlink_to("/dev/zero")
    with open(folder / "huge.md", "wb") as fh:  # sparse: no disk used
        fh.truncate(17 * 1024 * 1024)
    env = zk_env(tmp_path / "home")
    done = run("import", str(folder), "--no-llm", "--json", env=env, timeout=120)
    assert done.returncode == 3, done.stderr
    messages = sorted(p["message"] for p in json.loads(done.stdout)["failed"])
    assert [m.split(":")[0] for m in messages] == ["huge.md", "pipe.md", "zero.md"]
    assert json.loads(done.stdout)["added"] == 1
    vault = tmp_path / "vault"  # and in a zk vault
    run("add", "a real note", env=env, check=True)
    run("export", "-f", "markdown", str(vault), env=env, check=True)
    os.mkfifo(vault / "notes" / "pipe.md")
    (vault / "notes" / "zero.md").symlink_to("/dev/zero")
    done = run("import", str(vault), "--json", env=zk_env(tmp_path / "home2"), timeout=120)
    assert done.returncode == 3 and json.loads(done.stdout)["added"] == 2, done.stderr  # a.md and the real note
    assert sorted(p["message"].split(":")[0] for p in json.loads(done.stdout)["failed"]) == [
        "notes/pipe.md", "notes/zero.md"]


def test_export_never_writes_through_a_planted_link(zk, zk_home, tmp_path):
    """F6, F28: a link at a page's temp name, at the marker or at notes/ made export overwrite files outside."""
    note_id = add(zk, "Victim test note")
    vault = tmp_path / "vault"
    zk("export", "-f", "markdown", str(vault), check=True)
    victim = tmp_path / "victim.txt"
    victim.write_text("IMPORTANT USER DATA")
    (vault / "notes" / f"{note_id[:8]}.md.tmp").symlink_to(victim)
    Memory(zk_home).edit(note_id, "Changed test note")
    code, _, err = zk("export", "-f", "markdown", str(vault))
    assert code == 0, err
    assert victim.read_text() == "IMPORTANT USER DATA"
    page = vault / "notes" / f"{note_id[:8]}.md"
    assert not page.is_symlink() and "Changed test note" in page.read_text()
    page.unlink()  # a link where a page goes: kept, never written through
    page.symlink_to(victim)
    Memory(zk_home).edit(note_id, "Changed again")
    code, _, err = zk("export", "-f", "markdown", str(vault))
    assert code == 0 and f"notes/{note_id[:8]}.md" in err and victim.read_text() == "IMPORTANT USER DATA"
    settings = tmp_path / "settings.json"
    settings.write_text('{"important": "user settings", "files": []}')
    linked = tmp_path / "linked"
    linked.mkdir()
    (linked / MARKER).symlink_to(settings)
    code, _, err = zk("export", "-f", "markdown", str(linked))
    assert code == 1 and one_line(err) and settings.read_text() == '{"important": "user settings", "files": []}'
    outside = tmp_path / "notesdir"
    outside.mkdir()
    (vault / "notes").rename(tmp_path / "moved")
    (vault / "notes").symlink_to(outside)
    code, _, err = zk("export", "-f", "markdown", str(vault))
    assert code == 1 and one_line(err) and list(outside.iterdir()) == []
    broken = tmp_path / "broken"
    broken.mkdir()
    (broken / MARKER).write_text("[1, 2]")
    code, _, err = zk("export", "-f", "markdown", str(broken))
    assert code == 1 and one_line(err) and "not a zk vault marker" in err


def test_an_interrupted_export_is_finished_by_the_next_one(zk, zk_home, tmp_path, monkeypatch):
    """F9: an export that failed half-way (disk full, a name too long) left a folder every later export
    refused."""
    for i in range(6):
        add(zk, f"note number {i}", f"2026-03-0{i + 1}T10:00")
    vault = tmp_path / "vault"
    real_replace, calls = os.replace, []

    def disk_full_after_three(*args, **kwargs):
        calls.append(args)
        if len(calls) > 3:
            raise OSError(errno.ENOSPC, "No space left on device")
        return real_replace(*args, **kwargs)

    monkeypatch.setattr(os, "replace", disk_full_after_three)
    code, _, err = zk("export", "-f", "markdown", str(vault))
    assert code == 1 and one_line(err) and "No space left" in err
    monkeypatch.setattr(os, "replace", real_replace)
    code, out, err = zk("export", "-f", "markdown", str(vault), "--json")
    assert code == 0, err
    assert json.loads(out)["kept"] == [] and len(list((vault / "notes").glob("*.md"))) == 6
    assert not [p for p in vault.rglob("*") if p.name.endswith(".zk-tmp")]
    fresh = tmp_path / "fresh"
    zk("--home", str(fresh), "import", str(vault), check=True)
    assert len(Memory(fresh).store.notes()) == 6


def test_a_vault_copied_without_its_marker_imports_as_a_vault(zk, tmp_path):
    """F9: without `.zk-vault.json`, zk's own pages became junk notes ("<!-- zk:links -->", "Session: …")."""
    first, second = add(zk, "Alpha note #x"), add(zk, "Beta note", "2026-03-03T10:00")
    vault = tmp_path / "vault"
    zk("export", "-f", "markdown", str(vault), check=True)
    (vault / MARKER).unlink()
    fresh = tmp_path / "fresh"
    code, out, err = zk("--home", str(fresh), "import", str(vault), "--json")
    assert code == 0, err
    assert {n.id: n.content for n in Memory(fresh).store.notes()} == {first: "Alpha note #x", second: "Beta note"}
    code, _, err = zk("export", "-f", "markdown", str(vault))
    assert code == 1 and one_line(err) and "hidden files" in err


def test_file_names_are_portable_and_clipped_by_bytes(zk, zk_home, tmp_path):
    """F9/F10: 80 four-byte characters made a name too long; reserved names, RLO and NFC/NFD look-alikes
    were written as they were."""
    add(zk, "x")
    names = ["😀" * 100, "CON", "nul", "COM1", "aux.md", "LPT1.txt", "\u202eexe.md", "é", unicodedata.normalize(
        "NFD", "é"), "../../escaped", ".zk-vault.json"]
    seed_entities(zk_home, names)
    vault = tmp_path / "vault"
    code, _, err = zk("export", "-f", "markdown", str(vault))
    assert code == 0, err
    files = sorted(p.name for p in (vault / "entities").iterdir())
    assert len(files) == len(names)
    for name in files:
        stem = name[:-3]
        assert len(name.encode()) <= 200 and unicodedata.normalize("NFC", name) == name
        assert "\u202e" not in name and stem.split(".")[0].upper() not in {"CON", "NUL", "COM1", "AUX", "LPT1"}
    assert "é.md" in files and "é (2).md" in files
    assert all(p.resolve().is_relative_to(vault.resolve()) for p in vault.rglob("*"))


def test_json_of_no_known_format_is_refused_unless_text_is_asked_for(zk, zk_home, tmp_path):
    data = tmp_path / "settings.json"
    data.write_text('{"theme": "dark",\n "fontSize": 14}\n')
    code, _, err = zk("import", str(data), "-q")
    assert code == 1 and one_line(err)
    assert "no format zk knows" in err and "jsonl" in err and "--format text" in err
    assert Memory(zk_home).store.count() == 0
    code, out, err = zk("import", str(data), "--format", "text", "--no-llm", "--json")
    assert code == 0 and json.loads(out)["added"] == 2, err
