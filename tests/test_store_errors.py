"""A shared store that cannot be used says why in one line, with what to do, and `zk doctor` says the same
line (#38 item 1): against the loopback S3 server (tests/s3_server.py), which refuses an unknown access key
or a wrong region as real S3 does when asked to. No Rust debug structure, URL with credentials or secret
reaches the screen."""

from __future__ import annotations

import json
import threading
import uuid
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest

from tests.harness import one_line
from tests.s3_server import BUCKET, free_port

SECRET = "sk-s3-SECRET-38-4711"


@pytest.fixture
def store(s3, zk_home, monkeypatch):
    """`store(uri=None, **env)`: this test's shared home (a fresh prefix unless `uri` is given), with the
    loopback server's environment and `env` over it."""

    def use(uri: str | None = None, **env: str) -> str:
        uri = uri or f"s3://{BUCKET}/errors-{uuid.uuid4().hex[:8]}"
        for key, value in (s3.env() | env).items():
            monkeypatch.setenv(key, value)
        monkeypatch.setenv("ZK_HOME", uri)
        monkeypatch.setenv("ZK_LOCAL_DIR", str(zk_home))
        return uri

    yield use
    s3.check_keys = s3.check_region = False


def _says(zk, line: str, command: tuple[str, ...] = ("list",)) -> None:
    """`command` fails with exactly `line`, and `zk doctor` names the same cause."""
    code, out, err = zk(*command)
    assert code == 1 and one_line(err) and err == f"zk: error: {line}\n", err
    for shown in (out + err, _doctor(zk)):
        assert "{ source" not in shown and "RetryError" not in shown and SECRET not in shown, shown
    assert _doctor(zk) == line


def _doctor(zk) -> str:
    code, out, _ = zk("doctor", "--json")
    found = next(c for c in json.loads(out)["checks"] if c["check"] == "remote store")
    assert code == 1 and not found["ok"]
    return found["message"]


def test_a_bucket_name_that_is_not_valid(zk, store):
    store("s3://zk/journal")
    _says(zk, "cannot open the store at s3://zk/journal: 'zk' is not a valid bucket name (3-63 lowercase "
          "letters, digits, dots and hyphens, starting and ending with a letter or digit); fix the bucket in the "
          "store URI", ("add", "무릎이 아프다"))


def test_a_bucket_that_does_not_exist(zk, store, s3):
    store("s3://no-such-bucket/journal")
    _says(zk, f"cannot open the store at s3://no-such-bucket/journal: the bucket 'no-such-bucket' does not exist "
          f"at {s3.endpoint}; create it (`aws s3 mb s3://no-such-bucket`, or in the MinIO or R2 console) or fix "
          "its name in the store URI", ("add", "a note"))


def test_credentials_that_are_refused(zk, store, s3):
    uri = store(AWS_ACCESS_KEY_ID="AKIA-not-a-key", AWS_SECRET_ACCESS_KEY=SECRET)
    s3.check_keys = True
    _says(zk, f"cannot open the store at {uri}: {s3.endpoint} refused the credentials (InvalidAccessKeyId); set "
          "AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY (or AWS_PROFILE) to a key of this store", ("add", "a note"))


def test_a_wrong_region(zk, store, s3):
    uri = store(AWS_REGION="eu-central-1")
    s3.check_region = True
    _says(zk, f"cannot open the store at {uri}: the bucket '{BUCKET}' is in region 'us-east-1', not "
          "'eu-central-1'; set AWS_REGION=us-east-1 (or store_region in config.toml)", ("add", "a note"))


def test_an_endpoint_that_cannot_be_reached(zk, store):
    uri = store(AWS_ENDPOINT_URL=f"http://127.0.0.1:{free_port()}")
    code, out, err = zk("add", "a note kept offline")
    assert code == 0 and one_line(err) and "kept in the local outbox (1 waiting): cannot reach the store" in err
    line = f"cannot reach the store at {uri} (connection refused)"
    code, out, err = zk("list")
    assert code == 1 and err == (f"zk: error: {line}; is the network up and the endpoint right (AWS_ENDPOINT_URL "
                                 "or store_endpoint)? Reads need the store (`zk add` keeps notes in the local "
                                 "outbox meanwhile)\n"), err
    assert _doctor(zk) == line


