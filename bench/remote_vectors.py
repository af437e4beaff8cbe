"""Vector search on a shared store: the exact scan against the ANN index (IVF_HNSW_SQ) with fewer or all
partitions probed, in object-store requests, megabytes read, wall time and recall.

    python -m bench.remote_vectors [--sizes 10000 40000] [--rows-per-partition 4000 20000 0] [--probes all]
    python -m bench.remote_vectors --vectors locomo --sizes 40000 [--queries 50]

For each size, a notebook on the loopback S3 server. `--vectors random` (the default): a `--synthetic`
notebook of bench/remote.py (random unit vectors: no cluster structure, the worst case for an IVF index's
recall; requests and bytes do not depend on it), queried by 6 queries near a stored note (the note plus
noise) and 6 random ones. `--vectors locomo`: bench/scale.py's filler notes (1-3 LoCoMo sentences each,
the vector the normalised mean of their real embeddings from the bundled embedder, cached in
results/scale/cache), queried by `--queries` LoCoMo questions embedded as `zk search` embeds them.
One ranked list of `zk search` (`Store.nearest(query, 100, column="raw_vector", light=True)`) per fresh
connection; recall@10 and @100 against an exact numpy ranking of every vector, a hit counting when its
exact similarity reaches the exact 10th (100th) best (as bench.scale: notes of the same text tie).
`--rows-per-partition`: the shared store's partition size to build the index with (0: one partition),
each timed as the worker's `maintain` (both vector columns); `--probes`: partitions probed (a number, or
`all`); `--ef`: HNSW beams. Results in docs/benchmarks.md.
"""

from __future__ import annotations

import argparse
import itertools
import json
import os
import tempfile
import time
from pathlib import Path

import numpy as np


def _store():
    from zettel_amem.memory import Memory

    return Memory().store


def recall(found: list[str], similarity, row: dict[str, int], k: int) -> float:
    """The share of `found[:k]` whose exact similarity reaches the exact k-th best (ties are hits)."""
    kth = float(np.partition(similarity, len(similarity) - k)[len(similarity) - k])
    return sum(float(similarity[row[i]]) >= kth - 1e-5 for i in found[:k] if i in row) / k


def measure(server, label: str, queries: list, truth: tuple, probes: int | None = None,
            refine: bool = False, ef: int | None = None) -> dict:
    """Medians of requests, MB and wall over `queries`; mean recall@10 and @100 against `truth`: (note id
    -> row, each query's exact similarity to every row)."""
    import zettel_amem.storage.store_ranked as ranked

    ranked.ann_probes = (lambda partitions: probes) if probes else (lambda partitions: partitions)
    ranked.ANN_REFINE_UP_TO = 1000 if refine else 0  # refine the list of 100, or never
    if not hasattr(ranked, "shipped_ann_ef"):
        ranked.shipped_ann_ef = ranked.ann_ef
    ranked.ann_ef = (lambda *_: ef) if ef else ranked.shipped_ann_ef
    rows, (row, similarities) = [], truth
    for query, similarity in zip(queries, similarities, strict=True):
        store = _store()
        server.take_counts()
        start = time.perf_counter()
        found = [note.id for note, _ in store.nearest(query, 100, None, column="raw_vector", light=True)]
        wall, counts = time.perf_counter() - start, server.take_counts()
        rows.append((counts.get("total", 0), counts.get("bytes_read", 0) / 1e6, wall,
                     recall(found, similarity, row, 10), recall(found, similarity, row, 100)))
    cols = list(zip(*rows, strict=True))
    out = {"requests": float(np.median(cols[0])), "mb": round(float(np.median(cols[1])), 1),
           "wall_s": round(float(np.median(cols[2])), 3), "recall10": round(float(np.mean(cols[3])), 3),
           "recall100": round(float(np.mean(cols[4])), 3)}
    print(label, json.dumps(out), flush=True)
    return out


def _queries(store, rng, questions: list | None = None) -> dict[str, tuple[list, tuple]]:
    """Kind -> (queries, truth for `measure`): 6 near stored notes and 6 random, or the embedded
    `questions` (LoCoMo's) as one kind."""
    from bench.scale import stored_vectors

    _drop_vector_indexes(store)
    ids, vectors = stored_vectors(store)
    row = {note_id: i for i, note_id in enumerate(ids)}
    if questions is not None:
        groups = {"question": questions}
    else:
        near = [v + 0.08 * rng.standard_normal(v.shape).astype(np.float32)
                for v in vectors[rng.choice(len(vectors), 6, replace=False)]]
        groups = {"near": near, "random": [rng.standard_normal(vectors.shape[1]) for _ in range(6)]}
    out = {}
    for kind, group in groups.items():
        queries = [(q / np.linalg.norm(q)).astype(np.float32) for q in group]
        out[kind] = ([q.tolist() for q in queries], (row, [vectors @ q for q in queries]))
    return out


def _drop_vector_indexes(store) -> None:
    for index in store.table.list_indices():  # the worker's ANN index (from 20k notes): gone, for the scan
        if index.columns and index.columns[0] in ("raw_vector", "vector") and index.index_type.startswith("Ivf"):
            store.table.drop_index(index.name)


