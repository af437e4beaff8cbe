"""An entry cut into passages: a sentence or a few short ones, each searched and quoted on its own.

A diary entry is a page on several subjects (the shift, the cat's check-up, a call with mum). As one
unit its embedding is an average of all of them, its budget cost is the whole page and an answer quotes
its start. The entry stays the unit a person writes, edits, versions and deletes; its passages are
derived from it at write time (`make_passages`) and stored beside it, each with the dates it writes made
absolute (date_mentions.py) and its own embedding. Search ranks entries by their best passages and
shows those; answers quote them.

Sentences are cut by rules (no registry library handles Korean and English in one text without a large
model): after . ! ? … and their closing quotes, at line breaks, and after a Korean plain past or present
ending ("했다", "간다") that is followed by more words without a full stop, as diaries often are. A dot
inside a number (3.5kg), an initial or a common abbreviation (Dr., e.g.) does not end a sentence.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from typing import Any

from .date_mentions import date_mentions
from .models import Note, Passage

# A sentence shorter than this joins the next one of its paragraph ("Long day." is no subject on its own).
MIN_PASSAGE_CHARS = 20
# Sentences are joined up to this length; a longer sentence stays whole (it is cut nowhere but at its end).
MAX_PASSAGE_CHARS = 240
# A note shorter than this is its own single passage (nothing is stored beside it).
SPLIT_FROM_CHARS = 120
# The whole entry is cut (up to the 100,000 characters `zk add` takes), but only the passages that start
# within its first this many characters get an embedding (a diary page is ~300-3,000): the embedder's cost
# grows with the text (the 1,201 passages of a 35,781-character entry took 20.9 s to embed on 2 shared cores,
# the 207 of its first 6,000 characters 4.6 s), and a pasted document must not cost minutes. The later
# passages are found by their words (BM25 over the passages).
EMBEDDED_CHARS = 6_000
# An older zk cut only an entry's first this many characters (`cut_short` finds the entries it left so).
FORMER_CUT_CHARS = 6_000

_END = re.compile(r"[.!?…。？！]+[\"'’”)\]」』]*(?=\s)|\n")
_ABBREVIATIONS = {"dr", "mr", "mrs", "ms", "prof", "st", "vs", "etc", "e.g", "i.e", "no", "jr", "sr", "approx"}


def _final_consonant(syllable: str) -> int:
    """The index of a Hangul syllable's final consonant (0: none; 4: ㄴ; 20: ㅆ)."""
    code = ord(syllable) - 0xAC00
    return code % 28 if 0 <= code < 11172 else -1


def _korean_breaks(text: str) -> list[int]:
    """Where a Korean sentence ends without a mark: "…병원에 갔다 엄마랑 통화했다" after "갔다". Only a
    past ("-었다", ㅆ before 다) or present ("-ㄴ다", "-는다") plain ending, or a polite one ("-어요",
    "-습니다"), followed by a space: "하다 보니" or "바다" are not endings."""
    out = []
    for match in re.finditer(r"([\uac00-\ud7a3])(다|요)(?=[ \t]+\S)", text):
        before = match.group(1)
        if match.group(2) == "다" and _final_consonant(before) not in (4, 20) and before != "니":
            continue
        if match.group(2) == "요" and before not in "어아에예죠":
            continue
        out.append(match.end())
    return out


def _is_abbreviation(text: str, end: int) -> bool:
    """Whether the mark ending at `end` closes an abbreviation, an initial or a number (not a sentence)."""
    if text[end - 1] != ".":
        return False
    start = end - 1  # the word before the dot, read backwards: a search over text[:end] made cutting quadratic
    while start > 0 and (text[start - 1] == "." or "a" <= text[start - 1] <= "z" or "A" <= text[start - 1] <= "Z"):
        start -= 1
    word = text[start:end - 1]
    return bool(word) and (word.lower() in _ABBREVIATIONS or len(word) == 1)


