"""Scale benchmark (issue #15): what each command costs as the store grows from 1k to 100k (or 1M) notes.

    python -m bench.scale                                   # 1k, 10k, 100k; LoCoMo inside the 100k store
    python -m bench.scale --sizes 1000 --locomo ''          # one small store, no LoCoMo
    python -m bench.scale --sizes 100000 --adds 1000 --keep # plus 1,000 `zk add`s into the 100k store

How the stores are built (quickly, through the library, with real text):
- Every turn of the LoCoMo dev conversations (../shared/data/locomo-dev.json) is split into sentences, and
  each distinct sentence is embedded once with the bundled embedder (cached in
  `--out`/cache/sentences-<embedder>.npz, so reruns skip it).
- A filler note is 1-3 random sentences (seeded RNG) joined by spaces, made by `Memory.new_note` (the
  library's ids, content hashes and #tags) and written with `Store.add` in batches of 5,000. Filler
  vectors are the normalised mean of their sentences' real embeddings: no note is embedded as a whole,
  and a turn's speaker is not in its vector.
- Metadata as a real store has it: times spread over two years in order; ~70% chat turns in sessions of
  10-30 consecutive turns (`kind="turn"`, `session_id`, `seq`, two speakers per session); ~30% plain
  notes without a session; ~4% with #tags in the text (so `user_tags`); ~5% with 1-3 links to earlier
  notes (so backlinks exist); every note `ready` (as after the worker).
- Then `Store.maintain(force=True)` when the store has it (compaction and indexes, what the worker does
  when idle), else `Store.compact()`; its seconds are reported apart from the build's.

What is measured per size, each cold command in its own process (`--home`, `ZK_NO_WORKER=1`, the
shipped settings), 3 runs, median wall time and peak RSS (`os.wait4` in a small timer process):
`zk search`, `zk ask`'s retrieval (`zk ask` has no retrieval-only flag: a process that runs what
`zk ask` runs before the model, `Tiers.context.memory_block` + `Memory.ask` without reading the answer,
which is where the model would load), `zk list --limit 20`, `zk show ID`, `zk links ID`, `zk status`,
`zk context`, and last `zk add` (it writes). Also: warm `Memory.search` p50/p95 over 150 LoCoMo questions
after one warm-up (in a fresh process); disk per note; recall@10 of `Store.nearest` on `raw_vector`
against an exact numpy search over every stored vector (100 questions; a hit counts when its exact
similarity reaches the exact 10th best, so duplicate texts do not count as misses).

LoCoMo inside the big store (`--locomo`): for each conversation a filler store of the largest size
(≤ 100k) is built from the OTHER conversations' sentences only (no sentence of the conversation itself),
then the conversation is imported into it by `bench.locomo.ingest_conversation` (the `zk import` path,
no LLM), and R@10 of `hybrid` and `hybrid-window` is scored with bench.locomo's own retrieval; the same
conversation in its own small store (bench.locomo's cached raw store) is scored alongside.

`--adds N`: N sequential `zk add` processes into a copy of that store; cold `zk search` and warm search
before, after the adds, and after maintenance, with their ratios.

Results merge into `--out`/scale.json (one entry per size, stamped), with scale.md and scale.png. Absolute
seconds mean something only when the machine runs nothing else; the load average is recorded per size.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from datetime import datetime, timedelta
from pathlib import Path

from bench.locomo import DEFAULT_DATA

HONEST = "filler vectors are the normalised mean of their sentences' real embeddings"
BATCH = 5000
WARM_QUERIES = 150  # distinct questions for warm p50/p95 (a p95 over 50 moved ±5 ms between runs)
SEED = 15
SPEAKERS = ("Alex", "Sam", "Robin", "Noa", "Kai", "Jun")  # names no LoCoMo dev conversation uses
TAGS = ("#work", "#family", "#health", "#travel", "#books", "#music", "#idea", "#todo")
START = datetime(2024, 1, 1, 8, 0, 0)
SPAN_DAYS = 730
SOURCE = "scale-bench"
RUNS = 3
TIMEOUT_S = 900
DRIFT = {"cold_search": ("cold_search", "wall_s"), "warm_p50": ("warm", "p50_ms"), "warm_p95": ("warm", "p95_ms")}
COLD = ["search", "ask-retrieval", "list", "show", "links", "status", "context", "add"]


def log(message: str) -> None:
    print(message, file=sys.stderr, flush=True)


# -- sentences and their embeddings ----------------------------------------------------------------
@dataclass
class SentencePool:
    sentences: list[str]
    vectors: object  # numpy (len, dim), normalised rows

    def __len__(self) -> int:
        return len(self.sentences)

    def without(self, banned: set[str]) -> SentencePool:
        keep = [i for i, s in enumerate(self.sentences) if s not in banned]
        return SentencePool([self.sentences[i] for i in keep], self.vectors[keep])


_SPLIT = re.compile(r"(?<=[.!?])\s+")


def split_sentences(text: str) -> list[str]:
    return [" ".join(s.split()) for s in _SPLIT.split(text) if any(ch.isalnum() for ch in s)]


def conversation_sentences(sample: dict) -> list[str]:
    """Distinct sentences of every turn of one LoCoMo conversation, in order."""
    out: dict[str, None] = {}
    for key, turns in sample["conversation"].items():
        if key.startswith("session_") and not key.endswith("date_time"):
            for turn in turns:
                out.update(dict.fromkeys(split_sentences(turn.get("text", ""))))
    return list(out)


def embed_sentences(sentences: list[str], embedder, cache: Path | None) -> SentencePool:
    """Each distinct sentence embedded once; vectors kept in `cache` (an .npz) across runs."""
    import numpy as np

    known: dict[str, np.ndarray] = {}
    if cache is not None and cache.exists():
        data = np.load(cache)
        known = dict(zip(data["sentences"].tolist(), data["vectors"]))
    missing = [s for s in dict.fromkeys(sentences) if s not in known]
    if missing:
        log(f"embedding {len(missing)} sentences ({len(known)} cached)")
        for start in range(0, len(missing), 256):
            chunk = missing[start:start + 256]
            known.update(zip(chunk, embedder.embed_passages(chunk)))
        if cache is not None:
            cache.parent.mkdir(parents=True, exist_ok=True)
            names = list(known)
            np.savez(cache, sentences=np.array(names), vectors=np.stack([known[s] for s in names]))
    ordered = list(dict.fromkeys(sentences))
    return SentencePool(ordered, np.stack([known[s] for s in ordered]).astype(np.float32))


# -- building a store ------------------------------------------------------------------------------
def unit(vector):
    import numpy as np

    return vector / max(float(np.linalg.norm(vector)), 1e-12)


def filler_note(memory, pool: SentencePool, rng, at: str, earlier: list[str], **fields):
    """One note of 1-3 pool sentences; its vector is the normalised mean of their embeddings."""
    from zettel_amem.core.models import READY

    picks = rng.choice(len(pool), size=min(len(pool), int(rng.integers(1, 4))), replace=False)
    content = " ".join(pool.sentences[i] for i in picks)
    if rng.random() < 0.04:
        content += " " + " ".join(rng.choice(TAGS, size=int(rng.integers(1, 3)), replace=False))
    note = memory.new_note(content, at, **fields)  # the library's id, content hash and #tags
    note.status = READY
    if earlier and rng.random() < 0.05:
        targets = rng.integers(0, len(earlier), size=int(rng.integers(1, 4)))
        note.links = list(dict.fromkeys(earlier[int(t)] for t in targets))
    note.vector = note.raw_vector = unit(pool.vectors[picks].mean(axis=0)).tolist()
    return note


def entry_note(memory, pool: SentencePool, rng, at: str):
    """One page-long journal entry (`--entries`): 6-12 pool sentences, cut into passages as `zk add` cuts
    them; each passage's vector is the normalised mean of its sentences' embeddings, the entry's of all."""
    from zettel_amem.core.models import READY
    from zettel_amem.core.passages import make_passages

    picks = rng.choice(len(pool), size=min(len(pool), int(rng.integers(6, 13))), replace=False)
    content = " ".join(pool.sentences[i] for i in picks)
    note = memory.new_note(content, at, source=SOURCE)
    note.status = READY
    whole = unit(pool.vectors[picks].mean(axis=0))
    note.vector = note.raw_vector = whole.tolist()
    note.passages = make_passages(content, at)
    for passage in note.passages:
        inside = [i for i in picks if pool.sentences[i] in passage.text]
        passage.vector = (unit(pool.vectors[inside].mean(axis=0)) if inside else whole).tolist()
    return note


