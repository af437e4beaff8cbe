"""The Markdown / Obsidian vault through the real CLI: export, round trip into an empty home (ids, text and
links exactly), re-export in place, and refusing a folder that is not a vault."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from zettel_amem.ingest.vault import LINKS_LINE, read_page
from zettel_amem.memory import Memory

WIKILINK = re.compile(r"\[\[([^\]|]+)(?:\|[^\]]*)?\]\]")
CHAT = """[2026-03-20 09:00] Mina: Onbiseo uses SQLite for now.
[2026-03-20 09:01] Jun: Onbiseo uses PostgreSQL next month, I think.
[2026-03-20 09:02] Mina: Then Jun owns the migration.
"""


@pytest.fixture
def zk(zk, fake_model):
    """Every command of this file uses the scripted model."""
    return zk


@pytest.fixture
def journal(zk, zk_home, tmp_path):
    entries = [("2026-03-01T08:00", "나는 주말마다 여의도 한강공원에서 10km 달리기를 한다. #달리기"),
               ("2026-03-07T09:15", "Knee hurts since Saturday's run, stopped at 8km. #running #무릎"),
               ("2026-03-08T20:00", "병원에서 2주 동안 뛰지 말라고 했다 #무릎"),
               ("2026-03-09T07:30", "Line one of a longer entry.\n\n## 감사한 일\n- 가족\n- coffee | [[not a link]]")]
    for at, text in entries:
        code, _, err = zk("add", text, "--at", at, "--wait")
        assert code == 0, err
    chat = tmp_path / "chat.txt"
    chat.write_text(CHAT, encoding="utf-8")
    code, _, err = zk("import", str(chat), "--wait", "--quiet")
    assert code == 0, err
    return Memory(zk_home)


def pages(folder: Path, sub: str) -> dict[str, str]:
    return {p.stem: p.read_text(encoding="utf-8") for p in (folder / sub).glob("*.md")}


def test_export_writes_a_vault_whose_links_resolve(zk, journal, tmp_path):
    vault = tmp_path / "vault"
    code, out, err = zk("export", "--format", "markdown", str(vault), "--json")
    assert code == 0, err
    report = json.loads(out)
    notes = journal.store.notes()
    assert report["notes"] == len(notes) == 7 and report["episodes"] >= 1 and report["entities"] >= 2
    note_pages = pages(vault, "notes")
    assert len(note_pages) == len(notes)
    every_stem = {p.stem for p in vault.rglob("*.md")}
    for note in notes:
        text = note_pages[note.id[:8]]
        fields, body = read_page(text)
        assert fields["id"] == note.id and fields["at"] == note.at and body == note.content
        assert fields["keywords"] == note.keywords and fields["tags"] == note.tags
        assert fields["user_tags"] == note.user_tags and fields["context"] == note.context
        assert fields["session"] == note.session_id
        links_part = text.split(LINKS_LINE, 1)[1]
        assert [m for m in WIKILINK.findall(links_part.split("Linked from:")[0])] == [i[:8] for i in note.links]
    for page in vault.rglob("*.md"):
        for target in WIKILINK.findall(page.read_text(encoding="utf-8").split(LINKS_LINE)[-1]):
            assert target in every_stem, (page, target)
    episode = next(iter(pages(vault, "episodes").values()))
    assert "## Notes" in episode and WIKILINK.search(episode)
    entities = pages(vault, "entities")
    assert "Onbiseo" in entities and "[[" in entities["Onbiseo"] and "## Notes" in entities["Onbiseo"]
    assert json.loads((vault / ".zk-vault.json").read_text())["type"] == "zk-vault"


def test_round_trip_into_an_empty_home_keeps_ids_text_and_links(zk, journal, tmp_path, monkeypatch):
    vault = tmp_path / "vault"
    assert zk("export", "-f", "markdown", str(vault))[0] == 0
    original = {n.id: n for n in journal.store.notes()}
    new_home = tmp_path / "restored"
    code, out, err = zk("--home", str(new_home), "import", str(vault), "--json")
    assert code == 0, err
    assert json.loads(out)["added"] == len(original) and json.loads(out)["format"] == "zk-vault"
    restored = {n.id: n for n in Memory(new_home).store.notes()}
    assert set(restored) == set(original)
    for note_id, note in original.items():
        again = restored[note_id]
        assert (again.content, again.links, again.at, again.user_tags, again.keywords, again.tags, again.context,
                again.session_id, again.kind, again.speaker, again.seq, again.status, again.content_hash) == \
               (note.content, note.links, note.at, note.user_tags, note.keywords, note.tags, note.context,
                note.session_id, note.kind, note.speaker, note.seq, note.status, note.content_hash)
    code, out, _ = zk("--home", str(new_home), "search", "무릎", "--json", "--no-links")
    assert code == 0 and any("무릎" in h["content"] for h in json.loads(out))  # vectors recomputed
    code, out, _ = zk("--home", str(new_home), "import", str(vault), "--json")
    assert json.loads(out)["added"] == 0  # twice adds nothing


def test_re_export_updates_in_place_and_keeps_the_users_files(zk, journal, tmp_path):
    vault = tmp_path / "vault"
    zk("export", "-f", "markdown", str(vault))
    (vault / "my own page.md").write_text("mine", encoding="utf-8")
    before = sorted(p.relative_to(vault) for p in vault.rglob("*.md"))
    code, out, _ = zk("export", "-f", "markdown", str(vault), "--json")
    again = json.loads(out)
    assert code == 0 and again["written"] == 0 and again["removed"] == 0
    assert sorted(p.relative_to(vault) for p in vault.rglob("*.md")) == before
    notes = sorted(journal.store.notes(), key=lambda n: n.at)
    gone, changed = notes[0], notes[1]
    zk("rm", gone.id[:8], "--yes")
    Memory(journal.home).edit(changed.id, changed.content + " 추가 #메모")
    code, out, _ = zk("export", "-f", "markdown", str(vault), "--json")
    report = json.loads(out)
    assert report["removed"] >= 1 and report["written"] >= 1  # its page (and pages only it made: its week's entities)
    assert not (vault / "notes" / f"{gone.id[:8]}.md").exists()
    assert read_page((vault / "notes" / f"{changed.id[:8]}.md").read_text(encoding="utf-8"))[1].endswith("추가 #메모")
    assert (vault / "my own page.md").read_text(encoding="utf-8") == "mine"
    assert len(list((vault / "notes").glob("*.md"))) == len(notes) - 1


def test_export_into_a_folder_that_is_not_a_vault_is_refused(zk, journal, tmp_path):
    other = tmp_path / "photos"
    other.mkdir()
    (other / "cat.jpg").write_bytes(b"\xff\xd8")
    code, out, err = zk("export", "--format", "markdown", str(other))
    assert code == 1 and len(err.strip().splitlines()) == 1 and "not a zk vault" in err
    assert sorted(p.name for p in other.iterdir()) == ["cat.jpg"]
    code, _, err = zk("export", "--format", "markdown")
    assert code == 1 and "needs a folder" in err
    code, _, err = zk("export", "--format", "xml")
    assert code == 1 and "unknown export format" in err


def test_an_obsidian_edited_page_still_imports(zk, journal, tmp_path):
    """Obsidian rewrites edited properties as block YAML; the page must still restore."""
    vault = tmp_path / "vault"
    zk("export", "-f", "markdown", str(vault))
    note = journal.store.notes()[0]
    page = vault / "notes" / f"{note.id[:8]}.md"
    fields, body = read_page(page.read_text(encoding="utf-8"))
    block = "\n".join(["---", f"id: {note.id}", f"at: {note.at}", "keywords:", *[f"  - {k}" for k in note.keywords],
                       "tags: []", "---", "", body, "", LINKS_LINE, ""])
    page.write_text(block, encoding="utf-8")
    new_home = tmp_path / "restored"
    code, _, err = zk("--home", str(new_home), "import", str(vault), "-q")
    assert code == 0, err
    again = Memory(new_home).store.get(note.id)
    assert again.content == note.content and again.keywords == note.keywords and again.at == note.at
