"""Answer and retrieval scoring for the LoCoMo benchmark (standard library only).

Two answer scorers live side by side because they answer different questions:

* ``locomo_f1`` follows the official LoCoMo rules (``task_eval/evaluation.py`` of snap-research/locomo):
  normalise, Porter-stem, token-multiset F1, with per-category rules.
* ``paper_f1`` / ``bleu1`` follow the A-MEM paper's ``utils.py`` so our numbers can sit next to its
  Table 1: lower-case, ``. , ! ?`` -> space, whitespace split, *set* F1, BLEU-1.

Stemming: the official scorer uses NLTK's ``PorterStemmer()`` (default ``NLTK_EXTENSIONS`` mode). NLTK is not
installed here, so ``porter_stem`` re-implements that exact variant (Porter 1980 plus NLTK's documented
departures: irregular-forms table, words of <= 2 letters kept, ``ies``/``ied`` -> ``ie`` for 4-letter words,
``y`` -> ``i`` only after a consonant, ``alli``/``fulli``/``logi`` rules, ``bli`` -> ``ble``, 2-letter
vowel-consonant stems count as cvc). It is the only code path: NLTK is never imported even when present, so
two machines always give the same numbers.

BLEU smoothing: A-MEM calls ``sentence_bleu(weights=(1, 0, 0, 0), smoothing_function=method1)``. method1 adds
epsilon=0.1 to the numerator of zero-count n-gram precisions, but for BLEU-1 it never changes the result:
NLTK returns 0 *before* smoothing when no unigram matches, and the smoothed 2..4-gram precisions carry weight
0. So ``bleu1`` = brevity penalty * clipped unigram precision, and 0.0 on zero overlap. One known difference:
A-MEM tokenised BLEU input with ``nltk.word_tokenize`` (punctuation becomes its own token); we use the same
tokeniser as ``paper_f1`` (punctuation ``. , ! ?`` dropped), so BLEU-1 can differ slightly on punctuated text.
"""

from __future__ import annotations

import math
import re
import string
from collections import Counter
from collections.abc import Callable, Collection, Iterable, Mapping, Sequence
from functools import lru_cache
from typing import Any

CATEGORY_NAMES: dict[int, str] = {
    1: "multi-hop",
    2: "temporal",
    3: "open-domain",
    4: "single-hop",
    5: "adversarial",
}

# ---------------------------------------------------------------------------------------------------------
# Porter stemmer (NLTK_EXTENSIONS variant), written from the published algorithm.
# ---------------------------------------------------------------------------------------------------------

# NLTK maps these whole words to a fixed stem before any rule runs.
_IRREGULAR: dict[str, str] = {
    "sky": "sky",
    "skies": "sky",
    "dying": "die",
    "lying": "lie",
    "tying": "tie",
    "news": "news",
    "innings": "inning",
    "inning": "inning",
    "outings": "outing",
    "outing": "outing",
    "cannings": "canning",
    "canning": "canning",
    "howe": "howe",
    "proceed": "proceed",
    "exceed": "exceed",
    "succeed": "succeed",
}

_Rule = tuple[str, str, Callable[[str], bool]]


def _cv(word: str) -> str:
    """'c'/'v' per letter; 'y' is a vowel after a consonant, else a consonant (Porter's definition)."""
    out: list[str] = []
    for i, ch in enumerate(word):
        if ch in "aeiou":
            out.append("v")
        elif ch == "y":
            out.append("c" if i == 0 or out[-1] == "v" else "v")
        else:
            out.append("c")
    return "".join(out)


def _measure(stem: str) -> int:
    """Porter's m in [C](VC)^m[V]: each vowel -> consonant boundary is one "vc" in the letter pattern."""
    return _cv(stem).count("vc")


def _has_vowel(stem: str) -> bool:
    return "v" in _cv(stem)


def _ends_double_consonant(word: str) -> bool:
    return len(word) >= 2 and word[-1] == word[-2] and _cv(word)[-1] == "c"


