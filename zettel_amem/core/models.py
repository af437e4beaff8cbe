"""The small core types: a Note, one Version of it, a long entry's Passage and the dates it writes
(DateMention), and the results the pipeline reports."""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass, field
from datetime import date, datetime, timedelta
from typing import Any

# Processing stages. A note is searchable from PENDING on (it has a content embedding).
PENDING = "pending"  # raw content + content embedding stored; no LLM work yet
CONSTRUCTED = "constructed"  # keywords/tags/context written and re-embedded; links not decided yet
READY = "ready"  # links decided, evolution applied (or skipped)
OUTBOX = "outbox"  # a shared store could not be reached: kept in the local outbox, never stored with this status

SHORT_ID = 8

# Fields an evolution may rewrite; versions record their old and new values. The user's own #tags
# (`user_tags`) are not among them: only an edit of the note's text changes those.
EVOLVABLE = ("context", "keywords", "tags")
# Fields a version may change and `zk revert` restores: evolution's, plus an edit's (`zk edit`: the text,
# its #tags), the links a re-linked edited note gained, and the typed *updates* a newer note recorded.
REVERTIBLE = ("content", "user_tags", "links", "updated_by", *EVOLVABLE)


@dataclass
class Version:
    """One recorded change to a note: which fields went from what to what, caused by which note."""

    version: int
    at: str
    cause: str | None  # id of the note whose arrival caused the change, None for user actions
    reason: str  # "evolution" | "revert" | ...
    changes: dict[str, dict[str, Any]]  # field -> {"old": ..., "new": ...}

    def to_dict(self) -> dict[str, Any]:
        return {"version": self.version, "at": self.at, "cause": self.cause, "reason": self.reason,
                "changes": self.changes}

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> Version:
        return cls(version=int(data["version"]), at=data["at"], cause=data.get("cause"),
                   reason=data.get("reason", "evolution"), changes=data.get("changes", {}))


@dataclass(frozen=True)
class DateMention:
    """One date phrase of a passage, resolved: `start`..`end` (ISO days, equal for one day); `plan`: the
    whole range lies after the day the entry was written."""

    phrase: str
    start: str
    end: str
    plan: bool = False

    def to_json(self) -> list:
        return [self.phrase, self.start, self.end, self.plan]

    @classmethod
    def from_json(cls, data: list) -> DateMention:
        return cls(str(data[0]), str(data[1]), str(data[2]), bool(data[3]) if len(data) > 3 else False)

    def days(self) -> list[date]:
        first, last = date.fromisoformat(self.start), date.fromisoformat(self.end)
        return [first + timedelta(days=i) for i in range((last - first).days + 1)] if last >= first else [first]

@dataclass
class Passage:
    """One passage of an entry: its text (as written, whitespace kept), where it starts in the entry, its
    dates and its own embedding (set when stored)."""

    index: int
    text: str
    start: int
    dates: list[DateMention] = field(default_factory=list)
    vector: list[float] | None = None

    def to_json(self) -> dict:
        return {"i": self.index, "text": self.text, "start": self.start, "dates": [d.to_json() for d in self.dates]}

    @classmethod
    def from_json(cls, data: dict) -> Passage:
        return cls(int(data["i"]), data["text"], int(data.get("start", 0)),
                   [DateMention.from_json(d) for d in data.get("dates", [])])


