"""Retrieval: hybrid keyword + vector search, then neighbour expansion within a token budget.

- Signals: the raw words are first-class, what the LLM added is indexed *beside* them, never instead:
  BM25 over the raw words (speaker + content) and cosine over their embedding, plus, with a smaller
  weight, BM25 over the enrichment (keywords, tags, context) and cosine over the full A-MEM embedding.
  The BM25 and vector indexes live in the store (store.py); this module only fuses what they rank.
  Hangul is indexed as whole runs plus character bigrams, so "무릎" matches "무릎이".
- Fusion: weighted reciprocal-rank fusion (RRF), which needs no score calibration between signals. An
  enrichment signal only ever *adds* to a note's score: poor enrichment cannot push a note below its
  raw self.
- Session smoothing: a chat turn also scores a share of its best neighbour turns' scores (an answer
  sits next to the question that names the topic).
- Expansion: each hit is followed by its session turns (±2), the best expansion measured on LoCoMo;
  after all k direct hits come their linked notes (A-MEM §3.4, both directions), which never displace a
  hit. Each note once, until the budget is spent.
"""

from __future__ import annotations

import math
import re
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from datetime import date

from ..core.models import Note
from ..core.passages import Passage, entry_id_of
from ..core.relative_dates import dated_phrases, day_text
from ..core.text import KEYWORD_STOP_WORDS, WORD, estimate_tokens, one_line, romanise

RRF_K = 60
# Chat filler that says nothing about a topic (L0 hints only; note search keeps text.KEYWORD_STOP_WORDS).
_FILLER = {"does", "will", "would", "can", "could", "you", "your", "we", "our", "now", "so", "then", "just",
           "any", "anything", "again", "still", "tell", "know", "think", "there", "where", "when", "which", "who",
           "그거", "그게", "이거", "이게", "저거", "그건", "어떻게", "됐어", "됐어요", "뭐", "뭐야", "뭐였지", "말이야",
           "그래서", "근데", "그럼", "혹시", "좀", "다시", "아까", "이제", "그", "이", "저", "어", "음", "있어", "없어",
           "했어", "할까", "알려줘", "어때", "어디", "언제", "누구", "왜"}


@dataclass
class Hit:
    note: Note
    score: float  # fused score in (0, 1]: 1 = ranked first by both keyword and vector search
    similarity: float | None = None  # cosine similarity to the query, when the vector search saw it
    keyword_score: float = 0.0
    via: str | None = None  # for expansion hits: the id of the hit whose link or session brought it in
    signals: dict[str, int] = field(default_factory=dict)  # signal name -> rank (0-based) in that list
    repeats: int = 0  # lower-ranked notes with the very same words, folded into this hit
    # the passages of a long entry that matched (passage_rank.py), in the entry's order; [] = the whole note
    passages: list[Passage] = field(default_factory=list)
    updates: bool = False  # an expansion hit that states a newer value of what `via` shows (typed link)

    def to_json(self, backlinks: list[str] | None = None, **extra) -> dict:
        matched = [{"index": p.index, "text": p.text, "dates": [d.to_json() for d in p.dates]} for p in self.passages]
        return self.note.to_json(backlinks, score=round(self.score, 4),
                                 similarity=None if self.similarity is None else round(self.similarity, 4),
                                 via=self.via, updates=self.updates, repeats=self.repeats, entry_id=self.note.id,
                                 passages=matched, **extra)


@dataclass
class Signal:
    """One ranked list to fuse: (note, score) best first, and how much a rank in it weighs."""

    name: str  # "vector" | "keywords" | "enriched-vector" | "enriched-keywords"
    ranked: list[tuple[Note, float]]
    weight: float = 1.0


