"""Crash safety and concurrent writers, with real `zk` subprocesses and SIGKILL.

The subprocesses use the scripted model (`tests.fake_llm.EvolvingFakeLLM`, which links and rewrites
neighbours on every note) with a small per-call delay. The kill-point test runs `zk` through
`tests.kill_hooks`, which kills it at a chosen point: before or after a model call, or before,
during or after a store commit (new notes, construction results, whole evolutions).
"""

from __future__ import annotations

import json
import os
import random
import signal
import subprocess
import sys
import time
from collections import Counter
from pathlib import Path

import pytest

from tests import harness
from tests.kill_hooks import POINTS
from zettel_amem.amem.grounded import NOTE_CHECKS
from zettel_amem.core.models import READY
from zettel_amem.memory import Memory

pytestmark = pytest.mark.slow
KILL_POINTS = 50
FRIENDS = ["Mina", "Jisoo", "Tomas", "Aiko", "Ravi", "Lena", "Oskar", "Priya", "Dara", "Yuki", "Farid", "Noor",
           "Ines", "Kofi", "Sven", "Talia", "Hana", "Bruno", "Zuri", "Elio"]


def zk_env(home: Path, worker: bool = False) -> dict[str, str]:
    """The evolving scripted model, slowed a little so a kill lands inside its work."""
    return harness.zk_env(home, worker, ZK_LLM_MODEL="python:tests.fake_llm:EvolvingFakeLLM", ZK_FAKE_DELAY="0.05")


def prepare_home(home: Path) -> None:
    home.mkdir(parents=True, exist_ok=True)
    # Two neighbours per evolution, so "all of one evolution or none" is about several notes; imported
    # turns enriched too, so imports race the workers' links and evolutions. No cap on how often a note is
    # evolved: then every finished note evolved exactly its first two links, which the invariants count.
    (home / "config.toml").write_text("[memory]\nlink_min_similarity = 0.0\nevolve_max_neighbours = 2\n"
                                      "evolve_max_times = 100\nenrich_turns = true\n", encoding="utf-8")


def check_invariants(home: Path, must_have: list[str]) -> list:
    memory = Memory(home)  # opens cleanly after any kill
    notes = {n.id: n for n in memory.store.notes()}
    contents = Counter(n.content for n in notes.values())
    for text in must_have:  # every `zk add` that returned success: present, exactly once
        assert contents[text] == 1, (text, contents[text])
    hashes = Counter(n.content_hash for n in notes.values())
    assert max(hashes.values(), default=1) == 1  # no turn imported twice
    caused: Counter[str] = Counter()
    for note in notes.values():
        for version in note.history:  # an applied evolution belongs to a finished note that links here
            cause = notes.get(version.cause)
            assert cause is not None and cause.status == READY and note.id in cause.links, note.id
            caused[version.cause] += 1
    refused = note_checks(home)
    for note in notes.values():  # ...and a finished note's evolution is fully there, never half: each of the
        if note.status == READY and note.links:  # neighbours the scripted model rewrote (its first two links)
            # was evolved, or refused by the grounded contract and counted (a clause must name a word of the
            # neighbour that few notes share: which ones were, depends on the notebook when it was processed)
            proposed = min(memory.settings.evolve_max_neighbours, len(note.links))
            assert caused[note.id] + refused.get(note.id, {}).get("evolution", 0) == proposed, note.id
    return list(notes.values())


def note_checks(home: Path) -> dict:
    """What the grounded contract refused, per note (amem/grounded.py's count file)."""
    path = home / NOTE_CHECKS
    return json.loads(path.read_text(encoding="utf-8")) if path.exists() else {}


