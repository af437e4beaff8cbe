"""Long diary entries (#36): `zk search` and `zk ask` on page-long entries that each cover several subjects.

    python -m bench.diary_long --stats
    flock /tmp/zk-cpu.lock python -m bench.diary_long --store results/diary-long-store
    python -m bench.diary_long --only when --limit 4 --json
    python -m bench.diary_long --recall-only
    flock /tmp/zk-cpu.lock python -m bench.diary_long --sealed --out results/diary-long-sealed.json

The diary is `bench/data/diary-long.json`: 48 entries of one person's year (a baker in Daejeon, her dog,
her mother in Yeosu, her brother's civil-service exam, a pottery class, a move across town), January to
October 2026, most of them a page long and about three or four unrelated things at once, in Korean,
English and both. Facts sit deep inside entries, are dated only by "어제", "그저께", "last Saturday",
"two days ago", "사흘 전"..., change over time (address, shift, commute, the dog's weight, savings) and
are planned in one entry and happen, move or never happen in a later one.

The store is built once, as a user would: every entry added with its time (`Memory.add`, what `zk add --at`
calls), then one `zk process` subprocess with ZK_TODAY pinned to the diary's "today"; it is kept under
`--store` so later runs only ask. The questions come in two halves: `diary-long-qa.json` (tune, the
default) and `diary-long-qa-sealed.json` (`--sealed`), which is scored once at the end and never read while
tuning. A third set, `diary-long-qa-dev.json` (`--dev`), was written later by a helper that read no code, so
that a rule tuned on the tune half can be checked on questions it was not written from; a fourth,
`diary-long-qa-dev2.json` (`--dev2`), the same way, committed before the code it judges and read only in
aggregate. Each run's summary also says how many answers quote a passage of an evidence entry (`citing`):
a wrong passage chosen, or the right one misread.

Measured, per half and per category:
- answers: each question through `zk ask`'s path (`bench.journal_qa.ask_all`: the memory block, then
  `Memory.ask`), scored as `bench.journal_qa` scores (every key fact in the first 240 characters; a
  not-recorded question is right when declined), with decline rates and answers holding a date written in
  no entry, at no entry's time and not in the question;
- evidence recall: the search `zk search QUESTION` runs with its defaults (same k, links, token budget and
  person scope) holds every evidence entry of the question: a result counts for the entry whose id it
  carries (`entry_id`, else its own `id`), so results that are passages of an entry count for that entry.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import statistics
import sys
import time
from pathlib import Path

from bench.journal_qa import CATEGORIES as JOURNAL_CATEGORIES
from bench.journal_qa import STORY, ask_all, percentile, summarise, table, write_out
from bench.journal_qa import build as journal_qa_build

CATEGORIES = [*JOURNAL_CATEGORIES, STORY]

DATA = Path(__file__).resolve().parent / "data"
DIARY = DATA / "diary-long.json"
QUESTIONS = {"tune": DATA / "diary-long-qa.json", "dev": DATA / "diary-long-qa-dev.json",
             "dev2": DATA / "diary-long-qa-dev2.json", "sealed": DATA / "diary-long-qa-sealed.json"}
# The third diary (#52): another life, written with its questions before the code that answers them
DIARIES = {"long": (DIARY, QUESTIONS),
           "three": (DATA / "diary-three.json", {"dev": DATA / "diary-three-qa-dev.json",
                                                  "sealed": DATA / "diary-three-qa-sealed.json"})}
BUILT = "diary-long-built.json"
_HANGUL = re.compile(r"[\uac00-\ud7a3]")
_LATIN = re.compile(r"[A-Za-z]")


def load_diary(path: Path = DIARY) -> tuple[str, list[tuple[str, str]]]:
    """(today, [(ISO time with seconds, text), ...]) of the diary file."""
    data = json.loads(path.read_text(encoding="utf-8"))
    entries = [(e["at"] if len(e["at"]) > 16 else e["at"] + ":00", e["text"]) for e in data["entries"]]
    return data["today"], entries


def load_questions(half: str, diary: str = "long") -> list[dict]:
    return json.loads(DIARIES[diary][1][half].read_text(encoding="utf-8"))


def language(text: str) -> str:
    """"ko", "en" or "mixed" by the share of Hangul among the letters (Hangul syllables and Latin)."""
    hangul, latin = len(_HANGUL.findall(text)), len(_LATIN.findall(text))
    share = hangul / (hangul + latin) if hangul + latin else 0.0
    return "ko" if share >= 0.8 else "en" if share <= 0.2 else "mixed"


def stats(diary: str = "long") -> dict:
    """The data's statistics; reads the question files only to count them per category and half."""
    today, entries = load_diary(DIARIES[diary][0])
    lengths = [len(text) for _at, text in entries]
    languages = [language(text) for _at, text in entries]
    halves = {half: load_questions(half, diary) for half in DIARIES[diary][1]}
    return {
        "entries": len(entries), "first": entries[0][0][:10], "last": entries[-1][0][:10], "today": today,
        "median_chars": statistics.median(lengths), "max_chars": max(lengths), "min_chars": min(lengths),
        "entries_600_plus": sum(n >= 600 for n in lengths), "entries_900_plus": sum(n >= 900 for n in lengths),
        "languages": {lang: languages.count(lang) for lang in ("ko", "en", "mixed")},
        "questions": {half: {"total": len(qs), **{c: sum(q["category"] == c for q in qs) for c in CATEGORIES}}
                      for half, qs in halves.items()},
    }


