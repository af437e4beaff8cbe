"""llama-cpp-python backend: a local GGUF, JSON constrained by a grammar built from a JSON schema."""

from __future__ import annotations

import ctypes
import json
import signal
import threading
import time
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor, wait
from contextlib import contextmanager
from pathlib import Path
from typing import Any, TypeVar

from ...core.models import Usage
from . import LLMError

T = TypeVar("T")


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


def _native_flag_check() -> int | None:
    """The address of a C function llama.cpp can call as its abort callback without Python: libc's
    `strlen` on the two-byte flag is 0 while it is b"\\0\\0" and 1 once the first byte is set, returned in
    the register a `bool (*)(void *)` returns in. None where libc cannot be found (no callback then)."""
    try:
        return ctypes.cast(ctypes.CDLL(None).strlen, ctypes.c_void_p).value
    except (OSError, AttributeError, TypeError):
        return None


class _CtrlC:
    """Ctrl-C that stops llama.cpp within one node of its compute graph, not after a whole prompt batch.

    Python runs a signal handler only between bytecodes of the main thread, so while the main thread is
    inside `llama_decode` (seconds for a long prompt on two cores) the handler waits. So the main
    thread hands the model's work to a helper thread and waits: the handler runs at once and sets a
    flag byte that llama.cpp's abort callback reads between graph nodes; the decode stops and the
    interrupt is raised on the main thread once llama.cpp has returned.

    The callback is native (`_native_flag_check`), not a Python function: llama.cpp calls it for every
    graph node, and a Python callback must take the GIL each time; with one other busy Python thread
    (an MCP tool call alongside) a call was 15-20x slower (docs/benchmarks.md).
    """

    def __init__(self) -> None:
        self.stop = False
        self.flag = (ctypes.c_ubyte * 2)()  # read by llama.cpp's threads; [1] stays 0 (strlen's end)
        self.native = False  # set once the native callback is installed on the context
        self._old = None
        self._pool: ThreadPoolExecutor | None = None

    def run(self, work: Callable[[], T]) -> T:
        """work(), which calls llama.cpp, stoppable by Ctrl-C when called on the main thread."""
        self.stop, self.flag[0] = False, 0
        if not self.native or threading.current_thread() is not threading.main_thread():
            return work()  # no handler runs on another thread (the MCP server's calls): nothing to watch
        if self._pool is None:  # one thread, kept: llama.cpp's OpenMP workers stay with it
            self._pool = ThreadPoolExecutor(max_workers=1, thread_name_prefix="zk-llama")
        with self:
            future = self._pool.submit(work)
            try:
                while not future.done():  # a timeout: the handler runs even if the signal woke another thread
                    wait([future], timeout=0.25)
            finally:
                if not future.done():  # left early (another signal's exception): stop llama.cpp first
                    self.flag[0] = 1
                    wait([future])
            return future.result()

    def _handler(self, signum, frame) -> None:
        import logging

        self.stop, self.flag[0] = True, 1
        # llama.cpp logs the aborted decode ("removing memory module entries…"): not for the user's terminal.
        logging.getLogger("llama-cpp-python").setLevel(logging.CRITICAL + 1)

    def __enter__(self) -> _CtrlC:
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
        check = _native_flag_check()
        try:
            import llama_cpp.llama_cpp as low

            if check is not None:
                self._abort = low.ggml_abort_callback(check)  # kept, with the flag: llama.cpp holds both
                low.llama_set_abort_callback(self._llm.ctx, self._abort, ctypes.addressof(self._ctrl_c.flag))
                self._ctrl_c.native = True
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
            result = self._ctrl_c.run(lambda: self._llm.create_chat_completion(
                messages=[{"role": "system", "content": system}, {"role": "user", "content": user}],
                response_format={"type": "json_object", "schema": schema},
                temperature=0.0, max_tokens=max_tokens, seed=0,
            ))
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
            raise LLMError(f"model output was not complete JSON: {text[:80]!r}", usage, partial=text) from None
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
                # only around llama.cpp's work, never while the caller holds a piece
                chunk = self._ctrl_c.run(lambda: next(chunks, None))
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
