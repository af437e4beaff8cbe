"""The mock model: a scripted LLM for unit tests and for subprocess tests (crash, concurrency).

It answers by *task*, read from the `"title"` the library puts on every JSON schema it passes to
`complete_json` ("annotate", "link", ...), never by the prompt's wording, so a template can be reworded
(or overridden by a user) without breaking a test. Like simonw/llm's `MockModel`, a test can
`enqueue(task, reply)`: queued replies are used first, in order; after them each task has a rule-based
default, which a test may also replace (`fake.link = lambda user, ids: ...`).

Subprocesses load it with `ZK_LLM_MODEL=python:tests.fake_llm:FakeLLM` (repo root on PYTHONPATH);
`ZK_FAKE_DELAY` (seconds per call) widens the windows a crash test can kill in.
"""

from __future__ import annotations

import os
import re
import threading
import time
from collections import defaultdict, deque
from typing import Any

from zettel_amem.backends.llm import LLMError, Usage

TASKS = ("annotate", "link", "summarise", "extract", "same_entity", "answer", "read", "headline")


class FakeLLM:
    """Answers every JSON task by its schema title: a queued reply first, else the task's rule.

    The rules are attributes a test may replace: `annotate(user) -> dict`, `link(user, candidate_ids)`,
    `summarise(user)`, `extract(user)`, `same(user)`, `read(user, count)`, `read_all(user, count)`,
    `headline(user, count)` (a journal answer's written headline, from the first sentence) and `answer` (the text).
    `fail = True` makes every call raise LLMError, like a model that crashed. `calls` records every
    call with its `task`.
    """

    name = "fake"

    def __init__(self) -> None:
        self.calls: list[dict[str, Any]] = []
        self.fail = False
        self._queued: dict[str, deque] = defaultdict(deque)
        self._lock = threading.Lock()  # `zk process --jobs N` calls from several threads
        # a context of the note's first words, whole (a word cut in two is no word of the note: the grounded
        # contract, amem/grounded.py, would put the note's own sentence in its place)
        self.annotate = lambda user: {"keywords": re.findall(r"\w+", _after(user, "Note:"))[:3],
                                      "tags": ["journal"],
                                      "context": "About: " + " ".join(_after(user, "Note:").split()[:8])}
        self.link = lambda user, ids: {"links": ids[:1], "updates": []}
        self.answer = "The knee notes say so."
        self.read = lambda user, count: {"passage": 0}  # which passage answers (reader.py): none
        self.read_all = lambda user, count: {"passages": []}  # ... which record a time it happened: none
        self.headline = lambda user, count: {"answer": self.answer, "sentences": [1]}
        # Upper tiers: a summary is the session's first turns; entities are capitalised words and
        # "X uses Y" sentences become "uses database" relations; no unsure name is the same.
        self.summarise = lambda user: {"facts": [re.sub(r"^\S+ \S+ ", "", line)
                                                 for line in _after(user, "Turns:\n").splitlines()[:3]]}
        self.extract = _extract_by_rule
        self.same = lambda user: {"same": False}
        self._last = Usage()

    @property
    def last_usage(self) -> Usage:
        return self._last

    def enqueue(self, task: str, reply: dict[str, Any] | BaseException) -> FakeLLM:
        """The next `task` call returns `reply` (an exception is raised instead). Chainable."""
        if task not in TASKS:
            raise ValueError(f"unknown task {task!r}; the tasks are {', '.join(TASKS)}")
        with self._lock:
            self._queued[task].append(reply)
        return self

    def tasks(self) -> list[str]:
        """The task of every JSON call so far, in order."""
        return [c["task"] for c in self.calls if c["task"]]

    def complete_json(self, system: str, user: str, schema: dict, max_tokens: int):
        task = schema.get("title")
        self.calls.append({"system": system, "user": user, "schema": schema, "task": task})
        time.sleep(float(os.environ.get("ZK_FAKE_DELAY", "0")))
        if self.fail:
            raise LLMError("fake model failure")
        if task not in TASKS:
            raise AssertionError(f"FakeLLM: a schema without a known task title ({task!r}); give every schema "
                                 "passed to complete_json a \"title\" and teach the fake its task")
        self._last = Usage(calls=1, prompt_tokens=len(user) // 4, evaluated_tokens=len(user) // 4,
                           completion_tokens=20)
        with self._lock:
            queued = self._queued[task].popleft() if self._queued[task] else None
        if isinstance(queued, BaseException):
            raise queued
        return (queued if queued is not None else self._by_rule(task, user, schema)), self._last

    def _by_rule(self, task: str, user: str, schema: dict) -> dict[str, Any]:
        props = schema["properties"]
        if task == "annotate":
            return self.annotate(user)
        if task == "link":
            return self.link(user, props["links"]["items"]["enum"])
        if task == "summarise":
            return self.summarise(user)
        if task == "extract":
            return self.extract(user)
        if task == "same_entity":
            return self.same(user)
        if task == "read" and "passages" in props:  # which passages record a time it happened
            return self.read_all(user, len(props["passages"]["items"]["enum"]))
        if task == "read":
            return self.read(user, len(props["passage"]["enum"]) - 1)
        if task == "headline":
            return self.headline(user, len(props["sentences"]["items"]["enum"]))
        ids = props["ids"].get("items", {}).get("enum", [])  # answer: short, citing the first note given
        return {"answer": self.answer, "ids": ids[:1]}

    def stream(self, system: str, user: str, max_tokens: int):
        self.calls.append({"system": system, "user": user, "schema": None, "task": None})
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
            {"id": i, "context": f"Updated by {new_note_start(user, 12)}.", "tags": ["evolved"]} for i in ids[:2]]}
        # (the new note's whole first words: two notes that began alike once wrote the same context, which
        # changed nothing and left no version, so a finished note seemed to have evolved nothing)


def _after(user: str, marker: str) -> str:
    """The prompt's text after `marker` (where the shipped template puts the note), else all of it:
    a reworded template changes what the rule reads, never whether the fake answers."""
    return user.split(marker, 1)[1] if marker in user else user


def _extract_by_rule(user: str) -> dict:
    facts = _after(user, "):\n")
    names = list(dict.fromkeys(re.findall(r"\b[A-Z][A-Za-z]+\b", facts)))
    pairs = re.findall(r"\b([A-Z][A-Za-z]+) uses ([A-Z][A-Za-z]+)", facts)
    relations = [{"subject": s, "predicate": "uses database", "object": o} for s, o in pairs]
    kinds = {s: "project" for s, _ in pairs} | {o: "technology" for _, o in pairs}
    return {"entities": [{"name": n, "type": kinds.get(n, "other")} for n in names], "relations": relations}


def new_note_start(user: str, words: int = 3) -> str:
    """The first words of the new note in a link prompt (which names no note id: the model never sees one)."""
    match = re.search(r"^New note \S+: (.*)$", user, re.MULTILINE)
    return " ".join(match.group(1).split()[:words]) if match else "?"
