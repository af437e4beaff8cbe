"""OpenAI-compatible HTTP backend: Ollama, llama.cpp `llama-server`, vLLM, LM Studio,
`python -m llama_cpp.server`, or any server that speaks `/v1/chat/completions`.

Spec: `openai:MODEL@BASE_URL` (split at the first `@` followed by `http://` or `https://`, so `qwen2.5:7b`
works as a model name and `http://user:password@host/v1` as a URL), or `openai:MODEL` with the base URL
from config (`[llm] base_url`). A URL without its scheme, or that does not parse, is refused in one line;
a user and password in it are sent as HTTP basic auth and never shown. Why these choices:

- JSON is constrained by the server (`response_format` with the JSON schema). OpenAI, vLLM, Ollama,
  LM Studio and llama-server take `{"type": "json_schema"}`; llama-cpp-python's server only takes
  `{"type": "json_object", "schema": ...}`. A server that refuses the first form gets the second, once
  per process. A server that ignores the schema still has its output parsed and checked here; the
  callers enforce every cap in code, as for the local model.
- The model name is checked against `/models` on first use: llama-cpp-python's server answers any name
  with its one model, which would hide a typo; a server without `/models` is trusted.
- One deadline per call (`[llm] timeout`, default 120 s): the model check, every retry with its backoff
  and the whole body must fit in it. httpx's own timeout is per read, so a server that trickles a byte
  every few seconds or never ends its stream would hold the call for ever; at the deadline the
  connection is shut down (every request opens its own connection, captured when it connects).
- Retries with backoff (connection errors, 429, 5xx, timeouts) while time is left, and every failure is an
  `LLMError` with one line a user can act on, so the note stays pending with that reason.
- A reply is checked against the JSON schema the caller sent (types and required keys): a server that
  ignores the schema fails the call (the note stays pending with the reason) instead of passing on
  wrong types; a `usage` that is not a number or a message that is not text is an `LLMError` too.
- Known secrets (the API key, a URL password) are masked in every error (`llm.mask_secrets`).
- Thread-safe: `zk process --jobs N` keeps N requests in flight through one client; `last_usage` is
  per thread.
"""

from __future__ import annotations

import base64
import json
import os
import re
import socket
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from ...core.models import ServerReach, Usage
from . import LLMError, register_secret

DEFAULT_BASE_URL = "http://127.0.0.1:8080/v1"
REACH_TIMEOUT_S = 1.0  # `reach`: a server on the LAN or this machine connects in milliseconds
_RETRY_STATUS = {408, 429, 500, 502, 503, 504}


def parse_spec(spec: str, default_base_url: str | None = None) -> tuple[str, str]:
    """`openai:MODEL@URL` -> (model, base_url). The URL may be given in config instead. LLMError (one line,
    no password) for a URL without http(s):// or one that does not parse."""
    body = spec.removeprefix("openai:")
    split = re.search(r"@(?=https?://)", body, re.IGNORECASE)
    if split:
        model, url = body[:split.start()], body[split.end():]
    elif "@" in body:
        raise LLMError(f"cannot read the model server in '{spec}': the URL after '@' must start with http:// or "
                       "https:// (openai:MODEL@http://HOST:PORT/v1)")
    else:
        model, url = body, default_base_url or DEFAULT_BASE_URL
    model = model.strip()
    if not model:
        raise LLMError(f"no model name in '{spec}' (use openai:MODEL@http://HOST:PORT/v1)")
    check_url(url)
    return model, url.rstrip("/")


def check_url(url: str) -> None:
    """LLMError unless `url` is an http(s) URL with a host and a valid port."""
    from urllib.parse import urlsplit

    try:
        parts = urlsplit(url)
        port_ok = parts.port is None or 0 < parts.port  # .port raises ValueError for a bad one
    except ValueError:
        port_ok, parts = False, None
    if parts is None or parts.scheme.lower() not in ("http", "https") or not parts.hostname or not port_ok \
            or any(ch.isspace() for ch in url):
        raise LLMError(f"cannot read the model server URL '{url}' (use http://HOST:PORT/v1)")


