"""Calibrate `answer_attribution_hits`: how often `zk ask` declines from the evidence alone, per setting.

    python -m bench.calibrate_decline --conversations conv-26,conv-30      # tune on these two
    python -m bench.calibrate_decline --conversations conv-41,conv-42,conv-43  # then report, untuned

For each LoCoMo question it retrieves once, as `zk ask` does (raw store, shipped search), then asks
`answer.decide()` with each candidate setting. Wanted: many adversarial questions (category 5, about
something the named person never said) declined, few answerable ones (categories 1-4). No LLM is used.
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
    parser.add_argument("--settings", default="0,1,2,3,4,5,8", help="answer_attribution_hits values to try")
    parser.add_argument("--out", type=Path, default=Path("results/locomo"))
    args = parser.parse_args(argv)

    from zettel_amem.answer import decide
    from zettel_amem.embed import load_embedder

    wanted = {c.strip() for c in args.conversations.split(",") if c.strip()}
    samples = [s for s in json.loads(args.data.read_text(encoding="utf-8")) if s["sample_id"] in wanted]
    values = [int(v) for v in args.settings.split(",")]
    embedder = load_embedder()
    counts = {v: {"adversarial": 0, "answerable": 0} for v in values}
    totals = {"adversarial": 0, "answerable": 0}
    for sample in samples:
        memory, _ = ingest_conversation(sample, "raw", None, args.out / "cache", embedder)
        log(f"{sample['sample_id']}: {len(sample['qa'])} questions")
        for qa in sample["qa"]:
            group = "adversarial" if int(qa["category"]) == 5 else "answerable"
            totals[group] += 1
            hits = memory.search(qa["question"], budget_tokens=memory.settings.context_budget_tokens)
            pool = memory.answerer.attribution_pool(qa["question"])
            for value in values:
                memory.settings.answer_attribution_hits = value
                counts[value][group] += decide(qa["question"], hits, memory.settings, lambda p=pool: p) is not None
    print(f"conversations: {', '.join(sorted(wanted))}; {totals['adversarial']} adversarial, "
          f"{totals['answerable']} answerable questions")
    print("| answer_attribution_hits | declined, category 5 | declined, categories 1-4 |")
    print("|---|---|---|")
    for value in values:
        c = counts[value]
        print(f"| {value} | {100 * c['adversarial'] / max(1, totals['adversarial']):.1f}% | "
              f"{100 * c['answerable'] / max(1, totals['answerable']):.1f}% |")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