def filler_notes(memory, n: int, pool: SentencePool, rng, entries: bool = False):
    """`n` filler notes in time order: sessions of 10-30 turns, and ~30% plain notes between them; with
    `entries`, page-long journal entries only."""
    from zettel_amem.core.models import session_id_for

    step = SPAN_DAYS * 86400 / max(n, 1)
    earlier: list[str] = []
    plain = sessions = 0

    def at() -> str:
        return (START + timedelta(seconds=int(len(earlier) * step))).isoformat()

    while len(earlier) < n:
        if entries:
            note = entry_note(memory, pool, rng, at())
            earlier.append(note.id)
            yield note
            continue
        if plain < 0.3 * len(earlier):
            note = filler_note(memory, pool, rng, at(), earlier, source=SOURCE)
            plain += 1
            earlier.append(note.id)
            yield note
            continue
        sessions += 1
        session = session_id_for(memory.notebook, f"{SOURCE}/{sessions}")
        pair = rng.choice(SPEAKERS, size=2, replace=False)
        for seq in range(min(int(rng.integers(10, 31)), n - len(earlier))):
            note = filler_note(memory, pool, rng, at(), earlier, kind="turn", session_id=session, seq=seq,
                               speaker=str(pair[seq % 2]), source=SOURCE)
            earlier.append(note.id)
            yield note


