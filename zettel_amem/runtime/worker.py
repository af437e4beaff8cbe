"""The background worker: `zk add` returns at once, a detached process does the LLM work.

One worker at a time (a non-blocking file lock); it drains the queue of unfinished notes and exits.
A note added while the worker is finishing is not stranded: after releasing the lock the worker
looks at the queue again and, if something is left, tries to take the lock once more.
"""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path

from ..core.models import ProcessResult
from ..storage.locks import take_lock


@contextmanager
def worker_lock(home: Path, wait: bool) -> Iterator[bool]:
    """Yield True if this process holds the worker lock (waits for it when `wait`)."""
    from filelock import Timeout

    try:
        lock = take_lock(home, ".worker.lock", -1 if wait else 0)  # a read-only home: one ZkError line
    except Timeout:
        yield False
        return
    marker = home / ".worker.pid"  # who holds the lock, for `zk doctor` (the lock itself names no one)
    try:
        marker.write_text(str(os.getpid()))
    except OSError:
        pass
    try:
        yield True
    finally:
        marker.unlink(missing_ok=True)
        lock.release()


class Hold:
    """Whether this process may do the model's work now: true while it holds the worker lock and, on a
    shared notebook, the lease (which it can lose if it went unrenewed past its expiry)."""

    def __init__(self, held: bool, lease=None):
        self.held, self.lease = held, lease

    def __bool__(self) -> bool:
        return self.held and not (self.lease is not None and self.lease.lost)


@contextmanager
def work_lock(memory, wait: bool) -> Iterator[Hold]:
    """The worker lock of this machine and, on a shared (object-store) notebook, the lease that makes
    one machine at a time do the model's work (lease.py). Yields whether both are held (a Hold)."""
    with worker_lock(memory.home, wait) as held:
        if not held or not memory.location.remote:
            yield Hold(held)
            return
        from ..storage.lease import Lease

        lease = Lease(memory.store)
        if not lease.acquire(wait):
            yield Hold(False)
            return
        try:
            # The previous holder's last commits must be seen before choosing work: a view a moment old
            # still shows the notes it just finished as pending, and they would be enriched twice.
            memory.store.refresh(memory.store.table)
            yield Hold(True, lease)
        finally:
            lease.release()


def worker_state(home: Path) -> tuple[bool, int | None]:
    """(whether a worker holds the lock now, the pid its marker names). A marker with the lock free
    was left by a worker that died mid-run (its note stays pending)."""
    from filelock import FileLock, Timeout

    marker = home / ".worker.pid"
    try:
        pid = int(marker.read_text().strip())
    except (OSError, ValueError):
        pid = None
    if not (home / ".worker.lock").exists():
        return False, pid
    lock = FileLock(str(home / ".worker.lock"))
    try:
        lock.acquire(timeout=0)
    except Timeout:
        return True, pid
    except OSError:  # a read-only home: nobody can be writing
        return False, pid
    lock.release()
    return False, pid


@contextmanager
def step_lock(home: Path) -> Iterator[None]:
    """Held around each read and each commit of background work (a note's or an episode's stage) and
    by the foreground commands that must not interleave with one: `zk rm` (a worker must not write back a note or a
    summary it read before the deletion), `zk edit`, `zk prune`. Never held across a model call: a unit
    reads under it, calls the model without it, and re-takes it to commit only if what it read is
    unchanged. Waiting costs at most one commit, never a model call or a whole drain."""
    lock = take_lock(home, ".step.lock")  # a read-only home: one ZkError line
    try:
        yield
    finally:
        lock.release()


def spawn(home: Path, jobs: int | None = None) -> None:
    """Start a detached worker; its output goes to <home>/worker.log."""
    home.mkdir(parents=True, exist_ok=True)
    extra = ["--jobs", str(jobs)] if jobs else []
    with open(home / "worker.log", "ab") as log:
        subprocess.Popen(
            [sys.executable, "-m", "zettel_amem", "--home", str(home), "process", "--background", "--quiet", *extra],
            stdin=subprocess.DEVNULL, stdout=log, stderr=log, start_new_session=True, close_fds=True,
            env={**os.environ, "ZK_NO_WORKER": "1"},
        )


