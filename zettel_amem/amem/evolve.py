"""Memory evolution, bounded and reversible.

An update from the LLM becomes a new version of the neighbour: the changed fields with their old
and new values, the note that caused it and when. Caps hold whatever the model said: context length,
tag and keyword counts. Re-embedding happens in the caller, in the same atomic write.
"""

from __future__ import annotations

from ..core.config import Settings
from ..core.models import Note, Version, now_iso
from ..core.text import clip
from .link import Update


def merged_terms(new: list[str], old: list[str], cap: int) -> list[str]:
    """New terms first (they describe the latest meaning), then the old ones, deduplicated, capped."""
    out: list[str] = []
    seen: set[str] = set()
    for term in [*new, *old]:
        if term.lower() not in seen:
            seen.add(term.lower())
            out.append(term)
    return out[:cap]


def apply_update(note: Note, update: Update, cause_id: str, settings: Settings,
                 reason: str = "evolution") -> Version | None:
    """Apply one bounded update in place; return the version recorded, or None if nothing changed."""
    proposed = {
        "context": clip(update.context, settings.max_context_chars) if update.context else note.context,
        "tags": merged_terms(update.tags, note.tags, settings.max_tags),
        "keywords": merged_terms(update.keywords, note.keywords, settings.max_keywords),
    }
    changes = {name: {"old": getattr(note, name), "new": value}
               for name, value in proposed.items() if value != getattr(note, name)}
    if not changes:
        return None
    for name, change in changes.items():
        setattr(note, name, change["new"])
    return record(note, changes, cause_id, reason)


def record(note: Note, changes: dict, cause_id: str | None, reason: str) -> Version:
    note.version += 1
    version = Version(version=note.version, at=now_iso(), cause=cause_id, reason=reason, changes=changes)
    note.history.append(version)
    return version


def forget_changes_by(note: Note, cause_id: str) -> bool:
    """Undo, for good, what the note `cause_id` (being deleted) wrote into `note`.

    A field it changed goes back to its value before that change, and every later change of that
    field goes too: later rewrites started from its text, so keeping them could keep its words.
    The history keeps the other fields' changes; entries left empty are dropped, and one entry says
    what was removed (without the removed values). Returns whether anything changed."""
    tainted: dict[str, int] = {}  # field -> first version that the deleted note changed
    for version in sorted(note.history, key=lambda v: v.version):
        if version.cause == cause_id:
            for name in version.changes:
                tainted.setdefault(name, version.version)
    if not tainted:
        return False
    kept: list[Version] = []
    for version in sorted(note.history, key=lambda v: v.version):
        had_changes = bool(version.changes)
        for name, change in list(version.changes.items()):
            if name in tainted and version.version >= tainted[name]:
                if version.version == tainted[name]:
                    setattr(note, name, change["old"])
                del version.changes[name]
        if version.cause != cause_id and (version.changes or not had_changes):  # keep notes like this one
            kept.append(version)
    note.history = kept
    record(note, {}, None, f"removed what deleted note {cause_id[:8]} changed: {', '.join(sorted(tainted))}")
    return True
