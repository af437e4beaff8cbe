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
# Only an entry's first this many characters are cut (a diary page is ~300-3,000): each passage is one more
# embedding, and a pasted 100,000-character document must not cost minutes (its words are still searched).
PASSAGE_TEXT_LIMIT = 6_000

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
    word = re.search(r"([A-Za-z.]+)\.$", text[:end])
    if word and (word.group(1).lower() in _ABBREVIATIONS or len(word.group(1)) == 1):
        return True
    return False


def sentence_spans(text: str) -> list[tuple[int, int]]:
    """(start, end) of each sentence of `text`, whitespace trimmed, in order."""
    cuts = {m.end() for m in _END.finditer(text) if not _is_abbreviation(text, m.end())
            and not (m.group() != "\n" and re.match(r"\s+[a-z]", text[m.end():]))}  # "Yes… mostly."
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
    groups = _groups(text, sentence_spans(text[:PASSAGE_TEXT_LIMIT]))
    if len(groups) < 2:
        return []
    return [Passage(i, text[a:b], a, date_mentions(text[a:b], at)) for i, (a, b) in enumerate(groups)]


def passages_to_json(passages: list[Passage]) -> str:
    return json.dumps([p.to_json() for p in passages], ensure_ascii=False)


def passages_from_json(raw: str | None) -> list[Passage]:
    return [Passage.from_json(p) for p in json.loads(raw)] if raw else []


def wants_passages(note: Note) -> bool:
    """A journal entry (written by the user, not a chat turn) is cut into passages; a turn is one line."""
    return note.kind != "turn" and not note.speaker


def attach_passages(notes: list[Note], embed: Callable[[list[str]], Any]) -> list[Note]:
    """Give each note the passages of its current text, with their embeddings (one `embed` call for all);
    passages still matching the text keep theirs. Returns the notes whose passages were (re)made."""
    changed, todo = [], []
    for note in notes:
        fresh = make_passages(note.content, note.at) if wants_passages(note) else []
        old = note.passages
        if old is not None and [p.text for p in old] == [p.text for p in fresh] and \
                all(p.vector is not None for p in old):
            continue
        note.passages = fresh
        changed.append(note)
        todo += fresh
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
