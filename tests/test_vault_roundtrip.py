"""The whole vault workflow in one go (edits on both sides, new, copied and deleted pages, a user file an
entity later wants), generated note texts surviving export -> import byte for byte, and a vault edit
re-annotated by the real model."""

from __future__ import annotations

import json
import tempfile
import uuid
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests.fake_llm import FakeLLM
from zettel_amem.core.models import Entity
from zettel_amem.core.text import is_blank
from zettel_amem.ingest.vault import export_vault
from zettel_amem.ingest.vault_page import note_page, parse_page
from zettel_amem.ingest.vault_sync import take_in
from zettel_amem.memory import MAX_NOTE_CHARS, Memory

KOREAN = ["오늘 한강에서 5km를 뛰었다. #달리기", "무릎이 조금 아프다.", "병원 예약: 목요일 오후 3시",
          "지수 님과 점심 약속", "새 러닝화를 샀다. #달리기", "온비서 베타 배포 준비 #온비서", "아빠 생신 선물 고르기"]
ENGLISH = ["Knee hurts since Saturday's run #running", "Read a chapter of the Rust book", "Call Mina about the trip",
           "Postgres migration plan for Onbiseo", "Booked the KTX to Busan", "Groceries: rice, kimchi, eggs",
           "Draft the beta release notes"]


def page_of(vault: Path, note_id: str) -> Path:
    return vault / "notes" / f"{note_id[:8]}.md"


def edit_page(page: Path, old: str, new: str) -> None:
    """Edit the note's text on its page (not the front matter, whose context may quote it)."""
    text = page.read_text(encoding="utf-8")
    end = text.index("\n---\n", 3) + 5
    assert old in text[end:]
    page.write_text(text[:end] + text[end:].replace(old, new, 1), encoding="utf-8")


@pytest.fixture
def zk(zk, fake_model):
    return zk


def test_the_whole_vault_round_trip(zk, zk_home, tmp_path):
    ids = [zk("add", text, "--at", f"2026-03-{i + 1:02d}T09:00", "--json", check=True).json()["id"]
           for i, text in enumerate(KOREAN + ENGLISH)]
    texts = dict(zip(ids, KOREAN + ENGLISH))
    vault = tmp_path / "vault"
    zk("sync", str(vault), check=True)
    # In the vault: 10 pages edited (Korean and English), 3 added, 1 copied, 1 deleted, a user file.
    edited = ids[:5] + ids[7:12]
    for i, note_id in enumerate(edited):
        edit_page(page_of(vault, note_id), texts[note_id], f"{texts[note_id]} — 고침 {i} / edited {i}")
    added = {vault / "notes" / "새 메모.md": "저녁에 수영 30분.\n", vault / "Idea.md": "A page written in Obsidian\n",
             vault / "notes" / "Untitled 1.md": "# Plans\n\nVisit Jeju in May #여행\n"}
    for path, text in added.items():
        path.write_text(text, encoding="utf-8")
    original = page_of(vault, ids[12])
    copy = original.with_name(f"{original.stem} 1.md")
    copy.write_text(original.read_text(encoding="utf-8").replace(texts[ids[12]], "A copy, then changed"),
                    encoding="utf-8")
    deleted = ids[13]
    page_of(vault, deleted).unlink()
    user_file = vault / "entities" / "Mina.md"
    user_file.parent.mkdir(exist_ok=True)
    user_file.write_text("# Mina\nMy own notes about Mina: likes hiking.\n", encoding="utf-8")
    # In zk: two notes edited, one of them (ids[0]) also edited in the vault; later an entity "Mina".
    memory = Memory(zk_home)
    memory.edit(ids[0], "오늘 한강에서 7km를 뛰었다 (zk). #달리기")
    memory.edit(ids[5], "온비서 베타 배포 완료 (zk) #온비서")
    from zettel_amem.tiers.service import Tiers

    Tiers(memory).store.put_entities([Entity(id=uuid.uuid4().hex, name="Mina", type="person", key="mina",
                                             created="2026-03-01T10:00:00", vector=[0.01] * memory.embedder.dim)])
    users = {p: p.read_bytes() for p in [*added, copy, user_file]}
    code, out, err = zk("sync", str(vault), "--json")
    assert code == 0, err
    report = json.loads(out)
    read = report["read"]
    assert (read["edited"], read["conflicts"], read["added"]) == (9, 1, 4)  # 3 new pages and the copy
    assert [d["id"] for d in read["deleted"]] == [deleted]
    store = Memory(zk_home).store
    for i, note_id in enumerate(edited):  # every edit is a version, and says where it came from
        history = zk("history", note_id[:8], "--json", check=True).json()["history"]
        assert store.get(note_id).content == f"{texts[note_id]} — 고침 {i} / edited {i}" or note_id == ids[0]
        assert history[-1]["reason"].startswith(f"vault edit (notes/{note_id[:8]}.md)")
        assert history[-1]["changes"]["content"]["new"].endswith(f"— 고침 {i} / edited {i}")
    conflict = zk("history", ids[0][:8], "--json", check=True).json()["history"]
    assert [v["reason"] for v in conflict] == ["edit",
                                               f"vault edit (notes/{ids[0][:8]}.md); conflict: zk's text is v2"]
    assert [v["changes"]["content"]["new"] for v in conflict] == ["오늘 한강에서 7km를 뛰었다 (zk). #달리기",
                                                                 f"{texts[ids[0]]} — 고침 0 / edited 0"]
    assert zk("history", ids[5][:8], "--json", check=True).json()["history"][-1]["reason"] == "edit"
    assert "(zk)" in page_of(vault, ids[5]).read_text(encoding="utf-8")  # zk's edit reached the vault
    contents = {n.content: n for n in store.notes()}
    assert {"# 새 메모\n\n저녁에 수영 30분.", "# Idea\n\nA page written in Obsidian",  # file names as headings
            "# Plans\n\nVisit Jeju in May #여행"} <= set(contents)
    the_copy = contents["A copy, then changed"]
    assert the_copy.id != ids[12] and store.get(ids[12]).content == texts[ids[12]]
    assert store.get(deleted) is not None and page_of(vault, deleted).exists()  # reported, kept, written again
    assert {p: p.read_bytes() for p in users} == users  # no user file changed
    assert "# Mina" in (vault / "entities" / "Mina (2).md").read_text(encoding="utf-8")
    again = zk("sync", str(vault), "--json", check=True).json()
    assert (again["read"]["added"], again["read"]["edited"], again["read"]["conflicts"]) == (0, 0, 0)
    assert again["written"]["written"] == 0 and again["written"]["kept"] == []


