"""Calibrate the evidence decline of `zk ask`: how often it declines without a model call, per setting.

    python -m bench.calibrate_decline --conversations conv-26,conv-30      # tune on these two
    python -m bench.calibrate_decline --conversations conv-41,conv-42,conv-43  # then report, untuned

For each LoCoMo question it retrieves once, as `zk ask` does (raw store, shipped search), then asks
`answer.decide()` with each candidate setting (`answer_attribution_vector_weight` x
`answer_attribution_margin`, the other settings as shipped). Wanted: many adversarial questions (category 5,
about something the named person never said) declined, few answerable ones (categories 1-4). No LLM is used.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

from bench.locomo import DEFAULT_DATA, ingest_conversation, log


def main(argv: list[str] | None = None) -> int:
    from bench import shipped_defaults_only

    shipped_defaults_only()
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data", type=Path, default=DEFAULT_DATA)
    parser.add_argument("--conversations", default="conv-26,conv-30")
    parser.add_argument("--weights", default="0,1,1.5,2", help="answer_attribution_vector_weight values")
    parser.add_argument("--margins", default="0.94,0.95,0.96,0.97,1.0", help="answer_attribution_margin values")
    parser.add_argument("--out", type=Path, default=Path("results/locomo"))
    args = parser.parse_args(argv)

    from zettel_amem.answering.answer import decide
    from zettel_amem.backends.embed import load_embedder

    wanted = {c.strip() for c in args.conversations.split(",") if c.strip()}
    samples = [s for s in json.loads(args.data.read_text(encoding="utf-8")) if s["sample_id"] in wanted]
    grid = [(float(w), float(m)) for w in args.weights.split(",") for m in args.margins.split(",")]
    counts = {g: {"adversarial": 0, "answerable": 0} for g in grid}
    totals = {"adversarial": 0, "answerable": 0}
    embedder = load_embedder()
    for sample in samples:
        memory, _ = ingest_conversation(sample, "raw", None, args.out / "cache", embedder)
        log(f"{sample['sample_id']}: {len(sample['qa'])} questions")
        settings = memory.settings
        for qa in sample["qa"]:
            group = "adversarial" if int(qa["category"]) == 5 else "answerable"
            totals[group] += 1
            hits = memory.search(qa["question"], budget_tokens=settings.context_budget_tokens)
            pool = memory.answerer.attribution_pool(qa["question"])
            similarity = memory.answerer.similarity
            for weight, margin in grid:
                settings.answer_attribution_vector_weight, settings.answer_attribution_margin = weight, margin
                declined = decide(qa["question"], hits, settings, lambda p=pool: p, similarity)
                counts[(weight, margin)][group] += declined is not None
    print(f"conversations: {', '.join(sorted(wanted))}; {totals['adversarial']} adversarial, "
          f"{totals['answerable']} answerable questions")
    print("| vector weight | margin | declined, category 5 | declined, categories 1-4 |")
    print("|---|---|---|---|")
    for weight, margin in grid:
        c = counts[(weight, margin)]
        print(f"| {weight:g} | {margin:g} | {100 * c['adversarial'] / max(1, totals['adversarial']):.1f}% | "
              f"{100 * c['answerable'] / max(1, totals['answerable']):.1f}% |")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
