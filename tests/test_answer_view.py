"""The answer view (#52, answering/view.py): `zk ask` on a journal shows a headline quoted from the journal,
then up to four supporting sentences, each dated with its entry id, ordered by what the question asks, within
about 700 characters; "not recorded" shows the closest sentences as closest. The scripted model is never
called: journal answers are the journal's own words."""

from __future__ import annotations

import json

import pytest

from tests.sample import ask_through
from zettel_amem.answering.view import SUPPORTING, VIEW_CHARS

KNEE = [
    ("2026-03-02T21:00", "Ran 12 km by the river this morning. My left knee started aching on the stairs afterwards."),
    ("2026-03-05T20:30", "회사 회식. 팀장님이 새 프로젝트 얘기를 했다. 집에 늦게 들어왔다."),
    ("2026-03-09T19:10", "The knee still hurts. Dr. Han said it is runner's knee and told me to rest for two weeks."),
    ("2026-03-15T22:00", "Finished the novel Mina lent me. The ending was sad but right."),
    ("2026-03-24T08:40", "First easy run after the rest: 3 km, and the knee held up fine."),
    ("2026-04-11T18:00", "Bought a new rice cooker; the old one broke last week."),
    ("2026-04-20T09:30", "무릎 재활 끝. 오늘 10km를 아프지 않게 뛰었다."),
]
GYM = [
    ("2026-01-10T20:00", "I signed up at Iron Temple gym near the office. The squat racks are always taken."),
    ("2026-02-14T21:00", "Lunch with Jisoo at the ramen place. She is moving to Busan."),
    ("2026-06-03T20:15", "Moved my membership to Blue Whale gym, five minutes from the new flat. "
                         "Iron Temple was too far."),
]
CAFES = [
    ("2026-05-02T17:00", "Went to the dentist for a cleaning."),
    ("2026-05-19T18:30", "Went to the dentist again: a small filling on the left side."),
    ("2026-06-30T12:00", "The dentist checked the filling today. All good."),
    ("2026-06-10T09:00", "Planned to see the dentist next month if the tooth still hurts."),
]


@pytest.fixture
def journal(memory):
    memory.settings.answer_journal = True
    for at, text in KNEE + GYM + CAFES:
        memory.add(text, at=at)
    return memory


def test_a_story_shows_its_sentences_in_date_order(journal, fake_llm):
    answer = ask_through(journal, "what happened with my knee?")
    view = answer.view
    assert view.kind == "lead" and "2026-03-02" in view.headline
    days = [line.day for line in view.supporting]
    assert days == sorted(days) and len(days) >= 3
    assert all("knee" in line.text.lower() or "무릎" in line.text for line in view.supporting)
    assert fake_llm.calls == []  # the model was never asked


def test_now_shows_the_new_value_first_and_the_old_one_marked_older(journal):
    answer = ask_through(journal, "Which gym do I go to now?")
    view = answer.view
    assert "Blue Whale" in view.headline and view.line.entry_id in answer.cited()
    older = [line for line in view.supporting if "Iron Temple gym near the office" in line.text]
    assert older and older[0].older
    assert [line.at for line in view.supporting] == sorted((line.at for line in view.supporting), reverse=True)


def test_a_count_lists_each_occasion_once_in_date_order(journal):
    answer = ask_through(journal, "How many times did I go to the dentist?")
    view = answer.view
    # every passage on the dentist is an occasion, the plan of 10 June too (no rule leaves plans out of a count)
    assert view.headline.startswith("4 times: 2026-05-02, 2026-05-19, 2026-06-10, 2026-06-30"), view.headline
    assert [line.day for line in view.supporting] == ["2026-05-02", "2026-05-19", "2026-06-10", "2026-06-30"]


