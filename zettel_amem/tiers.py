"""The three tiers over the notes: working (raw session turns) -> episodic -> semantic.

`Tiers` wraps a `Memory` and adds, without printing anything:

    close_session() / close_due()   a completed session becomes a pending episode (a queue entry)
    process_pending()               the promotion chain: summarise -> extract -> dedup + time, resumable
    context()                       L0: a few one-line episode hints for an agent's system prompt
    search_episodes() / expand()    L1: episode hits by abstract, then the full summary or note by id
    graph() / facts_for()           L2: an entity's relations (current and past) and its neighbours
    merge() / unmerge() / prune() / stats()

Promotion never runs inside `zk add` or `zk ask`: the CLI queues it and the background worker (or
`zk process`) drains it after the notes.
"""

from __future__ import annotations

import hashlib
import json
import re
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from datetime import date, datetime, timedelta

from .config import ZkError
from .episodes import abstract_of, summarise
from .graph import ask_outdated, ask_same, conflicts, extract, same_by_spelling
from .llm import LLMError, Usage
from .memory import Memory, parse_when
from .note import (
    EPISODE_PENDING,
    EPISODE_PRUNED,
    EPISODE_READY,
    EPISODE_SUMMARISED,
    Entity,
    Episode,
    Note,
    Relation,
    journal_period,
    now_iso,
    session_id_for,
)
from .prompts import Prompts
from .retrieve import CoverageIndex
from .store import sql_str
from .text import clip_end, is_trivial, name_key, one_line, romanise
from .tier_store import TierStore

CONTEXT_LOG = "context-log.jsonl"
_AGE = re.compile(r"^\s*(\d+)\s*([dwmy]?)\s*$")


@dataclass
class Hint:
    episode: Episode
    score: float
    keyword: float
    vector: float

    def to_json(self) -> dict:
        return {"id": self.episode.id, "abstract": self.episode.abstract, "start": self.episode.start,
                "session_id": self.episode.session_id, "score": round(self.score, 4),
                "keyword": round(self.keyword, 4), "vector": round(self.vector, 4)}


@dataclass
class ContextResult:
    """What `zk context` found: the hints that passed the threshold, or why it did not search."""

    query: str
    hints: list[Hint] = field(default_factory=list)
    skipped: str = ""  # "trivial message" when no search was made
    top_score: float | None = None  # best score seen, passed or not (for threshold tuning)

    def block(self, instructions: str = "") -> str:
        """The `## Memory Context` block; empty when there is nothing worth saying."""
        if not self.hints:
            return ""
        lines = ["## Memory Context"]
        lines += [f"- [{h.episode.id[:9]}] {h.episode.start[:10]} {h.episode.abstract}" for h in self.hints]
        if instructions:
            lines += ["", instructions.strip()]
        return "\n".join(lines) + "\n"


@dataclass
class EpisodeResult:
    id: str
    status: str
    llm_calls: int = 0
    evaluated_tokens: int = 0
    completion_tokens: int = 0
    seconds: float = 0.0
    entities: int = 0
    merged: int = 0
    relations: int = 0
    invalidated: int = 0
    error: str = ""


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


def episode_id_for(session_id: str) -> str:
    return "e" + session_id.removeprefix("s")


def _stable_id(*parts: str) -> str:
    """Deterministic id, so a stage re-run after a crash rewrites the same rows instead of adding more."""
    return hashlib.sha256("\x1f".join(parts).encode("utf-8")).hexdigest()[:32]


def parse_age(text: str) -> timedelta:
    """'180d', '26w', '6m', '1y' (or a bare number of days) -> a timedelta."""
    match = _AGE.match(text or "")
    if not match:
        raise ZkError(f"cannot read the age '{text}' (use e.g. 180d, 26w, 6m or 1y)")
    number, unit = int(match.group(1)), match.group(2) or "d"
    try:
        return timedelta(days=number * {"d": 1, "w": 7, "m": 30, "y": 365}[unit])
    except OverflowError:
        raise ZkError(f"the age '{text}' is too large") from None


