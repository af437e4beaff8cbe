"""The library's front door: everything the CLI does, without any printing.

`Memory` owns the store, the embedder and the LLM (each loaded lazily, so listing notes never loads
a model) and runs the A-MEM pipeline:

    add()      durable first: raw content + content embedding, status `pending`, no LLM
    process()  construct -> link -> evolve, each stage committed atomically and resumable (pipeline.py)
    search()   hybrid retrieval + linked-neighbour expansion within a token budget (search.py)
    ask()      search, then a short grammar-bound answer that cites note ids (answer.py)

The read-only views over a notebook (its notes newest first, one day, the #tags) are `views.Views`.
"""

from __future__ import annotations

import hashlib
import uuid
from collections.abc import Callable
from concurrent.futures import Future
from contextlib import AbstractContextManager, nullcontext
from pathlib import Path

from .amem import changes
from .amem.changes import Removal
from .amem.evolve import record
from .amem.grounded import NOTE_CHECKS
from .amem.pipeline import Pipeline
from .answering.answer import Answer, Answerer
from .backends.llm import LLM, mask_spec
from .backends.llm.configured import load_configured, server_reach
from .core.config import Settings, home_dir, templates_override_dirs
from .core.dates import parse_when
from .core.errors import InvalidInput, NoteTooLong, StoreUnreachable, ZkError, ZkNotice
from .core.location import resolve as resolve_location
from .core.models import OUTBOX, PENDING, Note, ProcessResult, journal_period, now_iso, session_id_for
from .core.passages import attach_passages
from .core.prompts import Prompts
from .core.text import has_control_chars, has_lone_surrogate, hashtags, is_blank, nfc, unix_line_ends
from .parts import Parts
from .retrieval.retrieve import Hit
from .retrieval.search import Searcher, background
from .storage.store import Store

MAX_NOTE_CHARS = 100_000  # a note is an atomic thought; longer input belongs in `zk import`
# A search query or question: beyond this it is a pasted document, not a question (and ranking it would
# hold `zk mcp` and every call behind it for minutes); refused in one line (CLI and MCP alike).
MAX_QUERY_CHARS = 2_000




def content_hash(content: str, speaker: str | None = None, at: str | None = None, source: str | None = None
                 ) -> str:
    """Identity of a raw note for idempotent imports: content + speaker + time + source."""
    key = nfc("\x1f".join([content, speaker or "", at or "", source or ""]))  # NFD and NFC text are one turn
    return hashlib.sha256(key.encode("utf-8")).hexdigest()[:32]


def validate_query(query: str, what: str = "the query") -> str:
    if len(query) > MAX_QUERY_CHARS:
        raise InvalidInput(f"{what} is too long ({len(query):,} characters; the limit is {MAX_QUERY_CHARS:,})")
    return query


def validate_content(content: str) -> str:
    if has_lone_surrogate(content):
        raise InvalidInput("the note contains invalid text (lone surrogate characters)")
    if "\x00" in content:
        raise InvalidInput("the note contains NUL bytes")
    if has_control_chars(content):
        raise InvalidInput("the note contains control characters")
    stripped = content.strip()
    if is_blank(stripped):  # also zero-width spaces, bidi marks, the Hangul filler: nothing to see
        raise InvalidInput("the note is empty")
    if len(stripped) > MAX_NOTE_CHARS:
        raise NoteTooLong(f"the note is too long ({len(stripped):,} characters; the limit is {MAX_NOTE_CHARS:,} "
                      "per note)")
    return stripped


