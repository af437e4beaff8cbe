"""The mock model: a scripted LLM for unit tests and for subprocess tests (crash, concurrency).

Subprocesses load it with `ZK_LLM_MODEL=python:tests.fake_llm:FakeLLM` (repo root on PYTHONPATH);
`ZK_FAKE_DELAY` (seconds per call) widens the windows a crash test can kill in.
"""

from __future__ import annotations

import os
import re
import time
from typing import Any

from zettel_amem.llm import LLMError, Usage


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
        # Upper tiers: a summary is the session's first turns; entities are capitalised words and
        # "X uses Y" sentences become relations; no unsure name is the same; every conflict outdates.
        self.summarise = lambda user: {"facts": [re.sub(r"^\S+ \S+ ", "", line)
                                                 for line in user.split("Turns:\n", 1)[1].splitlines()[:3]]}
        self.extract = _extract_by_rule
        self.same = lambda user: {"same": False}
        self.outdated = lambda user, ids: {"outdated": ids}
        self._last = Usage()

    @property
    def last_usage(self) -> Usage:
        return self._last

    def complete_json(self, system: str, user: str, schema: dict, max_tokens: int):
        self.calls.append({"system": system, "user": user, "schema": schema})
        time.sleep(float(os.environ.get("ZK_FAKE_DELAY", "0")))
        if self.fail:
            raise LLMError("fake model failure")
        self._last = Usage(calls=1, prompt_tokens=len(user) // 4, evaluated_tokens=len(user) // 4,
                           completion_tokens=20)
        if user.startswith("Task ANNOTATE"):
            return self.annotate(user), self._last
        if user.startswith("Task SUMMARISE"):
            return self.summarise(user), self._last
        if user.startswith("Task EXTRACT"):
            return self.extract(user), self._last
        if user.startswith("Task SAME"):
            return self.same(user), self._last
        if user.startswith("Task OUTDATED"):
            return self.outdated(user, schema["properties"]["outdated"]["items"]["enum"]), self._last
        if "answer" in schema["properties"]:  # the answer task: a short answer citing the first note given
            ids = schema["properties"]["ids"].get("items", {}).get("enum", [])
            return {"answer": self.answer, "ids": ids[:1]}, self._last
        ids = schema["properties"]["links"]["items"]["enum"]
        return self.link(user, ids), self._last

    def stream(self, system: str, user: str, max_tokens: int):
        self.calls.append({"system": system, "user": user, "schema": None})
        if self.fail:
            raise LLMError("fake model failure")
        ids = re.findall(r"^\[([0-9a-f]{8,})\]", user, re.MULTILINE)
        text = self.answer + (f" [{ids[0]}]" if ids else "")
        yield from re.findall(r"\S+\s*", text)  # pieces like a real stream: words with their spaces
        self._last = Usage(calls=1)


class EvolvingFakeLLM(FakeLLM):
    """Links to and rewrites its first two candidates, so every processed note evolves neighbours."""

    def __init__(self) -> None:
        super().__init__()
        self.link = lambda user, ids: {"links": ids[:2], "updates": [
            {"id": i, "context": f"Updated by {_new_id(user)}.", "tags": ["evolved"]} for i in ids[:2]]}


def _extract_by_rule(user: str) -> dict:
    facts = user.split("):\n", 1)[1]
    names = list(dict.fromkeys(re.findall(r"\b[A-Z][A-Za-z]+\b", facts)))
    relations = [{"subject": s, "predicate": "uses", "object": o}
                 for s, o in re.findall(r"\b([A-Z][A-Za-z]+) uses ([A-Z][A-Za-z]+)", facts)]
    return {"entities": [{"name": n, "type": "other"} for n in names], "relations": relations}


def _new_id(user: str) -> str:
    match = re.search(r"New note \[([0-9a-f]+)\]", user)
    return match.group(1) if match else "?"
