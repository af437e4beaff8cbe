"""Journal answers read passage by passage (#36): a name is matched by its sound across scripts; and the
near-best choices of `journal_answer` (now, a planned month, a number asked, a price declined) hold on
page-long entries in two languages. Each test gives `journal_answer` its ranked evidence directly, so each
rule is seen alone."""

from __future__ import annotations

from zettel_amem.answering import journal_answer as ja
from zettel_amem.answering.evidence import Evidence
from zettel_amem.answering.questions import analyse, kind_of
from zettel_amem.answering.view import HEADLINE_QUOTE, View, answer_view
from zettel_amem.core.models import Note
from zettel_amem.core.words import subject_terms


def _evidence(rows: list[tuple[str, str, float, set[str]]], own: list[float] | None = None) -> list[Evidence]:
    """(id, at, content, words, found) rows, best first; `own`, when given, the words' shares instead."""
    return [Evidence(Note(id=note_id, content=content, at=at), own[index] if own else words, 0.85, set(found))
            for index, (note_id, at, content, words, found) in enumerate(rows)]


def _shown(question, evidence: list[Evidence], answerer) -> tuple[View, list[str]]:
    """What `zk ask` shows for the passages an answerer picks (view.py, as `answer_journal` builds it), and
    the passages it cites."""
    pick = answerer(question, evidence)
    return answer_view(question, evidence, pick), pick.cited


def test_how_many_of_asks_for_a_count_and_a_unit_after_how_many_is_no_subject():
    assert kind_of("How many of my tomato plants survived the heatwave?") == "count"
    assert subject_terms("크루아상 버터는 몇 도여야 해?") == ["크루아상", "버터"]
    assert subject_terms("도하 씨는 호텔에서 몇 년 일했어?")[-1] != "년"


def test_now_reads_the_newest_passage_on_what_the_best_passage_names():
    question = analyse("토리는 요즘 어느 미용실에 다녀?")
    evidence = _evidence([
        ("a-p0", "2026-01-15T21:00", "토리 미용. 별빛미용실 원장님이 발톱도 잘라주셨다.", 0.6, {"토리", "미용실"}),
        ("b-p1", "2026-03-31T21:00", "토리는 공원 다녀온 뒤로 산책 가방만 보면 짖는다.", 0.6, {"토리", "다녀"}),
        ("c-p0", "2026-07-19T21:00", "별빛미용실은 너무 멀어서 동네 구름미용실로 바꿨다.", 0.5, {"미용실"}),
        ("d-p2", "2026-08-20T21:00", "토리는 바다에 다녀와서 모래를 잔뜩 묻혀 왔다.", 0.6, {"토리", "다녀"})])
    view, _cited = _shown(question, evidence, ja.answer_now)
    assert "구름미용실" in view.headline  # not the newest passage that only shares the dog and the verb


def test_a_plan_gives_way_to_its_months_passage_sharing_one_word_when_it_scores_near():
    question = analyse("When was the new kiln installed at the studio?")
    evidence = _evidence([
        ("a-p0", "2026-07-09T21:00", "The owner finally promised a new kiln in September, ordered after summer.", 0.44,
         {"new", "kiln"}),
        ("b-p0", "2026-09-09T21:00",
         "사흘 전 일요일, 공방 쉬는 날에 새 가마(kiln)가 들어왔다. 설치는 오전 내내 걸렸다.",
         0.53, {"kiln", "installed"})])
    evidence[1].cosine = 0.84  # scores within WHEN_WIDE of the plan
    view, cited = _shown(question, evidence, ja.answer_when)
    assert cited == ["b-p0"] and view.headline.startswith("2026-09-06"), view.headline


def test_a_number_asked_is_read_beside_most_of_the_question():
    question = analyse("도하 씨는 서울 호텔에서 몇 년 일했어?")
    evidence = _evidence([
        ("a-p0", "2026-10-12T21:00", "도하 씨 여자친구는 서울에 있다. 장거리 연애 3년째라고.", 0.51, {"도하", "서울"}),
        ("b-p0", "2026-07-28T21:00", "새로 온 Doha 씨는 서울 호텔 제과부에서 5년 일했다고 한다.", 0.62,
         {"도하", "서울", "호텔"})])
    assert ja.quantity(question, evidence)[0].note.id == "b-p0"


def test_a_phone_call_gives_no_name_but_a_quoted_name_does():
    assert not ja._GIVES_NAME.search("I called Mom after work.")
    assert ja._GIVES_NAME.search("The restaurant is called Bada.")
    question = analyse("What is the name of Mom's restaurant?")
    evidence = _evidence([
        ("a-p0", "2026-09-19T21:00", "I called Mom: she will close the restaurant for three days.", 0.54,
         {"mom", "restaurant"}),
        ("b-p0", "2026-02-18T21:00", "엄마 식당 '바다식당'은 설 앞뒤로 문을 닫았다.", 0.54, {"mom", "restaurant"})])
    assert ja.answer_plain(question, evidence).cited == ["b-p0"]


