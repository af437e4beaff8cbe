"""Shared fixtures: a temp home set through ZK_HOME, the scripted fake LLM (the mock model), and `zk`,
the real CLI in this process (tests/harness.py has the subprocess side)."""

from __future__ import annotations

import os
import sys

import pytest

from tests.fake_llm import EvolvingFakeLLM, FakeLLM
from tests.harness import FAKE_MODEL, Result, run_in_process
from zettel_amem.memory import Memory


@pytest.fixture(autouse=True)
def _no_user_config(tmp_path_factory, monkeypatch):
    """Tests never read the developer's own config dir (config.toml, prompt overrides)."""
    config = tmp_path_factory.mktemp("zk-config")
    # The model path of `zk ask` is what most tests exercise; the journal path (#26, on by default) has its
    # own tests, which switch it on (test_journal_answers.py).
    (config / "config.toml").write_text("[memory]\nanswer_journal = false\n", encoding="utf-8")
    monkeypatch.setenv("ZK_CONFIG_DIR", str(config))
    # No resident server (cli/server.py) outlives a test: tests/test_server.py turns it on where it tests it.
    monkeypatch.setenv("ZK_NO_SERVER", "1")


@pytest.fixture(autouse=True)
def _no_model_setting_leaks():
    """A test leaves `ZK_LLM_MODEL` as it found it (`zk --model X` in-process sets it): a leaked dead
    server once made four later real-model tests fall back to extractive answers."""
    before = os.environ.get("ZK_LLM_MODEL")
    yield
    assert os.environ.get("ZK_LLM_MODEL") == before, "this test leaked ZK_LLM_MODEL into later tests"


@pytest.fixture
def zk_home(tmp_path, monkeypatch):
    home = tmp_path / "zk-home"
    monkeypatch.setenv("ZK_HOME", str(home))
    monkeypatch.setenv("ZK_NO_WORKER", "1")
    return home


@pytest.fixture
def zk(zk_home, embedder, capsys, monkeypatch):
    """`zk(*args, stdin=None, check=False) -> Result(exit_code, stdout, stderr)` (unpacks as
    `code, out, err`; `.json()` reads stdout): `main()` itself, with its error mapping, on the test's
    home and the session's embedder (loaded once, not per command)."""
    import zettel_amem.backends.embed

    monkeypatch.setattr(zettel_amem.backends.embed, "load_embedder", lambda *args, **kwargs: embedder)

    untouched = sys.stdin  # pytest's own: reading it fails. A test that installs its own stdin keeps it.

    def zk(*args: str, stdin: bytes | str | None = None, check: bool = False) -> Result:
        if stdin is None and sys.stdin is untouched:
            stdin = b""  # as when nothing is piped in: empty, and not a terminal (`zk add -` reads nothing)
        return run_in_process(list(args), capsys, monkeypatch, stdin, check)

    return zk


@pytest.fixture
def fake_model(zk_home, monkeypatch):
    """CLI commands use the scripted model (in this process and in subprocesses that inherit the
    environment), and link whatever it picks (no similarity floor)."""
    monkeypatch.setenv("ZK_LLM_MODEL", FAKE_MODEL)
    zk_home.mkdir(parents=True, exist_ok=True)
    (zk_home / "config.toml").write_text("link_min_similarity = 0.0\n", encoding="utf-8")


@pytest.fixture
def fake_llm() -> FakeLLM:
    return FakeLLM()


@pytest.fixture(scope="session")
def embedder():
    from zettel_amem.backends.embed import load_embedder

    return load_embedder()


@pytest.fixture
def memory(zk_home, fake_llm, embedder) -> Memory:
    mem = Memory(zk_home, llm=fake_llm, embedder=embedder)
    mem.settings.link_min_similarity = 0.0  # the fake tests decide linking themselves
    return mem


@pytest.fixture
def journal(memory) -> Memory:
    """`memory` answering notes written with `zk add` by the journal path (journal_answer.py)."""
    memory.settings.answer_journal = True
    return memory


@pytest.fixture
def evolving(zk_home, embedder) -> Memory:
    """A memory whose model links and rewrites its first two candidates on every note."""
    memory = Memory(zk_home, llm=EvolvingFakeLLM(), embedder=embedder)
    memory.settings.link_min_similarity = 0.0
    return memory


@pytest.fixture(scope="session")
def llm_server(tmp_path_factory):
    """A real OpenAI-compatible server (`python -m llama_cpp.server`, bundled Qwen2.5-0.5B, 2 threads) on
    127.0.0.1 for the whole session. Its URL ends in /v1; the model is served as `qwen2.5-0.5b`.
    Run tests that use it under `flock /tmp/zk-llm.lock` like every real-model test."""
    from tests import llm_server as server

    port = server.free_port()
    log = tmp_path_factory.mktemp("llm-server") / "server.log"
    proc = server.start(port, log)
    url = f"http://127.0.0.1:{port}/v1"
    try:
        server.wait_ready(proc, url)
    except RuntimeError as exc:
        server.stop(proc)
        raise RuntimeError(f"{exc}; log: {log.read_text(errors='replace')[-2000:]}") from None
    yield url
    server.stop(proc)



# What a test (or a fixture it uses) calls to start another process: `zk` itself, a model server, a
# machine of its own, a wheel build.
_SPAWNS = ("harness.run(", "zk_command(", "subprocess.", "Popen(", "llm_server", "remote_machine", "s3_server",
           "multiprocessing", "run_subprocess")


@pytest.fixture(scope="module")
def s3():
    """A loopback S3-compatible server (moto) with the test bucket, one per test module."""
    from tests.s3_server import LoopbackS3

    server = LoopbackS3().start()
    server.make_bucket()
    yield server
    server.stop()


def _spawns(item) -> bool:
    import inspect

    funcs = [getattr(item, "function", None)]
    funcs += [d.func for defs in item._fixtureinfo.name2fixturedefs.values() for d in defs]
    for func in funcs:
        try:
            source = inspect.getsource(func) if func is not None else ""
        except (OSError, TypeError):
            continue
        if any(mark in source for mark in _SPAWNS):
            return True
    return False


def pytest_collection_modifyitems(items):
    """Mark the test tiers (CONTRIBUTING.md): `embedder` for tests that load the real bundled embedder (through
    any fixture), `subprocess` for tests that start other processes; the fast tier is
    `-m "not slow and not embedder and not subprocess"`."""
    for item in items:
        if "embedder" in getattr(item, "fixturenames", ()):
            item.add_marker(pytest.mark.embedder)
        if _spawns(item):
            item.add_marker(pytest.mark.subprocess)