@dataclass
class Note:
    id: str
    content: str
    at: str  # ISO wall-clock time the note is about (given by --at or the time of writing)
    created: str = ""
    keywords: list[str] = field(default_factory=list)
    tags: list[str] = field(default_factory=list)  # the model's tags (construction, evolution)
    context: str = ""
    links: list[str] = field(default_factory=list)  # outgoing links, full note IDs
    status: str = PENDING
    version: int = 1
    history: list[Version] = field(default_factory=list)
    notebook: str = "main"
    kind: str = "note"  # "note" | "turn"
    session_id: str | None = None
    speaker: str | None = None
    seq: int = 0
    source: str | None = None
    content_hash: str = ""
    error: str = ""  # last processing error, kept so `zk show` can explain a pending note
    user_tags: list[str] = field(default_factory=list)  # the #tags written in the text (text.hashtags)
    vector: list[float] | None = None  # full embedding: content + what the LLM added (A-MEM)
    raw_vector: list[float] | None = None  # the raw words alone; never replaced by enrichment
    # A long entry's passages (passages.py), derived from `content` at write time, each with its dates and
    # embedding; [] for a short note or a chat turn (it is its own passage); None: not computed yet (a
    # store from before passages, filled by `zk process` and the worker)
    passages: list[Passage] | None = None
    # Typed *updates* links (#36, supersede.py): {"passage": a passage of this note (or its id), "by": the
    # newer passage that states a new value for what it stated, "on": the words both name}; recorded by the
    # newer note's arrival as a version of this one, so `zk revert` and `zk rm` of the newer note undo it.
    # "Now" answers read the newer passage.
    updated_by: list[dict[str, Any]] = field(default_factory=list)

    @property
    def short_id(self) -> str:
        return self.id[:SHORT_ID]

    def raw_text(self) -> str:
        """What the raw embedding covers: the words as written, with who said them."""
        return f"{self.speaker}: {self.content}" if self.speaker else self.content

    def enrichment_text(self) -> str:
        """What the LLM added (keywords, tags, context), indexed beside the raw words, never instead."""
        return " ".join([*self.keywords, *self.tags, self.context]).strip()

    def embedding_text(self) -> str:
        """What the full embedding covers: content plus everything the LLM added (A-MEM §3.1)."""
        parts = [self.raw_text()]  # who said it matters
        if self.keywords:
            parts.append("Keywords: " + ", ".join(self.keywords))
        if self.tags:
            parts.append("Tags: " + ", ".join(self.tags))
        if self.context:
            parts.append("Context: " + self.context)
        return "\n".join(parts)

    def to_json(self, backlinks: list[str] | None = None, **extra: Any) -> dict[str, Any]:
        data: dict[str, Any] = {
            "id": self.id, "content": self.content, "at": self.at, "keywords": self.keywords,
            "tags": self.tags, "user_tags": self.user_tags, "context": self.context, "links": self.links,
            "backlinks": backlinks if backlinks is not None else [], "status": self.status,
            "version": self.version, "notebook": self.notebook, "kind": self.kind, "updated_by": self.updated_by,
        }
        if self.session_id:
            data.update(session_id=self.session_id, speaker=self.speaker, seq=self.seq)
        data.update(extra)
        return data

    @staticmethod
    def history_to_json(history: list[Version]) -> str:
        return json.dumps([v.to_dict() for v in history], ensure_ascii=False)

    @staticmethod
    def history_from_json(raw: str | None) -> list[Version]:
        return [Version.from_dict(v) for v in json.loads(raw)] if raw else []


def session_id_for(notebook: str, session_key: str) -> str:
    """Stable session id: "s" + 15 hex of sha256(notebook, the log's own session key)."""
    digest = hashlib.sha256(f"{notebook}\x1f{session_key}".encode()).hexdigest()
    return "s" + digest[:15]


@dataclass
class Scope:
    """Whom a search is about: the people a query names who speak in imported chats. Search then ranks
    inside the chat sessions they speak in and the user's own notes (outside chats) that name them."""

    people: list[str]  # as the chats spell them (`Note.speaker`)
    sessions: list[str]  # session ids in which one of them speaks
    mentions: list[str] = field(default_factory=list)  # ids of notes outside chats naming one of them
    rows: int = 0  # notes inside the scope
    narrows: bool = True  # False: their notes are most of the notebook, so search looks everywhere

    def to_json(self) -> dict[str, Any]:
        return {"people": self.people, "sessions": len(self.sessions), "mentions": len(self.mentions),
                "notes": self.rows, "narrows": self.narrows}


