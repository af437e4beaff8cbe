"""The resident server: one per home, it keeps zk's modules imported and warm (pyarrow, LanceDB, numpy, the
embedder, the model once loaded) so a command the `zk` client (client.py) sends through the home's socket
answers in milliseconds instead of 1.5-2 s of start-up.

A command runs here exactly as it would in the client's process: on the main thread, one at a time, with
the client's stdin, stdout and stderr as sys.stdin/stdout/stderr (passed over the socket, so output goes
straight to the user's terminal or pipe), its environment as os.environ (ZK_TODAY, TZ, -n, --model: "today"
and every setting are the client's), its working directory and umask. A client that finds it busy for
more than QUEUE_SECONDS runs the command in its own process instead.

Private by construction: the socket is mode 0600 in a 0700 folder of the home, every connection's peer uid
(SO_PEERCRED) must be ours, and there is no TCP listener. It exits after `server_idle_minutes` without a
command, when a client runs other code (another version, or edited source), when the config files change,
and on SIGTERM (`zk server stop`). Run: `python -m zettel_amem.cli.server HOME` (client.start_server does).
"""

from __future__ import annotations

import fcntl
import json
import os
import queue
import signal
import socket
import sys
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from ..runtime.resident import (
    LOCK_NAME,
    SOCKET_NAME,
    STATE_NAME,
    code_stamp,
    peer_uid,
    receive_request,
    send_reply,
    server_dir,
    socket_address,
)

QUEUE_SECONDS = 1.0  # longer than most commands served, shorter than starting a process (~1.5 s)
# What warming up runs (output discarded): every module a read or an add needs gets imported, the store
# opened and the embedder's first run done, so the first real command is as fast as the rest.
WARM_UP = (["search", "warm up", "--json", "--limit", "1"], ["list", "--limit", "1", "--json"])


class Job:
    """One client's command: its connection, request and the descriptors of its stdin, stdout, stderr."""

    def __init__(self, connection: socket.socket | None, request: dict, fds: list[int]):
        self.connection, self.request, self.fds = connection, request, fds
        self.running = False
        self.state_lock = threading.Lock()

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
            if peer_uid(connection) != os.getuid():
                log("refused a connection from another user")
                send_reply(connection, {"refused": "this server serves only its owner"})
                connection.close()
                return
            connection.settimeout(5)  # a client sends its whole request at once
            request, fds = receive_request(connection)
            connection.settimeout(None)
        except (OSError, ValueError):
            connection.close()
            return
        job = Job(connection, request, fds)
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

    # -- running commands (the main thread) ----------------------------------------------------------
    def serve_forever(self) -> None:
        threading.Thread(target=self.accept_forever, daemon=True).start()
        while not self.stopping:
            try:
                job = self.jobs.get(timeout=self.idle_seconds)
            except queue.Empty:
                if self.slot.acquire(blocking=False):  # nobody is being admitted: really idle
                    log(f"stopping: no command for {self.idle_seconds / 60:g} min")
                    return
                continue
            except KeyboardInterrupt:  # an interrupt meant for a command that had just ended
                continue
            if job is None:
                continue
            self.busy = True
            try:
                self.run(job)
            except KeyboardInterrupt:
                pass
            finally:
                self.busy = False
                job.close()
                self.slot.release()

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
        try:
            code = run_command(job.request, job.fds)
        finally:
            with job.state_lock:
                job.running = False
        command = next((a for a in job.request.get("argv", []) if not a.startswith("-")), "help")
        log(f"{command}: exit {code} in {time.monotonic() - started:.3f} s")  # never the arguments: note text
        try:
            send_reply(job.connection, {"exit": code})
        except OSError:
            pass

    @staticmethod
    def watch(job: Job) -> None:
        """The client closes its side only when it was interrupted (Ctrl-C) or killed: stop its command."""
        try:
            while job.connection.recv(1):
                pass
        except OSError:
            pass
        with job.state_lock:
            if job.running:  # a real SIGINT (not interrupt_main): it also ends a read the command waits in
                signal.pthread_kill(threading.main_thread().ident, signal.SIGINT)


