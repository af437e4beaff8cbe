"""`zk mcp`: the memory as Model Context Protocol tools for agents (official `mcp` SDK).

One server is bound to one notebook (`zk -n work mcp`); no tool argument can reach another. Writes go
through the same durable path as the CLI: `add_note` stores the raw note with its embedding and
returns, and the same background worker does the LLM work. Every expected failure (`ZkError`, a
model error) becomes an MCP tool error with the one-line message the CLI would print; never a
traceback. Tools run in the SDK's worker threads: their store reads and writes (and embeddings) are
serialised by one lock, which is never held across a model call; `ask` calls the model under a lock of
its own (one model call at a time), so `search`, `context`, `show` … and `add_note` never wait for it.

Tools: add_note, search (L1), context (L0), expand (L1), graph (L2), show, links, ask.
Resources: `zk://note/{id}` (a note as JSON).

Over HTTP (`--http PORT`) the server listens on 127.0.0.1 only, keeps the SDK's Host and Origin checks
(DNS rebinding, browser pages), and asks every request for the notebook's bearer token: a random token
made on first use and kept in `<home>/mcp-tokens.json` (mode 0600), shown by `zk mcp --print-token`.
Every local user can reach 127.0.0.1; only the owner of the data dir can read the token.
A tool argument that fails validation is one line; a line on stdio that is not JSON gets JSON-RPC's
-32700 Parse error (-32600 for JSON that is not a request), with `id: null`.
"""

from __future__ import annotations

import hmac
import json
import os
import secrets
import threading
from collections.abc import Callable
from contextlib import nullcontext
from pathlib import Path
from typing import Any, Literal, TypeVar

from pydantic import BaseModel, Field

from ..backends.llm import LLMError
from ..core.errors import ZkError
from ..core.models import Hint, Note
from ..memory import Memory
from ..retrieval.retrieve import Hit
from ..tiers.service import Tiers

T = TypeVar("T")

INSTRUCTIONS = (
    "Long-term memory of the user (a Zettelkasten with episodes and an entity graph). Call `context` with "
    "the user's message first: it returns a short hint block of relevant past episodes, or nothing. Use "
    "`search` for notes and episodes, `expand` to read an episode, session or note in full, `graph` for "
    "what is known about a person or project over time, and `add_note` to remember something new."
)


# -- typed outputs ------------------------------------------------------------------------------------
class NoteOut(BaseModel):
    id: str
    content: str
    at: str = Field(description="when it happened (ISO local time)")
    status: str = Field(description="pending (LLM work queued), constructed, or ready")
    keywords: list[str] = []
    tags: list[str] = []
    context: str = ""
    links: list[str] = Field(default=[], description="ids this note links to")
    backlinks: list[str] = Field(default=[], description="ids of notes linking here")
    session_id: str | None = None
    speaker: str | None = None

    @classmethod
    def of(cls, note: Note, backlinks: list[str] | None = None) -> NoteOut:
        return cls(id=note.id, content=note.content, at=note.at, status=note.status, keywords=note.keywords,
                   tags=note.tags, context=note.context, links=note.links, backlinks=backlinks or [],
                   session_id=note.session_id, speaker=note.speaker)


class NoteHit(NoteOut):
    score: float | None = Field(description="fused retrieval score (1 = top); null for a linked note")
    via: str | None = Field(default=None, description="for a linked note: the hit that brought it in")


class EpisodeHit(BaseModel):
    id: str
    abstract: str
    start: str
    session_id: str
    score: float


class AddNoteOut(BaseModel):
    id: str
    status: str
    session_id: str | None
    notebook: str


class SearchOut(BaseModel):
    episodes: list[EpisodeHit]
    notes: list[NoteHit]


class ContextOut(BaseModel):
    block: str = Field(description="the `## Memory Context` block for the prompt; empty when nothing fits")
    hints: list[EpisodeHit]
    skipped: str | None = Field(description="why no search was made (a trivial message), else null")
    top_score: float | None


class EpisodeOut(BaseModel):
    id: str
    session_id: str
    title: str
    start: str
    end: str
    abstract: str
    summary: str
    status: str


class ExpandOut(BaseModel):
    kind: Literal["episode", "session", "note"]
    episode: EpisodeOut | None = None
    turns: list[NoteOut] = Field(default=[], description="a session's raw turns, in order")
    note: NoteOut | None = None


class RelationOut(BaseModel):
    subject: str
    predicate: str
    object: str
    current: bool
    valid_from: str
    invalid_from: str | None
    episode: str | None


