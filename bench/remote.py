"""What a shared notebook costs over a network: object-store requests and wall time of the common commands.

    python -m bench.remote [--sizes 1000 10000] [--repeat 3] [--out /tmp/remote.json] [--synthetic]
                           [--rtt-ms 50 --mbit 50]

For each size, a fresh notebook on a loopback S3 server (moto's ThreadedMotoServer, tests/s3_server.py,
which counts every request) is filled with that many notes by `zk import --no-llm`, the worker's upkeep
runs once (`zk process`: compaction, indexes; as after any idle worker), and then `zk add`, `zk search`,
`zk list --limit 20` and `zk show ID` run as real subprocesses, `--repeat` times each. Reported per
command: requests (by HTTP method, and by what they read: version listings, manifests, data files, index
files; the median run), the megabytes read, wall time (median), and a projection for a 50 ms
round trip: requests x 50 ms + the loopback wall time (an upper bound: LanceDB issues some requests
in parallel). With `--rtt-ms`, each command also runs `--repeat` times over a simulated WAN: the
loopback server holds every request that long (parallel requests overlap) and sends the bytes it
reads through one shared link of `--mbit` (tests/s3_server.py); their median wall time is `wan_wall_s`.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import tempfile
import time
from datetime import datetime, timedelta
from pathlib import Path

RTT_S = 0.05
COMMANDS = {"zk add": ["add", "러닝 후 무릎 상태 괜찮음, knee ok after the run"],
            "zk search": ["search", "무릎 knee", "--json"],
            "zk list --limit 20": ["list", "--limit", "20", "--json"],
            "zk show": ["show", "{id}", "--json"]}


def _env(server, uri: str, local: Path) -> dict[str, str]:
    from tests.harness import FAKE_MODEL, zk_env

    # The scripted model (tests/fake_llm.py): the worker's summaries cost nothing, and no command
    # measured here calls a model.
    return zk_env(None, **server.env(), ZK_HOME=uri, ZK_LOCAL_DIR=str(local), ZK_LLM_MODEL=FAKE_MODEL)


def _seed(server, uri: str, local: Path, size: int, synthetic: bool = False) -> str:
    """`size` notes by import (chat turns of a year), then the worker's upkeep. Returns a note id."""
    from tests.harness import run

    source = local.parent / f"seed-{size}.jsonl"
    start = datetime(2024, 1, 1, 8, 0)
    with open(source, "w", encoding="utf-8") as out:
        for i in range(size):  # spread over the years, a few hours apart, as a journal's notes are
            text = (f"Day {i}: ran {i % 12} km, knee {'sore' if i % 5 == 0 else 'fine'}; 오늘 {i % 30}일차 기록"
                    if i % 3 else f"Meeting {i} about project {i % 40}: 회의 메모 {i}")
            when = (start + timedelta(minutes=157 * i)).isoformat()
            out.write(json.dumps({"speaker": "me" if i % 2 else "Mina", "text": text, "timestamp": when},
                                 ensure_ascii=False) + "\n")
    env = _env(server, uri, local)
    if synthetic:
        _write_synthetic(source, env)
    else:
        run("import", str(source), "--no-llm", "--quiet", env=env, check=True, timeout=3600)
    run("process", "--quiet", env=env, check=True, timeout=3600)
    listed = run("list", "--limit", "1", "--json", env=env, check=True)
    return json.loads(listed.stdout)[0]["id"]


def _write_synthetic(source: Path, env: dict[str, str]) -> None:
    """`--synthetic`: the same turns written through the store in batches of 1,000 with random unit vectors
    instead of embeddings (seconds, not minutes, for 40k notes; requests do not depend on the vectors'
    values, though which rows a search finds does)."""
    import os

    import numpy as np

    saved = dict(os.environ)
    os.environ.update(env)
    try:
        from zettel_amem.core.models import READY
        from zettel_amem.memory import Memory

        memory, rng = Memory(), np.random.default_rng(30)
        lines = [json.loads(line) for line in source.read_text(encoding="utf-8").splitlines()]
        for start in range(0, len(lines), 1000):
            notes = []
            for i, turn in enumerate(lines[start:start + 1000], start):
                note = memory.new_note(turn["text"], turn["timestamp"], kind="turn", speaker=turn["speaker"],
                                       session_id=f"bench-{i // 20}", seq=i % 20)
                note.status = READY  # as `zk import --no-llm` writes a turn
                vector = rng.standard_normal(memory.store.dim).astype(np.float32)
                note.vector = note.raw_vector = (vector / np.linalg.norm(vector)).tolist()
                notes.append(note)
            memory.store.add(notes)
    finally:
        os.environ.clear()
        os.environ.update(saved)


