"""The resident server against a hostile or unlucky user (break-it round five, D1-D6, D12, D14, D16-D18):
the client hands nothing to a socket it may not trust, no input can wedge the server, an editor gets the
terminal, a deleted folder or home is no crash, the log keeps no text, and a server that cannot start says
why at once."""

from __future__ import annotations

import json
import os
import pty
import select
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
from tests.test_server import client, env, served_commands, start, stop, wait_for  # noqa: F401 - env: a fixture
from zettel_amem.runtime.resident import (
    SERVER_DIR,
    SOCKET_NAME,
    STATE_NAME,
    code_stamp,
    connect,
    describe,
    receive_request,
    send_reply,
    send_request,
    served_environment,
    server_needs_you,
    server_state,
)

AS_ROOT = os.geteuid() == 0 and shutil.which("setpriv") and os.path.exists("/usr/bin/python3")
needs_another_user = pytest.mark.skipif(not AS_ROOT, reason="needs root, setpriv and a system python3 to act as "
                                                            "another user")
NOBODY = 65534


def as_nobody(script: str, **options) -> subprocess.Popen:
    """A stdlib-only Python script run as another user (uid 65534)."""
    return subprocess.Popen(["setpriv", f"--reuid={NOBODY}", f"--regid={NOBODY}", "--clear-groups",
                             "/usr/bin/python3", "-c", script], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            text=True, **options)


def fake_server(path: Path, log: Path) -> str:
    """A listener that records what any client sends it (D1's attacker): bytes, descriptors, request keys."""
    return (f"import socket, os, json\ns = socket.socket(socket.AF_UNIX)\ns.bind({str(path)!r})\n"
            f"os.chmod({str(path)!r}, 0o777)\ns.listen(5)\nopen({str(log) + '.ready'!r}, 'w').close()\n"
            "while True:\n    c, _ = s.accept()\n"
            "    data, fds, _, _ = socket.recv_fds(c, 1 << 16, 16)\n"
            f"    open({str(log)!r}, 'a').write(json.dumps({{'bytes': len(data), 'fds': len(fds)}}) + '\\n')\n"
            "    for fd in fds:\n        os.write(fd, b'*** written by another user ***\\n') if fd != fds[0] else 0\n"
            "    c.close()\n")


def shared_home() -> Path:
    """A home outside pytest's private folders, where only zk's own modes guard it."""
    home = Path(tempfile.mkdtemp(prefix="zk-hostile-"))
    os.chmod(home, 0o777)
    return home


@needs_another_user
def test_the_client_hands_nothing_to_a_socket_another_user_planted():
    """D1: in a notebook folder others may write, another user moved .server aside and listens in its place;
    the owner's command, its environment and its terminal must not reach that listener."""
    home = shared_home()
    environment = {**zk_env(home), "AWS_SECRET_ACCESS_KEY": "s3cr3t-owner-key", "GITHUB_TOKEN": "ghp_owner"}
    environment.pop("ZK_NO_SERVER", None)
    try:
        client(["add", "owner private note"], {**environment, "ZK_NO_SERVER": "1"}, check=True)
        folder = home / SERVER_DIR
        folder.mkdir(mode=0o777, exist_ok=True)
        os.chmod(folder, 0o777)
        os.chown(folder, NOBODY, NOBODY)
        log = home / "fake.log"
        listener = as_nobody(fake_server(folder / SOCKET_NAME, log))
        wait_for(lambda: Path(str(log) + ".ready").exists(), 30)
        done = client(["add", "owner adds: bank PIN 9876"], environment)
        listener.kill()
        assert done.returncode == 0, done.stderr
        assert "saved" in done.stdout and "another user" not in done.stdout + done.stderr
        assert not log.exists(), log.read_text()  # not one byte, not one descriptor
        notes = client(["list", "--json"], {**environment, "ZK_NO_SERVER": "1"}, check=True).stdout
        assert "bank PIN 9876" in notes
        assert not server_state(home)["running"]  # and no server of the owner's in another user's folder
        assert "belongs to another user" in client(["doctor"], environment).stdout
    finally:
        stop(home)
        shutil.rmtree(home, ignore_errors=True)


