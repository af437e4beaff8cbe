"""What `zk ask` shows for a journal question (#52): the journal's own dated sentences that answer, a
headline, and how sure it is.

The answerers (journal_answer.py) choose which passage answers, or that none does; this module turns that
choice and the ranked evidence into a view a person can check at a glance:

- **headline**: one sentence quoted from the journal with its day and entry id ("when": led by the day it
  tells); for a count, the number and a one-line lead; for a question no entry answers, "not
  recorded", with the closest sentences shown as closest.
- **supporting**: up to `SUPPORTING` more sentences, each whole, dated, with its entry id, other entries
  first, only sentences on what is asked (holding a word of the question, or from a passage standing `NEAR`
  the best: a line off the subject is no support, so there may be none), ordered by what is asked: "now"
  newest first with an older value on the same subject marked, "when", counts and stories in date order,
  the rest best first.
- a question about a day with nothing else asked ("what did I do yesterday?") lists that day's entries
  (`day_view`), as `zk on` does.
- the headline and the supporting sentences fit in `VIEW_CHARS`.

Sentences are ranked by the question's words each holds, a rare word (a name) over a common one, weighted
as `evidence.rank` weighs passages, plus the standing of their passage (its words and meaning).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field, replace

from ..core.date_mentions import date_mentions
from ..core.models import Note
from ..core.passages import entry_id_of, split_sentences
from ..core.text import clip
from .date_guard import note_dates
from .evidence import Evidence, forms, mentions
from .questions import Question

VIEW_CHARS = 700  # the headline and the supporting sentences together
SUPPORTING = 4
SENTENCE_CHARS = 240  # a longer sentence is clipped (a pasted paragraph without full stops)
# The headline quotes its sentence with the neighbours of its passage that fit this many characters (the
# value asked is often the next sentence: "새 자전거를 샀다. 색은 남색"); a supporting line, with those fitting
# `SUPPORT_QUOTE`.
HEADLINE_QUOTE = 200
SUPPORT_QUOTE = 120
POOL = 40  # the best passages whose sentences are ranked
SENTENCE_WEIGHT = 1.0  # a sentence's own share of the question's words, added to its passage's score
DATE_ORDER = {"when", "count", "story"}
LEAD_KINDS = {"count", "story"}  # a lead (how many, which days), then one line per occasion
PER_ENTRY = 2  # supporting sentences from one entry (the headline's included): other entries first
# A supporting sentence that holds no word of the question is shown only from a passage scoring this near the
# best (in meaning, or in the other language's words): below it, a line is whatever ranked next.
NEAR = 0.8


@dataclass
class Line:
    """One sentence quoted from an entry: its text, the entry's time and id, the passage it came from, and
    the dates it writes made absolute (as written, ISO day), other than the entry's own day."""

    text: str
    at: str
    entry_id: str
    passage_id: str
    dates: list[tuple[str, str]] = field(default_factory=list)
    older: bool = False

    @property
    def day(self) -> str:
        return self.at[:10]

    def told(self) -> str:
        """The one day the sentence dates ("어제" in an entry of 3 May: 2026-05-02), else its entry's day."""
        days = {iso for _, iso in self.dates}
        return days.pop() if len(days) == 1 else self.day

    def shown(self) -> str:
        """The line as printed: day, entry id, the sentence, its dates made absolute, "older" when it is."""
        said = "; ".join(f"{written} = {iso}" for written, iso in self.dates)
        return (f"{self.day} [{self.entry_id[:8]}] {self.text}" + (f" ({said})" if said else "")
                + (" (older)" if self.older else ""))

    def to_json(self) -> dict:
        return {"text": self.text, "at": self.at, "entry_id": self.entry_id, "passage_id": self.passage_id,
                "dates": [{"written": w, "day": d} for w, d in self.dates], "older": self.older}


@dataclass
class View:
    """The answer as shown: `kind` "quote" (the headline is `line`), "lead" (a count or a story) or "declined"
    (the supporting lines are then the closest sentences); `confidence` "sure", "likely" or "unsure"."""

    kind: str
    headline: str
    line: Line | None = None
    supporting: list[Line] = field(default_factory=list)
    confidence: str = "unsure"
    # what the confidence is read from (sureness.py): the headline's share of the question's words, its
    # lead over the best passage of another entry, whether the ranking's first passage is the one quoted
    signals: dict[str, float] = field(default_factory=dict)

    def text(self) -> str:
        return "\n".join([self.headline, *(f"- {line.shown()}" for line in self.supporting)])

    def to_json(self) -> dict:
        return {"kind": self.kind, "headline": self.headline, "confidence": self.confidence, "signals": self.signals,
                "line": self.line.to_json() if self.line else None,
                "supporting": [line.to_json() for line in self.supporting]}


