"""The vault as a two-way home (`zk sync DIR`, `zk import DIR`): a page edited in the vault becomes a new
version of its note, a page changed on both sides keeps both texts, new pages become notes, a copied page
gets its own id, a deleted page is reported (`--prune` deletes), bad pages are skipped one by one, and
another notebook imports with new ids. Every test drives the real CLI with the scripted model."""

from __future__ import annotations

import json
import os
import subprocess
import time
import uuid
from pathlib import Path

import pytest

from tests.harness import one_line, zk_command, zk_env
from zettel_amem.core.models import Entity
from zettel_amem.ingest.vault import MARKER, read_page
from zettel_amem.memory import Memory


@pytest.fixture
def zk(zk, fake_model):
    return zk


def page_of(vault: Path, note_id: str) -> Path:
    return vault / "notes" / f"{note_id[:8]}.md"


def replace_text(page: Path, old: str, new: str) -> None:
    """Edit the note's text on its page (not the front matter, whose context may quote it)."""
    text = page.read_text(encoding="utf-8")
    end = text.index("\n---\n", 3) + 5
    assert old in text[end:]
    page.write_text(text[:end] + text[end:].replace(old, new, 1), encoding="utf-8")


def add(zk, text: str, at: str = "2026-03-02T10:00") -> str:
    code, out, err = zk("add", text, "--at", at, "--json")
    assert code == 0, err
    return json.loads(out)["id"]


def seed_entity(home: Path, name: str) -> None:
    """An entity as the worker's extraction step writes it (names come only from a model)."""
    from zettel_amem.tiers.service import Tiers

    memory = Memory(home)
    Tiers(memory).store.put_entities([Entity(id=uuid.uuid4().hex, name=name, type="place", key=name.casefold(),
                                             created="2026-03-01T10:00:00", episodes=[],
                                             vector=[0.01] * memory.embedder.dim)])


def test_an_edited_page_becomes_a_new_version_and_the_next_export_keeps_it(zk, zk_home, tmp_path):
    """F2: the edit was reported "already present" and the next export overwrote it."""
    note_id = add(zk, "Original text of my note #a")
    vault = tmp_path / "vault"
    zk("export", "--format", "markdown", str(vault), check=True)
    replace_text(page_of(vault, note_id), "Original text of my note #a", "EDITED IN OBSIDIAN: new paragraph #a")
    code, out, err = zk("import", str(vault), "--json")
    assert code == 0, err
    note = Memory(zk_home).store.get(note_id)
    assert note.content == "EDITED IN OBSIDIAN: new paragraph #a" and note.version == 2
    assert json.loads(out)["edited"] == 1
    code, _, err = zk("export", "--format", "markdown", str(vault))
    assert code == 0, err
    assert "EDITED IN OBSIDIAN" in page_of(vault, note_id).read_text(encoding="utf-8")
    assert note.status == "pending"  # re-annotated and re-linked, as after `zk edit`
    history = zk("history", note_id[:8], "--json").json()["history"]
    assert history[-1]["reason"] == f"vault edit (notes/{note_id[:8]}.md)"
    assert history[-1]["changes"]["content"] == {"old": "Original text of my note #a",
                                                 "new": "EDITED IN OBSIDIAN: new paragraph #a"}


def test_sync_takes_edits_in_writes_the_vault_and_a_second_sync_writes_nothing(zk, zk_home, tmp_path):
    first, second = add(zk, "무릎이 아프다 #무릎"), add(zk, "Second note", "2026-03-03T10:00")
    vault = tmp_path / "vault"
    report = zk("sync", str(vault), "--json", check=True).json()
    assert report["read"] is None and report["written"]["written"] >= 2
    replace_text(page_of(vault, first), "무릎이 아프다", "무릎이 많이 아프다. 병원에 갔다.")
    report = zk("sync", str(vault), "--json", check=True).json()
    assert report["read"]["edited"] == 1 and report["read"]["unchanged"] == 1
    assert report["written"]["kept"] == []
    fields, text = read_page(page_of(vault, first).read_text(encoding="utf-8"))
    assert text == "무릎이 많이 아프다. 병원에 갔다. #무릎" and fields["status"] == "pending"
    stamps = {p: p.stat().st_mtime_ns for p in vault.rglob("*") if p.is_file()}
    report = zk("sync", str(vault), "--json", check=True).json()
    assert report["read"]["edited"] == 0 and report["written"]["written"] == 0
    assert {p: p.stat().st_mtime_ns for p in vault.rglob("*") if p.is_file()} == stamps
    assert Memory(zk_home).store.get(second).version == 1
    assert zk("sync", str(vault), check=True).stderr == ""  # no empty line from a progress bar on a non-terminal


