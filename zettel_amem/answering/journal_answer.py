"""Answers from a personal journal, extractive and time-aware (#26); the model writes no answer.

The bundled 0.5B model garbled journal answers even when search had found the right note (old values
for "what now?", today's date for "when?", a name from an unrelated note instead of "not recorded").
Here the answer is copied from the notes, chosen by what the question asks (questions.py):

- **now**: among the notes on the subject (within `NOW_SHARE` of the best evidence, holding the best
  note's rarest question term), the newest (the passages that update them by typed links are read too);
- **when**: the date of the note holding the event, or a date written in it made absolute from the
  note's timestamp ("3월 4일" in a February note, "어제" in a note of 29 August, "둘째 날" = the day
  before), as 2026-03-04; a near passage that dates the event outweighs a best one that dates nothing;
  a plan for a later month ("signed up for the race in October") gives way to that month's note on it;
- **how many <unit>**: the near-best note writing a number with that unit ("five days", "35명"), the
  one naming most of the question first;
- **why**: the best note, as for any kind with no answerer of its own;
- **count**: the passages on the subject, oldest first, with their dates, each occasion once (counting.py);
- **plain**: the best note's best sentence.
Every answer carries the note's date. A question whose key terms appear in none of the retrieved notes
and whose meaning is far from all of them is declined ("not recorded"), and so is a name, a price or an
age asked that no note on the subject gives.
`date_guard.guard` removes any date found in no note at the end.
`translate` (optional) gives the question's subject terms in the journal's other language, found among
the notes' own words by the embedder (term_bridge.py), so an English question finds a Korean note by its
words. No model writes or picks any part of the answer.
This path is used for notes written with `zk add` (no speaker); imported chats keep answer.py's path.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass, field

from ..core.date_mentions import date_mentions, tense
from ..core.errors import InvalidInput
from ..core.models import Note
from ..core.text import sentences
from .counting import answer_count, own_tops
from .date_guard import guard, note_dates
from .evidence import Cosines, Evidence, best_sentence, forms, mentions, rank
from .grammar import about_writer, retracted, someone_elses
from .questions import Question, analyse
from .reader import Reader
from .reading import day, korean, on_subject, other_language, planned_month, rarest_term, spelled
from .sureness import sureness
from .view import Pick, View, answer_view, day_view, declined_view

NOW_SHARE = 0.9  # notes scoring within this share of the best are "on the subject" for now/count/list
# ... and for "now", also every note with all the best note's subject words down to this share (the
# newest note naming the subject may be far in meaning: "what does Mina do now?"; tune half: flat 0.6-0.75)
NOW_WIDE = 0.7
WHEN_SHARE = 0.9  # for "when": a near-best note that writes a date wins over the best without one
WHEN_WIDE = 0.6  # a plan gives way to its month's note scoring this near the best (`fulfilled`)
DECLINE_COSINE = 0.86  # decline below this best cosine when no key term is found (tuned: tune split)
# Words that name no subject of their own: a question about "my cat's name" (a book's title) is about the cat.
GENERIC = {"name", "title", "제목", "called", "call", "go", "eat", "start", "started", "lessons", "lesson", "buy",
           "bought", "이름", "가", "먹", "시작", "샀", "했", "해", "번", "주", "thing", "things", "much", "kind"}
_NAME = re.compile(r"이름|제목|\b(name|named|called|title)\b", re.I)  # "what is X's name?" and a note that gives one
# ... or writes one in quotes: "동네 빵집 '밀밭'은", "a shop called “Crumb”", "'작은 숲의 집'이라고" (not "I'm … it's",
# nor words quoted as said: "'그만 와도 된다'고")
# ("called" after a person is a phone call: "we called Dad")
_GIVES_NAME = re.compile(r"이름|\b(name|named)\b|(?<!\bI )(?<!\bhe )(?<!\bshe )(?<!\bwe )(?<!\bthey )\bcalled\b"
                         r"|(?<![A-Za-z])['‘\"“](?:[^'’\"”\s]{2,20}|[^'’\"”\n,!?]{2,20}(?<![다냐요라자니까네죠지]))['’\"”](?![A-Za-z])"
                         r"|[『「][^』」]{1,30}[』」]", re.I)


# (terms, the question, the retrieved notes) -> term: its words in the notes' other language
Translate = Callable[[list[str], str, list[Note]], dict[str, list[str]]]


@dataclass
class JournalReply:
    """The headline, the passages it came from, how it was made ("extractive" or "declined"), why, and the
    whole view (view.py)."""

    text: str
    cited: list[str] = field(default_factory=list)
    mode: str = "extractive"
    reason: str = ""
    view: View | None = None


def answer_when(question: Question, evidence: list[Evidence]) -> Pick:
    """The event's date: a date written in a near-best note's sentence on it (absolute), else the best
    note's day. A plan for a later month gives way to that month's note (`fulfilled`)."""
    evidence = fulfilled(evidence)
    candidates = on_subject(evidence, WHEN_SHARE)[:3]
    for item in candidates:
        sentence = best_sentence(item.note, spelled(question))
        days = note_dates(item.note)
        taken_back = retracted(sentence)  # "not on Friday, it is on Monday": Monday
        dated = [d for written, d in days if written in sentence and not any(written in c for c in taken_back)]
        if not dated and len({d for _, d in days}) == 1:
            dated = [days[0][1]]  # a passage that dates one day dates its event (a story's time holds)
        if dated:
            return Pick([item.note.id], day=dated[0].isoformat(), sentence=sentence)
    return Pick([evidence[0].note.id], day=day(evidence[0].note))


def answer_now(question: Question, evidence: list[Evidence]) -> Pick:
    """The newest note on the subject (an older value is history, not the answer); for a question about the
    writer, the newest that is not someone else's ("she recommended a Todo app" is not what I use)."""
    if about_writer(question.text):
        evidence = [e for e in evidence if not someone_elses(best_sentence(e.note, spelled(question)))] or evidence
    subject = on_subject(evidence, NOW_SHARE)
    top = max(e.words for e in evidence)
    subject += [e for e in evidence if top and e.words >= top and e.score >= NOW_WIDE * evidence[0].score]
    rare = rarest_term(evidence[0].note, evidence)  # what the best passage is about, of what is asked
    subject = [e for e in subject if rare in e.found] or subject
    value = asked_value(question)
    priced = [e for e in on_subject(evidence, VALUE_SHARE) if value and value[0].search(e.note.content)]
    newest = max(priced or subject, key=lambda e: e.note.at).note  # "how much … now?": the newest price
    return Pick([newest.id])


