"""The OpenAI-compatible backend without a model: spec and config parsing, and its error paths
through the real CLI against a tiny local HTTP server that misbehaves on purpose (server down,
a body that is not JSON, model output that is not JSON, too slow, a wrong model name, a server that
refuses the `json_schema` form). The main path runs against a real server in test_real_model.py.
"""

from __future__ import annotations

import json
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest

from tests.llm_server import free_port
from zettel_amem.backends.llm import LLMError
from zettel_amem.backends.llm.openai_compat import OpenAICompatLLM, parse_json_object, parse_spec
from zettel_amem.core.config import Settings, ZkError

ANNOTATION = {"keywords": ["knee"], "tags": ["health"], "context": "About a sore knee."}


class _QuietServer(ThreadingHTTPServer):
    daemon_threads = True

    def handle_error(self, request, client_address):  # a client that timed out and hung up: expected
        pass


class FakeServer:
    """An OpenAI-compatible endpoint whose behaviour a test sets: `mode` and `models`."""

    def __init__(self) -> None:
        self.mode = "ok"
        self.models: list[str] | None = ["m1"]
        self.requests: list[dict] = []
        self.failures_left = 0
        server = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args):  # quiet
                pass

            def _send(self, code: int, body: str, kind: str = "application/json") -> None:
                data = body.encode()
                self.send_response(code)
                self.send_header("Content-Type", kind)
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def do_GET(self):
                if server.models is None:
                    return self._send(404, '{"detail": "Not Found"}')
                self._send(200, json.dumps({"object": "list", "data": [{"id": m} for m in server.models]}))

            def do_POST(self):
                body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
                server.requests.append(body)
                server.answer(self, body)

        self.httpd = _QuietServer(("127.0.0.1", free_port()), Handler)
        self.url = f"http://127.0.0.1:{self.httpd.server_address[1]}/v1"
        threading.Thread(target=self.httpd.serve_forever, daemon=True).start()

    def answer(self, handler, body: dict) -> None:
        # By task (the schema's title), not by the prompt's wording; a bare schema gets the annotation.
        content = json.dumps(ANNOTATION if task_of(body) in ("annotate", None) else {"links": [], "replaces": [],
                                                                                     "updates": []})
        if self.mode == "slow":
            time.sleep(2.0)
        if self.mode == "not_json_body":
            return handler._send(200, "<html>502 Bad Gateway</html>", "text/html")
        if self.mode == "not_json_content":
            content = "Sure! Here are the keywords: knee, health"
        if self.mode == "model_404":
            return handler._send(404, json.dumps({"error": {"message": f"model '{body['model']}' not found"}}))
        if self.mode == "refuse_json_schema" and body.get("response_format", {}).get("type") == "json_schema":
            return handler._send(422, json.dumps({"detail": "response_format.type: Input should be 'json_object'"}))
        if self.mode == "fenced":
            content = "```json\n" + content + "\n```"
        if self.failures_left > 0:
            self.failures_left -= 1
            return handler._send(503, '{"error": {"message": "loading model"}}')
        if body.get("stream"):
            handler.send_response(200)
            handler.send_header("Content-Type", "text/event-stream")
            handler.end_headers()
            for word in ["Your ", "knee ", "hurts."]:
                chunk = {"choices": [{"index": 0, "delta": {"content": word}}]}
                handler.wfile.write(f"data: {json.dumps(chunk)}\n\n".encode())
            usage = {"choices": [], "usage": {"prompt_tokens": 50, "completion_tokens": 3}}
            handler.wfile.write(f"data: {json.dumps(usage)}\n\ndata: [DONE]\n\n".encode())
            return None
        usage = {"prompt_tokens": 100, "completion_tokens": 12, "prompt_tokens_details": {"cached_tokens": 60}}
        handler._send(200, json.dumps({"choices": [{"index": 0, "finish_reason": "stop",
                                                    "message": {"role": "assistant", "content": content}}],
                                       "usage": usage}))

    def close(self) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()


def task_of(body: dict) -> str | None:
    """The task a request is for: the title of the JSON schema it carries (either response_format form)."""
    form = body.get("response_format") or {}
    return (form.get("json_schema", {}).get("schema") or form.get("schema") or {}).get("title")


@pytest.fixture
def server():
    fake = FakeServer()
    yield fake
    fake.close()