def test_a_page_changed_on_both_sides_keeps_both_texts_and_says_so(zk, zk_home, tmp_path):
    note_id = add(zk, "Plan: run 5km on Sunday")
    vault = tmp_path / "vault"
    zk("sync", str(vault), check=True)
    replace_text(page_of(vault, note_id), "run 5km on Sunday", "run 10km on Sunday (vault)")
    Memory(zk_home).edit(note_id, "Plan: run 7km on Saturday (zk)")
    code, _, err = zk("export", "-f", "markdown", str(vault))  # export alone must not overwrite the edit
    assert code == 0 and f"notes/{note_id[:8]}.md" in err and "kept" in err
    assert "(vault)" in page_of(vault, note_id).read_text(encoding="utf-8")
    code, out, err = zk("sync", str(vault))
    assert code == 0, err
    lines = [line for line in err.splitlines() if "conflict" in line]
    assert len(lines) == 1 and f"notes/{note_id[:8]}.md" in lines[0] and "--to 2" in lines[0]
    note = Memory(zk_home).store.get(note_id)
    assert note.content == "Plan: run 10km on Sunday (vault)" and note.version == 3
    texts = [v.changes["content"]["new"] for v in note.history]
    assert texts == ["Plan: run 7km on Saturday (zk)", "Plan: run 10km on Sunday (vault)"]
    assert "conflict" in note.history[-1].reason
    assert "(vault)" in page_of(vault, note_id).read_text(encoding="utf-8")


def test_a_user_file_is_never_overwritten_by_an_entity_that_takes_its_name(zk, zk_home, tmp_path):
    """F5: `entities/Seoul.md` written by the user was replaced by zk's entity page."""
    add(zk, "Trip planning for Seoul")
    vault = tmp_path / "vault"
    zk("export", "--format", "markdown", str(vault), check=True)
    mine = vault / "entities" / "Seoul.md"
    mine.parent.mkdir(exist_ok=True)
    mine.write_text("# Seoul\nMy own hand-written travel notes about Seoul.\n", encoding="utf-8")
    seed_entity(zk_home, "Seoul")
    zk("export", "--format", "markdown", str(vault), check=True)
    assert mine.read_text(encoding="utf-8") == "# Seoul\nMy own hand-written travel notes about Seoul.\n"
    assert "# Seoul" in (vault / "entities" / "Seoul (2).md").read_text(encoding="utf-8")


def test_a_copied_page_gets_its_own_id_and_the_original_keeps_its_text(zk, zk_home, tmp_path):
    """F3: two pages with one id became two rows with one id; an edit then destroyed the other text."""
    first = add(zk, "First note #a")
    add(zk, "Second note #b", "2026-03-03T10:00")
    vault = tmp_path / "vault"
    zk("export", "--format", "markdown", str(vault), check=True)
    page = page_of(vault, first)
    copy = page.with_name(f"{page.stem} (conflicted copy).md")
    copy.write_text(page.read_text(encoding="utf-8").replace("First note", "CONFLICT VERSION: First note"),
                    encoding="utf-8")
    fresh = tmp_path / "fresh"
    code, out, err = zk("--home", str(fresh), "import", str(vault), "--json")
    assert code == 0, err
    report = json.loads(out)
    notes = Memory(fresh).store.notes()
    assert len(notes) == len({n.id for n in notes}) == 3
    assert report["added"] == 3
    copies = [c for c in report["changes"] if c["what"] == "copy"]
    assert len(copies) == 1 and copies[0]["path"] == f"notes/{copy.name}"
    assert Memory(fresh).store.get(first).content == "First note #a"
    assert Memory(fresh).store.get(copies[0]["id"]).content == "CONFLICT VERSION: First note #a"
    # and in the home that wrote the vault: the copy is a note of its own, its file stays as it is
    before = copy.read_bytes()
    report = zk("sync", str(vault), "--json", check=True).json()
    assert [c["what"] for c in report["read"]["changes"]] == ["copy"]
    assert copy.read_bytes() == before
    again = zk("sync", str(vault), "--json", check=True).json()  # remembered: not a second copy
    assert again["read"]["added"] == 0 and Memory(zk_home).store.count() == 3


