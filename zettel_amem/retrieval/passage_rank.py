"""Entries ranked by their best passages, and the passages that matched.

Search first ranks whole notes (retrieve.py). A page-long entry's embedding averages all its subjects and
its BM25 length norm dilutes a rare name, so here the candidates' passages (passages.py) are ranked
themselves, by cosine to the query and by BM25 with the passages' own statistics (a name in few passages
outweighs a word in many: "마츠다 선생님" over "선생님"). Each candidate enters two more ranked lists at its
best passage's place, fused with the note lists (`fuse_signals`), and keeps the passages that matched for
display, the token budget and the answer. A short note or a chat turn is its own single passage.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from functools import lru_cache
from typing import Any

from ..core.passages import Passage, row_passages
from ..core.text import keyword_terms
from .retrieve import RRF_K, Hit, Signal, bm25_scores

# e5 scores a passage in the other language than the question lower than one in its own for the same
# meaning, by a gap that varies with the question (0.03 to 0.1). Where both languages have enough
# candidate passages, each language's cosines are put on one scale (`per_language_scale`): the bulk of
# either language is unrelated to the question, so its spread is the yardstick. With fewer, the fixed
# offset of evidence.py is added back.
CROSS_LANGUAGE_OFFSET = 0.03
MIN_PER_LANGUAGE = 12
_HANGUL = re.compile("[\uac00-\ud7a3]")
_LATIN = re.compile("[A-Za-z]")
# A second passage of the same entry is shown too when it scores this close to the best one (with RRF:
# ranked right after it in both lists).
SECOND_PASSAGE_SHARE = 0.98


def _units(hits: Sequence[Hit], rows: dict[str, dict[str, Any]]) -> list[tuple[int, Passage | None, str, Any]]:
    """(hit index, passage or None for a whole note, its text, its vector) for every candidate. A passage
    past an entry's embedded ones (passages.EMBEDDED_CHARS) has no vector: it ranks by its words."""
    out = []
    for index, hit in enumerate(hits):
        row = rows.get(hit.note.id) or {}
        passages = row_passages(row)
        if passages and passages[0].vector is not None:
            for passage in passages:
                out.append((index, passage, passage.text, passage.vector))
        else:
            out.append((index, None, hit.note.content, row.get("raw_vector")))
    return out


def passage_signals(query: str, query_vector, hits: Sequence[Hit], rows: dict[str, dict[str, Any]],
                    weight: float, bridged: Sequence[str] = ()) -> tuple[list[Signal], dict[str, list[Passage]]]:
    """Two ranked lists of the candidate notes, each at its best passage's place (by cosine, by BM25),
    and each long entry's matched passages (best, and a second close to it), in the entry's order."""
    import numpy as np

    units = _units(hits, rows)
    if not units:
        return [], {}
    query_vector = np.asarray(query_vector, dtype=np.float32)
    cosines = per_language_scale([float(np.asarray(v, dtype=np.float32) @ query_vector) if v is not None else None
                                  for _, _, _, v in units],
                                 [mostly_korean(text) for _, _, text, _ in units], mostly_korean(query))
    keyword = bm25_scores([keyword_terms(text) for _, _, text, _ in units], keyword_terms(query) + list(bridged))
    by_cosine = sorted(range(len(units)), key=lambda u: -cosines[u])
    by_keyword = sorted((u for u in range(len(units)) if keyword[u] > 0), key=lambda u: -keyword[u])
    fused = [0.0] * len(units)
    for order in (by_cosine, by_keyword):
        for rank, unit in enumerate(order):
            fused[unit] += 1.0 / (RRF_K + rank + 1)
    signals = [Signal("passage-vector", _best_per_note(hits, units, by_cosine, cosines), weight),
               Signal("passage-keywords", _best_per_note(hits, units, by_keyword, keyword), weight)]
    return signals, _matched(hits, units, fused)


