"""The answer view (#52) on the real bundled models: a journal of 24 entries processed by the real pipeline
(the bundled Qwen2.5-0.5B annotates and links them), then `zk ask` as a user runs it. A story shows its
sentences in date order, "now" the new value with the old one marked older (Korean and English), a count
its distinct occasions; with a model server (`--model openai:…`, llama.cpp's server running the bundled
model) the headline is written by the model and the quoted sentences stay below it."""

from __future__ import annotations

import json

import pytest

pytestmark = pytest.mark.slow

KNEE = [("2026-03-02T21:00", "Ran 12 km by the river this morning. My left knee started aching on the stairs."),
        ("2026-03-09T19:10", "The knee still hurts. Dr. Han said it is runner's knee: two weeks of rest."),
        ("2026-03-16T20:00", "무릎 때문에 이번 주는 수영만 했다. 계단은 아직 조심스럽다."),
        ("2026-03-24T08:40", "First easy run after the rest: 3 km, and the knee held up fine."),
        ("2026-04-20T09:30", "무릎 재활 끝. 오늘 10km를 아프지 않게 뛰었다.")]
OTHERS = [("2026-01-10T20:00", "Signed up at Iron Temple gym near the office. The squat racks are always taken."),
          ("2026-06-03T20:15", "헬스장을 블루웨일 짐으로 옮겼다. 새 집에서 5분 거리라서. 아이언템플은 너무 멀었다."),
          ("2026-05-02T17:00", "Went to the dentist for a cleaning."),
          ("2026-05-19T18:30", "Went to the dentist again for a small filling on the left side."),
          ("2026-06-30T12:00", "The dentist checked the filling today. All good."),
          ("2026-01-15T22:00", "엄마랑 통화했다. 설에 여수 내려오라고 하셨다."),
          ("2026-02-02T12:10", "Lunch with Mina. She is moving to Busan in April for a new job."),
          ("2026-02-11T19:40", "팀장님이 바뀌었다. 새 팀장님은 현우 님."),
          ("2026-02-20T21:00", "Finished 'The Overstory'. Lent it to Mina."),
          ("2026-03-05T20:30", "회사 회식. 새 프로젝트 얘기를 들었다."),
          ("2026-04-02T18:00", "Bought a new rice cooker; the old one broke last week."),
          ("2026-04-14T07:50", "출근길 지하철이 30분 늦었다. 회의에 지각했다."),
          ("2026-05-08T19:00", "어버이날이라 부모님께 꽃을 보냈다."),
          ("2026-07-04T15:00", "Moved into the new flat in Mapo. Boxes everywhere."),
          ("2026-07-21T21:30", "Started learning the guitar with an online course."),
          ("2026-08-09T10:00", "Family trip to Gangneung. The sea was cold but clear."),
          ("2026-09-12T18:45", "Cooked kimchi stew for Mina's housewarming in Busan."),
          ("2026-10-03T11:00", "추석 연휴에 책 두 권을 읽었다."),
          ("2026-10-30T20:00", "Renewed my passport at the district office.")]


@pytest.fixture(scope="module")
def home(tmp_path_factory, embedder):
    """The journal, every entry processed by the bundled model (construction, links, evolution)."""
    from zettel_amem.backends.llm.llama import load_llm
    from zettel_amem.memory import Memory

    path = tmp_path_factory.mktemp("view-real")
    memory = Memory(path, llm=load_llm("qwen2.5-0.5b"), embedder=embedder)
    for at, text in KNEE + OTHERS:
        memory.add(text, at=at)
    memory.process_pending()
    (path / "config.toml").write_text("answer_journal = true\n", encoding="utf-8")
    return path


@pytest.fixture
def ask(zk, home, monkeypatch):
    """`zk ask QUESTION [options]` on the processed journal: (exit code, stdout)."""
    monkeypatch.setenv("ZK_HOME", str(home))
    monkeypatch.setenv("ZK_TODAY", "2026-11-01")

    def run(*args: str) -> tuple[int, str]:
        code, out, _err = zk("ask", *args)
        return code, out
    return run


def test_a_story_prints_the_knee_sentences_in_date_order(ask):
    code, out = ask("what happened with my knee?")
    assert code == 0
    shown = [day for day, text in KNEE if text.split(".")[0][:30] in out]
    assert len(shown) >= 4  # the lead and four sentences: at least four of the five entries
    assert [out.index(text.split(".")[0][:30]) for day, text in KNEE if day in shown] == \
        sorted(out.index(text.split(".")[0][:30]) for day, text in KNEE if day in shown)


@pytest.mark.parametrize("question", ["지금 다니는 헬스장은 어디야?", "Which gym do I go to now?"])
def test_now_answers_the_new_gym_and_marks_the_old_one_older(ask, question):
    code, out = ask(question, "--json")
    view = json.loads(out)["view"]
    assert code == 0 and "블루웨일" in view["headline"]
    older = [line for line in view["supporting"] if "Iron Temple" in line["text"]]
    assert older and older[0]["older"]


def test_a_count_lists_its_distinct_occasions(ask):
    code, out = ask("How many times did I go to the dentist?", "--json")
    view = json.loads(out)["view"]
    assert code == 0 and view["headline"].startswith("3 times")
    assert [line["at"][:10] for line in view["supporting"]] == ["2026-05-02", "2026-05-19", "2026-06-30"]


def test_a_model_server_writes_the_headline_beside_the_quoted_sentences(ask, llm_server, monkeypatch):
    from tests.llm_server import MODEL_ALIAS

    question = "What did Dr. Han say about my knee?"
    code, out = ask(question, "--json")
    quoted = json.loads(out)["view"]
    assert code == 0 and quoted["kind"] == "quote"
    monkeypatch.setenv("ZK_LLM_MODEL", f"openai:{MODEL_ALIAS}@{llm_server}")
    code, out = ask(question, "--json")
    data = json.loads(out)
    assert code == 0 and data["mode"] == "model" and data["view"]["kind"] == "written", data["reason"]
    assert data["view"]["headline"] and data["view"]["headline"] != quoted["headline"]
    texts = [line["text"] for line in data["view"]["supporting"]]
    assert quoted["line"]["text"] in texts  # the quoted sentence is still shown, below the written one
