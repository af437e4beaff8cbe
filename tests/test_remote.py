"""A notebook on S3-compatible object storage (`zk --home s3://bucket/prefix`), against a real S3 server
on 127.0.0.1 (moto's ThreadedMotoServer, tests/s3_server.py): the same commands as on a local home, the
offline outbox, `zk doctor`'s remote check, and the lease that keeps the model's work on one machine.

Two machines are two local folders (`ZK_LOCAL_DIR`) on one bucket; the multi-process tests are in
tests/test_remote_machines.py.
"""

from __future__ import annotations

import json
import os
import sys
import uuid

import pytest

from tests.harness import FAKE_MODEL
from tests.s3_server import BUCKET, LoopbackS3


def _use(server: LoopbackS3, monkeypatch, local, prefix: str) -> str:
    uri = f"s3://{BUCKET}/{prefix}-{uuid.uuid4().hex[:8]}"
    for key, value in server.env().items():
        monkeypatch.setenv(key, value)
    monkeypatch.setenv("ZK_HOME", uri)
    monkeypatch.setenv("ZK_LOCAL_DIR", str(local))
    return uri


@pytest.fixture
def shared(s3, zk_home, monkeypatch, request) -> str:
    """This test's notebook: a fresh prefix in the bucket; `zk_home` is this machine's local folder."""
    return _use(s3, monkeypatch, zk_home, request.node.name[:30].replace("_", "-"))


def _prefix(uri: str) -> str:
    return uri.split("/", 3)[3]


def test_commands_work_on_a_shared_store_as_on_a_local_home(zk, shared, s3, zk_home, fake_model, tmp_path,
                                                              monkeypatch):
    first = zk("add", "무릎이 아파서 오늘은 달리기를 쉬었다.", "--json", check=True).json()["id"]
    second = zk("add", "Knee hurts since Saturday's run. #health", "--json", check=True).json()["id"]
    keys = s3.keys(prefix=_prefix(shared))
    assert any("/notes.lance/_versions/" in k for k in keys) and any("/notes.lance/data/" in k for k in keys)
    assert not (zk_home / "lancedb").exists()  # the tables are in the bucket; the local folder holds no copy
    assert {n["id"] for n in zk("list", "--limit", "20", "--json", check=True).json()} == {first, second}
    assert zk("show", first[:8], "--json", check=True).json()["content"].startswith("무릎이")
    hits = zk("search", "무릎", "--json", check=True).json()
    assert hits[0]["id"] == first

    done = zk("process", "--json", check=True).json()  # the worker's work, here in the foreground
    assert {r["id"] for r in done if r.get("kind") != "episode"} == {first, second}
    assert {n["status"] for n in zk("list", "--json", check=True).json()} == {"ready"}
    waited = zk("add", "Iced the knee after the run.", "--wait", "--json", check=True).json()
    assert waited["status"] == "ready" and waited["usage"]["llm_calls"] >= 1  # under the lease, in the foreground
    answer = zk("ask", "what happened with my knee?", "--json", check=True).json()
    assert answer["answer"].startswith("The knee notes say so.") and answer["cited"]

    editor = tmp_path / "editor.py"
    editor.write_text("import sys, pathlib\np = pathlib.Path(sys.argv[1])\n"
                      "p.write_text(p.read_text().replace('Saturday', 'Sunday'))\n", encoding="utf-8")
    monkeypatch.setenv("EDITOR", f"{sys.executable} {editor}")
    monkeypatch.delenv("VISUAL", raising=False)
    assert zk("edit", second[:8], "--json", check=True).json()["version"] == 2
    assert "Sunday" in zk("show", second[:8], "--json", check=True).json()["content"]

    backup = tmp_path / "backup.jsonl"
    zk("export", "-o", str(backup), check=True)
    zk("rm", first[:8], "--yes", check=True)
    assert first not in {n["id"] for n in zk("list", "--json", check=True).json()}
    assert zk("show", first[:8]).exit_code != 0

    _use(s3, monkeypatch, tmp_path / "other-machine", "restored")  # a fresh shared notebook
    report = zk("import", str(backup), "--json", check=True).json()
    assert report["added"] == 3
    restored = {n["id"]: n for n in zk("list", "--json", check=True).json()}
    assert set(restored) == {first, second, waited["id"]} and restored[second]["version"] == 2


