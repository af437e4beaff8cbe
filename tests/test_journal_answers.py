"""Journal answers (#26): question analysis, the date guard, "not recorded", the newest value for
"what now?", the note's date for "when?" — with the scripted model, which must not even be called."""

from __future__ import annotations

import json

import pytest

from tests.sample import ask_through
from zettel_amem.answering.date_guard import guard, note_dates
from zettel_amem.answering.questions import analyse
from zettel_amem.core import dates
from zettel_amem.core.errors import ZkError
from zettel_amem.core.models import Note
from zettel_amem.core.words import korean_stem, subject_terms

JOURNAL = [
    ("2026-01-07T19:05", "회사 프로젝트 '온비서' 킥오프. PM은 지수 님. DB는 SQLite로 시작."),
    ("2026-01-28T17:50", "온비서 회의: 사용자 늘면 SQLite로는 부족하다는 결론. PostgreSQL로 옮기기로 했다."),
    ("2026-02-19T21:10", "아빠 무릎 수술 날짜가 3월 4일로 잡혔다. 그 주에 휴가를 내야 한다."),
    ("2026-02-23T18:30", "Migrated the Onbiseo database to PostgreSQL; search is 4x faster."),
    ("2026-05-14T19:20", "New work laptop: a MacBook Pro replaced my old ThinkPad."),
    ("2026-01-10T09:00", "My work laptop is a ThinkPad X1. Reliable but slow."),
    ("2026-07-25T16:00", "Adopted a dog from the shelter today. Her name is Bori."),
    ("2026-08-29T09:00", "어제 치과에서 충치 하나 치료했다. 다음 검진은 6개월 뒤."),
]


@pytest.fixture
def journal(memory):
    memory.settings.answer_journal = True
    for at, text in JOURNAL:
        memory.add(text, at=at)
    return memory


# -- question analysis ----------------------------------------------------------------------------
@pytest.mark.parametrize(("question", "kind"), [
    ("온비서는 지금 어떤 데이터베이스를 써?", "now"), ("What laptop do I use now?", "now"),
    ("아빠 수술은 언제였어?", "when"), ("When did I adopt Bori?", "when"),
    ("왜 8km에서 멈췄어?", "why"), ("Why did I stop Duolingo?", "why"),
    ("How many times did I visit Busan?", "count"), ("한강 작가 책은 뭐뭐 읽었어?", "plain"),
    # two questions in one are one question, of the kind its cues give
    ("Who gave me the camera and what does she do now?", "now"), ("온비서 DB는 처음에 뭐였고 지금은 뭐야?", "now"),
    ("What is my dog's name?", "plain"), ("보리는 어떤 종이야?", "plain"),
    ("What's the date of the school trip?", "when"), ("그 모임은 무슨 요일이었어?", "when"),
    ("What was the day like?", "plain")])
def test_question_kinds_in_korean_and_english(question, kind):
    assert analyse(question).kind == kind


def test_subject_terms_drop_question_words_and_korean_particles():
    assert analyse("온비서는 지금 어떤 데이터베이스를 써?").terms[:2] == ["온비서", "데이터베이스"]
    assert analyse("When did I adopt Bori?").terms == ["adopt", "bori"]
    assert korean_stem("이사했어") == "이사" and korean_stem("치과에서") == "치과"
    assert "db" in analyse("온비서 DB는 뭐야?").terms and "는" not in analyse("온비서 DB는 뭐야?").terms


