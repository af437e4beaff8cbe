"""The A-MEM pipeline for one note, after it is stored: construct -> link -> evolve.

Each stage is committed atomically and is resumable: a note's `status` says which stage it reached
(pending -> constructed -> ready), so a crash at any point leaves it where `process` picks it up again.
The model is never called while the store's guard is held (see `process`).
"""

from __future__ import annotations

import time
from collections.abc import Callable
from contextlib import AbstractContextManager, nullcontext
from typing import TYPE_CHECKING

from ..backends.llm import LLMError
from ..core.errors import NotFound
from ..core.models import CONSTRUCTED, EVOLVABLE, PENDING, READY, Note, ProcessResult, Usage
from ..core.passages import attach_passages, nearness
from ..core.text import is_trivial, keyword_terms
from ..core.words import regular_stem
from ..retrieval.passage_rank import mostly_korean
from ..retrieval.retrieve import CoverageIndex
from .construct import annotate, nearest_its_own
from .evolve import apply_update, record
from .grounded import DATE_WORDS, record_checks
from .link import Update, decide_links
from .refine import grounded_updates
from .supersede import MAX_RARE_CHECKS, RARE_IN, cosine, says_change, subject_words, supersede, units

if TYPE_CHECKING:
    from ..parts import Parts

CLOSE_ENTRIES = 8  # entries nearest a changing passage whose passages tell how close the closest older one is
ABOUT_POOL = 10  # notes nearest a later clause by raw words, whose passages are then read (refine.most_about)
MAX_TYPED_UPDATES = 2  # older notes one note may mark as updated (supersede.py)


def edited(note: Note) -> bool:
    """Whether the user has edited the note's text: its later annotation and links are then versions."""
    return any(v.reason == "edit" for v in note.history)


def stems(text: str) -> set[str]:
    """The search words of `text`, English ones by their stem ("running" meets "run")."""
    return {regular_stem(term) for term in CoverageIndex.terms(text)}