def build(store: Path, entries: list[tuple[str, str]], today: str) -> dict:
    """Add every entry with its time, then one `zk process` (`bench.journal_qa.build`). Returns timings."""
    return journal_qa_build(store, entries, today, BUILT)


def entry_ids(memory, entries: list[tuple[str, str]]) -> dict[str, str]:
    """Stored note id -> the entry's time (minute precision), matched by the note's `at` (the time given
    to `Memory.add`). Entries are the only notes in this store and no two share a minute."""
    wanted = {at[:16] for at, _text in entries}
    return {note.id: note.at[:16] for note in memory.store.notes(memory.notebook) if note.at[:16] in wanted}


def search_results(memory, query: str) -> list[dict]:
    """What `zk search QUERY --json` prints, by the same call with the same defaults (see `cli.search`):
    k from the settings, linked notes followed, the `context_budget_tokens` budget, the person scope."""
    start = getattr(memory, "start_embedding", None)
    if start is not None:
        start(query)
    budget = memory.settings.context_budget_tokens
    hits = memory.search(query, None, follow_links=True, budget_tokens=budget or None, tag=None, scoped=True)
    return [hit.to_json() if hasattr(hit, "to_json") else dict(hit) for hit in hits]


def entry_of(result: dict, ids: dict[str, str]) -> str | None:
    """The entry (its time) a search result stands for: the entry id it carries (a passage's `entry_id`,
    else the note's own `id`); a result with an unknown id counts by its timestamp, if it has one."""
    key = result.get("entry_id") or result.get("id")
    if key in ids:
        return ids[key]
    at = str(result.get("entry_at") or result.get("at") or "")[:16]
    return at if at in ids.values() else None


def recall_all(store: Path, questions: list[dict], entries: list[tuple[str, str]]) -> dict[str, dict]:
    """Per answerable question: whether `zk search`'s default output holds every evidence entry."""
    from zettel_amem.memory import Memory

    memory = Memory(store)
    ids = entry_ids(memory, entries)
    out = {}
    for qa in questions:
        if qa["category"] == "not_recorded" or not qa["evidence"]:
            continue
        results = search_results(memory, qa["question"])
        found = [entry_of(r, ids) for r in results]
        missing = [at for at in qa["evidence"] if at[:16] not in found]
        out[qa["id"]] = {"recalled": not missing, "missing_evidence": missing, "results": len(results),
                         "ranks": {at: (found.index(at[:16]) + 1 if at[:16] in found else None)
                                   for at in qa["evidence"]}}
        print(f"recall {'ok ' if not missing else 'BAD'} [{qa['category']}] {qa['question']} "
              f"({len(results)} results, missing {missing})", file=sys.stderr)
    return out