def test_when_leads_with_the_day_the_sentence_tells(memory):
    memory.settings.answer_journal = True
    memory.add("어제 드디어 새 집 계약서에 도장을 찍었다. 보증금은 다음 주에 보낸다.", at="2026-05-03T21:00")
    memory.add("집 보러 다니느라 주말이 다 갔다.", at="2026-04-26T20:00")
    view = ask_through(memory, "새 집 계약은 언제 했어?").view
    assert view.headline.startswith("2026-05-02 — ") and "(어제 = 2026-05-02)" in view.headline


def test_not_recorded_shows_the_closest_sentences_as_closest(journal):
    answer = ask_through(journal, "내 혈액형이 뭐야?")
    assert answer.mode == "declined" and answer.view.kind == "declined"
    assert answer.view.headline.startswith("기록에 없어요") and 1 <= len(answer.view.supporting) <= 2


def test_the_view_fits_its_budget_with_at_most_four_supporting_sentences(journal):
    for question in ("what happened with my knee?", "Which gym do I go to now?", "무릎은 어떻게 됐어?"):
        view = ask_through(journal, question).view
        assert len(view.supporting) <= SUPPORTING and len(view.text()) <= VIEW_CHARS + 40  # "- " per line


def test_every_line_carries_its_day_and_entry_id(journal):
    view = ask_through(journal, "What did Dr. Han tell me?").view
    assert "Dr. Han" in view.headline
    for line in [view.line, *view.supporting]:
        note = journal.store.get(line.entry_id)
        assert note is not None and note.at == line.at and line.text in " ".join(note.content.split())


def test_cli_ask_prints_the_view_and_json_carries_it(zk, zk_home, monkeypatch):
    monkeypatch.setenv("ZK_TODAY", "2026-05-01")
    zk_home.mkdir(parents=True, exist_ok=True)
    (zk_home / "config.toml").write_text("answer_journal = true\n", encoding="utf-8")
    for at, text in KNEE[:5]:
        assert zk("add", text, "--at", at)[0] == 0
    code, out, _ = zk("ask", "무릎은 어떻게 됐어?", "--json")
    data = json.loads(out)
    assert code == 0 and data["view"]["kind"] == "lead" and data["confidence"] in ("sure", "likely", "unsure")
    assert all(line["entry_id"] and line["at"] for line in data["view"]["supporting"])
    code, out, _ = zk("ask", "무릎은 어떻게 됐어?")
    assert code == 0 and "2026-03-09" in out and "Dr. Han" in out


# -- a model server writes the headline (writer.py) --------------------------------------------------------
@pytest.fixture
def served(journal, fake_llm):
    """The journal as if `--model openai:…` were set: the (scripted) model writes headlines."""
    journal.settings.llm_model = "openai:fake@http://127.0.0.1:9/v1"
    return journal


def test_a_model_server_writes_the_headline_and_the_quoted_sentence_stays(served, fake_llm):
    fake_llm.enqueue("headline", {"answer": "Dr. Han said to rest for two weeks.", "sentences": [1]})
    answer = ask_through(served, "What did Dr. Han tell me?")
    view = answer.view
    assert answer.mode == "model" and view.kind == "written" and view.confidence
    assert view.headline.startswith("Dr. Han said to rest for two weeks. [")
    assert "runner's knee" in view.supporting[0].text  # the sentence it was written from, still shown
    assert fake_llm.tasks() == ["headline"]


def test_a_written_date_no_sentence_gives_is_not_shown(served, fake_llm):
    fake_llm.enqueue("headline", {"answer": "He said it on 2026-03-11.", "sentences": [1]})
    view = ask_through(served, "What did Dr. Han tell me?").view
    assert "03-11" not in view.headline and "11 March" not in view.headline


def test_a_failed_writer_keeps_the_quoted_headline(served, fake_llm):
    fake_llm.fail = True
    answer = ask_through(served, "What did Dr. Han tell me?")
    assert answer.view.kind == "quote" and "Dr. Han" in answer.view.headline
    assert "could not write the headline" in answer.reason and answer.mode == "extractive"