def test_a_price_is_declined_only_when_no_passage_naming_the_subject_in_its_language_writes_one():
    declined = analyse("예식장이 가람이한테 얼마나 할인해줬어?")
    evidence = _evidence([
        ("a-p0", "2026-06-28T21:00",
         "가람이 결혼식 예식장 답사를 같이 갔다. 유성에 있는 곳이다.", 0.8, {"예식장", "가람이"}),
        ("b-p0", "2026-10-27T21:00", "이번 달 가계부. 카풀 기름값 10만 원, 가람이 축의금.", 0.2, {"가람이"})])
    assert "금액" in ja.decline_reason(declined, evidence)  # the amount, said in the question's language
    answered = analyse("How much did I sell my bike for?")
    evidence = _evidence([
        ("a-p0", "2026-05-02T21:00", "I'll probably sell the bike once I've moved.", 1.0, {"sell", "bike"}),
        ("b-p1", "2026-07-03T21:00", "자전거는 결국 중고 거래로 10만 원에 팔았다.", 0.49, {"sell"})])
    # the Korean passage names all that has a Korean word among the notes ("bike" has none here)
    assert ja.decline_reason(answered, evidence) == ""


def test_a_long_passage_quotes_the_sentence_that_answers_not_its_first_characters():
    question = analyse("Why did the landlord look so glum?")
    long_passage = ("The landlord came by this morning with a plate of rice cakes and a very long face, and we talked "
                    "on the stairs about the weather, his grandson and the broken mailbox. "
                    "In the end he said he is selling the building, because his knees cannot take the stairs "
                    "any more, so I have to find a new place by the end of summer. I did not sleep much.")
    evidence = _evidence([("a-p0", "2026-04-23T21:00", long_passage, 0.8, {"landlord", "move"})])
    view, _cited = _shown(question, evidence, ja.answer_best)
    assert "because his knees" in view.line.text and view.line.day == "2026-04-23", view.headline
    assert len(view.line.text) <= HEADLINE_QUOTE and "The landlord came by" not in view.line.text, view.headline


def test_a_one_syllable_word_meets_it_with_two_particles():
    from zettel_amem.answering.evidence import forms, has_term

    assert has_term("차", forms("도하 씨 차에서는 늘 라디오가 나온다"))
    assert has_term("집", forms("집에도 못 갔다"))
    assert not has_term("차", forms("차례를 기다렸다"))


def test_an_amount_counts_only_in_the_clause_naming_what_is_asked():
    asked = analyse("민지 생일 선물 얼마 줬어?")
    listed = _evidence([("a-p0", "2026-03-02T21:00", "이번 주 장보기. 우유 3천 원, 세탁소, 민지 생일 선물.", 0.9,
                         {"민지", "생일", "선물"})])
    assert "금액" in ja.decline_reason(asked, listed)  # the 3천 원 is the milk's
    wallet = analyse("How much was the wallet I looked at?")
    alone = _evidence([("a-p0", "2026-03-02T21:00", "Stood in front of a leather wallet for ten minutes. Black, "
                        "120,000 won.", 0.9, {"wallet", "look"})])
    assert ja.decline_reason(wallet, alone) == ""  # an amount alone in its clause: its sentence's, and the one before


def test_a_title_is_read_where_most_of_the_question_is_named():
    question = analyse("소라가 빌려준 책 제목이 뭐였지?")
    other_title = ("a-p0", "2026-06-01T21:00", "동아리 발표 제목은 '바다 위의 정원'으로 정했다.", 0.2, {"제목"})
    book = ("b-p0", "2026-05-11T21:00", "소라가 책을 한 권 빌려줬다. 장마 때 읽으라고.", 0.8, {"소라", "책"})
    assert "이름" in ja.decline_reason(question, _evidence([other_title, book], own=[0.2, 0.8]))
    titled = ("c-p0", "2026-05-12T21:00", "소라가 빌려준 책은 '밤의 도서관'이다.", 0.9, {"소라", "책"})
    assert ja.decline_reason(question, _evidence([titled, book], own=[0.9, 0.8])) == ""
    assert not ja._GIVES_NAME.search("엄마는 '그냥 오지 마라'고 하셨다.")  # words said, not a name


def test_a_title_given_to_another_thing_is_no_title_even_as_its_languages_best():
    # the book is written of in English only; the one Korean passage naming "제목" titles a talk. It is the
    # best of its language, but "제목" names no subject, as "이름" names none
    question = analyse("소라가 빌려준 책 제목이 뭐였지?")
    other_title = ("a-p0", "2026-06-01T21:00", "동아리 발표 제목은 '바다 위의 정원'으로 정했다.", 0.2, {"제목"})
    book = ("b-p0", "2026-05-11T21:00", "Sora lent me a book for the rainy season.", 0.6, {"소라", "책"})
    assert "이름" in ja.decline_reason(question, _evidence([book, other_title], own=[0.6, 0.2]))


def test_how_much_asks_a_reading_written_after_its_word_as_well_as_a_price():
    question = analyse("지난달 혈압 검사 때 수치 얼마였어?")
    reading = ("b-p0", "2026-05-02T21:00", "혈압이 128로 조금 높게 나왔다. 짠 음식을 줄이자.", 0.5, {"혈압", "수치"})
    evidence = _evidence([reading])
    assert ja.decline_reason(question, evidence) == ""  # no price written: the reading answers
    assert ja.measured(question, evidence[0]) and not ja.measured(question, _evidence([
        ("c-p0", "2026-05-02T21:00", "혈압 재러 가는 길, at 9 in the morning. 버스는 10:30.", 0.5, {"혈압"})])[0])
    english = analyse("How much was the water tank?")
    assert ja.decline_reason(english, _evidence([("d-p0", "2026-05-02T21:00", "The tank was 40 litres, so we "
                                                  "filled it twice.", 0.8, {"tank", "water"})])) == ""
    assert "amount" in ja.decline_reason(english, _evidence([("e-p0", "2026-05-02T21:00", "Bought a water tank at "
                                                              "the market at 9.", 0.8, {"tank", "water"})]))