def split_credentials(url: str) -> tuple[str, tuple[str, str] | None]:
    """(the URL without `user:password@`, (user, password) or None)."""
    from urllib.parse import unquote, urlsplit, urlunsplit

    parts = urlsplit(url)
    if parts.username is None and parts.password is None:
        return url, None
    host = parts.netloc.rpartition("@")[2]
    return (urlunsplit((parts.scheme, host, parts.path, parts.query, parts.fragment)),
            (unquote(parts.username or ""), unquote(parts.password or "")))


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


class _Deadline:
    """The wall-clock limit of one model call (all its requests, retries and backoff included)."""

    def __init__(self, seconds: float):
        self.seconds = seconds
        self.end = time.monotonic() + seconds

    def left(self) -> float:
        return self.end - time.monotonic()


class OpenAICompatLLM:
    concurrent = True  # safe to call from several threads (`zk process --jobs N`)

    def __init__(self, model: str, base_url: str = DEFAULT_BASE_URL, *, api_key: str | None = None,
                 timeout: float = 120.0, retries: int = 2, backoff: float = 0.5):
        import httpx

        url, credentials = split_credentials(base_url.rstrip("/"))
        register_secret(api_key)
        if credentials:  # the password, and the basic-auth token a server might echo from its header
            register_secret(credentials[1])
            register_secret(base64.b64encode(f"{credentials[0]}:{credentials[1]}".encode()).decode())
        self.model = model
        self.base_url = url  # never holds the password: it is in every message
        self.name = f"openai:{model}@{url}"
        self.retries = max(0, retries)
        self.backoff = backoff
        self.timeout = timeout
        headers = {"Authorization": f"Bearer {api_key}"} if api_key else {}
        # No keep-alive: each request connects anew, so `_guard` knows its socket and can cut it.
        self._client = httpx.Client(base_url=url, headers=headers, auth=credentials,
                                    limits=httpx.Limits(max_keepalive_connections=0))
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
        deadline = _Deadline(self.timeout)
        self._check_model(deadline)
        start = time.perf_counter()
        payload = self._payload(system, user, max_tokens)
        modes = ["json_object"] if self._json_mode == "json_object" else ["json_schema", "json_object"]
        for mode in modes:
            try:
                body = self._post(payload | {"response_format": self._response_format(schema, mode)}, deadline)
                break
            except _Refused as refused:
                if mode == "json_object":
                    raise LLMError(refused.message) from None
                self._json_mode = "json_object"  # llama-cpp-python's server: the schema rides on json_object
        usage = _usage(body, start, self.base_url)
        self._local.usage = usage
        text, finish = _message(body, usage, self.base_url)
        data = parse_json_object(text)
        if data is None:
            cut = " (cut off at max_tokens)" if finish == "length" else ""
            raise LLMError(f"model output was not a complete JSON object{cut}: {text[:80]!r}", usage)
        problem = schema_problem(data, schema)
        if problem:  # a server that ignored the schema: never pass wrong types on as an answer
            raise LLMError(f"the model's answer did not match the schema: {problem}", usage)
        return data, usage

    def stream(self, system: str, user: str, max_tokens: int) -> Iterator[str]:
        import httpx

        deadline = _Deadline(self.timeout)
        self._check_model(deadline)
        start = time.perf_counter()
        payload = self._payload(system, user, max_tokens) | {"stream": True,
                                                             "stream_options": {"include_usage": True}}
        counts: dict[str, Any] = {"pieces": 0, "body": None}
        self._local.usage = Usage(calls=1)
        try:
            with self._guard(deadline) as extensions, self._client.stream(
                    "POST", "/chat/completions", json=payload, timeout=self._timeouts(deadline),
                    extensions=extensions) as response:
                if response.status_code >= 400:
                    response.read()
                    raise LLMError(_http_error(response, self.base_url, self.model))
                for piece in self._pieces(response, counts):
                    counts["pieces"] += 1
                    yield piece
        except httpx.HTTPError as exc:
            raise LLMError(_transport_error(exc, deadline, self.base_url)) from None
        finally:
            try:
                usage = _usage(counts["body"] or {}, start, self.base_url)
            except LLMError:
                usage = Usage(calls=1, seconds=time.perf_counter() - start)
            usage.completion_tokens = usage.completion_tokens or counts["pieces"]
            self._local.usage = usage

    def _pieces(self, response, counts: dict[str, Any]) -> Iterator[str]:
        """The text pieces of a streamed answer (or the whole text of a server that ignored stream=true)."""
        if "event-stream" not in response.headers.get("content-type", ""):
            response.read()
            counts["body"] = _whole_body(response, self.base_url)
            text, _ = _message(counts["body"], None, self.base_url)
            if text:
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
            if not isinstance(chunk, dict):
                raise LLMError(f"the LLM server at {self.base_url} sent an unexpected stream chunk: {_short(data)!r}")
            if chunk.get("usage"):
                counts["body"] = chunk
            for choice in chunk.get("choices") or []:
                piece = (choice.get("delta") or {}).get("content") if isinstance(choice, dict) else None
                if piece and isinstance(piece, str):
                    yield piece

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

    def _guard(self, deadline: _Deadline):
        """`_cut_at(deadline)`, or the timeout error at once when no time is left."""
        if deadline.left() <= 0:
            raise LLMError(_late(deadline, self.base_url))
        return _cut_at(deadline)

    @staticmethod
    def _timeouts(deadline: _Deadline):
        import httpx

        left = max(deadline.left(), 0.001)
        return httpx.Timeout(left, connect=min(5.0, left))

    def _retry(self, attempt: int, deadline: _Deadline) -> bool:
        """Whether to try again (sleeping the backoff first): retries left, and time left after the pause."""
        pause = self.backoff * 2 ** attempt
        if attempt >= self.retries or deadline.left() <= pause:
            return False
        time.sleep(pause)
        return True

    def _post(self, payload: dict[str, Any], deadline: _Deadline) -> dict[str, Any]:
        """POST with retries; returns the decoded body or raises LLMError (or _Refused for a 400/422)."""
        import httpx

        attempt = 0
        while True:
            try:
                with self._guard(deadline) as extensions:
                    response = self._client.post("/chat/completions", json=payload, timeout=self._timeouts(deadline),
                                                 extensions=extensions)
            except httpx.HTTPError as exc:  # refused connection, timeout, dropped or cut connection
                if self._retry(attempt, deadline):
                    attempt += 1
                    continue
                raise LLMError(_transport_error(exc, deadline, self.base_url)) from None
            # A refused response_format form (llama-cpp-python's server says so with a 500) is not retried.
            if response.status_code in (400, 422, 500) and "response_format" in payload and re.search(
                    r"response_format|json_schema", response.text, re.IGNORECASE):
                raise _Refused(_http_error(response, self.base_url, self.model))
            if response.status_code in _RETRY_STATUS and self._retry(attempt, deadline):
                attempt += 1
                continue
            if response.status_code >= 400:
                raise LLMError(_http_error(response, self.base_url, self.model))
            return _whole_body(response, self.base_url)

    def _check_model(self, deadline: _Deadline) -> None:
        """Once per process: is the model served? (A wrong name must not be silently replaced.)"""
        if self._checked:
            return
        with self._check_lock:
            if self._checked:
                return
            served = self.served_models(deadline)
            if served is not None and served and not _matches(self.model, served):
                raise LLMError(f"the LLM server at {self.base_url} has no model '{self.model}' "
                               f"(it serves: {', '.join(served[:8])})")
            self._checked = True

    def served_models(self, deadline: _Deadline | None = None) -> list[str] | None:
        """Model ids from `/models`; None when the server does not list them (then we trust the name)."""
        import httpx

        deadline = deadline or _Deadline(self.timeout)
        attempt = 0
        while True:
            try:
                with self._guard(deadline) as extensions:
                    response = self._client.get("/models", timeout=self._timeouts(deadline), extensions=extensions)
                break
            except httpx.HTTPError as exc:
                if self._retry(attempt, deadline):
                    attempt += 1
                    continue
                raise LLMError(_transport_error(exc, deadline, self.base_url)) from None
        if response.status_code >= 400:
            return None
        try:
            data = response.json().get("data")
            return [str(m["id"]) for m in data if isinstance(m, dict) and "id" in m]
        except (ValueError, AttributeError, TypeError):
            return None

    def close(self) -> None:
        self._client.close()