def _ends_cvc(word: str) -> bool:
    # NLTK extension: a 2-letter vowel-consonant word also counts, so "are", "use" keep their final e.
    pattern = _cv(word)
    if len(word) >= 3 and pattern[-3:] == "cvc" and word[-1] not in "wxy":
        return True
    return len(word) == 2 and pattern == "vc"


def _m_gt0(stem: str) -> bool:
    return _measure(stem) > 0


def _m_gt1(stem: str) -> bool:
    return _measure(stem) > 1


def _apply_first(word: str, rules: Sequence[_Rule]) -> str:
    """Apply the first rule whose suffix matches; if its condition fails, stop (no shorter suffix tried)."""
    for suffix, replacement, condition in rules:
        if word.endswith(suffix):
            stem = word[: len(word) - len(suffix)]
            return stem + replacement if condition(stem) else word
    return word


_STEP2: tuple[_Rule, ...] = (
    ("ational", "ate", _m_gt0),
    ("tional", "tion", _m_gt0),
    ("enci", "ence", _m_gt0),
    ("anci", "ance", _m_gt0),
    ("izer", "ize", _m_gt0),
    ("bli", "ble", _m_gt0),  # NLTK departure: the paper has abli -> able
    ("alli", "al", _m_gt0),
    ("entli", "ent", _m_gt0),
    ("eli", "e", _m_gt0),
    ("ousli", "ous", _m_gt0),
    ("ization", "ize", _m_gt0),
    ("ation", "ate", _m_gt0),
    ("ator", "ate", _m_gt0),
    ("alism", "al", _m_gt0),
    ("iveness", "ive", _m_gt0),
    ("fulness", "ful", _m_gt0),
    ("ousness", "ous", _m_gt0),
    ("aliti", "al", _m_gt0),
    ("iviti", "ive", _m_gt0),
    ("biliti", "ble", _m_gt0),
    ("fulli", "ful", _m_gt0),
    # The 'l' stays with the stem for the measure test, so short stems like "geo-" / "theo-" qualify.
    ("logi", "log", lambda stem: _measure(stem + "l") > 0),
)

_STEP3: tuple[_Rule, ...] = (
    ("icate", "ic", _m_gt0),
    ("ative", "", _m_gt0),
    ("alize", "al", _m_gt0),
    ("iciti", "ic", _m_gt0),
    ("ical", "ic", _m_gt0),
    ("ful", "", _m_gt0),
    ("ness", "", _m_gt0),
)

_STEP4: tuple[_Rule, ...] = (
    ("al", "", _m_gt1),
    ("ance", "", _m_gt1),
    ("ence", "", _m_gt1),
    ("er", "", _m_gt1),
    ("ic", "", _m_gt1),
    ("able", "", _m_gt1),
    ("ible", "", _m_gt1),
    ("ant", "", _m_gt1),
    ("ement", "", _m_gt1),
    ("ment", "", _m_gt1),
    ("ent", "", _m_gt1),
    ("ion", "", lambda stem: _measure(stem) > 1 and stem[-1:] in ("s", "t")),
    ("ou", "", _m_gt1),
    ("ism", "", _m_gt1),
    ("ate", "", _m_gt1),
    ("iti", "", _m_gt1),
    ("ous", "", _m_gt1),
    ("ive", "", _m_gt1),
    ("ize", "", _m_gt1),
)


def _step1a(w: str) -> str:
    if w.endswith("sses"):
        return w[:-2]
    if w.endswith("ies"):
        return w[:-1] if len(w) == 4 else w[:-2]  # NLTK: "dies" -> "die" but "flies" -> "fli"
    if w.endswith("ss"):
        return w
    if w.endswith("s"):
        return w[:-1]
    return w


