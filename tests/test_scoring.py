"""Hand-made cases for bench.scoring; every expected value is worked out by hand in the comment beside it."""

import math

import pytest

from bench.scoring import (
    CATEGORY_NAMES,
    abstains,
    bleu1,
    evidence_ids,
    evidence_recall,
    locomo_f1,
    normalize_answer,
    paper_f1,
    paper_tokens,
    parse_dia_id,
    porter_stem,
    summarize,
    token_f1,
)


def test_category_names_use_locomo_ids() -> None:
    assert CATEGORY_NAMES == {
        1: "multi-hop",
        2: "temporal",
        3: "open-domain",
        4: "single-hop",
        5: "adversarial",
    }


# --- normalisation and stemming ----------------------------------------------------------------------


def test_normalize_drops_articles_and_punctuation() -> None:
    # lower -> "the quick, brown fox -- and an owl!"; commas and punctuation deleted; the/and/an dropped
    assert normalize_answer("The Quick, brown fox -- and AN owl!") == "quick brown fox owl"


def test_normalize_deletes_punctuation_inside_words_and_keeps_article_prefixes() -> None:
    # punctuation is removed, not spaced: "self-care" -> "selfcare", "Don't" -> "dont";
    # "theater"/"android" keep their letters because articles are matched on word boundaries
    expected = "dont skip selfcare at theater android"
    assert normalize_answer("Don't skip self-care at the theater, android") == expected


def test_normalize_coerces_non_strings() -> None:
    assert normalize_answer(2022) == "2022"


@pytest.mark.parametrize(
    ("word", "stem"),
    [
        ("caresses", "caress"),  # 1a: sses -> ss
        ("ponies", "poni"),  # 1a: ies -> i (5 letters)
        ("dies", "die"),  # NLTK: 4-letter ies -> ie
        ("cats", "cat"),  # 1a: s -> ""
        ("agreed", "agre"),  # 1b: eed -> ee (m("agr")=1); 5a drops e: m("agre")=1, "gre" is not cvc
        ("hopping", "hop"),  # 1b: ing removed, double p undoubled
        ("filing", "file"),  # 1b: "fil" has m=1 and is cvc -> add e; 5a keeps it (cvc)
        ("happy", "happi"),  # 1c: y after consonant -> i
        ("enjoy", "enjoy"),  # 1c: y after vowel stays (NLTK rule)
        ("relational", "relat"),  # 2: -> "relate"; 4 keeps ate (m("rel")=1); 5a: m("relat")=2, drop e
        ("generalization", "gener"),  # 2: ization -> ize; 3: alize -> al; 4: al dropped (m("gener")=2)
        ("was", "wa"),  # 1a: s -> "" (3-letter words are stemmed)
        ("paris", "pari"),  # 1a: s -> ""
        ("rome", "rome"),  # 5a: m("rom")=1 and "rom" is cvc -> keep e
        ("dying", "die"),  # irregular-forms table
        ("is", "is"),  # <= 2 letters untouched
    ],
)
def test_porter_stem_matches_nltk_variant(word: str, stem: str) -> None:
    assert porter_stem(word) == stem


# --- LoCoMo token F1 ---------------------------------------------------------------------------------


def test_token_f1_partial_overlap() -> None:
    # gold "The cat sat" -> [cat, sat]; pred "a cat sat down" -> [cat, sat, down]
    # common 2, P = 2/3, R = 2/2 = 1, F1 = 2*(2/3)*1/(2/3+1) = (4/3)/(5/3) = 0.8
    assert token_f1("a cat sat down", "The cat sat") == pytest.approx(0.8)


def test_token_f1_uses_stems() -> None:
    # "the cats" -> [cat]; "cat" -> [cat]; common 1, P = R = 1 -> F1 = 1
    assert token_f1("the cats", "cat") == 1.0


def test_token_f1_is_multiset() -> None:
    # pred [pari, pari], gold [pari]: common = min(2, 1) = 1, P = 1/2, R = 1, F1 = 2*(1/2)/(3/2) = 2/3
    assert token_f1("Paris Paris", "Paris") == pytest.approx(2 / 3)


