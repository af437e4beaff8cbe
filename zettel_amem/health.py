"""Storage health: what is wrong with a store on disk, and what can still be read from it.

Works on the files, never through `Store` (which refuses a damaged store): a doctor must be able to
look at a store that cannot be opened. Nothing here writes into the store or deletes anything.

Damage it knows (each found against the store's own record, `meta.json`, which holds every table's
version and row count after the last write):
- a table folder that is gone (moved, deleted, a drive not mounted);
- a table older than its record: its newest manifest(s) lost, so LanceDB silently reads an older version;
- a data file the newest version needs that is missing or cut short (a complete Lance file ends in `LANC`).

Recovery reads the table version by version through LanceDB, row by row where a whole read fails:
`take_offsets` reads any set of rows, so a damaged data file costs only the rows stored in it, and
those rows are taken from the newest older version that still reads them (their previous state).
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from .database import SCHEMA_VERSION, data_file_problems, import_lancedb, lance_message, manifest_versions, meta_problem
from .errors import ZkError
from .store import NOTES, TEXT_COLUMNS

_CHUNK = 1024  # rows per read while salvaging


@dataclass
class Finding:
    """One line of a health report: what was checked, whether it is fine, and what it means or needs."""

    check: str
    ok: bool
    message: str

    def to_json(self) -> dict[str, Any]:
        return {"check": self.check, "ok": self.ok, "message": self.message}


@dataclass
class Recovery:
    """What `recover` could read of one table."""

    table: str
    versions: list[int]  # versions whose manifest is on disk, oldest first
    newest: int | None  # the newest version on disk
    newest_rows: int  # rows the newest version holds (by its manifest)
    rows: list[dict[str, Any]] = field(default_factory=list)  # everything readable, vectors left out
    from_older: int = 0  # rows lost in the newest version but read from an older one
    lost: int = 0  # rows of the newest version that no version on disk could give back
    recorded: dict[str, int] | None = None  # meta.json's record of the table

    def to_json(self) -> dict[str, Any]:
        return {"table": self.table, "versions": self.versions, "newest": self.newest,
                "newest_rows": self.newest_rows, "recovered": len(self.rows), "from_older": self.from_older,
                "lost": self.lost, "recorded": self.recorded}


def read_meta(home: Path) -> tuple[dict[str, Any], str | None]:
    """meta.json and what is wrong with it (None when fine; {} when absent)."""
    path = home / "meta.json"
    if not path.exists():
        return {}, None
    try:
        meta = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        return {}, f"meta.json cannot be read ({exc})"
    problem = meta_problem(meta)
    return (meta if not problem else {}), (f"meta.json is damaged: {problem}" if problem else None)


def table_dirs(home: Path, meta: dict[str, Any]) -> dict[str, Path]:
    """Every table the store has or had: the folders on disk and the tables meta.json records."""
    db = home / "lancedb"
    names = {p.name.removesuffix(".lance") for p in db.glob("*.lance")} if db.is_dir() else set()
    names |= set(meta.get("tables") or {})
    return {name: db / f"{name}.lance" for name in sorted(names)}


def diagnose(home: Path) -> list[Finding]:
    """One finding per problem with the store's files (or one OK line per table)."""
    findings: list[Finding] = []
    meta, problem = read_meta(home)
    if problem:
        findings.append(Finding("store", False, f"{problem}; `zk repair` rebuilds it from the tables"))
    elif not meta and not (home / "lancedb").is_dir():
        return [Finding("store", True, f"no store yet at {home} (the first `zk add` creates it)")]
    else:
        version = meta.get("schema_version", 0)
        if version > SCHEMA_VERSION:
            findings.append(Finding("store", False, f"schema version {version} is newer than this zk understands "
                                    f"({SCHEMA_VERSION}); upgrade zettel-amem"))
        else:
            note = " (migrated on next open)" if version < SCHEMA_VERSION else ""
            findings.append(Finding("store", True, f"schema version {version}{note}, embedder "
                                    f"{meta.get('embedder', '?')}, at {home}"))
    recorded_tables = meta.get("tables") or {}
    for name, table_dir in table_dirs(home, meta).items():
        recorded = recorded_tables.get(name)
        check = f"table {name}"
        if not table_dir.is_dir():
            findings.append(Finding(check, False, f"missing, but meta.json records {recorded['rows']} row(s) at "
                                    f"version {recorded['version']}; is the drive mounted? `zk repair` restores "
                                    "from a copy only if one is readable"))
            continue
        versions = manifest_versions(table_dir)
        if not versions:
            findings.append(Finding(check, False, "no table version on disk (every manifest is missing); "
                                    "the data files are kept; restore from a backup (`zk import backup.jsonl`)"))
            continue
        if recorded and versions[-1] < recorded["version"]:
            findings.append(Finding(check, False, f"at version {versions[-1]}, but meta.json records version "
                                    f"{recorded['version']} ({recorded['rows']} rows): its newest commit(s) are "
                                    "missing; run `zk repair`"))
            continue
        problems = data_file_problems(table_dir, versions[-1])
        if problems:
            more = f" and {len(problems) - 1} more" if len(problems) > 1 else ""
            findings.append(Finding(check, False, f"version {versions[-1]}: {problems[0]}{more}; run `zk repair`"))
            continue
        findings.append(Finding(check, True, f"version {versions[-1]}, {len(versions)} version(s) on disk"
                                + (f", {recorded['rows']} row(s) at the last write" if recorded else "")))
    return findings