def test_new_pages_become_notes_once(zk, zk_home, tmp_path):
    add(zk, "An existing note")
    vault = tmp_path / "vault"
    zk("sync", str(vault), check=True)
    (vault / "notes" / "Trip to Busan.md").write_text("Booked the KTX for Friday. #여행\n", encoding="utf-8")
    (vault / "Untitled.md").write_text("오늘은 비가 왔다.\n", encoding="utf-8")
    report = zk("sync", str(vault), "--json", check=True).json()
    assert report["read"]["added"] == 2
    texts = {n.content for n in Memory(zk_home).store.notes()}
    assert {"# Trip to Busan\n\nBooked the KTX for Friday. #여행", "오늘은 비가 왔다."} <= texts
    assert (vault / "Untitled.md").read_text(encoding="utf-8") == "오늘은 비가 왔다.\n"  # left as written
    assert zk("sync", str(vault), "--json", check=True).json()["read"]["added"] == 0
    (vault / "Untitled.md").write_text("오늘은 비가 많이 왔다.\n", encoding="utf-8")  # its edit is an edit
    report = zk("sync", str(vault), "--json", check=True).json()
    assert report["read"]["edited"] == 1 and report["read"]["added"] == 0
    assert "오늘은 비가 많이 왔다." in {n.content for n in Memory(zk_home).store.notes()}


def test_a_deleted_page_is_reported_and_prune_deletes_its_note_after_asking(zk, zk_home, tmp_path):
    keep, gone = add(zk, "Keep me"), add(zk, "Delete me", "2026-03-03T10:00")
    vault = tmp_path / "vault"
    zk("sync", str(vault), check=True)
    page_of(vault, gone).unlink()
    code, _, err = zk("sync", str(vault))
    assert code == 0 and f"notes/{gone[:8]}.md: deleted in the vault" in err and "--prune" in err
    assert Memory(zk_home).store.get(gone) is not None and page_of(vault, gone).exists()  # written again
    page_of(vault, gone).unlink()
    code, _, err = zk("sync", str(vault), "--prune")  # not a terminal: it does not guess a yes
    assert code == 1 and one_line(err) and "--yes" in err
    assert Memory(zk_home).store.get(gone) is not None
    report = zk("sync", str(vault), "--prune", "--yes", "--json", check=True).json()
    assert report["pruned"] == [gone]
    assert Memory(zk_home).store.get(gone) is None and Memory(zk_home).store.get(keep) is not None
    assert not page_of(vault, gone).exists()


def test_another_notebook_imports_the_vault_with_new_ids_and_says_so(zk, zk_home, tmp_path):
    """F6: `zk -n other import DIR` imported nothing and said "already present"."""
    first = add(zk, "A note of main")
    second = add(zk, "Another note of main", "2026-03-03T10:00")
    Memory(zk_home).store.update([_linked(Memory(zk_home).store.get(second), first)])
    vault = tmp_path / "vault"
    zk("export", "-f", "markdown", str(vault), check=True)
    code, out, err = zk("-n", "other", "import", str(vault))
    assert code == 0, err
    assert "2 page(s) hold notes of another notebook" in err and "new notes" in err
    other = {n.content: n for n in Memory(zk_home, notebook="other").store.notes("other")}
    assert set(other) == {"A note of main", "Another note of main"}
    assert not {first, second} & {n.id for n in other.values()}
    assert other["Another note of main"].links == [other["A note of main"].id]  # links moved with them
    assert {n.id for n in Memory(zk_home).store.notes("main")} == {first, second}
    again = zk("-n", "other", "import", str(vault), "--json").json()
    assert again["added"] == 0 and Memory(zk_home).store.count("other") == 2


def _linked(note, target: str):
    note.links = [target]
    return note


