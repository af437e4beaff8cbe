"""Single words' embeddings, kept on disk between runs.

A journal answer meets a question's words in the journal's other language through the embedder
(answering/term_bridge.py): the vocabulary of the entries it reads is a few thousand words, and
embedding them took ~6 of the ~7.5 s of a cold `zk ask` on page-long entries (`bench.diary_long --cli`).
A word's vector depends only on the word and the embedder, so each is computed once and kept in the
user's cache dir, one file per embedder. The file is a cache: unreadable or unwritable, it is ignored
and the words are embedded again.
"""

from __future__ import annotations

import os
import re
import tempfile
from collections.abc import Callable
from pathlib import Path

import numpy as np

Embed = Callable[[list[str]], np.ndarray]


class WordVectors:
    """`vectors(words)`: one row per word, from memory, then the file, then the embedder."""

    def __init__(self, embed: Embed, embedder_name: str, folder: Path | None):
        self._embed = embed
        self._path = folder / f"{re.sub(r'[^A-Za-z0-9._-]+', '_', embedder_name)}.npz" if folder else None
        self._known: dict[str, np.ndarray] | None = None

    def vectors(self, words: list[str]) -> np.ndarray:
        known = self._loaded()
        missing = [w for w in dict.fromkeys(words) if w not in known]
        if missing:
            for word, vector in zip(missing, self._embed(missing)):
                known[word] = np.asarray(vector, dtype=np.float32)
            self._save()
        if not words:
            return np.zeros((0, 1), dtype=np.float32)
        return np.vstack([known[w] for w in words])

    def _loaded(self) -> dict[str, np.ndarray]:
        if self._known is None:
            self._known = {}
            if self._path is not None and self._path.exists():
                try:
                    with np.load(self._path, allow_pickle=False) as data:
                        self._known = dict(zip(data["words"].tolist(), data["vectors"]))
                except (OSError, ValueError, KeyError):
                    self._known = {}  # a damaged cache is rebuilt
        return self._known

    def _save(self) -> None:
        """Write the whole table atomically (a temp file renamed): a reader never sees half a file, and
        of two writers the last wins (the other's new words are embedded again later)."""
        if self._path is None or not self._known:
            return
        try:
            self._path.parent.mkdir(parents=True, exist_ok=True)
            words = list(self._known)
            handle, temp = tempfile.mkstemp(dir=self._path.parent, suffix=".npz")
            with os.fdopen(handle, "wb") as out:
                np.savez(out, words=np.array(words), vectors=np.vstack([self._known[w] for w in words]))
            os.replace(temp, self._path)
        except OSError:
            pass  # a read-only cache dir: the words are embedded again next time