def is_damaged(home: Path) -> bool:
    return any(not f.ok for f in diagnose(home))


def _read_rows(table, count: int, columns: list[str]) -> tuple[list[dict[str, Any]], list[int]]:
    """Rows 0..count-1 of the checked-out version: (readable rows, offsets that could not be read).
    Reads in chunks; a failing chunk is halved until single rows, so one bad data file costs only its rows."""
    rows: list[dict[str, Any]] = []
    bad: list[int] = []

    def read(start: int, stop: int) -> None:
        try:
            rows.extend(table.take_offsets(list(range(start, stop))).select(columns).to_list())
        except Exception:  # noqa: BLE001 - a damaged file surfaces as any Lance error
            if stop - start == 1:
                bad.append(start)
                return
            middle = (start + stop) // 2
            read(start, middle)
            read(middle, stop)

    for start in range(0, count, _CHUNK):
        read(start, min(start + _CHUNK, count))
    return rows, bad


def recover(home: Path, name: str = NOTES) -> Recovery:
    """Everything LanceDB can still read of one table, newest state first; see the module docstring."""
    lancedb = import_lancedb()

    meta, _ = read_meta(home)
    table_dir = home / "lancedb" / f"{name}.lance"
    recorded = (meta.get("tables") or {}).get(name)
    versions = manifest_versions(table_dir)
    if not table_dir.is_dir() or not versions:
        return Recovery(name, versions, None, 0, recorded=recorded)
    try:
        table = lancedb.connect(str(home / "lancedb")).open_table(name)
        columns = [c for c in (TEXT_COLUMNS if name == NOTES else table.schema.names) if c != "vector"
                   and c in table.schema.names]
        table.checkout(versions[-1])
        count = table.count_rows()
    except Exception as exc:  # noqa: BLE001
        raise ZkError(f"cannot open the {name} table at all: {lance_message(exc)}") from None
    rows, bad = _read_rows(table, count, columns)
    recovery = Recovery(name, versions, versions[-1], count, rows, recorded=recorded)
    if not bad:
        return recovery
    have = {r["id"] for r in rows}
    for version in reversed(versions[:-1]):  # the lost rows' previous state, from the newest version that has it
        try:
            table.checkout(version)
            older, older_bad = _read_rows(table, table.count_rows(), columns)
        except Exception:  # noqa: BLE001
            continue
        extra = [r for r in older if r["id"] not in have]
        recovery.rows.extend(extra)
        recovery.from_older += len(extra)
        have.update(r["id"] for r in extra)
        if not older_bad:
            break
    recovery.lost = max(count - len(recovery.rows), 0)  # rows now holds the older copies too
    return recovery
