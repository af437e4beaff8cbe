"""The resident server: one per home, it keeps zk's modules imported and warm (pyarrow, LanceDB, numpy, the
embedder, the model once loaded) so a command the `zk` client (client.py) sends through the home's socket
answers in milliseconds instead of 1.5-2 s of start-up.

A command runs here exactly as it would in the client's process: on the main thread, one at a time, with
the client's stdin, stdout and stderr as sys.stdin/stdout/stderr (passed over the socket, so output goes
straight to the user's terminal or pipe), its environment as os.environ (ZK_TODAY, TZ, -n, --model: "today"
and every setting are the client's), its working directory and umask. A client that finds it busy for
more than QUEUE_SECONDS runs the command in its own process instead.

Private by construction: the socket is mode 0600 in a 0700 folder of the home, every connection's peer uid
(SO_PEERCRED) must be ours, and there is no TCP listener; its log (server.log, 0600) holds command names and
times, never what was typed. It exits after `server_idle_minutes` without a command, when a client runs
other code (another version, or edited source), when the config files change, when its home folder is
deleted or replaced, and on SIGTERM (`zk server stop`); on the way out it removes only the socket and state
file it made itself. No command can wedge it: one whose client is gone is interrupted, and if it does not
end, the server exits. Run: `python -m zettel_amem.cli.server HOME` (client.start_server does).
"""

from __future__ import annotations

import fcntl
import io
import json
import os
import queue
import select
import signal
import socket
import stat
import sys
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from ..runtime.resident import (
    GLOBAL_WITH_VALUE,
    LOCK_NAME,
    SOCKET_NAME,
    STATE_NAME,
    code_stamp,
    config_files,
    peer_credentials,
    receive_request,
    send_reply,
    server_dir,
    socket_address,
    why_no_server,
)

QUEUE_SECONDS = 1.0  # longer than most commands served, shorter than starting a process (~1.5 s)
# What warming up runs (output discarded): every module a read or an add needs gets imported, the store
# opened and the embedder's first run done, so the first real command is as fast as the rest.
WARM_UP = (["search", "warm up", "--json", "--limit", "1"], ["list", "--limit", "1", "--json"])
GRACE_SECONDS = 60.0  # a command whose client is gone is interrupted; if it runs on this long, the server exits
HOME_CHECK_SECONDS = 30.0  # how often an idle server checks that its home folder is still the one it serves
PAUSE_SIGNAL = signal.SIGUSR1  # sent to the main thread when the client is suspended (Ctrl-Z)


class Job:
    """One client's command: its connection, request, the client's pid and the descriptors of its stdin,
    stdout, stderr and working directory. `going` is clear while the client is suspended (Ctrl-Z)."""

    def __init__(self, connection: socket.socket | None, request: dict, fds: list[int], client_pid: int = 0):
        self.connection, self.request, self.fds, self.client_pid = connection, request, fds, client_pid
        self.running = False
        self.state_lock = threading.Lock()
        self.going = threading.Event()
        self.going.set()
        self.done = threading.Event()
        self.started = time.monotonic()

    def client_gone(self) -> bool:
        if not self.client_pid:
            return False
        try:
            os.kill(self.client_pid, 0)
        except ProcessLookupError:
            return True
        except OSError:
            return False
        return False

    def close(self) -> None:
        for fd in self.fds:
            try:
                os.close(fd)
            except OSError:
                pass
        self.fds = []
        if self.connection is not None:
            try:
                self.connection.shutdown(socket.SHUT_RDWR)  # wakes the watcher's recv
            except OSError:
                pass
            self.connection.close()


