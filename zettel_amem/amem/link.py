"""Link generation and the evolution decision (A-MEM §3.2-3.3), in one LLM call.

Fixes over the reference code:
- candidates are found with the new note's *full* embedding (content + keywords + tags + context);
- the model sees each candidate's stable id and the schema only admits those ids (an enum), and the
  answer is mapped back id -> note through a dict: never through a search rank or list position;
- links, rewritten contexts and tags are capped in code whatever the model returns.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from ..backends.llm import LLM
from ..core.config import Settings
from ..core.models import SHORT_ID, Note, Usage
from ..core.prompts import Prompts, language_of
from ..core.text import clip, one_line
from .construct import MAX_TAG_CHARS, clean_context, clean_terms, text_schema

UPDATE_CONTEXT_CHARS = 90  # an evolved context: one short sentence (completion tokens are the dear ones)
CANDIDATE_CHARS = 100  # each candidate is shown compactly: start of content | context


@dataclass
class Update:
    note_id: str
    context: str | None = None
    tags: list[str] = field(default_factory=list)
    keywords: list[str] = field(default_factory=list)


@dataclass
class LinkDecision:
    links: list[str] = field(default_factory=list)
    updates: list[Update] = field(default_factory=list)
    # linked candidates whose stated value the new note states anew (typed *updates* links, #36; the
    # pipeline checks each before recording it: older, and a passage pair that shares a subject word)
    replaces: list[str] = field(default_factory=list)


def prompt_ids(notes: list[Note]) -> dict[str, str]:
    """Shortest id prefix (>= 8 chars) that is unique among the notes in one prompt -> full id."""
    length = SHORT_ID
    while len({n.id[:length] for n in notes}) < len({n.id for n in notes}):
        length += 2
    return {n.id[:length]: n.id for n in notes}


def link_schema(candidate_ids: list[str], settings: Settings, language: str = "English") -> dict[str, Any]:
    id_enum = {"type": "string", "enum": candidate_ids}
    return {
        "title": "link",
        "type": "object",
        "properties": {
            "links": {"type": "array", "items": id_enum,
                      "maxItems": min(settings.max_new_links, settings.max_links, len(candidate_ids))},
            "replaces": {"type": "array", "items": id_enum, "maxItems": 1},
            "updates": {
                "type": "array",
                "maxItems": settings.evolve_max_neighbours,
                "items": {
                    "type": "object",
                    "properties": {
                        "id": id_enum,
                        "context": text_schema(min(UPDATE_CONTEXT_CHARS, settings.max_context_chars), language,
                                               sentence=True),
                        "tags": {"type": "array", "items": text_schema(MAX_TAG_CHARS, language), "maxItems": 2},
                    },
                    "required": ["id", "context", "tags"],
                },
            },
        },
        "required": ["links", "replaces", "updates"],
    }


def link_max_tokens(settings: Settings) -> int:
    """Room for the longest reply the grammar allows: ids are ~6 tokens each with their quotes, Hangul costs
    Qwen about a token a character, and ~60 tokens go to keys and punctuation. A flat 160 cut long
    Korean entries' replies inside their update ("model output was not complete JSON"), and since the call
    is deterministic the note stayed pending on every retry. Only tokens generated are paid for."""
    ids = min(settings.max_new_links, settings.max_links) + 1
    update = 8 + min(UPDATE_CONTEXT_CHARS, settings.max_context_chars) + 2 * MAX_TAG_CHARS + 20
    return 60 + 6 * ids + settings.evolve_max_neighbours * update


def render_candidate(short: str, note: Note) -> str:
    """One compact line per candidate: its start, then its context when it has one (tokens are dear)."""
    who = f"{note.speaker}: " if note.speaker else ""
    line = f"[{short}] {note.at[:10]}: {who}{one_line(note.content, CANDIDATE_CHARS)}"
    if note.context:
        line += " | " + one_line(note.context, 80)
    return line


def parse_decision(data: dict[str, Any], ids: dict[str, str], settings: Settings) -> LinkDecision:
    """Map the model's ids back to full ids (unknown ids dropped), dedupe, cap."""
    decision = LinkDecision()
    for short in data.get("links") or []:
        full = ids.get(short) if isinstance(short, str) else None
        if full and full not in decision.links:
            decision.links.append(full)
    decision.links = decision.links[: min(settings.max_new_links, settings.max_links)]
    replaced = [ids.get(short) for short in data.get("replaces") or [] if isinstance(short, str)]
    decision.replaces = [full for full in dict.fromkeys(replaced) if full][:1]
    seen: set[str] = set()
    for item in data.get("updates") or []:
        if len(decision.updates) >= settings.evolve_max_neighbours:
            break  # the cap holds in code too (0 turns evolution off), whatever a backend returns
        if not isinstance(item, dict):
            continue
        full = ids.get(item.get("id")) if isinstance(item.get("id"), str) else None
        if not full or full in seen:
            continue
        seen.add(full)
        decision.updates.append(Update(
            note_id=full,
            context=clean_context(item.get("context"), settings.max_context_chars) or None,
            tags=clean_terms(item.get("tags"), settings.max_tags, MAX_TAG_CHARS),
            keywords=clean_terms(item.get("keywords"), settings.max_keywords, 30),
        ))
    return decision


def decide_links(llm: LLM, prompts: Prompts, note: Note, candidates: list[Note], settings: Settings
                 ) -> tuple[LinkDecision, Usage]:
    ids = prompt_ids([note, *candidates])
    short_of = {full: short for short, full in ids.items()}
    lines = "\n".join(render_candidate(short_of[c.id], c) for c in candidates)
    language = language_of(note.content)
    user = prompts.render("link", language=language, id=short_of[note.id],
                          at=note.at[:10], content=clip(one_line(note.content), 300), context=note.context,
                          candidates=lines)
    candidate_ids = [short_of[c.id] for c in candidates]
    schema = link_schema(candidate_ids, settings, language)
    data, usage = llm.complete_json(prompts.raw("notes_system").strip(), user, schema, link_max_tokens(settings))
    return parse_decision(data, {s: f for s, f in ids.items() if f != note.id}, settings), usage
