"""Where a notebook's tables live: a local folder (the default) or an object-store URI.

`zk --home s3://bucket/prefix` (or `ZK_HOME=s3://...`, or `store = "s3://..."` in a home's config.toml)
puts the LanceDB tables in the bucket. Everything that belongs to one machine stays in a local folder:
config, meta.json (what this machine last saw), the locks of its own processes, the background worker's
log, the offline outbox. For a URI home that folder is `$ZK_LOCAL_DIR`, else a folder named after the
URI under the user data dir.

Commits to the shared tables go through LanceDB's own object-store commit protocol: on `s3://` a
conditional write of the next manifest (`If-None-Match: *`; AWS S3, MinIO and Cloudflare R2 honour it),
on `s3+ddb://bucket/prefix?ddbTableName=T` a DynamoDB table for stores that do not. No zk lock is
involved: a local file lock does not reach another machine.

Credentials, region and endpoint come from the usual AWS environment and config files (LanceDB reads
them); `AWS_ENDPOINT_URL` (or the `store_endpoint` setting) points at MinIO, R2 or a test server.
"""

from __future__ import annotations

import hashlib
import os
import re
from dataclasses import dataclass, field
from pathlib import Path

_URI = re.compile(r"^(?P<scheme>[a-z][a-z0-9+.-]*)://(?P<rest>.+)$", re.IGNORECASE)
REMOTE_SCHEMES = ("s3", "s3+ddb", "gs", "az", "abfs", "memory")
# An unreachable store must be said within seconds, not after object_store's default 10 retries over
# up to 3 minutes: `zk add` then keeps the note in the outbox instead of hanging.
# (LanceDB adds ~2 s of its own to a refused connection, whatever the retries.)
FAST_FAIL = {"connect_timeout": "3s", "timeout": "30s", "client_max_retries": "2", "client_retry_timeout": "15"}
# Lance opens a file on an object store by reading its last `block_size` bytes (64 KiB by default), and
# merges reads less than that apart into one request. One note is ~20 column values, each in its own
# column's page: in a compacted file of a few thousand notes those pages lie more than 64 KiB apart, and
# showing a note then costs a request per column, as does each index file over 64 KiB (docs/benchmarks.md,
# "Object storage"). With 256 KiB `zk list`/`zk show` cost the same requests at 10k notes as at 1k
# (measured; larger notebooks not yet), for ~1-2 MB more read per command. The `store_block_size` setting
# changes it: smaller where egress is billed per byte, larger where requests are (docs/usage.md).
BLOCK_SIZE = 256 * 1024
MIN_BLOCK_SIZE = 4 * 1024  # below a disk page every small read is its own request
MAX_BLOCK_SIZE = 64 * 1024 * 1024  # above this one `zk show` would read tens of MB
_SIZE = re.compile(r"^(?P<number>\d+)\s*(?P<unit>[kmg]?)(?:i?b)?$", re.IGNORECASE)
_UNITS = {"": 1, "k": 1024, "m": 1024 ** 2, "g": 1024 ** 3}


def parse_block_size(value: object) -> int:
    """Bytes from a `store_block_size` value: a whole number of bytes, or a size with a binary unit
    ("256KiB", "1MiB", "64k", "512 KB": k = 1024). ValueError, saying what is accepted, otherwise."""
    text = str(value).strip() if isinstance(value, (str, int)) and not isinstance(value, bool) else ""
    match = _SIZE.match(text)
    size = int(match.group("number")) * _UNITS[match.group("unit").lower()] if match else 0
    if not MIN_BLOCK_SIZE <= size <= MAX_BLOCK_SIZE:
        raise ValueError(f"must be a size from 4KiB to 64MiB (such as 64KiB, 256KiB, 1MiB), "
                         f"not {value!r}"[:200])
    return size


def format_size(size: int) -> str:
    """A size as people write it: "256 KiB", "1 MiB", or bytes when not a whole number of KiB."""
    for unit, factor in (("MiB", 1024 ** 2), ("KiB", 1024)):
        if size % factor == 0:
            return f"{size // factor} {unit}"
    return f"{size} bytes"


def is_store_uri(value: str | os.PathLike[str] | None) -> bool:
    """Whether a `--home`/`ZK_HOME`/`store` value names an object store (not a local folder)."""
    if value is None:
        return False
    match = _URI.match(str(value))
    return bool(match) and match.group("scheme").lower() in REMOTE_SCHEMES


def local_dir_for(uri: str) -> Path:
    """This machine's folder for a URI home: `$ZK_LOCAL_DIR`, else `<user data dir>/stores/<name>`."""
    explicit = os.environ.get("ZK_LOCAL_DIR")
    if explicit:
        return Path(explicit).expanduser()
    import platformdirs

    slug = re.sub(r"[^A-Za-z0-9._-]+", "-", _URI.match(uri).group("rest")).strip("-")[:60]
    digest = hashlib.sha256(uri.encode("utf-8")).hexdigest()[:8]
    return Path(platformdirs.user_data_dir("zettel-amem")) / "stores" / f"{slug}-{digest}"