def drain(memory, on_progress: Callable[[ProcessResult, int, int], None] | None = None,
          wait: bool = False, then: Callable[[], object] | None = None,
          more_work: Callable[[], bool] | None = None, limit: int | None = None, jobs: int = 1
          ) -> list[ProcessResult] | None:
    """Process every unfinished note (all notebooks), then run `then` (the tiers' promotion chain)
    while still holding the lock; `more_work()` says whether `then` has work queued since (so work
    queued while this worker was finishing is not stranded). With `limit`, stop after that many notes
    and skip `then`. With `jobs` > 1, that many notes are in flight at once (see `_process_all`).
    None if another worker holds the lock."""
    results: list[ProcessResult] = []
    failed: set[str] = set()
    while True:
        with work_lock(memory, wait) as held:
            if not held:
                return None if not results else results
            while True:
                todo = [i for i in memory.pending_ids(all_notebooks=True) if i not in failed]
                if limit is not None:
                    todo = todo[: max(limit - len(results), 0)]
                if not todo:
                    break
                for index, result in enumerate(_process_all(memory, todo, jobs), 1):
                    results.append(result)
                    if result.error:
                        failed.add(result.id)  # keep it pending for a later `zk process`; don't spin on it
                    if on_progress:
                        on_progress(result, index, len(todo))
                    if not held:  # the lease went to another machine: it does the rest, not both of us
                        return results
            if limit is not None:
                return results
            if then is not None:
                then()
        memory.store.refresh(memory.store.table)  # a note another machine added a moment ago is seen
        if not [i for i in memory.pending_ids(all_notebooks=True) if i not in failed] and not (
                more_work is not None and more_work()):
            _upkeep(memory)  # idle now: merge the fragments single adds left, bring the indexes up to date
            memory.warm_words([r.id for r in results if not r.error])  # the first `zk ask` need not embed them
            return results


def _upkeep(memory) -> None:
    """The idle worker's index upkeep; on a shared notebook under the lease, one machine at a time."""
    if not memory.location.remote:
        memory.pipeline.fill_passages()  # a store from before passages: its entries cut into passages
        memory.store.maintain()
        return
    with work_lock(memory, wait=False) as held:
        if held:
            memory.pipeline.fill_passages()
            memory.store.maintain()


def _process_all(memory, ids: list[str], jobs: int) -> Iterator[ProcessResult]:
    """Process notes, yielding results as they finish.

    jobs == 1: one note at a time; the step lock is held around each commit and embedding, never
    around a model call, so `zk rm` and `zk edit` never wait for a slow or hung model server.
    jobs > 1: a thread per note in flight, up to `jobs`. Their model calls overlap (a server batches
    them); every store read-modify-write and embedding runs under one guard, a thread lock plus the
    step lock, so commits stay one at a time, `zk rm` still waits for at most one commit, and each
    commit re-reads what it changes (see `Memory.process`). A kill at any moment leaves each note at
    its last committed stage, exactly as with one job."""
    if jobs > 1 and not getattr(memory.llm, "concurrent", True):  # one llama.cpp context: one call at a time
        jobs = 1
    if jobs <= 1 or len(ids) <= 1:
        for note_id in ids:
            yield memory.process(note_id, lambda: step_lock(memory.home))
        return
    import threading
    from concurrent.futures import FIRST_COMPLETED, ThreadPoolExecutor, wait

    commit = threading.Lock()

    @contextmanager
    def guard() -> Iterator[None]:
        with commit, step_lock(memory.home):
            yield

    queue = iter(ids)
    with ThreadPoolExecutor(max_workers=jobs, thread_name_prefix="zk-note") as pool:
        running = {pool.submit(memory.process, note_id, guard) for note_id in _take(queue, jobs)}
        while running:
            done, running = wait(running, return_when=FIRST_COMPLETED)
            for future in done:
                yield future.result()
            running |= {pool.submit(memory.process, note_id, guard) for note_id in _take(queue, len(done))}


def _take(queue: Iterator[str], count: int) -> list[str]:
    out = []
    for item in queue:
        out.append(item)
        if len(out) >= count:
            break
    return out


def process_or_queue(memory, note_id: str, wait: bool) -> ProcessResult | None:
    """After a write (`zk add`, `zk edit`): run the LLM steps now (`wait`), or start the background
    worker (when `auto_worker` is on).

    With `wait` the step lock guards each commit, never the model call (as in the worker), so `zk rm`
    and `zk edit` of any note never wait for this one's model: each commit re-reads the note and drops
    its result if the note was deleted, edited or finished by a background worker meanwhile. On a
    shared notebook the lease is held throughout (one machine at a time does the model's work)."""
    if wait:
        def guard():
            return step_lock(memory.home)

        if not memory.location.remote:
            return memory.process(note_id, guard)
        with work_lock(memory, wait=True):
            return memory.process(note_id, guard)
    if memory.settings.auto_worker:
        spawn(memory.home)
    return None
