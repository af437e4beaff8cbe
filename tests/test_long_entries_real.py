"""Page-long entries (#36) on the real bundled models: two 10-sentence entries on four subjects each, a
Korean and an English one, added and processed by the real pipeline (Qwen2.5-0.5B annotates them), then
asked through `Memory.ask` (the path of `zk ask`). Answers come from the sentence that holds them, a date
inside an entry dates its event, and "now" follows a move written months later."""

from __future__ import annotations

import pytest

from tests.sample import ask_through, real_journal

pytestmark = pytest.mark.slow

KOREAN = ("오늘은 오후 근무라서 오전에 늦잠을 잤다. 점심은 편의점 김밥으로 때웠다. "
          "병동에 새로 온 인턴 이름은 한서진이고 부산에서 올라왔다고 한다. "  # 3rd: the intern
          "오후에는 환자 이송이 많아서 정신이 없었다. 수간호사님이 다음 달 교육 일정을 알려주셨다. "
          "퇴근길에 엄마한테 전화가 왔다. 엄마는 무릎이 아파서 한의원에 다니신다고 했다. "
          "어제 밤 11시쯤 고양이 모카가 화분을 깨뜨려서 치우느라 늦게 잤다. "
          "이번 달 관리비는 18만 4천 원이 나왔다. "  # 9th: the maintenance fee
          "내일은 쉬는 날이니까 빨래를 해야겠다.")
ENGLISH = ("Woke up early because the neighbours were drilling again. I made oatmeal and read the news. "
           "My sister Priya called to say her flight to Lisbon leaves on the twelfth. "  # 3rd: the sister's flight
           "Work was slow, so I cleaned up the quarterly report. The printer jammed twice before lunch. "
           "After work I walked to the library and returned two books. It started raining on the way back. "
           "I fixed the leaking tap in the bathroom with a new washer. "
           "The mechanic quoted 340 dollars to replace the car's brake pads. "  # 9th: the brake pads
           "I still have not decided whether to pay it this month.")
GYM = [("2026-03-02T21:00", "요즘 헬스장은 집 앞 스포애니에 다닌다. 월 5만 원."),
       ("2026-06-10T21:00", "헬스장을 회사 근처 애니타임으로 옮겼다. 출근 전에 가기 편하다."),
       ("2026-03-03T21:00", "My climbing gym these days is Boulder Barn near home."),
       ("2026-06-12T21:00", "Switched my climbing gym to Vertical Loft by the office.")]


@pytest.fixture(scope="module")
def journal(tmp_path_factory, embedder):
    memory = real_journal(tmp_path_factory, embedder, "long-real")
    memory.add(KOREAN, at="2026-04-07T22:30")
    memory.add(ENGLISH, at="2026-04-08T21:45")
    for at, text in GYM:
        memory.add(text, at=at)
    memory.process_pending()
    return memory


def test_the_entries_were_cut_and_enriched(journal):
    for note in journal.store.notes():
        assert note.status == "ready" and note.context, note.error
    long = [n for n in journal.store.notes() if n.content in (KOREAN, ENGLISH)]
    assert len(long) == 2 and all(len(n.passages) >= 6 for n in long)


@pytest.mark.parametrize(("question", "value", "sentence"), [
    ("새로 온 인턴 이름이 뭐야?", "한서진", "새로 온 인턴"),  # the 3rd sentence
    ("이번 달 관리비 얼마 나왔어?", "18만 4천 원", "관리비"),  # the 9th
    ("When does Priya's flight to Lisbon leave?", "twelfth", "Priya called"),  # the 3rd
    ("How much did the mechanic quote for the brake pads?", "340 dollars", "mechanic quoted"),  # the 9th
])
def test_an_answer_quotes_the_sentence_that_holds_it(journal, question, value, sentence):
    answer = ask_through(journal, question)
    assert value in answer.text and answer.mode == "extractive"
    assert any(sentence in q["text"] for q in answer.quotes)
    assert "늦잠" not in answer.text and "Woke up" not in answer.text  # not the entry's start


def test_yesterday_inside_an_entry_answers_the_day_before(journal):
    answer = ask_through(journal, "모카가 화분 깨뜨린 게 언제야?")
    assert answer.text.startswith("2026-04-06")


# The Korean move's new note shares only "헬스장" with the question; it is found because the write recorded
# a typed *updates* link to the old gym's note (supersede.py), which "now" answers follow.
@pytest.mark.parametrize(("question", "now", "before"), [("지금 다니는 헬스장은 어디야?", "애니타임", "스포애니"),
                                                         ("Which climbing gym do I go to now?", "Vertical Loft",
                                                          "Boulder Barn")])
def test_now_answers_the_value_after_the_move(journal, question, now, before):
    answer = ask_through(journal, question)
    assert now in answer.text and before not in answer.text
    notes = {n.content.split(".")[0]: n for n in journal.store.notes()}
    old = next(n for text, n in notes.items() if before in text)
    new = next(n for text, n in notes.items() if now in text)
    assert [u["by"] for u in old.updated_by] == [new.id]  # recorded at write time, by the real pipeline


def test_only_the_two_moves_are_typed_updates(journal):
    """The real link call (its grammar-bound `replaces` enum) and the change-word check together mark the
    two gym moves and nothing else: no long entry's sentence updates a gym note, or the reverse."""
    updated = {n.content[:12]: [u["by"] for u in n.updated_by] for n in journal.store.notes() if n.updated_by}
    assert sorted(updated) == sorted([GYM[0][1][:12], GYM[2][1][:12]]), updated
