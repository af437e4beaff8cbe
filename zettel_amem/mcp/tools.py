"""The MCP tools, one plain function each, and `TOOLS`, the table `build_server` registers.

A tool is `fn(zk, **arguments) -> OutModel`, decorated with `@tool(description)`: the parameters after
`zk` (names, annotations, defaults, pydantic `Field` constraints) are the tool's input schema, the return
annotation its output schema, the function's name the tool's name. It runs under the store lock (`zk.lock`)
unless registered with `locked=False` (then it takes its locks itself, as `ask` does); a `ZkError` or a
model error it raises becomes a one-line MCP tool error. Adding a tool is adding one function here.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from pydantic import BaseModel, Field

from ..core.errors import ZkError
from .context import ZkTools
from .models import (
    AddNoteOut,
    AskOut,
    ContextOut,
    DayOut,
    EntityRow,
    EpisodeOut,
    ExpandOut,
    GraphOut,
    LinkedNote,
    LinksOut,
    NoteOut,
    SearchOut,
    ShowOut,
    VersionOut,
    entity_node,
)


@dataclass(frozen=True)
class Tool:
    """One row of the table: the function, its description for the client, and whether it runs under the
    store lock."""

    fn: Callable[..., BaseModel]
    description: str
    locked: bool = True

    @property
    def name(self) -> str:
        return self.fn.__name__


TOOLS: list[Tool] = []


def tool(description: str, locked: bool = True) -> Callable[[Callable[..., BaseModel]], Callable[..., BaseModel]]:
    """Add the decorated function to `TOOLS` (in definition order, the order `tools/list` shows)."""

    def register(fn: Callable[..., BaseModel]) -> Callable[..., BaseModel]:
        TOOLS.append(Tool(fn, description, locked))
        return fn

    return register


@tool("Remember something: store a note (durable at once; keywords, links and "
      "evolution follow in the background). `at` is when it happened, e.g. "
      "2026-03-29T09:15 (default: now). `notebook` may only name this server's notebook.")
def add_note(zk: ZkTools, text: str, at: str | None = None, notebook: str | None = None) -> AddNoteOut:
    if notebook not in (None, "", zk.notebook):
        raise ZkError(f"this server is bound to notebook '{zk.notebook}'; start `zk -n {notebook} mcp` "
                      "for another notebook")
    note = zk.memory.add(text, at)  # durable and searchable before any LLM work
    if zk.spawn is not None and zk.memory.settings.auto_worker:
        zk.spawn(zk.memory.home)
    return AddNoteOut(id=note.id, status=note.status, session_id=note.session_id, notebook=zk.notebook)


@tool("L1 retrieval, no LLM: matching episodes (ids + abstracts) and notes (hybrid "
      "keyword + vector search, plus linked notes), within the same token budget "
      "`ask` uses. The query is at most 2,000 characters.")
def search(zk: ZkTools, query: str, limit: int = Field(default=8, ge=1, le=50),
           follow_links: bool = True) -> SearchOut:
    settings = zk.memory.settings
    episodes = zk.tiers.context.search_episodes(query, k=3, min_score=settings.context_min_score)
    hits = zk.memory.search(query, limit, follow_links=follow_links, budget_tokens=settings.context_budget_tokens)
    return SearchOut(episodes=zk.episode_hits(episodes), notes=zk.note_hits(hits))


@tool("L0: a short `## Memory Context` block of past episodes relevant to the "
      "user's new message (plus up to two earlier user turns in `recent`, oldest "
      "first; only the last 300 characters of them are searched). Empty for trivial "
      "messages or when nothing is relevant.")
def context(zk: ZkTools, message: str, recent: list[str] | None = None) -> ContextOut:
    result = zk.tiers.context.hints(message, recent or [])
    return ContextOut(block=result.block(), hints=zk.episode_hits(result.hints),
                      skipped=result.skipped or None, top_score=result.top_score)


@tool("L1: read in full an episode (id e…: its summary), a session (s…: its turns) "
      "or a note (hex id or unique prefix).")
def expand(zk: ZkTools, id: str) -> ExpandOut:  # noqa: A002 - the tool's argument name
    kind, item = zk.tiers.context.expand(id)
    if kind == "note":
        return ExpandOut(kind="note", note=NoteOut.of(item, zk.memory.backlinks(item.id)))
    episode, turns = item
    out = EpisodeOut(**{k: v for k, v in episode.to_json().items() if k in EpisodeOut.model_fields}) \
        if episode else None
    return ExpandOut(kind=kind, episode=out, turns=[NoteOut.of(t) for t in turns] if kind == "session" else [])


@tool("L2: what the entity graph knows about a person, project, place…: relations "
      "with their validity times and source episodes, and connected entities. `at` "
      "(a date) shows the relations valid then. Without `entity`: every entity.")
def graph(zk: ZkTools, entity: str | None = None, at: str | None = None,
          depth: int = Field(default=1, ge=1, le=3)) -> GraphOut:
    if not entity:
        return GraphOut(entities=[EntityRow(name=r["name"], type=r["type"], episodes=len(r["episodes"] or []),
                                            same_as=r["canonical"] if r["merged_into"] else None)
                                  for r in zk.tiers.graph.entities()])
    view = zk.tiers.graph.view(entity, depth, at)
    return GraphOut(entity=entity_node(view["entity"]), at=view["at"])


@tool("Every field of a note (id or unique prefix), its links both ways and its "
      "version history (what evolution changed, caused by which note).")
def show(zk: ZkTools, id: str) -> ShowOut:  # noqa: A002
    note = zk.memory.resolve(id)
    return ShowOut(**NoteOut.of(note, zk.memory.backlinks(note.id)).model_dump(), version=note.version,
                   history=[VersionOut(**{k: v for k, v in version.to_dict().items()
                                          if k in VersionOut.model_fields}) for version in note.history],
                   error=note.error or None)


@tool("What a note links to and what links to it.")
def links(zk: ZkTools, id: str) -> LinksOut:  # noqa: A002
    note = zk.memory.resolve(id)
    back = zk.memory.backlinks(note.id)
    found = zk.memory.store.get_many([*note.links, *back])

    def brief(ids: list[str]) -> list[LinkedNote]:
        return [LinkedNote(id=i, content=found[i].content, at=found[i].at) for i in ids if i in found]

    return LinksOut(id=note.id, links=brief(note.links), backlinks=brief(back))


@tool("Answer a question from the notes with the local (or configured) LLM, citing "
      "note ids (a question of at most 2,000 characters). Slower than `search`; prefer "
      "`search`/`context` when you can read the notes yourself.", locked=False)
def ask(zk: ZkTools, question: str) -> AskOut:
    """Retrieve under the store lock, answer with only the model lock held (other tools go on meanwhile),
    then read the cited notes' backlinks under the store lock again."""
    with zk.lock:
        block, _, _ = zk.tiers.context.memory_block(question)
        answer = zk.memory.ask(question, memory_block=block)
    with zk.model_lock:
        for _ in answer.pieces:
            pass
    with zk.lock:
        return AskOut(answer=answer.text.strip(), cited=answer.cited(), mode=answer.mode,
                      notes=zk.note_hits(answer.notes))


@tool("The notes of one day, oldest first, as `zk on` lists them: a date (2026-03-29) or a phrase "
      "(yesterday, last friday, 어제, 지난주 금요일), read against today; a whole month or year (지난달, last "
      "year) lists all of it, and read_as says so.")
def notes_on_day(zk: ZkTools, day: str) -> DayOut:
    from ..views import Day, Views

    when = Day.of(day)  # a phrase that names no day is a ZkError: one line for the agent
    notes = Views(zk.memory).day(when)
    return DayOut(date=when.date.isoformat(), read_as=when.note, notes=[NoteOut.of(n) for n in notes])