def per_language_scale(cosines: list[float | None], korean: list[bool], query_korean: bool) -> list[float]:
    """The cosines ranked across languages: each language's as standard scores among its own (both
    languages with at least MIN_PER_LANGUAGE), else the other language's raised by the fixed offset. One
    language only: unchanged order. A unit without a vector ranks last."""
    import numpy as np

    known = [i for i, c in enumerate(cosines) if c is not None]
    groups = {lang: [i for i in known if korean[i] == lang] for lang in (True, False)}
    out = [-1.0 if c is None else c + (CROSS_LANGUAGE_OFFSET if korean[i] != query_korean else 0.0)
           for i, c in enumerate(cosines)]
    if min(len(g) for g in groups.values()) < MIN_PER_LANGUAGE:
        return out
    for group in groups.values():
        values = np.asarray([cosines[i] for i in group], dtype=np.float64)
        spread = float(values.std()) or 1.0
        for i, value in zip(group, values):
            out[i] = float((value - values.mean()) / spread)
    lowest = min(out[i] for i in known)
    return [out[i] if cosines[i] is not None else lowest - 1.0 for i in range(len(out))]


def by_language(signal: Signal, query: str) -> Signal:
    """A note-level vector list re-ordered with its cosines on one scale across languages
    (`per_language_scale`); the values shown stay the cosines."""
    korean = [mostly_korean(note.content) for note, _ in signal.ranked]
    if len(set(korean)) < 2:
        return signal
    scaled = per_language_scale([value for _, value in signal.ranked], korean, mostly_korean(query))
    order = sorted(range(len(scaled)), key=lambda i: -scaled[i])
    return Signal(signal.name, [signal.ranked[i] for i in order], signal.weight)


def both_languages(hits: list[Hit], k: int, query: str, reserve: int) -> list[Hit]:
    """The hits with at least `reserve` of the best in the query's other language among the first `k`,
    when the pool holds both: e5 and BM25 both favour the query's own language, so an English question
    about a Korean entry ranked it below k (the same question in Korean found it). The places are taken
    from the lowest-ranked hits in the query's language; the order is otherwise kept."""
    korean = mostly_korean(query)
    other = [i for i, h in enumerate(hits) if mostly_korean(h.note.content) != korean]
    missing = [i for i in other[:reserve] if i >= k]
    if not missing or len(other) == len(hits):
        return hits
    own = [i for i in range(min(k, len(hits))) if i not in other]
    first = set(range(min(k, len(hits)))) - set(own[len(own) - len(missing):]) | set(missing)
    return [hits[i] for i in sorted(first)] + [h for i, h in enumerate(hits) if i not in first]


@lru_cache(maxsize=16384)  # asked of the same passages again and again (2,000 times in one `zk ask`)
def mostly_korean(text: str) -> bool:
    """Written mostly in Korean: a syllable block counts as about three Latin letters."""
    return 3 * len(_HANGUL.findall(text)) >= len(_LATIN.findall(text)) > 0 or (
        bool(_HANGUL.search(text)) and not _LATIN.search(text))


def _best_per_note(hits: Sequence[Hit], units: list, order: list[int], values: list[float]) -> list:
    """(note, its best unit's value) in the order of each note's best unit."""
    seen: set[int] = set()
    out = []
    for unit in order:
        index = units[unit][0]
        if index not in seen:
            seen.add(index)
            out.append((hits[index].note, values[unit]))
    return out


def _matched(hits: Sequence[Hit], units: list, fused: list[float]) -> dict[str, list[Passage]]:
    """Each long entry's best passage, and its second best when close, in the entry's order."""
    per_note: dict[int, list[tuple[float, Passage]]] = {}
    for unit, (index, passage, _, _) in enumerate(units):
        if passage is not None:
            per_note.setdefault(index, []).append((fused[unit], passage))
    out = {}
    for index, scored in per_note.items():
        scored.sort(key=lambda pair: -pair[0])
        chosen = [scored[0][1]] + [p for s, p in scored[1:2] if s >= SECOND_PASSAGE_SHARE * scored[0][0]]
        out[hits[index].note.id] = sorted(chosen, key=lambda p: p.index)
    return out


def best_passages(note_passages: list[Passage], query: str) -> list[Passage]:
    """For a linked long entry (no vectors at hand): its passage sharing most of the query's words."""
    if not note_passages:
        return []
    terms = set(keyword_terms(query))
    best = max(note_passages, key=lambda p: (len(terms & set(keyword_terms(p.text))), -p.index))
    return [best]
