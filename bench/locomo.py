"""LoCoMo benchmark: does each part of the memory pay for itself?

    python -m bench.locomo                                   # retrieval baselines, all dev conversations
    python -m bench.locomo --conversations conv-30 --variants +construction,+links,+evolution \\
        --llm qwen2.5-0.5b --answer                          # LLM variants, with answers scored

Every variant runs the real pipeline (`zk import` path + `Memory.process` + `Memory.search/ask`) with
flags, in a fresh store per conversation and ingest configuration:

| variant        | ingest (store)                              | retrieval                          |
|----------------|---------------------------------------------|------------------------------------|
| raw-vector     | raw turns, no LLM                           | cosine top-k                       |
| bm25           | raw turns, no LLM                           | BM25 top-k                         |
| hybrid         | raw turns, no LLM                           | RRF(BM25, cosine)                  |
| hybrid-window  | raw turns, no LLM                           | hybrid, each hit + its ±2 turns    |
| +construction  | construction + links, evolution off         | hybrid over enriched notes         |
| +links         | construction + links, evolution off         | hybrid + linked-neighbour expansion|
| +evolution     | full pipeline                               | hybrid + linked-neighbour expansion|
| +evolution-unguarded | full pipeline, evolution's topic guard off | as +evolution                 |
| full-context   | raw turns                                   | the whole conversation (answers)   |
| +episodes      | raw turns + each session summarised (tiers) | hybrid, boosted to the sessions of |
|                |                                             | the L0 hints; hints in the prompt  |
| +graph         | as +episodes, plus the entity graph         | as +episodes; graph facts (with    |
|                |                                             | validity dates) in the prompt      |
| +graph-static  | as +graph                                   | facts without dates, all "current" |

+construction and +links share one ingest: construction of a note does not depend on other notes
and the link step does not change the enriched embeddings when evolution is off, so the store of
"construction only" is that store searched without expansion. Ingests are cached per model,
configuration and conversation under `--out`/cache, and resume after an interruption (the import is
idempotent; processing continues with the pending notes). Answers are cached per variant too.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import tempfile
import time
from dataclasses import asdict
from datetime import date
from pathlib import Path

from bench.scoring import CATEGORY_NAMES, abstains, bleu1, evidence_ids, evidence_recall, locomo_f1, paper_f1, summarize

DEFAULT_DATA = Path(__file__).resolve().parents[1].parent / "shared" / "data" / "locomo-dev.json"
RETRIEVAL_VARIANTS = ["raw-vector", "bm25", "hybrid", "hybrid-window", "default"]
LLM_VARIANTS = ["+construction", "+links", "+evolution"]
TIER_VARIANTS = ["+episodes", "+graph", "+graph-static"]
ALL_VARIANTS = [*RETRIEVAL_VARIANTS, *LLM_VARIANTS, "full-context", *TIER_VARIANTS]
INGEST_OF = {"raw-vector": "raw", "bm25": "raw", "hybrid": "raw", "hybrid-window": "raw", "default": "raw",
             "full-context": "raw",
             "+construction": "links", "+links": "links", "+evolution": "full",
             "+episodes": "episodes", "+graph": "episodes", "+graph-static": "episodes"}
KS = (5, 10, 25)


def log(message: str) -> None:
    print(message, file=sys.stderr, flush=True)


# -- ingest -----------------------------------------------------------------------------------------
def model_tag(model: str) -> str:
    """A bundled model's name as is; a path's file name without .gguf."""
    return Path(model).name.removesuffix(".gguf")


def load_model(spec: str, threads: int | None = None):
    """A bundled model name, a .gguf path, or `python:module:Factory` (the mock model in tests).
    `threads`: llama.cpp threads (default: load_llm's; 1 leaves the other core free for other work)."""
    if spec.startswith("python:"):
        from zettel_amem.backends.llm import load_python_backend

        return load_python_backend(spec)
    from zettel_amem.backends.llm.llama import load_llm

    return load_llm(spec, threads=threads or 2)


def configure(memory, ingest: str) -> None:
    s = memory.settings
    s.auto_worker = False
    s.enrich_turns = ingest not in ("raw", "episodes")  # off by default for chat turns: the LLM variants measure it on
    if ingest in ("raw", "episodes"):  # episodes: raw turns, the LLM works on the sessions only
        s.construct, s.link = False, False
    elif ingest == "links":
        s.evolve_max_neighbours = 0


def ingest_conversation(sample: dict, ingest: str, model: str | None, cache: Path, embedder,
                        threads: int | None = None):
    """A store holding the conversation, processed with `ingest`'s flags; cached and resumable."""
    from zettel_amem.ingest.importer import import_source
    from zettel_amem.memory import Memory

    folder = cache / (model_tag(model) if model and ingest != "raw" else "no-llm") / ingest / sample["sample_id"]
    folder.mkdir(parents=True, exist_ok=True)
    memory = Memory(folder / "home", embedder=embedder)
    configure(memory, ingest)
    if model and ingest != "raw":  # searched with the defaults a user of that model gets
        memory.settings.llm_model = model
    if (folder / "done").exists():  # cached: no model needed to search it
        return memory, folder
    if ingest != "raw":
        memory.use_llm(load_model(model, threads))
    with tempfile.NamedTemporaryFile("w", suffix=".json", delete=False, encoding="utf-8") as tmp:
        json.dump([sample], tmp)  # the one conversation, in a temp file outside the repo
    start = time.perf_counter()
    report = import_source(memory, Path(tmp.name), "locomo", source_name=sample["sample_id"], batch_size=128)
    Path(tmp.name).unlink()
    import_seconds = time.perf_counter() - start
    pending = len(memory.pending_ids())
    log(f"{sample['sample_id']} [{ingest}] imported {report.added} turns in {import_seconds:.1f}s; "
        f"{pending} to process")
    started = time.perf_counter()
    with open(folder / "ingest.jsonl", "a", encoding="utf-8") as out:
        def progress(result, index, total):
            out.write(json.dumps(asdict(result)) + "\n")
            out.flush()
            if ingest != "raw" and (index % 10 == 0 or index == total):
                rate = (time.perf_counter() - started) / index
                log(f"  {sample['sample_id']} [{ingest}/{model}] {index}/{total} "
                    f"eta {rate * (total - index) / 60:.1f} min")

        memory.process_pending(progress)
        if ingest == "episodes":  # every LoCoMo session is a finished session: the promotion chain
            from zettel_amem.tiers.service import Tiers

            tiers = Tiers(memory)
            every = [n.session_id for n in memory.store.notes() if n.session_id]
            tiers.sessions.close_many(report.session_ids or every)

            def episode_progress(result, index, total):
                out.write(json.dumps({"kind": "episode", **asdict(result)}) + "\n")
                out.flush()
                log(f"  {sample['sample_id']} [episodes/{model}] {index}/{total} sessions")

            tiers.promotion.process_pending(episode_progress)
    memory.store.compact()  # one fragment, not one per processed turn: queries read it once (zk's worker compacts too)
    (folder / "done").write_text(json.dumps({"import_seconds": import_seconds}), encoding="utf-8")
    return memory, folder


def ingest_costs(folder: Path) -> dict:
    path = folder / "ingest.jsonl"
    rows = [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()] if path.exists() else []
    episodes = list({r["id"]: r for r in rows if r.get("kind") == "episode"}.values())  # a resumed run: last
    if episodes:
        def per_session(key):
            return round(statistics.fmean(r[key] for r in episodes), 2)
        return {"sessions": len(episodes), "llm_calls_per_session": per_session("llm_calls"),
                "evaluated_tokens_per_session": per_session("evaluated_tokens"),
                "completion_tokens_per_session": per_session("completion_tokens"),
                "seconds_per_session": per_session("seconds"), "entities": sum(r["entities"] for r in episodes),
                "merged": sum(r["merged"] for r in episodes), "relations": sum(r["relations"] for r in episodes),
                "invalidated": sum(r["invalidated"] for r in episodes),
                "errors": sum(bool(r["error"]) for r in episodes)}
    if not rows:
        return {}
    def mean(key):
        return round(statistics.fmean(r[key] for r in rows), 2)
    return {"turns": len(rows), "llm_calls_per_turn": mean("llm_calls"),
            "evaluated_tokens_per_turn": mean("evaluated_tokens"), "prompt_tokens_per_turn": mean("prompt_tokens"),
            "completion_tokens_per_turn": mean("completion_tokens"), "seconds_per_turn": mean("seconds"),
            "links_per_turn": round(statistics.fmean(len(r["links"]) for r in rows), 2),
            "evolved_per_turn": round(statistics.fmean(len(r["evolved"]) for r in rows), 3),
            "refused_per_turn": round(statistics.fmean(len(r.get("refused", [])) for r in rows), 3),
            "errors": sum(bool(r["error"]) for r in rows)}


# -- retrieval --------------------------------------------------------------------------------------
def dia_map(memory) -> dict[str, str]:
    """note id -> LoCoMo dia_id, through the turn's session and order (never through text matching). Notes of
    sessions not registered (bench.scale's filler around a conversation) have none."""
    return {n.id: f"D{_SESSION_NUMBERS[n.session_id]}:{n.seq + 1}" for n in memory.store.notes()
            if n.session_id in _SESSION_NUMBERS}


_SESSION_NUMBERS: dict[str, int] = {}  # session id -> LoCoMo session number


def register_sessions(sample: dict, notebook: str = "main") -> None:
    from zettel_amem.ingest.importer import session_id_for

    for key in sample["conversation"]:
        if key.startswith("session_") and not key.endswith("date_time"):
            number = int(key.split("_")[1])
            _SESSION_NUMBERS[session_id_for(notebook, f"{sample['sample_id']}/session_{number}")] = number


def tier_context(memory, variant: str, question: str):
    """(L0 hints, memory block for the prompt, graph facts): the library's `Context.memory_block`, the one
    `zk ask` uses; +episodes leaves the graph out, +graph-static gives facts without dates."""
    from zettel_amem.tiers.service import Tiers

    block, hints, facts = Tiers(memory).context.memory_block(
        question, facts=variant != "+episodes", with_time=variant != "+graph-static")
    return hints, block, facts


def boosted_by_episodes(memory, question: str, k: int, budget: int | None, hint_sessions: set[str]):
    """L1 in retrieval: hybrid hits, re-fused with the same hits restricted to the hinted sessions."""
    from zettel_amem.retrieval.retrieve import RRF_K, expand

    pool = memory.search(question, max(50, 5 * k), follow_links=False, **PLAIN)
    inside = [h for h in pool if h.note.session_id in hint_sessions]
    score = {h.note.id: 1 / (RRF_K + rank + 1) for rank, h in enumerate(pool)}
    for rank, hit in enumerate(inside):
        score[hit.note.id] += 1 / (RRF_K + rank + 1)
    ranked = sorted(pool, key=lambda h: -score[h.note.id])[:k]
    return ranked if budget is None else expand(ranked, lambda n: [], budget, False)


PLAIN = {"use_enrichment": False, "session_smoothing": False, "session_turns": 0}  # the old hybrid search


def retrieve(memory, variant: str, question: str, k: int, budget: int | None, window: dict,
             hint_sessions: set[str] | None = None):
    """Ranked notes for one question. `default`, `+construction`, `+links` and `+evolution` run
    `Memory.search` exactly as `zk search`/`zk ask` do (the shipped settings); the baselines switch
    its extra signals off."""
    if variant in TIER_VARIANTS:
        return boosted_by_episodes(memory, question, k, budget, hint_sessions or set())
    if variant == "raw-vector":
        return memory.search(question, k, follow_links=False, use_keywords=False, budget_tokens=budget, **PLAIN)
    if variant == "bm25":
        return memory.search(question, k, follow_links=False, use_vector=False, budget_tokens=budget, **PLAIN)
    if variant == "hybrid":
        return memory.search(question, k, follow_links=False, budget_tokens=budget, **PLAIN)
    if variant == "hybrid-window":  # the reference's window: each hit followed at once by its ±2 turns
        hits = memory.search(question, k, follow_links=False, **PLAIN)
        return interleaved(hits, window, budget)
    if variant == "+construction":
        return memory.search(question, k, follow_links=False, budget_tokens=budget)
    return memory.search(question, k, follow_links=True, budget_tokens=budget)  # default, +links, +evolution


def interleaved(hits, window: dict, budget: int | None):
    """Each hit, then at once its window turns (which may push later hits out): the ±2-window baseline."""
    from zettel_amem.core.text import estimate_tokens
    from zettel_amem.retrieval.retrieve import Hit, render_for_context

    out, seen, used = [], set(), 0

    def take(item) -> bool:
        nonlocal used
        if item.note.id in seen:
            return True
        cost = estimate_tokens(render_for_context(item.note))
        if budget is not None and out and used + cost > budget:
            return False
        seen.add(item.note.id)
        used += cost
        out.append(item)
        return True

    for hit in hits:
        if take(hit):
            for note in window.get(hit.note.id, []):
                take(Hit(note, 0.0, via=hit.note.id))
    return out


def session_windows(memory, radius: int = 2) -> dict:
    by_session: dict[str, list] = {}
    for note in memory.store.notes():
        if note.session_id:  # a note outside any session has no window
            by_session.setdefault(note.session_id, []).append(note)
    window = {}
    for notes in by_session.values():
        notes.sort(key=lambda n: n.seq)
        for i, note in enumerate(notes):
            around = notes[max(0, i - radius): i] + notes[i + 1: i + 1 + radius]
            window[note.id] = sorted(around, key=lambda n: abs(n.seq - note.seq))
    return window


def full_context_hits(memory, budget: int):
    """The whole conversation, newest turns kept when it does not fit; returns (hits, share kept)."""
    from zettel_amem.core.text import estimate_tokens
    from zettel_amem.retrieval.retrieve import Hit, render_for_context

    notes = sorted(memory.store.notes(), key=lambda n: (_SESSION_NUMBERS[n.session_id], n.seq))
    kept, used = [], 0
    for note in reversed(notes):
        cost = estimate_tokens(render_for_context(note))
        if used + cost > budget:
            break
        kept.append(note)
        used += cost
    kept.reverse()
    return [Hit(n, 0.0) for n in kept], len(kept) / max(1, len(notes))


def last_session_date(sample: dict) -> str:
    from zettel_amem.ingest.parsers import parse_datetime

    dates = [v for k, v in sample["conversation"].items() if k.endswith("_date_time")]
    parsed = []
    for value in dates:
        try:
            parsed.append(parse_datetime(value))
        except ValueError:
            continue
    return max(parsed).date().isoformat() if parsed else "unknown"


def truncate_sample(sample: dict, max_turns: int) -> dict:
    """The first `max_turns` turns (in session order) and the questions all of whose evidence lies in them.

    Renamed `<id>-first<N>` so its stores and caches never mix with the full conversation's."""
    conversation = {k: v for k, v in sample["conversation"].items() if not k.startswith("session_")}
    numbers = sorted(int(k.split("_")[1]) for k in sample["conversation"]
                     if k.startswith("session_") and not k.endswith("date_time"))
    kept: set[str] = set()
    for number in numbers:
        turns = sample["conversation"][f"session_{number}"][: max_turns - len(kept)]
        if not turns:
            break
        conversation[f"session_{number}"] = turns
        conversation[f"session_{number}_date_time"] = sample["conversation"].get(f"session_{number}_date_time")
        kept.update(t["dia_id"] for t in turns)
    questions = [qa for qa in sample["qa"] if (ev := evidence_ids(qa)) and ev <= kept]
    return {**sample, "sample_id": f"{sample['sample_id']}-first{max_turns}", "conversation": conversation,
            "qa": questions}


def last_day_uncited(answer, today: str) -> bool:
    """The answer writes the last session's day (the prompt's "today") and no turn it cites dates that day:
    the date came from the prompt's frame, not from the chat (#36)."""
    from zettel_amem.answering.date_guard import grounded_days, written_dates

    try:
        last = date.fromisoformat(today)
    except ValueError:
        return False
    if (last.month, last.day) not in {(d.month, d.day) for _, d in written_dates(answer.text, last.year)}:
        return False
    cited = set(answer.cited())
    return (last.month, last.day) not in grounded_days([h.note for h in answer.notes if h.note.id in cited], "")


# -- one conversation × variant ---------------------------------------------------------------------
def evaluate(sample: dict, variant: str, memory, args, answer_llm) -> list[dict]:
    from zettel_amem.core.text import estimate_tokens
    from zettel_amem.retrieval.retrieve import render_for_context

    mapping = dia_map(memory)
    valid = set(mapping.values())
    window = session_windows(memory) if variant == "hybrid-window" else {}
    today = last_session_date(sample)
    questions = sample["qa"][: args.max_questions] if args.max_questions else sample["qa"]
    records = []
    for index, qa in enumerate(questions):
        category = int(qa["category"])
        evidence = evidence_ids(qa, valid)
        record = {"conversation": sample["sample_id"], "variant": variant, "index": index, "category": category,
                  "question": qa["question"], "gold": str(qa.get("answer", qa.get("adversarial_answer", "")))}
        block, sessions = "", set()
        if variant in TIER_VARIANTS:
            start = time.perf_counter()
            hints, block, facts = tier_context(memory, variant, qa["question"])
            record["l0_ms"] = round((time.perf_counter() - start) * 1000, 2)
            sessions = {h.episode.session_id for h in hints}
            record["l0_hints"] = len(hints)
            record["l0_tokens"] = sum(estimate_tokens(h.episode.abstract) + 4 for h in hints)
            record["graph_facts"] = len(facts)
            record["memory_block_tokens"] = estimate_tokens(block)
        if variant == "full-context":
            hits, kept = full_context_hits(memory, args.full_context_tokens)
            record["context_share_kept"] = round(kept, 4)
            retrieval_seconds = 0.0
        else:
            start = time.perf_counter()
            ranked = retrieve(memory, variant, qa["question"], max(KS), None, window, sessions)
            retrieval_seconds = time.perf_counter() - start
            hits = retrieve(memory, variant, qa["question"], args.k, args.budget, window, sessions)
            ranked_ids = [mapping[h.note.id] for h in ranked]
            record["retrieved"] = ranked_ids[: max(KS)]
            if evidence and category != 5:
                for k in KS:
                    record[f"recall_all@{k}"], record[f"recall_any@{k}"] = evidence_recall(evidence, ranked_ids, k)
                record["recall_all@budget"], record["recall_any@budget"] = evidence_recall(
                    evidence, [mapping[h.note.id] for h in hits], None)
            record["retrieval_ms"] = round(retrieval_seconds * 1000, 2)
        record["context_notes"] = len(hits)
        record["context_tokens"] = sum(estimate_tokens(render_for_context(h.note)) for h in hits) + \
            estimate_tokens(block)
        record["evidence_missing"] = category != 5 and not evidence
        if variant != "full-context":  # what `zk ask` decides from the evidence alone, before any model call
            from zettel_amem.answering.answer import decide, is_journal

            answerer = memory.answerer  # the same pool and cosine `zk ask` reads
            # chat turns never take the journal path (#26): this must stay False for every question
            record["journal_path"] = memory.settings.answer_journal and is_journal(hits)
            record["declined_by_evidence"] = decide(qa["question"], hits, memory.settings,
                                                    lambda q=qa["question"], a=answerer: a.attribution_pool(q),
                                                    answerer.similarity) is not None
        if answer_llm is not None:
            memory.use_llm(answer_llm)
            start = time.perf_counter()
            answer = memory.ask(qa["question"], hits=hits, today=today, memory_block=block)
            for _ in answer.pieces:
                pass
            record["answer"] = answer.text.strip()
            record["answer_seconds"] = round(time.perf_counter() - start, 3)
            record["answer_prompt_tokens"] = answer.usage.prompt_tokens
            record["f1"] = locomo_f1(record["answer"], qa.get("answer", ""), category)
            record["abstained"] = abstains(record["answer"])
            record["answer_mode"] = answer.mode
            record["cited"] = [mapping.get(i, i) for i in answer.cited()]
            record["last_day_uncited"] = last_day_uncited(answer, today)
            if category != 5:
                record["paper_f1"] = paper_f1(record["answer"], qa.get("answer", ""))
                record["bleu1"] = bleu1(record["answer"], qa.get("answer", ""))
        records.append(record)
        if answer_llm is not None and (index + 1) % 10 == 0:
            log(f"  {sample['sample_id']} {variant}: answered {index + 1}/{len(questions)}")
    return records


# -- reporting --------------------------------------------------------------------------------------
def percentile(values: list[float], q: float) -> float | None:
    if not values:
        return None
    values = sorted(values)
    return round(values[min(len(values) - 1, int(round(q * (len(values) - 1))))], 2)


def markdown_table(summary: dict, variants: list[str]) -> str:
    cats = [1, 2, 3, 4]
    lines = ["| variant | " + " | ".join(f"R@10 {CATEGORY_NAMES[c]}" for c in cats)
             + " | R@5 | R@10 | R@25 | R@budget | ctx tokens | F1 (1-5) | paper F1 (1-4) |",
             "|---" * (len(cats) + 8) + "|"]
    for variant in variants:
        if variant not in summary:
            continue
        s = summary[variant]

        def metric(group, key, pct=True):
            value = group["metrics"].get(key, {}).get("mean")
            if value is None:
                return "–"
            return f"{value * 100:.1f}" if pct else f"{value:.0f}"

        row = [metric(s["by_category"][c], "recall_all@10") if c in s["by_category"] else "–" for c in cats]
        o = s["overall"]
        row += [metric(o, "recall_all@5"), metric(o, "recall_all@10"), metric(o, "recall_all@25"),
                metric(o, "recall_all@budget"), metric(o, "context_tokens", pct=False), metric(o, "f1"),
                metric(o, "paper_f1")]
        lines.append(f"| {variant} | " + " | ".join(row) + " |")
    return "\n".join(lines)


def chart(summary: dict, variants: list[str], path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    cats = [1, 2, 3, 4, 5]
    fig, axes = plt.subplots(1, 2, figsize=(13, 4.5))
    for ax, key, title, cat_list in ((axes[0], "recall_all@10", "evidence recall@10 (all evidence)", cats[:4]),
                                     (axes[1], "f1", "answer F1 (LoCoMo scorer)", cats)):
        shown = [v for v in variants if v in summary]
        width = 0.8 / max(1, len(shown))
        for i, variant in enumerate(shown):
            values = []
            for c in cat_list:
                group = summary[variant]["by_category"].get(c)
                mean = group["metrics"].get(key, {}).get("mean") if group else None
                values.append(mean or 0.0)
            ax.bar([x + i * width for x in range(len(cat_list))], values, width, label=variant)
        ax.set_xticks([x + width * (len(shown) - 1) / 2 for x in range(len(cat_list))])
        ax.set_xticklabels([CATEGORY_NAMES[c] for c in cat_list])
        ax.set_title(title)
        ax.set_ylim(0, 1)
    axes[0].legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)


def parse_overrides(items: list[str]) -> dict:
    """`key=value` pairs for Settings fields, typed like the field's default."""
    from dataclasses import fields

    from zettel_amem.core.config import Settings

    kinds = {"bool": bool, "int": int, "float": float, "float | None": float, "str": str}
    types = {f.name: kinds.get(str(f.type), str) for f in fields(Settings)}
    out = {}
    for item in items:
        key, _, value = item.partition("=")
        if key not in types:
            raise SystemExit(f"unknown setting {key!r}")
        kind = types[key]
        out[key] = value.lower() in ("1", "true", "yes") if kind is bool else kind(value)
    return out


def override_tag(overrides: dict) -> str:
    return "".join(f"-{k}={v}" for k, v in sorted(overrides.items()))


def main(argv: list[str] | None = None) -> int:
    from bench import shipped_defaults_only

    shipped_defaults_only()
    parser = argparse.ArgumentParser(description="LoCoMo benchmark for zettel-amem")
    parser.add_argument("--data", type=Path, default=DEFAULT_DATA)
    parser.add_argument("--conversations", default="", help="comma-separated sample ids (default: all)")
    parser.add_argument("--variants", default=",".join(RETRIEVAL_VARIANTS))
    parser.add_argument("--llm", default="qwen2.5-0.5b", help="bundled model name or .gguf path")
    parser.add_argument("--threads", type=int, default=None, help="llama.cpp threads (default 2)")
    parser.add_argument("--k", type=int, default=10, help="hits before expansion for the answer context")
    parser.add_argument("--budget", type=int, default=700, help="context token budget for answers")
    parser.add_argument("--full-context-tokens", type=int, default=2600,
                        help="estimated tokens of conversation in the prompt (the estimate runs ~30%% low on "
                        "Qwen's tokenizer; 2600 keeps prompt + answer inside a 4096 context)")
    parser.add_argument("--answer", action="store_true", help="answer with the LLM and score")
    parser.add_argument("--max-questions", type=int, default=0)
    parser.add_argument("--categories", default="", help="comma-separated category ids to ask (default: all)")
    parser.add_argument("--max-turns", type=int, default=0,
                        help="only the first N turns of each conversation, and the questions answerable from them")
    parser.add_argument("--seed", type=int, default=0, help="kept for reproducibility (all steps are greedy)")
    parser.add_argument("--out", type=Path, default=Path("results/locomo"))
    parser.add_argument("--set", action="append", default=[], metavar="SETTING=VALUE",
                        help="override a search/answer setting for this run (e.g. search_session_near=0.3); "
                        "ingest settings are not affected, so cached stores are reused")
    args = parser.parse_args(argv)
    overrides = parse_overrides(args.set)

    variants = [v.strip() for v in args.variants.split(",") if v.strip()]
    unknown = set(variants) - set(ALL_VARIANTS)
    if unknown:
        parser.error(f"unknown variants: {sorted(unknown)}; choose from {ALL_VARIANTS}")
    data = json.loads(args.data.read_text(encoding="utf-8"))
    wanted = {c.strip() for c in args.conversations.split(",") if c.strip()}
    samples = [s for s in data if not wanted or s["sample_id"] in wanted]
    if args.max_turns:
        samples = [truncate_sample(s, args.max_turns) for s in samples]
    categories = {int(c) for c in args.categories.split(",") if c.strip()}
    if categories:  # the cache name below carries the filter
        samples = [{**s, "qa": [qa for qa in s["qa"] if int(qa["category"]) in categories]} for s in samples]
    args.out.mkdir(parents=True, exist_ok=True)
    run_tag = model_tag(args.llm)
    from zettel_amem.backends.embed import load_embedder

    embedder = load_embedder()
    answer_llm = None
    if args.answer:
        answer_llm = load_model(args.llm, args.threads)
    wall = time.perf_counter()
    all_records: list[dict] = []
    costs: dict[str, dict] = {}
    for sample in samples:
        register_sessions(sample)
        for variant in variants:
            ingest = INGEST_OF[variant]
            memory, folder = ingest_conversation(sample, ingest, args.llm, args.out / "cache", embedder,
                                                 args.threads)
            for key, value in overrides.items():
                setattr(memory.settings, key, value)
            costs.setdefault(f"{ingest}/{sample['sample_id']}", ingest_costs(folder))
            cache = args.out / "records" / f"{variant}-{run_tag if ingest != 'raw' or args.answer else 'no-llm'}-" \
                f"{'answer' if args.answer else 'retrieval'}-{sample['sample_id']}-{args.max_questions}" \
                f"{'-cat' + args.categories.replace(',', '_') if categories else ''}{override_tag(overrides)}.jsonl"
            cache.parent.mkdir(parents=True, exist_ok=True)
            if cache.exists():
                records = [json.loads(line) for line in cache.read_text(encoding="utf-8").splitlines()]
            else:
                log(f"{sample['sample_id']}: {variant}")
                records = evaluate(sample, variant, memory, args, answer_llm)
                cache.write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in records),
                                 encoding="utf-8")
            all_records.extend(records)
    summary = {}
    for variant in variants:
        rows = [r for r in all_records if r["variant"] == variant]
        if rows:
            numeric = [{k: v for k, v in r.items() if k not in ("retrieved",)} for r in rows]
            summary[variant] = summarize(numeric, exclude=("category", "index"))
            latencies = [r["retrieval_ms"] for r in rows if "retrieval_ms" in r]
            summary[variant]["retrieval_ms_p50"] = percentile(latencies, 0.5)
            summary[variant]["retrieval_ms_p95"] = percentile(latencies, 0.95)
            answers = [r["answer_seconds"] for r in rows if "answer_seconds" in r]
            summary[variant]["answer_s_p50"] = percentile(answers, 0.5)
            summary[variant]["answer_s_p95"] = percentile(answers, 0.95)
    tag = f"{run_tag}-{'answer' if args.answer else 'retrieval'}-{'_'.join(sorted(wanted)) or 'all'}"
    tag += f"-first{args.max_turns}" if args.max_turns else ""
    tag += f"-cat{args.categories.replace(',', '_')}" if categories else ""
    tag += override_tag(overrides)
    result = {"args": {k: str(v) for k, v in vars(args).items()}, "wall_seconds": round(time.perf_counter() - wall, 1),
              "summary": summary, "ingest_costs": costs, "records": all_records}
    (args.out / f"locomo-{tag}.json").write_text(json.dumps(result, ensure_ascii=False, indent=1), encoding="utf-8")
    table = markdown_table(summary, variants)
    (args.out / f"locomo-{tag}.md").write_text(table + "\n", encoding="utf-8")
    chart(summary, variants, args.out / f"locomo-{tag}.png")
    print(table)
    print(json.dumps({"ingest_costs": costs, "wall_seconds": result["wall_seconds"],
                      "latency": {v: {k: s[k] for k in s if k.endswith(("p50", "p95"))} for v, s in summary.items()}},
                     indent=1))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