def test_import_is_idempotent_on_a_shared_store(zk, shared, fake_model, tmp_path):
    log = tmp_path / "chat.jsonl"
    log.write_text("".join(json.dumps({"speaker": "Mina" if i % 2 else "me", "text": f"turn {i} about Busan"},
                                      ensure_ascii=False) + "\n" for i in range(30)), encoding="utf-8")
    first = zk("import", str(log), "--no-llm", "--json", check=True).json()
    again = zk("import", str(log), "--no-llm", "--json", check=True).json()
    assert first["added"] == 30 and again["added"] == 0
    assert zk("status", "--json", check=True).json()["all_notes"] == 30


def test_offline_add_is_kept_in_the_outbox_and_sent_once(zk, zk_home, embedder, monkeypatch, tmp_path):
    server = LoopbackS3().start()
    server.make_bucket()
    uri = _use(server, monkeypatch, zk_home, "offline")
    try:
        online = zk("add", "written while online", "--json", check=True).json()["id"]
        server.stop()
        code, out, err = zk("add", "오프라인에서 쓴 메모")
        assert code == 0 and len(err.strip().splitlines()) == 1, err
        assert "kept in the local outbox (1 waiting)" in err and "cannot reach the store" in err
        kept = zk("add", "second offline note", "--json", check=True).json()
        assert kept["status"] == "outbox"
        outbox = (zk_home / "outbox.jsonl").read_text(encoding="utf-8").splitlines()
        assert json.loads(outbox[0])["type"] == "zk-export" and len(outbox) == 3  # a zk export file
        assert json.loads(outbox[2])["id"] == kept["id"]
        status = zk("status", "--json", check=True).json()
        assert status["outbox"] == 2 and status["reachable"] is False and status["store"] == uri
        code, _, err = zk("list")  # a read says it cannot reach the store, in one line
        assert code == 1 and len(err.strip().splitlines()) == 1 and "cannot reach the store" in err

        server.start()
        code, out, err = zk("list", "--json")
        assert code == 0 and "sent 2 note(s) kept offline" in err
        notes = {n["id"]: n["content"] for n in json.loads(out)}
        assert len(notes) == 3 and notes[kept["id"]] == "second offline note" and online in notes
        assert not (zk_home / "outbox.jsonl").exists() and zk("status", "--json").json()["outbox"] == 0

        # A send cut off after its commit (the file still there): sent again, nothing doubled.
        (zk_home / "outbox.jsonl").write_text("\n".join(outbox) + "\n", encoding="utf-8")
        code, out, err = zk("list", "--json")
        assert code == 0 and len(json.loads(out)) == 3 and "sent" not in err
        assert not (zk_home / "outbox.jsonl").exists()
    finally:
        server.stop()


def test_doctor_checks_the_remote_store_in_one_line(zk, shared, s3, monkeypatch, zk_home):
    zk("add", "a note", check=True)
    report = zk("doctor", "--json").json()
    line = next(c for c in report["checks"] if c["check"] == "remote store")
    assert line["ok"] and "conditional writes" in line["message"] and "writable" in line["message"]

    plain = LoopbackS3(conditional=False).start()  # a store that ignores If-None-Match
    try:
        plain.make_bucket()
        _use(plain, monkeypatch, zk_home, "no-conditional")
        code, out, _ = zk("doctor", "--json")
        line = next(c for c in json.loads(out)["checks"] if c["check"] == "remote store")
        assert code == 1 and not line["ok"] and "s3+ddb://" in line["message"]
    finally:
        plain.stop()
    code, out, _ = zk("doctor", "--json")  # the same store, now stopped: unreachable
    line = next(c for c in json.loads(out)["checks"] if c["check"] == "remote store")
    assert code == 1 and not line["ok"] and "cannot reach" in line["message"] and "\n" not in line["message"]
    monkeypatch.setenv("ZK_HOME", f"s3://no-such-bucket-{uuid.uuid4().hex[:6]}/x")
    for key, value in s3.env().items():
        monkeypatch.setenv(key, value)
    line = next(c for c in zk("doctor", "--json").json()["checks"] if c["check"] == "remote store")
    assert not line["ok"] and "does not exist at" in line["message"]