def _step1b(w: str) -> str:
    if w.endswith("ied"):
        return w[:-1] if len(w) == 4 else w[:-2]  # NLTK: "died" -> "die" but "spied" -> "spi"
    if w.endswith("eed"):
        return w[:-1] if _measure(w[:-3]) > 0 else w
    for suffix in ("ed", "ing"):
        if w.endswith(suffix) and _has_vowel(w[: -len(suffix)]):
            stem = w[: -len(suffix)]
            break
    else:
        return w
    if stem.endswith(("at", "bl", "iz")):
        return stem + "e"
    if _ends_double_consonant(stem):
        return stem if stem[-1] in "lsz" else stem[:-1]
    if _measure(stem) == 1 and _ends_cvc(stem):
        return stem + "e"
    return stem


def _step1c(w: str) -> str:
    # NLTK: y -> i only when preceded by a consonant that is not the first letter ("happy" yes, "enjoy" no).
    if w.endswith("y") and len(w) > 2 and _cv(w)[-2] == "c":
        return w[:-1] + "i"
    return w


def _step2(w: str) -> str:
    # NLTK applies alli -> al first and re-runs step 2 on the result.
    if w.endswith("alli") and _m_gt0(w[:-4]):
        return _step2(w[:-4] + "al")
    return _apply_first(w, _STEP2)


def _step5(w: str) -> str:
    if w.endswith("e"):
        m = _measure(w[:-1])
        if m > 1 or (m == 1 and not _ends_cvc(w[:-1])):
            w = w[:-1]
    if w.endswith("ll") and _measure(w[:-1]) > 1:
        w = w[:-1]
    return w


@lru_cache(maxsize=65536)
def porter_stem(word: str) -> str:
    """Porter stem of one token, matching ``nltk.stem.PorterStemmer().stem`` (NLTK_EXTENSIONS mode)."""
    w = word.lower()
    if w in _IRREGULAR:
        return _IRREGULAR[w]
    if len(w) <= 2:  # NLTK leaves 1-2 letter words alone
        return w
    w = _step1c(_step1b(_step1a(w)))
    w = _apply_first(_apply_first(_step2(w), _STEP3), _STEP4)
    return _step5(w)


# ---------------------------------------------------------------------------------------------------------
# Official LoCoMo answer F1
# ---------------------------------------------------------------------------------------------------------

_PUNCT = frozenset(string.punctuation)
_ARTICLES = re.compile(r"\b(a|an|the|and)\b")
_ADVERSARIAL_PHRASES = ("no information available", "not mentioned")


def abstains(pred: Any) -> bool:
    """Whether an answer declines ("no information available"): what category 5 rewards, and what costs
    F1 on categories 1-4 when the evidence was there."""
    lowered = str(pred).lower()
    return any(phrase in lowered for phrase in _ADVERSARIAL_PHRASES)


def normalize_answer(s: Any) -> str:
    """LoCoMo normalisation (no stemming): drop commas, lower-case, drop punctuation, a/an/the/and, spaces.

    Punctuation is deleted, not replaced by a space, as in the official code: "self-care" -> "selfcare".
    """
    text = str(s).replace(",", "").lower()
    text = "".join(ch for ch in text if ch not in _PUNCT)
    text = _ARTICLES.sub(" ", text)
    return " ".join(text.split())


def _locomo_tokens(s: Any) -> list[str]:
    return [porter_stem(t) for t in normalize_answer(s).split()]


def token_f1(prediction: Any, gold: Any) -> float:
    """Multiset token F1 on normalised, Porter-stemmed tokens (LoCoMo ``f1_score``); 0.0 on no overlap."""
    pred = _locomo_tokens(prediction)
    ref = _locomo_tokens(gold)
    same = sum((Counter(pred) & Counter(ref)).values())
    if same == 0:
        return 0.0
    precision = same / len(pred)
    recall = same / len(ref)
    return 2 * precision * recall / (precision + recall)


