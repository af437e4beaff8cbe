"""Which retrieved journal notes hold the answer, by words and by meaning (#26).

A note's relevance to a question is the share of the question's subject terms it contains (Korean by
substring, so "무릎" meets "무릎이"; English by word start, so "finish" meets "finished"; a Korean word
also in Latin letters, so "onbiseo" meets "온비서") plus its embedding's cosine to the question, rescaled
from e5's band for unrelated-to-close text (0.75-0.9) to 0-1. Within a note, the sentence that covers
most terms (then the longest) is the one an answer quotes.
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable
from dataclasses import dataclass, field
from functools import lru_cache

from ..core.models import Note
from ..core.text import nfc, romanise, sentences
from ..core.words import korean_verb_stem, regular_stem, verb_forms
from .questions import Question

COSINE_BAND = (0.75, 0.9)  # e5-small: unrelated text scores ~0.75, close paraphrases above 0.9
COSINE_WEIGHT = 1.0
# e5 scores a Korean note lower for an English question (and back): added to such a note's cosine, so
# that a note in the other language can be the best evidence (and "not recorded" is not decided on it)
CROSS_LANGUAGE_OFFSET = 0.03
# A note's cosine to a text (the question, or one of its terms): each note's stored raw-words vector
# against one query embedding.
Cosines = Callable[[str, list[Note]], list[float]]


@dataclass
class Evidence:
    """One note's relevance to a question."""

    note: Note
    words: float  # weighted share of the subject terms it contains
    cosine: float  # its vector's cosine to the question
    found: set[str] = field(default_factory=set)

    @property
    def score(self) -> float:
        low, high = COSINE_BAND
        return self.words + COSINE_WEIGHT * min(1.0, max(0.0, (self.cosine - low) / (high - low)))


def loose(latin: str) -> str:
    """A Latin spelling with the sounds that romanisations of Korean write differently made one:
    "Jisoo" and "지수" (jisu), "Jungmin" and "정민" (jeongmin), "Hyunwoo" and "현우" (hyeonu)."""
    out = latin.lower()
    for old, new in (("eo", "u"), ("oo", "u"), ("wu", "u"), ("ee", "i"), ("ae", "e")):
        out = out.replace(old, new)
    return out


def loanword(romanised: str) -> str:
    """A loanword's Hangul, romanised, as its Latin spelling may be: "r" for "l", "yu" for "u", "ngg"
    for "ng" ("듀오링고", dyuoringgo -> duolingo). Only Hangul gets it, so "reading" never meets "lead"."""
    for old, new in (("r", "l"), ("ngg", "ng"), ("yu", "u")):
        romanised = romanised.replace(old, new)
    return romanised


def forms(text: str) -> str:
    """The text lower-cased, then its Latin words and its Hangul words (romanised) in `loose` spelling,
    so "Onbiseo" meets "온비서" and "Jisoo" meets "지수"."""
    text = nfc(text).lower()
    latin = " ".join(loose(w) for w in re.findall(r"[a-z]+", text))
    words = re.findall(r"[\uac00-\ud7a3]+", text)
    hangul = [loose(romanise(w)) for w in words]
    loans = [loanword(w) for w in hangul if loanword(w) != w]
    # as romanised, too: `loose` can join a name to its particle ("오사카에서", osakaeseo -> osakesu)
    plain = [romanise(w) for w in words if loose(romanise(w)) != romanise(w)]
    return f"{text} {latin} {' '.join(hangul)} {' '.join(loans)} {' '.join(plain)}"


def english_stem(term: str) -> str:
    """"shoes" -> "shoe", "learning" -> "learn", "moved" -> "mov": matched at a word's start."""
    for tail in ("ing", "ed", "es", "s"):
        if len(term) > len(tail) + (1 if tail == "s" else 2) and term.endswith(tail):
            return term[: -len(tail)]
    return term


# a particle may take a second one after it: "차에서는", "집에도", "회사로는"
_SECOND_TAIL = "는|도|만|의|은"
_ONE_SYLLABLE_TAIL = "에서|에게|한테|으로|이랑|까지|부터|처럼|보다|하고|에|이|가|을|를|은|는|도|만|의|와|과|랑|로|들"


