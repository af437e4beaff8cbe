"""The answer view (#52, answering/view.py): `zk ask` on a journal shows a headline quoted from the journal,
then up to four supporting sentences, each dated with its entry id, ordered by what the question asks, within
about 700 characters; "not recorded" shows the closest sentences as closest. The scripted model is never
called: journal answers are the journal's own words."""

from __future__ import annotations

import json
import re

import pytest

from tests.sample import add_dated, ask_through
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
    # every visit once, by date; the plan of 10 June ("Planned to see the dentist next month if …") is none (#59)
    assert view.headline.startswith("3 times: 2026-05-02, 2026-05-19, 2026-06-30"), view.headline
    assert [line.day for line in view.supporting] == ["2026-05-02", "2026-05-19", "2026-06-30"]


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


# -- break-it round five (#59): the answer view's findings D7-D10, D15, D19 -------------------------------
@pytest.fixture
def fresh(memory):
    """An empty journal (the module's `journal` holds the knee, gym and dentist entries)."""
    memory.settings.answer_journal = True
    return memory


DAYS = [("2026-01-10T09:00", "I signed up at Iron Temple gym near the office."),
        ("2026-01-11T19:00", "Dinner with my sister at the Thai place."),
        ("2026-01-12T10:00", "Fixed the leaking kitchen tap.")]


@pytest.mark.parametrize(("question", "day", "words"), [
    ("what did I do yesterday?", "2026-01-11", "Thai place"),
    ("어제 뭐 했어?", "2026-01-11", "Thai place"),
    ("what did I do on 2026-01-10?", "2026-01-10", "Iron Temple"),
    ("what happened on January 10?", "2026-01-10", "Iron Temple"),
    ("what did I do last sunday?", "2026-01-11", "Thai place"),
    ("2026년 1월 11일에 뭐 했어?", "2026-01-11", "Thai place"),
])
def test_d7_a_question_about_a_day_answers_from_that_days_entries(fresh, monkeypatch, question, day, words):
    monkeypatch.setenv("ZK_TODAY", "2026-01-12")
    add_dated(fresh, DAYS)
    answer = ask_through(fresh, question)
    view = answer.view
    assert answer.mode != "declined" and words in view.headline, view.text()
    assert {line.day for line in [view.line, *view.supporting] if line} == {day}  # no other day's entry
    assert [fresh.store.get(i).at[:10] for i in answer.cited()] == [day]


def test_d7_a_day_is_read_as_zk_on_reads_it_and_a_later_entry_dating_it_counts(fresh, monkeypatch):
    monkeypatch.setenv("ZK_TODAY", "2026-01-12")
    add_dated(fresh, DAYS + [("2026-01-12T21:00", "어제 저녁 동생이랑 태국 음식 먹었다. 맛있었다.")])
    view = ask_through(fresh, "what did I do yesterday?").view
    assert view.kind == "lead" and view.headline == "2026-01-11: 2 entries" and view.confidence == "sure"
    assert [line.day for line in view.supporting] == ["2026-01-11", "2026-01-12"]  # the next day's "어제" too
    assert "(어제 = 2026-01-11)" in view.text()
    empty = ask_through(fresh, "what did I do on 2026-01-05?")  # a day with no entry: said so, nothing else shown
    assert empty.mode == "declined" and "2026-01-05" in empty.view.headline and empty.view.supporting == []
    korean = ask_through(fresh, "2026년 1월 5일에 뭐 했어?").view
    assert korean.headline.startswith("기록에 없어요") and "2026-01-05" in korean.headline


def test_d7_zk_ask_about_a_day_shows_that_days_entry(zk, zk_home, monkeypatch):
    monkeypatch.setenv("ZK_TODAY", "2026-01-12")
    zk_home.mkdir(parents=True, exist_ok=True)
    (zk_home / "config.toml").write_text("answer_journal = true\n", encoding="utf-8")
    for at, text in DAYS:
        assert zk("add", text, "--at", at)[0] == 0
    code, out, _ = zk("ask", "what did I do yesterday?")
    assert code == 0 and "Not recorded" not in out and out.startswith("[sure] 2026-01-11") and "Thai place" in out
    data = zk("ask", "어제 뭐 했어?", "--json").json()
    assert data["view"]["line"]["at"].startswith("2026-01-11") and data["mode"] == "extractive"


