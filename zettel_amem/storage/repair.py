"""`zk repair`: bring a damaged store back, keeping everything that can still be read.

1. `plan` finds what is damaged (`health.diagnose`) and reads what is left of each damaged table
   (`health.recover`: the newest readable state of every row, and what lost commits wrote). The notes
   are saved as a `zk export` file before anything changes (in the home, or where `output` says).
2. `apply`, only with the user's consent, replaces what is damaged and nothing else: each damaged table
   folder moves into `damaged-STAMP/` (renamed, never deleted) and is rebuilt from the rows exactly as
   they were read (vectors included: nothing is re-embedded or re-validated, so every note read is
   restored), and meta.json is written anew from the tables. Healthy tables stay as they are.
"""

from __future__ import annotations

import json
import shutil
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..core.errors import ZkError
from . import health
from .database import SCHEMA_VERSION, manifest_versions
from .health import Finding, Recovery
from .store import NOTES, TEXT_COLUMNS, Store, note_to_row, row_to_note
from .tier_store import TierStore

MATCHING_VECTOR = 0.99  # cosine of a stored raw vector and a fresh embedding of its words by the same model
_BATCH = 1000


@dataclass
class Plan:
    """What is damaged, what could be read of it, and where the readable notes were saved."""

    home: Path
    problems: list[Finding]
    tables: dict[str, Recovery] = field(default_factory=dict)  # every damaged table and what it gave back
    missing: list[str] = field(default_factory=list)  # notes table with nothing readable: never rebuilt empty
    emptied: list[str] = field(default_factory=list)  # other tables with nothing readable: set aside, start empty
    meta: dict[str, Any] = field(default_factory=dict)  # meta.json when it can be read
    embedder: str | None = None
    dim: int | None = None
    file: Path | None = None  # the readable notes as a `zk export` file
    read_only: str | None = None  # why the home cannot be changed

    @property
    def notes(self) -> Recovery | None:
        return self.tables.get(NOTES)

    def to_json(self) -> dict[str, Any]:
        notes = self.notes.to_json() if self.notes else {}
        return {"damaged": True, "problems": [f.message for f in self.problems], **notes,
                "tables": {name: r.to_json() for name, r in self.tables.items() if name != NOTES},
                "missing": self.missing, "emptied": self.emptied, "embedder": self.embedder,
                "file": str(self.file) if self.file else None, "read_only": self.read_only}


def plan(home: Path, output: Path | None = None) -> Plan | None:
    """Read what is left of a damaged store and save its notes (None: the store is healthy). Nothing in
    the store changes; the only new file is the saved notes."""
    problems = [f for f in health.diagnose(home) if not f.ok and f.check != "writable"]  # nothing to repair
    if not problems:
        return None
    meta, _ = health.read_meta(home)
    found = Plan(home, problems, meta=meta, read_only=health.writable_problem(home))
    if found.read_only and output is None and _damaged_tables(problems):
        raise ZkError(f"cannot repair {home}: {found.read_only}; copy the home somewhere writable and run "
                      "`zk --home COPY repair` there, or save what can be read with `zk repair -o FILE`")
    for name in _damaged_tables(problems):
        recovery = health.recover(home, name)
        if recovery.rows:
            found.tables[name] = recovery
        else:
            (found.missing if name == NOTES else found.emptied).append(name)
    recorded, dim, _ = health.recorded_identity(home)
    found.embedder = meta.get("embedder") or recorded
    found.dim = meta.get("dim") or dim
    if found.notes:
        found.file = save_notes(found, output or _new_path(home, "recovered-{}.jsonl"))
    return found


def _new_path(home: Path, pattern: str) -> Path:
    """A name in the home that nothing has yet: the time, then -2, -3, ... (two repairs in one second)."""
    stamp = time.strftime("%Y%m%d-%H%M%S")
    for number in range(1, 1000):
        path = home / pattern.format(stamp if number == 1 else f"{stamp}-{number}")
        if not path.exists():
            return path
    raise ZkError(f"too many repairs at {stamp} in {home}")


def _damaged_tables(problems: list[Finding]) -> list[str]:
    return [f.check.removeprefix("table ") for f in problems if f.check.startswith("table ")]


