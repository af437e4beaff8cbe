"""What `zk search` ranks for one LoCoMo conversation, as text, to compare two versions of the code.

    PYTHONPATH=<checkout A> python -m bench.retrieval_lists --out a.json
    PYTHONPATH=<checkout B> python -m bench.retrieval_lists --out b.json
    python -m bench.retrieval_lists --compare a.json b.json

Imports the conversation's raw turns (no model step) into a temporary home and writes, per distinct
question, the top-k turns (`speaker: text`; note ids are random per store, so turns are keyed by what they
say). `--compare` prints how many questions have the same list in both files.
"""

from __future__ import annotations

import argparse
import json
import os
import tempfile
from pathlib import Path

DATA = Path(__file__).resolve().parents[2] / "shared" / "data" / "locomo-dev.json"


def lists(conversation: str, k: int) -> dict[str, list[str]]:
    from zettel_amem.ingest.importer import import_source
    from zettel_amem.memory import Memory

    os.environ["ZK_NO_WORKER"] = "1"
    sample = next(s for s in json.loads(DATA.read_text(encoding="utf-8")) if s["sample_id"] == conversation)
    with tempfile.TemporaryDirectory() as home:
        memory = Memory(Path(home))
        source = Path(home) / "conversation.json"
        source.write_text(json.dumps([sample]), encoding="utf-8")
        import_source(memory, source, "locomo", source_name=conversation, batch_size=128)
        return {qa["question"]: [f"{h.note.speaker}: {h.note.content}"
                                 for h in memory.search(qa["question"], k, follow_links=False)]
                for qa in sample["qa"]}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--conversation", default="conv-30")
    parser.add_argument("--k", type=int, default=10)
    parser.add_argument("--out", type=Path)
    parser.add_argument("--compare", nargs=2, type=Path)
    args = parser.parse_args(argv)
    if args.compare:
        first, second = (json.loads(p.read_text(encoding="utf-8")) for p in args.compare)
        same = sum(first[q] == second.get(q) for q in first)
        print(f"{same} of {len(first)} questions rank the same top-{args.k}")
        return 0 if same == len(first) else 1
    found = lists(args.conversation, args.k)
    if args.out:
        args.out.write_text(json.dumps(found, ensure_ascii=False, indent=1), encoding="utf-8")
    print(f"{len(found)} questions")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
