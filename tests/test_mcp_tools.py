"""`zk mcp`'s tools one by one, in this process: each function of `mcp.tools` on a real store and
embedder with the scripted model, plus a contract test of every tool's name, arguments and one-line errors
through the server itself, and of the `TOOLS` table as the extension point. The end-to-end stdio test with
the official client stays in test_mcp.py."""

from __future__ import annotations

import json

import anyio
import pytest
from pydantic import BaseModel, Field

from tests.harness import FAKE_MODEL
from zettel_amem.core.errors import ZkError
from zettel_amem.mcp import tools as table


@pytest.fixture
def tools(zk_home, embedder, fake_llm, monkeypatch):
    import zettel_amem.backends.embed
    from zettel_amem.mcp.server import ZkTools

    monkeypatch.setattr(zettel_amem.backends.embed, "load_embedder", lambda *args, **kwargs: embedder)
    monkeypatch.setenv("ZK_LLM_MODEL", FAKE_MODEL)
    spawned = []
    zk = ZkTools(zk_home, "main", spawn_worker=spawned.append)
    zk.memory.use_llm(fake_llm)
    zk.memory.settings.link_min_similarity = 0.0
    zk.spawned = spawned
    return zk


@pytest.fixture
def two_notes(tools):
    """Two notes, the second linked to the first by the scripted model."""
    first = table.add_note(tools, "Knee felt stiff after the 10k run; iced it.", "2026-03-02T09:00", None)
    second = table.add_note(tools, "Physio said the knee needs rest before the race.", "2026-03-03T09:00", "main")
    tools.memory.process_pending()
    return first, second


def test_add_note_is_durable_at_once_and_starts_the_worker(tools):
    tools.memory.settings.auto_worker = False
    table.add_note(tools, "quiet: no worker", None, None)
    assert tools.spawned == []
    tools.memory.settings.auto_worker = True
    out = table.add_note(tools, "무릎이 좀 나아졌다", None, None)
    assert out.status == "pending" and out.notebook == "main" and out.session_id
    assert tools.memory.store.get(out.id).content == "무릎이 좀 나아졌다"
    assert tools.spawned == [tools.memory.home]


def test_add_note_refuses_another_notebook(tools):
    with pytest.raises(ZkError, match="bound to notebook 'main'"):
        table.add_note(tools, "a note for work", None, "work")


def test_search_returns_the_notes_and_follows_links(tools, two_notes):
    first, second = two_notes
    out = table.search(tools, "knee rest before the race", 5, True)
    ids = [n.id for n in out.notes]
    assert second.id in ids and first.id in ids
    assert all(n.score is not None for n in out.notes if n.via is None)


def test_context_of_a_trivial_message_is_empty(tools, two_notes):
    out = table.context(tools, "ok", [])
    assert out.block == "" and out.hints == []


def test_expand_show_links_and_read_note(tools, two_notes):
    first, second = two_notes
    assert table.expand(tools, second.id[:8]).note.id == second.id
    shown = table.show(tools, second.id)
    assert shown.links == [first.id] and shown.version >= 1 and shown.status == "ready"
    links = table.links(tools, first.id)
    assert [n.id for n in links.backlinks] == [second.id] and links.links == []
    assert json.loads(tools.read_note(first.id[:10]))["id"] == first.id
    session = table.expand(tools, second.session_id)
    assert session.kind == "session" and second.id in [t.id for t in session.turns]


def test_notes_on_day_lists_a_day_oldest_first_read_from_a_phrase(tools, two_notes, monkeypatch):
    """The day view `zk on` shows, reused by an agent (views.Views.day): a date or a phrase in either language."""
    first, second = two_notes
    late = table.add_note(tools, "저녁에 무릎 스트레칭", "2026-03-03T21:00", None)
    monkeypatch.setenv("ZK_TODAY", "2026-03-04")
    day = table.notes_on_day(tools, "어제")
    assert (day.date, [n.id for n in day.notes]) == ("2026-03-03", [second.id, late.id])
    assert table.notes_on_day(tools, "2026-03-02").notes[0].content.startswith("Knee felt stiff")
    assert table.notes_on_day(tools, "2026-03-05").notes == []
    with pytest.raises(ZkError):
        table.notes_on_day(tools, "not a day at all")


def test_graph_of_an_empty_notebook_lists_no_entities(tools, two_notes):
    assert table.graph(tools, None, None, 1).entities == []


def test_ask_cites_the_notes_it_was_given(tools, two_notes):
    out = table.ask(tools, "What did the physio say about the knee?")
    assert out.answer and out.notes
    assert set(out.cited) <= {n.id for n in out.notes}


