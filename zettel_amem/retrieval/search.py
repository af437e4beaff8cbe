"""Search over one notebook: the ranked signals (raw words by vector and keywords, and beside them the
LLM's enrichment), fused, then each hit followed by its session turns and linked notes within a budget.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace
from typing import TYPE_CHECKING

from ..core.errors import InvalidInput
from ..core.models import Note, Scope
from ..core.passages import entry_id_of, passage_id
from ..core.text import is_trivial, keyword_terms, name_candidates, tag_key
from .passage_rank import best_passages, both_languages, by_language, passage_signals
from .retrieve import Hit, Signal, bm25_ranked, expand, fold_repeats, fuse_signals, smooth_by_session

SCOPE_MAX_SHARE = 0.5  # a scope holding more of the notebook than this narrows nothing: no scope
SCOPE_IN_PLACE = 5_000  # a scope up to this many notes is ranked here (one read); a bigger one by the indexes

if TYPE_CHECKING:
    from ..parts import Parts


def has_tag(note: Note, tag: str) -> bool:
    """Whether the note carries the user's #tag (case-insensitive, "#" optional)."""
    key = tag_key(tag)
    return any(tag_key(t) == key for t in note.user_tags)


_POOL = None


def background():
    """The threads for work that need not wait: independent store reads and query embeddings (LanceDB and
    ONNX release the GIL). Created on first use."""
    global _POOL
    if _POOL is None:
        from concurrent.futures import ThreadPoolExecutor

        _POOL = ThreadPoolExecutor(max_workers=4, thread_name_prefix="zk-read")
    return _POOL


