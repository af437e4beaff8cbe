"""Hostile and broken model servers (`--model openai:…`), issue #28 items 11-15: a total deadline per model
call (a server that trickles bytes or never ends its body is cut at it), writes that never wait on a model
call, replies checked against the schema, model URLs parsed or refused in one line, secrets masked
everywhere, and `zk doctor` checking the server. Fake servers on 127.0.0.1 (stdlib http.server), the CLI as
real subprocesses where the report saw the finding through it."""

from __future__ import annotations

import base64
import json
import stat
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest

from tests import harness
from tests.llm_server import free_port
from zettel_amem.backends.llm import LLMError
from zettel_amem.backends.llm.openai_compat import OpenAICompatLLM, parse_spec

ANNOTATION = {"keywords": ["knee"], "tags": ["health"], "context": "About a sore knee."}
IGNORED_SCHEMA = {"keywords": 5, "tags": {"a": 1}, "context": ["x"], "links": ["../etc"], "answer": {"nested": True},
                  "ids": "all", "updates": [{"id": "zz"}]}
SECRET = "sk-SECRET-28b-4711"


class _Quiet(ThreadingHTTPServer):
    daemon_threads = True

    def handle_error(self, request, client_address):  # a client cut at its deadline: expected
        pass


class Hostile:
    """An OpenAI-compatible server that misbehaves as `mode` says: ok, hang, drip (a byte every 0.3 s
    of a body it says is 100 MB), forever (a chunked body that never ends, also for stream=true),
    schema (valid JSON that ignores the schema), bad_usage, int_content, echo (a 500 echoing the
    Authorization header)."""

    def __init__(self, mode: str = "ok", models: list[str] | None = None):
        self.mode, self.models = mode, models or ["fake"]
        self.seen: list[dict] = []
        server = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *args):
                pass

            def send(self, code: int, body: object) -> None:
                data = json.dumps(body).encode()
                self.send_response(code)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def do_GET(self):
                server.seen.append({"path": self.path, "auth": self.headers.get("Authorization")})
                if server.mode == "hang":
                    time.sleep(60)
                self.send(200, {"object": "list", "data": [{"id": m} for m in server.models]})

            def do_POST(self):
                body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
                server.seen.append({"path": self.path, "auth": self.headers.get("Authorization"), "body": body})
                try:
                    server.answer(self, body)
                except (BrokenPipeError, ConnectionResetError):
                    pass

        self.httpd = _Quiet(("127.0.0.1", free_port()), Handler)
        self.url = f"http://127.0.0.1:{self.httpd.server_address[1]}/v1"
        threading.Thread(target=self.httpd.serve_forever, daemon=True).start()

    def answer(self, handler, body: dict) -> None:
        mode = self.mode
        if mode == "hang":
            time.sleep(60)
            return
        if mode in ("drip", "forever"):
            handler.send_response(200)
            handler.send_header("Content-Type", "text/event-stream" if body.get("stream") else "application/json")
            handler.send_header(*(("Content-Length", "100000000") if mode == "drip" else ("Transfer-Encoding",
                                                                                          "chunked")))
            handler.end_headers()
            for _ in range(400):  # at most 2 minutes: the client must have given up long before
                piece = b" " if mode == "drip" else b'data: {"choices": [{"delta": {"content": "w "}}]}\n\n'
                handler.wfile.write(piece if mode == "drip" else b"%x\r\n%s\r\n" % (len(piece), piece))
                handler.wfile.flush()
                time.sleep(0.3)
            return
        if mode == "echo":
            return handler.send(500, {"error": {"message": f"bad auth {handler.headers.get('Authorization')}"}})
        form = body.get("response_format") or {}
        wanted = (form.get("json_schema", {}).get("schema") or form.get("schema") or {}).get("properties", {})
        reply = {"ok": True} if "ok" in wanted else {"links": [], "replaces": [], "updates": []} if "links" in wanted \
            else ANNOTATION
        content: object = json.dumps(IGNORED_SCHEMA if mode == "schema" else reply)
        usage: object = {"prompt_tokens": 10, "completion_tokens": 5}
        if mode == "bad_usage":
            usage = {"prompt_tokens": "abc"}
        if mode == "int_content":
            content = 12345
        handler.send(200, {"choices": [{"index": 0, "finish_reason": "stop",
                                        "message": {"role": "assistant", "content": content}}], "usage": usage})

    def close(self) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()


