"""The in-process model beside other Python threads: one `complete_json` (the bundled Qwen2.5-0.5B,
42 completion tokens) timed alone, under a live Rich progress bar on a terminal console (as `zk process`
shows it), and with a busy Python thread, the model on the main thread (`zk add --wait`, `zk process`)
and on another thread (the MCP server runs tools on worker threads; another tool call may be busy).

    python -m bench.gil_contention

llama.cpp calls its abort callback at every graph node; a Python callback takes the GIL there each
time (see `_CtrlC` in zettel_amem/backends/llm/llama.py). Ratios are against "alone", within one run.
"""

from __future__ import annotations

import sys
import threading
import time

from zettel_amem.backends.llm import LLMError

SCHEMA = {"type": "object", "properties": {"keywords": {"type": "array", "items": {"type": "string"}, "maxItems": 5},
                                           "context": {"type": "string"}}, "required": ["keywords", "context"]}
USER = ("Note (2026-03-29): My knee hurts after Saturday's run, so I walked at Jamsil instead. " * 4
        + "\nReturn keywords and a one-sentence context.")


class Bench:
    def __init__(self) -> None:
        from zettel_amem.backends.llm.llama import load_llm

        self.llm = load_llm("qwen2.5-0.5b")
        self.calls = 0

    def call(self) -> float:
        """Seconds for one call; the prompt differs in its last tokens (the prefix stays cached)."""
        self.calls += 1
        start = time.perf_counter()
        try:
            self.llm.complete_json("You annotate notes.", f"{USER} (#{self.calls})", SCHEMA, 80)
        except LLMError:  # cut off at 80 tokens: the time still counts
            pass
        return time.perf_counter() - start

    def run(self, label: str, n: int = 2, on_thread: bool = False) -> float:
        times = []
        for _ in range(n):
            if on_thread:
                box: list[float] = []
                thread = threading.Thread(target=lambda out=box: out.append(self.call()))
                thread.start()
                thread.join()
                times.append(box[0])
            else:
                times.append(self.call())
        print(f"{label:32s} {[round(t, 2) for t in times]}", file=sys.__stdout__, flush=True)
        return min(times)


def main() -> None:
    from rich.console import Console
    from rich.progress import BarColumn, Progress, TextColumn

    bench = Bench()
    bench.run("warm", 1)
    alone = bench.run("alone")
    with Progress(TextColumn("{task.description}"), BarColumn(),
                  console=Console(file=sys.stderr, force_terminal=True)) as bar:
        bar.add_task("processing notes", total=10)
        rich = bench.run("rich progress (terminal)")
    stop = threading.Event()

    def busy() -> None:
        x = 0
        while not stop.is_set():
            x += 1

    thread = threading.Thread(target=busy, daemon=True)
    thread.start()
    on_main = bench.run("busy thread, model on main", 1)
    on_thread = bench.run("busy thread, model on a thread", 1, on_thread=True)
    stop.set()
    thread.join()
    print(f"ratios vs alone: rich {rich / alone:.2f}, busy/main {on_main / alone:.2f}, "
          f"busy/thread {on_thread / alone:.2f}", flush=True)


if __name__ == "__main__":
    main()