def test_token_f1_no_overlap_and_empty() -> None:
    assert token_f1("dog", "cat") == 0.0  # common 0
    assert token_f1("", "cat") == 0.0  # common 0
    assert token_f1("the", "a") == 0.0  # both normalise to nothing -> common 0


# --- LoCoMo per-category rules -----------------------------------------------------------------------


def test_category1_comma_rule() -> None:
    # gold parts "Paris" -> [pari], "Rome" -> [rome]
    # pred "Rome and Paris" is one part -> [rome, pari]; vs [pari]: P 1/2, R 1 -> F1 2/3; vs [rome]: 2/3
    # mean over gold parts = (2/3 + 2/3) / 2 = 2/3
    assert locomo_f1("Rome and Paris", "Paris, Rome", 1) == pytest.approx(2 / 3)
    # pred "Rome": best for Paris = 0, best for Rome = 1 -> (0 + 1) / 2 = 0.5
    assert locomo_f1("Rome", "Paris, Rome", 1) == pytest.approx(0.5)
    # pred parts "Paris", "Rome", "London": each gold part finds an exact part -> (1 + 1) / 2 = 1;
    # the extra predicted part costs nothing under the official rule
    assert locomo_f1("Paris, Rome, London", "Paris, Rome", 1) == 1.0


def test_category3_uses_gold_before_semicolon() -> None:
    # gold "Psychology; counseling certification" -> "Psychology" -> [psycholog] (1c y->i, 2 logi->log)
    # pred "psychology" -> [psycholog]: common 1, P = R = 1 -> F1 1
    assert locomo_f1("psychology", "Psychology; counseling certification", 3) == 1.0
    # pred "counseling" -> [counsel] shares nothing with [psycholog] -> 0 (the part after ';' is ignored)
    assert locomo_f1("counseling", "Psychology; counseling certification", 3) == 0.0


def test_category2_and_4_plain_token_f1_with_int_gold() -> None:
    # gold 2022 -> "2022" -> [2022]; pred "It was 2022" -> [it, wa, 2022]
    # common 1, P = 1/3, R = 1, F1 = 2*(1/3)/(4/3) = 0.5
    assert locomo_f1("It was 2022", 2022, 2) == pytest.approx(0.5)
    # the category-1 comma rule does not apply to category 4: pred [rome] vs gold [pari, rome]
    # common 1, P = 1, R = 1/2, F1 = 2*(1/2)/(3/2) = 2/3
    assert locomo_f1("Rome", "Paris, Rome", 4) == pytest.approx(2 / 3)


def test_category5_phrases() -> None:
    assert locomo_f1("No information available.", None, 5) == 1.0  # contains phrase 1
    assert locomo_f1("That is NOT MENTIONED in the chat", "self-care", 5) == 1.0  # phrase 2, case-insensitive
    assert locomo_f1("self-care is important", "self-care is important", 5) == 0.0  # no phrase
    assert locomo_f1("not  mentioned", None, 5) == 0.0  # literal substring: double space does not match


def test_unknown_category_raises() -> None:
    with pytest.raises(ValueError):
        locomo_f1("x", "x", 6)


# --- A-MEM paper F1 and BLEU-1 -----------------------------------------------------------------------


def test_paper_tokens() -> None:
    # ". , ! ?" become spaces; other punctuation and articles stay; no stemming
    assert paper_tokens("The Cat's hat, 3.5!") == ["the", "cat's", "hat", "3", "5"]


def test_paper_f1_is_set_based() -> None:
    # sets {paris} vs {paris}: common 1, P = R = 1 -> 1.0 (multiset token_f1 gives 2/3 on the same pair)
    assert paper_f1("Paris Paris", "Paris") == 1.0
    assert token_f1("Paris Paris", "Paris") == pytest.approx(2 / 3)