def maintain(memory) -> str:
    """What the worker does when idle: `Store.maintain(force=True)` where it exists, else compaction."""
    method = getattr(memory.store, "maintain", None)
    if method is not None:
        method(force=True)
        return "maintain"
    memory.store.compact()
    return "compact"


def build_store(home: Path, n: int, pool: SentencePool, embedder, seed: int = SEED, entries: bool = False) -> dict:
    """A fresh store of `n` filler notes at `home`; returns how it was built (build.json beside it)."""
    import numpy as np

    from zettel_amem.memory import Memory

    rng = np.random.default_rng(seed)
    memory = Memory(home, embedder=embedder)
    memory.settings.auto_worker = False
    start = time.perf_counter()
    batch, probe = [], None
    for note in filler_notes(memory, n, pool, rng, entries):
        batch.append(note)
        if probe is None and note.links:
            probe = note.links[0]  # a note that has a backlink: `zk show`/`zk links` show both ways
        if len(batch) == BATCH:
            memory.store.add(batch)
            batch = []
    if batch:
        memory.store.add(batch)
    build_seconds = time.perf_counter() - start
    start = time.perf_counter()
    how = maintain(memory)
    info = {"notes": n, "seed": seed, "sentences": len(pool), "entries": entries, "build_s": round(build_seconds, 1),
            "maintain": how, "maintain_s": round(time.perf_counter() - start, 1),
            "probe_id": probe or next(iter(memory.store.ids_starting("", memory.notebook, 1)))["id"],
            "how": HONEST}
    (home.parent / "build.json").write_text(json.dumps(info, indent=1), encoding="utf-8")
    return info


def disk_bytes(path: Path) -> int:
    """Bytes on disk under `path`, like `du`."""
    return sum(f.stat().st_blocks * 512 for f in path.rglob("*") if f.is_file())


# -- measuring a process ---------------------------------------------------------------------------
# Runs the command given after the result file, then writes "<wall seconds> <peak RSS KiB>" of it alone.
TIMER = """import os, subprocess, sys, time
start = time.perf_counter()
child = subprocess.Popen(sys.argv[2:])
_, status, usage = os.wait4(child.pid, 0)
child.returncode = os.waitstatus_to_exitcode(status)
open(sys.argv[1], "w").write(f"{time.perf_counter() - start} {usage.ru_maxrss}")
sys.exit(child.returncode)
"""


def run_measured(argv: list[str], env: dict | None = None, timeout: float = TIMEOUT_S) -> dict:
    """Run a process: its wall seconds, peak RSS in MB, exit code and output.

    Through a small timer process (TIMER), not `os.wait4` from here: a child forked from this process
    (which holds the embedder) would report this process's RSS as its own peak."""
    with tempfile.TemporaryDirectory() as tmp:
        out, err, result = Path(tmp) / "out", Path(tmp) / "err", Path(tmp) / "result"
        with out.open("wb") as stdout, err.open("wb") as stderr:
            proc = subprocess.Popen([sys.executable, "-c", TIMER, str(result), *argv], stdout=stdout, stderr=stderr,
                                    stdin=subprocess.DEVNULL, env=env, start_new_session=True)
            try:
                code = proc.wait(timeout)
            except subprocess.TimeoutExpired:  # the command too, not only the timer
                os.killpg(proc.pid, signal.SIGKILL)
                code = proc.wait()
        wall, peak = (float(x) for x in result.read_text().split()) if result.exists() else (float(timeout), 0.0)
        return {"wall_s": round(wall, 3), "rss_mb": round(peak / 1024, 1), "rc": code,
                "stdout": out.read_text(errors="replace"), "stderr": err.read_text(errors="replace")}


def zk_env() -> dict:
    return {**os.environ, "ZK_NO_WORKER": "1"}


