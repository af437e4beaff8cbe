"""Store damage and `zk repair`, through real `zk` subprocesses (issue #28, items 1-6).

Every case starts from a copy of one base store: notes in two notebooks, one of them edited, two notes
with values a vault import let through (a `created` that is not a date, a negative `seq`), an episode,
entities (one merged into another by hand) and a relation. The damage is what a power cut leaves: the
newest version file (manifest) of a table empty, cut short or zero-filled, or its newest data file cut
short or zero-filled; and a lost meta.json, a lost commit, a read-only home.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from pathlib import Path

import pytest

from tests import harness
from tests.harness import one_line
from zettel_amem.memory import Memory
from zettel_amem.storage.database import manifest_path, manifest_versions
from zettel_amem.views import Views

NOTES_DIR = Path("lancedb") / "notes.lance"


# -- the base store and its damage -------------------------------------------------------------------
@pytest.fixture(scope="module")
def base(tmp_path_factory, embedder) -> Path:
    from zettel_amem.core.models import Entity, Episode, Relation
    from zettel_amem.storage.tier_store import TierStore

    home = tmp_path_factory.mktemp("base") / "home"
    memory = Memory(home, embedder=embedder)
    ids = [memory.add(f"main note {i} #t{i}", f"2026-03-0{i + 1}").id for i in range(5)]
    Memory(home, embedder=embedder, notebook="work").add("a work note", "2026-03-07")
    memory.edit(ids[4], "main note 4, edited #t4")
    odd = [memory.new_note(f"vault page {i}", "2026-03-08") for i in range(2)]
    odd[0].created, odd[1].seq = "not a date", -5  # what the vault import accepted (issue #27)
    memory.add_notes(odd)
    tiers = TierStore(memory.store)
    tiers.put_episodes([Episode(id="e" + "1" * 15, session_id="s" + "1" * 15, title="March", summary="A week.")])
    tiers.put_entities([Entity(id="n1", name="Seoul", key="seoul"), Entity(id="n3", name="Mina", key="mina")])
    tiers.put_entities([Entity(id="n2", name="Busan", key="busan", merged_into="n1", merge_reason="by hand")])
    tiers.put_relations([Relation(id="r1", subject="n3", predicate="lives in", object="n1")])
    return home


@pytest.fixture
def home(base, tmp_path) -> Path:
    copy = tmp_path / "home"
    shutil.copytree(base, copy, symlinks=True)
    return copy


def zk(home: Path, *args: str, **env: str) -> subprocess.CompletedProcess:
    return harness.run(*args, env=harness.zk_env(home, **env), timeout=120)


def newest_manifest(table_dir: Path) -> Path:
    return manifest_path(table_dir, manifest_versions(table_dir)[-1])


def newest_data_file(table_dir: Path) -> Path:
    return max((table_dir / "data").glob("*.lance"), key=lambda p: p.stat().st_mtime_ns)


def damage(path: Path, how: str) -> None:
    """What a power cut leaves of a file written just before it: nothing, a part, or zeros."""
    size = path.stat().st_size
    if how == "empty":
        path.write_bytes(b"")
    elif how == "cut":
        with open(path, "r+b") as fh:
            fh.truncate(size // 3)
    elif how == "zeros":
        path.write_bytes(bytes(size))
    elif how == "gone":
        path.unlink()


def notes_of(home: Path, **env: str) -> dict[str, dict]:
    done = zk(home, "export", "--all", **env)
    assert done.returncode == 0, done.stderr
    return {r["id"]: r for r in map(json.loads, done.stdout.splitlines()[1:])}


def store_rows(home: Path, name: str) -> list[dict]:
    import lance

    table = lance.dataset(str(home / "lancedb" / f"{name}.lance"))
    return sorted(table.to_table(columns=[c for c in table.schema.names if c != "vector"]).to_pylist(),
                  key=lambda r: r["id"])


# -- 1: a damaged newest version file or data file ----------------------------------------------------
@pytest.mark.parametrize("part,how", [("manifest", "empty"), ("manifest", "cut"), ("manifest", "zeros"),
                                      ("data", "cut"), ("data", "zeros")])
def test_1_power_cut_damage_opens_the_newest_readable_version_and_repair_succeeds(home, part, how):
    before = notes_of(home)
    added = zk(home, "add", "the last words before the power cut", "--json")
    last = json.loads(added.stdout)["id"]
    table = home / NOTES_DIR
    damage(newest_manifest(table) if part == "manifest" else newest_data_file(table), how)

    listed = zk(home, "list", "--json")
    assert listed.returncode == 0, listed.stderr
    assert len(listed.stderr.splitlines()) == 1 and "cannot be read" in listed.stderr  # said once
    main = {i for i, n in before.items() if n["notebook"] == "main"}
    assert {n["id"] for n in json.loads(listed.stdout)} == main  # the version before the cut
    refused = zk(home, "add", "not over a damaged store")
    assert refused.returncode == 1 and one_line(refused.stderr) and "zk repair" in refused.stderr
    doctor = zk(home, "doctor", "--json")
    [finding] = [c for c in json.loads(doctor.stdout)["checks"] if c["check"] == "table notes"]
    assert doctor.returncode == 1 and not finding["ok"] and "commands read version" in finding["message"]

    repaired = zk(home, "repair", "--yes", "--json")
    assert repaired.returncode == 0, repaired.stderr
    report = json.loads(repaired.stdout)
    assert report["restored"] == report["recovered"]
    after = notes_of(home)
    assert {i: after[i] for i in before} == before  # every other note exactly as it was
    if part == "manifest":  # the lost commit's own data file gives its note back
        assert after[last]["content"] == "the last words before the power cut" and report["lost"] == 0
    else:  # its only copy was in the damaged file: counted, not silently dropped
        assert last not in after and report["lost"] == 1
    assert zk(home, "doctor").stdout.count("FAIL table") == 0
    assert zk(home, "add", "writes work again").returncode == 0


# -- 2: a lost newest commit is named, and its text recovered when a copy survives ---------------------
@pytest.mark.parametrize("how", ["gone", "empty"])
def test_2_a_lost_edit_is_named_and_its_text_read_back(home, embedder, how):
    memory = Memory(home, embedder=embedder)
    note = Views(memory).notes(limit=1)[0]
    memory.edit(note.id, "the edit the power cut took")
    damage(newest_manifest(home / NOTES_DIR), how)

    shown = zk(home, "repair")  # no consent: the report only
    assert shown.returncode == 1
    assert "read back from a lost commit" in shown.stdout and note.short_id in shown.stdout, shown.stdout
    repaired = zk(home, "repair", "--yes", "--json")
    report = json.loads(repaired.stdout)
    assert repaired.returncode == 0 and report["changed"] == [note.id]
    assert report["lost_commits"][0]["rows"] == 1
    restored = notes_of(home)[note.id]
    assert restored["content"] == "the edit the power cut took" and restored["version"] == note.version + 1


def test_2_an_edit_whose_data_file_is_cut_is_named_as_restored_older(home, embedder):
    memory = Memory(home, embedder=embedder)
    note = Views(memory).notes(limit=1)[0]
    memory.edit(note.id, "the edit whose file was cut")
    damage(newest_data_file(home / NOTES_DIR), "cut")

    repaired = zk(home, "repair", "--yes")
    assert repaired.returncode == 0, repaired.stderr
    assert "newest version lost, restored as it was before" in repaired.stdout and note.short_id in repaired.stdout
    assert notes_of(home)[note.id]["content"] == note.content


# -- 3: the count asked is the count restored --------------------------------------------------------
def test_3_repair_restores_every_note_it_read_even_ones_a_backup_restore_refuses(home):
    before = notes_of(home)
    assert {n["created"] for n in before.values()} >= {"not a date"}
    zk(home, "add", "one more")
    damage(newest_data_file(home / NOTES_DIR), "cut")
    repaired = zk(home, "repair", "--yes", "--json")
    assert repaired.returncode == 0, repaired.stderr
    report = json.loads(repaired.stdout)
    assert report["recovered"] == report["restored"] == len(before)  # what was asked about is what comes back
    after = notes_of(home)
    assert after == before  # every field, the odd ones too


# -- 4: damage to one table keeps the healthy ones as they are ---------------------------------------
@pytest.mark.parametrize("damaged", ["notes", "entities", "entities-every-version", "meta.json"])
def test_4_healthy_tables_are_kept_as_they_are(home, damaged):
    tables = ("notes", "episodes", "entities", "relations")
    before = {name: store_rows(home, name) for name in tables}
    versions = {name: manifest_versions(home / "lancedb" / f"{name}.lance")[-1] for name in tables}
    if damaged == "meta.json":
        (home / "meta.json").write_text("{garbage")
    elif damaged == "entities-every-version":  # each commit gives back what it wrote, from its own files
        damaged = "entities"
        for manifest in (home / "lancedb" / "entities.lance" / "_versions").glob("*.manifest"):
            damage(manifest, "zeros")
    else:  # the newest commit of that table lost (for entities: the hand-made merge)
        damage(newest_manifest(home / "lancedb" / f"{damaged}.lance"), "empty")

    repaired = zk(home, "repair", "--yes", "--json")
    assert repaired.returncode == 0, repaired.stderr
    for name in tables:
        after = store_rows(home, name)
        assert after == before[name], name  # the merge (merged_into) included
        if name != damaged:  # not rebuilt: the same table, at the same version
            assert manifest_versions(home / "lancedb" / f"{name}.lance")[-1] == versions[name], name
    graph = zk(home, "graph", "--json")
    assert graph.returncode == 0 and "Seoul" in graph.stdout


# -- 5: a lost meta.json ------------------------------------------------------------------------------
def test_5_a_store_without_meta_json_is_refused_and_repair_recreates_it(tmp_path):
    home = tmp_path / "home"
    assert zk(home, "add", "the cat sat on the mat", ZK_EMBEDDER="minilm").returncode == 0
    assert zk(home, "add", "quarterly budget meeting", ZK_EMBEDDER="minilm").returncode == 0
    meta = json.loads((home / "meta.json").read_text())
    (home / "meta.json").unlink()  # a sync tool, a cleanup, a bad copy

    for args in (["add", "a dog barked"], ["list"]):  # the configured embedder is e5-small
        done = zk(home, *args)
        assert done.returncode == 1 and one_line(done.stderr) and "meta.json is missing" in done.stderr, done.stderr
    assert not (home / "meta.json").exists()  # nothing relabelled the store
    doctor = zk(home, "doctor")
    assert doctor.returncode == 1 and "FAIL store: meta.json is missing next to 2 note(s)" in doctor.stdout
    assert "minilm" in doctor.stdout
    repaired = zk(home, "repair", "--yes")
    assert repaired.returncode == 0, repaired.stderr
    recreated = json.loads((home / "meta.json").read_text())
    assert (recreated["embedder"], recreated["dim"], recreated["schema_version"]) == \
        (meta["embedder"], meta["dim"], meta["schema_version"]) == ("minilm", 384, meta["schema_version"])
    assert recreated["tables"]["notes"]["rows"] == 2
    wrong = zk(home, "add", "x")
    assert wrong.returncode == 1 and "embedded with 'minilm'" in wrong.stderr
    assert len(notes_of(home, ZK_EMBEDDER="minilm")) == 2


def test_5_a_store_another_zk_just_created_is_not_taken_for_a_lost_meta_json(tmp_path, embedder, monkeypatch):
    """Eight `zk add`s on a new home (CI, tests/test_crash.py): one read meta.json before another created the
    store and added a note, then saw notes and no meta.json read earlier, and refused the store."""
    from zettel_amem.storage.store import Store

    home = tmp_path / "home"
    Memory(home, embedder=embedder).add("the first note of a new home", "2026-03-01")
    real = Store.read_meta
    reads = []

    def read_before_the_other_zk_wrote_it(path):
        reads.append(path)
        return {} if len(reads) == 1 else real(path)

    monkeypatch.setattr(Store, "read_meta", staticmethod(read_before_the_other_zk_wrote_it))
    second = Memory(home, embedder=embedder)
    assert second.store.damage is None and len(reads) >= 2
    second.add("the second note", "2026-03-02")
    assert len(second.store.notes()) == 2


def test_5_without_a_recorded_embedder_repair_checks_the_vectors(tmp_path):
    import lance

    home = tmp_path / "home"
    assert zk(home, "add", "the cat sat on the mat", ZK_EMBEDDER="minilm").returncode == 0
    lance.dataset(str(home / NOTES_DIR)).update_schema_metadata({}, replace=True)  # a table from before the record
    (home / "meta.json").unlink()
    guessed = zk(home, "repair", "--yes")  # e5-small configured: its vectors do not match
    assert guessed.returncode == 1 and "cannot tell which embedder" in guessed.stderr
    assert not (home / "meta.json").exists()
    right = zk(home, "repair", "--yes", ZK_EMBEDDER="minilm")
    assert right.returncode == 0, right.stderr
    assert json.loads((home / "meta.json").read_text())["embedder"] == "minilm"


# -- 6: a read-only home -----------------------------------------------------------------------------
def read_only(home: Path, tmp_path: Path) -> tuple[str, Path]:
    """A command wrapper that sees `home` read-only, and the path to give it."""
    if os.geteuid() != 0:
        for path in [home, *home.rglob("*")]:
            path.chmod(path.stat().st_mode & ~0o222)
        return "%s", home
    if shutil.which("unshare") is None or subprocess.run(["unshare", "-m", "true"]).returncode:
        pytest.skip("root without mount namespaces: no way to make the store read-only")
    mount = tmp_path / "ro"
    mount.mkdir()
    return f"unshare -m bash -c 'mount --bind {home} {mount} && mount -o remount,ro,bind {mount} && %s'", mount


def test_6_repair_of_a_damaged_read_only_home_is_one_line(home, tmp_path):
    readable = len(notes_of(home))
    zk(home, "add", "one more")
    damage(newest_data_file(home / NOTES_DIR), "cut")
    wrap, path = read_only(home, tmp_path)
    done = harness.shell(wrap % f"zk --home {path} repair --yes", home)
    assert done.returncode == 1 and one_line(done.stderr) and "read-only" in done.stderr, done.stderr
    assert "zk repair -o FILE" in done.stderr
    out = tmp_path / "saved.jsonl"
    saved = harness.shell(wrap % f"zk --home {path} repair --yes -o {out}", home)
    assert saved.returncode == 1 and "nothing was changed" in saved.stdout and "Traceback" not in saved.stderr
    assert len(notes_of_file(out)) == readable


def notes_of_file(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text().splitlines()[1:]]


def test_6_doctor_notices_a_read_only_home(home, tmp_path):
    wrap, path = read_only(home, tmp_path)
    doctor = harness.shell(wrap % f"zk --home {path} doctor", home)
    assert doctor.returncode == 1 and "FAIL writable:" in doctor.stdout and "read-only" in doctor.stdout
    healthy = harness.shell(wrap % f"zk --home {path} repair", home)
    assert healthy.returncode == 0 and "healthy" in healthy.stdout