class Server:
    def __init__(self, home: Path, listener: socket.socket, idle_seconds: float, stamp: str, config: tuple):
        self.home, self.listener, self.idle_seconds = home, listener, idle_seconds
        self.stamp, self.config = stamp, config
        self.slot = threading.Lock()  # held from a job's admission until it has run: one command at a time
        self.jobs: queue.Queue[Job | None] = queue.Queue()
        self.stopping = False
        self.busy = False
        self.current: Job | None = None

    # -- admitting clients (one thread each) ---------------------------------------------------------
    def accept_forever(self) -> None:
        while True:
            try:
                connection, _ = self.listener.accept()
            except OSError:
                return
            threading.Thread(target=self.admit, args=(connection,), daemon=True).start()

    def admit(self, connection: socket.socket) -> None:
        try:
            client_pid, uid, _ = peer_credentials(connection)
            if uid != os.getuid():
                log("refused a connection from another user")
                send_reply(connection, {"refused": "this server serves only its owner"})
                connection.close()
                return
            connection.settimeout(5)  # a client sends its whole request at once
            request, fds = receive_request(connection)
            connection.settimeout(None)
            if not isinstance(request, dict) or not isinstance(request.get("argv", []), list):
                raise ValueError("malformed request")
            if request.get("status"):  # asked from a command served here: it is the one running
                send_reply(connection, {"busy": None if client_pid == os.getpid() else self.busy_with()})
                connection.close()
                return
        except (OSError, ValueError):
            connection.close()
            return
        job = Job(connection, request, fds, client_pid)
        reason = self.outdated(request)
        if reason:
            self.run_elsewhere(job)  # first: once stopping, the process may end at any moment
            log(f"stopping: {reason}")
            self.stop()
            return
        if not self.slot.acquire(timeout=QUEUE_SECONDS):
            self.run_elsewhere(job)
            return
        if self.stopping:
            self.slot.release()
            self.run_elsewhere(job)
            return
        self.jobs.put(job)

    @staticmethod
    def run_elsewhere(job: Job) -> None:
        try:
            send_reply(job.connection, {"run_here": True})
        except OSError:
            pass
        job.close()

    def outdated(self, request: dict) -> str | None:
        """Why this server must not run the request: the client runs other code, or the config changed."""
        if request.get("stamp") != self.stamp:
            return "the client runs other code (a new version or edited source)"
        if config_fingerprint(self.home, request.get("env", {})) != self.config:
            return "a config file changed"
        return None

    def stop(self) -> None:
        self.stopping = True
        self.jobs.put(None)

    def busy_with(self) -> dict | None:
        """What runs now, for `zk server`, `zk status` and `zk doctor` (a status request)."""
        job = self.current
        if job is None:
            return None
        return {"command": command_name(job.request.get("argv", [])), "client_gone": job.client_gone(),
                "seconds": round(time.monotonic() - job.started, 1), "suspended": not job.going.is_set()}

    # -- running commands (the main thread) ----------------------------------------------------------
    def serve_forever(self, home_moved) -> None:
        """Run jobs until stopped, idle for idle_seconds, or home_moved() says the home is gone."""
        threading.Thread(target=self.accept_forever, daemon=True).start()
        last = time.monotonic()
        while not self.stopping:
            try:
                job = self.jobs.get(timeout=min(self.idle_seconds, HOME_CHECK_SECONDS))
            except queue.Empty:
                if home_moved():
                    log("stopping: its home folder was deleted or replaced")
                    return
                if time.monotonic() - last < self.idle_seconds:
                    continue
                if self.slot.acquire(blocking=False):  # nobody is being admitted: really idle
                    log(f"stopping: no command for {self.idle_seconds / 60:g} min")
                    return
                continue
            except KeyboardInterrupt:  # an interrupt meant for a command that had just ended
                continue
            if job is None:
                continue
            self.busy, self.current = True, job
            try:
                self.run(job)
            except KeyboardInterrupt:
                pass
            finally:
                self.busy, self.current = False, None
                job.done.set()
                job.close()
                self.slot.release()
                last = time.monotonic()

    def run(self, job: Job) -> None:
        started = time.monotonic()
        watcher = threading.Thread(target=self.watch, args=(job,), daemon=True)
        try:
            send_reply(job.connection, {"started": True})  # from here on, the client must not run it again
        except OSError:
            return  # the client is gone (interrupted while waiting): nothing was run
        with job.state_lock:
            job.running = True
        watcher.start()
        command = command_name(job.request.get("argv", []))
        try:
            code = run_command(job.request, job.fds, job.going)
        except OSError as exc:  # its terminal hung up (a dropped ssh session: every write EIO) or pipe closed
            code = 1
            log(f"{command}: its terminal or output went away ({exc.strerror or type(exc).__name__})")
        finally:
            with job.state_lock:
                job.running = False
        log(f"{command}: exit {code} in {time.monotonic() - started:.3f} s")  # never the arguments: note text
        try:
            send_reply(job.connection, {"exit": code})
        except OSError:
            pass

    def watch(self, job: Job) -> None:
        """While the command runs: the client's b"S"/b"C" suspend and resume it (Ctrl-Z, fg); the client
        closes its side only when it was interrupted (Ctrl-C) or killed, and a client may die without its
        side closing (a copy of the socket elsewhere): either way its command is stopped."""
        poller = select.poll()
        poller.register(job.connection, select.POLLIN)
        while not job.done.is_set():
            if not poller.poll(1000):
                if job.client_gone():
                    break
                continue
            try:
                data = job.connection.recv(64)
            except OSError:
                data = b""
            if not data:
                break
            for byte in data:
                if byte == ord("S"):
                    job.going.clear()
                    signal.pthread_kill(threading.main_thread().ident, PAUSE_SIGNAL)
                elif byte == ord("C"):
                    job.going.set()
        job.going.set()
        with job.state_lock:
            if not job.running:
                return
            # a real SIGINT (not interrupt_main): it also ends a read the command waits in
            signal.pthread_kill(threading.main_thread().ident, signal.SIGINT)
        if not job.done.wait(GRACE_SECONDS):
            log(f"exiting: a command whose client is gone did not stop within {GRACE_SECONDS:g} s")
            self.leave(1)

    def leave(self, code: int) -> None:
        """Exit now, from any thread: the home's socket and state file go only if they are still ours."""
        self.stopping = True
        OWN_FILES.remove()
        sys.__stderr__.flush()
        os._exit(code)

    def pause(self, *_) -> None:
        """PAUSE_SIGNAL on the main thread: hold the command where it is until the client goes on."""
        job = self.current
        if job is not None:
            job.going.wait()