class Memory:
    def __init__(self, home: str | Path | None = None, *, settings: Settings | None = None,
                 llm: LLM | None = None, embedder=None, notebook: str = "main"):
        self.home = home_dir(home)
        self.settings = settings or Settings.load(self.home)
        s = self.settings
        self.location = resolve_location(self.home, home, s.store, s.store_endpoint, s.store_region,
                                         s.store_block_size)
        self.notebook = notebook
        self.prompts = Prompts(templates_override_dirs(self.home))
        self._llm = llm
        self._embedder = embedder
        self._query_vectors: dict[str, Future] = {}  # text -> its embedding, being or already computed
        self._store: Store | None = None
        # What the services use, loaded on first use (a service never holds the whole Memory).
        self.parts = Parts(notebook, self.settings, self.prompts, store=lambda: self.store,
                           embedder=lambda: self.embedder, llm=lambda: self.llm, start_embedding=self.start_embedding,
                           checks_file=self.home / NOTE_CHECKS)
        self.pipeline = Pipeline(self.parts)
        self.searcher = Searcher(self.parts)
        self.answerer = Answerer(self.parts, self.search)
        self.searcher.bridge = self._bridge

    # -- lazily loaded parts ----------------------------------------------------------------------
    @property
    def embedder(self):
        if self._embedder is None:
            from .backends.embed import load_embedder

            self._embedder = load_embedder(self.settings.embedder, self.settings.llm_threads)
        return self._embedder

    def start_embedding(self, query: str) -> Future:
        """Embed a query in a background thread: the model's first run (~0.3 s) overlaps opening the store
        (mostly Python imports; ONNX runs outside the GIL). `query_vector` collects it."""
        validate_query(query)
        future = self._query_vectors.get(query)
        if future is None:
            if len(self._query_vectors) > 32:  # a long-lived process (zk mcp, the benchmark) asks many queries
                self._query_vectors.clear()
            future = self._query_vectors[query] = background().submit(self.embedder.embed_query, query)
        return future

    def query_vector(self, query: str):
        """The query's embedding, computed once per process however many searches ask for it."""
        return self.start_embedding(query).result()

    @property
    def store(self) -> Store:
        if self._store is None:
            self._store = Store(self.home, *self._embedder_identity(), location=self.location)
            if self.location.remote:
                self._send_outbox()
        return self._store

    def _send_outbox(self) -> None:
        """A shared store reached: first send the notes kept offline (outbox.py), idempotently."""
        from .storage.outbox import Outbox

        outbox = Outbox(self.home)
        if outbox.count():
            sent = outbox.send(lambda ids: set(self._store.get_many(ids)), self.add_notes)
            if sent:
                import warnings

                warnings.warn(ZkNotice(f"sent {sent} note(s) kept offline to {self.location}"), stacklevel=3)
                self.outbox_sent = sent

    def _embedder_identity(self) -> tuple[str, int]:
        """Name and dimension of the embedder, taken from the store's meta file when it matches the
        settings: `zk list`, `show`, `rm`, `status` never load the embedding model."""
        if self._embedder is None:
            from .backends.embed import embedder_name

            meta = Store.read_meta(self.home)
            if meta.get("embedder") == embedder_name(self.settings.embedder) and meta.get("dim"):
                return meta["embedder"], int(meta["dim"])
        return self.embedder.name, self.embedder.dim

    def use_llm(self, llm: LLM) -> None:
        """Use this model from now on (the benchmark loads one model for several stores)."""
        self._llm = llm

    @property
    def llm(self) -> LLM:
        if self._llm is None:
            self._llm = load_configured(self.settings)
        return self._llm

    # -- writing ----------------------------------------------------------------------------------
    def new_note(self, content: str, at: str | None = None, **fields) -> Note:
        content = validate_content(content)
        when = parse_when(at)
        return Note(id=uuid.uuid4().hex, content=content, at=when, created=now_iso(), notebook=self.notebook,
                    content_hash=content_hash(content, fields.get("speaker"), when, fields.get("source")),
                    user_tags=hashtags(content), **fields)

    def add(self, content: str, at: str | None = None) -> Note:
        """Store the raw note with its content embedding. Returns once it is durable and searchable.

        A journal entry belongs to its week's (or day's) session, an episode once the period is over.
        Windows line ends (CRLF) become LF: typed or pasted text, unlike a restored backup, has no
        line-end style to keep."""
        note = self.new_note(unix_line_ends(content), at)
        period = journal_period(note.at, self.settings.journal_session)
        note.session_id = session_id_for(self.notebook, period.key)
        note.source = period.title
        if self.location.remote:
            return self._add_shared(note)
        self.add_notes([note])
        return note

    def _add_shared(self, note: Note) -> Note:
        """`add` on an object-store home: when the store cannot be reached the note goes to the local
        outbox (durable), with status OUTBOX and the reason in `error`; the next command sends it."""
        from .storage.outbox import Outbox

        try:
            self.store  # noqa: B018 - open it (and send an older outbox) before embedding anything
            self.add_notes([note])
        except StoreUnreachable as exc:
            waiting = Outbox(self.home).append(note)
            note.status = OUTBOX
            note.error = (f"note {note.short_id} is kept in the local outbox ({waiting} waiting): {exc}; the next "
                          "command that reaches the store sends it")
        return note

    def as_added(self, note: Note, result: ProcessResult | None) -> tuple[Note, list[Note], list[Note]]:
        """What `zk add` shows of a note it has just written: the note as stored, the notes it linked and
        those it evolved (`result`: its model step, None when left to the worker). Nothing changed the note
        since it was written unless a model step ran: on a shared store the read back would cost an index
        lookup over the network for the same fields, so the note written is shown."""
        linked = list(self.store.get_many(result.links).values()) if result else []
        evolved = list(self.store.get_many(result.evolved).values()) if result else []
        if result is None and self.location.remote:
            return note, linked, evolved
        return self.store.get(note.id) or note, linked, evolved

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
        attach_passages(notes, self.embedder.embed_passages)  # each entry's passages (passages.py)
        return self.store.add(notes, skip_existing=skip_existing)

    def edit(self, note_id: str, content: str, expected: str | None = None, reason: str = "edit") -> Note | None:
        """Replace a note's text (`zk edit`): a new version (content and #tags, old and new), a fresh
        content embedding, and the note queued again (`pending`) to be re-annotated and re-linked like a
        new one. None if the text is unchanged. `expected` is the text the editor was opened with: if the
        stored text changed meanwhile, nothing is overwritten."""
        note = self.store.get(self.resolve(note_id).id, with_vector=True)
        if expected is not None and note.content != expected:
            raise ZkError(f"note {note.short_id} was changed while you edited it")
        content = validate_content(unix_line_ends(content))  # as `add` stores it
        if content == note.content:
            return None
        return self.revise([(note, content, reason)])[0]

    def revise(self, edits: list[tuple[Note, str, str]]) -> list[Note]:
        """`edit` for several notes at once (a vault's edited pages): (note loaded with its vector, its new
        validated text, the version's reason) each; one embedding batch and one commit for all."""
        for note, content, reason in edits:
            changes = {"content": {"old": note.content, "new": content}}
            tags = hashtags(content)
            if tags != note.user_tags:
                changes["user_tags"] = {"old": note.user_tags, "new": tags}
            note.content, note.user_tags = content, tags
            record(note, changes, None, reason)
            note.status, note.error = PENDING, ""
        notes = list({note.id: note for note, _, _ in edits}.values())  # one note may get two versions
        if notes:
            for note, vector in zip(notes, self.embedder.embed_passages([n.embedding_text() for n in notes])):
                note.vector = vector.tolist()
            attach_passages(notes, self.embedder.embed_passages)
            self.store.update(notes)
        return notes

    # -- processing (the A-MEM pipeline, pipeline.py) ----------------------------------------------
    def pending_ids(self, all_notebooks: bool = False) -> list[str]:
        return self.pipeline.pending_ids(all_notebooks)

    def process(self, note_id: str, guard: Callable[[], AbstractContextManager] = nullcontext) -> ProcessResult:
        return self.pipeline.process(note_id, guard)

    def process_pending(self, on_progress: Callable[[ProcessResult, int, int], None] | None = None,
                        limit: int | None = None, all_notebooks: bool = False) -> list[ProcessResult]:
        return self.pipeline.process_pending(on_progress, limit, all_notebooks)

    def _bridge(self, question: str, notes: list[Note]) -> list[str]:
        """The question's words in its notes' other language, for search (term_bridge.search_terms)."""
        from .answering.term_bridge import search_terms

        return search_terms(question, notes, self.answerer.word_vectors)

    def warm_words(self, note_ids: list[str]) -> int:
        """Embed the words a journal answer bridges across languages (`term_bridge.vocabulary`) for these
        notes now, so the first `zk ask` after writing them does not (the idle worker calls this; the
        vectors stay in the cache dir, backends/word_vectors.py). Returns how many words were asked for."""
        from .answering.term_bridge import vocabulary

        notes = [n for n in self.store.get_many(note_ids).values() if not n.speaker]
        korean, english = vocabulary(notes) if notes else ([], [])
        if korean or english:
            self.answerer.word_vectors(korean + english)
        return len(korean) + len(english)

    # -- history, revert, deletion ----------------------------------------------------------------
    def revert(self, note_id: str, to_version: int | None = None) -> Note:
        """Restore the evolvable fields as they were at `to_version` (default: before the last change)."""
        return changes.revert(self.parts, note_id, to_version)

    def remove(self, note_id: str) -> Removal:
        """Delete a note with its links both ways, its history and what it wrote into others (changes.py)."""
        return changes.remove(self.parts, note_id)

    # -- reading ----------------------------------------------------------------------------------
    def resolve(self, prefix: str) -> Note:
        return changes.find(self.parts, prefix)

    def status(self) -> dict:
        """`zk status`: where the data lives, how many notes, how much work is queued, which models."""
        if self.location.remote:
            return self._shared_status()
        return {"home": str(self.home), "notebook": self.notebook, "notes": self.store.count(self.notebook),
                "pending": self.store.count(self.notebook, unfinished=True),  # "queue": the worker's, all notebooks
                "queue": self.store.count(unfinished=True), "all_notes": self.store.count(),
                "embedder": self.store.embedder_name, "llm": mask_spec(self.settings.llm_model)}  # no URL password

    def _shared_status(self) -> dict:
        """`status` of an object-store home: the store, this machine's folder and its outbox; the counts
        only when the store can be reached (offline: the outbox and the reason)."""
        from .storage.outbox import Outbox

        data = {"home": str(self.home), "store": str(self.location), "notebook": self.notebook}
        try:
            counts = {"notes": self.store.count(self.notebook), "pending": self.store.count(self.notebook,
                                                                                             unfinished=True),
                      "queue": self.store.count(unfinished=True), "all_notes": self.store.count()}
            data.update(counts, reachable=True)
        except StoreUnreachable as exc:
            data.update(reachable=False, error=str(exc))
        data["outbox"] = Outbox(self.home).count()
        return {**data, "embedder": self._embedder_identity()[0] if self._store is None else self.store.embedder_name,
                "llm": mask_spec(self.settings.llm_model)}

    def backlinks(self, note_id: str) -> list[str]:
        return self.store.backlinks(note_id)

    # -- search and answers (search.py, answer.py) -----------------------------------------------------
    def search(self, query: str, k: int | None = None, **options) -> list[Hit]:
        """See `Searcher.search`."""
        return self.searcher.search(validate_query(query), k, **options)

    def ask(self, question: str, k: int | None = None, budget_tokens: int | None = None, **options) -> Answer:
        """See `Answerer.ask`. A configured model server (`openai:`) is probed meanwhile, whether or not this
        answer calls it (`Answer.server`: a user whose server is down learns it on the next question)."""
        probe = background().submit(server_reach, self.settings)
        answer = self.answerer.ask(validate_query(question, "the question"), k, budget_tokens, **options)
        answer.server = probe.result()
        return answer
