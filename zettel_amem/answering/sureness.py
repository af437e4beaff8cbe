"""How sure a journal answer is (#52): "sure", "likely" or "unsure", shown with the headline.

Read from the view's signals (view.py), not from a model: the quoted sentence's weighted share of the
question's words (a rare word counts most), whether its passage is the ranking's first (no rule moved
another one ahead), and its lead over the best passage of any other entry. A headline is "sure" when its
sentence holds every word asked, as asked (a word met only in translation is a guess), and no other entry
comes near; "unsure" when it holds under half of what is asked, or the answer counts or tells a story
(several passages must all be read right); else "likely". A decline is "sure" when no passage holds any
word asked.

The thresholds come from a calibration (`bench/calibrate_sureness.py`) on question sets read while writing
the rules, checked on sets that were not: a "sure" headline must be right at least 90 % of the time.
"""

from __future__ import annotations

SURE_SHARE = 1.0  # the quoted sentence holds every word of the question (weighted share)
SURE_LEAD = 0.3  # ... and its passage leads every other entry's best by this much (evidence.Evidence.score)
LIKELY_SHARE = 0.5  # under this share the headline is "unsure"
SEVERAL = {"lead"}  # counts, stories: one wrong passage changes the answer


def sureness(kind: str, signals: dict[str, float]) -> str:
    """"sure", "likely" or "unsure" for a view of `kind` ("quote", "lead", "declined", "written")."""
    if kind == "declined":
        return "sure" if signals.get("passage_share", 1.0) == 0 else "likely"
    share = signals.get("sentence_share", 0.0)
    if kind in SEVERAL or share < LIKELY_SHARE:
        return "unsure"
    if share >= SURE_SHARE and signals.get("asked_share", share) >= SURE_SHARE and signals.get("first") \
            and signals.get("lead", 0.0) >= SURE_LEAD:  # a word met only in translation is a guess: never sure
        return "sure"
    return "likely"
