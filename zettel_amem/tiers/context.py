"""The context tier: what an agent or `zk ask` is given from the upper tiers.

    hints()            L0: a few one-line episode hints for a system prompt, or nothing (a score
                       threshold: no hint beats a wrong hint); every call is logged for `zk stats`
    search_episodes()  hybrid episode search (keywords weighted, absolute scores)
    expand()           L1: an episode's summary and turns, a session's turns, or a note, by id
    memory_block()     hints + graph facts for `zk ask` (one function for the CLI, MCP and the benchmark)
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable
from typing import TYPE_CHECKING

from ..core.errors import NotFound, ZkError
from ..core.models import EPISODE_PRUNED, ContextResult, Hint, canonical_map, episode_id_for, now_iso
from ..core.text import clip_end, is_trivial, name_key, one_line, romanise
from ..retrieval.retrieve import CoverageIndex
from ..storage.tier_store import TierStore
from .grounding import trusted
from .sessions import Sessions

if TYPE_CHECKING:  # the context tier reads a Memory's parts; it never imports Memory at run time
    from ..memory import Memory

CONTEXT_LOG = "context-log.jsonl"


def mentions(text: str, name: str) -> bool:
    """Does `text` name the entity? A Hangul name as a substring once spaces are gone (particles attach:
    "온비서는"); otherwise its Latin form (a Hangul name romanised) must start a word of the text (with Hangul
    romanised too), and a short one (< 4 letters) must also end one: "AI" is not in "said" or "aim"."""
    key = name_key(name)
    if len(key) < 2:
        return False
    if not key.isascii() and key in name_key(text):
        return True
    latin = " ".join(re.findall(r"[0-9a-z]+", romanise(name.lower())))
    words = " ".join(re.findall(r"[0-9a-z]+", romanise(text.lower())))
    end = "" if len(latin) >= 4 else "(?![0-9a-z])"
    return bool(latin) and re.search(rf"(?<![0-9a-z]){re.escape(latin)}{end}", words) is not None


class Context:
    def __init__(self, memory: Memory, store: TierStore, sessions: Sessions):
        self.memory = memory
        self.store = store
        self.sessions = sessions

    def build_query(self, message: str, recent: Iterable[str] = ()) -> str:
        """The message plus the last two user turns before it, newest at the end, capped on characters."""
        parts = [one_line(p) for p in [*list(recent)[-2:], message] if p and p.strip()]
        return clip_end(" ".join(parts), self.memory.settings.context_query_chars)

    def search_episodes(self, query: str, k: int = 5, min_score: float = 0.0) -> list[Hint]:
        """Hybrid episode search weighted towards keywords; scores are absolute, so a threshold means
        the same for every query: text coverage (0.7) + rescaled vector similarity (0.3)."""
        episodes = [e for e in self.store.episodes(self.memory.notebook, not_status=EPISODE_PRUNED, summarised=True)
                    if e.abstract]
        if not episodes or not query.strip():
            return []
        index = CoverageIndex([f"{e.title} {e.abstract} {e.summary}" for e in episodes])
        keyword = dict(zip((e.id for e in episodes), index.scores(query)))
        low, high = self.vector_band()
        vector = {e.id: min(1.0, max(0.0, (sim - low) / (high - low)))
                  for e, sim in self.store.nearest_episodes(self.memory.query_vector(query),
                                                            len(episodes), self.memory.notebook)}
        weight = self.memory.settings.context_keyword_weight
        hints = [Hint(e, weight * keyword[e.id] + (1 - weight) * vector.get(e.id, 0.0), keyword[e.id],
                      vector.get(e.id, 0.0)) for e in episodes]
        hints.sort(key=lambda h: (-h.score, h.episode.start))
        return [h for h in hints if h.score >= min_score][:k]

    def vector_band(self) -> tuple[float, float]:
        from ..backends.embed import query_band

        return query_band(self.memory.embedder.name)

    def hints(self, message: str, recent: Iterable[str] = (), limit: int | None = None,
                min_score: float | None = None, log: bool = True) -> ContextResult:
        """L0: at most `limit` episode abstracts relevant to the message, or nothing."""
        limit = self.memory.settings.context_hints if limit is None else limit
        min_score = self.memory.settings.context_min_score if min_score is None else min_score
        query = self.build_query(message, recent)
        result = ContextResult(query=query)
        if is_trivial(message):
            result.skipped = "trivial message"
        else:
            scored = self.search_episodes(query, k=max(limit, 1))
            result.top_score = scored[0].score if scored else None
            result.hints = [h for h in scored if h.score >= min_score][:limit]
            result.facts = self.facts_for(message, limit=self.memory.settings.context_facts)
        if log:
            self._log_context(result)
        return result

    def instructions(self) -> str:
        return self.memory.prompts.raw("context_instructions")

    def _log_context(self, result: ContextResult) -> None:
        entry = {"at": now_iso(), "notebook": self.memory.notebook, "hints": len(result.hints),
                 "top_score": None if result.top_score is None else round(result.top_score, 4),
                 "skipped": result.skipped or None}
        try:
            self.memory.home.mkdir(parents=True, exist_ok=True)
            with open(self.memory.home / CONTEXT_LOG, "a", encoding="utf-8") as log:
                log.write(json.dumps(entry) + "\n")
        except OSError:
            pass  # statistics are a convenience; never fail a hint because the log is not writable

    def expand(self, item_id: str) -> tuple[str, object]:
        """("episode", (Episode, turns)) for an e… id, ("session", (Episode or None, turns)) for s…,
        ("note", Note) for a note id (a hex id starting with "e" that names no episode is a note)."""
        cleaned = item_id.strip().lower()
        if cleaned.startswith(("e", "s")):
            try:
                session_id = self.sessions.resolve(cleaned)
            except ZkError:
                if cleaned.startswith("s") or not re.fullmatch(r"[0-9a-f]+", cleaned):
                    raise
                return "note", self.memory.resolve(cleaned)  # a note id that happens to start with "e"
            episode = self.store.episode(episode_id_for(session_id))
            turns = self.sessions.turns(session_id)
            if cleaned.startswith("e"):
                if episode is None:
                    raise NotFound(f"session {session_id} has no episode yet; run `zk session close {session_id}`")
                return "episode", (episode, turns)
            return "session", (episode, turns)
        return "note", self.memory.resolve(cleaned)

    def memory_block(self, question: str, facts: bool = True, with_time: bool = True
                     ) -> tuple[str, list[Hint], list[str]]:
        """What `zk ask` puts before the notes (the benchmark calls this too): L0 hints (past episodes that
        look relevant) and L2 facts about the people/projects the question names. Returns (block, hints,
        facts). `facts=False` leaves the graph out; `with_time=False` gives facts without dates (both are
        benchmark controls)."""
        hints = self.hints(question, log=False).hints
        facts = self.facts_for(question, with_time=with_time) if facts else []
        block = ""
        if hints:
            block += "Past episodes:\n" + "\n".join(f"- {h.episode.start[:10]}: {h.episode.abstract}" for h in hints)
            block += "\n"
        if facts:
            block += "Known facts:\n" + "\n".join(facts) + "\n"
        return block, hints, facts

    def facts_for(self, question: str, limit: int = 8, with_time: bool = True) -> list[str]:
        """Graph facts about the entities a question names (by name or alias), current first, with dates;
        only facts that pass the graph checks (`grounding.trusted`).

        `with_time=False` drops the dates and the validity (every fact as if current): the benchmark's
        control for what validity times change."""
        entities = self.store.entities(self.memory.notebook)
        canonical = canonical_map(entities)
        named = {canonical[e.id].id for e in entities if mentions(question, e.name)}
        if not named:
            return []
        lines = []
        for rel in self.store.relations(self.memory.notebook):
            subject, obj = canonical.get(rel.subject), canonical.get(rel.object)
            if not subject or not obj or not ({subject.id, obj.id} & named):
                continue
            if not trusted(subject.name, rel.predicate, obj.name):
                continue  # a fact stored before the checks (#31): a wrong fact is worse than none
            span = f"since {rel.valid_from[:10]}" if rel.invalid_from is None else \
                f"{rel.valid_from[:10]} to {rel.invalid_from[:10]}, no longer true"
            line = f"- {subject.name} {rel.predicate} {obj.name}" + (f" ({span})" if with_time else "")
            lines.append((with_time and rel.invalid_from is not None, rel.valid_from if with_time else "", line))
        lines.sort(key=lambda item: item[1], reverse=True)  # newest first ...
        lines.sort(key=lambda item: item[0])  # ... current before superseded (a stable sort keeps the order)
        return [line for *_, line in lines][:limit]

    def stats(self) -> dict:
        """Distribution of `zk context` calls: hints injected and top scores, to tune the threshold."""
        path = self.memory.home / CONTEXT_LOG
        entries = []
        if path.exists():
            for line in path.read_text(encoding="utf-8", errors="replace").splitlines():
                try:
                    entry = json.loads(line)
                except ValueError:
                    continue
                if isinstance(entry, dict) and entry.get("notebook") == self.memory.notebook \
                        and isinstance(entry.get("hints"), int):
                    entries.append(entry)
        searched = [e for e in entries if not e.get("skipped")]
        scores = sorted(e["top_score"] for e in searched if e.get("top_score") is not None)
        hints: dict[str, int] = {}
        for entry in searched:
            hints[str(entry["hints"])] = hints.get(str(entry["hints"]), 0) + 1

        def quantile(q: float) -> float | None:
            return scores[min(len(scores) - 1, int(q * len(scores)))] if scores else None

        return {"calls": len(entries), "skipped_trivial": len(entries) - len(searched),
                "no_hint": sum(1 for e in searched if e["hints"] == 0), "hints": dict(sorted(hints.items())),
                "top_score": {"p10": quantile(0.1), "p50": quantile(0.5), "p90": quantile(0.9)},
                "min_score": self.memory.settings.context_min_score}
