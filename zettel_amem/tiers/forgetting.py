"""Forgetting (`zk rm`, `zk prune`): undoing what promotion (promotion.py) wrote from a session.

A removed note's words must not live on in its session's summary or in the facts drawn from it, and a
pruned summary must not survive in an older table version. Nothing here calls a model; `Promotion` calls
these under the worker's step lock where the worker could be writing the same rows.
"""

from __future__ import annotations

from ..core.errors import NotErased, ZkError, why_not_erased
from ..core.models import EPISODE_PENDING, EPISODE_PRUNED, EPISODE_READY, Note, episode_id_for, now_iso
from ..storage.tier_store import TierStore
from .sessions import Sessions


def forget_relations_of(store: TierStore, episode_id: str) -> None:
    """Remove an episode's relations and undo the invalidations they caused (before re-extraction)."""
    mine = store.relations_of_episode(episode_id)
    if not mine:
        return
    ids = {r.id for r in mine}
    restored = store.relations_invalidated_by(sorted(ids))
    for rel in restored:
        rel.invalid_from = rel.invalidated_by = None
    store.put_relations(restored)
    store.delete_relations(list(ids))


def prune_summaries(store: TierStore, notebook: str, cutoff: str) -> list[str]:
    """Clear the summaries of the notebook's finished episodes that ended before `cutoff` (an ISO time);
    each row stays as a tombstone (status pruned). Returns their ids."""
    # Only finished episodes: a pending one has not given its facts to the graph yet.
    expired = [e for e in store.episodes(notebook, status=[EPISODE_READY]) if e.end < cutoff]
    if expired:
        store.owe_erase()
    for episode in expired:
        episode.summary = episode.abstract = ""
        episode.vector, episode.status = None, EPISODE_PRUNED
    if expired:
        store.put_episodes(expired, keep_vectors=False)
        store.compact()  # the old summaries must not survive in older table versions
    return [e.id for e in expired]


def forget_episode_of(store: TierStore, sessions: Sessions, note: Note) -> None:
    """After `zk rm` of a chat turn: its session's summary is cleared at once (and the episode queued to be
    summarised again from the remaining turns); the episode's relations are removed, and the entities
    only it named."""
    if not note.session_id:
        return
    episode = store.episode(episode_id_for(note.session_id))
    if episode is None:
        return
    store.owe_erase()
    forget_relations_of(store, episode.id)
    # Entities only this episode named go too (re-extraction brings back what the other turns say).
    named = store.entities(episode.notebook, with_vector=True)
    only_here = [e.id for e in named if e.episodes == [episode.id]]
    elsewhere = [e for e in named if episode.id in e.episodes and e.id not in only_here]
    for entity in elsewhere:
        entity.episodes = [i for i in entity.episodes if i != episode.id]
    store.put_entities(elsewhere)
    store.delete_entities(only_here)
    remaining = sessions.turns(note.session_id, episode.notebook)
    episode.summary = episode.abstract = ""
    episode.vector, episode.turns, episode.created = None, len(remaining), now_iso()
    if episode.status != EPISODE_PRUNED:  # a pruned episode stays pruned (its summary is gone anyway)
        episode.status = EPISODE_PENDING if remaining else EPISODE_PRUNED
    store.put_episodes([episode], keep_vectors=False)
    try:
        store.compact()
    except ZkError as exc:  # the summary is cleared, but its old text is still in the files: owed an erase
        raise NotErased(why_not_erased(exc)) from None