@pytest.fixture
def zk(zk, zk_home):
    """The CLI with a short timeout and one retry, so the error paths answer fast."""
    zk_home.mkdir(parents=True, exist_ok=True)
    (zk_home / "config.toml").write_text("[llm]\nretries = 1\ntimeout = 1.0\n", encoding="utf-8")
    return zk


def test_spec_parsing():
    assert parse_spec("openai:qwen2.5:7b@http://127.0.0.1:11434/v1") == ("qwen2.5:7b", "http://127.0.0.1:11434/v1")
    assert parse_spec("openai:org/model@https://host/v1/") == ("org/model", "https://host/v1")
    assert parse_spec("openai:llama3", "http://box:8000/v1") == ("llama3", "http://box:8000/v1")
    assert parse_spec("openai:llama3") == ("llama3", "http://127.0.0.1:8080/v1")
    with pytest.raises(LLMError, match="no model name"):
        parse_spec("openai:@http://x/v1")


def test_llm_table_in_config(tmp_path, monkeypatch):
    monkeypatch.delenv("ZK_LLM_MODEL", raising=False)
    (tmp_path / "config.toml").write_text(
        '[llm]\nbase_url = "http://127.0.0.1:11434/v1"\nmodel = "qwen2.5:7b"\napi_key_env = "MY_KEY"\n'
        'timeout = 30\nretries = 4\njobs = 8\n', encoding="utf-8")
    settings = Settings.load(tmp_path)
    assert settings.llm_model == "openai:qwen2.5:7b" and settings.llm_base_url == "http://127.0.0.1:11434/v1"
    assert (settings.llm_api_key_env, settings.llm_timeout, settings.llm_retries, settings.llm_jobs) == (
        "MY_KEY", 30.0, 4, 8)
    monkeypatch.setenv("ZK_LLM_MODEL", "smollm2-135m")  # the command line / environment still wins
    assert Settings.load(tmp_path).llm_model == "smollm2-135m"
    (tmp_path / "config.toml").write_text('[llm]\nmodle = "x"\n', encoding="utf-8")
    with pytest.raises(ZkError, match="unknown key 'modle'"):
        Settings.load(tmp_path)


def test_parse_json_object_tolerates_fences_but_not_garbage():
    assert parse_json_object('```json\n{"a": 1}\n```') == {"a": 1}
    assert parse_json_object('Here: {"a": [1, 2]} done') == {"a": [1, 2]}
    assert parse_json_object('{"a": ') is None and parse_json_object("[1, 2]") is None


def test_usage_and_schema_go_through_the_server(server):
    llm = OpenAICompatLLM("m1", server.url, api_key="secret")
    data, usage = llm.complete_json("sys", "Task ANNOTATE\nNote: knee", {"type": "object"}, 120)
    assert data == ANNOTATION
    assert (usage.calls, usage.prompt_tokens, usage.evaluated_tokens, usage.completion_tokens) == (1, 100, 40, 12)
    sent = server.requests[-1]
    assert sent["response_format"] == {"type": "json_schema", "json_schema": {"name": "zk_output",
                                                                             "schema": {"type": "object"}}}
    assert sent["messages"][0] == {"role": "system", "content": "sys"} and sent["temperature"] == 0.0
    assert "".join(llm.stream("sys", "q", 20)) == "Your knee hurts."
    assert (llm.last_usage.prompt_tokens, llm.last_usage.completion_tokens) == (50, 3)


def test_a_server_that_refuses_json_schema_gets_json_object_with_the_schema(server):
    server.mode = "refuse_json_schema"
    llm = OpenAICompatLLM("m1", server.url)
    for _ in range(2):
        data, _ = llm.complete_json("sys", "Task ANNOTATE\nNote: knee", {"type": "object"}, 120)
        assert data == ANNOTATION
    kinds = [r["response_format"]["type"] for r in server.requests]
    assert kinds == ["json_schema", "json_object", "json_object"]  # asked once, remembered
    assert server.requests[-1]["response_format"]["schema"] == {"type": "object"}


def test_retries_with_backoff_then_succeeds(server):
    server.failures_left = 2
    llm = OpenAICompatLLM("m1", server.url, retries=2, backoff=0.01)
    data, _ = llm.complete_json("sys", "Task ANNOTATE\nNote: knee", {"type": "object"}, 120)
    assert data == ANNOTATION and len(server.requests) == 3
    server.failures_left = 5
    with pytest.raises(LLMError, match="answered 503: loading model"):
        llm.complete_json("sys", "Task ANNOTATE\nNote: knee", {"type": "object"}, 120)


