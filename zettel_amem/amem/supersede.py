"""Typed *updates* links (#36, A-MEM's evolution typed): a newer passage that states a new value for what
an older passage stated (another gym, address, shift, weight) updates it.

Two sources, both checked here: the link call's model names at most one candidate the new note replaces
(a grammar-bound enum over the candidates' ids, link.py); and, without a model call, a nearest candidate
sharing a subject word with a sentence of the new passage that says something changed (text.CHANGE_CUE),
the word rare in the notebook. The bundled 0.5B model rarely names one (bench/updates.py: 2 of 10 true
pairs, 0 false alarms); with the change-word path 6 of 10, 0 false alarms. Checks, whatever the source:
the replaced note is older, and the two passages that match best (passage embeddings) share a subject
word (`subject_words`). The record lives on the *older* note,
`Note.updated_by`, as a version caused by the newer one: `zk revert` undoes it, `zk rm` of the newer note
forgets it (evolve.forget_changes_by), `zk show` and `zk links` show it. "Now" answers skip a passage
that a newer passage updates and read the newer one instead.
"""

from __future__ import annotations

from collections.abc import Callable

from ..core.models import Note, Version
from ..core.passages import entry_id_of, passage_id
from ..core.text import CHANGE_CUE, sentences
from ..core.words import subject_terms
from .evolve import record


def units(note: Note) -> list[tuple[str, str, list[float] | None]]:
    """(passage id, text, vector) of each passage; a short note is its own single passage."""
    if note.passages:
        return [(passage_id(note.id, p.index), p.text, p.vector) for p in note.passages]
    return [(note.id, note.content, note.raw_vector or note.vector)]


MAX_RARE_CHECKS = 3  # shared words looked up in the notebook's keyword index per pair (each one query)
RARE_IN = 4  # a subject word in at most this many notes (the two compared included) can be what changed


def subject_words(text: str) -> set[str]:
    """The words a passage is about that can name a thing: no particles or question words
    (words.subject_terms), no change words ("바뀌었다" is not a subject), no predicates (a Korean word
    ending in 다: "했다"), no numbers or units."""
    return {t for t in subject_terms(text) if not CHANGE_CUE.search(t) and not any(c.isdigit() for c in t)
            and (len(t) >= 3 if not "\uac00" <= t[0] <= "\ud7a3" else len(t) >= 2 and not t.endswith("다"))}


def best_pair(new: Note, old: Note, cue: bool = False, rare: Callable[[str], bool] | None = None
              ) -> tuple[str, str, list[str]] | None:
    """The new note's passage and the old note's passage that are closest in meaning and share a
    subject word, with the words they share, or None. With `cue`: the word is named in a sentence of the
    new passage that says something changed, and it is `rare` in the notebook (a project every note names
    is not what changed)."""
    pairs = []
    for new_id, new_text, new_vector in units(new):
        new_terms = subject_words(new_text)
        for old_id, old_text, old_vector in units(old):
            shared = new_terms & subject_words(old_text)
            if cue:
                shared = {w for s in sentences(new_text) if CHANGE_CUE.search(s) for w in subject_words(s) & shared}
                shared = {w for w in sorted(shared)[:MAX_RARE_CHECKS] if rare is None or rare(w)}
            if not shared:
                continue
            cosine = sum(a * b for a, b in zip(new_vector, old_vector)) if new_vector and old_vector else 0.0
            pairs.append((cosine, new_id, old_id, sorted(shared)))
    if not pairs:
        return None
    _, new_id, old_id, shared = max(pairs)
    return new_id, old_id, shared


def supersede(new: Note, old: Note, cue: bool = False, rare: Callable[[str], bool] | None = None
              ) -> Version | None:
    """Record on `old` that a passage of `new` updates one of its passages, when the checks hold;
    the version recorded, or None. `cue`: without the model's word, the new passage must say that
    something changed (text.CHANGE_CUE)."""
    if old.id == new.id or old.at >= new.at:
        return None  # an older note never updates a newer one, whatever the model said
    pair = best_pair(new, old, cue, rare)
    if pair is None:
        return None
    by, passage, subject = pair
    if any(e["passage"] == passage and e["by"] == by for e in old.updated_by):
        return None
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
