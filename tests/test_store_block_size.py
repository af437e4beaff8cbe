"""The `store_block_size` setting: the bytes Lance reads at least per request from a shared store
(location.BLOCK_SIZE, 256 KiB, by default). It parses human sizes, refuses nonsense in one line, reaches
Lance's reads (counted at the loopback S3 server, tests/s3_server.py), shows in `zk doctor`, and leaves a
local home alone.
"""

from __future__ import annotations

import re
import uuid

import pytest

from tests.harness import FAKE_MODEL
from tests.s3_server import BUCKET


@pytest.mark.parametrize(("value", "size"), [
    (262144, 262144), ("262144", 262144), ("256KiB", 262144), ("256 KiB", 262144), ("1MiB", 1 << 20),
    ("1mb", 1 << 20), ("64k", 65536), ("64KB", 65536), ("4KiB", 4096), ("64MiB", 64 << 20), ("8192B", 8192),
])
def test_a_block_size_is_bytes_or_a_size_with_a_binary_unit(value, size):
    from zettel_amem.core.location import parse_block_size

    assert parse_block_size(value) == size


@pytest.mark.parametrize("value", [0, -4096, "0", "-4KiB", 4095, "1KiB", "65MiB", "1GiB", "lots", "", "1.5MiB",
                                   "256 KiBs", "0x1000", True, 65536.0, None])
def test_a_block_size_out_of_range_or_unreadable_is_refused(value):
    from zettel_amem.core.location import parse_block_size

    with pytest.raises(ValueError, match="from 4KiB to 64MiB"):
        parse_block_size(value)


def test_config_and_environment_set_it_and_the_environment_wins(zk_home, monkeypatch):
    from zettel_amem.core.config import Settings
    from zettel_amem.core.errors import ZkError

    assert Settings.load(zk_home).store_block_size == 256 * 1024  # the default is unchanged
    zk_home.mkdir(parents=True)
    (zk_home / "config.toml").write_text('store_block_size = "1MiB"\n', encoding="utf-8")
    assert Settings.load(zk_home).store_block_size == 1 << 20
    (zk_home / "config.toml").write_text("store_block_size = 65536\n", encoding="utf-8")
    assert Settings.load(zk_home).store_block_size == 65536
    monkeypatch.setenv("ZK_STORE_BLOCK_SIZE", "64k")
    (zk_home / "config.toml").write_text('store_block_size = "2MiB"\n', encoding="utf-8")
    assert Settings.load(zk_home).store_block_size == 65536
    monkeypatch.delenv("ZK_STORE_BLOCK_SIZE")
    (zk_home / "config.toml").write_text('store_block_size = "100GB"\n', encoding="utf-8")
    with pytest.raises(ZkError, match=r"config\.toml: 'store_block_size' must be a size"):
        Settings.load(zk_home)


@pytest.mark.parametrize("value", ["0", "-1", "1KiB", "128MiB", "fast"])
def test_a_bad_value_is_one_line_and_a_failing_exit(zk, zk_home, monkeypatch, value):
    monkeypatch.setenv("ZK_STORE_BLOCK_SIZE", value)
    (zk_home / "lancedb").mkdir(parents=True, exist_ok=True)  # a notebook (a folder without one is refused first)
    code, out, err = zk("list")
    assert code != 0 and out == ""
    assert len(err.strip().splitlines()) == 1 and "ZK_STORE_BLOCK_SIZE" in err and "Traceback" not in err


def test_a_local_home_passes_no_storage_options(zk_home, monkeypatch):
    from zettel_amem.core.config import Settings
    from zettel_amem.core.location import resolve

    monkeypatch.setenv("ZK_STORE_BLOCK_SIZE", "1MiB")
    settings = Settings.load(zk_home)
    where = resolve(zk_home, str(zk_home), settings.store, block_size=settings.store_block_size)
    assert not where.remote and where.options == {}
    assert resolve(zk_home, None, "s3://b/p", block_size=settings.store_block_size).options["block_size"] == "1048576"


def _ranges(log: list[tuple[str, str, str, str]]) -> dict[str, str]:
    """The Range header of the first GET of each data file (`notes.lance/data/*.lance`), by path."""
    first: dict[str, str] = {}
    for method, path, _, byte_range in log:
        if method == "GET" and "/data/" in path and path.endswith(".lance"):
            first.setdefault(path, byte_range)
    return first


def _show(s3, zk, note_id: str) -> tuple[int, dict[str, str]]:
    """(requests, first read of each data file) of one `zk show`."""
    s3.take_counts()
    s3.log = []
    try:
        assert zk("show", note_id[:8], "--json", check=True).json()["id"] == note_id
        return s3.take_counts()["total"], _ranges(s3.log)
    finally:
        s3.log = None


def test_the_block_size_reaches_lance_and_doctor(zk, s3, zk_home, monkeypatch):
    """The same `zk show` on a small shared notebook: with 4 KiB blocks (config.toml) Lance opens each
    data file (~8 KB) by reading its last 4096 bytes and needs more reads; with 1 MiB (ZK_STORE_BLOCK_SIZE,
    which wins) it reads each file whole in one. On main both ran at 256 KiB: the same requests."""
    for key, value in s3.env().items():
        monkeypatch.setenv(key, value)
    monkeypatch.setenv("ZK_HOME", f"s3://{BUCKET}/block-size-{uuid.uuid4().hex[:6]}")
    monkeypatch.setenv("ZK_LOCAL_DIR", str(zk_home))
    monkeypatch.setenv("ZK_LLM_MODEL", FAKE_MODEL)
    ids = [zk("add", f"note {i}: ran {i} km along the river, knee fine", "--json", check=True).json()["id"]
           for i in range(4)]
    (zk_home / "config.toml").write_text('store_block_size = "4KiB"\n', encoding="utf-8")
    small, small_first = _show(s3, zk, ids[1])
    monkeypatch.setenv("ZK_STORE_BLOCK_SIZE", "1MiB")
    large, large_first = _show(s3, zk, ids[1])
    assert small_first and set(small_first) == set(large_first)
    for path, byte_range in small_first.items():
        match = re.fullmatch(r"bytes=(\d+)-(\d+)", byte_range)
        assert match, (path, byte_range)  # a ranged read, not the whole file
        start, end = map(int, match.groups())
        assert end - start + 1 == 4096, (path, byte_range)  # the file's last block, 4 KiB long
    assert all(byte_range == "" for byte_range in large_first.values()), large_first  # each file whole
    assert small > large, (small, large)  # measured when written: 32 and 16

    line = next(c for c in zk("doctor", "--json").json()["checks"] if c["check"] == "store block size")
    assert line["ok"] and line["message"].startswith("1 MiB (1048576 bytes)") and "store_block_size" in line["message"]
    monkeypatch.delenv("ZK_STORE_BLOCK_SIZE")
    assert "4 KiB (4096 bytes)" in zk("doctor").stdout


def test_doctor_on_a_local_home_has_no_block_size_line(zk, zk_home):
    zk("add", "a local note", check=True)
    checks = {c["check"] for c in zk("doctor", "--json").json()["checks"]}
    assert "store block size" not in checks and "remote store" not in checks