@dataclass
class JournalPeriod:
    """The session a journal entry (`zk add`) belongs to: its day or its ISO week (config `journal_session`).

    A week is the default: most days hold one or two entries, and summarising one entry restates it; a
    week of entries compresses into a few facts. The session completes when the period is over."""

    key: str  # the session key ("week:2026-W10" / "day:2026-03-02"), hashed into the session id
    title: str  # "journal 2026-W10 (03-02 – 03-08)"
    last_day: str  # ISO date of the period's last day: due for summarising once today is later


def journal_period(at: str, unit: str = "week") -> JournalPeriod:
    from datetime import date, timedelta

    day = date.fromisoformat(at[:10])
    if unit == "day":
        return JournalPeriod(f"day:{day.isoformat()}", f"journal {day.isoformat()}", day.isoformat())
    year, week, weekday = day.isocalendar()
    monday = day - timedelta(days=weekday - 1) if day.toordinal() > 7 else date.min
    sunday = monday + timedelta(days=6) if date.max.toordinal() - monday.toordinal() > 6 else date.max
    return JournalPeriod(f"week:{year}-W{week:02d}",
                         f"journal {year}-W{week:02d} ({monday.isoformat()[5:]} – {sunday.isoformat()[5:]})",
                         sunday.isoformat())


def now_iso() -> str:
    return datetime.now().replace(microsecond=0).isoformat()


@dataclass
class Usage:
    """Counts of one or more calls. `evaluated` excludes prompt tokens served from the prefix cache."""

    calls: int = 0
    prompt_tokens: int = 0
    evaluated_tokens: int = 0
    completion_tokens: int = 0
    seconds: float = 0.0

    def add(self, other: Usage) -> None:
        self.calls += other.calls
        self.prompt_tokens += other.prompt_tokens
        self.evaluated_tokens += other.evaluated_tokens
        self.completion_tokens += other.completion_tokens
        self.seconds += other.seconds


@dataclass
class ServerReach:
    """Whether a configured model server (`openai:`) accepts a connection: `address` is host:port (never
    credentials), `problem` why not ("" when it does). No request is sent: a reachability probe only."""

    address: str
    problem: str = ""

    @property
    def reachable(self) -> bool:
        return not self.problem

    def to_json(self) -> dict[str, Any]:
        return {"address": self.address, "reachable": self.reachable, "problem": self.problem or None}


@dataclass(kw_only=True)
class Spent:
    """What a unit of LLM work cost (a note processed, an episode promoted): one set of counters for
    every result type, filled from the Usage of its calls by `charge`."""

    llm_calls: int = 0
    prompt_tokens: int = 0
    evaluated_tokens: int = 0
    completion_tokens: int = 0
    seconds: float = 0.0

    def charge(self, usage: Usage, seconds: float) -> None:
        self.llm_calls, self.prompt_tokens = usage.calls, usage.prompt_tokens
        self.evaluated_tokens, self.completion_tokens = usage.evaluated_tokens, usage.completion_tokens
        self.seconds = seconds


@dataclass
class ProcessResult(Spent):
    """What processing one note did, for `zk add --wait`, `zk process` and the benchmarks."""

    id: str
    status: str
    links: list[str] = field(default_factory=list)
    evolved: list[str] = field(default_factory=list)
    refused: list[str] = field(default_factory=list)  # neighbours whose rewrite drifted off their topic
    updates: list[str] = field(default_factory=list)  # older notes a passage of this one updates (supersede.py)
    skipped: str = ""  # why an LLM step was skipped ("trivial", "no similar neighbour", ...)
    error: str = ""


@dataclass
class EpisodeResult(Spent):
    """What promoting one episode did (summarise -> extract -> dedup), for `zk process` and benchmarks."""

    id: str
    status: str
    entities: int = 0
    merged: int = 0
    relations: int = 0
    invalidated: int = 0
    dropped: dict = field(default_factory=dict)  # what the graph checks refused, by reason (grounding.py)
    error: str = ""


