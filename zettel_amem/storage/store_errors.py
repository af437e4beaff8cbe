"""Why a shared store (`zk --home s3://BUCKET/PREFIX`) cannot be used, in one line that says what to do (#38).

LanceDB reports an object store's failure as the Rust debug text of its error (`IO { source: Generic {
store: "S3", source: ListRequest { source: RetryError(... status: 404 ... <Code>NoSuchBucket</Code> ...`).
The cause is read out of that text (the S3 error code, the HTTP status, the region S3 names) and said in
words; the text itself, which can hold request URLs and headers, is never shown. `zk doctor` reads the
same causes from boto3's errors (remote.py) and says the same line.

The causes: the bucket's name is invalid or the bucket does not exist, the credentials are refused (or
may not use the bucket), the region is wrong, the endpoint is not an S3 server, and the prefix holds
something that is not a zk notebook. An endpoint that cannot be reached at all is `StoreUnreachable`
(location.unreachable): `zk add` then keeps the note in the outbox.
"""

from __future__ import annotations

import re
from urllib.parse import urlsplit

from ..core.errors import StoreRefused, mask_secrets
from ..core.location import StoreLocation

# Every table a notebook has (the notes; tier_store's; lease's): a prefix holding only other tables is not a
# zk notebook (tests/test_store_errors.py checks the names).
OWN_TABLES = {"notes", "episodes", "entities", "relations", "zk_leases"}
NOTE_COLUMNS = {"id", "content", "at"}  # what every zk notes table has had, in every schema version
# S3's rules for bucket names (AWS, MinIO and R2 alike): 3 to 63 lowercase letters, digits, dots and hyphens,
# starting and ending with a letter or digit.
_BUCKET_NAME = re.compile(r"^[a-z0-9][a-z0-9.-]{1,61}[a-z0-9]$")
_CODE = re.compile(r"<Code>\s*([A-Za-z]+)\s*</Code>")
_OTHER_BODY = re.compile(r'body: Some\("\s*(?:[^<\s"\\]|<(?!\?xml|Error))')
_STATUS = re.compile(r"\bstatus(?:[ _]code)?:\s*(\d{3})\b", re.IGNORECASE)
_REGION = re.compile(r"<Region>\s*([a-z0-9-]+)\s*</Region>|expecting '([a-z0-9-]+)'")
CREDENTIALS = {"InvalidAccessKeyId", "SignatureDoesNotMatch", "ExpiredToken", "InvalidToken", "TokenRefreshRequired",
               "InvalidSecurity", "MissingSecurityHeader", "AuthorizationQueryParametersError"}
FORBIDDEN = {"AccessDenied", "AllAccessDisabled", "AccountProblem"}
REGION = {"AuthorizationHeaderMalformed", "PermanentRedirect", "IllegalLocationConstraintException"}
# How object_store says an answer was not what an S3 server sends (an HTML page, a JSON API, a 404 for a
# listing): parsing its body failed, a write's answer had no ETag, or an error's body is not S3's XML. (An
# error without a body is S3's own answer to a HEAD: a table being created by another machine at once.)
_NOT_S3 = re.compile(r"error decoding response body|invalid list response|InvalidListResponse|"
                     r"ETag Header missing|unable to extract metadata from headers", re.IGNORECASE)


def bucket_of(location: StoreLocation) -> tuple[str, str]:
    """(bucket, prefix) of an object-store URI."""
    parts = urlsplit(location.uri)
    return parts.netloc, parts.path.strip("/")


def endpoint_of(location: StoreLocation) -> str:
    """The endpoint as it may be shown: scheme, host and port, never a user or password."""
    endpoint = location.options.get("endpoint", "")
    if not endpoint:
        return "AWS S3"
    parts = urlsplit(endpoint)
    host = parts.netloc.rpartition("@")[2]
    return f"{parts.scheme}://{host}" if parts.scheme and host else mask_secrets(endpoint)


def cause_of(text: str) -> tuple[str, str]:
    """(kind, detail) of an object store's failure text (see `kind_of`); ("", "") when it shows no cause
    named here (a commit conflict, a damaged file: the caller's own handling)."""
    code = next(iter(_CODE.findall(text)), "")
    status = next(iter(_STATUS.findall(text)), "")
    region = next((a or b for a, b in _REGION.findall(text)), "")
    return kind_of(code, status, region, bool(_NOT_S3.search(text) or (not code and _OTHER_BODY.search(text))))


def kind_of(code: str, status: str, region: str = "", garbled: bool = False) -> tuple[str, str]:
    """(kind, detail) from an S3 error code, the HTTP status and the region S3 named: kind is "bucket",
    "credentials", "forbidden", "region" or "not-s3" (`garbled`: the answer was no S3 answer), detail the
    code or the right region; ("", "") for none of them."""
    if code in ("NoSuchBucket", "InvalidBucketName"):
        return "bucket", code
    if code in CREDENTIALS:
        return "credentials", code
    if code in REGION or (status == "301" and not code):
        return "region", region
    if code in FORBIDDEN:
        return "forbidden", code
    if status in ("401", "403") and not code:
        return "credentials", f"HTTP {status}"
    if garbled:
        return "not-s3", ""
    return "", ""


