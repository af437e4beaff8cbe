"""Opening the notes table of an object-store home (location.py), where other machines open, create and
write the same table at the same time.

Every step is safe to run twice or on two machines at once, with no lock:
- *creation*: the first commit of a table is a conditional write of version 1, tried once; a machine
  that loses the race finds the table there and opens it. (LanceDB's `create_table` would instead
  retry a lost creation as an Overwrite at the next version: an empty table over the winner's, whose
  notes are then gone, and whose next append fails as "incompatible with concurrent transaction
  Overwrite".) The embedder's name and dimension and the schema version travel in the
  table's own schema metadata, so a second machine with another embedder is refused.
- *indexes*: created when absent; a racing machine's identical index is a conflict that leaves one
  index, and the worker's upkeep creates whatever is still missing.
- *schema migration*: decided by the columns the table lacks, not by a local record. Adding a column is
  one commit; a machine whose add conflicts with another's re-reads the table and finds nothing left to
  add. The derived values it fills in are computed from each note's own text, so filling twice writes
  the same values.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from ..core.errors import StoreDamaged, StoreRefused, StoreUnreachable, ZkError
from .database import LAG_TRIES, REMOTE_STALENESS_S, SCHEMA_VERSION, lance_message
from .store_errors import lag_reason, not_a_notebook, plain

if TYPE_CHECKING:
    from .database import Database
    from .store_upkeep import Upkeep  # the store's job that opens, indexes and migrates a table (not Store:
    # store.py imports this module)

EMBEDDER_KEY, DIM_KEY, SCHEMA_KEY = b"zk.embedder", b"zk.dim", b"zk.schema_version"


def schema_metadata(embedder: str, dim: int) -> dict[bytes, bytes]:
    return {EMBEDDER_KEY: embedder.encode(), DIM_KEY: str(dim).encode(), SCHEMA_KEY: str(SCHEMA_VERSION).encode()}


def open_shared(store: Upkeep, meta: dict[str, Any], name: str) -> None:
    """Connect to the object store and open (or create) the table `name` (notes); see the module docstring."""
    try:
        store.connect(meta)
        store.home.mkdir(parents=True, exist_ok=True)
        try:
            store.table = store.remote_call(lambda: store.db.open_table(name), LAG_TRIES)
        except ValueError:  # "Table 'notes' was not found": a new shared notebook
            tables = store.remote_call(lambda: store.db.list_tables().tables)
            foreign = not_a_notebook(store.location, tables)
            if foreign is not None:
                raise foreign from None
            _create(store, name)
        _check_identity(store)
        if not meta:  # this machine's record of the embedder: `zk list` then never loads the model
            store.write_meta()
        if set(store.notes_schema().names) - set(store.table.schema.names):
            _migrate(store, name)
    except ZkError:
        raise
    except Exception as exc:  # noqa: BLE001 - any LanceDB failure means the store is unusable
        raise StoreDamaged(f"cannot open the store at {store.where}: {plain(lance_message(exc))}") from None


def create_once(store: Database, name: str, schema, rows: list[dict] | None = None) -> Any:
    """Create the shared table `name` (with `schema`, and `rows` if given) unless another machine has,
    and open it.

    The creation is Lance's first commit alone: version 1's manifest, written only if absent, with no
    retry (`max_retries=0`). Losing that race is an error here, and the table the winner made is opened;
    nothing is ever committed over it (the loser's data file, if any, is named by no version). When the
    table cannot be opened after the commit either (whether it failed or not), that is `open_created`'s
    error: the store not reached for the moment."""
    import lance
    import pyarrow as pa

    base, _, query = store.location.lancedb_uri.partition("?")  # s3+ddb://bucket/prefix?ddbTableName=T
    uri = f"{base.rstrip('/')}/{name}.lance" + (f"?{query}" if query else "")
    options = store.location.options or None

    def commit():
        fragments = [lance.fragment.LanceFragment.create(uri, pa.Table.from_pylist(rows, schema=schema), 0,
                                                         schema=schema, storage_options=options)] if rows else []
        return lance.LanceDataset.commit(uri, lance.LanceOperation.Overwrite(schema, fragments),
                                         storage_options=options, max_retries=0, enable_v2_manifest_paths=True)

    try:
        store.remote_call(commit)
    except (StoreUnreachable, StoreRefused):
        raise
    except Exception:  # noqa: BLE001 - "already exists" or a lost race: then the table is there
        pass
    return open_created(store, name)


def open_created(store: Database, name: str, tries: int = 3) -> Any:
    """Open the table `name` just created, by this machine or another. A listing that lags the write (a
    caching proxy; the seeded faults of tests/test_store_faults.py) can hide it for a moment: look again
    after the read staleness, then give up as on a store that cannot be reached (`zk add` keeps its note
    in the outbox), never with LanceDB's "was not found"."""
    import time

    for attempt in range(tries):
        try:
            return store.remote_call(lambda: store.db.open_table(name))
        except ValueError:
            if attempt == tries - 1:
                raise StoreUnreachable(f"cannot reach the store at {store.where} ({lag_reason(name)})") from None
            time.sleep(REMOTE_STALENESS_S * (attempt + 1))
    return None


def _create(store: Upkeep, name: str) -> None:
    store.table = create_once(store, name, store.notes_schema().with_metadata(
        schema_metadata(store.embedder_name, store.dim)))
    try:
        store.ensure_indexes()
    except ZkError:
        pass  # a racing machine's index creation won; the worker's upkeep adds what is missing


def _check_identity(store: Upkeep) -> None:
    foreign = not_a_notebook(store.location, [], store.table.schema.names)
    if foreign is not None:
        raise foreign
    recorded = store.table.schema.metadata or {}
    name, dim = recorded.get(EMBEDDER_KEY, b"").decode(), recorded.get(DIM_KEY, b"").decode()
    if name and (name != store.embedder_name or dim != str(store.dim)):
        raise ZkError(f"this store was embedded with '{name}' ({dim} dims), not '{store.embedder_name}'; "
                      f"set ZK_EMBEDDER={name} or use another --home")
    version = int(recorded.get(SCHEMA_KEY, b"0") or 0)
    if version > SCHEMA_VERSION:
        raise ZkError(f"this store uses schema version {version}, newer than this zk understands "
                      f"({SCHEMA_VERSION}); upgrade zettel-amem")


def _migrate(store: Upkeep, name: str, attempts: int = 3) -> None:
    """Add the missing columns; a conflict with another machine's migration is re-read, not repeated."""
    for attempt in range(attempts):
        try:
            store.migrate(0)
            return
        except ZkError:
            store.table = store.remote_call(lambda: store.db.open_table(name))
            if not set(store.notes_schema().names) - set(store.table.schema.names) or attempt == attempts - 1:
                if attempt == attempts - 1:
                    raise
                return