SHOPPING_EN = ["Bought a new bike for 300 dollars.", "Went to Busan on the weekend.", "Ate kimchi stew for lunch.",
               "Called mum in the evening."]
SHOPPING_KO = ["점심에 김치찌개를 먹었다.", "주말에 부산에 갔다.", "새 운동화를 샀다. 12만원.",
               "어제 한강에서 5km 달렸다.", "엄마한테 전화했다."]


def test_d8_korean_verb_forms_share_their_stem():
    from zettel_amem.core.words import korean_verb_stem

    for one, other in (("샀어", "샀다"), ("갔었지", "갔다"), ("달려", "달리기를"), ("달려", "달렸다"),
                       ("이사했어", "이사했다"), ("먹었어", "먹는다")):
        assert korean_verb_stem(one) and korean_verb_stem(one) == korean_verb_stem(other), (one, other)
    assert korean_verb_stem("사과를") == "" and korean_verb_stem("헬스장") == ""  # nouns are no verb forms


@pytest.mark.parametrize(("entries", "question", "words"), [
    (SHOPPING_EN, "where did I go?", "Busan"),  # every word a function word, but "go" meets "went"
    (SHOPPING_KO, "뭐 샀어?", "운동화"),
    (SHOPPING_KO, "어디 갔었지?", "부산"),
])
def test_d8_a_question_in_function_words_or_another_verb_form_is_answered(fresh, monkeypatch, entries,
                                                                         question, words):
    monkeypatch.setenv("ZK_TODAY", "2026-11-10")
    add_dated(fresh, [(f"2026-11-0{i + 1}T10:00", text) for i, text in enumerate(entries)])
    answer = ask_through(fresh, question)
    assert answer.mode != "declined" and words in answer.view.headline, answer.view.text()


def test_d8_the_readme_example_is_answered_at_least_likely(fresh):
    add_dated(fresh, [("2026-12-07T08:00", "나는 주말마다 여의도 한강공원에서 10km 달리기를 한다.")])
    for question in ("주말마다 어디서 달려?", "어디서 달려?", "몇 km 달려?"):
        view = ask_through(fresh, question).view
        assert view.kind == "quote" and "여의도" in view.headline and view.confidence in ("sure", "likely"), question


def test_d8_a_decline_is_never_sure_while_an_entry_shares_the_questions_stem(fresh):
    add_dated(fresh, [("2026-05-30T15:20", "동생 생일. 같이 망원시장에서 떡볶이 먹었다."),
                        ("2026-06-02T10:00", "I ran 5 km by the river.")])
    declined = ask_through(fresh, "동생 이름이 뭐야?")  # 동생 is written, its name is not
    assert declined.mode == "declined" and declined.view.confidence != "sure"
    nothing = ask_through(fresh, "내 혈액형이 뭐야?")  # no entry shares a word: a sure decline
    assert nothing.mode == "declined" and nothing.view.confidence == "sure"


def test_a_headline_that_holds_the_question_only_in_translation_is_never_sure(fresh):
    """Round five's verification: in a two-note English journal "달려?" met "on the way home" through the
    term bridge's guess and was "[sure]". A word met only in translation is a guess."""
    add_dated(fresh, [("2026-03-29T18:00", "The bike got a flat tyre on the way home."),
                        ("2026-03-30T12:00", "Lunch at the office.")])
    answer = ask_through(fresh, "달려?")
    assert answer.view.confidence != "sure", answer.view.text()
    own = ask_through(fresh, "where did the bike get a flat tyre?")  # asked in the note's own words
    assert "flat tyre" in own.view.headline and own.view.signals["asked_share"] == own.view.signals["sentence_share"]


