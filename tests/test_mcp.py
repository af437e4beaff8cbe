"""`zk mcp` end to end with the official MCP client over stdio: spawn the real `zk -n work mcp`,
list its tools, add notes (the background worker enriches them), search, context, expand, graph,
show, links, ask, read a note resource, and the error cases (unknown id, empty note, another
notebook). The model is the scripted fake; the store, embedder, worker and transport are real."""

from __future__ import annotations

import json
import subprocess
import time
from pathlib import Path

import anyio
import pytest

from tests import harness

CHAT = """[2026-03-02 10:00] Ana: Onbiseo uses SQLite for the prototype database.
[2026-03-02 10:01] Ben: The Onbiseo search endpoint is slow on large notebooks.
[2026-03-02 10:02] Ana: Onbiseo uses PostgreSQL after the database migration next week.
[2026-03-02 10:03] Ben: Good, I will write the migration script.
"""


def zk(home: Path, *args: str, env: dict[str, str]) -> str:
    return harness.run("--home", str(home), *args, env=env, check=True).stdout


@pytest.fixture
def prepared(tmp_path):
    """A home whose notebook `work` has an imported chat, its episode and graph; `main` has a private note."""
    home = tmp_path / "home"
    env = harness.zk_env(ZK_LLM_MODEL=harness.FAKE_MODEL)
    home.mkdir()
    (home / "config.toml").write_text("[memory]\nlink_min_similarity = 0.0\n", encoding="utf-8")
    chat = tmp_path / "chat.txt"
    chat.write_text(CHAT, encoding="utf-8")
    zk(home, "-n", "work", "import", str(chat), "--wait", "--quiet", env=env)
    zk(home, "add", "Private: the salary negotiation with Onbiseo HR is on Friday.", env=env)
    env.pop("ZK_NO_WORKER")  # the MCP server's writes start the background worker, as `zk add` does
    return home, env


async def _session_run(home: Path, env: dict[str, str], body) -> None:
    from mcp import ClientSession, StdioServerParameters, stdio_client

    command = harness.zk_command("--home", str(home), "-n", "work", "mcp")
    params = StdioServerParameters(command=command[0], args=command[1:], cwd=str(harness.ROOT), env=env)
    with open(home / "mcp-stderr.log", "w") as errlog:
        async with stdio_client(params, errlog=errlog) as (read, write), ClientSession(read, write) as session:
            await session.initialize()
            await body(session)


async def call(session, tool: str, **arguments) -> dict:
    result = await session.call_tool(tool, arguments)
    assert not result.is_error, result.content
    return result.structured_content


async def fails(session, tool: str, **arguments) -> str:
    result = await session.call_tool(tool, arguments)
    assert result.is_error
    [content] = result.content
    assert "Traceback" not in content.text and len(content.text.splitlines()) == 1
    return content.text


