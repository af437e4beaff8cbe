"""Right answers from a personal journal (#26): `zk ask` as shipped, scored on key facts.

    flock /tmp/zk-cpu.lock python -m bench.journal_qa --store results/journal-qa-store
    python -m bench.journal_qa --only when --limit 4 --json

The journal is `bench/data/journal-year.txt` (75 dated Korean/English entries, January to November 2026,
with storylines that change: a database replaced, a manager who moved on, a habit dropped and taken up
again). The store is built once, as a user would: each entry added with its date (`zk add --at DATE
TEXT`, the same `Memory.add` the command calls), then one `zk process` (a subprocess: construction,
links, evolution, episodes); it is kept under `--store` so later runs only ask. The questions
(`bench/data/journal-qa.json`) are asked with ZK_TODAY pinned to a day after the last entry, through
the same path as `zk ask --json` (the L0/L2 memory block, then `Memory.ask`), one Memory for all.

Scoring: an answer is right when every key fact (each a list of any-of alternatives, both languages)
appears in it, compared without case and spaces; only the first 240 characters count, so copying whole
notes is not rewarded. A not-recorded question is right when it is declined. Also reported: decline
rates, answers holding a date (YYYY-MM-DD, "March 4", "3월 4일") found in no note, note timestamp or the
question, and the answer times (p50/p95).
"""

from __future__ import annotations

import argparse
import json
import os
import re
import subprocess
import sys
import time
from pathlib import Path

DATA = Path(__file__).resolve().parent / "data"
JOURNAL = DATA / "journal-year.txt"
QUESTIONS = DATA / "journal-qa.json"
TODAY = "2026-12-01"
SCORED_CHARS = 240
_ENTRY = re.compile(r"^\[(\d{4}-\d{2}-\d{2}) (\d{2}:\d{2})\] (.+)$")
CATEGORIES = ["current", "when", "not_recorded", "single", "multi", "why", "count", "cross_language"]
STORY = "story"  # "what happened with X" (#52): the diaries' question files hold these, this journal's none
VIEW_CHARS = 1000  # the view is scored whole (it is built to fit ~700 characters); this only bounds a runaway


def load_entries(path: Path = JOURNAL) -> list[tuple[str, str]]:
    """(ISO time, text) of each `[YYYY-MM-DD HH:MM] text` line."""
    entries = []
    for line in path.read_text(encoding="utf-8").splitlines():
        match = _ENTRY.match(line.strip())
        if match:
            entries.append((f"{match.group(1)}T{match.group(2)}:00", match.group(3)))
    return entries


def normalise(text: str) -> str:
    """Case-, space- and punctuation-insensitive form used to look for a key fact."""
    import unicodedata

    text = unicodedata.normalize("NFKC", text).casefold()
    return re.sub(r"[\s'\"`’‘“”.,!?:;()\[\]{}<>·『』「」-]+", "", text)


def is_right(answer: str, facts: list[list[str]], chars: int = SCORED_CHARS) -> bool:
    """Every fact (a list of alternatives) appears in the first `chars` characters of the answer."""
    shown = normalise(answer[:chars])
    return bool(facts) and all(any(normalise(alt) in shown for alt in alternatives if normalise(alt))
                               for alternatives in facts)


def events_shown(text: str, events: list[dict], chars: int = VIEW_CHARS) -> int:
    """How many of a story question's gold events (each a list of facts) the text holds whole."""
    return sum(is_right(text, event["facts"], chars) for event in events)


def scored(qa: dict, headline: str, view: str, declined: bool) -> tuple[bool, bool]:
    """(headline right, on screen) of one answer. A not-recorded question is right both ways when declined.
    A story question (#52) is on screen when the view holds `min_events` of its gold events whole, and its
    headline (a lead listing the days told) right when it names the days of as many; any other question's
    headline is right when its first SCORED_CHARS characters hold every key fact, and it is on screen when
    the whole view holds them."""
    if qa["category"] == "not_recorded":
        return declined, declined
    if declined:
        return False, False
    if qa.get("events"):
        least = qa.get("min_events", 3)
        return sum(event["date"] in headline for event in qa["events"]) >= least, \
            events_shown(view, qa["events"]) >= least
    return is_right(headline, qa["facts"]), is_right(view, qa["facts"], VIEW_CHARS)


