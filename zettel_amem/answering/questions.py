"""What a journal question asks (#26), read from cue words in Korean and English, without a model.

- **kind**: "now" (the current state: 지금, 요즘, now, currently), "when" (언제, 며칠, when, what/which + a time unit),
  "why" (왜, 이유, why, how come), "count" (몇 번, how many times), "story" (what happened with, 어떻게 됐어: what
  became of something, told across entries), "change" (빠졌, lose, difference), "list"
  (뭐뭐, 누구누구, "which cafés", "who were there"), "multi" (two questions joined: "who … and what …",
  "…였고 …") or "plain".
- **terms**: the subject words, with question words and Korean particles/endings stripped ("데이터베이스를"
  -> "데이터베이스", "이사했어" -> "이사"), for matching evidence by words and deciding "not recorded".
- **parts**: a multi-part question cut into its questions, each analysed on its own.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from ..core.prompts import language_of
from ..core.text import nfc
from ..core.words import subject_terms

_NOW = re.compile(r"지금|요즘|현재|이제|\b(now|currently|current|these days|nowadays|at the moment)\b", re.I)
# "when" asks only where a question starts ("When did…", "…, and when did…"): "what did she give him when
# he left?" asks what, and "when he left" is its time.
_WHEN = re.compile(r"언제|며칠|몇\s*월|날짜|(?:무슨|어느|몇)\s?요일|(?:^|[,;:]\s*|\band\s+)when\b|"
                   r"\b(?:what|which)(?:'s|\s+(?:is|was))?\s+(?:the\s+)?(?:date|day|month|year)\b(?!\s+like\b)", re.I)
_WHY = re.compile(r"왜|이유|어째서|\b(why|how come|what made|reason)\b", re.I)
_COUNT = re.compile(r"몇\s*(번|회|차례|군데|권)|\bhow many (times|books|places|cities|of)\b|\bhow often\b", re.I)
# A story: what became of something over several entries ("what happened with my knee?", "이사는 어떻게 됐어?")
_STORY = re.compile(r"\bwhat(?:'s)? happened (?:with|to|about)\b|\bwhat(?:'s| is| was) (?:going on|new) with\b"
                    r"|\bhow did .+ (?:go|turn out|end)\b|\btell me about\b|\bthe story of\b"
                    r"|어떻게\s?(?:됐|되었|돼\s?가|되어\s?가|흘러|끝났|진행)|무슨 일이 있었|경과", re.I)
# A value's change between two times: "몇 킬로 늘었어?", "how much did it drop between …" (differences.py)
_CHANGE = re.compile(r"빠졌|늘었|줄었|차이|\b(lose|lost|gain(?:ed)?|difference|grow|grew|drop(?:ped)?)\b", re.I)
# A list: "뭐뭐", "which cafés", and a number of things asked for ("카페 두 곳은", "the two cafés")
_LIST = re.compile(r"뭐뭐|누구누구|어디\s*어디|무엇무엇|어떤\s*\S+들|\S+들[을은이]\s"
                   r"|(?<![가-힣])(두|세|네)\s?(곳|개|가지|명|군데)[은는이가을를]"
                   r"|\b(who (have|are|were)\b|which \w+s\b|what \w+s have|have i\b.*\?"
                   r"|the (two|three|four) \w+s\b)", re.I)
# The question kinds and their cues, in the order `kind_of` tries them: the first match decides, so a
# question with two cues ("why … now?") takes the earlier row's kind. A new kind is a row here (placed
# before the rows whose cues it should win over) and an answerer in journal_answer.ANSWERERS.
KINDS: tuple[tuple[str, re.Pattern[str]], ...] = (
    ("why", _WHY),
    ("when", _WHEN),
    ("count", _COUNT),
    ("story", _STORY),
    ("change", _CHANGE),
    ("now", _NOW),
    ("list", _LIST),
)
PLAIN = "plain"  # no cue: the best note's best sentence
# Two questions in one: "… and what/who …", "… and how much …", "…였고 …", "…와/과 …는?".
_MULTI_EN = re.compile(r"\s*(?:,\s*)?\band\b\s+(?=(?:what|who|where|when|how|which|with what|why)\b)", re.I)
_MULTI_KO = re.compile(r"(?<=[였했이였])고\s+|(?<=[가-힣])(?:과|와)\s+(?=[가-힣]+[은는]\?)")

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
    """The kind of one question (not "multi": `analyse` finds the parts): the first row of `KINDS` whose
    cue the question holds, else "plain"."""
    padded = text + " "  # the list cue "…들을 " ends in a space, which a question's last word lacks
    return next((name for name, cue in KINDS if cue.search(padded)), PLAIN)


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
