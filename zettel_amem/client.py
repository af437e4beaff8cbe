"""`zk`'s entry point: hand the command to the notebook's resident server when one runs, else run it here.

Almost all of a command's 1.5-2 s is Python importing pyarrow, LanceDB, numpy and the embedder; the work
itself takes milliseconds. So a resident process (cli/server.py, one per home) keeps them imported and
`zk` is a thin client: it connects to the server's Unix socket in the home, passes its own stdin, stdout
and stderr (the server writes to the user's terminal or pipe directly, so progress bars, colours, prompts
and streaming behave as in-process), a descriptor of its working directory (a deleted one too), its argv
and the environment variables zk reads, and exits with the command's code. It hands these only to a server
of its own uid (runtime/resident.connect); Ctrl-Z suspends the served command with the client.

With no server (or `ZK_NO_SERVER=1`, an object-store home, a busy or outdated server) the command runs in
this process as before; afterwards a server is started in the background, the way the worker is.

This module and runtime/resident.py import only the standard library: that is what makes a served command
fast.
"""

from __future__ import annotations

import json
import os
import signal
import socket
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from .runtime.resident import (
    GLOBAL_WITH_VALUE,
    code_stamp,
    connect,
    send_request,
    served_environment,
    server_disabled,
    start_server,
)

# Commands that always run in the client's process: `edit` opens $EDITOR on the client's terminal, `mcp` is
# a long-lived stdio server of its own, `server` manages the server itself, `completion` prints a script.
# (`add` too when it opens the editor: opens_editor.)
IN_PROCESS = frozenset({"edit", "mcp", "server", "completion"})
# `zk add`'s options: those that open the editor, and those that take a value.
ADD_EDITOR = frozenset({"--edit", "-e", "--template", "-t"})
ADD_WITH_VALUE = frozenset({"--at", "--template", "-t"})


def main() -> None:
    """The `zk` command."""
    fill_closed_standard_fds()
    argv = sys.argv[1:]
    home = served_home(argv, os.environ)
    if home is not None:
        code = run_on_server(home, argv)
        if code is not None:
            sys.exit(code)
    from .cli import main as run_here

    try:
        run_here()
    finally:
        if home is not None:
            start_server(home)


def served_home(argv: list[str], env) -> Path | None:
    """The home whose server may run this command, or None when it must run in this process."""
    if server_disabled(env) or any(name.startswith("_") and name.endswith("_COMPLETE") for name in env):
        return None  # opted out, or the shell asking for completions (Typer's own protocol)
    home = env.get("ZK_HOME")
    index = 0
    while index < len(argv) and argv[index].startswith("-"):
        option = argv[index]
        if option in GLOBAL_WITH_VALUE:
            if index + 1 >= len(argv):
                return None  # a usage error: the in-process run says it
            if option == "--home":
                home = argv[index + 1]
            index += 2
        elif option.startswith("--home="):
            home = option.partition("=")[2]
            index += 1
        elif option == "--help" or option.startswith(("--notebook=", "--model=")):
            index += 1
        else:
            return None  # completion options and anything unexpected: Typer's in-process handling
    if index < len(argv) and (argv[index] in IN_PROCESS or (argv[index] == "add" and opens_editor(argv[index + 1:]))):
        return None
    if home and "://" in home:
        return None  # a shared object-store notebook: its lease and outbox stay in-process
    return Path(home).expanduser() if home else default_home(env)


def opens_editor(arguments: list[str]) -> bool:
    """Whether `zk add ARGUMENTS` opens $EDITOR: --edit/--template, or no text while stdin is a terminal.
    The editor needs the client's terminal (its controlling tty, job control, resizing): it runs here."""
    given = False
    index = 0
    while index < len(arguments):
        word = arguments[index]
        if word == "--":
            given = given or index + 1 < len(arguments)
            break
        if word in ADD_EDITOR or word.startswith(("--template=", "-t")) and word != "-":
            return True
        if word in ADD_WITH_VALUE:
            index += 1
        elif word == "-" or not word.startswith("-"):
            given = True
        index += 1
    return not given and os.isatty(0)


def fill_closed_standard_fds() -> None:
    """A closed stdin, stdout or stderr (`zk add - <&-`) becomes /dev/null, as for a daemon: otherwise the
    next file or socket opened takes its number and a command reads or writes that instead."""
    for fd in (0, 1, 2):
        try:
            os.fstat(fd)
        except OSError:
            opened = os.open(os.devnull, os.O_RDWR)  # the lowest free number: this one
            if opened != fd:
                os.dup2(opened, fd)
                os.close(opened)
            if fd == 0:
                sys.stdin = open(0, encoding="utf-8", closefd=False)
            else:
                setattr(sys, ("stdout", "stderr")[fd - 1], open(fd, "w", encoding="utf-8", closefd=False))


