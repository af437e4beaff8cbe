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
import re
import time
import uuid
from collections.abc import Callable, Iterator
from contextlib import AbstractContextManager, nullcontext
from dataclasses import dataclass, field
from datetime import date, datetime
from pathlib import Path

from .config import Settings, ZkError, home_dir, templates_override_dirs
from .construct import annotate
from .evolve import apply_update, forget_changes_by, record
from .link import decide_links
from .llm import LLM, LLMError, Usage
from .note import CONSTRUCTED, EVOLVABLE, PENDING, READY, Note, ProcessResult, journal_period, now_iso, session_id_for
from .prompts import Prompts
from .retrieve import Hit, KeywordIndex, expand, fuse, render_for_context
from .store import Store, sql_str
from .text import has_control_chars, has_lone_surrogate, is_trivial, nfc

MAX_NOTE_CHARS = 100_000  # a note is an atomic thought; longer input belongs in `zk import`
_CITATION = re.compile(r"\[([0-9a-f]{4,32})\]")


@dataclass
class Removal:
    """What `Memory.remove` did: notes that lost a link to the deleted one, and notes whose fields
    it had evolved, restored to their state before it."""

    id: str
    unlinked: list[str]
    restored: list[str]


@dataclass
class Answer:
    """`ask()` result: iterate `pieces` for the streamed text; `notes` is the context it was given."""

    pieces: Iterator[str]
    notes: list[Hit]
    text: str = ""
    usage: Usage = field(default_factory=Usage)

    def cited(self) -> list[str]:
        shorts = set(_CITATION.findall(self.text))
        return [h.note.id for h in self.notes if any(h.note.id.startswith(s) for s in shorts)]


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
        raise ZkError(f"the note is too long ({len(stripped):,} characters; the limit is {MAX_NOTE_CHARS:,}); "
                      "use `zk import` for documents")
    return stripped