def run_command(request: dict, fds: list[int], going: threading.Event | None = None) -> int:
    """Run one `zk` command as the client would have in its own process; its exit code. `going`: the
    command's writes wait while it is clear (the client is suspended)."""
    from . import render
    from .main import main as run_zk

    entry = sys.modules[run_zk.__module__]  # the module (the package's name `main` is the function)
    if len(fds) < 3:
        return 2
    with as_the_client(request, fds, going):
        try:
            if request.get("cwd_fd") and len(fds) > 3:
                os.fchdir(fds[3])  # the client's own folder, even one deleted since (as in its own process)
            else:
                os.chdir(request.get("cwd") or "/")
        except OSError as exc:
            sys.stderr.write(f"zk: error: cannot use the current directory: {exc.strerror}\n")
            return 1
        render.fresh_consoles()  # a console settles its colours and width when made: now, for this client
        sys.argv = ["zk", *request.get("argv", [])]
        entry.RESIDENT = True
        try:
            run_zk()
            return 0
        except SystemExit as exc:
            return exit_code(exc.code)
        except KeyboardInterrupt:  # arrived outside main()'s own handling
            sys.stderr.write("zk: interrupted\n")
            return 130
        except Exception:  # noqa: BLE001 - ZK_DEBUG re-raises: show what the user asked to see
            import traceback

            traceback.print_exc()
            return 2


class GatedWriter(io.TextIOWrapper):
    """A client's stdout or stderr whose writes wait while the client is suspended (Ctrl-Z): a progress
    bar's own thread stops drawing too."""

    gate: threading.Event | None = None

    def write(self, text: str) -> int:
        if self.gate is not None:
            self.gate.wait()
        return super().write(text)


def writer(fd: int, gate: threading.Event | None, line_buffered: bool, errors: str = "strict") -> GatedWriter:
    stream = GatedWriter(open(fd, "wb", closefd=False), encoding="utf-8", errors=errors,
                         line_buffering=line_buffered)
    stream.gate = gate
    return stream


def readable_stdin(fd: int) -> int:
    """The client's stdin, unless it is a connection to this very server (a client whose stdin was closed
    passes its own socket): reading that would wait forever. Then /dev/null, as for a closed stdin."""
    try:
        if stat.S_ISSOCK(os.fstat(fd).st_mode):
            probe = socket.socket(fileno=os.dup(fd))
            try:
                if peer_credentials(probe)[0] == os.getpid():
                    return os.open(os.devnull, os.O_RDONLY)
            finally:
                probe.close()
    except OSError:
        pass
    return fd


