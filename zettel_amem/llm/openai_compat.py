"""OpenAI-compatible HTTP backend: Ollama, llama.cpp `llama-server`, vLLM, LM Studio,
`python -m llama_cpp.server`, or any server that speaks `/v1/chat/completions`.

Spec: `openai:MODEL@BASE_URL` (the last `@` splits, so `qwen2.5:7b` works as a model name), or
`openai:MODEL` with the base URL from config (`[llm] base_url`). Why these choices:

- JSON is constrained by the server (`response_format` with the JSON schema). OpenAI, vLLM, Ollama,
  LM Studio and llama-server take `{"type": "json_schema"}`; llama-cpp-python's server only takes
  `{"type": "json_object", "schema": ...}`. A server that refuses the first form gets the second, once
  per process. A server that ignores the schema still has its output parsed and checked here; the
  callers enforce every cap in code, as for the local model.
- The model name is checked against `/models` on first use: llama-cpp-python's server answers any name
  with its one model, which would hide a typo; a server without `/models` is trusted.
- Timeouts, retries with backoff (connection errors, 429, 5xx, timeouts), and every failure is an
  `LLMError` with one line a user can act on, so the note stays pending with that reason.
- Thread-safe: `zk process --jobs N` keeps N requests in flight through one client; `last_usage` is
  per thread.
"""

from __future__ import annotations

import json
import os
import re
import threading
import time
from collections.abc import Iterator
from typing import Any

from ..models import Usage
from . import LLMError

DEFAULT_BASE_URL = "http://127.0.0.1:8080/v1"
_RETRY_STATUS = {408, 429, 500, 502, 503, 504}


def parse_spec(spec: str, default_base_url: str | None = None) -> tuple[str, str]:
    """`openai:MODEL@URL` -> (model, base_url). The URL may be given in config instead."""
    body = spec.removeprefix("openai:")
    model, sep, url = body.rpartition("@")
    if not sep or not url.startswith(("http://", "https://")):
        model, url = body, default_base_url or DEFAULT_BASE_URL
    model = model.strip()
    if not model:
        raise LLMError(f"no model name in '{spec}' (use openai:MODEL@http://HOST:PORT/v1)")
    return model, url.rstrip("/")


def _short(text: str, limit: int = 120) -> str:
    return " ".join(text.split())[:limit]


def parse_json_object(text: str) -> dict[str, Any] | None:
    """The model's JSON object; tolerates a ```json fence from a server that ignored the schema."""
    candidates = [text]
    fenced = re.search(r"```(?:json)?\s*(\{.*\})\s*```", text, re.DOTALL)
    if fenced:
        candidates.append(fenced.group(1))
    start, end = text.find("{"), text.rfind("}")
    if 0 <= start < end:
        candidates.append(text[start:end + 1])
    for candidate in candidates:
        try:
            data = json.loads(candidate)
        except json.JSONDecodeError:
            continue
        return data if isinstance(data, dict) else None
    return None


