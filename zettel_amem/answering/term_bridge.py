"""A question's subject words in the journal's other language, found among the journal's own words (#26).

A Korean/English journal answers an English question from a Korean note ("What breed is my dog?" ->
"…강아지를 입양했다. 이름은 보리, 두 살 진돗개 믹스") only if "dog" can meet "강아지". The bundled 0.5B
model translated single words badly ("dog" -> "고양", "엄마" -> "father"), so the bridge is the
multilingual embedder instead, used as in bilingual lexicon induction: the candidates are the words of
the retrieved notes in the other language, scored by CSLS (twice the cosine, less each side's mean
cosine to its 10 nearest words on the other side, so "hub" words close to everything — "사용자",
"yeouido" — do not win), and a candidate is kept only when the translation goes back: among the
question-language words of the notes and the term, the candidate's nearest is the term, or the term
is second within `BACK_MARGIN` of the first (a near-synonym: "강아지" -> "puppy", then "dog").
English month names and Korean "N월" are matched by the calendar, not by the embedder (e5 puts
"November" next to "내년"), family words by a short table (`words.KIN`: in a journal of long entries the
embedder missed "mom" -> "엄마"). On the 75-entry bench journal this turned "rehab" into "재활", "씹었"
into "chewed" and "물리치료사" into "physio", and left "cat", "gym" and "혈액형" untranslated.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from functools import lru_cache

import numpy as np

from ..core.models import Note
from ..core.text import romanise, sound_key
from ..core.words import KO_QUESTION_WORDS, STOP_WORDS, kin_group, korean_stem, subject_terms
from .evidence import forms, has_term, loanword, loose

NEIGHBOURS = 10  # CSLS: a word's hubness is its mean cosine to this many nearest words on the other side
# a pair scoring below this (CSLS) was mostly a hub word ("place", "order"): not kept (tune half: flat
# from 0 to 0.03)
MIN_SCORE = 0.02
BACK_MARGIN = 0.02  # the term may be the candidate's second-nearest word, this close to the first (tune half:
# 0.01 lost "rehab" -> "재활" to "rehabilitation"; flat from 0.015 to 0.05)
# Search bridges by the embedder only when each language has this many words among the notes it read: with
# two notes, "knee" found "달리기" (a test's journal); names, months and family words are bridged always.
SEARCH_VOCABULARY = 4 * NEIGHBOURS
SOUND_LETTERS = 4  # a name matched by its sound key only from this many letters ("Lee" meets nothing)
MONTHS = ("january february march april may june july august september october november december").split()

Embed = Callable[[list[str]], np.ndarray]  # words -> unit vectors (one row each)


def is_korean(word: str) -> bool:
    return bool(re.search("[\uac00-\ud7a3]", word))


def vocabulary(notes: list[Note]) -> tuple[list[str], list[str]]:
    """The notes' Korean stems (two syllables or more) and English words (three letters or more), from
    their text and the keywords and tags the model gave them; question words and stop words left out,
    and English names (words never written in lower case: "Kang", "Yeouido"), which the embedder puts
    near any Korean word and which meet their Hangul spelling by romanisation instead (evidence.py)."""
    korean, english, lower = set(), set(), set()
    for note in notes:
        text = " ".join([note.content, *note.keywords, *note.tags])
        for word in re.findall(r"[\uac00-\ud7a3]+", text):
            stem = korean_stem(word)
            if len(stem) >= 2 and stem not in KO_QUESTION_WORDS:
                korean.add(stem)
        for word in re.findall(r"[A-Za-z][A-Za-z'-]+", text):
            low = word.lower()
            if len(low) >= 3 and low not in STOP_WORDS:
                english.add(low)
                if word == low:
                    lower.add(low)
    return sorted(korean), sorted(english & lower)


def bridgeable(term: str, question: str, other_forms: str, own_words: list[str]) -> bool:
    """A word worth translating: not a number, not one letter pair ("km", "pm"), not a word the notes
    in the other language already hold as written or romanised (a name: "Mina" meets "민아"), and not
    a capitalised name the journal never writes ("Tokyo" would become "일본"; "Dad" is written)."""
    if re.search(r"\d", term) or (not is_korean(term) and len(term) < 3) or has_term(term, other_forms):
        return False
    capitalised = not is_korean(term) and re.search(rf"\b{re.escape(term[0].upper() + term[1:])}", question)
    return not capitalised or term in own_words


def month_bridge(term: str) -> list[str]:
    """ "november" <-> "11월": months by the calendar."""
    if term.lower() in MONTHS:
        return [f"{MONTHS.index(term.lower()) + 1}월"]
    match = re.fullmatch(r"(\d{1,2})월", term)
    if match and 1 <= int(match.group(1)) <= 12:
        return [MONTHS[int(match.group(1)) - 1]]
    return []


def kin_bridge(term: str) -> list[str]:
    """ "mom" <-> "엄마", "어머니": a family word's words in the other language (`words.KIN`)."""
    return [w for w in kin_group(term) if is_korean(w) != is_korean(term)]


def hubness(rows: np.ndarray, columns: np.ndarray) -> np.ndarray:
    """Each row's mean cosine to its NEIGHBOURS nearest columns."""
    if not len(columns):
        return np.zeros(len(rows), dtype=np.float32)
    sims = rows @ columns.T
    k = min(NEIGHBOURS, sims.shape[1])
    return np.sort(sims, axis=1)[:, -k:].mean(axis=1)


