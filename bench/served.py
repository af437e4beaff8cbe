"""What one command costs inside the resident server: `cli.main()` in a warm process with one LanceDB session,
as `cli/server.py` runs each command it is handed (#54, #59), without the socket round trip.

    flock /tmp/zk-cpu.lock python -m bench.served HOME [--command list --limit 20] [--runs 15] [--profile]

Three warm-up runs, then `--runs` timed ones; prints the median and the fastest in milliseconds (and, with
`--profile`, where ten more runs spent their time). docs/benchmarks.md (Scale) reports `zk list --limit 20` on the
stores `bench/scale.py --keep` builds, before and after #59's index on `at`.
"""

from __future__ import annotations

import argparse
import contextlib
import io
import os
import statistics
import sys
import time


def run_once(argv: list[str]) -> None:
    from zettel_amem import cli

    sys.argv = ["zk", *argv]
    with contextlib.redirect_stdout(io.StringIO()):
        try:
            cli.main()
        except SystemExit:
            pass


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("home", help="the zk home (a store bench.scale --keep built)")
    parser.add_argument("--runs", type=int, default=15)
    parser.add_argument("--profile", action="store_true", help="print where ten more runs spent their time")
    parser.add_argument("command", nargs=argparse.REMAINDER, help="the command (default: list --limit 20)")
    args = parser.parse_args()
    os.environ.update(ZK_HOME=args.home, ZK_NO_WORKER="1", ZK_NO_SERVER="1")
    from zettel_amem.storage import database

    database.SHARED_SESSION = database.import_lancedb().Session()  # what the server keeps between commands
    argv = args.command or ["list", "--limit", "20"]
    for _ in range(3):
        run_once(argv)
    times = []
    for _ in range(args.runs):
        start = time.perf_counter()
        run_once(argv)
        times.append((time.perf_counter() - start) * 1000)
    print(f"{args.home} {' '.join(argv)}: median {statistics.median(times):.1f} ms, fastest {min(times):.1f} ms")
    if args.profile:
        import cProfile
        import pstats

        profile = cProfile.Profile()
        profile.enable()
        for _ in range(10):
            run_once(argv)
        profile.disable()
        pstats.Stats(profile).sort_stats("tottime").print_stats(30)


if __name__ == "__main__":
    main()
