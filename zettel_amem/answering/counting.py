"""Lists and counts from a journal (#26, #36): the passages that tell the subject, each occasion once.

"뭐뭐 먹었어?" lists the passages on the subject; "몇 번 갔어?" / "how many times" counts the times it happened.
Both keep only the passages that name the subject themselves (an entry's other passages lend a passage
words for ranking, not an occasion), each measured against the best passage in its own language. A count
leaves out plans and sentences saying it did not happen or is still to come, and counts each day once: an
undated passage is the day its entry's one dated passage tells.
"""

from __future__ import annotations

import re
from collections.abc import Callable

from ..core.models import Note
from ..core.passages import entry_id_of
from ..core.words import kin_group
from .evidence import Evidence, best_sentence
from .questions import Question
from .reading import (
    SUPPOSED,
    day,
    event_day,
    korean,
    other_language,
    planned,
    planned_month,
    rarest_sentence,
    rarest_term,
    spelled,
    told_day,
)
from .view import Pick

LIST_SHARE = 0.4  # list/count: notes with at least this share of the best note's subject words
COUNT_SHARE = 0.6  # a time it happened names (itself) at least this share of what the best passage names
LIST_SHOWN = 8  # a list or count quotes at most this many passages (a count still counts them all)
# A sentence that says the thing did not happen, or is still to come, is no time it happened (counts):
# "수영을 못 했다", "하지 않았다", "couldn't", "다음 모임은 같이 가자고", "next time", "will".
_NOT_HAPPENED = re.compile(r"(?<![가-힣])못\s?[가-힣]|(?<![가-힣])안\s?[했하갔가봤]|지\s?(않|못)[았했]|수\s?없었"
                           r"|(^|\s)다음\s?(번|주|달)?\s?\S|예정|\b(not|never|no longer|next|will|going to)\b|n't\b",
                           re.I)


def answer_list(question: Question, evidence: list[Evidence]) -> Pick:
    """Every passage on the subject; for "how many times", the times it happened (`occasions`), their
    number the lead. The view shows them in date order."""
    top = evidence[0].words
    chosen = [e for e in evidence if top and e.words >= LIST_SHARE * top] or evidence[:1]
    if question.kind == "count":
        chosen = occasions(question, evidence, chosen)
    else:  # passages naming the subject themselves; a sentence two share (read with a neighbour) once
        names_subject = tells_subject(question, evidence)
        chosen = [e for e in chosen if names_subject(e)] or chosen
        chosen = once_per_sentence(question, chosen)
    total = len(chosen)
    cited = [e.note.id for e in chosen[:LIST_SHOWN]]  # best first: the view shows those that fit, by date
    if question.kind != "count":
        return Pick(cited)
    return Pick(cited, lead=f"{total}번" if korean(question) else f"{total} time{'s' if total != 1 else ''}")


def occasions(question: Question, evidence: list[Evidence], chosen: list[Evidence]) -> list[Evidence]:
    """For "how many times did I …": the passages that tell a time it happened, each occasion once. A
    passage counts only when it names the subject itself (`tells_subject`: its entry's other passages lend
    it words for ranking, not an occasion); plans and "못 갔다"/"next time" sentences
    are no time it happened; an undated passage is the time its entry's one dated day tells (`occasion`)."""
    names_subject = tells_subject(question, evidence)
    own = [e for e in chosen if names_subject(e)] or chosen
    own = [e for e in own if not planned_month(e.note) and not planned(e.note)] or own
    # the sentence with the passage's rarest term tells what happened to the subject ("우산은 샀다. 비 오는 날
    # 등산은 못 갔다", asked about hiking)
    own = [e for e in own if not told_undone(rarest_sentence(e.note, question, evidence)
                                             or best_sentence(e.note, spelled(question)))] or own
    days: dict[str, set[str]] = {}
    for item in own:
        days.setdefault(entry_id_of(item.note.id), set()).add(event_day(item.note))
    first: dict[str, Evidence] = {}
    for item in own:  # best first, so each occasion keeps its best passage
        first.setdefault(occasion(item.note, days[entry_id_of(item.note.id)]), item)
    return once_per_sentence(question, list(first.values()))


def told_undone(sentence: str) -> bool:
    """Whether a sentence says the thing did not happen, is still to come, or only might ("he might drop by")."""
    return bool(_NOT_HAPPENED.search(sentence) or SUPPOSED.search(sentence))


def once_per_sentence(question: Question, evidence: list[Evidence]) -> list[Evidence]:
    """The passages in order, a later one quoting the same sentence as an earlier one left out."""
    return list({best_sentence(e.note, spelled(question)): e for e in reversed(evidence)}.values())[::-1]


def tells_subject(question: Question, evidence: list[Evidence]) -> Callable[[Evidence], bool]:
    """Whether a passage names the subject itself: at least `COUNT_SHARE` of what the best passage in its
    language names, and that passage's rarest term (a Korean passage is measured against the Korean ones:
    "hiked" may have no Korean word among the notes where the names have one)."""
    tops = own_tops(question, evidence)
    rare = {other: rarest_term(same[0].note, same) for other in (False, True)
            if (same := [e for e in evidence if other_language(question, e.note) == other])}

    def test(item: Evidence) -> bool:
        other = other_language(question, item.note)
        # a family word alone is no subject in the other language's passages ("mom" of "엄마가 보내 준 반찬")
        named = not other or any(not kin_group(t) for t in item.found)
        return named and item.own > 0 and item.own >= COUNT_SHARE * tops[other] \
            and (not rare[other] or rare[other] in item.found)
    return test


def own_tops(question: Question, evidence: list[Evidence]) -> dict[bool, float]:
    """The most of the question a passage names itself, among the passages in the question's language
    (False) and in the other (True): a passage is measured against its own language's best, since a word
    may have no translation among the notes where the names have one."""
    tops = {False: 0.0, True: 0.0}
    for item in evidence:
        other = other_language(question, item.note)
        tops[other] = max(tops[other], item.own)
    return tops


def occasion(note: Note, entry_days: set[str]) -> str:
    """The day a passage's event happened: its own past day ("어제"), or, for a passage that writes none,
    the one earlier day its entry's other passages date (the story the entry tells), else the entry's day."""
    own = event_day(note)
    return (told_day(note, entry_days) or own) if own == day(note) else own
