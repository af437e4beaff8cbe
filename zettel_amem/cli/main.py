"""`zk`'s entry point: run the command; every expected failure is one line on stderr and a non-zero exit
code, and the library's warnings are one line each.

The commands are registered on `common.app` by the COMMANDS table in cli/__init__.py, which Python runs
before this module whenever `zettel_amem.cli.main` is imported.
"""

from __future__ import annotations

import errno
import os
import sys

import typer

from ..core.errors import ZkError
from .common import app


def error_line(message: str) -> str:
    """An error is one line: control characters the user typed (a CR in a date) are shown escaped, and
    known secrets (the model server's API key, a URL password) masked."""
    from ..core.errors import mask_secrets

    message = mask_secrets(message)
    return "".join(ch if ch.isprintable() else ch.encode("unicode_escape").decode("ascii")
                   for ch in message.strip())


# True in the resident server (server.py): a command ends, the process goes on serving.
RESIDENT = False


def interrupted(detail: str = "") -> None:
    """Ctrl-C: one line, then exit at once. Every write is already committed (or never started), so
    the interpreter's slow teardown (unloading the model, LanceDB's threads; ~2 s here) is skipped."""
    sys.stderr.write("zk: interrupted" + (f"; {detail}" if detail else "") + "\n")
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except (OSError, ValueError):
            pass
    if RESIDENT:
        raise SystemExit(130)
    os._exit(130)


_HELD_WARNINGS: list[str] = []  # DamageWarnings, said when the command ends


def _install_warning_line() -> None:
    """`ZkWarning`s (unknown config keys, a store that can only be read) are one line each on stderr."""
    import warnings

    from ..core.errors import DamageWarning, ZkNotice, ZkWarning

    warnings.simplefilter("always", ZkWarning)
    if getattr(warnings.showwarning, "__name__", "") == "_zk_showwarning":
        return
    original = warnings.showwarning

    def _zk_showwarning(message, category, *rest, **kwargs) -> None:
        if issubclass(category, DamageWarning):
            _HELD_WARNINGS.append(f"zk: warning: {error_line(str(message))}\n")
        elif issubclass(category, ZkWarning):
            label = "note" if issubclass(category, ZkNotice) else "warning"
            sys.stderr.write(f"zk: {label}: {error_line(str(message))}\n")
        else:
            original(message, category, *rest, **kwargs)

    warnings.showwarning = _zk_showwarning


def _say_held_warnings(error: Exception | None = None) -> None:
    """The damage warnings of this command, unless it failed on the damage itself (its error says it)."""
    from ..core.errors import StoreDamaged

    if not isinstance(error, StoreDamaged):
        sys.stderr.writelines(_HELD_WARNINGS)
    _HELD_WARNINGS.clear()


def advice_for(exc: Exception) -> str:
    """What to run next, for the kinds of failure where a command helps (the library's messages say only
    what happened: the same errors reach MCP clients and scripts)."""
    from ..core.errors import NoteTooLong, StoreDamaged, StoreUnreachable

    if isinstance(exc, StoreUnreachable):
        return ("; is the network up and the endpoint right (AWS_ENDPOINT_URL or store_endpoint)? Reads need "
                "the store (`zk add` keeps notes in the local outbox meanwhile)")
    if isinstance(exc, StoreDamaged):
        return "; run `zk doctor`, then `zk repair`" if exc.refused_write else "; `zk doctor` checks the store"
    if isinstance(exc, NoteTooLong):
        return "; split it into smaller notes (`zk import FILE` stores each line of a text file as its own note)"
    return ""


def _folder_deleted() -> bool:
    try:
        os.getcwd()
    except FileNotFoundError:
        return True
    return False


_built: list = []


def _command():
    """The Click command Typer builds from `app`, once per process (~20 ms; the resident server runs many)."""
    if not _built:
        _built.append(typer.main.get_command(app))
    return _built[0]


def main() -> None:
    """Entry point: one clear line on stderr and a non-zero exit for every expected failure."""
    _install_warning_line()
    _HELD_WARNINGS.clear()  # an earlier main() in this process (tests) ended without saying them
    try:
        code = _command().main(prog_name="zk", standalone_mode=False)
        _say_held_warnings()
        if isinstance(code, int) and code:  # click returns (not raises) Exit codes in this mode
            sys.exit(code)
    except ZkError as exc:
        _say_held_warnings(exc)
        sys.stderr.write(f"zk: error: {error_line(str(exc) + advice_for(exc))}\n")
        sys.exit(1)
    except (KeyboardInterrupt, EOFError):
        interrupted()
    except BrokenPipeError:
        sys.exit(0)
    except SystemExit:
        _say_held_warnings()
        raise
    except Exception as exc:  # noqa: BLE001 - last resort: never show a traceback to a user
        _say_held_warnings()
        # Typer vendors its own click; its usage errors are recognised by shape, not by class.
        if type(exc).__name__ == "NoArgsIsHelpError":  # bare `zk`: show the help, like --help
            sys.stdout.write(exc.format_message().removeprefix("Usage: ").join(["Usage: ", "\n"]))
            sys.exit(0)
        if hasattr(exc, "format_message") and hasattr(exc, "exit_code"):
            sys.stderr.write(f"zk: error: {error_line(exc.format_message())}\n")
            sys.exit(exc.exit_code or 2)
        if type(exc).__name__ in ("Abort", "Exit"):
            sys.stderr.write("zk: interrupted\n") if type(exc).__name__ == "Abort" else None
            sys.exit(getattr(exc, "exit_code", 1) or (1 if type(exc).__name__ == "Abort" else 0))
        if isinstance(exc, OSError) and exc.errno == errno.EROFS and exc.filename:
            # a read-only mount under a write no command foresaw: the user can act on it, so the one line
            folder = os.path.dirname(os.fsdecode(exc.filename))
            sys.stderr.write(f"zk: error: {error_line(f'cannot write to {folder}: {exc.strerror}')}\n")
            sys.exit(1)
        if isinstance(exc, UnicodeEncodeError) and "surrogates" in str(exc):
            # bytes that are not UTF-8 in an argument (`zk search $'\xff'`): Python keeps them as surrogates
            sys.stderr.write("zk: error: the text given is not valid UTF-8\n")
            sys.exit(1)
        if isinstance(exc, OSError) and exc.errno == errno.EBADF:
            # `zk add - 0>>file`, `zk list 1<file`: a standard stream opened the wrong way round
            sys.stderr.write("zk: error: cannot use standard input or output: Bad file descriptor (check the "
                             "redirections)\n")
            sys.exit(1)
        if isinstance(exc, FileNotFoundError) and not exc.filename and _folder_deleted():
            # os.getcwd() under a relative path (export -o rel.jsonl) in a folder removed meanwhile
            sys.stderr.write("zk: error: the current folder was deleted; cd to another folder or give an "
                             "absolute path\n")
            sys.exit(1)
        if os.environ.get("ZK_DEBUG"):
            raise
        sys.stderr.write(f"zk: internal error: {type(exc).__name__}: {error_line(str(exc))} "
                         "(set ZK_DEBUG=1 for details)\n")
        sys.exit(2)