_MONTHS = ("january february march april may june july august september october november december").split()
_DATE_FORMS = [
    re.compile(r"\b(\d{4})-(\d{1,2})-(\d{1,2})\b"),
    re.compile(r"(?:(\d{4})\s*년\s*)?(\d{1,2})\s*월\s*(\d{1,2})\s*일"),
    re.compile(r"\b(?:(\d{1,2})\s+)?(" + "|".join(m[:3] for m in _MONTHS) + r")[a-z]*\.?\s*(\d{1,2})?(?:st|nd|rd|th)?"
               r"(?:,?\s*(\d{4}))?", re.IGNORECASE),
]


def dates_in(text: str) -> set[tuple[int, int]]:
    """(month, day) of every full date written in `text`: ISO, Korean "3월 4일", English "March 4"/"4 March"."""
    found = set()
    for match in _DATE_FORMS[0].finditer(text):
        found.add((int(match.group(2)), int(match.group(3))))
    for match in _DATE_FORMS[1].finditer(text):
        found.add((int(match.group(2)), int(match.group(3))))
    for match in _DATE_FORMS[2].finditer(text):
        day = match.group(1) or match.group(3)
        if day:
            found.add((_MONTHS.index(next(m for m in _MONTHS if m.startswith(match.group(2).lower()[:3]))) + 1,
                       int(day)))
    return found


def ungrounded_dates(answer: str, question: str, entries: list[tuple[str, str]]) -> set[tuple[int, int]]:
    """Dates in the answer written in no note, at no note's timestamp and not in the question; a relative
    date in a note ("어제", "next Monday") counts as written once made absolute from the note's timestamp
    (by the older resolver and by the one passages store their dates with, `date_mentions`: "next Monday"
    in a Tuesday's note is the 6th day after it, a date the note holds, not one from nowhere)."""
    from zettel_amem.core.date_mentions import date_mentions
    from zettel_amem.core.relative_dates import resolve_relative_dates

    known = dates_in(question)
    for at, text in entries:
        known.add((int(at[5:7]), int(at[8:10])))
        known |= dates_in(text)
        for _phrase, value in resolve_relative_dates(text, at):
            known |= dates_in(value)
        for mention in date_mentions(text, at):
            if mention.start == mention.end:  # one day, not a week or a month
                known.add((int(mention.start[5:7]), int(mention.start[8:10])))
    return dates_in(answer) - known


def build(store: Path, entries: list[tuple[str, str]], today: str = TODAY, marker: str = "journal-qa-built.json"
          ) -> dict:
    """Add every entry with its date, then one `zk process` as a subprocess; write `marker` with the timings.
    A `zk process` that exits non-zero (an episode whose extraction the model left unfinished) is recorded
    (`process_exit`), not fatal: the notes are built, and what stayed unfinished is part of the result."""
    from zettel_amem.memory import Memory

    store.mkdir(parents=True, exist_ok=True)
    start = time.perf_counter()
    memory = Memory(store)
    for at, text in entries:
        memory.add(text, at)
    added = time.perf_counter() - start
    env = {**os.environ, "ZK_HOME": str(store), "ZK_TODAY": today, "ZK_NO_WORKER": "1"}
    start = time.perf_counter()
    done = subprocess.run([sys.executable, "-m", "zettel_amem", "process", "--quiet"], env=env, check=False)
    info = {"entries": len(entries), "today": today, "add_seconds": round(added, 1),
            "process_seconds": round(time.perf_counter() - start, 1), "process_exit": done.returncode}
    (store / marker).write_text(json.dumps(info), encoding="utf-8")
    return info


