"""Semantic tier: entities and relations from an episode summary, deduplicated, valid over time.

Two LLM tasks, both schema-constrained:
- EXTRACT (one call per episode): entities with types, and subject-predicate-object relations, then
  checked against the episode's notes (grounding.py): clauses, names the notes do not hold, predicates
  outside the vocabulary and relations no sentence supports are dropped and counted.
- SAME (only when unsure): is a new name the same entity as an existing one? Names that share a
  normalised key are the same without asking; a romanised match ("온비서" / "Onbiseo") or a very close
  name embedding is merged without asking; a middling similarity asks the model.
Time needs no model (#31: the 0.5B model's OUTDATED answers ended true facts): a newer checked fact with
the same subject and a functional predicate ends the older one (`conflicts`); it gets `invalid_from`,
never deleted.
The orchestration (store reads and writes, embeddings) lives in `promotion.py`.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from ..backends.llm import LLM, LLMError, salvage_json
from ..core.models import Entity, Relation, Usage
from ..core.prompts import Prompts, language_of
from ..core.text import clip, name_key, one_line, romanise, sound_key
from ..core.words import kin_group
from .grounding import ENTITY_TYPES, FUNCTIONAL, VOCABULARY, WRITERS, Checked, Rules, check

NAME_CHARS = 40
PREDICATE_CHARS = 30
MAX_ENTITIES = 8
MAX_RELATIONS = 8
# Names may be written in Latin letters inside Korean text (PostgreSQL), so names allow both scripts,
# but never ideographs or kana, into which a small model drifts.
_NAME = {"type": "string", "pattern": f'^[^"\\\\\u3040-\u30ff\u3400-\u9fff]{{1,{NAME_CHARS}}}$'}


@dataclass
class Extraction:
    entities: list[tuple[str, str]] = field(default_factory=list)  # (name, type)
    relations: list[tuple[str, str, str]] = field(default_factory=list)  # (subject, predicate, object)


def extract_schema() -> dict[str, Any]:
    # The predicate is one of the closed vocabulary (#31): the grammar lets the model write nothing else.
    predicate = {"type": "string", "enum": list(VOCABULARY)}
    return {
        "title": "extract",
        "type": "object",
        "properties": {
            "entities": {"type": "array", "maxItems": MAX_ENTITIES, "items": {
                "type": "object", "properties": {"name": _NAME, "type": {"type": "string", "enum": list(ENTITY_TYPES)}},
                "required": ["name", "type"]}},
            "relations": {"type": "array", "maxItems": MAX_RELATIONS, "items": {
                "type": "object", "properties": {"subject": _NAME, "predicate": predicate, "object": _NAME},
                "required": ["subject", "predicate", "object"]}},
        },
        "required": ["entities", "relations"],
    }


def clean_extraction(data: dict[str, Any]) -> Extraction:
    """Drop blanks and repeats; a relation's ends become entities (type other) if the model forgot them."""
    out = Extraction()
    keys: dict[str, int] = {}
    for item in data.get("entities") or []:
        if not isinstance(item, dict):
            continue
        name = clip(one_line(str(item.get("name", ""))).strip(" .,;:"), NAME_CHARS, ellipsis="")
        kind = item.get("type") if item.get("type") in ENTITY_TYPES else "other"
        if name_key(name) and name_key(name) not in keys:
            keys[name_key(name)] = len(out.entities)
            out.entities.append((name, kind))
    seen: set[tuple[str, str, str]] = set()
    for item in data.get("relations") or []:
        if not isinstance(item, dict):
            continue
        subject, obj = (clip(one_line(str(item.get(k, ""))).strip(" .,;:"), NAME_CHARS, ellipsis="")
                        for k in ("subject", "object"))
        predicate = clip(one_line(str(item.get("predicate", ""))).strip(" .,;:"), PREDICATE_CHARS, ellipsis="")
        if not (name_key(subject) and name_key(obj) and predicate) or name_key(subject) == name_key(obj):
            continue
        triple = (name_key(subject), name_key(predicate), name_key(obj))
        if triple in seen:
            continue
        seen.add(triple)
        for name in (subject, obj):
            if name_key(name) not in keys:
                keys[name_key(name)] = len(out.entities)
                out.entities.append((name, "other"))
        out.relations.append((subject, predicate, obj))
    return out


