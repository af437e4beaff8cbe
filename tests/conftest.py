"""Shared fixtures: a temp home set through ZK_HOME, and a scripted fake LLM (the mock model)."""

from __future__ import annotations

import pytest

from tests.fake_llm import FakeLLM
from zettel_amem.memory import Memory


@pytest.fixture(autouse=True)
def _no_user_config(tmp_path_factory, monkeypatch):
    """Tests never read the developer's own config dir (config.toml, prompt overrides)."""
    monkeypatch.setenv("ZK_CONFIG_DIR", str(tmp_path_factory.mktemp("zk-config")))


@pytest.fixture
def zk_home(tmp_path, monkeypatch):
    home = tmp_path / "zk-home"
    monkeypatch.setenv("ZK_HOME", str(home))
    monkeypatch.setenv("ZK_NO_WORKER", "1")
    return home


@pytest.fixture
def fake_llm() -> FakeLLM:
    return FakeLLM()


@pytest.fixture(scope="session")
def embedder():
    from zettel_amem.embed import load_embedder

    return load_embedder()


@pytest.fixture
def memory(zk_home, fake_llm, embedder) -> Memory:
    mem = Memory(zk_home, llm=fake_llm, embedder=embedder)
    mem.settings.link_min_similarity = 0.0  # the fake tests decide linking themselves
    return mem
