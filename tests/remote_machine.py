"""One simulated machine on a shared notebook (tests/test_remote_machines.py, bench/remote.py): run as
`python -m tests.remote_machine --label A --adds 200 --import chat.jsonl --done done.txt`, with
`ZK_HOME=s3://...` and this machine's own `ZK_LOCAL_DIR`.

Each add is a fresh `Memory` (as each `zk add` is a fresh process: the store is opened, the note
embedded and committed, or kept in the outbox); after it returns, its id and text are appended to the
`--done` file and fsynced: that line means "the user saw `zk add` succeed". Then the import (`zk import
FILE --no-llm`), then `zk process` (this machine's worker: it waits for the shared lease, so two
machines never enrich one note twice). `--start N` resumes after N completed adds (a restarted writer).
"""

from __future__ import annotations

import argparse
import os
import sys


def _cli(*args: str) -> int:
    from zettel_amem import cli

    sys.argv = ["zk", *args]
    try:
        cli.main()
    except SystemExit as exc:
        return int(exc.code or 0)
    return 0


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--label", required=True)
    parser.add_argument("--adds", type=int, default=0)
    parser.add_argument("--start", type=int, default=0)
    parser.add_argument("--import", dest="source", default=None)
    parser.add_argument("--done", required=True)
    parser.add_argument("--process", action="store_true")
    args = parser.parse_args()

    from zettel_amem.core.errors import ZkError
    from zettel_amem.memory import Memory

    for i in range(args.start, args.adds):
        text = f"{args.label} note {i}: 오늘 {i % 7}km 달렸다, knee fine"
        try:
            note = Memory().add(text)
        except ZkError as exc:  # as `zk add` says it: one line, no traceback
            sys.stderr.write(f"machine {args.label}, add {i}: zk: error: {exc}\n")
            sys.exit(2)
        fd = os.open(args.done, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
        try:
            os.write(fd, f"{note.id}\t{note.status}\t{text}\n".encode())
            os.fsync(fd)
        finally:
            os.close(fd)
    if args.source and _cli("import", args.source, "--no-llm", "--quiet", "--json") != 0:
        sys.exit(3)
    if args.process and _cli("process", "--quiet") != 0:
        sys.exit(4)


if __name__ == "__main__":
    main()
