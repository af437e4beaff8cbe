"""A question meets entries written in the journal's other language (#36): search adds the question's
words as the notes write them in that language (term_bridge.search_terms: the embedder's translations
and names spelled in the other script), and each language's cosines are ranked on one scale
(passage_rank.per_language_scale). Real embedder, no model call."""

from __future__ import annotations

from sample import add_dated

from zettel_amem.answering.term_bridge import name_spellings, search_terms
from zettel_amem.core.models import Note
from zettel_amem.retrieval.passage_rank import MIN_PER_LANGUAGE, both_languages, mostly_korean, per_language_scale
from zettel_amem.retrieval.retrieve import Hit

# An English journal that talks about work a lot, and two Korean entries: only one says where the
# brother works now, and it names him in Hangul.
ENGLISH = [("2026-08-01T21:00", "Work was long today. Mrs. Oh wants the cake orders done by Friday."),
           ("2026-08-03T21:00", "My shift at work starts at six now, and I like the quiet mornings."),
           ("2026-08-05T21:00", "Doha showed me how he works sugar into roses. Work felt like play."),
           ("2026-08-07T21:00", "Juno needs a bath. He rolled in something awful at the park."),
           ("2026-08-09T21:00", "Payday. Rent, savings, and a little left for a new pair of shoes."),
           ("2026-08-11T21:00", "Where does the time go? A whole week of work and nothing else."),
           ("2026-08-13T21:00", "Called Mom. Her restaurant is busy with the summer tourists."),
           ("2026-08-15T21:00", "A new cafe opened near work. Their croissants are not as good as ours."),
           ("2026-08-17T21:00", "Rain all day. I read on the sofa and Juno slept on my feet.")]
KOREAN = [("2026-09-02T21:40", "태오도 어제 순천 중학교 행정실로 첫 출근을 했다. 엄마가 제일 좋아하셨다."),
          ("2026-09-04T21:00", "주노랑 관평천 산책. 저녁 바람이 선선해졌다.")]


def _note(text: str) -> Note:
    return Note(id=text[:8], content=text, at="2026-09-01T00:00")


def test_an_english_question_finds_the_korean_entry_that_names_its_person(memory):
    add_dated(memory, ENGLISH + KOREAN)
    question = "Where does Taeo work now?"
    top = [h.note.content for h in memory.search(question, 3, follow_links=False)]
    assert any("태오" in text for text in top), top
    assert "태오" in memory.searcher.last_bridged  # found by its name in Hangul, not by chance

    memory.searcher.bridge = None  # without the bridge (and no places kept for Korean) English work wins
    memory.settings.search_other_language = 0.0
    top = [h.note.content for h in memory.search(question, 3, follow_links=False)]
    assert not any("태오" in text for text in top), top


def test_a_korean_question_finds_the_english_entry_by_its_words(memory):
    add_dated(memory, ENGLISH + KOREAN)
    hits = memory.search("엄마 식당은 요즘 어때?", 3, follow_links=False)
    assert any("restaurant" in h.note.content for h in hits), [h.note.content for h in hits]
    assert "restaurant" in memory.searcher.last_bridged or "mom" in memory.searcher.last_bridged


def test_names_meet_their_spelling_in_the_other_script():
    notes = [_note("Baek Doha starts on Monday."), _note("태오도 첫 출근을 했다. 루카스한테 사진을 보냈다.")]
    assert name_spellings(["도하"], notes) == {"도하": ["doha"]}
    assert name_spellings(["taeo"], notes) == {"taeo": ["태오"]}
    assert name_spellings(["monday", "오"], notes) == {}  # no such Hangul word; one syllable is no name


def test_names_meet_by_their_sound_where_romanisation_differs():
    # "루카스" romanises as "rukaseu", "계족산" as "gyejoksan" (and "Gyejoksan" may be spelt "Gyejogsan"): the
    # sound key makes c/k, l/r and a loanword's added "eu" one
    notes = [_note("Lucas left for Lyon on Friday."), _note("오늘 계족산 황톳길을 걸었다.")]
    assert name_spellings(["루카스"], notes) == {"루카스": ["lucas"]}
    assert name_spellings(["gyejogsan"], notes) == {"gyejogsan": ["계족산"]}
    assert name_spellings(["루카스"], [_note("a lucas-style fold")]) == {}  # by sound, only a capitalised word
    assert name_spellings(["lucas"], [_note("Lucas left."), _note("루카스가 떠났다.")]) == {"lucas": ["루카스"]}


