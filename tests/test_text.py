"""Character-safe cuts and trivial-message detection, in Korean and English."""

from zettel_amem.core.text import clip, clip_end, estimate_tokens, is_blank, is_trivial, unix_line_ends, visible

# Text that shows nothing (issue #53 C10): zero-width spaces and joiners, the BOM, the Hangul fillers (U+3164 is
# the "blank" character Korean users paste), the Braille blank, a lone bidi override, embedding, isolate or mark,
# the soft hyphen, a variation selector, the combining grapheme joiner, mixed with ordinary and odd spaces.
INVISIBLE_ONLY = ["\u200b", "\u200b\u200c\u200d\u2060", "\ufeff", "\u3164\u3164", "\u115f\u1160", "\uffa0",
                  "\u2800", "\u202e", "\u202a\u202c", "\u2066\u2069", "\u200e\u200f", "\u00ad", "\ufe0f", "\u034f",
                  "\U000e0041", " \u3164 \u200b\n\u2800\t\u00a0\u2003\u3000 "]
# ... and text with something visible besides them, which is a note (stored exactly as written).
VISIBLE_WITH_THEM = ["안녕\u200b하세요 \u3164 반가워요", "\u202eabc", "a\u2800b", "👩\u200d💻 coding",
                     "\u3164\u3164ㅋ", "\u200b.", "\ufeffBOM inside"]


def test_clip_cuts_on_characters_and_marks_the_cut():
    text = "병원에서 2주 동안 뛰지 말라고 했다"
    cut = clip(text, 8)
    assert len(cut) <= 8 and cut.endswith("…")
    assert text.startswith(cut[:-1].rstrip())
    cut.encode("utf-8")  # never a broken sequence
    assert clip("short", 10) == "short"


def test_clip_does_not_strand_a_combining_mark():
    text = "e\u0301" * 10  # e + combining acute: 20 code points, 10 visible letters
    for limit in range(2, 12):
        body = clip(text, limit)[:-1]
        assert body == "e\u0301" * (len(body) // 2), (limit, body)  # whole letters only
    assert clip_end("가나다라마", 3) == "다라마"
    assert clip_end("e\u0301" * 3, 3) == "e\u0301"


def test_trivial_messages():
    for text in ("ok", "ㅇㅋ", "고마워", "thanks!", "👍👍", "ㅋㅋㅋㅋ", "  ", "hahaha", "하하하", "ㅠ", "zzz"):
        assert is_trivial(text), text
    # Two-syllable Korean names and short topics are not filler.
    for text in ("무릎이 아프다", "ok, the race is on 3 May", "10km", "지수", "현우", "감기", "DB", "AI?", "mama"):
        assert not is_trivial(text), text


def test_decomposed_hangul_is_cut_on_syllables_and_matches_composed_text():
    import unicodedata

    from zettel_amem.core.text import keyword_terms as tokens
    from zettel_amem.memory import content_hash

    composed = "무릎이 아프다"
    decomposed = unicodedata.normalize("NFD", composed)
    assert decomposed != composed and tokens(decomposed) == tokens(composed) != []
    cut = clip(decomposed, 4)
    assert unicodedata.normalize("NFC", cut[:-1]) in ("무", "무릎")  # whole syllables, never "무ᄅ"
    assert unicodedata.normalize("NFC", clip_end(decomposed, 4)) in ("프다", "다")  # never a bare vowel
    assert content_hash(decomposed) == content_hash(composed)


def test_token_estimate_counts_hangul_per_character():
    assert estimate_tokens("무릎") == 2
    assert estimate_tokens("knee hurts") == 3


def test_statements_drop_the_questions_of_a_turn():
    from zettel_amem.core.text import statements

    assert statements("Wow, Mel! What got you into running?") == "Wow, Mel!"
    # What a turn shows is kept: the photo's caption is the sender's.
    assert statements("Love it, any special meaning to it? [image: a necklace]") == "[image: a necklace]"
    assert statements("I made it myself. Do you like it? It took a week.") == "I made it myself. It took a week."
    assert statements("지난주에 새 타투를 했어. 어때 보여？ 의미가 있어.") == "지난주에 새 타투를 했어. 의미가 있어."
    assert statements("No question here") == "No question here"


def test_blank_text_is_whitespace_format_characters_and_fillers_only():
    for text in ["", " ", "\n\t", "\u00a0\u2003", *INVISIBLE_ONLY]:
        assert is_blank(text), ascii(text)
    for text in VISIBLE_WITH_THEM + ["무릎", "x", "ㅋ", "\u00a0.", "\u0301"]:
        assert not is_blank(text), ascii(text)


def test_windows_line_ends_become_lf_and_are_never_shown_as_escapes():
    """Issue #53 C2: CRLF (and CR CR LF) in typed text is LF; a lone CR is kept. Shown, any CR is a line break."""
    assert unix_line_ends("첫 줄\r\nsecond\r\r\nold mac\rline\n") == "첫 줄\nsecond\nold mac\rline\n"
    assert visible("첫 줄\r\nsecond\rthird\x1b[2J") == "첫 줄\nsecond\nthird\\x1b[2J"


def test_clip_phrase_ends_at_a_sentence_then_a_phrase_then_a_word_never_mid_word():
    from zettel_amem.core.text import clip_phrase, phrases

    text = "도하 씨가 월요일부터 출근했다. 말이 없는 편인데 설탕 공예는 정말 잘한다. 집이 송강동이라 같은 버스를 탄다."
    assert clip_phrase(text, 50) == "도하 씨가 월요일부터 출근했다. 말이 없는 편인데 설탕 공예는 정말 잘한다."
    assert clip_phrase(text, 200) == text  # it fits: unchanged
    long = "The doctor says no running for 2 weeks because of my knee, so the race in May is off for me"
    assert clip_phrase(long, 70) == "The doctor says no running for 2 weeks because of my knee…"  # at the comma
    assert clip_phrase("I went to the market and bought apples and pears and then went home", 40) == \
        "I went to the market and bought apples…"  # at a whole word
    assert clip_phrase("x" * 50, 20) == clip("x" * 50, 20)  # one word: cut as clip does
    # a string that ran into a cap (a grammar's) is cut back even though it fits
    ran_into_cap = "Runs 10 km every weekend at Yeouido with the club. Training for the autumn race i"
    assert clip_phrase(ran_into_cap, len(ran_into_cap), cut_short=True) == \
        "Runs 10 km every weekend at Yeouido with the club."
    assert phrases("40분 넘게 누워 있었는데, 옆 침대의 가람이는 헌혈로 60회를 채웠다.") == \
        ["40분 넘게 누워 있었는데,", " 옆 침대의 가람이는 헌혈로 60회를 채웠다."]


def test_a_comma_or_colon_inside_a_number_ends_no_phrase():
    from zettel_amem.core.text import clip_phrase, phrases

    assert phrases("Rent is 1,100,000 won at 3:30 a month, sadly.") == \
        ["Rent is 1,100,000 won at 3:30 a month,", " sadly."]
    assert clip_phrase("After rent I have about 1,100,000 won left for food and the cat", 40) == \
        "After rent I have about 1,100,000 won…"