@pytest.mark.parametrize("question, terms", [
    ("우리 동네 세탁소 이름이 뭐였지?", ["우리", "동네", "세탁소", "이름"]),
    ("수영 강습 시작한 날이 언제였더라?", ["수영", "강습", "시작"]),
    ("정기 검진 날짜 좀 알려줘", ["정기", "검진", "좀"]),
    ("안경 맞춘 데가 어디였는지 기억나?", ["안경", "맞춘", "데"]),
    ("요즘 분리수거 날이 무슨 요일이지?", ["분리수거", "요일"]),
    ("Can you remind me what the plumber said about the boiler?", ["plumber", "said", "boiler"]),
    ("How much is the gym per month right now?", ["gym", "month"]),
    ("What did the doctor say about my right knee?", ["doctor", "say", "right", "knee"]),
])
def test_subject_terms_leave_out_asking_to_be_told(question, terms):
    """Asking to be told or reminded ("알려줘", "기억나?", "remind me"), a question word with a recall ending
    ("뭐였지", "언제였더라") and a copula ("요일이지") name no subject; "right" does beside a knee."""
    assert subject_terms(question) == terms


# -- dates ----------------------------------------------------------------------------------------
def test_today_honours_zk_today(monkeypatch):
    monkeypatch.setenv("ZK_TODAY", "2026-12-01")
    assert dates.today().isoformat() == "2026-12-01"
    monkeypatch.setenv("ZK_TODAY", "tomorrow")
    with pytest.raises(ZkError):
        dates.today()


def test_note_dates_are_made_absolute_from_the_timestamp():
    surgery = Note(id="a" * 32, content=JOURNAL[2][1], at=JOURNAL[2][0] + ":00")
    dentist = Note(id="b" * 32, content=JOURNAL[7][1], at=JOURNAL[7][0] + ":00")
    assert [d.isoformat() for _, d in note_dates(surgery)] == ["2026-03-04"]
    assert "2026-08-28" in [d.isoformat() for _, d in note_dates(dentist)]  # "어제" in a note of 29 August


def test_the_date_guard_removes_dates_in_no_note():
    note = Note(id="a" * 32, content=JOURNAL[2][1], at="2026-02-19T21:10:00")
    kept, removed = guard("수술은 2026-03-04 (2026-02-19)", [note], "언제?")
    assert kept == "수술은 2026-03-04 (2026-02-19)" and removed == []
    kept, removed = guard("It was on 2026-12-01, or December 2.", [note], "When?")
    assert "2026-12-01" not in kept and "December 2" not in kept and len(removed) == 2
    assert guard("On December 2?", [note], "What happened on December 2?")[1] == []  # the question's own


# -- answers --------------------------------------------------------------------------------------
def test_what_now_answers_the_newest_value(journal, fake_llm):
    answer = ask_through(journal, "What laptop do I use for work now?")
    assert "MacBook" in answer.text and "2026-05-14" in answer.text
    assert answer.mode == "extractive" and "answer" not in fake_llm.tasks()  # the model writes no journal answer
    assert answer.cited() and all(i in {h.note.id for h in answer.notes} for i in answer.cited())
    korean = ask_through(journal, "온비서는 지금 어떤 데이터베이스를 써?")
    assert "PostgreSQL" in korean.text


def test_when_answers_the_date_from_the_notes_never_today(journal, monkeypatch):
    monkeypatch.setenv("ZK_TODAY", "2026-12-01")
    assert ask_through(journal, "아빠 무릎 수술은 언제였어?").text.startswith("2026-03-04")  # written "3월 4일"
    assert ask_through(journal, "When did I adopt Bori?").text.startswith("2026-07-25")  # the note's own day
    assert ask_through(journal, "치과에서 충치 치료한 건 언제야?").text.startswith("2026-08-28")  # "어제"
    assert "2026-12-01" not in ask_through(journal, "When did I adopt Bori?").text


def test_not_recorded_is_declined_with_the_reason(journal, fake_llm):
    gym = ask_through(journal, "Which gym do I go to?")
    assert gym.mode == "declined" and "gym" in gym.reason and gym.cited() == []
    blood = ask_through(journal, "내 혈액형이 뭐야?")
    assert blood.mode == "declined" and blood.text.startswith("기록에 없어요")
    assert "answer" not in fake_llm.tasks()


