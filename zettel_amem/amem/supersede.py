"""Typed *updates* links (#36, A-MEM's evolution typed): a newer passage that states a new value for what
an older passage stated (another gym, address, shift, weight) updates it.

Two sources, both checked here: the link call's model names at most one candidate the new note replaces
(a grammar-bound enum over the candidates' ids, link.py); and, without a model call, the change-word path: a
candidate (one of the page's nearest pages, or of the changing passage's own) whose passage shares a rare
word with the new passage, where that word names a thing and stands beside a word that says a value
changed (`words_near_change`, text.VALUE_CHANGE_CUE), and the old passage is about as close in meaning as
the closest older passage (`CLOSE_MARGIN`). On a page, a rare word shared by chance ("서랍", "later") is
common; the checks are what keep it out (bench/updates.py: short and long pairs, and a replay over a built
notebook). Checks, whatever the source: the replaced note is older, and the two passages that match best
(passage embeddings) share a subject word (`subject_words`). The record lives on the *older* note,
`Note.updated_by`, as a version caused by the newer one: `zk revert` undoes it, `zk rm` of the newer note
forgets it (evolve.forget_changes_by), `zk show` and `zk links` show it. "Now" answers skip a passage
that a newer passage updates and read the newer one instead.
"""

from __future__ import annotations

import itertools
import re
from collections.abc import Callable

from ..core.date_mentions import tense
from ..core.models import Note, Version
from ..core.passages import entry_id_of, passage_id
from ..core.text import VALUE_CHANGE_CUE, sentences
from ..core.words import STOP_WORDS, subject_terms, verb_forms
from ..retrieval.passage_rank import mostly_korean
from .evolve import record


def units(note: Note) -> list[tuple[str, str, list[float] | None]]:
    """(passage id, text, vector) of each passage; a short note is its own single passage."""
    if note.passages:
        return [(passage_id(note.id, p.index), p.text, p.vector) for p in note.passages]
    return [(note.id, note.content, note.raw_vector or note.vector)]


# A changing passage's pair must be about what the passage is about: its cosine with the old passage within
# this of the best any older passage in the notebook has with it (a word shared by chance, "later", "서랍",
# joins two passages on other subjects: on the long-entry diary those stood 0.04-0.10 under the best).
CLOSE_MARGIN = 0.03
NEAR_CHANGE = 3  # content words either side of an English change word that can name what changed
KO_CLAUSE = 4  # content words of a Korean clause before its change verb
# A Korean word that ends a clause before the next one starts ("늦어서", "샀는데", "좋지만"; not the place
# particle "에서"), or a comma. "-고" is left out: it also joins what one clause does to one thing ("전세를 빼고
# 월세로 옮겼다") and ends nouns ("냉장고").
_CLAUSE_END = re.compile(r"[,;]$|[가-힣]((?<!에)서|는데|지만|면서|니까)[,.]?$")
KO_CHANGE_ADVERBS = ("이제는", "이제부터", "대신", "부터")  # change words that come before what they are about
MAX_RARE_CHECKS = 3  # shared words looked up in the notebook's keyword index per pair (each one query)
RARE_IN = 4  # a subject word in at most this many notes (the two compared included) can be what changed


# Words that name no thing a value belongs to, beyond words.STOP_WORDS: days, adverbs and prepositions a
# diary uses on every page ("later", "오늘"): shared by two passages, they join unrelated subjects.
NO_THING = frozenset({"like", "later", "back", "away", "well", "even", "never", "always", "really", "actually",
                      "finally", "already", "maybe", "soon", "today", "tonight", "yesterday", "tomorrow",
                      "week", "month", "since", "until", "around", "because", "though", "other", "another",
                      "same", "different", "whole", "last", "next", "down", "up", "myself", "herself", "himself",
                      "오늘", "어제", "내일", "그저께", "모레", "이번", "지난", "다음", "드디어", "너무", "정말",
                      "진짜", "아직", "벌써", "조금", "많이", "같이", "함께", "모두", "다들", "그래서", "그런데",
                      "하지만"})


# A Korean word ending so is a verb or adjective form, whatever its stem: quoting ("잔다고"), linking
# ("좋지만", "샀는데", "가면서", "추워서", "걸어가서") or aiming ("가려고"). Two notes both saying "잔다고"
# share no thing.
_KO_VERB_FORM = re.compile(r"[가-힣](?:다고|자고|냐고|려고|면서|지만|는데|니까|도록|더니|셔서|해서|아서|어서|워서|"
                           r"가서|와서|나서|봐서|줘서|돼서|져서|려서|겨서|쳐서|켜서|써서)$")


