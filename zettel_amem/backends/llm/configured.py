"""The model the settings name, loaded (the owner of the model, `memory.Memory`, calls this once)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from ...core.errors import ZkError
from ...core.models import ServerReach
from . import LLM, LLMError, load_python_backend

if TYPE_CHECKING:
    from ...core.config import Settings


# Local models kept loaded between commands, by (model, context, threads): only the resident server
# (cli/server.py) turns this on; any other process runs one command and loads its model once anyway.
KEEP_LOADED = False
_kept: dict[tuple, LLM] = {}


def load_configured(settings: Settings) -> LLM:
    """The model the settings name: `python:module:Factory`, `openai:MODEL@URL`, or a local GGUF (the
    bundled one by default). A model that cannot be loaded is a ZkError (one line for the user)."""
    s = settings
    if KEEP_LOADED and not s.llm_model.startswith(("python:", "openai:")):
        key = (s.llm_model, s.llm_ctx, s.llm_threads)
        if key not in _kept:
            _kept.clear()  # one local model in memory at a time
            _kept[key] = _load(s)
        return _kept[key]
    return _load(s)


def _load(s: Settings) -> LLM:
    if s.llm_model.startswith("python:"):
        return load_python_backend(s.llm_model)
    try:
        if s.llm_model.startswith("openai:"):
            from .openai_compat import load_openai

            return load_openai(s.llm_model, s.llm_base_url or None, s.llm_api_key_env, s.llm_timeout, s.llm_retries)
        from .llama import load_llm

        return load_llm(s.llm_model, s.llm_ctx, s.llm_threads)
    except LLMError as exc:
        raise ZkError(str(exc)) from None


def server_reach(settings: Settings) -> ServerReach | None:
    """For a configured model server (`openai:`): whether it accepts a connection (a short probe, no request);
    None for a local or plug-in model, which is never probed."""
    if not settings.llm_model.startswith("openai:"):
        return None
    from .openai_compat import reach

    return reach(settings.llm_model, settings.llm_base_url or None)
