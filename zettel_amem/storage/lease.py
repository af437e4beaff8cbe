"""The background work of a shared (object-store) notebook, one machine at a time: a lease row.

Two machines on one bucket each start a background worker after `zk add`. Their commits need no
coordination (LanceDB's commit protocol), but the model's work does: each pending note must be
enriched once, each session summarised once, not once per machine. The lease is one row of a small
LanceDB table in the same store, `{name, holder, expires}`, taken by a *conditional update*
(`merge_insert ... when_matched_update_all(where=...)`): it changes the row only if the lease has
expired or is already ours, and two machines racing for it are one commit conflict that LanceDB
resolves by re-running the update against the winner's row (which then no longer matches). So the
lease rests on the store's own commit protocol; no lock file, no extra service.

While held it is renewed from a thread every RENEW_S; a worker killed with `kill -9` stops renewing and
its lease expires after TTL_S. A process of the *same machine* may take over at once when the holder's
pid is gone (a restarted writer resumes its own work). A local store needs none of this: there the
worker lock of worker.py is exclusive already.
"""

from __future__ import annotations

import os
import socket
import threading
import time
import uuid
from pathlib import Path

from .database import Database, sql_str
from .shared_store import create_once

LEASES = "zk_leases"
TTL_S = 60.0
RENEW_S = 15.0
WAIT_POLL_S = 1.0


def machine_id(home: Path) -> str:
    """This machine's id for a store: a random id kept in its local folder (two data dirs on one host are
    two machines, as in the tests)."""
    path = home / "machine-id"
    try:
        return path.read_text(encoding="utf-8").strip()
    except OSError:
        pass
    value = uuid.uuid4().hex[:12]
    home.mkdir(parents=True, exist_ok=True)
    tmp = path.with_suffix(f".{os.getpid()}.tmp")
    tmp.write_text(value, encoding="utf-8")
    try:
        os.link(tmp, path)  # first writer wins; a racing process reads the winner's id
    except FileExistsError:
        pass
    finally:
        tmp.unlink(missing_ok=True)
    return path.read_text(encoding="utf-8").strip()


def _pid_alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


class Lease:
    """The named lease of one shared store. `acquire()` / `release()`; `lost` turns True once another
    machine holds it (it expired unrenewed): the holder stops before its next note (worker.Hold)."""

    def __init__(self, db: Database, name: str = "worker"):
        self.db, self.name = db, name
        self.me = f"{machine_id(db.home)}:{os.getpid()}:{socket.gethostname()[:40]}"
        self.lost = False
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    def _table(self):
        import pyarrow as pa

        db = self.db.db
        try:
            return self.db.remote_call(lambda: db.open_table(LEASES))
        except ValueError:  # not created yet: create it with the row; a racing creator's table wins
            schema = pa.schema([pa.field("name", pa.string()), pa.field("holder", pa.string()),
                                pa.field("expires", pa.float64())])
            # Its first commit holds the row; a machine that loses the creation opens the winner's table
            # (LanceDB's create_table would commit its own row over the winner's lease: shared_store.py).
            return create_once(self.db, LEASES, schema, [{"name": self.name, "holder": "", "expires": 0.0}])

    def _swap(self, condition: str, holder: str, expires: float) -> bool:
        """Set the row to (holder, expires) if `condition` holds for the stored row: True if it did."""
        table = self._table()
        row = [{"name": self.name, "holder": holder, "expires": expires}]
        try:
            result = self.db.remote_call(lambda: table.merge_insert("name").when_matched_update_all(
                where=condition).execute(row))
        except (ValueError, RuntimeError, OSError):  # conflicts past LanceDB's retries: not ours this time
            return False
        return int(getattr(result, "num_updated_rows", 0) or 0) == 1

    def holder(self) -> tuple[str, float]:
        rows = self.db.remote_call(lambda: self._table().search().where(
            f"name = {sql_str(self.name)}").limit(1).to_list())
        return (rows[0]["holder"] or "", float(rows[0]["expires"] or 0)) if rows else ("", 0.0)

    def try_acquire(self) -> bool:
        now = time.time()
        holder, expires = self.holder()
        if holder and holder != self.me and expires >= now and not self._holder_died(holder):
            # Held by a live worker: say no without writing. A machine that polls by writing makes a commit
            # each second, and the holder's renewal then loses commit races against it (CI, 2026-12-06).
            return False
        mine = f"holder = {sql_str(self.me)}"
        if self._swap(f"target.expires < {now!r} OR target.{mine}", self.me, now + TTL_S):
            return self._started()
        holder, _ = self.holder()
        # The same machine's holder died (kill -9, power cut): take over now, not after TTL_S.
        if self._holder_died(holder) and self._swap(f"target.holder = {sql_str(holder)}", self.me, now + TTL_S):
            return self._started()
        return False

    def _holder_died(self, holder: str) -> bool:
        """Whether `holder` was a process of this machine that is gone."""
        machine, _, rest = holder.partition(":")
        pid = rest.partition(":")[0]
        return machine == machine_id(self.db.home) and pid.isdigit() and not _pid_alive(int(pid))

    def acquire(self, wait: bool) -> bool:
        while not self.try_acquire():
            if not wait:
                return False
            time.sleep(WAIT_POLL_S)
        return True

    def _started(self) -> bool:
        self.lost = False
        self._stop.clear()
        self._thread = threading.Thread(target=self._renew, name="zk-lease", daemon=True)
        self._thread.start()
        return True

    def _renew(self) -> None:
        while not self._stop.wait(RENEW_S):
            try:
                if self._swap(f"target.holder = {sql_str(self.me)}", self.me, time.time() + TTL_S):
                    continue
                # A failed swap is most often a commit race with another machine's write, not a loss: the
                # row decides. Still ours: renew again at the next tick (TTL_S is several RENEW_S away).
                if self.holder()[0] == self.me:
                    continue
            except Exception:  # noqa: BLE001 - unreachable for a moment: try again before it expires
                continue
            self.lost = True
            return

    def release(self) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join()
            self._thread = None
        try:
            self._swap(f"target.holder = {sql_str(self.me)}", "", 0.0)
        except Exception:  # noqa: BLE001 - unreachable: the lease expires by itself
            pass