def command_argv(name: str, home: Path, query: str, probe_id: str, text: str) -> list[str]:
    """The command line of one measured command (`ask-retrieval`: this module's `--probe ask`)."""
    if name == "ask-retrieval":
        return [sys.executable, "-m", "bench.scale", "--probe", "ask", "--home", str(home), "--query", query]
    args = {"search": ["search", query], "add": ["add", text], "list": ["list", "--limit", "20"],
            "show": ["show", probe_id[:8]], "links": ["links", probe_id[:8]], "status": ["status"],
            "context": ["context", query]}[name]
    return [sys.executable, "-m", "zettel_amem", "--home", str(home), *args]


def measure_command(name: str, home: Path, query: str, probe_id: str, runs: int = RUNS,
                    text: str = "A note written during the scale benchmark.") -> dict:
    """Median wall time and peak RSS of `runs` cold runs of one command."""
    results = []
    for i in range(runs):
        result = run_measured(command_argv(name, home, query, probe_id, f"{text} ({i + 1})"), zk_env())
        if result["rc"] != 0:
            return {"error": f"exit {result['rc']}: {result['stderr'].strip()[-300:]}"}
        results.append(result)
    return {"wall_s": statistics.median(r["wall_s"] for r in results),
            "rss_mb": statistics.median(r["rss_mb"] for r in results),
            "runs": [r["wall_s"] for r in results]}


def run_probe(kind: str, home: Path, query: str = "", queries: Path | None = None) -> dict:
    """A fresh process that measures in itself (`--probe`), its JSON read back."""
    argv = [sys.executable, "-m", "bench.scale", "--probe", kind, "--home", str(home), "--query", query]
    if queries is not None:
        argv += ["--queries", str(queries)]
    result = run_measured(argv, zk_env())
    if result["rc"] != 0:
        return {"error": f"exit {result['rc']}: {result['stderr'].strip()[-300:]}"}
    return {**json.loads(result["stdout"].strip().splitlines()[-1]), "probe_rss_mb": result["rss_mb"]}


# -- the probes: run inside their own process ------------------------------------------------------
def percentile(values: list[float], q: float) -> float:
    values = sorted(values)
    return values[min(len(values) - 1, int(round(q * (len(values) - 1))))]


def probe_ask(home: Path, question: str) -> dict:
    """What `zk ask` does before its model call: the tiers' memory block, then retrieval and the
    evidence decision (`Memory.ask` returns before the model loads; its answer is never read)."""
    from zettel_amem.memory import Memory
    from zettel_amem.tiers.service import Tiers

    memory = Memory(home)
    block, _, _ = Tiers(memory).context.memory_block(question)
    answer = memory.ask(question, memory_block=block)
    return {"notes": len(answer.notes)}


def probe_warm(home: Path, questions: list[str]) -> dict:
    """`Memory.search` as `zk search` calls it: the first search of the process, then p50/p95 over the rest."""
    from zettel_amem.memory import Memory

    memory = Memory(home)
    start = time.perf_counter()
    memory.search(questions[0])
    first = time.perf_counter() - start
    times = []
    for question in questions:
        start = time.perf_counter()
        memory.search(question)
        times.append(time.perf_counter() - start)
    slowest = sorted(zip(times, questions), reverse=True)[:3]
    return {"first_search_s": round(first, 3), "p50_ms": round(percentile(times, 0.5) * 1000, 1),
            "p95_ms": round(percentile(times, 0.95) * 1000, 1), "queries": len(times),
            "slowest": [[round(t * 1000, 1), q] for t, q in slowest]}


def stored_vectors(store, column: str = "raw_vector"):
    """(ids, matrix) of every note's vector, read once (the exact search's side of the recall test)."""
    import numpy as np

    # LanceDB directly, read-only and without a filter: `Store.notes(with_vector=True)` makes Python floats of
    # every vector (gigabytes at 100k notes).
    table = store.table.search().select(["id", column]).limit(max(store.count(), 1)).to_arrow()
    ids = table.column("id").to_pylist()
    vectors = table.column(column).combine_chunks()
    matrix = vectors.flatten().to_numpy(zero_copy_only=False).reshape(len(ids), -1)
    return ids, matrix.astype(np.float32)


