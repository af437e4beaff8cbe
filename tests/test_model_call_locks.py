"""Writers never wait for a model call (issue #28 item 11's leftovers): promotion (summarise, extract),
`zk add --wait` (`worker.process_or_queue`) and the MCP server read under their lock, call the model with
no lock held, and commit only if what they read is unchanged. Each test holds the fake model inside one
call (it blocks on an Event), runs the real `zk rm` / `zk edit` / another MCP tool meanwhile, checks it
returned while the model call was still running, then lets the call finish and checks that its result
did not bring a deleted note back or overwrite an edit."""

from __future__ import annotations

import sys
import threading
import time
from collections.abc import Callable
from pathlib import Path

import pytest

from tests.fake_llm import FakeLLM
from zettel_amem.core.models import EPISODE_PENDING, EPISODE_READY, PENDING, READY
from zettel_amem.memory import Memory
from zettel_amem.tiers.service import Tiers

WATCHDOG = 30.0  # seconds a blocked call waits at most: on main, the writer gets the lock only then


class BlockingLLM(FakeLLM):
    """The scripted model, except that its first call of `task` (once `arm(task)` was called) waits
    until the test sets `release` (or WATCHDOG passes). `inside` is True while that call waits."""

    def __init__(self, task: str | None = None):
        super().__init__()
        self.task = task
        self.entered = threading.Event()
        self.release = threading.Event()
        self.inside = False

    def complete_json(self, system: str, user: str, schema: dict, max_tokens: int):
        if schema.get("title") == self.task and not self.entered.is_set():
            self.inside = True
            self.entered.set()
            self.release.wait(WATCHDOG)
            self.inside = False
        return super().complete_json(system, user, schema, max_tokens)

    def arm(self, task: str) -> None:
        self.task = task


class Background:
    """`work()` in a thread; `wait_inside()` returns once it is in the blocked model call."""

    def __init__(self, llm: BlockingLLM, work: Callable[[], object]):
        self.llm, self.result, self.error = llm, None, None
        self.thread = threading.Thread(target=self._run, args=(work,), daemon=True)
        self.thread.start()
        assert llm.entered.wait(60), "the background work never reached its model call"

    def _run(self, work: Callable[[], object]) -> None:
        try:
            self.result = work()
        except BaseException as exc:  # re-raised in the test's thread by finish()
            self.error = exc

    def finish(self):
        self.llm.release.set()
        self.thread.join(WATCHDOG + 60)
        assert not self.thread.is_alive()
        if self.error is not None:
            raise self.error
        return self.result


def timed(writer: Callable[[], object]) -> tuple[object, float]:
    start = time.perf_counter()
    out = writer()
    return out, time.perf_counter() - start


def blocking_memory(home: Path, embedder, task: str | None = None) -> Memory:
    memory = Memory(home, llm=BlockingLLM(task), embedder=embedder)
    memory.settings.link_min_similarity = 0.0
    return memory


@pytest.fixture
def editor(tmp_path, monkeypatch) -> Callable[[str], None]:
    """`editor(text)`: the next `zk edit` saves `text` (a script as $VISUAL)."""
    script = tmp_path / "editor.py"
    script.write_text("import os, sys\nopen(sys.argv[1], 'w', encoding='utf-8')"
                      ".write(os.environ['ZK_TEST_EDIT_TEXT'])\n", encoding="utf-8")
    monkeypatch.setenv("VISUAL", f"{sys.executable} {script}")
    return lambda text: monkeypatch.setenv("ZK_TEST_EDIT_TEXT", text)


SESSION = [("2026-03-02T10:00", "Onbiseo uses SQLite for the first prototype."),
           ("2026-03-02T11:00", "Secret plan Zebracorn uses Vault for the keys.")]


def closed_session(memory: Memory) -> tuple[Tiers, str]:
    """Two journal entries of one past day, processed, their session closed; the secret note's id."""
    for at, text in SESSION:
        memory.add(text, at)
    memory.process_pending()
    tiers = Tiers(memory)
    tiers.sessions.close_due(today="2026-12-01")
    secret = next(n for n in memory.store.notes() if "Zebracorn" in n.content)
    return tiers, secret.id


def no_zebracorn(tiers: Tiers) -> None:
    assert all("Zebracorn" not in e.summary for e in tiers.store.episodes("main"))
    assert all("Zebracorn" not in e["name"] for e in tiers.graph.entities())


@pytest.mark.parametrize("stage", ["summarise", "extract"])
def test_rm_during_promotions_model_call_returns_at_once_and_stays_deleted(zk_home, embedder, zk, stage):
    memory = blocking_memory(zk_home, embedder, stage)
    tiers, secret = closed_session(memory)
    worker = Background(memory.llm, tiers.promotion.process_pending)
    (code, _, err), seconds = timed(lambda: zk("rm", secret[:8], "--yes"))
    returned_inside = memory.llm.inside  # on main `zk rm` got the step lock only after the model call
    [result] = worker.finish()
    assert code == 0, err
    assert returned_inside, f"zk rm waited {seconds:.1f} s for the {stage} call"
    assert memory.store.get(secret) is None
    assert result.status == EPISODE_PENDING and not result.error  # queued again: summarised without it
    no_zebracorn(tiers)
    assert [r.status for r in tiers.promotion.process_pending()] == [EPISODE_READY]
    no_zebracorn(tiers)
    assert "Onbiseo" in tiers.store.episodes("main")[0].summary


