"""Storage health: what is wrong with a store on disk, and what can still be read from it.

Works on the files and on Lance datasets opened at a chosen version, never through `Store` (which
refuses a damaged store): a doctor must be able to look at a store that cannot be opened. Nothing here
writes into the store or deletes anything.

Damage it knows (each found against the store's own record, `meta.json`, which holds every table's
version and row count after the last write):
- a table folder that is gone (moved, deleted, a drive not mounted);
- a table older than its record: its newest manifest(s) lost, so LanceDB silently reads an older version;
- a newest manifest that is empty, cut short or zero-filled (a power cut): LanceDB cannot open the table;
- a data file the newest version needs that is missing or cut short (a complete Lance file ends in `LANC`);
- a missing meta.json next to tables that hold rows; a home zk cannot write to.

Recovery reads the newest version whose manifest reads, row by row where a whole read fails: a damaged
data file costs only the rows stored in it, and those rows are taken from the newest older version that
still reads them (their previous state). Then the commits after it whose manifest was lost give back
what they wrote, from their own data files (versions.lost_commits).
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..core.errors import ZkError
from .database import EMBEDDER_KEY, SCHEMA_VERSION, lance_message, manifest_versions, meta_problem
from .store import NOTES
from .versions import LostCommit, is_interrupt, lost_commits, manifest_whole, table_version

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
    newest: int | None  # the newest version whose manifest reads (None: none does)
    newest_rows: int  # rows that version holds (by its manifest)
    rows: list[dict[str, Any]] = field(default_factory=list)  # everything readable, vectors included
    from_older: int = 0  # rows lost in the newest version but read from an older one
    lost: int = 0  # rows of the last write that no file on disk could give back
    recorded: dict[str, int] | None = None  # meta.json's record of the table
    older: list[str] = field(default_factory=list)  # ids restored in an older state (the newest is unreadable)
    changed: list[str] = field(default_factory=list)  # ids whose newest state came from a lost commit's files
    lost_commits: list[LostCommit] = field(default_factory=list)  # commits after `newest`, manifest lost

    def to_json(self) -> dict[str, Any]:
        return {"table": self.table, "versions": self.versions, "newest": self.newest,
                "newest_rows": self.newest_rows, "recovered": len(self.rows), "from_older": self.from_older,
                "lost": self.lost, "recorded": self.recorded, "older": self.older, "changed": self.changed,
                "lost_commits": [{"version": c.version, "operation": c.operation, "rows": len(c.rows),
                                  "unreadable_files": c.unreadable_files} for c in self.lost_commits]}


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


def open_version(table_dir: Path, version: int | None = None):
    """The table as a Lance dataset at `version` (the newest when None), read-only."""
    os.environ.setdefault("LANCE_LOG", "error")
    import lance

    return lance.dataset(str(table_dir), version=version)


def newest_openable(table_dir: Path, versions: list[int]) -> int | None:
    """The newest version whose manifest Lance can read (its data files may still be damaged)."""
    for version in reversed(versions):
        if not manifest_whole(table_dir, version):
            continue
        try:
            open_version(table_dir, version)
            return version
        except BaseException as exc:  # noqa: BLE001 - any Lance error, or a Rust panic
            if is_interrupt(exc):
                raise
            continue
    return None


def recorded_identity(home: Path) -> tuple[str | None, int | None, int]:
    """What the tables themselves say about the store when meta.json is lost: the embedder recorded in
    a table's schema, the dimension of its vectors, and how many notes it holds."""
    embedder, dim, notes = None, None, 0
    for name, table_dir in table_dirs(home, {}).items():
        version = table_version(table_dir).readable
        if version is None:
            continue
        try:
            dataset = open_version(table_dir, version)
        except BaseException as exc:  # noqa: BLE001
            if is_interrupt(exc):
                raise
            continue
        schema = dataset.schema
        embedder = embedder or (schema.metadata or {}).get(EMBEDDER_KEY.encode(), b"").decode() or None
        if "vector" in schema.names and dim is None:
            dim = getattr(schema.field("vector").type, "list_size", None)
        if name == NOTES:
            notes = dataset.count_rows()
    return embedder, dim, notes


