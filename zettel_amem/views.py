"""Read-only views of a notebook: its notes newest first, one day's notes oldest first, the user's #tags,
note ids for shell completion, a note's neighbours. Nothing here writes or loads a model; the CLI (and
the MCP server) render what these return.

    views = Views(memory)
    views.notes(since="2026-03-01", tag="run")   # `zk list`
    views.day("yesterday")                       # `zk on`: the day's notes, oldest first
    views.tags()                                 # `zk tags`
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import date
from typing import TYPE_CHECKING

from .core.dates import day_range, parse_when
from .core.errors import ZkError
from .core.models import Note
from .core.text import one_line, tag_key

if TYPE_CHECKING:
    from .memory import Memory


@dataclass(frozen=True)
class Day:
    """One calendar day as `zk on` reads it: the date, its range in ISO time (`end` exclusive), and how a
    guessed phrase was read ("" when the reading was not a guess). A phrase naming a whole month or year
    ("지난달", "last year") is that range: `date` is its first day, `label` "2026-04" or "2025"."""

    date: date
    start: str
    end: str
    note: str = ""
    label: str = ""

    @classmethod
    def of(cls, text: str) -> Day:
        """A day from a date or phrase (2026-03-29, yesterday, 어제, 3일 전 …), or a month or year (지난달,
        last year); raises ZkError on nonsense."""
        return cls(*day_range(text))


def count_tags(notes: list[Note]) -> list[dict]:
    """The user's #tags among `notes`: tag (its first spelling), number of notes, last used; most used first."""
    counts: dict[str, dict] = {}
    for note in sorted(notes, key=lambda n: n.at):
        for tag in note.user_tags:
            row = counts.setdefault(tag_key(tag), {"tag": tag, "count": 0, "last": ""})
            row["count"] += 1
            row["last"] = max(row["last"], note.at)
    return sorted(counts.values(), key=lambda r: (-r["count"], tag_key(r["tag"])))


class Views:
    """What a notebook holds, read and ordered for showing; `memory` gives the store and the notebook."""

    def __init__(self, memory: Memory):
        self.memory = memory

    def notes(self, since: str | None = None, until: str | None = None, limit: int | None = None,
              tag: str | None = None) -> list[Note]:
        """Notes newest first; `since`/`until` (until exclusive): ISO times or phrases; `tag`: only those
        carrying that #tag of the user's (any case, "#" optional)."""
        if limit is not None and limit < 1:
            raise ZkError("the limit must be at least 1")
        key = tag_key(tag) if tag is not None else None
        return self.memory.store.newest(
            self.memory.notebook, limit, since=parse_when(since, "since") if since else None,
            until=parse_when(until, "until") if until else None,
            keep=None if key is None else lambda tags: any(tag_key(t) == key for t in tags))

    def day(self, day: str | Day, tag: str | None = None) -> list[Note]:
        """The notes of one day (a `Day`, or a date or phrase read as `Day.of` does), oldest first: by the
        time they happened, then when they were written, then their place in a chat."""
        day = day if isinstance(day, Day) else Day.of(day)
        return sorted(self.notes(day.start, day.end, tag=tag), key=lambda n: (n.at, n.created, n.seq))

    def tags(self) -> list[dict]:
        """The user's #tags in this notebook (`count_tags`)."""
        return count_tags(self.memory.store.notes(self.memory.notebook, tagged=True))

    def id_completions(self, typed: str, limit: int = 50) -> list[tuple[str, str]]:
        """Shell completion: (short id, "date first words") of the notebook's notes whose id starts with
        `typed`, newest first. Nothing for a home without a store (completion must not create one)."""
        from .storage.store import Store

        typed = typed.strip().lower()
        if not Store.read_meta(self.memory.home) or not all(ch in "0123456789abcdef" for ch in typed):
            return []
        rows = self.memory.store.ids_starting(typed, self.memory.notebook)
        rows.sort(key=lambda r: r["at"], reverse=True)
        size = 8 if len(typed) < 8 else 32
        return [(r["id"][:size], r["at"][:10] + " " + one_line(r["content"], 50)) for r in rows[:limit]]

    def neighbours(self, note: Note) -> list[Note]:
        """The notes `note` links to, then those linking to it (each once)."""
        ids = [*note.links, *self.memory.backlinks(note.id)]
        found = self.memory.store.get_many(ids)
        return [found[i] for i in dict.fromkeys(ids) if i in found]
