"""A real OpenAI-compatible server for tests and benchmarks: llama-cpp-python's own
(`python -m llama_cpp.server`, the `[server]` extra's dependencies) on 127.0.0.1, serving the
bundled Qwen2.5-0.5B GGUF under the name `qwen2.5-0.5b`, with 2 threads.

    python -m tests.llm_server --port 8765        # run it by hand (same settings as the fixture)

Run as a module it loads the model with llama.cpp's extra buffer types off, like zk's own backend
(a native build of 0.3.36 segfaults on CPUs that report AMX otherwise).
"""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
MODEL_ALIAS = "qwen2.5-0.5b"


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def start(port: int, log: Path | None = None, threads: int = 2) -> subprocess.Popen:
    """Start the server in its own process group; `wait_ready` before use, `stop` after."""
    from zettel_amem.backends.llm.bundled import qwen_path

    args = [sys.executable, "-m", "tests.llm_server", "--model", str(qwen_path()), "--model_alias", MODEL_ALIAS,
            "--host", "127.0.0.1", "--port", str(port), "--n_threads", str(threads),
            "--n_threads_batch", str(threads), "--n_ctx", "4096", "--seed", "0",
            # concurrent requests queue instead of cutting off a streaming answer
            "--interrupt_requests", "False"]
    out = open(log, "ab") if log else subprocess.DEVNULL  # noqa: SIM115 - closed with the process
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")]),
           "ZK_SERVER_PARENT": str(os.getpid())}
    return subprocess.Popen(args, stdout=out, stderr=out, stdin=subprocess.DEVNULL, env=env,
                            start_new_session=True, cwd=ROOT)


def wait_ready(proc: subprocess.Popen, base_url: str, timeout: float = 180) -> None:
    import httpx

    deadline = time.time() + timeout
    while time.time() < deadline:
        if proc.poll() is not None:
            raise RuntimeError(f"llama_cpp.server exited with {proc.returncode}")
        try:
            if httpx.get(base_url + "/models", timeout=2).status_code == 200:
                return
        except httpx.HTTPError:
            pass
        time.sleep(0.5)
    raise RuntimeError("llama_cpp.server did not start in time")


def stop(proc: subprocess.Popen) -> None:
    if proc.poll() is None:
        proc.terminate()
        try:
            proc.wait(20)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait(20)


def _exit_with_parent() -> None:
    """A test run or benchmark killed without its teardown must not leave a 2-thread server behind."""
    import threading

    parent = int(os.environ.get("ZK_SERVER_PARENT", "0"))

    def watch() -> None:
        while os.getppid() == parent:
            time.sleep(2)
        os._exit(0)

    if parent:
        threading.Thread(target=watch, daemon=True).start()


def _serve() -> None:
    from llama_cpp.server.__main__ import main

    from zettel_amem.backends.llm.llama import without_extra_bufts

    _exit_with_parent()
    with without_extra_bufts():  # the server loads its model inside: the same AMX-safe load as zk's
        main()


if __name__ == "__main__":
    if "--model" not in sys.argv:
        from zettel_amem.backends.llm.bundled import qwen_path

        sys.argv += ["--model", str(qwen_path()), "--model_alias", MODEL_ALIAS, "--n_threads", "2",
                     "--n_threads_batch", "2", "--n_ctx", "4096", "--interrupt_requests", "False"]
    _serve()