BAD_FIELDS = {  # the page's field -> its value, as JSON
    "seq_text": ("seq", '"abc"'), "seq_inf": ("seq", "1e400"), "seq_huge": ("seq", str(10 ** 30)),
    "seq_negative": ("seq", "-5"), "session_dict": ("session", '{"a": 1}'), "session_int": ("session", "5"),
    "speaker_list": ("speaker", '["x", "y"]'), "source_number": ("source", "12345"),
    "created_garbage": ("created", '"not a date at all"'), "tags_mixed": ("tags", '[["a"], {"b": 1}, null, 5]'),
    "hash_list": ("hash", "[1]"), "kind_episode": ("kind", '"episode"'), "at_number": ("at", "12345"),
}


def _page(note_id: str, fields: list[tuple[str, str]], text: str) -> str:
    lines = ["---", f'id: "{note_id}"', *[f"{k}: {v}" for k, v in fields], "---", text, "", "<!-- zk:links -->", ""]
    return "\n".join(lines)


def test_each_bad_page_is_skipped_with_a_line_and_the_rest_imported(zk, zk_home, tmp_path):
    """F4: one bad front-matter value aborted the whole import (internal error or a false store error);
    others were stored and then broke the JSONL backup."""
    vault = tmp_path / "vault"
    (vault / "notes").mkdir(parents=True)
    (vault / MARKER).write_text(json.dumps({"type": "zk-vault", "notebook": "main", "files": []}))
    at = ("at", '"2026-03-01T10:00:00"')
    (vault / "notes" / "good.md").write_text(_page(f"{1:032x}", [at], "a good page"), encoding="utf-8")
    for i, (name, (key, value)) in enumerate(BAD_FIELDS.items(), 2):
        fields = [(key, value)] + ([at] if key != "at" else [])
        (vault / "notes" / f"{name}.md").write_text(_page(f"{i:032x}", fields, f"page {name}"), encoding="utf-8")
    code, out, err = zk("import", str(vault), "--json")
    assert code == 3, err
    assert "internal error" not in err and "store" not in err
    report = json.loads(out)
    assert report["added"] == 1
    named = {problem["message"].split(":")[0] for problem in report["failed"]}
    assert named == {f"notes/{name}.md" for name in BAD_FIELDS}
    assert [n.content for n in Memory(zk_home).store.notes()] == ["a good page"]
    backup = tmp_path / "backup.jsonl"  # what was stored restores from a backup
    zk("export", "--all", "-o", str(backup), check=True)
    code, _, err = zk("--home", str(tmp_path / "again"), "import", str(backup))
    assert code == 0, err


def test_a_page_renamed_or_moved_in_the_vault_stays_its_notes_page(zk, zk_home, tmp_path):
    """Obsidian users give pages titles: the renamed page is followed, not reported deleted nor duplicated."""
    first, second = add(zk, "Knee hurts after the run"), add(zk, "Project Onbiseo kickoff", "2026-03-03T10:00")
    vault = tmp_path / "vault"
    zk("sync", str(vault), check=True)
    titled = vault / "notes" / "My knee.md"
    page_of(vault, first).rename(titled)
    (vault / "Projects").mkdir()
    moved = vault / "Projects" / "Onbiseo.md"
    page_of(vault, second).rename(moved)
    report = zk("sync", str(vault), "--json", check=True).json()
    assert sorted(c["what"] for c in report["read"]["changes"]) == ["renamed", "renamed"]
    assert report["read"]["deleted"] == [] and report["read"]["added"] == 0
    assert not page_of(vault, first).exists() and not page_of(vault, second).exists()
    replace_text(titled, "Knee hurts after the run", "Knee hurts after the run; iced it")
    report = zk("sync", str(vault), "--json", check=True).json()
    assert report["read"]["edited"] == 1
    assert Memory(zk_home).store.get(first).content == "Knee hurts after the run; iced it"
    files = json.loads((vault / MARKER).read_text(encoding="utf-8"))["files"]
    assert files["notes/My knee.md"]["note"] == first and not files["notes/My knee.md"].get("yours")
    assert files["Projects/Onbiseo.md"]["note"] == second  # zk writes them where they are now
    assert sorted(p.name for p in vault.rglob("*.md")) == ["My knee.md", "Onbiseo.md"]


