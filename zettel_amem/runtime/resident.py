"""The resident server's address, protocol and state, shared by the `zk` client (client.py), the server
(cli/server.py) and the commands that report on it (`zk status`, `zk doctor`, `zk server`).

One server per home: it holds the flock on <home>/.server/lock while it runs (the one authority on whether
it runs: a dead server's lock is free; the lock file also holds its pid), listens on <home>/.server/zk.sock
(0600, in a 0700 folder) and writes what it is to <home>/.server/server.json. The client trusts a socket
only in a folder of its own uid that no one else may write, and only a peer of its own uid (SO_PEERCRED):
it hands the server its terminal and environment, so anyone else listening there must get nothing.

A request is one message carrying its length and the client's stdin, stdout, stderr and working directory
(SCM_RIGHTS), then its JSON; each reply is one JSON line: {"run_here": true} (busy, or other code: the
client runs the command itself), or {"started": true} then {"exit": CODE}. A connection that ends before
"started" ran nothing, so the client runs the command itself. While a command runs, the client may send
b"S" (it was suspended: Ctrl-Z) and b"C" (it goes on). A {"status": true} request gets {"busy": ...} at once.

Standard library only: the client imports this on every command.
"""

from __future__ import annotations

import fcntl
import json
import os
import socket
import stat
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
# zk's global options (cli/common.py) that take a value: the command's name comes after them.
GLOBAL_WITH_VALUE = frozenset({"--home", "--notebook", "-n", "--model", "-m"})


# The environment a served command gets: what zk and the libraries it runs read, never the rest (cloud keys
# and tokens of other programs stay in the client). The variable named by `[llm] api_key_env` is added
# from the config files (api_key_env_names).
ENV_NAMES = frozenset({"HOME", "PATH", "TZ", "LANG", "LANGUAGE", "TERM", "COLORTERM", "NO_COLOR", "FORCE_COLOR",
                       "COLUMNS", "LINES", "TMPDIR", "TEMP", "TMP", "VISUAL", "EDITOR", "PWD", "USER", "LOGNAME",
                       "OMP_NUM_THREADS", "SSL_CERT_FILE", "SSL_CERT_DIR", "REQUESTS_CA_BUNDLE", "CURL_CA_BUNDLE",
                       "HTTP_PROXY", "HTTPS_PROXY", "NO_PROXY", "ALL_PROXY", "http_proxy", "https_proxy",
                       "no_proxy", "all_proxy", "VIRTUAL_ENV"})
ENV_PREFIXES = ("ZK_", "LC_", "XDG_", "PYTHON", "HF_", "FASTEMBED_", "OPENAI_", "AWS_")  # AWS_: a store in a bucket
OFF_WORDS = frozenset({"", "0", "false", "no", "off"})


def server_dir(home: Path) -> Path:
    return home / SERVER_DIR


def server_disabled(env=None) -> bool:
    """ZK_NO_SERVER=1 (or yes/true/on): every command in its own process. 0, false, no, off or empty: not set."""
    value = (os.environ if env is None else env).get("ZK_NO_SERVER")
    return value is not None and value.strip().lower() not in OFF_WORDS


def served_environment(env, home: Path) -> dict:
    """The client's variables a served command may read (ENV_NAMES, ENV_PREFIXES, the model server's key)."""
    keys = api_key_env_names(env, home)
    return {name: value for name, value in env.items()
            if name in ENV_NAMES or name.startswith(ENV_PREFIXES) or name in keys}


def config_files(home: Path, env) -> tuple[Path, Path]:
    """The config files a command reads: the home's, then the user's ($ZK_CONFIG_DIR, else the XDG one)."""
    user = Path(env["ZK_CONFIG_DIR"]).expanduser() if env.get("ZK_CONFIG_DIR") else (
        Path(env.get("XDG_CONFIG_HOME") or Path.home() / ".config") / "zettel-amem")
    return home / "config.toml", user / "config.toml"


def api_key_env_names(env, home: Path) -> set[str]:
    """`[llm] api_key_env` of the home's and the user's config.toml (read only when one sets it)."""
    names = set()
    for path in config_files(home, env):
        try:
            text = path.read_text(encoding="utf-8")
        except (OSError, ValueError):
            continue
        if "api_key_env" not in text:
            continue
        import tomllib

        try:
            table = tomllib.loads(text).get("llm", {})
        except ValueError:
            continue
        if isinstance(table, dict) and isinstance(table.get("api_key_env"), str):
            names.add(table["api_key_env"])
    return names


