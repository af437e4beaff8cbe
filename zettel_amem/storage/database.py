"""The database under every table: the LanceDB folder, `meta.json`, the one write lock, and the guards
that turn any IO or Lance failure into one clear line.

`meta.json` records the schema version, the embedder (name, dimension) and each table's version and row
count after the last write, so a store that lost commits or vanished is noticed instead of silently read
as older or empty. Writers (several `zk add` processes plus the background worker) serialise on one file
lock; readers never block and always see the latest committed version.

The file checks (manifests, data files) work without LanceDB, so `zk doctor` can use them on a store
that cannot be opened.
"""

from __future__ import annotations

import errno
import json
import os
import re
import struct
import warnings
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager
from datetime import timedelta
from pathlib import Path
from typing import Any

from ..core.errors import DamageWarning, StoreBusy, StoreDamaged, StoreUnreachable, ZkError
from ..core.location import StoreLocation
from .locks import cannot_write, take_lock

SCHEMA_VERSION = 5  # 2: raw_vector (the raw words' embedding beside the enriched one), user_tags (#tags);
#                   3: terms, enrichment_terms (the full-text index's words) and the indexes;
#                   4: passages, passage_vectors (a long entry's passages, passages.py)
#                   5: updated_by (typed updates links, Note.updated_by)
_U64 = (1 << 64) - 1  # LanceDB's v2 manifest names count down: `_versions/{2**64 - 1 - version}.manifest`
REMOTE_STALENESS_S = 1.0  # an object-store read may use a table version this old (see connect)
# A read that meets a listing lagging a write (store_errors.lagging) is run again after 1 s, then 2 s (past the
# read staleness, so Lance lists again): at most 3 s more, then the store counts as not reached for the moment.
LAG_TRIES = 3
REMOTE_COMMIT_TRIES = 5  # a shared store's commit preempted by another machine's is run again (guarded_write)
COMMIT_CONFLICTS = ("Retryable commit conflict", "Commit conflict for version", "Incompatible transaction")
REMOTE_KEEP_VERSIONS = timedelta(minutes=10)  # a shared store's old versions live this long (see cleanup_age)
MAX_VECTOR_DELTAS = 4  # extra segments of a vector index (new rows since training) before they are merged
# Data file names inside a manifest (protobuf; the names are plain strings in it).
_DATA_FILE = re.compile(rb"(?:[01]{24}[0-9a-f]{26}|[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12})"
                        rb"\.lance")
DATA_FILE = _DATA_FILE
EMBEDDER_KEY = "zk.embedder"  # the table schema's record of the embedder, for when meta.json is lost
# Tables whose files may still hold deleted rows' text (table -> since when): written before a delete commits,
# cleared when the table's purge (`Database.upkeep(purge=True)`) has run (see `Database.owe_erase`).
ERASE_OWED = "erase-owed.json"
_RUST_PATH = re.compile(r",?\s*/[^\s,]*\.rs:\d+(?::\d+)?")


def import_lancedb():
    """`import lancedb`, without paying for the REST client of LanceDB namespaces on every start.

    lancedb 0.40 imports `lance_namespace`, which imports `lance_namespace_urllib3_client`, whose
    `__init__` loads every REST endpoint (~0.6 s alone, half of a cold `zk search`). A local store only
    needs its `models` submodule. So the package is entered as a shell whose submodules import as usual;
    its own `__init__` runs the first time anything asks the package itself for a name."""
    import importlib.util
    import os
    import sys

    # The index statistics the worker reads would otherwise log a deprecation warning on every run.
    os.environ.setdefault("LANCE_INCLUDE_VECTOR_CENTROIDS", "false")
    name = "lance_namespace_urllib3_client"
    if "lancedb" not in sys.modules and name not in sys.modules:
        spec = importlib.util.find_spec(name)
        if spec is not None and spec.loader is not None and spec.submodule_search_locations:
            shell = importlib.util.module_from_spec(spec)
            loaded = []

            def load_on_first_use(attr: str):
                if not loaded:
                    loaded.append(True)
                    spec.loader.exec_module(shell)
                    if attr in shell.__dict__:
                        return shell.__dict__[attr]
                raise AttributeError(f"module {name!r} has no attribute {attr!r}")

            shell.__getattr__ = load_on_first_use
            sys.modules[name] = shell
    import lancedb

    return lancedb


