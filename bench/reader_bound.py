"""What a perfect reader would give on the long-entry diary (#36 item 6): a bound, not a result.

The answers' rules rank passages (`evidence.rank`) and then each kind's answerer builds the answer from that
order. To tell the two apart, the order is put right from the benchmark's own evidence:

- `--order entry`: the passages of the evidence entries first (their own order kept);
- `--order passage`: before them, the passages that write a key fact of the answer (a name, a place);
- `--quote-first`: "now", "why" and plain questions quote the first passage, and "when" dates it, without the
  rules that look past it (the newest passage on the subject, a plan's month, a dated telling elsewhere).

`flock /tmp/zk-cpu.lock python -m bench.reader_bound --store STORE [--order passage] [--quote-first]`
(the store is copied first; tune, dev and dev2 only, never the sealed half; not-recorded questions left out).
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import sys
import tempfile
from collections import defaultdict
from pathlib import Path

from bench.diary_long import load_diary, load_questions
from bench.journal_qa import is_right, normalise

HALVES = ("tune", "dev", "dev2")


def reorder(order: str, evidence: list, entries: set[str], facts: list[list[str]]) -> list:
    """The ranked evidence with the benchmark's evidence first (`order`), else as ranked."""
    if order == "none":
        return evidence

    def of_entry(item) -> bool:
        return item.note.at[:16] in entries

    def writes_fact(item) -> bool:
        text = normalise(item.note.content)
        return of_entry(item) and any(normalise(alt) and normalise(alt) in text for alts in facts for alt in alts)

    first = [e for e in evidence if writes_fact(e)] if order == "passage" else []
    rest = [e for e in evidence if e not in first]
    return first + [e for e in rest if of_entry(e)] + [e for e in rest if not of_entry(e)]


def patch(order: str, quote_first: bool, current: dict) -> None:
    """Put the rank (and, with `quote_first`, the answerers) the way the options say."""
    from zettel_amem.answering import journal_answer

    ranked = journal_answer.rank
    journal_answer.rank = lambda question, notes, cosines: reorder(
        order, ranked(question, notes, cosines), current["entries"], current["facts"])
    if quote_first:
        for kind in ("now", "why", "plain"):
            journal_answer.ANSWERERS[kind] = journal_answer.answer_best
        journal_answer.happened_first = lambda question, evidence: evidence
        journal_answer.fulfilled = lambda evidence: evidence
        journal_answer.by_mention = lambda question, evidence: None
        journal_answer.dated_telling = lambda question, evidence: []


def run(store: Path, order: str, quote_first: bool) -> list[dict]:
    today, _entries = load_diary()
    os.environ["ZK_TODAY"], os.environ["ZK_NO_WORKER"] = today, "1"
    from zettel_amem.memory import Memory
    from zettel_amem.tiers.service import Tiers

    current: dict = {"entries": set(), "facts": []}
    patch(order, quote_first, current)
    memory = Memory(store)
    tiers = Tiers(memory)
    rows = []
    for half in HALVES:
        for qa in load_questions(half):
            if qa["category"] == "not_recorded":
                continue
            current["entries"], current["facts"] = {a[:16] for a in qa["evidence"]}, qa["facts"]
            block, _hints, _facts = tiers.context.memory_block(qa["question"])
            answer = memory.ask(qa["question"], memory_block=block)
            for _ in answer.pieces:
                pass
            right = answer.mode != "declined" and is_right(answer.text.strip(), qa["facts"])
            rows.append({"id": qa["id"], "half": half, "category": qa["category"], "right": right})
    return rows


def summary(rows: list[dict]) -> dict:
    """Right answers per half and, on the halves not tuned on (dev, dev2), per category."""
    out: dict = {"halves": defaultdict(lambda: [0, 0]), "dev_and_dev2": defaultdict(lambda: [0, 0])}
    for row in rows:
        out["halves"][row["half"]][0] += row["right"]
        out["halves"][row["half"]][1] += 1
        if row["half"] != "tune":
            out["dev_and_dev2"][row["category"]][0] += row["right"]
            out["dev_and_dev2"][row["category"]][1] += 1
    return {part: {key: f"{right}/{total}" for key, (right, total) in counts.items()} for part, counts in out.items()}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--store", type=Path, required=True, help="a built long-entry store (copied, not changed)")
    parser.add_argument("--order", choices=("none", "entry", "passage"), default="passage")
    parser.add_argument("--quote-first", action="store_true")
    parser.add_argument("--out", type=Path)
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory() as tmp:
        copy = Path(tmp) / "store"
        shutil.copytree(args.store, copy)
        rows = run(copy, args.order, args.quote_first)
    result = {"order": args.order, "quote_first": args.quote_first, "summary": summary(rows), "rows": rows}
    if args.out:
        args.out.write_text(json.dumps(result, ensure_ascii=False, indent=1), encoding="utf-8")
    print(json.dumps(result["summary"], ensure_ascii=False, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
