"""Retrieval: hybrid keyword + vector search, then linked-neighbour expansion within a token budget.

- Keywords: BM25 over content + keywords + tags + context. Hangul is indexed as whole runs plus
  character bigrams, so "무릎" matches "무릎이" without a morphological analyser.
- Vectors: cosine top-N from LanceDB with the query embedding.
- Fusion: reciprocal-rank fusion (RRF), which needs no score calibration between the two.
- Expansion (A-MEM §3.4): each hit brings its linked notes (both directions), each note once, until
  the budget is spent.
"""

from __future__ import annotations

import math
import re
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from .note import Note
from .text import estimate_tokens, nfc, one_line, romanise

RRF_K = 60
_WORD = re.compile(r"[0-9a-z]+|[\uac00-\ud7a3]+|[\u4e00-\u9fff\u3040-\u30ff]", re.IGNORECASE)
_STOP = {"the", "a", "an", "and", "or", "of", "to", "in", "on", "at", "is", "was", "what", "how", "did",
         "do", "my", "i", "me", "with", "for", "it", "this", "that", "about", "happened", "are", "be"}
# Chat filler that says nothing about a topic (L0 hints only; note search keeps its own list above).
_FILLER = {"does", "will", "would", "can", "could", "you", "your", "we", "our", "now", "so", "then", "just",
           "any", "anything", "again", "still", "tell", "know", "think", "there", "where", "when", "which", "who",
           "그거", "그게", "이거", "이게", "저거", "그건", "어떻게", "됐어", "됐어요", "뭐", "뭐야", "뭐였지", "말이야",
           "그래서", "근데", "그럼", "혹시", "좀", "다시", "아까", "이제", "그", "이", "저", "어", "음", "있어", "없어",
           "했어", "할까", "알려줘", "어때", "어디", "언제", "누구", "왜"}


def tokens(text: str, romanised: bool = False) -> list[str]:
    """Lower-cased words minus stop words; Hangul runs also as character bigrams (and, with
    `romanised`, in Latin letters, so "온비서" meets "Onbiseo")."""
    out: list[str] = []
    for match in _WORD.finditer(nfc(text).lower()):
        word = match.group()
        if word in _STOP:
            continue
        out.append(word)
        if "\uac00" <= word[0] <= "\ud7a3":
            if len(word) > 2:
                out.extend(word[i:i + 2] for i in range(len(word) - 1))
            if romanised:
                out.append(romanise(word))
    return out


class BM25:
    """Okapi BM25 over a small in-memory corpus (rebuilt per query; fine up to ~10^5 notes)."""

    def __init__(self, docs: Sequence[list[str]], k1: float = 1.2, b: float = 0.75):
        self.k1, self.b = k1, b
        self.tfs = [Counter(d) for d in docs]
        self.lengths = [len(d) for d in docs]
        self.avg = (sum(self.lengths) / len(docs)) if docs else 0.0
        df: Counter[str] = Counter()
        for tf in self.tfs:
            df.update(tf.keys())
        n = len(docs)
        self.idf = {t: math.log(1 + (n - f + 0.5) / (f + 0.5)) for t, f in df.items()}

    def scores(self, query: list[str]) -> list[float]:
        out = []
        for tf, length in zip(self.tfs, self.lengths):
            score = 0.0
            for term in query:
                f = tf.get(term)
                if f:
                    norm = 1 - self.b + self.b * length / (self.avg or 1)
                    score += self.idf[term] * f * (self.k1 + 1) / (f + self.k1 * norm)
            out.append(score)
        return out


def index_text(note: Note) -> str:
    return " ".join([note.speaker or "", note.content, *note.keywords, *note.tags, note.context])


@dataclass
class Hit:
    note: Note
    score: float  # fused score in (0, 1]: 1 = ranked first by both keyword and vector search
    similarity: float | None = None  # cosine similarity to the query, when the vector search saw it
    keyword_score: float = 0.0
    via: str | None = None  # for expansion hits: the id of the hit whose link brought this note in

    def to_json(self, backlinks: list[str] | None = None, **extra) -> dict:
        return self.note.to_json(backlinks, score=round(self.score, 4),
                                 similarity=None if self.similarity is None else round(self.similarity, 4),
                                 via=self.via, **extra)


def fuse(vector_ranked: list[tuple[Note, float]], keyword_ranked: list[tuple[Note, float]], k: int,
         use_vector: bool = True, use_keywords: bool = True) -> list[Hit]:
    """Reciprocal-rank fusion, scaled so that rank 1 in every used list scores 1.0."""
    lists = int(use_vector) + int(use_keywords)
    hits: dict[str, Hit] = {}
    if use_vector:
        for rank, (note, sim) in enumerate(vector_ranked):
            hit = hits.setdefault(note.id, Hit(note, 0.0))
            hit.similarity = sim
            hit.score += (RRF_K + 1) / (RRF_K + rank + 1) / lists
    if use_keywords:
        for rank, (note, score) in enumerate(keyword_ranked):
            hit = hits.setdefault(note.id, Hit(note, 0.0))
            hit.keyword_score = score
            hit.score += (RRF_K + 1) / (RRF_K + rank + 1) / lists
    return sorted(hits.values(), key=lambda h: (-h.score, h.note.at))[:k]


