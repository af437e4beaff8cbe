"""Promotion: a closed session's episode moves up the tiers, one committed stage at a time.

    pending -> summarised   the session's turns summarised, plus a short extractive abstract (episodes.py)
    summarised -> ready     entities and relations extracted (extraction.py), deduplicated into the
                            graph, and older relations a newer one replaces marked invalid from then on

Each stage is resumable like a note's (a crash leaves the episode at its last stage). Promotion never
runs inside `zk add` or `zk ask`: the CLI queues it and the background worker (or `zk process`) drains
it after the notes. Forgetting (`zk rm`, `zk prune`) starts here too; what it undoes is in forgetting.py.
"""

from __future__ import annotations

import hashlib
import re
import time
from collections.abc import Callable
from contextlib import AbstractContextManager, nullcontext
from datetime import datetime, timedelta
from typing import TYPE_CHECKING

from ..backends.llm import LLMError
from ..core.dates import parse_when
from ..core.errors import InvalidInput, NotFound
from ..core.models import (
    EPISODE_PENDING,
    EPISODE_READY,
    EPISODE_SUMMARISED,
    Entity,
    Episode,
    EpisodeResult,
    Note,
    Relation,
    Usage,
    canonical_map,
    now_iso,
)
from ..core.text import name_key, one_line
from ..storage.tier_store import TierStore
from .episodes import abstract_of, summarise
from .extraction import ask_same, conflicts, extract, same_by_spelling
from .forgetting import forget_episode_of, forget_relations_of, prune_summaries
from .grounding import FUNCTIONAL, Fact, Rules, add_found, carried_over, record_checks
from .sessions import Sessions

if TYPE_CHECKING:  # promotion works on a Memory's parts; it never imports Memory at run time
    from ..memory import Memory

_AGE = re.compile(r"^\s*(\d+)\s*([dwmy]?)\s*$")


def _stable_id(*parts: str) -> str:
    """Deterministic id, so a stage re-run after a crash rewrites the same rows instead of adding more."""
    return hashlib.sha256("\x1f".join(parts).encode("utf-8")).hexdigest()[:32]


class _Stale(Exception):
    """The episode was re-queued or deleted while the model worked on it: its work is dropped."""


def _turns_key(turns: list[Note]) -> list[tuple[str, str]]:
    """What a summary is made from: each turn's id and text (an edit keeps the count, not the text)."""
    return [(t.id, t.content) for t in turns]


def parse_age(text: str) -> timedelta:
    """'180d', '26w', '6m', '1y' (or a bare number of days) -> a timedelta."""
    match = _AGE.match(text or "")
    if not match:
        raise InvalidInput(f"cannot read the age '{text}' (use e.g. 180d, 26w, 6m or 1y)")
    number, unit = int(match.group(1)), match.group(2) or "d"
    try:
        return timedelta(days=number * {"d": 1, "w": 7, "m": 30, "y": 365}[unit])
    except OverflowError:
        raise InvalidInput(f"the age '{text}' is too large") from None


def current_facts(store: TierStore, notebook: str) -> list[Fact]:
    """The notebook's current facts of a functional predicate, by names: every spelling of the merged
    subject and object (a fact about "온비서" meets a note that says "Onbiseo")."""
    rows = store.entities(notebook)
    canonical = canonical_map(rows)
    spellings: dict[str, list[str]] = {}
    for entity in rows:
        spellings.setdefault(canonical[entity.id].id, []).append(entity.name)

    def names(entity) -> tuple[str, ...]:
        return tuple(dict.fromkeys([entity.name, *spellings.get(entity.id, [])]))

    facts = []
    for rel in store.relations(notebook, current_only=True):
        if rel.predicate not in FUNCTIONAL or rel.subject not in canonical or rel.object not in canonical:
            continue
        subject, obj = canonical[rel.subject], canonical[rel.object]
        facts.append(Fact(names(subject), rel.predicate, names(obj), obj.type, subject.type))
    return facts


