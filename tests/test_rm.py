"""Real deletion: `zk rm` removes the note, its links both ways and the words it wrote into evolved
neighbours, from the store and from disk; a note deleted while the model works on it stays deleted.
(`zk rm` on a damaged store: test_store.py.)"""

from __future__ import annotations

import json
import os
import shlex
import shutil
import subprocess

import numpy as np
import pytest

from tests.fake_llm import EvolvingFakeLLM
from tests.harness import one_line
from tests.sample import RUNS, add_all
from zettel_amem.core.config import ZkError
from zettel_amem.core.models import READY
from zettel_amem.memory import Memory


class CopyingFakeLLM(EvolvingFakeLLM):
    """Copies the new note's first word into its neighbours' context and tags, as a real model may."""

    def __init__(self) -> None:
        super().__init__()
        self.link = lambda user, ids: {"links": ids[:1], "updates": [
            {"id": ids[0], "context": f"Related to {_first_word(user)}.", "tags": [_first_word(user).lower()]}]}


def _first_word(user: str) -> str:
    import re

    return re.search(r"^New note \S+: (\S+)", user, re.MULTILINE).group(1)


def test_rm_removes_the_words_it_wrote_into_evolved_neighbours(zk, zk_home, embedder):
    memory = Memory(zk_home, llm=CopyingFakeLLM(), embedder=embedder)
    memory.settings.link_min_similarity = 0.0
    memory.settings.evolve_max_neighbours = 1
    [base] = add_all(memory, ["Knee hurts after the Saturday run."])
    before = memory.store.get(base)
    # it names the knee, so evolution (which adds only a note that shares a word) writes its words there
    secret = memory.add("ZEBRAQX42 is my new door code, knee or no knee", "2026-03-20T08:00")
    memory.process(secret.id)
    later = memory.add("Physio said rest the knee", "2026-03-21T08:00")
    memory.process(later.id)  # rewrites the same field again, starting from the secret's text
    neighbour = memory.store.get(base)
    assert "ZEBRAQX42" in json.dumps(neighbour.to_json()) + json.dumps([v.to_dict() for v in neighbour.history])
    on_disk = subprocess.run(["grep", "-rl", "ZEBRAQX42", str(zk_home)], capture_output=True).stdout
    assert on_disk  # the test would prove nothing if the word never reached the store

    zk("rm", secret.id[:10], "--yes", check=True)  # the real command
    neighbour = memory.store.get(base, with_vector=True)
    assert (neighbour.context, neighbour.tags) == (before.context, before.tags)
    assert "ZEBRAQX42" not in json.dumps([v.to_dict() for v in neighbour.history])
    assert all(v.cause != secret.id for v in neighbour.history)
    expected = embedder.embed_passages([neighbour.embedding_text()])[0]
    assert np.allclose(neighbour.vector, expected, atol=1e-5)  # re-embedded without the words
    assert memory.store.get(later.id) is not None and secret.id not in memory.store.get(later.id).links
    leftovers = subprocess.run(["grep", "-rl", "ZEBRAQX42", str(zk_home)], capture_output=True)
    assert leftovers.stdout == b"", leftovers.stdout
    memory.revert(base, 1)  # the history that is left still reverts cleanly


def test_rm_removes_links_both_ways_and_the_text_from_disk(evolving, zk_home):
    ids = add_all(evolving, RUNS)
    # about one earlier note (the race), so its clause goes there (refine.most_about) and rm has words to take back
    secret = evolving.add("Entered the autumn race on the Yeouido loop again; SECRET-7f3a-DELETE-ME my bank PIN",
                          "2026-03-20T08:00")
    evolving.process(secret.id)
    linked_to_it = evolving.backlinks(secret.id)
    assert evolving.store.get(secret.id).links  # it links to others too
    removal = evolving.remove(secret.id[:10])
    assert set(removal.unlinked) == set(linked_to_it)
    assert removal.restored and all("SECRET" not in evolving.store.get(i).context for i in removal.restored)
    assert evolving.store.get(secret.id) is None
    assert all(secret.id not in n.links for n in evolving.store.notes())
    with pytest.raises(ZkError):
        evolving.resolve(secret.id)
    leftovers = subprocess.run(["grep", "-rl", "SECRET-7f3a-DELETE-ME", str(zk_home)], capture_output=True)
    assert leftovers.stdout == b"", leftovers.stdout
    assert len(evolving.store.notes()) == len(ids)


