"""The library's front door: everything the CLI does, without any printing.

`Memory` owns the store, the embedder and the LLM (each loaded lazily, so listing notes never loads
a model) and runs the A-MEM pipeline:

    add()      durable first: raw content + content embedding, status `pending`, no LLM
    process()  construct -> link -> evolve, each stage committed atomically and resumable
    search()   hybrid retrieval + linked-neighbour expansion within a token budget
    ask()      search, then a streamed answer that cites note ids
"""

from __future__ import annotations

import hashlib
import time
import uuid
from collections.abc import Callable, Iterator
from contextlib import AbstractContextManager, nullcontext
from dataclasses import dataclass, field
from datetime import date
from pathlib import Path

from .answer import DECLINED, answer_schema, decide, echoes_prompt, extractive, read_answer
from .config import Settings, ZkError, home_dir, templates_override_dirs
from .construct import annotate
from .evolve import apply_update, forget_changes_by, record
from .link import decide_links
from .llm import LLM, LLMError, Usage
from .note import (
    CONSTRUCTED,
    EVOLVABLE,
    PENDING,
    READY,
    REVERTIBLE,
    Note,
    ProcessResult,
    journal_period,
    now_iso,
    session_id_for,
)
from .prompts import Prompts
from .retrieve import (
    CoverageIndex,
    Hit,
    KeywordIndex,
    Signal,
    expand,
    fuse_signals,
    render_for_context,
    smooth_by_session,
)
from .store import Store, sql_str
from .text import has_control_chars, has_lone_surrogate, hashtags, is_trivial, nfc, one_line, tag_key

MAX_NOTE_CHARS = 100_000  # a note is an atomic thought; longer input belongs in `zk import`


@dataclass
class Removal:
    """What `Memory.remove` did: notes that lost a link to the deleted one, and notes whose fields
    it had evolved, restored to their state before it."""

    id: str
    unlinked: list[str]
    restored: list[str]


@dataclass
class Answer:
    """`ask()` result: iterate `pieces` for the answer text (the CLI renders it as it comes); then
    `text`, `cited` (full ids of the notes it came from, all among `notes`), `mode` ("model",
    "extractive" when the model failed, "declined" when the evidence does not support an answer) and
    `reason` are set. `notes` is the context the model was given."""

    pieces: Iterator[str]
    notes: list[Hit]
    text: str = ""
    usage: Usage = field(default_factory=Usage)
    cited_ids: list[str] = field(default_factory=list)
    mode: str = "model"
    reason: str = ""

    def cited(self) -> list[str]:
        return list(self.cited_ids)


def content_hash(content: str, speaker: str | None = None, at: str | None = None, source: str | None = None
                 ) -> str:
    """Identity of a raw note for idempotent imports: content + speaker + time + source."""
    key = nfc("\x1f".join([content, speaker or "", at or "", source or ""]))  # NFD and NFC text are one turn
    return hashlib.sha256(key.encode("utf-8")).hexdigest()[:32]


def validate_content(content: str) -> str:
    if has_lone_surrogate(content):
        raise ZkError("the note contains invalid text (lone surrogate characters)")
    if "\x00" in content:
        raise ZkError("the note contains NUL bytes")
    if has_control_chars(content):
        raise ZkError("the note contains control characters")
    stripped = content.strip()
    if not stripped:
        raise ZkError("the note is empty")
    if len(stripped) > MAX_NOTE_CHARS:
        raise ZkError(f"the note is too long ({len(stripped):,} characters; the limit is {MAX_NOTE_CHARS:,} "
                      "per note)")
    return stripped


def parse_when(value: str | None, role: str = "at") -> str:
    """Normalise --at / --since / --until values to ISO wall-clock time (seconds precision): ISO as
    given, or a natural phrase in English or Korean ("yesterday 9am", "어제", "3일 전"; see `dates`).
    `role` "since"/"until" takes the start of the day for a phrase that names no time."""
    from .dates import resolve

    return resolve(value, role)[0]


