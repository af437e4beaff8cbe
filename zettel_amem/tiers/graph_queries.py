"""The semantic tier's queries (L2): an entity and its relations, current and past, and the merges a
user makes by hand. The graph is built by promotion (`promotion.py`); nothing here calls a model.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from ..core.dates import parse_when
from ..core.errors import InvalidInput, NotFound, ZkError
from ..core.models import Entity, Relation, canonical_map
from ..core.text import name_key, romanise
from ..storage.tier_store import TierStore

if TYPE_CHECKING:  # graph queries read a Memory's parts; they never import Memory at run time
    from ..memory import Memory


class GraphQueries:
    def __init__(self, memory: Memory, store: TierStore):
        self.memory = memory
        self.store = store

    def find_entity(self, name: str) -> Entity:
        """The canonical entity a name refers to: same key, same romanised key, or a close embedding."""
        rows = self.store.entities(self.memory.notebook)
        canonical = canonical_map(rows)
        if not canonical:
            raise NotFound(f"the graph of notebook '{self.memory.notebook}' is empty (close a session first)")
        key = name_key(name)
        by_key = [e for e in rows if e.key == key] or [e for e in rows if romanise(e.key) == romanise(key)]
        if not by_key:
            vector = self.memory.embedder.embed_passages([name])[0]
            near = self.store.nearest_entities(vector, 1, self.memory.notebook)
            from ..backends.embed import entity_thresholds

            if near and near[0][1] >= entity_thresholds(self.memory.embedder.name)[1]:
                by_key = [near[0][0]]
        if not by_key:
            raise NotFound(f"no entity named '{name}' in notebook '{self.memory.notebook}'")
        return canonical[by_key[0].id]

    def view(self, name: str, depth: int = 1, at: str | None = None) -> dict:
        """An entity, its relations (current, past, and at `at` when given), their source episodes, and
        connected entities up to `depth` hops."""
        when = parse_when(at) if at else None
        if when and at and "T" not in at.strip() and " " not in at.strip():
            when = when[:10] + "T23:59:59"  # a bare date means "as of that day", the whole day included
        root = self.find_entity(name)
        rows = self.store.entities(self.memory.notebook)
        canonical = canonical_map(rows)
        relations = self.store.relations(self.memory.notebook)
        episodes = {e.id: e for e in self.store.episodes(self.memory.notebook)}
        aliases: dict[str, list[str]] = {}
        for entity in rows:
            if canonical[entity.id].id != entity.id:
                aliases.setdefault(canonical[entity.id].id, []).append(entity.name)

        def canon(i: str) -> Entity | None:
            return canonical.get(i)

        def node(entity: Entity, level: int, seen: set[str]) -> dict:
            out = {"id": entity.id, "name": entity.name, "type": entity.type, "aliases": aliases.get(entity.id, []),
                   "relations": [], "connected": []}
            seen.add(entity.id)
            for rel in relations:
                subject, obj = canon(rel.subject), canon(rel.object)
                if not subject or not obj or entity.id not in (subject.id, obj.id):
                    continue
                if when and not rel.valid_at(when):
                    continue
                other = obj if subject.id == entity.id else subject
                episode = episodes.get(rel.episode_id)
                out["relations"].append({
                    "id": rel.id, "subject": subject.name, "predicate": rel.predicate, "object": obj.name,
                    "direction": "out" if subject.id == entity.id else "in", "other": other.name,
                    "valid_from": rel.valid_from, "invalid_from": rel.invalid_from, "current": rel.invalid_from is None,
                    "invalidated_by": rel.invalidated_by,
                    "episode": rel.episode_id, "episode_title": episode.title if episode else None,
                    "episode_abstract": episode.abstract if episode else None})
                if level < depth and other.id not in seen:
                    out["connected"].append(node(other, level + 1, seen))
            out["relations"].sort(key=lambda r: (not r["current"], r["valid_from"]))
            return out

        return {"entity": node(root, 1, set()), "at": when}

    def entities(self) -> list[dict]:
        entities = self.store.entities(self.memory.notebook)
        canonical = canonical_map(entities)
        rows = [{**entity.to_json(), "canonical": canonical[entity.id].name} for entity in entities]
        return sorted(rows, key=lambda r: (r["canonical"].lower(), r["merged_into"] is not None, r["name"]))

    def merge(self, name: str, into: str) -> Entity:
        """Record by hand that `name` is the same entity as `into` (undo with unmerge)."""
        source, target = self.find_entity(name), self.find_entity(into)
        if source.id == target.id:
            raise ZkError(f"'{name}' and '{into}' are already one entity")
        source.merged_into, source.merge_reason = target.id, "merged by hand"
        self.store.put_entities([source])
        return source

    def restore(self, relation_id: str) -> Relation:
        """Undo an invalidation: the relation (id or unique prefix, as `zk graph` shows it) is current
        again. The newer fact that ended it stays; the user decides which one holds."""
        prefix = relation_id.strip().lower()
        if len(prefix) < 4:
            raise InvalidInput("give at least 4 characters of the relation id")
        found = [r for r in self.store.relations(self.memory.notebook) if r.id.startswith(prefix)]
        if not found:
            raise NotFound(f"no relation {relation_id} in notebook '{self.memory.notebook}'")
        if len(found) > 1:
            raise InvalidInput(f"the id {relation_id} is ambiguous ({len(found)} relations); give more characters")
        rel = found[0]
        if rel.invalid_from is None:
            raise ZkError(f"relation {rel.id[:8]} is current; nothing to restore")
        rel.invalid_from = rel.invalidated_by = None
        self.store.put_relations([rel])
        return rel

    def unmerge(self, name: str) -> Entity:
        """Undo a merge: the entity with exactly this name stands alone again, with its own relations."""
        key = name_key(name)
        rows = [e for e in self.store.entities(self.memory.notebook) if e.key == key]
        if not rows:
            raise NotFound(f"no entity named '{name}' in notebook '{self.memory.notebook}'")
        entity = rows[0]
        if entity.merged_into is None:
            raise ZkError(f"'{entity.name}' is not merged into another entity")
        entity.merged_into, entity.merge_reason = None, ""
        self.store.put_entities([entity])
        return entity
