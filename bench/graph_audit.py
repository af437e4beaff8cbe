"""Audit a store's graph against its own notes (#31): which entities are not short noun phrases written
in the notes of their episodes, and which relations no sentence (and no note) of their episode supports.

    python -m bench.graph_audit HOME            # prints the problems; exit 1 if any
    python -m bench.graph_audit HOME --json

The same checks `grounding.py` runs before storing, run again on what was stored, so a graph built by an
older version (or changed by hand) can be checked. The writer's node ("나"/"I") stands for the first
person the notes leave out: it needs no sentence that names it. A role or a stated change
(`graph_roles`, `graph_carry`) may name its project in another sentence of the same note ("회사 프로젝트
'온비서' 킥오프. PM은 지수 님."): such a relation is listed as without a sentence, but only one that no note
supports is a problem (exit 1).
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path


def audit(home: Path) -> dict:
    from zettel_amem.core.text import one_line
    from zettel_amem.memory import Memory
    from zettel_amem.storage.tier_store import TierStore
    from zettel_amem.tiers.grounding import WRITERS, is_noun_phrase, occurs, supporting_sentence
    from zettel_amem.tiers.sessions import Sessions

    memory = Memory(home)
    store = TierStore(lambda: memory.store)
    sessions = Sessions(memory, store)
    notes = {e.id: "\n".join(one_line(t.content) for t in sessions.turns(e.session_id, e.notebook))
             for e in store.episodes(memory.notebook)}
    names = {e.id: e for e in store.entities(memory.notebook)}
    writer = set(WRITERS.values())
    bad_entities = []
    for entity in names.values():
        source = "\n".join(notes.get(i, "") for i in entity.episodes)
        if entity.name not in writer and not (is_noun_phrase(entity.name, source) and occurs(entity.name, source)):
            bad_entities.append(entity.name)
    relations, unsupported, no_note = store.relations(memory.notebook), [], []
    for rel in relations:
        subject, obj = names[rel.subject].name, names[rel.object].name
        source = notes.get(rel.episode_id, "")
        supported = (subject in writer and any(occurs(obj, line) for line in source.splitlines())) \
            or supporting_sentence(subject, obj, source) is not None
        if not supported:
            unsupported.append(f"{subject} | {rel.predicate} | {obj}")
            if subject in writer or supporting_sentence(subject, obj, source, "entry") is None:
                no_note.append(f"{subject} | {rel.predicate} | {obj}")
    return {"entities": len(names), "relations": len(relations), "not_noun_phrases_of_the_notes": sorted(bad_entities),
            "relations_without_a_sentence": unsupported, "relations_without_a_note": no_note}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("home", type=Path, help="the store's home (ZK_HOME)")
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args(argv)
    if not args.home.is_dir():
        print(f"no store at {args.home}", file=sys.stderr)
        return 2
    report = audit(args.home)
    if args.json:
        print(json.dumps(report, ensure_ascii=False, indent=1))
    else:
        print(f"{report['entities']} entities, {report['relations']} relations")
        for name in report["not_noun_phrases_of_the_notes"]:
            print(f"entity not a noun phrase of its notes: {name}")
        for rel in report["relations_without_a_sentence"]:
            no_note = rel in report["relations_without_a_note"]
            where = "sentence or note" if no_note else "sentence (one note holds both)"
            print(f"relation without a supporting {where}: {rel}")
    return int(bool(report["not_noun_phrases_of_the_notes"] or report["relations_without_a_note"]))


if __name__ == "__main__":
    raise SystemExit(main())