def ask_all(store: Path, questions: list[dict], entries: list[tuple[str, str]], model_path: bool = False,
            reader: bool = False) -> list[dict]:
    """Each question through `zk ask`'s path (memory block, then `Memory.ask`), scored. `model_path`:
    the model answers as it did before #26 (`answer_journal = false`), for comparison; `reader`: the
    model picks which of the best passages answers (`answer_journal_reader`)."""
    from zettel_amem.memory import Memory
    from zettel_amem.tiers.service import Tiers

    memory = Memory(store)
    memory.settings.answer_journal = not model_path
    memory.settings.answer_journal_reader = reader or memory.settings.answer_journal_reader
    tiers = Tiers(memory)
    rows = []
    for index, qa in enumerate(questions, 1):
        start = time.perf_counter()
        block, _hints, _facts = tiers.context.memory_block(qa["question"])
        answer = memory.ask(qa["question"], memory_block=block)
        for _ in answer.pieces:
            pass
        seconds = time.perf_counter() - start
        text = answer.text.strip()
        shown = getattr(answer, "view", None)  # None: an answer without a view (a chat, or code before #52)
        view = shown.text() if shown is not None else text
        declined = answer.mode == "declined"
        right, on_screen = scored(qa, text, view, declined)
        rows.append({"id": qa["id"], "category": qa["category"], "split": qa["split"], "question": qa["question"],
                     "answer": text, "view": view, "mode": answer.mode, "reason": answer.reason, "right": right,
                     "on_screen": on_screen, "confidence": shown.confidence if shown else None,
                     "signals": shown.signals if shown else {}, "kind": shown.kind if shown else "",
                     "declined": declined, "seconds": round(seconds, 2),
                     "cited_at": sorted({quote["at"][:16] for quote in answer.quotes}),
                     "ungrounded_dates": sorted(ungrounded_dates(view, qa["question"], entries))})
        print(f"{index}/{len(questions)} {'ok ' if right else 'BAD'} [{qa['category']}] {qa['question']} -> "
              f"{text[:100]!r} ({answer.mode}, {seconds:.1f}s)", file=sys.stderr)
    return rows


def write_out(path: Path | None, summary: dict, rows: list[dict]) -> None:
    """Every answer and the summary as JSON at `path` (nothing when None)."""
    if path:
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(json.dumps({"summary": summary, "answers": rows}, ensure_ascii=False, indent=1),
                        encoding="utf-8")


def percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return round(ordered[min(len(ordered) - 1, int(round(q * (len(ordered) - 1))))], 2) if ordered else 0.0


def summarise(rows: list[dict]) -> dict:
    """Accuracy per category and split, decline rates, ungrounded dates, answer times."""
    def accuracy(subset: list[dict]) -> float | None:
        return round(100 * sum(r["right"] for r in subset) / len(subset), 1) if subset else None

    not_rec = [r for r in rows if r["category"] == "not_recorded"]
    answerable = [r for r in rows if r["category"] != "not_recorded"]
    times = [r["seconds"] for r in rows]
    categories = CATEGORIES + ([STORY] if any(r["category"] == STORY for r in rows) else [])
    return {
        "questions": len(rows), "overall": accuracy(rows),
        "categories": {c: {"n": len([r for r in rows if r["category"] == c]),
                           "accuracy": accuracy([r for r in rows if r["category"] == c])} for c in categories},
        "splits": {s: accuracy([r for r in rows if r["split"] == s]) for s in ("tune", "heldout")},
        "not_recorded_declined": accuracy([{**r, "right": r["declined"]} for r in not_rec]),
        "answerable_declined": accuracy([{**r, "right": r["declined"]} for r in answerable]),
        "ungrounded_date_answers": sum(bool(r["ungrounded_dates"]) for r in rows),
        "on_screen": accuracy([{**r, "right": r.get("on_screen", False)} for r in answerable]),
        "on_screen_categories": {c: accuracy([{**r, "right": r.get("on_screen", False)} for r in rows
                                              if r["category"] == c]) for c in categories},
        "sureness": sureness(rows),
        "modes": {m: sum(r["mode"] == m for r in rows) for m in sorted({r["mode"] for r in rows})},
        "p50_seconds": percentile(times, 0.5), "p95_seconds": percentile(times, 0.95),
    }


