"""Real deletion: `zk rm` removes the note, its links both ways and the words it wrote into evolved
neighbours, from the store and from disk; a note deleted while the model works on it stays deleted.
(`zk rm` on a damaged store: test_store.py.)"""

from __future__ import annotations

import json
import subprocess

import numpy as np
import pytest

from tests.fake_llm import EvolvingFakeLLM
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
    secret = evolving.add("SECRET-7f3a-DELETE-ME my bank PIN is hidden here, after the run", "2026-03-20T08:00")
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
