"""The three tiers over the notes, working (raw session turns) -> episodic -> semantic, one service
per job over one `Memory`:

    tiers.sessions    sessions.py      find, list and close sessions (closing queues an episode)
    tiers.promotion   promotion.py     summarise -> extract -> dedup + time, resumable; forgetting
                                       (`zk rm`, `zk prune`) in forgetting.py
    tiers.context     context.py       L0 hints, L1 expand, the memory block `zk ask` adds
    tiers.graph       graph_queries.py L2: an entity's relations (current and past), merges by hand

Nothing here prints. Promotion never runs inside `zk add` or `zk ask`: the CLI queues it and the
background worker (or `zk process`) drains it after the notes.
"""

from __future__ import annotations

from collections.abc import Callable

from ..amem.grounded import NOTE_CHECKS
from ..amem.grounded import load_check_counts as load_note_checks
from ..core.models import EpisodeResult
from ..memory import Memory
from ..storage.tier_store import TierStore
from .context import Context
from .graph_queries import GraphQueries
from .grounding import load_check_counts
from .promotion import Promotion
from .sessions import Sessions


class Tiers:
    def __init__(self, memory: Memory):
        self.memory = memory
        self.store = TierStore(lambda: memory.store)
        self.sessions = Sessions(memory, self.store)
        self.promotion = Promotion(memory, self.store, self.sessions)
        self.context = Context(memory, self.store, self.sessions)
        self.graph = GraphQueries(memory, self.store)

    def close_due_periods(self) -> None:
        """Close the journal periods that are over, when episodes are on (`episodes` setting)."""
        if self.memory.settings.episodes:
            self.sessions.close_due()

    def promote(self, on_progress: Callable[[EpisodeResult, int, int], None] | None = None
                ) -> list[EpisodeResult]:
        """After the notes: close the journal periods that are over, then promote every pending episode
        (summarise, extract), oldest first."""
        self.close_due_periods()
        return self.promotion.process_pending(on_progress)

    def after_import(self, session_ids: list[str], spawn_worker: bool, jobs: int = 1) -> None:
        """An imported (or restored) log is a finished session: queue it for its episode (when episodes
        are on); then start the background worker unless the caller does the work itself."""
        if session_ids and self.memory.settings.episodes:
            self.sessions.close_many(session_ids)
        if spawn_worker and self.memory.settings.auto_worker:
            from ..runtime.worker import spawn

            spawn(self.memory.home, jobs if jobs > 1 else None)

    def work_in_background(self, jobs: int = 1) -> None:
        """The background worker's job: drain the note queue, then promote episodes, again while work
        arrives. An episode that failed stays pending for `zk process`: this loop does not retry it."""
        from ..runtime.worker import drain

        tried: set[str] = set()

        def promote() -> None:
            tried.update(r.id for r in self.promote())

        drain(self.memory, then=promote, jobs=jobs,
              more_work=lambda: any(e.id not in tried for e in self.promotion.pending()))

    def stats(self) -> dict:
        """Counts of every tier in this notebook, and how `zk context` has been doing."""
        notebook = self.memory.notebook
        episodes = self.store.episodes(notebook)
        entities = self.store.entities(notebook)
        relations = self.store.relations(notebook)
        by = lambda rows, attr: {k: sum(1 for r in rows if getattr(r, attr) == k)  # noqa: E731
                                 for k in sorted({getattr(r, attr) for r in rows})}
        return {
            "notebook": notebook,
            "notes": {"total": self.memory.store.count(notebook), **self.memory.store.count_by("status", notebook)},
            "episodes": {"total": len(episodes), **by(episodes, "status")},
            "entities": {"total": len(entities), "merged": sum(1 for e in entities if e.merged_into)},
            "relations": {"total": len(relations), "current": sum(1 for r in relations if r.invalid_from is None)},
            "context": self.context.stats(),
            "graph_checks": load_check_counts(self.memory.home),  # what grounding dropped, by reason
            # what the notes' grounded contract (amem/grounded.py) did not keep of the model's fields
            "note_checks": load_note_checks(self.memory.home / NOTE_CHECKS),
        }
