"""bench/scale.py: the filler store it builds is what its docstring says, and one measured command gives a
real time and peak RSS."""

from __future__ import annotations

import json

import numpy as np

from bench.scale import SOURCE, build_store, embed_sentences, measure_command, split_sentences
from zettel_amem.core.models import READY
from zettel_amem.memory import Memory

TEXT = """I went hiking in the mountains last weekend. The view from the top was amazing! Have you tried
the new bakery downtown? Their sourdough is the best I have had. My sister just adopted a puppy. He chews
everything in sight. I am reading a book about the history of jazz. Work has been really busy this month.
We are planning a trip to Lisbon in the spring. Do you still play the guitar? I started taking painting
classes on Tuesdays. The kids loved the science museum. 오늘은 무릎이 조금 아팠다. 저녁에 친구를 만났다."""


def test_split_sentences_keeps_every_sentence_once():
    assert split_sentences("Hi Mel! How are\n you? Fine.  ...") == ["Hi Mel!", "How are you?", "Fine."]


def test_builder_makes_the_store_it_describes(tmp_path, embedder, monkeypatch):
    monkeypatch.setenv("ZK_NO_WORKER", "1")
    cache = tmp_path / "sentences.npz"
    pool = embed_sentences(split_sentences(TEXT), embedder, cache)
    assert len(pool) == 14 and cache.exists()
    again = embed_sentences(split_sentences(TEXT), None, cache)  # from the cache: no embedder needed
    assert np.allclose(again.vectors, pool.vectors)

    home = tmp_path / "store" / "home"
    info = build_store(home, 300, pool, embedder, seed=1)
    memory = Memory(home, embedder=embedder)
    notes = memory.store.notes(with_vector=True)
    assert memory.store.count() == 300 == len(notes) == info["notes"]
    assert json.loads((home.parent / "build.json").read_text())["probe_id"] == info["probe_id"]

    turns = [n for n in notes if n.kind == "turn"]
    plain = [n for n in notes if n.kind == "note"]
    assert 0.2 < len(plain) / 300 < 0.4 and not any(n.session_id for n in plain)
    assert all(n.session_id and n.speaker for n in turns)
    sessions = {n.session_id for n in turns}
    assert all(sorted(n.seq for n in turns if n.session_id == s) == list(range(len([
        n for n in turns if n.session_id == s]))) for s in sessions)  # seq 0..len-1 in every session
    assert all(n.status == READY and n.source == SOURCE for n in notes)
    ats = [n.at for n in sorted(notes, key=lambda n: n.at)]
    assert ats[0][:4] == "2024" and ats[-1][:4] == "2025"  # spread over two years
    tagged = [n for n in notes if n.user_tags]
    assert tagged and all(f"#{t}" in n.content for n in tagged for t in n.user_tags)
    ids = {n.id for n in notes}
    linked = [n for n in notes if n.links]
    assert linked and all(set(n.links) <= ids for n in linked)
    assert memory.store.backlinks(info["probe_id"])  # the probe note has a backlink

    # A note's vector is the normalised mean of its sentences' embeddings (tags are not in it).
    index = {s: i for i, s in enumerate(pool.sentences)}
    note = next(n for n in notes if not n.user_tags and len(split_sentences(n.content)) >= 2)
    mean = pool.vectors[[index[s] for s in split_sentences(note.content)]].mean(axis=0)
    assert np.allclose(note.vector, mean / np.linalg.norm(mean), atol=1e-5)
    assert np.allclose(note.vector, note.raw_vector)

    status = measure_command("status", home, "", info["probe_id"], runs=1)
    assert status["wall_s"] > 0 and status["rss_mb"] > 10, status


def test_entries_are_pages_cut_into_passages_with_their_sentences_vectors(tmp_path, embedder, monkeypatch):
    """`--entries` (#36's search bound on entries of realistic length): every note is a journal entry of 6-12
    sentences, stored with the passages `zk add` would cut, each passage's vector the mean of its sentences'."""
    from zettel_amem.core.passages import make_passages, passages_from_json

    monkeypatch.setenv("ZK_NO_WORKER", "1")
    pool = embed_sentences(split_sentences(TEXT), embedder, tmp_path / "sentences.npz")
    home = tmp_path / "entries" / "home"
    info = build_store(home, 30, pool, embedder, seed=2, entries=True)
    memory = Memory(home, embedder=embedder)
    notes = memory.store.notes()
    assert info["entries"] and len(notes) == 30 and all(n.kind == "note" and not n.speaker for n in notes)
    assert all(6 <= len(split_sentences(n.content)) <= 12 for n in notes)
    rows = memory.store.passage_rows([n.id for n in notes])
    index = {s: i for i, s in enumerate(pool.sentences)}
    for note in notes:
        passages = passages_from_json(rows[note.id]["passages"])
        assert [p.text for p in passages] == [p.text for p in make_passages(note.content, note.at)]
        assert len(passages) >= 2
        flat = np.asarray(rows[note.id]["passage_vectors"]).reshape(len(passages), -1)
        inside = [index[s] for s in split_sentences(passages[0].text)]
        mean = pool.vectors[inside].mean(axis=0)
        assert np.allclose(flat[0], mean / np.linalg.norm(mean), atol=1e-5)
