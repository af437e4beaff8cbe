"""backends/word_vectors.py: single words' embeddings kept on disk, so a cold `zk ask` over a journal does
not embed its whole vocabulary again (it was ~6 of ~7.5 s on page-long entries)."""

from __future__ import annotations

import numpy as np

from zettel_amem.backends.word_vectors import WordVectors


class CountingEmbed:
    def __init__(self):
        self.asked: list[list[str]] = []

    def __call__(self, words):
        self.asked.append(list(words))
        return np.array([[len(w), ord(w[0]), 1.0] for w in words], dtype=np.float32)


def test_words_are_embedded_once_across_processes(tmp_path):
    embed = CountingEmbed()
    first = WordVectors(embed, "e5-small", tmp_path)
    rows = first.vectors(["강아지", "dog", "강아지"])
    assert rows.shape == (3, 3) and np.array_equal(rows[0], rows[2]) and embed.asked == [["강아지", "dog"]]
    again = WordVectors(embed, "e5-small", tmp_path)  # a new `zk ask`: read from the file
    assert np.array_equal(again.vectors(["dog", "강아지"]), rows[[1, 0]]) and len(embed.asked) == 1
    again.vectors(["dog", "puppy"])
    assert embed.asked[-1] == ["puppy"]  # only the new word
    assert WordVectors(embed, "minilm", tmp_path).vectors(["dog"]).shape == (1, 3)
    assert embed.asked[-1] == ["dog"]  # another embedder: another file
    assert sorted(p.name for p in tmp_path.iterdir()) == ["e5-small.npz", "minilm.npz"]


def test_a_damaged_or_unwritable_cache_only_costs_time(tmp_path):
    embed = CountingEmbed()
    (tmp_path / "e5-small.npz").write_bytes(b"not a zip")
    assert WordVectors(embed, "e5-small", tmp_path).vectors(["cat"]).shape == (1, 3)
    assert WordVectors(embed, "e5-small", tmp_path).vectors(["cat"]).shape == (1, 3) and len(embed.asked) == 1
    blocked = tmp_path / "file"
    blocked.write_text("a file where the folder should be")
    assert WordVectors(embed, "e5-small", blocked / "sub").vectors(["cat"]).shape == (1, 3)
    assert WordVectors(embed, "e5-small", None).vectors([]).shape == (0, 1)


def test_the_idle_worker_embeds_new_entries_words_before_the_first_ask(memory, fake_llm, tmp_path, monkeypatch):
    from zettel_amem.runtime.worker import drain

    monkeypatch.setenv("ZK_CACHE_DIR", str(tmp_path / "cache"))
    memory.add("오늘 보리를 데리고 동물병원에 갔다. 체중은 7.2kg, the vet said she is healthy.", at="2026-11-02T20:00")
    drain(memory, wait=True)
    with np.load(tmp_path / "cache" / "word-vectors" / f"{memory.embedder.name}.npz") as data:
        words = set(data["words"].tolist())
    assert {"보리", "동물병원", "healthy"} <= words
    calls = []
    memory.answerer._words._embed = lambda words: calls.append(words) or np.zeros((len(words), 3))
    memory.answerer.word_vectors(["보리", "healthy"])
    assert calls == []  # already there