class Promotion:
    def __init__(self, memory: Memory, store: TierStore, sessions: Sessions):
        self.memory = memory
        self.store = store
        self.sessions = sessions

    def pending(self, all_notebooks: bool = True) -> list[Episode]:
        """Episodes with promotion work left, oldest first (the worker serves every notebook)."""
        notebook = None if all_notebooks else self.memory.notebook
        rows = self.store.episodes(notebook, status=(EPISODE_PENDING, EPISODE_SUMMARISED))
        return sorted(rows, key=lambda e: (e.start, e.id))  # oldest first, so newer facts supersede older

    def process_pending(self, on_progress: Callable[[EpisodeResult, int, int], None] | None = None
                        ) -> list[EpisodeResult]:
        from ..runtime.worker import step_lock

        def guard() -> AbstractContextManager:
            return step_lock(self.memory.home)

        todo = self.pending()
        results = []
        for index, episode in enumerate(todo, 1):
            results.append(self.process_episode(episode.id, guard))
            if on_progress:
                on_progress(results[-1], index, len(todo))
        return results

    def process_episode(self, episode_id: str, guard: Callable[[], AbstractContextManager] = nullcontext
                        ) -> EpisodeResult:
        """Summarise and extract one episode. `guard` (the worker's step lock) is held around every read
        and commit, never around a model call: `zk rm` and `zk edit` never wait for the model. A commit
        re-reads the episode (and, for a summary, its turns) and drops the model's work if either changed
        meanwhile: a deleted turn's words never come back, an edited turn is summarised afresh."""
        start = time.perf_counter()
        usage = Usage()
        with guard():
            episode = self.store.episode(episode_id, with_vector=True)
        if episode is None:
            raise NotFound(f"no episode {episode_id}")
        result = EpisodeResult(id=episode.id, status=episode.status)
        try:
            if episode.status == EPISODE_PENDING:
                self._summarise(episode, usage, guard)
            if episode.status == EPISODE_SUMMARISED:
                self._extract(episode, usage, result, guard)
        except _Stale:  # left as `zk rm`/`zk edit`/`zk session close` made it (queued again, or gone)
            with guard():
                latest = self.store.episode(episode.id)
            episode.status = latest.status if latest is not None else "deleted"
        except LLMError as exc:  # stays at its last committed stage, with the reason
            result.error = str(exc)
            with guard():
                if not self._changed_since_read(episode):
                    episode.error = result.error
                    self.store.put_episodes([episode])
        result.status = episode.status
        result.charge(usage, time.perf_counter() - start)
        return result

    def _summarise(self, episode: Episode, usage: Usage, guard: Callable[[], AbstractContextManager]) -> None:
        with guard():
            self._check(episode)
            turns = self.sessions.turns(episode.session_id, episode.notebook)
        summary, spent = summarise(self.memory.llm, self.memory.prompts, turns, episode.title, self.memory.settings)
        usage.add(spent)
        with guard():
            # Re-closed, a turn removed or edited while we summarised: stays pending, summarised afresh.
            self._check(episode)
            if _turns_key(self.sessions.turns(episode.session_id, episode.notebook)) != _turns_key(turns):
                raise _Stale
            episode.summary, episode.abstract = summary, abstract_of(summary)
            episode.turns = len(turns)
            text = "\n".join(filter(None, [episode.title, summary]))
            episode.vector = self.memory.embedder.embed_passages([text])[0].tolist()
            episode.status, episode.error = EPISODE_SUMMARISED, ""
            self.store.put_episodes([episode])

    def _changed_since_read(self, episode: Episode) -> bool:
        """Whether the episode row was re-queued (`close_session`, `forget_note`: new `created`, turn
        count or status) or deleted since `episode` was read: work done from the old turns must not be
        written back."""
        latest = self.store.episode(episode.id)
        return latest is None or (latest.created, latest.turns, latest.status) != (
            episode.created, episode.turns, episode.status)

    def _check(self, episode: Episode) -> None:
        """Under the guard: stop (`_Stale`) if the episode changed since it was read."""
        if self._changed_since_read(episode):
            raise _Stale

    def _extract(self, episode: Episode, usage: Usage, result: EpisodeResult,
                 guard: Callable[[], AbstractContextManager]) -> None:
        settings = self.memory.settings
        with guard():
            self._check(episode)
            forget_relations_of(self.store, episode.id)  # a re-summarised episode replaces its own facts
            if not episode.summary.strip() or not settings.graph_enabled():
                episode.status = EPISODE_READY  # nothing to read, or no graph for this model (#31)
                self.store.put_episodes([episode])
                return
            turns = self.sessions.turns(episode.session_id, episode.notebook)
        source = "\n".join(one_line(t.content) for t in turns)  # the notes themselves, one per line
        types = frozenset(t.strip() for t in settings.graph_types.split(",") if t.strip())
        ends = frozenset(t.strip() for t in settings.graph_end_types.split(",") if t.strip()) - types
        rules = Rules(settings.graph_support, settings.graph_cues, settings.graph_rule_predicate, settings.graph_writer,
                      ends, settings.graph_roles)
        found, spent = extract(self.memory.llm, self.memory.prompts, episode.summary, episode.start, source,
                               types, rules, settings.graph_related_only)
        usage.add(spent)
        if settings.graph_carry:
            with guard():
                facts = current_facts(self.store, episode.notebook)
            add_found(found, carried_over(facts, found.entities, source, types))
        record_checks(self.memory.home, episode.id, found.dropped)
        result.dropped = found.dropped.to_json()
        ids: dict[str, str] = {}
        for name, kind in found.entities:
            entity, merged = self._resolve_entity(name, kind, episode, usage, guard)
            ids[name_key(name)] = entity.id
            result.entities += 1
            result.merged += int(merged)
        new = [Relation(id=_stable_id(episode.id, name_key(s), name_key(p), name_key(o)), subject=ids[name_key(s)],
                        predicate=p, object=ids[name_key(o)], notebook=episode.notebook, episode_id=episode.id,
                        valid_from=episode.start, created=now_iso())
               for s, p, o in found.relations]
        changed = self._supersede(new, episode.notebook, usage, guard)
        with guard():
            self._check(episode)  # the session grew (or lost a turn) while we worked: stays queued
            current = {r.id for r in self.store.relations(episode.notebook, current_only=True)}
            changed = [r for r in changed if r.id in current]  # one deleted or outdated meanwhile stays so
            self.store.put_relations([*new, *changed])
            result.relations, result.invalidated = len(new), sum(1 for r in [*new, *changed] if r.invalid_from)
            episode.status, episode.error = EPISODE_READY, ""
            self.store.put_episodes([episode])

    def _resolve_entity(self, name: str, kind: str, episode: Episode, usage: Usage,
                        guard: Callable[[], AbstractContextManager]) -> tuple[Entity, bool]:
        """The entity a mention refers to: an existing one (same key), a new row merged into an existing
        one (same romanised key, a very close name, or the model says so), or a new entity. The store is
        read and written under `guard`; the model is asked without it."""
        notebook = episode.notebook
        key = name_key(name)
        with guard():
            self._check(episode)
            same_key = self.store.entities(notebook, key=key, with_vector=True)
            if same_key:
                entity = same_key[0]
                if episode.id not in entity.episodes:
                    entity.episodes.append(episode.id)
                    self.store.put_entities([entity])
                return entity, False
            vector = self.memory.embedder.embed_passages([name])[0].tolist()
            entity = Entity(id=_stable_id(notebook, "entity", key), name=name, type=kind, notebook=notebook, key=key,
                            created=now_iso(), episodes=[episode.id], vector=vector)
            for other in self.store.entities(notebook, canonical_only=True):
                reason = same_by_spelling(name, other.name)
                if reason:
                    entity.merged_into, entity.merge_reason = other.id, reason
                    break
            nearest = [] if entity.merged_into else self.store.nearest_entities(vector, 3, notebook)
        if entity.merged_into is None:
            self._merge_by_similarity(entity, nearest, usage)
        with guard():
            self._check(episode)  # forgotten meanwhile: no entity may carry the removed words back
            if entity.merged_into and not any(e.id == entity.merged_into for e in self.store.entities(notebook)):
                entity.merged_into, entity.merge_reason = None, ""  # its target was removed meanwhile
            self.store.put_entities([entity])
        return entity, entity.merged_into is not None

    def _merge_by_similarity(self, entity: Entity, nearest: list[tuple[Entity, float]], usage: Usage) -> None:
        """Merge `entity` into the first near neighbour that is very close, or that the model judges the
        same (a closeness band, compatible types). Asks the model: never called under the guard."""
        from ..backends.embed import entity_thresholds

        low, high = entity_thresholds(self.memory.embedder.name)
        for other, similarity in nearest:
            if other.merged_into is not None or other.id == entity.id:
                continue
            if similarity >= high:
                entity.merged_into, entity.merge_reason = other.id, f"similar name ({similarity:.2f})"
            elif similarity >= low and (other.type == entity.type or "other" in (entity.type, other.type)):
                same, spent = ask_same(self.memory.llm, self.memory.prompts, entity.name, other, entity.type)
                usage.add(spent)
                if same:
                    entity.merged_into = other.id
                    entity.merge_reason = f"model judged same (similarity {similarity:.2f})"
            if entity.merged_into:
                break

    def _supersede(self, new: list[Relation], notebook: str, usage: Usage,
                   guard: Callable[[], AbstractContextManager]) -> list[Relation]:
        """Mark the relations a newer checked fact of the same subject and functional predicate replaces
        as invalid from then on (extraction.conflicts; no model call); returns the changed older rows, read
        under `guard` (the caller commits them only if still current). Each keeps its row, with
        `invalidated_by`, so `zk graph` shows it and `zk graph --restore` undoes it."""
        with guard():
            canonical = canonical_map(self.store.entities(notebook))
            current = self.store.relations(notebook, current_only=True)
        pairs = conflicts(new, current, lambda i: canonical[i].id if i in canonical else i)
        changed: dict[str, Relation] = {}
        new_ids = {r.id for r in new}
        for old, later in sorted(pairs, key=lambda p: p[1].valid_from):
            if old.invalid_from is not None:
                continue  # the first (earliest) newer fact ends it
            old.invalid_from, old.invalidated_by = later.valid_from, later.id
            if old.id not in new_ids:
                changed[old.id] = old
        return list(changed.values())

    def resummarize(self, session_or_episode: str) -> EpisodeResult:
        """Summarise a session again from its raw turns, then re-extract its facts (now, in the foreground)."""
        session_id = self.sessions.resolve(session_or_episode)
        episode = self.sessions.close(session_id, force=True)
        from ..runtime.worker import step_lock

        return self.process_episode(episode.id, lambda: step_lock(self.memory.home))

    # -- maintenance: forgetting --------------------------------------------------------------------
    def prune(self, older_than: str, now: str | None = None) -> list[str]:
        """Remove the summaries of episodes that ended before now - older_than. Raw notes, entities and
        relations stay; the episode row stays as a tombstone so the session is not summarised again."""
        try:
            cutoff = (datetime.fromisoformat(parse_when(now)) - parse_age(older_than)).isoformat()
        except OverflowError:  # older than the calendar: nothing can be that old
            cutoff = datetime.min.isoformat()
        from ..runtime.worker import step_lock

        with step_lock(self.memory.home):  # not while the worker is extracting from one
            return prune_summaries(self.store, self.memory.notebook, cutoff)

    def forget_note(self, note: Note) -> None:
        """After `zk rm`: the note's words must not live on in its session's summary or the facts drawn
        from it. The summary is cleared at once (and the episode queued to be summarised again from the
        remaining turns); the episode's relations are removed (forgetting.py)."""
        forget_episode_of(self.store, self.sessions, note)