# -- what a failed request says: one line a user can act on, naming the server (`where`) ---------------
def _whole_body(response, where: str) -> dict[str, Any]:
    """The response's JSON object; LLMError when it is not JSON or not an object."""
    try:
        body = response.json()
    except ValueError:
        raise LLMError(f"the LLM server at {where} returned a response that is not JSON: "
                       f"{_short(response.text)!r}") from None
    if not isinstance(body, dict):
        raise LLMError(f"the LLM server at {where} returned unexpected JSON: {_short(response.text)!r}")
    return body


def _late(deadline: _Deadline, where: str) -> str:
    return f"the LLM server at {where} did not answer within {deadline.seconds:g} s (timeout)"


def _transport_error(exc: Exception, deadline: _Deadline, where: str) -> str:
    """A request that got no response (refused, timed out, cut at the deadline), as one line."""
    import httpx

    if isinstance(exc, httpx.ConnectTimeout) and deadline.left() > 0:
        return f"cannot reach the LLM server at {where} (connection timed out); is it running?"
    if isinstance(exc, httpx.TimeoutException) or deadline.left() <= 0:
        return _late(deadline, where)
    if isinstance(exc, httpx.ConnectError):
        return f"cannot reach the LLM server at {where} (connection refused); is it running?"
    return f"the LLM server at {where} failed: {type(exc).__name__}: {_short(str(exc))}"