@pytest.fixture
def hostile():
    servers: list[Hostile] = []

    def make(mode: str = "ok", models: list[str] | None = None) -> Hostile:
        servers.append(Hostile(mode, models))
        return servers[-1]

    yield make
    for server in servers:
        server.close()


def home_with(tmp_path: Path, config: str = "[llm]\ntimeout = 3\nretries = 2\n") -> Path:
    home = tmp_path / "home"
    home.mkdir(exist_ok=True)
    (home / "config.toml").write_text(config + "[memory]\nepisodes = false\n", encoding="utf-8")
    return home


# -- item 11: one deadline per call ------------------------------------------------------------------------
@pytest.mark.parametrize("mode", ["hang", "drip", "forever"])
def test_11_a_call_ends_at_its_deadline_whatever_the_server_does(hostile, mode):
    server = hostile(mode)
    if mode != "hang":
        OpenAICompatLLM("fake", server.url).served_models()  # /models answers; the completion misbehaves
    llm = OpenAICompatLLM("fake", server.url, timeout=2.0, retries=2, backoff=0.1)
    for call in (lambda: llm.complete_json("s", "u", {"type": "object"}, 20),
                 lambda: "".join(llm.stream("s", "u", 20))):
        start = time.monotonic()
        with pytest.raises(LLMError, match=r"did not answer within 2 s \(timeout\)"):
            call()
        assert time.monotonic() - start < 3.0  # the whole call, retries included, not (retries + 1) x 2 s


def test_11_ask_with_a_trickling_server_answers_from_the_notes_at_the_deadline(hostile, tmp_path):
    server = hostile("drip")
    home = home_with(tmp_path)
    env = harness.zk_env(home, ZK_LLM_MODEL=f"openai:fake@{server.url}")
    harness.run("add", "I run 10 km every Saturday at the Han river #running", env=env, check=True)
    start = time.monotonic()
    done = harness.run("ask", "where do I run?", "--json", env=env, timeout=60)
    assert done.returncode == 0, done.stderr
    answer = json.loads(done.stdout)
    assert answer["mode"] == "extractive" and "did not answer within 3 s (timeout)" in answer["reason"]
    assert time.monotonic() - start < 30


def test_11_rm_and_edit_never_wait_for_a_hung_model_call(hostile, tmp_path):
    """The worker is inside a model call that hangs for 40 s; `zk rm` and `zk edit` of notes finish at once,
    and the worker, when its call fails, neither brings the deleted note back nor overwrites the edit."""
    server = hostile("ok")
    home = home_with(tmp_path, "[llm]\ntimeout = 40\nretries = 0\n")
    env = harness.zk_env(home, ZK_LLM_MODEL=f"openai:fake@{server.url}")
    ids = [json.loads(harness.run("add", text, "--json", env=env, check=True).stdout)["id"]
           for text in ("first note about the knee", "second note to delete", "third note to edit")]
    harness.run("process", "--limit", "1", env=env, check=True)  # the model check is done; the rest waits
    server.mode = "hang"
    before = len(server.seen)
    worker = harness.start("process", env=env)
    try:
        # Wait until the worker is inside its first (hanging) request, whichever it is (the model check
        # or the completion): on a slow machine rm could otherwise run before the worker listed its queue.
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline and len(server.seen) == before:
            time.sleep(0.1)
        assert len(server.seen) > before, "the worker never called the model"
        time.sleep(0.5)
        start = time.monotonic()
        harness.run("rm", ids[1][:8], "--yes", env=env, check=True, timeout=60)
        editor = tmp_path / "editor.sh"
        editor.write_text("#!/bin/sh\nprintf 'third note, edited' > \"$1\"\n", encoding="utf-8")
        editor.chmod(editor.stat().st_mode | stat.S_IEXEC)
        harness.run("edit", ids[2][:8], env=env | {"EDITOR": str(editor), "VISUAL": str(editor)}, check=True,
                    timeout=60)
        assert time.monotonic() - start < 15  # on main both waited for the 40 s call
        assert worker.poll() is None  # the model call is still hanging
        server.mode = "ok"  # the next call (the edited note) is answered
    finally:
        worker.wait(120)
    notes = {n["id"]: n for n in json.loads(harness.run("list", "--json", env=env, check=True).stdout)}
    assert ids[1] not in notes  # the hung call's failure did not bring the deleted note back
    edited = json.loads(harness.run("show", ids[2][:8], "--json", env=env, check=True).stdout)
    assert edited["content"] == "third note, edited" and edited["status"] == "ready"
    annotated = [s["body"]["messages"][1]["content"] for s in server.seen if "body" in s]
    assert "third note, edited" in annotated[-1]  # annotated from the edited text, not the old one


