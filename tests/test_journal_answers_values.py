"""Journal answers on page-long diaries (#36): a price or an age asked is read from a passage that
writes one (or declined when none on the subject does), "when" is the passage that tells the event rather
than one that supposes it, and a passage counts the question's words that the rest of its entry holds.
Scripted model (never called), real embedder."""

from __future__ import annotations

from tests.sample import add_dated, ask_through
from zettel_amem.core.words import korean_stem, subject_terms


def test_a_price_asked_is_read_from_the_passage_that_writes_one(journal, fake_llm):
    add_dated(journal, [
        ("2026-05-02T21:00", "I'll probably sell the bike once I've moved. The bus is fine for now."),
        ("2026-07-03T21:30", "드디어 이삿짐 정리 끝. 자전거는 결국 중고 거래로 10만 원에 팔았다. "
                             "아쉽지만 속이 시원하다."),
        ("2026-07-05T21:00", "Juno had a bath and rolled in the grass right after. Classic.")])
    answer = ask_through(journal, "How much did I sell my bike for?")
    assert "10만 원" in answer.text and "2026-07-03" in answer.text
    assert fake_llm.tasks().count("answer") == 0


def test_how_much_now_is_the_newest_passage_writing_an_amount(journal):
    add_dated(journal, [
        ("2026-01-04T21:00", "새해 다짐. 적금을 새로 들었다. 매달 40만 원, 1년짜리."),
        ("2026-06-10T21:00", "관평동은 월세가 올라서 적금 자동이체를 25만 원으로 줄였다."),
        ("2026-08-25T21:00", "With the raise I can push the monthly savings transfer back up from September."),
        ("2026-10-27T22:00", "이번 달 가계부. 적금은 9월부터 한 달에 50만 원씩 잘 들어가고 있다."),
        ("2026-10-29T21:00", "적금 앱 비밀번호를 또 잊어버려서 은행에 전화했다.")])  # newer, but no amount
    answer = ask_through(journal, "적금 지금 한 달에 얼마씩 넣어?")
    assert "50만 원" in answer.text and "2026-10-27" in answer.text


def test_an_age_no_passage_on_the_person_writes_is_not_recorded(journal):
    add_dated(journal, [
        ("2026-07-28T21:30", "Doha starts next Monday. He spent five years in a hotel pastry kitchen in Seoul."),
        ("2026-08-25T21:00", "Doha lives ten minutes from me, and he drives. He offered to pick me up."),
        ("2026-09-01T21:00", "Mrs. Oh turned sixty today; we baked her a cake shaped like an oven.")])
    answer = ask_through(journal, "How old is Doha?")
    assert answer.mode == "declined" and "age" in answer.text
    answered = ask_through(journal, "Where does Doha live?")  # the same person, a value the notes give
    assert answered.mode != "declined" and "ten minutes" in answered.text


def test_when_is_the_passage_that_tells_the_event_not_the_one_that_supposes_it(journal):
    add_dated(journal, [
        ("2026-04-23T22:00", "밤에 부동산 앱을 세 시간 봤다. 관평동 쪽 투룸이 생각보다 괜찮다."),
        ("2026-06-03T22:00", "물리치료는 어제 마지막으로 받았다. "
                             "이사 가면 너무 멀어져서 관평동 쪽에서 새로 알아보기로 했다."),
        ("2026-06-14T21:30", "어제 이사를 했다. 아침 8시에 용달이 왔고 오후 2시에 끝났다.\n\n"
                             "관평동 새 집은 4층, 동쪽 베란다로 아침 해가 들어온다. 주노는 현관 앞에서 잤다.")])
    answer = ask_through(journal, "관평동으로 이사한 날짜는?")
    assert answer.text.startswith("2026-06-13"), answer.text


def test_korean_stems_drop_the_ending_before_a_noun_where_two_syllables_stay():
    assert korean_stem("이사한") == "이사" and korean_stem("시작했던") == "시작"
    assert korean_stem("대한") == "대한"  # "~에 대한": no stem of one syllable
    assert subject_terms("관평동으로 이사한 날짜는?") == ["관평동", "이사"]  # "날짜" asks, it names nothing


