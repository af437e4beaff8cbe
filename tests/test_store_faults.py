"""A shared notebook under seeded faults of its object store (#38 item 2): the loopback S3 server answers
requests, at random from a seed, with 503 SlowDown, a connection reset (before a write is applied, or after
it, its answer lost), a hang that is cut (one in four past the client's deadline, lowered here to DEADLINE_S)
or a stale listing (one that leaves out the keys written in the last 2 s). Two machines (two local folders on
one prefix) add, import, edit and remove notes and run the model's work.

After the run, with the faults off: every note whose command reported success is there with its exact text,
none twice, none that was removed; a command that failed said so in one line, and the notes it kept in the
outbox are sent by the next command; none says "no note with id" of a note whose write was reported (only
where a failed `zk rm` may have removed it). `run_faults` reports what it injected and what it found (the numbers
of a run are in docs/benchmarks.md); `python -m pytest tests/test_store_faults.py -m slow` runs the full size.
"""

from __future__ import annotations

import json
import random
import sys
import time
import uuid
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from tests.harness import FAKE_MODEL, one_line
from tests.s3_server import BUCKET, Faults, LoopbackS3
from zettel_amem.core.location import FAST_FAIL


@dataclass
class Run:
    """What one seeded run did and found."""

    commands: int = 0
    failed: int = 0
    failures: list[str] = field(default_factory=list)  # "op: the line it printed"
    kept_offline: int = 0
    lost: list[str] = field(default_factory=list)
    doubled: list[str] = field(default_factory=list)
    seconds: float = 0.0
    slowest: float = 0.0  # the longest command: retries are bounded in time
    injected: Counter = field(default_factory=Counter)

    def line(self) -> str:
        return (f"{sum(self.injected.values())} faults injected ({dict(self.injected)}), {self.commands} commands, "
                f"{self.failed} failed, {self.kept_offline} kept offline, {len(self.lost)} notes lost, "
                f"{len(self.doubled)} duplicated, {self.seconds:.0f} s (slowest command {self.slowest:.1f} s)")


class Machines:
    """Two machines on one shared prefix: `zk(machine, *args)` runs a command as that machine."""

    def __init__(self, zk, monkeypatch, server: LoopbackS3, root: Path):
        self._zk, self.monkeypatch, self.root = zk, monkeypatch, root
        self.uri = f"s3://{BUCKET}/faults-{uuid.uuid4().hex[:8]}"
        for key, value in server.env().items():
            monkeypatch.setenv(key, value)
        monkeypatch.setenv("ZK_HOME", self.uri)
        monkeypatch.setenv("ZK_LLM_MODEL", FAKE_MODEL)
        editor = root / "editor.py"
        editor.write_text("import sys, pathlib, os\npathlib.Path(sys.argv[1]).write_text(os.environ['ZK_NEW_TEXT'])\n",
                          encoding="utf-8")
        monkeypatch.setenv("EDITOR", f"{sys.executable} {editor}")
        monkeypatch.delenv("VISUAL", raising=False)

    def zk(self, machine: int, *args: str, check: bool = False, new_text: str = ""):
        self.monkeypatch.setenv("ZK_LOCAL_DIR", str(self.root / f"machine-{machine}"))
        self.monkeypatch.setenv("ZK_NEW_TEXT", new_text)  # what the editor writes (`zk edit`)
        return self._zk(*args, check=check)


KINDS = ("slowdown", "reset", "hang", "stale")
DEADLINE_S = 1  # the client's request timeout in these runs (zk's own is location.FAST_FAIL's 30 s)
# A hang: cut after 0.1 s, or, one in four, left hanging past DEADLINE_S (the client gives up and retries).
HANGS = {"hang_s": 0.1, "past_deadline": (0.25, DEADLINE_S + 0.5)}


