"""The lock files in a home (`.write.lock`, `.step.lock`, `.worker.lock`, `.outbox.lock`), taken in one
place so that a home zk cannot write to (a read-only mount, a mounted backup, no permission) is the one
line `cannot write to HOME: Read-only file system` for every command that writes, not an internal error
(issue #53 C5). `require_writable` says it before a command asks the user to type anything.
"""

from __future__ import annotations

import errno
import os
from pathlib import Path
from typing import TYPE_CHECKING

from ..core.errors import ZkError

if TYPE_CHECKING:
    from filelock import BaseFileLock

# What a write to a read-only mount or a folder without write permission fails with.
_CANNOT_WRITE = (errno.EROFS, errno.EACCES, errno.EPERM)


def cannot_write(home: Path, exc: OSError) -> ZkError | None:
    """The one line for a write that failed because the home is not writable, or None for another failure."""
    if exc.errno in _CANNOT_WRITE:
        return ZkError(f"cannot write to {home}: {exc.strerror}")
    return None


def take_lock(home: Path, name: str, timeout: float = -1) -> BaseFileLock:
    """The lock file `name` in `home` (made with the home if missing), acquired; the caller releases it.
    Waits up to `timeout` seconds (-1: for ever, then filelock.Timeout)."""
    from filelock import FileLock, Timeout

    try:
        home.mkdir(parents=True, exist_ok=True)
        lock = FileLock(str(home / name))
        lock.acquire(timeout=timeout)
    except Timeout:
        raise
    except OSError as exc:
        error = cannot_write(home, exc)
        if error is None:
            raise
        raise error from None
    return lock


def require_writable(home: Path) -> None:
    """Raise the one line now when `home` cannot be written (before the editor opens: nothing typed is
    then in vain). Opens the step lock file for writing, as every write later does; takes no lock."""
    try:
        home.mkdir(parents=True, exist_ok=True)
        os.close(os.open(home / ".step.lock", os.O_WRONLY | os.O_CREAT, 0o644))
    except OSError as exc:
        error = cannot_write(home, exc)
        if error is None:
            raise
        raise error from None
