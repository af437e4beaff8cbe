"""A real S3-compatible server on 127.0.0.1 for the remote-store tests and `bench/remote.py`: moto's
`ThreadedMotoServer`, with two things added around its WSGI app.

- **Request counting**: every request (method, what it is for; `bytes_read`: the bytes GETs brought
  back), so a test or the benchmark can say how many object-store requests one `zk` command cost.
- **Atomic conditional writes**: moto checks `If-None-Match: *` / `If-Match` and then writes, in two
  steps, and its server answers requests in threads, so two commits racing for one manifest name
  could both pass the check. Real S3, MinIO and R2 make the check and the write one atomic step;
  here every write (PUT, POST, DELETE) is serialised under one lock so the fake does too.

- **A WAN** (`delay_s`, `link_bytes_per_s`): every request waits a round trip before it is answered,
  in its own thread, so requests Lance sends in parallel overlap; the bytes GETs bring back then pass
  one shared link of that speed, one after another. A command's wall time then shows what latency and
  bandwidth cost it (`bench/remote.py --rtt-ms --mbit`), not requests x latency.

- **A listing answered late** (`hide_listings`): the next listings of a prefix are answered as they
  would have been a moment earlier, before a table existed there: what a machine sees when its request
  left just before another machine's commit and the answer came after. A race, made certain.

- **Refusals as real S3 words them** (`check_keys`, `check_region`): a request signed with an access key
  other than `KEY_ID` gets 403 InvalidAccessKeyId, one signed for another region than `REGION` gets 400
  AuthorizationHeaderMalformed naming the bucket's region (moto accepts any key and any region).

- **Seeded faults** (`inject`, #38): any request may get, at random from a seed, a 503 SlowDown (not
  applied), its connection reset (before a write is applied, or after it: the write done, its answer
  lost), a hang (then reset; past the client's deadline when the test lowers it), or, for a listing, an
  answer from `lag_s` ago, without the keys written since (a stale listing: a table's newest versions left
  out, or the whole of a table made since). `injected` counts what was injected.

`stop()` and `start()` again keep the buckets (moto's state lives in this process) and the port, so a
test can take the store offline and bring it back.
"""

from __future__ import annotations

import random
import re
import socket
import threading
import time
from collections import Counter
from typing import Any

BUCKET = "zk-test"
REGION = "us-east-1"
KEY_ID, SECRET = "testing-key", "testing-secret"  # moto accepts any; zk passes them on like real ones


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def request_kind(method: str, path: str, query: str = "") -> str:
    """What a request is for, from its key: `list` (a table's versions), `manifest`, `data` (a data file),
    `index` (an index file), `other` (a transaction record, the namespace, the bucket)."""
    if "list-type=" in query:
        return "list"
    for part, kind in (("/_versions/", "manifest"), ("/data/", "data"), ("/_indices/", "index")):
        if part in path:
            return kind
    return "other"


_CREDENTIAL = re.compile(r"Credential=([^/,\s]+)/\d{8}/([^/,\s]+)/")


def _error(code: str, message: str, **extra: str) -> bytes:
    fields = "".join(f"<{k}>{v}</{k}>" for k, v in {"Code": code, "Message": message, **extra}.items())
    return f'<?xml version="1.0" encoding="UTF-8"?>\n<Error>{fields}<RequestId>zk-test</RequestId></Error>'.encode()


FAULTS = ("slowdown", "reset", "hang", "stale")


class Faults:
    """Which fault, if any, the next request gets: each with probability `rate`, one of `kinds` (a listing
    only can be stale), drawn from `seed`; at most `limit` in all (None: no limit)."""

    def __init__(self, seed: int, rate: float, kinds: tuple[str, ...] = FAULTS, hang_s: float = 0.0,
                 limit: int | None = None, lag_s: float = 2.0, past_deadline: tuple[float, float] = (0.0, 0.0)):
        self.random, self.rate, self.kinds, self.hang_s, self.limit = random.Random(seed), rate, kinds, hang_s, limit
        self.lag_s = lag_s  # a stale listing leaves out the keys written this recently
        # (share, seconds): that share of the hangs lasts that long (past the client's deadline), the rest hang_s
        self.past_share, self.past_s = past_deadline
        self.lock = threading.Lock()

    def draw(self, listing: bool, injected: Counter) -> str:
        with self.lock:
            if self.limit is not None and sum(injected.values()) >= self.limit:
                return ""
            if self.random.random() >= self.rate:
                return ""
            kind = self.random.choice([k for k in self.kinds if k != "stale" or listing] or [""])
            if kind == "reset" and self.random.random() < 0.5:
                kind = "reset-after"  # the request is served, and its answer lost
            if kind == "hang" and self.random.random() < self.past_share:
                kind = "hang-past-deadline"
            if kind:
                injected[kind] += 1
            return kind