@dataclass
class Sentence:
    """A sentence of a ranked passage and its score for the question."""

    item: Evidence
    text: str
    share: float  # the weighted share of the question's words it holds itself
    score: float
    shown: str = ""  # what is quoted: the sentence, with neighbours of its passage where they fit (`widened`)

    def line(self) -> Line:
        note = self.item.note
        own = note.at[:10]
        quoted = self.shown or self.text
        dates = [(written, day.isoformat()) for written, day in note_dates(note)
                 if written in quoted and day.isoformat() != own]
        return Line(clip(" ".join(quoted.split()), SENTENCE_CHARS), note.at, entry_id_of(note.id), note.id,
                    list(dict.fromkeys(dates)))


def widened(pieces: list[str], index: int, limit: int) -> str:
    """The sentence `pieces[index]` with the sentences after it, then before it, of its passage, while the
    quote stays within `limit` characters: "새 자전거를 샀다." is answered by the next sentence, "색은 남색"."""
    first = last = index
    for _ in range(len(pieces)):
        wider = [(a, b) for a, b in ((first, last + 1), (first - 1, last)) if 0 <= a and b < len(pieces)
                 and len(" ".join(" ".join(p.split()) for p in pieces[a:b + 1])) <= limit]
        if not wider:
            break
        first, last = wider[0]
    return " ".join(" ".join(p.split()) for p in pieces[first:last + 1])


def term_weights(question: Question, evidence: list[Evidence]) -> dict[str, float]:
    """Each question term's weight: rare among the passages read (a name) over common (what every passage
    names), as `evidence.rank` weighs them."""
    count = len(evidence)
    return {t: math.log(1 + count / (1 + sum(t in e.found for e in evidence))) for t in question.terms}


def held_share(question: Question, text: str, weights: dict[str, float]) -> float:
    total = sum(weights.values()) or 1.0
    shape = forms(text)
    return sum(w for t, w in weights.items() if mentions(question, t, shape)) / total


def asked_share(question: Question, text: str, weights: dict[str, float]) -> float:
    """`held_share` with the question's words as asked (and their stems), not their translations: a word
    met only through the term bridge's guess ("달려" -> an English note's "way") is not a sure match."""
    return held_share(replace(question, alternates={}), text, weights)


def ranked_sentences(question: Question, evidence: list[Evidence]) -> list[Sentence]:
    """The sentences of the best `POOL` passages, best first, each once (a passage read with its neighbour
    shares sentences with the next one)."""
    weights = term_weights(question, evidence)
    seen: set[tuple[str, str]] = set()
    out = []
    for item in evidence[:POOL]:
        pieces = [p for p in split_sentences(item.note.content) if p.strip()]
        for index, text in enumerate(pieces):
            key = (entry_id_of(item.note.id), " ".join(text.split()))
            if key in seen:
                continue
            seen.add(key)
            share = held_share(question, text, weights)
            out.append(Sentence(item, text, share, item.score + SENTENCE_WEIGHT * share,
                                widened(pieces, index, SUPPORT_QUOTE)))
    return sorted(out, key=lambda s: -s.score)


def best_of(question: Question, item: Evidence, weights: dict[str, float], limit: int = HEADLINE_QUOTE) -> Sentence:
    """The sentence of a chosen passage that holds most of the question (weighted: a rare word first), then
    the earliest."""
    pieces = [p for p in split_sentences(item.note.content) if p.strip()] or [item.note.content]
    shares = [held_share(question, p, weights) for p in pieces]
    best = max(range(len(pieces)), key=lambda i: (round(shares[i], 6), -i))
    return Sentence(item, pieces[best], shares[best], item.score + SENTENCE_WEIGHT * shares[best],
                    widened(pieces, best, limit))


def relevant(sentence: Sentence, best: float) -> bool:
    """Whether a sentence is on what is asked: it holds a word of the question (by its stem, or in the other
    language), or its passage stands `NEAR` the best passage."""
    return sentence.share > 0 or sentence.item.score >= NEAR * best