def test_family_words_and_units_meet_the_other_language():
    from zettel_amem.answering.term_bridge import kin_bridge

    assert kin_bridge("mom") == ["엄마", "어머니"] and kin_bridge("아빠") == ["dad", "father"]
    assert kin_bridge("restaurant") == []


def test_a_unit_asked_inside_a_longer_word_is_still_the_unit(journal):
    add_dated(journal, [
        ("2026-01-09T21:30", "크루아상 버터는 12도가 딱 좋단다, 루카스 말로는. 손이 따뜻해서 자꾸 녹았다."),
        ("2026-03-01T21:00", "루카스는 크루아상은 버터가 전부라고 했다. 버터는 꼭 프랑스산이어야 한다고."),
        ("2026-09-09T21:00", "첫 크루아상을 구워보니 색이 고르게 났다. 루카스한테 사진을 보냈다.")])
    answer = ask_through(journal, "루카스가 크루아상 버터는 몇 도여야 한다고 했어?")
    assert "12도" in answer.text, answer.text


def test_an_irregular_past_meets_its_verb(journal):
    add_dated(journal, [("2026-03-02T21:00", "Looked at cars all afternoon. The dealer was pushy."),
                        ("2026-04-11T21:00", "I bought a used Avante from my cousin. It smells like his dog."),
                        ("2026-05-02T21:00", "Washed the car with Juno. He tried to eat the sponge.")])
    answer = ask_through(journal, "Which car did I buy?")
    assert "Avante" in answer.text, answer.text


def test_a_one_syllable_word_is_matched_as_a_word_and_a_particle_fits_its_noun():
    from zettel_amem.answering.evidence import forms, has_term

    assert has_term("벌", forms("풀숲에서 벌에 쏘였다.")) and has_term("벌", forms("벌 한 마리"))
    assert not has_term("벌", forms("벌써 가을이다."))  # a syllable inside another word
    assert korean_stem("작가") == "작가" and korean_stem("차가") == "차"  # 가 never follows a closed syllable
    assert korean_stem("책을") == "책" and korean_stem("서울로") == "서울" and korean_stem("집으로") == "집"


def test_the_day_something_happened_is_not_a_subject(journal):
    add_dated(journal, [
        ("2026-06-10T21:00", "주노는 박스가 쌓여가는 걸 보고 불안한지 밤마다 내 침대 발치에 와서 잔다. 벌써 여름이다."),
        ("2026-07-19T21:20", "어제 저녁 관평천 산책하다가 주노가 풀숲에 코를 박더니 튀어나왔다. 벌에 쏘였다."),
        ("2026-08-02T21:00", "주노 산책 날. 비가 와서 짧게 돌았다.")])
    answer = ask_through(journal, "주노가 벌에 쏘인 날은 언제야?")
    assert answer.text.startswith("2026-07-18"), answer.text


def test_where_asks_and_a_bridged_verb_meets_its_other_forms(journal):
    assert subject_terms("요즘 주로 어디서 달려?") == ["달려"]
    add_dated(journal, [("2026-02-15T21:00", "Ran 12 km, longest this year. Left knee felt a bit stiff."),
                        ("2026-09-01T21:00", "Onbiseo 1.0 launched today, and Sora ran the launch."),
                        ("2026-11-28T08:00", "Morning run with Bori, 3 km around Seoul Forest.")])
    from zettel_amem.answering.evidence import forms, mentions
    from zettel_amem.answering.questions import analyse

    question = analyse("요즘 주로 어디서 달려?")
    question.with_alternates({"달려": ["ran"]})  # what the bridge gives
    assert mentions(question, "달려", forms("Morning run with Bori")) and mentions(question, "달려", forms("Ran 12 km"))
    assert not mentions(question, "달려", forms("Rainy day at home"))
    assert ask_through(journal, "요즘 주로 어디서 달려?").view.line.day == "2026-11-28"