def test_the_lease_lets_one_machine_work_and_a_restarted_one_take_over(shared, tmp_path, embedder, monkeypatch):
    from zettel_amem.memory import Memory
    from zettel_amem.storage import lease as lease_module

    def machine(name: str) -> Memory:
        monkeypatch.setenv("ZK_LOCAL_DIR", str(tmp_path / name))
        return Memory(shared, embedder=embedder)

    laptop, desktop = machine("laptop"), machine("desktop")
    assert laptop.store.remote and laptop.home != desktop.home
    laptop.add("first note")
    mine, theirs = lease_module.Lease(laptop.store), lease_module.Lease(desktop.store)
    assert mine.try_acquire() and not theirs.try_acquire()
    assert mine.holder()[0] == mine.me
    mine.release()
    assert theirs.try_acquire() and not mine.try_acquire()
    theirs.release()

    # The laptop's worker died holding the lease (its pid is gone): the laptop takes it back at once,
    # the desktop only after it expires.
    dead = lease_module.Lease(laptop.store)
    dead.me = f"{lease_module.machine_id(laptop.home)}:{2 ** 22 + 7}:laptop"
    assert dead.try_acquire()
    dead.release = lambda: None
    dead._stop.set()
    assert not theirs.try_acquire()
    restarted = lease_module.Lease(Memory(tmp_path / "laptop", embedder=embedder).store)  # its bound folder
    assert restarted.try_acquire()
    restarted.release()


def test_a_machine_waiting_for_the_lease_does_not_take_it_from_a_holder_that_renews(shared, tmp_path, embedder,
                                                                                     monkeypatch):
    """CI, 2026-12-06: a machine polling for the lease wrote a commit each second; the holder's renewal lost
    a commit race to one of them, gave the lease up as lost while still working, and both machines then
    enriched the same notes. Polling now only reads, and a renewal that fails while the row still names
    its holder keeps the lease."""
    from zettel_amem.memory import Memory
    from zettel_amem.runtime.worker import Hold
    from zettel_amem.storage import lease as lease_module

    def machine(name: str) -> Memory:
        monkeypatch.setenv("ZK_LOCAL_DIR", str(tmp_path / name))
        return Memory(shared, embedder=embedder)

    laptop, desktop = machine("laptop"), machine("desktop")
    laptop.add("first note")
    mine, theirs = lease_module.Lease(laptop.store), lease_module.Lease(desktop.store)
    assert mine.try_acquire()  # renewed every 15 s: not during the next lines
    table = mine._table()
    version = table.version
    assert not any(theirs.try_acquire() for _ in range(5))
    table.checkout_latest()
    assert table.version == version  # asking wrote nothing
    mine.release()
    monkeypatch.setattr(lease_module, "RENEW_S", 0.05)
    assert mine.try_acquire()
    real_swap = mine._swap
    monkeypatch.setattr(mine, "_swap", lambda *args: False)  # every renewal loses its commit race
    import time

    time.sleep(0.5)
    assert not mine.lost and Hold(True, mine)  # the row still names it: still held
    # Another machine does hold it now (this one went unrenewed past the expiry): lost, and the Hold says so.
    real_swap(f"target.holder = {lease_module.sql_str(mine.me)}", theirs.me, time.time() + 60)
    time.sleep(0.5)
    assert mine.lost and not Hold(True, mine)
    mine.release()