class EntityNode(BaseModel):
    name: str
    type: str
    aliases: list[str]
    relations: list[RelationOut]
    connected: list[EntityNode] = []


class EntityRow(BaseModel):
    name: str
    type: str
    same_as: str | None = None
    episodes: int


class GraphOut(BaseModel):
    entity: EntityNode | None = Field(default=None, description="the entity asked for, with its relations")
    at: str | None = None
    entities: list[EntityRow] = Field(default=[], description="every entity, when no name was given")


class VersionOut(BaseModel):
    version: int
    at: str
    cause: str | None
    reason: str
    changes: dict[str, Any]


class ShowOut(NoteOut):
    version: int
    history: list[VersionOut]
    error: str | None = None


class LinkedNote(BaseModel):
    id: str
    content: str
    at: str


class LinksOut(BaseModel):
    id: str
    links: list[LinkedNote]
    backlinks: list[LinkedNote]


class AskOut(BaseModel):
    answer: str
    cited: list[str] = Field(description="ids of the notes the answer cites")
    mode: str = Field(description='"model", "extractive" (the model failed: the best sentence of the best note) '
                      'or "declined" (the notes do not support an answer)')
    notes: list[NoteHit] = Field(description="the notes the model was given")


# -- the server ---------------------------------------------------------------------------------------
class ZkTools:
    """The tool implementations over one notebook, without any MCP types (easy to test and reuse)."""

    def __init__(self, home: str | Path | None, notebook: str, spawn_worker: Callable[[Path], None] | None):
        self.memory = Memory(home, notebook=notebook)
        self.tiers = Tiers(self.memory)
        self.notebook = notebook
        self._spawn = spawn_worker
        self._lock = threading.RLock()  # the store, the embedder, lazy loading: short holds only
        self._model = threading.Lock()  # the model: one call at a time, never under `_lock`

    def call(self, fn: Callable[[], T], locked: bool = True) -> T:
        """Run one tool body (under the store lock unless it takes its locks itself, like `ask`);
        expected failures become one-line tool errors."""
        from mcp.server.mcpserver.exceptions import ToolError

        with self._lock if locked else nullcontext():
            try:
                return fn()
            except (ZkError, LLMError) as exc:
                raise ToolError(" ".join(str(exc).split())) from None

    def _hits(self, hits: list[Hit]) -> list[NoteHit]:
        back = self.memory.store.backlinks_many([h.note.id for h in hits])
        return [NoteHit(**NoteOut.of(h.note, back.get(h.note.id, [])).model_dump(),
                        score=None if h.via else round(h.score, 4), via=h.via) for h in hits]

    @staticmethod
    def _episode_hits(hints: list[Hint]) -> list[EpisodeHit]:
        return [EpisodeHit(id=h.episode.id, abstract=h.episode.abstract, start=h.episode.start,
                           session_id=h.episode.session_id, score=round(h.score, 4)) for h in hints]

    def add_note(self, text: str, at: str | None, notebook: str | None) -> AddNoteOut:
        if notebook not in (None, "", self.notebook):
            raise ZkError(f"this server is bound to notebook '{self.notebook}'; start `zk -n {notebook} mcp` "
                          "for another notebook")
        note = self.memory.add(text, at)  # durable and searchable before any LLM work
        if self._spawn is not None and self.memory.settings.auto_worker:
            self._spawn(self.memory.home)
        return AddNoteOut(id=note.id, status=note.status, session_id=note.session_id, notebook=self.notebook)

    def search(self, query: str, limit: int, follow_links: bool) -> SearchOut:
        episodes = self.tiers.context.search_episodes(query, k=3, min_score=self.memory.settings.context_min_score)
        hits = self.memory.search(query, limit, follow_links=follow_links,
                                  budget_tokens=self.memory.settings.context_budget_tokens)
        return SearchOut(episodes=self._episode_hits(episodes), notes=self._hits(hits))

    def context(self, message: str, recent: list[str]) -> ContextOut:
        result = self.tiers.context.hints(message, recent)
        return ContextOut(block=result.block(), hints=self._episode_hits(result.hints),
                          skipped=result.skipped or None, top_score=result.top_score)

    def expand(self, item_id: str) -> ExpandOut:
        kind, item = self.tiers.context.expand(item_id)
        if kind == "note":
            return ExpandOut(kind="note", note=NoteOut.of(item, self.memory.backlinks(item.id)))
        episode, turns = item
        out = EpisodeOut(**{k: v for k, v in episode.to_json().items() if k in EpisodeOut.model_fields}) \
            if episode else None
        return ExpandOut(kind=kind, episode=out, turns=[NoteOut.of(t) for t in turns] if kind == "session" else [])

    def graph(self, entity: str | None, at: str | None, depth: int) -> GraphOut:
        if not entity:
            rows = self.tiers.graph.entities()
            return GraphOut(entities=[EntityRow(name=r["name"], type=r["type"], episodes=len(r["episodes"] or []),
                                                same_as=r["canonical"] if r["merged_into"] else None)
                                      for r in rows])
        view = self.tiers.graph.view(entity, depth, at)
        return GraphOut(entity=_node(view["entity"]), at=view["at"])

    def show(self, note_id: str) -> ShowOut:
        note = self.memory.resolve(note_id)
        return ShowOut(**NoteOut.of(note, self.memory.backlinks(note.id)).model_dump(), version=note.version,
                       history=[VersionOut(**{k: v for k, v in version.to_dict().items()
                                              if k in VersionOut.model_fields}) for version in note.history],
                       error=note.error or None)

    def links(self, note_id: str) -> LinksOut:
        note = self.memory.resolve(note_id)
        back = self.memory.backlinks(note.id)
        found = self.memory.store.get_many([*note.links, *back])

        def brief(ids: list[str]) -> list[LinkedNote]:
            return [LinkedNote(id=i, content=found[i].content, at=found[i].at) for i in ids if i in found]

        return LinksOut(id=note.id, links=brief(note.links), backlinks=brief(back))

    def ask(self, question: str) -> AskOut:
        """Retrieve under the store lock, answer with only the model lock held (other tools go on
        meanwhile), then read the cited notes' backlinks under the store lock again."""
        with self._lock:
            block, _, _ = self.tiers.context.memory_block(question)
            answer = self.memory.ask(question, memory_block=block)
        with self._model:
            for _ in answer.pieces:
                pass
        with self._lock:
            return AskOut(answer=answer.text.strip(), cited=answer.cited(), mode=answer.mode,
                          notes=self._hits(answer.notes))

    def read_note(self, note_id: str) -> str:
        note = self.memory.resolve(note_id)
        return json.dumps(note.to_json(self.memory.backlinks(note.id)), ensure_ascii=False)