def test_a_note_deleted_while_the_model_works_on_it_stays_deleted(evolving):
    """`zk rm` between the read and the write of a processing step: the step's write must not bring
    the note (and its text) back from the copy it read before the deletion."""
    ids = add_all(evolving, RUNS[:3])
    doomed = evolving.add("SECRET-rm-race my PIN", "2026-03-10T08:00")
    annotate = evolving.llm.annotate

    def annotate_while_deleted(user):
        evolving.remove(doomed.id)
        return annotate(user)

    evolving.llm.annotate = annotate_while_deleted
    evolving.process(doomed.id)
    assert evolving.store.get(doomed.id) is None
    assert sorted(n.id for n in evolving.store.notes()) == sorted(ids)

    # The same for a neighbour deleted while a new note's link call runs: no resurrection.
    evolving.llm.annotate = annotate
    newest = evolving.add("Ran 5 km again, knee fine.", "2026-03-11T08:00")
    victim = ids[-1]
    link = evolving.llm.link

    def link_while_deleted(user, candidate_ids):
        evolving.remove(victim)
        return link(user, candidate_ids)

    evolving.llm.link = link_while_deleted
    evolving.process(newest.id)
    assert evolving.store.get(victim) is None and evolving.store.get(newest.id).status == READY


def test_rm_rewrites_a_big_file_that_holds_one_deleted_row(memory):
    """Compaction's default leaves a data file alone below 10 % deleted rows, the deleted words with it;
    `zk rm` rewrites any file that holds one. (grep cannot see text inside a compressed file: rows are counted.)"""
    notes = [memory.add(f"note {i} of a long diary", "2026-03-01") for i in range(40)]
    memory.store.maintain(force=True)  # one file of 40 rows
    memory.remove(notes[7].id)
    fragments = memory.store.table.to_lance().get_fragments()
    assert sum(f.physical_rows for f in fragments) == memory.store.count() == 39
    assert all(f.metadata.deletion_file is None for f in fragments)


def _no_space_on(call: int, monkeypatch):
    """Every store commit from the `call`-th on fails as on a full disk (no space for its files); returns
    what gives the space back."""
    from zettel_amem.storage.database import Database

    calls, write = [0], Database.guarded_write

    def guarded_write(self, action):
        calls[0] += 1
        if calls[0] >= call:
            raise ZkError(f"cannot write to the store at {self.where}: No space left on device (os error 28)")
        return write(self, action)

    monkeypatch.setattr(Database, "guarded_write", guarded_write)
    return lambda: monkeypatch.setattr(Database, "guarded_write", write)


@pytest.mark.parametrize("failing", [1, 2])
def test_d11_rm_on_a_full_disk_leaves_the_store_whole_or_the_note_deleted(zk, zk_home, evolving, monkeypatch,
                                                                         failing):
    """D11 (break-it-d): the disk fills at the first or the second commit of `zk rm`. Either the note and
    the words it wrote into its neighbours are still there (and the line says nothing was deleted), or all
    of it is gone and the line says its text could not be erased yet (exit 3). Before, the neighbours were
    restored in one commit and the note deleted in the next: a full disk between them kept the note."""
    ids = add_all(evolving, RUNS[:4])
    secret = evolving.add("SECRET-d11-ZQX my bank PIN", "2026-03-20T08:00")
    evolving.process(secret.id)  # it rewrites two neighbours' context ("Updated by SECRET-d11-ZQX ...")

    def marks() -> tuple[bool, list[str], int]:
        rewritten = sum("SECRET-d11" in n.context for n in evolving.store.notes())
        return evolving.store.get(secret.id) is not None, sorted(evolving.backlinks(secret.id)), rewritten

    before = marks()
    assert before[0] and before[2]  # the test needs words it wrote into other notes
    space_again = _no_space_on(failing, monkeypatch)
    code, out, err = zk("rm", secret.id[:10], "--yes")
    space_again()
    if failing == 1:  # the deleting commit itself: nothing changed
        assert code == 1 and "nothing was deleted" in err and one_line(err), err
        assert marks() == before
    else:  # deleted, links and words and all; the purge failed
        assert code == 3 and one_line(err) and out == "", (code, out, err)
        assert f"deleted {secret.short_id}, but its old text could not be erased yet (the disk is full): " \
               "run `zk doctor` after freeing space" in err
        assert marks() == (False, [], 0) and len(evolving.store.notes()) == len(ids)


