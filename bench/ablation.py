"""Which answer rules earn their place (#52): each rule family of `zettel_amem/answering/` and the date-cue
lists switched off alone, measured on question sets it was not written from.

    flock /tmp/zk-cpu.lock python -m bench.ablation --sets long:dev2,three:dev --out results/ablation.json
    python -m bench.ablation --list

A family is switched off by putting a neutral function or pattern in its place for the run (nothing in the
package knows about this): the ranking's order stands where a rule would have moved a passage, a kind's
answerer quotes the best passage, a cue never matches. Every question of each set is asked once with all
rules on and once per family with that family off, on one Memory per store (the bundled embedder, no model
call: journal answers call none), and scored as `bench.journal_qa` scores (headline right, on screen).
The table gives, per family, how many questions each measure gains with the family on (on minus off) on the
unread sets, and on the read sets apart. Stores are the ones `bench.diary_long` / `bench.journal_qa` build.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import re
import sys
import time
from collections.abc import Callable
from pathlib import Path
from unittest import mock

from bench.diary_long import DIARIES, load_diary, load_questions
from bench.journal_qa import QUESTIONS as JOURNAL_QUESTIONS
from bench.journal_qa import TODAY as JOURNAL_TODAY
from bench.journal_qa import scored

NEVER = re.compile(r"(?!)")  # a pattern that matches nothing: a cue list switched off


@contextlib.contextmanager
def fresh_dates():
    """Date readings cached before a patch (or during one) are not read again: drop them on both sides."""
    from zettel_amem.core.date_mentions import forget_cached_dates

    forget_cached_dates()
    try:
        yield
    finally:
        forget_cached_dates()


def _identity_second(_question, evidence):
    return evidence


def families() -> dict[str, Callable[[], list]]:
    """Family name -> the patches that switch it off (a list of `mock.patch.object` context managers)."""
    from zettel_amem.answering import answer, counting, date_guard, evidence, journal_answer, questions, view
    from zettel_amem.core import date_mentions
    from zettel_amem.core.words import verb_forms

    ja = journal_answer

    def patch(target, name, value):
        return mock.patch.object(target, name, value)

    return {
        "when/plain: a plan gives way to its month's passage (fulfilled)":
            lambda: [patch(ja, "fulfilled", lambda evidence: evidence)],
        "now: the newest passage on the subject (answer_now)":
            lambda: [patch(ja, "ANSWERERS", {**ja.ANSWERERS, "now": ja.answer_best})],
        "how many / a price or age asked: the passage writing it first (quantity)":
            lambda: [patch(ja, "quantity", _identity_second)],
        "a name asked: the passage giving one, or declined (named, name decline)":
            lambda: [patch(ja, "_NAME", NEVER)],
        "a price or age asked and none written: declined (value decline)":
            lambda: [patch(ja, "ASKED_VALUES", ())],
        "decline: no key word and far in meaning (DECLINE_COSINE)": lambda: [patch(ja, "DECLINE_COSINE", -1.0)],
        "count: one occasion per day told (occasion)":
            lambda: [patch(counting, "occasion", lambda note, days: note.id)],
        "the story kind (what happened with X)":
            lambda: [patch(questions, "KINDS", tuple(r for r in questions.KINDS if r[0] != "story"))],
        "dates: a weekday read by its tense (_tense)":
            lambda: [patch(date_mentions, "_tense", lambda text: ""),
                     fresh_dates()],
        "dates: weekly habits are no date (_HABIT_*)":
            lambda: [patch(date_mentions, "_HABIT_EN", r"(?!)"), patch(date_mentions, "_HABIT_KO", r"(?!)")],
        "dates: 'the 22nd' / '22일에' alone (day of the month)":
            lambda: [patch(date_mentions, name, _without_last(date_mentions, name))
                     for name in ("_english_rules", "_korean_rules")],
        "dates: a trip's Nth day (nth_day)": lambda: [patch(date_guard, "nth_day", lambda note: [])],
        "the other language's words for the question's (term_bridge)":
            lambda: [patch(answer.Answerer, "translate", lambda self, terms, question, notes: {})],
        "a passage in the other language lifted (CROSS_LANGUAGE_OFFSET)":
            lambda: [patch(evidence, "CROSS_LANGUAGE_OFFSET", 0.0)],
        # round five (#59)
        "#59 a day asked: answered from that day's entries (asked_day)":
            lambda: [patch(questions, "asked_day", lambda text: ("", ""))],
        "#59 a question with no subject word asks with its verb (asking_verbs)":
            lambda: [patch(questions, "asking_verbs", lambda text: [])],
        "#59 a Korean verb meets its other forms by its stem (_same_verb)":
            lambda: [patch(evidence, "_same_verb", lambda stem, text_forms: False)],
        "#59 an English verb meets its regular stem's forms (_other_forms)":
            lambda: [patch(evidence, "_other_forms", lambda word: verb_forms(word))],
        "#59 supporting lines only on the question (view.relevant)":
            lambda: [patch(view, "relevant", lambda sentence, best: True)],
        "#59 now: not someone else's sentence (someone_elses)":
            lambda: [patch(ja, "someone_elses", lambda sentence: False)],
        "#59 not asked in the past: the latest word first (latest_word)":
            lambda: [patch(ja, "latest_word", _identity_second)],
        "#59 count: only what took place (took_place)":
            lambda: [patch(counting, "took_place", lambda question, item: True)],
        "#59 when: a date in a negated clause retracted (retracted)":
            lambda: [patch(ja, "retracted", lambda sentence: set())],
        "#59 dates: a passed weekday planned or scheduled is next week's (_scheduled)":
            lambda: [patch(date_mentions, "_scheduled", lambda sentence: False),
                     fresh_dates()],
    }


def _without_last(module, name: str) -> Callable:
    """A date rule list (`module.name(day)`, looked up by name as every switch here is) without its last
    rule: the day of the month written alone, in both languages."""
    rules = getattr(module, name)
    return lambda day: rules(day)[:-1]


def question_sets(names: list[str]) -> list[tuple[str, Path, str, list[dict]]]:
    """(name, store, today, questions) of each `diary:half` (or `journal`)."""
    out = []
    for name in names:
        if name == "journal":
            out.append((name, Path("results/journal-qa-store"), JOURNAL_TODAY,
                        json.loads(JOURNAL_QUESTIONS.read_text(encoding="utf-8"))))
            continue
        diary, half = name.split(":")
        today, _entries = load_diary(DIARIES[diary][0])
        out.append((name, Path(f"results/diary-{diary}-store"), today, load_questions(half, diary)))
    return out


def ask(memory, questions: list[dict]) -> dict[str, tuple[bool, bool]]:
    """question id -> (headline right, on screen), through `Memory.ask` (the journal path)."""
    out = {}
    for qa in questions:
        answer = memory.ask(qa["question"])
        "".join(answer.pieces)
        view = answer.view.text() if answer.view is not None else answer.text
        out[qa["id"]] = scored(qa, answer.text.strip(), view, answer.mode == "declined")
    return out


def remember_searches(memory) -> None:
    """Each search the answerer makes, made once: no family changes what search returns, and the runs ask
    every question once per family."""
    answerer = memory.answerer
    search, seen = answerer.search, {}

    def remembered(query, *args, **options):
        key = (query, args, tuple(sorted(options.items())))
        if key not in seen:
            seen[key] = search(query, *args, **options)
        return list(seen[key])
    answerer.search = remembered


def run(sets: list[str], only: list[str] | None, out: Path | None = None) -> dict:
    from zettel_amem.memory import Memory

    chosen = {k: v for k, v in families().items() if not only or any(o in k for o in only)}
    results: dict[str, dict] = {}
    for name, store, today, questions in question_sets(sets):
        os.environ["ZK_TODAY"] = today
        memory = Memory(store)
        memory.settings.answer_journal = True
        remember_searches(memory)
        start = time.perf_counter()
        base = ask(memory, questions)
        results[name] = {"all on": base}
        for family, patches in chosen.items():
            with contextlib.ExitStack() as stack:
                for p in patches():
                    stack.enter_context(p)
                results[name][family] = ask(memory, questions)
            if out:  # as it goes: a long run cut short keeps what it measured
                out.parent.mkdir(parents=True, exist_ok=True)
                out.write_text(json.dumps(results, ensure_ascii=False, indent=1), encoding="utf-8")
        print(f"{name}: {len(questions)} questions x {len(chosen) + 1} runs, {time.perf_counter() - start:.0f} s",
              file=sys.stderr)
    return results


def gains(results: dict, sets: list[str]) -> dict[str, tuple[int, int]]:
    """family -> (headline right, on screen) with it on minus with it off, summed over `sets`."""
    out: dict[str, tuple[int, int]] = {}
    for name in sets:
        base = results[name]["all on"]
        for family, off in results[name].items():
            if family == "all on":
                continue
            head = sum(base[q][0] for q in base) - sum(off[q][0] for q in off)
            screen = sum(base[q][1] for q in base) - sum(off[q][1] for q in off)
            was = out.get(family, (0, 0))
            out[family] = (was[0] + head, was[1] + screen)
    return out


def table(results: dict, unread: list[str], read: list[str]) -> str:
    """Markdown: per family, what it gains with it on, on the unread sets and on the read sets."""
    new, old = gains(results, unread), gains(results, read) if read else {}
    totals = {name: (sum(r[0] for r in results[name]["all on"].values()),
                     sum(r[1] for r in results[name]["all on"].values()), len(results[name]["all on"]))
              for name in unread + read}
    lines = ["all rules on: " + ", ".join(f"{n} {h}/{s} of {t}" for n, (h, s, t) in totals.items())
             + " (headline right / on screen)", "",
             f"| family | unread ({', '.join(unread)}): headline, on screen | read ({', '.join(read) or '-'}) |",
             "|---|---|---|"]
    for family in new:
        shown_old = f"{old[family][0]:+d}, {old[family][1]:+d}" if family in old else "-"
        lines.append(f"| {family} | {new[family][0]:+d}, {new[family][1]:+d} | {shown_old} |")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--unread", default="long:dev2,three:dev",
                        help="sets no rule was written from (diary:half, comma-separated)")
    parser.add_argument("--read", default="", help="sets the rules were written from, reported apart "
                                                   "(e.g. long:tune,long:dev,journal)")
    parser.add_argument("--only", help="families whose name holds one of these words (comma-separated)")
    parser.add_argument("--list", action="store_true", help="list the families and stop")
    parser.add_argument("--out", type=Path, help="write every question's scores per family here (JSON)")
    args = parser.parse_args(argv)
    if args.list:
        print("\n".join(families()))
        return 0
    from bench import shipped_defaults_only

    shipped_defaults_only()
    os.environ["ZK_NO_WORKER"] = "1"
    unread = [s for s in args.unread.split(",") if s]
    read = [s for s in args.read.split(",") if s]
    results = run(unread + read, args.only.split(",") if args.only else None, args.out)
    print(table(results, unread, read))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