@needs_another_user
def test_the_client_checks_who_listens_even_in_its_own_folder(tmp_path):
    """D1: a socket file of the owner's in the owner's 0700 folder, but another user's process behind it
    (the peer's uid, SO_PEERCRED): no connection is used, nothing is sent."""
    home = shared_home()
    drop = Path(tempfile.mkdtemp(prefix="zk-drop-"))
    os.chmod(drop, 0o777)
    try:
        (home / SERVER_DIR).mkdir(mode=0o700)
        log = drop / "fake.log"
        listener = as_nobody(fake_server(drop / SOCKET_NAME, log))
        wait_for(lambda: Path(str(log) + ".ready").exists(), 30)
        os.rename(drop / SOCKET_NAME, home / SERVER_DIR / SOCKET_NAME)  # the same listener, now at our path
        os.lchown(home / SERVER_DIR / SOCKET_NAME, os.getuid(), os.getgid())
        os.chmod(home / SERVER_DIR / SOCKET_NAME, 0o600)
        assert connect(home) is None
        time.sleep(0.5)
        listener.kill()
        received = [json.loads(line) for line in log.read_text().splitlines()] if log.exists() else []
        assert all(r == {"bytes": 0, "fds": 0} for r in received), received  # connected, then left at once
    finally:
        shutil.rmtree(home, ignore_errors=True)
        shutil.rmtree(drop, ignore_errors=True)


def test_a_served_command_gets_only_the_variables_zk_reads_and_the_clients_folder(tmp_path):
    """D1: the request carries the variables zk and its libraries read (ZK_*, TZ, locale, the model server's
    key named in config.toml), not the rest of the environment; and the client's folder as a descriptor."""
    home = tmp_path / "home"
    (home / SERVER_DIR).mkdir(parents=True, mode=0o700)
    (home / "meta.json").write_text("{}")
    # (the server the client starts after running the command itself idles out at once)
    (home / "config.toml").write_text('server_idle_minutes = 0.01\n[llm]\napi_key_env = "MY_MODEL_KEY"\n')
    listener = socket.socket(socket.AF_UNIX)
    listener.bind(str(home / SERVER_DIR / SOCKET_NAME))
    listener.listen(1)
    seen: dict = {}

    def serve_once() -> None:
        connection, _ = listener.accept()
        request, fds = receive_request(connection)
        seen.update(request=request, kinds=[stat.S_IFMT(os.fstat(fd).st_mode) for fd in fds])
        seen["folder"] = os.readlink(f"/proc/self/fd/{fds[3]}")
        for fd in fds:
            os.close(fd)
        send_reply(connection, {"run_here": True})
        connection.close()

    thread = threading.Thread(target=serve_once, daemon=True)
    thread.start()
    environment = {**zk_env(home), "GITHUB_TOKEN": "ghp_secret", "MY_MODEL_KEY": "sk-model", "ZK_TODAY": "2026-01-02",
                   "TZ": "Asia/Seoul", "ZK_NO_SERVER": "0"}  # "0" does not turn the server off
    done = client(["list"], environment, cwd=tmp_path)
    thread.join(10)
    assert done.returncode == 0, done.stderr  # run in its own process after {"run_here": true}
    sent = seen["request"]["env"]
    assert "GITHUB_TOKEN" not in sent and sent["MY_MODEL_KEY"] == "sk-model"
    assert sent["ZK_TODAY"] == "2026-01-02" and sent["TZ"] == "Asia/Seoul" and "PYTHONPATH" in sent
    assert seen["kinds"][3] == stat.S_IFDIR and seen["folder"] == str(tmp_path)
    assert "cwd" not in seen["request"]
    assert served_environment({"PATH": "/bin", "AWS_SECRET_ACCESS_KEY": "k", "SSH_AUTH_SOCK": "/s"}, home) == \
        {"PATH": "/bin", "AWS_SECRET_ACCESS_KEY": "k"}  # zk reads AWS_* for a store in a bucket


