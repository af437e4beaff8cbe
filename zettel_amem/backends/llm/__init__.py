"""LLM backends behind one small interface.

A backend turns (system, user, JSON schema) into a dict, and (system, user) into streamed text, and
counts what it spent. Backends: llama-cpp-python on a local GGUF (`llama.py`), an OpenAI-compatible
HTTP server (`openai_compat.py`), or any object named by `python:module:Factory`. A backend whose
`concurrent` attribute is False (the in-process model) is called from one thread only.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any, Protocol

from ...core.errors import mask_secrets, register_secret
from ...core.models import Usage

__all__ = ["LLM", "LLMError", "Usage", "load_python_backend", "mask_secrets", "mask_spec", "register_secret",
           "salvage_json"]

def mask_spec(spec: str) -> str:
    """A model setting as it may be shown: `openai:m@http://user:***@host/v1`."""
    return mask_secrets(spec)


class LLMError(Exception):
    """The model could not produce a usable answer (load failure, bad output, interrupted).
    `usage` holds what a call spent before it failed (a cut-off JSON still cost its tokens).
    The message never holds a known secret (`mask_secrets`)."""

    def __init__(self, message: str, usage: Usage | None = None, partial: str = ""):
        super().__init__(mask_secrets(message))
        self.usage = usage
        self.partial = partial  # a JSON reply cut off by the token limit, whole (`salvage_json` reads it)


def salvage_json(text: str) -> dict[str, Any] | None:
    """The longest complete prefix of a cut-off JSON object, closed: its finished list items and top-level
    fields are kept, the item being written when the tokens ran out is dropped whole. None when nothing
    is complete."""
    import json

    stack: list[str] = []
    cuts: list[tuple[int, str]] = []  # (where a finished value ends, the brackets that close it there)
    in_string = escaped = False
    for index, char in enumerate(text):
        if in_string:
            escaped, in_string = (False, in_string) if escaped else (char == "\\", char != '"')
            continue
        if char == '"':
            in_string = True
        elif char in "[{":
            stack.append("]" if char == "[" else "}")
        elif char in "]}" and stack:
            stack.pop()
            cuts.append((index + 1, "".join(reversed(stack))))
        elif char == "," and (stack[-1:] == ["]"] or len(stack) == 1):  # after a list item or a top field
            cuts.append((index, "".join(reversed(stack))))
    for end, closers in reversed(cuts):
        try:
            data = json.loads(text[:end] + closers)
        except json.JSONDecodeError:
            continue
        if isinstance(data, dict):
            return data
    return None


class LLM(Protocol):
    name: str

    def complete_json(self, system: str, user: str, schema: dict[str, Any], max_tokens: int
                      ) -> tuple[dict[str, Any], Usage]: ...

    def stream(self, system: str, user: str, max_tokens: int) -> Iterator[str]:
        """Yield text pieces; afterwards `last_usage` holds the counts of this call."""
        ...

    @property
    def last_usage(self) -> Usage: ...


def load_python_backend(spec: str) -> LLM:
    """`python:package.module:Factory` -> Factory(): plug in any backend object with this interface
    (an OpenAI-compatible client, a scripted model for crash tests)."""
    import importlib

    from ...core.errors import ZkError

    _, _, target = spec.partition(":")
    module_name, _, attr = target.partition(":")
    try:
        factory = getattr(importlib.import_module(module_name), attr)
    except (ImportError, AttributeError) as exc:
        raise ZkError(f"cannot load LLM backend '{target}': {exc}") from None
    return factory()
