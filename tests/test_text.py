"""Character-safe cuts and trivial-message detection, in Korean and English."""

from zettel_amem.text import clip, clip_end, estimate_tokens, is_trivial


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
    for text in ("ok", "ㅇㅋ", "고마워", "thanks!", "👍👍", "ㅋㅋㅋㅋ", "  "):
        assert is_trivial(text), text
    for text in ("무릎이 아프다", "ok, the race is on 3 May", "10km"):
        assert not is_trivial(text), text


def test_token_estimate_counts_hangul_per_character():
    assert estimate_tokens("무릎") == 2
    assert estimate_tokens("knee hurts") == 3