def default_home(env) -> Path:
    """The user data dir platformdirs gives on Linux (core/config.py's home_dir), without importing it."""
    data = env.get("XDG_DATA_HOME", "").strip() or os.path.expanduser("~/.local/share")
    if sys.platform != "linux":
        import platformdirs

        return Path(platformdirs.user_data_dir("zettel-amem"))
    return Path(data) / "zettel-amem"


def run_on_server(home: Path, argv: list[str]) -> int | None:
    """Run the command on the home's server; its exit code, or None when it must run here (no server,
    a busy one, one started from other code or another config)."""
    connection = connect(home)
    if connection is None:
        return None
    try:  # O_PATH: a folder we may enter but not list, and a deleted one (getcwd fails there), open too
        here = os.open(".", getattr(os, "O_PATH", os.O_RDONLY) | os.O_DIRECTORY)
    except OSError:
        connection.close()
        return None
    with connection:
        request = {"argv": argv, "env": served_environment(os.environ, home), "umask": current_umask(),
                   "stamp": code_stamp(), "columns": terminal_columns(), "cwd_fd": True}
        sent: list[bool] = []  # Ctrl-Z from the moment the server may be running it (before: nothing to tell)
        with suspending_with(connection, sent):
            try:
                send_request(connection, request, [0, 1, 2, here])
                sent.append(True)
            except OSError:
                return None
            finally:
                os.close(here)
            return wait_for_exit(connection)


def current_umask() -> int:
    mask = os.umask(0o022)
    os.umask(mask)
    return mask


def terminal_columns() -> int | None:
    """The client's terminal width: the server's own output is no terminal, so Rich would guess 80."""
    for fd in (1, 2):
        try:
            return os.get_terminal_size(fd).columns
        except OSError:
            continue
    return None


@contextmanager
def suspending_with(connection: socket.socket, sent: list[bool]) -> Iterator[None]:
    """Ctrl-Z suspends the served command too: the client tells the server (b"S"), stops itself as the shell
    expects, and on `fg`/`bg` tells it to go on (b"C"). Set up before the request goes out (a Ctrl-Z right
    after it would stop the client alone); `sent` says when there is a command to tell of."""
    if not hasattr(signal, "SIGTSTP") or signal.getsignal(signal.SIGTSTP) != signal.SIG_DFL:
        yield  # the shell ignores job control here (no terminal), or someone else handles it
        return

    def tell(what: bytes) -> None:
        if sent:
            try:
                connection.sendall(what)
            except OSError:
                pass

    def on_stop(*_) -> None:
        tell(b"S")
        signal.signal(signal.SIGTSTP, signal.SIG_DFL)
        os.kill(os.getpid(), signal.SIGTSTP)  # stopped here until SIGCONT
        signal.signal(signal.SIGTSTP, on_stop)
        tell(b"C")

    signal.signal(signal.SIGTSTP, on_stop)
    try:
        yield
    finally:
        signal.signal(signal.SIGTSTP, signal.SIG_DFL)


def wait_for_exit(connection: socket.socket) -> int | None:
    """Wait for the command's exit code. Ctrl-C here stops the command on the server (it sees this side
    close and interrupts it), then the server's own 'interrupted' line and code come back."""
    reader = connection.makefile("rb")
    interrupted = started = False
    while True:
        try:
            line = reader.readline()
        except KeyboardInterrupt:
            if interrupted:  # a second Ctrl-C: do not wait any longer
                return 130
            interrupted = True
            try:
                connection.shutdown(socket.SHUT_WR)
            except OSError:
                return 130
            connection.settimeout(5)
            continue
        except OSError:  # the timeout after Ctrl-C, or the connection broken
            line = b""
        if not line:
            if interrupted:
                return 130
            if not started:  # the server ended before it began this command (it was stopping): run it here
                return None
            sys.stderr.write("zk: error: the zk server stopped during this command; what it had saved is kept "
                             "(check with zk list, then run the command again)\n")
            return 1
        reply = json.loads(line)
        started = started or bool(reply.get("started"))
        if "exit" in reply:
            return int(reply["exit"])
        if reply.get("run_here"):  # busy with another command, or started from other code or config
            return None


if __name__ == "__main__":  # `python -m zettel_amem.client ARGS`: what the `zk` script runs
    main()
