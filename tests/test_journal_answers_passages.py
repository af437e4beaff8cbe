"""Journal answers read passage by passage (#36): a count counts the passages that tell an occasion
themselves, once per occasion (not the passages their entry lends the word); a name is matched by its
sound across scripts; and the near-best choices of `journal_answer` (why, now, a planned month, a
number asked, a price declined) hold on page-long entries in two languages. The count test runs the
whole path (real embedder, scripted model never called); the others give `journal_answer` its ranked
evidence directly, so each rule is seen alone."""

from __future__ import annotations

from sample import add_dated, ask_through

from zettel_amem.answering import counting
from zettel_amem.answering import journal_answer as ja
from zettel_amem.answering.evidence import Evidence
from zettel_amem.answering.questions import analyse, kind_of
from zettel_amem.answering.view import HEADLINE_QUOTE, View, answer_view
from zettel_amem.core.models import Note
from zettel_amem.core.words import subject_terms


def _evidence(rows: list[tuple[str, str, float, set[str]]], own: list[float] | None = None) -> list[Evidence]:
    """(id, at, content, words, found) rows, best first; `own` defaults to `words`."""
    out = []
    for index, (note_id, at, content, words, found) in enumerate(rows):
        share = own[index] if own else words
        item = Evidence(Note(id=note_id, content=content, at=at), words, 0.85, set(found))
        item.own = share
        out.append(item)
    return out


def _shown(question, evidence: list[Evidence], answerer) -> tuple[View, list[str]]:
    """What `zk ask` shows for the passages an answerer picks (view.py, as `answer_journal` builds it), and
    the passages it cites."""
    pick = answerer(question, evidence)
    return answer_view(question, evidence, pick), pick.cited


def test_a_count_counts_occasions_not_the_passages_their_entry_lends_the_word(journal, fake_llm):
    add_dated(journal, [
        ("2026-02-07T21:00", "오늘은 쓸 게 많다. 퇴근하고 동네 볼링장에서 볼링을 세 게임 쳤다. 최고 점수 142. "
                             "팔이 후들거린다.\n\n그리고 화분 얘기. 어제 베란다 고무나무 분갈이를 했다. 잎이 노랗게 "
                             "변해서 물도 줄였다. 흙은 인터넷으로 주문했다."),
        ("2026-05-16T21:30", "어제 저녁 회사 사람들이랑 볼링장에 갔다. 두 번째 게임에서 처음으로 스트라이크를 "
                             "세 번 연속 쳤다.\n이번엔 공을 13파운드로 바꿨다. 손목이 훨씬 편했다. 다음 달에 "
                             "팀 대회가 있다고 한다."),
        ("2026-07-02T21:00", "볼링장에 갔는데 리모델링 공사 중이라 못 치고 돌아왔다. 오늘은 집에서 국수를 삶아 "
                             "먹었다. 여름에는 역시 비빔국수다. 면은 찬물에 두 번 헹궜다."),
        ("2026-09-19T21:00", "사촌 동생 결혼식에 다녀왔다. 뷔페가 생각보다 맛있었다. 신부 드레스가 정말 예뻤다. "
                             "돌아오는 길에 고속도로가 많이 막혀서 세 시간이 걸렸다. 피곤한 하루였다.")])
    answer = ask_through(journal, "올해 볼링 몇 번 쳤어?")
    # 7 Feb and 15 May ("어제"); the 13-pound passage tells the same evening, July's did not happen, and
    # the February entry's plant passage ("어제 … 분갈이", another day) holds no 볼링 of its own
    assert answer.text.startswith("2번"), answer.text
    assert "고무나무" not in answer.view.text() and "분갈이" not in answer.view.text()
    assert fake_llm.tasks().count("answer") == 0


def test_how_many_of_asks_for_a_count_and_a_unit_after_how_many_is_no_subject():
    assert kind_of("How many of my tomato plants survived the heatwave?") == "count"
    assert subject_terms("크루아상 버터는 몇 도여야 해?") == ["크루아상", "버터"]
    assert subject_terms("도하 씨는 호텔에서 몇 년 일했어?")[-1] != "년"