def test_bridged_terms_find_a_note_in_the_other_language(memory, fake_llm):
    """"puppy" meets "강아지" through the embedder's nearest word among the notes' own words, with no
    model call; without the bridge the Korean note is not found by its words."""
    journal = memory
    journal.settings.answer_journal = True
    journal.add("유기견 보호소에서 강아지를 입양했다. 이름은 초코, 두 살.", at="2026-09-25T16:00")
    journal.add("Got a new puzzle from the shop near the shelter bus stop.", at="2026-09-20T10:00")
    journal.add("Bought new running shoes.", at="2026-06-02T18:40")
    fake_llm.calls.clear()
    answer = ask_through(journal, "Which puppy did I get from the shelter?")
    assert "초코" in answer.text and answer.mode == "extractive"
    assert fake_llm.tasks() == []
    journal.settings.answer_journal_translate = False
    assert "초코" not in ask_through(journal, "Which puppy did I get from the shelter?").text


def test_chat_turns_keep_the_model_path(memory, fake_llm):
    """Imported chats (every turn has a speaker) are answered as before: LoCoMo is not changed."""
    memory.settings.answer_journal = True
    notes = [memory.new_note("I adopted a puppy named Max.", "2023-05-08T13:00", speaker="Jon"),
             memory.new_note("That's lovely!", "2023-05-08T13:01", speaker="Gina")]
    memory.add_notes(notes)
    answer = ask_through(memory, "What is Jon's dog called?")
    assert fake_llm.calls and answer.mode in ("model", "extractive", "declined")


def test_cli_ask_json_says_how_the_answer_was_made(zk, zk_home):
    zk_home.mkdir(parents=True, exist_ok=True)
    (zk_home / "config.toml").write_text("answer_journal = true\n", encoding="utf-8")
    zk("add", "--at", "2026-05-14T19:20", "New work laptop: a MacBook Pro replaced my old ThinkPad.")
    code, out, err = zk("ask", "When did I get the MacBook?", "--json")
    assert code == 0, err
    result = json.loads(out)
    assert result["mode"] == "extractive" and result["answer"].startswith("2026-05-14")
    assert result["cited"] and result["notes"][0]["cited"] is True
    code, out, err = zk("ask", "Which gym do I go to?", "--json")
    result = json.loads(out)
    assert result["mode"] == "declined" and "gym" in result["reason"] and result["cited"] == []


def test_a_count_leaves_out_a_passage_only_its_copied_tags_name():
    """Memory evolution by the small model once wrote "dentist" into a lunch note's tags and context
    (tests/test_answer_view_real.py): a count counts what passages tell, in their words or keywords."""
    from zettel_amem.answering.journal_answer import answer_journal

    visits = [Note(id=f"{i}" * 32, content=text, at=at, keywords=["dentist"]) for i, (at, text) in enumerate(
        [("2026-05-02T17:00:00", "Went to the dentist for a cleaning."),
         ("2026-05-19T18:30:00", "Went to the dentist again for a small filling."),
         ("2026-06-30T12:00:00", "The dentist checked the filling today. All good.")], 1)]
    lunch = Note(id="9" * 32, content="Lunch with Mina. She is moving to Busan in April.", at="2026-02-02T12:10:00",
                 keywords=["lunch", "Mina"], tags=["cleaning", "dentist"], context="Went to the dentist with Mina.")
    reply = answer_journal("How many times did I go to the dentist?", [*visits, lunch], lambda _t, ns: [0.9] * len(ns))
    assert reply.view.headline.startswith("3 times: 2026-05-02, 2026-05-19, 2026-06-30"), reply.view.headline
    lunch.keywords.append("dentist")  # a keyword written for the note itself still counts
    reply = answer_journal("How many times did I go to the dentist?", [*visits, lunch], lambda _t, ns: [0.9] * len(ns))
    assert reply.view.headline.startswith("4 times"), reply.view.headline
