"""The errors a user can meet. Each is one line on stderr and a non-zero exit (the CLI maps them);
the library never adds CLI advice to them, the CLI does (`cli.advice_for`).

Subclasses say what kind of failure it is, so callers (the CLI, MCP tools, scripts) can react to the
kind without parsing the message.
"""

from __future__ import annotations

import re


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


class StoreRefused(ZkError):
    """An object-store home answered but cannot be used as it is configured: the bucket is missing or its
    name invalid, the credentials or the region are wrong, the endpoint is not an S3 server, or the prefix
    holds something that is not a zk notebook. The message says which, and what to do (store_errors.py)."""


class NotErased(ZkError):
    """A delete committed, but the deleted text is still in the store's files: erasing it (rewriting the
    files that hold it) failed, on a full disk for one. Every read already misses the deleted rows; the
    home records the debt (`Database.owe_erase`) and `zk doctor`, the next `zk rm` or the worker's upkeep
    erases the text."""


def why_not_erased(exc: BaseException) -> str:
    """Why erasing deleted text failed, in a few words (a failed write's one line, without its store)."""
    text = str(exc)
    if "No space left" in text or "os error 28" in text or "Disk quota" in text:
        return "the disk is full"
    return text.split(": ", 1)[-1] if text.startswith("cannot write to the store at ") else text


class StoreBusy(ZkError):
    """Another zk holds the write lock longer than the wait."""


class InvalidInput(ZkError):
    """Input the user can fix: an empty or over-long note, a malformed id, a bad date or option value."""


class NoteTooLong(InvalidInput):
    """A note over the size limit (a note is an atomic thought; long text belongs in `import`)."""


class ZkWarning(UserWarning):
    """Something the user should know that does not stop the command (an unknown config key, a store
    that can be read but not written). The CLI shows each as one `zk: warning:` line on stderr."""


class DamageWarning(ZkWarning):
    """A damaged store read at an older version: the CLI says it once, when the command ends, and not at
    all when the command fails with a `StoreDamaged` error (whose one line says the same)."""


# Values zk knows to be secret in this process (the API key, a password in a model URL): masked in every
# model error, so a server that echoes them back is never printed, stored in a note's error, a backup or
# `zk doctor`'s output.
_SECRETS: set[str] = set()
_URL_PASSWORD = re.compile(r"(?i)(\b[a-z][a-z0-9+.-]*://[^/@\s:]*:)([^/@\s]*)@")


def register_secret(value: str | None) -> None:
    if value and len(value) >= 4:  # a shorter "secret" would mask ordinary words
        _SECRETS.add(value)


def mask_secrets(text: str) -> str:
    """`text` with every known secret, and any password written in a URL, replaced by ***."""
    for secret in sorted(_SECRETS, key=len, reverse=True):
        text = text.replace(secret, "***")
    return _URL_PASSWORD.sub(r"\1***@", text)


class ZkNotice(ZkWarning):
    """Something zk did on its own that the user should hear of (notes kept offline were sent): one
    `zk: note:` line on stderr."""