def _with_closed_stdin(args: list[str], environment: dict) -> subprocess.CompletedProcess:
    command = " ".join([sys.executable, "-m", "zettel_amem.client", *args]) + " <&-"
    return subprocess.run(["bash", "-c", command], env=environment, capture_output=True, text=True, timeout=60)


def test_a_closed_stdin_gets_one_line_and_leaves_the_server_free(env):  # noqa: F811
    """D2: `zk add - <&-` once wedged the server for good (its stdin was the client's own socket)."""
    home = Path(env["ZK_HOME"])
    start(env)
    done = _with_closed_stdin(["add", "-"], env)  # at once, as from /dev/null
    assert done.returncode == 1 and done.stderr == "zk: error: the note is empty\n", done
    done = _with_closed_stdin(["import", "-", "--no-llm"], env)
    assert done.returncode == 0 and "0 added" in done.stdout, done
    assert client(["list"], env, check=True).stdout.count("\n") == 3
    assert served_commands(home)[-3:] == ["add", "import", "list"]  # served, and the server was free again
    assert json.loads(client(["server", "stop", "--json"], env, check=True).stdout)["stopped"] is True


def test_a_request_whose_stdin_is_its_own_connection_does_not_wedge_the_server(env):  # noqa: F811
    """D2 at the server: whatever a client sends, a stdin that is a connection to the server itself reads as
    empty (an old client passed its own socket as stdin)."""
    home = Path(env["ZK_HOME"])
    start(env)
    connection = connect(home)
    request = {"argv": ["add", "-"], "env": served_environment(env, home), "umask": 0o022, "stamp": code_stamp(),
               "cwd": str(home)}
    send_request(connection, request, [connection.fileno(), 1, 2])
    connection.settimeout(30)
    replies = [json.loads(line) for line in connection.makefile("rb")]
    assert {"exit": 1} in replies  # "the note is empty", at once
    assert client(["list"], env, check=True).stdout.count("\n") == 3


def test_a_command_whose_client_is_gone_is_stopped_though_its_connection_stays_open(env):  # noqa: F811
    """The watchdog: a client that died while another process still holds its connection (so the server
    never sees it close) no longer keeps its command, and the server, busy for good."""
    home = Path(env["ZK_HOME"])
    start(env)
    reader, writer = os.pipe()
    script = ("import os, sys, time\nfrom pathlib import Path\n"
              "from zettel_amem.runtime.resident import connect, send_request, served_environment, code_stamp\n"
              f"home = Path({str(home)!r})\nc = connect(home)\nnull = os.open(os.devnull, os.O_WRONLY)\n"
              "send_request(c, {'argv': ['add', '-'], 'env': served_environment(os.environ, home), 'umask': 18, "
              f"'stamp': code_stamp(), 'cwd': '/'}}, [{reader}, null, null])\n"
              "child = os.fork()\n"
              "if child == 0:\n"  # the child keeps the connection open, and lets go of the test's pipes
              "    null = os.open(os.devnull, os.O_RDWR)\n    os.dup2(null, 1)\n    os.dup2(null, 2)\n"
              "    time.sleep(120)\n    os._exit(0)\n"
              "print(child, flush=True)\nos._exit(0)\n")
    done = subprocess.run([sys.executable, "-c", script], env=env, capture_output=True, text=True, timeout=60,
                          pass_fds=[reader])
    os.close(reader)
    assert done.returncode == 0, done.stderr
    try:
        wait_for(lambda: any(line.startswith("add: exit 130") for line in _log_lines(home)), 30)
    finally:
        os.kill(int(done.stdout), signal.SIGKILL)
    os.close(writer)
    assert client(["list"], env, check=True).stdout.count("\n") == 3  # nothing added, and served again
    assert served_commands(home)[-1] == "list"


def _log_lines(home: Path) -> list[str]:
    return [line.split(": ", 1)[1] for line in (home / "server.log").read_text().splitlines() if ": " in line]