def not_our_folder(folder: Path, info: os.stat_result) -> str | None:
    """Why `folder` (lstat `info`) is no folder of this user's: a symlink or a file, or another uid's."""
    if stat.S_ISLNK(info.st_mode) or not stat.S_ISDIR(info.st_mode):
        return f"{folder} is not a folder (move it away)"
    if info.st_uid != os.getuid():
        return f"{folder} belongs to another user (uid {info.st_uid})"
    return None


def untrusted_reason(home: Path) -> str | None:
    """Why the home's server folder may not be trusted with a command (None: it may): it must be a real
    folder (no symlink) of this uid that no other user may write, and the socket in it must be this uid's
    socket. Another user able to replace either could stand in for the server."""
    folder = server_dir(home)
    info = os.lstat(folder)
    if reason := not_our_folder(folder, info):
        return reason
    if info.st_mode & 0o022:
        return f"{folder} may be written by other users"
    sock = os.lstat(folder / SOCKET_NAME)
    if not stat.S_ISSOCK(sock.st_mode) or sock.st_uid != os.getuid():
        return f"{folder / SOCKET_NAME} is not this user's socket"
    return None


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
    """A connection to the home's own server, or None when none listens (no socket, a stale one, one we may
    not reach) or what listens may not be trusted (untrusted_reason, or a peer of another uid)."""
    try:
        if untrusted_reason(home) is not None:
            return None
        address, folder = socket_address(home)
    except OSError:  # no such folder or socket, or another user's folder we may not look into
        return None
    client = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    client.settimeout(CONNECT_SECONDS)
    try:
        client.connect(address)
        if peer_credentials(client)[1] != os.getuid():  # another user's process listens there
            client.close()
            return None
    except OSError:  # refused (a stale socket: the server died), no permission, timed out
        client.close()
        return None
    finally:
        if folder is not None:
            os.close(folder)
    client.settimeout(None)
    return client


def send_request(connection: socket.socket, request: dict, fds: list[int]) -> None:
    """A request: its length and the descriptors (stdin, stdout, stderr and the working directory) in one
    message, then the JSON body."""
    body = json.dumps(request, ensure_ascii=False).encode("utf-8", "surrogateescape")
    socket.send_fds(connection, [struct.pack("!I", len(body))], fds)
    connection.sendall(body)


def receive_request(connection: socket.socket, most_fds: int = 4) -> tuple[dict, list[int]]:
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
    "idle_minutes", "stamp"}, with "busy" ({"command", "seconds", "client_gone"}) while it runs a command
    and "unreachable" (why) when this user cannot tell. The lock decides: a state file whose server died is
    stale, and a malformed one is ignored; the pid also comes from the lock file."""
    state: dict = {"running": False}
    try:
        written = json.loads((server_dir(home) / STATE_NAME).read_text(encoding="utf-8"))
        if isinstance(written, dict) and written.get("pid") == lock_owner(home):
            state.update({k: v for k, v in written.items() if k in ("pid", "started", "idle_minutes", "stamp")})
    except (OSError, ValueError):
        pass
    try:
        state["running"] = lock_is_held(home)
    except PermissionError:
        state["unreachable"] = f"{server_dir(home)} belongs to another user"
        return state
    if state["running"]:
        state.setdefault("pid", lock_owner(home))
        busy = ask_busy(home)
        if busy:
            state["busy"] = busy
    elif home.is_dir() and (reason := why_no_server(home)):
        state["cannot_start"] = reason
    return state


def lock_is_held(home: Path) -> bool:
    """Whether a live server holds the home's server lock (a dead one's lock is free: flock dies with it).
    PermissionError: another user's folder, which this user cannot tell."""
    try:
        fd = os.open(server_dir(home) / LOCK_NAME, os.O_RDONLY)
    except PermissionError:
        raise
    except OSError:
        return False
    try:
        fcntl.flock(fd, fcntl.LOCK_SH | fcntl.LOCK_NB)
    except OSError:
        return True
    finally:
        os.close(fd)
    return False


def lock_owner(home: Path) -> int | None:
    """The pid the running server wrote into its lock file (None: none written, or unreadable)."""
    try:
        text = (server_dir(home) / LOCK_NAME).read_text(encoding="ascii").strip()
    except (OSError, ValueError):
        return None
    return int(text) if text.isdigit() else None