class Pipeline:
    """Processing of stored notes (the background worker and `zk process` call it through Memory)."""

    def __init__(self, parts: Parts):
        self.parts = parts

    def pending_ids(self, all_notebooks: bool = False) -> list[str]:
        """Notes with LLM work left, oldest first (the background worker serves every notebook)."""
        return self.parts.store.unfinished_ids(None if all_notebooks else self.parts.notebook)

    def process(self, note_id: str, guard: Callable[[], AbstractContextManager] = nullcontext) -> ProcessResult:
        """Construct, link and evolve one note. Safe to call again after a crash at any point.

        `guard` is held around every read-modify-write of the store and every embedding, never
        around a model call: `zk process --jobs N` runs N notes in threads with one shared guard, so
        their LLM calls overlap while their commits stay one at a time. Each commit re-reads what it
        changes, so a note evolved by another thread meanwhile keeps that change, and a note or
        neighbour deleted meanwhile stays deleted."""
        start = time.perf_counter()
        usage = Usage()
        with guard():
            note = self.parts.store.get(note_id, with_vector=True)
        if note is None:
            raise NotFound(f"no note with id {note_id}")
        result = ProcessResult(id=note.id, status=note.status)
        if note.status == READY:  # e.g. the background worker got there first (`zk add --wait`)
            result.links, result.skipped = list(note.links), "already processed"
        try:
            if note.status == PENDING:
                note = self._construct(note, usage, result, guard)
            if note is not None and note.status == CONSTRUCTED:
                note = self._link_and_evolve(note, usage, result, guard)
        except LLMError as exc:  # the note stays at its last committed stage, with the reason
            if exc.usage is not None:  # a failed call still cost its tokens: count them
                usage.add(exc.usage)
            with guard():
                stored = self.parts.store.get(note.id, with_vector=True)
                if stored is not None:
                    stored.error = result.error = str(exc)
                    self.parts.store.update([stored])
            note = stored
        result.status = note.status if note is not None else "deleted"
        result.charge(usage, time.perf_counter() - start)
        return result

    def _fresh(self, note: Note, expected: str) -> Note | None:
        """The stored note if it is still at the stage this step started from, with the text the step
        read (None: deleted, another process finished the step, or `zk edit` changed the text meanwhile:
        the edited note is pending again and is processed afresh)."""
        stored = self.parts.store.get(note.id, with_vector=True)
        return stored if stored is not None and stored.status == expected and stored.content == note.content \
            else None

    def _construct(self, note: Note, usage: Usage, result: ProcessResult, guard) -> Note | None:
        if is_trivial(note.content) or not self.parts.settings.construct:
            with guard():
                if (note := self._fresh(note, PENDING)) is None:
                    return self.parts.store.get(result.id, with_vector=True)
                note.status, note.error = READY, ""
                result.skipped = "trivial note" if self.parts.settings.construct else "construction disabled"
                self.parts.store.update([note])
            return note
        annotation, spent = annotate(self.parts.llm, self.parts.prompts, note, self.parts.settings)
        usage.add(spent)
        with guard():
            annotation = nearest_its_own(annotation, note, self.parts.settings, self.parts.embedder.embed_passages,
                                         self.nearest_other(note.notebook))
        with guard():
            if (note := self._fresh(note, PENDING)) is None:
                return self.parts.store.get(result.id, with_vector=True)
            record_checks(self.parts.checks_file, note.id, construction=annotation.refused)
            before = {name: getattr(note, name) for name in EVOLVABLE}
            note.keywords, note.tags, note.context = annotation.keywords, annotation.tags, annotation.context
            if edited(note):  # re-annotation after `zk edit` is a version too, so a revert restores it whole
                changes = {n: {"old": old, "new": getattr(note, n)} for n, old in before.items()
                           if old != getattr(note, n)}
                if changes:
                    record(note, changes, None, "annotated again after edit")
            note.vector = self.parts.embedder.embed_passages([note.embedding_text()])[0].tolist()
            note.status, note.error = CONSTRUCTED, ""
            self.parts.store.update([note])
        return note

    def link_threshold(self) -> float:
        if self.parts.settings.link_min_similarity is not None:
            return self.parts.settings.link_min_similarity
        from ..backends.embed import DEFAULT_LINK_THRESHOLD, LINK_THRESHOLDS

        return LINK_THRESHOLDS.get(self.parts.embedder.name, DEFAULT_LINK_THRESHOLD)

    def link_candidates(self, note: Note) -> list[tuple[Note, float]]:
        """Nearest already-constructed notes by the note's full embedding (never itself)."""
        return self.parts.store.nearest(note.vector, self.parts.settings.link_candidates, note.notebook,
                                         exclude=note.id, processed=True)

    def worth_a_link_call(self, note: Note, candidates: list[tuple[Note, float]]) -> bool:
        """Whether the model should see the candidates: the nearest is as close as the link threshold, or one
        names a thing the note names that few notes name (a person, place, plan: "knee", "지민", "Jeju").
        e5 scores two journal notes on one story (a knee pain, then the doctor's two weeks of rest: 0.82-0.87)
        no higher than two unrelated Korean notes (0.87), so the threshold alone skipped most of a story's
        link calls, and with them every evolution of its notes (#53)."""
        if not candidates:
            return False
        if candidates[0][1] >= self.link_threshold():
            return True
        words = subject_words(f"{note.content} {' '.join(note.keywords)}")
        rare = self.rare_in_notebook(note.notebook)
        for candidate, _ in candidates:
            shared = sorted(words & subject_words(f"{candidate.content} {' '.join(candidate.keywords)}"))
            if any(rare(word) for word in shared[:MAX_RARE_CHECKS]):
                return True
        return False

    def _link_and_evolve(self, note: Note, usage: Usage, result: ProcessResult, guard) -> Note | None:
        with guard():
            skip = "linking disabled" if not self.parts.settings.link else ""
            candidates = [] if skip else self.link_candidates(note)
            if not skip and not self.worth_a_link_call(note, candidates):
                skip = "no similar neighbour"
            if skip:
                if (note := self._fresh(note, CONSTRUCTED)) is None:
                    return self.parts.store.get(result.id, with_vector=True)
                note.status, note.error, result.skipped = READY, "", skip
                updated = self.typed_updates(note, [], [c.id for c, _ in candidates], {})
                result.updates, result.links = [n.id for n in updated], list(note.links)
                self.parts.store.update([note, *updated])
                return note
        parts = self.parts
        decision, spent = decide_links(parts.llm, parts.prompts, note, [c for c, _ in candidates], parts.settings)
        usage.add(spent)
        with guard():
            if (note := self._fresh(note, CONSTRUCTED)) is None:
                return self.parts.store.get(result.id, with_vector=True)
            # Read links' and neighbours' current state now: another thread or process may have
            # evolved or deleted them during the model call.
            present = self.parts.store.get_many([*decision.links, *decision.replaces,
                                                 *(u.note_id for u in decision.updates)], with_vector=True)
            chosen = [i for i in dict.fromkeys([*decision.replaces, *decision.links]) if i in present]
            old_links = list(note.links)  # an edited note keeps its links; new ones are added after them
            note.links = [i for i in dict.fromkeys([*note.links, *chosen]) if i != note.id]
            note.links = note.links[: self.parts.settings.max_links]
            if edited(note) and note.links != old_links:
                record(note, {"links": {"old": old_links, "new": list(note.links)}}, None, "linked again after edit")
            updates, result.refused = self.grounded_updates([u for u in decision.updates if u.note_id in present],
                                                            present, note)
            record_checks(self.parts.checks_file, note.id, evolution=len(result.refused))
            evolved = [n for u in updates if (n := present[u.note_id]) and apply_update(n, u, note.id, parts.settings)]
            if evolved:  # re-embed at once: an evolved note must never be searched by its old vector
                vectors = self.parts.embedder.embed_passages([n.embedding_text() for n in evolved])
                for neighbour, vector in zip(evolved, vectors):
                    neighbour.vector = vector.tolist()
            updated = self.typed_updates(note, [i for i in decision.replaces if i in note.links],
                                         [c.id for c, _ in candidates], present)
            note.status, note.error = READY, ""
            changed = {n.id: n for n in [*evolved, *updated]}
            self.parts.store.update([note, *changed.values()])  # one atomic commit: links, evolutions, versions
        result.links = list(note.links)
        result.evolved = [n.id for n in evolved]
        result.updates = [n.id for n in updated]
        return note

    def typed_updates(self, note: Note, replaced: list[str], candidates: list[str], present: dict[str, Note]
                      ) -> list[Note]:
        """The older notes `note` updates (supersede.py): those the model said it replaces, then nearest
        candidates whose passage says something changed; each recorded as a version of the older note.
        `present` holds notes already read for this commit (they may carry this commit's evolutions). On a
        page the model's word is not taken: it names a whole page, and on page-long pairs the 0.5B named one
        for most pairs that change nothing (bench/updates.py --pairs long)."""
        replaced = [] if note.passages else replaced
        missing = [i for i in dict.fromkeys([*replaced, *candidates]) if i not in present]
        present.update(self.parts.store.get_many(missing, with_vector=True) if missing else {})
        updated = [present[i] for i in replaced if i in present and supersede(note, present[i])]
        rare, (closest, near) = self.rare_in_notebook(note.notebook), self.closest_older(note, present)
        for other_id in dict.fromkeys([*candidates, *near]):
            if len(updated) >= MAX_TYPED_UPDATES:
                break
            other = present.get(other_id)
            if other is not None and other not in updated and supersede(note, other, True, rare, closest):
                updated.append(other)
        # a typed link is a link: shown both ways by `zk links` (within the cap)
        note.links = list(dict.fromkeys([*note.links, *(n.id for n in updated)]))[: self.parts.settings.max_links]
        return updated

    def closest_older(self, note: Note, present: dict[str, Note]
                      ) -> tuple[dict[str, dict[bool, float]], list[str]]:
        """For each passage of `note` that says something changed: the best cosine an older passage has
        with it, per language of the older passage (e5 scores the other language 0.03-0.1 lower), among
        the CLOSE_ENTRIES entries nearest that passage and those in `present` (which gains the entries read
        here); and the ids of those nearest entries (candidates a page's passage may update where the page
        as a whole is near other pages)."""
        changing = [(pid, vector) for pid, text, vector in units(note) if vector and says_change(text)]
        near = list(dict.fromkeys(n.id for _, vector in changing for n, _ in self.parts.store.nearest(
            vector, CLOSE_ENTRIES, note.notebook, exclude=note.id, processed=True, light=True)))
        missing = [i for i in near if i not in present]
        present.update(self.parts.store.get_many(missing, with_vector=True) if missing else {})
        older = [(mostly_korean(text), v) for n in present.values() if n.at < note.at and n.id != note.id
                 for _, text, v in units(n)]
        closest: dict[str, dict[bool, float]] = {}
        for pid, vector in changing:
            for korean, v in older:
                best = closest.setdefault(pid, {})
                best[korean] = max(best.get(korean, 0.0), cosine(vector, v))
        return closest, near

    def rare_in_notebook(self, notebook: str) -> Callable[[str], bool]:
        """Whether a word is in at most RARE_IN of the notebook's notes (keyword index; each word looked
        up once)."""
        from functools import cache

        @cache
        def rare(word: str) -> bool:
            return len(self.parts.store.mentioning(keyword_terms(word), RARE_IN + 1, notebook)) <= RARE_IN

        return rare

    def grounded_updates(self, updates: list[Update], neighbours: dict[str, Note], cause: Note
                         ) -> tuple[list[Update], list[str]]:
        """What evolution may write into each neighbour, and the ids refused (refine.py)."""
        rare = self.rare_in_notebook(cause.notebook)

        def names_it(word: str) -> bool:
            """A shared word that names one thing, as typed updates read one (supersede.subject_words: no
            particle, predicate, verb form, number or one-syllable Korean word: "문을", "석", "sat" tie any
            two pages), no date, and in few notes."""
            return any(thing not in DATE_WORDS and rare(thing) for thing in subject_words(word))

        return grounded_updates(updates, neighbours, cause, self.parts.settings, names_it,
                                self.parts.embedder.embed_passages, self.nearest_other(cause.notebook))

    def nearest_other(self, notebook: str) -> Callable[[list[float], set[str]], float]:
        """refine.most_about's other side: the best nearness to a vector of the ABOUT_POOL processed notes
        nearest it by their raw words, those left out apart."""

        def best(vector: list[float], leave_out: set[str]) -> float:
            near = [n.id for n, _ in self.parts.store.nearest(vector, ABOUT_POOL, notebook, column="raw_vector",
                                                               processed=True, light=True) if n.id not in leave_out]
            notes = self.parts.store.get_many(near, with_vector=True) if near else {}
            return max((nearness(vector, n) for n in notes.values()), default=-1.0)

        return best

    def fill_passages(self, batch: int = 500) -> int:
        """Cut the entries of a store from before passages (passages.py), then the entries an older zk cut
        only in part (`cut_short`; their passages keep their vectors), a batch at a time: no re-typing,
        nothing else changes. Returns how many entries were written."""
        done = 0
        while True:
            notes = self.parts.store.without_passages(batch) or self.parts.store.cut_short(batch)
            changed = attach_passages(notes, self.parts.embedder.embed_passages) if notes else []
            if not changed:
                return done
            self.parts.store.update(changed)
            done += len(changed)

    def process_pending(self, on_progress: Callable[[ProcessResult, int, int], None] | None = None,
                        limit: int | None = None, all_notebooks: bool = False) -> list[ProcessResult]:
        self.fill_passages()
        ids = self.pending_ids(all_notebooks)[:limit]
        results = []
        for index, note_id in enumerate(ids, 1):
            result = self.process(note_id)
            results.append(result)
            if on_progress:
                on_progress(result, index, len(ids))
        return results