def sureness(rows: list[dict]) -> dict:
    """Per level ("sure", "likely", "unsure"): how many answers, how many of them right (headline), and the
    share of the answerable questions at that level."""
    answerable = [r for r in rows if r["category"] != "not_recorded"]
    out = {}
    for level in ("sure", "likely", "unsure"):
        at = [r for r in rows if r.get("confidence") == level]
        out[level] = {"n": len(at), "right": round(100 * sum(r["right"] for r in at) / len(at), 1) if at else None,
                      "answerable_share": round(100 * sum(r.get("confidence") == level for r in answerable)
                                                / len(answerable), 1) if answerable else None}
    return out


def table(summary: dict) -> str:
    lines = ["| category | n | headline right % | on screen % |", "|---|---|---|---|"]
    screens = summary.get("on_screen_categories", {})
    for name, row in summary["categories"].items():
        if row["n"]:
            lines.append(f"| {name} | {row['n']} | {row['accuracy']} | {screens.get(name)} |")
    lines.append(f"| **overall** | {summary['questions']} | **{summary['overall']}** | "
                 f"**{summary.get('on_screen')}** (answerable) |")
    sure = summary.get("sureness", {})
    lines.append("\nsureness: " + " · ".join(f"{level} {row['n']} ({row['right']} % right, {row['answerable_share']} % "
                                               f"of answerable)" for level, row in sure.items()))
    lines.append(f"\ntune {summary['splits']['tune']} % · heldout {summary['splits']['heldout']} % · "
                 f"not-recorded declined {summary['not_recorded_declined']} % · answerable declined "
                 f"{summary['answerable_declined']} % · ungrounded-date answers {summary['ungrounded_date_answers']}"
                 f" · p50 {summary['p50_seconds']} s · p95 {summary['p95_seconds']} s · modes {summary['modes']}")
    return "\n".join(lines)


def select(questions: list[dict], only: str | None, split: str | None, limit: int | None) -> list[dict]:
    chosen = [q for q in questions
              if (only is None or q["category"] == only) and (split is None or q["split"] == split)]
    return chosen[:limit] if limit else chosen


def main(argv: list[str] | None = None) -> int:
    from bench import shipped_defaults_only

    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--store", type=Path, default=Path("results/journal-qa-store"),
                        help="where the built journal store is kept (built when missing)")
    parser.add_argument("--only", choices=CATEGORIES, help="one category of questions")
    parser.add_argument("--split", choices=["tune", "heldout"], help="one half of the questions")
    parser.add_argument("--limit", type=int, help="at most N questions")
    parser.add_argument("--build-only", action="store_true", help="build the store and stop")
    parser.add_argument("--model-path", action="store_true",
                        help="answer as before #26: the model writes every answer (answer_journal = false)")
    parser.add_argument("--reader", action="store_true",
                        help="the model picks which of the best passages answers (answer_journal_reader)")
    parser.add_argument("--out", type=Path, help="write every answer and the summary here (JSON)")
    parser.add_argument("--json", action="store_true", help="print the summary as JSON")
    args = parser.parse_args(argv)
    shipped_defaults_only()
    os.environ["ZK_TODAY"] = TODAY
    os.environ["ZK_NO_WORKER"] = "1"
    entries = load_entries()
    if not (args.store / "journal-qa-built.json").exists():
        print(f"building the journal store in {args.store}: {build(args.store, entries)}", file=sys.stderr)
    if args.build_only:
        return 0
    questions = select(json.loads(QUESTIONS.read_text(encoding="utf-8")), args.only, args.split, args.limit)
    start = time.perf_counter()
    rows = ask_all(args.store, questions, entries, args.model_path, args.reader)
    summary = {**summarise(rows), "wall_seconds": round(time.perf_counter() - start, 1)}
    write_out(args.out, summary, rows)
    print(json.dumps(summary, ensure_ascii=False, indent=1) if args.json else table(summary))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
