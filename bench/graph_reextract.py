"""Extract a built store's graph again with the code at hand (#36: the graph on page-long entries).

    flock /tmp/zk-cpu.lock python -m bench.graph_reextract SOURCE_HOME COPY --cache replies.json

Copies SOURCE_HOME to COPY, forgets the copy's entities and relations, and runs what `zk process` runs for
every summarised episode again (`Promotion.process_episode`). The model's replies are kept in `--cache`: a
second run with the same cache (another version of the checks) asks the model only what it did not ask
before, so two versions are compared on the same replies. Prints every entity (type, name, what it was
merged into and why) and the relations, then a JSON summary line.
"""

from __future__ import annotations

import argparse
import json
import shutil
from pathlib import Path


def reextract(source: Path, copy: Path, cache: Path, model: str = "qwen2.5-0.5b", threads: int = 2) -> dict:
    from bench.graph_precision import ReplayLLM
    from zettel_amem.core.models import EPISODE_READY, EPISODE_SUMMARISED
    from zettel_amem.memory import Memory
    from zettel_amem.storage.tier_store import TierStore
    from zettel_amem.tiers.promotion import Promotion
    from zettel_amem.tiers.sessions import Sessions

    shutil.rmtree(copy, ignore_errors=True)
    shutil.copytree(source, copy)
    memory = Memory(copy)
    memory.settings.auto_worker = False

    def load():
        from bench.locomo import load_model

        return load_model(model, threads)

    llm = ReplayLLM(load, cache)
    memory.use_llm(llm)
    store, notebook = TierStore(lambda: memory.store), memory.notebook
    store.delete_entities([e.id for e in store.entities(notebook)])
    store.delete_relations([r.id for r in store.relations(notebook)])
    episodes = store.episodes(notebook)
    for episode in episodes:
        if episode.status == EPISODE_READY:
            episode.status = EPISODE_SUMMARISED  # the summary stays; only the extraction runs again
    store.put_episodes(episodes)
    promotion = Promotion(memory, store, Sessions(memory, store))
    for number, episode in enumerate(episodes, 1):
        result = promotion.process_episode(episode.id)
        print(f"  episode {number}/{len(episodes)}: {result.entities} entities, {result.relations} relations"
              f"{', ' + result.error if result.error else ''}", flush=True)
    entities = store.entities(notebook)
    by_id = {e.id: e for e in entities}
    for entity in sorted(entities, key=lambda e: (e.type, e.name)):
        merged = f" -> {by_id[entity.merged_into].name} ({entity.merge_reason})" if entity.merged_into in by_id else ""
        print(f"  {entity.type:12} {entity.name}{merged}")
    relations = store.relations(notebook)
    for rel in relations:
        if rel.subject in by_id and rel.object in by_id:
            print(f"  {by_id[rel.subject].name} | {rel.predicate} | {by_id[rel.object].name} "
                  f"({rel.valid_from[:10]} .. {(rel.invalid_from or '')[:10]})")
    return {"episodes": len(episodes), "entities": len(entities),
            "canonical": sum(1 for e in entities if not e.merged_into), "relations": len(relations),
            "replayed_calls": llm.hits, "model_calls": llm.misses}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("source", type=Path, help="a built home (e.g. bench.diary_long's --store)")
    parser.add_argument("copy", type=Path, help="where the copy goes (replaced)")
    parser.add_argument("--cache", type=Path, required=True, help="the model's replies, read and added to")
    parser.add_argument("--llm", default="qwen2.5-0.5b")
    parser.add_argument("--threads", type=int, default=2)
    args = parser.parse_args()
    print(json.dumps(reextract(args.source, args.copy, args.cache, args.llm, args.threads)))


if __name__ == "__main__":
    main()
