"""Semantic tier: entities and relations from an episode summary, deduplicated, valid over time.

Three LLM tasks, all schema-constrained:
- EXTRACT (one call per episode): entities with types, and subject-predicate-object relations.
- SAME (only when unsure): is a new name the same entity as an existing one? Names that share a
  normalised key are the same without asking; a romanised match ("온비서" / "Onbiseo") or a very close
  name embedding is merged without asking; a middling similarity asks the model.
- OUTDATED (only when a new relation shares subject and predicate with an older, different one):
  which older facts did the newer ones replace? Those get `invalid_from`, never deleted.
The orchestration (store reads and writes, embeddings) lives in `tiers.py`.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any

from .llm import LLM
from .models import Entity, Relation, Usage
from .prompts import Prompts, language_of
from .text import clip, name_key, one_line, romanise

ENTITY_TYPES = ["person", "project", "place", "organisation", "technology", "event", "other"]
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
    predicate = {"type": "string", "pattern": f'^[^"\\\\\u3040-\u30ff\u3400-\u9fff]{{1,{PREDICATE_CHARS}}}$'}
    return {
        "title": "extract",
        "type": "object",
        "properties": {
            "entities": {"type": "array", "maxItems": MAX_ENTITIES, "items": {
                "type": "object", "properties": {"name": _NAME, "type": {"type": "string", "enum": ENTITY_TYPES}},
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


_PRONOUNS = {"i", "me", "you", "he", "him", "she", "her", "it", "we", "us", "they", "them", "someone", "user",
             "나", "저", "너", "그", "그녀", "우리", "저희", "그들", "누군가", "오늘", "today", "yesterday", "tomorrow"}


def is_entity_name(name: str) -> bool:
    """Not a pronoun or a bare measurement ("3km", "61분", "3월 4일"), which small models call entities."""
    key = name_key(name)
    if not key or key in _PRONOUNS:
        return False
    letters = re.sub(r"[\d\W_]+", "", key)
    return not (any(ch.isdigit() for ch in key) and len(letters) <= 2)


def grounded(found: Extraction, text: str) -> Extraction:
    """Only entities whose name occurs in the text (small models copy names from the prompt's example)
    and that are names at all, and only relations between those."""
    key = name_key(text)
    kept = [(n, t) for n, t in found.entities if name_key(n) in key and is_entity_name(n)]
    names = {name_key(n) for n, _ in kept}
    return Extraction(kept, [r for r in found.relations if name_key(r[0]) in names and name_key(r[2]) in names])


def extract(llm: LLM, prompts: Prompts, summary: str, when: str) -> tuple[Extraction, Usage]:
    user = prompts.render("extract", language=language_of(summary), when=when[:10], facts=summary)
    data, usage = llm.complete_json(prompts.raw("extract_system").strip(), user, extract_schema(), max_tokens=320)
    return grounded(clean_extraction(data), summary), usage


# -- deduplication ------------------------------------------------------------------------------
def same_by_spelling(a: str, b: str) -> str | None:
    """Why two names are the same entity without asking anyone, or None: identical keys ("온 비서" =
    "온비서") or identical romanised keys ("온비서" = "Onbiseo")."""
    if name_key(a) == name_key(b):
        return "same name"
    if romanise(name_key(a)) == romanise(name_key(b)):
        return "romanisation"
    return None


def ask_same(llm: LLM, prompts: Prompts, new: str, existing: Entity, kind: str) -> tuple[bool, Usage]:
    user = prompts.render("same_entity", type=kind if kind != "other" else "thing", a=new, b=existing.name)
    schema = {"title": "same_entity", "type": "object", "properties": {"same": {"type": "boolean"}},
              "required": ["same"]}
    data, usage = llm.complete_json(prompts.raw("extract_system").strip(), user, schema, max_tokens=12)
    return data.get("same") is True, usage


# -- time: which older relations a newer one replaces ---------------------------------------------
def conflicts(new: list[Relation], current: list[Relation], canonical) -> list[tuple[Relation, Relation]]:
    """(earlier, later) pairs with the same subject and predicate but a different object.

    `canonical(entity_id) -> entity_id` resolves merges, so a fact about "Onbiseo" meets one about "온비서"."""
    pairs = []
    for rel in new:
        for old in current:
            if old.id == rel.id or canonical(old.subject) != canonical(rel.subject):
                continue
            if name_key(old.predicate) != name_key(rel.predicate):
                continue
            if canonical(old.object) == canonical(rel.object):
                continue
            earlier, later = (old, rel) if old.valid_from <= rel.valid_from else (rel, old)
            pairs.append((earlier, later))
    return pairs


def ask_outdated(llm: LLM, prompts: Prompts, pairs: list[tuple[Relation, Relation]], describe
                 ) -> tuple[dict[str, Relation], Usage]:
    """Earlier relation id -> the later relation that replaced it, as the model decides."""
    earlier = {p[0].id: p[0] for p in pairs}
    later = {p[1].id: p[1] for p in pairs}
    short = {r.id[:8]: r.id for r in earlier.values()}
    user = prompts.render(
        "outdated",
        older="\n".join(f"[{s}] {describe(earlier[i])} (since {earlier[i].valid_from[:10]})" for s, i in short.items()),
        newer="\n".join(f"- {describe(r)} (from {r.valid_from[:10]})" for r in later.values()))
    schema = {"title": "outdated", "type": "object", "properties": {"outdated": {
        "type": "array", "maxItems": len(short), "items": {"type": "string", "enum": list(short)}}},
        "required": ["outdated"]}
    data, usage = llm.complete_json(prompts.raw("extract_system").strip(), user, schema, max_tokens=60)
    replaced: dict[str, Relation] = {}
    for s in data.get("outdated") or []:
        old_id = short.get(s)
        if old_id:
            candidates = [p[1] for p in pairs if p[0].id == old_id]
            replaced[old_id] = min(candidates, key=lambda r: r.valid_from)
    return replaced, usage
