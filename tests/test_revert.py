"""Reversible evolution: `zk revert` restores an earlier version without dropping the newer ones, and
`zk history` shows what changed and why. """

from __future__ import annotations

import numpy as np
import pytest

from tests.sample import RUNS, add_all
from zettel_amem.core.config import ZkError


def test_revert_restores_an_earlier_version_and_keeps_the_newer_ones(evolving, embedder):
    ids = add_all(evolving, RUNS)
    note = max(evolving.store.notes(), key=lambda n: n.version)
    assert note.version >= 3  # evolved at least twice
    original = note.history[0].changes["context"]["old"]
    evolved_context, top = note.context, note.version
    reverted = evolving.revert(note.id[:8], to_version=1)
    assert reverted.context == original and reverted.version == top + 1
    assert reverted.history[-1].reason == "revert to v1"
    assert len(reverted.history) == top  # nothing dropped: every newer version is still there
    stored = evolving.store.get(note.id, with_vector=True)
    assert np.allclose(stored.vector, embedder.embed_passages([stored.embedding_text()])[0], atol=1e-5)
    again = evolving.revert(note.id, to_version=top)  # the evolved state can be restored too
    assert again.context == evolved_context
    with pytest.raises(ZkError, match="choose a version"):
        evolving.revert(note.id, to_version=again.version)
    assert ids


def test_history_and_revert_through_the_cli(evolving, zk):
    add_all(evolving, RUNS[:3])
    target = next(n for n in evolving.store.notes() if n.version > 1)
    history = zk("history", target.id[:8], "--json", check=True).json()
    assert history["version"] == target.version and history["history"][0]["cause"]
    assert "evolution" in zk("history", target.id[:8], check=True).stdout
    reverted = zk("revert", target.id[:8], "--json", check=True).json()
    assert reverted["version"] == target.version + 1
    assert reverted["context"] == target.history[-1].changes["context"]["old"]
