"""Embedders load offline from bundled files, in Korean and English."""

from __future__ import annotations

import numpy as np

from zettel_amem.embed import FastEmbedEmbedder, bundled_minilm_dir, load_embedder


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