def test_paper_f1_partial_and_unstemmed() -> None:
    # {paris, france} vs {paris}: P = 1/2, R = 1, F1 = 2*(1/2)/(3/2) = 2/3
    assert paper_f1("Paris, France.", "paris") == pytest.approx(2 / 3)
    # no stemming or article removal: {the, cats} vs {cat} -> common 0
    assert paper_f1("the cats", "cat") == 0.0
    # int gold: {in, 2022} vs {2022}: P = 1/2, R = 1 -> 2/3
    assert paper_f1("in 2022", 2022) == pytest.approx(2 / 3)


def test_paper_f1_empty_prediction() -> None:
    assert paper_f1("", "paris") == 0.0
    assert paper_f1(None, "paris") == 0.0


def test_bleu1_brevity_penalty() -> None:
    # pred [the, cat] (c=2), ref [the, cat, sat, on, the, mat] (r=6)
    # clipped matches: the min(1,2)=1 + cat 1 = 2 -> p1 = 2/2 = 1; BP = exp(1 - 6/2) = exp(-2)
    assert bleu1("the cat", "the cat sat on the mat") == pytest.approx(math.exp(-2))


def test_bleu1_clipping_and_no_penalty_when_longer() -> None:
    # pred [the, the, the] (c=3) vs ref [the, cat] (r=2): c > r -> BP = 1; clipped the = min(3,1) = 1
    # p1 = 1/3
    assert bleu1("the the the", "the cat") == pytest.approx(1 / 3)
    # equal lengths c = r = 4 -> BP = exp(1 - 4/4) = 1; matches a, b -> p1 = 2/4 = 0.5
    assert bleu1("a b c d", "a b x y") == pytest.approx(0.5)


def test_bleu1_zero_overlap_is_zero_not_smoothed() -> None:
    # NLTK returns 0 before method1 smoothing when no unigram matches; an epsilon-smoothed value would
    # have been (0 + 0.1)/1 * BP = 0.1 * exp(1 - 1/1) = 0.1, which we must not produce
    assert bleu1("dog", "cat") == 0.0


def test_bleu1_empty_prediction() -> None:
    assert bleu1("", "cat") == 0.0
    assert bleu1("?!", "cat") == 0.0  # tokenises to nothing


# --- dia_ids and evidence ----------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("raw", "parsed"),
    [
        ("D1:3", (1, 3)),
        ("D1:3 ", (1, 3)),  # trailing space
        (" d12:07", (12, 7)),  # lower-case d, leading zero
        ("D:11:26", (11, 26)),  # stray colon after D (seen in LoCoMo data)
        ("D1:3;", (1, 3)),  # trailing separator
        ("D", None),  # junk entry (seen in LoCoMo data)
        ("D1", None),  # no turn number
        ("1:3", None),  # no D prefix
        ("D8:6; D9:17", None),  # two ids: evidence_ids splits these first
        ("", None),
        (None, None),
    ],
)
def test_parse_dia_id(raw: object, parsed: tuple[int, int] | None) -> None:
    assert parse_dia_id(raw) == parsed


def test_evidence_ids_splits_repairs_and_drops_junk() -> None:
    qa = {"evidence": ["D8:6; D9:17", "D", "D:11:26", "D1:3 ", "D1:3"], "category": 1}
    # "D8:6; D9:17" -> 2 ids; "D" dropped; "D:11:26" -> "D11:26"; "D1:3 " and "D1:3" -> one id
    assert evidence_ids(qa) == {"D8:6", "D9:17", "D11:26", "D1:3"}


def test_evidence_ids_space_separated_and_missing() -> None:
    assert evidence_ids({"evidence": ["D1:2 D3:4"]}) == {"D1:2", "D3:4"}
    assert evidence_ids({"evidence": []}) == set()
    assert evidence_ids({"question": "q"}) == set()


def test_evidence_ids_valid_filter() -> None:
    # D10:19 names no turn of the conversation -> dropped when the valid ids are given
    assert evidence_ids({"evidence": ["D1:1", "D10:19"]}, valid={"D1:1", "D1:2"}) == {"D1:1"}


