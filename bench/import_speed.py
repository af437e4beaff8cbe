"""Bulk import speed: the LoCoMo dev file through `zk import --no-llm`, then enrichment of the first turns
of one conversation with each bundled model.

    python -m bench.import_speed                      # whole dev file + 40 turns of enrichment per model
    python -m bench.import_speed --enrich-turns 0     # import only

Reports turns/s and peak resident memory of the import (the same code path as `zk import`: streamed
parsing, one embedding batch and one store write per batch), and per-turn LLM calls, evaluated prompt
tokens, completion tokens and seconds for the enrichment (`zk process`). The dataset is read from
../shared/data/locomo-dev.json at run time, never copied.
"""

from __future__ import annotations

import argparse
import json
import resource
import statistics
import sys
import tempfile
import time
from pathlib import Path

DEFAULT_DATA = Path(__file__).resolve().parents[1].parent / "shared" / "data" / "locomo-dev.json"


def peak_rss_mb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024  # Linux reports KiB


def main(argv: list[str] | None = None) -> int:
    from bench import shipped_defaults_only

    shipped_defaults_only()
    parser = argparse.ArgumentParser(description="zk import throughput")
    parser.add_argument("--data", type=Path, default=DEFAULT_DATA)
    parser.add_argument("--enrich-turns", type=int, default=40)
    parser.add_argument("--models", default="smollm2-135m,qwen2.5-0.5b")
    parser.add_argument("--out", type=Path, default=Path("results"))
    args = parser.parse_args(argv)

    from zettel_amem.ingest.importer import import_source
    from zettel_amem.memory import Memory

    report: dict = {"data": args.data.name}
    with tempfile.TemporaryDirectory() as tmp:
        memory = Memory(Path(tmp) / "home")
        memory.settings.auto_worker = False
        memory.embedder  # noqa: B018 - model load is not import time
        rss_before = peak_rss_mb()
        start = time.perf_counter()
        result = import_source(memory, args.data, "auto")
        seconds = time.perf_counter() - start
        report["import"] = {"format": result.format, "turns": result.added, "seconds": round(seconds, 1),
                            "turns_per_second": round(result.added / seconds, 1),
                            "peak_rss_mb": round(peak_rss_mb(), 1), "rss_before_mb": round(rss_before, 1),
                            "sessions": len(result.session_ids), "failed": len(result.failed)}
        start = time.perf_counter()
        again = import_source(memory, args.data, "auto")
        report["reimport"] = {"added": again.added, "skipped_duplicates": again.skipped_duplicates,
                              "seconds": round(time.perf_counter() - start, 1)}
        print(json.dumps(report, indent=1), file=sys.stderr)

    if args.enrich_turns:
        from bench.per_note import load_turns
        from zettel_amem.backends.llm.llama import load_llm

        turns = load_turns(args.data, "conv-30", args.enrich_turns)
        report["enrichment"] = {}
        for model in [m for m in args.models.split(",") if m]:
            with tempfile.TemporaryDirectory() as tmp:
                memory = Memory(Path(tmp) / "home", llm=load_llm(model))
                memory.settings.auto_worker = False
                for at, text in turns:
                    memory.add(text, at)
                results = memory.process_pending()

                def mean(values):
                    return round(statistics.fmean(values), 2)

                report["enrichment"][model] = {
                    "turns": len(results), "llm_calls": mean(r.llm_calls for r in results),
                    "evaluated_tokens": mean(r.evaluated_tokens for r in results),
                    "completion_tokens": mean(r.completion_tokens for r in results),
                    "seconds": mean(r.seconds for r in results)}
    args.out.mkdir(parents=True, exist_ok=True)
    (args.out / "import_speed.json").write_text(json.dumps(report, indent=2), encoding="utf-8")
    print(json.dumps(report, indent=2))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
