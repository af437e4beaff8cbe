"""Every cap in config.py holds in code, whatever the model returns: each test sets a cap below its natural
bound (what the scripted model offers) and checks the result stays within it. The scripted model ignores
the JSON schema, as a server backend may, so only the code's own cuts keep these tests green.

Which cut each test guards (deleting it makes the test fail):
- keywords, tags, context at construction: `construct.clean_terms` / `clean_context`
- new links per call: `link.parse_decision`'s `min(max_new_links, max_links)` cut
- evolved neighbours: `link.parse_decision`'s `evolve_max_neighbours` break
- tags and context of an evolution: `link.parse_decision` (clean_terms / clean_context)
- ... and again when applied: `evolve.apply_update` (clip / merged_terms)
- links in total on a re-processed (edited) note: `pipeline.Pipeline._link_and_evolve`'s `max_links` cut
- the context budget of `zk search` (and `zk ask`): `retrieve.expand`
"""

from __future__ import annotations

from tests.fake_llm import FakeLLM
from zettel_amem.amem.construct import annotate
from zettel_amem.amem.evolve import apply_update
from zettel_amem.amem.link import Update, decide_links, link_schema
from zettel_amem.core.config import Settings
from zettel_amem.core.models import Note, Passage
from zettel_amem.core.prompts import Prompts
from zettel_amem.core.text import estimate_tokens
from zettel_amem.retrieval.retrieve import render_for_context

LONG = "the long context the model wrote about the knee and the race and everything else around them " * 3
MANY = [f"term{i}" for i in range(12)]


def note(i: str, content: str = "Knee felt better after the 10k run today") -> Note:
    return Note(id=i * 32, content=content, at="2026-03-01T08:00")


def test_construction_caps_keywords_tags_and_context():
    settings = Settings(max_keywords=2, max_tags=2, max_context_chars=30)
    fake = FakeLLM().enqueue("annotate", {"keywords": MANY, "tags": MANY, "context": LONG})
    # every word the model wrote is the note's (the grounded contract keeps them): only the caps cut
    annotation, _ = annotate(fake, Prompts(), note("a", " ".join(MANY) + ". " + LONG), settings)
    assert (len(annotation.keywords), len(annotation.tags)) == (2, 2)
    assert 0 < len(annotation.context) <= 30


def _decide(settings: Settings, reply: dict) -> tuple:
    candidates = [note(c, f"candidate {c} about running") for c in "bcdef"]
    fake = FakeLLM()
    fake.link = lambda user, ids: reply | {"links": ids, "updates": [
        {"id": i, "context": LONG, "tags": MANY, "keywords": MANY} for i in ids]}
    decision, _ = decide_links(fake, Prompts(), note("a"), candidates, settings)
    return decision, fake.calls[-1]["schema"]


def test_new_links_are_capped_by_max_new_links_and_max_links():
    decision, schema = _decide(Settings(max_new_links=2, max_links=5, evolve_max_neighbours=0), {})
    assert len(decision.links) == 2 and schema["properties"]["links"]["maxItems"] == 2
    decision, schema = _decide(Settings(max_new_links=3, max_links=1, evolve_max_neighbours=0), {})
    assert len(decision.links) == 1 and schema["properties"]["links"]["maxItems"] == 1


def test_link_schema_reads_the_setting_not_a_literal():
    assert link_schema(["a", "b", "c", "d"], Settings(max_new_links=4))["properties"]["links"]["maxItems"] == 4


def test_evolution_caps_neighbours_tags_and_context():
    settings = Settings(evolve_max_neighbours=2, max_tags=3, max_keywords=2, max_context_chars=25)
    decision, schema = _decide(settings, {})
    assert len(decision.updates) == 2 and schema["properties"]["updates"]["maxItems"] == 2
    for update in decision.updates:
        assert len(update.tags) == 3 and len(update.keywords) == 2 and 0 < len(update.context or "") <= 25


def test_an_applied_update_is_capped_even_when_it_arrives_uncapped():
    settings = Settings(max_tags=2, max_keywords=1, max_context_chars=20)
    neighbour = note("b")
    neighbour.tags, neighbour.keywords = ["old1", "old2"], ["oldkw"]
    assert apply_update(neighbour, Update(neighbour.id, LONG, MANY, MANY), "a" * 32, settings) is not None
    assert len(neighbour.context) <= 20 and len(neighbour.tags) == 2 and len(neighbour.keywords) == 1


def test_an_edited_note_keeps_at_most_max_links_in_total(memory, fake_llm):
    memory.settings.max_links, memory.settings.max_new_links, memory.settings.evolve_max_neighbours = 2, 2, 0
    others = [memory.add(f"Running note {i}: knee, race and training plan") for i in range(3)]
    memory.process_pending()
    fake_llm.link = lambda user, ids: {"links": ids[:1], "updates": []}
    first = memory.add("Training plan for the race: knee first")
    memory.process(first.id)
    [kept] = memory.store.get(first.id).links
    # Two new links, besides the one the note keeps: three in all, one more than max_links.
    fake_llm.link = lambda user, ids: {"links": [i for i in ids if not kept.startswith(i)], "updates": []}
    memory.edit(first.id, "Training plan for the race: knee first, then speed")
    memory.process(first.id)
    links = memory.store.get(first.id).links
    assert len(links) == 2 and links[0] == kept and set(links) <= {n.id for n in others}


def test_the_context_budget_setting_bounds_what_search_returns(zk, zk_home):
    zk_home.mkdir(parents=True, exist_ok=True)
    for i in range(6):
        zk("add", f"Knee note {i}: " + "the knee felt stiff after the long run, iced it at night. " * 4, check=True)
    wide = zk("search", "knee", "--json", "--no-links", "--budget", "0").json()  # 0: no budget
    # the budget counts what `zk ask` is shown: a long note's matched passages, a short one whole
    cost = [estimate_tokens(render_for_context(Note(id=h["id"], content=h["content"], at=h["at"]),
                                               [Passage(p["index"], p["text"], 0) for p in h["passages"]]))
            for h in wide]
    assert len(wide) >= 4
    budget = sum(cost[:2]) + 1  # room for two hits, not for all of them
    (zk_home / "config.toml").write_text(f"[memory]\ncontext_budget_tokens = {budget}\n", encoding="utf-8")
    narrow = zk("search", "knee", "--json", "--no-links").json()
    assert len(narrow) == 2 and [h["id"] for h in narrow] == [h["id"] for h in wide[:2]]
