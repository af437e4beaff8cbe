"""bench/graph_precision.py with the mock model: the build is cached, the gold loads, scores are sane."""

from __future__ import annotations

import json

from bench.graph_precision import GOLD, Gold, main, split_of


def test_gold_is_consistent_and_split_by_week():
    data = json.loads(GOLD.read_text(encoding="utf-8"))
    gold = Gold(data)  # every relation end is a gold entity (raises otherwise)
    assert len(gold.relations) >= 150
    assert all(r["split"] == split_of(r["entry"]) for r in gold.relations)
    assert {r["predicate"] for r in gold.relations} <= set(data["predicates"])
    assert gold.entity("Onbiseo") == gold.entity("온비서는")  # alias, particle stripped


def test_build_once_then_score(tmp_path, monkeypatch, capsys):
    monkeypatch.setenv("ZK_NO_WORKER", "1")
    args = ["--store", str(tmp_path / "store"), "--llm", "python:tests.fake_llm:FakeLLM", "--limit", "6", "--json"]
    assert main(args) == 0
    first = json.loads(capsys.readouterr().out)
    assert first["build"]["episodes"] >= 1 and {"entity_precision", "relation_recall"} <= set(first["tune"])
    assert main(args) == 0  # cached: scored again, not rebuilt
    again = json.loads(capsys.readouterr().out)
    assert again["tune"] == first["tune"]
    assert main(["--store", str(tmp_path / "x"), "--gold", str(tmp_path / "none.json")]) == 2



def test_audit_flags_a_clause_entity_and_an_unsupported_relation(memory, fake_llm):
    from dataclasses import replace

    from bench import graph_audit
    from tests.test_grounding import MOVE
    from tests.test_tiers import journal

    tiers = journal(memory, MOVE)
    clean = graph_audit.audit(memory.home)
    assert clean["entities"] >= 2 and clean["relations"] >= 1
    assert clean["not_noun_phrases_of_the_notes"] == [] and clean["relations_without_a_sentence"] == []
    entity = tiers.store.entities(memory.notebook)[0]
    tiers.store.put_entities([replace(entity, id="clause", name="녹차를 마신다", key="녹차를마신다")])
    relation = tiers.store.relations(memory.notebook)[0]
    tiers.store.put_relations([replace(relation, id="unsupported", object="clause")])
    found = graph_audit.audit(memory.home)
    assert found["not_noun_phrases_of_the_notes"] == ["녹차를 마신다"]
    assert len(found["relations_without_a_sentence"]) == 1 and len(found["relations_without_a_note"]) == 1
    assert graph_audit.main([str(memory.home)]) == 1
    assert graph_audit.main([str(memory.home / "none")]) == 2