# -- item 12: replies checked ------------------------------------------------------------------------------
def test_12_schema_problems_are_named():
    from zettel_amem.backends.llm.openai_compat import schema_problem

    schema = {"type": "object", "properties": {"keywords": {"type": "array", "items": {"type": "string"}},
                                               "context": {"type": "string"}}, "required": ["keywords", "context"]}
    assert schema_problem({"keywords": ["a"], "context": "c"}, schema) is None
    assert schema_problem({"keywords": 5, "context": "c"}, schema) == "keywords is a number, not an array"
    assert schema_problem({"keywords": ["a", 3], "context": "c"}, schema) == "keywords[1] is a number, not a string"
    assert schema_problem({"keywords": []}, schema) == "the answer has no 'context'"


@pytest.mark.parametrize("mode, reason", [
    ("schema", "the model's answer did not match the schema: keywords is a number, not an array"),
    ("bad_usage", "sent usage that is not a number: '\"abc\"'"),
    ("int_content", "sent a message that is not text: '12345'"),
])
def test_12_a_bad_reply_keeps_the_note_pending_and_ask_answers_from_the_notes(hostile, tmp_path, mode, reason):
    server = hostile(mode)
    env = harness.zk_env(home_with(tmp_path), ZK_LLM_MODEL=f"openai:fake@{server.url}")
    added = json.loads(harness.run("add", "My knee hurts after the run.", "--json", env=env, check=True).stdout)
    done = harness.run("process", env=env)
    assert done.returncode == 1 and harness.one_line(done.stderr.splitlines()[-1]), done.stderr
    shown = json.loads(harness.run("show", added["id"][:8], "--json", env=env, check=True).stdout)
    assert shown["status"] == "pending" and reason in shown["error"] and shown["keywords"] == []
    done = harness.run("ask", "what about my knee?", env=env)
    assert done.returncode == 0 and "internal error" not in done.stderr, done.stderr
    assert "nested" not in done.stdout and "My knee hurts after the run." in done.stdout
    assert "extractive" in done.stderr


# -- items 13 and 14: model URLs and secrets ---------------------------------------------------------------
def test_13_model_specs_are_parsed_or_refused():
    assert parse_spec("openai:fake@http://user:pw@127.0.0.1:18801/v1") == ("fake", "http://user:pw@127.0.0.1:18801/v1")
    assert parse_spec("openai:qwen2.5:7b@HTTPS://host/v1/") == ("qwen2.5:7b", "HTTPS://host/v1")
    assert parse_spec("openai:a@b@http://host:1/v1") == ("a@b", "http://host:1/v1")
    for spec, message in [("openai:fake@127.0.0.1:18801/v1", "must start with http:// or https://"),
                          ("openai:fake@ftp://host/v1", "must start with http:// or https://"),
                          ("openai:fake@http://host:99999/v1", "cannot read the model server URL"),
                          ("openai:fake@http:///v1", "cannot read the model server URL"),
                          ("openai:fake@http://user:pw@host:abc/v1", "cannot read the model server URL")]:
        with pytest.raises(LLMError, match=message) as info:
            parse_spec(spec)
        assert "pw" not in str(info.value).replace("pw@", "") or ":***@" in str(info.value)