def test_a_vault_written_by_an_older_zk_keeps_its_edits(zk, zk_home, tmp_path):
    """An older marker lists the files zk wrote without their hashes: an edited page is neither overwritten
    nor lost; `zk sync` takes it in (as a conflict: the older zk did not record what it wrote)."""
    note_id = add(zk, "Written before the upgrade")
    vault = tmp_path / "vault"
    zk("export", "-f", "markdown", str(vault), check=True)
    files = sorted(json.loads((vault / MARKER).read_text())["files"])
    (vault / MARKER).write_text(json.dumps({"type": "zk-vault", "schema_version": 3, "notebook": "main",
                                            "notes": 1, "files": files}))
    replace_text(page_of(vault, note_id), "Written before the upgrade", "Edited before the upgrade")
    code, _, err = zk("export", "-f", "markdown", str(vault))
    assert code == 0 and "kept" in err and "Edited" in page_of(vault, note_id).read_text(encoding="utf-8")
    report = zk("sync", str(vault), "--json", check=True).json()
    assert report["read"]["conflicts"] == 1 and report["written"]["kept"] == []
    history = Memory(zk_home).store.get(note_id).history
    assert history[-1].changes["content"] == {"old": "Written before the upgrade", "new": "Edited before the upgrade"}


def test_two_syncs_at_once_add_each_new_page_once(zk, zk_home, tmp_path):
    """C7: two `zk sync` at once each read the same new pages and added them, and left `<id> (2).md` copies
    that the next sync imported a third time. The second now waits for the first and sees its work."""
    add(zk, "seed for concurrent sync")
    vault = tmp_path / "vault"
    zk("sync", str(vault), check=True)
    pages = 6
    for i in range(pages):
        (vault / f"page {i}.md").write_text(f"User page number {i} written in Obsidian, 옵시디언 {i}번\n",
                                            encoding="utf-8")
    runs = [subprocess.Popen(zk_command("sync", str(vault), "--json"), env=zk_env(zk_home), text=True,
                             stdout=subprocess.PIPE, stderr=subprocess.PIPE) for _ in range(2)]
    outputs = [run.communicate(timeout=300) for run in runs]
    assert [run.returncode for run in runs] == [0, 0], outputs
    assert sorted(json.loads(out)["read"]["added"] for out, _ in outputs) == [0, pages]
    notes = Memory(zk_home).store.notes()
    assert len(notes) == len({n.content for n in notes}) == pages + 1
    assert [p.name for p in vault.rglob("*.md") if "(2)" in p.name] == []
    assert zk("sync", str(vault), "--json", check=True).json()["read"]["added"] == 0
    assert Memory(zk_home).store.count() == pages + 1


def test_a_second_sync_that_waits_too_long_says_so_in_one_line(zk, zk_home, tmp_path, monkeypatch):
    import zettel_amem.ingest.vault as vault_module

    add(zk, "A note")
    vault = tmp_path / "vault"
    zk("sync", str(vault), check=True)
    monkeypatch.setattr(vault_module, "SYNC_WAIT_S", 0.2)
    with vault_module.vault_lock(zk_home, vault):  # another zk sync of this vault, mid-way
        code, _, err = zk("sync", str(vault))
    assert code == 1 and "another zk sync of this vault is running" in err.splitlines()[-1]
    assert "waiting" in err and one_line(err.splitlines()[-1])
    assert not [p for p in vault.rglob("*") if "lock" in p.name]  # the lock is in the home, not a vault page
    assert zk("sync", str(vault), "--json", check=True).json()["read"]["unchanged"] >= 1