def sql_str(value: str) -> str:
    """Quote a string literal for a LanceDB filter (storage modules only: nothing above them builds one)."""
    return "'" + value.replace("'", "''") + "'"


def all_of(notebook: str | None, *clauses: str | None | bool) -> str | None:
    """A filter: the notebook (None: any) and every clause given (falsy ones are left out)."""
    parts = [f"notebook = {sql_str(notebook)}"] if notebook is not None else []
    parts += [c for c in clauses if isinstance(c, str) and c]
    return " AND ".join(f"({p})" for p in parts) or None


def in_list(column: str, values: Iterable[str]) -> str:
    return f"{column} IN (" + ", ".join(sql_str(v) for v in values) + ")"


def lance_message(exc: BaseException) -> str:
    """A LanceDB/Lance error as one line for a user: no Rust source paths, no crate registry paths,
    and the two kinds of damage a user can act on named plainly."""
    text = _RUST_PATH.sub("", " ".join(str(exc).split()))
    text = text.replace("lance error: ", "").replace("LanceError(IO): ", "")
    missing = re.search(r"Not found: (\S+?\.lance)\b", text)
    if missing:
        return f"a data file is missing ({'/'.join(missing.group(1).split('/')[-3:])})"
    if "failed to fill whole buffer" in text or "Out of range" in text:
        return "a data file is truncated or damaged"
    return text[:200]