class KeywordIndex:
    """BM25 over a fixed set of notes; built once per store version and reused across queries."""

    def __init__(self, notes: list[Note]):
        self.notes = notes
        self.bm25 = BM25([tokens(index_text(n)) for n in notes]) if notes else None

    def rank(self, query: str, limit: int) -> list[tuple[Note, float]]:
        query_tokens = tokens(query)
        if not query_tokens or self.bm25 is None:
            return []
        scores = self.bm25.scores(query_tokens)
        ranked = sorted((pair for pair in zip(self.notes, scores) if pair[1] > 0), key=lambda p: -p[1])
        return ranked[:limit]


class CoverageIndex:
    """How much of a query a document covers, in [0, 1], comparable across queries (unlike BM25).

    The IDF-weighted share of the query's distinct words found in the document. A Hangul word also
    counts in part through its character bigrams ("데이터베이스" in "데이터베이스를"), and in Latin letters
    ("온비서" = "onbiseo"). Words no document has still weigh (half the median IDF): a query mostly about
    something else must not score high because one common word matched. Chat filler ("그거", "어떻게")
    weighs nothing. Used where a score must pass a fixed threshold (L0 hints)."""

    def __init__(self, texts: list[str]):
        self.docs = [self.terms(t) for t in texts]
        df: Counter[str] = Counter()
        for doc in self.docs:
            df.update(doc)
        n = len(self.docs)
        self.idf = {t: math.log(1 + (n - f + 0.5) / (f + 0.5)) for t, f in df.items()}
        weights = sorted(self.idf.values())
        self.unseen_weight = 0.5 * weights[len(weights) // 2] if weights else 1.0

    @staticmethod
    def words(text: str) -> list[str]:
        """Whole words minus stop words and filler; a plural/3rd-person "s" dropped ("uses" = "use")."""
        out = []
        for match in _WORD.finditer(text.lower()):
            word = match.group()
            if word in _STOP or word in _FILLER:
                continue
            if len(word) > 3 and word.endswith("s") and not word.endswith("ss") and word.isascii():
                word = word[:-1]
            out.append(word)
        return out

    @classmethod
    def terms(cls, text: str) -> set[str]:
        out: set[str] = set()
        for word in cls.words(text):
            out.add(word)
            if "\uac00" <= word[0] <= "\ud7a3":
                out.add(romanise(word))
                out.update(word[i:i + 2] for i in range(len(word) - 1))
        return out

    def _match(self, word: str, doc: set[str]) -> float:
        if word in doc:
            return 1.0
        if "\uac00" <= word[0] <= "\ud7a3":
            if romanise(word) in doc:
                return 1.0
            grams = [word[i:i + 2] for i in range(len(word) - 1)]
            return sum(g in doc for g in grams) / len(grams) if grams else 0.0
        return 0.0

    def _weight(self, word: str) -> float:
        forms = [word]
        if "\uac00" <= word[0] <= "\ud7a3":
            forms += [romanise(word), *(word[i:i + 2] for i in range(len(word) - 1))]
        seen = [self.idf[f] for f in forms if f in self.idf]
        return max(seen) if seen else self.unseen_weight

    def scores(self, query: str) -> list[float]:
        words = list(dict.fromkeys(self.words(query)))
        if not words:
            return [0.0] * len(self.docs)
        weight = {w: self._weight(w) for w in words}
        total = sum(weight.values())
        return [sum(weight[w] * self._match(w, doc) for w in words) / total for doc in self.docs]


def render_for_context(note: Note) -> str:
    """How a note appears in an answer prompt (also what the budget counts)."""
    line = f"[{note.short_id}] {note.at[:16].replace('T', ' ')}"
    if note.speaker:
        line += f" {note.speaker}:"
    line += f" {one_line(note.content)}"
    if note.context:
        line += f" ({one_line(note.context)})"
    return line


def expand(hits: list[Hit], neighbours_of: Callable[[Note], list[Note]], budget_tokens: int | None,
           follow_links: bool = True) -> list[Hit]:
    """Hits in rank order, each followed by its linked notes; every note once; stop at the budget.
    A linked note that is itself a hit keeps its own score (it is only moved up)."""
    direct = {hit.note.id: hit for hit in hits}
    out: list[Hit] = []
    seen: set[str] = set()
    used = 0

    def take(hit: Hit) -> bool:
        nonlocal used
        if hit.note.id in seen:
            return True
        cost = estimate_tokens(render_for_context(hit.note))
        if budget_tokens is not None and out and used + cost > budget_tokens:
            return False
        seen.add(hit.note.id)
        used += cost
        out.append(hit)
        return True

    for hit in hits:
        if not take(hit):
            continue  # a long note may not fit while a shorter later one does
        if follow_links:
            for neighbour in neighbours_of(hit.note):
                take(direct.get(neighbour.id) or Hit(neighbour, 0.0, via=hit.note.id))
    return out