def fulfilled(evidence: list[Evidence]) -> list[Evidence]:
    """When the best note is a plan for a later month, the note of that month that shares two of its
    subject words (the race run, not the race signed up for), or one and scores near it (`WHEN_WIDE`: the
    other words may be in the other language), comes first."""
    best = evidence[0]
    month = planned_month(best.note)
    done = [e for e in evidence if month and e.note.at[:4] == best.note.at[:4] and e.note.at[5:7] == f"{month:02d}"
            and (len(e.found & best.found) >= 2 or (e.found & best.found and e.score >= WHEN_WIDE * best.score))]
    if not done:
        return evidence
    first = max(done, key=lambda e: e.score)
    return [first] + [e for e in evidence if e is not first]


# "how many weeks?" / "몇 주?": the unit asked, as the notes may write it in either language
UNITS = {"주": "주|weeks?", "week": "주|weeks?", "명": "명|people|persons?", "people": "명|people|persons?",
         "person": "명|people|persons?", "분": "분|minutes?", "minute": "분|minutes?", "시간": "시간|hours?",
         "hour": "시간|hours?", "일": "일|days?", "day": "일|days?", "달": "달|개월|months?",
         "개월": "달|개월|months?", "month": "달|개월|months?", "잔": "잔|cups?", "cup": "잔|cups?",
         "km": "km|킬로", "킬로": "km|킬로", "권": "권|books?", "book": "권|books?", "년": "년|years?",
         "year": "년|years?", "도": "도|degrees?|°|℃", "degree": "도|degrees?|°|℃", "kg": "kg|킬로|kilos?",
         "kilo": "kg|킬로|kilos?"}
_NUMBER = (r"(?:\d[\d,.]*|one|two|three|four|five|six|seven|eight|nine|ten|eleven|twelve|한|두|세|네|다섯|"
           r"여섯|일곱|여덟|아홉|열)")
_HOW_MANY = re.compile(r"몇\s*([가-힣]+)|\bhow (?:many|much|long)\s+([a-z]+?)s?\b", re.I)
QUANTITY_SHARE = 0.75  # a near-best note that writes the number asked wins over the best without one
VALUE_SHARE = 0.5  # ... and one writing the price or age asked, from further down
# A value a question asks for by its words, how a note writes it, and what a decline calls it: a price
# ("얼마에 팔았어?", "how much was the ferry ticket"; not "얼마나 걸렸어", "how much time") and an age.
_MONEY = (r"\d[\d,.]*\s*(?:만|천|억)?\s*원|\b\d[\d,.]*\s*(?:won|dollars?|euros?)\b|[$€£₩]\s?\d|\d\s*%|퍼센트"
          r"|\bpercent\b")
