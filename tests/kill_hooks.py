"""Run `zk` and SIGKILL it at a chosen point: `python -m tests.kill_hooks ARGS...` with
`ZK_KILL_AT=POINT:N` dies the N-th time the process reaches POINT. The library has no test hooks;
these wrap its store writes and the scripted model's calls from outside.

Points: `llm-before` / `llm-after` (a model call), and `add-` / `update-` + `before` / `during` /
`after` (a store commit: `Store.add` writes new notes, `Store.update` writes construction results
and whole evolutions). `during` starts a timer that fires a few milliseconds into the commit
(`ZK_KILL_SEED` picks the delay), so it lands inside LanceDB's write or just after it.
"""

from __future__ import annotations

import os
import random
import signal
import sys
import threading

POINTS = ("llm-before", "llm-after", "add-before", "add-during", "add-after",
          "update-before", "update-during", "update-after")


def _die() -> None:
    os.kill(os.getpid(), signal.SIGKILL)


def install(spec: str) -> None:
    point, _, nth = spec.partition(":")
    if point not in POINTS:
        raise SystemExit(f"unknown kill point {point}")
    target, seen = int(nth or 1), {"n": 0}
    delay = random.Random(os.environ.get("ZK_KILL_SEED", "0")).uniform(0.0, 0.03)

    def reached(name: str) -> None:
        if name == point:
            seen["n"] += 1
            if seen["n"] == target:
                _die()

    from tests.fake_llm import FakeLLM
    from zettel_amem.storage.store import Store

    call = FakeLLM.complete_json

    def complete_json(self, *args, **kwargs):
        reached("llm-before")
        result = call(self, *args, **kwargs)
        reached("llm-after")
        return result

    FakeLLM.complete_json = complete_json

    def commit(kind: str, method):
        def wrapped(self, *args, **kwargs):
            write = Store.guarded_write

            def guarded_write(store, action):  # inside the write lock, around the LanceDB commit itself
                reached(f"{kind}-before")
                if point == f"{kind}-during":
                    seen["n"] += 1
                    if seen["n"] == target:
                        threading.Timer(delay, _die).start()  # not a daemon: it fires even at exit
                write(store, action)
                reached(f"{kind}-after")

            Store.guarded_write = guarded_write
            try:
                return method(self, *args, **kwargs)
            finally:
                Store.guarded_write = write
        return wrapped

    Store.add = commit("add", Store.add)
    Store.update = commit("update", Store.update)


def main() -> None:
    if os.environ.get("ZK_KILL_AT"):
        install(os.environ["ZK_KILL_AT"])
    from zettel_amem.cli import main as zk_main

    sys.argv = ["zk", *sys.argv[1:]]
    zk_main()


if __name__ == "__main__":
    main()