@contextmanager
def as_the_client(request: dict, fds: list[int], going: threading.Event | None = None) -> Iterator[None]:
    """The client's environment, umask, stdin, stdout and stderr for the length of a command; then this
    process's own again (also the working directory and argv, which the command sets)."""
    saved_env, saved_streams, saved_cwd = dict(os.environ), (sys.stdin, sys.stdout, sys.stderr), os.getcwd()
    saved_umask, saved_argv = os.umask(int(request.get("umask", 0o022))), sys.argv
    streams = []
    try:
        os.environ.clear()
        os.environ.update(request.get("env", {}))
        if request.get("columns") and "COLUMNS" not in os.environ:
            os.environ["COLUMNS"] = str(request["columns"])
        time.tzset()
        stdin = readable_stdin(fds[0])
        streams = [open(stdin, encoding="utf-8", closefd=stdin != fds[0]),
                   writer(fds[1], going, os.isatty(fds[1])),
                   writer(fds[2], going, True, "backslashreplace")]
        sys.stdin, sys.stdout, sys.stderr = streams
        yield
    finally:
        for stream in streams:
            try:
                stream.flush()
            except (OSError, ValueError):  # the client's pipe closed (`zk list | head`)
                pass
        sys.stdin, sys.stdout, sys.stderr = saved_streams
        for stream in streams:
            try:
                stream.close()
            except (OSError, ValueError):
                pass
        sys.argv = saved_argv
        os.environ.clear()
        os.environ.update(saved_env)
        time.tzset()
        os.umask(saved_umask)
        try:
            os.chdir(saved_cwd)
        except OSError:
            os.chdir("/")


def exit_code(value: object) -> int:
    if value is None:
        return 0
    if isinstance(value, int):
        return value
    sys.stderr.write(f"{value}\n")
    return 1


def config_fingerprint(home: Path, env: dict) -> tuple:
    """The config files a command would read (the home's, the user's) as (size, mtime) each."""
    out = []
    for path in config_files(home, env):
        try:
            info = path.stat()
            out.append((str(path), info.st_size, info.st_mtime_ns))
        except OSError:
            out.append((str(path), None, None))
    return tuple(out)


def command_name(argv: list) -> str:
    """The command a request runs, for the log: a known command's name only, never another word typed (a
    note without `add`, a notebook or model name)."""
    from . import COMMANDS, GROUPS

    index = 0
    while index < len(argv) and str(argv[index]).startswith("-"):
        index += 2 if argv[index] in GLOBAL_WITH_VALUE else 1
    if index >= len(argv):
        return "help"
    known = {name.split()[0] for name, _ in COMMANDS} | set(GROUPS)
    return argv[index] if argv[index] in known else "unknown command"


def log(message: str) -> None:
    sys.__stderr__.write(f"{time.strftime('%Y-%m-%dT%H:%M:%S')} server {os.getpid()}: {message}\n")
    sys.__stderr__.flush()


def take_server_lock(folder: Path) -> int | None:
    """The home's server lock (flock), or None when another server holds it. It holds our pid, for
    `zk server stop` when server.json is gone."""
    fd = os.open(folder / LOCK_NAME, os.O_RDWR | os.O_CREAT, 0o600)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except OSError:
        os.close(fd)
        return None
    os.ftruncate(fd, 0)
    os.pwrite(fd, str(os.getpid()).encode("ascii"), 0)
    return fd


class OwnFiles:
    """The socket and state file this server made, by inode: on the way out it removes those and nothing
    else (a home deleted and made again at the same path has another server's files there)."""

    def __init__(self) -> None:
        self.paths: dict[Path, tuple[int, int]] = {}

    def made(self, path: Path) -> None:
        info = os.lstat(path)
        self.paths[path] = (info.st_dev, info.st_ino)

    def remove(self) -> None:
        for path, identity in list(self.paths.items()):
            try:
                info = os.lstat(path)
                if (info.st_dev, info.st_ino) == identity:
                    path.unlink()
            except OSError:
                pass
        self.paths.clear()


