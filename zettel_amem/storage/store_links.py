"""Links and backlinks: which notes list a note in their `links` (the links index answers).
"""

from __future__ import annotations

from typing import Any

from ..core.models import Note
from .database import (
    in_list,
    sql_str,
)
from .store_rows import TEXT_COLUMNS, NoteRows, row_to_note


class Links(NoteRows):
    """Backlinks, and the notes that link to others (read with them in one go)."""

    # -- links ------------------------------------------------------------------------------------
    def backlinks(self, note_id: str) -> list[str]:
        rows = self._query(f"array_has_any(links, make_array({sql_str(note_id)}))", ["id", "at"])  # indexed
        return [r["id"] for r in sorted(rows, key=lambda r: r["at"])]

    def _linking_rows(self, note_ids: list[str], columns: list[str]) -> list[dict[str, Any]]:
        """Rows of the notes that link to any of `note_ids`, each once, oldest first."""
        # The links index answers array_has_any; a very long id list makes a huge filter, so it goes in chunks.
        ordered = sorted(set(note_ids))
        rows = [row for start in range(0, len(ordered), 200) for row in self._query(
            "array_has_any(links, make_array(" + ", ".join(sql_str(i) for i in ordered[start:start + 200]) + "))",
            columns)]
        return sorted({r["id"]: r for r in rows}.values(), key=lambda r: r["at"])

    def backlinks_many(self, note_ids: list[str]) -> dict[str, list[str]]:
        """Backlinks of several notes in one read (retrieval expands every hit at once)."""
        if not note_ids:
            return {}
        wanted = set(note_ids)
        out: dict[str, list[str]] = {i: [] for i in note_ids}
        for row in self._linking_rows(note_ids, ["id", "at", "links"]):
            for target in row["links"] or []:
                if target in wanted:
                    out[target].append(row["id"])
        return out

    def notes_and_linking(self, ids: list[str], targets: list[str]) -> tuple[dict[str, Note], list[Note]]:
        """The notes `ids` (as `get_many`) and the notes linking to any of `targets` (as `linking_notes`),
        in one read: search needs both for its hits, and one read costs less than two at once."""
        ids, targets = list(dict.fromkeys(ids)), sorted(set(targets))
        if not targets or len(targets) > 200:
            return self.get_many(ids), self.linking_notes(targets)
        clauses = [f"array_has_any(links, make_array({', '.join(sql_str(t) for t in targets)}))"]
        clauses += [in_list("id", ids)] if ids else []
        notes = self._notes(" OR ".join(f"({c})" for c in clauses))
        wanted, aimed = set(ids), set(targets)
        linking = sorted((n for n in notes if aimed.intersection(n.links)), key=lambda n: n.at)
        return {n.id: n for n in notes if n.id in wanted}, linking

    def linking_notes(self, note_ids: list[str]) -> list[Note]:
        """The whole notes that link to any of `note_ids`, oldest first: backlinks and their text in one
        read (search would otherwise read the ids, then the notes)."""
        return [row_to_note(r) for r in self._linking_rows(note_ids, TEXT_COLUMNS)] if note_ids else []