def test_fifty_random_kill_points(tmp_path):
    home = tmp_path / "home"
    prepare_home(home)
    env = zk_env(home)
    rng = random.Random(1234)
    completed: list[str] = []
    imports: list[Path] = []
    killed: Counter[tuple[str, str]] = Counter()
    survived: Counter[str] = Counter()
    runs = 0
    while sum(killed.values()) < KILL_POINTS:
        runs += 1
        assert runs <= 3 * KILL_POINTS, (killed, survived)
        point = POINTS[(runs - 1) % len(POINTS)]  # every kind of point in turn
        # New notes are committed once per `zk add` and per import batch; `zk process` commits none.
        new_notes = point.startswith("add-")
        kind = rng.choice(["add", "import"] if new_notes else ["add", "add", "process", "import"])
        nth = 1 if new_notes else rng.randint(1, 2)
        run_env = {**env, "ZK_KILL_AT": f"{point}:{nth}", "ZK_KILL_SEED": str(runs)}
        if kind == "add":
            text = f"note {runs}: ran {rng.randint(1, 20)} km by the river, knee check {rng.random():.4f}"
            proc = harness.start("add", "--wait", text, env=run_env, module="tests.kill_hooks")
        elif kind == "process":
            for extra in range(2):  # queue some work without the LLM, then kill the processing
                queued = f"queued {runs}.{extra} about running {rng.random():.4f}"
                assert harness.start("add", queued, env=env).wait(60) == 0
                completed.append(queued)
            proc = harness.start("process", "--quiet", env=run_env, module="tests.kill_hooks")
        else:
            log = tmp_path / f"chat-{runs}.txt"
            log.write_text("".join(f"Ana: turn {runs}-{i} about the race plan\n" for i in range(20)), "utf-8")
            imports.append(log)
            proc = harness.start("import", str(log), "--wait", "--quiet", env=run_env, module="tests.kill_hooks")
        code = proc.wait(300)
        if code == -signal.SIGKILL:
            killed[(kind, point)] += 1
        else:
            assert code == 0, proc.stderr.read().decode()
            survived[kind] += 1  # the point was never reached n times: a normal run
            if kind == "add":
                completed.append(text)
        check_invariants(home, completed)
    assert {p for _, p in killed} == set(POINTS), killed  # every kind of point was hit
    assert {k for k, _ in killed} == {"add", "process", "import"}, killed
    # Resume everything: re-run the imports, then finish pending work.
    for log in imports:
        assert harness.start("import", str(log), "--quiet", "--no-llm", env=env).wait(120) == 0
    done = harness.start("process", "--quiet", env=env)
    assert done.wait(600) == 0, done.stderr.read().decode()
    notes = check_invariants(home, completed)
    assert all(n.status == READY for n in notes)
    turns = Counter(n.content for n in notes if n.kind == "turn")
    assert len(turns) == 20 * len(imports) and set(turns.values()) == {1}
    print(f"{sum(killed.values())} kills in {runs} runs: {dict(killed)}")


def test_eight_concurrent_adds_with_background_workers(tmp_path):
    home = tmp_path / "home"
    prepare_home(home)
    env = zk_env(home, worker=True)
    texts = [f"concurrent note {i}: knee and race plan {i * 7}" for i in range(8)]
    procs = [harness.start("add", text, env=env) for text in texts]
    for proc in procs:
        assert proc.wait(120) == 0, proc.stderr.read().decode()
    memory = Memory(home)
    deadline = time.time() + 240
    while memory.pending_ids(all_notebooks=True) and time.time() < deadline:
        time.sleep(1)
    notes = check_invariants(home, texts)
    assert len(notes) == 8 and all(n.status == READY for n in notes)


def test_two_concurrent_imports(tmp_path):
    home = tmp_path / "home"
    prepare_home(home)
    env = zk_env(home)
    files = []
    for name in ("a", "b"):
        path = tmp_path / f"{name}.txt"
        path.write_text("".join(f"{name.upper()}: line {i} of log {name}\n" for i in range(300)), "utf-8")
        files.append(path)
    same = tmp_path / "a-copy.txt"
    same.write_bytes(files[0].read_bytes())
    procs = [harness.start("import", str(p), "--no-llm", "--quiet", env=env) for p in (*files, same)]
    for proc in procs:
        assert proc.wait(300) == 0, proc.stderr.read().decode()
    notes = Memory(home).store.notes()
    assert len(notes) == 600  # the copy of log a added nothing, even while racing the original
    assert len({n.content_hash for n in notes}) == 600


def test_two_concurrent_imports_while_workers_evolve(tmp_path):
    home = tmp_path / "home"
    prepare_home(home)
    env = zk_env(home, worker=True)  # each import queues its turns and starts a background worker
    files = []
    for name in ("a", "b"):
        path = tmp_path / f"{name}.txt"
        path.write_text("".join(f"{name.upper()}: race plan {i} of log {name}\n" for i in range(40)), "utf-8")
        files.append(path)
    first = harness.start("import", str(files[0]), "--quiet", env=env)
    time.sleep(0.5)
    second = harness.start("import", str(files[1]), "--quiet", env=env)  # while the first one's worker runs
    for proc in (first, second):
        assert proc.wait(300) == 0, proc.stderr.read().decode()
    memory = Memory(home)
    deadline = time.time() + 400
    while memory.pending_ids(all_notebooks=True) and time.time() < deadline:
        time.sleep(1)
    notes = check_invariants(home, [])
    assert len(notes) == 80 and len({n.content_hash for n in notes}) == 80
    assert all(n.status == READY for n in notes)
    assert sum(n.version > 1 for n in notes) > 0  # the workers evolved notes meanwhile