def ask_busy(home: Path) -> dict | None:
    """What the server is running now ({"command", "seconds", "client_gone"}), or None when idle or
    unreachable: a status request, answered at once even while a command runs."""
    connection = connect(home)
    if connection is None:
        return None
    with connection:
        try:
            connection.settimeout(CONNECT_SECONDS)
            send_request(connection, {"status": True}, [])
            reply = json.loads(connection.makefile("rb").readline() or b"{}")
        except (OSError, ValueError):
            return None
    return reply.get("busy") if isinstance(reply, dict) else None


def why_no_server(home: Path) -> str | None:
    """Why no server can run for this home (None: one can): read-only, or a .server that is not ours."""
    folder = server_dir(home)
    try:
        info = os.lstat(folder)
    except FileNotFoundError:
        info = None
    except OSError as exc:
        return f"cannot look into {folder}: {exc.strerror}"
    if info is not None:
        if reason := not_our_folder(folder, info):
            return reason
        if (folder / STATE_NAME).is_dir():
            return f"{folder / STATE_NAME} is a folder (move it away)"
    writable = folder if info is not None else home
    if os.statvfs(writable).f_flag & os.ST_RDONLY:
        return f"{home} is on a read-only file system"
    if not os.access(writable, os.W_OK):
        return f"{writable} may not be written by this user"
    return None


def is_notebook(home: Path) -> bool:
    """Whether the folder holds a notebook (its store or its meta file): only those get a server."""
    return (home / "lancedb").is_dir() or (home / "meta.json").is_file()


def start_server(home: Path):
    """Start the home's server in the background unless one runs (or is starting), or none can (a folder
    that is no notebook, why_no_server). Never fails a command; the process started, or None."""
    try:
        if server_disabled() or not is_notebook(home) or lock_is_held(home) or why_no_server(home):
            return None
        import subprocess

        log = os.open(home / LOG_NAME, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o600)  # private: see server.log
        try:
            os.fchmod(log, 0o600)
            return subprocess.Popen([sys.executable, "-m", "zettel_amem.cli.server", os.path.abspath(home)],
                                    stdin=subprocess.DEVNULL, stdout=log, stderr=log, start_new_session=True,
                                    close_fds=True, cwd="/")  # holds no user's folder busy; finds no stray package
        finally:
            os.close(log)
    except OSError:
        return None


def peer_credentials(connection: socket.socket) -> tuple[int, int, int]:
    """(pid, uid, gid) of the process at the other end of a Unix socket (SO_PEERCRED)."""
    credentials = connection.getsockopt(socket.SOL_SOCKET, socket.SO_PEERCRED, struct.calcsize("3i"))
    return struct.unpack("3i", credentials)


def describe(state: dict) -> str:
    """One line on a home's server, for `zk status`, `zk doctor` and `zk server status`."""
    if state.get("stopped"):
        return "stopped"
    if state.get("unreachable"):
        return f"not this user's ({state['unreachable']}): every command runs in its own process"
    if state.get("running"):
        idle = state.get("idle_minutes")
        idle = f"{idle:g}" if isinstance(idle, int | float) else "?"
        line = (f"running (pid {state.get('pid') or '?'}, since {str(state.get('started', '?'))[:16]}, stops after "
                f"{idle} idle min; `zk server stop` stops it)")
        busy = state.get("busy")
        if busy:
            line += f"; busy with `{busy.get('command')}` for {busy.get('seconds', 0):.0f} s"
            if busy.get("client_gone"):
                line += " for a client that is gone (`zk server stop --force` ends it)"
        return line
    if server_disabled():
        return "off (ZK_NO_SERVER is set: every command runs in its own process)"
    if state.get("cannot_start"):
        return f"not running, and none can start: {state['cannot_start']}"
    return "not running (the next command starts one; ZK_NO_SERVER=1 turns it off)"


def server_needs_you(state: dict) -> bool:
    """For `zk doctor`: a wedged server (running a command whose client is gone: nobody waits for it, and it
    serves no one), or one that cannot start for a reason the user can mend (not a read-only home)."""
    if state.get("running"):
        return bool((state.get("busy") or {}).get("client_gone"))
    reason = state.get("cannot_start") or ""
    return bool(reason) and not server_disabled() and "read-only" not in reason