def test_13_credentials_in_the_url_are_basic_auth_and_never_shown(hostile, tmp_path):
    server = hostile("ok")
    url = server.url.replace("http://", "http://alice:pw-URLSECRET789@")
    env = harness.zk_env(home_with(tmp_path), ZK_LLM_MODEL=f"openai:fake@{url}")
    added = json.loads(harness.run("add", "My knee hurts after the run.", "--wait", "--json", env=env,
                                   check=True).stdout)
    assert added["status"] != "pending", added
    assert {s["auth"] for s in server.seen} == {"Basic " + base64.b64encode(b"alice:pw-URLSECRET789").decode()}
    assert {s["body"]["model"] for s in server.seen if "body" in s} == {"fake"}  # not the whole spec
    status = harness.run("status", "--json", env=env, check=True).stdout
    assert "URLSECRET789" not in status and "alice:***@127.0.0.1" in json.loads(status)["llm"]
    done = harness.run("--model", "openai:fake@127.0.0.1:1/v1?pw=URLSECRET789", "ask", "knee?", env=env)
    assert done.returncode == 1 and harness.one_line(done.stderr) and "http://" in done.stderr, done.stderr
    done = harness.run("--model", "openai:fake@http://u:URLSECRET789@127.0.0.1:99999/v1", "ask", "knee?", env=env)
    assert done.returncode == 1 and harness.one_line(done.stderr) and "URLSECRET789" not in done.stderr


def test_14_a_key_the_server_echoes_is_never_printed_or_stored(hostile, tmp_path):
    server = hostile("echo")
    home = home_with(tmp_path, "[llm]\ntimeout = 3\nretries = 0\n")
    env = harness.zk_env(home, ZK_LLM_MODEL=f"openai:fake@{server.url}", ZK_LLM_API_KEY=SECRET)
    added = json.loads(harness.run("add", "My knee hurts after the run.", "--json", env=env, check=True).stdout)
    outputs = [harness.run(*args, env=env) for args in (
        ["process"], ["show", added["id"][:8], "--json"], ["ask", "knee?", "--json"], ["export", "--all"],
        ["doctor"], ["doctor", "--json"], ["status", "--json"])]
    assert any("bad auth Bearer ***" in o.stdout + o.stderr for o in outputs)  # the server did echo it
    for done in outputs:
        assert SECRET not in done.stdout + done.stderr, done.args
    for path in home.rglob("*"):
        if path.is_file():
            assert SECRET.encode() not in path.read_bytes(), path


# -- item 15: zk doctor checks the server ------------------------------------------------------------------
def _doctor_model(env) -> dict:
    checks = json.loads(harness.run("doctor", "--json", env=env).stdout)
    rows = checks if isinstance(checks, list) else checks.get("checks", checks)
    return next(c for c in rows if c.get("check") == "model")


def test_15_doctor_checks_the_model_server(hostile, tmp_path):
    server = hostile("ok")
    home = home_with(tmp_path)
    (home / "config.toml").write_text(f'[llm]\nbase_url = "{server.url}"\nmodel = "fake"\ntimeout = 3\n',
                                      encoding="utf-8")
    env = harness.zk_env(home)
    env.pop("ZK_LLM_MODEL", None)
    harness.run("add", "x y z", env=env, check=True)
    model = _doctor_model(env)
    assert model["ok"] and "reachable, model listed, a test completion" in model["message"], model
    assert any("/chat/completions" in s["path"] for s in server.seen)
    server.models = ["other"]
    model = _doctor_model(env)
    assert not model["ok"] and "does not serve 'fake' (it serves: other)" in model["message"]
    server.close()
    model = _doctor_model(env)
    assert not model["ok"] and "cannot reach the LLM server" in model["message"]
    assert "model file not found" not in model["message"]


@pytest.mark.slow
def test_15_doctor_against_the_real_llama_cpp_server(llm_server, tmp_path):
    from tests.llm_server import MODEL_ALIAS

    home = home_with(tmp_path, "[llm]\ntimeout = 120\n")
    env = harness.zk_env(home, ZK_LLM_MODEL=f"openai:{MODEL_ALIAS}@{llm_server}")
    harness.run("add", "x y z", env=env, check=True)
    model = _doctor_model(env)
    assert model["ok"] and "reachable, model listed" in model["message"], model



# -- #38 item 3: status lines that say what happened -------------------------------------------------------
DEAD = "openai:m@http://127.0.0.1:9/v1"  # nothing listens on the discard port
DEAD_LINE = ("the model server at 127.0.0.1:9 cannot be reached (connection refused); is it running? "
             "`zk doctor` checks it")


