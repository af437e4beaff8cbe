"""What evolution may write into a neighbour (#60): refine, never replace.

The neighbour keeps its own description and gains one dated "later" clause in the causing note's words
(grounded.later_clause), only where the two notes share a word that names one thing (`names_it`: no number or
date, in few notes of the notebook), and only where the clause is about that neighbour more than about any
other note (`most_about`). A page-long neighbour's evolved context must still read as that page
(`stays_its_own`): else only the clause's phrase naming the page is kept, or the rewrite is refused. A note
evolved `evolve_max_times` already is not evolved again.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from ..core.config import Settings
from ..core.models import Note
from ..core.passages import EMBEDDED_CHARS, nearness
from ..core.prompts import language_of
from ..core.text import sentences
from .grounded import NoteWords, evolution_tags, later_clause, later_context, naming_phrase, own_description
from .link import LATER_CHARS, Update
from .supersede import cosine

# Nearness of a vector to another note: the best cosine with any other note but the two, by raw words or
# one passage (the pipeline's store query), given the vector and the ids left out.
NearestOther = Callable[[list[float], set[str]], float]


def grounded_updates(updates: list[Update], neighbours: dict[str, Note], cause: Note, settings: Settings,
                     names_it: Callable[[str], bool], embed: Callable[[list[str]], Any],
                     nearest_other: NearestOther | None = None) -> tuple[list[Update], list[str]]:
    """Each update as what evolution may write: the neighbour's own description, a dated "later" clause in the
    causing note's words, tags of the neighbour's; and the ids refused: a neighbour the causing note shares no
    word with that `names_it`, one evolved `evolve_max_times` already, one another note is nearer the clause
    than (`most_about`, with `nearest_other`), or one whose context would read as the causing note
    (`stays_its_own`)."""
    kept, refused = [], []
    words = {u.note_id: NoteWords.of(neighbours[u.note_id].content, neighbours[u.note_id].at) for u in updates}
    clauses = {u.note_id: later_clause(u.context, cause.content, cause.at, words[u.note_id], LATER_CHARS, names_it)
               for u in updates}
    elsewhere = most_about(clauses, neighbours, cause.id, embed, nearest_other) if nearest_other else set()
    for update in updates:
        neighbour, own = neighbours[update.note_id], words[update.note_id]
        clause = None if update.note_id in elsewhere else clauses[update.note_id]
        times = sum(1 for v in neighbour.history if v.reason == "evolution")
        if clause is None or times >= settings.evolve_max_times:
            refused.append(update.note_id)
            continue
        context = with_later(neighbour, clause, cause, settings.max_context_chars)
        kept.append((Update(neighbour.id, context, evolution_tags(update.tags, own), update.keywords), clause,
                     naming_phrase(clause, own, names_it)))
    first = stays_its_own([(u.note_id, u.context or "", clause) for u, clause, _ in kept], neighbours, cause, embed)
    retry = [(u, with_later(neighbours[u.note_id], shorter, cause, settings.max_context_chars), shorter)
             for (u, _, shorter), holds in zip(kept, first) if not holds and shorter]
    second = stays_its_own([(u.note_id, context, shorter) for u, context, shorter in retry], neighbours, cause,
                           embed)
    shortened = {u.note_id: context for (u, context, _), holds in zip(retry, second) if holds}
    out = []
    for (update, _, _), holds in zip(kept, first):
        if holds or update.note_id in shortened:
            out.append(Update(update.note_id, update.context if holds else shortened[update.note_id],
                              update.tags, update.keywords))
        else:
            refused.append(update.note_id)
    return out, refused


def most_about(clauses: dict[str, str | None], neighbours: dict[str, Note], cause_id: str,
               embed: Callable[[list[str]], Any], nearest_other: NearestOther) -> set[str]:
    """The neighbours (id -> the later clause `later_clause` gives it) that another note, the causing one
    apart, is nearer the clause than, by the raw words or one passage. A clause goes to the note it is most
    about: on a page one word ties a clause to many entries (a holiday, a friend's name), and of the later
    clauses hand-labelled on the project's diaries that went to a page they were not about, most had another
    entry nearer (bench/enrichment.py, #60 round 4). One embedding call for all."""
    judged = [(note_id, clause) for note_id, clause in clauses.items() if clause]
    if not judged:
        return set()
    vectors = [v.tolist() for v in embed([clause for _, clause in judged])]
    return {note_id for (note_id, _), vector in zip(judged, vectors)
            if nearness(vector, neighbours[note_id]) < nearest_other(vector, {note_id, cause_id})}


def with_later(neighbour: Note, clause: str, cause: Note, max_chars: int) -> str:
    """The neighbour's own description with `clause` added, dated by the causing note."""
    return later_context(own_description(neighbour.context), clause, cause.at, language_of(neighbour.content),
                         max_chars)


def stays_its_own(evolved: list[tuple[str, str, str]], neighbours: dict[str, Note], cause: Note,
                  embed: Callable[[list[str]], Any]) -> list[bool]:
    """For each (neighbour id, evolved context, its clause): whether a page-long neighbour's context is still
    nearer (cosine) its own entry, the whole or one of its sentences, than the causing entry (the whole, one of
    its sentences or the clause) and than the other neighbours shown with it: a page's one-line description
    with a clause copied from another entry reads as that entry, and search and answers take it for that entry
    (#60: 4 of 48 on the long diary, measured so by bench/enrichment.py; then 1, nearer a third entry). A
    short note is one subject, the one its clause changes ("Runs 10 km every weekend; later: two weeks without
    running"): not judged. One embedding call for all."""
    judged = [item for item in evolved if neighbours[item[0]].passages]
    if not judged:
        return [True] * len(evolved)
    own_sentences = {i: sentences(neighbours[i].content[:EMBEDDED_CHARS]) for i in {i for i, _, _ in judged}}
    cause_sentences = sentences(cause.content[:EMBEDDED_CHARS])
    texts = [t for _, context, clause in judged for t in (context, clause)]
    texts += [t for pieces in own_sentences.values() for t in pieces] + cause_sentences
    vectors = iter(v.tolist() for v in embed(texts))
    pairs = {(i, context): (next(vectors), next(vectors)) for i, context, _ in judged}
    own_vectors = {i: [next(vectors) for _ in pieces] for i, pieces in own_sentences.items()}
    cause_vectors = [v for v in [cause.raw_vector, *vectors] if v]
    out = []
    for note_id, context, _ in evolved:
        if (note_id, context) not in pairs:
            out.append(True)
            continue
        context_vector, clause_vector = pairs[(note_id, context)]
        own = [v for v in [neighbours[note_id].raw_vector, *own_vectors[note_id]] if v]
        third = [n.raw_vector for i, n in neighbours.items() if i != note_id and n.raw_vector]
        other = [*cause_vectors, clause_vector, *third]
        out.append(max(cosine(context_vector, v) for v in own) > max(cosine(context_vector, v) for v in other))
    return out
