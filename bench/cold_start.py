"""Cold start (issue #54): the whole-process wall time of a `zk` command as a user starts it, with the resident
server warm, with no server running, and with the server turned off (`ZK_NO_SERVER=1`: the in-process path,
every command as before #54), on notebooks of page-long entries.

    python -m bench.cold_start                          # 1k and 100k entries, 10 runs of each
    python -m bench.cold_start --sizes 1000 --runs 3    # a quick check
    python -m bench.cold_start --commands ask           # one command again (the others' results are kept)

Stores: bench.scale's page-long entries (`build_store(..., entries=True)`: 6-12 LoCoMo sentences each, real
embeddings of the sentences, cut into passages), kept under `--out`/stores/SIZE and reused by a rerun.

Each command runs through the installed `zk` script itself (beside this Python, not a pyenv shim, which adds
its own ~75 ms), timed from outside by bench.scale's timer process, `ZK_NO_WORKER=1` (an add must not start
the model in the background between runs), the shipped settings:
- served: a warm server (`zk server start`, then one untimed run of the command), 10 runs, median;
- no server: before each run the server is killed and its lock waited free; the command runs in-process and
  starts a server as it ends (that start's cost is in the time); the new server is killed after the run;
- ZK_NO_SERVER=1: the command in its own process, as before the server existed; its runs take turns with
  the no-server ones (measured one block after the other, the two drifted apart by up to 15 %).
`add` adds a note per run (30 entries per run of the benchmark); a rerun first merges them as the idle worker
would (`Store.maintain`). Results: `--out`/cold_start.json.
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import statistics
import sys
import time
from pathlib import Path

from bench.locomo import DEFAULT_DATA
from bench.scale import SEED, build_store, conversation_sentences, embed_sentences, log, maintain, run_measured

ZK = str(Path(sys.executable).parent / "zk")
COMMANDS = ("help", "list", "show", "search", "ask", "add")
QUESTION = "What did I do at the support group?"  # a journal question: answered from the notes, no model call


def argv_of(name: str, probe_id: str, run: int) -> list[str]:
    return {"help": ["--help"], "list": ["list", "--limit", "20"], "show": ["show", probe_id[:8]],
            "search": ["search", "support group"], "ask": ["ask", QUESTION],
            "add": ["add", f"Cold start benchmark entry {run}: walked to the river and read for an hour."]}[name]


def kill_server(home: Path) -> None:
    """Kill the home's server (also one still warming up) and wait until its lock is free."""
    from zettel_amem.runtime.resident import server_state

    deadline = time.monotonic() + 30
    while (state := server_state(home))["running"]:
        if state.get("pid"):
            try:
                os.kill(int(state["pid"]), signal.SIGKILL)
            except ProcessLookupError:
                pass
        if time.monotonic() > deadline:
            raise RuntimeError(f"the server of {home} does not stop")
        time.sleep(0.05)


def wait_for_spawned_server(home: Path, seconds: float = 5) -> None:
    """After a no-server run: the server that run started, killed (it took the lock, or never came)."""
    from zettel_amem.runtime.resident import lock_is_held

    deadline = time.monotonic() + seconds
    while not lock_is_held(home) and time.monotonic() < deadline:
        time.sleep(0.05)
    time.sleep(0.2)  # its state file (pid) follows the lock at once
    kill_server(home)


def environment(home: Path, mode: str) -> dict:
    env = {**os.environ, "ZK_HOME": str(home), "ZK_NO_WORKER": "1"}
    env.pop("ZK_NO_SERVER", None)
    return {**env, "ZK_NO_SERVER": "1"} if mode == "in-process" else env


def measure_served(name: str, home: Path, probe_id: str, runs: int) -> dict:
    env = environment(home, "served")
    run_measured([ZK, "server", "start"], env)
    run_measured([ZK, *argv_of(name, probe_id, -1)], env)  # untimed: the first of a command warms it
    return summary([timed(name, env, probe_id, run) for run in range(runs)])