# -- the upper tiers: episodes (episodic) and the entity graph (semantic) ----------------------------
# An episode moves through these stages, each committed on its own, like a note's.
EPISODE_PENDING = "pending"  # the session is complete; no summary yet
EPISODE_SUMMARISED = "summarised"  # summary + extractive abstract stored; entities not extracted yet
EPISODE_READY = "ready"  # entities and relations extracted and deduplicated into the graph
EPISODE_PRUNED = "pruned"  # summary removed by `zk prune`; a tombstone, so it is not summarised again


@dataclass
class Episode:
    """One completed session, compressed: an LLM summary plus an extractive one-line abstract.

    The id follows from the session id ("e" + the session's hex), so one session has one episode and
    re-closing it never makes a second. The summary is always regenerated from the raw turns."""

    id: str
    session_id: str
    notebook: str = "main"
    title: str = ""
    start: str = ""  # time of the session's first and last turn
    end: str = ""
    turns: int = 0  # turns summarised; a session that grew since is summarised again
    summary: str = ""
    abstract: str = ""
    status: str = EPISODE_PENDING
    created: str = ""
    error: str = ""
    vector: list[float] | None = None

    def to_json(self, **extra: Any) -> dict[str, Any]:
        data = {"id": self.id, "kind": "episode", "session_id": self.session_id, "notebook": self.notebook,
                "title": self.title, "start": self.start, "end": self.end, "turns": self.turns,
                "abstract": self.abstract, "summary": self.summary, "status": self.status}
        data.update(extra)
        return data


@dataclass
class Entity:
    """A person, project, place, organisation, technology, ... named in some episode.

    Deduplication never rewrites a row: a duplicate keeps its own row and points at the entity it was
    merged into (`merged_into`, with the reason), so every merge can be undone."""

    id: str
    name: str
    type: str = "other"
    notebook: str = "main"
    key: str = ""  # normalised name (text.name_key): identical keys are the same entity, no merge needed
    merged_into: str | None = None
    merge_reason: str = ""
    created: str = ""
    episodes: list[str] = field(default_factory=list)  # where it was mentioned
    vector: list[float] | None = None

    def to_json(self, **extra: Any) -> dict[str, Any]:
        data = {"id": self.id, "name": self.name, "type": self.type, "notebook": self.notebook,
                "merged_into": self.merged_into, "merge_reason": self.merge_reason or None,
                "episodes": self.episodes}
        data.update(extra)
        return data


@dataclass
class Relation:
    """subject --predicate--> object, valid from the episode that stated it until one that contradicts it.

    Contradicted relations are never deleted: `invalid_from` and `invalidated_by` say when and by which
    newer relation, so questions about the past still have answers."""

    id: str
    subject: str  # entity id
    predicate: str
    object: str  # entity id
    notebook: str = "main"
    episode_id: str = ""
    valid_from: str = ""
    invalid_from: str | None = None
    invalidated_by: str | None = None
    created: str = ""

    def valid_at(self, when: str | None) -> bool:
        """Current (when None) or in force at the ISO time `when`."""
        if when is None:
            return self.invalid_from is None
        return self.valid_from <= when and (self.invalid_from is None or when < self.invalid_from)


def episode_id_for(session_id: str) -> str:
    """A session's episode id: the same hex, "e" for "s" (one episode per session)."""
    return "e" + session_id.removeprefix("s")


def canonical_map(rows: list[Entity]) -> dict[str, Entity]:
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


# -- what the context tier returns ------------------------------------------------------------------
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
    facts: list[str] = field(default_factory=list)  # checked L2 facts about what the message names

    def block(self, instructions: str = "") -> str:
        """The `## Memory Context` block; empty when there is nothing worth saying."""
        if not self.hints and not self.facts:
            return ""
        lines = ["## Memory Context"]
        lines += [f"- [{h.episode.id[:9]}] {h.episode.start[:10]} {h.episode.abstract}" for h in self.hints]
        if self.facts:
            lines += ["Known facts:", *self.facts]
        if instructions:
            lines += ["", instructions.strip()]
        return "\n".join(lines) + "\n"
