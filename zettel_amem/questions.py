"""What a journal question asks (#26), read from cue words in Korean and English, without a model.

- **kind**: "now" (the current state: 지금, 요즘, now, currently), "when" (언제, 며칠, when, what date),
  "why" (왜, 이유, why, how come), "count" (몇 번, how many times), "list" (뭐뭐, 누구누구, "which
  databases", "who have been"), "multi" (two questions joined: "who … and what …", "…였고 …") or "plain".
- **terms**: the subject words, with question words and Korean particles/endings stripped ("데이터베이스를"
  -> "데이터베이스", "이사했어" -> "이사"), for matching evidence by words and deciding "not recorded".
- **parts**: a multi-part question cut into its questions, each analysed on its own.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from .prompts import language_of
from .text import nfc

_NOW = re.compile(r"지금|요즘|현재|이제|\b(now|currently|current|these days|nowadays|at the moment)\b", re.I)
_WHEN = re.compile(r"언제|며칠|몇\s*월|날짜|\b(when|what date|what day|which day|which date)\b", re.I)
_WHY = re.compile(r"왜|이유|어째서|\b(why|how come|what made|reason)\b", re.I)
_COUNT = re.compile(r"몇\s*(번|회|차례|군데|권)|\bhow many (times|books|places|cities)\b|\bhow often\b", re.I)
_LIST = re.compile(r"뭐뭐|누구누구|어디\s*어디|무엇무엇|어떤\s*\S+들|\S+들[을은이]\s|"
                   r"\b(who have been|which \w+s\b|what \w+s have|have i\b.*\?|has \w+ used)", re.I)
# Two questions in one: "… and what/who …", "… and how much …", "…였고 …", "…와/과 …는?".
_MULTI_EN = re.compile(r"\s*(?:,\s*)?\band\b\s+(?=(?:what|who|where|when|how|which|with what|why)\b)", re.I)
_MULTI_KO = re.compile(r"(?<=[였했이였])고\s+|(?<=[가-힣])(?:과|와)\s+(?=[가-힣]+[은는]\?)")

_EN_QUESTION_WORDS = {
    "what", "who", "whom", "am", "whose", "where", "when", "why", "which", "how", "much", "many", "does", "did", "do",
    "is", "was", "are", "were", "have", "has", "had", "i", "me", "my", "mine", "the", "a", "an", "of", "to", "in",
    "on", "at", "for", "and", "or", "it", "its", "this", "that", "now", "currently", "current", "these", "days",
    "date", "day", "time", "times", "go", "get", "got", "use", "used", "using", "be", "been", "from", "with",
    "still", "ever", "year", "there", "they", "she", "he", "her", "his", "their", "you", "your", "can", "could",
    "would", "should", "will", "reason", "come", "made", "make", "after", "before", "then", "first"}
_KO_QUESTION_WORDS = {
    "뭐", "뭐야", "뭐였어", "무엇", "무슨", "누구", "누구야", "어디", "어디야", "언제", "언제야", "왜", "어떤",
    "어느", "몇", "지금", "요즘", "현재", "이제", "내", "나", "제", "저", "그", "그때", "얼마나", "어떻게", "했어",
    "했지", "있어", "있지", "하고", "해", "야", "이야", "거", "건", "것", "올해", "처음", "다", "뭐뭐", "누구누구",
    "했었어", "됐어", "주로", "뭘", "명", "번", "가장", "얼마", "정도"}
# past-tense endings in general ("씹었어" -> "씹"), not whole verbs of the benchmark's questions
VERB_TAILS = ["었어", "았어", "었었어", "았었어"]
# Korean endings and particles, longest first: what is left is the word's stem ("이사했어" -> "이사").
_KO_TAILS = sorted([
    "했었어", "하셨어", "했어요", "했어", "했지", "했나", "했니", "한다", "하는", "해서", "하고", "하기", "됐어",
    "되었어", "였어", "였고", "이었어", "이야", "이에요", "인가", "이었", "였", "에서", "으로", "에게", "한테",
    "께서", "까지", "부터", "이랑", "랑", "하고", "처럼", "보다", "은", "는", "이", "가", "을", "를", "의", "에",
    "로", "와", "과", "도", "만", "야", "어", "고", "님", "들", "써", "줬어", "갔어", "샀어", "했", "셨어", "걸린다고",
    "라고", "다고", "이라고"] + VERB_TAILS,
    key=len, reverse=True)

_KO_TAIL_SET = set(_KO_TAILS)
KO_QUESTION_WORDS = frozenset(_KO_QUESTION_WORDS)
# English words that name no subject: question words and the commonest function words
STOP_WORDS = frozenset(_EN_QUESTION_WORDS | {
    "with", "but", "not", "very", "more", "into", "about", "over", "them", "our", "out", "off", "too", "all",
    "any", "just", "only", "than", "while", "also", "some", "here", "again", "still", "yet", "much", "who"})


@dataclass
class Question:
    """A question as the journal answerer reads it (module docstring)."""

    text: str
    kind: str
    language: str
    terms: list[str] = field(default_factory=list)
    parts: list[Question] = field(default_factory=list)
    # each term in the other language of the journal ("dog" -> ["강아지"]), when a translator gave them
    alternates: dict[str, list[str]] = field(default_factory=dict)

    def spellings(self, term: str) -> list[str]:
        return [term, *self.alternates.get(term, [])]

    def with_alternates(self, alternates: dict[str, list[str]]) -> Question:
        """This question (and its parts) matching each term also by its translations."""
        self.alternates = {t: alternates.get(t, []) for t in self.terms}
        for part in self.parts:
            part.with_alternates(alternates)
        return self


def kind_of(text: str) -> str:
    """The kind of one question (not "multi": `analyse` finds the parts)."""
    if _WHY.search(text):
        return "why"
    if _WHEN.search(text):
        return "when"
    if _COUNT.search(text):
        return "count"
    if _NOW.search(text):
        return "now"
    if _LIST.search(text + " "):
        return "list"
    return "plain"


def korean_stem(word: str) -> str:
    """`word` without one trailing particle or verb ending (a stem of at least one syllable)."""
    for tail in _KO_TAILS:  # one tail: "데이터베이스를" -> "데이터베이스"; "이사했어" -> "이사"
        if word.endswith(tail) and len(word) > len(tail):
            return word[: -len(tail)]
    return word


def subject_terms(text: str) -> list[str]:
    """The words a question is about: no question words, Korean particles and endings stripped."""
    out: list[str] = []
    for word in re.findall(r"[0-9A-Za-z][0-9A-Za-z.'’-]*[0-9A-Za-z]|[0-9A-Za-z]|[\uac00-\ud7a3]+", nfc(text)):
        low = word.lower().removesuffix("'s").removesuffix("’s")
        if low in _EN_QUESTION_WORDS or word in _KO_QUESTION_WORDS:
            continue
        if "\uac00" <= word[0] <= "\ud7a3":
            if word in _KO_TAIL_SET:  # a particle after a Latin word: "8km에서", "DB는"
                continue
            low = korean_stem(word)
            if low in _KO_QUESTION_WORDS or len(low) < 1:
                continue
        if low not in out:
            out.append(low)
    return out


def split_parts(text: str) -> list[str]:
    """A question cut where a second question starts ("Who gave me X and what does she do now?")."""
    pieces = _MULTI_EN.split(text) if re.search(r"[A-Za-z]", text) and not re.search("[가-힣]", text) \
        else _MULTI_KO.split(text)
    pieces = [p.strip(" ,?") for p in pieces if p and p.strip(" ,?")]
    return pieces if len(pieces) > 1 else [text]


def analyse(text: str) -> Question:
    """Kind, language, subject terms and (for a multi-part question) the parts. A part that names no
    subject of its own ("and what does she do now?") borrows the first part's terms."""
    text = nfc(text).strip()
    pieces = split_parts(text)
    language = language_of(text)
    if len(pieces) == 1:
        return Question(text, kind_of(text), language, subject_terms(text))
    parts = [Question(p, kind_of(p), language, subject_terms(p)) for p in pieces]
    for part in parts[1:]:
        if len(part.terms) < 2:
            part.terms = list(dict.fromkeys(parts[0].terms + part.terms))
    return Question(text, "multi", language, subject_terms(text), parts)