def names_a_thing(word: str) -> bool:
    """Whether a word can name what a value belongs to: a Korean word of two syllables or more that is not
    a predicate ("했다"), or an English word of three letters or more that is no function word, adverb or
    verb form ("gave", "cried"; words.verb_forms knows the irregular ones)."""
    if word in NO_THING:
        return False
    if "\uac00" <= word[0] <= "\ud7a3":
        return len(word) >= 2 and not word.endswith("다")
    return (len(word) >= 3 and word not in STOP_WORDS and not verb_forms(word)
            and not (len(word) >= 5 and word.endswith("ed")))


# A two-letter capitalised word names a thing too ("PM", "DB"), unless it follows a number ("3 PM").
_ACRONYM = re.compile(r"(?<![\w.])(?<!\d )([A-Z]{2})(?![A-Za-z])")


def subject_words(text: str) -> set[str]:
    """The words a passage is about that can name a thing: no particles or question words
    (words.subject_terms), no change words ("바뀌었다" is not a subject), no predicates, adverbs or verb
    forms (`names_a_thing`), no numbers or units."""
    kept = " ".join(w for w in text.split() if w.strip(".,!?;:'\"()").lower() not in NO_THING  # "드디어" is no "드디"
                    and not _KO_VERB_FORM.search(w.strip(".,!?;:'\"()")))
    acronyms = {a.lower() for a in _ACRONYM.findall(kept)}
    return {singular(t) for t in subject_terms(kept) if not VALUE_CHANGE_CUE.search(t)
            and not any(c.isdigit() for c in t) and (names_a_thing(t) and names_a_thing(singular(t)) or t in acronyms)}


def singular(word: str) -> str:
    """An English plural's -s left off ("dentists" meets "dentist"); both sides are cut alike."""
    return word[:-1] if len(word) >= 4 and word.endswith("s") and not word.endswith("ss") and word.isascii() else word


def words_near_change(sentence: str) -> set[str]:
    """The subject words named beside a change word in `sentence`: what changed is named next to the verb
    that says so ("switched banks", "수영장을 회사 옆 수영장으로 옮겼다"), not at the other end of a long
    sentence. English: NEAR_CHANGE content words (numbers, particles and the like not counted) either side.
    A Korean verb comes last in its clause: the words of its clause before it (back to a comma or a clause
    ending, `_CLAUSE_END`), at most KO_CLAUSE of them, none after it ("...바꿨고 서랍 앞뒤 칸도" is another
    clause); after "이제", "대신" and a time with 부터 the NEAR_CHANGE words that follow."""
    spans = list(re.finditer(r"\S+", sentence))
    tokens = [t.group() for t in spans]
    near: list[str] = []
    for cue in VALUE_CHANGE_CUE.finditer(sentence):
        at = [i for i, t in enumerate(spans) if t.start() < cue.end() and cue.start() < t.end()]
        verb_last = "\uac00" <= cue.group()[-1] <= "\ud7a3" and not cue.group().endswith(KO_CHANGE_ADVERBS)
        if verb_last:
            clause = list(itertools.takewhile(lambda t: not _CLAUSE_END.search(t), reversed(tokens[: at[0]])))
            before = [t for t in reversed(clause) if subject_words(t)][-KO_CLAUSE:]
        else:
            before = [t for t in tokens[: at[0]] if subject_words(t)][-NEAR_CHANGE:]
        after = [] if verb_last else [t for t in tokens[at[-1] + 1:] if subject_words(t)][:NEAR_CHANGE]
        near += [*before, *(tokens[i] for i in at), *after]
    return subject_words(" ".join(near))


def says_change(text: str) -> bool:
    return any(VALUE_CHANGE_CUE.search(s) for s in sentences(text))


def cosine(a: list[float] | None, b: list[float] | None) -> float:
    return sum(x * y for x, y in zip(a, b)) if a and b else 0.0


