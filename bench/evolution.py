"""#53 item 12: how often memory evolution happens where a reader expects it, with the default settings.

    flock /tmp/zk-cpu.lock python -m bench.evolution [--seeds 0 1 2] [--chains knee-en job-ko] [--json]
                                                     [--set link_min_similarity=0 evolve_max_times=9]

`bench/data/evolution-chains.json` holds short note chains in Korean and English. In a *change* chain a later
note changes what an earlier one means (a knee injury puts a race in doubt, a job offer ends a job, a visit is
cancelled); its `changes` lists those earlier notes. In a *no-change* chain (two unrelated notes, or a later
run that changes nothing) no note should evolve. Each chain gets a fresh home with the default settings (no
config file is read), and its notes are added and processed in order on the real pipeline with the bundled
model; once per id seed, the note ids being drawn from a seeded generator, so that a decision which depends
on the random ids shows up as a difference between seeds.

Reported per chain and seed: the notes evolved (chain positions), each note's nearest cosine, the proposals
the model made, the rewrites the topic guard refused, the link calls skipped as "no similar neighbour"; and
each rewrite: old and new context, whether it keeps the note's language, shares a word naming a thing with the
note's own text or old context (on topic), and holds the caps. Summed up: change chains with an expected
note evolved, expected notes evolved, no-change chains with any evolution (should be 0), sensible rewrites,
and whether every seed gave the same decisions. `--set NAME=VALUE` runs off the defaults, to find what
stops evolution (not for the reported numbers).
"""

from __future__ import annotations

import argparse
import json
import os
import random
import tempfile
import uuid
from contextlib import contextmanager
from pathlib import Path

CHAINS = Path(__file__).parent / "data" / "evolution-chains.json"


class Recording:
    """The model, with each link call's reply kept (what the model proposed before the guard)."""

    def __init__(self, llm):
        self.llm, self.replies = llm, []

    def __getattr__(self, name):
        return getattr(self.llm, name)

    def complete_json(self, system, user, schema, max_tokens):
        data, usage = self.llm.complete_json(system, user, schema, max_tokens)
        if schema.get("title") == "link":
            self.replies.append(data)
        return data, usage


@contextmanager
def seeded_ids(seed: int):
    """Note ids drawn from `random.Random(seed)` while the chain is added (uuid4 everywhere, put back after)."""
    rng, original = random.Random(seed), uuid.uuid4
    uuid.uuid4 = lambda: uuid.UUID(int=rng.getrandbits(128), version=4)
    try:
        yield
    finally:
        uuid.uuid4 = original


def rewrite_row(note, position: int, settings) -> dict:
    """One applied evolution of a chain note, with the checks a reader would make."""
    from zettel_amem.amem.grounded import own_description
    from zettel_amem.amem.supersede import names_a_thing
    from zettel_amem.core.prompts import language_of
    from zettel_amem.core.words import subject_terms

    version = next(v for v in note.history if v.reason == "evolution")
    old = version.changes.get("context", {}).get("old", note.context)
    new = version.changes.get("context", {}).get("new", note.context)
    things = {w for w in subject_terms(new) if names_a_thing(w)}  # whole words, particles stripped: no bigrams
    return {"note": position, "old": old, "new": new, "tags": note.tags,
            "same_language": language_of(new) == language_of(note.content),
            "shares_word": bool(things & set(subject_terms(f"{note.content} {old}"))),
            # the note's own description is still there, whole (#60): evolution adds, never replaces
            "keeps_own": bool(old) and own_description(new) == own_description(old),
            "within_caps": len(note.context) <= settings.max_context_chars and len(note.tags) <= settings.max_tags}


def keeping_nearest(find, kept: list[float]):
    """The pipeline's candidate search, keeping each note's nearest cosine (to see what the link threshold did)."""
    def find_and_keep(note):
        found = find(note)
        kept.append(round(max((score for _, score in found), default=0.0), 3))
        return found

    return find_and_keep