def _node(data: dict) -> EntityNode:
    return EntityNode(name=data["name"], type=data["type"], aliases=data.get("aliases", []),
                      relations=[RelationOut(subject=r["subject"], predicate=r["predicate"], object=r["object"],
                                             current=r["current"], valid_from=r["valid_from"],
                                             invalid_from=r["invalid_from"], episode=r["episode"])
                                 for r in data["relations"]],
                      connected=[_node(c) for c in data.get("connected", [])])


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
    """An `MCPServer` with zk's tools and note resources, bound to `notebook`."""
    zk = ZkTools(home, notebook, spawn_worker)
    server = _server_class()(name="zk", title=f"zk memory (notebook {notebook})", instructions=INSTRUCTIONS,
                       log_level="WARNING")

    @server.tool(description="Remember something: store a note (durable at once; keywords, links and "
                             "evolution follow in the background). `at` is when it happened, e.g. "
                             "2026-03-29T09:15 (default: now). `notebook` may only name this server's notebook.")
    def add_note(text: str, at: str | None = None, notebook: str | None = None) -> AddNoteOut:
        return zk.call(lambda: zk.add_note(text, at, notebook))

    @server.tool(description="L1 retrieval, no LLM: matching episodes (ids + abstracts) and notes (hybrid "
                             "keyword + vector search, plus linked notes), within the same token budget "
                             "`ask` uses. The query is at most 2,000 characters.")
    def search(query: str, limit: int = Field(default=8, ge=1, le=50), follow_links: bool = True) -> SearchOut:
        return zk.call(lambda: zk.search(query, limit, follow_links))

    @server.tool(description="L0: a short `## Memory Context` block of past episodes relevant to the "
                             "user's new message (plus up to two earlier user turns in `recent`, oldest "
                             "first; only the last 300 characters of them are searched). Empty for trivial "
                             "messages or when nothing is relevant.")
    def context(message: str, recent: list[str] | None = None) -> ContextOut:
        return zk.call(lambda: zk.context(message, recent or []))

    @server.tool(description="L1: read in full an episode (id e…: its summary), a session (s…: its turns) "
                             "or a note (hex id or unique prefix).")
    def expand(id: str) -> ExpandOut:  # noqa: A002 - the tool's argument name
        return zk.call(lambda: zk.expand(id))

    @server.tool(description="L2: what the entity graph knows about a person, project, place…: relations "
                             "with their validity times and source episodes, and connected entities. `at` "
                             "(a date) shows the relations valid then. Without `entity`: every entity.")
    def graph(entity: str | None = None, at: str | None = None,
              depth: int = Field(default=1, ge=1, le=3)) -> GraphOut:
        return zk.call(lambda: zk.graph(entity, at, depth))

    @server.tool(description="Every field of a note (id or unique prefix), its links both ways and its "
                             "version history (what evolution changed, caused by which note).")
    def show(id: str) -> ShowOut:  # noqa: A002
        return zk.call(lambda: zk.show(id))

    @server.tool(description="What a note links to and what links to it.")
    def links(id: str) -> LinksOut:  # noqa: A002
        return zk.call(lambda: zk.links(id))

    @server.tool(description="Answer a question from the notes with the local (or configured) LLM, citing "
                             "note ids (a question of at most 2,000 characters). Slower than `search`; prefer "
                             "`search`/`context` when you can read the notes yourself.")
    def ask(question: str) -> AskOut:
        return zk.call(lambda: zk.ask(question), locked=False)

    _add_note_resource(server, zk)
    return server