def _ann(server, size: int, per_partition: int, probes: list[str], efs: list[int], groups: dict) -> dict:
    """Build the index as the worker does on a shared store with partitions of `per_partition` rows (0: one
    partition), timing it, then measure each number of probes with each HNSW beam (0: zk's own)."""
    import zettel_amem.storage.store_upkeep as upkeep

    saved, upkeep.SHARED_ROWS_PER_PARTITION = upkeep.SHARED_ROWS_PER_PARTITION, per_partition or 10**12
    try:
        _drop_vector_indexes(_store())
        start = time.perf_counter()
        _store().maintain(vector_min_rows=1)  # the worker's build, over the notes as they are
        build = round(time.perf_counter() - start, 1)
    finally:
        upkeep.SHARED_ROWS_PER_PARTITION = saved
    partitions = _store().vector_index_shapes()["raw_vector"][1]
    print(f"{size} partitions of {per_partition or 'all'} rows: {partitions}, maintain {build} s", flush=True)
    out: dict = {f"build {per_partition}": {"partitions": partitions, "maintain_s": build}}
    for count in sorted({partitions if p == "all" else min(int(p), partitions) for p in probes}):
        for ef, (kind, (queries, truth)) in itertools.product(efs, groups.items()):
            label = f"ann {count} of {partitions} ef {ef or 'zk'} {kind}"
            out[label] = measure(server, f"{size} {label}", queries, truth, count, ef=ef or None)
    return out


def _seed_locomo(server, uri: str, local: Path, size: int, pool) -> None:
    """`--vectors locomo`: `size` of bench.scale's filler notes written through the store in its batches,
    then the worker's upkeep (compaction, scalar indexes) without the ANN index, which each measured
    partition size builds itself."""
    from bench.remote import _env
    from bench.scale import BATCH, SEED, filler_notes

    saved = dict(os.environ)
    os.environ.update(_env(server, uri, local))
    try:
        from zettel_amem.memory import Memory

        memory, batch = Memory(), []
        for note in filler_notes(memory, size, pool, np.random.default_rng(SEED)):
            batch.append(note)
            if len(batch) == BATCH:
                memory.store.add(batch)
                batch = []
        if batch:
            memory.store.add(batch)
        _store().maintain(force=True, vector_min_rows=10**12)
    finally:
        os.environ.clear()
        os.environ.update(saved)


def run_size(server, size: int, tmp: Path, rng, args, locomo: tuple | None = None) -> dict:
    """One notebook of `size` notes: the exact scan, then each partition size's index. `locomo`: (the
    sentence pool, the embedded questions) for `--vectors locomo`."""
    from bench.remote import _env, _seed
    from tests.s3_server import BUCKET

    uri, local = f"s3://{BUCKET}/vectors-{size}", tmp / f"local-{size}"
    start = time.perf_counter()
    if locomo:
        _seed_locomo(server, uri, local, size, locomo[0])
    else:
        _seed(server, uri, local, size, synthetic=True)
    print(f"{size} notes written in {time.perf_counter() - start:.1f} s", flush=True)
    saved = dict(os.environ)
    os.environ.update(_env(server, uri, local))
    try:
        groups = _queries(_store(), rng, locomo[1] if locomo else None)
        out = {f"exact {kind}": measure(server, f"{size} exact {kind}", queries, truth)
               for kind, (queries, truth) in groups.items()}
        for per_partition in args.rows_per_partition:
            out.update(_ann(server, size, per_partition, args.probes, args.ef, groups))
        return out
    finally:
        os.environ.clear()
        os.environ.update(saved)


def _locomo(count: int) -> tuple:
    """bench.scale's sentence pool (every LoCoMo dev sentence, embedded once, cached) and `count` of its
    questions embedded as queries, as bench.scale's recall probe embeds them."""
    from bench.locomo import DEFAULT_DATA
    from bench.scale import conversation_sentences, embed_sentences, pick_questions
    from zettel_amem.backends.embed import load_embedder

    samples = json.loads(Path(DEFAULT_DATA).read_text(encoding="utf-8"))
    embedder = load_embedder("default")
    sentences = [x for sample in samples for x in conversation_sentences(sample)]
    pool = embed_sentences(sentences, embedder, Path("results/scale/cache") / f"sentences-{embedder.name}.npz")
    questions = [embedder.embed_query(q) for q in pick_questions(samples, count)]
    print(f"{len(pool)} sentences, {len(questions)} questions ({embedder.name})", flush=True)
    return pool, questions


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sizes", type=int, nargs="+", default=[10000, 40000])
    parser.add_argument("--rows-per-partition", type=int, nargs="+", default=[4000],
                        help="the shared store's IVF partition size to compare (0: one partition)")
    parser.add_argument("--probes", nargs="+", default=["1", "3", "all"], help="partitions probed, or `all`")
    parser.add_argument("--ef", type=int, nargs="+", default=[0], help="HNSW beams to compare (0: zk's own)")
    parser.add_argument("--vectors", choices=["random", "locomo"], default="random",
                        help="random unit vectors, or LoCoMo sentences' real embeddings (bench.scale's notes)")
    parser.add_argument("--queries", type=int, default=50, help="LoCoMo questions asked (`--vectors locomo`)")
    args = parser.parse_args()
    from tests.s3_server import LoopbackS3

    locomo = _locomo(args.queries) if args.vectors == "locomo" else None

    server = LoopbackS3().start()
    server.make_bucket()
    try:
        with tempfile.TemporaryDirectory(prefix="zk-vectors-") as tmp:
            rng = np.random.default_rng(7)
            results = {size: run_size(server, size, Path(tmp), rng, args, locomo) for size in args.sizes}
    finally:
        server.stop()
    print(json.dumps(results, indent=2))


if __name__ == "__main__":
    main()