def sample_rows(home: Path, name: str, count: int) -> list[dict[str, Any]]:
    """The first `count` rows of the table's newest readable version (none when nothing reads)."""
    table_dir = home / "lancedb" / f"{name}.lance"
    version = table_version(table_dir).readable
    if version is None:
        return []
    dataset = open_version(table_dir, version)
    return dataset.head(min(count, dataset.count_rows())).to_pylist()


def writable_problem(home: Path) -> str | None:
    """Why zk cannot write to this home (a read-only mount, no permission), or None."""
    folders = [home, home / "lancedb", *sorted((home / "lancedb").glob("*.lance"))]
    for folder in folders:
        if folder.is_dir() and not os.access(folder, os.W_OK):
            return f"{folder} is read-only"
    return None


def diagnose(home: Path) -> list[Finding]:
    """One finding per problem with the store's files (or one OK line per table)."""
    meta, problem = read_meta(home)
    if not problem and not meta and not (home / "lancedb").is_dir():
        return [Finding("store", True, f"no store yet at {home} (the first `zk add` creates it)")]
    findings = [_store_finding(home, meta, problem)]
    read_only = writable_problem(home)
    if read_only:
        findings.append(Finding("writable", False, f"{read_only}: reading works, but `zk add` and every other "
                                "write fail; copy the home somewhere writable to change it"))
    recorded_tables = meta.get("tables") or {}
    for name, table_dir in table_dirs(home, meta).items():
        findings.append(_table_finding(name, table_dir, recorded_tables.get(name)))
    return findings


def _store_finding(home: Path, meta: dict[str, Any], problem: str | None) -> Finding:
    if problem:
        return Finding("store", False, f"{problem}; `zk repair` rebuilds it from the tables")
    if not meta:
        embedder, dim, notes = recorded_identity(home)
        if notes:
            named = f"embedder {embedder} recorded in the table" if embedder else "no embedder recorded"
            return Finding("store", False, f"meta.json is missing next to {notes} note(s) ({named}, {dim} dims); "
                           "`zk repair` re-creates it")
    version = meta.get("schema_version", 0)
    if version > SCHEMA_VERSION:
        return Finding("store", False, f"schema version {version} is newer than this zk understands "
                       f"({SCHEMA_VERSION}); upgrade zettel-amem")
    note = " (migrated on next open)" if version < SCHEMA_VERSION else ""
    return Finding("store", True, f"schema version {version}{note}, embedder {meta.get('embedder', '?')}, at {home}")


def _table_finding(name: str, table_dir: Path, recorded: dict | None) -> Finding:
    check = f"table {name}"
    if not table_dir.is_dir():
        return Finding(check, False, f"missing, but meta.json records {recorded['rows']} row(s) at version "
                       f"{recorded['version']}; is the drive mounted? `zk repair` restores from a copy only if "
                       "one is readable")
    versions = manifest_versions(table_dir)
    if not versions:
        return Finding(check, False, "no table version on disk (every manifest is missing); the data files are "
                       "kept; restore from a backup (`zk import backup.jsonl`)")
    if recorded and versions[-1] < recorded["version"]:
        return Finding(check, False, f"at version {versions[-1]}, but meta.json records version "
                       f"{recorded['version']} ({recorded['rows']} rows): its newest commit(s) are missing; "
                       "run `zk repair`")
    state = table_version(table_dir)
    if state.problem:
        fallback = (f"commands read version {state.readable}" if state.readable is not None
                    else "no version of it is whole")
        return Finding(check, False, f"version {state.newest}: {state.problem} ({fallback}); run `zk repair`")
    return Finding(check, True, f"version {versions[-1]}, {len(versions)} version(s) on disk"
                   + (f", {recorded['rows']} row(s) at the last write" if recorded else ""))


