"""`ZkTools`: what every MCP tool runs against — one notebook's memory and tiers, the locks, and the
helpers the tools share. No MCP types but `ToolError` (easy to test and reuse)."""

from __future__ import annotations

import json
import threading
from collections.abc import Callable
from contextlib import nullcontext
from pathlib import Path
from typing import TypeVar

from ..backends.llm import LLMError
from ..core.errors import ZkError
from ..core.models import Hint
from ..memory import Memory
from ..retrieval.retrieve import Hit
from ..tiers.service import Tiers
from .models import EpisodeHit, NoteHit, NoteOut

T = TypeVar("T")


class ZkTools:
    """One notebook as the tools see it. Tools run in the SDK's worker threads: store reads and writes (and
    embeddings) hold `lock`, which is never held across a model call; a model call holds `model_lock`."""

    def __init__(self, home: str | Path | None, notebook: str, spawn_worker: Callable[[Path], None] | None,
                 memory: Memory | None = None):
        self.memory = memory if memory is not None else Memory(home, notebook=notebook)
        self.tiers = Tiers(self.memory)
        self.notebook = notebook
        self.spawn = spawn_worker  # starts the background worker for a home, or None
        self.lock = threading.RLock()  # the store, the embedder, lazy loading: short holds only
        self.model_lock = threading.Lock()  # the model: one call at a time, never under `lock`

    def call(self, fn: Callable[[], T], locked: bool = True) -> T:
        """Run one tool body (under the store lock unless it takes its locks itself, like `ask`);
        expected failures become one-line tool errors."""
        from mcp.server.mcpserver.exceptions import ToolError

        with self.lock if locked else nullcontext():
            try:
                return fn()
            except (ZkError, LLMError) as exc:
                raise ToolError(" ".join(str(exc).split())) from None

    def note_hits(self, hits: list[Hit]) -> list[NoteHit]:
        back = self.memory.store.backlinks_many([h.note.id for h in hits])
        return [NoteHit(**NoteOut.of(h.note, back.get(h.note.id, [])).model_dump(),
                        score=None if h.via else round(h.score, 4), via=h.via) for h in hits]

    @staticmethod
    def episode_hits(hints: list[Hint]) -> list[EpisodeHit]:
        return [EpisodeHit(id=h.episode.id, abstract=h.episode.abstract, start=h.episode.start,
                           session_id=h.episode.session_id, score=round(h.score, 4)) for h in hints]

    def read_note(self, note_id: str) -> str:
        """The `zk://note/{id}` resource: one note as JSON."""
        note = self.memory.resolve(note_id)
        return json.dumps(note.to_json(self.memory.backlinks(note.id)), ensure_ascii=False)