# What each cause's line says after "cannot open the store at URI: ", and what to do.
_LINES = {
    "bucket-name": "'{bucket}' is not a valid bucket name (3-63 lowercase letters, digits, dots and hyphens, "
                   "starting and ending with a letter or digit); fix the bucket in the store URI",
    "bucket": "the bucket '{bucket}' does not exist at {endpoint}; create it (`aws s3 mb s3://{bucket}`, or in "
              "the MinIO or R2 console) or fix its name in the store URI",
    "credentials": "{endpoint} refused the credentials ({detail}); set AWS_ACCESS_KEY_ID and "
                   "AWS_SECRET_ACCESS_KEY (or AWS_PROFILE) to a key of this store",
    "forbidden": "the credentials may not use the bucket '{bucket}' ({detail}); give the key read and write "
                 "access to it, or use a key that has it",
    "region": "the bucket '{bucket}' is {where}, not {given}; set AWS_REGION={right} (or store_region in "
              "config.toml)",
    "not-s3": "{endpoint} answered, but not as an S3 server; set AWS_ENDPOINT_URL (or store_endpoint in "
              "config.toml) to the store's S3 endpoint",
    "not-zk": "it holds {detail}, not a zk notebook; give zk a prefix of its own (such as {base}/zk)",
}


def refusal(location: StoreLocation, kind: str, detail: str = "") -> str:
    """The one line for a cause found by `cause_of` (or by the caller: "not-zk", with what is there)."""
    bucket, given = bucket_of(location)[0], location.options.get("region")
    if kind == "bucket" and not _BUCKET_NAME.match(bucket):
        kind = "bucket-name"
    fields = {"bucket": bucket, "endpoint": endpoint_of(location), "detail": detail,
              "base": location.uri.partition("?")[0], "right": detail or "REGION",
              "where": f"in region '{detail}'" if detail else "in another region",
              "given": f"'{given}'" if given else "the default 'us-east-1' (no region is set)"}
    return f"cannot open the store at {location.uri}: " + _LINES.get(kind, "{detail}").format(**fields)


def explain(exc: BaseException, location: StoreLocation) -> StoreRefused | None:
    """The one-line error for an object store's refusal, or None when `exc` shows no known cause."""
    kind, detail = cause_of(str(exc))
    if not kind:
        return None
    return StoreRefused(mask_secrets(refusal(location, kind, detail)))


def not_a_notebook(location: StoreLocation, tables: list[str], note_columns: list[str] | None = None
                   ) -> StoreRefused | None:
    """Why a shared notebook's prefix is not a zk notebook, or None: its `notes` table (with `note_columns`)
    is not zk's, or there is none and the prefix holds other LanceDB tables (a new notebook is never
    created beside them)."""
    if note_columns is not None and not NOTE_COLUMNS <= set(note_columns):
        return StoreRefused(refusal(location, "not-zk", "a LanceDB table 'notes' that zk did not make"))
    others = sorted(set(tables) - OWN_TABLES)
    if "notes" in tables or not others or set(tables) & OWN_TABLES:
        return None
    named = ", ".join(others[:3]) + (f" and {len(others) - 3} more" if len(others) > 3 else "")
    return StoreRefused(refusal(location, "not-zk", f"LanceDB table(s) {named}"))


def lagging(text: str) -> str:
    """The table a failure says is not there ("Not found: PREFIX/notes.lance/_versions": its root or its
    versions, not one of its data files), or "": on a shared store that is a listing that lags a write
    (another machine's, or this one's), transient like a store that cannot be reached, not a damaged table."""
    found = re.search(r"Not found: \S*?\b(" + "|".join(sorted(OWN_TABLES)) + r")\.lance(?:/_versions)?(?![/\w])",
                      text)
    return found.group(1) if found else ""


def lag_reason(table: str) -> str:
    """Why a store counts as not reached when its listing lags (`lagging`): the words in parentheses."""
    return f"its listing does not show the {table} table yet"


def plain(text: str) -> str:
    """A failure with no known cause, for one line: its text up to the first Rust debug structure (which
    holds request URLs and headers), with the S3 error code and HTTP status found in the rest."""
    head = re.split(r" \{ |\(RetryErrorImpl|: Generic", text, maxsplit=1)[0].strip(" :,") or "unknown failure"
    code, status = next(iter(_CODE.findall(text)), ""), next(iter(_STATUS.findall(text)), "")
    found = ", ".join(part for part in (code and f"S3 error {code}", status and f"HTTP {status}") if part)
    return mask_secrets(f"{head} ({found})" if found else head)[:200]
