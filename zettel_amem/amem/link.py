"""Link generation and the evolution decision (A-MEM §3.2-3.3), in one LLM call.

Fixes over the reference code:
- candidates are found with the new note's *full* embedding (content + keywords + tags + context);
- the model sees each candidate under a local label (1, 2, 3: the candidates nearest first), never its
  random id: a 0.5B model's choices shifted with the ids' hex digits, so whether a note evolved depended
  on which ids its notes drew (#53). The schema admits only those labels (an enum) and the answer is mapped
  back label -> note through the dict the prompt was rendered from: never through a search rank. (Labelled
  oldest first, the small model's taste for label 1 made a diary's first entries collect the rewrites, #60.)
- evolution is a choice of candidate plus a few words of what changed ("later"): the neighbour's own
  description stays, the words are checked against the notes (grounded.py, in the pipeline);
- links, "later" clauses and tags are capped in code whatever the model returns.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from ..backends.llm import LLM
from ..core.config import Settings
from ..core.models import Note, Usage
from ..core.prompts import Prompts, language_of
from ..core.text import clip, one_line
from .construct import MAX_TAG_CHARS, clean_context, clean_terms, text_schema

LATER_CHARS = 70  # what evolution adds to a neighbour: a few words (completion tokens are the dear ones)
CANDIDATE_CHARS = 100  # each candidate is shown compactly: start of content | context


@dataclass
class Update:
    note_id: str
    context: str | None = None  # the model's "later" clause in a decision; the whole new context once applied
    tags: list[str] = field(default_factory=list)
    keywords: list[str] = field(default_factory=list)


@dataclass
class LinkDecision:
    links: list[str] = field(default_factory=list)
    updates: list[Update] = field(default_factory=list)
    # linked candidates whose stated value the new note states anew (typed *updates* links, #36; the
    # pipeline checks each before recording it: older, and a passage pair that shares a subject word)
    replaces: list[str] = field(default_factory=list)


def candidate_labels(candidates: list[Note]) -> dict[str, Note]:
    """Label ("1", "2", ...) -> candidate, in the order given (the pipeline gives them nearest first): what the
    model reads depends on the notes and their vectors alone, never on their ids."""
    return {str(number): note for number, note in enumerate(candidates, 1)}


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
                        "later": text_schema(min(LATER_CHARS, settings.max_context_chars), language),
                        "tags": {"type": "array", "items": text_schema(MAX_TAG_CHARS, language), "maxItems": 2},
                    },
                    "required": ["id", "later", "tags"],
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
    update = 8 + min(LATER_CHARS, settings.max_context_chars) + 2 * MAX_TAG_CHARS + 20
    return 60 + 6 * ids + settings.evolve_max_neighbours * update


def render_candidate(label: str, note: Note) -> str:
    """One compact line per candidate: its start, then its context when it has one (tokens are dear)."""
    who = f"{note.speaker}: " if note.speaker else ""
    line = f"[{label}] {note.at[:10]}: {who}{one_line(note.content, CANDIDATE_CHARS)}"
    if note.context:
        line += " | " + one_line(note.context, 80)
    return line


def parse_decision(data: dict[str, Any], labels: dict[str, str], settings: Settings) -> LinkDecision:
    """Map the model's labels back to full ids through `labels` (label -> id; unknown labels dropped), dedupe,
    cap."""
    decision = LinkDecision()
    for label in data.get("links") or []:
        full = labels.get(label) if isinstance(label, str) else None
        if full and full not in decision.links:
            decision.links.append(full)
    decision.links = decision.links[: min(settings.max_new_links, settings.max_links)]
    replaced = [labels.get(label) for label in data.get("replaces") or [] if isinstance(label, str)]
    decision.replaces = [full for full in dict.fromkeys(replaced) if full][:1]
    seen: set[str] = set()
    for item in data.get("updates") or []:
        if len(decision.updates) >= settings.evolve_max_neighbours:
            break  # the cap holds in code too (0 turns evolution off), whatever a backend returns
        if not isinstance(item, dict):
            continue
        full = labels.get(item.get("id")) if isinstance(item.get("id"), str) else None
        if not full or full in seen:
            continue
        seen.add(full)
        decision.updates.append(Update(
            note_id=full,
            context=clean_context(item.get("later", item.get("context")), min(LATER_CHARS, settings.max_context_chars))
            or None,
            tags=clean_terms(item.get("tags"), settings.max_tags, MAX_TAG_CHARS),
            keywords=clean_terms(item.get("keywords"), settings.max_keywords, 30),
        ))
    return decision


def decide_links(llm: LLM, prompts: Prompts, note: Note, candidates: list[Note], settings: Settings
                 ) -> tuple[LinkDecision, Usage]:
    labels = candidate_labels(candidates)
    lines = "\n".join(render_candidate(label, c) for label, c in labels.items())
    language = language_of(note.content)
    # `id` stays a placeholder a user's template may name (it is the new note's label, not its id)
    user = prompts.render("link", language=language, id="new", at=note.at[:10],
                          content=clip(one_line(note.content), 300), context=note.context, candidates=lines)
    schema = link_schema(list(labels), settings, language)
    data, usage = llm.complete_json(prompts.raw("notes_system").strip(), user, schema, link_max_tokens(settings))
    return parse_decision(data, {label: c.id for label, c in labels.items()}, settings), usage
