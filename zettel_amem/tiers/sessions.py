"""The working tier: sessions (a chat's turns, a journal's week or day) and their closing.

A session is found by its id ("s…"), its episode's id ("e…") or a unique prefix of either. Closing a
session queues its episode for promotion (`promotion.py`); nothing here calls a model.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from typing import TYPE_CHECKING

from ..core import dates
from ..core.errors import AmbiguousId, InvalidInput, NotFound
from ..core.models import EPISODE_PENDING, Episode, Note, episode_id_for, journal_period, now_iso, session_id_for
from ..storage.tier_store import TierStore

if TYPE_CHECKING:  # sessions read a Memory's store; they never import Memory at run time
    from ..memory import Memory

_SESSION_ID = re.compile(r"s?[0-9a-f]{1,15}")


class Sessions:
    def __init__(self, memory: Memory, store: TierStore):
        self.memory = memory
        self.store = store

    def list(self, limit: int | None = None) -> list[dict]:
        """Sessions of the notebook, newest (by last turn) first, each with its episode (id, status,
        abstract) or None."""
        groups: dict[str, list[Note]] = {}
        for note in self.memory.store.session_notes(self.memory.notebook):
            groups.setdefault(note.session_id or "", []).append(note)
        sessions = []
        for session_id, notes in groups.items():
            notes.sort(key=lambda n: (n.seq, n.at, n.created))
            times = sorted(n.at for n in notes)
            speakers = list(dict.fromkeys(n.speaker for n in notes if n.speaker))
            sessions.append({"session_id": session_id, "title": notes[0].source or "", "turns": len(notes),
                             "first_at": times[0], "last_at": times[-1], "speakers": speakers})
        sessions.sort(key=lambda s: (s["last_at"], s["first_at"], s["session_id"]), reverse=True)
        sessions = sessions[:limit] if limit else sessions
        episodes = {e.id: e for e in self.store.episodes(self.memory.notebook)}
        for session in sessions:
            episode = episodes.get(episode_id_for(session["session_id"]))
            session["episode"] = {"id": episode.id, "status": episode.status, "abstract": episode.abstract} \
                if episode else None
        return sessions

    def resolve(self, prefix: str) -> str:
        """Full session id from "s…", an episode id "e…", or a unique prefix of either."""
        cleaned = prefix.strip().lower()
        if cleaned.startswith("e"):
            cleaned = "s" + cleaned[1:]
        if not _SESSION_ID.fullmatch(cleaned):
            raise InvalidInput(f"'{prefix}' is not a session or episode id (expected e.g. s3f9a12bc or e3f9a12bc)")
        cleaned = cleaned if cleaned.startswith("s") else "s" + cleaned
        ids = sorted({n.session_id for n in self.memory.store.session_notes(self.memory.notebook, cleaned)
                      if n.session_id})
        if not ids:
            raise NotFound(f"no session {cleaned} in notebook '{self.memory.notebook}'")
        if len(ids) > 1:
            shown = ", ".join(ids[:5]) + (", ..." if len(ids) > 5 else "")
            raise AmbiguousId(f"session prefix '{cleaned}' is ambiguous: {shown}")
        return ids[0]

    def turns(self, session_id: str, notebook: str | None = None) -> list[Note]:
        """A session's notes in order (the session's own notebook when `notebook` is None)."""
        return self.memory.store.session_turns(session_id, notebook or self.memory.notebook)

    def close(self, session_id: str, force: bool = False) -> Episode:
        """Queue a session for summarising. A session that grew since its episode (or `force`) is queued
        again and summarised afresh from its raw turns; an unchanged one is left as it is."""
        episode = self.store.episode(episode_id_for(session_id))
        # Session ids are derived from the notebook, so one session lives in exactly one notebook.
        notebook = episode.notebook if episode else self.memory.store.notebook_of_session(session_id)
        turns = self.turns(session_id, notebook)
        if not turns:
            raise NotFound(f"session {session_id} has no turns")
        if episode and not force and episode.turns == len(turns) and episode.status != EPISODE_PENDING:
            return episode
        times = sorted(t.at for t in turns)
        episode = Episode(id=episode_id_for(session_id), session_id=session_id, notebook=turns[0].notebook,
                          title=turns[0].source or "", start=times[0], end=times[-1], turns=len(turns),
                          status=EPISODE_PENDING, created=now_iso(),
                          summary=episode.summary if episode else "", abstract=episode.abstract if episode else "",
                          vector=episode.vector if episode else None)
        self.store.put_episodes([episode])
        return episode

    def requeue(self, session_id: str) -> Episode | None:
        """A session whose text changed (`zk edit`): if it was summarised, queue it to be summarised afresh."""
        if self.store.episode(episode_id_for(session_id)) is None:
            return None
        return self.close(session_id, force=True)

    def close_many(self, session_ids: Iterable[str]) -> list[Episode]:
        return [self.close(s) for s in dict.fromkeys(session_ids)]

    def close_due(self, today: str | None = None) -> list[Episode]:
        """Rollover: journal periods (weeks or days) over before `today` without an episode are closed,
        in every notebook. A period's entries may have been written under either setting: each note's
        own session id decides, and a period is due once its last day is past."""
        today = today or dates.today().isoformat()
        # One scan of the journal's raw entries per worker run: fine for a personal journal (10^4-10^5
        # entries); a watermark would make it incremental.
        summarised = {e.session_id: e.turns for e in self.store.episodes(None)}
        rows = self.memory.store.journal_rows_before(today)
        counts: dict[str, int] = {}
        for row in rows:
            counts[row["session_id"]] = counts.get(row["session_id"], 0) + 1
        due: list[str] = []
        for row in rows:
            session_id = row["session_id"]
            if session_id in due or summarised.get(session_id, -1) >= counts[session_id]:
                continue  # already summarised with all its entries (a late, back-dated entry re-opens it)
            for unit in ("week", "day"):
                period = journal_period(row["at"], unit)
                if session_id == session_id_for(row["notebook"], period.key) and period.last_day < today:
                    due.append(session_id)
                    break
        return self.close_many(due)