def supporting(headline: list[Sentence], sentences: list[Sentence], budget: int) -> list[Sentence]:
    """Up to `SUPPORTING` sentences besides the headline's, best first, at most `PER_ENTRY` from one entry
    (the headline's counts), within `budget` characters, each on what is asked (`relevant`)."""
    best = max((s.item.score for s in headline + sentences), default=0.0)
    sentences = [s for s in sentences if relevant(s, best)]
    per_entry: dict[str, int] = {}
    for sentence in headline:
        per_entry[entry_id_of(sentence.item.note.id)] = per_entry.get(entry_id_of(sentence.item.note.id), 0) + 1
    quoted = " | ".join(" ".join((s.shown or s.text).split()) for s in headline)
    out: list[Sentence] = []
    for sentence in sentences:
        entry = entry_id_of(sentence.item.note.id)
        cost = len(sentence.line().shown()) + 2
        if len(out) >= SUPPORTING or cost > budget or per_entry.get(entry, 0) >= PER_ENTRY \
                or " ".join(sentence.text.split()) in quoted:
            continue
        out.append(sentence)
        quoted += " | " + " ".join((sentence.shown or sentence.text).split())
        per_entry[entry] = per_entry.get(entry, 0) + 1
        budget -= cost
    return out


@dataclass
class Pick:
    """What an answerer chose: the passages (ids; the answer's first), the day a "when" answer tells, a lead
    for an answer that is no one sentence (a count) and the sentence the rule read (quoted as the headline
    when given)."""

    cited: list[str]
    day: str = ""
    lead: str = ""
    sentence: str = ""


def chosen_sentence(question: Question, item: Evidence, pick: Pick, weights: dict[str, float],
                    limit: int = HEADLINE_QUOTE) -> Sentence:
    """The sentence quoted for a chosen passage: the one the rule read, when it is the passage's, else the
    passage's best (`best_of`)."""
    pieces = [p for p in split_sentences(item.note.content) if p.strip()]
    said = " ".join(pick.sentence.split())
    index = next((i for i, p in enumerate(pieces) if " ".join(p.split()) in said or said in " ".join(p.split())), -1)
    if said and pick.cited and item.note.id == pick.cited[0] and index >= 0:
        share = held_share(question, pieces[index], weights)
        return Sentence(item, pieces[index], share, item.score + SENTENCE_WEIGHT * share,
                        widened(pieces, index, limit))
    return best_of(question, item, weights, limit)


def arrange(kind: str, head: Line | None, lines: list[Line], same: set[str] | None = None) -> list[Line]:
    """The supporting lines in the order the question asks: "now" newest first, one older than the
    headline's and on its subject (its passage id in `same`) marked older; dates for "when", counts and
    stories; else as ranked."""
    if kind == "now" and head is not None:
        for line in lines:
            line.older = line.at < head.at and line.passage_id in (same or set())
        return sorted(lines, key=lambda line: line.at, reverse=True)
    if kind in DATE_ORDER:
        return sorted(lines, key=lambda line: (line.told(), line.at))
    return lines


def answer_view(question: Question, evidence: list[Evidence], pick: Pick) -> View:
    """The view of an answer: the chosen passages' sentences first (the headline, then the occasions of a
    count), then the best sentences of other entries."""
    weights = term_weights(question, evidence)
    by_id = {e.note.id: e for e in evidence}
    leads = bool(pick.lead) or question.kind in LEAD_KINDS  # several lines answer: each quoted shorter
    chosen = [chosen_sentence(question, by_id[i], pick, weights, SUPPORT_QUOTE if leads else HEADLINE_QUOTE)
              for i in pick.cited if i in by_id]
    sentences = ranked_sentences(question, evidence)
    if question.kind == "story":  # what became of it: the best sentence on it of each entry, by date
        chosen = story(sentences)
    if not chosen and sentences and not pick.lead:  # a count of none lists no day (its closest line follows)
        chosen = sentences[:1]
    if leads:
        return lead_view(question, pick, chosen, sentences, evidence)
    head = chosen[0].line()
    headline = (f"{pick.day} — " if pick.day and pick.day != head.day else "") + head.shown()
    budget = VIEW_CHARS - len(headline) - sum(len(s.line().shown()) + 2 for s in chosen[1:SUPPORTING + 1])
    extra = chosen[1:SUPPORTING + 1] + supporting(chosen, sentences, budget)
    subject = chosen[0].item.found  # the question's words the headline's passage holds: what it is about
    same = {s.item.note.id for s in extra if s.item.found & subject}
    return View("quote", headline, head, arrange(question.kind, head, [s.line() for s in extra[:SUPPORTING]], same),
                signals=signals(chosen[0], evidence, asked_share(question, chosen[0].text, weights)))


def signals(head: Sentence, evidence: list[Evidence], asked: float | None = None) -> dict[str, float]:
    """What sureness is read from: the quoted sentence's weighted share of the question's words (and of them
    as asked, untranslated: `asked_share`), its passage's, the passage's lead over the best passage of another
    entry, its cosine, and whether it is the ranking's first."""
    entry = entry_id_of(head.item.note.id)
    others = [e.score for e in evidence if entry_id_of(e.note.id) != entry]
    return {"sentence_share": round(head.share, 3),
            "asked_share": round(head.share if asked is None else asked, 3),
            "passage_share": round(head.item.words, 3),
            "best_share": round(max((e.words for e in evidence), default=0.0), 3),
            "lead": round(head.item.score - max(others, default=0.0), 3), "cosine": round(head.item.cosine, 3),
            "first": float(bool(evidence) and head.item is evidence[0])}


