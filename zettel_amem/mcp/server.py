"""`zk mcp`: the memory as Model Context Protocol tools for agents (official `mcp` SDK).

One server is bound to one notebook (`zk -n work mcp`); no tool argument can reach another. Writes go
through the same durable path as the CLI: `add_note` stores the raw note with its embedding and
returns, and the same background worker does the LLM work. Every expected failure (`ZkError`, a
model error) becomes an MCP tool error with the one-line message the CLI would print; never a
traceback. Tools run in the SDK's worker threads: their store reads and writes (and embeddings) are
serialised by one lock, which is never held across a model call; `ask` calls the model under a lock of
its own (one model call at a time), so `search`, `context`, `show` … and `add_note` never wait for it.

The modules: `tools` (each tool a plain function, and the `TOOLS` table this one registers), `context`
(`ZkTools`, what the tools run against), `models` (their typed outputs), `http` (`--http`: 127.0.0.1 and
a bearer token). Resources: `zk://note/{id}` (a note as JSON).
A tool argument that fails validation is one line; a line on stdio that is not JSON gets JSON-RPC's
-32700 Parse error (-32600 for JSON that is not a request), with `id: null`.
"""

from __future__ import annotations

import inspect
from collections.abc import Callable
from pathlib import Path
from typing import Any

from ..core.errors import ZkError
from ..memory import Memory
from . import tools
from .context import ZkTools
from .http import TOKEN_FILE, serve_http, token_for

__all__ = ["INSTRUCTIONS", "TOKEN_FILE", "ZkTools", "build_server", "serve", "token_for"]

INSTRUCTIONS = (
    "Long-term memory of the user (a Zettelkasten with episodes and an entity graph). Call `context` with "
    "the user's message first: it returns a short hint block of relevant past episodes, or nothing. Use "
    "`search` for notes and episodes, `expand` to read an episode, session or note in full, `graph` for "
    "what is known about a person or project over time, and `add_note` to remember something new."
)


def _one_line_validation(tool: str, error: Exception) -> str:
    """A pydantic validation error as one line: which argument, and what was wrong with it."""
    problems = []
    for item in getattr(error, "errors", lambda: [])():
        where = ".".join(str(part) for part in item.get("loc", ())) or "arguments"
        problems.append(f"argument '{where}': {item.get('msg', 'invalid')}")
    return f"Error executing tool {tool}: " + ("; ".join(problems) or " ".join(str(error).split()))


def _server_class():
    from mcp.server.mcpserver import MCPServer
    from mcp.server.mcpserver.exceptions import ToolError, UnexpectedToolError
    from pydantic import ValidationError

    class ZkServer(MCPServer):
        async def call_tool(self, name, arguments, context=None):
            try:
                return await super().call_tool(name, arguments, context)
            except UnexpectedToolError:
                raise
            except ToolError as exc:  # the SDK's message is a multi-line pydantic dump with a URL
                if isinstance(exc.__cause__, ValidationError):
                    raise ToolError(_one_line_validation(name, exc.__cause__)) from exc.__cause__
                raise

        async def run_stdio_async(self) -> None:
            await _serve_stdio(self._lowlevel_server)

    return ZkServer


async def _serve_stdio(low) -> None:
    """The SDK's stdio transport, with an answer to lines it cannot read: JSON-RPC 2.0 wants a -32700
    Parse error (not JSON) or -32600 Invalid Request (JSON, but not a message), with `id: null`; the SDK
    drops them, and a client would wait for ever."""
    import anyio
    from mcp.server.stdio import stdio_server
    from mcp.shared._context_streams import create_context_streams  # the SDK is pinned (pyproject)
    from mcp.shared.message import SessionMessage
    from mcp_types import ErrorData, JSONRPCError

    async with stdio_server() as (read, write):
        inbox, outbox = create_context_streams[SessionMessage | Exception](0)

        async def sort() -> None:
            async with inbox:
                async for item in read:
                    if not isinstance(item, Exception):
                        await inbox.send(item)
                        continue
                    kinds = {e.get("type") for e in getattr(item, "errors", lambda: [])()}
                    code, text = (-32700, "Parse error: the line is not JSON") if "json_invalid" in kinds else (
                        -32600, "Invalid Request: not a JSON-RPC 2.0 request or notification")
                    await write.send(SessionMessage(JSONRPCError(jsonrpc="2.0", id=None,
                                                                 error=ErrorData(code=code, message=text))))

        async with anyio.create_task_group() as tasks:
            tasks.start_soon(sort)
            await low.run(outbox, write, low.create_initialization_options())
            tasks.cancel_scope.cancel()


def build_server(home: str | Path | None, notebook: str, spawn_worker: Callable[[Path], None] | None = None):
    """An `MCPServer` with zk's tools (`tools.TOOLS`) and note resources, bound to `notebook`."""
    zk = ZkTools(home, notebook, spawn_worker, memory=Memory(home, notebook=notebook))
    server = _server_class()(name="zk", title=f"zk memory (notebook {notebook})", instructions=INSTRUCTIONS,
                             log_level="WARNING")
    for entry in tools.TOOLS:
        server.add_tool(bind(entry, zk), name=entry.name, description=entry.description)
    _add_note_resource(server, zk)
    return server


def bind(entry: tools.Tool, zk: ZkTools) -> Callable[..., Any]:
    """`entry.fn` with `zk` bound, as the SDK wants a tool: a function whose signature (less `zk`) and
    annotations give the input and output schemas, named as the tool (the schemas' titles use it)."""

    def run(**arguments: Any) -> Any:
        return zk.call(lambda: entry.fn(zk, **arguments), locked=entry.locked)

    signature = inspect.signature(entry.fn, eval_str=True)
    parameters = list(signature.parameters.values())[1:]
    run.__signature__ = signature.replace(parameters=parameters)
    run.__annotations__ = {p.name: p.annotation for p in parameters} | {"return": signature.return_annotation}
    run.__name__ = run.__qualname__ = entry.name
    run.__doc__ = entry.description
    return run


def _add_note_resource(server, zk: ZkTools) -> None:
    from mcp.server.mcpserver.exceptions import ResourceNotFoundError

    @server.resource("zk://note/{id}", name="note", mime_type="application/json",
                     description="One note of this notebook as JSON (id or unique prefix).")
    def note_resource(id: str) -> str:  # noqa: A002
        with zk.lock:
            try:
                return zk.read_note(id)
            except ZkError as exc:
                raise ResourceNotFoundError(str(exc)) from None


def serve(home: str | Path | None, notebook: str, http_port: int | None = None,
          spawn_worker: Callable[[Path], None] | None = None, token: str | None = None) -> None:
    """Run until the client disconnects (stdio) or the process is stopped (HTTP on 127.0.0.1, every request
    with `token`, the notebook's: `token_for`)."""
    import anyio

    if http_port is not None and not token:
        raise ZkError("an HTTP MCP server needs the notebook's bearer token")
    server = build_server(home, notebook, spawn_worker)
    if http_port is None:
        server.run("stdio")
    else:
        anyio.run(serve_http, server, http_port, token)
