"""A grammar-bound reply cut off by its token limit (backends/llm.salvage_json): the finished list items and
fields are kept, the one being written is dropped whole. An episode's entity extraction on long entries ran
out of its tokens and the episode stayed pending on every retry (the call is deterministic); now it keeps
what the model finished."""

from __future__ import annotations

import json

from hypothesis import given
from hypothesis import strategies as st

from tests.fake_llm import FakeLLM
from zettel_amem.backends.llm import LLMError, Usage, salvage_json
from zettel_amem.core.prompts import Prompts
from zettel_amem.tiers.extraction import extract

NAMES = st.text(st.sampled_from('ab 가나, "]}\\'), min_size=1, max_size=8)
ITEM = st.fixed_dictionaries({"name": NAMES, "type": st.sampled_from(["person", "place"])})


@given(st.lists(ITEM, max_size=5), st.lists(ITEM, max_size=5), st.data())
def test_every_cut_keeps_a_prefix_of_whole_items(entities, places, data):
    whole = {"entities": entities, "places": places}
    text = json.dumps(whole, ensure_ascii=False)
    cut = data.draw(st.integers(0, len(text)))
    salvaged = salvage_json(text[:cut])
    if cut == len(text):
        assert salvaged == whole
    if salvaged is None:
        return
    for key, items in salvaged.items():
        assert items == whole[key][:len(items)]  # whole items only, in order, none invented
    assert list(salvaged) == list(whole)[:len(salvaged)]


def test_nothing_finished_is_none():
    assert salvage_json("") is None and salvage_json('{"entities": [{"name": "보') is None


def test_an_extraction_cut_off_keeps_the_entities_it_finished():
    fake = FakeLLM()
    cut = '{"entities": [{"name": "Juno", "type": "person"}, {"name": "Forest Animal Hosp'
    fake.enqueue("extract", LLMError(f"model output was not complete JSON: {cut[:80]!r}", Usage(calls=1),
                                     partial=cut))
    checked, usage = extract(fake, Prompts(), "Juno went to the Forest Animal Hospital.", "2026-10-21",
                             source="Juno went to the Forest Animal Hospital.")
    assert [name for name, _ in checked.entities] == ["Juno"] and usage.calls == 1
    fake.enqueue("extract", LLMError("the server did not answer"))  # no partial reply: still a failure
    try:
        extract(fake, Prompts(), "Juno.", "2026-10-21")
    except LLMError:
        pass
    else:
        raise AssertionError("a failure with nothing to salvage must still fail")