def run_command(request: dict, fds: list[int]) -> int:
    """Run one `zk` command as the client would have in its own process; its exit code."""
    from . import render
    from .main import main as run_zk

    entry = sys.modules[run_zk.__module__]  # the module (the package's name `main` is the function)
    with as_the_client(request, fds):
        try:
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


@contextmanager
def as_the_client(request: dict, fds: list[int]) -> Iterator[None]:
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
        streams = [open(fds[0], encoding="utf-8", closefd=False),
                   open(fds[1], "w", encoding="utf-8", closefd=False, buffering=1 if os.isatty(fds[1]) else -1),
                   open(fds[2], "w", encoding="utf-8", errors="backslashreplace", closefd=False, buffering=1)]
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
    user = Path(env["ZK_CONFIG_DIR"]).expanduser() if env.get("ZK_CONFIG_DIR") else (
        Path(env.get("XDG_CONFIG_HOME") or Path.home() / ".config") / "zettel-amem")
    out = []
    for path in (home / "config.toml", user / "config.toml"):
        try:
            info = path.stat()
            out.append((str(path), info.st_size, info.st_mtime_ns))
        except OSError:
            out.append((str(path), None, None))
    return tuple(out)


def log(message: str) -> None:
    sys.__stderr__.write(f"{time.strftime('%Y-%m-%dT%H:%M:%S')} server {os.getpid()}: {message}\n")
    sys.__stderr__.flush()


def take_server_lock(folder: Path) -> int | None:
    """The home's server lock (flock), or None when another server holds it."""
    fd = os.open(folder / LOCK_NAME, os.O_RDWR | os.O_CREAT, 0o600)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except OSError:
        os.close(fd)
        return None
    return fd


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


def serve(home: Path) -> None:
    folder = server_dir(home)
    folder.mkdir(mode=0o700, parents=True, exist_ok=True)
    os.chmod(folder, 0o700)
    lock = take_server_lock(folder)
    if lock is None:
        return  # one runs (or is starting) already
    from ..core.config import Settings
    from ..core.errors import ZkError

    try:
        idle_minutes = Settings.load(home).server_idle_minutes
    except ZkError as exc:
        log(f"not started: {exc}")
        return
    from ..backends import embed
    from ..backends.llm import configured
    from ..storage import database
    from ..storage.database import import_lancedb

    stamp, config = code_stamp(), config_fingerprint(home, dict(os.environ))
    state = folder / STATE_NAME
    temporary = folder / (STATE_NAME + ".tmp")
    temporary.write_text(json.dumps({"pid": os.getpid(), "started": time.strftime("%Y-%m-%dT%H:%M:%S"),
                                     "idle_minutes": idle_minutes, "stamp": stamp}), encoding="utf-8")
    temporary.replace(state)
    signal.signal(signal.SIGINT, signal.default_int_handler)
    configured.KEEP_LOADED = embed.KEEP_LOADED = True  # models, once a command loads them, stay for the next
    database.SHARED_SESSION = import_lancedb().Session()  # and what LanceDB has read of the indexes
    warm_up(home)
    listener = listen(home)
    server = Server(home, listener, idle_minutes * 60, stamp, config)

    def on_term(*_) -> None:
        server.stopping = True
        if not server.busy:
            raise SystemExit(0)

    signal.signal(signal.SIGTERM, on_term)
    log(f"serving {home}")
    try:
        server.serve_forever()
    except SystemExit:
        log("stopping: asked to (SIGTERM)")
    finally:
        (folder / SOCKET_NAME).unlink(missing_ok=True)
        state.unlink(missing_ok=True)
        sys.__stderr__.flush()
        os._exit(0)  # LanceDB's and ONNX's threads make the interpreter's own teardown slow


if __name__ == "__main__":
    serve(Path(sys.argv[1]).absolute())
