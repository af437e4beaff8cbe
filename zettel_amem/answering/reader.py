"""The model reads (#36 item 6): which of the best few passages answers a journal question.

Rules rank passages by words and meaning (evidence.py); on page-long entries the passage that answers is
often second or fifth, behind one that shares more words with the question. Deciding which passage
answers is reading, so the model is shown the question and the best `answer_reader_passages` passages
(each clipped, with its day) and replies with one number, grammar-bound to 0..N (0: none answers). The
answer stays the passage's own words: the model picks, it writes nothing. A failed call, or 0, leaves the
rules' order as it was.
"""

from __future__ import annotations

from typing import Any, Protocol

from ..backends.llm import LLM, LLMError
from ..core.models import Note
from ..core.prompts import Prompts
from ..core.text import clip

PASSAGE_CHARS = 240  # each passage shown clipped: the prompt stays short on a small model
READ_MAX_TOKENS = 12
READ_ALL_MAX_TOKENS = 48

COUNT_PASSAGES = 8  # a count reads more passages than one answer: every time it happened should be among them


class Reader(Protocol):
    """What journal answers ask of a reader; candidates come best first."""

    def one(self, question: str, candidates: list[Note]) -> int | None:
        """The index of the passage that answers, or None (none does, or no reading)."""

    def all(self, question: str, candidates: list[Note]) -> list[int] | None:
        """The indexes of the passages that record a time it happened, or None (no reading)."""


class ModelReader:
    """The model as the reader of a journal answer's best passages; `said` is what it did, for the
    answer's status line."""

    def __init__(self, llm: LLM, prompts: Prompts, passages: int, name: str):
        self.llm, self.prompts, self.passages, self.name = llm, prompts, passages, name
        self.said = ""

    def one(self, question: str, candidates: list[Note]) -> int | None:
        chosen, failed = choose(self.llm, self.prompts, question, candidates[:self.passages])
        shown = min(self.passages, len(candidates))
        self.said = self._said(failed, f"chose passage {chosen + 1} of the best {shown}" if chosen is not None
                               else f"read the best {shown} passages and chose none")
        return chosen

    def all(self, question: str, candidates: list[Note]) -> list[int] | None:
        picked, failed = choose_all(self.llm, self.prompts, question, candidates[:COUNT_PASSAGES])
        shown = min(COUNT_PASSAGES, len(candidates))
        self.said = self._said(failed, f"found it in {len(picked or [])} of the best {shown} passages")
        return picked

    def _said(self, failed: str, did: str) -> str:
        return (f"the model {self.name} failed ({failed}); the rules chose" if failed else
                f"the model {self.name} {did}") + "; the answer is your notes' words"


def read_schema(count: int) -> dict[str, Any]:
    """One number: a candidate (1..count) or 0 for none."""
    return {"title": "read", "type": "object",
            "properties": {"passage": {"type": "integer", "enum": list(range(count + 1))}},
            "required": ["passage"]}


def read_all_schema(count: int) -> dict[str, Any]:
    """Numbers of candidates (1..count), each at most once (duplicates are dropped when read)."""
    numbers = {"type": "array", "items": {"type": "integer", "enum": list(range(1, count + 1))}, "maxItems": count}
    return {"title": "read", "type": "object", "properties": {"passages": numbers}, "required": ["passages"]}


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


def choose_all(llm: LLM, prompts: Prompts, question: str, candidates: list[Note]) -> tuple[list[int] | None, str]:
    """(the indexes into `candidates` of the passages the model says record a time the event of a "how
    many times" question happened, or None when the call failed; why it failed, or "")."""
    if not candidates:
        return None, ""
    user = prompts.render("read_all", question=question.strip(), passages=passages_block(candidates))
    try:
        data, _usage = llm.complete_json(prompts.raw("read_system").strip(), user,
                                         read_all_schema(len(candidates)), READ_ALL_MAX_TOKENS)
    except LLMError as exc:
        return None, str(exc) or type(exc).__name__
    numbers = data.get("passages") if isinstance(data, dict) else None
    if not isinstance(numbers, list):
        return None, "the model's reply held no list of passages"
    return list(dict.fromkeys(n - 1 for n in numbers if isinstance(n, int) and 1 <= n <= len(candidates))), ""