def probe_recall(home: Path, questions: list[str], k: int = 10) -> dict:
    """Recall@k of `Store.nearest` (raw_vector) against exact cosine search over every stored vector."""
    import numpy as np

    from zettel_amem.memory import Memory

    memory = Memory(home)
    ids, matrix = stored_vectors(memory.store)
    row = {note_id: i for i, note_id in enumerate(ids)}
    strict, tie_aware, times = [], [], []
    for question in questions:
        query = memory.embedder.embed_query(question)
        start = time.perf_counter()
        found = [n.id for n, _ in memory.store.nearest(query, k, memory.notebook, column="raw_vector")]
        times.append(time.perf_counter() - start)
        similarity = matrix @ query
        exact = np.argpartition(-similarity, k - 1)[:k]
        kth = float(similarity[exact].min())
        strict.append(len(set(found) & {ids[i] for i in exact}) / k)
        tie_aware.append(sum(similarity[row[i]] >= kth - 1e-5 for i in found if i in row) / k)
    return {"recall_at_10": round(float(np.mean(tie_aware)), 4), "id_overlap_at_10": round(float(np.mean(strict)), 4),
            "nearest_p50_ms": round(percentile(times, 0.5) * 1000, 1), "queries": len(questions)}


def probe_main(args) -> int:
    questions = json.loads(args.queries.read_text(encoding="utf-8")) if args.queries else [args.query]
    if args.probe == "ask":
        result = probe_ask(args.home, args.query)
    elif args.probe == "warm":
        result = probe_warm(args.home, questions)
    else:
        result = probe_recall(args.home, questions)
    print(json.dumps(result))
    return 0


# -- LoCoMo inside the big store -------------------------------------------------------------------
def locomo_recall(memory, sample: dict, variants=("hybrid", "hybrid-window"), k: int = 10) -> dict:
    """Mean R@k (all evidence, and any) per variant over the answerable questions, with bench.locomo's
    retrieval (`retrieve`, the same window) and scoring."""
    from bench.locomo import KS, dia_map, register_sessions, retrieve, session_windows
    from bench.scoring import evidence_ids, evidence_recall

    register_sessions(sample)
    mapping = dia_map(memory)  # the conversation's notes only: filler hits map to nothing
    valid = set(mapping.values())
    window = session_windows(memory)
    out = {}
    for variant in variants:
        every, anything = [], []
        for qa in sample["qa"]:
            evidence = evidence_ids(qa, valid)
            if int(qa["category"]) == 5 or not evidence:
                continue
            ranked = retrieve(memory, variant, qa["question"], max(KS), None, window)
            got = [mapping.get(h.note.id, h.note.id) for h in ranked]  # a filler hit: its own id, never evidence
            all_, any_ = evidence_recall(evidence, got, k)
            every.append(all_)
            anything.append(any_)
        out[variant] = {"recall_all@10": round(statistics.fmean(every), 4),
                        "recall_any@10": round(statistics.fmean(anything), 4), "questions": len(every)}
    return out


def reopened(memory, embedder):
    """The store after the worker's maintenance, searched by a fresh `Memory` (as a new `zk search` process
    would): nothing the import left in the object takes part. Both stores get the same maintenance, so
    one search is compared, not two."""
    from bench.locomo import configure
    from zettel_amem.memory import Memory

    maintain(memory)
    fresh = Memory(memory.home, embedder=embedder)
    configure(fresh, "raw")
    return fresh


def locomo_in_big_store(samples: list[dict], wanted: list[str], size: int, per_conv: dict[str, list[str]],
                        everything: SentencePool, embedder, out: Path, small_cache: Path, keep: bool) -> dict:
    from bench.locomo import ingest_conversation

    results = {}
    for sample in samples:
        conv = sample["sample_id"]
        if conv not in wanted:
            continue
        own = set(per_conv[conv])
        filler = everything.without(own)  # the other conversations' sentences only
        cache = out / "locomo" / str(size)
        home = cache / "no-llm" / "raw" / conv / "home"
        if not (home.parent / "done").exists():
            shutil.rmtree(home.parent, ignore_errors=True)
            log(f"{conv}: building a {size}-note filler store from {len(filler)} other sentences")
            build = build_store(home, size, filler, embedder)
        else:
            build = json.loads((home.parent / "build.json").read_text(encoding="utf-8"))
        big = reopened(ingest_conversation(sample, "raw", None, cache, embedder)[0], embedder)  # `zk import` path
        small = reopened(ingest_conversation(sample, "raw", None, small_cache, embedder)[0], embedder)
        log(f"{conv}: scoring in its own store and inside {size} notes")
        in_small, in_big = locomo_recall(small, sample), locomo_recall(big, sample)
        results[conv] = {"filler_sentences": len(filler), "filler_build_s": build["build_s"], "small": in_small,
                         "big": in_big, "big_notes": big.store.count(),
                         "difference_points": {v: round((in_big[v]["recall_all@10"] - in_small[v]["recall_all@10"])
                                                        * 100, 1) for v in in_big}}
        if not keep:
            shutil.rmtree(home.parent)
    return results


