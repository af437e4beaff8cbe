"""bench/calibrate_sureness.py's `--bound`: the most answerable questions one threshold on one signal can call
"sure" at the target precision (#52), read off the set it is scored on."""

from __future__ import annotations

from bench.calibrate_sureness import bound


def row(lead: float, right: bool, kind: str = "quote", category: str = "single") -> dict:
    return {"category": category, "kind": kind, "right": right, "signals": {"lead": lead}}


def test_the_bound_takes_the_lowest_threshold_that_keeps_the_precision():
    rows = [row(0.9, True), row(0.8, True), row(0.7, True), row(0.6, False), row(0.5, True),
            row(0.95, True, kind="lead"),  # a count is never sure
            row(0.99, False, category="not_recorded")]  # not answerable: not in the share
    found = bound(rows, 90.0)
    assert found["answerable"] == 6
    assert found["lead"] == {"threshold": 0.7, "sure": 3, "right": 3, "answerable_sure_share": 50.0}
    assert bound(rows, 75.0)["lead"]["threshold"] == 0.5  # 4 of 5 right at 0.5: 80 %


def test_no_threshold_reaches_the_target_gives_none():
    assert bound([row(0.9, False), row(0.4, True)], 90.0)["lead"] is None