def lead_view(question: Question, pick: Pick, chosen: list[Sentence], sentences: list[Sentence],
              evidence: list[Evidence]) -> View:
    """A count, a story or another answer with a lead: a one-line lead (the number, the days), then the chosen
    passages' sentences (the best first, as many as fit; one per occasion) shown in date order, then, room
    left, the best of other entries."""
    lines = [s.line() for s in chosen]
    days = sorted(dict.fromkeys(line.told() for line in lines))
    lead = pick.lead or (f"{len(lines)}개 기록" if question.language == "Korean" else entries(len(lines)))
    if question.kind in LEAD_KINDS and lines:
        lead += ": " + ", ".join(days)
    shown, budget = [], VIEW_CHARS - len(lead)
    for line in lines:
        if len(shown) < SUPPORTING and len(line.shown()) + 2 <= budget:
            shown.append(line)
            budget -= len(line.shown()) + 2
    if len(shown) < SUPPORTING and (question.kind not in LEAD_KINDS or not chosen):
        shown += [s.line() for s in supporting(chosen, sentences, budget)][:SUPPORTING - len(shown)]
    shown.sort(key=lambda line: (line.told(), line.at))
    return View("lead", lead, None, shown, signals=signals(chosen[0], evidence) if chosen else {})


def entries(count: int) -> str:
    return f"{count} entr{'y' if count == 1 else 'ies'}"


def day_view(question: Question, notes: list[Note]) -> View:
    """The entries of the day asked (`question.day`), as `zk on` lists them, oldest first: each entry's first
    sentence that dates that day (a later entry's "어제 …"), else its first; one entry is quoted as the
    headline, several under a lead naming how many. "sure" when every entry of the day is shown."""
    lines: dict[str, Line] = {}
    for note in sorted(notes, key=lambda n: n.at):  # stable: an entry's passages stay in order
        pieces = [p for p in split_sentences(note.content) if p.strip()] or [note.content]
        dating = [i for i, p in enumerate(pieces) if note.at[:10] != question.day and any(
            m.start == m.end == question.day for m in date_mentions(p, note.at))]
        first = dating[0] if dating else 0
        line = Sentence(Evidence(note, 0.0, 0.0), pieces[first], 0.0, 0.0, widened(pieces, first, SUPPORT_QUOTE)).line()
        lines.setdefault(line.entry_id, line)
    found = list(lines.values())
    if len(found) == 1:
        head = found[0]
        headline = (f"{question.day} — " if head.day != question.day else "") + head.shown()
        return View("quote", headline, head, [], confidence="sure", signals={"entries": 1.0})
    lead = f"{question.day}: " + (f"기록 {len(found)}개" if question.language == "Korean" else entries(len(found)))
    shown, budget = [], VIEW_CHARS - len(lead)
    for line in found:
        if len(shown) < SUPPORTING and len(line.shown()) + 2 <= budget:
            shown.append(line)
            budget -= len(line.shown()) + 2
    return View("lead", lead, None, shown, confidence="sure" if len(shown) == len(found) else "likely",
                signals={"entries": float(len(found)), "shown": float(len(shown))})


def story(sentences: list[Sentence]) -> list[Sentence]:
    """A story's lines: the best sentence of each entry that holds a word of the question, the best
    `SUPPORTING` entries (the view shows them by date)."""
    first: dict[str, Sentence] = {}
    for sentence in sentences:
        if sentence.share > 0:
            first.setdefault(entry_id_of(sentence.item.note.id), sentence)
    return list(first.values())[:SUPPORTING]


CLOSEST = 2  # a declined answer shows this many closest sentences


def declined_view(question: Question, evidence: list[Evidence], text: str) -> View:
    """"Not recorded", with the closest sentences shown as closest (a person can see what was near)."""
    sentences = ranked_sentences(question, evidence)
    closest, entries = [], set()
    found = max((e.words for e in evidence), default=0.0)
    for sentence in sentences:
        entry = entry_id_of(sentence.item.note.id)
        if entry not in entries and len(closest) < CLOSEST:
            closest.append(sentence.line())
            entries.add(entry)
    return View("declined", text, None, closest, signals={
        "passage_share": round(found, 3), "cosine": round(max((e.cosine for e in evidence), default=0.0), 3)})