def save_notes(found: Plan, path: Path) -> Path:
    """The readable notes as a `zk export` file (a new file: nothing existing is touched)."""
    notes = [row_to_note({**row, "vector": None, "raw_vector": None}) for row in found.notes.rows]
    notes.sort(key=lambda n: (n.created, n.at, n.seq, n.id))
    try:
        with open(path, "x", encoding="utf-8") as out:
            out.write(json.dumps({"type": "zk-export", "schema_version": SCHEMA_VERSION, "embedder": found.embedder,
                                  "notes": len(notes), "notebooks": sorted({n.notebook for n in notes}),
                                  "recovered_from_version": found.notes.newest}, ensure_ascii=False) + "\n")
            for note in notes:  # the same lines as `zk export` writes
                row = note_to_row(note)
                for column in ("vector", "raw_vector", "terms", "enrichment_terms"):
                    row.pop(column)
                row["history"] = json.loads(row["history"] or "[]")
                out.write(json.dumps({"type": "note", **row}, ensure_ascii=False) + "\n")
    except OSError as exc:
        raise ZkError(f"cannot save the readable notes to {path}: {exc.strerror}") from None
    return path


def identify_embedder(found: Plan, embedder) -> bool:
    """When neither meta.json nor a table names the embedder: take `embedder` (the configured one) only if
    it reproduces the stored vectors of a few notes; a wrong guess would mix two models' vectors."""
    rows = found.notes.rows if found.notes else health.sample_rows(found.home, NOTES, 5)
    rows = [r for r in rows if r.get("raw_vector") is not None][:5]
    if not rows or embedder.dim != found.dim:
        return False
    fresh = embedder.embed_passages([row_to_note({**r, "vector": None}).raw_text() for r in rows])
    for row, vector in zip(rows, fresh):
        stored = [float(x) for x in row["raw_vector"]]
        dot = sum(a * b for a, b in zip(stored, vector))
        norm = (sum(a * a for a in stored) * sum(float(b) * float(b) for b in vector)) ** 0.5
        if not norm or dot / norm < MATCHING_VECTOR:
            return False
    found.embedder = embedder.name
    return True


def apply(found: Plan) -> dict[str, Any]:
    """Replace the damaged tables and meta.json (see the module docstring). Returns what was restored."""
    if found.read_only:
        raise ZkError(f"cannot repair {found.home}: {found.read_only}; nothing was changed")
    if not found.embedder or not found.dim:
        raise ZkError("cannot tell which embedder wrote this store (meta.json is lost and no table records it); "
                      "set ZK_EMBEDDER to the one it used and run `zk repair` again")
    kept = _new_path(found.home, "damaged-{}")
    (kept / "lancedb").mkdir(parents=True)
    for name in [*found.tables, *found.emptied]:
        if (found.home / "lancedb" / f"{name}.lance").exists():
            (found.home / "lancedb" / f"{name}.lance").rename(kept / "lancedb" / f"{name}.lance")
    if (found.home / "meta.json").exists():
        shutil.copy2(found.home / "meta.json", kept / "meta.json")
    _write_meta(found)
    store = Store(found.home, found.embedder, int(found.dim))
    restored: dict[str, int] = {}
    if found.notes:
        notes = [row_to_note(row) for row in found.notes.rows]
        for start in range(0, len(notes), _BATCH):
            store.add(notes[start:start + _BATCH])
        restored[NOTES] = store.count()
    tiers = TierStore(store)
    for name, recovery in found.tables.items():
        if name != NOTES:
            tiers.put_rows(name, recovery.rows)
            restored[name] = len(recovery.rows)
    return {"restored": restored, "kept": kept, "store": store}


def _write_meta(found: Plan) -> None:
    """meta.json anew: the store's identity, and the record of every table left in place."""
    tables = {}
    for name, table_dir in health.table_dirs(found.home, {}).items():
        versions = manifest_versions(table_dir)
        if versions:
            tables[name] = {"version": versions[-1], "rows": health.open_version(table_dir).count_rows()}
    schema_version = found.meta.get("schema_version")
    if schema_version is None:  # meta.json lost: what the notes table's columns say (0: migrate on open)
        schema_version = SCHEMA_VERSION if _current_columns(found.home) else 0
    data = {"schema_version": schema_version, "embedder": found.embedder, "dim": int(found.dim), "tables": tables}
    tmp = found.home / "meta.tmp"
    tmp.write_text(json.dumps(data), encoding="utf-8")
    tmp.replace(found.home / "meta.json")


def _current_columns(home: Path) -> bool:
    table_dir = home / "lancedb" / f"{NOTES}.lance"
    if not manifest_versions(table_dir):
        return True  # rebuilt (or created) by this repair, with today's columns
    names = set(health.open_version(table_dir).schema.names)
    return {*TEXT_COLUMNS, "terms", "enrichment_terms", "vector", "raw_vector", "passage_vectors"} <= names


def describe_note(row: dict[str, Any]) -> str:
    """A note as a report names it: short id and the start of its words."""
    note = row_to_note({**row, "vector": None, "raw_vector": None})
    words = " ".join(note.content.split())
    return f"{note.short_id} \"{words[:50]}{'…' if len(words) > 50 else ''}\""