class Tiers:
    def __init__(self, memory: Memory):
        self.memory = memory
        self.settings = memory.settings
        self._store: TierStore | None = None
        self._prompts: Prompts = memory.prompts

    @property
    def notebook(self) -> str:
        return self.memory.notebook

    @property
    def store(self) -> TierStore:
        if self._store is None:
            self._store = TierStore(self.memory.store)
        return self._store

    # -- working tier: sessions -------------------------------------------------------------------
    def session_turns(self, session_id: str, notebook: str | None = None) -> list[Note]:
        notes = self.memory.store.notes(self.memory._scope(f"session_id = {sql_str(session_id)}", notebook))
        return sorted(notes, key=lambda n: (n.seq, n.at, n.created))

    def resolve_session(self, prefix: str) -> str:
        """Full session id from "s…", an episode id "e…", or a unique prefix of either."""
        cleaned = prefix.strip().lower()
        if cleaned.startswith("e"):
            cleaned = "s" + cleaned[1:]
        if not re.fullmatch(r"s?[0-9a-f]{1,15}", cleaned):
            raise ZkError(f"'{prefix}' is not a session or episode id (expected e.g. s3f9a12bc or e3f9a12bc)")
        cleaned = cleaned if cleaned.startswith("s") else "s" + cleaned
        rows = self.memory.store.notes(self.memory._scope(f"session_id LIKE {sql_str(cleaned + '%')}"))
        ids = sorted({n.session_id for n in rows if n.session_id})
        if not ids:
            raise ZkError(f"no session {cleaned} in notebook '{self.notebook}'")
        if len(ids) > 1:
            raise ZkError(f"session prefix '{cleaned}' is ambiguous: {', '.join(ids[:5])}")
        return ids[0]

    def close_session(self, session_id: str, force: bool = False) -> Episode:
        """Queue a session for summarising. A session that grew since its episode (or `force`) is queued
        again and summarised afresh from its raw turns; an unchanged one is left as it is."""
        episode = self.store.episode(episode_id_for(session_id))
        turns = self.session_turns(session_id, episode.notebook if episode else self._notebook_of(session_id))
        if not turns:
            raise ZkError(f"session {session_id} has no turns")
        if episode and not force and episode.turns == len(turns) and episode.status != EPISODE_PENDING:
            return episode
        title = turns[0].source or ""
        times = sorted(t.at for t in turns)
        episode = Episode(id=episode_id_for(session_id), session_id=session_id, notebook=turns[0].notebook,
                          title=title, start=times[0], end=times[-1], turns=len(turns),
                          status=EPISODE_PENDING, created=now_iso(),
                          summary=episode.summary if episode else "", abstract=episode.abstract if episode else "",
                          vector=episode.vector if episode else None)
        self.store.put_episodes([episode])
        return episode

    def _notebook_of(self, session_id: str) -> str:
        """Session ids are derived from the notebook, so one session lives in exactly one notebook."""
        rows = self.memory.store._query(f"session_id = {sql_str(session_id)}", ["notebook"], limit=1)
        return rows[0]["notebook"] if rows else self.notebook

    def close_sessions(self, session_ids: Iterable[str]) -> list[Episode]:
        return [self.close_session(s) for s in dict.fromkeys(session_ids)]

    def close_due(self, today: str | None = None) -> list[Episode]:
        """Rollover: journal periods (weeks or days) over before `today` without an episode are closed,
        in every notebook. A period's entries may have been written under either setting: each note's
        own session id decides, and a period is due once its last day is past."""
        today = today or date.today().isoformat()
        # One scan of the journal's raw entries per worker run: fine for a personal journal (10^4-10^5
        # entries); a watermark would make it incremental.
        summarised = {e.session_id: e.turns for e in self.store._rows("episodes")}
        rows = self.memory.store._query(f"kind = 'note' AND session_id IS NOT NULL AND at < {sql_str(today)}",
                                        ["session_id", "notebook", "at"])
        counts: dict[str, int] = {}
        for row in rows:
            counts[row["session_id"]] = counts.get(row["session_id"], 0) + 1
        due: list[str] = []
        for row in rows:
            session_id = row["session_id"]
            if session_id in due or summarised.get(session_id, -1) >= counts[session_id]:
                continue  # already summarised with all its entries (a late, back-dated entry re-opens it)
            for unit in ("week", "day"):
                period = journal_period(row["at"], unit)
                if session_id == session_id_for(row["notebook"], period.key) and period.last_day < today:
                    due.append(session_id)
                    break
        return self.close_sessions(due)

    # -- the promotion chain ----------------------------------------------------------------------
    def pending_episodes(self, all_notebooks: bool = True) -> list[Episode]:
        where = f"status IN ({sql_str(EPISODE_PENDING)}, {sql_str(EPISODE_SUMMARISED)})"
        rows = self.store._rows("episodes", where if all_notebooks else self.store._scope(self.notebook, where))
        return sorted(rows, key=lambda e: (e.start, e.id))  # oldest first, so newer facts supersede older

    def process_pending(self, on_progress: Callable[[EpisodeResult, int, int], None] | None = None
                        ) -> list[EpisodeResult]:
        from .worker import step_lock

        todo = self.pending_episodes()
        results = []
        for index, episode in enumerate(todo, 1):
            with step_lock(self.memory.home):
                results.append(self.process_episode(episode.id))
            if on_progress:
                on_progress(results[-1], index, len(todo))
        return results

    def process_episode(self, episode_id: str) -> EpisodeResult:
        start = time.perf_counter()
        usage = Usage()
        episode = self.store.episode(episode_id, with_vector=True)
        if episode is None:
            raise ZkError(f"no episode {episode_id}")
        result = EpisodeResult(id=episode.id, status=episode.status)
        try:
            if episode.status == EPISODE_PENDING:
                self._summarise(episode, usage)
            if episode.status == EPISODE_SUMMARISED:
                self._extract(episode, usage, result)
        except LLMError as exc:  # stays at its last committed stage, with the reason
            episode.error = result.error = str(exc)
            self.store.put_episodes([episode])
        result.status = episode.status
        result.llm_calls, result.evaluated_tokens = usage.calls, usage.evaluated_tokens
        result.completion_tokens, result.seconds = usage.completion_tokens, time.perf_counter() - start
        return result

    def _summarise(self, episode: Episode, usage: Usage) -> None:
        turns = self.session_turns(episode.session_id, episode.notebook)
        summary, spent = summarise(self.memory.llm, self._prompts, turns, episode.title, self.settings)
        usage.add(spent)
        if self._changed_since_read(episode):
            return  # re-closed or a turn removed while we summarised: stays pending, summarised afresh
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

    def _extract(self, episode: Episode, usage: Usage, result: EpisodeResult) -> None:
        self._forget_relations_of(episode.id)  # a re-summarised episode replaces its own facts
        if not episode.summary.strip():
            episode.status = EPISODE_READY
            self.store.put_episodes([episode])
            return
        found, spent = extract(self.memory.llm, self._prompts, episode.summary, episode.start)
        usage.add(spent)
        ids: dict[str, str] = {}
        for name, kind in found.entities:
            entity, merged = self._resolve_entity(name, kind, episode, usage)
            ids[name_key(name)] = entity.id
            result.entities += 1
            result.merged += int(merged)
        new = [Relation(id=_stable_id(episode.id, name_key(s), name_key(p), name_key(o)), subject=ids[name_key(s)],
                        predicate=p, object=ids[name_key(o)], notebook=episode.notebook, episode_id=episode.id,
                        valid_from=episode.start, created=now_iso())
               for s, p, o in found.relations]
        changed = self._supersede(new, episode.notebook, usage)
        if self._changed_since_read(episode):
            return  # the session grew (or lost a turn) while we worked: stay queued, summarised afresh
        self.store.put_relations([*new, *changed])
        result.relations, result.invalidated = len(new), sum(1 for r in [*new, *changed] if r.invalid_from)
        episode.status, episode.error = EPISODE_READY, ""
        self.store.put_episodes([episode])

    def _forget_relations_of(self, episode_id: str) -> None:
        """Remove an episode's relations and undo the invalidations they caused (before re-extraction)."""
        mine = self.store._rows("relations", f"episode_id = {sql_str(episode_id)}")
        if not mine:
            return
        ids = {r.id for r in mine}
        restored = self.store._rows("relations", "invalidated_by IN (" + ", ".join(sql_str(i) for i in ids) + ")")
        for rel in restored:
            rel.invalid_from = rel.invalidated_by = None
        self.store.put_relations(restored)
        self.store.delete_relations(list(ids))

    def _resolve_entity(self, name: str, kind: str, episode: Episode, usage: Usage) -> tuple[Entity, bool]:
        """The entity a mention refers to: an existing one (same key), a new row merged into an existing
        one (same romanised key, a very close name, or the model says so), or a new entity."""
        notebook = episode.notebook
        key = name_key(name)
        same_key = self.store.entities(notebook, f"key = {sql_str(key)}", with_vector=True)
        if same_key:
            entity = same_key[0]
            if episode.id not in entity.episodes:
                entity.episodes.append(episode.id)
                self.store.put_entities([entity])
            return entity, False
        vector = self.memory.embedder.embed_passages([name])[0].tolist()
        entity = Entity(id=_stable_id(notebook, "entity", key), name=name, type=kind, notebook=notebook, key=key,
                        created=now_iso(), episodes=[episode.id], vector=vector)
        canonical = self.store.entities(notebook, "merged_into IS NULL")
        for other in canonical:
            reason = same_by_spelling(name, other.name)
            if reason:
                entity.merged_into, entity.merge_reason = other.id, reason
                break
        if entity.merged_into is None:
            low, high = self.entity_thresholds()
            for other, similarity in self.store.nearest_entities(vector, 3, notebook):
                if other.merged_into is not None or other.id == entity.id:
                    continue
                if similarity >= high:
                    entity.merged_into, entity.merge_reason = other.id, f"similar name ({similarity:.2f})"
                elif similarity >= low and (other.type == kind or "other" in (kind, other.type)):
                    same, spent = ask_same(self.memory.llm, self._prompts, name, other, kind)
                    usage.add(spent)
                    if same:
                        entity.merged_into = other.id
                        entity.merge_reason = f"model judged same (similarity {similarity:.2f})"
                if entity.merged_into:
                    break
        self.store.put_entities([entity])
        return entity, entity.merged_into is not None

    def entity_thresholds(self) -> tuple[float, float]:
        """(ask the model above, merge without asking above) for name-embedding cosine similarity."""
        from .embed import ENTITY_THRESHOLDS

        return ENTITY_THRESHOLDS.get(self.memory.embedder.name, (0.8, 0.95))

    @staticmethod
    def _canonical_map(rows: list[Entity]) -> dict[str, Entity]:
        """entity id -> its canonical entity (following merges), over one notebook's entity rows."""
        entities = {e.id: e for e in rows}
        out = {}
        for entity in entities.values():
            seen, current = set(), entity
            while current.merged_into and current.merged_into in entities and current.id not in seen:
                seen.add(current.id)
                current = entities[current.merged_into]
            out[entity.id] = current
        return out

    def _supersede(self, new: list[Relation], notebook: str, usage: Usage) -> list[Relation]:
        """Mark relations that a newer one replaces as invalid from then on; returns changed older rows."""
        canonical = self._canonical_map(self.store.entities(notebook))
        current = self.store.relations(notebook, "invalid_from IS NULL")
        pairs = conflicts(new, current, lambda i: canonical[i].id if i in canonical else i)
        if not pairs:
            return []
        replaced, spent = ask_outdated(self.memory.llm, self._prompts, pairs, self._describer(canonical))
        usage.add(spent)
        changed = []
        new_ids = {r.id for r in new}
        for old_id, later in replaced.items():
            old = next((p[0] for p in pairs if p[0].id == old_id), None)
            if old is None:
                continue
            old.invalid_from, old.invalidated_by = later.valid_from, later.id
            if old.id not in new_ids:
                changed.append(old)
        return changed

    @staticmethod
    def _describer(canonical: dict[str, Entity]):
        def describe(rel: Relation) -> str:
            def name(i: str) -> str:
                return canonical[i].name if i in canonical else "?"
            return f"{name(rel.subject)} {rel.predicate} {name(rel.object)}"
        return describe

    def resummarize(self, session_or_episode: str) -> EpisodeResult:
        """Summarise a session again from its raw turns, then re-extract its facts (now, in the foreground)."""
        session_id = self.resolve_session(session_or_episode)
        episode = self.close_session(session_id, force=True)
        return self.process_episode(episode.id)

    # -- L0: hints --------------------------------------------------------------------------------
    def build_query(self, message: str, recent: Iterable[str] = ()) -> str:
        """The message plus the last two user turns before it, newest at the end, capped on characters."""
        parts = [one_line(p) for p in [*list(recent)[-2:], message] if p and p.strip()]
        return clip_end(" ".join(parts), self.settings.context_query_chars)

    def search_episodes(self, query: str, k: int = 5, min_score: float = 0.0) -> list[Hint]:
        """Hybrid episode search weighted towards keywords; scores are absolute, so a threshold means
        the same for every query: text coverage (0.7) + rescaled vector similarity (0.3)."""
        episodes = [e for e in self.store.episodes(self.notebook, f"status != {sql_str(EPISODE_PRUNED)}") if e.abstract]
        if not episodes or not query.strip():
            return []
        index = CoverageIndex([f"{e.title} {e.abstract} {e.summary}" for e in episodes])
        keyword = dict(zip((e.id for e in episodes), index.scores(query)))
        low, high = self.vector_band()
        vector = {e.id: min(1.0, max(0.0, (sim - low) / (high - low)))
                  for e, sim in self.store.nearest_episodes(self.memory.embedder.embed_query(query),
                                                            len(episodes), self.notebook)}
        weight = self.settings.context_keyword_weight
        hints = [Hint(e, weight * keyword[e.id] + (1 - weight) * vector.get(e.id, 0.0), keyword[e.id],
                      vector.get(e.id, 0.0)) for e in episodes]
        hints.sort(key=lambda h: (-h.score, h.episode.start))
        return [h for h in hints if h.score >= min_score][:k]

    def vector_band(self) -> tuple[float, float]:
        from .embed import QUERY_SIMILARITY_BANDS

        return QUERY_SIMILARITY_BANDS.get(self.memory.embedder.name, (0.0, 1.0))

    def context(self, message: str, recent: Iterable[str] = (), limit: int | None = None,
                min_score: float | None = None, log: bool = True) -> ContextResult:
        """L0: at most `limit` episode abstracts relevant to the message, or nothing."""
        limit = self.settings.context_hints if limit is None else limit
        min_score = self.settings.context_min_score if min_score is None else min_score
        query = self.build_query(message, recent)
        result = ContextResult(query=query)
        if is_trivial(message):
            result.skipped = "trivial message"
        else:
            scored = self.search_episodes(query, k=max(limit, 1))
            result.top_score = scored[0].score if scored else None
            result.hints = [h for h in scored if h.score >= min_score][:limit]
        if log:
            self._log_context(result)
        return result

    def instructions(self) -> str:
        return self._prompts.raw("context_instructions")

    def _log_context(self, result: ContextResult) -> None:
        entry = {"at": now_iso(), "notebook": self.notebook, "hints": len(result.hints),
                 "top_score": None if result.top_score is None else round(result.top_score, 4),
                 "skipped": result.skipped or None}
        try:
            self.memory.home.mkdir(parents=True, exist_ok=True)
            with open(self.memory.home / CONTEXT_LOG, "a", encoding="utf-8") as log:
                log.write(json.dumps(entry) + "\n")
        except OSError:
            pass  # statistics are a convenience; never fail a hint because the log is not writable

    # -- L1: expand -------------------------------------------------------------------------------
    def expand(self, item_id: str) -> tuple[str, object]:
        """("episode", (Episode, turns)) for an e… id, ("session", (Episode or None, turns)) for s…,
        ("note", Note) for a note id (a hex id starting with "e" that names no episode is a note)."""
        cleaned = item_id.strip().lower()
        if cleaned.startswith(("e", "s")):
            try:
                session_id = self.resolve_session(cleaned)
            except ZkError:
                if cleaned.startswith("s") or not re.fullmatch(r"[0-9a-f]+", cleaned):
                    raise
                return "note", self.memory.resolve(cleaned)  # a note id that happens to start with "e"
            episode = self.store.episode(episode_id_for(session_id))
            turns = self.session_turns(session_id)
            if cleaned.startswith("e"):
                if episode is None:
                    raise ZkError(f"session {session_id} has no episode yet; run `zk session close {session_id}`")
                return "episode", (episode, turns)
            return "session", (episode, turns)
        return "note", self.memory.resolve(cleaned)

    # -- L2: graph --------------------------------------------------------------------------------
    def find_entity(self, name: str) -> Entity:
        """The canonical entity a name refers to: same key, same romanised key, or a close embedding."""
        rows = self.store.entities(self.notebook)
        canonical = self._canonical_map(rows)
        if not canonical:
            raise ZkError(f"the graph of notebook '{self.notebook}' is empty (close a session first)")
        key = name_key(name)
        by_key = [e for e in rows if e.key == key] or [e for e in rows if romanise(e.key) == romanise(key)]
        if not by_key:
            vector = self.memory.embedder.embed_passages([name])[0]
            near = self.store.nearest_entities(vector, 1, self.notebook)
            if near and near[0][1] >= self.entity_thresholds()[1]:
                by_key = [near[0][0]]
        if not by_key:
            raise ZkError(f"no entity named '{name}' in notebook '{self.notebook}'")
        return canonical[by_key[0].id]

    def graph(self, name: str, depth: int = 1, at: str | None = None) -> dict:
        """An entity, its relations (current, past, and at `at` when given), their source episodes, and
        connected entities up to `depth` hops."""
        when = parse_when(at) if at else None
        if when and at and "T" not in at.strip() and " " not in at.strip():
            when = when[:10] + "T23:59:59"  # a bare date means "as of that day", the whole day included
        root = self.find_entity(name)
        rows = self.store.entities(self.notebook)
        canonical = self._canonical_map(rows)
        relations = self.store.relations(self.notebook)
        episodes = {e.id: e for e in self.store.episodes(self.notebook)}
        aliases: dict[str, list[str]] = {}
        for entity in rows:
            if canonical[entity.id].id != entity.id:
                aliases.setdefault(canonical[entity.id].id, []).append(entity.name)

        def canon(i: str) -> Entity | None:
            return canonical.get(i)

        def node(entity: Entity, level: int, seen: set[str]) -> dict:
            out = {"id": entity.id, "name": entity.name, "type": entity.type, "aliases": aliases.get(entity.id, []),
                   "relations": [], "connected": []}
            seen.add(entity.id)
            for rel in relations:
                subject, obj = canon(rel.subject), canon(rel.object)
                if not subject or not obj or entity.id not in (subject.id, obj.id):
                    continue
                if when and not rel.valid_at(when):
                    continue
                other = obj if subject.id == entity.id else subject
                episode = episodes.get(rel.episode_id)
                out["relations"].append({
                    "id": rel.id, "subject": subject.name, "predicate": rel.predicate, "object": obj.name,
                    "direction": "out" if subject.id == entity.id else "in", "other": other.name,
                    "valid_from": rel.valid_from, "invalid_from": rel.invalid_from, "current": rel.invalid_from is None,
                    "episode": rel.episode_id, "episode_title": episode.title if episode else None,
                    "episode_abstract": episode.abstract if episode else None})
                if level < depth and other.id not in seen:
                    out["connected"].append(node(other, level + 1, seen))
            out["relations"].sort(key=lambda r: (not r["current"], r["valid_from"]))
            return out

        return {"entity": node(root, 1, set()), "at": when}

    def entities(self) -> list[dict]:
        entities = self.store.entities(self.notebook)
        canonical = self._canonical_map(entities)
        rows = [{**entity.to_json(), "canonical": canonical[entity.id].name} for entity in entities]
        return sorted(rows, key=lambda r: (r["canonical"].lower(), r["merged_into"] is not None, r["name"]))

    def merge(self, name: str, into: str) -> Entity:
        """Record by hand that `name` is the same entity as `into` (undo with unmerge)."""
        source, target = self.find_entity(name), self.find_entity(into)
        if source.id == target.id:
            raise ZkError(f"'{name}' and '{into}' are already one entity")
        source.merged_into, source.merge_reason = target.id, "merged by hand"
        self.store.put_entities([source])
        return source

    def unmerge(self, name: str) -> Entity:
        """Undo a merge: the entity with exactly this name stands alone again, with its own relations."""
        key = name_key(name)
        rows = [e for e in self.store.entities(self.notebook) if e.key == key]
        if not rows:
            raise ZkError(f"no entity named '{name}' in notebook '{self.notebook}'")
        entity = rows[0]
        if entity.merged_into is None:
            raise ZkError(f"'{entity.name}' is not merged into another entity")
        entity.merged_into, entity.merge_reason = None, ""
        self.store.put_entities([entity])
        return entity

    def memory_block(self, question: str) -> tuple[str, list[Hint], list[str]]:
        """What `ask` puts before the notes: L0 hints (past episodes that look relevant) and L2 facts
        about the people/projects the question names. Returns (block, hints, facts)."""
        hints = self.context(question, log=False).hints
        facts = self.facts_for(question)
        block = ""
        if hints:
            block += "Past episodes:\n" + "\n".join(f"- {h.episode.start[:10]}: {h.episode.abstract}" for h in hints)
            block += "\n"
        if facts:
            block += "Known facts:\n" + "\n".join(facts) + "\n"
        return block, hints, facts

    def facts_for(self, question: str, limit: int = 8, with_time: bool = True) -> list[str]:
        """Graph facts about the entities a question names (by name or alias), current first, with dates.

        `with_time=False` drops the dates and the validity (every fact as if current): the benchmark's
        control for what validity times change."""
        entities = self.store.entities(self.notebook)
        canonical = self._canonical_map(entities)
        named = {canonical[e.id].id for e in entities if mentions(question, e.name)}
        if not named:
            return []
        lines = []
        for rel in self.store.relations(self.notebook):
            subject, obj = canonical.get(rel.subject), canonical.get(rel.object)
            if not subject or not obj or not ({subject.id, obj.id} & named):
                continue
            span = f"since {rel.valid_from[:10]}" if rel.invalid_from is None else \
                f"{rel.valid_from[:10]} to {rel.invalid_from[:10]}, no longer true"
            line = f"- {subject.name} {rel.predicate} {obj.name}" + (f" ({span})" if with_time else "")
            lines.append((with_time and rel.invalid_from is not None, rel.valid_from if with_time else "", line))
        lines.sort(key=lambda item: item[1], reverse=True)  # newest first ...
        lines.sort(key=lambda item: item[0])  # ... current before superseded (a stable sort keeps the order)
        return [line for *_, line in lines][:limit]

    # -- maintenance ------------------------------------------------------------------------------
    def prune(self, older_than: str, now: str | None = None) -> list[str]:
        """Remove the summaries of episodes that ended before now - older_than. Raw notes, entities and
        relations stay; the episode row stays as a tombstone so the session is not summarised again."""
        try:
            cutoff = (datetime.fromisoformat(parse_when(now)) - parse_age(older_than)).isoformat()
        except OverflowError:  # older than the calendar: nothing can be that old
            cutoff = datetime.min.isoformat()
        from .worker import step_lock

        with step_lock(self.memory.home):  # not while the worker is extracting from one
            # Only finished episodes: a pending one has not given its facts to the graph yet.
            expired = [e for e in self.store.episodes(self.notebook, f"status = {sql_str(EPISODE_READY)}")
                       if e.end < cutoff]
            for episode in expired:
                episode.summary = episode.abstract = ""
                episode.vector, episode.status = None, EPISODE_PRUNED
            if expired:
                self.store.put_episodes(expired, keep_vectors=False)
                self.store.compact()  # the old summaries must not survive in older table versions
        return [e.id for e in expired]

    def forget_note(self, note: Note) -> None:
        """After `zk rm`: the note's words must not live on in its session's summary or the facts drawn
        from it. The summary is cleared at once (and the episode queued to be summarised again from the
        remaining turns); the episode's relations are removed."""
        if not note.session_id:
            return
        episode = self.store.episode(episode_id_for(note.session_id))
        if episode is None:
            return
        self._forget_relations_of(episode.id)
        # Entities only this episode named go too (re-extraction brings back what the other turns say).
        named = self.store.entities(episode.notebook, with_vector=True)
        only_here = [e.id for e in named if e.episodes == [episode.id]]
        elsewhere = [e for e in named if episode.id in e.episodes and e.id not in only_here]
        for entity in elsewhere:
            entity.episodes = [i for i in entity.episodes if i != episode.id]
        self.store.put_entities(elsewhere)
        self.store.delete_entities(only_here)
        remaining = self.session_turns(note.session_id, episode.notebook)
        episode.summary = episode.abstract = ""
        episode.vector, episode.turns, episode.created = None, len(remaining), now_iso()
        if episode.status != EPISODE_PRUNED:  # a pruned episode stays pruned (its summary is gone anyway)
            episode.status = EPISODE_PENDING if remaining else EPISODE_PRUNED
        self.store.put_episodes([episode], keep_vectors=False)
        self.store.compact()

    def stats(self) -> dict:
        notes = self.memory.store.notes(self.memory._scope())
        episodes = self.store.episodes(self.notebook)
        entities = self.store.entities(self.notebook)
        relations = self.store.relations(self.notebook)
        by = lambda rows, attr: {k: sum(1 for r in rows if getattr(r, attr) == k)  # noqa: E731
                                 for k in sorted({getattr(r, attr) for r in rows})}
        return {
            "notebook": self.notebook,
            "notes": {"total": len(notes), **by(notes, "status")},
            "episodes": {"total": len(episodes), **by(episodes, "status")},
            "entities": {"total": len(entities), "merged": sum(1 for e in entities if e.merged_into)},
            "relations": {"total": len(relations), "current": sum(1 for r in relations if r.invalid_from is None)},
            "context": self.context_stats(),
        }

    def context_stats(self) -> dict:
        """Distribution of `zk context` calls: hints injected and top scores, to tune the threshold."""
        path = self.memory.home / CONTEXT_LOG
        entries = []
        if path.exists():
            for line in path.read_text(encoding="utf-8", errors="replace").splitlines():
                try:
                    entry = json.loads(line)
                except ValueError:
                    continue
                if isinstance(entry, dict) and entry.get("notebook") == self.notebook \
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
                "min_score": self.settings.context_min_score}