def test_why_did_it_stop_prefers_the_change_that_gives_its_reason():
    question = analyse("수영 강습은 왜 그만뒀어?")
    evidence = _evidence([
        ("a-p1", "2026-06-14T21:00",
         "수영 강습은 지난주에 끝났으니 이제 아침엔 요가를 하기로 했다.", 0.55, {"수영", "강습"}),
        ("b-p0", "2026-06-03T21:00",
         "수영 강습은 어제가 마지막이었다. 이사하고 회사가 멀어져서 새벽반에 못 간다.", 0.55,
         {"수영", "강습"})])
    view, cited = _shown(question, evidence, ja.answer_why)
    assert cited == ["b-p0"] and "멀어져서" in view.headline


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
    assert "amount" in ja.decline_reason(declined, evidence)
    answered = analyse("How much did I sell my bike for?")
    evidence = _evidence([
        ("a-p0", "2026-05-02T21:00", "I'll probably sell the bike once I've moved.", 1.0, {"sell", "bike"}),
        ("b-p1", "2026-07-03T21:00", "자전거는 결국 중고 거래로 10만 원에 팔았다.", 0.49, {"sell"})])
    # the Korean passage names all that has a Korean word among the notes ("bike" has none here)
    assert ja.decline_reason(answered, evidence) == ""


def test_a_number_of_things_asked_for_is_a_list():
    assert kind_of("토리가 다닌 미용실 두 곳은 어디야?") == "list"
    assert kind_of("What were the two hospitals?") == "list"
    assert kind_of("How have I learned Japanese?") == "list"
    assert kind_of("사과 두 개 먹었어?") == "plain"  # a number in a yes/no question asks for nothing


def test_when_an_undated_passage_takes_the_day_its_entry_tells():
    # the best passage writes no date; the entry's earlier passage tells the story's day ("어제")
    question = analyse("스케일링은 며칠에 받았어?")
    evidence = _evidence([
        ("e-p1", "2026-10-14T21:00", "이번엔 스케일링만 받았다. 삼십 분쯤 걸렸다.", 0.9, {"스케일링"}),
        ("e-p0", "2026-10-14T21:00", "어제 퇴근하고 치과에 들렀다.", 0.5, set()),
        ("f-p0", "2026-05-13T21:00", "오늘 수영 강습에 갔다.", 0.0, set())])
    view, cited = _shown(question, evidence, ja.answer_when)
    assert cited == ["e-p1"] and view.headline.startswith("2026-10-13"), view.headline
    assert ja.story_day(evidence[2], evidence) == ""  # an entry with no other dated passage tells nothing


def test_when_reads_the_passage_that_dates_the_event_over_an_undated_mention():
    # an English question over Korean passages: "take" and "written" have no Korean word among the notes,
    # which makes them unknown there, not an event no passage words (that would date the first mention)
    question = analyse("When did Minho take his written exam?")
    question.with_alternates({"exam": ["시험"], "minho": ["민호"]})
    evidence = _evidence([
        ("a-p0", "2026-01-15T21:00", "민호가 전화해서 시험 원서비 얘기를 했다. 올해가 세 번째 도전이다.", 0.43,
         {"exam", "minho"}),
        ("b-p0", "2026-03-22T21:00",
         "민호는 시험이 3주도 안 남았다. 요즘은 전화해도 금방 끊는다.", 0.43, {"exam", "minho"}),
        ("c-p0", "2026-04-12T21:00",
         "어제 민호 필기시험. 아침 8시에 들어간다고 문자가 왔다.", 0.43, {"exam", "minho"})])
    for item, cosine in zip(evidence, (0.834, 0.817, 0.815)):
        item.cosine = cosine
    view, cited = _shown(question, evidence, ja.answer_when)
    assert cited == ["c-p0"] and view.headline.startswith("2026-04-11"), view.headline


