"""#60: is what the model wrote into each note true of that note? A benchmark of truth, not of rate.

    flock /tmp/zk-cpu.lock python -m bench.enrichment --diary long --store results/enrich-long [--json]
    python -m bench.enrichment --diary three --store results/enrich-three --labels bench/data/enrichment-labels.json

Builds a store once as a user would (every entry of `bench/data/diary-long.json` or `diary-three.json` added with
its time, then the note pipeline at the defaults: construction, linking, evolution; the upper tiers are not
built, they write nothing into notes), then measures every entry note:

- **context grounding**: the share of the context's content words that are words of the note
  (`amem/grounded.py`: by stem, both languages, the note's own date words), for the note's own description;
  and for an evolved note's "later" clause, the share that are words of the note that caused it;
- **tags and keywords**: the share that are words of the note (a tag may also be a topic a word implies);
- **closer to another entry**: notes whose context (as stored) is nearer, by the bundled embedder's cosine,
  to another entry (its text or one of its sentences) than to their own: a context about another entry;
- **evolution**: how many times each note was evolved, and the notes evolved more than 3 times;
- **the extractive bound**: the same measures for an extractive context (the note's central sentence) in
  place of every context: what a context taken from the note alone scores;
- **labels** (`--labels`): contexts judged by hand (a helper reading only the diary) as true, partly true,
  another entry's or invented, keyed by entry time and context text; scored for the contexts this store
  holds that were judged. The sealed half (odd entry positions) is scored only with `--sealed`.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
from pathlib import Path

from bench.diary_long import DIARIES, load_diary

BUILT = "enrichment-built.json"
LABELS = ("true", "partly", "another", "invented")


def build(store: Path, entries: list[tuple[str, str]]) -> dict:
    """Add every entry with its time, then process the notes (construct, link, evolve) at the defaults."""
    from zettel_amem.memory import Memory

    store.mkdir(parents=True, exist_ok=True)
    memory = Memory(store)
    start = time.perf_counter()
    for at, text in entries:
        memory.add(text, at)
    added = time.perf_counter() - start
    start = time.perf_counter()
    results = memory.process_pending(on_progress=lambda r, i, n: print(f"processed {i}/{n}", file=sys.stderr))
    info = {"entries": len(entries), "add_seconds": round(added, 1),
            "process_seconds": round(time.perf_counter() - start, 1),
            "llm_calls": sum(r.llm_calls for r in results),
            "unfinished": sum(1 for r in results if r.status != "ready")}
    (store / BUILT).write_text(json.dumps(info), encoding="utf-8")
    return info


def note_rows(memory, entries: list[tuple[str, str]]) -> list[dict]:
    """Per entry note: its fields, evolutions and grounding shares."""
    from zettel_amem.amem.grounded import NoteWords, later_of, own_description, strip_dates, term_holds, topic_of

    wanted = {at[:16]: index for index, (at, _text) in enumerate(entries)}
    notes = {n.id: n for n in memory.store.notes(memory.notebook)}
    rows = []
    for note in sorted(notes.values(), key=lambda n: n.at):
        if note.at[:16] not in wanted:
            continue
        words = NoteWords.of(note.content, note.at)
        own = strip_dates(own_description(note.context))
        later = later_of(note.context)
        evolutions = [v for v in note.history if v.reason == "evolution"]
        causes = [notes[v.cause] for v in evolutions if v.cause in notes]
        later_share = None
        if later and causes:
            cause = causes[-1]
            later_share = NoteWords.of(f"{cause.content} {note.content}", cause.at).grounded_share(later)
        rows.append({
            "index": wanted[note.at[:16]], "at": note.at[:16], "id": note.id, "context": note.context,
            "own_share": words.grounded_share(own), "later_share": later_share,
            "tags": note.tags, "tags_true": sum(term_holds(t, words) or topic_of(t, words) for t in note.tags),
            "keywords": note.keywords, "keywords_true": sum(term_holds(k, words) for k in note.keywords),
            "evolved": len(evolutions), "evolved_by": [c.at[:16] for c in causes]})
    return rows


def closer_to_another(memory, rows: list[dict], contexts: list[str]) -> list[int]:
    """Positions of the rows whose context is nearer (cosine) to another entry than to its own: an entry's
    nearness is the best of its whole text and each of its sentences (a page covers several subjects; a
    context is about one of them)."""
    import numpy as np

    from zettel_amem.core.text import sentences

    owner, texts = [], []
    for position, row in enumerate(rows):
        content = memory.store.get(row["id"]).content
        for piece in [content, *sentences(content)]:
            owner.append(position)
            texts.append(piece)
    units = np.asarray(memory.embedder.embed_passages(texts))
    context_vectors = np.asarray(memory.embedder.embed_passages(contexts))
    similarity = context_vectors @ units.T
    owner = np.asarray(owner)
    closer = []
    for i in range(len(rows)):
        best = {position: float(similarity[i][owner == position].max()) for position in range(len(rows))}
        if max(best, key=best.get) != i:
            closer.append(i)
    return closer


def labelled(rows: list[dict], labels_files: list[Path] | None, sealed: bool) -> dict | None:
    """The hand labels of the contexts this store holds, on the dev half (even positions) or the sealed one."""
    if not labels_files:
        return None
    files = [json.loads(path.read_text(encoding="utf-8")) for path in labels_files]
    judged = {(item["at"][:16], item["context"]): item["label"]  # a list, or {"about": …, "labels": [...]}
              for data in files for item in (data["labels"] if isinstance(data, dict) else data)}
    half = [r for r in rows if r["index"] % 2 == int(sealed)]
    found = [judged[(r["at"], r["context"])] for r in half if (r["at"], r["context"]) in judged]
    counts = {label: found.count(label) for label in LABELS}
    return {"half": "sealed" if sealed else "dev", "notes": len(half), "judged": len(found), **counts,
            "true_or_partly_pct": round(100 * (counts["true"] + counts["partly"]) / len(found), 1) if found else None,
            "true_pct": round(100 * counts["true"] / len(found), 1) if found else None}


def updates_rows(memory) -> list[dict]:
    """Every typed *updates* link (#36): the older passage, the newer passage that updates it, the words they
    were joined on; for labelling ("does the later passage change what the earlier one says?")."""
    from zettel_amem.amem.supersede import units

    notes = {n.id: n for n in memory.store.notes(memory.notebook)}
    texts = {pid: text for n in notes.values() for pid, text, _ in units(n)}
    rows = []
    for note in sorted(notes.values(), key=lambda n: n.at):
        for link in note.updated_by:
            rows.append({"older_at": note.at[:16], "older": texts.get(link.get("passage"), note.content),
                         "newer_at": notes[link["by"].split("-p")[0]].at[:16] if link["by"].split("-p")[0] in notes
                         else None, "newer": texts.get(link.get("by"), ""), "on": link.get("on", [])})
    return rows


def pct(part: float, whole: float) -> float | None:
    return round(100 * part / whole, 1) if whole else None


def summarise(memory, rows: list[dict], entries: list[tuple[str, str]], labels_files, sealed: bool) -> dict:
    from zettel_amem.amem.grounded import extractive_context

    extractive = [extractive_context(text, 100) for _at, text in (entries[r["index"]] for r in rows)]
    closer = closer_to_another(memory, rows, [r["context"] for r in rows])
    closer_bound = closer_to_another(memory, rows, extractive)
    evolved = [r["evolved"] for r in rows]
    later = [r["later_share"] for r in rows if r["later_share"] is not None]
    tags, keywords = sum(len(r["tags"]) for r in rows), sum(len(r["keywords"]) for r in rows)
    return {
        "notes": len(rows),
        "context_own_share_mean": round(statistics.mean(r["own_share"] for r in rows), 3),
        "contexts_fully_grounded_pct": pct(sum(r["own_share"] == 1.0 for r in rows), len(rows)),
        "contexts_under_half_pct": pct(sum(r["own_share"] < 0.5 for r in rows), len(rows)),
        "later_clauses": len(later), "later_share_mean": round(statistics.mean(later), 3) if later else None,
        "tags_true_pct": pct(sum(r["tags_true"] for r in rows), tags),
        "keywords_true_pct": pct(sum(r["keywords_true"] for r in rows), keywords),
        "closer_to_another_entry": [rows[i]["at"] for i in closer],
        "evolutions": sum(evolved), "notes_evolved": sum(e > 0 for e in evolved), "most_evolved": max(evolved),
        "notes_evolved_over_3": sum(e > 3 for e in evolved),
        "bound_extractive": {"contexts_fully_grounded_pct": 100.0,
                             "closer_to_another_entry": [rows[i]["at"] for i in closer_bound]},
        "labels": labelled(rows, labels_files, sealed),
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--diary", choices=sorted(DIARIES), default="long")
    parser.add_argument("--store", type=Path, required=True, help="where the built store is kept (built when missing)")
    parser.add_argument("--labels", type=Path, nargs="+",
                        help="hand labels of contexts (JSON lists of {at, context, label}), read together")
    parser.add_argument("--sealed", action="store_true", help="score the labels' sealed half (once, at the end)")
    parser.add_argument("--rows", type=Path, help="write every note's row here (JSON), for labelling")
    parser.add_argument("--updates", type=Path, help="write every typed updates link here (JSON), for labelling")
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args(argv)
    _today, entries = load_diary(DIARIES[args.diary][0])
    if not (args.store / "meta.json").exists():  # a store bench.diary_long built is measured as it is
        print(json.dumps(build(args.store, entries)), file=sys.stderr)
    from zettel_amem.memory import Memory

    memory = Memory(args.store)
    rows = note_rows(memory, entries)
    built = json.loads((args.store / BUILT).read_text(encoding="utf-8")) if (args.store / BUILT).exists() else {}
    summary = {"diary": args.diary, "built": built,
               **summarise(memory, rows, entries, args.labels, args.sealed)}
    if args.rows:
        args.rows.write_text(json.dumps(rows, ensure_ascii=False, indent=1), encoding="utf-8")
    if args.updates:
        links = updates_rows(memory)
        args.updates.write_text(json.dumps(links, ensure_ascii=False, indent=1), encoding="utf-8")
        summary["updates_links"] = len(links)
    if args.json:
        print(json.dumps(summary, ensure_ascii=False, indent=1))
    else:
        for key, value in summary.items():
            print(f"{key:>30}: {value}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