def is_damaged(home: Path) -> bool:
    return any(not f.ok for f in diagnose(home))


def _read_rows(dataset, count: int) -> tuple[list[dict[str, Any]], list[int]]:
    """Rows 0..count-1 of the dataset's version, every column: (readable rows, offsets that could not be
    read). Reads in chunks; a failing chunk is halved until single rows, so one bad data file costs only
    its rows."""
    rows: list[dict[str, Any]] = []
    bad: list[int] = []

    def read(start: int, stop: int) -> None:
        try:
            rows.extend(dataset.take(list(range(start, stop))).to_pylist())
        except BaseException as exc:  # noqa: BLE001 - a damaged file surfaces as any Lance error
            if is_interrupt(exc):
                raise
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
    """Everything that can still be read of one table, newest state first; see the module docstring.
    When no version file reads at all, every commit counts as lost: each gives back what it wrote."""
    meta, _ = read_meta(home)
    table_dir = home / "lancedb" / f"{name}.lance"
    recorded = (meta.get("tables") or {}).get(name)
    versions = manifest_versions(table_dir)
    base = newest_openable(table_dir, versions) if table_dir.is_dir() else None
    recovery, bad = Recovery(name, versions, base, 0, recorded=recorded), []
    if base is not None:
        try:
            dataset = open_version(table_dir, base)
            recovery.newest_rows = dataset.count_rows()
        except BaseException as exc:  # noqa: BLE001
            if is_interrupt(exc):
                raise
            raise ZkError(f"cannot open the {name} table at all: {lance_message(exc)}") from None
        recovery.rows, bad = _read_rows(dataset, recovery.newest_rows)
        if bad:
            _add_older_rows(recovery, table_dir)
    newest = max([*versions, int((recorded or {}).get("version") or 0)])
    if table_dir.is_dir():
        recovery.lost_commits = lost_commits(table_dir, base or 0, list(range((base or 0) + 1, newest + 1)))
        _apply_lost_commits(recovery)
    expected = recorded["rows"] if recorded and recorded["version"] >= newest else recovery.newest_rows
    recovery.lost = max(expected - len(recovery.rows), len(bad) - recovery.from_older, 0)
    return recovery


def _add_older_rows(recovery: Recovery, table_dir: Path) -> None:
    """The previous state of rows the newest version cannot read, from the newest older version that has it."""
    have = {r["id"] for r in recovery.rows}
    for version in reversed([v for v in recovery.versions if v < (recovery.newest or 0)]):
        try:
            dataset = open_version(table_dir, version)
            older, older_bad = _read_rows(dataset, dataset.count_rows())
        except BaseException as exc:  # noqa: BLE001
            if is_interrupt(exc):
                raise
            continue
        extra = [r for r in older if r["id"] not in have]
        recovery.rows.extend(extra)
        recovery.older.extend(r["id"] for r in extra)
        recovery.from_older += len(extra)
        have.update(r["id"] for r in extra)
        if not older_bad:
            break


def _apply_lost_commits(recovery: Recovery) -> None:
    """The rows the lost commits wrote replace what the older version holds (a later commit wins)."""
    position = {row["id"]: i for i, row in enumerate(recovery.rows)}
    for commit in recovery.lost_commits:
        for row in commit.rows:
            if row.get("id") is None:
                continue
            index = position.get(row["id"])
            if index is None:
                position[row["id"]] = len(recovery.rows)
                recovery.rows.append(row)
            elif _without_vectors(recovery.rows[index]) != _without_vectors(row):
                recovery.rows[index] = row
            else:
                continue
            if row["id"] not in recovery.changed:
                recovery.changed.append(row["id"])
            if row["id"] in recovery.older:
                recovery.older.remove(row["id"])


def _without_vectors(row: dict[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in row.items() if "vector" not in k}