AMOUNT = "the amount"  # "얼마" asks a price, or a reading written right after its word (`measured`)
ASKED_VALUES = (
    (re.compile(r"얼마(?!\s*나\s*(?:걸|오래|자주|멀|됐|지났|많이|컸|무거))"
                r"|\bhow much\b(?!\s+(?:weight|time|longer|more|of)\b)|\bcost\b|\bprice\b", re.I),
     re.compile(_MONEY, re.I), AMOUNT),
    (re.compile(r"몇\s*살|나이|\bhow old\b", re.I),
     re.compile(r"\d+\s*(?:살|세)(?![가-힣])|\b\d+[- ]years?[- ]old\b|\baged?\s+\d+|(?:스무|서른|마흔|쉰)\s*살", re.I),
     "the age"),
)


def asked_value(question: Question) -> tuple[re.Pattern[str], str] | None:
    """(how a note writes it, its name) of the value the question asks for, or None."""
    return next(((written, name) for asked, written, name in ASKED_VALUES if asked.search(question.text)), None)


def quantity(question: Question, evidence: list[Evidence]) -> list[Evidence]:
    """For "how many <unit>?", the near-best note writing a number with that unit comes first ("three weeks
    of physio" over "물리치료 끝"; "손님 40명" over "2,000 views" for "how many guests"); for a
    price or an age asked (`ASKED_VALUES`), a note writing one from further down (`VALUE_SHARE`)."""
    match = _HOW_MANY.search(question.text)
    asked = ((match.group(1) or match.group(2) or "") if match else "").lower()
    # "몇 도야", "몇 년째": the unit is the word's start
    unit = UNITS.get(asked) or next((UNITS[u] for u in sorted(UNITS, key=len, reverse=True)
                                     if asked.startswith(u) and not asked.isascii()), None)
    value = asked_value(question)
    if not unit and not value:
        return evidence
    pattern = re.compile(rf"(?<![0-9A-Za-z가-힣]){_NUMBER}\s*(?:{unit})(?![a-z])", re.I) if unit else value[0]
    near = on_subject(evidence, QUANTITY_SHARE if unit else VALUE_SHARE)
    top = max(e.words for e in evidence)  # ... or naming nearly as much (in the other language, far in meaning)
    near += [e for e in evidence[len(near):] if unit and e.words >= QUANTITY_SHARE * top]
    writing = [e for e in near if pattern.search(e.note.content)  # of those, the one naming most of what is asked
               or (not unit and value[1] == AMOUNT and measured(question, e))]
    first = max(writing, key=lambda e: e.words) if writing else None
    return evidence if first is None else [first] + [e for e in evidence if e is not first]


def answer_plain(question: Question, evidence: list[Evidence]) -> Pick:
    """The best note, whole, after a plan gives way to the note of its month (`fulfilled`) and, for "how
    many <unit>?", a note writing that number comes first (`quantity`)."""
    best = named(question, quantity(question, fulfilled(evidence)))[0].note
    return Pick([best.id])


def named(question: Question, evidence: list[Evidence]) -> list[Evidence]:
    """For "what is the name of …?", the near-best passage that gives a name (`_GIVES_NAME`) comes first."""
    if not _NAME.search(question.text) or _GIVES_NAME.search(evidence[0].note.content):
        return evidence
    first = next((e for e in on_subject(evidence, QUANTITY_SHARE) if e.found and _GIVES_NAME.search(e.note.content)),
                 None)
    return evidence if first is None else [first] + [e for e in evidence if e is not first]


def answer_best(question: Question, evidence: list[Evidence]) -> Pick:
    """A kind with no answerer of its own: the best passage."""
    return Pick([evidence[0].note.id])


# One question's answer from its ranked evidence, by the kind `questions.kind_of` gave it (each row's
# function takes the question and its evidence, best first). A new kind: a row in questions.KINDS, a
# function of this signature, and its row here.
Answerer = Callable[[Question, list[Evidence]], Pick]
ANSWERERS: dict[str, Answerer] = {
    "when": answer_when,
    "now": answer_now,
    "count": answer_count,
    "why": answer_best,
    "story": answer_best,  # the view quotes the story's sentences, entry by entry (view.story)
    "plain": answer_plain,
}


def answer_one(question: Question, evidence: list[Evidence]) -> Pick:
    """One question answered from its ranked evidence by its kind's answerer (`ANSWERERS`), the writer's
    latest word first (`latest_word`)."""
    if question.kind in LATEST_KINDS:
        evidence = latest_word(question, evidence)
    return ANSWERERS.get(question.kind, answer_best)(question, evidence)