def parse_when(value: str | None) -> str:
    """Normalise --at / --since values to ISO wall-clock time (seconds precision)."""
    if value is None:
        return now_iso()
    text = value.strip()
    try:
        parsed = datetime.fromisoformat(text.replace("Z", "+00:00"))
    except ValueError:
        raise ZkError(f"cannot read the date '{value}' (use e.g. 2026-03-29 or 2026-03-29T09:15)") from None
    if parsed.tzinfo is not None:
        parsed = parsed.astimezone().replace(tzinfo=None)
    return parsed.replace(microsecond=0).isoformat()


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
                    **fields)

    def add(self, content: str, at: str | None = None) -> Note:
        """Store the raw note with its content embedding. Returns once it is durable and searchable.

        A journal entry belongs to its week's (or day's) session, an episode once the period is over."""
        note = self.new_note(content, at)
        period = journal_period(note.at, self.settings.journal_session)
        note.session_id = session_id_for(self.notebook, period.key)
        note.source = period.title
        self.add_notes([note])
        return note

    def add_notes(self, notes: list[Note], skip_existing: bool = False) -> list[Note]:
        """Embed in one batch and write in one commit: the bulk path of `zk import`. Returns what was written
        (with `skip_existing`, notes whose content hash is already stored are left out)."""
        vectors = self.embedder.embed_passages([n.embedding_text() for n in notes])
        for note, vector in zip(notes, vectors):
            note.vector = vector.tolist()
        return self.store.add(notes, skip_existing=skip_existing)

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
            note.keywords, note.tags, note.context = annotation.keywords, annotation.tags, annotation.context
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
            note.links = [i for i in dict.fromkeys([*note.links, *chosen]) if i != note.id]
            note.links = note.links[: self.settings.max_links]
            evolved = [n for u in decision.updates
                       if (n := present.get(u.note_id)) and apply_update(n, u, note.id, self.settings)]
            if evolved:  # re-embed at once: an evolved note must never be searched by its old vector
                vectors = self.embedder.embed_passages([n.embedding_text() for n in evolved])
                for neighbour, vector in zip(evolved, vectors):
                    neighbour.vector = vector.tolist()
            note.status, note.error = READY, ""
            self.store.update([note, *evolved])  # one atomic commit: links + every evolution + versions
        result.links = list(note.links)
        result.evolved = [n.id for n in evolved]
        return note

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
        state = {name: getattr(note, name) for name in EVOLVABLE}
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

    def neighbours(self, note: Note) -> list[Note]:
        ids = [*note.links, *self.backlinks(note.id)]
        found = self.store.get_many(ids)
        return [found[i] for i in dict.fromkeys(ids) if i in found]

    def list(self, since: str | None = None, until: str | None = None, limit: int | None = None) -> list[Note]:
        if limit is not None and limit < 1:
            raise ZkError("the limit must be at least 1")
        clauses = []
        if since:
            clauses.append(f"at >= {sql_str(parse_when(since))}")
        if until:
            clauses.append(f"at < {sql_str(parse_when(until))}")
        notes = self.store.notes(self._scope(" AND ".join(clauses) or None))
        notes.sort(key=lambda n: (n.at, n.created, n.seq), reverse=True)
        return notes[:limit] if limit else notes

    def keyword_index(self) -> KeywordIndex:
        """The notebook's BM25 index, rebuilt only when the table has a new version."""
        key = (self.notebook, self.store.table.version)
        if self._keyword_index is None or self._keyword_index[0] != key:
            self._keyword_index = (key, KeywordIndex(self.store.notes(self._scope())))
        return self._keyword_index[1]

    def _vector_ranked(self, query: str, pool: int) -> list[tuple[Note, float]]:
        """Nearest notes by vector, without short filler ("ok", "ㅇㅋ"): it sits close to every query
        in embedding space. Filler is still found by its words."""
        vector = self.embedder.embed_query(query)
        for size in (pool, pool * 8):  # a chat full of filler: look further for real notes
            found = self.store.nearest(vector, size, self._scope())
            ranked = [(n, s) for n, s in found if not is_trivial(n.content)]
            if len(ranked) >= pool // 2 or len(found) < size:
                break
        return ranked[:pool]

    def search(self, query: str, k: int | None = None, *, follow_links: bool = True,
               budget_tokens: int | None = None, use_vector: bool = True, use_keywords: bool = True
               ) -> list[Hit]:
        if not query.strip():
            raise ZkError("the query is empty")
        k = k or self.settings.search_k
        pool = max(50, 5 * k)
        vector_ranked = self._vector_ranked(query, pool) if use_vector else []
        keyword_ranked = self.keyword_index().rank(query, pool) if use_keywords else []
        hits = fuse(vector_ranked, keyword_ranked, k, use_vector, use_keywords)
        if not follow_links:
            return hits if budget_tokens is None else expand(hits, self.neighbours, budget_tokens, False)
        # One scan for every hit's backlinks and one read for all neighbours, not two queries per hit.
        back = self.store.backlinks_many([h.note.id for h in hits])
        found = self.store.get_many([i for h in hits for i in (*h.note.links, *back[h.note.id])])

        def neighbours(note: Note) -> list[Note]:
            ids = dict.fromkeys([*note.links, *back.get(note.id, [])])
            return [found[i] for i in ids if i in found]

        return expand(hits, neighbours, budget_tokens, follow_links)

    def ask(self, question: str, k: int | None = None, budget_tokens: int | None = None, *,
            today: str | None = None, hits: list[Hit] | None = None, memory_block: str = "",
            **search_options) -> Answer:
        """Retrieve (or take `hits`), then stream an answer. `search_options` go to `search()`;
        `memory_block` is what the upper tiers add (episode hints, graph facts), placed before the notes."""
        if hits is None:
            hits = self.search(question, k, budget_tokens=budget_tokens or self.settings.context_budget_tokens,
                               **search_options)
        if not hits and not memory_block:  # nothing to answer from: say so without spending an LLM call
            text = "No information available: no note matches this question."
            return Answer(pieces=iter([text]), notes=[], text=text)
        notes_block = "\n".join(render_for_context(h.note) for h in hits)
        user = self.prompts.render("answer", notes=notes_block, question=question.strip(),
                                   today=today or date.today().isoformat(),
                                   memory=memory_block.strip() + "\n" if memory_block.strip() else "")
        system = self.prompts.raw("answer_system").strip()
        if self.settings.answer_decline:
            system += " " + self.prompts.raw("answer_decline").strip()
        llm = self.llm
        answer = Answer(pieces=iter(()), notes=hits)

        def pieces() -> Iterator[str]:
            try:
                for piece in llm.stream(system, user, self.settings.answer_max_tokens):
                    answer.text += piece
                    yield piece
            except LLMError as exc:  # a server that went away mid-answer: one line, not a traceback
                raise ZkError(f"cannot answer: {exc}") from None
            answer.usage = llm.last_usage

        answer.pieces = pieces()
        return answer