def test_a_second_machine_with_another_embedder_is_refused(zk, shared, tmp_path, monkeypatch):
    zk("add", "a note", check=True)
    monkeypatch.setenv("ZK_LOCAL_DIR", str(tmp_path / "other"))
    from zettel_amem.core.errors import ZkError
    from zettel_amem.core.location import StoreLocation, storage_options
    from zettel_amem.storage.database import Database
    from zettel_amem.storage.store import Store

    location = StoreLocation(tmp_path / "other", shared, storage_options(shared))
    with pytest.raises(ZkError, match="embedded with 'e5-small'"):
        Store(tmp_path / "other", "minilm", 384, location=location)
    assert isinstance(Store(tmp_path / "other2", "e5-small", 384, location=location), Database)


def test_a_uri_home_keeps_this_machines_state_in_its_local_folder(tmp_path, monkeypatch):
    from zettel_amem.core.config import home_dir
    from zettel_amem.core.location import resolve

    monkeypatch.delenv("ZK_LOCAL_DIR", raising=False)
    monkeypatch.setenv("XDG_DATA_HOME", str(tmp_path / "data"))
    local = home_dir("s3://my-bucket/journal")
    assert str(local).startswith(str(tmp_path / "data")) and "my-bucket-journal" in local.name
    where = resolve(local, "s3://my-bucket/journal")
    assert where.remote and where.uri == "s3://my-bucket/journal"
    assert resolve(local, str(local)).uri == "s3://my-bucket/journal"  # the worker's `--home FOLDER`
    monkeypatch.setenv("AWS_ENDPOINT_URL", "http://127.0.0.1:9000")
    options = resolve(tmp_path / "h", None, "s3://b/p").options
    assert options["endpoint"] == "http://127.0.0.1:9000" and options["allow_http"] == "true"
    assert options["block_size"] == str(256 * 1024)  # Lance's reads: flat request counts (docs/benchmarks.md)
    assert not resolve(tmp_path / "plain", str(tmp_path / "plain")).remote
    assert os.environ.get("ZK_LLM_MODEL", FAKE_MODEL)  # untouched


def test_the_dynamodb_commit_store_works_too(zk, s3, zk_home, monkeypatch):
    """`s3+ddb://` (for a store without conditional writes): commits go through a DynamoDB table (moto's,
    on the same test server)."""
    import boto3

    from tests.s3_server import KEY_ID, REGION, SECRET

    table = f"zk-commits-{uuid.uuid4().hex[:6]}"
    boto3.client("dynamodb", endpoint_url=s3.endpoint, aws_access_key_id=KEY_ID, aws_secret_access_key=SECRET,
                 region_name=REGION).create_table(
        TableName=table, BillingMode="PAY_PER_REQUEST",
        KeySchema=[{"AttributeName": "base_uri", "KeyType": "HASH"}, {"AttributeName": "version", "KeyType": "RANGE"}],
        AttributeDefinitions=[{"AttributeName": "base_uri", "AttributeType": "S"},
                              {"AttributeName": "version", "AttributeType": "N"}])
    _use(s3, monkeypatch, zk_home, "ddb")
    monkeypatch.setenv("ZK_HOME", f"s3+ddb://{BUCKET}/ddb-{uuid.uuid4().hex[:6]}?ddbTableName={table}")
    ids = {zk("add", f"note {i} over DynamoDB", "--json", check=True).json()["id"] for i in range(3)}
    assert {n["id"] for n in zk("list", "--json", check=True).json()} == ids
    items = boto3.client("dynamodb", endpoint_url=s3.endpoint, aws_access_key_id=KEY_ID,
                         aws_secret_access_key=SECRET, region_name=REGION).scan(TableName=table)["Items"]
    assert len(items) >= 4  # the table's creation and each add: one commit record each
    line = next(c for c in zk("doctor", "--json").json()["checks"] if c["check"] == "remote store")
    assert line["ok"] and "DynamoDB" in line["message"]