# -- 1,000 adds -------------------------------------------------------------------------------------
def search_costs(home: Path, query: str, queries: Path) -> dict:
    return {"cold_search": measure_command("search", home, query, ""), "warm": run_probe("warm", home, queries=queries)}


def adds_drift(home: Path, count: int, texts: list[str], query: str, queries: Path) -> dict:
    """`count` sequential `zk add`s into a copy of the store; search before, after, and after maintenance."""
    from zettel_amem.memory import Memory

    before = search_costs(home, query, queries)
    walls = []
    for i in range(count):
        result = run_measured([sys.executable, "-m", "zettel_amem", "--home", str(home), "add",
                               f"{texts[i % len(texts)]} (add {i + 1})"], zk_env())
        if result["rc"] != 0:
            return {"error": f"add {i + 1}: {result['stderr'].strip()[-300:]}"}
        walls.append(result["wall_s"])
        if (i + 1) % 100 == 0:
            log(f"  {i + 1}/{count} adds, last {result['wall_s']:.2f}s")
    after = search_costs(home, query, queries)
    start = time.perf_counter()
    how = maintain(Memory(home))
    maintain_s = time.perf_counter() - start
    maintained = search_costs(home, query, queries)

    def ratios(later: dict) -> dict:
        out = {}
        for name, (part, key) in DRIFT.items():
            a, b = later[part].get(key), before[part].get(key)
            out[name] = round(a / b, 2) if a and b else None
        return out

    return {"adds": count, "add_wall_median_first50_s": statistics.median(walls[:50]),
            "add_wall_median_last50_s": statistics.median(walls[-50:]), "before": before, "after_adds": after,
            "after_maintain": maintained, "maintain": how, "maintain_s": round(maintain_s, 1),
            "ratio_after_adds": ratios(after), "ratio_after_maintain": ratios(maintained)}


# -- one size ---------------------------------------------------------------------------------------
def measure_size(home: Path, build: dict, query: str, queries: Path, recall_queries: Path) -> dict:
    from zettel_amem.memory import Memory

    result = {"build": build, "loadavg_before": os.getloadavg()[0]}
    result["disk_bytes_per_note"] = round(disk_bytes(home) / build["notes"])
    result["cold"] = {}
    for name in COLD:  # `add` last: it writes
        result["cold"][name] = measure_command(name, home, query, build["probe_id"])
        log(f"  {name}: {result['cold'][name]}")
    result["warm_search"] = run_probe("warm", home, queries=queries)
    log(f"  warm search: {result['warm_search']}")
    result["ann"] = run_probe("recall", home, queries=recall_queries)
    log(f"  ann recall: {result['ann']}")
    result["notes_after"] = Memory(home).store.count()
    result["loadavg_after"] = os.getloadavg()[0]
    return result


# -- reporting --------------------------------------------------------------------------------------
def cell(entry: dict | None, rss: bool = False) -> str:
    if not entry:
        return "–"
    if "error" in entry:
        return "error"
    text = f"{entry['wall_s']:.2f} s"
    return text + f" ({entry['rss_mb']:.0f} MB)" if rss else text