def run_faults(zk, monkeypatch, tmp_path: Path, seed: int, commands: int, rate: float, import_lines: int,
               kinds: tuple[str, ...] = KINDS) -> Run:
    """Drive `commands` seeded commands from two machines through faults of `kinds` at `rate` per request;
    then check."""
    server = LoopbackS3().start()
    server.make_bucket()
    run, rng, start = Run(), random.Random(seed), time.monotonic()
    machines = Machines(zk, monkeypatch, server, tmp_path)
    want: dict[str, str] = {}  # note id -> its text, for every command that reported success
    unsure: dict[str, set] = {}  # note id -> what a failed edit or rm may have left (None: removed)
    gone: set[str] = set()
    offline: list[str] = []  # texts kept in an outbox
    log = tmp_path / "chat.jsonl"
    log.write_text("".join(json.dumps({"speaker": "Mina" if i % 2 else "me", "text": f"{seed} turn {i} 부산 이사"},
                                      ensure_ascii=False) + "\n" for i in range(import_lines)), encoding="utf-8")
    try:
        machines.zk(0, "add", "first note, written before the faults", check=True)
        monkeypatch.setitem(FAST_FAIL, "timeout", f"{DEADLINE_S}s")  # storage_options copies it per command
        server.inject(Faults(seed, rate, kinds, **HANGS))
        for step in range(commands):
            machine, op = rng.randrange(2), rng.choice(["add"] * 5 + ["edit", "rm", "import", "process"])
            run.commands += 1
            began = time.monotonic()
            done = _one(machines, machine, op, step, seed, rng, (want, unsure, gone, offline), log)
            run.slowest = max(run.slowest, time.monotonic() - began)
            if done.exit_code:
                run.failed += 1
                run.failures.append(f"{op}: {done.stderr.strip()}")
                assert one_line(done.stderr) and "internal error" not in done.stderr, (op, done.stderr)
        server.inject(None)
        run.injected = Counter(server.injected)
        run.kept_offline = len(offline)
        for machine in (0, 1):  # the next command sends what an outbox kept
            machines.zk(machine, "list", "--limit", "1", check=True)
        machines.zk(0, "import", str(log), "--no-llm", check=True)  # an import cut off finishes
        notes = machines.zk(1, "list", "--json", check=True).json()
        run.lost, run.doubled = _check(notes, (want, unsure, gone, offline), log)
        checks = {c["check"]: c for c in machines.zk(0, "doctor", "--json").json()["checks"]}
        assert checks["remote store"]["ok"] and checks["notes"]["ok"], checks  # every version readable
    finally:
        server.stop()
    run.seconds = time.monotonic() - start
    return run


def _one(machines: Machines, machine: int, op: str, step: int, seed: int, rng: random.Random, seen: tuple,
         log: Path):
    """One command; what it reported is recorded in `seen`: (want, unsure, gone, offline)."""
    want, unsure, gone, offline = seen
    if op == "add" or (op in ("edit", "rm") and not want):
        text = f"seed {seed} step {step}: 무릎 note {uuid.uuid4().hex[:6]}"
        done = machines.zk(machine, "add", text, "--json")
        if done.exit_code == 0:
            added = done.json()
            (offline.append(text) if added["status"] == "outbox" else want.__setitem__(added["id"], text))
        return done
    if op in ("edit", "rm"):
        note_id = rng.choice(sorted(want))
        removed = None in unsure.get(note_id, set())  # a failed rm may have removed it
        done = _change(machines, machine, op, note_id, step, seen)
        # "no note with id" for a note whose write was reported (a listing that lags it is read again)
        assert "no note with id" not in done.stderr or removed, (op, done.stderr)
        return done
    if op == "import":
        return machines.zk(machine, "import", str(log), "--no-llm", "--quiet")
    return machines.zk(machine, "process", "--limit", "3", "--quiet")


def _change(machines: Machines, machine: int, op: str, note_id: str, step: int, seen: tuple):
    """`zk rm` or `zk edit` of `note_id`, recorded in `seen`."""
    want, unsure, gone, _ = seen
    if op == "rm":
        done = machines.zk(machine, "rm", note_id, "--yes")
        if done.exit_code == 0:
            gone.add(want.pop(note_id))
            unsure.pop(note_id, None)
        else:  # it may have been removed before its answer was lost
            unsure.setdefault(note_id, set()).add(None)
        return done
    text = f"{want[note_id]} (edited at step {step})"
    done = machines.zk(machine, "edit", note_id, "--json", new_text=text)
    if done.exit_code == 0:
        want[note_id] = text
        unsure.pop(note_id, None)
    else:
        unsure.setdefault(note_id, set()).add(text)
    return done


