"""Graph precision (#31): does the entity graph (L2) say only what the notes say?

    python -m bench.graph_precision --store /tmp/gp-store            # build (cached) and score
    python -m bench.graph_precision --store /tmp/gp-store --json     # the same, as JSON
    python -m bench.graph_precision --store /tmp/gp-v2 --replay /tmp/gp-store/llm-cache.json

Build: every entry of the journal goes in with its date (`Memory.add`, the path of `zk add --at`); the
notes get no LLM work (construction and links off: they do not feed the graph), then `Tiers.promote()`
runs, the code `zk process` runs after the notes: weekly episodes are closed, summarised and extracted
into the graph as shipped. Every model reply is kept in `<store>/llm-cache.json` (keyed by the exact
prompt); `--replay FILE` answers identical prompts from such a file, so a variant that changes only
what happens after the model (grounding, vocabulary, invalidation) costs no model call.

Score: the store's entities and relations against the hand-labelled gold (`bench/data/graph-gold.json`).
Names match by normalised key over the gold name and its aliases (Korean particles stripped); a
relation matches when both ends match a gold relation's ends and its predicate maps to the gold
predicate (`grounding.predicate_of`). Each episode (one ISO week) belongs to one split: weeks
alternate tune / heldout, so a storyline's facts are not split inside a week. Precision is over what
the store holds from a split's episodes; recall over the gold items of that split.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import sys
import time
from dataclasses import asdict
from datetime import date
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
JOURNAL = HERE / "data" / "journal-year.txt"
GOLD = HERE / "data" / "graph-gold.json"


def log(message: str) -> None:
    print(message, file=sys.stderr, flush=True)


def split_of(day: str) -> str:
    """tune / heldout by ISO week parity: one week is one journal episode, so no week is in both."""
    return "tune" if date.fromisoformat(day[:10]).isocalendar()[1] % 2 == 0 else "heldout"


def read_journal(path: Path, limit: int | None = None) -> list[tuple[str, str]]:
    """`[YYYY-MM-DD HH:MM] text` lines -> (iso time, text)."""
    rows = []
    for line in path.read_text(encoding="utf-8").splitlines():
        if line.startswith("[") and len(line) > 19:
            rows.append((line[1:17].replace(" ", "T"), line[19:].strip()))
    return rows[:limit] if limit else rows


class ReplayLLM:
    """Answers a prompt seen before from the cache; otherwise asks the real model (loaded on first need)
    and records the reply. Replayed calls count as calls with zero tokens and zero seconds."""

    name = "replay"

    def __init__(self, load, cache: Path, replay: Path | None = None):
        self._load, self._llm, self.cache_path = load, None, cache
        self.cache: dict[str, Any] = {}
        for source in (replay, cache):
            if source and source.exists():
                self.cache.update(json.loads(source.read_text(encoding="utf-8")))
        self.hits = self.misses = 0
        from zettel_amem.core.models import Usage

        self._last = Usage()

    @property
    def last_usage(self):
        return self._last

    def complete_json(self, system: str, user: str, schema: dict[str, Any], max_tokens: int):
        from zettel_amem.core.models import Usage

        key = hashlib.sha256(json.dumps([system, user, schema, max_tokens], sort_keys=True).encode()).hexdigest()
        if key in self.cache:
            self.hits += 1
            self._last = Usage(calls=1)
            return self.cache[key], self._last
        if self._llm is None:
            self._llm = self._load()
        data, usage = self._llm.complete_json(system, user, schema, max_tokens)
        self.misses += 1
        self.cache[key] = data
        self.cache_path.write_text(json.dumps(self.cache, ensure_ascii=False), encoding="utf-8")
        self._last = usage
        return data, usage

    def stream(self, system: str, user: str, max_tokens: int):
        if self._llm is None:
            self._llm = self._load()
        return self._llm.stream(system, user, max_tokens)


def seed_from(store: Path, seed_home: Path) -> None:
    """Start from a copy of another store built from the same journal (its notes and episode summaries,
    e.g. the journal-QA benchmark's): its graph is removed and its episodes go back to 'summarised', so
    the build runs extraction only. Summaries are the model's output for identical prompts either way."""
    import shutil

    from zettel_amem.core.models import EPISODE_READY, EPISODE_SUMMARISED
    from zettel_amem.memory import Memory
    from zettel_amem.storage.tier_store import TierStore

    shutil.copytree(seed_home, store / "home")
    memory = Memory(store / "home")
    tiers = TierStore(lambda: memory.store)
    episodes = [e for e in tiers.episodes(memory.notebook, with_vector=True) if e.status == EPISODE_READY]
    for episode in episodes:
        episode.status = EPISODE_SUMMARISED
    tiers.put_episodes(episodes)
    tiers.delete_relations([r.id for r in tiers.relations(memory.notebook)])
    tiers.delete_entities([e.id for e in tiers.entities(memory.notebook)])
    (store / "home" / "graph-checks.json").unlink(missing_ok=True)
    (store / "added").write_text(f"seeded from {seed_home}\n", encoding="utf-8")


class OutOfTime(Exception):
    """The build's `--minutes` are spent: the committed episodes stay, the next run resumes."""


def build(store: Path, journal: Path, model: str, threads: int, replay: Path | None, limit: int | None,
          minutes: float | None = None, settings: dict | None = None, seed: Path | None = None) -> dict | None:
    """The journal through the shipped promotion chain, into `store` (kept: a rerun only scores). With
    `minutes`, stops after the episode that passes them and returns None; a rerun resumes."""
    from zettel_amem.memory import Memory
    from zettel_amem.tiers.service import Tiers

    done = store / "build.json"
    if done.exists():
        return json.loads(done.read_text(encoding="utf-8"))
    store.mkdir(parents=True, exist_ok=True)
    if seed and not (store / "added").exists():
        seed_from(store, seed)
    memory = Memory(store / "home")
    memory.settings.auto_worker = False
    memory.settings.construct = memory.settings.link = False  # the notes' own LLM steps feed no graph
    memory.settings.llm_model = model
    for key, value in (settings or {}).items():  # a variant: graph_types, graph_support
        setattr(memory.settings, key, value)

    def load():
        from bench.locomo import load_model

        return load_model(model, threads)

    llm = ReplayLLM(load, store / "llm-cache.json", replay)
    memory.use_llm(llm)
    if not (store / "added").exists():
        for at, text in read_journal(journal, limit):
            memory.add(text, at=at)
        memory.process_pending()
        (store / "added").write_text("", encoding="utf-8")
    progress_path = store / "episodes.jsonl"
    started = time.perf_counter()

    def progress(result, index, total):
        with open(progress_path, "a", encoding="utf-8") as out:
            out.write(json.dumps(asdict(result), ensure_ascii=False) + "\n")
        log(f"  episode {index}/{total}: {result.entities} entities, {result.relations} relations, "
            f"{result.seconds:.1f}s")
        if minutes and time.perf_counter() - started > minutes * 60 and index < total:
            raise OutOfTime

    try:
        Tiers(memory).promote(progress)
    except OutOfTime:
        log("out of time: run again to resume")
        return None
    rows = [json.loads(line) for line in progress_path.read_text(encoding="utf-8").splitlines()]
    results = list({r["id"]: r for r in rows}.values())
    seconds = sum(r["seconds"] for r in results)
    report = {"model": model, "settings": settings or {}, "replayed_calls": llm.hits, "model_calls": llm.misses,
              "episodes": len(results), "model_seconds": round(seconds, 1),
              "seconds_per_episode": round(seconds / max(len(results), 1), 2),
              "llm_calls": sum(r["llm_calls"] for r in results), "errors": sum(bool(r["error"]) for r in results),
              "results": results}
    done.write_text(json.dumps(report, ensure_ascii=False, indent=1), encoding="utf-8")
    return report


# -- scoring ------------------------------------------------------------------------------------------
def _keys(name: str) -> set[str]:
    from zettel_amem.core.text import name_key
    from zettel_amem.tiers.grounding import strip_particles

    return {k for k in (name_key(name), name_key(strip_particles(name))) if k}


class Gold:
    def __init__(self, data: dict):
        self.entities = data["entities"]
        self.relations = data["relations"]
        self.symmetric = set(data.get("symmetric", []))
        self.by_key: dict[str, int] = {}
        for index, entity in enumerate(self.entities):
            for name in [entity["name"], *entity.get("aliases", [])]:
                for key in _keys(name):
                    self.by_key.setdefault(key, index)
        for rel in self.relations:
            for end in ("subject", "object"):
                if not (_keys(rel[end]) & set(self.by_key)):
                    raise ValueError(f"gold relation end '{rel[end]}' is not a gold entity")

    def entity(self, name: str) -> int | None:
        for key in _keys(name):
            if key in self.by_key:
                return self.by_key[key]
        return None

    def relation(self, subject: str, predicate: str | None, obj: str) -> list[int]:
        """Indexes of the gold relations with these ends (either way round for symmetric predicates) and,
        when `predicate` is given, this predicate."""
        s, o = self.entity(subject), self.entity(obj)
        if s is None or o is None:
            return []
        out = []
        for index, rel in enumerate(self.relations):
            if predicate is not None and rel["predicate"] != predicate:
                continue
            ends = (self.entity(rel["subject"]), self.entity(rel["object"]))
            if ends == (s, o) or (rel["predicate"] in self.symmetric and ends == (o, s)):
                out.append(index)
        return out


def read_graph(home: Path) -> dict:
    """Entity mentions (entity, episode) and relations of the store, with canonical names and splits."""
    from zettel_amem.core.models import canonical_map
    from zettel_amem.memory import Memory
    from zettel_amem.storage.tier_store import TierStore

    memory = Memory(home)
    store = TierStore(lambda: memory.store)
    episodes = {e.id: e for e in store.episodes(memory.notebook)}
    rows = store.entities(memory.notebook)
    canonical = canonical_map(rows)
    mentions = [{"name": e.name, "type": e.type, "split": split_of(episodes[i].start), "episode": i}
                for e in rows for i in e.episodes if i in episodes]
    relations = []
    for rel in store.relations(memory.notebook):
        if rel.subject not in canonical or rel.object not in canonical:
            continue
        relations.append({"id": rel.id, "subject": canonical[rel.subject].name, "predicate": rel.predicate,
                          "object": canonical[rel.object].name, "split": split_of(rel.valid_from),
                          "valid_from": rel.valid_from[:10], "invalid_from": (rel.invalid_from or "")[:10] or None})
    from zettel_amem.tiers.grounding import load_check_counts

    return {"mentions": mentions, "relations": relations, "checks": load_check_counts(home)}


def _ratio(hit: int, total: int) -> float | None:
    return round(hit / total, 3) if total else None


def _matches(gold: Gold, rel: dict) -> list[int]:
    """Gold relations a stored one states: its predicate mapped to the vocabulary (ends swapped for an
    inverse wording such as "is replaced by")."""
    from zettel_amem.tiers.grounding import map_predicate

    mapped = map_predicate(rel["predicate"])
    if mapped is None:
        return []
    subject, obj = (rel["object"], rel["subject"]) if mapped[1] else (rel["subject"], rel["object"])
    return gold.relation(subject, mapped[0].replace(" ", "_"), obj)


def score(graph: dict, gold: Gold) -> dict:
    out: dict[str, Any] = {}
    for split in ("tune", "heldout"):
        mentions = [m for m in graph["mentions"] if m["split"] == split]
        ok = [m for m in mentions if gold.entity(m["name"]) is not None]
        typed = [m for m in ok if gold.entities[gold.entity(m["name"])]["type"] == m["type"]]
        found = {gold.entity(m["name"]) for m in ok}
        gold_entities = [i for i, e in enumerate(gold.entities) if split_of(e["first"]) == split]
        rels = [r for r in graph["relations"] if r["split"] == split]
        right = [r for r in rels if _matches(gold, r)]
        ends = [r for r in rels if gold.relation(r["subject"], None, r["object"])
                or gold.relation(r["object"], None, r["subject"])]
        matched = {i for r in right for i in _matches(gold, r)}
        gold_rels = [i for i, r in enumerate(gold.relations) if r["split"] == split]
        out[split] = {
            "entity_mentions": len(mentions), "entity_precision": _ratio(len(ok), len(mentions)),
            "entity_type_accuracy": _ratio(len(typed), len(ok)),
            "entity_recall": _ratio(len(found & set(gold_entities)), len(gold_entities)),
            "relations": len(rels), "relation_precision": _ratio(len(right), len(rels)),
            "relation_ends_precision": _ratio(len(ends), len(rels)),
            "relation_recall": _ratio(len(matched & set(gold_rels)), len(gold_rels)),
            "wrong_relations": [f"{r['subject']} | {r['predicate']} | {r['object']}" for r in rels if r not in right],
            "wrong_entities": sorted({m["name"] for m in mentions if m not in ok}),
        }
    out["invalidation"] = invalidations(graph, gold)
    return out


def invalidations(graph: dict, gold: Gold) -> dict:
    """An invalidated relation is right when it matches a gold relation that ended (valid_until set),
    invalidated within two weeks of that end (episodes are weekly)."""
    closed = [r for r in graph["relations"] if r["invalid_from"]]
    right = []
    for rel in closed:
        for index in _matches(gold, rel):
            until = gold.relations[index].get("valid_until")
            last = gold.relations[index].get("until_window_end") or until
            ended = date.fromisoformat(rel["invalid_from"])
            if until and (date.fromisoformat(until) - ended).days <= 14 \
                    and (ended - date.fromisoformat(last)).days <= 14:
                right.append(rel)
                break
    ended = [r for r in gold.relations if r.get("valid_until")]
    return {"invalidated": len(closed), "precision": _ratio(len(right), len(closed)),
            "gold_ended": len(ended), "recall": _ratio(len(right), len(ended)),
            "wrong": [f"{r['subject']} | {r['predicate']} | {r['object']} (from {r['invalid_from']})"
                      for r in closed if r not in right]}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--store", type=Path, required=True, help="folder of the built store (reused if built)")
    parser.add_argument("--journal", type=Path, default=JOURNAL)
    parser.add_argument("--gold", type=Path, default=GOLD)
    parser.add_argument("--llm", default="qwen2.5-0.5b", help="bundled model name or .gguf path")
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--replay", type=Path, help="an llm-cache.json whose replies answer identical prompts")
    parser.add_argument("--limit", type=int, help="only the first N entries (a quick check)")
    parser.add_argument("--types", help="graph_types for this build (default: the shipped setting)")
    parser.add_argument("--support", choices=["sentence", "entry"], help="graph_support for this build")
    parser.add_argument("--cues", choices=["on", "off"], help="graph_cues for this build")
    parser.add_argument("--rule-predicate", choices=["on", "off"], help="graph_rule_predicate for this build")
    parser.add_argument("--writer", choices=["on", "off"], help="graph_writer for this build")
    parser.add_argument("--carry", choices=["on", "off"], help="graph_carry for this build")
    parser.add_argument("--roles", choices=["on", "off"], help="graph_roles for this build")
    parser.add_argument("--end-types", help="graph_end_types for this build ('' for none)")
    parser.add_argument("--seed", type=Path, help="start from a copy of this home (same journal, summarised)")
    parser.add_argument("--graph", choices=["on", "off"], help="the graph setting (SmolLM2's is off by default)")
    parser.add_argument("--related-only", action="store_true", help="graph_related_only for this build")
    parser.add_argument("--minutes", type=float, help="stop building after this many minutes (rerun resumes)")
    parser.add_argument("--json", action="store_true", help="print the report as JSON")
    args = parser.parse_args(argv)
    try:
        gold = Gold(json.loads(args.gold.read_text(encoding="utf-8")))
    except (OSError, ValueError, KeyError) as exc:
        print(f"cannot read the gold file {args.gold}: {exc}", file=sys.stderr)
        return 2
    variant = {k: v for k, v in (("graph_types", args.types), ("graph_support", args.support)) if v}
    if args.cues:
        variant["graph_cues"] = args.cues == "on"
    if args.rule_predicate:
        variant["graph_rule_predicate"] = args.rule_predicate == "on"
    if args.writer:
        variant["graph_writer"] = args.writer == "on"
    if args.carry:
        variant["graph_carry"] = args.carry == "on"
    if args.roles:
        variant["graph_roles"] = args.roles == "on"
    if args.end_types is not None:
        variant["graph_end_types"] = args.end_types
    if args.graph:
        variant["graph"] = args.graph == "on"
    if args.related_only:
        variant["graph_related_only"] = True
    built = build(args.store, args.journal, args.llm, args.threads, args.replay, args.limit, args.minutes, variant,
                  args.seed)
    if built is None:
        return 3
    report = {"build": {k: v for k, v in built.items() if k != "results"},
              **score(read_graph(args.store / "home"), gold)}
    report["checks"] = read_graph(args.store / "home")["checks"]
    if args.json:
        print(json.dumps(report, ensure_ascii=False, indent=1))
        return 0
    b = report["build"]
    print(f"{b['model']}: {b['episodes']} episodes, {b['seconds_per_episode']} s/episode, {b['llm_calls']} calls")
    for split in ("tune", "heldout"):
        s = report[split]
        print(f"{split:8} entities P={s['entity_precision']} R={s['entity_recall']} (n={s['entity_mentions']})  "
              f"relations P={s['relation_precision']} R={s['relation_recall']} (n={s['relations']}, "
              f"ends P={s['relation_ends_precision']})")
    inv = report["invalidation"]
    print(f"invalidation P={inv['precision']} R={inv['recall']} (n={inv['invalidated']})")
    print(f"dropped by the checks: {report['checks']}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
