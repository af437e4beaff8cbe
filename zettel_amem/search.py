"""Search over one notebook: the ranked signals (raw words by vector and keywords, and beside them the
LLM's enrichment), fused, then each hit followed by its session turns and linked notes within a budget.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from .errors import InvalidInput
from .models import Note
from .retrieve import Hit, Signal, expand, fold_repeats, fuse_signals, smooth_by_session
from .text import is_trivial, keyword_terms, tag_key

if TYPE_CHECKING:  # search reads a Memory's parts; it never imports Memory at run time
    from .memory import Memory


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

    def __init__(self, memory: Memory):
        self.memory = memory

    def _keyword_ranked(self, query: str, pool: int, column: str, tagged: bool = False) -> list[tuple[Note, float]]:
        """BM25 over the store's full-text index of `column`, on the same terms the index holds."""
        return self.memory.store.keyword_search(keyword_terms(query), pool, self.memory.notebook, column=column,
                                                tagged=tagged, light=True)

    def _vector_ranked(self, vector, pool: int, column: str, tagged: bool = False, enriched: bool = False
                       ) -> list[tuple[Note, float]]:
        """Nearest notes by one embedding column, without short filler ("ok", "ㅇㅋ"): it sits close to
        every query in embedding space. Filler is still found by its words."""
        for size in (pool, pool * 8):  # a chat full of filler: look further for real notes
            found = self.memory.store.nearest(vector, size, self.memory.notebook, column=column, tagged=tagged,
                                             enriched=enriched, light=True)
            ranked = [(n, s) for n, s in found if not is_trivial(n.content)]
            if len(ranked) >= pool // 2 or len(found) < size:
                break
        return ranked[:pool]

    def signals(self, query: str, pool: int, use_vector: bool = True, use_keywords: bool = True,
                use_enrichment: bool = True, tagged: bool = False) -> list[Signal]:
        """The ranked lists search fuses: raw words (vector, keywords) and, beside them, the enrichment.
        `tagged`: the vector searches read only notes with #tags of the user's. The lists are read at
        once in threads (LanceDB releases the GIL), the keyword ones while the query is being embedded."""
        enriched = use_enrichment and self.memory.store.has_enriched(self.memory.notebook)
        weight = self.memory.settings.search_enrichment_weight if enriched else 0.0
        reads = background()
        jobs = {}
        if use_keywords:
            jobs["keywords"] = reads.submit(self._keyword_ranked, query, pool, "terms", tagged)
            if weight > 0:
                jobs["enriched-keywords"] = reads.submit(self._keyword_ranked, query, pool, "enrichment_terms", tagged)
        if use_vector:
            vector = self.memory.query_vector(query)
            jobs["vector"] = reads.submit(self._vector_ranked, vector, pool, "raw_vector", tagged)
            if weight > 0:
                jobs["enriched-vector"] = reads.submit(self._vector_ranked, vector, pool, "vector", tagged, True)
        order = {"vector": 1.0, "keywords": 1.0, "enriched-vector": weight, "enriched-keywords": weight}
        return [Signal(name, jobs[name].result(), w) for name, w in order.items() if name in jobs]

    @staticmethod
    def _in_full(hits: list[Hit], full: dict[str, Note]) -> list[Hit]:
        """The hits with their whole notes (the ranked lists hold only what ranking reads)."""
        for hit in hits:
            hit.note = full.get(hit.note.id, hit.note)
        return [h for h in hits if h.note.id in full]

    def session_windows(self, notes: list[Note], radius: int) -> dict[str, list[Note]]:
        """Each chat turn's session neighbours within `radius` turns, nearest first (one read)."""
        return self.memory.store.session_windows(notes, radius, self.memory.notebook) if radius else {}

    def search(self, query: str, k: int | None = None, *, follow_links: bool = True,
               budget_tokens: int | None = None, use_vector: bool = True, use_keywords: bool = True,
               use_enrichment: bool = True, session_smoothing: bool = True, session_turns: int | None = None,
               tag: str | None = None) -> list[Hit]:
        """k direct hits (fused signals), each followed by its session turns (`session_turns`, default
        `search_session_turns`; 0: none), then their linked notes (`follow_links`), within the budget.
        `tag`: only notes with that #tag of the user's, hits and neighbours alike."""
        if not query.strip():
            raise InvalidInput("the query is empty")
        k = k or self.memory.settings.search_k
        pool = max(self.memory.settings.search_pool, 2 * k)  # the same pool whatever k: k=10 is a prefix of k=25
        signals = self.signals(query, pool if tag is None else 20 * pool, use_vector, use_keywords, use_enrichment,
                               tag is not None)
        if tag is not None:
            for signal in signals:
                signal.ranked = [(n, score) for n, score in signal.ranked if has_tag(n, tag)][:pool]
        hits = fold_repeats(fuse_signals(signals, pool))
        weights = (self.memory.settings.search_session_near, self.memory.settings.search_session_far)
        if session_smoothing and any(weights) and tag is None:
            hits = smooth_by_session(hits, self.session_windows([h.note for h in hits], len(weights)), weights)
        hits = hits[:k]
        radius = self.memory.settings.search_session_turns if session_turns is None else session_turns
        # The hits in full with their linked notes, their session turns and the notes linking to them:
        # three independent reads, at once.
        store, reads, ids = self.memory.store, background(), [h.note.id for h in hits]
        wanted = [*ids, *(i for h in hits for i in h.note.links)] if follow_links else ids
        full_job = reads.submit(store.get_many, wanted)
        windows_job = reads.submit(self.session_windows, [h.note for h in hits], radius)
        linking_job = reads.submit(store.linking_notes, ids) if follow_links else None
        found = full_job.result()
        hits = self._in_full(hits, found)
        windows = windows_job.result()
        back: dict[str, list[str]] = {}  # hit id -> the notes linking to it, oldest first
        hit_ids = set(ids)
        for note in linking_job.result() if linking_job else []:
            found.setdefault(note.id, note)
            for target in hit_ids.intersection(note.links):
                back.setdefault(target, []).append(note.id)
        if not follow_links and not windows:
            return hits if budget_tokens is None else expand(hits, lambda n: [], budget_tokens, False)

        def linked(note: Note) -> list[Note]:
            ids = dict.fromkeys([*note.links, *back.get(note.id, [])])
            return [found[i] for i in ids if i in found and (tag is None or has_tag(found[i], tag))]

        def session(note: Note) -> list[Note]:
            return [n for n in windows.get(note.id, []) if tag is None or has_tag(n, tag)]

        return expand(hits, linked, budget_tokens, follow_links, session_of=session)
