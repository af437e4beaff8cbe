"""The resident server's address, protocol and state, shared by the `zk` client (client.py), the server
(cli/server.py) and the commands that report on it (`zk status`, `zk doctor`, `zk server`).

One server per home: it holds the flock on <home>/.server/lock while it runs (the one authority on whether
it runs: a dead server's lock is free), listens on <home>/.server/zk.sock (0600, in a 0700 folder) and
writes what it is to <home>/.server/server.json. A request is one message carrying its length and the
client's stdin, stdout and stderr (SCM_RIGHTS), then its JSON; each reply is one JSON line: {"run_here": true}
(busy, or other code: the client runs the command itself), or {"started": true} then {"exit": CODE}. A
connection that ends before "started" ran nothing, so the client runs the command itself.

Standard library only: the client imports this on every command.
"""

from __future__ import annotations

import fcntl
import json
import os
import socket
import struct
import sys
from pathlib import Path

SERVER_DIR = ".server"  # in the home; mode 0700
SOCKET_NAME = "zk.sock"  # mode 0600
LOCK_NAME = "lock"  # held by the running server (flock): the one authority on whether one runs
STATE_NAME = "server.json"  # pid, start time, code stamp, idle limit: for `zk status` and `zk doctor`
LOG_NAME = "server.log"  # in the home, beside worker.log
LONGEST_SOCKET_PATH = 100  # AF_UNIX paths stop at 107 bytes; a longer home is reached through /proc/self/fd
CONNECT_SECONDS = 2.0  # a live server accepts at once; a wedged one must not hang the client


def server_dir(home: Path) -> Path:
    return home / SERVER_DIR


def socket_address(home: Path) -> tuple[str, int | None]:
    """The socket's path to connect or bind to, and a directory descriptor to close afterwards when the
    path is too long for AF_UNIX (then it is reached as /proc/self/fd/N/zk.sock)."""
    path = server_dir(home) / SOCKET_NAME
    if len(os.fsencode(path)) <= LONGEST_SOCKET_PATH:
        return str(path), None
    folder = os.open(server_dir(home), os.O_PATH | os.O_DIRECTORY)
    return f"/proc/self/fd/{folder}/{SOCKET_NAME}", folder


def code_stamp() -> str:
    """The version and the newest source file's time: a server started from other code restarts."""
    import zettel_amem

    package = Path(zettel_amem.__file__).parent
    newest = 0
    for folder, _, files in os.walk(package):
        for name in files:
            if name.endswith(".py"):
                try:
                    newest = max(newest, os.stat(os.path.join(folder, name)).st_mtime_ns)
                except OSError:
                    pass
    return f"{zettel_amem.__version__}:{newest}"


def connect(home: Path) -> socket.socket | None:
    """A connection to the home's server, or None when none listens (no socket, or a stale one)."""
    if not (server_dir(home) / SOCKET_NAME).exists():
        return None
    try:
        address, folder = socket_address(home)
    except OSError:
        return None
    client = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    client.settimeout(CONNECT_SECONDS)
    try:
        client.connect(address)
    except OSError:  # refused (a stale socket: the server died), no permission, timed out
        client.close()
        return None
    finally:
        if folder is not None:
            os.close(folder)
    client.settimeout(None)
    return client


def send_request(connection: socket.socket, request: dict, fds: list[int]) -> None:
    """A request: its length and the three descriptors in one message, then the JSON body."""
    body = json.dumps(request, ensure_ascii=False).encode("utf-8", "surrogateescape")
    socket.send_fds(connection, [struct.pack("!I", len(body))], fds)
    connection.sendall(body)


def receive_request(connection: socket.socket, most_fds: int = 3) -> tuple[dict, list[int]]:
    """The server's side of send_request."""
    head, fds, _, _ = socket.recv_fds(connection, 4, most_fds)
    if len(head) != 4:
        _close_all(fds)
        raise OSError("short request")
    size = struct.unpack("!I", head)[0]
    body = bytearray()
    while len(body) < size:
        chunk = connection.recv(min(1 << 20, size - len(body)))
        if not chunk:
            _close_all(fds)
            raise OSError("request cut short")
        body += chunk
    return json.loads(body.decode("utf-8", "surrogateescape")), fds


def _close_all(fds: list[int]) -> None:
    for fd in fds:
        os.close(fd)


def send_reply(connection: socket.socket, reply: dict) -> None:
    connection.sendall(json.dumps(reply).encode("utf-8") + b"\n")


def server_state(home: Path) -> dict:
    """Whether this home's server runs, and what it wrote about itself: {"running", "pid", "started",
    "idle_minutes", "stamp"}. The lock decides: a state file whose server died is stale."""
    state: dict = {"running": False}
    try:
        state.update(json.loads((server_dir(home) / STATE_NAME).read_text(encoding="utf-8")))
    except (OSError, ValueError):
        pass
    state["running"] = lock_is_held(home)
    return state


def lock_is_held(home: Path) -> bool:
    """Whether a live server holds the home's server lock (a dead one's lock is free: flock dies with it)."""
    try:
        fd = os.open(server_dir(home) / LOCK_NAME, os.O_RDONLY)
    except OSError:
        return False
    try:
        fcntl.flock(fd, fcntl.LOCK_SH | fcntl.LOCK_NB)
    except OSError:
        return True
    finally:
        os.close(fd)
    return False


def start_server(home: Path) -> None:
    """Start the home's server in the background unless one runs (or is starting). Never fails a command."""
    try:
        if not home.is_dir() or lock_is_held(home) or os.environ.get("ZK_NO_SERVER"):
            return
        import subprocess

        with open(home / LOG_NAME, "ab") as log:
            subprocess.Popen([sys.executable, "-m", "zettel_amem.cli.server", os.path.abspath(home)],
                             stdin=subprocess.DEVNULL, stdout=log, stderr=log, start_new_session=True,
                             close_fds=True, cwd="/")  # holds no user's folder busy; finds no stray package
    except OSError:
        pass


def peer_uid(connection: socket.socket) -> int:
    """The uid of the process at the other end of a Unix socket (SO_PEERCRED: pid, uid, gid)."""
    credentials = connection.getsockopt(socket.SOL_SOCKET, socket.SO_PEERCRED, struct.calcsize("3i"))
    return struct.unpack("3i", credentials)[1]


def describe(state: dict) -> str:
    """One line on a home's server, for `zk status`, `zk doctor` and `zk server status`."""
    if state.get("stopped"):
        return "stopped"
    if state.get("running"):
        return (f"running (pid {state.get('pid', '?')}, since {str(state.get('started', '?'))[:16]}, stops after "
                f"{state.get('idle_minutes', '?'):g} idle min; `zk server stop` stops it)")
    if os.environ.get("ZK_NO_SERVER"):
        return "off (ZK_NO_SERVER is set: every command runs in its own process)"
    return "not running (the next command starts one; ZK_NO_SERVER=1 turns it off)"
