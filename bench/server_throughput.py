"""Enrichment throughput: turns/s of `zk process --jobs N` against an OpenAI-compatible server, next to
the in-process llama.cpp backend, on the same turns.

    python -m bench.server_throughput                                  # starts llama_cpp.server (2 threads)
    python -m bench.server_throughput --url http://gpu-box:8000/v1 --model Qwen/Qwen2.5-7B-Instruct \\
        --jobs 1,4,16,32 --no-in-process                               # an already running vLLM server

Each configuration gets a fresh temporary home with the same turns stored and embedded (`--no-llm`
import), then the worker's drain (`zk process` without the CLI start-up) enriches them all: construction,
link generation and evolution, episodes off. Turns/s is turns / wall seconds of that drain. With the
local server, run it under `flock /tmp/zk-llm.lock` like every real-model job.
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
import time
from pathlib import Path

from bench.per_note import DEFAULT_DATA, load_journal, load_turns


def run_once(turns: list[tuple[str | None, str]], llm, embedder, jobs: int) -> dict:
    from zettel_amem.memory import Memory
    from zettel_amem.runtime.worker import drain

    with tempfile.TemporaryDirectory() as home:
        memory = Memory(home, llm=llm, embedder=embedder)
        memory.settings.episodes = False
        memory.add_notes([memory.new_note(text, at) for at, text in turns])
        start = time.perf_counter()
        results = drain(memory, wait=True, jobs=jobs) or []
        seconds = time.perf_counter() - start
        notes = memory.store.notes()
    return {"jobs": jobs, "turns": len(turns), "seconds": round(seconds, 1),
            "turns_per_s": round(len(turns) / seconds, 3),
            "llm_calls": sum(r.llm_calls for r in results),
            "completion_tokens": sum(r.completion_tokens for r in results),
            "errors": sum(bool(r.error) for r in results),
            "ready": sum(n.status == "ready" for n in notes),
            "links": sum(len(n.links) for n in notes), "evolved": sum(n.version > 1 for n in notes)}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--jobs", default="1,2,4,8", help="comma-separated --jobs values for the server")
    parser.add_argument("--turns", type=int, default=20)
    parser.add_argument("--source", choices=["locomo", "journal"], default="locomo")
    parser.add_argument("--data", type=Path, default=DEFAULT_DATA)
    parser.add_argument("--conversation", default="conv-30")
    parser.add_argument("--url", help="an OpenAI-compatible server's /v1 URL (default: start llama_cpp.server "
                                      "with the bundled Qwen2.5-0.5B on 127.0.0.1, 2 threads)")
    parser.add_argument("--model", default="qwen2.5-0.5b", help="the model name the server serves")
    parser.add_argument("--threads", type=int, default=2, help="threads of the started local server")
    parser.add_argument("--no-in-process", action="store_true", help="skip the in-process llama.cpp row")
    parser.add_argument("--out", type=Path, default=Path("results"))
    args = parser.parse_args(argv)
    import signal

    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))  # `timeout` too: stop the started server
    from bench import shipped_defaults_only

    shipped_defaults_only()
    from zettel_amem.backends.embed import load_embedder
    from zettel_amem.backends.llm.openai_compat import OpenAICompatLLM

    turns = load_journal(args.turns) if args.source == "journal" else load_turns(args.data, args.conversation,
                                                                                  args.turns)
    embedder = load_embedder()
    rows = []
    if not args.no_in_process:
        from zettel_amem.backends.llm.llama import load_llm

        llm = load_llm("qwen2.5-0.5b")
        rows.append({"backend": "in-process llama.cpp", **run_once(turns, llm, embedder, 1)})
        print(json.dumps(rows[-1]), file=sys.stderr)
        del llm
    server = None
    url = args.url
    if url is None:
        from tests import llm_server

        port = llm_server.free_port()
        server = llm_server.start(port, threads=args.threads)
        url = f"http://127.0.0.1:{port}/v1"
        llm_server.wait_ready(server, url)
    try:
        for jobs in [int(j) for j in args.jobs.split(",")]:
            llm = OpenAICompatLLM(args.model, url, timeout=600)
            label = "llama_cpp.server" if server else url
            rows.append({"backend": label, **run_once(turns, llm, embedder, jobs)})
            print(json.dumps(rows[-1]), file=sys.stderr)
            llm.close()
    finally:
        if server is not None:
            from tests import llm_server

            llm_server.stop(server)
    report = {"source": args.source if args.source == "journal" else args.conversation, "turns": len(turns),
              "model": args.model, "rows": rows}
    args.out.mkdir(parents=True, exist_ok=True)
    out = args.out / f"server_throughput-{report['source']}.json"
    out.write_text(json.dumps(report, indent=2), encoding="utf-8")
    print("| backend | --jobs | turns | seconds | turns/s | LLM calls | errors | links | evolved |")
    print("|---|---|---|---|---|---|---|---|---|")
    for r in rows:
        print(f"| {r['backend']} | {r['jobs']} | {r['turns']} | {r['seconds']} | {r['turns_per_s']} | "
              f"{r['llm_calls']} | {r['errors']} | {r['links']} | {r['evolved']} |")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