def test_a_korean_decline_names_the_words_as_the_question_wrote_them(fresh):
    add_dated(fresh, [("2026-03-30T12:00", "Lunch at the office.")])
    answer = ask_through(fresh, "영화 봤어?")
    assert answer.mode == "declined" and "'봤어'" in answer.view.headline, answer.view.headline  # not "봤에"


def test_d9_supporting_lines_are_on_the_question_and_only_the_answer_is_cited(fresh, monkeypatch):
    monkeypatch.setenv("ZK_TODAY", "2026-03-20")
    add_dated(fresh, [("2026-01-03T08:00", "Ran 5 km along the river before work. Legs felt heavy."),
                        ("2026-01-25T22:00", "Finished 'The Remains of the Day'. Beautiful and sad."),
                        ("2026-02-01T09:00", "Paid the electricity bill: 48,000 won."),
                        ("2026-03-01T09:00", "Ran 10 km in 58 minutes at Yeouido."),
                        ("2026-03-15T21:00", "Onbiseo launched. Pizza with the team.")])
    answer = ask_through(fresh, "how much was the electricity bill?")
    assert "48,000 won" in answer.view.headline and answer.view.supporting == [], answer.view.text()
    assert answer.cited() == [answer.view.line.entry_id]


def test_d9_older_marks_only_a_line_on_the_same_subject(fresh, monkeypatch):
    monkeypatch.setenv("ZK_TODAY", "2026-07-01")
    add_dated(fresh, GYM + [("2026-02-01T10:00", "My blood type is B."),
                              ("2026-03-03T10:00", "The meeting with Jun is not on Friday, it is on Monday.")])
    view = ask_through(fresh, "what gym do I go to now?").view
    assert "Blue Whale" in view.headline
    assert all("gym" in line.text.lower() for line in view.supporting), view.text()
    assert [line.older for line in view.supporting if "Iron Temple gym near" in line.text] == [True]


def test_d9_now_is_the_writers_own_newest_value_not_someone_elses(fresh, monkeypatch):
    monkeypatch.setenv("ZK_TODAY", "2026-11-01")
    add_dated(fresh, [("2026-03-05T21:00", "Switched my task tracking from Notion to Todoist."),
                        ("2026-04-12T15:00", "Coffee with a friend; she recommended a Todo app for her team."),
                        ("2026-10-10T18:00", "Went to Jisoo's wedding in Busan. Lovely day.")])
    view = ask_through(fresh, "Which app do I use for my tasks now?").view
    assert "Todoist" in view.headline and not view.line.older, view.text()
    assert "wedding" not in view.text()  # a line sharing nothing with the question is no support
    korean = [("2026-03-05T21:00", "할 일 관리를 노션에서 투두이스트로 바꿨다."),
              ("2026-04-12T15:00", "친구랑 커피. 친구가 팀에서 쓰는 할 일 앱을 추천해 줬다.")]
    add_dated(fresh, korean)
    assert "투두이스트" in ask_through(fresh, "요즘 할 일 관리 뭐로 해?").view.headline


def test_d10_a_newer_value_comes_first_and_a_correction_retracts_the_old_date(fresh, monkeypatch):
    monkeypatch.setenv("ZK_TODAY", "2026-07-01")
    add_dated(fresh, [("2026-01-01T10:00", "My blood type is A."), ("2026-02-01T10:00", "My blood type is B."),
                        ("2026-03-02T10:00", "The meeting with Jun is on Friday."),
                        ("2026-03-03T10:00", "The meeting with Jun is not on Friday, it is on Monday.")])
    assert "blood type is B" in ask_through(fresh, "what is my blood type?").view.headline
    view = ask_through(fresh, "when is the meeting with Jun?").view
    # written on Tuesday 3 March, "it is on Monday" is the coming Monday, and "not on Friday" takes Friday back
    assert view.headline.startswith("2026-03-09 — "), view.headline
    korean = ask_through(fresh, "내 혈액형 뭐야?").view
    assert "blood type is B" in korean.headline


