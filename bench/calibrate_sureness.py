"""Where "sure" begins (#52, answering/sureness.py): set on question sets read while writing the rules,
checked on sets that were not.

    python -m bench.calibrate_sureness --calibrate results/tune.json,results/dev.json,results/journal.json \
        --check results/dev2.json,results/three-dev.json [--bound --target 90]

With `--bound`, the ceiling of any such rule instead: for each signal alone, the most answerable questions
one threshold can call "sure" with `--target` % of them right, the threshold read off the very set it is
scored on (fitting, so an upper bound), for the calibration and the check sets apart.

Each file is the `--out` of a `bench.diary_long` or `bench.journal_qa` run (every answer with its view's
kind, signals and whether its headline is right). For each lead threshold on the calibration answers it
gives how many answerable questions are "sure" and how many of those are right; it picks the lowest
threshold whose "sure" headlines are right at `--target` % on the calibration sets (default 95: a margin
over the 90 % bound), then reports that threshold on the check sets. Nothing here changes the package: the
chosen value is written into `sureness.py` by hand, with these numbers beside it.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from unittest import mock

LEADS = [round(0.05 * i, 2) for i in range(0, 41)]


def load(paths: str) -> list[dict]:
    rows = []
    for path in filter(None, paths.split(",")):
        rows += json.loads(Path(path).read_text(encoding="utf-8"))["answers"]
    return rows


def levels(rows: list[dict], lead: float) -> list[str]:
    from zettel_amem.answering import sureness

    with mock.patch.object(sureness, "SURE_LEAD", lead):
        return [sureness.sureness(r.get("kind") or "", r.get("signals") or {}) for r in rows]


def rates(rows: list[dict], lead: float) -> dict:
    """At `lead`: "sure" answers, how many right, and the share of answerable questions that are sure."""
    at = levels(rows, lead)
    sure = [r for r, level in zip(rows, at) if level == "sure"]
    answerable = [r for r in rows if r["category"] != "not_recorded"]
    sure_answerable = [r for r, level in zip(rows, at) if level == "sure" and r["category"] != "not_recorded"]
    likely = [r for r, level in zip(rows, at) if level == "likely"]
    return {"lead": lead, "sure": len(sure), "sure_right": sum(r["right"] for r in sure),
            "precision": round(100 * sum(r["right"] for r in sure) / len(sure), 1) if sure else None,
            "answerable_sure_share": round(100 * len(sure_answerable) / len(answerable), 1) if answerable else None,
            "likely": len(likely), "likely_right": sum(r["right"] for r in likely)}


SIGNALS = ("sentence_share", "passage_share", "lead", "cosine")


def bound(rows: list[dict], target: float) -> dict:
    """Per signal: the threshold letting most quoted answerable headlines be "sure" at `target` % right, and
    that share of all answerable questions (a count or a story, several passages at once, is never sure)."""
    answerable = [r for r in rows if r["category"] != "not_recorded"]
    quoted = [r for r in answerable if r.get("kind") == "quote"]
    out = {"answerable": len(answerable)}
    for signal in SIGNALS:
        best = None
        for threshold in sorted({(r.get("signals") or {}).get(signal, 0.0) for r in quoted}):
            sure = [r for r in quoted if (r.get("signals") or {}).get(signal, 0.0) >= threshold]
            right = sum(r["right"] for r in sure)
            if 100 * right >= target * len(sure) and (best is None or len(sure) > best["sure"]):
                best = {"threshold": threshold, "sure": len(sure), "right": right,
                        "answerable_sure_share": round(100 * len(sure) / max(1, len(answerable)), 1)}
        out[signal] = best
    return out


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--calibrate", required=True, help="answer files of read sets (comma-separated)")
    parser.add_argument("--check", default="", help="answer files of unread sets (comma-separated)")
    parser.add_argument("--target", type=float, default=95.0, help="precision %% of sure on the calibration sets")
    parser.add_argument("--bound", action="store_true", help="the ceiling of one threshold on one signal")
    args = parser.parse_args(argv)
    calibration, check = load(args.calibrate), load(args.check)
    if args.bound:
        print(json.dumps({"calibration": bound(calibration, args.target),
                          "check": bound(check, args.target) if check else None}, indent=1))
        return 0
    table = [rates(calibration, lead) for lead in LEADS]
    chosen = next((row for row in table if row["precision"] is not None and row["precision"] >= args.target
                   and all(r["precision"] is None or r["precision"] >= args.target for r in table
                           if r["lead"] >= row["lead"])), table[-1])
    print(json.dumps({"calibration": table, "chosen": chosen,
                      "check": rates(check, chosen["lead"]) if check else None}, indent=1))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