def fuse_signals(signals: list[Signal], k: int) -> list[Hit]:
    """Weighted reciprocal-rank fusion, scaled so that rank 1 in every non-empty list scores 1.0."""
    used = [s for s in signals if s.ranked and s.weight > 0]
    total = sum(s.weight for s in used) or 1.0
    hits: dict[str, Hit] = {}
    for signal in used:
        for rank, (note, value) in enumerate(signal.ranked):
            hit = hits.setdefault(note.id, Hit(note, 0.0))
            if signal.name == "vector":
                hit.similarity = value
            elif signal.name == "keywords":
                hit.keyword_score = value
            hit.signals[signal.name] = rank
            hit.score += signal.weight * (RRF_K + 1) / (RRF_K + rank + 1) / total
    return sorted(hits.values(), key=lambda h: (-h.score, h.note.at))[:k]


BM25_K1, BM25_B = 1.2, 0.75  # the usual constants (LanceDB's full-text index uses the same)


def bm25_ranked(docs: Sequence[tuple[Note, list[str]]], terms: list[str], k: int) -> list[tuple[Note, float]]:
    """Top-k notes by BM25 of `terms` over their own term lists, with these notes' own statistics. A search
    inside a person scope ranks this way: which words are rare among *their* notes decides, whatever the
    rest of a big store says about them."""
    if not docs or not terms:
        return []
    scores = bm25_scores([d for _, d in docs], terms)
    out = [(note, score) for (note, _), score in zip(docs, scores) if score > 0]
    out.sort(key=lambda pair: (pair[1], pair[0].at), reverse=True)  # a tie: the newer note first
    return out[:k]


def bm25_scores(docs: Sequence[list[str]], terms: list[str]) -> list[float]:
    """BM25 of `terms` for each document (a list of terms), with these documents' own statistics."""
    wanted = list(dict.fromkeys(terms))
    if not docs or not wanted:
        return [0.0] * len(docs)
    lengths = [len(d) for d in docs]
    average = sum(lengths) / len(docs) or 1.0
    counts = [Counter(t for t in d if t in wanted) for d in docs]
    df = Counter(t for c in counts for t in c)
    idf = {t: math.log(1 + (len(docs) - df[t] + 0.5) / (df[t] + 0.5)) for t in wanted}
    out = []
    for tf, length in zip(counts, lengths):
        norm = BM25_K1 * (1 - BM25_B + BM25_B * length / average)
        out.append(sum(idf[t] * f * (BM25_K1 + 1) / (f + norm) for t, f in tf.items()))
    return out


def same_words(text: str) -> str:
    """The key under which two notes say the very same thing (case and spacing aside)."""
    return " ".join(text.split()).casefold()


def fold_repeats(hits: list[Hit]) -> list[Hit]:
    """One hit per text: a note whose words repeat a better-ranked hit's is folded into it and counted.
    Ten copies of one line ("What are you reading?" in ten chats) would fill the page and say nothing
    new; folded, the next distinct notes get their places."""
    first: dict[str, Hit] = {}
    out = []
    for hit in hits:
        key = same_words(hit.note.content)
        if key in first:
            first[key].repeats += 1
            continue
        first[key] = hit
        out.append(hit)
    return out


def fuse(vector_ranked: list[tuple[Note, float]], keyword_ranked: list[tuple[Note, float]], k: int,
         use_vector: bool = True, use_keywords: bool = True) -> list[Hit]:
    """Plain hybrid: RRF of one vector list and one keyword list."""
    return fuse_signals([Signal("vector", vector_ranked if use_vector else []),
                         Signal("keywords", keyword_ranked if use_keywords else [])], k)


