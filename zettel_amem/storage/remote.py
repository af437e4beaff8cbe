"""An object-store home as a user meets it: which failures mean "cannot reach the store" (so `zk add`
keeps the note in the outbox), and `zk doctor`'s one-line check of the store: reachable, credentials
accepted, writable, and whether it supports the conditional writes LanceDB's commits rely on. A store
zk cannot use is named by the same line a command prints (store_errors.py): the tables are first listed
through LanceDB, as every command does, then probed with boto3.
"""

from __future__ import annotations

import uuid
from urllib.parse import urlparse

from ..core.location import StoreLocation
from .health import Finding
from .store_errors import kind_of, refusal


def check(location: StoreLocation) -> Finding:
    """`zk doctor`'s remote-store line. S3-compatible stores are probed with boto3 (a probe object
    under `<prefix>/_zk_probe/`, removed after): a listing (reachable, credentials), a write (write
    permission), then the same key written again with `If-None-Match: *`, which a store that supports
    conditional writes must refuse (412). Without that, two machines' commits can overwrite each other:
    use `s3+ddb://` (LanceDB's DynamoDB commit store) for such a store."""
    parsed = urlparse(location.uri)
    scheme = parsed.scheme.lower()
    opened = _lance_check(location)  # what every command does first, and the line it prints on failure
    if not scheme.startswith("s3") or not opened.ok:
        return opened
    try:
        import boto3
        from botocore.config import Config
        from botocore.exceptions import BotoCoreError, ClientError
    except ImportError:
        return _lance_check(location, "conditional writes not probed: pip install boto3")  # pragma: no cover
    opts = location.options
    client = boto3.client("s3", endpoint_url=opts.get("endpoint"), region_name=opts.get("region"),
                          config=Config(connect_timeout=3, read_timeout=10, retries={"max_attempts": 1}))
    bucket, prefix = parsed.netloc, parsed.path.strip("/")
    key = f"{prefix}/_zk_probe/{uuid.uuid4().hex}" if prefix else f"_zk_probe/{uuid.uuid4().hex}"
    step = "reach"
    try:
        listing = client.list_objects_v2(Bucket=bucket, Prefix=f"{prefix}/" if prefix else "", MaxKeys=1)
        if "Name" not in listing:  # every S3 listing names its bucket; a web page parses to nothing
            return Finding("remote store", False, refusal(location, "not-s3"))
        step = "write"
        client.put_object(Bucket=bucket, Key=key, Body=b"zk doctor probe")
        step = "conditional"
        try:
            client.put_object(Bucket=bucket, Key=key, Body=b"again", IfNoneMatch="*")
            conditional = False
        except ClientError as exc:
            status = exc.response.get("ResponseMetadata", {}).get("HTTPStatusCode")
            if status not in (400, 409, 412, 501):  # 400/501: the header is not understood
                raise
            conditional = status in (409, 412)
        client.delete_object(Bucket=bucket, Key=key)
    except ClientError as exc:
        return Finding("remote store", False, _client_error(location, step, exc))
    except BotoCoreError as exc:
        return Finding("remote store", False, f"cannot reach the store at {location.uri} ({type(exc).__name__})")
    if not conditional and scheme == "s3":
        return Finding("remote store", False, f"{location.uri} accepted a second write of one key with "
                       "If-None-Match: * — it lacks conditional writes, so two machines' commits could "
                       "overwrite each other; use s3+ddb://BUCKET/PREFIX?ddbTableName=TABLE (docs/usage.md)")
    how = "conditional writes" if scheme == "s3" else "the DynamoDB commit store"
    return Finding("remote store", True, f"{location.uri}: reachable, credentials accepted, writable, "
                   f"commits by {how}")


def _client_error(location: StoreLocation, step: str, exc) -> str:
    """A boto3 refusal in the words a command uses for the same cause (store_errors.refusal)."""
    error, meta = exc.response.get("Error", {}), exc.response.get("ResponseMetadata", {})
    code, status = str(error.get("Code", "")), str(meta.get("HTTPStatusCode", ""))
    code = "" if code.isdigit() else code  # botocore's stand-in when the body was not S3's XML
    region = error.get("Region") or meta.get("HTTPHeaders", {}).get("x-amz-bucket-region", "")
    if step == "write" and status == "403":
        return f"{location.uri}: the credentials may read but not write ({code or status}); give the key write access"
    kind, detail = kind_of(code, status, region, garbled=not code)
    if kind:
        return refusal(location, kind, detail)
    return f"{location.uri}: {step} failed: {code or status}"


def _lance_check(location: StoreLocation, note: str = "") -> Finding:
    """Whether LanceDB can list the tables there (and open a notebook's notes table): the failure a
    command would meet, in its words."""
    from ..core.location import unreachable
    from .database import import_lancedb, lance_message
    from .store_errors import explain, not_a_notebook, plain

    lancedb = import_lancedb()
    try:
        db = lancedb.connect(location.uri, storage_options=location.options or None)
        tables = db.list_tables().tables
        foreign = not_a_notebook(location, tables, db.open_table("notes").schema.names if "notes" in tables
                                 else None)
    except Exception as exc:  # noqa: BLE001 - any failure is the finding
        why = unreachable(exc)
        refused = None if why else explain(exc, location)
        message = f"cannot reach the store at {location.uri} ({why})" if why else str(refused) if refused else \
            f"cannot open the store at {location.uri}: {plain(lance_message(exc))}"
        return Finding("remote store", False, message)
    if foreign is not None:
        return Finding("remote store", False, str(foreign))
    extra = f" ({note})" if note else ""
    return Finding("remote store", True, f"{location.uri}: reachable, {len(tables)} table(s){extra}")
