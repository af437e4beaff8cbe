"""The model as a judge of each passage (#36 item 6): does a yes/no reading move the first passage?

    flock /tmp/zk-cpu.lock python -m bench.passage_judge --store results/diary-long-store --top 6
    flock /tmp/zk-cpu.lock python -m bench.passage_judge --store S --top 3 --model /path/to/1.5b.gguf

On page-long entries a journal answer is right where the first passage of its ranking (`evidence.rank`)
is from an evidence entry, and almost never otherwise (docs/benchmarks.md, "What carries"). Each answerable
tune and dev question is asked as `zk ask` asks it; the first `--top` passages of its ranking are shown to
the model one at a time ("Does this passage answer the question? Reply yes or no."), and the margin of the
"yes" token's logit over the "no" token's is read from one forward pass (no generation; the system prompt
and the question are evaluated once per question). The report: the mean margin of evidence passages and of
the others, and how often an evidence passage comes first when the margin, times a weight, is added to the
rules' score (weight 0: the rules alone), for the tune half and the dev set's odd (read) and even (unread)
questions. Works on a copy of `--store`.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import sys
import tempfile
import time
from pathlib import Path

SYSTEM = "You read a person's diary. Decide whether a diary passage answers a question about it."
CLIP = 300  # characters of each passage shown
WEIGHTS = (0.0, 0.1, 0.2, 0.4, 1.0, 100.0)


def candidates(store: Path, top: int) -> list[dict]:
    """Per answerable tune/dev question: its first `top` passages by `evidence.rank` (as `zk ask` ranks
    them), each with its time, text, rules' score and whether its entry is an evidence entry."""
    from bench.diary_long import load_questions
    from zettel_amem.answering import journal_answer
    from zettel_amem.memory import Memory

    ranked: list = []
    original = journal_answer.rank

    def keep(question, notes, cosines):  # noqa: ANN001, ANN202 (a patched function)
        out = original(question, notes, cosines)
        ranked.append(out)
        return out

    journal_answer.rank = keep
    memory, rows = Memory(store), []
    for half in ("tune", "dev"):
        for index, qa in enumerate(load_questions(half)):
            if qa["category"] == "not_recorded":
                continue
            ranked.clear()
            memory.ask(qa["question"])
            evidence = {at[:16] for at in qa["evidence"]}
            group = half if half == "tune" else ("dev odd" if index % 2 == 0 else "dev even")
            rows.append({"question": qa["question"], "group": group, "passages": [
                {"at": e.note.at, "text": e.note.content, "score": e.score, "evidence": e.note.at[:16] in evidence}
                for e in (ranked[0][:top] if ranked else [])]})
    journal_answer.rank = original
    return rows


def judge(rows: list[dict], model: str) -> float:
    """Adds each passage's yes-minus-no margin (`margin`); returns the seconds spent."""
    import llama_cpp.llama_cpp as low
    import numpy as np
    from llama_cpp import Llama

    from zettel_amem.backends.llm.bundled import resolve_model
    from zettel_amem.backends.llm.llama import without_extra_bufts
    from zettel_amem.core.text import clip

    with without_extra_bufts():
        llm = Llama(str(resolve_model(model)), n_ctx=4096, n_threads=2, n_threads_batch=2, seed=0, verbose=False)

    def tokens(text: str) -> list[int]:
        return llm.tokenize(text.encode("utf-8"), add_bos=False, special=True)

    yes = {tokens(w)[0] for w in ("yes", "Yes", " yes")}
    no = {tokens(w)[0] for w in ("no", "No", " no")}
    start = time.perf_counter()
    for row in rows:
        llm.reset()
        llm.eval(tokens(f"<|im_start|>system\n{SYSTEM}<|im_end|>\n<|im_start|>user\nQuestion: {row['question']}\n"))
        shared = llm.n_tokens
        for passage in row["passages"]:
            llm.n_tokens = shared  # the system prompt and the question stay evaluated
            llm.eval(tokens(f"Passage (written {passage['at'][:10]}): {clip(' '.join(passage['text'].split()), CLIP)}\n"
                            "Does this passage answer the question? Reply yes or no.<|im_end|>\n"
                            "<|im_start|>assistant\n"))
            logits = np.ctypeslib.as_array(low.llama_get_logits(llm.ctx), shape=(llm.n_vocab(),))
            passage["margin"] = max(float(logits[t]) for t in yes) - max(float(logits[t]) for t in no)
    return time.perf_counter() - start


def report(rows: list[dict], seconds: float) -> dict:
    shown = [p for r in rows for p in r["passages"]]

    def mean(values: list[float]) -> float | None:
        return round(sum(values) / len(values), 2) if values else None

    def first_is_evidence(row: dict, weight: float) -> bool:
        if not row["passages"]:
            return False
        return max(row["passages"], key=lambda p: p["score"] + weight * p["margin"])["evidence"]

    groups = ("tune", "dev odd", "dev even")
    return {"passages": len(shown), "seconds_per_passage": round(seconds / max(1, len(shown)), 2),
            "margin_evidence": mean([p["margin"] for p in shown if p["evidence"]]),
            "margin_other": mean([p["margin"] for p in shown if not p["evidence"]]),
            "evidence_first": {str(w): {g: f"{sum(first_is_evidence(r, w) for r in rows if r['group'] == g)}/"
                                          f"{sum(r['group'] == g for r in rows)}" for g in groups} for w in WEIGHTS}}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--store", type=Path, default=Path("results/diary-long-store"),
                        help="a built diary store (bench.diary_long --build-only); a copy is used")
    parser.add_argument("--top", type=int, default=6, help="passages judged per question")
    parser.add_argument("--model", default="default", help="a bundled model name or a GGUF path")
    args = parser.parse_args(argv)
    from bench import shipped_defaults_only
    from bench.diary_long import load_diary

    shipped_defaults_only()
    today, _entries = load_diary()
    os.environ["ZK_TODAY"], os.environ["ZK_NO_WORKER"] = today, "1"
    with tempfile.TemporaryDirectory() as folder:
        store = Path(folder) / "store"
        shutil.copytree(args.store, store)
        rows = candidates(store, args.top)
    seconds = judge(rows, args.model)
    print(json.dumps(report(rows, seconds), indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