def recall_summary(rows: list[dict]) -> dict:
    """Evidence recall % overall, per half and per category, over answerable questions."""
    def rate(subset: list[dict]) -> float | None:
        scored = [r for r in subset if r.get("recalled") is not None]
        return round(100 * sum(r["recalled"] for r in scored) / len(scored), 1) if scored else None

    ranks = [rank or 99 for r in rows for rank in r.get("ranks", {}).values()]  # 99: not in the output
    return {"overall": rate(rows), "halves": {h: rate([r for r in rows if r["split"] == h]) for h in QUESTIONS},
            "categories": {c: rate([r for r in rows if r["category"] == c]) for c in CATEGORIES
                           if c != "not_recorded"},
            "evidence_rank_p50": percentile(ranks, 0.5), "evidence_rank_p95": percentile(ranks, 0.95)}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--diary", choices=sorted(DIARIES), default="long",
                        help="which diary: the baker's year (long) or the third diary (three: dev and sealed only)")
    parser.add_argument("--store", type=Path, help="where the built diary store is kept (built when missing; "
                                                   "default results/diary-DIARY-store)")
    parser.add_argument("--sealed", action="store_true",
                        help="score the sealed half instead of the tune half (once, at the end)")
    parser.add_argument("--dev", action="store_true",
                        help="score the dev questions: written after the code of 2026-12-05, a check of tuning")
    parser.add_argument("--dev2", action="store_true",
                        help="score the second dev set: written 2026-12-06, before the code it judges; read "
                             "only in aggregate")
    parser.add_argument("--only", choices=CATEGORIES, help="one category of questions")
    parser.add_argument("--limit", type=int, help="at most N questions")
    parser.add_argument("--recall-only", action="store_true", help="evidence recall only, no answers")
    parser.add_argument("--build-only", action="store_true", help="build the store and stop")
    parser.add_argument("--stats", action="store_true", help="print the data's statistics and stop (no models)")
    parser.add_argument("--reader", action="store_true",
                        help="the model picks which of the best passages answers (answer_journal_reader)")
    parser.add_argument("--out", type=Path, help="write every answer and the summary here (JSON)")
    parser.add_argument("--json", action="store_true", help="print the summary as JSON")
    parser.add_argument("--cli", type=int, metavar="N",
                        help="time the first N questions as a user waits for them: `zk ask --json` subprocesses")
    args = parser.parse_args(argv)
    if args.stats:
        print(json.dumps(stats(args.diary), ensure_ascii=False, indent=1))
        return 0
    from bench import shipped_defaults_only

    shipped_defaults_only()
    diary_file, halves = DIARIES[args.diary]
    args.store = args.store or Path(f"results/diary-{args.diary}-store")
    today, entries = load_diary(diary_file)
    os.environ["ZK_TODAY"] = today
    os.environ["ZK_NO_WORKER"] = "1"
    if not (args.store / BUILT).exists():
        print(f"building the diary store in {args.store}: {build(args.store, entries, today)}", file=sys.stderr)
    if args.build_only:
        return 0
    half = "sealed" if args.sealed else "dev2" if args.dev2 else "dev" if args.dev else "tune"
    if half not in halves:
        parser.error(f"the {args.diary} diary has no {half} half (it has {', '.join(halves)})")
    questions = [q for q in load_questions(half, args.diary) if args.only is None or q["category"] == args.only]
    questions = questions[:args.limit] if args.limit else questions
    if args.cli:
        print(json.dumps(cli_seconds(args.store, questions[:args.cli]), indent=1))
        return 0
    start = time.perf_counter()
    recall = recall_all(args.store, questions, entries)
    if args.recall_only:
        rows = [{"id": q["id"], "category": q["category"], "split": q["split"], "question": q["question"],
                 **recall.get(q["id"], {"recalled": None})} for q in questions]
        summary = {"half": half, "questions": len(rows), "evidence_recall": recall_summary(rows),
                   "wall_seconds": round(time.perf_counter() - start, 1)}
    else:
        rows = ask_all(args.store, questions, entries, reader=args.reader)
        evidence = {q["id"]: {at[:16] for at in q["evidence"]} for q in questions}
        for row in rows:
            row.update(recall.get(row["id"], {"recalled": None}))
            row["cites_evidence"] = bool(evidence[row["id"]] & set(row["cited_at"])) if evidence[row["id"]] else None
        summary = summarise(rows)
        summary["citing"] = citing_summary(rows)
        summary["splits"] = {h: _accuracy([r for r in rows if r["split"] == h]) for h in halves}
        summary.update(half=half, evidence_recall=recall_summary(rows),
                       wall_seconds=round(time.perf_counter() - start, 1))
    write_out(args.out, summary, rows)
    print(json.dumps(summary, ensure_ascii=False, indent=1) if args.json else _table(summary))
    return 0