def _cut(environ: dict[str, Any]) -> None:
    """Reset the request's connection (werkzeug hands the socket to the app)."""
    sock = environ.get("werkzeug.socket")
    try:
        sock.shutdown(socket.SHUT_RDWR)
    except (OSError, AttributeError):
        pass


class _Counting:
    """WSGI middleware: count requests, serialise writes."""

    def __init__(self, app, server: LoopbackS3):
        self.app, self.server = app, server

    def __call__(self, environ: dict[str, Any], start_response):
        method = environ.get("REQUEST_METHOD", "GET")
        if self.server.delay_s:  # a WAN's round trip; each request waits in its own thread, so parallel
            time.sleep(self.server.delay_s)  # requests overlap as they would over a network
        self.server.record(method, environ.get("PATH_INFO", ""), environ.get("QUERY_STRING", ""),
                           environ.get("HTTP_RANGE", ""))
        if method == "GET" and "list-type=2" in environ.get("QUERY_STRING", ""):
            environ["QUERY_STRING"] = self.server.listing(environ["QUERY_STRING"])
        refused = self.server.refusal(environ.get("HTTP_AUTHORIZATION", ""))
        if refused is not None:
            status, body = refused
            start_response(status, [("Content-Type", "application/xml"), ("Content-Length", str(len(body)))])
            return [body]
        fault = self.server.fault("list-type=2" in environ.get("QUERY_STRING", ""))
        if fault == "slowdown":
            body = _error("SlowDown", "Please reduce your request rate.")
            start_response("503 Slow Down", [("Content-Type", "application/xml"), ("Content-Length", str(len(body)))])
            return [body]
        if fault in ("reset", "hang", "hang-past-deadline"):
            faults = self.server.faults
            time.sleep({"hang": faults.hang_s, "hang-past-deadline": faults.past_s}.get(fault, 0.0))
            _cut(environ)
            return []
        if fault == "stale":
            return self.server.stale_listing(self.app, environ, start_response)
        if not self.server.conditional:
            environ.pop("HTTP_IF_NONE_MATCH", None)
        if fault == "reset-after":
            with self.server.write_lock:
                list(self.app(environ, self.server.noting_writes(environ, lambda *args: (lambda data: None))))
            _cut(environ)
            return []
        if method in ("PUT", "POST", "DELETE"):
            with self.server.write_lock:  # check-and-write as one step, as on real S3
                return list(self.app(environ, self.server.noting_writes(environ, start_response)))
        if method != "GET":
            return self.app(environ, start_response)

        def counted(status, headers, *rest):  # the bytes a read brought back (its Content-Length)
            length = next((v for k, v in headers if k.lower() == "content-length"), "0")
            self.server.add_bytes(int(length) if str(length).isdigit() else 0)
            self.server.transfer(int(length) if str(length).isdigit() else 0)
            return start_response(status, headers, *rest)

        return self.app(environ, counted)


