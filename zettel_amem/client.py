"""`zk`'s entry point: hand the command to the notebook's resident server when one runs, else run it here.

Almost all of a command's 1.5-2 s is Python importing pyarrow, LanceDB, numpy and the embedder; the work
itself takes milliseconds. So a resident process (cli/server.py, one per home) keeps them imported and
`zk` is a thin client: it connects to the server's Unix socket in the home, passes its own stdin, stdout
and stderr (the server writes to the user's terminal or pipe directly, so progress bars, colours, prompts
and streaming behave as in-process), its argv, environment and working directory, and exits with the
command's code.

With no server (or `ZK_NO_SERVER=1`, an object-store home, a busy or outdated server) the command runs in
this process as before; afterwards a server is started in the background, the way the worker is.

This module and runtime/resident.py import only the standard library: that is what makes a served command
fast.
"""

from __future__ import annotations

import json
import os
import socket
import sys
from pathlib import Path

from .runtime.resident import code_stamp, connect, send_request, start_server

# Commands that always run in the client's process: `edit` opens $EDITOR on the client's terminal, `mcp` is
# a long-lived stdio server of its own, `server` manages the server itself, `completion` prints a script.
IN_PROCESS = frozenset({"edit", "mcp", "server", "completion"})
# zk's global options (cli/common.py) that take a value: the command's name comes after them.
GLOBAL_WITH_VALUE = frozenset({"--home", "--notebook", "-n", "--model", "-m"})


def main() -> None:
    """The `zk` command."""
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
    if env.get("ZK_NO_SERVER") or any(name.startswith("_") and name.endswith("_COMPLETE") for name in env):
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
    if index < len(argv) and argv[index] in IN_PROCESS:
        return None
    if home and "://" in home:
        return None  # a shared object-store notebook: its lease and outbox stay in-process
    return Path(home).expanduser() if home else default_home(env)


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
    with connection:
        request = {"argv": argv, "env": dict(os.environ), "cwd": os.getcwd(), "umask": current_umask(),
                   "stamp": code_stamp(), "columns": terminal_columns()}
        try:
            send_request(connection, request, standard_fds())
        except OSError:
            return None
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


def standard_fds() -> list[int]:
    """The client's stdin, stdout and stderr; a closed one is passed as /dev/null."""
    fds = []
    for fd in (0, 1, 2):
        try:
            os.fstat(fd)
            fds.append(fd)
        except OSError:
            fds.append(os.open(os.devnull, os.O_RDWR))
    return fds


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
