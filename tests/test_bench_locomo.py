"""The LoCoMo harness on a tiny LoCoMo-shaped fixture written here (the dataset is never copied)."""

from __future__ import annotations

import json

from bench import locomo

SAMPLE = {
    "sample_id": "conv-t",
    "conversation": {
        "speaker_a": "Jon", "speaker_b": "Gina",
        "session_1_date_time": "1:56 pm on 8 May, 2023",
        "session_1": [
            {"speaker": "Jon", "dia_id": "D1:1", "text": "I lost my job as a banker yesterday."},
            {"speaker": "Gina", "dia_id": "D1:2", "text": "Sorry! I lost my Door Dash job in January."},
            {"speaker": "Jon", "dia_id": "D1:3", "text": "I will open a dance studio downtown."},
        ],
        "session_2_date_time": "10:00 am on 20 June, 2023",
        "session_2": [
            {"speaker": "Gina", "dia_id": "D2:1", "text": "I started an online clothing store."},
            {"speaker": "Jon", "dia_id": "D2:2", "text": "The studio floor is finally installed."},
        ],
    },
    "qa": [
        {"question": "What job did Jon lose?", "answer": "banker", "evidence": ["D1:1"], "category": 4},
        {"question": "What store did Gina start?", "answer": "online clothing store", "evidence": ["D2:1"],
         "category": 4},
        {"question": "What did Jon open and install?", "answer": "dance studio", "evidence": ["D1:3", "D2:2"],
         "category": 1},
        {"question": "What is Gina's cat called?", "adversarial_answer": "Mimi", "evidence": ["D1:2"],
         "category": 5},
    ],
}


def test_harness_maps_dia_ids_and_scores_retrieval(tmp_path, monkeypatch):
    data = tmp_path / "tiny.json"
    data.write_text(json.dumps([SAMPLE]), encoding="utf-8")
    out = tmp_path / "out"
    assert locomo.main(["--data", str(data), "--out", str(out), "--variants", "raw-vector,bm25,hybrid,hybrid-window",
                        "--k", "2"]) == 0
    [result_file] = out.glob("locomo-*.json")
    result = json.loads(result_file.read_text())
    records = [r for r in result["records"] if r["variant"] == "bm25"]
    assert len(records) == 4
    # dia_ids come from session + turn order: every id of the fixture is reachable, nothing else.
    seen = {d for r in records for d in r["retrieved"]}
    assert seen <= {"D1:1", "D1:2", "D1:3", "D2:1", "D2:2"} and "D2:1" in seen
    assert records[0]["retrieved"][0] == "D1:1" and records[0]["recall_all@5"] is True
    assert records[1]["retrieved"][0] == "D2:1"
    assert "recall_all@5" not in records[3]  # adversarial questions are not scored for recall
    summary = result["summary"]["bm25"]
    assert summary["by_category"]["4"]["metrics"]["recall_all@5"]["mean"] == 1.0
    assert (out / result_file.name.replace(".json", ".png")).exists()
    # The same run again is served from the caches and gives the same numbers.
    assert locomo.main(["--data", str(data), "--out", str(out), "--variants", "bm25", "--k", "2"]) == 0


def test_truncated_sample_keeps_only_answerable_questions():
    cut = locomo.truncate_sample(SAMPLE, 3)
    assert cut["sample_id"] == "conv-t-first3"
    assert "session_2" not in cut["conversation"]
    assert [q["question"] for q in cut["qa"]] == ["What job did Jon lose?", "What is Gina's cat called?"]


def test_tier_variants_summarise_sessions_and_report_the_l0_block(tmp_path):
    data = tmp_path / "tiny.json"
    data.write_text(json.dumps([SAMPLE]), encoding="utf-8")
    out = tmp_path / "out"
    assert locomo.main(["--data", str(data), "--out", str(out), "--variants", "+episodes,+graph,+graph-static",
                        "--llm", "python:tests.fake_llm:FakeLLM", "--answer", "--k", "2"]) == 0
    result = json.loads(next(out.glob("locomo-*.json")).read_text())
    costs = next(iter(result["ingest_costs"].values()))
    assert costs["sessions"] == 2 and costs["llm_calls_per_session"] >= 2  # summarise + extract per session
    records = result["records"]
    assert {r["variant"] for r in records} == {"+episodes", "+graph", "+graph-static"}
    for record in records:
        assert record["l0_hints"] <= 3 and record["answer"]
        assert record["l0_tokens"] <= record["memory_block_tokens"] + 4 * record["l0_hints"]
    studio = [r for r in records if r["question"].startswith("What did Jon open")]
    assert all(r["l0_hints"] >= 1 for r in studio)  # "studio" is in both sessions' summaries
    assert all(r["graph_facts"] == 0 for r in records if r["variant"] == "+episodes")