def test_evidence_recall_all_and_any_at_k() -> None:
    evidence = {"D1:3", "D2:5"}
    retrieved = ["D4:1", "D1:3", "D1:3", "D9:9", "D2:5"]
    # distinct order: D4:1, D1:3, D9:9, D2:5
    assert evidence_recall(evidence, retrieved, 1) == (False, False)  # top1 {D4:1}: none
    assert evidence_recall(evidence, retrieved, 2) == (False, True)  # {D4:1, D1:3}: 1 of 2
    assert evidence_recall(evidence, retrieved, 3) == (False, True)  # duplicate D1:3 does not use a slot
    assert evidence_recall(evidence, retrieved, 4) == (True, True)  # {.., D2:5}: 2 of 2
    assert evidence_recall(evidence, retrieved, None) == (True, True)  # all retrieved
    assert evidence_recall(evidence, retrieved, 0) == (False, False)  # nothing retrieved
    assert evidence_recall(evidence, [], None) == (False, False)


def test_evidence_recall_normalises_ids_and_rejects_empty_evidence() -> None:
    assert evidence_recall({"D1:3"}, ["D1:3 "], 5) == (True, True)  # trailing space in retrieved id
    with pytest.raises(ValueError):
        evidence_recall(set(), ["D1:3"], 5)
    with pytest.raises(ValueError):
        evidence_recall({"D1:3"}, ["D1:3"], -1)


# --- summarize ---------------------------------------------------------------------------------------


def test_summarize_means_counts_and_skips() -> None:
    records = [
        {"category": 1, "f1": 1.0, "recall_all@10": True, "question": "a"},
        {"category": 1, "f1": 0.5, "recall_all@10": False, "question": "b"},
        {"category": 2, "f1": None, "recall_all@10": True, "question": "c"},
        {"category": 5, "f1": 0.0, "recall_all@10": None, "question": "d"},
    ]
    out = summarize(records)
    overall = out["overall"]
    assert overall["questions"] == 4
    assert "question" not in overall["metrics"]  # text key is not averaged
    assert "category" not in overall["metrics"]
    # f1: (1.0 + 0.5 + 0.0) / 3 = 0.5, one None skipped
    assert overall["metrics"]["f1"] == {"mean": pytest.approx(0.5), "n": 3, "skipped": 1}
    # recall_all@10: (1 + 0 + 1) / 3 = 2/3, one None skipped
    assert overall["metrics"]["recall_all@10"] == {"mean": pytest.approx(2 / 3), "n": 3, "skipped": 1}

    cats = out["by_category"]
    assert list(cats) == [1, 2, 5]
    assert cats[1]["name"] == "multi-hop"
    assert cats[1]["questions"] == 2
    assert cats[1]["metrics"]["f1"]["mean"] == pytest.approx(0.75)  # (1.0 + 0.5) / 2
    assert cats[1]["metrics"]["recall_all@10"]["mean"] == pytest.approx(0.5)  # (1 + 0) / 2
    assert cats[2]["metrics"]["f1"] == {"mean": None, "n": 0, "skipped": 1}  # only a None
    assert cats[5]["name"] == "adversarial"
    assert cats[5]["metrics"]["recall_all@10"] == {"mean": None, "n": 0, "skipped": 1}


def test_summarize_missing_key_and_nan_are_skipped() -> None:
    records = [
        {"category": 4, "f1": 0.25, "tokens": 10},
        {"category": 4, "f1": float("nan")},
    ]
    metrics = summarize(records)["overall"]["metrics"]
    assert metrics["f1"] == {"mean": 0.25, "n": 1, "skipped": 1}  # NaN skipped: 0.25 / 1
    assert metrics["tokens"] == {"mean": 10.0, "n": 1, "skipped": 1}  # missing key skipped: 10 / 1


def test_summarize_empty() -> None:
    assert summarize([]) == {
        "overall": {"name": "overall", "questions": 0, "metrics": {}},
        "by_category": {},
    }


def test_abstention_is_the_scorers_phrase_only():
    assert abstains("No information available.") and abstains("That is not mentioned in the notes [ab12cd34].")
    assert not abstains("No information is available in the notes.")  # what our old prompt said: scored 0
    assert not abstains("Jon lost his job on 19 January 2023.")
