"""A capable model may write the headline of a journal answer (#52 item 4).

Offline, the headline is a sentence quoted from the journal (view.py). With a model server configured
(`--model openai:MODEL@URL`: Ollama, vLLM, llama-server), the model is shown the question and the view's
sentences (numbered, each with its day) and writes one sentence from them, citing their numbers
(grammar-bound to the numbers shown). Its dates are held to the sentences it cites (`date_guard`), and the
quoted sentences are still shown below it: a written headline is checked against the journal's own words.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from ..backends.llm import LLM, LLMError
from ..core.models import Note, Usage
from ..core.prompts import Prompts, language_of
from .date_guard import held_to_citations
from .view import SUPPORTING, Line, View

WRITE_MAX_TOKENS = 160
HEADLINE_CHARS = 200


def headline_schema(count: int) -> dict[str, Any]:
    numbers = {"type": "array", "items": {"type": "integer", "enum": list(range(1, count + 1))}, "minItems": 1,
               "maxItems": count}
    return {"title": "headline", "type": "object",
            "properties": {"answer": {"type": "string", "minLength": 1, "maxLength": HEADLINE_CHARS},
                           "sentences": numbers},
            "required": ["answer", "sentences"]}


def lines_of(view: View) -> list[Line]:
    """The sentences the view shows, the headline's first."""
    return ([view.line] if view.line else []) + view.supporting


def write_headline(llm: LLM, prompts: Prompts, question: str, view: View, today: str) -> tuple[View, Usage]:
    """The view with a headline the model wrote from its sentences (kind "written"); the quoted headline
    becomes the first supporting sentence. Raises `LLMError` when the model fails (the caller keeps the
    quoted view)."""
    lines = lines_of(view)
    block = "\n".join(f"[{n}] ({line.day}) {line.text}" for n, line in enumerate(lines, 1))
    user = prompts.render("headline", today=today, question=question.strip(), sentences=block)
    data, usage = llm.complete_json(prompts.raw("headline_system").strip(), user, headline_schema(len(lines)),
                                    WRITE_MAX_TOKENS)
    numbers = [n for n in dict.fromkeys(data.get("sentences") or []) if isinstance(n, int) and 1 <= n <= len(lines)]
    cited = [lines[n - 1] for n in numbers] or lines[:1]
    notes = [Note(id=line.passage_id, content=line.text, at=line.at) for line in lines]
    held = held_to_citations(" ".join(str(data.get("answer", "")).split()), [notes[lines.index(c)] for c in cited],
                             question, language_of(question) == "Korean", notes)
    if not held.text:
        raise LLMError("the model wrote an empty headline", usage)
    ids = ", ".join(dict.fromkeys(line.entry_id[:8] for line in cited))
    shown = (lines[:1] if view.line else []) + view.supporting
    return replace(view, kind="written", headline=f"{held.text} [{ids}]", line=None,
                   supporting=shown[:SUPPORTING + 1]), usage