def _multi_hop_f1(prediction: str, gold: str) -> float:
    # Official quirk: extra predicted parts cost nothing; only each gold part's best match counts.
    preds = [p.strip() for p in prediction.split(",")]
    golds = [g.strip() for g in gold.split(",")]
    return sum(max(token_f1(p, g) for p in preds) for g in golds) / len(golds)


def locomo_f1(prediction: Any, gold: Any, category: int) -> float:
    """Answer score under the official LoCoMo per-category rules (gold is ignored for category 5)."""
    pred = "" if prediction is None else str(prediction)
    ref = "" if gold is None else str(gold)  # gold may be an int year
    if category == 1:
        return _multi_hop_f1(pred, ref)
    if category == 3:
        return token_f1(pred, ref.split(";")[0].strip())
    if category in (2, 4):
        return token_f1(pred, ref)
    if category == 5:
        # Literal substring test on the lower-cased answer, exactly as the official scorer does it.
        return 1.0 if abstains(pred) else 0.0
    raise ValueError(f"unknown LoCoMo category: {category!r}")


# ---------------------------------------------------------------------------------------------------------
# A-MEM paper metrics (categories 1-4)
# ---------------------------------------------------------------------------------------------------------

_PAPER_STRIP = str.maketrans({".": " ", ",": " ", "!": " ", "?": " "})


def paper_tokens(s: Any) -> list[str]:
    """A-MEM ``simple_tokenize``: lower-case, ``. , ! ?`` -> space, whitespace split (no stemming)."""
    return str(s).lower().translate(_PAPER_STRIP).split()


def paper_f1(prediction: Any, gold: Any) -> float:
    """Set-based token F1 as in the A-MEM paper's ``calculate_metrics``; 0.0 on empty input or no overlap."""
    pred = set(paper_tokens("" if prediction is None else prediction))
    ref = set(paper_tokens("" if gold is None else gold))
    common = len(pred & ref)
    if common == 0:  # also covers empty prediction or gold
        return 0.0
    precision = common / len(pred)
    recall = common / len(ref)
    return 2 * precision * recall / (precision + recall)


def bleu1(prediction: Any, gold: Any) -> float:
    """Sentence BLEU-1 against one reference: brevity penalty * clipped unigram precision (see module doc)."""
    pred = paper_tokens("" if prediction is None else prediction)
    ref = paper_tokens("" if gold is None else gold)
    if not pred or not ref:
        return 0.0
    ref_counts = Counter(ref)
    clipped = sum(min(n, ref_counts[tok]) for tok, n in Counter(pred).items())
    if clipped == 0:  # NLTK returns 0 here, before method1 smoothing could add its epsilon
        return 0.0
    c, r = len(pred), len(ref)
    brevity = 1.0 if c > r else math.exp(1 - r / c)
    return brevity * clipped / c


# ---------------------------------------------------------------------------------------------------------
# Evidence ids and recall@k
# ---------------------------------------------------------------------------------------------------------

# "D<session>:<turn>", tolerating case, stray spaces and an extra colon after D (seen: "D:11:26").
_DIA_ID = re.compile(r"[Dd]\s*:?\s*(\d+)\s*:\s*(\d+)")
# One evidence string can hold several ids (seen: "D8:6; D9:17").
_EVIDENCE_SPLIT = re.compile(r"[;,]|\s+(?=[Dd])")


def parse_dia_id(s: Any) -> tuple[int, int] | None:
    """ "D1:3" -> (1, 3); tolerant of whitespace, trailing punctuation and "D:11:26"; None if unparseable."""
    if not isinstance(s, str):
        return None
    match = _DIA_ID.fullmatch(s.strip().strip(".,;"))
    if match is None:
        return None
    return int(match.group(1)), int(match.group(2))


def format_dia_id(session: int, turn: int) -> str:
    return f"D{session}:{turn}"