@pytest.fixture
def model_env(monkeypatch):
    """`--model` sets ZK_LLM_MODEL in this process (for the worker it starts): restored after the test."""
    monkeypatch.setenv("ZK_LLM_MODEL", harness.FAKE_MODEL)


def test_38_ask_over_journal_notes_with_a_dead_server_says_extractive_and_names_the_server(zk, zk_home, model_env):
    zk_home.mkdir(parents=True, exist_ok=True)
    (zk_home / "config.toml").write_text("answer_journal = true\n[llm]\nretries = 0\n", encoding="utf-8")
    zk("add", "--at", "2026-05-14T19:20", "My knee hurt after the run at the Han river.", check=True)
    code, out, err = zk("--model", DEAD, "ask", "When did my knee hurt?")
    assert code == 0 and "My knee hurt" in out, err
    # A model server writes a journal answer's headline (#52); dead, the quoted view stays and one line says
    # why, naming the server once.
    [line] = err.splitlines()
    assert line.startswith("(extractive: ") and "could not write the headline" in line, err
    assert line.count("127.0.0.1:9") == 2 and "connection refused" in line  # the model's name, then the address
    code, out, err = zk("--model", DEAD, "ask", "When did my knee hurt?", "--json")
    answer = json.loads(out)
    assert answer["mode"] == "extractive" and answer["model"] == DEAD and "could not write" in answer["reason"]
    assert answer["view"]["line"]["text"].startswith("My knee hurt")
    assert answer["model_server"] == {"address": "127.0.0.1:9", "reachable": False, "problem": "connection refused"}
    code, out, err = zk("--model", DEAD, "ask", "Which gym do I go to?")  # declined: the server is still named
    assert code == 0 and err.splitlines() == ["(declined: no note mentions gym)", DEAD_LINE], err


def test_38_a_model_answer_names_its_model_and_a_failed_one_names_the_server_once(zk, zk_home, model_env):
    zk_home.mkdir(parents=True, exist_ok=True)
    (zk_home / "config.toml").write_text("[llm]\nretries = 0\n", encoding="utf-8")
    zk("add", "My knee hurt after the run.", check=True)
    code, out, err = zk("--model", harness.FAKE_MODEL, "ask", "what about my knee?")
    assert code == 0 and err.splitlines() == ["(answered by the model fake)"], err
    answer = json.loads(zk("--model", harness.FAKE_MODEL, "ask", "knee?", "--json").stdout)
    assert answer["mode"] == "model" and answer["model"] == "fake" and answer["model_server"] is None  # not probed
    code, out, err = zk("--model", "openai:m@http://alice:URLSECRET789@127.0.0.1:9/v1", "ask", "what about my knee?")
    assert code == 0 and "My knee hurt after the run." in out
    assert err.splitlines() == ["(extractive: the best sentence of the best note; the model "
                                "openai:m@http://127.0.0.1:9/v1 failed: cannot reach the LLM server at "
                                "http://127.0.0.1:9/v1 (connection refused); is it running?)"]  # named once
    assert "URLSECRET789" not in out + err


def test_38_doctor_names_a_dead_model_server(zk, zk_home, model_env):
    zk("add", "x y z", check=True)
    code, out, _ = zk("--model", DEAD, "doctor", "--json")
    model = next(c for c in json.loads(out)["checks"] if c["check"] == "model")
    assert code == 1 and not model["ok"]
    assert model["message"] == ("cannot reach the LLM server at http://127.0.0.1:9/v1 (connection refused); "
                                "is it running?")


def test_38_reach_probes_without_a_request_and_never_shows_credentials(hostile):
    from zettel_amem.backends.llm.openai_compat import reach

    server = hostile("ok")
    port = server.url.split(":")[2].split("/")[0]
    up = reach(f"openai:fake@http://bob:pw-SECRET@127.0.0.1:{port}/v1")
    assert up is not None and up.reachable and up.address == f"127.0.0.1:{port}" and server.seen == []
    down = reach("openai:m@http://bob:pw-SECRET@127.0.0.1:9/v1")
    assert down is not None and (down.address, down.problem) == ("127.0.0.1:9", "connection refused")
    assert reach("openai:m@https://[::1]/v1").address == "[::1]:443"
    assert reach("openai:m@127.0.0.1:9") is None  # a spec that does not parse: its use says why