def extract(llm: LLM, prompts: Prompts, summary: str, when: str, source: str = "",
            types: frozenset[str] = frozenset(ENTITY_TYPES), rules: Rules = Rules(),
            related: bool = False) -> tuple[Checked, Usage]:
    """Entities and relations of an episode, read by the model from its summary and then checked against
    `source`, the episode's own notes (grounding.py): what the notes do not say is dropped and counted."""
    user = prompts.render("extract", language=language_of(summary), when=when[:10], facts=summary)
    try:
        data, usage = llm.complete_json(prompts.raw("extract_system").strip(), user, extract_schema(), max_tokens=320)
    except LLMError as exc:  # cut off by the token limit: the entities and relations it finished are kept
        data = salvage_json(exc.partial) if exc.partial else None
        if data is None or exc.usage is None:
            raise
        usage = exc.usage
    found = clean_extraction(data)
    return check(found.entities, found.relations, source or summary, types, rules, related), usage


# -- deduplication ------------------------------------------------------------------------------
def same_by_spelling(a: str, b: str) -> str | None:
    """Why two names are the same entity without asking anyone, or None: identical keys ("온 비서" =
    "온비서"), identical romanised keys ("온비서" = "Onbiseo"), the same sound without titles ("준호 씨" =
    "Junho"; four letters at least), the same family word ("Mom" = "엄마"), or the writer in either
    language ("I" = "나")."""
    if name_key(a) == name_key(b):
        return "same name"
    if romanise(name_key(a)) == romanise(name_key(b)):
        return "romanisation"
    if len(sound_key(a)) >= 4 and sound_key(a) == sound_key(b):
        return "same sound"
    if kin_group(a) and kin_group(a) == kin_group(b):
        return "same family word"
    if {a.strip(), b.strip()} == set(WRITERS.values()):
        return "the writer"
    return None


def ask_same(llm: LLM, prompts: Prompts, new: str, existing: Entity, kind: str) -> tuple[bool, Usage]:
    user = prompts.render("same_entity", type=kind if kind != "other" else "thing", a=new, b=existing.name)
    schema = {"title": "same_entity", "type": "object", "properties": {"same": {"type": "boolean"}},
              "required": ["same"]}
    data, usage = llm.complete_json(prompts.raw("extract_system").strip(), user, schema, max_tokens=12)
    return data.get("same") is True, usage


# -- time: which older relations a newer one ends --------------------------------------------------------
def conflicts(new: list[Relation], current: list[Relation], canonical) -> list[tuple[Relation, Relation]]:
    """(earlier, later) pairs with the same subject and the same *functional* predicate (one object at a
    time: a project's database, a person's home), a different object, and a strictly later start. Only
    checked facts reach the store, so the later one is grounded in its notes; nothing else ends a fact.

    `canonical(entity_id) -> entity_id` resolves merges, so a fact about "Onbiseo" meets one about "온비서"."""
    pairs = []
    for rel in new:
        if rel.predicate not in FUNCTIONAL:
            continue
        for old in current:
            if old.id == rel.id or canonical(old.subject) != canonical(rel.subject):
                continue
            if old.predicate != rel.predicate or canonical(old.object) == canonical(rel.object):
                continue
            if old.valid_from[:10] == rel.valid_from[:10]:
                continue  # stated the same day: which came first is unknown, so neither ends the other
            earlier, later = (old, rel) if old.valid_from < rel.valid_from else (rel, old)
            if any(canonical(r.object) == canonical(earlier.object) and r.predicate == rel.predicate
                   and canonical(r.subject) == canonical(rel.subject) for r in new if r is not earlier):
                continue  # the same episode still states the older object ("stays PostgreSQL")
            pairs.append((earlier, later))
    return pairs