def canonical_dia_id(s: Any) -> str | None:
    """Canonical "D<s>:<t>" spelling of a dia_id, or None when it cannot be parsed."""
    parsed = parse_dia_id(s)
    return None if parsed is None else format_dia_id(*parsed)


def evidence_ids(qa: Mapping[str, Any], valid: Collection[str] | None = None) -> set[str]:
    """Canonical evidence dia_ids of one LoCoMo qa entry.

    Splits multi-id strings, repairs malformed ids where the intent is clear and drops junk (e.g. "D").
    With ``valid`` (the conversation's dia_ids), ids naming no existing turn are dropped too: the dev data
    has one ("D10:19" in conv-42) and no retriever could ever return it.
    """
    found: set[str] = set()
    for entry in qa.get("evidence") or []:
        for part in _EVIDENCE_SPLIT.split(str(entry)):
            dia_id = canonical_dia_id(part)
            if dia_id is not None and (valid is None or dia_id in valid):
                found.add(dia_id)
    return found


def evidence_recall(evidence: Collection[str], retrieved: Sequence[str], k: int | None) -> tuple[bool, bool]:
    """(all evidence in the first k distinct retrieved dia_ids, any of it there); k=None uses all of them.

    Duplicates in ``retrieved`` are collapsed first so k counts distinct turns. Empty evidence raises
    ValueError: such questions must be skipped and counted by the caller, not scored as vacuous hits.
    """
    if not evidence:
        raise ValueError("no evidence ids: skip this question instead of scoring it")
    if k is not None and k < 0:
        raise ValueError(f"k must be >= 0 or None, got {k}")
    wanted = {canonical_dia_id(e) or e for e in evidence}
    top: list[str] = []
    for item in retrieved:
        dia_id = canonical_dia_id(item) or str(item)
        if dia_id not in top:
            top.append(dia_id)
    if k is not None:
        top = top[:k]
    hit = wanted & set(top)
    return hit == wanted, bool(hit)


# ---------------------------------------------------------------------------------------------------------
# Aggregation
# ---------------------------------------------------------------------------------------------------------


def _is_number(value: Any) -> bool:
    return isinstance(value, (bool, int, float))


def summarize(records: list[dict[str, Any]], exclude: Iterable[str] = ("category",)) -> dict[str, Any]:
    """Means of every numeric/bool key, overall and per category.

    Returns ``{"overall": group, "by_category": {cat: group}}`` where group is
    ``{"name", "questions", "metrics": {key: {"mean", "n", "skipped"}}}``. None, NaN and a missing key
    count as skipped (mean None when nothing is left). A key is averaged when all its non-None values are
    numbers or bools; keys holding anything else (ids, text) are left out.
    """
    excluded = set(exclude)
    keys: list[str] = []
    non_numeric: set[str] = set()
    for record in records:
        for key, value in record.items():
            if key in excluded:
                continue
            if key not in keys:
                keys.append(key)
            if value is not None and not _is_number(value):
                non_numeric.add(key)
    metric_keys = [key for key in keys if key not in non_numeric]

    def group(name: str, rows: list[dict[str, Any]]) -> dict[str, Any]:
        metrics: dict[str, dict[str, Any]] = {}
        for key in metric_keys:
            values = [float(r[key]) for r in rows if r.get(key) is not None and not _is_nan(r[key])]
            metrics[key] = {
                "mean": sum(values) / len(values) if values else None,
                "n": len(values),
                "skipped": len(rows) - len(values),
            }
        return {"name": name, "questions": len(rows), "metrics": metrics}

    by_category: dict[int, list[dict[str, Any]]] = {}
    for record in records:
        by_category.setdefault(int(record["category"]), []).append(record)
    return {
        "overall": group("overall", records),
        "by_category": {
            cat: group(CATEGORY_NAMES.get(cat, f"category-{cat}"), rows)
            for cat, rows in sorted(by_category.items())
        },
    }


def _is_nan(value: Any) -> bool:
    return isinstance(value, float) and math.isnan(value)