@dataclass(frozen=True)
class StoreLocation:
    """The LanceDB URI and its storage options, and this machine's local folder."""

    local: Path
    uri: str = ""  # "" : the local folder's `lancedb/`
    options: dict[str, str] = field(default_factory=dict)

    @property
    def remote(self) -> bool:
        return bool(self.uri)

    @property
    def lancedb_uri(self) -> str:
        return self.uri or str(self.local / "lancedb")

    def __str__(self) -> str:
        return self.uri or str(self.local / "lancedb")


def storage_options(uri: str, endpoint: str = "", region: str = "",
                    block_size: int = BLOCK_SIZE) -> dict[str, str]:
    """LanceDB's `storage_options` for an object-store URI: the endpoint and region when set (an http://
    endpoint, such as a MinIO box on the LAN, needs `allow_http`), short retries, and the read block size.
    Credentials are left to LanceDB, which reads the AWS environment variables, profiles and instance
    roles itself."""
    from .errors import register_secret

    options = {**FAST_FAIL, "block_size": str(block_size)}
    scheme = _URI.match(uri).group("scheme").lower()
    if scheme.startswith("s3"):
        for secret in ("AWS_SECRET_ACCESS_KEY", "AWS_SESSION_TOKEN"):  # masked in every message (#38)
            register_secret(os.environ.get(secret))
        endpoint = endpoint or os.environ.get("AWS_ENDPOINT_URL_S3") or os.environ.get("AWS_ENDPOINT_URL") or ""
        region = region or os.environ.get("AWS_REGION") or os.environ.get("AWS_DEFAULT_REGION") or ""
        if endpoint:
            options["endpoint"] = endpoint
            if endpoint.startswith("http://"):
                options["allow_http"] = "true"
            if scheme == "s3+ddb":  # LanceDB's DynamoDB commit store talks to the same endpoint
                options.setdefault("dynamodb_endpoint", endpoint)
        if region:
            options["region"] = region
    return options


BOUND = "store-uri"  # in the local folder of a URI home: its URI, so `zk --home FOLDER` (the worker) finds it


def _read(path: Path) -> str:
    try:
        return path.read_text(encoding="utf-8").strip()
    except OSError:
        return ""


def _bind(path: Path, uri: str) -> None:
    if _read(path) == uri:
        return
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp = path.with_suffix(f".{os.getpid()}.tmp")
        tmp.write_text(uri + "\n", encoding="utf-8")
        tmp.replace(path)
    except OSError:
        pass  # a read-only folder: the URI is given on each command anyway


def resolve(home: Path, home_arg: str | os.PathLike[str] | None, store_setting: str = "",
            endpoint: str = "", region: str = "", block_size: int = BLOCK_SIZE) -> StoreLocation:
    """The location for a home: a URI given as the home itself (`--home`/`ZK_HOME`) or as the home's
    `store` setting; otherwise the local folder."""
    given = home_arg if home_arg is not None else os.environ.get("ZK_HOME")
    bound = home / BOUND
    if is_store_uri(given):
        uri = str(given)
        _bind(bound, uri)
    else:
        uri = store_setting or _read(bound)
    if not uri:
        return StoreLocation(home)
    if not is_store_uri(uri):
        from .errors import ZkError

        raise ZkError(f"store '{uri}' is not an object-store URI (s3://bucket/prefix, s3+ddb://, gs://, az://)")
    return StoreLocation(home, uri.rstrip("/"), storage_options(uri, endpoint, region, block_size))


# Failures of the connection itself (no answer, or an answer saying "try later"), as object_store and
# reqwest word them; a refused credential or a missing bucket is an answer, not one of these.
_UNREACHABLE = re.compile(
    r"error sending request|connection refused|tcp connect error|dns error|failed to lookup address|"
    r"timed out|connection reset|broken pipe|network is unreachable|no route to host|"
    r"status(?: code)?:? 5\d\d|503 Service Unavailable|SlowDown|Connect,", re.IGNORECASE)


def unreachable(exc: BaseException) -> str:
    """Why a LanceDB/object-store failure means the store could not be reached at all ("connection
    refused", "dns error", ...), or "" when it is another failure."""
    text = str(exc)
    for plain in ("connection refused", "dns error", "failed to lookup address", "timed out", "connection reset",
                  "network is unreachable", "no route to host"):
        if plain in text.lower():
            return plain
    return "no connection" if _UNREACHABLE.search(text) else ""