class _NotS3(BaseHTTPRequestHandler):
    """A web server that is not S3: every request gets a small HTML page."""

    def log_message(self, *args):
        pass

    def do_GET(self):
        body = b"<html><body>It works!</body></html>"
        self.send_response(200)
        self.send_header("Content-Type", "text/html")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        if self.command != "HEAD":
            self.wfile.write(body)

    do_PUT = do_POST = do_HEAD = do_DELETE = do_GET


def test_an_endpoint_that_is_not_s3(zk, store):
    web = ThreadingHTTPServer(("127.0.0.1", free_port()), _NotS3)
    threading.Thread(target=web.serve_forever, daemon=True).start()
    try:
        endpoint = f"http://127.0.0.1:{web.server_address[1]}"
        uri = store(AWS_ENDPOINT_URL=endpoint)
        _says(zk, f"cannot open the store at {uri}: {endpoint} answered, but not as an S3 server; set "
              "AWS_ENDPOINT_URL (or store_endpoint in config.toml) to the store's S3 endpoint", ("add", "a note"))
    finally:
        web.shutdown()
        web.server_close()


def test_a_prefix_that_holds_something_else(zk, store, s3):
    import lancedb

    uri = store()
    options = {"endpoint": s3.endpoint, "allow_http": "true", "region": "us-east-1"}
    lancedb.connect(uri, storage_options=options).create_table("photos", data=[{"name": "cat.jpg"}])
    _says(zk, f"cannot open the store at {uri}: it holds LanceDB table(s) photos, not a zk notebook; give zk a "
          f"prefix of its own (such as {uri}/zk)", ("add", "a note"))
    assert [k for k in s3.keys(prefix=uri.split("/", 3)[3]) if "/notes.lance/" in k] == []  # nothing created

    uri = store()
    lancedb.connect(uri, storage_options=options).create_table("notes", data=[{"title": "not zk's"}])
    _says(zk, f"cannot open the store at {uri}: it holds a LanceDB table 'notes' that zk did not make, not a zk "
          f"notebook; give zk a prefix of its own (such as {uri}/zk)", ("add", "a note"))


def test_zk_knows_every_table_a_notebook_has():
    from zettel_amem.storage import lease, store_errors, store_rows, tier_store

    assert store_errors.OWN_TABLES == {store_rows.NOTES, tier_store.EPISODES, tier_store.ENTITIES,
                                       tier_store.RELATIONS, lease.LEASES}


def test_causes_are_read_from_the_error_text_and_never_shown():
    from zettel_amem.core.location import StoreLocation
    from zettel_amem.storage.store_errors import cause_of, explain

    rust = ('Generic { store: "S3", source: ListRequest { source: RetryError(RetryErrorImpl { method: GET, uri: '
            'Some(http://127.0.0.1:1/b?list-type=2), retries: 0, inner: Status { status: 404, body: Some("<?xml '
            'version=\\"1.0\\"?><Error><Code>NoSuchBucket</Code><Message>The specified bucket does not exist'
            '</Message></Error>") } }) } }')
    assert cause_of(rust) == ("bucket", "NoSuchBucket")
    assert cause_of("Retryable commit conflict for version 7") == ("", "")
    assert cause_of('status: 412, body: Some("<Error><Code>PreconditionFailed</Code></Error>")') == ("", "")
    location = StoreLocation(Path("/tmp"), "s3://b-1/p", {"endpoint": "http://alice:pw@127.0.0.1:1"})
    refused = explain(Exception(rust), location)
    assert refused is not None and "RetryError" not in str(refused) and "pw" not in str(refused)
    assert "http://127.0.0.1:1" in str(refused)


def test_a_missing_table_root_is_a_lagging_listing_not_damage():
    from zettel_amem.storage.store_errors import lagging

    assert lagging("lance error: Not found: p/notes.lance/_versions, /root/lance-table/src/commit.rs:65:2") == "notes"
    assert lagging("Not found: p/episodes.lance") == "episodes"
    assert lagging("Not found: p/notes.lance/data/0101ab.lance") == ""  # a data file: damage, as before
    assert lagging("Not found: p/notes.lance/_versions/18446744073709551614.manifest") == ""
