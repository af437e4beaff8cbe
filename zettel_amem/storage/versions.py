"""Table versions after a crash or a power cut: which version of each table can still be read, a
read-only view of the store at those versions, and the rows of newest commits whose manifest was lost.

A power cut leaves the newest files of a commit empty, cut short or zero-filled: the manifest
(`_versions/*.manifest`), or a data file it names. LanceDB then cannot open the table at all (an empty
newest manifest) or fails every read (a damaged data file), although every older version is intact.
So a store is opened at each table's newest *readable* version: a temporary folder of links to the
real files that leaves out the damaged manifests (`readable_view`). It is only read; writes are refused
until `zk repair`.

A lost commit's rows often survive it: Lance writes the data files and the transaction record
(`_transactions/{version - 1}-{uuid}.txn`, naming the files it added) before the manifest. `lost_rows`
reads them back, so a repair can restore the newest state of what the lost commit wrote.
"""

from __future__ import annotations

import os
import shutil
import struct
import tempfile
import weakref
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from .database import DATA_FILE, data_file_problems, manifest_path, manifest_versions

# The operation a transaction record holds: its field number in Lance's `Transaction` message.
_OPERATIONS = {100: "append", 101: "delete", 102: "overwrite", 103: "index", 104: "compaction", 105: "merge",
               106: "restore", 108: "update", 109: "project", 110: "config"}


@dataclass
class TableVersion:
    """Where one table stands on disk."""

    name: str
    newest: int | None  # the newest version whose manifest is on disk (None: no version at all)
    readable: int | None  # the newest version whose manifest and data files are whole (None: none is)
    problem: str | None = None  # why the newest version cannot be read (None: it can)

    @property
    def pinned(self) -> bool:
        """Read at an older version than the newest on disk."""
        return self.problem is not None and self.readable is not None


def table_version(table_dir: Path, verified: set | None = None) -> TableVersion:
    """The table's newest version and its newest readable one. A concurrent upkeep may drop the version
    being checked (a compaction commits, then removes the older files): the check is then repeated."""
    name = table_dir.name.removesuffix(".lance")
    found = TableVersion(name, None, None)
    for _ in range(3):
        versions = manifest_versions(table_dir)
        if not versions:
            return TableVersion(name, None, None)
        found = TableVersion(name, versions[-1], None)
        for version in reversed(versions):
            problems = data_file_problems(table_dir, version, verified)
            if not problems:
                found.readable = version
                break
            found.problem = found.problem or problems[0]
        if found.problem is None or manifest_versions(table_dir)[-1:] == versions[-1:]:
            return found
    return found


def manifest_whole(table_dir: Path, version: int) -> bool:
    """Whether a version's manifest file is complete (its footer ends in `LANC` and points inside the
    file): one cut short or zero-filled is never handed to Lance, which may panic on it."""
    path = manifest_path(table_dir, version)
    try:
        raw = path.read_bytes() if path else b""
        start = struct.unpack("<Q", raw[-16:-8])[0]
        return raw[-4:] == b"LANC" and start + 4 + struct.unpack("<I", raw[start:start + 4])[0] <= len(raw)
    except (OSError, struct.error):
        return False


def table_versions(db_path: Path, verified: set | None = None) -> dict[str, TableVersion]:
    return {d.name.removesuffix(".lance"): table_version(d, verified) for d in sorted(db_path.glob("*.lance"))}


def describe(tables: dict[str, TableVersion]) -> str | None:
    """One line saying which tables are read at an older version (or not at all) and why, or None."""
    parts = [f"the {t.name} table's newest version ({t.newest}) cannot be read ({t.problem}): "
             + (f"version {t.readable} is read instead" if t.pinned else "no version of it is whole, it reads as empty")
             for t in tables.values() if t.problem]
    return "; ".join(parts) or None


