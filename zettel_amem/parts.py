"""The parts of one notebook that the services over it (pipeline.py, search.py, changes.py) work with:
the notebook's name, its settings and prompts, and its store, embedder and model.

The owner (`memory.Memory`) loads the heavy parts lazily, so a service is handed functions that load
them on first use: listing notes never loads a model, and no service needs the owner (or imports it).
"""

from __future__ import annotations

from collections.abc import Callable
from concurrent.futures import Future
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from pathlib import Path

    from .backends.llm import LLM
    from .core.config import Settings
    from .core.prompts import Prompts
    from .storage.store import Store


class Parts:
    def __init__(self, notebook: str, settings: Settings, prompts: Prompts, *, store: Callable[[], Store],
                 embedder: Callable[[], Any], llm: Callable[[], LLM], start_embedding: Callable[[str], Future],
                 checks_file: Path | None = None):
        self.notebook, self.settings, self.prompts = notebook, settings, prompts
        self.checks_file = checks_file  # where the grounded contract counts what it refused (amem/grounded.py)
        self._store, self._embedder, self._llm, self._start_embedding = store, embedder, llm, start_embedding

    @property
    def store(self) -> Store:
        return self._store()

    @property
    def embedder(self) -> Any:
        return self._embedder()

    @property
    def llm(self) -> LLM:
        return self._llm()

    def start_embedding(self, query: str) -> Future:
        """Embed a query in the background (see `Memory.start_embedding`); `query_vector` collects it."""
        return self._start_embedding(query)

    def query_vector(self, query: str):
        return self._start_embedding(query).result()