def has_tag(note: Note, tag: str) -> bool:
    """Whether the note carries the user's #tag (case-insensitive, "#" optional)."""
    key = tag_key(tag)
    return any(tag_key(t) == key for t in note.user_tags)


def _edited(note: Note) -> bool:
    """Whether the user has edited the note's text: its later annotation and links are then versions."""
    return any(v.reason == "edit" for v in note.history)


class Memory:
    def __init__(self, home: str | Path | None = None, *, settings: Settings | None = None,
                 llm: LLM | None = None, embedder=None, notebook: str = "main"):
        self.home = home_dir(home)
        self.settings = settings or Settings.load(self.home)
        self.notebook = notebook
        self.prompts = Prompts(templates_override_dirs(self.home))
        self._llm = llm
        self._embedder = embedder
        self._store: Store | None = None
        self._keyword_index: tuple[tuple[str, int], KeywordIndex] | None = None

    # -- lazily loaded parts ----------------------------------------------------------------------
    @property
    def embedder(self):
        if self._embedder is None:
            from .embed import load_embedder

            self._embedder = load_embedder(self.settings.embedder, self.settings.llm_threads)
        return self._embedder

    @property
    def store(self) -> Store:
        if self._store is None:
            self._store = Store(self.home, *self._embedder_identity())
        return self._store

    def _embedder_identity(self) -> tuple[str, int]:
        """Name and dimension of the embedder, taken from the store's meta file when it matches the
        settings: `zk list`, `show`, `rm`, `status` never load the embedding model."""
        if self._embedder is None:
            from .embed import embedder_name

            meta = Store.read_meta(self.home)
            if meta.get("embedder") == embedder_name(self.settings.embedder) and meta.get("dim"):
                return meta["embedder"], int(meta["dim"])
        return self.embedder.name, self.embedder.dim

    @property
    def llm(self) -> LLM:
        if self._llm is None and self.settings.llm_model.startswith("python:"):
            from .llm import load_python_backend

            self._llm = load_python_backend(self.settings.llm_model)
        if self._llm is None and self.settings.llm_model.startswith("openai:"):
            from .llm.openai_compat import load_openai

            s = self.settings
            try:
                self._llm = load_openai(s.llm_model, s.llm_base_url or None, s.llm_api_key_env, s.llm_timeout,
                                        s.llm_retries)
            except LLMError as exc:
                raise ZkError(str(exc)) from None
        if self._llm is None:
            from .llm.llama import load_llm

            try:
                self._llm = load_llm(self.settings.llm_model, self.settings.llm_ctx, self.settings.llm_threads)
            except LLMError as exc:
                raise ZkError(str(exc)) from None
        return self._llm

    def _scope(self, extra: str | None = None, notebook: str | None = None) -> str:
        where = f"notebook = {sql_str(notebook or self.notebook)}"
        return f"{where} AND ({extra})" if extra else where

    # -- writing ----------------------------------------------------------------------------------
    def new_note(self, content: str, at: str | None = None, **fields) -> Note:
        content = validate_content(content)
        when = parse_when(at)
        return Note(id=uuid.uuid4().hex, content=content, at=when, created=now_iso(), notebook=self.notebook,
                    content_hash=content_hash(content, fields.get("speaker"), when, fields.get("source")),
                    user_tags=hashtags(content), **fields)

    def add(self, content: str, at: str | None = None) -> Note:
        """Store the raw note with its content embedding. Returns once it is durable and searchable.

        A journal entry belongs to its week's (or day's) session, an episode once the period is over."""
        try:
            note = self.new_note(content, at)
        except ZkError as exc:
            if "too long" not in str(exc):
                raise
            raise ZkError(f"{exc}; split it into smaller notes (`zk import FILE` stores each line of a text "
                          "file as its own note)") from None
        period = journal_period(note.at, self.settings.journal_session)
        note.session_id = session_id_for(self.notebook, period.key)
        note.source = period.title
        self.add_notes([note])
        return note

    def add_notes(self, notes: list[Note], skip_existing: bool = False) -> list[Note]:
        """Embed in one batch and write in one commit: the bulk path of `zk import`. Returns what was written
        (with `skip_existing`, notes whose content hash is already stored are left out)."""
        # One batch: every note's raw words, plus the full text of notes that arrive enriched (a restore).
        enriched = [n for n in notes if n.embedding_text() != n.raw_text()]
        vectors = self.embedder.embed_passages([n.raw_text() for n in notes] +
                                               [n.embedding_text() for n in enriched])
        for note, vector in zip(notes, vectors):
            note.raw_vector = note.vector = vector.tolist()
        for note, vector in zip(enriched, vectors[len(notes):]):
            note.vector = vector.tolist()
        return self.store.add(notes, skip_existing=skip_existing)

    def edit(self, note_id: str, content: str, expected: str | None = None) -> Note | None:
        """Replace a note's text (`zk edit`): a new version (content and #tags, old and new), a fresh
        content embedding, and the note queued again (`pending`) to be re-annotated and re-linked like a
        new one. None if the text is unchanged. `expected` is the text the editor was opened with: if the
        stored text changed meanwhile, nothing is overwritten."""
        note = self.store.get(self.resolve(note_id).id, with_vector=True)
        if expected is not None and note.content != expected:
            raise ZkError(f"note {note.short_id} was changed while you edited it")
        content = validate_content(content)
        if content == note.content:
            return None
        changes = {"content": {"old": note.content, "new": content}}
        tags = hashtags(content)
        if tags != note.user_tags:
            changes["user_tags"] = {"old": note.user_tags, "new": tags}
        note.content, note.user_tags = content, tags
        record(note, changes, None, "edit")
        note.status, note.error = PENDING, ""
        note.vector = self.embedder.embed_passages([note.embedding_text()])[0].tolist()
        self.store.update([note])
        return note

    # -- processing (the A-MEM pipeline) ----------------------------------------------------------
    def pending_ids(self, all_notebooks: bool = False) -> list[str]:
        """Notes with LLM work left, oldest first (the background worker serves every notebook)."""
        unfinished = f"status != {sql_str(READY)}"
        rows = self.store.notes(unfinished if all_notebooks else self._scope(unfinished))
        return [n.id for n in sorted(rows, key=lambda n: (n.created, n.at, n.seq))]

    def process(self, note_id: str, guard: Callable[[], AbstractContextManager] = nullcontext) -> ProcessResult:
        """Construct, link and evolve one note. Safe to call again after a crash at any point.

        `guard` is held around every read-modify-write of the store and every embedding, never
        around a model call: `zk process --jobs N` runs N notes in threads with one shared guard, so
        their LLM calls overlap while their commits stay one at a time. Each commit re-reads what it
        changes, so a note evolved by another thread meanwhile keeps that change, and a note or
        neighbour deleted meanwhile stays deleted."""
        start = time.perf_counter()
        usage = Usage()
        with guard():
            note = self.store.get(note_id, with_vector=True)
        if note is None:
            raise ZkError(f"no note with id {note_id}")
        result = ProcessResult(id=note.id, status=note.status)
        if note.status == READY:  # e.g. the background worker got there first (`zk add --wait`)
            result.links, result.skipped = list(note.links), "already processed"
        try:
            if note.status == PENDING:
                note = self._construct(note, usage, result, guard)
            if note is not None and note.status == CONSTRUCTED:
                note = self._link_and_evolve(note, usage, result, guard)
        except LLMError as exc:  # the note stays at its last committed stage, with the reason
            if exc.usage is not None:  # a failed call still cost its tokens: count them
                usage.add(exc.usage)
            with guard():
                stored = self.store.get(note.id, with_vector=True)
                if stored is not None:
                    stored.error = result.error = str(exc)
                    self.store.update([stored])
            note = stored
        result.status = note.status if note is not None else "deleted"
        result.llm_calls, result.prompt_tokens = usage.calls, usage.prompt_tokens
        result.evaluated_tokens, result.completion_tokens = usage.evaluated_tokens, usage.completion_tokens
        result.seconds = time.perf_counter() - start
        return result

    def _fresh(self, note: Note, expected: str) -> Note | None:
        """The stored note if it is still at the stage this step started from (None: deleted, or
        another process finished the step meanwhile)."""
        stored = self.store.get(note.id, with_vector=True)
        return stored if stored is not None and stored.status == expected else None

    def _construct(self, note: Note, usage: Usage, result: ProcessResult, guard) -> Note | None:
        if is_trivial(note.content) or not self.settings.construct:
            with guard():
                if (note := self._fresh(note, PENDING)) is None:
                    return self.store.get(result.id, with_vector=True)
                note.status, note.error = READY, ""
                result.skipped = "trivial note" if self.settings.construct else "construction disabled"
                self.store.update([note])
            return note
        annotation, spent = annotate(self.llm, self.prompts, note, self.settings)
        usage.add(spent)
        with guard():
            if (note := self._fresh(note, PENDING)) is None:
                return self.store.get(result.id, with_vector=True)
            before = {name: getattr(note, name) for name in EVOLVABLE}
            note.keywords, note.tags, note.context = annotation.keywords, annotation.tags, annotation.context
            if _edited(note):  # re-annotation after `zk edit` is a version too, so a revert restores it whole
                changes = {n: {"old": old, "new": getattr(note, n)} for n, old in before.items()
                           if old != getattr(note, n)}
                if changes:
                    record(note, changes, None, "annotated again after edit")
            note.vector = self.embedder.embed_passages([note.embedding_text()])[0].tolist()
            note.status, note.error = CONSTRUCTED, ""
            self.store.update([note])
        return note

    def link_threshold(self) -> float:
        if self.settings.link_min_similarity is not None:
            return self.settings.link_min_similarity
        from .embed import DEFAULT_LINK_THRESHOLD, LINK_THRESHOLDS

        return LINK_THRESHOLDS.get(self.embedder.name, DEFAULT_LINK_THRESHOLD)

    def link_candidates(self, note: Note) -> list[tuple[Note, float]]:
        """Nearest already-constructed notes by the note's full embedding (never itself)."""
        where = self._scope(f"id != {sql_str(note.id)} AND status != {sql_str(PENDING)}", note.notebook)
        return self.store.nearest(note.vector, self.settings.link_candidates, where)

    def _link_and_evolve(self, note: Note, usage: Usage, result: ProcessResult, guard) -> Note | None:
        with guard():
            skip = "linking disabled" if not self.settings.link else ""
            candidates = [] if skip else self.link_candidates(note)
            if not skip and (not candidates or candidates[0][1] < self.link_threshold()):
                skip = "no similar neighbour"
            if skip:
                if (note := self._fresh(note, CONSTRUCTED)) is None:
                    return self.store.get(result.id, with_vector=True)
                note.status, note.error, result.skipped = READY, "", skip
                self.store.update([note])
                return note
        decision, spent = decide_links(self.llm, self.prompts, note, [c for c, _ in candidates], self.settings)
        usage.add(spent)
        with guard():
            if (note := self._fresh(note, CONSTRUCTED)) is None:
                return self.store.get(result.id, with_vector=True)
            # Read links' and neighbours' current state now: another thread or process may have
            # evolved or deleted them during the model call.
            present = self.store.get_many([*decision.links, *(u.note_id for u in decision.updates)],
                                          with_vector=True)
            chosen = [i for i in decision.links if i in present]
            old_links = list(note.links)  # an edited note keeps its links; new ones are added after them
            note.links = [i for i in dict.fromkeys([*note.links, *chosen]) if i != note.id]
            note.links = note.links[: self.settings.max_links]
            if _edited(note) and note.links != old_links:
                record(note, {"links": {"old": old_links, "new": list(note.links)}}, None, "linked again after edit")
            updates, result.refused = self._on_topic([u for u in decision.updates if u.note_id in present],
                                                     present, note)
            evolved = [n for u in updates if (n := present[u.note_id]) and apply_update(n, u, note.id, self.settings)]
            if evolved:  # re-embed at once: an evolved note must never be searched by its old vector
                vectors = self.embedder.embed_passages([n.embedding_text() for n in evolved])
                for neighbour, vector in zip(evolved, vectors):
                    neighbour.vector = vector.tolist()
            note.status, note.error = READY, ""
            self.store.update([note, *evolved])  # one atomic commit: links + every evolution + versions
        result.links = list(note.links)
        result.evolved = [n.id for n in evolved]
        return note

    def _on_topic(self, updates: list, neighbours: dict[str, Note], cause: Note) -> tuple[list, list[str]]:
        """Updates whose new context stays about its own note, and the ids of those refused.

        A small model sometimes writes the *new* note's story into a neighbour's context (a knee note
        rewritten into a meeting). The guard refuses a proposed context that shares no word with the
        neighbour's own text *and* is closer (cosine, raw embeddings) to the words of the note that caused
        the rewrite. A real evolution ("race plan uncertain because of a knee injury" for "signed up for
        the race") keeps a word of its note. Tags-only updates pass."""
        with_context = [u for u in updates if u.context]
        if not with_context or not self.settings.evolve_on_topic:
            return updates, []
        import numpy as np

        proposed = self.embedder.embed_passages([u.context for u in with_context])
        cause_vector = np.asarray(cause.raw_vector or cause.vector, dtype=np.float32)
        refused = []
        for update, vector in zip(with_context, proposed):
            own = np.asarray(neighbours[update.note_id].raw_vector or neighbours[update.note_id].vector,
                             dtype=np.float32)
            neighbour = neighbours[update.note_id]
            shares_words = CoverageIndex.terms(update.context) & CoverageIndex.terms(neighbour.content)
            if float(vector @ own) < float(vector @ cause_vector) and not shares_words:  # unit vectors: dot = cos
                refused.append(update.note_id)
        return [u for u in updates if u.note_id not in refused], refused

    def process_pending(self, on_progress: Callable[[ProcessResult, int, int], None] | None = None,
                        limit: int | None = None, all_notebooks: bool = False) -> list[ProcessResult]:
        ids = self.pending_ids(all_notebooks)[:limit]
        results = []
        for index, note_id in enumerate(ids, 1):
            result = self.process(note_id)
            results.append(result)
            if on_progress:
                on_progress(result, index, len(ids))
        return results

    # -- history, revert, deletion ----------------------------------------------------------------
    def revert(self, note_id: str, to_version: int | None = None) -> Note:
        """Restore the evolvable fields as they were at `to_version` (default: before the last change).

        The revert is itself a new version, so the newer states stay in the history and can be restored.
        """
        note = self.store.get(self.resolve(note_id).id, with_vector=True)
        target = note.version - 1 if to_version is None else to_version
        if not 1 <= target < note.version:
            raise ZkError(f"note {note.short_id} is at version {note.version}; "
                          f"choose a version from 1 to {note.version - 1}")
        state = {name: getattr(note, name) for name in REVERTIBLE}
        for version in sorted(note.history, key=lambda v: -v.version):
            if version.version <= target:
                break
            for name, change in version.changes.items():
                if name in state:
                    state[name] = change["old"]
        changes = {name: {"old": getattr(note, name), "new": value}
                   for name, value in state.items() if value != getattr(note, name)}
        for name, change in changes.items():
            setattr(note, name, change["new"])
        record(note, changes, None, f"revert to v{target}")
        note.vector = self.embedder.embed_passages([note.embedding_text()])[0].tolist()
        self.store.update([note])
        return note

    def remove(self, note_id: str) -> Removal:
        """Delete a note, its links in both directions, its history and what it wrote into the notes
        it evolved, then purge old table versions so its text does not survive on disk."""
        note = self.resolve(note_id)
        linking = self.store.get_many(self.backlinks(note.id), with_vector=True)
        for other in linking.values():
            other.links = [i for i in other.links if i != note.id]
        # Neighbours it evolved may carry its words in their context/tags and in their history.
        evolved = {n.id: n for n in self.store.notes(f"history LIKE {sql_str('%' + note.id + '%')}",
                                                     with_vector=True) if n.id != note.id}
        unlinked = list(linking)
        restored = []
        for other_id, other in evolved.items():
            target = linking.setdefault(other_id, other)
            if forget_changes_by(target, note.id):
                restored.append(target)
        if restored:  # no stale vector may keep the removed words searchable
            for n, vector in zip(restored, self.embedder.embed_passages([n.embedding_text() for n in restored])):
                n.vector = vector.tolist()
        if linking:
            self.store.update(linking.values())
        self.store.delete([note.id])
        self.store.compact()
        return Removal(note.id, unlinked, [n.id for n in restored])

    # -- reading ----------------------------------------------------------------------------------
    def resolve(self, prefix: str) -> Note:
        note = self.store.get(self.store.resolve(prefix, self._scope()))
        if note is None or note.notebook != self.notebook:
            raise ZkError(f"no note with id {prefix} in notebook '{self.notebook}'")
        return note

    def backlinks(self, note_id: str) -> list[str]:
        return self.store.backlinks(note_id)

    def id_completions(self, typed: str, limit: int = 50) -> list[tuple[str, str]]:
        """Shell completion: (short id, "date first words") of the notebook's notes whose id starts with
        `typed`, newest first. Nothing for a home without a store (completion must not create one)."""
        typed = typed.strip().lower()
        if not Store.read_meta(self.home) or not all(ch in "0123456789abcdef" for ch in typed):
            return []
        rows = self.store._query(self._scope(f"id LIKE {sql_str(typed + '%')}"), ["id", "content", "at"], limit=500)
        rows.sort(key=lambda r: r["at"], reverse=True)
        size = 8 if len(typed) < 8 else 32
        return [(r["id"][:size], r["at"][:10] + " " + one_line(r["content"], 50)) for r in rows[:limit]]

    def neighbours(self, note: Note) -> list[Note]:
        ids = [*note.links, *self.backlinks(note.id)]
        found = self.store.get_many(ids)
        return [found[i] for i in dict.fromkeys(ids) if i in found]

    def list(self, since: str | None = None, until: str | None = None, limit: int | None = None,
             tag: str | None = None) -> list[Note]:
        """Notes newest first; `tag`: only those carrying that #tag of the user's (any case, "#" optional)."""
        if limit is not None and limit < 1:
            raise ZkError("the limit must be at least 1")
        clauses = []
        if since:
            clauses.append(f"at >= {sql_str(parse_when(since, 'since'))}")
        if until:
            clauses.append(f"at < {sql_str(parse_when(until, 'until'))}")
        if tag is not None:
            clauses.append("array_length(user_tags) > 0")
        notes = self.store.notes(self._scope(" AND ".join(clauses) or None))
        if tag is not None:
            notes = [n for n in notes if has_tag(n, tag)]
        notes.sort(key=lambda n: (n.at, n.created, n.seq), reverse=True)
        return notes[:limit] if limit else notes

    def tag_counts(self) -> list[dict]:
        """The user's #tags in this notebook: tag (its first spelling), number of notes, last used; most
        used first."""
        counts: dict[str, dict] = {}
        for note in sorted(self.store.notes(self._scope("array_length(user_tags) > 0")), key=lambda n: n.at):
            for tag in note.user_tags:
                row = counts.setdefault(tag_key(tag), {"tag": tag, "count": 0, "last": ""})
                row["count"] += 1
                row["last"] = max(row["last"], note.at)
        return sorted(counts.values(), key=lambda r: (-r["count"], tag_key(r["tag"])))

    def keyword_index(self) -> KeywordIndex:
        """The notebook's BM25 index, rebuilt only when the table has a new version."""
        key = (self.notebook, self.store.table.version)
        if self._keyword_index is None or self._keyword_index[0] != key:
            self._keyword_index = (key, KeywordIndex(self.store.notes(self._scope())))
        return self._keyword_index[1]

    def _vector_ranked(self, vector, pool: int, column: str, where: str | None = None
                       ) -> list[tuple[Note, float]]:
        """Nearest notes by one embedding column, without short filler ("ok", "ㅇㅋ"): it sits close to
        every query in embedding space. Filler is still found by its words."""
        scope = self._scope(where)
        for size in (pool, pool * 8):  # a chat full of filler: look further for real notes
            found = self.store.nearest(vector, size, scope, column=column)
            ranked = [(n, s) for n, s in found if not is_trivial(n.content)]
            if len(ranked) >= pool // 2 or len(found) < size:
                break
        return ranked[:pool]

    def signals(self, query: str, pool: int, use_vector: bool = True, use_keywords: bool = True,
                use_enrichment: bool = True, where: str | None = None) -> list[Signal]:
        """The ranked lists search fuses: raw words (vector, keywords) and, beside them, the enrichment.
        `where` narrows the vector searches (a store filter)."""
        weight = self.settings.search_enrichment_weight if use_enrichment else 0.0
        index = self.keyword_index() if use_keywords else None
        vector = self.embedder.embed_query(query) if use_vector else None
        out = []
        if vector is not None:
            out.append(Signal("vector", self._vector_ranked(vector, pool, "raw_vector", where)))
        if index is not None:
            out.append(Signal("keywords", index.rank(query, pool)))
        if weight > 0 and vector is not None:
            enriched = f"({where}) AND context != ''" if where else "context != ''"
            out.append(Signal("enriched-vector", self._vector_ranked(vector, pool, "vector", enriched), weight))
        if weight > 0 and index is not None:
            out.append(Signal("enriched-keywords", index.rank_enrichment(query, pool), weight))
        return out

    def session_windows(self, notes: list[Note], radius: int) -> dict[str, list[Note]]:
        """Each chat turn's session neighbours within `radius` turns, nearest first (one read)."""
        return self.store.session_windows(notes, radius, self._scope()) if radius else {}

    def search(self, query: str, k: int | None = None, *, follow_links: bool = True,
               budget_tokens: int | None = None, use_vector: bool = True, use_keywords: bool = True,
               use_enrichment: bool = True, session_smoothing: bool = True, session_turns: int | None = None,
               tag: str | None = None) -> list[Hit]:
        """k direct hits (fused signals), each followed by its session turns (`session_turns`, default
        `search_session_turns`; 0: none), then their linked notes (`follow_links`), within the budget.
        `tag`: only notes with that #tag of the user's, hits and neighbours alike."""
        if not query.strip():
            raise ZkError("the query is empty")
        k = k or self.settings.search_k
        pool = max(self.settings.search_pool, 2 * k)  # the same pool whatever k: k=10 is a prefix of k=25
        signals = self.signals(query, pool if tag is None else 20 * pool, use_vector, use_keywords, use_enrichment,
                               "array_length(user_tags) > 0" if tag is not None else None)
        if tag is not None:
            for signal in signals:
                signal.ranked = [(n, score) for n, score in signal.ranked if has_tag(n, tag)][:pool]
        hits = fuse_signals(signals, pool)
        weights = (self.settings.search_session_near, self.settings.search_session_far)
        if session_smoothing and any(weights) and tag is None:
            hits = smooth_by_session(hits, self.session_windows([h.note for h in hits], len(weights)), weights)
        hits = hits[:k]
        radius = self.settings.search_session_turns if session_turns is None else session_turns
        windows = self.session_windows([h.note for h in hits], radius)
        if not follow_links and not windows:
            return hits if budget_tokens is None else expand(hits, lambda n: [], budget_tokens, False)
        # One scan for every hit's backlinks and one read for all neighbours, not two queries per hit.
        back = self.store.backlinks_many([h.note.id for h in hits]) if follow_links else {}
        found = self.store.get_many([i for h in hits for i in (*h.note.links, *back.get(h.note.id, []))]
                                    ) if follow_links else {}

        def linked(note: Note) -> list[Note]:
            ids = dict.fromkeys([*note.links, *back.get(note.id, [])])
            return [found[i] for i in ids if i in found and (tag is None or has_tag(found[i], tag))]

        def session(note: Note) -> list[Note]:
            return [n for n in windows.get(note.id, []) if tag is None or has_tag(n, tag)]

        return expand(hits, linked, budget_tokens, follow_links, session_of=session)

    def ask(self, question: str, k: int | None = None, budget_tokens: int | None = None, *,
            today: str | None = None, hits: list[Hit] | None = None, memory_block: str = "",
            **search_options) -> Answer:
        """Retrieve (or take `hits`), then answer briefly with the ids it came from (see answer.py).
        `search_options` go to `search()`; `memory_block` is what the upper tiers add (episode hints,
        graph facts), placed before the notes."""
        if not question.strip():
            raise ZkError("the question is empty")
        if hits is None:
            hits = self.search(question, k, budget_tokens=budget_tokens or self.settings.context_budget_tokens,
                               **search_options)
        declined = decide(question, hits, self.settings, lambda: self.attribution_pool(question)) \
            if not memory_block.strip() or hits else None
        if declined is not None:  # decided from the evidence, without spending a model call
            return Answer(pieces=iter([DECLINED]), notes=hits, text=DECLINED, mode=declined.mode,
                          reason=declined.reason)
        answer = Answer(pieces=iter(()), notes=hits)

        def pieces() -> Iterator[str]:
            self._answer(question, hits, memory_block, today, answer)
            yield answer.text

        answer.pieces = pieces()
        return answer

    def attribution_pool(self, question: str) -> list[Hit]:
        """The wider list of direct hits `answer.decide` reads to tell who said what is asked about."""
        return self.search(question, self.settings.answer_attribution_pool, follow_links=False, session_turns=0)

    def _answer(self, question: str, hits: list[Hit], memory_block: str, today: str | None,
                answer: Answer) -> None:
        notes_block = "\n".join(render_for_context(h.note) for h in hits)
        today = today or date.today().isoformat()
        user = self.prompts.render("answer", notes=notes_block, question=question.strip(), today=today,
                                   memory=memory_block.strip() + "\n" if memory_block.strip() else "")
        system = self.prompts.raw("answer_system").strip()
        if self.settings.answer_decline:
            system += " " + self.prompts.raw("answer_decline").strip()
        schema = answer_schema([h.note.short_id for h in hits], question)
        frame = [f"Today is {today}", f"Question: {question.strip()}"]
        try:
            data, answer.usage = self.llm.complete_json(system, user, schema, self.settings.answer_max_tokens)
            answer.text, answer.cited_ids = read_answer(data, hits)
            if not answer.text or echoes_prompt(answer.text, frame):
                raise LLMError("the model's answer was empty or repeated the question")
        except LLMError as exc:  # the user still gets their own words, with the id, marked as such
            if exc.usage is not None:
                answer.usage = exc.usage
            answer.text, answer.cited_ids = extractive(question, hits)
            answer.mode, answer.reason = "extractive", str(exc)