def test_kill_points_while_four_notes_are_in_flight(tmp_path):
    """`zk process --jobs 4`: SIGKILL at every kind of point (a model call, a store commit of
    construction results or of a whole evolution) while four notes are in flight; after each kill the
    invariants hold, and a final `--jobs 4` run finishes everything."""
    home = tmp_path / "home"
    prepare_home(home)
    env = zk_env(home)
    rng = random.Random(99)
    completed: list[str] = []
    killed: Counter[str] = Counter()
    points = [p for p in POINTS if not p.startswith("add-")]  # `zk process` commits no new notes
    memory = Memory(home)  # queues notes exactly as `zk add` does, without a process start per note
    for run, point in enumerate(points * 2):
        for extra in range(4):  # queue notes without the LLM, then kill the parallel processing
            # a name two notes of this run share with two of the last: a word few notes share, which an
            # evolution's clause must name (the grounded contract)
            name = FRIENDS[(run + extra // 2) % len(FRIENDS)]
            text = f"batch {run}.{extra}: knee and race plan with {name} {rng.random():.4f}"
            memory.add(text)
            completed.append(text)
        nth = rng.randint(2, 5)
        run_env = {**env, "ZK_KILL_AT": f"{point}:{nth}", "ZK_KILL_SEED": str(run)}
        proc = harness.start("process", "--quiet", "--jobs", "4", env=run_env, module="tests.kill_hooks")
        code = proc.wait(300)
        assert code in (0, -signal.SIGKILL), proc.stderr.read().decode()
        if code == -signal.SIGKILL:
            killed[point] += 1
        check_invariants(home, completed)
    assert set(killed) == set(points), killed
    done = harness.start("process", "--quiet", "--jobs", "4", env=env)
    assert done.wait(600) == 0, done.stderr.read().decode()
    notes = check_invariants(home, completed)
    assert len(notes) == len(completed) and all(n.status == READY for n in notes)
    assert sum(n.version > 1 for n in notes) > 0  # evolutions were applied meanwhile, each once
    print(f"{sum(killed.values())} kills with 4 notes in flight: {dict(killed)}")


# -- power cuts ----------------------------------------------------------------------------------------
POWER_CUTS = int(os.environ.get("ZK_POWER_CUTS", "50"))
# `zk add` in a loop (the model loaded once): each note's id goes to the log only after `add` returned,
# that is after its commit completed.
ADDER = """
import os, sys
from zettel_amem.memory import Memory
memory = Memory(sys.argv[1])
with open(sys.argv[2], "a", encoding="utf-8") as log:
    for i in range(100_000):
        note = memory.add(f"{sys.argv[3]}: note {i} written before the power cut")
        log.write(note.id + "\\n")
        log.flush()
"""


def test_fifty_power_cuts_during_zk_add(zk, zk_home, tmp_path):
    """50 times: `zk add` in a loop, SIGKILLed at a random moment, then the newest version file of the
    notes table cut at a random length (a power cut's leftover). Every command then either works on the
    newest readable version (one warning line) or says in one line what to do, and `zk repair --yes`
    gives back every note whose commit completed before the kill, each once."""
    from zettel_amem.storage.database import manifest_path, manifest_versions
    from zettel_amem.storage.health import is_damaged

    rng = random.Random(28)
    zk("add", "written before the first power cut", check=True)
    log = tmp_path / "completed.txt"
    log.touch()
    table = zk_home / "lancedb" / "notes.lance"
    read_at_older: Counter[bool] = Counter()
    for cut in range(POWER_CUTS):
        _add_until_killed(zk_home, log, f"cut {cut}", rng)
        manifest = manifest_path(table, manifest_versions(table)[-1])
        with open(manifest, "r+b") as fh:
            fh.truncate(rng.randrange(manifest.stat().st_size))
        code, out, err = zk("list", "--json")
        assert len(err.strip().splitlines()) == 1 and "Traceback" not in err, err
        read_at_older[code == 0] += 1
        if code == 0:
            assert "cannot be read" in err and isinstance(json.loads(out), list)
        code, _, err = zk("add", "not over a damaged store")
        assert code == 1 and harness.one_line(err) and "zk repair" in err, err
        assert zk("doctor")[0] == 1
        code, out, err = zk("repair", "--yes", "--json")
        assert code == 0, err
        assert not is_damaged(zk_home)
        ids = Counter(n.id for n in Memory(zk_home).store.notes())
        completed = set(log.read_text().split())
        assert completed <= set(ids), (cut, completed - set(ids))
        assert max(ids.values()) == 1
    assert read_at_older[True] == POWER_CUTS, read_at_older  # reads never stopped at a power cut
    print(f"{POWER_CUTS} power cuts, {len(log.read_text().split())} completed adds, all restored")


def _add_until_killed(home: Path, log: Path, label: str, rng: random.Random) -> None:
    """Start the adding loop and SIGKILL it at a random moment: mostly a little after its first note
    (inside later adds and their commits), sometimes before any note of this run completed."""
    before = len(log.read_text().split())
    adder = subprocess.Popen([sys.executable, "-c", ADDER, str(home), str(log), label], env=harness.zk_env(home),
                             stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    if rng.random() < 0.2:
        time.sleep(rng.uniform(0.0, 2.5))
    else:
        deadline = time.monotonic() + 120
        while len(log.read_text().split()) == before and adder.poll() is None and time.monotonic() < deadline:
            time.sleep(0.01)
        time.sleep(rng.uniform(0.0, 1.0))
    adder.send_signal(signal.SIGKILL)
    code = adder.wait(60)
    assert code == -signal.SIGKILL, adder.stderr.read().decode()