def test_a_list_quotes_a_sentence_two_passages_share_once():
    question = analyse("가마에서 금이 간 작품 두 개는 뭐였어?")
    shared = "금 간 첫 그릇은 버릴까 하다가 다시 상자에 넣었다."
    evidence = _evidence([
        ("a-p3", "2026-05-13T21:00", shared, 0.6, {"금", "작품"}),
        ("a-p2", "2026-05-13T21:00", shared + " 버리는 건 어려운 일이다.", 0.6, {"금"}),  # read with its neighbour
        ("b-p0", "2026-03-11T21:00", "첫 그릇이 가마에서 금이 간 채로 나왔다.", 0.6, {"금", "가마"})])
    view, _cited = _shown(question, evidence, counting.answer_list)
    assert view.text().count(shared) <= 1, view.text()


def test_a_count_reads_the_sentence_with_the_subjects_rarest_word_for_what_did_not_happen():
    question = analyse("킥보드 배터리는 몇 번 갈았어?")
    subject = {"킥보드", "배터리"}
    evidence = _evidence([
        ("a-p0", "2026-02-03T21:00", "어제 출근길에 킥보드 배터리를 갈았다. 가게에서 삼십 분 걸렸다.", 1.0, subject),
        ("b-p1", "2026-07-03T21:00", "킥보드는 결국 중고로 넘겼다. 배터리 교체비도 못 건졌다.", 1.0, subject),
        ("c-p0", "2026-04-08T21:00", "킥보드 배터리를 또 갈았다. 이번엔 정품으로.", 1.0, subject)])
    view, cited = _shown(question, evidence, counting.answer_list)
    assert view.headline.startswith("2번") and "b-p1" not in cited, view.text()


def test_a_list_leaves_out_passages_its_entry_lends_the_subject():
    question = analyse("토리가 다닌 미용실 두 곳은 어디야?")
    evidence = _evidence([
        ("a-p1", "2026-01-15T21:00", "토리 미용. 별빛미용실 원장님이 발톱도 잘라주셨다.", 0.9, {"토리", "미용실"}),
        ("a-p0", "2026-01-15T21:00", "토리랑 공원을 두 바퀴 돌았다.", 0.6, {"토리"}),
        ("b-p0", "2026-07-19T21:00", "별빛미용실은 너무 멀어서 동네 구름미용실로 바꿨다.", 0.5, {"미용실"})],
        own=[0.9, 0.3, 0.6])
    view, cited = _shown(question, evidence, counting.answer_list)
    assert cited == ["a-p1", "b-p0"], view.text()
    assert [line.passage_id for line in view.supporting] == ["a-p1", "b-p0"], view.text()  # by date


def test_a_long_passage_quotes_the_sentence_that_answers_not_its_first_characters():
    question = analyse("Why did the landlord look so glum?")
    long_passage = ("The landlord came by this morning with a plate of rice cakes and a very long face, and we talked "
                    "on the stairs about the weather, his grandson and the broken mailbox. "
                    "In the end he said he is selling the building, because his knees cannot take the stairs "
                    "any more, so I have to find a new place by the end of summer. I did not sleep much.")
    evidence = _evidence([("a-p0", "2026-04-23T21:00", long_passage, 0.8, {"landlord", "move"})])
    view, _cited = _shown(question, evidence, ja.answer_why)
    assert "because his knees" in view.line.text and view.line.day == "2026-04-23", view.headline
    assert len(view.line.text) <= HEADLINE_QUOTE and "The landlord came by" not in view.line.text, view.headline


def test_a_passage_that_only_says_it_might_happen_is_neither_when_it_happened_nor_a_time():
    first = ("a-p0", "2026-01-10T21:00", "Jiwoo wrote from Busan that she might come up in spring.", 0.5,
             {"jiwoo", "busan"})
    visit = ("b-p0", "2026-05-24T21:00", "Jiwoo came up from Busan on Friday night and left this morning.", 0.5,
             {"jiwoo", "busan"})
    when = analyse("Which day did Jiwoo arrive from Busan?")
    assert ja.by_mention(when, _evidence([first, visit])).note.id == "b-p0"
    view, _cited = _shown(when, _evidence([first, visit]), ja.answer_when)
    assert view.headline.startswith("2026-05-22"), view.headline  # "on Friday night", written on Sunday the 24th
    count = analyse("How many times did Jiwoo come up from Busan?")
    view, cited = _shown(count, _evidence([first, visit]), counting.answer_list)
    assert view.headline.startswith("1 time:") and cited == ["b-p0"], view.text()


