"""Ctrl-C: `zk add --wait` interrupted while the model works says so in one line, exits 130 within a
second and keeps the note (pending). Case 9 of the break-it report (issue #16). And the in-process model's
Ctrl-C watch costs nothing when another Python thread holds the GIL."""

from __future__ import annotations

import ctypes
import os
import signal
import threading
import time
from pathlib import Path

import pytest

from tests import harness
from tests.harness import one_line
from zettel_amem.memory import Memory

HOLD_US = 1000  # the GIL holder's sleep per turn


def _interrupt_add(home: Path, model_env: dict, text: str, after_stored: float) -> tuple[int, float, str]:
    proc = harness.start("add", "--wait", text, env=harness.zk_env(home, **model_env), text=True)
    start = time.monotonic()
    while not (home / "meta.json").exists() and time.monotonic() - start < 120:
        time.sleep(0.05)
    time.sleep(after_stored)
    sent = time.monotonic()
    proc.send_signal(signal.SIGINT)
    _, err = proc.communicate(timeout=120)
    return proc.returncode, time.monotonic() - sent, err


def test_9_ctrl_c_during_add_wait_says_so_and_keeps_the_note(tmp_path):
    home = tmp_path / "home"
    code, seconds, err = _interrupt_add(home, {"ZK_LLM_MODEL": harness.FAKE_MODEL,
                                               "ZK_FAKE_DELAY": "30"}, "interrupted while the model works", 5.0)
    assert code == 130 and seconds < 1.5 and one_line(err) and "interrupted" in err, (code, seconds, err)
    [note] = Memory(home).store.notes()
    assert note.status == "pending" and note.short_id in err


@pytest.mark.slow
def test_9_ctrl_c_stops_the_real_model_within_a_second(tmp_path):
    """A long note makes a prompt that llama.cpp evaluates for many seconds; Ctrl-C must not wait for it."""
    text = " ".join(f"Day {i}: ran {i % 9 + 1} km at Yeouido, knee fine, coffee with Mina after." for i in range(60))
    code, seconds, err = _interrupt_add(tmp_path / "home", {}, text, 4.0)
    assert code == 130 and seconds < 1.5 and one_line(err) and "interrupted" in err, (code, seconds, err)
    assert [n.status for n in Memory(tmp_path / "home").store.notes()] == ["pending"]


def test_the_native_abort_check_reads_the_flag():
    """llama.cpp calls `_native_flag_check` as a `bool (*)(void *)` on the flag: false, then true once set."""
    from zettel_amem.backends.llm.llama import _CtrlC, _native_flag_check

    check = ctypes.CFUNCTYPE(ctypes.c_bool, ctypes.c_void_p)(_native_flag_check())
    ctrl_c = _CtrlC()
    assert check(ctypes.addressof(ctrl_c.flag)) is False
    ctrl_c.flag[0] = 1
    assert check(ctypes.addressof(ctrl_c.flag)) is True


def test_ctrl_c_sets_the_flag_while_the_work_runs_on_another_thread():
    """The main thread waits while the work runs elsewhere, so the handler runs at once and sets the flag
    llama.cpp reads; the interrupt is raised after the work has returned."""
    from zettel_amem.backends.llm.llama import _CtrlC

    ctrl_c, seen = _CtrlC(), []
    ctrl_c.native = True

    def work() -> str:  # stands in for llama_decode: runs until the flag asks it to stop
        seen.append(threading.current_thread() is threading.main_thread())
        threading.Timer(0.2, os.kill, (os.getpid(), signal.SIGINT)).start()
        start = time.monotonic()
        while not ctrl_c.flag[0] and time.monotonic() - start < 10:
            time.sleep(0.01)
        return "stopped" if ctrl_c.flag[0] else "ran to the end"

    start = time.monotonic()
    with pytest.raises(KeyboardInterrupt):
        ctrl_c.run(work)
    assert seen == [False] and time.monotonic() - start < 2
    assert ctrl_c.run(lambda: "next call") == "next call" and not ctrl_c.stop and not ctrl_c.flag[0]


@pytest.fixture(scope="module")
def qwen():
    from zettel_amem.backends.llm.llama import load_llm

    return load_llm("qwen2.5-0.5b")


@pytest.mark.slow
@pytest.mark.parametrize("on_main", [True, False], ids=["model-on-main-thread", "model-on-a-thread"])
def test_a_thread_holding_the_gil_does_not_stall_the_in_process_model(qwen, on_main):
    """llama.cpp calls the abort callback at every graph node. A Python callback took the GIL there, so any
    other thread running Python (a busy MCP tool call alongside) made a call 10-20x slower. The thread here
    holds the GIL in a C sleep (ctypes.PyDLL keeps it), so it takes no core from the model."""
    from zettel_amem.backends.llm import LLMError

    schema = {"type": "object", "properties": {"place": {"type": "string"}}, "required": ["place"]}

    def ask(i: int) -> float:
        def call():
            try:
                qwen.complete_json("Answer in JSON.", f"Note {i}: I ran 5 km at Yeouido. Where did I run?", schema, 12)
            except LLMError:  # cut off at 12 tokens: only the time matters
                pass
        start = time.perf_counter()
        if on_main:
            call()
        else:
            thread = threading.Thread(target=call)
            thread.start()
            thread.join()
        return time.perf_counter() - start

    ask(0)
    alone = min(ask(1), ask(2))
    stop = threading.Event()

    def hold_the_gil() -> None:
        libc = ctypes.PyDLL(None)
        while not stop.is_set():
            libc.usleep(HOLD_US)

    holder = threading.Thread(target=hold_the_gil, daemon=True)
    holder.start()
    try:
        held = ask(3)
    finally:
        stop.set()
        holder.join()
    assert held < 3 * alone + 0.5, (round(held, 2), round(alone, 2))
