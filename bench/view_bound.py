"""What a perfect choice of sentences would put on screen (#52): a bound on the answer view, not a result.

The view (`answering/view.py`) ranks the sentences of the best passages and shows about five. This asks, of
every answerable question (not "not recorded", not a story), whether the sentences ranked for it hold every key
fact, each fact in one sentence as the view prints it (its day and the dates it writes made absolute), and how
far down: in the first 5 (what the view shows), 10, 20, or anywhere in the pool (`view.POOL` passages), and
anywhere among all the passages the answer read (`--whole`). What is on screen now is scored beside it.
Counts whose number no sentence writes are a miss at every depth: their answer is counted, not quoted.

`flock /tmp/zk-cpu.lock python -m bench.view_bound --sets long:dev2,three:dev [--whole]`
(aggregates only: the unread sets may be measured; the sealed halves are not offered).
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from collections import Counter
from unittest import mock

from bench.ablation import question_sets, remember_searches
from bench.journal_qa import normalise, scored

DEPTHS = (5, 10, 20)


def fact_depth(facts: list[list[str]], lines: list[str]) -> int | None:
    """The depth (1-based) by which every fact is written in one of `lines`, or None."""
    deepest = 0
    for alternatives in facts:
        wanted = [normalise(a) for a in alternatives if normalise(a)]
        where = next((i for i, line in enumerate(lines) if any(w in line for w in wanted)), None)
        if where is None:
            return None
        deepest = max(deepest, where + 1)
    return deepest


def measure(memory, questions: list[dict], whole: bool) -> Counter:
    from zettel_amem.answering import view

    ranked: list = []
    original = view.ranked_sentences

    def keep(question, evidence):
        out = original(question, evidence)
        ranked[:] = out
        return out

    counts: Counter = Counter()
    with mock.patch.object(view, "ranked_sentences", keep), \
            mock.patch.object(view, "POOL", 10_000 if whole else view.POOL):
        for qa in questions:
            if qa["category"] == "not_recorded" or qa.get("events"):
                continue
            ranked.clear()
            answer = memory.ask(qa["question"])
            "".join(answer.pieces)
            shown = answer.view.text() if answer.view is not None else answer.text
            counts["questions"] += 1
            counts["on screen"] += scored(qa, answer.text.strip(), shown, answer.mode == "declined")[1]
            lines = [normalise(s.line().shown()) for s in ranked]
            depth = fact_depth(qa["facts"], lines)
            for limit in DEPTHS:
                counts[f"in the first {limit}"] += depth is not None and depth <= limit
            counts["anywhere ranked"] += depth is not None
    return counts


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sets", default="long:dev2,three:dev", help="diary:half, comma-separated (no sealed)")
    parser.add_argument("--whole", action="store_true", help="rank the sentences of every passage read")
    args = parser.parse_args(argv)
    names = [s for s in args.sets.split(",") if s]
    if any(name.endswith("sealed") for name in names):
        parser.error("the sealed halves are scored once, by bench.diary_long --sealed")
    from bench import shipped_defaults_only
    from zettel_amem.memory import Memory

    shipped_defaults_only()
    os.environ["ZK_NO_WORKER"] = "1"
    out = {}
    for name, store, today, questions in question_sets(names):
        os.environ["ZK_TODAY"] = today
        memory = Memory(store)
        memory.settings.answer_journal = True
        remember_searches(memory)
        out[name] = dict(measure(memory, questions, args.whole))
        print(f"{name}: {out[name]}", file=sys.stderr)
    print(json.dumps(out, indent=1))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