_LOWER_NEXT = re.compile(r"\s+[a-z]")


def sentence_spans(text: str) -> list[tuple[int, int]]:
    """(start, end) of each sentence of `text`, whitespace trimmed, in order."""
    cuts = {m.end() for m in _END.finditer(text) if not _is_abbreviation(text, m.end())
            and not (m.group() != "\n" and _LOWER_NEXT.match(text, m.end()))}  # "Yes… mostly."
    cuts.update(_korean_breaks(text))
    spans, start = [], 0
    for cut in sorted(cuts) + [len(text)]:
        piece = text[start:cut]
        if piece.strip():
            left = start + len(piece) - len(piece.lstrip())
            spans.append((left, start + len(piece.rstrip())))
        start = cut
    return spans


def split_sentences(text: str) -> list[str]:
    return [text[a:b] for a, b in sentence_spans(text)]


def _groups(text: str, spans: list[tuple[int, int]]) -> list[tuple[int, int]]:
    """Sentences joined into passages: a short sentence joins the next one in its paragraph, up to
    MAX_PASSAGE_CHARS; a paragraph break always ends a passage."""
    out: list[tuple[int, int]] = []
    for start, end in spans:
        if out:
            first, last = out[-1]
            same_paragraph = "\n\n" not in text[last:start] and "\n" not in text[last:start].strip(" \t")
            short = last - first < MIN_PASSAGE_CHARS or end - start < MIN_PASSAGE_CHARS // 2
            if same_paragraph and short and end - first <= MAX_PASSAGE_CHARS:
                out[-1] = (first, end)
                continue
        out.append((start, end))
    return out


def make_passages(text: str, at: str) -> list[Passage]:
    """The passages of an entry written at `at` (ISO), each with its dates resolved; [] for a short note
    (under SPLIT_FROM_CHARS, or one passage): the note itself is its only passage."""
    if len(text.strip()) < SPLIT_FROM_CHARS:
        return []
    groups = _groups(text, sentence_spans(text))
    if len(groups) < 2:
        return []
    return [Passage(i, text[a:b], a, date_mentions(text[a:b], at)) for i, (a, b) in enumerate(groups)]


def passages_to_json(passages: list[Passage]) -> str:
    return json.dumps([p.to_json() for p in passages], ensure_ascii=False)


def passages_from_json(raw: str | None) -> list[Passage]:
    return [Passage.from_json(p) for p in json.loads(raw)] if raw else []


def embedded(passage: Passage) -> bool:
    """Whether the passage has its own embedding (EMBEDDED_CHARS): those that do are the first ones."""
    return passage.start < EMBEDDED_CHARS


def passage_floats(passages: list[Passage] | None) -> list[float] | None:
    """The embedded passages' vectors end to end (what the store keeps), or None when one is missing (read
    without vectors)."""
    head = [p for p in passages or [] if embedded(p)]
    if not head or any(p.vector is None for p in head):
        return None
    return [float(x) for p in head for x in p.vector]