def manifest_versions(table_dir: Path) -> list[int]:
    """Table versions whose manifest is on disk, oldest first (both manifest naming schemes)."""
    try:
        names = os.listdir(table_dir / "_versions")
    except OSError:
        return []
    found = []
    for name in names:
        stem, _, ext = name.partition(".")
        if ext == "manifest" and stem.isdigit():
            number = int(stem)
            found.append(_U64 - number if number > _U64 // 2 else number)
    return sorted(found)


def manifest_path(table_dir: Path, version: int) -> Path | None:
    for name in (f"{_U64 - version}.manifest", f"{version}.manifest"):
        if (table_dir / "_versions" / name).exists():
            return table_dir / "_versions" / name
    return None


def data_file_problems(table_dir: Path, version: int | None = None, verified: set | None = None) -> list[str]:
    """Data files the table's newest manifest (or `version`'s) names that are missing or cut short.
    A complete Lance file ends with the magic bytes `LANC`; files already verified (Lance never
    rewrites a data file) are skipped through `verified`."""
    if version is None:
        versions = manifest_versions(table_dir)
        if not versions:
            return []
        version = versions[-1]
    path = manifest_path(table_dir, version)
    if path is None:
        return [f"manifest of version {version} is missing"]
    try:
        raw = path.read_bytes()
    except OSError as exc:
        return [f"{path.name} cannot be read ({exc.strerror})"]
    # A manifest file: [inline transaction] [u32 length + manifest protobuf] ... footer [u64 position of
    # the manifest, u16 u16 version, b"LANC"]. Only the manifest part lists the version's data files
    # (the transaction of a compaction names the files it replaced).
    try:
        start = struct.unpack("<Q", raw[-16:-8])[0]
        length = struct.unpack("<I", raw[start:start + 4])[0]
        if raw[-4:] != b"LANC" or start + 4 + length > len(raw):
            raise ValueError
    except (struct.error, ValueError):
        return [f"manifest of version {version} is damaged"]
    names = sorted({m.decode() for m in _DATA_FILE.findall(raw[start + 4:start + 4 + length])})
    problems = []
    for name in names:
        data = table_dir / "data" / name
        try:
            size = data.stat().st_size
            if verified is not None and (data, size) in verified:
                continue
            with open(data, "rb") as fh:
                fh.seek(max(size - 4, 0))
                ok = size >= 8 and fh.read(4) == b"LANC"
        except FileNotFoundError:
            problems.append(f"data file {name} is missing")
            continue
        except OSError as exc:
            problems.append(f"data file {name} cannot be read ({exc.strerror})")
            continue
        if not ok:
            problems.append(f"data file {name} is truncated")
        elif verified is not None:
            verified.add((data, size))
    return problems


def meta_problem(meta: Any) -> str | None:
    """What is wrong with meta.json's fields, or None."""
    if not isinstance(meta, dict):
        return "it is not a JSON object"
    for key, kind, what in (("schema_version", int, "a number"), ("embedder", str, "a string"),
                            ("dim", int, "a number"), ("tables", dict, "an object")):
        value = meta.get(key)
        if value is not None and (not isinstance(value, kind) or isinstance(value, bool)):
            return f"{key} is {json.dumps(value)[:40]}, not {what}"
    for name, recorded in (meta.get("tables") or {}).items():
        counts = [recorded.get(k) for k in ("version", "rows")] if isinstance(recorded, dict) else [None]
        if not all(isinstance(v, int) and not isinstance(v, bool) for v in counts):
            return f"tables.{name} is not a version and a row count"
    return None


def tables_behind_meta(db_path: Path, meta: dict[str, Any]) -> str | None:
    """Why the tables in `db_path` are older than meta.json says (a table missing, or its newest commits
    lost), or None: a file check like the ones above (`Database.compare_with_meta`)."""
    for name, recorded in sorted((meta.get("tables") or {}).items()):
        table_dir = db_path / f"{name}.lance"
        version = int(recorded.get("version") or 0)
        if not table_dir.is_dir():
            return (f"the {name} table is missing, but meta.json records {recorded.get('rows', '?')} row(s) "
                    f"at version {version}")
        if manifest_path(table_dir, version) is not None:
            continue
        newest = (manifest_versions(table_dir) or [0])[-1]
        if newest < version:
            return (f"the {name} table is at version {newest}, but meta.json records version {version} "
                    f"with {recorded.get('rows', '?')} row(s): its newest commit(s) are missing")
    return None


def read_erase_owed(home: Path) -> dict[str, str]:
    """The tables whose files may still hold deleted text, and since when ({} when none, or unreadable)."""
    try:
        owed = json.loads((home / ERASE_OWED).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}
    return {str(k): str(v) for k, v in owed.items()} if isinstance(owed, dict) else {}


def write_erase_owed(home: Path, owed: dict[str, str]) -> None:
    """Replace the record atomically and durably (removed when nothing is owed); raises OSError."""
    path = home / ERASE_OWED
    if not owed:
        path.unlink(missing_ok=True)
        return
    tmp = path.with_suffix(".tmp")
    try:
        with open(tmp, "w", encoding="utf-8") as out:
            out.write(json.dumps(owed))
            out.flush()
            os.fsync(out.fileno())
        tmp.replace(path)
    except OSError:
        tmp.unlink(missing_ok=True)
        raise


def check_meta(meta: dict[str, Any], embedder_name: str, dim: int) -> None:
    """Refuse a store written by a newer zk or with another embedder (an empty meta: a new store)."""
    if not meta:
        return
    if meta.get("schema_version", 0) > SCHEMA_VERSION:
        raise ZkError(
            f"this store uses schema version {meta['schema_version']}, newer than this zk "
            f"understands ({SCHEMA_VERSION}); upgrade zettel-amem")
    if meta.get("embedder") != embedder_name or meta.get("dim") != dim:
        raise ZkError(
            f"this store was embedded with '{meta.get('embedder')}' ({meta.get('dim')} dims), "
            f"not '{embedder_name}'; set ZK_EMBEDDER={meta.get('embedder')} or use another --home")


def store_failure(exc: BaseException, where: str, location: StoreLocation) -> ZkError | None:
    """An object store's failure as one line: StoreUnreachable when the store could not be reached (or its
    listing lags a write), StoreRefused for a refusal with a known cause (a missing bucket, refused
    credentials, ...); None for any other failure."""
    from ..core.location import unreachable
    from .store_errors import explain, lag_reason, lagging

    lag = lagging(str(exc))
    why = unreachable(exc) or (lag_reason(lag) if lag else "")
    if why:
        return StoreUnreachable(f"cannot reach the store at {where} ({why})")
    return explain(exc, location)


# The resident server (cli/server.py) gives every store its commands open one LanceDB session: its caches of
# index and file metadata outlive a command, so a command's first search finds the indexes already read
# (0.30 -> 0.20 s at 100k entries). Each store is still opened, and checked for damage, per command. None:
# a connection makes its own (a process that runs one command).
SHARED_SESSION = None


class ErasedText:
    """Deleted text that a purge has yet to erase from a local home's files: the record `Database` keeps (in
    `ERASE_OWED`) between a delete's commit and its table's purge (`Database.upkeep(purge=True)`)."""

    def erase_owed(self) -> dict[str, str]:
        """Tables whose files may still hold deleted rows' text (-> since when); none on a shared store."""
        return {} if self.remote else read_erase_owed(self.home)

    def owe_erase(self, names: Iterable[str]) -> bool:
        """Before a delete commits (under the write lock): record that `names`' files hold deleted text until
        their purge, so a purge that fails (a full disk) leaves a debt `zk doctor`, the next `zk rm` and the
        worker see, not text nobody knows of. Returns whether every table already owed one. Raises a
        one-line ZkError when the record cannot be written: then nothing may be deleted. (A shared store
        drops old versions after REMOTE_KEEP_VERSIONS anyway: nothing is recorded there.)"""
        owed = self.erase_owed()
        if self.remote or all(name in owed for name in names):
            return True
        from ..core.models import now_iso

        try:
            write_erase_owed(self.home, {**{name: now_iso() for name in names}, **owed})
        except OSError as exc:
            why = "no space left on the disk" if exc.errno in (errno.ENOSPC, errno.EDQUOT) else exc.strerror or exc
            raise cannot_write(self.home, exc) or ZkError(f"cannot write to the store at {self.where}: {why}") from None
        return False

    def settle_erase(self, name: str) -> None:
        """The table's purge ran: it owes no erase (a record that cannot be rewritten costs one purge more)."""
        owed = self.erase_owed()
        if name in owed:
            owed.pop(name)
            try:
                write_erase_owed(self.home, owed)
            except OSError:
                pass

    def erase_now(self) -> list[str]:
        """Run every purge owed (`zk doctor`); returns the tables erased. Raises ZkError if one fails."""
        done = []
        for name in self.erase_owed():
            if name in self.remote_call(lambda: self.db.list_tables().tables):
                self.upkeep(name, self.db.open_table(name), purge=True)
            else:  # a table that is gone holds nothing
                self.settle_erase(name)
            done.append(name)
        return done


class Database(ErasedText):
    """The LanceDB folder of one home and its meta file. Tables live in it (`Store` is the notes table,
    `TierStore` the upper tiers); a subclass opens its own tables."""

    def __init__(self, home: Path, embedder_name: str, dim: int, location: StoreLocation | None = None):
        self.home = home
        self.location = location or StoreLocation(home)
        self.remote = self.location.remote  # tables in an object store (location.py); home stays local
        self.db_path = home / "lancedb"
        self.where = str(self.location)  # what messages name: the folder or the URI
        self.meta_path = home / "meta.json"
        self.embedder_name = embedder_name
        self.dim = dim
        self.damage: str | None = None  # why this store must not be written (it can still be read)
        self._verified: set = set()  # data files found complete; Lance never rewrites one
        self._warned = False

    def connect(self, meta: dict[str, Any], root: Path | None = None) -> None:
        """Check meta.json against this zk and this embedder, then connect (creating the home if new).
        `root`: a read-only view of the database to read instead (versions.readable_view)."""
        lancedb = import_lancedb()

        self.check_meta(meta)
        if not self.home.exists():
            try:
                self.home.mkdir(parents=True, exist_ok=True)
            except OSError as exc:
                raise ZkError(f"cannot create the store directory {self.home}: {exc.strerror}") from None
        # `root`: a read-only view after a crash (local only). read_consistency_interval=0: every read sees
        # commits made by other processes. On an object store that check is a LIST request before every read
        # (a search makes dozens): there a read may use a version up to REMOTE_STALENESS_S old, and the
        # worker refreshes where it must (`refresh`).
        interval = timedelta(seconds=REMOTE_STALENESS_S) if self.remote else timedelta(0)
        shared = {"session": SHARED_SESSION} if SHARED_SESSION is not None else {}
        self.db = self.remote_call(lambda: lancedb.connect(
            str(root) if root else self.location.lancedb_uri, read_consistency_interval=interval,
            storage_options=self.location.options or None, **shared))

    def check_meta(self, meta: dict[str, Any]) -> None:
        """Refuse a store written by a newer zk or with another embedder (an empty meta: a new store)."""
        check_meta(meta, self.embedder_name, self.dim)

    def refresh(self, *tables) -> None:
        """See other machines' newest commits now (object store only; a local store always does)."""
        if self.remote:
            for table in tables:
                self.remote_call(table.checkout_latest, LAG_TRIES)

    def remote_call(self, action, lag_tries: int = 1):
        """Run a LanceDB call; on an object store a failure to reach it is StoreUnreachable and a refusal
        with a known cause StoreRefused, each one line (`store_failure`). `lag_tries` (reads only: a write
        is never run twice here): a listing that lags a write is looked at again, with backoff, that many
        times in all before the store counts as not reached."""
        import time

        from .store_errors import lagging

        for attempt in range(lag_tries):
            try:
                return action()
            except Exception as exc:  # noqa: BLE001 - classified: unreachable, refused, or raised as it was
                if not self.remote:
                    raise
                if attempt < lag_tries - 1 and lagging(str(exc)):
                    time.sleep(REMOTE_STALENESS_S * (attempt + 1))  # past the read staleness: Lance lists again
                    continue
                failure = store_failure(exc, self.where, self.location)
                if failure is not None:
                    raise failure from None
                raise
        return None

    def version_of(self, table) -> int:
        """The table's version: a read like any other (on an object store it may list the versions)."""
        return int(self.guarded_read(lambda: table.version))

    def table_dir(self, name: str) -> Path:
        return self.db_path / f"{name}.lance"

    def compare_with_meta(self, meta: dict[str, Any]) -> str | None:
        """Why the tables on disk are older than meta.json says (their newest commits lost), or None.

        meta.json is written after each commit, so a table may be newer than it (a crash in between),
        never older: an older table lost its newest manifest(s), and a write now would silently build
        on the old version and overwrite the lost one's number. (An object store does not lose commits
        the way a synced folder does, and other machines commit too: not checked there.)"""
        return None if self.remote else tables_behind_meta(self.db_path, meta)

    @staticmethod
    def read_meta(home: Path) -> dict[str, Any]:
        """meta.json, its fields checked: a damaged file is one clear error, never a TypeError later."""
        path = home / "meta.json"
        if not path.exists():
            return {}
        try:
            meta = json.loads(path.read_text(encoding="utf-8"))
        except (OSError, ValueError) as exc:
            raise StoreDamaged(f"cannot read {path}: {exc}") from None
        problem = meta_problem(meta)
        if problem:
            raise StoreDamaged(f"{path} is damaged: {problem}")
        return meta

    def _write_meta(self, tables: dict[str, dict] | None = None) -> None:
        """Write meta.json atomically (under the write lock), keeping what it already records."""
        try:
            old = json.loads(self.meta_path.read_text(encoding="utf-8")) if self.meta_path.exists() else {}
        except (OSError, ValueError):
            old = {}
        merged = {**(old.get("tables") or {}), **(tables or {})} if isinstance(old, dict) else dict(tables or {})
        data = {"schema_version": SCHEMA_VERSION, "embedder": self.embedder_name, "dim": self.dim}
        if merged:
            data["tables"] = merged
        tmp = self.meta_path.with_suffix(".tmp")
        tmp.write_text(json.dumps(data), encoding="utf-8")
        tmp.replace(self.meta_path)

    def write_meta(self) -> None:
        self._write_meta()

    def record(self, name: str, table) -> None:
        """After a commit: the table's version and row count go into meta.json (see compare_with_meta), and
        the embedder into the table's own schema once, so a lost meta.json can be re-created.
        Not for an object store: counting the rows would cost requests, and the check is local-only."""
        if self.remote:
            return
        try:
            if EMBEDDER_KEY.encode() not in (table.schema.metadata or {}):
                table.to_lance().update_schema_metadata({EMBEDDER_KEY: self.embedder_name})
                table.checkout_latest()
        except Exception:  # noqa: BLE001 - a second record only; meta.json still names the embedder
            pass
        try:
            self._write_meta({name: {"version": int(table.version), "rows": int(table.count_rows())}})
        except OSError:
            pass  # the commit itself is durable; a missing record only weakens the next check

    @contextmanager
    def write_lock(self, timeout: float = 120, check: bool = True) -> Iterator[None]:
        """The one writer lock. With `check`, a damaged store (lost commits, a missing or truncated data
        file in any table) refuses the write before anything is written."""
        from filelock import Timeout

        try:
            lock = take_lock(self.home, ".write.lock", timeout)  # a read-only home: one ZkError line
        except Timeout:
            raise StoreBusy("the store is busy (another zk is writing); try again") from None
        try:
            if check:
                self.check_writable()
            yield
        except OSError as exc:  # a write under the lock to a home that turned read-only (a remount)
            error = cannot_write(self.home, exc)
            if error is None:
                raise
            raise error from None
        finally:
            lock.release()

    def check_writable(self) -> None:
        """Raise a one-line ZkError when writing would build on a damaged store."""
        if self.damage:
            raise StoreDamaged(f"{self.damage}; nothing was written", written=True)
        if self.remote:  # the file checks read a local folder
            return
        damage = self.compare_with_meta(self.read_meta(self.home))
        if damage:
            self.damage = damage
            raise StoreDamaged(f"{damage}; nothing was written", written=True)
        for table_dir in sorted(self.db_path.glob("*.lance")):
            problems = data_file_problems(table_dir, verified=self._verified)
            if problems:
                raise StoreDamaged(f"the {table_dir.stem} table is damaged ({problems[0]}"
                              f"{f' and {len(problems) - 1} more' if len(problems) > 1 else ''}); nothing was written",
                              written=True)

    def guarded_write(self, action) -> None:
        """Run one commit; any IO or Lance failure becomes one clear line (nothing half-done)."""
        try:
            self._committed(action)
        except OSError as exc:
            raise ZkError(f"cannot write to the store at {self.where}: {lance_message(exc)}") from None
        except ZkError:
            raise
        except Exception as exc:  # noqa: BLE001 - a Lance error during a commit: one line, nothing half-done
            raise StoreDamaged(f"cannot write to the store at {self.where}: {lance_message(exc)}") from None

    def _committed(self, action) -> None:
        """Run one commit. On a shared store a commit that another machine's commit preempted (nothing of it
        was written) is run again, whole, once this process sees the newer version: Lance says "Retryable
        commit conflict" when its own retries ran out, "Incompatible transaction" when the other commit
        cannot be merged with this one (a compaction under a delete). Every write of zk applies to
        whatever version it runs on (an append, an update or delete by id, a compaction)."""
        import random
        import time

        for attempt in range(REMOTE_COMMIT_TRIES if self.remote else 1):
            try:
                self.remote_call(action)
                return
            except Exception as exc:  # noqa: BLE001 - only a preempted commit is tried again
                if attempt == REMOTE_COMMIT_TRIES - 1 or not any(m in str(exc) for m in COMMIT_CONFLICTS):
                    raise
            time.sleep(REMOTE_STALENESS_S + random.uniform(0, attempt + 1))  # past the read staleness

    def guarded_read(self, action):
        """Run one read; a damaged file becomes one clear line, and a store older than its record is
        said once."""
        if self.damage and not self._warned:  # readable, but older than it should be: say so once
            self._warned = True
            warnings.warn(DamageWarning(f"{self.damage}; showing what is left, writes are refused until `zk repair`"),
                          stacklevel=2)
        try:
            return self.remote_call(action, LAG_TRIES)
        except ZkError:
            raise
        except Exception as exc:  # noqa: BLE001 - a damaged file surfaces here as any Lance error
            first = exc
        if not self.remote and "Not found" in str(first):
            # Upkeep in another process (the worker, `zk process`) drops every old version of a local table at
            # once (`cleanup_age`), with the files of the version this read began on: read the newest, once.
            try:
                return action()
            except Exception:  # noqa: BLE001, S110 - still missing: damage, said below as the first error
                pass
        raise StoreDamaged(f"cannot read the store at {self.where}: {lance_message(first)}") from None

    def lance_dataset(self, table):
        """The table as a pylance dataset at its newest version: on an object store the table object may
        not know yet of a commit made through pylance a moment ago (see connect)."""
        self.refresh(table)
        return table.to_lance()

    def upkeep(self, name: str, table, purge: bool = False) -> None:
        """The idle worker's upkeep of one table (`optimize_table`: merge the small fragments, fold the new
        rows into every index, drop old versions), under the write lock like any commit, then recorded.
        `purge` (after a delete, or when an earlier purge of the table is owed): also rewrite every data
        file that still holds a deleted row; once done, the debt is settled."""
        load_pylance()  # before the lock and the guard: a missing pylance is not a damaged store
        purge = purge or name in self.erase_owed()

        def run() -> None:
            optimize_table(table, lambda: self.lance_dataset(table), purge, self.remote)
            self.refresh(table)

        with self.write_lock(), warnings.catch_warnings():
            warnings.simplefilter("ignore", UserWarning)
            self.guarded_write(run)
            self.record(name, table)
            if purge:
                self.settle_erase(name)


# -- a table's upkeep: Lance's compaction, index folding and version cleanup, apart from the guards above --
def load_pylance() -> None:
    """Import pylance (for upkeep only: the parts of Lance lancedb does not expose), quieted."""
    os.environ.setdefault("LANCE_LOG", "error")  # "partition 9 is empty, skipping" is not news
    import lance  # noqa: F401 - pylance, imported here only


def optimize_table(table, dataset: Callable[[], Any], purge: bool, remote: bool) -> None:
    """Upkeep of one table, in time that grows with the rows written since, not with the table: merge the
    small fragments, fold the new rows into every index, drop old versions (`cleanup_age`). `dataset()`:
    the table as a pylance dataset at its newest version (each step commits a new one).
    LanceDB's `optimize` folds new rows into a vector index by rebuilding the whole of it: 116 s at 100k
    notes for 3 new rows, under the write lock that `zk add` waits for. Through pylance the new rows of
    a vector index become a small extra segment instead; those segments are merged with one another,
    never with the trained index, once there are MAX_VECTOR_DELTAS of them.
    `purge` (after a delete): rewrite every data file that still holds a deleted row, however few;
    compaction's default leaves a file alone below 10 % deleted rows, and the deleted text in it."""
    dataset().optimize.compact_files(materialize_deletions_threshold=0.0 if purge else 0.1)
    indexes = table.list_indices()
    other = [i.name for i in indexes if not i.index_type.startswith("Ivf")]
    if other:
        dataset().optimize.optimize_indices(index_names=other)  # cheap: scalar and full-text
    for index in indexes:
        if index.index_type.startswith("Ivf"):  # a vector index
            deltas = (index.num_segments or 1) - 1  # the newest segments; the first is the trained one
            merge = deltas if deltas >= MAX_VECTOR_DELTAS else 0
            dataset().optimize.optimize_indices(index_names=[index.name], num_indices_to_merge=merge)
    dataset().cleanup_old_versions(**cleanup_age(remote))


def cleanup_age(remote: bool) -> dict:
    """Which old versions upkeep drops. Locally: all of them at once (a deleted note's text must not
    survive on disk), and files no version names (a killed commit's). On a shared store another
    machine may be reading an older version or be in the middle of a commit whose files no version
    names yet: only versions older than REMOTE_KEEP_VERSIONS, and never unnamed files (LanceDB drops
    those itself after a week)."""
    if remote:
        return {"older_than": REMOTE_KEEP_VERSIONS, "delete_unverified": False}
    return {"older_than": timedelta(0), "delete_unverified": True}