def test_both_pages_of_one_note_edited_before_a_sync_are_a_conflict_that_keeps_both_texts(zk, zk_home, tmp_path):
    """C3: a page of the user's and its `notes/` page both edited: "version 2" twice, 0 conflicts, the first
    edit overwritten on disk. Now each text is a version (the page saved last the newest), one conflict."""
    add(zk, "Alpha")
    vault = tmp_path / "vault"
    zk("sync", str(vault), check=True)
    deep = vault / "sub" / "sub2" / "deep.md"
    deep.parent.mkdir(parents=True)
    deep.write_text("A deep page in a sub-sub-folder, 깊은 곳\n", encoding="utf-8")
    note_id = zk("sync", str(vault), "--json", check=True).json()["read"]["changes"][0]["id"]
    deep.write_text("A deep page EDITED VIA DEEP FILE, 깊은 곳\n", encoding="utf-8")
    os.utime(deep, (time.time() - 60, time.time() - 60))  # saved before the other page
    replace_text(page_of(vault, note_id), "A deep page in a sub-sub-folder", "A deep page EDITED VIA NOTES PAGE")
    report = zk("sync", str(vault), "--json", check=True).json()["read"]
    assert (report["edited"], report["conflicts"], report["added"]) == (1, 1, 0)
    lines = {c["what"]: c["message"] for c in report["changes"]}
    short = note_id[:8]
    assert lines["edited"] == f"notes/{short}.md: note {short} is now version 3"
    assert lines["conflict"].startswith("sub/sub2/deep.md: ") and f"notes/{short}.md" in lines["conflict"]
    assert "version 2" in lines["conflict"] and f"zk revert {short} --to 2" in lines["conflict"]
    note = Memory(zk_home).store.get(note_id)
    assert note.version == 3 and note.content == "A deep page EDITED VIA NOTES PAGE, 깊은 곳"
    assert [v.changes["content"]["new"] for v in note.history] == ["A deep page EDITED VIA DEEP FILE, 깊은 곳",
                                                                   "A deep page EDITED VIA NOTES PAGE, 깊은 곳"]
    assert deep.read_text(encoding="utf-8") == "A deep page EDITED VIA DEEP FILE, 깊은 곳\n"  # the user's file
    assert "EDITED VIA NOTES PAGE" in page_of(vault, note_id).read_text(encoding="utf-8")
    again = zk("sync", str(vault), "--json", check=True).json()["read"]
    assert (again["edited"], again["conflicts"], again["added"]) == (0, 0, 0)


def test_a_users_page_whose_note_the_same_import_restores_is_not_called_deleted(zk, zk_home, tmp_path):
    """C3 (smaller): syncing a vault into another home said "its note was deleted in zk" of a user's page
    whose note the same run restored from its `notes/` page."""
    add(zk, "Alpha")
    vault = tmp_path / "vault"
    zk("sync", str(vault), check=True)
    (vault / "deep.md").write_text("A deep page of mine, 내 페이지\n", encoding="utf-8")
    note_id = zk("sync", str(vault), "--json", check=True).json()["read"]["changes"][0]["id"]
    fresh = tmp_path / "fresh"
    report = zk("--home", str(fresh), "import", str(vault), "--json", check=True).json()
    assert [c for c in report["changes"] if c["what"] == "kept"] == [] and report["added"] == 2
    assert Memory(fresh).store.get(note_id).content == "A deep page of mine, 내 페이지"


def test_a_note_page_whose_front_matter_was_removed_stays_that_notes_page(zk, zk_home, tmp_path):
    """C8: without its front matter (one click in Obsidian) `notes/<id>.md` became a new note "# <id> …" and
    the note's page came back as `<id> (2).md`. Now it is an edit of its note, and gets its front matter back."""
    note_id = add(zk, "Note whose front matter the user strips 수정됨")
    vault = tmp_path / "vault"
    zk("sync", str(vault), check=True)
    page = page_of(vault, note_id)

    def strip_front_matter() -> str:
        return page.read_text(encoding="utf-8").split("\n---\n", 1)[1]

    page.write_text(strip_front_matter().replace("수정됨", "수정됨 — and a vault edit without front matter"),
                    encoding="utf-8")
    report = zk("sync", str(vault), "--json", check=True).json()["read"]
    assert (report["added"], report["edited"]) == (0, 1)
    note = Memory(zk_home).store.get(note_id)
    assert note.content == "Note whose front matter the user strips 수정됨 — and a vault edit without front matter"
    assert note.version == 2 and Memory(zk_home).store.count() == 1
    assert sorted(p.name for p in (vault / "notes").iterdir()) == [page.name]
    fields, text = read_page(page.read_text(encoding="utf-8"))
    assert fields["id"] == note_id and text == note.content
    page.write_text(strip_front_matter(), encoding="utf-8")  # removed again, the text as it is: nothing new
    report = zk("sync", str(vault), "--json", check=True).json()["read"]
    assert (report["added"], report["edited"]) == (0, 0)
    assert Memory(zk_home).store.get(note_id).version == 2 and Memory(zk_home).store.count() == 1
    assert read_page(page.read_text(encoding="utf-8"))[0]["id"] == note_id
    assert sorted(p.name for p in (vault / "notes").iterdir()) == [page.name]
