"""What a journal question asks (#26), read from cue words in Korean and English, without a model.

- **kind**: "now" (the current state: 지금, 요즘, now, currently), "when" (언제, 며칠, when, what/which + a time unit),
  "why" (왜, 이유, why, how come), "count" (몇 번, how many times), "story" (what happened with, 어떻게 됐어: what
  became of something, told across entries) or "plain".
- **terms**: the subject words, with question words and Korean particles/endings stripped ("데이터베이스를"
  -> "데이터베이스", "이사했어" -> "이사"), for matching evidence by words and deciding "not recorded"; a
  question with no subject word asks with its verb ("where did I go?", "뭐 샀어?": `words.asking_verbs`).
  Each Korean term keeps the stem of the verb it was written as ("달려" -> 달리), so "달리기" and "달렸다" meet it.
- **day**: the one day a question names ("yesterday", "어제", "2026-01-10", "last sunday", "1월 11일"), found as
  passages find their dates (`date_mentions`) and read as `zk on` reads a day (`dates.day_range`); its words are
  no subject term. A question about a day is answered from that day's entries (answer.py).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from ..core import dates
from ..core.date_mentions import date_mentions
from ..core.errors import ZkError
from ..core.prompts import language_of
from ..core.text import nfc
from ..core.words import asking_verbs, korean_verb_stem, subject_terms

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
# The question kinds and their cues, in the order `kind_of` tries them: the first match decides, so a
# question with two cues ("why … now?") takes the earlier row's kind. A new kind is a row here (placed
# before the rows whose cues it should win over) and an answerer in journal_answer.ANSWERERS.
KINDS: tuple[tuple[str, re.Pattern[str]], ...] = (
    ("why", _WHY),
    ("when", _WHEN),
    ("count", _COUNT),
    ("story", _STORY),
    ("now", _NOW),
)
PLAIN = "plain"  # no cue: the best note's best sentence


@dataclass
class Question:
    """A question as the journal answerer reads it (module docstring)."""

    text: str
    kind: str
    language: str
    terms: list[str] = field(default_factory=list)
    # each term in the other language of the journal ("dog" -> ["강아지"]), when a translator gave them
    alternates: dict[str, list[str]] = field(default_factory=dict)
    # a Korean term's verb stem, from the word the question wrote ("먹었어" -> 먹; "달려" -> 달리)
    stems: dict[str, str] = field(default_factory=dict)
    day: str = ""  # the ISO day the question asks about (`asked_day`), else ""
    day_phrase: str = ""  # ... as the question wrote it

    def spellings(self, term: str) -> list[str]:
        return [term, *self.alternates.get(term, [])]

    def with_alternates(self, alternates: dict[str, list[str]]) -> Question:
        """This question matching each term also by its translations."""
        self.alternates = {t: alternates.get(t, []) for t in self.terms}
        return self


def kind_of(text: str) -> str:
    """The kind of a question: the first row of `KINDS` whose cue the question holds, else "plain"."""
    return next((name for name, cue in KINDS if cue.search(text)), PLAIN)


def analyse(text: str) -> Question:
    """Kind, language, subject terms (the verb asked with when there is no subject word), their verb stems,
    and the day asked about."""
    text = nfc(text).strip()
    kind = kind_of(text)
    phrase, day = asked_day(text) if kind != "when" else ("", "")  # "when" asks a day; its dates are its event's
    rest = text.replace(phrase, " ") if phrase else text
    terms = subject_terms(rest) or asking_verbs(rest)
    return Question(text, kind, language_of(text), terms, stems=verb_stems(rest, terms), day=day, day_phrase=phrase)


def verb_stems(text: str, terms: list[str]) -> dict[str, str]:
    """Each Korean term's verb stem, read from the word of `text` it came from ("먹었어" gave the term "먹")."""
    out: dict[str, str] = {}
    for word in re.findall(r"[\uac00-\ud7a3]+", text):
        stem = korean_verb_stem(word)
        term = next((t for t in terms if t == word or (word.startswith(t) and t not in out)), "")
        if stem and term:
            out.setdefault(term, stem)
    return out


_YEAR_BEFORE = re.compile(r"(\d{4})\s*년\s*$")
_YEAR_AFTER = re.compile(r"^,?\s*\d{4}\b")


def asked_day(text: str) -> tuple[str, str]:
    """(the phrase, its ISO day) of the one day `text` names, or ("", ""): a phrase passages read as one day
    (`date_mentions`, from now), with a year written beside it, read by `zk on`'s reader (`dates.day_range`);
    a phrase the two read as different days, or two days named, is no day asked."""
    now = dates.now()
    found: dict[str, str] = {}
    for mention in date_mentions(text, now.isoformat()):
        at = text.find(mention.phrase)
        if mention.start != mention.end or at < 0:
            continue
        before, after = _YEAR_BEFORE.search(text[:at]), _YEAR_AFTER.match(text[at + len(mention.phrase):])
        phrase = (before.group(0) if before else "") + mention.phrase + (after.group(0) if after else "")
        try:
            day = dates.day_range(phrase, now)[0].isoformat()
        except ZkError:
            continue
        if day[5:] == mention.start[5:] and (before or after or day == mention.start):
            found[phrase] = day
    if len(set(found.values())) != 1:
        return "", ""
    phrase = max(found, key=len)
    return phrase, found[phrase]