# -- generated texts ---------------------------------------------------------------------------------------
FRAGMENTS = ["<!--", "-->", "<!-- zk:links -->", "<!--\\ zk:links -->", "<!-- zk:x -->", "---", "\n---\n", "[[",
             "]]", "[[a|b]]", "#", "#태그", "\n", "\n\n", "\t", "    ", "Links: ", "Session: ", "id: ", "\ufeff", "|"]
# Control-free Unicode of every script: no Cc (but newline and tab, from FRAGMENTS), no surrogates or
# private/unassigned code points.
CHARS = st.characters(blacklist_categories=("Cc", "Cs", "Co", "Cn"))
TEXTS = st.lists(st.one_of(st.sampled_from(FRAGMENTS), st.text(CHARS, min_size=1, max_size=12)), min_size=1,
                 max_size=24).map("".join).filter(lambda t: not is_blank(t) and len(t) < MAX_NOTE_CHARS)


@given(TEXTS)
@settings(max_examples=400, deadline=None)
def test_a_note_page_reads_back_the_text_it_was_written_with(text):
    content = text.strip()
    page = note_page({"id": "0" * 32, "at": "2026-03-01T10:00:00"}, content, ["Links: [[abc|x]]"])
    parsed = parse_page(page)
    assert parsed.text == content and parsed.typed_below == "" and parsed.fields["id"] == "0" * 32


@given(st.lists(TEXTS, min_size=1, max_size=6))
@settings(max_examples=12, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
def test_generated_texts_survive_export_and_import_into_a_fresh_home_byte_for_byte(embedder, texts):
    with tempfile.TemporaryDirectory() as scratch:
        root = Path(scratch)
        source = Memory(root / "a", llm=FakeLLM(), embedder=embedder)
        for i, text in enumerate(texts):
            source.add(text, f"2026-03-01T10:{i:02d}")
        export_vault(source, root / "vault", [], [], [])
        target = Memory(root / "b", llm=FakeLLM(), embedder=embedder)
        report = take_in(target, root / "vault")
        assert report.failed == [] and report.added == len(texts)
        before = {n.id: n.content.encode("utf-8") for n in source.store.notes()}
        assert {n.id: n.content.encode("utf-8") for n in target.store.notes()} == before


@pytest.mark.slow
def test_a_vault_edit_is_re_annotated_by_the_real_model(tmp_path):
    """Run under `flock /tmp/zk-llm.lock`: the real bundled Qwen annotates the note, then its edited page."""
    from tests.harness import run, zk_env

    env = zk_env(tmp_path / "home")
    (tmp_path / "home").mkdir()
    (tmp_path / "home" / "config.toml").write_text("", encoding="utf-8")
    note_id = json.loads(run("add", "I run 10 km at Yeouido Hangang Park every weekend.", "--wait", "--json",
                             env=env, timeout=900, check=True).stdout)["id"]
    vault = tmp_path / "vault"
    run("sync", str(vault), env=env, check=True)
    before = json.loads(run("show", note_id[:8], "--json", env=env, check=True).stdout)
    edit_page(page_of(vault, note_id), "I run 10 km at Yeouido Hangang Park every weekend.",
              "I stopped running; now I swim 1 km at the Jamsil pool every morning.")
    run("sync", str(vault), "--wait", env=env, timeout=900, check=True)
    after = json.loads(run("show", note_id[:8], "--json", env=env, check=True).stdout)
    assert after["content"].startswith("I stopped running") and after["status"] == "ready"
    assert after["keywords"] and after["context"] and after["keywords"] != before["keywords"]
    assert any(v["reason"] == f"vault edit (notes/{note_id[:8]}.md)" for v in after["history"])
    page = page_of(vault, note_id).read_text(encoding="utf-8")
    assert json.dumps(after["keywords"], ensure_ascii=False) in page  # the new annotation reached the vault