def _check(notes: list[dict], seen: tuple, log: Path) -> tuple[list[str], list[str]]:
    """(notes lost, texts stored twice): what reported success and is not there as it was written (or as a
    failed edit or rm may have left it), an outbox note not sent, an imported turn missing, a removed note
    still there; any text stored more than once."""
    want, unsure, gone, offline = seen
    texts = Counter(n["content"] for n in notes)
    by_id = {n["id"]: n["content"] for n in notes}
    turns = [json.loads(line)["text"] for line in log.read_text(encoding="utf-8").splitlines()]
    lost = [text for note_id, text in want.items() if by_id.get(note_id) not in {text} | unsure.get(note_id, set())]
    lost += [text for text in offline + turns if texts[text] == 0]
    lost += [text for text in gone if texts[text]]  # removed, yet there
    return lost, [text for text, count in texts.items() if count > 1]


def test_seeded_faults_lose_and_double_nothing(zk, tmp_path, monkeypatch):
    """A quarter of the full run: at least 200 faults."""
    run = run_faults(zk, monkeypatch, tmp_path, seed=38, commands=30, rate=0.2, import_lines=75)
    print(run.line(), *run.failures, sep="\n")
    assert run.lost == [] and run.doubled == [], run.line()
    assert sum(run.injected.values()) >= 200 and run.slowest < 60, run.line()


@pytest.mark.slow
def test_seeded_faults_at_full_size(zk, tmp_path, monkeypatch):
    run = run_faults(zk, monkeypatch, tmp_path, seed=3838, commands=120, rate=0.2, import_lines=300)
    print(run.line())
    assert run.lost == [] and run.doubled == [], run.line()
    assert sum(run.injected.values()) >= 800 and run.slowest < 60, run.line()


def test_a_listing_that_lags_keeps_the_note_in_the_outbox(zk, tmp_path, monkeypatch):
    """A listing of the notes table's versions that lags (here: shows nothing) is a store not reached for
    the moment, not "a data file is missing": `zk add` keeps the note in the outbox and says so in one line;
    the next command sends it."""
    server = LoopbackS3().start()
    server.make_bucket()
    try:
        machines = Machines(zk, monkeypatch, server, tmp_path)
        machines.zk(0, "add", "written before the listing lags", check=True)
        server.hide_listings(f"{machines.uri.split('/', 3)[3]}/notes.lance/_versions/", 100)
        done = machines.zk(1, "add", "무릎 note written while it lags", "--json")
        assert done.exit_code == 0 and done.json()["status"] == "outbox", done
        assert "its listing does not show the notes table yet" in done.json()["reason"]
        server.hide_listings("", 0)
        notes = machines.zk(1, "list", "--json", check=True).json()
        assert sorted(n["content"] for n in notes) == ["written before the listing lags",
                                                       "무릎 note written while it lags"]
    finally:
        server.stop()


def test_a_note_just_written_is_found_through_a_listing_that_lags_it(zk, tmp_path, monkeypatch):
    """Listings that leave out the newest version (the one holding a note just added by the other machine)
    are read again: `zk edit` of that note edits it, never "no note with id"."""
    server = LoopbackS3().start()
    server.make_bucket()
    try:
        machines = Machines(zk, monkeypatch, server, tmp_path)
        machines.zk(0, "add", "the table's first note", check=True)
        time.sleep(1.5)  # older than the lag below
        note_id = machines.zk(0, "add", "무릎 note just written", "--json", check=True).json()["id"]
        server.inject(Faults(1, 1.0, ("stale",), limit=2, lag_s=1.0))  # the next two listings lag it
        done = machines.zk(1, "edit", note_id, "--json", new_text="무릎 note, edited")
        server.inject(None)
        assert done.exit_code == 0 and server.injected["stale"] == 2, (done, server.injected)
        assert [n["content"] for n in machines.zk(0, "list", "--json", check=True).json()][0] == "무릎 note, edited"
    finally:
        server.stop()
