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
