"""Shared fixtures: a temp home set through ZK_HOME, and a scripted fake LLM (the mock model)."""

from __future__ import annotations

import re
from typing import Any

import pytest

from zettel_amem.llm import LLMError, Usage
from zettel_amem.memory import Memory


class FakeLLM:
    """Answers the two note tasks by rule, or by the functions a test sets; records every call.

    `annotate(user) -> dict` and `link(user, candidate_ids) -> dict` may be replaced per test.
    `fail = True` makes every call raise LLMError, like a model that crashed.
    """

    name = "fake"

    def __init__(self) -> None:
        self.calls: list[dict[str, Any]] = []
        self.fail = False
        self.annotate = lambda user: {
            "keywords": [w for w in re.findall(r"\w+", user.split("Note:", 1)[1])][:3],
            "tags": ["journal"], "context": "About: " + user.split("Note:", 1)[1].strip()[:40]}
        self.link = lambda user, ids: {"links": ids[:1], "updates": []}
        self.answer = "The knee notes say so."
        self._last = Usage()

    @property
    def last_usage(self) -> Usage:
        return self._last

    def complete_json(self, system: str, user: str, schema: dict, max_tokens: int):
        self.calls.append({"system": system, "user": user, "schema": schema})
        if self.fail:
            raise LLMError("fake model failure")
        self._last = Usage(calls=1, prompt_tokens=len(user) // 4, evaluated_tokens=len(user) // 4,
                           completion_tokens=20)
        if user.startswith("Task ANNOTATE"):
            return self.annotate(user), self._last
        ids = schema["properties"]["links"]["items"]["enum"]
        return self.link(user, ids), self._last

    def stream(self, system: str, user: str, max_tokens: int):
        self.calls.append({"system": system, "user": user, "schema": None})
        if self.fail:
            raise LLMError("fake model failure")
        ids = re.findall(r"^\[([0-9a-f]{8,})\]", user, re.MULTILINE)
        text = self.answer + (f" [{ids[0]}]" if ids else "")
        yield from text.split(" ")
        self._last = Usage(calls=1)


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