def _http_error(response, where: str, model: str) -> str:
    """An error status as one line: the server's own message, or what to do (a missing model, the API key)."""
    detail = response.text
    try:
        err = response.json()
        err = err.get("error", err) if isinstance(err, dict) else err
        detail = err.get("message", err.get("detail", detail)) if isinstance(err, dict) else detail
    except ValueError:
        pass
    code = response.status_code
    if code == 404 and "model" in str(detail).lower():
        return f"the LLM server at {where} has no model '{model}': {_short(str(detail))}"
    if code in (401, 403):
        return (f"the LLM server at {where} refused the request ({code}); set the API key "
                "(config [llm] api_key_env, default ZK_LLM_API_KEY)")
    return f"the LLM server at {where} answered {code}: {_short(str(detail))}"


def _message(body: dict[str, Any], usage: Usage | None, where: str) -> tuple[str, str | None]:
    """(the first choice's text, its finish_reason); LLMError when there is none or it is not text."""
    try:
        choice = body["choices"][0]
        content = choice["message"].get("content")
    except (KeyError, IndexError, TypeError, AttributeError):
        raise LLMError(f"the LLM server at {where} sent an answer without a message: "
                       f"{_short(json.dumps(body))!r}", usage) from None
    if content is not None and not isinstance(content, str):
        raise LLMError(f"the LLM server at {where} sent a message that is not text: "
                       f"{_short(json.dumps(content))!r}", usage)
    return content or "", choice.get("finish_reason")


def _usage(body: dict[str, Any], start: float, where: str) -> Usage:
    """Counts from the server's `usage`; `evaluated` drops prompt tokens it reports as cached."""
    raw, timings = body.get("usage") or {}, body.get("timings") or {}
    details = raw.get("prompt_tokens_details") or {} if isinstance(raw, dict) else None
    if not isinstance(raw, dict) or not isinstance(details, dict) or not isinstance(timings, dict):
        raise LLMError(f"the LLM server at {where} sent usage that is not an object: "
                       f"{_short(json.dumps(body.get('usage')))!r}")
    prompt = _count(raw.get("prompt_tokens"), where)
    cached = _count(details.get("cached_tokens"), where)
    # llama-server reports the tokens it actually evaluated
    evaluated = _count(timings["prompt_n"], where) if "prompt_n" in timings else prompt - cached
    return Usage(calls=1, prompt_tokens=prompt, evaluated_tokens=evaluated,
                 completion_tokens=_count(raw.get("completion_tokens"), where), seconds=time.perf_counter() - start)


def _count(value: Any, where: str) -> int:
    if value is None:
        return 0
    if isinstance(value, bool) or not isinstance(value, (int, float)) or value != value or value < 0 \
            or value == float("inf"):
        raise LLMError(f"the LLM server at {where} sent usage that is not a number: {_short(json.dumps(value))!r}")
    return int(value)


@contextmanager
def _cut_at(deadline: _Deadline) -> Iterator[dict[str, Any]]:
    """Request extensions that note the request's TCP stream when it connects; when the deadline passes,
    that socket is shut down, which ends a read in progress (a trickling or endless body)."""
    streams: list[Any] = []

    def trace(event: str, info: dict[str, Any]) -> None:
        if event == "connection.connect_tcp.complete" and info.get("return_value") is not None:
            streams.append(info["return_value"])

    def cut() -> None:
        for stream in streams:
            try:
                stream.get_extra_info("socket").shutdown(socket.SHUT_RDWR)
            except (OSError, AttributeError):
                pass

    timer = threading.Timer(max(deadline.left(), 0.0), cut)
    timer.daemon = True
    timer.start()
    try:
        yield {"trace": trace}
    finally:
        timer.cancel()


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


