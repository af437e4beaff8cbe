"""#28 item 17: wall and CPU seconds of an in-process `Memory.add` of the longest allowed note (100,000
characters, Korean and English) against a note of exactly one embedder window.

    python -m bench.long_note --repeats 5

Runs in a temporary home with the scripted test model (`zk add` makes no model call; only the write and
the embedding are timed). CPU seconds exceed wall seconds when the embedder uses two threads.
"""

from __future__ import annotations

import argparse
import statistics
import tempfile
import time
from pathlib import Path

LONG_NOTE = ("나는 주말마다 여의도 한강공원에서 10km 달리기를 한다. I run 10 km every Saturday at the river. "
             * 2000)[:100_000]  # the same text as tests/test_embed.py


def measure(repeats: int) -> dict[str, dict[str, float]]:
    from tests.fake_llm import FakeLLM
    from zettel_amem.backends.embed import load_embedder
    from zettel_amem.memory import Memory

    embedder = load_embedder()
    out = {}
    with tempfile.TemporaryDirectory() as home:
        memory = Memory(Path(home), llm=FakeLLM(), embedder=embedder)
        memory.add("warm up the store and the model")
        one_window = embedder.fit(LONG_NOTE) if hasattr(embedder, "fit") else LONG_NOTE[:1000]
        for label, text in (("one window", one_window), ("100,000 characters", LONG_NOTE)):
            walls, cpus = [], []
            for i in range(repeats):
                wall, cpu = time.perf_counter(), time.process_time()
                memory.add(text[: len(text) - 4] + f" ({i})")  # a new note each time, within the limit
                walls.append(time.perf_counter() - wall)
                cpus.append(time.process_time() - cpu)
            out[label] = {"chars": len(text), "wall_median": statistics.median(walls), "wall_min": min(walls),
                          "wall_max": max(walls), "cpu_median": statistics.median(cpus)}
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=5)
    args = parser.parse_args()
    for label, row in measure(args.repeats).items():
        print(f"{label} ({row['chars']} chars): wall median {row['wall_median']:.3f} s "
              f"({row['wall_min']:.3f}-{row['wall_max']:.3f}), CPU median {row['cpu_median']:.3f} s")


if __name__ == "__main__":
    main()