LATEST_KINDS = {"plain", "when"}


def as_written(text: str, term: str) -> str:
    """The question's word a term was read from ("봤어?" gave the stem "봤"), as written, else the term."""
    return next((w for w in re.findall(r"[\w-]+", text) if w.startswith(term)), term)


def latest_word(question: Question, evidence: list[Evidence]) -> list[Evidence]:
    """For a question not asked in the past tense ("what is my blood type?", "when is the meeting?"), of the
    passages that name what the best one names of the question and stand as near it as "now" asks
    (`NOW_SHARE`), the newest comes first: two entries stating different values for one thing, the later is
    the writer's latest word (a correction, a new value)."""
    if not evidence or not evidence[0].found or tense(question.text) == "past":
        return evidence
    same = [e for e in on_subject(evidence, NOW_SHARE) if e.found == evidence[0].found]
    newest = max(same, key=lambda e: e.note.at)
    return evidence if newest is evidence[0] else [newest] + [e for e in evidence if e is not newest]


# Kinds whose answer is one passage the model may choose ("now" stays with the rules: time order is
# rules' work); a count's passages are the model's to pick, its distinct days the rules'.
READ_KINDS = {"plain", "why", "when"}


def read_first(question: Question, evidence: list[Evidence], read: Reader | None) -> list[Evidence]:
    """The evidence with the passage the model read as the answer first (reader.py), or for a count only
    the passages it read as times it happened; unchanged when no model reads, the kind is not read, or the
    model chose none."""
    if read is not None and question.kind == "count":
        picked = read.all(question.text, [e.note for e in evidence])
        return [evidence[i] for i in sorted(picked)] if picked else evidence
    if read is None or question.kind not in READ_KINDS or len(evidence) < 2:
        return evidence
    index = read.one(question.text, [e.note for e in evidence])
    if not index or not 0 < index < len(evidence):
        return evidence
    chosen = evidence[index]
    return [chosen] + [e for e in evidence if e is not chosen]


def decline_reason(question: Question, evidence: list[Evidence]) -> str:
    """Why the notes do not answer (empty when they may), in the question's language: no entry of the day
    asked; no key term (by its stem) in any retrieved note and none close in meaning; a name asked of a subject
    whose notes give no name ("동생 이름이 뭐야?" over notes about a sister's birthday); or a price or an age no
    note on it gives."""
    if not evidence:
        return said(question, f"no note of {question.day}", f"{question.day}의 기록 없음") if question.day \
            else said(question, "no note matches the question", "질문에 맞는 기록 없음")
    key = [t for t in question.terms if t not in GENERIC] or question.terms
    found = any(mentions(question, t, forms(f"{e.note.content} {e.note.enrichment_text()}"))
                for e in evidence for t in key)
    closest = max(e.cosine for e in evidence)  # with the cross-language offset (evidence.py)
    words = ", ".join(key)
    if not found and closest < DECLINE_COSINE:
        day = f" of {question.day}" if question.day else ""
        quoted = ", ".join(f"'{as_written(question.text, t)}'" for t in key) or "이 질문"  # "봤어", not its stem "봤"
        return said(question, f"no note{day} mentions {words or 'this'}",
                    f"{question.day} 기록에 {quoted}에 대한 것 없음" if question.day else f"{quoted}에 대한 기록 없음")
    tops = own_tops(question, evidence)  # a name or an amount is written in a passage naming much of what is asked
    holders = [e for e in evidence
               if e.found & set(key) and e.words >= VALUE_SHARE * tops[other_language(question, e.note)]]
    if _NAME.search(question.text) and not any(_GIVES_NAME.search(e.note.content) for e in holders):
        # (a title given to another thing is no answer)
        return said(question, f"no note gives the name of {words}", f"{words}의 이름을 적은 기록 없음")
    value = asked_value(question)
    if value and question.kind in ("plain", "now") and holders \
            and not any(beside(value[0], question, e) or (value[1] == AMOUNT and measured(question, e))
                        for e in holders):  # asked a price, no note on it gives one
        return said(question, f"no note gives {value[1]} of {words}",
                    f"{words}의 {VALUE_NAMES_KO[value[1]]}을(를) 적은 기록 없음")
    return ""


VALUE_NAMES_KO = {AMOUNT: "금액", "the age": "나이"}


def said(question: Question, english: str, korean_text: str) -> str:
    """A reason in the question's language (a Korean question is answered in Korean, its reason too)."""
    return korean_text if korean(question) else english


