"""#36 item 3: how well a newer note is linked as *updating* the older note whose value it changes.

    flock /tmp/zk-cpu.lock python -m bench.updates [--model qwen2.5-0.5b] [--pairs long] [--keep DIR]

`bench/data/updates-pairs.json` (`--pairs short`) holds 20 pairs of an older and a newer one-line note
(Korean and English), half of them a new value for the same thing (another dentist, a new weight, a shift
that changed), half a newer note on the same subject that changes nothing. `updates-long.json`
(`--pairs long`) holds 16 pairs of page-long entries on several subjects, where one paragraph of the newer
entry may change one fact of the older one, and each true pair names the two sentences. Each pair gets a
fresh home: the older note is added and processed, then the newer one, on the real pipeline (annotation,
the link call with its `replaces` enum, supersede.py's checks). Reported: true pairs whose update was
recorded (and, for long entries, on the right passages), records on false pairs (false alarms), the link
step skipped, and the median seconds of the newer note's processing. `--keep DIR` keeps each pair's home
(to replay the change-word path without the model: `--replay DIR`); `--replay-notebook HOME` replays it over
a built notebook (a copy of a benchmark's store) and lists the records it would write, to judge by hand.
"""

from __future__ import annotations

import argparse
import json
import shutil
import statistics
import tempfile
import time
from pathlib import Path

PAIRS = {"short": Path(__file__).parent / "data" / "updates-pairs.json",
         "long": Path(__file__).parent / "data" / "updates-long.json"}


def passage_texts(note) -> dict[str, str]:
    """Passage id (or the note's id, for a note of one passage) -> text."""
    from zettel_amem.core.passages import passage_id

    return {passage_id(note.id, p.index): p.text for p in note.passages} or {note.id: note.content}


def on_right_sentences(pair: dict, old, new, records: list[dict]) -> bool:
    """Whether one of the older note's *updates* records joins the passages holding the pair's two
    sentences (a pair that names none: any record counts)."""
    if "old_sentence" not in pair:
        return bool(records)
    olds, news = passage_texts(old), passage_texts(new)
    return any(pair["old_sentence"][:30] in olds.get(r["passage"], "") and pair["new_sentence"][:30] in
               news.get(r["by"], "") for r in records)


def score_pair(pair: dict, home: Path, embedder, llm) -> dict:
    from zettel_amem.memory import Memory

    memory = Memory(home, llm=llm, embedder=embedder)
    old = memory.add(pair["old"][1], at=pair["old"][0])
    memory.process(old.id)
    new = memory.add(pair["new"][1], at=pair["new"][0])
    start = time.perf_counter()
    result = memory.process(new.id)
    seconds = round(time.perf_counter() - start, 2)
    old, new = memory.store.get(old.id, with_vector=True), memory.store.get(new.id, with_vector=True)
    return {"id": pair.get("id", pair["new"][1][:40]), "update": pair["update"], "recorded": bool(old.updated_by),
            "right_passages": pair["update"] and on_right_sentences(pair, old, new, old.updated_by),
            "on": [r["on"] for r in old.updated_by], "linked": old.id in result.links,
            "skipped": result.skipped, "seconds": seconds}


def measure(model: str, pairs: str, keep: Path | None = None) -> dict:
    from zettel_amem.backends.embed import load_embedder
    from zettel_amem.backends.llm.llama import load_llm

    embedder, llm = load_embedder(), load_llm(model)
    rows = []
    for n, pair in enumerate(json.loads(PAIRS[pairs].read_text(encoding="utf-8"))["pairs"]):
        with tempfile.TemporaryDirectory() as home:
            rows.append(score_pair(pair, Path(home), embedder, llm))
            if keep:
                shutil.copytree(home, keep / f"{n:02d}")
    return summary(rows, model, pairs)


def summary(rows: list[dict], model: str, pairs: str) -> dict:
    true = [r for r in rows if r["update"]]
    false = [r for r in rows if not r["update"]]
    return {"model": model, "pairs": f"{pairs} ({len(rows)})",
            "recall": f"{sum(r['recorded'] for r in true)}/{len(true)}",
            "on_right_passages": f"{sum(r['right_passages'] for r in true)}/{len(true)}",
            "false_alarms": f"{sum(r['recorded'] for r in false)}/{len(false)}",
            "link_step_skipped": sum(bool(r["skipped"]) for r in rows),
            "median_seconds": statistics.median(r["seconds"] for r in rows) if rows else None, "rows": rows}


def replay_homes(folder: Path, pairs: str) -> dict:
    """The change-word path (no model) again on each kept pair home (`--keep`): what the checks in
    supersede.py and the pipeline's candidates would record now."""
    from zettel_amem.memory import Memory

    rows = []
    for n, pair in enumerate(json.loads(PAIRS[pairs].read_text(encoding="utf-8"))["pairs"]):
        memory = Memory(folder / f"{n:02d}")
        old, new = sorted(memory.store.notes(with_vector=True), key=lambda note: note.at)
        old.updated_by = []
        memory.pipeline.typed_updates(new, [], [old.id], {old.id: old})
        rows.append({"id": pair.get("id", pair["new"][1][:40]), "update": pair["update"],
                     "recorded": bool(old.updated_by), "on": [r["on"] for r in old.updated_by], "skipped": "",
                     "right_passages": pair["update"] and on_right_sentences(pair, old, new, old.updated_by),
                     "seconds": 0.0})
    return summary(rows, "replay, change words only", pairs)


def replay_notebook(home: Path) -> list[dict]:
    """The change-word path again over a built notebook, entry by entry in time order, each with its
    nearest older entries as candidates (as `zk process` met them): the records it would write, with both
    passages, to be judged by hand."""
    from zettel_amem.memory import Memory

    memory = Memory(home)
    notes = sorted(memory.store.notes(with_vector=True), key=lambda note: note.at)
    for note in notes:
        note.updated_by = []
    k = memory.settings.link_candidates
    records = []
    for i, note in enumerate(notes):
        older = notes[:i]
        nearest = sorted(older, key=lambda o: -sum(a * b for a, b in zip(note.vector, o.vector)))[:k]
        memory.pipeline.typed_updates(note, [], [o.id for o in nearest], {o.id: o for o in older})
    texts = {pid: (n.at[:10], text) for n in notes for pid, text in passage_texts(n).items()}
    for note in notes:
        records += [{"on": r["on"], "old": texts.get(r["passage"]), "new": texts.get(r["by"]), "note": note.id,
                     "passage": r["passage"], "by": r["by"]} for r in note.updated_by]
    return records


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model", default="qwen2.5-0.5b")
    parser.add_argument("--pairs", choices=sorted(PAIRS), default="short")
    parser.add_argument("--keep", type=Path, help="keep each pair's home under this folder")
    parser.add_argument("--replay", type=Path, help="replay the change-word path on homes kept by --keep")
    parser.add_argument("--replay-notebook", type=Path, help="replay it over a built home (zk's data dir)")
    parser.add_argument("--out", type=Path)
    args = parser.parse_args()
    if args.replay or args.replay_notebook:
        report = replay_homes(args.replay, args.pairs) if args.replay else replay_notebook(args.replay_notebook)
        print(json.dumps(report, ensure_ascii=False, indent=1))
        return
    if args.keep:
        args.keep.mkdir(parents=True, exist_ok=True)
    report = measure(args.model, args.pairs, args.keep)
    text = json.dumps(report, ensure_ascii=False, indent=1)
    if args.out:
        args.out.write_text(text, encoding="utf-8")
    print(text)


if __name__ == "__main__":
    main()
