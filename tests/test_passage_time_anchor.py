"""A story's time holds until a new date is written (#36 item 2): a passage that writes no date of its own,
right after one in the same paragraph that dates one past day, is read with it (passages.anchors), so
"when" answers the day the story dates, not the day the entry was written. A paragraph break ends it."""

from __future__ import annotations

from tests.sample import add_dated, ask_through
from zettel_amem.core.models import Note
from zettel_amem.core.passages import as_notes, make_passages

ENTRY = ("어제 저녁 강변 산책로를 걷다가 돌부리에 걸려서 크게 넘어졌다. "
         "무릎이 까져서 피가 꽤 많이 났고 바지도 찢어졌다. 집에 와서 소독하고 밴드를 붙였다.\n\n"
         "오늘은 회사에서 분기 보고서를 마감하느라 하루 종일 정신이 없었다. 팀장님이 표를 두 번이나 고치라고 하셨다.")


def _units(text: str, at: str = "2026-05-14T21:00:00") -> list[Note]:
    note = Note(id="e1", content=text, at=at, passages=make_passages(text, at))
    return as_notes([note])


def test_a_passage_without_a_date_is_read_with_the_one_that_dates_its_story():
    units = _units(ENTRY)
    holding = [u for u in units if "무릎이 까져서" in u.content]
    assert len(holding) == 2 and all(u.content.startswith("어제 저녁") for u in holding), [u.content for u in units]
    report = [u for u in units if u.content.startswith("팀장님") or u.content.startswith("오늘은")]
    assert report and all("어제" not in u.content for u in report)  # a new paragraph: no story carried over


def test_when_answers_the_day_the_story_dates(memory):
    memory.settings.answer_journal = True
    add_dated(memory, [("2026-05-14T21:00", ENTRY),
                       ("2026-05-20T21:00", "무릎은 이제 거의 다 나았다. 딱지가 떨어지고 새 살이 올라왔다. "
                                            "이번 주말엔 다시 달릴 수 있을 것 같다.")])
    answer = ask_through(memory, "무릎이 까진 날은 언제야?")
    assert answer.text.startswith("2026-05-13"), answer.text


TODAY = ("오늘은 오후 근무라서 오전에 늦잠을 잤다. 점심은 편의점 김밥으로 때웠다. "
         "병동에 새로 온 인턴 이름은 한서진이고 부산에서 올라왔다고 한다. 오후에는 환자 이송이 많았다. "
         "수간호사님이 다음 달 교육 일정을 알려주셨다. 퇴근길에 엄마한테 전화가 왔다.")


def test_today_anchors_nothing():
    """"오늘은 …" dates the entry's own day, which every passage has already: the next passage stays alone."""
    units = _units(TODAY)
    text = units[0].content
    passages = make_passages(TODAY, "2026-05-14T21:00:00")
    assert len(passages) > 2 and text.startswith("오늘은")
    assert [u.content[:12] for u in units] == [p.text[:12] for p in passages]  # each starts with its own
