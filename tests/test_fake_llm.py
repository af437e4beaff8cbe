"""The mock model answers by task (the title on each JSON schema), not by the prompt's wording: queued
replies first, then its rules; a reworded template changes nothing; and the titles the library adds for
it change no grammar a real backend builds."""

from __future__ import annotations

import pytest

from tests.fake_llm import TASKS, FakeLLM
from zettel_amem.backends.llm import LLMError
from zettel_amem.core.config import Settings, config_dir
from zettel_amem.core.prompts import Prompts
from zettel_amem.memory import Memory
from zettel_amem.tiers.service import Tiers

REWORDED = {  # every JSON task's prompt, reworded from its first line on; only the placeholders stay
    "annotate": "Describe this journal entry for the index.\n$content\n(written $at, in $language)\n",
    "link": "Which older entries does this one relate to?\n[$id] $at $content / $context\nOlder ones:\n"
            "$candidates\nWrite in $language.\n",
    "summarise": "Condense this conversation ($title) in $language.\n$turns\n",
    "extract": "List who and what these facts name, in $language, as of $when.\n$facts\n",
}


def _built(settings: Settings) -> list[dict]:
    """Every schema the library passes to `complete_json` (two tasks have two shapes: read one, read all)."""
    from zettel_amem.amem.construct import annotate_schema
    from zettel_amem.amem.link import link_schema
    from zettel_amem.answering.answer import answer_schema
    from zettel_amem.answering.reader import read_all_schema, read_schema
    from zettel_amem.answering.writer import headline_schema
    from zettel_amem.core.models import Entity
    from zettel_amem.tiers.episodes import summary_schema
    from zettel_amem.tiers.extraction import ask_same, extract_schema

    fake = FakeLLM()
    ask_same(fake, Prompts(), "Kim Minsu", Entity(id="e" * 16, name="김민수"), "person")
    built = [annotate_schema(settings), link_schema(["1234abcd", "5678ef90"], settings),
             summary_schema("English", 5), extract_schema(), answer_schema(["1234abcd"], "where do I run?"),
             read_schema(3), read_all_schema(3), headline_schema(3), *(c["schema"] for c in fake.calls)]
    return built


def _schemas(settings: Settings) -> dict[str, dict]:
    """Every schema the library passes to `complete_json`, by the task its title names."""
    return {schema["title"]: schema for schema in _built(settings)}


def test_every_schema_names_a_task_and_the_title_changes_no_grammar():
    import json

    grammar = pytest.importorskip("llama_cpp.llama_grammar")
    assert sorted(_schemas(Settings())) == sorted(TASKS)
    for schema in _built(Settings()):
        task = schema["title"]
        untitled = {k: v for k, v in schema.items() if k != "title"}
        # llama.cpp builds the same grammar with or without the title (an annotation, not a constraint),
        # so the in-process model and llama-cpp-python's server generate exactly what they did before.
        to_grammar = grammar.json_schema_to_gbnf
        assert to_grammar(json.dumps(schema)) == to_grammar(json.dumps(untitled)), task


def test_queued_replies_come_first_in_order_then_the_rule():
    schema = _schemas(Settings())["annotate"]
    fake = FakeLLM()
    fake.enqueue("annotate", {"keywords": ["one"], "tags": [], "context": "First."})
    fake.enqueue("annotate", LLMError("the model crashed")).enqueue("link", {"links": [], "updates": []})
    user = "anything at all\nNote: knee hurts"
    assert fake.complete_json("s", user, schema, 100)[0]["keywords"] == ["one"]
    with pytest.raises(LLMError, match="crashed"):
        fake.complete_json("s", user, schema, 100)
    assert fake.complete_json("s", user, schema, 100)[0]["keywords"] == ["knee", "hurts"]  # the rule again
    assert fake.tasks() == ["annotate"] * 3
    with pytest.raises(ValueError, match="unknown task"):
        fake.enqueue("anotate", {})
    with pytest.raises(AssertionError, match="title"):  # a new schema without a title fails loudly
        fake.complete_json("s", user, {"type": "object", "properties": {}}, 100)


def test_reworded_templates_still_get_the_fake_models_replies(zk_home, embedder):
    """A user's prompt overrides (config dir `templates/`) share no wording with the shipped ones, yet the
    pipeline and the promotion chain get exactly the replies the test queued for each task."""
    folder = config_dir() / "templates"
    folder.mkdir(parents=True, exist_ok=True)
    for name, text in REWORDED.items():
        (folder / f"{name}.txt").write_text(text, encoding="utf-8")
    fake = FakeLLM()
    fake.enqueue("annotate", {"keywords": ["river"], "tags": ["running"], "context": "A run by the river."})
    fake.enqueue("annotate", {"keywords": ["shoes"], "tags": ["running"], "context": "New running shoes."})
    fake.enqueue("summarise", {"facts": ["Ran by the Hangang river and bought new shoes."]})
    fake.enqueue("extract", {"entities": [{"name": "Hangang", "type": "place"}], "relations": []})
    memory = Memory(zk_home, llm=fake, embedder=embedder)
    memory.settings.link_min_similarity = 0.0
    first = memory.add("Ran 5 km by the Hangang river.", "2026-03-02T08:00")
    second = memory.add("Bought new running shoes.", "2026-03-02T19:00")
    memory.process_pending()
    tiers = Tiers(memory)
    tiers.sessions.close_due(today="2026-03-10")
    [episode] = tiers.promotion.process_pending()

    assert [c["user"].splitlines()[0] for c in fake.calls] == [  # the user's wording reached the model
        "Describe this journal entry for the index.", "Describe this journal entry for the index.",
        "Which older entries does this one relate to?",
        "Condense this conversation (journal 2026-W10 (03-02 – 03-08)) in English.",
        "List who and what these facts name, in English, as of 2026-03-02."]
    assert fake.tasks() == ["annotate", "annotate", "link", "summarise", "extract"]
    notes = {n.id: n for n in memory.store.notes()}
    assert (notes[first.id].keywords, notes[first.id].context) == (["river"], "A run by the river.")
    assert (notes[second.id].keywords, notes[second.id].tags) == (["shoes"], ["running"])
    assert notes[second.id].links == [first.id]  # the link rule: the first candidate
    assert episode.status == "ready" and not episode.error
    assert "Ran by the Hangang river and bought new shoes." in tiers.store.episode(episode.id).summary
    assert [e["name"] for e in tiers.graph.entities()] == ["Hangang"]