def test_an_edit_during_the_summary_call_is_summarised_afresh(zk_home, embedder, zk, editor):
    memory = blocking_memory(zk_home, embedder, "summarise")
    tiers, secret = closed_session(memory)
    worker = Background(memory.llm, tiers.promotion.process_pending)
    editor("Public plan Unicorn uses Vault for the keys.")
    (code, _, err), seconds = timed(lambda: zk("edit", secret[:8]))
    returned_inside = memory.llm.inside
    worker.finish()
    assert code == 0, err
    assert returned_inside, f"zk edit waited {seconds:.1f} s for the summary call"
    assert memory.store.get(secret).content == "Public plan Unicorn uses Vault for the keys."
    no_zebracorn(tiers)  # the summary of the old text was dropped, not written over the edit
    tiers.promotion.process_pending()
    [episode] = tiers.store.episodes("main")
    assert episode.status == EPISODE_READY and "Unicorn" in episode.summary and "Zebracorn" not in episode.summary


def test_rm_during_add_wait_returns_at_once_and_the_note_stays_deleted(zk_home, embedder, zk):
    from zettel_amem.runtime.worker import process_or_queue

    memory = blocking_memory(zk_home, embedder)
    memory.add("Ran 5 km along the river, knee fine.", "2026-03-01T08:00")
    memory.process_pending()
    memory.llm.arm("annotate")
    doomed = memory.add("SECRET-rm-race my PIN is 4711", "2026-03-02T08:00")
    waiting = Background(memory.llm, lambda: process_or_queue(memory, doomed.id, wait=True))
    (code, _, err), seconds = timed(lambda: zk("rm", doomed.short_id, "--yes"))
    returned_inside = memory.llm.inside
    result = waiting.finish()
    assert code == 0, err
    assert returned_inside, f"zk rm waited {seconds:.1f} s for `zk add --wait`'s model call"
    assert memory.store.get(doomed.id) is None and result.status == "deleted"
    assert all("SECRET" not in n.content for n in memory.store.notes())


def test_an_edit_during_add_wait_is_not_overwritten(zk_home, embedder, zk, editor):
    from zettel_amem.runtime.worker import process_or_queue

    memory = blocking_memory(zk_home, embedder, "annotate")
    note = memory.add("Swam 1 km at the Jamsil pool.", "2026-03-02T08:00")
    waiting = Background(memory.llm, lambda: process_or_queue(memory, note.id, wait=True))
    editor("Cycled 30 km along the Han river.")
    (code, _, err), seconds = timed(lambda: zk("edit", note.short_id))
    returned_inside = memory.llm.inside
    waiting.finish()
    assert code == 0, err
    assert returned_inside, f"zk edit waited {seconds:.1f} s for `zk add --wait`'s model call"
    stored = memory.store.get(note.id)
    assert stored.content == "Cycled 30 km along the Han river." and stored.version == 2
    assert stored.status == PENDING and "Swam" not in stored.context  # the old text's annotation was dropped
    memory.process(note.id)
    again = memory.store.get(note.id)
    assert again.status == READY and "Cycled" in again.context


def test_mcp_reads_and_writes_go_on_while_ask_waits_for_the_model(zk_home, embedder, monkeypatch):
    import anyio

    from zettel_amem.mcp import server as mcp_server

    llm = BlockingLLM("answer")
    monkeypatch.setattr(mcp_server, "Memory", lambda home, notebook: Memory(home, notebook=notebook, llm=llm,
                                                                            embedder=embedder))
    server = mcp_server.build_server(zk_home, "main")

    def call(tool: str, **arguments):
        result = anyio.run(server.call_tool, tool, arguments)
        assert not result.is_error, result.content
        return result.structured_content

    added = call("add_note", text="My left knee hurts after running 10 km at Yeouido.")
    asking = Background(llm, lambda: call("ask", question="Why does my left knee hurt after running?"))
    (found, shown, more), seconds = timed(lambda: (
        call("search", query="knee running"), call("show", id=added["id"]),
        call("add_note", text="Booked a physiotherapist for the knee on Friday.")))
    returned_inside = llm.inside
    answer = asking.finish()
    assert returned_inside, f"search/show/add_note waited {seconds:.1f} s for ask's model call"
    assert added["id"] in [n["id"] for n in found["notes"]] and shown["id"] == added["id"]
    assert more["status"] == PENDING
    assert answer["mode"] == "model" and answer["cited"] == [added["id"]]