def measure_unserved(name: str, home: Path, probe_id: str, runs: int) -> dict[str, dict]:
    """"no server" and "in-process" runs taking turns (one block after the other drifted by up to 15 %)."""
    kill_server(home)
    walls: dict[str, list] = {"no server": [], "in-process": []}
    for run in range(runs):
        for mode in walls:
            if mode == "no server":
                kill_server(home)
            walls[mode].append(timed(name, environment(home, mode), probe_id, run))
            if mode == "no server":
                wait_for_spawned_server(home)
    return {mode: summary(results) for mode, results in walls.items()}


def timed(name: str, env: dict, probe_id: str, run: int) -> dict:
    result = run_measured([ZK, *argv_of(name, probe_id, run)], env)
    if result["rc"] != 0:
        raise RuntimeError(f"{name} failed: {result['stderr'][-400:]}")
    return result


def summary(results: list[dict]) -> dict:
    walls = [r["wall_s"] for r in results]
    return {"median_s": round(statistics.median(walls), 3), "min_s": min(walls), "max_s": max(walls),
            "rss_mb": statistics.median(r["rss_mb"] for r in results), "runs": len(results)}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description="zk's start-up with and without the resident server (#54)")
    parser.add_argument("--sizes", default="1000,100000")
    parser.add_argument("--runs", type=int, default=10)
    parser.add_argument("--commands", default=",".join(COMMANDS),
                        help="some of them (their results replace those in the report; the others stay)")
    parser.add_argument("--out", type=Path, default=Path("results/cold_start"))
    parser.add_argument("--data", type=Path, default=DEFAULT_DATA)
    args = parser.parse_args(argv)

    from bench import shipped_defaults_only

    shipped_defaults_only()
    from zettel_amem.backends.embed import load_embedder
    from zettel_amem.memory import Memory

    samples = json.loads(args.data.read_text(encoding="utf-8"))
    embedder = load_embedder("default")
    sentences = [x for sample in samples for x in conversation_sentences(sample)]
    pool = embed_sentences(sentences, embedder, args.out / "cache" / f"sentences-{embedder.name}.npz")
    python = run_measured([sys.executable, "-c", "pass"])["wall_s"]
    saved = args.out / "cold_start.json"
    report = json.loads(saved.read_text(encoding="utf-8")) if saved.exists() else {"sizes": {}}
    report.update(zk=ZK, python_startup_s=python, cpus=os.cpu_count())
    for size in (int(s) for s in args.sizes.split(",")):
        home = args.out / "stores" / str(size) / "home"
        built = home.parent / "build.json"
        if built.exists() and json.loads(built.read_text(encoding="utf-8")).get("entries"):
            build = json.loads(built.read_text(encoding="utf-8"))
            # an earlier run's adds are small fragments that slow every read: the worker's upkeep merges them
            build["maintain"] = maintain(Memory(home, embedder=embedder))
        else:
            log(f"{size} entries: building")
            build = build_store(home, size, pool, embedder, SEED, entries=True)
        results: dict = {**report["sizes"].get(str(size), {}), "build": build, "load_before": os.getloadavg()[0]}
        for name in args.commands.split(","):
            results[name] = {"served": measure_served(name, home, build["probe_id"], args.runs)}
            results[name].update(measure_unserved(name, home, build["probe_id"], args.runs))
            log(f"{size:>7} {name:<7} " + "  ".join(f"{m} {r['median_s']:.3f} s" for m, r in results[name].items()))
        kill_server(home)
        report["sizes"][str(size)] = results
        args.out.mkdir(parents=True, exist_ok=True)
        saved.write_text(json.dumps(report, indent=1), encoding="utf-8")
    print(markdown(report))
    return 0


def markdown(report: dict) -> str:
    lines = ["| entries | command | served (warm) | no server | ZK_NO_SERVER=1 | no server / off |",
             "|---|---|---|---|---|---|"]
    for size, results in report["sizes"].items():
        for name in COMMANDS:
            cells = results.get(name, {})
            times = [cells.get(m, {}).get("median_s") for m in ("served", "no server", "in-process")]
            ratio = f"{times[1] / times[2]:.2f}" if times[1] and times[2] else "–"
            lines.append(f"| {int(size):,} | {name} | " + " | ".join(f"{t:.3f} s" if t else "–" for t in times)
                         + f" | {ratio} |")
    return "\n".join(lines)


if __name__ == "__main__":
    sys.exit(main())