def test_mcp_over_stdio_with_the_official_client(prepared):
    home, env = prepared

    async def body(session) -> None:
        tools = {t.name: t for t in (await session.list_tools()).tools}
        assert set(tools) == {"add_note", "search", "context", "expand", "graph", "show", "links", "ask",
                              "notes_on_day"}
        assert tools["add_note"].input_schema["required"] == ["text"] and tools["search"].output_schema
        templates = (await session.list_resource_templates()).resource_templates
        assert [t.uri_template for t in templates] == ["zk://note/{id}"]

        # Writes: durable at once, then the background worker enriches them.
        first = await call(session, "add_note", text="Knee hurts after the 10 km run at Yeouido.",
                           at="2026-03-29T09:15")
        second = await call(session, "add_note", text="Doctor says no running for two weeks, knee rest.",
                            at="2026-04-01T18:00")
        assert first["status"] == "pending" and first["notebook"] == "work"
        deadline = time.time() + 120
        while time.time() < deadline:
            shown = await call(session, "show", id=second["id"][:8])
            if shown["status"] == "ready":
                break
            await anyio.sleep(0.5)
        assert shown["status"] == "ready" and shown["keywords"], shown
        assert len(shown["links"]) == 1  # the fake model links its first candidate (the oldest shown)
        linked = await call(session, "links", id=shown["links"][0])
        assert second["id"] in [b["id"] for b in linked["backlinks"]]  # and the link shows both ways

        # L1 search: notes of this notebook only (the private note of `main` never shows).
        found = await call(session, "search", query="Onbiseo database PostgreSQL", limit=3)
        contents = [n["content"] for n in found["notes"]]
        assert any("PostgreSQL" in c for c in contents)
        assert not any("salary" in c for c in contents)
        assert found["episodes"] and found["episodes"][0]["id"].startswith("e")
        assert not any("salary" in n["content"] for n in
                       (await call(session, "search", query="salary negotiation Friday"))["notes"])

        # L0 context: hints for a related message, nothing for a trivial one.
        hint = await call(session, "context", message="How is the Onbiseo database migration going?")
        assert hint["block"].startswith("## Memory Context") and hint["hints"]
        episode_id = hint["hints"][0]["id"]
        trivial = await call(session, "context", message="ok")
        assert trivial["block"] == "" and trivial["hints"] == [] and trivial["skipped"]

        # L1 expand: the episode's summary, the session's turns, a note.
        episode = await call(session, "expand", id=episode_id)
        assert episode["kind"] == "episode" and episode["episode"]["summary"]
        session_view = await call(session, "expand", id=episode["episode"]["session_id"])
        assert [t["speaker"] for t in session_view["turns"]] == ["Ana", "Ben", "Ana", "Ben"]
        note_view = await call(session, "expand", id=first["id"][:8])
        assert note_view["kind"] == "note" and note_view["note"]["id"] == first["id"]

        # L2 graph: relations with validity, and the entity list.
        graph = await call(session, "graph", entity="Onbiseo")
        objects = {r["object"] for r in graph["entity"]["relations"] if r["predicate"] == "uses database"}
        assert "PostgreSQL" in objects
        assert "Onbiseo" in {e["name"] for e in (await call(session, "graph"))["entities"]}

        # ask: the (fake) model's answer and the notes it was given.
        answer = await call(session, "ask", question="What happened with my knee?")
        assert answer["answer"].startswith("The knee notes say so.")
        assert {first["id"], second["id"]} & {n["id"] for n in answer["notes"]}

        # A note as a resource.
        resource = await session.read_resource(f"zk://note/{first['id'][:8]}")
        assert json.loads(resource.contents[0].text)["content"] == "Knee hurts after the 10 km run at Yeouido."

        # Errors are MCP errors with one line, never a traceback; nothing reaches another notebook.
        assert "not a note id" in await fails(session, "show", id="zzzz")
        assert "no note with id ffff0000" in await fails(session, "links", id="ffff0000")
        assert "the note is empty" in await fails(session, "add_note", text="   ")
        assert "bound to notebook 'work'" in await fails(session, "add_note", text="leak", notebook="main")
        assert "cannot read the date" in await fails(session, "add_note", text="x", at="yesterday-ish")
        assert "no entity named" in await fails(session, "graph", entity="Nobody Atall")
        from mcp import MCPError

        with pytest.raises(MCPError, match="no note with id"):
            await session.read_resource("zk://note/ffffffff")

    anyio.run(_session_run, home, env, body)
    notes = json.loads(zk(home, "list", "--json", env=env))  # main is untouched
    assert [n["content"] for n in notes] == ["Private: the salary negotiation with Onbiseo HR is on Friday."]
    work = json.loads(zk(home, "-n", "work", "list", "--json", env=env))
    assert len(work) == 6 and not any(n["content"] == "leak" for n in work)


def test_mcp_over_streamable_http_on_localhost(prepared):
    from tests.llm_server import free_port

    home, env = prepared
    port = free_port()
    proc = harness.start("--home", str(home), "-n", "work", "mcp", "--http", str(port), env=env,
                         stdout=subprocess.DEVNULL)

    token = zk(home, "-n", "work", "mcp", "--print-token", env=env).strip()

    async def body() -> None:
        import httpx2
        from mcp import Client
        from mcp.client.streamable_http import streamable_http_client

        deadline = time.time() + 60
        while True:  # until the server listens
            try:
                transport = streamable_http_client(f"http://127.0.0.1:{port}/mcp", http_client=httpx2.AsyncClient(
                    headers={"Authorization": f"Bearer {token}"}))
                async with Client(transport) as client:
                    tools = await client.list_tools()
                    result = await client.call_tool("search", {"query": "PostgreSQL migration", "limit": 2})
                break
            except Exception:  # noqa: BLE001 - not up yet
                if time.time() > deadline or proc.poll() is not None:
                    raise
                await anyio.sleep(0.5)
        assert "context" in {t.name for t in tools.tools}
        assert not result.is_error and any("PostgreSQL" in n["content"] for n in result.structured_content["notes"])

    try:
        anyio.run(body)
    finally:
        proc.terminate()
        proc.wait(30)
    assert f"127.0.0.1:{port}/mcp" in proc.stderr.read().decode()


# -- issue #28 items 8-10 ------------------------------------------------------------------------------------
def _rpc(method: str, params: dict | None = None, id: int | None = 1) -> dict:  # noqa: A002
    return {"jsonrpc": "2.0", "method": method, **({"params": params} if params is not None else {}),
            **({"id": id} if id is not None else {})}


INIT = _rpc("initialize", {"protocolVersion": "2025-06-18", "capabilities": {},
                           "clientInfo": {"name": "t", "version": "1"}}, 0)


