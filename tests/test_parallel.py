"""Parallel enrichment (`zk process --jobs N`): model calls overlap, commits stay one at a time and
re-read what they change. The races are staged inside the scripted model's call, where the real
ones happen (no lock is held during a model call)."""

from __future__ import annotations

import threading

from tests.fake_llm import EvolvingFakeLLM
from zettel_amem.core.models import CONSTRUCTED, READY
from zettel_amem.memory import Memory
from zettel_amem.runtime.worker import drain


def test_a_note_evolved_during_its_own_link_call_keeps_that_evolution(zk_home, embedder):
    llm = EvolvingFakeLLM()
    memory = Memory(zk_home, llm=llm, embedder=embedder)
    memory.settings.link_min_similarity = 0.0
    memory.settings.evolve_max_neighbours = 2
    first = memory.add("Ran 10 km at the river on Saturday.", "2026-03-01")
    memory.process(first.id)
    a = memory.add("Knee hurts after the run.", "2026-03-02")
    b = memory.add("Doctor says rest the knee for two weeks.", "2026-03-03")
    memory.process(a.id)  # A: ready; now reset it to the link stage, as if its link call were in flight
    stored = memory.store.get(a.id, with_vector=True)
    stored.status, stored.links = CONSTRUCTED, []
    memory.store.update([stored])
    memory.pipeline._construct(memory.store.get(b.id, with_vector=True), *_scratch(b.id))  # B constructed too
    link = llm.link
    raced = {}

    def link_while_b_evolves_a(user, ids):
        if "Knee hurts after the run." in user.split("Candidates:")[0] and not raced:  # A's own link call
            raced["b"] = memory.process(b.id)  # B links and evolves A while A's call is in flight
        return link(user, ids)

    llm.link = link_while_b_evolves_a
    memory.process(a.id)
    assert a.id in raced["b"].evolved
    final = memory.store.get(a.id)
    assert final.status == READY and any(v.cause == b.id for v in final.history)  # B's change survived
    assert final.context.endswith("later (03-03): Doctor says rest the knee for two weeks.")
    assert final.version == stored.version + 1


def test_a_neighbour_deleted_during_the_link_call_stays_deleted(zk_home, embedder):
    llm = EvolvingFakeLLM()
    memory = Memory(zk_home, llm=llm, embedder=embedder)
    memory.settings.link_min_similarity = 0.0
    old = memory.add("Ran 10 km at the river on Saturday.", "2026-03-01")
    memory.process(old.id)
    new = memory.add("Knee hurts after the 10 km run.", "2026-03-02")
    link = llm.link

    def link_then_delete(user, ids):
        decision = link(user, ids)
        memory.remove(old.id)  # `zk rm` of the candidate while the model is deciding
        return decision

    llm.link = link_then_delete
    result = memory.process(new.id)
    assert result.status == READY and result.links == [] and result.evolved == []
    assert memory.store.get(old.id) is None and memory.store.count() == 1


def test_drain_with_four_jobs_overlaps_calls_and_finishes_every_note_once(zk_home, embedder, monkeypatch):
    monkeypatch.setenv("ZK_FAKE_DELAY", "0.3")
    llm = EvolvingFakeLLM()
    in_flight, peak, lock = [0], [0], threading.Lock()
    complete_json = llm.complete_json

    def counting(*args, **kwargs):
        with lock:
            in_flight[0] += 1
            peak[0] = max(peak[0], in_flight[0])
        try:
            return complete_json(*args, **kwargs)
        finally:
            with lock:
                in_flight[0] -= 1

    llm.complete_json = counting
    memory = Memory(zk_home, llm=llm, embedder=embedder)
    memory.settings.link_min_similarity = 0.0
    memory.settings.evolve_max_neighbours = 2
    memory.settings.episodes = False
    # each friend runs twice: a word few notes share, which an evolution's clause must name
    friends = ["Mina", "Jisoo", "Tomas", "Aiko", "Ravi", "Lena"]
    ids = [memory.add(f"Run {i}: {5 + i} km along the river with {friends[i // 2]}, knee fine.",
                      f"2026-03-{i + 1:02d}").id for i in range(12)]
    results = drain(memory, wait=True, jobs=4)
    assert sorted(r.id for r in results) == sorted(ids) and not any(r.error for r in results)
    assert peak[0] == 4  # four notes' model calls in flight at once
    notes = {n.id: n for n in memory.store.notes()}
    assert all(n.status == READY for n in notes.values())
    for note in notes.values():  # each evolution recorded once, by a finished note that links here
        causes = [v.cause for v in note.history]
        assert len(causes) == len(set(causes))
        assert all(note.id in notes[c].links for c in causes)
    applied = sum(len(r.evolved) for r in results)
    assert applied == sum(len(n.history) for n in notes.values()) and applied > 0


def _scratch(note_id: str):
    from contextlib import nullcontext

    from zettel_amem.backends.llm import Usage
    from zettel_amem.core.models import ProcessResult

    return Usage(), ProcessResult(id=note_id, status="pending"), nullcontext