def best_pair(new: Note, old: Note, cue: bool = False, rare: Callable[[str], bool] | None = None,
              closest: dict[str, dict[bool, float]] | None = None) -> tuple[str, str, list[str]] | None:
    """The new note's passage and the old note's passage that are closest in meaning and share a
    subject word, with the words they share, or None. With `cue`: the word is named in a sentence of the
    new passage that says something changed, it is `rare` in the notebook (a project every note names
    is not what changed), and the old passage is about as close to the new one as the closest older
    passage of the notebook in its language (`closest`: new passage id -> Korean or not -> best cosine)."""
    pairs = []
    olds = None  # the old passages with their words, read once (a long entry has 1,000s of passages)
    for new_id, new_text, new_vector in units(new):
        new_terms = subject_words(new_text)
        changed = {w for s in sentences(new_text) for w in words_near_change(s)} if cue else set()
        if cue and not changed:
            continue
        olds = olds or [(old_id, text, vector, subject_words(text)) for old_id, text, vector in units(old)]
        for old_id, old_text, old_vector, old_terms in olds:
            shared = new_terms & old_terms
            if cue:
                shared = {w for w in sorted(changed & shared)[:MAX_RARE_CHECKS] if rare is None or rare(w)}
            similarity = cosine(new_vector, old_vector)
            if not shared or cue and closest and similarity < closest.get(new_id, {}).get(
                    mostly_korean(old_text), 0.0) - CLOSE_MARGIN:
                continue
            pairs.append((similarity, new_id, old_id, sorted(shared)))
    if not pairs:
        return None
    _, new_id, old_id, shared = max(pairs)
    return new_id, old_id, shared


# What marks a sentence as stating how things are, even beside a past verb: a present or habitual verb ("is",
# "I'm paying"), a habit or a time that lasts ("every", "요즘", "매달").
_STATE_EN = re.compile(r"\b(?:is|am|are|have|has|own|owns|live|lives|keep|keeps|usually|always|every|each|now|"
                       r"still|currently)\b|'(?:m|re)\b", re.I)
_STATE_KO = re.compile(r"요즘|매일|매주|매달|매월|매년|항상|(?<![가-힣])늘(?![가-힣])|보통|자주|계속|마다")


def states_a_value(sentence: str) -> bool:
    """Whether a sentence states something that a later one can change: a value (a number: "82 kg", "5시
    10분"), a state or a habit; not a one-off past event ("went to look at wedding halls", "어제 뒷바퀴가
    펑크 났다"), which stays true whatever happens later (#60: on the long diary, 2 of 5 typed links updated
    such an event on a shared word)."""
    return bool(re.search(r"\d", sentence) or tense(sentence) != "past" or _STATE_EN.search(sentence)
                or _STATE_KO.search(sentence))


def states_about(text: str, subject: list[str]) -> bool:
    """Whether a sentence of an older passage that names one of `subject` states a value of it."""
    named = [s for s in sentences(text) if subject_words(s) & set(subject)] or [text]
    return any(states_a_value(s) for s in named)


def supersede(new: Note, old: Note, cue: bool = False, rare: Callable[[str], bool] | None = None,
              closest: dict[str, dict[bool, float]] | None = None) -> Version | None:
    """Record on `old` that a passage of `new` updates one of its passages, when the checks hold;
    the version recorded, or None. `cue`: without the model's word, the new passage must say that
    something changed (text.VALUE_CHANGE_CUE)."""
    if old.id == new.id or old.at >= new.at:
        return None  # an older note never updates a newer one, whatever the model said
    pair = best_pair(new, old, cue, rare, closest)
    if pair is None:
        return None
    by, passage, subject = pair
    if any(e["passage"] == passage and e["by"] == by for e in old.updated_by):
        return None
    new_text = next((text for pid, text, _ in units(new) if pid == by), new.content)
    if not cue and not (says_change(new_text) or any(states_a_value(s) for s in sentences(new_text))):
        return None  # the model's word alone: a one-off event ("had a loud party on Maple Street") changes no value
    old_text = next((text for pid, text, _ in units(old) if pid == passage), old.content)
    if not states_about(old_text, subject):
        return None  # an event stays true: a later passage cannot update it
    entry = {"passage": passage, "by": by, "on": subject}  # `on`: the words both name (what changed)
    before = [dict(e) for e in old.updated_by]
    old.updated_by = [*before, entry]
    return record(old, {"updated_by": {"old": before, "new": [dict(e) for e in old.updated_by]}}, new.id,
                  "updated")


def updated_ids(notes: list[Note]) -> set[str]:
    """The passage ids (or short notes' ids) that a newer passage updates, among `notes`' records."""
    return {e["passage"] for n in notes for e in n.updated_by}


def updating_entries(notes: list[Note]) -> list[str]:
    """The ids of the entries whose passages update something in `notes`."""
    return list(dict.fromkeys(entry_id_of(e["by"]) for n in notes for e in n.updated_by))