class LoopbackS3:
    """`start()`, then `endpoint` is http://127.0.0.1:PORT; `env()` is what a zk process needs."""

    def __init__(self, port: int | None = None, conditional: bool = True, delay_s: float = 0.0,
                 link_bytes_per_s: float = 0.0):
        self.port = port or free_port()
        self.delay_s = delay_s  # added to every request (a round trip)
        self.link_bytes_per_s = link_bytes_per_s  # 0: no limit
        self._link_free = 0.0  # when the shared link has sent every byte reserved on it
        self.conditional = conditional  # False: a store that ignores If-None-Match (no commit support)
        self.write_lock = threading.Lock()
        self.counts: Counter[str] = Counter()
        self._count_lock = threading.Lock()
        self._server = None
        self._stop_in = -1  # stop_after: requests left before going down (-1: never)
        self._connections: Any = ()  # the accepted connections (a WeakSet once started)
        self._thread: threading.Thread | None = None
        self._hidden: list = []  # [prefix, listings left]
        self.log: list[tuple[str, str, str, str]] | None = None  # a list: every request (method, path, query, range)
        self.faults: Faults | None = None  # `inject`
        self.injected: Counter[str] = Counter()  # faults injected, by kind
        self.written: dict[str, float] = {}  # key -> when a PUT of it last succeeded (stale listings)
        self.check_keys = False  # True: refuse an access key other than KEY_ID (403 InvalidAccessKeyId)
        self.check_region = False  # True: refuse a request signed for another region than REGION (400)

    def inject(self, faults: Faults | None) -> None:
        """Inject `faults` from now on (None: none). A cut connection is expected then: werkzeug's log of
        each ("write() before start_response") is silenced meanwhile."""
        import logging

        self.faults = faults
        logging.getLogger("werkzeug").setLevel(logging.CRITICAL if faults else logging.ERROR)

    def fault(self, listing: bool) -> str:
        return self.faults.draw(listing, self.injected) if self.faults is not None else ""

    def refusal(self, authorization: str) -> tuple[str, bytes] | None:
        """What real S3 answers a request signed with an unknown key or for the wrong region, when checked."""
        signed = _CREDENTIAL.search(authorization)
        if signed is None:
            return None
        key, region = signed.groups()
        if self.check_keys and key != KEY_ID:
            return "403 Forbidden", _error("InvalidAccessKeyId", "The AWS Access Key Id you provided does not "
                                           "exist in our records.", AWSAccessKeyId=key)
        if self.check_region and region != REGION:
            return "400 Bad Request", _error("AuthorizationHeaderMalformed", "The authorization header is "
                                             f"malformed; the region '{region}' is wrong; expecting '{REGION}'",
                                             Region=REGION)
        return None

    def hide_listings(self, prefix: str, count: int) -> None:
        """Answer the next `count` listings of keys under `prefix` (in the bucket) as empty."""
        self._hidden = [prefix, count]

    def listing(self, query: str) -> str:
        """The query a listing is answered by: an empty prefix's while `hide_listings` says so."""
        from urllib.parse import unquote

        with self._count_lock:
            if self._hidden and self._hidden[1] > 0 and f"prefix={self._hidden[0]}" in unquote(query):
                self._hidden[1] -= 1
                return query.replace("prefix=", "prefix=zk-hidden%2F", 1)
        return query

    def noting_writes(self, environ: dict[str, Any], start_response):
        """`start_response`, noting when a write of a key succeeded (for `stale_listing`)."""
        key = environ.get("PATH_INFO", "").lstrip("/").partition("/")[2]

        def noted(status, headers, *rest):
            if environ.get("REQUEST_METHOD") == "PUT" and status.startswith("200"):
                with self._count_lock:
                    self.written[key] = time.monotonic()
            return start_response(status, headers, *rest)

        return noted

    def stale_listing(self, app, environ: dict[str, Any], start_response) -> list[bytes]:
        """A listing answered as it would have been `faults.lag_s` ago: without the keys written since (a
        table's newest versions; all of a table made since, which then looks absent)."""
        answer: list = []
        body = b"".join(app(environ, lambda status, headers, *rest: answer.extend([status, headers])))
        lag_s = self.faults.lag_s if self.faults is not None else 0.0
        with self._count_lock:
            recent = {k for k, at in self.written.items() if time.monotonic() - at < lag_s}

        def keep(match: re.Match) -> bytes:
            key = re.search(rb"<Key>([^<]*)</Key>", match.group(0))
            return b"" if key and key.group(1).decode() in recent else match.group(0)

        body = re.sub(rb"<Contents>.*?</Contents>", keep, body, flags=re.DOTALL)
        headers = [(k, v) for k, v in answer[1] if k.lower() != "content-length"]
        start_response(answer[0], headers + [("Content-Length", str(len(body)))])
        return [body]

    @property
    def endpoint(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def record(self, method: str, path: str, query: str = "", byte_range: str = "") -> None:
        with self._count_lock:
            if self.log is not None:
                self.log.append((method, path, query, byte_range))
            self.counts[method] += 1
            self.counts["total"] += 1
            self.counts[f"kind:{request_kind(method, path, query)}"] += 1
            self._stop_in -= 1
            stop_now = self._stop_in == 0
        if stop_now:  # from another thread: this request's own connection is among those cut
            threading.Thread(target=self.stop, daemon=True).start()

    def stop_after(self, requests: int) -> None:
        """Go down while the `requests`-th request from now is being served (a mid-command outage whatever
        the machine's speed; a timer missed the command it aimed at when commands got fast)."""
        with self._count_lock:
            self._stop_in = requests

    def add_bytes(self, size: int) -> None:
        with self._count_lock:
            self.counts["bytes_read"] += size

    def transfer(self, size: int) -> None:
        """Hold a response until its bytes have passed the shared link (after those reserved before)."""
        if not self.link_bytes_per_s or not size:
            return
        with self._count_lock:
            start = max(time.monotonic(), self._link_free)
            self._link_free = start + size / self.link_bytes_per_s
            wait = self._link_free - time.monotonic()
        if wait > 0:
            time.sleep(wait)

    def take_counts(self) -> Counter[str]:
        """The requests since the last call (and reset)."""
        with self._count_lock:
            counts, self.counts = self.counts, Counter()
        return counts

    def start(self) -> LoopbackS3:
        import logging

        logging.getLogger("werkzeug").setLevel(logging.ERROR)  # no request log on the tests' stderr
        from moto.moto_server.threaded_moto_server import ThreadedMotoServer
        from moto.moto_server.werkzeug_app import DomainDispatcherApplication, create_backend_app
        from werkzeug.serving import make_server

        outer = self

        class Server(ThreadedMotoServer):
            def _server_entry(self) -> None:  # moto's own, with the app wrapped
                app = _Counting(DomainDispatcherApplication(create_backend_app), outer)
                self._server = make_server(self._ip_address, self._port, app, True)
                outer._track_connections(self._server)
                self._server_ready_event.set()
                self._server.serve_forever()

        self._server = Server(ip_address="127.0.0.1", port=self.port, verbose=False)
        self._server.start()
        return self

    def _track_connections(self, server) -> None:
        """Remember each accepted connection, so that `stop` can cut the open ones too."""
        import weakref

        self._connections = weakref.WeakSet()
        accept = server.process_request

        def tracked(request, client_address) -> None:
            self._connections.add(request)
            accept(request, client_address)

        server.process_request = tracked

    def stop(self) -> None:
        """Stop as a server that goes down does: no new connections, and the open ones cut. Werkzeug's
        shutdown alone stops accepting but keeps serving kept-alive connections, so a client that pools
        them (Lance's object store in one process) went on writing through a "stopped" server."""
        import socket

        if self._server is not None:
            self._server.stop()
            self._server = None
            for connection in list(self._connections):
                try:
                    connection.shutdown(socket.SHUT_RDWR)
                except OSError:  # closed already
                    pass

    def client(self):
        import boto3

        return boto3.client("s3", endpoint_url=self.endpoint, aws_access_key_id=KEY_ID,
                            aws_secret_access_key=SECRET, region_name=REGION)

    def make_bucket(self, name: str = BUCKET) -> str:
        self.client().create_bucket(Bucket=name)
        return name

    def keys(self, bucket: str = BUCKET, prefix: str = "") -> list[str]:
        out, token = [], None
        client = self.client()
        while True:
            page = client.list_objects_v2(Bucket=bucket, Prefix=prefix, **({"ContinuationToken": token} if token
                                                                             else {}))
            out += [o["Key"] for o in page.get("Contents", [])]
            if not page.get("IsTruncated"):
                return out
            token = page["NextContinuationToken"]

    def env(self) -> dict[str, str]:
        """The usual AWS environment a zk process reads (credentials, region, endpoint)."""
        return {"AWS_ACCESS_KEY_ID": KEY_ID, "AWS_SECRET_ACCESS_KEY": SECRET, "AWS_REGION": REGION,
                "AWS_ENDPOINT_URL": self.endpoint}
