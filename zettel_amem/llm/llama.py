"""llama-cpp-python backend: a local GGUF, JSON constrained by a grammar built from a JSON schema."""

from __future__ import annotations

import json
import signal
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from ..models import Usage
from . import LLMError


@contextmanager
def without_extra_bufts() -> Iterator[None]:
    """Every llama.cpp model loaded inside this block has extra buffer types disabled.

    A native build of llama.cpp 0.3.36 segfaults on CPUs that report AMX, in
    `ggml_backend_amx_mul_mat` on the first generation. We install with GGML_NATIVE=OFF, but a
    user may have a native wheel cached; `use_extra_bufts = False` avoids the AMX path either way
    and measured the same speed here (Qwen2.5-0.5B, 2 cores). The Llama constructor exposes no
    argument for it, so the default-params factory is wrapped for the duration of the block (the
    test server, tests/llm_server.py, runs llama-cpp-python's own server inside it).
    """
    import llama_cpp.llama_cpp as low

    original = low.llama_model_default_params

    def params_without_extra_bufts():
        params = original()
        params.use_extra_bufts = False
        return params

    low.llama_model_default_params = params_without_extra_bufts
    try:
        yield
    finally:
        low.llama_model_default_params = original


def _load_llama(path: Path, n_ctx: int, threads: int, seed: int):
    """Load with extra buffer types disabled (`without_extra_bufts`)."""
    from llama_cpp import Llama

    with without_extra_bufts():
        return Llama(str(path), n_ctx=n_ctx, n_threads=threads, n_threads_batch=threads, seed=seed,
                     verbose=False)


def check_build() -> tuple[bool, str]:
    """(ok, one line) about the installed llama.cpp, for `zk doctor`: importable, and safe on a CPU
    with AMX (the crash `_load_llama` works around by turning extra buffer types off)."""
    try:
        import llama_cpp
        import llama_cpp.llama_cpp as low
    except Exception as exc:  # noqa: BLE001 - a broken native build fails in many ways
        return False, f"llama-cpp-python cannot be loaded ({type(exc).__name__}); reinstall with ./install.sh"
    try:
        system = low.llama_print_system_info().decode("utf-8", "replace")
    except Exception:  # noqa: BLE001
        system = ""
    try:
        with open("/proc/cpuinfo", encoding="utf-8") as fh:
            cpu_amx = "amx_tile" in fh.read()
    except OSError:
        cpu_amx = False
    build_amx = "AMX_INT8 = 1" in system or "AMX = 1" in system
    can_disable = hasattr(low.llama_model_default_params(), "use_extra_bufts")
    version = getattr(llama_cpp, "__version__", "?")
    if cpu_amx and build_amx and not can_disable:
        return False, (f"llama-cpp-python {version} was built with AMX on a CPU with AMX and cannot turn that "
                       "path off (it crashes); reinstall with ./install.sh (GGML_NATIVE=OFF)")
    if cpu_amx:
        how = "zk turns the AMX path off (use_extra_bufts = False)" if can_disable else "the build has no AMX path"
        return True, f"llama-cpp-python {version}; this CPU has AMX: {how}"
    return True, f"llama-cpp-python {version}" + (" (native build)" if build_amx else "")


class _CtrlC:
    """Ctrl-C that stops llama.cpp within one node of its compute graph, not after a whole prompt batch.

    Python runs a signal handler only between bytecodes, so while `llama_decode` evaluates a long prompt
    (seconds on two cores) the default handler waits. llama.cpp calls an abort callback between graph
    nodes, on this (main) thread: Python runs the pending handler there. Raising KeyboardInterrupt inside
    a ctypes callback would only be printed and ignored, so during a call the handler just sets a flag,
    the callback returns it (the decode stops), and the interrupt is raised once llama.cpp has returned.
    """

    def __init__(self) -> None:
        self.stop = False
        self._old = None

    def callback(self, _data) -> bool:
        return self.stop

    def _handler(self, signum, frame) -> None:
        import logging

        self.stop = True
        # llama.cpp logs the aborted decode ("removing memory module entries…"): not for the user's terminal.
        logging.getLogger("llama-cpp-python").setLevel(logging.CRITICAL + 1)

    def __enter__(self) -> _CtrlC:
        self.stop = False
        if threading.current_thread() is threading.main_thread():
            self._old = signal.signal(signal.SIGINT, self._handler)
        return self

    def __exit__(self, *exc) -> None:
        if self._old is not None:
            signal.signal(signal.SIGINT, self._old)
            self._old = None
        if self.stop:
            import logging

            logging.getLogger("llama-cpp-python").setLevel(logging.ERROR)  # what verbose=False sets
            raise KeyboardInterrupt


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
        self._ctrl_c = _CtrlC()
        try:
            import llama_cpp.llama_cpp as low

            self._abort = low.ggml_abort_callback(self._ctrl_c.callback)  # kept: llama.cpp holds the pointer
            low.llama_set_abort_callback(self._llm.ctx, self._abort, None)
        except (AttributeError, TypeError):  # an older build without the callback: Ctrl-C between batches
            pass

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
            with self._ctrl_c:
                result = self._llm.create_chat_completion(
                    messages=[{"role": "system", "content": system}, {"role": "user", "content": user}],
                    response_format={"type": "json_object", "schema": schema},
                    temperature=0.0, max_tokens=max_tokens, seed=0,
                )
        except (ValueError, RuntimeError) as exc:
            if self._ctrl_c.stop:  # llama_decode returned "aborted": it was Ctrl-C
                raise KeyboardInterrupt from None
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
            while True:
                with self._ctrl_c:  # only around llama.cpp's work, never while the caller holds a piece
                    chunk = next(chunks, None)
                if chunk is None:
                    break
                piece = chunk["choices"][0]["delta"].get("content")
                if piece:
                    completion += 1
                    yield piece
        except (ValueError, RuntimeError) as exc:
            if self._ctrl_c.stop:
                raise KeyboardInterrupt from None
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
