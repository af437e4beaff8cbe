"""`zk mcp --http PORT`: Streamable HTTP on 127.0.0.1 only, behind the notebook's bearer token.

The server keeps the SDK's Host and Origin checks (DNS rebinding, browser pages) and asks every request
for the notebook's bearer token: a random token made on first use and kept in `<home>/mcp-tokens.json`
(mode 0600), shown by `zk mcp --print-token`. Every local user can reach 127.0.0.1; only the owner of the
data dir can read the token.
"""

from __future__ import annotations

import hmac
import json
import os
import secrets
from pathlib import Path

from ..core.errors import ZkError


async def serve_http(server, port: int, token: str) -> None:
    """Streamable HTTP on 127.0.0.1 (the SDK's Host/Origin checks for localhost), behind the bearer token."""
    import uvicorn

    app = server.streamable_http_app(host="127.0.0.1")
    config = uvicorn.Config(BearerAuth(app, token), host="127.0.0.1", port=port, log_level="warning")
    await uvicorn.Server(config).serve()


class BearerAuth:
    """ASGI middleware: every HTTP request must carry `Authorization: Bearer <token>` (else 401)."""

    def __init__(self, app, token: str):
        self.app = app
        self.expected = f"Bearer {token}".encode()

    async def __call__(self, scope, receive, send) -> None:
        if scope["type"] == "http":
            given = dict(scope.get("headers") or []).get(b"authorization", b"")
            if not hmac.compare_digest(given, self.expected):
                body = json.dumps({"jsonrpc": "2.0", "id": None, "error": {
                    "code": -32001, "message": "missing or wrong bearer token (`zk mcp --print-token` shows it)"}})
                await send({"type": "http.response.start", "status": 401, "headers": [
                    (b"content-type", b"application/json"), (b"www-authenticate", b'Bearer realm="zk"')]})
                await send({"type": "http.response.body", "body": body.encode()})
                return
            send = _json_rpc_errors(send)
        await self.app(scope, receive, send)


def _json_rpc_errors(send):
    """The SDK refuses a body over its size limit with a plain-text 413; an MCP client reads JSON-RPC errors,
    so that one is sent as one (with the limit), like the 401 above."""
    from mcp.server.transport_security import DEFAULT_MAX_REQUEST_BODY_SIZE

    replaced = False

    async def wrapped(message) -> None:
        nonlocal replaced
        if message["type"] == "http.response.start" and message.get("status") == 413:
            replaced = True
            body = json.dumps({"jsonrpc": "2.0", "id": None, "error": {
                "code": -32600, "message": f"the request is too large (the limit is "
                                           f"{DEFAULT_MAX_REQUEST_BODY_SIZE:,} bytes)"}}).encode()
            await send({"type": "http.response.start", "status": 413, "headers": [
                (b"content-type", b"application/json"), (b"content-length", str(len(body)).encode())]})
            await send({"type": "http.response.body", "body": body})
        elif not replaced:  # the SDK's own plain-text body of that 413 is dropped
            await send(message)

    return wrapped


TOKEN_FILE = "mcp-tokens.json"


def token_for(home: Path, notebook: str, new: bool = False) -> str:
    """The notebook's bearer token for `zk mcp --http`, made on first use (or anew with `new`) and kept in
    `<home>/mcp-tokens.json`, readable by its owner only (0600)."""
    from filelock import FileLock

    path = home / TOKEN_FILE
    try:
        home.mkdir(parents=True, exist_ok=True)
        with FileLock(str(home / ".mcp-tokens.lock")):
            tokens = _read_tokens(path)
            if new or not isinstance(tokens.get(notebook), str):
                tokens[notebook] = secrets.token_urlsafe(32)
                tmp = path.with_name(f".{TOKEN_FILE}.{os.getpid()}.tmp")
                with os.fdopen(os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600), "w",
                               encoding="utf-8") as out:
                    json.dump(tokens, out, indent=1)
                os.replace(tmp, path)
            if path.stat().st_mode & 0o077:  # made by hand or copied: others must not read it
                path.chmod(0o600)
    except OSError as exc:
        raise ZkError(f"cannot keep the MCP token in {path}: {exc.strerror or exc}") from None
    return tokens[notebook]


def _read_tokens(path: Path) -> dict:
    try:
        tokens = json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        return {}
    except (OSError, ValueError) as exc:
        raise ZkError(f"cannot read {path}: {exc}; delete it to make new tokens") from None
    if not isinstance(tokens, dict):
        raise ZkError(f"cannot read {path}: not a JSON object; delete it to make new tokens")
    return tokens