def beside(value: re.Pattern[str], question: Question, item: Evidence) -> bool:
    """Whether a passage writes the value asked in a clause (between commas) naming what is asked: in
    "우유 3천 원, 세탁소, 조카 선물" the amount is the milk's, not the gift's; an amount alone in its clause
    ("…지갑 앞에 한참 서 있었다. 검정색, 12만 원.") is its sentence's and the one before's."""
    if not any(mentions(question, t, forms(item.note.content)) for t in item.found):
        return bool(value.search(item.note.content))  # named through the model's keywords only: no clause to read
    before = ""
    for sentence in sentences(item.note.content):
        for clause in re.split(r"[,;·]", sentence):
            if value.search(clause):
                said = clause if re.search(r"[A-Za-z가-힣]{2,}", value.sub("", clause)) else f"{before} {sentence}"
                if any(mentions(question, t, forms(said)) for t in item.found):
                    return True
        before = sentence
    return False


def measured(question: Question, item: Evidence) -> bool:
    """Whether a passage writes a number right after a word it shares with the question, at most a particle,
    a colon or "was" between ("혈압이 120", "the tank was 40 litres"; not "at 9", not a clock time): "얼마였어?"
    asks that reading as well as a price."""
    for sentence in sentences(item.note.content):
        for match in re.finditer(r"[A-Za-z\uac00-\ud7a3]+(?=\s*(?:[은는이가도:]|is|was|were|of)?\s*\d[\d,.]*(?![\d:]))",
                                 sentence):
            if any(mentions(question, t, forms(match.group())) for t in item.found):
                return True
    return False


def declined_text(question: Question, reason: str) -> str:
    if korean(question):
        return f"기록에 없어요 ({reason})."
    return f"Not recorded in your notes ({reason})."


NOTHING_ASKED = "the question has no words to look for"


def answer_journal(text: str, notes: list[Note], cosines: Cosines, translate: Translate | None = None,
                   updating: Callable[[list[Note]], list[Note]] | None = None, read: Reader | None = None,
                   on_day: Callable[[str], list[Note]] | None = None) -> JournalReply:
    """Answer a journal question from `notes` (the retrieved ones) — see the module docstring.
    `translate(terms, language)` gives the question's terms in the journal's other language (the
    model), so "dog" finds "강아지"; without it, words match only as written (and romanised).
    `updating(notes)`: the passages that update any of them (typed links), read for "now" questions.
    `read`: the model as reader (reader.py): which of the best passages answers, for the kinds in
    `READ_KINDS`; which record a time it happened, for counts. `on_day(day)`: the notes written near a day
    (a week either side): a question about a day is answered from that day's entries (`of_day`), a day with
    nothing else asked lists them (view.day_view). The reply carries the view (view.py).
    Raises InvalidInput for a question made only of question words ("when?", "how many?")."""
    question = analyse(text)
    if not question.terms and not question.day:
        raise InvalidInput(NOTHING_ASKED)
    if question.day and on_day is not None:
        notes = of_day(on_day(question.day), question.day)
        if not question.terms and notes:
            shown = day_view(question, notes)
            return JournalReply(shown.headline, [line.passage_id for line in lines_of(shown)], view=shown)
    if updating is not None and question.kind == "now":
        known = {n.id for n in notes}
        notes = notes + [n for n in updating(notes) if n.id not in known]
    if translate is not None and question.terms and any(other_language(question, n) for n in notes):
        question.with_alternates(translate(question.terms, question.text, notes))
    evidence = rank(question, notes, cosines)
    reason = decline_reason(question, evidence)
    if reason:
        shown = declined_view(question, evidence, declined_text(question, reason))
        shown.confidence = sureness(shown.kind, shown.signals)
        return JournalReply(shown.headline, [], "declined", reason, shown)
    pick = answer_one(question, read_first(question, evidence, read))
    shown = answer_view(question, evidence, pick)
    shown.headline, _removed = guard(shown.headline, notes, text)
    shown.confidence = sureness(shown.kind, shown.signals)
    # Cited: what the answer rests on (the headline's passage; a count's occasions, a story's lines), not the
    # supporting lines shown beside it.
    used = [shown.line.passage_id] if shown.line else [] if pick.lead else \
        [line.passage_id for line in shown.supporting]
    return JournalReply(shown.headline, list(dict.fromkeys(pick.cited + used)), view=shown)


def of_day(notes: list[Note], day: str) -> list[Note]:
    """The passages of `notes` written on `day` or dating it as one day ("어제" in the next day's entry)."""
    return [n for n in notes if n.at[:10] == day
            or any(m.start == m.end == day for m in date_mentions(n.content, n.at))]


def lines_of(view: View) -> list:
    return ([view.line] if view.line else []) + view.supporting
