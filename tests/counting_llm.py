"""The scripted model of tests/fake_llm.py, logging each note it annotates to `$ZK_FAKE_LOG` (one line per
call, appended with O_APPEND so several processes can share the file): the remote-store tests count
how often each note was enriched across machines."""

from __future__ import annotations

import os

from tests.fake_llm import FakeLLM, _after


class CountingFakeLLM(FakeLLM):
    def __init__(self) -> None:
        super().__init__()
        rule = self.annotate

        def annotate(user: str) -> dict:
            path = os.environ.get("ZK_FAKE_LOG")
            if path:
                line = (_after(user, "Note:").strip().splitlines() or [""])[0] + "\n"
                fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
                try:
                    os.write(fd, line.encode("utf-8"))
                finally:
                    os.close(fd)
            return rule(user)

        self.annotate = annotate
