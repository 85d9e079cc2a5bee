"""The vector search at scale: the index's inverted lists against the exact search.

Past 20,000 rows the vector index searches through an inverted file (:mod:`mnemo.index.inverted`):
k-means centroids, each row in the list of its nearest, a question's ``probes`` nearest lists read
exactly. It replaced an HNSW graph that, at a million memories, held 0.8 GB of its own (a copy of
the int8 codes, and its links), took most of a first start to build, and found 0.58 of the exact
top 100 on these vectors (the graph's figures in docs/benchmarks.md, measured by this tool before
the change). This tool loads :class:`~mnemo.index.vectors.VectorIndex` in bulk, settles it (the
lists made) and searches it through its own ``search``, for each ``--probes``.

Vectors are bench_recall's (its 2,000 template instances embedded by ``--embedder``, a memory each
instance plus Gaussian noise), at the dimensions the daemon keeps. Two sets of queries: its
questions (and each joined to the next), embedded as questions; and 100 memories' own vectors
(what the writer's judge asks: the neighbours of a memory). Printed per size and probes: the
lists' making (seconds), their own bytes (centroids, each row's list, each list's rows: the codes
themselves are the index's either way), recall@100 against the exact search (the engine asks each
source for 100 candidates) and the latency p50 / p95, all in this process, one search at a time.

    python -m tools.bench.bench_vector_search --sizes 100000 1000000 --embedder embeddinggemma-300m-int8 \
        [--probes 8 16 32 64]

A caveat the figures carry: each memory here is one of 2,000 instances plus noise, so the rows fall
in 2,000 tight clusters, which favours an inverted file more than real memories would; and the
exact top 100 holds near-ties among a cluster's copies, which any approximate search misses some
of.
"""

from __future__ import annotations

import argparse
import itertools
import os
import time
from collections.abc import Callable
from typing import Any

import numpy as np
import numpy.typing as npt
from usearch.index import MetricKind, search  # type: ignore[attr-defined]

from mnemo.config import load_settings
from mnemo.embed import load_embedder
from mnemo.index.codes import quantise
from mnemo.index.vectors import VectorIndex
from tools.bench.bench_recall import QUESTIONS, percentiles, synthetic

K = 100

Search = Callable[[npt.NDArray[np.float32]], npt.NDArray[np.int64]]


def measure(find: Search, queries: dict[str, Any], truth: dict[str, Any]) -> str:
    """Recall@100 of each query set against the exact search, and the latency over all of them."""
    cells = []
    latencies: list[float] = []
    for label, matrix in queries.items():
        hits = []
        for query, expected in zip(matrix, truth[label], strict=True):
            started = time.perf_counter()
            found = find(query)
            latencies.append((time.perf_counter() - started) * 1000)
            hits.append(len(expected & set(found.tolist())) / len(expected))
        cells.append(f"{np.mean(hits):.3f}")
    p50, p95 = percentiles(latencies)
    return f"{' | '.join(cells)} | {p50:.2f} / {p95:.2f} ms |"


def bench(size: int, embedder_id: str, probes: list[int]) -> None:
    embedder = load_embedder(load_settings({**os.environ, "MNEMO_EMBEDDER": embedder_id}))
    if embedder is None:
        raise SystemExit(f"no embedder {embedder_id!r}: see docs/models.md")
    memories, vectors = synthetic(size, embedder)
    assert vectors is not None
    namespaces = [m.namespace for m in memories]
    del memories
    asked = [*QUESTIONS, *(f"{a} {b}" for a, b in itertools.pairwise(QUESTIONS))]
    picked = np.random.default_rng(3).choice(size, 100, replace=False)
    queries = {
        "questions": np.asarray(embedder.embed_queries(asked), dtype=np.float32),
        "memories": vectors[picked],
    }
    codes = quantise(vectors)
    truth = {
        label: [
            set(search(codes, quantise(q.reshape(1, -1))[0], K, MetricKind.Cos, exact=True).keys.tolist())
            for q in matrix
        ]
        for label, matrix in queries.items()
    }
    print(f"\n== {size:,} rows, {codes.shape[1]} dimensions ({embedder.model_id})", flush=True)
    print("| probes | lists made | own bytes | recall@100: questions | memories | latency p50 / p95 |")
    print("|---|---|---|---|---|---|")
    index = VectorIndex(vectors.shape[1])
    index.put(np.arange(len(vectors), dtype=np.int64), vectors, namespaces, bulk=True)
    del vectors
    started = time.perf_counter()
    made = index.settle_lists(None)
    took = time.perf_counter() - started
    for count in probes:
        index.probes = count
        row = measure(lambda q: index.search(q, K)[0], queries, truth)
        print(f"| {count} | {took:.1f} s ({made}) | {index.lists_bytes / 1e6:,.1f} MB | {row}", flush=True)


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--sizes", type=int, nargs="+", default=[100_000])
    p.add_argument("--embedder", default="embeddinggemma-300m-int8")
    p.add_argument("--probes", type=int, nargs="+", default=[8, 16, 32], help="lists read per search")
    args = p.parse_args()
    for size in args.sizes:
        bench(size, args.embedder, args.probes)


if __name__ == "__main__":
    main()