def bridge_terms(terms: list[str], question: str, notes: list[Note], embed: Embed) -> dict[str, list[str]]:
    """term -> its words in the notes' other language (module docstring): a month or family word by its
    table, else the embedder's word pair, and a name as the notes spell it (`name_spellings`) besides;
    terms without one are left out."""
    return with_names(translated(terms, question, notes, embed), name_spellings(terms, notes))


def with_names(words: dict[str, list[str]], names: dict[str, list[str]]) -> dict[str, list[str]]:
    """Each term's translations, then its name spellings, once each."""
    return {t: list(dict.fromkeys(words.get(t, []) + names.get(t, []))) for t in {**words, **names}}


def translated(terms: list[str], question: str, notes: list[Note], embed: Embed) -> dict[str, list[str]]:
    """term -> its word in the notes' other language by table or by the embedder (CSLS, module docstring)."""
    out = {t: month_bridge(t) or kin_bridge(t) for t in terms if month_bridge(t) or kin_bridge(t)}
    korean_question = bool(re.search("[\uac00-\ud7a3]", question))
    korean_words, english_common = vocabulary(notes)
    written = {w.lower() for n in notes for w in re.findall(r"[A-Za-z]+", n.content)}
    source, target = (korean_words, english_common) if korean_question else (english_common, korean_words)
    other_forms = " ".join(forms(n.content) for n in notes if is_korean(n.content) != korean_question)
    asked = [t for t in terms if t not in out and is_korean(t) == korean_question and t not in target
             and bridgeable(t, question, other_forms, sorted(written))]
    if not asked or not target:
        return out
    source = [w for w in source if w not in asked]
    vectors = embed(asked + source + target)
    terms_v, source_v = vectors[: len(asked)], vectors[len(asked): len(asked) + len(source)]
    target_v = vectors[len(asked) + len(source):]
    for index, term in enumerate(asked):
        back_side = np.vstack([source_v, terms_v[index: index + 1]])  # the term is the last row
        target_hub, back_hub = hubness(target_v, back_side), hubness(back_side, target_v)
        scores = 2 * (target_v @ terms_v[index]) - target_hub - back_hub[-1]
        best = int(np.argmax(scores))
        back = 2 * (back_side @ target_v[best]) - back_hub - target_hub[best]
        order = np.argsort(-back)
        first, second = int(order[0]), int(order[1]) if len(order) > 1 else -1
        last = len(back_side) - 1
        if scores[best] < MIN_SCORE:
            continue
        if first == last or (second == last and back[first] - back[last] <= BACK_MARGIN):
            out[term] = [target[best]]
    return out


def name_spellings(terms: list[str], notes: list[Note]) -> dict[str, list[str]]:
    """The question's names as the notes write them in the other script: "하은" -> "haeun", "junho" ->
    "준호" (romanised and `loose`d alike; three letters at least, so short syllables do not collide), and
    a name as it sounds ("마르코" -> "marco", "seoraksan" -> "설악산": `sound_key`, four letters at least,
    only capitalised Latin words, so a Korean word does not meet an English one)."""
    wanted: dict[str, str] = {}  # a key a note's word may have -> the term it spells
    for term in terms:
        sound = f"~{sound_key(term)}" if len(sound_key(term)) >= SOUND_LETTERS else ""
        if is_korean(term):
            key = loose(romanise(korean_stem(term)))
            keys = [key, loanword(key), sound]
        else:
            keys = [loose(term), sound] if len(term) >= 3 else []
        wanted.update({k: term for k in keys if k and k not in wanted})
    found: dict[str, set[str]] = {}
    for note in notes:
        for word in re.findall(r"[A-Za-z]{3,}", note.content):
            for key in _latin_keys(word):
                if key in wanted and is_korean(wanted[key]):
                    found.setdefault(wanted[key], set()).add(word.lower())
        for word in re.findall(r"[\uac00-\ud7a3]{2,}", note.content):
            stem, keys = _hangul_keys(word)
            for key in keys:
                if key in wanted and not is_korean(wanted[key]):
                    found.setdefault(wanted[key], set()).add(stem)
    return {t: sorted(found[t]) for t in terms if t in found}


@lru_cache(maxsize=1 << 16)
def _latin_keys(word: str) -> tuple[str, ...]:
    """A Latin word's keys: its `loose` spelling and, capitalised (a name), its sound."""
    sound = sound_key(word) if word[0].isupper() else ""
    return (loose(word), f"~{sound}") if len(sound) >= SOUND_LETTERS else (loose(word),)


@lru_cache(maxsize=1 << 16)
def _hangul_keys(word: str) -> tuple[str, tuple[str, ...]]:
    """A Hangul word's stem and its keys: romanised and `loose`d, as a loanword's Latin, and its sound."""
    stem = korean_stem(word)
    roman = loose(romanise(stem))
    return stem, (roman, loanword(roman), f"~{sound_key(stem)}")


def search_terms(question: str, notes: list[Note], embed: Embed) -> list[str]:
    """Words a search adds to its keyword lists so that a question meets the notes written in the other
    language: its subject terms' translations among the notes' words (`bridge_terms`) and its names
    as the notes spell them (`name_spellings`). None when the question and the notes share one language."""
    if len({is_korean(n.content) for n in notes} | {is_korean(question)}) < 2:
        return []
    terms = [t.lower() for t in subject_terms(question)]
    korean, english = vocabulary(notes)
    if min(len(korean), len(english)) >= SEARCH_VOCABULARY:  # CSLS over a handful of words pairs anything
        out = [w for words in bridge_terms(terms, question, notes, embed).values() for w in words]
    else:
        out = [w for t in terms for w in month_bridge(t) + kin_bridge(t)]
    return list(dict.fromkeys(out + [w for words in name_spellings(terms, notes).values() for w in words]))