def test_d10_a_weekday_stated_as_a_schedule_after_it_passed_is_next_weeks():
    from zettel_amem.core.date_mentions import date_mentions

    mentions = {m.phrase: m.start for m in date_mentions("The meeting is not on Friday, it is on Monday.",
                                                         "2026-03-03T10:00")}
    assert mentions["on Monday"] == "2026-03-09"
    assert date_mentions("회의는 월요일이야.", "2026-03-03T10:00")[0].start == "2026-03-09"
    assert date_mentions("Gym on Monday. Felt great.", "2026-03-03T10:00")[0].start == "2026-03-02"  # told: past


@pytest.mark.parametrize(("entries", "question", "lead"), [
    ([("2026-05-02T17:00", "Went to the dentist for a cleaning."),
      ("2026-05-19T18:30", "Went to the dentist again: a small filling on the left side."),
      ("2026-06-30T12:00", "The dentist checked the filling today. All good."),
      ("2026-07-05T09:00", "I should go to the dentist soon.")], "How many times did I go to the dentist?", "3 times"),
    ([("2026-05-02T17:00", "치과에 가서 스케일링을 받았다."),
      ("2026-05-19T18:30", "치과에 또 갔다. 왼쪽 어금니 때웠다."),
      ("2026-06-30T12:00", "치과 정기검진 다녀왔다."), ("2026-07-05T09:00", "치과에 가야겠다.")],
     "치과에 몇 번 갔어?", "3번"),
    ([("2026-01-03T08:00", "Ran 5 km along the river before work."),
      ("2026-01-22T19:00", "Doctor said the knee is a mild sprain; no running for two weeks."),
      ("2026-02-10T07:00", "Ran 8 km, the knee held up."), ("2026-03-01T09:00", "Ran 10 km at Yeouido.")],
     "How many times did I run?", "3 times"),
])
def test_d10_a_count_counts_what_happened_not_a_plan_a_wish_or_a_negation(fresh, monkeypatch, entries,
                                                                          question, lead):
    monkeypatch.setenv("ZK_TODAY", "2026-08-01")
    add_dated(fresh, entries)
    view = ask_through(fresh, question).view
    assert view.headline.startswith(lead + ":"), view.text()


@pytest.mark.parametrize(("question", "line"), [
    ("\u200b\u200b", "the question is empty"), ("\u3164", "the question is empty"),
    ("?!?...,;:", "the question has no words to look for"), ("🚲💰❓", "the question has no words to look for"),
    ("when?", "the question has no words to look for"), ("how many?", "the question has no words to look for"),
    ("언제?", "the question has no words to look for"),
])
def test_d15_a_question_with_nothing_to_look_for_is_one_line_and_an_error(zk, zk_home, question, line):
    zk_home.mkdir(parents=True, exist_ok=True)
    (zk_home / "config.toml").write_text("answer_journal = true\n", encoding="utf-8")
    assert zk("add", "Took the train to Busan.", "--at", "2026-05-08T10:00")[0] == 0
    code, out, err = zk("ask", question)
    assert code != 0 and out == "" and err.strip().splitlines() == [f"zk: error: {line}"], (out, err)


def test_d19_the_answer_views_wording(fresh, zk, zk_home):
    add_dated(fresh, [("2026-03-29T10:00", "The time capsule was buried under the old oak.")])
    assert ask_through(fresh, "what happened with the time capsule?").view.headline.startswith("1 entry: ")
    declined = ask_through(fresh, "주말마다 어디서 수영해?")  # a Korean decline gives its reason in Korean
    assert declined.mode == "declined" and not re.search("[A-Za-z]", declined.view.headline), declined.view.headline
    (zk_home / "config.toml").write_text("answer_journal = true\n", encoding="utf-8")
    code, out, _ = zk("ask", "what is my blood type?")  # declined without a model call
    assert code == 0 and "Not recorded" in out and "notes given to the model" not in out and "closest notes" in out
