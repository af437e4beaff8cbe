"""The model reads (#36 item 6): which of the best few passages answers a journal question.

Rules rank passages by words and meaning (evidence.py); on page-long entries the passage that answers is
often second or fifth, behind one that shares more words with the question. Deciding which passage
answers is reading, so the model is shown the question and the best `answer_reader_passages` passages
(each clipped, with its day) and replies with one number, grammar-bound to 0..N (0: none answers). The
answer stays the passage's own words: the model picks, it writes nothing. A failed call, or 0, leaves the
rules' order as it was.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from ..backends.llm import LLM, LLMError
from ..core.models import Note
from ..core.prompts import Prompts
from ..core.text import clip

PASSAGE_CHARS = 240  # each passage shown clipped: the prompt stays short on a small model
READ_MAX_TOKENS = 12

# (question, candidate passages best first) -> the index of the one that answers, or None
Read = Callable[[str, list[Note]], "int | None"]


def read_schema(count: int) -> dict[str, Any]:
    """One number: a candidate (1..count) or 0 for none."""
    return {"title": "read", "type": "object",
            "properties": {"passage": {"type": "integer", "enum": list(range(count + 1))}},
            "required": ["passage"]}


def passages_block(candidates: list[Note]) -> str:
    return "\n".join(f"[{number}] ({note.at[:10]}) {clip(' '.join(note.content.split()), PASSAGE_CHARS)}"
                     for number, note in enumerate(candidates, 1))


def choose(llm: LLM, prompts: Prompts, question: str, candidates: list[Note]) -> tuple[int | None, str]:
    """(the index into `candidates` of the passage the model says answers `question`, or None when it
    said none or failed; why it failed, or ""). None leaves the rules' order as it was."""
    if len(candidates) < 2:
        return None, ""
    user = prompts.render("read", question=question.strip(), passages=passages_block(candidates))
    try:
        data, _usage = llm.complete_json(prompts.raw("read_system").strip(), user, read_schema(len(candidates)),
                                         READ_MAX_TOKENS)
    except LLMError as exc:
        return None, str(exc) or type(exc).__name__
    number = data.get("passage") if isinstance(data, dict) else None
    if isinstance(number, int) and 1 <= number <= len(candidates):
        return number - 1, ""
    return None, ""
