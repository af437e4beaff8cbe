"""The MCP tools' typed outputs: each is a tool's output schema (`tools/list`) and its structured result."""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, Field

from ..core.models import Note


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


class DayOut(BaseModel):
    date: str = Field(description="the day read from the request (YYYY-MM-DD; for a whole month or year, "
                      "its first day)")
    read_as: str = Field(default="", description="how a guessed phrase was read; empty when it was no guess")
    notes: list[NoteOut] = Field(description="the day's notes, oldest first")


class AskOut(BaseModel):
    answer: str
    cited: list[str] = Field(description="ids of the notes the answer cites")
    mode: str = Field(description='"model", "extractive" (the model failed: the best sentence of the best note) '
                      'or "declined" (the notes do not support an answer)')
    notes: list[NoteHit] = Field(description="the notes the model was given")


def entity_node(data: dict) -> EntityNode:
    """An entity of `Tiers.graph.view` (a dict, with its connected entities) as its output model."""
    return EntityNode(name=data["name"], type=data["type"], aliases=data.get("aliases", []),
                      relations=[RelationOut(subject=r["subject"], predicate=r["predicate"], object=r["object"],
                                             current=r["current"], valid_from=r["valid_from"],
                                             invalid_from=r["invalid_from"], episode=r["episode"])
                                 for r in data["relations"]],
                      connected=[entity_node(c) for c in data.get("connected", [])])