def run_chain(chain: dict, embedder, llm, seed: int, overrides: dict | None = None) -> dict:
    from zettel_amem.memory import Memory

    recording = Recording(llm)
    with tempfile.TemporaryDirectory() as home, seeded_ids(seed):
        memory = Memory(Path(home), llm=recording, embedder=embedder)
        for name, value in (overrides or {}).items():  # --set: to find what stops evolution, not for the numbers
            setattr(memory.settings, name, value)
        ids, skipped, refused, links, nearest = [], 0, 0, [], []
        memory.pipeline.link_candidates = keeping_nearest(memory.pipeline.link_candidates, nearest)
        for at, text in chain["notes"]:
            note = memory.add(text, at=at)
            result = memory.process(note.id)
            skipped += bool(ids) and result.skipped == "no similar neighbour"  # the first note has no neighbour
            ids.append(note.id)
            refused += len(result.refused)
            links.append(sorted(ids.index(i) for i in result.links if i in ids))
        notes = [memory.store.get(i) for i in ids]
        evolved = [p for p, n in enumerate(notes) if any(v.reason == "evolution" for v in n.history)]
        rewrites = [rewrite_row(notes[p], p, memory.settings) for p in evolved]
    proposed = sum(len(r.get("updates") or []) for r in recording.replies)
    return {"chain": chain["id"], "seed": seed, "evolved": evolved, "links": links,
            "nearest": nearest, "link_calls": len(recording.replies), "skipped": skipped, "proposed": proposed,
            "refused": refused, "rewrites": rewrites, "replies": recording.replies}


def summary(rows: list[dict], chains: list[dict]) -> dict:
    changes = {c["id"]: set(c["changes"]) for c in chains}
    change_rows = [r for r in rows if changes[r["chain"]]]
    quiet_rows = [r for r in rows if not changes[r["chain"]]]
    rewrites = [w for r in rows for w in r["rewrites"]]
    decisions: dict[str, set] = {}
    for r in rows:
        decisions.setdefault(r["chain"], set()).add(json.dumps([r["evolved"], r["links"],
                                                                 [w["new"] for w in r["rewrites"]]]))
    return {
        "change_chains_evolved": f"{sum(bool(set(r['evolved']) & changes[r['chain']]) for r in change_rows)}"
                                 f"/{len(change_rows)}",
        "expected_notes_evolved": f"{sum(len(set(r['evolved']) & changes[r['chain']]) for r in change_rows)}"
                                  f"/{sum(len(changes[r['chain']]) for r in change_rows)}",
        "no_change_chains_evolved": f"{sum(bool(r['evolved']) for r in quiet_rows)}/{len(quiet_rows)}",
        "rewrites": len(rewrites),
        "rewrites_sensible": sum(w["same_language"] and w["shares_word"] and w["within_caps"] for w in rewrites),
        "rewrites_keeping_their_own_description": sum(w.get("keeps_own", False) for w in rewrites),
        "proposed": sum(r["proposed"] for r in rows), "refused": sum(r["refused"] for r in rows),
        "link_calls": sum(r["link_calls"] for r in rows), "skipped": sum(r["skipped"] for r in rows),
        "same_decisions_on_every_seed": sorted(c for c, d in decisions.items() if len(d) == 1),
        "decisions_differ_by_seed": sorted(c for c, d in decisions.items() if len(d) > 1),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seeds", type=int, nargs="+", default=[0, 1])
    parser.add_argument("--chains", nargs="*", help="chain ids (default: all)")
    parser.add_argument("--model", default="qwen2.5-0.5b")
    parser.add_argument("--json", action="store_true", help="every row as JSON, then the summary")
    parser.add_argument("--set", nargs="*", default=[], metavar="NAME=VALUE",
                        help="settings off their defaults (a diagnosis, e.g. link_min_similarity=0 evolve_max_times=9)")
    args = parser.parse_args()
    overrides = {name: json.loads(value) for name, value in (pair.split("=", 1) for pair in args.set)}
    os.environ["ZK_CONFIG_DIR"] = tempfile.mkdtemp()  # the defaults: no config file of the user's is read
    from zettel_amem.backends.embed import load_embedder
    from zettel_amem.backends.llm.llama import load_llm

    chains = [c for c in json.loads(CHAINS.read_text(encoding="utf-8"))["chains"]
              if not args.chains or c["id"] in args.chains]
    embedder, llm = load_embedder(), load_llm(args.model)
    rows = []
    for chain in chains:
        for seed in args.seeds:
            rows.append(row := run_chain(chain, embedder, llm, seed, overrides))
            print(f"{row['chain']:14} seed {seed}: evolved {row['evolved']} links {row['links']} nearest "
                  f"{row['nearest']} calls "
                  f"{row['link_calls']} skipped {row['skipped']} proposed {row['proposed']} refused {row['refused']}",
                  flush=True)
            for w in row["rewrites"]:
                print(f"    [{w['note']}] {w['old']!r} -> {w['new']!r} tags {w['tags']}", flush=True)
    result = summary(rows, chains)
    print(json.dumps({"rows": rows, "summary": result} if args.json else result, ensure_ascii=False, indent=1))


if __name__ == "__main__":
    main()
