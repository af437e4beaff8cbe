"""Opening the notes table of an object-store home (location.py), where other machines open, create and
write the same table at the same time.

Every step is safe to run twice or on two machines at once, with no lock:
- *creation*: the first commit of a table is a conditional write; a machine that loses the race finds
  the table there and opens it. The embedder's name and dimension and the schema version travel in the
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

from .database import SCHEMA_VERSION, lance_message
from .errors import StoreDamaged, ZkError

if TYPE_CHECKING:
    from .store import Store

EMBEDDER_KEY, DIM_KEY, SCHEMA_KEY = b"zk.embedder", b"zk.dim", b"zk.schema_version"


def schema_metadata(embedder: str, dim: int) -> dict[bytes, bytes]:
    return {EMBEDDER_KEY: embedder.encode(), DIM_KEY: str(dim).encode(), SCHEMA_KEY: str(SCHEMA_VERSION).encode()}


def open_shared(store: Store, meta: dict[str, Any], name: str) -> None:
    """Connect to the object store and open (or create) the table `name` (notes); see the module docstring."""
    try:
        store.connect(meta)
        store.home.mkdir(parents=True, exist_ok=True)
        try:
            store.table = store.remote_call(lambda: store.db.open_table(name))
        except ValueError:  # "Table 'notes' was not found": a new shared notebook
            _create(store, name)
        _check_identity(store)
        if not meta:  # this machine's record of the embedder: `zk list` then never loads the model
            store.write_meta()
        if set(store.notes_schema().names) - set(store.table.schema.names):
            _migrate(store, name)
    except ZkError:
        raise
    except Exception as exc:  # noqa: BLE001 - any LanceDB failure means the store is unusable
        raise StoreDamaged(f"cannot open the store at {store.where}: {lance_message(exc)}") from None


def _create(store: Store, name: str) -> None:
    schema = store.notes_schema().with_metadata(schema_metadata(store.embedder_name, store.dim))
    try:
        store.remote_call(lambda: store.db.create_table(name, schema=schema))
    except (ValueError, RuntimeError, OSError) as exc:  # another machine created it first
        if "already exists" not in str(exc) and "onflict" not in str(exc):
            raise
    store.table = store.remote_call(lambda: store.db.open_table(name))
    try:
        store.ensure_indexes()
    except ZkError:
        pass  # a racing machine's index creation won; the worker's upkeep adds what is missing


def _check_identity(store: Store) -> None:
    recorded = store.table.schema.metadata or {}
    name, dim = recorded.get(EMBEDDER_KEY, b"").decode(), recorded.get(DIM_KEY, b"").decode()
    if name and (name != store.embedder_name or dim != str(store.dim)):
        raise ZkError(f"this store was embedded with '{name}' ({dim} dims), not '{store.embedder_name}'; "
                      f"set ZK_EMBEDDER={name} or use another --home")
    version = int(recorded.get(SCHEMA_KEY, b"0") or 0)
    if version > SCHEMA_VERSION:
        raise ZkError(f"this store uses schema version {version}, newer than this zk understands "
                      f"({SCHEMA_VERSION}); upgrade zettel-amem")


def _migrate(store: Store, name: str, attempts: int = 3) -> None:
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