def readable_view(db_path: Path, tables: dict[str, TableVersion], owner: object) -> Path | None:
    """A temporary folder in which each table ends at its newest readable version (links to the real
    files; the damaged manifests left out; a table with no whole version left out altogether), or None
    when every table reads at its newest version. The folder is removed when `owner` is collected or
    the process exits."""
    pinned = {name: t.readable for name, t in tables.items() if t.problem}
    if not pinned:
        return None
    root = Path(tempfile.mkdtemp(prefix="zk-readable-"))
    weakref.finalize(owner, shutil.rmtree, root, True)
    for table_dir in sorted(db_path.glob("*.lance")):
        name = table_dir.name.removesuffix(".lance")
        if name not in pinned:
            (root / table_dir.name).symlink_to(table_dir, target_is_directory=True)
            continue
        if pinned[name] is None:
            continue
        view = root / table_dir.name
        view.mkdir()
        for child in table_dir.iterdir():
            if child.name != "_versions":
                (view / child.name).symlink_to(child)
        (view / "_versions").mkdir()
        for version in manifest_versions(table_dir):
            path = manifest_path(table_dir, version)
            if version <= pinned[name] and path is not None:
                (view / "_versions" / path.name).symlink_to(path)
    return root


def is_interrupt(exc: BaseException) -> bool:
    """Ctrl-C or an exit, which a handler of damaged files lets through: such a handler catches
    BaseException, since a Rust panic inside Lance arrives as pyo3's PanicException, not an Exception."""
    return isinstance(exc, (KeyboardInterrupt, SystemExit, GeneratorExit))


# -- the rows of lost commits ------------------------------------------------------------------------
@dataclass
class LostCommit:
    """A version whose manifest is damaged or gone, and what its files still hold."""

    version: int
    operation: str  # "append", "update", "delete", ... or "unknown" (its transaction record is unreadable)
    rows: list[dict[str, Any]] = field(default_factory=list)  # the rows it wrote that could be read back
    unreadable_files: int = 0  # data files it wrote that are damaged too


def transaction_operation(raw: bytes) -> str | None:
    """The operation of a transaction record (a protobuf `Transaction`), or None if it cannot be parsed."""
    pos = 0
    try:
        while pos < len(raw):
            tag, pos = _varint(raw, pos)
            number, kind = tag >> 3, tag & 7
            if number in _OPERATIONS or number >= 100:
                return _OPERATIONS.get(number, f"operation {number}")
            if kind == 0:
                _, pos = _varint(raw, pos)
            elif kind == 2:
                length, pos = _varint(raw, pos)
                pos += length
            else:
                return None
    except IndexError:
        return None
    return None


def _varint(raw: bytes, pos: int) -> tuple[int, int]:
    value = shift = 0
    while True:
        byte = raw[pos]
        pos += 1
        value |= (byte & 0x7F) << shift
        shift += 7
        if not byte & 0x80:
            return value, pos


def _named_files(path: Path | None) -> set[str]:
    try:
        return {m.decode() for m in DATA_FILE.findall(path.read_bytes())} if path else set()
    except OSError:
        return set()


def lost_commits(table_dir: Path, base: int, lost: list[int]) -> list[LostCommit]:
    """What the `lost` versions (newer than `base`, the newest version whose manifest reads) wrote, from
    their transaction records and the data files no readable manifest names. Oldest first."""
    known = _named_files(manifest_path(table_dir, base))
    records: dict[int, list[Path]] = {}
    for txn in sorted((table_dir / "_transactions").glob("*.txn")):
        read_version = txn.name.partition("-")[0]
        if read_version.isdigit():
            records.setdefault(int(read_version) + 1, []).append(txn)
    found = []
    for version in lost:
        commit = LostCommit(version, "unknown")
        for txn in records.get(version, []):
            try:
                raw = txn.read_bytes()
            except OSError:
                continue
            commit.operation = transaction_operation(raw) or commit.operation
            for name in sorted({m.decode() for m in DATA_FILE.findall(raw)} - known):
                rows = read_data_file(table_dir / "data" / name)
                if rows is None:
                    commit.unreadable_files += 1
                else:
                    commit.rows.extend(rows)
        found.append(commit)
    return found


def read_data_file(path: Path) -> list[dict[str, Any]] | None:
    """Every row of one Lance data file, read without a manifest (None: missing or damaged). A file of
    new columns only (a migration's) has no ids and gives no rows."""
    os.environ.setdefault("LANCE_LOG", "error")
    from lance.file import LanceFileReader

    try:
        table = LanceFileReader(str(path)).read_all().to_table()
    except BaseException as exc:  # noqa: BLE001 - a damaged file surfaces as any Lance error, or a panic
        if is_interrupt(exc):
            raise
        return None
    return table.to_pylist() if "id" in table.column_names else []