def citing_summary(rows: list[dict]) -> dict:
    """Of the answered (not declined) answerable questions: how many quote a passage of an evidence entry,
    and how many of those are right. Tells a wrong passage chosen from a right passage misread."""
    answered = [r for r in rows if r.get("cites_evidence") is not None and not r["declined"]]
    citing = [r for r in answered if r["cites_evidence"]]
    return {"answered": len(answered), "citing_evidence": len(citing),
            "right_citing": sum(r["right"] for r in citing),
            "right_not_citing": sum(r["right"] for r in answered if not r["cites_evidence"])}


def cli_seconds(store: Path, questions: list[dict]) -> dict:
    """Wall seconds of `zk ask QUESTION --json` as a new process each (start, imports, embedder load,
    search and answer): what the issue's "zk ask p50" bound is about."""
    import subprocess

    env = {**os.environ, "ZK_HOME": str(store), "PYTHONPATH": str(Path(__file__).resolve().parent.parent)}
    seconds = []
    for question in questions:
        start = time.perf_counter()
        subprocess.run([sys.executable, "-m", "zettel_amem", "ask", question["question"], "--json"], env=env,
                       check=True, capture_output=True)
        seconds.append(time.perf_counter() - start)
    ordered = sorted(seconds)
    return {"questions": len(seconds), "p50_s": round(statistics.median(seconds), 2),
            "p95_s": round(ordered[max(0, round(0.95 * len(ordered)) - 1)], 2), "max_s": round(ordered[-1], 2)}


def _accuracy(rows: list[dict]) -> float | None:
    return round(100 * sum(r["right"] for r in rows) / len(rows), 1) if rows else None


def _table(summary: dict) -> str:
    """journal_qa's table (its split line names this benchmark's halves), then evidence recall."""
    recall = summary["evidence_recall"]
    lines = [f"evidence recall ({summary['half']} half): {recall['overall']} % · per category "
             + ", ".join(f"{c} {v}" for c, v in recall["categories"].items() if v is not None)
             + f" · evidence rank p50 {recall['evidence_rank_p50']}, p95 {recall['evidence_rank_p95']} (99: absent)"]
    if "overall" in summary:
        splits = summary["splits"]
        other = "dev" if summary["half"] == "dev" else "sealed"
        shown = {**summary, "splits": {"tune": splits.get("tune"), "heldout": splits.get(other)}}
        lines.insert(0, table(shown).replace(" · heldout ", f" · {other} "))
    return "\n".join(lines)


if __name__ == "__main__":
    raise SystemExit(main())