def _add_note_resource(server, zk: ZkTools) -> None:
    from mcp.server.mcpserver.exceptions import ResourceNotFoundError

    @server.resource("zk://note/{id}", name="note", mime_type="application/json",
                     description="One note of this notebook as JSON (id or unique prefix).")
    def note_resource(id: str) -> str:  # noqa: A002
        with zk._lock:
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
        anyio.run(_serve_http, server, http_port, token)


async def _serve_http(server, port: int, token: str) -> None:
    """Streamable HTTP on 127.0.0.1 (the SDK's Host/Origin checks for localhost), behind the bearer token."""
    import uvicorn

    app = server.streamable_http_app(host="127.0.0.1")
    config = uvicorn.Config(BearerAuth(app, token), host="127.0.0.1", port=port, log_level="warning")
    await uvicorn.Server(config).serve()


class BearerAuth:
    """ASGI middleware: every HTTP request must carry `Authorization: Bearer <token>` (else 401)."""

    def __init__(self, app, token: str):
        self.app = app
        self.expected = f"Bearer {token}".encode()

    async def __call__(self, scope, receive, send) -> None:
        if scope["type"] == "http":
            given = dict(scope.get("headers") or []).get(b"authorization", b"")
            if not hmac.compare_digest(given, self.expected):
                body = json.dumps({"jsonrpc": "2.0", "id": None, "error": {
                    "code": -32001, "message": "missing or wrong bearer token (`zk mcp --print-token` shows it)"}})
                await send({"type": "http.response.start", "status": 401, "headers": [
                    (b"content-type", b"application/json"), (b"www-authenticate", b'Bearer realm="zk"')]})
                await send({"type": "http.response.body", "body": body.encode()})
                return
        await self.app(scope, receive, send)


TOKEN_FILE = "mcp-tokens.json"


def token_for(home: Path, notebook: str, new: bool = False) -> str:
    """The notebook's bearer token for `zk mcp --http`, made on first use (or anew with `new`) and kept in
    `<home>/mcp-tokens.json`, readable by its owner only (0600)."""
    from filelock import FileLock

    path = home / TOKEN_FILE
    try:
        home.mkdir(parents=True, exist_ok=True)
        with FileLock(str(home / ".mcp-tokens.lock")):
            tokens = _read_tokens(path)
            if new or not isinstance(tokens.get(notebook), str):
                tokens[notebook] = secrets.token_urlsafe(32)
                tmp = path.with_name(f".{TOKEN_FILE}.{os.getpid()}.tmp")
                with os.fdopen(os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600), "w",
                               encoding="utf-8") as out:
                    json.dump(tokens, out, indent=1)
                os.replace(tmp, path)
            if path.stat().st_mode & 0o077:  # made by hand or copied: others must not read it
                path.chmod(0o600)
    except OSError as exc:
        raise ZkError(f"cannot keep the MCP token in {path}: {exc.strerror or exc}") from None
    return tokens[notebook]


def _read_tokens(path: Path) -> dict:
    try:
        tokens = json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        return {}
    except (OSError, ValueError) as exc:
        raise ZkError(f"cannot read {path}: {exc}; delete it to make new tokens") from None
    if not isinstance(tokens, dict):
        raise ZkError(f"cannot read {path}: not a JSON object; delete it to make new tokens")
    return tokens