def test_fenced_json_from_a_server_that_ignores_the_schema_is_accepted(server):
    server.mode = "fenced"
    data, _ = OpenAICompatLLM("m1", server.url).complete_json("s", "Task ANNOTATE\nNote: x", {}, 120)
    assert data == ANNOTATION


def _added(zk, *extra):
    code, out, err = zk("add", "My knee hurts after the run.", "--wait", "--json", *extra)
    assert code == 0 and "Traceback" not in err, err
    return json.loads(out)


def _stays_pending(zk, note_id, reason):
    _, out, _ = zk("show", note_id[:8], "--json")
    shown = json.loads(out)
    assert shown["status"] == "pending" and reason in shown["error"]
    assert shown["content"] == "My knee hurts after the run."
    return shown


@pytest.mark.parametrize("mode, models, reason", [
    ("down", ["m1"], "cannot reach the LLM server at"),
    ("not_json_body", ["m1"], "returned a response that is not JSON"),
    ("not_json_content", ["m1"], "model output was not a complete JSON object"),
    ("slow", ["m1"], "did not answer within 1 s (timeout)"),
    ("ok", ["other-model", "second"], "has no model 'm1' (it serves: other-model, second)"),
    ("model_404", None, "has no model 'm1': model 'm1' not found"),
])
def test_error_paths_give_one_line_and_keep_the_note(server, zk, monkeypatch, mode, models, reason):
    server.mode, server.models = mode, models
    url = server.url
    if mode == "down":
        server.close()
    monkeypatch.setenv("ZK_LLM_MODEL", f"openai:m1@{url}")
    added = _added(zk)
    assert added["status"] == "pending" and reason in added["error"]
    assert len(added["error"].splitlines()) == 1
    _stays_pending(zk, added["id"], reason)
    code, out, err = zk("process", "--quiet")  # a later run tries again and says why it failed
    assert code == 1 and "Traceback" not in err
    _stays_pending(zk, added["id"], reason)
    if mode in ("down", "not_json_body", "slow", "model_404"):  # `zk ask` answers from the note, marked extractive
        code, out, err = zk("ask", "what about my knee?", "--json")
        assert code == 0 and "Traceback" not in err, err
        answer = json.loads(out)
        assert answer["mode"] == "extractive" and reason in answer["reason"] and answer["cited"] == [added["id"]]
    if mode == "ok":  # then the server gets the model: the same note is finished
        server.models = ["m1"]
        code, _, err = zk("process", "--quiet")
        assert code == 0, err
        _, out, _ = zk("show", added["id"][:8], "--json")
        assert json.loads(out)["status"] == "ready" and json.loads(out)["keywords"] == ["knee"]


def test_jobs_with_the_in_process_model_says_it_runs_one_at_a_time(zk, monkeypatch):
    monkeypatch.setenv("ZK_LLM_MODEL", "/nonexistent/model.gguf")
    code, _, err = zk("process", "--jobs", "4")
    assert code == 0 and err.strip() == ("zk: --jobs 4: the in-process llama.cpp model enriches one note at a "
                                         "time; using 1 (point zk at a server with --model openai:MODEL@URL "
                                         "for parallel work)")


def test_parallel_processing_against_a_server(server, zk, zk_home, monkeypatch):
    """`--jobs 4`: several requests in flight at once, every note finished once."""
    monkeypatch.setenv("ZK_LLM_MODEL", f"openai:m1@{server.url}")
    server.mode = "slow"  # 2 s per request: overlapping requests are visible in the wall time
    for i in range(4):
        assert zk("add", f"Ran {i + 3} km with a sore knee.", "--at", f"2026-03-0{i + 1}")[0] == 0
    (zk_home / "config.toml").write_text("[llm]\ntimeout = 10\n[memory]\nlink = false\nepisodes = false\n",
                                         encoding="utf-8")
    start = time.perf_counter()
    code, out, err = zk("process", "--jobs", "4", "--json")
    elapsed = time.perf_counter() - start
    assert code == 0, err
    results = [r for r in json.loads(out) if "kind" not in r]
    assert sorted(r["status"] for r in results) == ["ready"] * 4
    annotate = [r for r in server.requests if task_of(r) == "annotate"]
    assert len(annotate) == len(server.requests) == 4 and elapsed < 6.5  # one at a time would take >= 8 s
