"""An object-store home as a user meets it: which failures mean "cannot reach the store" (so `zk add`
keeps the note in the outbox), and `zk doctor`'s one-line check of the store: reachable, credentials
accepted, writable, and whether it supports the conditional writes LanceDB's commits rely on.
"""

from __future__ import annotations

import uuid
from urllib.parse import urlparse

from .health import Finding
from .location import StoreLocation


def check(location: StoreLocation) -> Finding:
    """`zk doctor`'s remote-store line. S3-compatible stores are probed with boto3 (a probe object
    under `<prefix>/_zk_probe/`, removed after): a listing (reachable, credentials), a write (write
    permission), then the same key written again with `If-None-Match: *`, which a store that supports
    conditional writes must refuse (412). Without that, two machines' commits can overwrite each other:
    use `s3+ddb://` (LanceDB's DynamoDB commit store) for such a store."""
    parsed = urlparse(location.uri)
    scheme = parsed.scheme.lower()
    if not scheme.startswith("s3"):
        return _lance_check(location)
    try:
        import boto3
        from botocore.config import Config
        from botocore.exceptions import BotoCoreError, ClientError
    except ImportError:
        return _lance_check(location, "conditional writes not probed: pip install boto3")
    opts = location.options
    client = boto3.client("s3", endpoint_url=opts.get("endpoint"), region_name=opts.get("region"),
                          config=Config(connect_timeout=3, read_timeout=10, retries={"max_attempts": 1}))
    bucket, prefix = parsed.netloc, parsed.path.strip("/")
    key = f"{prefix}/_zk_probe/{uuid.uuid4().hex}" if prefix else f"_zk_probe/{uuid.uuid4().hex}"
    step = "reach"
    try:
        client.list_objects_v2(Bucket=bucket, Prefix=f"{prefix}/" if prefix else "", MaxKeys=1)
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
        return Finding("remote store", False, f"cannot reach {location.uri}: {exc}"[:300])
    if not conditional and scheme == "s3":
        return Finding("remote store", False, f"{location.uri} accepted a second write of one key with "
                       "If-None-Match: * — it lacks conditional writes, so two machines' commits could "
                       "overwrite each other; use s3+ddb://BUCKET/PREFIX?ddbTableName=TABLE (docs/usage.md)")
    how = "conditional writes" if scheme == "s3" else "the DynamoDB commit store"
    return Finding("remote store", True, f"{location.uri}: reachable, credentials accepted, writable, "
                   f"commits by {how}")


def _client_error(location: StoreLocation, step: str, exc) -> str:
    code = exc.response.get("Error", {}).get("Code", "")
    status = exc.response.get("ResponseMetadata", {}).get("HTTPStatusCode")
    if code == "NoSuchBucket":
        return f"{location.uri}: the bucket does not exist (create it first)"
    if code in ("InvalidAccessKeyId", "SignatureDoesNotMatch", "ExpiredToken", "InvalidToken") or (
            status == 403 and step == "reach"):
        return f"{location.uri}: the credentials were refused ({code or status}); check AWS_ACCESS_KEY_ID/AWS_PROFILE"
    if status == 403:
        return f"{location.uri}: the credentials may read but not write ({code or status})"
    return f"{location.uri}: {step} failed: {code or status} {exc}"[:300]


def _lance_check(location: StoreLocation, note: str = "") -> Finding:
    """Other object stores (GCS, Azure): whether LanceDB can list the tables there."""
    from .database import import_lancedb, lance_message

    lancedb = import_lancedb()
    try:
        tables = lancedb.connect(location.uri, storage_options=location.options or None).list_tables().tables
    except Exception as exc:  # noqa: BLE001 - any failure is the finding
        return Finding("remote store", False, f"cannot reach {location.uri}: {lance_message(exc)}")
    extra = f" ({note})" if note else ""
    return Finding("remote store", True, f"{location.uri}: reachable, {len(tables)} table(s){extra}")