def markdown(report: dict) -> str:
    lines = [f"Stores built through the library from real LoCoMo text; {HONEST}.", "",
             "| notes | build (maintain) | disk/note | " + " | ".join(f"`{c}`" for c in COLD)
             + " | warm search p50 / p95 | first search | ANN recall@10 |",
             "|---" * (len(COLD) + 6) + "|"]
    for size in sorted(report["sizes"], key=int):
        r = report["sizes"][size]
        warm, ann, build = r.get("warm_search", {}), r.get("ann", {}), r["build"]
        row = [f"{int(size):,}", f"{build['build_s']} s ({build['maintain']} {build['maintain_s']} s)",
               f"{r['disk_bytes_per_note'] / 1024:.1f} KB",
               *[cell(r["cold"].get(c), rss=True) for c in COLD],
               f"{warm.get('p50_ms', '–')} / {warm.get('p95_ms', '–')} ms", f"{warm.get('first_search_s', '–')} s",
               str(ann.get("recall_at_10", "–"))]
        lines.append("| " + " | ".join(row) + " |")
    if report.get("locomo"):
        lines += ["", f"LoCoMo R@10 (all evidence), each conversation alone and inside "
                  f"{report['locomo_size']:,} filler notes:", "",
                  "| conversation | variant | own store | inside | difference (points) |", "|---|---|---|---|---|"]
        for conv, r in report["locomo"].items():
            for variant, diff in r["difference_points"].items():
                lines.append(f"| {conv} | {variant} | {r['small'][variant]['recall_all@10'] * 100:.1f} | "
                             f"{r['big'][variant]['recall_all@10'] * 100:.1f} | {diff:+.1f} |")
    if report.get("adds") and "error" not in report["adds"]:
        a = report["adds"]
        lines += ["", f"{a['adds']} sequential `zk add`s into the {a['size']:,}-note store (each "
                  f"{a['add_wall_median_first50_s']:.2f} s first, {a['add_wall_median_last50_s']:.2f} s last, median "
                  f"of 50); search before, after the adds, after {a['maintain']} ({a['maintain_s']} s):", "",
                  "| | before | after adds | after " + a["maintain"] + " |", "|---|---|---|---|"]
        for name, (part, key) in DRIFT.items():
            values = [a[when][part].get(key) for when in ("before", "after_adds", "after_maintain")]
            ratios = ["", f" ({a['ratio_after_adds'][name]}×)", f" ({a['ratio_after_maintain'][name]}×)"]
            lines.append(f"| {name} | " + " | ".join(f"{v}{r}" for v, r in zip(values, ratios)) + " |")
    return "\n".join(lines) + "\n"


def chart(report: dict, path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    from matplotlib.ticker import FormatStrFormatter

    sizes = sorted(report["sizes"], key=int)
    xs = [int(s) for s in sizes]
    fig, (left, right) = plt.subplots(1, 2, figsize=(12, 4.5))
    for name in COLD:
        entries = [report["sizes"][s]["cold"].get(name, {}) for s in sizes]
        points = [(x, e["wall_s"], e["rss_mb"]) for x, e in zip(xs, entries) if "wall_s" in e]
        if points:
            left.plot([p[0] for p in points], [p[1] for p in points], marker="o", label=f"zk {name}")
            right.plot([p[0] for p in points], [p[2] for p in points], marker="o", label=f"zk {name}")
    warm = [(x, report["sizes"][s].get("warm_search", {}).get("p95_ms")) for x, s in zip(xs, sizes)]
    warm = [(x, v / 1000) for x, v in warm if v is not None]
    if warm:
        left.plot([p[0] for p in warm], [p[1] for p in warm], marker="s", linestyle="--", color="black",
                  label="warm search p95")
    left.set(xscale="log", yscale="log", xlabel="notes", ylabel="seconds", title="cold wall time (median of 3)")
    right.set(xscale="log", xlabel="notes", ylabel="MB", title="peak RSS")
    for axis in (left.xaxis, left.yaxis, right.xaxis):
        axis.set_major_formatter(FormatStrFormatter("%g"))
    left.legend(fontsize=7)
    fig.suptitle(HONEST, fontsize=8)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)


# -- main -------------------------------------------------------------------------------------------
def parse_size(text: str) -> int:
    text = text.strip().lower()
    factor = {"k": 1000, "m": 1_000_000}.get(text[-1:], 1)
    return int(float(text.rstrip("km")) * factor)


