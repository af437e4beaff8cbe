"""llama-cpp-python backend: a local GGUF, JSON constrained by a grammar built from a JSON schema."""

from __future__ import annotations

import json
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from . import LLMError, Usage


def _load_llama(path: Path, n_ctx: int, threads: int, seed: int):
    """Load with extra buffer types disabled.

    A native build of llama.cpp 0.3.36 segfaults on CPUs that report AMX, in
    `ggml_backend_amx_mul_mat` on the first generation. We install with GGML_NATIVE=OFF, but a
    user may have a native wheel cached; `use_extra_bufts = False` avoids the AMX path either way
    and measured the same speed here (Qwen2.5-0.5B, 2 cores). The Llama constructor exposes no
    argument for it, so the default-params factory is wrapped for the duration of the load.
    """
    import llama_cpp.llama_cpp as low
    from llama_cpp import Llama

    original = low.llama_model_default_params

    def params_without_extra_bufts():
        params = original()
        params.use_extra_bufts = False
        return params

    low.llama_model_default_params = params_without_extra_bufts
    try:
        return Llama(str(path), n_ctx=n_ctx, n_threads=threads, n_threads_batch=threads, seed=seed,
                     verbose=False)
    finally:
        low.llama_model_default_params = original


class LlamaCppLLM:
    concurrent = False  # one context and both cores: `--jobs N` runs one note at a time with this backend

    def __init__(self, path: Path, n_ctx: int = 4096, threads: int = 2, seed: int = 0):
        self.name = path.name
        self.path = path
        try:
            self._llm = _load_llama(path, n_ctx, threads, seed)
        except (ValueError, RuntimeError, OSError) as exc:
            raise LLMError(f"cannot load model {path}: {exc}") from None
        self._last = Usage()

    @property
    def last_usage(self) -> Usage:
        return self._last

    def _reset_counters(self) -> None:
        import llama_cpp.llama_cpp as low

        low.llama_perf_context_reset(self._llm.ctx)

    def _evaluated(self) -> int:
        """Prompt tokens actually evaluated (cache hits excluded), from llama.cpp's perf counters."""
        import llama_cpp.llama_cpp as low

        return int(low.llama_perf_context(self._llm.ctx).n_p_eval)

    def complete_json(self, system: str, user: str, schema: dict[str, Any], max_tokens: int
                      ) -> tuple[dict[str, Any], Usage]:
        self._reset_counters()
        start = time.perf_counter()
        try:
            result = self._llm.create_chat_completion(
                messages=[{"role": "system", "content": system}, {"role": "user", "content": user}],
                response_format={"type": "json_object", "schema": schema},
                temperature=0.0, max_tokens=max_tokens, seed=0,
            )
        except (ValueError, RuntimeError) as exc:
            raise LLMError(f"generation failed: {exc}") from None
        usage = Usage(calls=1, prompt_tokens=result["usage"]["prompt_tokens"],
                      evaluated_tokens=self._evaluated(),
                      completion_tokens=result["usage"]["completion_tokens"],
                      seconds=time.perf_counter() - start)
        self._last = usage
        text = result["choices"][0]["message"]["content"] or ""
        try:
            data = json.loads(text)
        except json.JSONDecodeError:
            # The grammar guarantees valid JSON unless max_tokens cut it off mid-object.
            raise LLMError(f"model output was not complete JSON: {text[:80]!r}", usage) from None
        if not isinstance(data, dict):
            raise LLMError("model output was not a JSON object", usage)
        return data, usage

    def stream(self, system: str, user: str, max_tokens: int) -> Iterator[str]:
        self._reset_counters()
        start = time.perf_counter()
        prompt_tokens = completion = 0
        try:
            chunks = self._llm.create_chat_completion(
                messages=[{"role": "system", "content": system}, {"role": "user", "content": user}],
                temperature=0.0, max_tokens=max_tokens, seed=0, stream=True,
            )
            for chunk in chunks:
                piece = chunk["choices"][0]["delta"].get("content")
                if piece:
                    completion += 1
                    yield piece
        except (ValueError, RuntimeError) as exc:
            raise LLMError(f"generation failed: {exc}") from None
        finally:
            import llama_cpp.llama_cpp as low

            data = low.llama_perf_context(self._llm.ctx)
            prompt_tokens = len(self._llm.tokenize(
                (system + user).encode("utf-8"), add_bos=False, special=False))
            self._last = Usage(calls=1, prompt_tokens=prompt_tokens, evaluated_tokens=int(data.n_p_eval),
                               completion_tokens=int(data.n_eval) or completion,
                               seconds=time.perf_counter() - start)


def load_llm(model: str = "default", n_ctx: int = 4096, threads: int = 2) -> LlamaCppLLM:
    from .bundled import resolve_model

    return LlamaCppLLM(resolve_model(model), n_ctx=n_ctx, threads=threads)
