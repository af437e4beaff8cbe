"""Ctrl-C: `zk add --wait` interrupted while the model works says so in one line, exits 130 within a
second and keeps the note (pending). Case 9 of the break-it report (issue #16)."""

from __future__ import annotations

import signal
import time
from pathlib import Path

import pytest

from tests import harness
from tests.harness import one_line
from zettel_amem.memory import Memory


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