def test_a_busy_server_says_what_it_runs_and_a_wedged_one_fails_the_doctor(env):  # noqa: F811
    home = Path(env["ZK_HOME"])
    start(env)
    reader, writer = os.pipe()
    waiting = subprocess.Popen([sys.executable, "-m", "zettel_amem.client", "add", "-"], env=env, stdin=reader,
                               stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    os.close(reader)
    try:
        wait_for(lambda: (server_state(home).get("busy") or {}).get("command") == "add", 30)
        state = server_state(home)
        assert "busy with `add` for" in describe(state) and not server_needs_you(state)
        checks = json.loads(client(["doctor", "--json"], env).stdout)["checks"]  # in its own process: busy
        assert any(c["check"] == "server" and c["ok"] and "busy with `add`" in c["message"] for c in checks)
    finally:
        os.write(writer, b"a note from a pipe")
        os.close(writer)
        waiting.communicate(timeout=60)
    assert waiting.returncode == 0
    wedged = {**state, "busy": {"command": "add", "seconds": 700.0, "client_gone": True}}
    assert server_needs_you(wedged) and "client that is gone" in describe(wedged)


EDITOR_NEEDING_A_TERMINAL = """#!/bin/sh
# An editor that works only on a terminal, as vim and nano do: it writes the note only when it has one.
[ -t 0 ] && [ -t 1 ] || { echo "not a terminal" >&2; exit 1; }
printf 'written at the terminal\\n' > "$1"
"""


def _in_a_terminal(args: list[str], environment: dict, keys: bytes = b"", seconds: float = 60) -> tuple[int, str]:
    """Run `zk ARGS` with a pseudo-terminal as its stdin, stdout and stderr; type `keys` once it has drawn
    something or after 3 s, one line at a time. Killed after `seconds`."""
    pid, fd = pty.fork()
    if pid == 0:
        os.execve(sys.executable, [sys.executable, "-m", "zettel_amem.client", *args], environment)
    output = b""
    began = time.monotonic()
    lines = keys.splitlines(keepends=True)
    while time.monotonic() - began < seconds:
        ready, _, _ = select.select([fd], [], [], 0.5)
        if ready:
            try:
                chunk = os.read(fd, 4096)
            except OSError:
                break
            if not chunk:
                break
            output += chunk
        if lines and (output or time.monotonic() - began > 3):
            time.sleep(0.5)
            os.write(fd, lines.pop(0))
    else:
        os.kill(pid, signal.SIGKILL)
    _, status = os.waitpid(pid, 0)
    os.close(fd)
    return os.waitstatus_to_exitcode(status), output.decode("utf-8", "replace")


def test_zk_add_in_a_terminal_editor_works_while_a_server_runs(env, tmp_path):  # noqa: F811
    """D3: the editor that `zk add` and `zk add --template daily` open gets the user's terminal."""
    home = Path(env["ZK_HOME"])
    start(env)
    editor = tmp_path / "tty-editor.sh"
    editor.write_text(EDITOR_NEEDING_A_TERMINAL)
    editor.chmod(0o755)
    environment = {**env, "EDITOR": str(editor), "VISUAL": str(editor), "TERM": "xterm"}
    for args in (["add"], ["add", "--template", "daily"]):
        code, output = _in_a_terminal(args, environment)
        assert code == 0 and "saved" in output, output
    notes = client(["list", "--json"], env, check=True).stdout
    assert notes.count("written at the terminal") == 2
    assert "not a terminal" not in (home / "server.log").read_text()


@pytest.mark.skipif(not shutil.which("vim"), reason="vim is not installed")
def test_vim_opens_on_the_terminal_for_zk_add_with_a_server_running(env):  # noqa: F811
    """D3 with a real terminal editor, typed into through a pseudo-terminal."""
    start(env)
    environment = {**env, "EDITOR": "vim -u NONE -N", "VISUAL": "vim -u NONE -N", "TERM": "xterm"}
    environment.pop("ZK_NO_SERVER", None)
    code, output = _in_a_terminal(["add"], environment, keys=b"ihello from vim\x1b:wq\r")
    assert code == 0 and "saved" in output, output
    assert "hello from vim" in client(["list"], env, check=True).stdout


def test_a_deleted_working_folder_is_no_crash(env, tmp_path):  # noqa: F811
    """D4: every served command from a folder deleted meanwhile runs (there, as in its own process); a
    relative path there gets one line."""
    start(env)
    gone = tmp_path / "gone"
    gone.mkdir()
    script = (f"import os, subprocess, sys\nos.chdir({str(gone)!r})\nos.rmdir({str(gone)!r})\n"
              "for args in (['add', 'from a deleted folder'], ['--help'], ['export', '-o', 'rel.jsonl']):\n"
              "    done = subprocess.run([sys.executable, '-m', 'zettel_amem.client', *args], capture_output=True,"
              " text=True)\n    print(done.returncode, repr(done.stdout[:40]), repr(done.stderr))\n")
    lines = subprocess.run([sys.executable, "-c", script], env=env, capture_output=True, text=True,
                           timeout=120).stdout.splitlines()
    assert lines[0].startswith("0 'saved ") and lines[1].startswith("0 'Usage: zk")
    assert lines[2].startswith("1 '' ") and "the current folder was deleted" in lines[2]
    assert "Traceback" not in "".join(lines)
    assert served_commands(Path(env["ZK_HOME"]))[-3:] == ["add", "help", "export"]


def test_an_old_server_of_a_deleted_home_leaves_the_new_ones_files(tmp_path, monkeypatch):
    """D5: a home deleted and made again at the same path: the first server, leaving, removes nothing of
    the second's (it exits by itself once its home is gone), and a malformed server.json is a stale one."""
    monkeypatch.delenv("ZK_NO_SERVER", raising=False)
    home = tmp_path / "notes"
    environment = zk_env(home, ZK_CONFIG_DIR=str(tmp_path / "no-config"))
    environment.pop("ZK_NO_SERVER", None)
    client(["add", "old home note"], {**environment, "ZK_NO_SERVER": "1"}, check=True)
    (home / "config.toml").write_text("server_idle_minutes = 0.05\n")  # it checks its home every 3 s
    first = start(environment)["pid"]
    shutil.rmtree(home)
    home.mkdir()
    client(["add", "new home, same path"], {**environment, "ZK_NO_SERVER": "1"}, check=True)
    second = start(environment)["pid"]
    try:
        wait_for(lambda: not Path(f"/proc/{first}").exists() or "Z" in _proc_state(first), 30)
        assert (home / SERVER_DIR / SOCKET_NAME).exists() and (home / SERVER_DIR / STATE_NAME).exists()
        assert server_state(home)["pid"] == second and connect(home) is not None
        (home / SERVER_DIR / STATE_NAME).write_text('{"pid": "x", "idle_minutes": "abc"}')
        for args in (["server"], ["status"], ["doctor"]):
            done = client(args, environment)
            assert "internal error" not in done.stderr and "Traceback" not in done.stderr, done.stderr
        assert f"pid {second}" in client(["server"], environment, check=True).stdout  # from the lock file
        assert json.loads(client(["server", "stop", "--json"], environment, check=True).stdout)["stopped"]
    finally:
        stop(home)


def _proc_state(pid: int) -> str:
    try:
        return Path(f"/proc/{pid}/stat").read_text().split(")")[-1].split()[0]
    except OSError:
        return "gone"


@needs_another_user
def test_another_user_who_may_read_the_notebook_gets_no_traceback():
    """D6: the owner's .server is 0700; another user's client treats the server as unreachable (and its
    status says so) instead of failing on the socket's path."""
    home = shared_home()
    environment = zk_env(home)
    environment.pop("ZK_NO_SERVER", None)
    if not os.access(ROOT, os.R_OK | os.X_OK) or stat.S_IMODE(os.stat(ROOT).st_mode) & 0o005 != 0o005:
        pytest.skip("the checkout is not readable by other users")
    try:
        client(["add", "a note others may read"], {**environment, "ZK_NO_SERVER": "1"}, check=True)
        start(environment)
        script = (f"import sys\nsys.path.insert(0, {str(ROOT)!r})\nfrom pathlib import Path\n"
                  "from zettel_amem.client import run_on_server\n"
                  "from zettel_amem.runtime.resident import describe, server_state\n"
                  f"home = Path({str(home)!r})\nprint(run_on_server(home, ['list']))\n"
                  "print(describe(server_state(home)))\n")
        reader = as_nobody(script)
        out, err = reader.communicate(timeout=60)
        assert reader.returncode == 0 and "Traceback" not in err, err
        assert out.splitlines()[0] == "None" and "not this user's" in out.splitlines()[1]
    finally:
        stop(home)
        shutil.rmtree(home, ignore_errors=True)


def test_the_server_log_is_private_and_holds_no_typed_words(env):  # noqa: F811
    """D12: command names and times only: a note typed without `add`, a notebook or model name never."""
    home = Path(env["ZK_HOME"])
    start(env)
    client(["I think my boss is cheating on taxes"], env)
    client(["-n", "my secret diary", "add", "SECRET TEXT body"], env, check=True)
    client(["--model", "qwen2.5-0.5b", "list"], env, check=True)
    log = (home / "server.log").read_text()
    assert stat.S_IMODE((home / "server.log").stat().st_mode) == 0o600
    for words in ("boss", "my secret diary", "SECRET", "qwen2.5"):
        assert words not in log
    assert served_commands(home)[-3:] == ["unknown command", "add", "list"]


def test_a_reading_command_on_a_folder_that_is_no_notebook_creates_nothing(tmp_path, monkeypatch):
    """D14: `zk --home . status` in any folder said "notes 0" and left a store and a server there."""
    monkeypatch.delenv("ZK_NO_SERVER", raising=False)
    folder = tmp_path / "project"
    folder.mkdir()
    (folder / "README.md").write_text("not a notebook")
    environment = zk_env(folder)
    environment.pop("ZK_NO_SERVER", None)
    for args in (["status"], ["list"], ["search", "x"], ["server", "start"]):
        done = client(["--home", ".", *args], environment, cwd=folder)
        assert done.returncode == 1 and done.stderr.startswith("zk: error: no notebook at"), done.stderr
    time.sleep(1)
    assert sorted(p.name for p in folder.iterdir()) == ["README.md"]


def test_ctrl_d_at_a_terminal_ends_zk_import(env):  # noqa: F811
    """D16: the first Ctrl-D at the start of a line ends `zk import -` typed at a terminal."""
    environment = {**env, "ZK_NO_SERVER": "1", "TERM": "dumb"}
    code, output = _in_a_terminal(["import", "-", "--no-llm"], environment,
                                  keys=b"A: typed one\rB: typed two\r\x04", seconds=30)
    assert code == 0 and "2 added" in output, output


def test_a_server_that_cannot_start_says_why_at_once(env):  # noqa: F811
    """D17: a .server that is a file, or a server.json that is a folder: one line at once from `zk server
    start`, and the doctor's server line fails with the reason."""
    home = Path(env["ZK_HOME"])
    for make, reason in ((lambda: (home / SERVER_DIR).write_text(""), "is not a folder"),
                         (lambda: (home / SERVER_DIR / STATE_NAME).mkdir(parents=True), "is a folder")):
        shutil.rmtree(home / SERVER_DIR, ignore_errors=True)
        (home / SERVER_DIR).unlink(missing_ok=True) if (home / SERVER_DIR).is_file() else None
        make()
        began = time.monotonic()
        done = client(["server", "start"], env)
        assert done.returncode == 1 and "cannot start a server" in done.stderr and reason in done.stderr
        assert time.monotonic() - began < 20
        checks = json.loads(client(["doctor", "--json"], env).stdout)["checks"]
        assert any(c["check"] == "server" and not c["ok"] and reason in c["message"] for c in checks), checks
        assert client(["list"], env, check=True).stdout.count("\n") == 3  # commands still run, in-process


@pytest.mark.slow
@pytest.mark.skipif(os.geteuid() != 0, reason="mounts a read-only tmpfs")
def test_a_server_on_a_read_only_home_is_refused_at_once(env, tmp_path):  # noqa: F811
    mount = tmp_path / "ro"
    mount.mkdir()
    if subprocess.run(["mount", "-t", "tmpfs", "-o", "size=20m", "tmpfs", str(mount)]).returncode:
        pytest.skip("cannot mount a tmpfs here")
    try:
        shutil.copytree(env["ZK_HOME"], mount / "home", ignore=shutil.ignore_patterns(SERVER_DIR))
        subprocess.run(["mount", "-o", "remount,ro", str(mount)], check=True)
        environment = {**env, "ZK_HOME": str(mount / "home")}
        began = time.monotonic()
        done = client(["server", "start"], environment)
        assert done.returncode == 1 and "read-only" in done.stderr and time.monotonic() - began < 20
        assert client(["list"], environment, check=True).stdout.count("\n") == 3
    finally:
        subprocess.run(["umount", "-l", str(mount)])


def test_ctrl_z_suspends_the_served_command_too(env):  # noqa: F811
    """D18: a served command stops with its client (SIGTSTP) and goes on with it (SIGCONT)."""
    start(env)
    reader, writer = os.pipe()
    # its own process group, whose parent (pytest) is in another group of the same session: a group that is
    # not orphaned, so the kernel stops it on SIGTSTP even where pytest's own group is orphaned (a CI job)
    waiting = subprocess.Popen([sys.executable, "-m", "zettel_amem.client", "add", "-"], env=env, stdin=reader,
                               stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, process_group=0)
    os.close(reader)
    home = Path(env["ZK_HOME"])
    wait_for(lambda: (server_state(home).get("busy") or {}).get("command") == "add", 30)
    waiting.send_signal(signal.SIGTSTP)
    wait_for(lambda: (server_state(home).get("busy") or {}).get("suspended"), 30)
    os.write(writer, b"typed while suspended")
    os.close(writer)
    time.sleep(2)
    off = {**env, "ZK_NO_SERVER": "1"}
    assert "typed while suspended" not in client(["list"], off, check=True).stdout  # held where it was
    assert _proc_state(waiting.pid) == "T"
    waiting.send_signal(signal.SIGCONT)
    out, err = waiting.communicate(timeout=60)
    assert waiting.returncode == 0 and "saved" in out, err
    assert "typed while suspended" in client(["list"], off, check=True).stdout


def test_a_terminal_that_hangs_up_mid_command_does_not_end_the_server(env, tmp_path):  # noqa: F811
    """Round five's verification: an ssh session dropped during a served `zk import` (its terminal gone:
    every write EIO) made the server exit without a word; the command fails, the server goes on."""
    start(env)
    home = Path(env["ZK_HOME"])
    pid = server_state(home)["pid"]
    log = tmp_path / "chat.txt"
    log.write_text("".join(f"Ana: line {i} of a long chat\n" for i in range(1000)), encoding="utf-8")
    master, slave = pty.openpty()
    importing = subprocess.Popen([sys.executable, "-m", "zettel_amem.client", "import", str(log), "--no-llm"],
                                 env=env, stdin=slave, stdout=slave, stderr=slave, start_new_session=True)
    os.close(slave)
    wait_for(lambda: (server_state(home).get("busy") or {}).get("command") == "import", 60)
    os.close(master)  # the terminal hangs up: the client gets SIGHUP, the server's copies of it EIO
    importing.wait(60)
    wait_for(lambda: not server_state(home).get("busy"), 90)
    state = server_state(home)
    assert state["running"] and state["pid"] == pid, state
    assert client(["list", "--limit", "1"], env, check=True).stdout  # and it serves the next command
    logged = (home / "server.log").read_text()
    assert "import: exit 1" in logged or "import: exit 130" in logged, logged  # the command's end is logged