def test_errors_become_one_line_tool_errors(tools):
    from mcp.server.mcpserver.exceptions import ToolError

    for call in (lambda: table.show(tools, "zzzz"), lambda: table.expand(tools, "0123abcd"),
                 lambda: table.add_note(tools, "  ", None, None), lambda: table.search(tools, "x" * 2001, 3, True)):
        with pytest.raises(ToolError) as caught:
            tools.call(call)
        assert "\n" not in str(caught.value) and str(caught.value)


# -- the contract: names, arguments, one-line errors, as a client sees them ---------------------------------
CONTRACT = {  # tool -> (required arguments, optional arguments)
    "add_note": ({"text"}, {"at", "notebook"}),
    "search": ({"query"}, {"limit", "follow_links"}),
    "context": ({"message"}, {"recent"}),
    "expand": ({"id"}, set()),
    "graph": (set(), {"entity", "at", "depth"}),
    "show": ({"id"}, set()),
    "links": ({"id"}, set()),
    "ask": ({"question"}, set()),
    "notes_on_day": ({"day"}, set()),
}


def test_every_tool_has_its_name_arguments_and_one_line_errors(zk_home, embedder, monkeypatch):
    from mcp.server.mcpserver.exceptions import ToolError

    import zettel_amem.backends.embed
    from zettel_amem.mcp.server import build_server

    monkeypatch.setattr(zettel_amem.backends.embed, "load_embedder", lambda *args, **kwargs: embedder)
    server = build_server(zk_home, "main")
    errors: dict[str, str] = {}

    async def run() -> dict:
        listed = {t.name: t.input_schema for t in await server.list_tools()}
        for name, (required, _) in CONTRACT.items():
            for arguments in ({}, {"id": "zzzz"}) if required else ():  # a missing, then a bad argument
                try:
                    await server.call_tool(name, arguments)
                except ToolError as exc:
                    errors[f"{name} {sorted(arguments)}"] = str(exc)
        return listed

    listed = anyio.run(run)
    assert set(listed) == set(CONTRACT)
    for name, (required, optional) in CONTRACT.items():
        schema = listed[name]
        assert set(schema.get("required", [])) == required, name
        assert set(schema["properties"]) == required | optional, name
    assert all("\n" not in message and message.startswith("Error executing tool") for message in errors.values())
    assert "argument 'question': Field required" in errors["ask []"]
    assert "'zzzz' is not a note id" in errors["show ['id']"]
    assert len(errors) >= len([r for r, _ in CONTRACT.values() if r])  # every tool with a required argument


# -- the extension point: a tool added to the table, and nothing else -----------------------------------
class EchoOut(BaseModel):
    text: str
    notebook: str


def echo(zk, text: str, times: int = Field(default=2, ge=1, le=5)) -> EchoOut:
    if not text:
        raise ZkError("nothing to echo")
    return EchoOut(text=text * times, notebook=zk.notebook)


def test_a_tool_added_to_the_table_is_listed_with_its_schema_and_called(zk_home, monkeypatch):
    from mcp.server.mcpserver.exceptions import ToolError

    from zettel_amem.mcp.server import build_server

    monkeypatch.setattr(table, "TOOLS", list(table.TOOLS))
    table.tool("Repeat `text` `times` times (a test tool).")(echo)  # how a tool module adds itself
    server = build_server(zk_home, "main")

    async def run() -> tuple:
        listed = {t.name: t for t in await server.list_tools()}
        called = await server.call_tool("echo", {"text": "ab", "times": 3})
        defaulted = await server.call_tool("echo", {"text": "ab"})
        errors = []
        for arguments in ({"text": "ab", "times": 9}, {"text": ""}):
            with pytest.raises(ToolError) as caught:
                await server.call_tool("echo", arguments)
            errors.append(str(caught.value))
        return listed, called, defaulted, errors

    listed, called, defaulted, errors = anyio.run(run)
    assert set(listed) == set(CONTRACT) | {"echo"}
    assert listed["echo"].description == "Repeat `text` `times` times (a test tool)."
    assert listed["echo"].input_schema == {
        "type": "object", "title": "echoArguments", "required": ["text"],
        "properties": {"text": {"title": "Text", "type": "string"},
                       "times": {"title": "Times", "type": "integer", "default": 2, "minimum": 1, "maximum": 5}}}
    assert listed["echo"].output_schema == EchoOut.model_json_schema()
    assert called.structured_content == {"text": "ababab", "notebook": "main"}
    assert defaulted.structured_content["text"] == "abab"
    assert errors[0].startswith("Error executing tool echo: argument 'times'") and "\n" not in errors[0]
    assert errors[1] == "Error executing tool echo: nothing to echo"  # a ZkError: one line, no traceback