def smooth_by_session(hits: list[Hit], windows: dict[str, list[Note]], weights: Sequence[float]) -> list[Hit]:
    """Each chat turn gains weights[d-1] x the best score among the turns d places away in its session.

    In a conversation the words of a question and of its answer are split over adjacent turns: the turn
    that names the topic ranks, the turn that answers it does not. Neighbours that were not hits enter
    with the score they inherit. Scores stay in (0, 1]: the sum is divided by 1 + sum(weights)."""
    if not weights or not any(weights):
        return hits
    score = {h.note.id: h.score for h in hits}
    out: dict[str, Hit] = {h.note.id: h for h in hits}
    gained: dict[str, float] = {}
    for hit in hits:
        for neighbour in windows.get(hit.note.id, []):
            distance = abs(neighbour.seq - hit.note.seq)
            if 1 <= distance <= len(weights):
                share = weights[distance - 1] * hit.score
                if share > gained.get(neighbour.id, 0.0):
                    gained[neighbour.id] = share
                    out.setdefault(neighbour.id, Hit(neighbour, 0.0))
    scale = 1.0 + sum(weights)
    for note_id, hit in out.items():
        hit.score = (score.get(note_id, 0.0) + gained.get(note_id, 0.0)) / scale
    return sorted(out.values(), key=lambda h: (-h.score, h.note.at))


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
        for match in WORD.finditer(text.lower()):
            word = match.group()
            if word in KEYWORD_STOP_WORDS or word in _FILLER:
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


def render_for_context(note: Note, passages: list[Passage] | None = None) -> str:
    """How a note appears in an answer prompt (also what the budget counts). The day is written out
    ("8 May 2023") and relative dates in the text are resolved from it ("yesterday = 7 May 2023"): a
    small model copies a date well and computes one badly. A long entry shows only `passages` (those
    that matched), joined by " … ", each with its dates."""
    korean = bool(re.search("[\uac00-\ud7a3]", note.content))
    try:
        when = f"{day_text(date.fromisoformat(note.at[:10]), korean)} {note.at[11:16]}".strip()
    except ValueError:
        when = note.at[:16]
    line = f"[{note.short_id}] {when}"
    if note.speaker:
        line += f" {note.speaker}:"
    text = " … ".join(one_line(p.text) for p in passages) if passages else one_line(note.content)
    line += f" {text}"
    if note.context and not passages:
        line += f" ({one_line(note.context)})"
    dated = dated_phrases(text, note.at)
    if dated and dated not in note.context:  # construction already put it in the context
        line += f" [{dated}]"
    newer = sorted({entry_id_of(u["by"])[:8] for u in note.updated_by})  # supersede.py: a newer value exists
    if newer:
        line += f" [updated later by {', '.join(newer)}]"
    return line


def render_hit(hit: Hit) -> str:
    return render_for_context(hit.note, hit.passages)


def expand(hits: list[Hit], neighbours_of: Callable[[Note], list[Note]], budget_tokens: int | None,
           follow_links: bool = True, session_of: Callable[[Note], list[Note]] | None = None,
           passages_of: Callable[[Note], list[Passage]] | None = None,
           newer_of: Callable[[Hit], list[Hit]] | None = None) -> list[Hit]:
    """Each hit in rank order, followed at once by its session turns (`session_of`: the ±2 turns of a chat,
    the best expansion measured on LoCoMo) and by the passages that update what it shows (`newer_of`: an
    outdated value is not shown alone); after all the hits, each hit's linked notes (`neighbours_of`),
    which never displace a direct hit. Every note once; stop at the budget. A neighbour that is itself a
    hit keeps its own place and score; a long neighbour brings only `passages_of` it, unless its hit names
    its passages already."""
    out: list[Hit] = []
    seen: set[str] = set()
    used = 0

    def take(hit: Hit) -> bool:
        nonlocal used
        if hit.note.id in seen:
            return True
        if hit.via is not None and passages_of is not None and not hit.passages:
            hit.passages = passages_of(hit.note)
        cost = estimate_tokens(render_hit(hit)) if budget_tokens is not None else 0  # no budget: free
        if budget_tokens is not None and out and used + cost > budget_tokens:
            return False  # a long note may not fit while a shorter later one does
        seen.add(hit.note.id)
        used += cost
        out.append(hit)
        return True

    direct = []
    for hit in hits:
        if take(hit):
            direct.append(hit)
            for turn in session_of(hit.note) if session_of else []:
                take(Hit(turn, 0.0, via=hit.note.id))
            for newer in newer_of(hit) if newer_of else []:
                take(newer)
    if follow_links:
        for hit in direct:
            for neighbour in neighbours_of(hit.note):
                take(Hit(neighbour, 0.0, via=hit.note.id))
    return out
