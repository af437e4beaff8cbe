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

__all__ = ["LLM", "LLMError", "Usage", "load_python_backend", "mask_secrets", "mask_spec", "register_secret"]

def mask_spec(spec: str) -> str:
    """A model setting as it may be shown: `openai:m@http://user:***@host/v1`."""
    return mask_secrets(spec)


class LLMError(Exception):
    """The model could not produce a usable answer (load failure, bad output, interrupted).
    `usage` holds what a call spent before it failed (a cut-off JSON still cost its tokens).
    The message never holds a known secret (`mask_secrets`)."""

    def __init__(self, message: str, usage: Usage | None = None):
        super().__init__(mask_secrets(message))
        self.usage = usage


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
