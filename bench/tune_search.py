"""Tune the session-smoothing weights on LoCoMo: R@10 for a grid of (near, far), one retrieval per question.

    python -m bench.tune_search --conversations conv-26,conv-30            # tune on these two
    python -m bench.tune_search --conversations conv-41,conv-42,conv-43 --grid 0.5:0.25   # report, untuned

Signals are fused once per question (as `Memory.search` does); each grid point then only re-runs
`smooth_by_session` over the same pool, so the grid costs one search per question. Raw stores (no LLM)
by default; `--ingest full --llm qwen2.5-0.5b` reads a cached LLM ingest of bench.locomo instead.
"""

from __future__ import annotations

import argparse
import copy
import json
from pathlib import Path

from bench.locomo import DEFAULT_DATA, dia_map, ingest_conversation, log, register_sessions
from bench.scoring import evidence_ids, evidence_recall


def main(argv: list[str] | None = None) -> int:
    from bench import shipped_defaults_only

    shipped_defaults_only()
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data", type=Path, default=DEFAULT_DATA)
    parser.add_argument("--conversations", default="conv-26,conv-30")
    parser.add_argument("--grid", default="0:0,0.25:0.1,0.5:0.25,0.75:0.35,1:0.5,1:0.75,1:1,1.5:0.75,2:1",
                        help="near:far pairs")
    parser.add_argument("--enrichment", default="0.5", help="search_enrichment_weight values (LLM ingests)")
    parser.add_argument("--pool", type=int, default=0, help="fused pool size (default: the shipped search_pool)")
    parser.add_argument("--ingest", default="raw")
    parser.add_argument("--llm", default=None)
    parser.add_argument("--out", type=Path, default=Path("results/locomo"))
    args = parser.parse_args(argv)

    from zettel_amem.backends.embed import load_embedder
    from zettel_amem.retrieval.retrieve import fuse_signals, smooth_by_session

    grid = [tuple(float(x) for x in pair.split(":")) for pair in args.grid.split(",")]
    enrichment = [float(x) for x in args.enrichment.split(",")]
    wanted = {c.strip() for c in args.conversations.split(",") if c.strip()}
    samples = [s for s in json.loads(args.data.read_text(encoding="utf-8")) if s["sample_id"] in wanted]
    embedder = load_embedder()
    found: dict[tuple, list[float]] = {}
    for sample in samples:
        register_sessions(sample)
        memory, _ = ingest_conversation(sample, args.ingest, args.llm, args.out / "cache", embedder)
        mapping = dia_map(memory)
        valid = set(mapping.values())
        log(f"{sample['sample_id']}: {len(sample['qa'])} questions")
        for qa in sample["qa"]:
            evidence = evidence_ids(qa, valid)
            if int(qa["category"]) == 5 or not evidence:
                continue
            for weight in enrichment:
                memory.settings.search_enrichment_weight = weight
                size = args.pool or memory.settings.search_pool
                pool = fuse_signals(memory.searcher.signals(qa["question"], size), size)
                windows = memory.searcher.session_windows([h.note for h in pool], 2)
                for near, far in grid:
                    ranked = smooth_by_session(copy.deepcopy(pool), windows, (near, far))[:10]
                    hit_all, _ = evidence_recall(evidence, [mapping[h.note.id] for h in ranked], 10)
                    found.setdefault((weight, near, far), []).append(hit_all)
    print(f"R@10 over {len(next(iter(found.values())))} questions with evidence ({', '.join(sorted(wanted))})")
    print("| enrichment weight | near | far | R@10 |")
    print("|---|---|---|---|")
    for (weight, near, far), values in sorted(found.items()):
        print(f"| {weight} | {near} | {far} | {100 * sum(values) / len(values):.1f} |")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
