"""Vector search on a shared store: the exact scan against the ANN index (IVF_HNSW_SQ) with fewer or all
partitions probed, in object-store requests, megabytes read, wall time and recall.

    python -m bench.remote_vectors [--sizes 10000 40000] [--rows-per-partition 4000 20000 0] [--probes all]

For each size, a `--synthetic` notebook of bench/remote.py on the loopback S3 server (random unit
vectors: no cluster structure, the worst case for an IVF index's recall; requests and bytes do not
depend on it). One ranked list of `zk search` (`Store.nearest(query, 100, column="raw_vector",
light=True)`) per fresh connection, for 6 queries near a stored note (the note plus noise) and 6
random ones; recall against an exact numpy ranking of every vector. `--rows-per-partition`: the shared
store's partition size to build the index with (0: one partition), each timed as the worker's `maintain`
(both vector columns); `--probes`: partitions probed (a number, or `all`); `--ef`: HNSW beams.
Results in docs/benchmarks.md.
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


def measure(server, label: str, queries: list, truth: list, probes: int | None = None,
            refine: bool = False, ef: int | None = None) -> dict:
    """Medians of requests, MB and wall over `queries`; mean recall@10 and @100 against `truth`."""
    import zettel_amem.store_ranked as ranked

    ranked.ann_probes = (lambda partitions: probes) if probes else (lambda partitions: partitions)
    ranked.ANN_REFINE_UP_TO = 1000 if refine else 0  # refine the list of 100, or never
    if not hasattr(ranked, "shipped_ann_ef"):
        ranked.shipped_ann_ef = ranked.ann_ef
    ranked.ann_ef = (lambda *_: ef) if ef else ranked.shipped_ann_ef
    rows = []
    for query, best in zip(queries, truth, strict=True):
        store = _store()
        server.take_counts()
        start = time.perf_counter()
        found = [note.id for note, _ in store.nearest(query, 100, None, column="raw_vector", light=True)]
        wall, counts = time.perf_counter() - start, server.take_counts()
        rows.append((counts.get("total", 0), counts.get("bytes_read", 0) / 1e6, wall,
                     len(set(found[:10]) & set(best[:10])) / 10, len(set(found) & set(best)) / 100))
    cols = list(zip(*rows, strict=True))
    out = {"requests": float(np.median(cols[0])), "mb": round(float(np.median(cols[1])), 1),
           "wall_s": round(float(np.median(cols[2])), 3), "recall10": round(float(np.mean(cols[3])), 3),
           "recall100": round(float(np.mean(cols[4])), 3)}
    print(label, json.dumps(out), flush=True)
    return out


def _queries(store, rng) -> tuple[list, list]:
    """12 queries (6 near stored notes, 6 random) and each one's exact top 100 ids."""
    _drop_vector_indexes(store)
    table = store.table.to_arrow()
    ids, vectors = table["id"].to_pylist(), np.array(table["raw_vector"].to_pylist(), dtype=np.float32)
    near = [v + 0.08 * rng.standard_normal(v.shape).astype(np.float32)
            for v in vectors[rng.choice(len(vectors), 6, replace=False)]]
    queries = [q / np.linalg.norm(q) for q in near + [rng.standard_normal(vectors.shape[1]) for _ in range(6)]]
    truth = [[ids[i] for i in np.argsort(-(vectors @ q), kind="stable")[:100]] for q in queries]
    return [q.astype(np.float32).tolist() for q in queries], truth


def _drop_vector_indexes(store) -> None:
    for index in store.table.list_indices():  # the worker's ANN index (from 20k notes): gone, for the scan
        if index.columns and index.columns[0] in ("raw_vector", "vector") and index.index_type.startswith("Ivf"):
            store.table.drop_index(index.name)


def _ann(server, size: int, per_partition: int, probes: list[str], efs: list[int], queries: list,
         truth: list) -> dict:
    """Build the index as the worker does on a shared store with partitions of `per_partition` rows (0: one
    partition), timing it, then measure each number of probes with each HNSW beam (0: zk's own)."""
    import zettel_amem.store_upkeep as upkeep

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
        for ef, (kind, part) in itertools.product(efs, (("near", slice(0, 6)), ("random", slice(6, 12)))):
            label = f"ann {count} of {partitions} ef {ef or 'zk'} {kind}"
            out[label] = measure(server, f"{size} {label}", queries[part], truth[part], count, ef=ef or None)
    return out


def run_size(server, size: int, tmp: Path, rng, rows_per_partition: list[int], probes: list[str],
             efs: list[int]) -> dict:
    from bench.remote import _env, _seed
    from tests.s3_server import BUCKET

    uri, local = f"s3://{BUCKET}/vectors-{size}", tmp / f"local-{size}"
    _seed(server, uri, local, size, synthetic=True)
    saved = dict(os.environ)
    os.environ.update(_env(server, uri, local))
    try:
        queries, truth = _queries(_store(), rng)
        out = {f"exact {kind}": measure(server, f"{size} exact {kind}", queries[part], truth[part])
               for kind, part in (("near", slice(0, 6)), ("random", slice(6, 12)))}
        for per_partition in rows_per_partition:
            out.update(_ann(server, size, per_partition, probes, efs, queries, truth))
        return out
    finally:
        os.environ.clear()
        os.environ.update(saved)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sizes", type=int, nargs="+", default=[10000, 40000])
    parser.add_argument("--rows-per-partition", type=int, nargs="+", default=[4000],
                        help="the shared store's IVF partition size to compare (0: one partition)")
    parser.add_argument("--probes", nargs="+", default=["1", "3", "all"], help="partitions probed, or `all`")
    parser.add_argument("--ef", type=int, nargs="+", default=[0], help="HNSW beams to compare (0: zk's own)")
    args = parser.parse_args()
    from tests.s3_server import LoopbackS3

    server = LoopbackS3().start()
    server.make_bucket()
    try:
        with tempfile.TemporaryDirectory(prefix="zk-vectors-") as tmp:
            rng = np.random.default_rng(7)
            results = {size: run_size(server, size, Path(tmp), rng, args.rows_per_partition,
                                      args.probes, args.ef) for size in args.sizes}
    finally:
        server.stop()
    print(json.dumps(results, indent=2))


if __name__ == "__main__":
    main()