_JSON_TYPES: dict[str, type | tuple[type, ...]] = {"object": dict, "array": list, "string": str, "boolean": bool,
                                                   "number": (int, float), "integer": int}


def _kind(value: Any) -> str:
    for name, kind in (("null", type(None)), ("a boolean", bool), ("a number", (int, float)), ("text", str),
                       ("a list", list), ("an object", dict)):
        if isinstance(value, kind):
            return name
    return type(value).__name__


def schema_problem(value: Any, schema: dict[str, Any], where: str = "the answer") -> str | None:
    """What in `value` does not fit `schema` (JSON types, required keys, list items), or None. Caps,
    patterns and enums are the callers' (they clip and filter in code, as for the local model)."""
    kind = schema.get("type")
    expected = _JSON_TYPES.get(kind) if isinstance(kind, str) else None
    if expected is not None and (not isinstance(value, expected) or (
            kind in ("number", "integer") and isinstance(value, bool))):
        return f"{where} is {_kind(value)}, not {'an' if kind[0] in 'aeiou' else 'a'} {kind}"
    if isinstance(value, dict):
        missing = [key for key in schema.get("required", []) if key not in value]
        if missing:
            return f"{where} has no '{missing[0]}'"
        for key, sub in (schema.get("properties") or {}).items():
            if key in value and isinstance(sub, dict):
                problem = schema_problem(value[key], sub, key if where == "the answer" else f"{where}.{key}")
                if problem:
                    return problem
    if isinstance(value, list) and isinstance(schema.get("items"), dict):
        for index, item in enumerate(value):
            problem = schema_problem(item, schema["items"], f"{where}[{index}]")
            if problem:
                return problem
    return None


def check_server(spec: str, base_url: str | None, api_key_env: str, timeout: float) -> tuple[bool, str]:
    """For `zk doctor`: (ok, one line) about a model server: it answers, lists the model (when it lists
    any), and completes one tiny JSON request within `timeout` seconds."""
    try:
        llm = load_openai(spec, base_url, api_key_env, timeout=timeout, retries=0)
    except LLMError as exc:
        return False, str(exc)
    try:
        start = time.perf_counter()
        served = llm.served_models()
        if served and not _matches(llm.model, served):
            return False, f"{llm.name}: the server does not serve '{llm.model}' (it serves: {', '.join(served[:8])})"
        schema = {"type": "object", "properties": {"ok": {"type": "boolean"}}, "required": ["ok"]}
        llm.complete_json("Reply with JSON only.", 'Reply {"ok": true}', schema, 16)
        listed = "model listed" if served else "the server lists no models"
        return True, f"{llm.name}: reachable, {listed}, a test completion in {time.perf_counter() - start:.1f} s"
    except LLMError as exc:
        return False, str(exc)
    finally:
        llm.close()


def reach(spec: str, base_url: str | None = None, timeout: float = REACH_TIMEOUT_S) -> ServerReach | None:
    """Whether the server of an `openai:` spec accepts a TCP connection within `timeout` seconds; no request
    is sent (cheap enough for every `zk ask`). None for a spec that does not parse (its use says why)."""
    from urllib.parse import urlsplit

    try:
        _, url = parse_spec(spec, base_url)
    except LLMError:
        return None
    parts = urlsplit(split_credentials(url)[0])
    host = parts.hostname or ""
    port = parts.port or (443 if parts.scheme.lower() == "https" else 80)
    address = f"[{host}]:{port}" if ":" in host else f"{host}:{port}"
    try:
        socket.create_connection((host, port), timeout=timeout).close()
    except TimeoutError:
        return ServerReach(address, f"no answer to a connection within {timeout:g} s")
    except ConnectionRefusedError:
        return ServerReach(address, "connection refused")
    except socket.gaierror:
        return ServerReach(address, f"unknown host '{host}'")
    except OSError as exc:
        return ServerReach(address, _short(exc.strerror or type(exc).__name__))
    return ServerReach(address)