def test_d11_doctor_erases_the_text_a_full_disk_kept(zk, zk_home, monkeypatch):
    """D11: after `zk rm` on a full disk the note is gone but its words are still in the store's files; the
    home records that, `zk doctor` says so while the disk is full, and erases them once there is room."""
    for i in range(3):
        zk("add", f"ordinary note {i}", check=True)
    code, out, err = zk("add", "PYOPUMZ is the word of the note to delete", "--json")
    secret = json.loads(out)["id"]
    space_again = _no_space_on(2, monkeypatch)  # the delete commits; its purge finds no room
    code, out, err = zk("rm", secret, "--yes", "--json")
    assert code == 3 and json.loads(out)["erased"] is False and "could not be erased yet" in err
    assert zk("show", secret[:8]).exit_code == 1  # gone from every read
    kept = subprocess.run(["grep", "-rl", "PYOPUMZ", str(zk_home)], capture_output=True).stdout
    assert kept  # still in the files: that is the debt
    doctor = zk("doctor", "--json")
    [line] = [f for f in doctor.json()["checks"] if f["check"] == "deleted text"]
    assert not line["ok"] and "still in the store's files (the disk is full)" in line["message"]
    space_again()
    doctor = zk("doctor", "--json")
    [line] = [f for f in doctor.json()["checks"] if f["check"] == "deleted text"]
    assert line["ok"] and line["message"].startswith("erased the old text of notes deleted since")
    gone = subprocess.run(["grep", "-rl", "PYOPUMZ", str(zk_home)], capture_output=True)
    assert gone.stdout == b"", gone.stdout
    assert not [f for f in zk("doctor", "--json").json()["checks"] if f["check"] == "deleted text"]  # said once
    assert len(zk("list", "--json").json()) == 3


def test_d11_the_worker_erases_what_a_full_disk_kept(memory, zk_home, monkeypatch):
    """The worker's idle upkeep pays the same debt (a user who never runs `zk doctor`)."""
    notes = [memory.add(f"note {i}", "2026-03-01") for i in range(3)]
    secret = memory.add("QWERTZU-d11 in a note to delete", "2026-03-02")
    space_again = _no_space_on(2, monkeypatch)
    assert memory.remove(secret.id).not_erased == "the disk is full"
    space_again()
    assert memory.store.erase_owed()
    done = memory.store.maintain()
    assert "deleted text erased" in " ".join(done) and not memory.store.erase_owed()
    gone = subprocess.run(["grep", "-rl", "QWERTZU-d11", str(zk_home)], capture_output=True)
    assert gone.stdout == b"" and len(memory.store.notes()) == len(notes)


@pytest.mark.slow
def test_d11_rm_on_a_real_full_disk(zk_home, tmp_path):
    """The report's case on a real full disk: a tmpfs (root in a mount namespace; skipped elsewhere), a
    store of one imported file and one note, filled up to 64 KB: too little to rewrite the files."""
    from tests import harness

    if os.geteuid() != 0 or shutil.which("unshare") is None or subprocess.run(["unshare", "-m", "true"]).returncode:
        pytest.skip("needs root with mount namespaces to mount a small tmpfs")
    lines = tmp_path / "lines.txt"
    text = [f"line {i}: the garden, the weather and the walk to work today\n" for i in range(150)]
    text[75] = "line 75: pyopumz, the word of the note to delete\n"  # in the middle of the import's one file
    lines.write_text("".join(text), encoding="utf-8")
    disk = tmp_path / "disk"
    disk.mkdir()
    script = f"""set -u; mount -t tmpfs -o size=8m tmpfs {disk}; export ZK_HOME={disk}/home
        zk import {lines} --no-llm -q >/dev/null
        id=$(zk search pyopumz --json | python3 -c 'import json,sys; print(json.load(sys.stdin)[0]["id"])')
        free=$(df -k --output=avail {disk} | tail -1); fallocate -l $(( (free - 64) * 1024 )) {disk}/filler
        zk rm $id --yes; echo "rm=$?"; zk rm $id --yes; echo "again=$?"
        echo "listed=$(zk list --limit 1000 --json | python3 -c 'import json,sys; print(len(json.load(sys.stdin)))')"
        grep -rqF pyopumz $ZK_HOME && echo "text=kept"; zk doctor | grep "deleted text"
        rm {disk}/filler; zk doctor | grep "deleted text"; grep -rqF pyopumz $ZK_HOME || echo "text=gone" """
    done = harness.shell(f"unshare -m bash -c {shlex.quote(script)}", zk_home)
    out, err = done.stdout, done.stderr
    assert "rm=3" in out and "again=1" in out and "listed=149" in out and "text=kept" in out, out + err
    assert "could not be erased yet (the disk is full): run `zk doctor` after freeing space" in err, err
    assert "FAIL deleted text" in out and "ok deleted text: erased" in out and "text=gone" in out, out + err
