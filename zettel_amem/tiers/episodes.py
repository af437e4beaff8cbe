"""Episodic tier: a completed session -> an LLM summary + an extractive abstract (no LLM).

- The summary is a short list of fact sentences (decisions, facts about people and projects, tasks
  done and open, technical details, preferences), every entity named, in the session's language.
  It is always made from the raw turns: a long session is summarised in chunks of raw turns and the
  chunk facts are joined, never a summary of a summary, so `zk session resummarize` can redo it.
- The abstract is the summary's first meaningful sentence (>= 20 characters), cut on characters to
  ~200: cheap, deterministic, and what L0 hints show.
"""

from __future__ import annotations

import re
from typing import Any

from ..amem.construct import text_schema
from ..backends.llm import LLM
from ..core.config import Settings
from ..core.models import Note, Usage
from ..core.prompts import Prompts, language_of
from ..core.text import clip, estimate_tokens, one_line, sentences

ABSTRACT_CHARS = 200
MIN_ABSTRACT_CHARS = 20
FACT_CHARS = 140  # one fact sentence, as the model may write it
TURN_CHARS = 300  # a turn is shown to the summariser from its beginning
_BULLET = re.compile(r"^\s*(?:[-*•·]|\d+[.)])\s*")


def abstract_of(summary: str, max_chars: int = ABSTRACT_CHARS) -> str:
    """The first sentence of `summary` with at least 20 characters, clipped on characters."""
    pieces = [one_line(_BULLET.sub("", s)) for s in sentences(summary)]
    pieces = [s for s in pieces if s]
    for sentence in pieces:
        if len(sentence) >= MIN_ABSTRACT_CHARS:
            return clip(sentence, max_chars)
    return clip(" ".join(pieces), max_chars)


def render_turn(note: Note) -> str:
    who = f"{note.speaker}: " if note.speaker else ""
    return f"{note.at[:16].replace('T', ' ')} {who}{one_line(note.content, TURN_CHARS)}"


def chunk_turns(lines: list[str], max_tokens: int) -> list[list[str]]:
    """Consecutive turns grouped so that each group's prompt stays within `max_tokens`."""
    chunks: list[list[str]] = [[]]
    used = 0
    for line in lines:
        cost = estimate_tokens(line) + 1
        if chunks[-1] and used + cost > max_tokens:
            chunks.append([])
            used = 0
        chunks[-1].append(line)
        used += cost
    return [c for c in chunks if c]


MIXED = "Korean or English, as each turn is written"


def session_language(turns: list[Note]) -> str:
    """The session's language; a session that mixes Korean and English turns keeps both (a small model
    told to write Korean drops the English turns rather than translate them)."""
    languages = [language_of(t.content) for t in turns[:60]]
    korean = languages.count("Korean")
    if korean and korean < len(languages) and languages.count("English"):
        return MIXED
    return language_of(" ".join(t.content for t in turns[:40]))


def summary_schema(language: str, max_facts: int) -> dict[str, Any]:
    return {
        "title": "summarise",
        "type": "object",
        "properties": {"facts": {"type": "array", "minItems": 1, "maxItems": max_facts,
                                 "items": text_schema(FACT_CHARS, language, sentence=True)}},
        "required": ["facts"],
    }


def summarise(llm: LLM, prompts: Prompts, turns: list[Note], title: str, settings: Settings
              ) -> tuple[str, Usage]:
    """Fact lines summarising the session's raw turns (one LLM call per chunk of turns)."""
    usage = Usage()
    lines = [render_turn(t) for t in turns]
    language = session_language(turns)
    system = prompts.raw("summarise_system").strip()
    facts: list[str] = []
    seen: set[str] = set()
    for chunk in chunk_turns(lines, settings.summary_chunk_tokens):
        user = prompts.render("summarise", language=language, title=one_line(title, 80) or "-",
                              turns="\n".join(chunk))
        data, spent = llm.complete_json(system, user, summary_schema(language, settings.summary_max_facts),
                                        max_tokens=settings.summary_max_tokens)
        usage.add(spent)
        for fact in data.get("facts") or []:
            if isinstance(fact, str) and (line := one_line(fact)) and line.lower() not in seen:
                seen.add(line.lower())
                facts.append(clip(line, FACT_CHARS + 20))
    return "\n".join(facts), usage
