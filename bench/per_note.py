"""Per-note cost of the pipeline: LLM calls, prompt tokens evaluated (not served from cache),
completion tokens and seconds, for `zk add` (durable path) and the background processing.

    python -m bench.per_note --model qwen2.5-0.5b --notes 60
    python -m bench.per_note --model smollm2-135m --notes 60

The notes are the first N turns of a LoCoMo conversation (a realistic chat log; read from
../shared/data/locomo-dev.json at run time, never copied), each added then processed as `zk add
--wait` would, in a fresh temporary home. Speed is reported as measured on this machine; compare
models by ratio within one run, not across machines.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import tempfile
import time
from pathlib import Path

DEFAULT_DATA = Path(__file__).resolve().parents[1].parent / "shared" / "data" / "locomo-dev.json"


JOURNAL = Path(__file__).resolve().parent / "data" / "journal.txt"


def load_journal(limit: int) -> list[tuple[str, str]]:
    """A realistic personal journal (Korean and English entries over five months), written for zk."""
    from zettel_amem.ingest.parsers import parse

    entries = [(t.at.isoformat(), t.text) for t in parse(JOURNAL, "text", default_session="journal")
               if hasattr(t, "text")]
    return entries[:limit]


def load_turns(path: Path, conversation: str, limit: int) -> list[tuple[str, str]]:
    from zettel_amem.ingest.parsers import parse

    turns = []
    for item in parse(path, "locomo", default_session="locomo"):
        if hasattr(item, "text") and item.session_key.startswith(conversation + "/"):
            turns.append((item.at.isoformat() if item.at else None, f"{item.speaker}: {item.text}"))
            if len(turns) >= limit:
                break
    return turns


def summarise(values: list[float]) -> dict[str, float]:
    return {"mean": round(statistics.fmean(values), 2), "median": round(statistics.median(values), 2),
            "max": round(max(values), 2)}


def main(argv: list[str] | None = None) -> int:
    from bench import shipped_defaults_only

    shipped_defaults_only()
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--model", default="qwen2.5-0.5b")
    parser.add_argument("--notes", type=int, default=60)
    parser.add_argument("--data", type=Path, default=DEFAULT_DATA)
    parser.add_argument("--conversation", default="conv-30")
    parser.add_argument("--source", choices=["locomo", "journal"], default="locomo",
                        help="a LoCoMo chat (turns) or bench/data/journal.txt (journal entries)")
    parser.add_argument("--out", type=Path, default=Path("results"))
    args = parser.parse_args(argv)

    from zettel_amem.backends.llm.llama import load_llm
    from zettel_amem.memory import Memory

    turns = load_journal(args.notes) if args.source == "journal" else load_turns(args.data, args.conversation,
                                                                                  args.notes)
    with tempfile.TemporaryDirectory() as home:
        start = time.perf_counter()
        llm = load_llm(args.model)
        memory = Memory(home, llm=llm)
        memory.embedder  # noqa: B018 - load outside the timed region, like a warm worker
        load_seconds = time.perf_counter() - start
        add_seconds, results = [], []
        for index, (at, text) in enumerate(turns, 1):
            t0 = time.perf_counter()
            note = memory.add(text, at)
            add_seconds.append(time.perf_counter() - t0)
            results.append(memory.process(note.id))
            r = results[-1]
            print(f"\r{index}/{len(turns)} calls={r.llm_calls} eval={r.evaluated_tokens} "
                  f"gen={r.completion_tokens} {r.seconds:.1f}s {r.skipped:<22}", end="", file=sys.stderr)
        print(file=sys.stderr)
        evolved = sum(len(r.evolved) for r in results)
        report = {
            "model": args.model, "notes": len(results),
            "source": "journal" if args.source == "journal" else args.conversation,
            "model_load_seconds": round(load_seconds, 2),
            "add_seconds": summarise(add_seconds),
            "process_seconds": summarise([r.seconds for r in results]),
            "llm_calls": summarise([r.llm_calls for r in results]),
            "prompt_tokens": summarise([r.prompt_tokens for r in results]),
            "evaluated_tokens": summarise([r.evaluated_tokens for r in results]),
            "completion_tokens": summarise([r.completion_tokens for r in results]),
            "links_per_note": round(sum(len(r.links) for r in results) / len(results), 2),
            "evolved_neighbours": evolved,
            "skipped": {reason: sum(r.skipped == reason for r in results)
                        for reason in sorted({r.skipped for r in results if r.skipped})},
            "errors": sum(bool(r.error) for r in results),
            "versions_recorded": sum(len(n.history) for n in memory.store.notes()),
        }
    args.out.mkdir(parents=True, exist_ok=True)
    out = args.out / f"per_note-{args.source}-{Path(args.model).name.removesuffix('.gguf')}.json"
    out.write_text(json.dumps(report, indent=2), encoding="utf-8")
    print(json.dumps(report, indent=2))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