OWN_FILES = OwnFiles()


def listen(home: Path) -> socket.socket:
    """Bind the home's socket, mode 0600 (a stale one is replaced: we hold the lock, so nobody listens)."""
    path = server_dir(home) / SOCKET_NAME
    path.unlink(missing_ok=True)
    address, folder = socket_address(home)
    listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    mask = os.umask(0o177)
    try:
        listener.bind(address)
    finally:
        os.umask(mask)
        if folder is not None:
            os.close(folder)
    os.chmod(path, 0o600)
    OWN_FILES.made(path)
    listener.listen(64)
    return listener


def warm_up(home: Path) -> None:
    """Run WARM_UP with its output discarded; a failure (an empty home) only means less is warm."""
    null = [os.open(os.devnull, os.O_RDWR) for _ in range(3)]
    try:
        for argv in WARM_UP:
            run_command({"argv": ["--home", str(home), *argv], "env": dict(os.environ), "cwd": str(home)}, null)
    finally:
        for fd in null:
            os.close(fd)


def prepare(home: Path) -> tuple[float, tuple[int, int]] | None:
    """Take the home's server folder and lock, and write server.json: (idle minutes, the folder's identity),
    or None when no server may run here (why in the log: one line, never a traceback)."""
    from ..core.config import Settings
    from ..core.errors import ZkError

    folder = server_dir(home)
    try:
        reason = why_no_server(home)
        if reason is None:
            folder.mkdir(mode=0o700, parents=True, exist_ok=True)
            os.chmod(folder, 0o700)
            reason = why_no_server(home)
        if reason is not None:
            log(f"not started: {reason}")
            return None
        lock = take_server_lock(folder)
        if lock is None:
            return None  # one runs (or is starting) already; the lock stays open while we run
        idle_minutes = Settings.load(home).server_idle_minutes
        state, temporary = folder / STATE_NAME, folder / (STATE_NAME + ".tmp")
        temporary.write_text(json.dumps({"pid": os.getpid(), "started": time.strftime("%Y-%m-%dT%H:%M:%S"),
                                         "idle_minutes": idle_minutes, "stamp": code_stamp()}), encoding="utf-8")
        temporary.replace(state)
        OWN_FILES.made(state)
        info = os.stat(folder)
    except (OSError, ZkError) as exc:
        log(f"not started: {exc}")
        return None
    return idle_minutes, (info.st_dev, info.st_ino)


def serve(home: Path) -> None:
    prepared = prepare(home)
    if prepared is None:
        return
    idle_minutes, identity = prepared
    from ..backends import embed
    from ..backends.llm import configured
    from ..storage import database
    from ..storage.database import import_lancedb

    stamp, config = code_stamp(), config_fingerprint(home, dict(os.environ))
    signal.signal(signal.SIGINT, signal.default_int_handler)
    configured.KEEP_LOADED = embed.KEEP_LOADED = True  # models, once a command loads them, stay for the next
    database.SHARED_SESSION = import_lancedb().Session()  # and what LanceDB has read of the indexes
    warm_up(home)
    try:
        listener = listen(home)
    except OSError as exc:
        log(f"not started: cannot listen on {server_dir(home) / SOCKET_NAME}: {exc.strerror}")
        OWN_FILES.remove()
        return
    server = Server(home, listener, idle_minutes * 60, stamp, config)

    def on_term(*_) -> None:
        server.stopping = True
        if not server.busy:
            raise SystemExit(0)

    def home_moved() -> bool:
        try:
            info = os.stat(server_dir(home))
        except OSError:
            return True
        return (info.st_dev, info.st_ino) != identity

    signal.signal(signal.SIGTERM, on_term)
    signal.signal(PAUSE_SIGNAL, server.pause)
    log(f"serving {home}")
    try:
        server.serve_forever(home_moved)
    except SystemExit:
        log("stopping: asked to (SIGTERM)")
    finally:
        server.leave(0)  # os._exit: LanceDB's and ONNX's threads make the interpreter's own teardown slow


if __name__ == "__main__":
    serve(Path(sys.argv[1]).absolute())