def test_a_one_language_journal_adds_nothing():
    notes = [_note("Work was long today."), _note("Called Mom about the restaurant.")]
    assert search_terms("Where does Taeo work now?", notes, embed=_never) == []
    assert search_terms("출근은 어떻게 해?", [_note("출근은 도하 씨 차로 한다.")], embed=_never) == []


def _never(words):
    raise AssertionError("a one-language journal needs no embedding of words")


def test_each_language_is_ranked_on_its_own_scale():
    # Korean passages score high for a Korean question whatever they say; the one English passage that
    # stands out among the English ones is the best match, though its cosine is lower.
    korean = [0.85 + 0.001 * (i % 5) for i in range(MIN_PER_LANGUAGE)]
    english = [0.75 + 0.001 * (i % 5) for i in range(MIN_PER_LANGUAGE - 1)] + [0.80]
    cosines = korean + english
    flags = [True] * len(korean) + [False] * len(english)
    scaled = per_language_scale(cosines, flags, query_korean=True)
    assert max(range(len(scaled)), key=scaled.__getitem__) == len(cosines) - 1

    # With too few passages in one language: the raw cosines plus the fixed offset; the Korean ones win.
    few = per_language_scale(korean[:3] + [0.80], [True, True, True, False], query_korean=True)
    assert max(range(4), key=few.__getitem__) in (0, 1, 2)
    assert per_language_scale([0.9, None], [True, True], True)[1] < 0.9  # a unit without a vector is last


def _hit(text: str) -> Hit:
    return Hit(_note(text), 1.0)


def test_the_first_k_keep_places_for_the_other_language():
    english = [_hit(f"English entry number {i}.") for i in range(6)]
    korean = [_hit(f"한국어 일기 {i}번째.") for i in range(3)]
    hits = english + korean
    shown = both_languages(hits, k=4, query="What did I do?", reserve=2)[:4]
    # the two best Korean hits take the places of the two lowest English ones among the first four
    assert shown == english[:2] + korean[:2]
    assert both_languages(hits, 4, "What did I do?", reserve=0) == hits
    assert both_languages(english, 4, "What did I do?", reserve=2) == english  # one language: as it was
    again = both_languages(hits, 8, "What did I do?", reserve=2)  # already among the first k: as it was
    assert again == hits


def test_a_korean_question_shows_the_best_english_entries_beside_the_korean_ones(memory):
    # every Korean entry shares the question's words; the English one that answers shares none
    korean = [(f"2026-09-{day:02d}T21:00", f"수영장 가는 날. 오늘도 수영 끝나고 {food} 먹었다.")
              for day, food in ((1, "라면"), (3, "김밥"), (5, "떡볶이"), (7, "만두"), (9, "우동"))]
    english = [("2026-09-10T21:00", "The pool I swim at now is the new one by the river, open until ten."),
               ("2026-09-11T21:00", "Bought a blue notebook and two pens.")]
    add_dated(memory, korean + english)
    question = "요즘 다니는 수영장은 어디야?"
    memory.settings.search_other_language = 0.0
    plain = [h.note.content for h in memory.search(question, 2, follow_links=False)]
    assert all(mostly_korean(text) for text in plain), plain
    memory.settings.search_other_language = 0.5
    both = [h.note.content for h in memory.search(question, 2, follow_links=False)]
    assert any("pool" in text for text in both), both
    assert sum(mostly_korean(text) for text in both) == 1


def test_a_page_is_korean_when_most_of_its_letters_are():
    assert mostly_korean("Doha 씨가 자기 집에 안 쓰는 키친에이드가 있다고 빌려주겠다고 했다.")
    assert not mostly_korean("Mrs. Oh called me into the office after my shift today. 오 사장님 고마워요.")
    assert not mostly_korean("12 / 34")


def test_a_small_journal_bridges_names_and_family_words_but_asks_the_embedder_nothing():
    notes = [_note("Knee hurts since Saturday's run, stopped at 8km."),
             _note("나는 주말마다 한강에서 10km 달리기를 한다."), _note("엄마가 태오 얘기를 했다.")]
    assert search_terms("What did Mom say about Taeo's knee?", notes, embed=_never) == ["엄마", "어머니", "태오"]
