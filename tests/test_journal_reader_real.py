"""The reader (answering/reader.py) on the real bundled Qwen2.5-0.5B: the grammar lets it reply with one
number of a passage shown, the answer is that passage's own words (never the model's), and the status line
names the model and its choice. Whether it picks the *right* passage is not asserted: the 0.5B often does not
(both questions here, when this was written; on `bench.journal_qa` the reader lowered 86.0 to 77.9 %), which is
why it is opt-in (`answer_journal_reader`, docs/benchmarks.md)."""

from __future__ import annotations

import re

import pytest

from tests.sample import add_dated, ask_through, real_journal

pytestmark = pytest.mark.slow

NOTES = [("2026-03-02T21:00", "Marco taught the altos the new canon tonight. He wants the room kept at 20 degrees."),
         ("2026-03-09T21:00", "Marco's last rehearsal was on Saturday. The choir gave him a fountain pen as a gift."),
         ("2026-03-16T21:00", "First rehearsal without Marco since he left. We sang the canon twice, badly."),
         ("2026-03-20T21:00", "마르코가 떠난 뒤 합창단 단장은 수진 씨가 맡기로 했다. 연습은 목요일 저녁으로 옮긴다.")]


@pytest.fixture(scope="module")
def journal(tmp_path_factory, embedder):
    memory = real_journal(tmp_path_factory, embedder, "reader-real")
    memory.settings.answer_journal_reader = True
    add_dated(memory, NOTES)
    return memory


@pytest.mark.parametrize("question", ["What farewell gift did the choir give Marco?",
                                      "마르코 다음으로 합창단 단장은 누가 맡았어?"])
def test_the_model_picks_a_passage_and_the_answer_is_its_words(journal, question):
    answer = ask_through(journal, question)
    assert answer.mode == "extractive" and answer.reason.endswith("; the answer is your notes' words")
    assert re.match(r"the model \S*qwen\S* chose passage [1-5] of the best [2-5];", answer.reason), answer.reason
    quoted = answer.view.line.text  # the headline's quoted sentence (the headline adds its day and entry id)
    assert quoted in answer.text
    assert any(quoted in text for _, text in NOTES)  # a note's own words, nothing the model wrote