def has_term(term: str, text_forms: str) -> bool:
    """Whether a subject term occurs in a text's `forms` (a Korean term also in Latin letters)."""
    if re.search("[\uac00-\ud7a3]", term):
        latin = loose(romanise(term))
        if len(term) == 1:  # one syllable is a word only as one: "차에 탔다", not "차례"
            tails = f"(?:{_ONE_SYLLABLE_TAIL})?(?:{_SECOND_TAIL})?"
            return re.search(rf"(?<![\uac00-\ud7a3]){term}{tails}(?![\uac00-\ud7a3])", text_forms) is not None
        return term in text_forms or _starts_word(latin, text_forms) or _starts_word(loanword(latin), text_forms)
    stem = english_stem(term)
    return _starts_word(stem, text_forms) or (stem.isalpha() and _starts_word(loose(stem), text_forms))


def _starts_word(piece: str, text_forms: str) -> bool:
    return len(piece) > 1 and re.search(rf"(?<![0-9a-z]){re.escape(piece)}", text_forms) is not None


def mentions(question: Question, term: str, text_forms: str) -> bool:
    """Whether a text's `forms` hold a term of the question, as asked or in the other language: by its
    stem (an English verb's other forms, "running" -> run, ran; a Korean verb's stem, "달려" -> 달리기, 달렸다)."""
    return any(has_term(spelling, text_forms) or any(re.search(rf"(?<![0-9a-z]){form}(?![a-z])", text_forms)
                                                     for form in _other_forms(spelling))
               or _same_verb(verb_of(question, spelling), text_forms)
               for spelling in question.spellings(term))


def verb_of(question: Question, spelling: str) -> str:
    """The Korean verb stem a term is matched by: one of two syllables or more ("달리", "이사하"); a one-syllable
    verb ("받", "가", "사") is in most entries, and names what is asked only when the question asks nothing else
    ("뭐 샀어?", "어디 갔었지?")."""
    stem = question.stems.get(spelling) or korean_verb_stem(spelling)
    return stem if len(stem) >= 2 or len(question.terms) == 1 else ""


def _other_forms(word: str) -> tuple[str, ...]:
    """An English word's other forms: an irregular verb's ("gave" -> give, given), and its regular stem's
    ("running" -> run, ran)."""
    stem = regular_stem(word)
    return tuple(f for f in dict.fromkeys((*verb_forms(word), stem, *verb_forms(stem))) if f != word and f.isalpha())


def _same_verb(stem: str, text_forms: str) -> bool:
    """Whether a text writes a Korean verb of this stem in any form."""
    return bool(stem) and stem in _verb_stems(text_forms)


@lru_cache(maxsize=8192)
def _verb_stems(text_forms: str) -> frozenset[str]:
    return frozenset(korean_verb_stem(w) for w in re.findall(r"[\uac00-\ud7a3]+", text_forms)) - {""}


def rank(question: Question, notes: list[Note], cosines: Cosines) -> list[Evidence]:
    """Every note's evidence for `question`, best first (ties: the newer note). A term found in many of
    the notes (the project every note names) weighs less than one found in few (what is asked about);
    the model's keywords and context count as the note's words too (they may name it in the other
    language)."""
    if not notes:
        return []
    korean = question.language == "Korean"
    similarity = [cosine + (CROSS_LANGUAGE_OFFSET if bool(re.search("[\uac00-\ud7a3]", n.content)) != korean
                            else 0.0) for n, cosine in zip(notes, cosines(question.text, notes))]
    texts = [forms(f"{n.content} {n.enrichment_text()}") for n in notes]
    found = [{t for t in question.terms if mentions(question, t, text)} for text in texts]
    weight = {t: math.log(1 + len(notes) / (1 + sum(t in f for f in found))) for t in question.terms}
    total = sum(weight.values()) or 1.0
    shares = [sum(weight[t] for t in terms) / total for terms in found]
    out = [Evidence(note, share, cosine, terms)
           for note, cosine, terms, share in zip(notes, similarity, found, shares)]
    return sorted(out, key=lambda e: (-e.score, -_stamp(e.note.at)))


def _stamp(at: str) -> float:
    digits = re.sub(r"\D", "", at)[:14]
    return float(digits or 0)


def best_sentence(note: Note, terms: list[str]) -> str:
    """The note's sentence with most subject terms (then the first)."""
    pieces = [s.strip() for s in sentences(note.content) if s.strip()] or [note.content.strip()]

    def key(index: int) -> tuple[int, int]:
        text = forms(pieces[index])
        return sum(has_term(t, text) for t in terms), -index

    return pieces[max(range(len(pieces)), key=key)]