class OpenAICompatLLM:
    concurrent = True  # safe to call from several threads (`zk process --jobs N`)

    def __init__(self, model: str, base_url: str = DEFAULT_BASE_URL, *, api_key: str | None = None,
                 timeout: float = 120.0, retries: int = 2, backoff: float = 0.5):
        import httpx

        self.model = model
        self.base_url = base_url.rstrip("/")
        self.name = f"openai:{model}@{self.base_url}"
        self.retries = max(0, retries)
        self.backoff = backoff
        self.timeout = timeout
        headers = {"Authorization": f"Bearer {api_key}"} if api_key else {}
        # connect fails fast (server down); read waits for a slow generation up to `timeout`
        self._client = httpx.Client(base_url=self.base_url, headers=headers,
                                    timeout=httpx.Timeout(timeout, connect=min(5.0, timeout)))
        self._json_mode = "json_schema"  # switched to "json_object" once if the server refuses it
        self._checked = False
        self._check_lock = threading.Lock()
        self._local = threading.local()

    # -- the LLM protocol -------------------------------------------------------------------------
    @property
    def last_usage(self) -> Usage:
        return getattr(self._local, "usage", Usage())

    def complete_json(self, system: str, user: str, schema: dict[str, Any], max_tokens: int
                      ) -> tuple[dict[str, Any], Usage]:
        self._check_model()
        start = time.perf_counter()
        payload = self._payload(system, user, max_tokens)
        modes = ["json_object"] if self._json_mode == "json_object" else ["json_schema", "json_object"]
        for mode in modes:
            try:
                body = self._post(payload | {"response_format": self._response_format(schema, mode)})
                break
            except _Refused as refused:
                if mode == "json_object":
                    raise LLMError(refused.message) from None
                self._json_mode = "json_object"  # llama-cpp-python's server: the schema rides on json_object
        usage = self._usage(body, start)
        self._local.usage = usage
        try:
            choice = body["choices"][0]
            text = choice["message"].get("content") or ""
        except (KeyError, IndexError, TypeError, AttributeError):
            raise LLMError(f"the LLM server at {self.base_url} sent an answer without a message: "
                           f"{_short(json.dumps(body))!r}", usage) from None
        data = parse_json_object(text)
        if data is None:
            cut = " (cut off at max_tokens)" if choice.get("finish_reason") == "length" else ""
            raise LLMError(f"model output was not a complete JSON object{cut}: {text[:80]!r}", usage)
        return data, usage

    def stream(self, system: str, user: str, max_tokens: int) -> Iterator[str]:
        import httpx

        self._check_model()
        start = time.perf_counter()
        payload = self._payload(system, user, max_tokens) | {"stream": True,
                                                             "stream_options": {"include_usage": True}}
        pieces, usage_body = 0, None
        self._local.usage = Usage(calls=1)
        try:
            with self._client.stream("POST", "/chat/completions", json=payload) as response:
                if response.status_code >= 400:
                    response.read()
                    raise LLMError(self._http_error(response))
                if "event-stream" not in response.headers.get("content-type", ""):
                    # a server that ignored stream=true: one whole completion, or garbage
                    response.read()
                    usage_body = self._whole_body(response)
                    text = ((usage_body.get("choices") or [{}])[0].get("message") or {}).get("content") or ""
                    if text:
                        pieces += 1
                        yield text
                    return
                for line in response.iter_lines():
                    if not line.startswith("data:"):
                        continue
                    data = line[5:].strip()
                    if data == "[DONE]":
                        break
                    try:
                        chunk = json.loads(data)
                    except json.JSONDecodeError:
                        raise LLMError(f"the LLM server at {self.base_url} sent a stream chunk that is not "
                                       f"JSON: {_short(data)!r}") from None
                    if chunk.get("usage"):
                        usage_body = chunk
                    for choice in chunk.get("choices") or []:
                        piece = (choice.get("delta") or {}).get("content")
                        if piece:
                            pieces += 1
                            yield piece
        except httpx.HTTPError as exc:
            raise LLMError(self._transport_error(exc)) from None
        finally:
            usage = self._usage(usage_body or {}, start)
            usage.completion_tokens = usage.completion_tokens or pieces
            self._local.usage = usage

    # -- HTTP -------------------------------------------------------------------------------------
    def _payload(self, system: str, user: str, max_tokens: int) -> dict[str, Any]:
        # Static instructions first (system, then the template's fixed head): prefix caches reuse them.
        return {"model": self.model, "temperature": 0.0, "seed": 0, "max_tokens": max_tokens,
                "messages": [{"role": "system", "content": system}, {"role": "user", "content": user}]}

    @staticmethod
    def _response_format(schema: dict[str, Any], mode: str) -> dict[str, Any]:
        if mode == "json_schema":
            return {"type": "json_schema", "json_schema": {"name": "zk_output", "schema": schema}}
        return {"type": "json_object", "schema": schema}

    def _post(self, payload: dict[str, Any]) -> dict[str, Any]:
        """POST with retries; returns the decoded body or raises LLMError (or _Refused for a 400/422)."""
        import httpx

        attempt = 0
        while True:
            try:
                response = self._client.post("/chat/completions", json=payload)
            except httpx.HTTPError as exc:  # refused connection, timeout, dropped connection
                if attempt < self.retries:
                    attempt += 1
                    time.sleep(self.backoff * 2 ** (attempt - 1))
                    continue
                raise LLMError(self._transport_error(exc)) from None
            # A refused response_format form (llama-cpp-python's server says so with a 500) is not retried.
            if response.status_code in (400, 422, 500) and "response_format" in payload and re.search(
                    r"response_format|json_schema", response.text, re.IGNORECASE):
                raise _Refused(self._http_error(response))
            if response.status_code in _RETRY_STATUS and attempt < self.retries:
                attempt += 1
                time.sleep(self.backoff * 2 ** (attempt - 1))
                continue
            if response.status_code >= 400:
                raise LLMError(self._http_error(response))
            return self._whole_body(response)

    def _whole_body(self, response) -> dict[str, Any]:
        try:
            body = response.json()
        except ValueError:
            raise LLMError(f"the LLM server at {self.base_url} returned a response that is not JSON: "
                           f"{_short(response.text)!r}") from None
        if not isinstance(body, dict):
            raise LLMError(f"the LLM server at {self.base_url} returned unexpected JSON: {_short(response.text)!r}")
        return body

    def _transport_error(self, exc: Exception) -> str:
        import httpx

        if isinstance(exc, httpx.TimeoutException):
            if isinstance(exc, httpx.ConnectTimeout):
                return f"cannot reach the LLM server at {self.base_url} (connection timed out); is it running?"
            return f"the LLM server at {self.base_url} did not answer within {self.timeout:g} s (timeout)"
        if isinstance(exc, httpx.ConnectError):
            return f"cannot reach the LLM server at {self.base_url} (connection refused); is it running?"
        return f"the LLM server at {self.base_url} failed: {type(exc).__name__}: {_short(str(exc))}"

    def _http_error(self, response) -> str:
        detail = response.text
        try:
            err = response.json()
            err = err.get("error", err) if isinstance(err, dict) else err
            detail = err.get("message", err.get("detail", detail)) if isinstance(err, dict) else detail
        except ValueError:
            pass
        code = response.status_code
        if code == 404 and "model" in str(detail).lower():
            return f"the LLM server at {self.base_url} has no model '{self.model}': {_short(str(detail))}"
        if code in (401, 403):
            return (f"the LLM server at {self.base_url} refused the request ({code}); set the API key "
                    "(config [llm] api_key_env, default ZK_LLM_API_KEY)")
        return f"the LLM server at {self.base_url} answered {code}: {_short(str(detail))}"

    def _check_model(self) -> None:
        """Once per process: is the model served? (A wrong name must not be silently replaced.)"""
        if self._checked:
            return
        with self._check_lock:
            if self._checked:
                return
            served = self.served_models()
            if served is not None and served and not _matches(self.model, served):
                raise LLMError(f"the LLM server at {self.base_url} has no model '{self.model}' "
                               f"(it serves: {', '.join(served[:8])})")
            self._checked = True

    def served_models(self) -> list[str] | None:
        """Model ids from `/models`; None when the server does not list them (then we trust the name)."""
        import httpx

        for attempt in range(self.retries + 1):
            try:
                response = self._client.get("/models")
                break
            except httpx.HTTPError as exc:
                if attempt == self.retries:
                    raise LLMError(self._transport_error(exc)) from None
                time.sleep(self.backoff * 2 ** attempt)
        if response.status_code >= 400:
            return None
        try:
            data = response.json().get("data")
            return [str(m["id"]) for m in data if isinstance(m, dict) and "id" in m]
        except (ValueError, AttributeError, TypeError):
            return None

    def _usage(self, body: dict[str, Any], start: float) -> Usage:
        """Counts from the server's `usage`; `evaluated` drops prompt tokens it reports as cached."""
        raw = body.get("usage") or {}
        prompt = int(raw.get("prompt_tokens") or 0)
        cached = int(((raw.get("prompt_tokens_details") or {}).get("cached_tokens")) or 0)
        timings = body.get("timings") or {}  # llama-server reports the tokens it actually evaluated
        evaluated = int(timings["prompt_n"]) if "prompt_n" in timings else prompt - cached
        return Usage(calls=1, prompt_tokens=prompt, evaluated_tokens=evaluated,
                     completion_tokens=int(raw.get("completion_tokens") or 0),
                     seconds=time.perf_counter() - start)

    def close(self) -> None:
        self._client.close()


class _Refused(Exception):
    """The server rejected the `response_format` form (400/422): try the other form once."""

    def __init__(self, message: str):
        super().__init__(message)
        self.message = message


def _matches(model: str, served: list[str]) -> bool:
    """Ollama lists `qwen2.5:latest` for `qwen2.5`; LM Studio and vLLM list the exact name."""
    names = {s.lower() for s in served}
    wanted = model.lower()
    return wanted in names or f"{wanted}:latest" in names or any(s.endswith("/" + wanted) for s in names)


def load_openai(spec: str, base_url: str | None = None, api_key_env: str = "ZK_LLM_API_KEY",
                timeout: float = 120.0, retries: int = 2) -> OpenAICompatLLM:
    model, url = parse_spec(spec, base_url)
    return OpenAICompatLLM(model, url, api_key=os.environ.get(api_key_env) or None, timeout=timeout,
                           retries=retries)
