"""What evolution may write into a neighbour (#60): refine, never replace.

The neighbour keeps its own description and gains one dated "later" clause in the causing note's words
(grounded.later_clause), only where the two notes share a word that names one thing (`names_it`: no number or
date, in few notes of the notebook). A page-long neighbour's evolved context must still read as that page
(`stays_its_own`): else only the clause's phrase naming the page is kept, or the rewrite is refused. A note
evolved `evolve_max_times` already is not evolved again.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from ..core.config import Settings
from ..core.models import Note
from ..core.passages import EMBEDDED_CHARS
from ..core.prompts import language_of
from ..core.text import sentences
from .grounded import NoteWords, evolution_tags, later_clause, later_context, naming_phrase, own_description
from .link import LATER_CHARS, Update
from .supersede import cosine


def grounded_updates(updates: list[Update], neighbours: dict[str, Note], cause: Note, settings: Settings,
                     names_it: Callable[[str], bool], embed: Callable[[list[str]], Any]
                     ) -> tuple[list[Update], list[str]]:
    """Each update as what evolution may write: the neighbour's own description, a dated "later" clause in the
    causing note's words, tags of the neighbour's; and the ids refused: a neighbour the causing note shares no
    word with that `names_it`, one evolved `evolve_max_times` already, or one whose context would read as the
    causing note (`stays_its_own`)."""
    kept, refused = [], []
    for update in updates:
        neighbour = neighbours[update.note_id]
        own = NoteWords.of(neighbour.content, neighbour.at)
        clause = later_clause(update.context, cause.content, cause.at, own, LATER_CHARS, names_it)
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
