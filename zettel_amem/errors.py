"""The errors a user can meet. Each is one line on stderr and a non-zero exit (the CLI maps them);
the library never adds CLI advice to them, the CLI does (`cli.advice_for`).

Subclasses say what kind of failure it is, so callers (the CLI, MCP tools, scripts) can react to the
kind without parsing the message.
"""

from __future__ import annotations


class ZkError(Exception):
    """An expected failure with a message fit for one line on stderr."""


class NotFound(ZkError):
    """No note, session, episode or entity with that id or name."""


class AmbiguousId(ZkError):
    """An id prefix (or a name) that matches more than one thing."""


class StoreDamaged(ZkError):
    """The store on disk is damaged or cannot be read. `written` says whether a write was refused
    (nothing was written) or a read failed; the CLI adds what to run."""

    def __init__(self, message: str, written: bool = False):
        super().__init__(message)
        self.refused_write = written


class StoreUnreachable(ZkError):
    """An object-store home (`zk --home s3://...`) cannot be reached: offline, a stopped server, a DNS or
    TLS failure. `zk add` keeps the note in the local outbox instead (outbox.py)."""


class StoreBusy(ZkError):
    """Another zk holds the write lock longer than the wait."""


class InvalidInput(ZkError):
    """Input the user can fix: an empty or over-long note, a malformed id, a bad date or option value."""


class NoteTooLong(InvalidInput):
    """A note over the size limit (a note is an atomic thought; long text belongs in `import`)."""


class ZkWarning(UserWarning):
    """Something the user should know that does not stop the command (an unknown config key, a store
    that can be read but not written). The CLI shows each as one `zk: warning:` line on stderr."""


class ZkNotice(ZkWarning):
    """Something zk did on its own that the user should hear of (notes kept offline were sent): one
    `zk: note:` line on stderr."""