def pick_questions(samples: list[dict], count: int) -> list[str]:
    """`count` answerable LoCoMo questions, spread evenly over every conversation."""
    every = [qa["question"] for s in samples for qa in s["qa"] if int(qa["category"]) != 5]
    step = max(1, len(every) // count)
    return every[::step][:count]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description="zk at 1k-1M notes (issue #15)")
    parser.add_argument("--sizes", default="1000,10000,100000", help="comma-separated note counts (1k, 1M work)")
    parser.add_argument("--out", type=Path, default=Path("results/scale"))
    parser.add_argument("--data", type=Path, default=DEFAULT_DATA)
    parser.add_argument("--locomo", default="conv-26,conv-30,conv-41,conv-42,conv-43",
                        help="conversations scored inside the largest store ≤ 100k ('' for none)")
    parser.add_argument("--locomo-cache", type=Path, default=Path("results/locomo/cache"),
                        help="bench.locomo's cache, where each conversation's own small store is (built if absent)")
    parser.add_argument("--adds", type=int, default=0,
                        help="sequential `zk add`s into (a copy of) the largest store ≤ 100k")
    parser.add_argument("--keep", action="store_true", help="keep the stores (a rerun then reuses them)")
    parser.add_argument("--max-sentences", type=int, default=0, help="use only this many sentences (quick checks)")
    parser.add_argument("--entries", action="store_true",
                        help="page-long journal entries (6-12 sentences, cut into passages) instead of chats and notes")
    parser.add_argument("--probe", choices=["ask", "warm", "recall"], help=argparse.SUPPRESS)
    parser.add_argument("--home", type=Path, help=argparse.SUPPRESS)
    parser.add_argument("--query", default="", help=argparse.SUPPRESS)
    parser.add_argument("--queries", type=Path, help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.probe:
        return probe_main(args)

    from bench import shipped_defaults_only

    shipped_defaults_only()  # inherited by every measured process
    from zettel_amem.backends.embed import load_embedder
    from zettel_amem.memory import Memory

    sizes = [parse_size(s) for s in args.sizes.split(",") if s.strip()]
    samples = json.loads(args.data.read_text(encoding="utf-8"))
    embedder = load_embedder("default")
    per_conv = {s["sample_id"]: conversation_sentences(s) for s in samples}
    everything = [x for sentences in per_conv.values() for x in sentences]
    if args.max_sentences:
        everything = everything[: args.max_sentences]
    args.out.mkdir(parents=True, exist_ok=True)
    pool = embed_sentences(everything, embedder, args.out / "cache" / f"sentences-{embedder.name}.npz")
    log(f"{len(pool)} distinct sentences from {len(samples)} conversations; {HONEST}")

    questions = pick_questions(samples, WARM_QUERIES + 100)
    queries, recall_queries = args.out / "queries.json", args.out / "recall-queries.json"
    queries.write_text(json.dumps(questions[:WARM_QUERIES]), encoding="utf-8")  # distinct: no cached embedding
    recall_queries.write_text(json.dumps(questions[WARM_QUERIES:]), encoding="utf-8")
    query = questions[0]

    report_path = args.out / "scale.json"
    report = json.loads(report_path.read_text(encoding="utf-8")) if report_path.exists() else {}
    report.update({"how": HONEST, "query": query, "cpus": os.cpu_count()})
    report.setdefault("sizes", {})
    big = max([s for s in sizes if s <= 100_000], default=0)  # where LoCoMo and the adds run
    for size in sizes:
        home = args.out / "stores" / str(size) / "home"
        built = home.parent / "build.json"
        if built.exists() and json.loads(built.read_text(encoding="utf-8"))["sentences"] == len(pool) and \
                json.loads(built.read_text(encoding="utf-8")).get("entries", False) == args.entries:
            build = json.loads(built.read_text(encoding="utf-8"))
            start = time.perf_counter()  # the library may have changed since: let it maintain the store again
            build["maintain"] = maintain(Memory(home, embedder=embedder))
            build["maintain_s"] = round(time.perf_counter() - start, 1)
            log(f"{size} notes: reusing {home} ({build['maintain']} {build['maintain_s']} s)")
        else:
            shutil.rmtree(home.parent, ignore_errors=True)
            log(f"{size} notes: building")
            build = build_store(home, size, pool, embedder, entries=args.entries)
            log(f"  built in {build['build_s']} s, {build['maintain']} {build['maintain_s']} s")
        report["sizes"][str(size)] = {**measure_size(home, build, query, queries, recall_queries),
                                      "measured_at": datetime.now().isoformat(timespec="seconds")}
        save(report, args.out)
        if args.adds and size == big:
            copy = args.out / "stores" / f"adds-{size}" / "home"
            shutil.rmtree(copy.parent, ignore_errors=True)
            shutil.copytree(home, copy)
            log(f"{args.adds} sequential adds into a copy of the {size}-note store")
            report["adds"] = {"size": size, **adds_drift(copy, args.adds, pool.sentences, query, queries),
                              "measured_at": datetime.now().isoformat(timespec="seconds")}
            save(report, args.out)
            if not args.keep:
                shutil.rmtree(copy.parent)
        if not args.keep:
            shutil.rmtree(home.parent)

    wanted = [c.strip() for c in args.locomo.split(",") if c.strip()]
    if wanted and big:
        report["locomo_size"] = big
        report["locomo_measured_at"] = datetime.now().isoformat(timespec="seconds")
        report["locomo"] = locomo_in_big_store(samples, wanted, big, per_conv, pool, embedder, args.out,
                                               args.locomo_cache, args.keep)
        save(report, args.out)
    print(markdown(report))
    return 0


def save(report: dict, out: Path) -> None:
    (out / "scale.json").write_text(json.dumps(report, indent=1, ensure_ascii=False), encoding="utf-8")
    (out / "scale.md").write_text(markdown(report), encoding="utf-8")
    chart(report, out / "scale.png")


if __name__ == "__main__":
    raise SystemExit(main())