def _timed(server, env: dict[str, str], args: list[str], wan: tuple[float, float] = (0.0, 0.0)
           ) -> tuple[float, dict]:
    """One run of a command: (wall seconds, the server's counts); `wan`: (round trip s, link bytes/s)."""
    from tests.harness import run

    server.delay_s, server.link_bytes_per_s = wan
    server.take_counts()
    start = time.perf_counter()
    try:
        run(*args, env=env, check=True)
    finally:
        server.delay_s, server.link_bytes_per_s = 0.0, 0.0
    return time.perf_counter() - start, dict(server.take_counts())


def measure(server, uri: str, local: Path, note_id: str, repeat: int, wan: tuple[float, float] = (0.0, 0.0)
            ) -> dict[str, dict]:
    env = _env(server, uri, local)
    commands = {name: [a.replace("{id}", note_id[:8]) for a in args] for name, args in COMMANDS.items()}
    out = {}
    for name, args in commands.items():
        runs = [_timed(server, env, args) for _ in range(repeat)]
        runs.sort(key=lambda r: r[1].get("total", 0))
        counts = runs[len(runs) // 2][1]
        wall = statistics.median(r[0] for r in runs)
        out[name] = {"requests": counts.get("total", 0), "mb_read": round(counts.get("bytes_read", 0) / 1e6, 2),
                     "by_method": {k: v for k, v in counts.items()
                                   if k not in ("total", "bytes_read") and not k.startswith("kind:")},
                     "by_kind": {k[5:]: v for k, v in sorted(counts.items()) if k.startswith("kind:")},
                     "wall_s": round(wall, 2), "projected_50ms_s": round(counts.get("total", 0) * RTT_S + wall, 2),
                     "requests_all_runs": [r[1].get("total", 0) for r in runs]}
    for name, args in commands.items() if wan[0] else ():  # after the counted runs: their adds come later
        out[name]["wan_wall_s"] = round(statistics.median(_timed(server, env, args, wan)[0] for _ in range(repeat)), 2)
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sizes", type=int, nargs="+", default=[1000, 10000])
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--out", type=Path, default=None)
    parser.add_argument("--synthetic", action="store_true", help="random vectors instead of embeddings (fast seeding)")
    parser.add_argument("--rtt-ms", type=float, default=0.0, help="also time each command over a WAN of this RTT")
    parser.add_argument("--mbit", type=float, default=50.0, help="the simulated WAN's bandwidth (Mbit/s)")
    args = parser.parse_args()
    from tests.s3_server import BUCKET, LoopbackS3

    server = LoopbackS3().start()
    server.make_bucket()
    results = {}
    try:
        with tempfile.TemporaryDirectory(prefix="zk-remote-") as tmp:
            for size in args.sizes:
                uri, local = f"s3://{BUCKET}/bench-{size}", Path(tmp) / f"local-{size}"
                start = time.perf_counter()
                note_id = _seed(server, uri, local, size, args.synthetic)
                seeded = time.perf_counter() - start
                print(f"{size} notes seeded in {seeded:.0f} s", file=sys.stderr, flush=True)
                wan = (args.rtt_ms / 1000, args.mbit * 125_000)
                results[size] = {"seed_s": round(seeded, 1), "commands": measure(server, uri, local, note_id,
                                                                                 args.repeat, wan)}
                print(json.dumps({size: results[size]}, ensure_ascii=False), file=sys.stderr, flush=True)
    finally:
        server.stop()
    text = json.dumps(results, indent=2, ensure_ascii=False)
    if args.out:
        args.out.write_text(text + "\n", encoding="utf-8")
    print(text)
    print(table(results))


def table(results: dict) -> str:
    sizes = list(results)
    lines = ["| command | " + " | ".join(f"{s:,} notes: requests (read), wall, at 50 ms" for s in sizes) + " |",
             "|---|" + "---|" * len(sizes)]
    for name in COMMANDS:
        cells = []
        for s in sizes:
            row = results[s]["commands"][name]
            wan = f", WAN {row['wan_wall_s']} s" if "wan_wall_s" in row else ""
            cells.append(f"{row['requests']} ({row['mb_read']} MB), {row['wall_s']} s, "
                         f"{row['projected_50ms_s']} s{wan}")
        lines.append(f"| `{name}` | " + " | ".join(cells) + " |")
    return "\n".join(lines)


if __name__ == "__main__":
    main()