def test_a_one_syllable_word_meets_it_with_two_particles():
    from zettel_amem.answering.evidence import forms, has_term

    assert has_term("차", forms("도하 씨 차에서는 늘 라디오가 나온다"))
    assert has_term("집", forms("집에도 못 갔다"))
    assert not has_term("차", forms("차례를 기다렸다"))


def test_an_amount_counts_only_in_the_clause_naming_what_is_asked():
    asked = analyse("민지 생일 선물 얼마 줬어?")
    listed = _evidence([("a-p0", "2026-03-02T21:00", "이번 주 장보기. 우유 3천 원, 세탁소, 민지 생일 선물.", 0.9,
                         {"민지", "생일", "선물"})])
    assert "amount" in ja.decline_reason(asked, listed)  # the 3천 원 is the milk's
    wallet = analyse("How much was the wallet I looked at?")
    alone = _evidence([("a-p0", "2026-03-02T21:00", "Stood in front of a leather wallet for ten minutes. Black, "
                        "120,000 won.", 0.9, {"wallet", "look"})])
    assert ja.decline_reason(wallet, alone) == ""  # an amount alone in its clause: its sentence's, and the one before


def test_a_title_is_read_where_most_of_the_question_is_named():
    question = analyse("소라가 빌려준 책 제목이 뭐였지?")
    other_title = ("a-p0", "2026-06-01T21:00", "동아리 발표 제목은 '바다 위의 정원'으로 정했다.", 0.2, {"제목"})
    book = ("b-p0", "2026-05-11T21:00", "소라가 책을 한 권 빌려줬다. 장마 때 읽으라고.", 0.8, {"소라", "책"})
    assert "name" in ja.decline_reason(question, _evidence([other_title, book], own=[0.2, 0.8]))
    titled = ("c-p0", "2026-05-12T21:00", "소라가 빌려준 책은 '밤의 도서관'이다.", 0.9, {"소라", "책"})
    assert ja.decline_reason(question, _evidence([titled, book], own=[0.9, 0.8])) == ""
    assert not ja._GIVES_NAME.search("엄마는 '그냥 오지 마라'고 하셨다.")  # words said, not a name


def test_a_title_given_to_another_thing_is_no_title_even_as_its_languages_best():
    # the book is written of in English only; the one Korean passage naming "제목" titles a talk. It is the
    # best of its language, but "제목" names no subject, as "이름" names none
    question = analyse("소라가 빌려준 책 제목이 뭐였지?")
    other_title = ("a-p0", "2026-06-01T21:00", "동아리 발표 제목은 '바다 위의 정원'으로 정했다.", 0.2, {"제목"})
    book = ("b-p0", "2026-05-11T21:00", "Sora lent me a book for the rainy season.", 0.6, {"소라", "책"})
    assert "name" in ja.decline_reason(question, _evidence([book, other_title], own=[0.6, 0.2]))


def test_a_family_word_alone_names_no_occasion_in_the_other_language():
    # "엄마가 반찬 싸주신 게 몇 번이야?": an English passage about mom's day names "엄마" (by the family table)
    # and nothing else of the question; it is its language's best, but no time she packed food
    question = analyse("엄마가 올해 장아찌 싸주신 게 몇 번이야?")
    evidence = _evidence([
        ("a", "2026-03-02T21:00", "올라올 때 엄마가 장아찌를 두 병 싸주셨다.", 0.6, {"엄마", "장아찌", "싸주신"}),
        ("b", "2026-08-14T21:00", "이번에도 엄마가 장아찌를 싸주셨다.", 0.6, {"엄마", "장아찌", "싸주신"}),
        # near the best by words: its entry's Korean passages lend it theirs
        ("c", "2026-05-20T21:00", "Mom called about her knee appointment; it went fine.", 0.4, {"엄마"}),
    ], own=[0.6, 0.6, 0.2])
    view, cited = _shown(question, evidence, counting.answer_list)
    assert view.headline.startswith("2번:") and cited == ["a", "b"], view.text()


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