class Searcher:
    """`Memory.search` and the parts the benchmark tunes (`signals`)."""

    def __init__(self, parts: Parts):
        self.parts = parts
        self.last_scope: Scope | None = None  # the person scope of the latest search (shown by `zk search`)
        # (question, the vector list's notes) -> words in the notes' other language to search for too
        # (set by Memory: answering/term_bridge.search_terms; retrieval itself holds no embedder)
        self.bridge: Callable[[str, list[Note]], list[str]] | None = None
        self.last_bridged: list[str] = []  # what the latest search added (its passage lists use them too)
        self._last_ranking: tuple | None = None  # (what it was ranked for, its hits, passages or not)

    def _keyword_ranked(self, terms: list[str], pool: int, column: str, tagged: bool = False,
                        within: Scope | None = None) -> list[tuple[Note, float]]:
        """BM25 over the store's full-text index of `column`, on the same terms the index holds."""
        return self.parts.store.keyword_search(terms, pool, self.parts.notebook, column=column, tagged=tagged,
                                                light=True, within=within)

    def _vector_ranked(self, vector, pool: int, column: str, tagged: bool = False, enriched: bool = False,
                       within: Scope | None = None) -> list[tuple[Note, float]]:
        """Nearest notes by one embedding column, without short filler ("ok", "ㅇㅋ"): it sits close to
        every query in embedding space. Filler is still found by its words."""
        for size in (pool, pool * 8):  # a chat full of filler: look further for real notes
            found = self.parts.store.nearest(vector, size, self.parts.notebook, column=column, tagged=tagged,
                                             enriched=enriched, light=True, within=within)
            ranked = [(n, s) for n, s in found if not is_trivial(n.content)]
            if len(ranked) >= pool // 2 or len(found) < size:
                break
        return ranked[:pool]

    def person_scope(self, query: str) -> Scope | None:
        """The people `query` names who speak in imported chats (None: no one), the sessions they speak
        in and up to `search_scope_mentions` notes of the user's own (outside chats) that name them. A scope
        holding most of the notebook narrows nothing (it would only hide the notes outside chats):
        `narrows` is then False."""
        store, notebook = self.parts.store, self.parts.notebook
        found = store.speakers(name_candidates(query), notebook)
        if not found:
            return None
        scope = Scope(sorted(found), sorted(set().union(*found.values())))
        scope.rows = store.count_within(scope, notebook)
        if scope.rows > SCOPE_MAX_SHARE * store.count(notebook):
            scope.narrows = False
            return scope
        limit = self.parts.settings.search_scope_mentions
        scope.mentions = store.mentioning(sorted({t for p in scope.people for t in keyword_terms(p)}), limit,
                                          notebook) if limit > 0 else []
        scope.rows += len(scope.mentions)
        return scope

    def signals(self, query: str, pool: int, use_vector: bool = True, use_keywords: bool = True,
                use_enrichment: bool = True, tagged: bool = False, scoped: bool = True) -> list[Signal]:
        """The ranked lists search fuses: raw words (vector, keywords) and, beside them, the enrichment.
        `tagged`: the vector searches read only notes with #tags of the user's. The lists are read at
        once in threads (LanceDB releases the GIL), the keyword ones while the query is being embedded.

        A query that names someone who speaks in imported chats ("what did Jon say about Paris?") is a
        question about them: with `scoped`, the lists rank only their sessions and the notes naming them
        (`person_scope`), a small scope in place with its own word statistics. Their name is not a
        keyword: every one of their turns carries it, so it would only reward short turns."""
        self.last_bridged = []
        if use_vector:
            self.parts.start_embedding(query)  # embedding runs while the scope and the keyword lists are read
        store, scoping = self.parts.store, scoped and not tagged and self.parts.settings.search_person_scope
        # On a shared store: the three questions below (sole notebook, enriched, speakers) in one read
        store.prepare_search(self.parts.notebook, name_candidates(query) if scoping else [])
        enriched = use_enrichment and store.has_enriched(self.parts.notebook)
        weight = self.parts.settings.enrichment_weight() if enriched else 0.0
        terms = keyword_terms(query)
        scope = self.person_scope(query) if scoping else None
        self.last_scope = scope
        if scope is not None:
            named = {t for p in scope.people for t in keyword_terms(p)}
            terms = [t for t in terms if t not in named]
            scope = scope if scope.narrows else None
        if scope is not None and scope.rows <= SCOPE_IN_PLACE:
            return self._ranked_in_place(query, terms, scope, pool, use_vector, use_keywords, weight)
        reads = background()
        jobs = {}
        if use_keywords:
            jobs["keywords"] = reads.submit(self._keyword_ranked, terms, pool, "terms", tagged, scope)
            if weight > 0:
                jobs["enriched-keywords"] = reads.submit(self._keyword_ranked, terms, pool, "enrichment_terms",
                                                         tagged, scope)
        if use_vector:
            vector = self.parts.query_vector(query)
            jobs["vector"] = reads.submit(self._vector_ranked, vector, pool, "raw_vector", tagged, False, scope)
            if weight > 0:
                jobs["enriched-vector"] = reads.submit(self._vector_ranked, vector, pool, "vector", tagged, True,
                                                       scope)
        if use_keywords and use_vector and self.bridge is not None:
            extra = keyword_terms(" ".join(self.bridge(query, [n for n, _ in jobs["vector"].result()])))
            extra = [t for t in extra if t not in terms]
            if extra:  # the keyword lists again, with the question's words in the other language
                self.last_bridged = extra
                jobs["keywords"] = reads.submit(self._keyword_ranked, terms + extra, pool, "terms", tagged, scope)
                if weight > 0:
                    jobs["enriched-keywords"] = reads.submit(self._keyword_ranked, terms + extra, pool,
                                                             "enrichment_terms", tagged, scope)
        order = {"vector": 1.0, "keywords": 1.0, "enriched-vector": weight, "enriched-keywords": weight}
        return [Signal(name, jobs[name].result(), w) for name, w in order.items() if name in jobs]

    def _ranked_in_place(self, query: str, terms: list[str], scope: Scope, pool: int, use_vector: bool,
                         use_keywords: bool, weight: float) -> list[Signal]:
        """The same lists as `signals`, ranked here over every note of a small scope (one read): exact
        cosine, and BM25 with the scope's own statistics."""
        import numpy as np

        rows = self.parts.store.within(scope, self.parts.notebook, enrichment=weight > 0)
        out = []
        if use_vector and rows:
            vector = np.asarray(self.parts.query_vector(query), dtype=np.float32)
            for name, w, column, only_enriched in (("vector", 1.0, "raw_vector", False),
                                                   ("enriched-vector", weight, "vector", True)):
                if w <= 0:
                    continue
                notes = [n for n, _, _ in rows if not is_trivial(n.content) and (n.context or not only_enriched)
                         and getattr(n, column) is not None]
                if not notes:
                    continue
                scores = np.stack([np.asarray(getattr(n, column), dtype=np.float32) for n in notes]) @ vector
                best = np.argsort(-scores, kind="stable")[:pool]
                out.append(Signal(name, [(notes[i], float(scores[i])) for i in best], w))
        if use_keywords:
            out.append(Signal("keywords", bm25_ranked([(n, t) for n, t, _ in rows], terms, pool)))
            if weight > 0:
                out.append(Signal("enriched-keywords", bm25_ranked([(n, e) for n, _, e in rows], terms, pool), weight))
        order = ["vector", "keywords", "enriched-vector", "enriched-keywords"]
        return sorted(out, key=lambda signal: order.index(signal.name))

    @staticmethod
    def _in_full(hits: list[Hit], full: dict[str, Note]) -> list[Hit]:
        """The hits with their whole notes (the ranked lists hold only what ranking reads)."""
        for hit in hits:
            hit.note = full.get(hit.note.id, hit.note)
        return [h for h in hits if h.note.id in full]

    def session_windows(self, notes: list[Note], radius: int) -> dict[str, list[Note]]:
        """Each chat turn's session neighbours within `radius` turns, nearest first (one read)."""
        return self.parts.store.session_windows(notes, radius, self.parts.notebook) if radius else {}

    def by_passages(self, query: str, signals: list[Signal], pool: int) -> list[Hit]:
        """The fused hits, ranked again with their best passages (passage_rank.py), each holding the
        passages that matched."""
        hits = fuse_signals(signals, pool)
        if not any(h.note.kind != "turn" for h in hits):
            return hits
        extra, matched = passage_signals(query, self.parts.query_vector(query), hits,
                                         self.parts.store.passage_rows([h.note.id for h in hits]),
                                         self.parts.settings.search_passage_weight, self.last_bridged)
        signals = [by_language(s, query) if s.name in ("vector", "enriched-vector") else s for s in signals]
        hits = fuse_signals(signals + extra, pool)
        for hit in hits:
            hit.passages = matched.get(hit.note.id, [])
        return hits

    def _neighbours(self, hits: list[Hit], follow_links: bool, radius: int
                    ) -> tuple[list[Hit], dict[str, Note], dict[str, list[str]], dict[str, list[Note]]]:
        """What `search` expands its hits with: the hits in full (`_in_full`), the notes they link to and
        link from them by id (`follow_links`), each hit's linking notes (id -> ids, oldest first) and its
        session turns within `radius` (`session_windows`)."""
        # The hits in full with their linked notes and the notes linking to them (one read), and their
        # session turns (another), at once.
        store, reads, ids = self.parts.store, background(), [h.note.id for h in hits]
        wanted = [*ids, *(i for h in hits for i in h.note.links)] if follow_links else ids
        full_job = reads.submit(store.notes_and_linking, wanted, ids if follow_links else [])
        windows_job = reads.submit(self.session_windows, [h.note for h in hits], radius)
        found, linking = full_job.result()
        hits = self._in_full(hits, found)
        windows = windows_job.result()
        back: dict[str, list[str]] = {}  # hit id -> the notes linking to it, oldest first
        hit_ids = set(ids)
        for note in linking:
            found.setdefault(note.id, note)
            for target in hit_ids.intersection(note.links):
                back.setdefault(target, []).append(note.id)
        return hits, found, back, windows

    def _ranked(self, query: str, pool: int, use_vector: bool, use_keywords: bool, use_enrichment: bool,
                session_smoothing: bool, tag: str | None, scoped: bool) -> tuple[list[Hit], bool]:
        """Every candidate ranked (fused signals, passages, repeats folded, sessions smoothed), and whether the
        notebook's passages took part."""
        settings = self.parts.settings
        signals = self.signals(query, pool if tag is None else 20 * pool, use_vector, use_keywords, use_enrichment,
                               tag is not None, scoped)
        # asked after `signals`: on a shared store its first read has answered it
        passages = settings.search_passage_weight > 0 and use_vector and self.parts.store.has_passages(
            self.parts.notebook)
        if tag is not None:
            for signal in signals:
                signal.ranked = [(n, score) for n, score in signal.ranked if has_tag(n, tag)][:pool]
        hits = fold_repeats(self.by_passages(query, signals, pool) if passages else fuse_signals(signals, pool))
        weights = (settings.search_session_near, settings.search_session_far)
        if session_smoothing and any(weights) and tag is None:
            hits = smooth_by_session(hits, self.session_windows([h.note for h in hits], len(weights)), weights)
        return hits, passages

    def search(self, query: str, k: int | None = None, *, follow_links: bool = True,
               budget_tokens: int | None = None, use_vector: bool = True, use_keywords: bool = True,
               use_enrichment: bool = True, session_smoothing: bool = True, session_turns: int | None = None,
               tag: str | None = None, scoped: bool = True, pool: int | None = None,
               reuse_ranking: bool = False) -> list[Hit]:
        """k direct hits (fused signals), each followed by its session turns (`session_turns`, default
        `search_session_turns`; 0: none), then their linked notes (`follow_links`), within the budget.
        `tag`: only notes with that #tag of the user's, hits and neighbours alike. `scoped`: a query naming
        someone from the chats ranks inside their chats and the notes naming them (`signals`). `pool`: rank at
        least this many candidates per list. `reuse_ranking`: nothing was written since the previous search of
        this query with the same pool (a journal answer's wider look), so its ranking is taken as it was."""
        if not query.strip():
            raise InvalidInput("the query is empty")
        settings = self.parts.settings
        # the same pool whatever k: k=10 is a prefix of k=25
        pool = max(settings.search_pool, 2 * (k or max(settings.search_k, settings.search_passage_k)), pool or 0)
        asked = (query, pool, use_vector, use_keywords, use_enrichment, session_smoothing, tag, scoped)
        if reuse_ranking and self._last_ranking is not None and self._last_ranking[0] == asked:
            hits, passages = _copies(self._last_ranking[1]), self._last_ranking[2]
        else:
            hits, passages = self._ranked(query, pool, use_vector, use_keywords, use_enrichment, session_smoothing,
                                          tag, scoped)
            self._last_ranking = (asked, _copies(hits), passages)  # callers change the hits they are given
        k = k or (settings.search_passage_k if passages else settings.search_k)
        hits = both_languages(hits, k, query, int(settings.search_other_language * k))[:k]
        radius = self.parts.settings.search_session_turns if session_turns is None else session_turns
        hits, found, back, windows = self._neighbours(hits, follow_links, radius)
        if not follow_links and not windows:
            return hits if budget_tokens is None else expand(hits, lambda n: [], budget_tokens, False)

        def linked(note: Note) -> list[Note]:
            ids = dict.fromkeys([*note.links, *back.get(note.id, [])])
            return [found[i] for i in ids if i in found and (tag is None or has_tag(found[i], tag))]

        def session(note: Note) -> list[Note]:
            return [n for n in windows.get(note.id, []) if tag is None or has_tag(n, tag)]

        newer = self.newer_values(hits, found, tag) if follow_links else {}
        return expand(hits, linked, budget_tokens, follow_links, session_of=session,
                      passages_of=lambda note: best_passages(note.passages or [], query),
                      newer_of=lambda hit: newer.get(hit.note.id, []))

    def newer_values(self, hits: list[Hit], found: dict[str, Note], tag: str | None) -> dict[str, list[Hit]]:
        """Hit id -> the passages that update a passage the hit shows (typed *updates* links recorded at
        write time, amem/supersede.py), as expansion hits: a "now" question meets the newer value even when
        its words rank low. One more read, only when a hit has such a link. One step: a newer value that is
        itself updated shows its own note's mark (`[updated later by …]`)."""
        def shown(hit: Hit, unit_id: str) -> bool:
            return not hit.passages or unit_id in {passage_id(hit.note.id, p.index) for p in hit.passages}

        direct = {h.note.id for h in hits}  # a newer value that is a hit itself keeps its own place
        records = {h.note.id: [e["by"] for e in h.note.updated_by
                               if shown(h, e["passage"]) and entry_id_of(e["by"]) not in direct] for h in hits}
        missing = sorted({entry_id_of(by) for ids in records.values() for by in ids} - found.keys())
        if missing:
            found = {**found, **self.parts.store.get_many(missing)}
        out: dict[str, list[Hit]] = {}
        for hit_id, ids in records.items():
            for by in dict.fromkeys(ids):
                note = found.get(entry_id_of(by))
                if note is None or (tag is not None and not has_tag(note, tag)):
                    continue
                passages = [p for p in note.passages or [] if passage_id(note.id, p.index) == by]
                out.setdefault(hit_id, []).append(Hit(note, 0.0, via=hit_id, passages=passages, updates=True))
        return out


def _copies(hits: list[Hit]) -> list[Hit]:
    return [replace(h, passages=list(h.passages), signals=dict(h.signals)) for h in hits]
