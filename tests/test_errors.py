"""Typed errors: the library says what happened and of what kind; only the CLI adds what to run next."""

from __future__ import annotations

import json

import pytest

from zettel_amem.cli import advice_for
from zettel_amem.core.errors import AmbiguousId, InvalidInput, NoteTooLong, NotFound, StoreDamaged, ZkError
from zettel_amem.memory import Memory


def test_each_kind_of_failure_has_its_type(memory):
    with pytest.raises(InvalidInput):
        memory.add("   ")
    with pytest.raises(InvalidInput):
        memory.resolve("not-hex")
    notes = [memory.add(f"note number {i}") for i in range(17)]  # 17 ids over 16 first digits: two share one
    first = {}
    for note in notes:
        first.setdefault(note.id[0], []).append(note)
    shared = next(prefix for prefix, same in first.items() if len(same) > 1)
    with pytest.raises(AmbiguousId):
        memory.resolve(shared)
    missing = next(c for c in "0123456789abcdef" if c not in first) if len(first) < 16 else None
    if missing:
        with pytest.raises(NotFound):
            memory.resolve(missing)
    with pytest.raises(NotFound):
        memory.resolve(notes[0].id[:-1] + ("0" if notes[0].id[-1] != "0" else "1"))
    assert all(issubclass(kind, ZkError) for kind in (AmbiguousId, InvalidInput, NotFound, StoreDamaged))


def test_library_messages_carry_no_cli_advice(memory):
    with pytest.raises(NoteTooLong) as too_long:
        memory.add("x" * 100_001)
    assert "zk " not in str(too_long.value) and "`zk import FILE`" in advice_for(too_long.value)
    memory.add("a note before the damage")
    meta = memory.home / "meta.json"
    recorded = json.loads(meta.read_text(encoding="utf-8"))
    recorded["tables"]["notes"]["version"] += 5  # meta says commits exist that the table lost
    meta.write_text(json.dumps(recorded), encoding="utf-8")
    damaged = Memory(memory.home, llm=memory.llm, embedder=memory.embedder)
    with pytest.raises(StoreDamaged) as refused:
        damaged.add("a note that must not be written over a damaged store")
    assert refused.value.refused_write and "zk " not in str(refused.value)
    assert advice_for(refused.value) == "; run `zk doctor`, then `zk repair`"
    assert advice_for(ZkError("plain")) == ""


def test_an_ambiguous_prefix_names_the_ids_long_enough_to_tell_apart():
    """Round five D19: two ids sharing their first 16 characters were listed as the same 12."""
    from zettel_amem.storage.store_rows import _unique_id

    ids = ["0" * 31 + "1", "0" * 31 + "2"]
    with pytest.raises(AmbiguousId) as raised:
        _unique_id("00000000", ids)
    assert f"{ids[0]}, {ids[1]}" in str(raised.value)