def test_8_http_needs_the_notebooks_bearer_token(prepared):
    """Every request without the token (or with another notebook's) is refused with 401; the token
    file is the owner's only (0600); Host and Origin are still checked; a new token replaces the old."""
    import httpx

    from tests.llm_server import free_port

    home, env = prepared
    env = env | {"ZK_NO_WORKER": "1"}
    other = zk(home, "mcp", "--print-token", env=env).strip()  # notebook main's
    token = json.loads(zk(home, "-n", "work", "mcp", "--print-token", "--json", env=env))["token"]
    assert token != other and len(token) >= 40
    assert zk(home, "-n", "work", "mcp", "--print-token", env=env).strip() == token  # made once
    assert (home / "mcp-tokens.json").stat().st_mode & 0o777 == 0o600
    port = free_port()
    proc = harness.start("--home", str(home), "-n", "work", "mcp", "--http", str(port), env=env,
                         stdout=subprocess.DEVNULL)
    url = f"http://127.0.0.1:{port}/mcp"
    headers = {"Content-Type": "application/json", "Accept": "application/json, text/event-stream"}
    try:
        deadline = time.time() + 60
        while True:
            try:
                refused = httpx.post(url, json=INIT, headers=headers, timeout=10)
                break
            except httpx.ConnectError:
                assert time.time() < deadline and proc.poll() is None
                time.sleep(0.3)
        assert refused.status_code == 401 and "bearer token" in refused.json()["error"]["message"]
        for wrong in (other, "nothing", token[:-1], token + "x"):
            answer = httpx.post(url, json=INIT, headers=headers | {"Authorization": f"Bearer {wrong}"}, timeout=10)
            assert answer.status_code == 401, wrong
        good = headers | {"Authorization": f"Bearer {token}"}
        assert httpx.post(url, json=INIT, headers=good | {"Host": "evil.example"}, timeout=10).status_code == 421
        assert httpx.post(url, json=INIT, headers=good | {"Origin": "http://evil.example"},
                          timeout=10).status_code == 403
        assert httpx.post(url, json=INIT, headers=good, timeout=10).status_code == 200
        garbled = httpx.post(url, content=b"{bad json", headers=good, timeout=10)
        assert garbled.status_code == 400 and garbled.json()["error"]["code"] == -32700
        huge = httpx.post(url, content=b" " * 5_000_000, headers=good, timeout=30)  # JSON-RPC, not plain text
        assert huge.status_code == 413 and "too large" in huge.json()["error"]["message"]
        new = zk(home, "-n", "work", "mcp", "--new-token", env=env).strip()
        assert new != token and zk(home, "-n", "work", "mcp", "--print-token", env=env).strip() == new
    finally:
        proc.terminate()
        proc.wait(30)
    assert "--print-token" in proc.stderr.read().decode()


def _stdio_session(home: Path, env: dict[str, str]):
    """`zk -n work mcp` with raw JSON-RPC lines: (send, receive, process)."""
    import select

    proc = harness.start("--home", str(home), "-n", "work", "mcp", env=env, stdin=subprocess.PIPE)

    def send(line: dict | str) -> float:
        proc.stdin.write((line if isinstance(line, str) else json.dumps(line)).encode() + b"\n")
        proc.stdin.flush()
        return time.monotonic()

    def receive(timeout: float = 60) -> dict | None:
        ready, _, _ = select.select([proc.stdout], [], [], timeout)
        return json.loads(proc.stdout.readline()) if ready else None

    send(INIT)
    assert receive()["id"] == 0
    send(_rpc("notifications/initialized", id=None))
    return send, receive, proc


def test_9_10_bad_lines_and_arguments_get_one_line_answers_at_once(prepared):
    home, env = prepared
    send, receive, proc = _stdio_session(home, env | {"ZK_NO_WORKER": "1"})
    try:
        send("{bad json")
        assert receive(20) == {"jsonrpc": "2.0", "id": None, "error": {
            "code": -32700, "message": "Parse error: the line is not JSON"}}
        send("[1, 2]")
        assert receive(20)["error"]["code"] == -32600
        cases = [({"name": "add_note", "arguments": {"text": 12345}},
                  "argument 'text': Input should be a valid string"),
                 ({"name": "search", "arguments": {"query": "x", "limit": "abc"}}, "argument 'limit'"),
                 ({"name": "search", "arguments": {"query": "run " * 250_000}}, "the query is too long (1,000,000 "),
                 ({"name": "ask", "arguments": {"question": "why " * 1000}}, "the question is too long"),
                 ({"name": "graph", "arguments": {"depth": 1000}}, "argument 'depth'")]
        for number, (params, message) in enumerate(cases, 10):
            started = send(_rpc("tools/call", params, number))
            reply = receive(60)
            assert reply and reply["id"] == number and reply["result"]["isError"], reply
            text = reply["result"]["content"][0]["text"]
            assert message in text and "\n" not in text and "pydantic" not in text, text
            assert time.monotonic() - started < 20  # refused, not embedded for minutes
        started = send(_rpc("tools/call", {"name": "search", "arguments": {"query": "PostgreSQL migration"}}, 20))
        reply = receive(60)
        assert not reply["result"]["isError"] and time.monotonic() - started < 20  # the server still serves
    finally:
        proc.stdin.close()
        proc.wait(30)
    assert "Traceback" not in proc.stderr.read().decode()


def test_9_long_queries_are_refused_in_the_cli_too(tmp_path):
    env = harness.zk_env(tmp_path / "home")
    harness.run("add", "I run on Saturdays", env=env, check=True)
    for args in (["search", "run " * 600], ["ask", "where " * 400]):
        done = harness.run(*args, env=env, timeout=60)
        assert done.returncode == 1 and harness.one_line(done.stderr) and "is too long" in done.stderr, done.stderr
