"""#36 item 3: how well the bundled model's link call names the note a new note *updates*.

    flock /tmp/zk-cpu.lock python -m bench.updates [--model qwen2.5-0.5b]

`bench/data/updates-pairs.json` holds 20 pairs of an older and a newer note (Korean and English), half of
them a new value for the same thing (another dentist, a new weight, a shift that changed), half a newer
note on the same subject that changes nothing. Each pair gets a fresh home: the older note is added and
processed, then the newer one, on the real pipeline (annotation, the link call with its `replaces` enum,
supersede.py's checks). Reported: updates recorded on true pairs (recall) and on false ones (false
alarms), the link step skipped, and the median seconds of the newer note's processing.
"""

from __future__ import annotations

import argparse
import json
import statistics
import tempfile
import time
from pathlib import Path

DATA = Path(__file__).parent / "data" / "updates-pairs.json"


def measure(model: str) -> dict:
    from zettel_amem.backends.embed import load_embedder
    from zettel_amem.backends.llm.llama import load_llm
    from zettel_amem.memory import Memory

    embedder, llm = load_embedder(), load_llm(model)
    rows = []
    for pair in json.loads(DATA.read_text(encoding="utf-8"))["pairs"]:
        with tempfile.TemporaryDirectory() as home:
            memory = Memory(Path(home), llm=llm, embedder=embedder)
            old = memory.add(pair["old"][1], at=pair["old"][0])
            memory.process(old.id)
            new = memory.add(pair["new"][1], at=pair["new"][0])
            start = time.perf_counter()
            result = memory.process(new.id)
            rows.append({"update": pair["update"], "recorded": bool(result.updates), "linked": old.id in result.links,
                         "skipped": result.skipped, "seconds": round(time.perf_counter() - start, 2),
                         "new": pair["new"][1][:40]})
    true = [r for r in rows if r["update"]]
    false = [r for r in rows if not r["update"]]
    return {"model": model, "pairs": len(rows),
            "recall": f"{sum(r['recorded'] for r in true)}/{len(true)}",
            "false_alarms": f"{sum(r['recorded'] for r in false)}/{len(false)}",
            "link_step_skipped": sum(bool(r["skipped"]) for r in rows),
            "median_seconds": statistics.median(r["seconds"] for r in rows), "rows": rows}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model", default="qwen2.5-0.5b")
    parser.add_argument("--out", type=Path)
    args = parser.parse_args()
    report = measure(args.model)
    text = json.dumps(report, ensure_ascii=False, indent=1)
    if args.out:
        args.out.write_text(text, encoding="utf-8")
    print(text)


if __name__ == "__main__":
    main()
