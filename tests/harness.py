"""The one way tests run `zk`: in this process through `main()` (the `zk` fixture in conftest.py), or as
a real subprocess (`zk_env`, `zk_command`, `run`, `start`, `shell`).

Both keep `main()`'s error mapping, so a test sees the one stderr line and the exit code a user sees.
Subprocesses run this tree's code (the repo root first on PYTHONPATH, which also finds `tests.*` for
`ZK_LLM_MODEL=python:tests.fake_llm:FakeLLM`), never whatever the editable install points at.
"""

from __future__ import annotations

import ast
import io
import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any, NamedTuple

ROOT = Path(__file__).resolve().parents[1]
FAKE_MODEL = "python:tests.fake_llm:FakeLLM"


class Result(NamedTuple):
    """What a user sees: the exit code, stdout and stderr. Unpacks as `code, out, err`."""

    exit_code: int
    stdout: str
    stderr: str

    def json(self) -> Any:
        return json.loads(self.stdout)


def one_line(err: str) -> bool:
    """stderr as a user must see it after a failure: one line, no traceback, no Rust panic, no internal error."""
    return len(err.strip().splitlines()) == 1 and "Traceback" not in err and ".rs:" not in err \
        and "internal error" not in err


def run_in_process(args: list[str], capsys, monkeypatch, stdin: bytes | str | None = None,
                   check: bool = False) -> Result:
    """`zk ARGS` through the real entry point in this process. `stdin` (bytes or text) is piped in; when
    None, stdin stays as it is (pytest's, not a terminal, or one the test set). `check=True` fails the
    test with zk's stderr when the exit code is not 0."""
    from zettel_amem import cli

    monkeypatch.setattr(sys, "argv", ["zk", *args])
    # `zk --model X` puts X in os.environ (for the worker it starts); undo that after the test, or a later
    # test's real-model run would inherit a dead server.
    monkeypatch.setenv("ZK_LLM_MODEL", os.environ.get("ZK_LLM_MODEL", ""))
    if not os.environ["ZK_LLM_MODEL"]:
        monkeypatch.delenv("ZK_LLM_MODEL")
    if stdin is not None:
        data = stdin.encode("utf-8") if isinstance(stdin, str) else stdin
        monkeypatch.setattr(sys, "stdin", io.TextIOWrapper(io.BytesIO(data), encoding="utf-8"))
    code = 0
    try:
        cli.main()
    except SystemExit as exc:
        code = exc.code or 0
    out, err = capsys.readouterr()
    if check:
        assert code == 0, (args, err)
    return Result(code, out, err)


def zk_env(home: Path | None = None, worker: bool = False, **extra: str) -> dict[str, str]:
    """The environment for a `zk` subprocess: this tree on PYTHONPATH, `ZK_HOME` (when given), no
    background worker unless asked, plus `extra` (e.g. ZK_LLM_MODEL=FAKE_MODEL)."""
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH")]))}
    if home is not None:
        env["ZK_HOME"] = str(home)
    env.pop("ZK_NO_WORKER", None)
    if not worker:
        env["ZK_NO_WORKER"] = "1"
    return env | extra


def zk_command(*args: str, module: str = "zettel_amem") -> list[str]:
    """The argv of `zk ARGS` (`module` runs another entry point, e.g. tests.kill_hooks)."""
    return [sys.executable, "-m", module, *args]


def run(*args: str, env: dict[str, str], input: bytes | str | None = None, timeout: float = 300,
        check: bool = False) -> subprocess.CompletedProcess:
    """Run `zk ARGS` to the end; text output when `input` is not bytes."""
    done = subprocess.run(zk_command(*args), env=env, input=input, capture_output=True, timeout=timeout,
                          text=not isinstance(input, bytes))
    if check:
        assert done.returncode == 0, (args, done.stderr)
    return done


def start(*args: str, env: dict[str, str], module: str = "zettel_amem", **popen: Any) -> subprocess.Popen:
    """Start `zk ARGS` and return at once (stdout and stderr piped unless `popen` says otherwise)."""
    popen = {"stdout": subprocess.PIPE, "stderr": subprocess.PIPE, **popen}
    _ctrl_c_as_in_a_terminal()
    return subprocess.Popen(zk_command(*args, module=module), env=env, **popen)


def _ctrl_c_as_in_a_terminal() -> None:
    """A shell's background job starts with SIGINT ignored and a child inherits that; a handled SIGINT is
    reset to the default at exec, so the child takes Ctrl-C as from a terminal (no fork-time hook needed)."""
    import signal
    import threading

    if signal.getsignal(signal.SIGINT) == signal.SIG_IGN and threading.current_thread() is threading.main_thread():
        signal.signal(signal.SIGINT, signal.default_int_handler)


def shell(command: str, home: Path, timeout: float = 300) -> subprocess.CompletedProcess:
    """A bash command line in which `zk ` is the real CLI: pipes, `<(...)` and redirections as a user types them."""
    zk = " ".join(zk_command())
    return subprocess.run(["bash", "-c", command.replace("zk ", zk + " ")], env=zk_env(home), capture_output=True,
                          text=True, timeout=timeout)


def modules_after_help(*modules: str) -> tuple[str, list[str]]:
    """`zk --help` in a fresh interpreter: (the help text, which of `modules` it imported)."""
    code = ("import sys, zettel_amem.cli as c; sys.argv=['zk','--help']\n"
            "try:\n  c.main()\nexcept SystemExit: pass\n"
            f"print('LOADED', [m for m in {list(modules)!r} if m in sys.modules])")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True,
                         env=zk_env()).stdout
    return out, ast.literal_eval(out.rsplit("LOADED ", 1)[1].strip())