def _transactions(s3: LoopbackS3, uri: str, table: str) -> list[str]:
    """The operation of each commit of a shared table, newest first (pylance reads the store directly)."""
    import lance

    from tests.s3_server import KEY_ID, REGION, SECRET

    options = {"endpoint": s3.endpoint, "allow_http": "true", "region": REGION, "aws_access_key_id": KEY_ID,
               "aws_secret_access_key": SECRET}
    dataset = lance.dataset(f"{uri}/{table}.lance", storage_options=options)
    return [type(t.operation).__name__ for t in dataset.get_transactions(100) if t is not None]


def test_a_machine_that_found_no_notebook_never_creates_one_over_another_machines(s3, tmp_path):
    """Machine B finds no table (its listings left just before machine A created the notebook and added
    a note; the server answers them as of then) and creates it. LanceDB's `create_table` re-ran B's
    lost creation as an Overwrite at the next version: an empty table over A's note, and A's next append
    "incompatible with concurrent transaction Overwrite" (the CI failure of #30). B now opens A's table."""
    import subprocess

    from tests.harness import zk_command, zk_env

    uri = f"s3://{BUCKET}/create-race-{uuid.uuid4().hex[:8]}"
    envs = {label: zk_env(None, **s3.env(), ZK_HOME=uri, ZK_LOCAL_DIR=str(tmp_path / label),
                          ZK_LLM_MODEL=FAKE_MODEL) for label in "AB"}

    def add(label: str) -> subprocess.CompletedProcess:
        return subprocess.run(zk_command("add", f"machine {label}: 새 노트북의 노트", "--json"), env=envs[label],
                              capture_output=True, text=True, timeout=300)

    assert add("A").returncode == 0
    s3.hide_listings(f"{_prefix(uri)}/notes.lance/_versions/", 2)  # B's open and create_table's check
    done = add("B")
    assert done.returncode == 0, done.stderr
    assert s3._hidden[1] == 0  # B did look twice and saw no table
    assert _transactions(s3, uri, "notes").count("Overwrite") == 1  # the creation, once
    assert add("A").returncode == 0
    listed = subprocess.run(zk_command("list", "--json"), env=envs["A"], capture_output=True, text=True, timeout=300)
    assert sorted(n["content"] for n in json.loads(listed.stdout)) == [
        "machine A: 새 노트북의 노트", "machine A: 새 노트북의 노트", "machine B: 새 노트북의 노트"]


def test_the_loopback_wan_holds_each_request_and_shares_one_link(s3):
    """bench/remote.py's WAN: parallel requests wait one round trip together, not one each, and the
    bytes of parallel reads pass one link after another."""
    from concurrent.futures import ThreadPoolExecutor
    from time import perf_counter

    client = s3.client()
    client.put_object(Bucket=BUCKET, Key="wan/blob", Body=b"x" * 400_000)

    def timed(wan: tuple[float, float], reads: int) -> float:
        s3.delay_s, s3.link_bytes_per_s = wan
        start = perf_counter()
        try:
            with ThreadPoolExecutor(reads) as pool:
                list(pool.map(lambda _: client.get_object(Bucket=BUCKET, Key="wan/blob")["Body"].read(), range(reads)))
        finally:
            s3.delay_s, s3.link_bytes_per_s = 0.0, 0.0
        return perf_counter() - start

    assert 0.3 <= timed((0.3, 0.0), 4) < 0.9  # four reads in parallel: one round trip, not four (1.2 s)
    assert timed((0.0, 2_000_000), 4) >= 0.75  # 1.6 MB over a 2 MB/s link: 0.8 s, whatever the parallelism
    assert timed((0.0, 0.0), 4) < 0.5
