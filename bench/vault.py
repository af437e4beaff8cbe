"""The vault at scale (issue #27): a notebook of N notes (default 10,000, Korean and English) written as a
Markdown vault, written again with nothing changed, synced with nothing changed, then synced after
editing 100 pages, each through the real CLI (`zk export --format markdown`, `zk sync`) in a subprocess,
timed from start to exit.

    python -m bench.vault                 # 10,000 notes
    python -m bench.vault --notes 2000 --edits 50

A no-change run must write nothing: every file's (inode, size, mtime_ns) is taken before and after and
compared, the marker included, and the command's own count of files written is reported too. The home is
built through the library (one embedding batch and one commit per 256 notes; not timed).
"""

from __future__ import annotations

import argparse
import json
import os
import random
import sys
import tempfile
import time
from pathlib import Path

WORDS_EN = ["run", "knee", "coffee", "meeting", "Busan", "train", "book", "release", "bug", "garden", "rain",
            "Mina", "Jun", "dinner", "plan", "beta", "deploy", "swim", "walk", "doctor"]
WORDS_KO = ["달리기", "무릎", "커피", "회의", "부산", "기차", "책", "배포", "버그", "정원", "비", "지수", "저녁",
            "계획", "수영", "산책", "병원", "온비서", "가족", "여행"]


def _text(rng: random.Random, i: int) -> str:
    words = WORDS_KO if i % 2 else WORDS_EN
    body = " ".join(rng.choice(words) for _ in range(rng.randint(6, 30)))
    return f"{body} #{rng.choice(words)} ({i})"


def build_home(home: Path, count: int) -> None:
    from zettel_amem.core.models import journal_period, session_id_for
    from zettel_amem.memory import Memory

    memory = Memory(home)
    rng = random.Random(27)
    batch = []
    for i in range(count):
        day = 1 + i * 300 // count
        note = memory.new_note(_text(rng, i), f"2026-{1 + day // 31:02d}-{1 + day % 28:02d}T{8 + i % 12:02d}:00")
        period = journal_period(note.at, memory.settings.journal_session)
        note.session_id, note.source = session_id_for(memory.notebook, period.key), period.title
        note.status = "ready"  # as after the model's work: the bench measures the vault, not the queue
        batch.append(note)
        if len(batch) == 256 or i == count - 1:
            memory.add_notes(batch)
            batch = []


def snapshot(folder: Path) -> dict[str, tuple[int, int, int]]:
    """Every file under the folder (hidden ones too): (inode, size, mtime_ns)."""
    out = {}
    for dirpath, _, files in os.walk(folder):
        for name in files:
            info = os.lstat(Path(dirpath, name))
            out[str(Path(dirpath, name).relative_to(folder))] = (info.st_ino, info.st_size, info.st_mtime_ns)
    return out


def zk(home: Path, *args: str) -> tuple[float, dict]:
    env = {**os.environ, "ZK_HOME": str(home), "ZK_NO_WORKER": "1",
           "PYTHONPATH": os.pathsep.join(filter(None, [str(Path(__file__).resolve().parents[1]),
                                                      os.environ.get("PYTHONPATH")]))}
    start = time.perf_counter()
    import subprocess

    done = subprocess.run([sys.executable, "-m", "zettel_amem", *args, "--json"], env=env, capture_output=True,
                          text=True, timeout=3600)
    seconds = time.perf_counter() - start
    if done.returncode != 0:
        raise SystemExit(f"zk {' '.join(args)} failed ({done.returncode}): {done.stderr[-2000:]}")
    return seconds, json.loads(done.stdout)


def _unchanged(before: dict, after: dict) -> dict:
    changed = sorted(p for p in set(before) | set(after) if before.get(p) != after.get(p))
    return {"files": len(after), "files_changed_on_disk": len(changed), "examples": changed[:5]}


def run(count: int, edits: int, workdir: Path) -> dict:
    home, vault = workdir / "home", workdir / "vault"
    start = time.perf_counter()
    build_home(home, count)
    report: dict = {"notes": count, "build_home_seconds": round(time.perf_counter() - start, 1)}
    seconds, out = zk(home, "export", "--format", "markdown", str(vault))
    report["export"] = {"seconds": round(seconds, 2), "written": out["written"]}
    before = snapshot(vault)
    seconds, out = zk(home, "export", "--format", "markdown", str(vault))
    report["re_export_no_change"] = {"seconds": round(seconds, 2), "written": out["written"],
                                     **_unchanged(before, snapshot(vault))}
    seconds, out = zk(home, "sync", str(vault))
    report["sync_no_change"] = {"seconds": round(seconds, 2), "written": out["written"]["written"],
                                "edited": out["read"]["edited"], **_unchanged(before, snapshot(vault))}
    pages = sorted((vault / "notes").glob("*.md"))
    for page in random.Random(1).sample(pages, edits):
        text = page.read_text(encoding="utf-8")
        page.write_text(text.replace("\n\n<!-- zk:links -->", " 고침 edited in Obsidian\n\n<!-- zk:links -->", 1),
                        encoding="utf-8")
    seconds, out = zk(home, "sync", str(vault))
    report[f"sync_{edits}_edited"] = {"seconds": round(seconds, 2), "edited": out["read"]["edited"],
                                      "conflicts": out["read"]["conflicts"], "written": out["written"]["written"],
                                      "kept": len(out["written"]["kept"])}
    before = snapshot(vault)
    seconds, out = zk(home, "sync", str(vault))
    report["sync_no_change_after"] = {"seconds": round(seconds, 2), "written": out["written"]["written"],
                                      "edited": out["read"]["edited"], **_unchanged(before, snapshot(vault))}
    return report


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description="zk vault export / sync at scale")
    parser.add_argument("--notes", type=int, default=10_000)
    parser.add_argument("--edits", type=int, default=100)
    parser.add_argument("--out", type=Path, default=Path("results"))
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory(prefix="zk-bench-vault-") as tmp:
        report = run(args.notes, args.edits, Path(tmp))
    report["cpus"] = os.cpu_count()
    args.out.mkdir(parents=True, exist_ok=True)
    (args.out / "vault.json").write_text(json.dumps(report, indent=1) + "\n", encoding="utf-8")
    print(json.dumps(report, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