def row_passages(row: dict[str, Any]) -> list[Passage]:
    """A stored row's passages ("passages") with their vectors ("passage_vectors": the first passages', end
    to end, each as long as the row's raw vector; a store from before whole entries were cut has one for
    every passage). Passages past the embedded ones keep `vector` None."""
    passages = passages_from_json(row.get("passages"))
    flat = row.get("passage_vectors")
    if not passages or flat is None or len(flat) == 0:
        return passages
    raw = row.get("raw_vector") if row.get("raw_vector") is not None else row.get("vector")
    dim = len(raw) if raw is not None else len(flat) // len(passages) if len(flat) % len(passages) == 0 else 0
    if not dim or len(flat) % dim or len(flat) // dim > len(passages):
        return passages
    for number in range(len(flat) // dim):
        passages[number].vector = list(flat[number * dim:(number + 1) * dim])
    return passages


def nearness(vector: list[float], note: Note) -> float:
    """The best cosine (unit vectors: the dot product) of `vector` with the note's raw words or one of its
    embedded passages; -1 when it has no vector."""
    mine = [note.raw_vector, *(p.vector for p in note.passages or [])]
    return max((sum(x * y for x, y in zip(vector, v)) for v in mine if v), default=-1.0)


def cut_short(content: str, passages: list[Passage]) -> bool:
    """Whether stored passages stop before the entry's text ends (an older zk cut FORMER_CUT_CHARS only)."""
    return bool(passages) and passages[-1].start + len(passages[-1].text) < len(content.rstrip())


def wants_passages(note: Note) -> bool:
    """A journal entry (written by the user, not a chat turn) is cut into passages; a turn is one line."""
    return note.kind != "turn" and not note.speaker


def attach_passages(notes: list[Note], embed: Callable[[list[str]], Any]) -> list[Note]:
    """Give each note the passages of its current text, the first ones (`embedded`) with their embeddings
    (one `embed` call for all); passages still matching the text keep theirs, and a passage whose text an
    old one had keeps its vector (an edit, an entry cut again). Returns the notes whose passages were
    (re)made."""
    changed, todo = [], []
    for note in notes:
        fresh = make_passages(note.content, note.at) if wants_passages(note) else []
        old = note.passages
        if old is not None and [p.text for p in old] == [p.text for p in fresh] and \
                all(p.vector is not None for p in old if embedded(p)):
            continue
        known = {p.text: p.vector for p in old or [] if p.vector is not None}
        for passage in fresh:
            passage.vector = known.get(passage.text) if embedded(passage) else None
        note.passages = fresh
        changed.append(note)
        todo += [p for p in fresh if embedded(p) and p.vector is None]
    if todo:
        for passage, vector in zip(todo, embed([p.text for p in todo])):
            passage.vector = [float(x) for x in vector]
    return changed


def passage_id(note_id: str, index: int) -> str:
    return f"{note_id}-p{index}"


def entry_id_of(unit_id: str) -> str:
    """The entry a passage id (`passage_id`) or a plain note id belongs to."""
    return unit_id.split("-p", 1)[0]


def anchors(previous: Passage, passage: Passage, content: str, day: str) -> bool:
    """Whether `previous` dates what `passage` tells: a passage that writes no date of its own, right after
    one in the same paragraph that dates one day before the entry's own `day` ("어제 저녁 강변에서
    넘어졌다. 무릎이 까졌다."): a story's time holds until a new date is written. The passage is then read
    with it."""
    past = {d.start for d in previous.dates if d.start == d.end and d.start < day}  # "오늘" adds nothing
    same_paragraph = "\n" not in content[previous.start + len(previous.text):passage.start]
    return not passage.dates and len(past) == 1 and same_paragraph


def as_notes(notes: list[Note]) -> list[Note]:
    """Each long entry as one Note per passage (id `passage_id`, the entry's time and session, the passage's
    text, with the next passage of its paragraph and, where it dates it (`anchors`), the one before), a
    short note as itself: what answers read, so they quote the sentence that answers, never an entry's
    first characters."""
    from dataclasses import replace

    out = []
    for note in notes:
        if not note.passages:
            out.append(note)
            continue
        for passage, previous, following in zip(note.passages, [None, *note.passages[:-1]], [*note.passages[1:], None]):
            start, end = passage.start, passage.start + len(passage.text)
            if following is not None and "\n" not in note.content[end:following.start]:
                end = following.start + len(following.text)
            if previous is not None and anchors(previous, passage, note.content, note.at[:10]):
                start = previous.start
            text = note.content[start:end]
            unit = passage_id(note.id, passage.index)
            out.append(replace(note, id=unit, content=text, keywords=[], tags=[], context="", links=[], history=[],
                               vector=None, raw_vector=passage.vector, passages=[],
                               updated_by=[e for e in note.updated_by if e.get("passage") == unit]))
    return out
