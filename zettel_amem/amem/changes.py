"""Changes to stored notes that reach into their history: `zk revert` and `zk rm` (a deleted note's
links, and what it wrote into the notes it evolved, go with it)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from ..core.errors import NotFound, ZkError, why_not_erased
from ..core.models import REVERTIBLE, Note
from ..core.passages import attach_passages
from .evolve import forget_changes_by, record

if TYPE_CHECKING:
    from ..parts import Parts


@dataclass
class Removal:
    """What `Memory.remove` did: notes that lost a link to the deleted one, and notes whose fields
    it had evolved, restored to their state before it."""

    id: str
    unlinked: list[str]
    restored: list[str]
    not_erased: str | None = None  # why the deleted text is still in the store's files (None: erased)


def find(parts: Parts, prefix: str) -> Note:
    note = parts.store.find(prefix, parts.notebook)  # one read, not resolve and get
    if note.notebook != parts.notebook:
        raise NotFound(f"no note with id {prefix} in notebook '{parts.notebook}'")
    return note


def revert(parts: Parts, note_id: str, to_version: int | None = None) -> Note:
    """Restore the evolvable fields as they were at `to_version` (default: before the last change).

    The revert is itself a new version, so the newer states stay in the history and can be restored.
    """
    note = parts.store.get(find(parts, note_id).id, with_vector=True)
    target = note.version - 1 if to_version is None else to_version
    if not 1 <= target < note.version:
        raise ZkError(f"note {note.short_id} is at version {note.version}; "
                      f"choose a version from 1 to {note.version - 1}")
    state = {name: getattr(note, name) for name in REVERTIBLE}
    for version in sorted(note.history, key=lambda v: -v.version):
        if version.version <= target:
            break
        for name, change in version.changes.items():
            if name in state:
                state[name] = change["old"]
    changes = {name: {"old": getattr(note, name), "new": value}
               for name, value in state.items() if value != getattr(note, name)}
    for name, change in changes.items():
        setattr(note, name, change["new"])
    record(note, changes, None, f"revert to v{target}")
    note.vector = parts.embedder.embed_passages([note.embedding_text()])[0].tolist()
    attach_passages([note], parts.embedder.embed_passages)  # the text may be an older one
    parts.store.update([note])
    return note


def remove(parts: Parts, note_id: str) -> Removal:
    """Delete a note, its links in both directions, its history and what it wrote into the notes
    it evolved (one commit), then purge old table versions so its text does not survive on disk. A purge
    that fails leaves the note deleted and its text owed an erase: `not_erased` says why."""
    note = find(parts, note_id)
    linking = parts.store.get_many(parts.store.backlinks(note.id), with_vector=True)
    for other in linking.values():
        other.links = [i for i in other.links if i != note.id]
    # Neighbours it evolved may carry its words in their context/tags and in their history.
    evolved = {n.id: n for n in parts.store.changed_by(note.id)}
    unlinked = list(linking)
    restored = []
    for other_id, other in evolved.items():
        target = linking.setdefault(other_id, other)
        if forget_changes_by(target, note.id):
            restored.append(target)
    if restored:  # no stale vector may keep the removed words searchable
        for n, vector in zip(restored, parts.embedder.embed_passages([n.embedding_text() for n in restored])):
            n.vector = vector.tolist()
    parts.store.delete_for_good([note.id], linking.values())  # one commit: all of it, or nothing
    try:
        parts.store.compact()
    except ZkError as exc:  # deleted, but its text is still in the files (a full disk): the home owes an erase
        return Removal(note.id, unlinked, [n.id for n in restored], not_erased=why_not_erased(exc))
    return Removal(note.id, unlinked, [n.id for n in restored])
