"""The vector search at scale: the HNSW graph the index builds against an inverted file (IVF).

Past 20,000 rows the vector index searches through an HNSW graph (:mod:`mnemo.index.vectors`). At
a million memories that graph is ~0.65 GB of the daemon's RSS (its own copy of the int8 codes, and
its links) and most of a first start (docs/benchmarks.md#memory-at-a-million). The lever the docs
name instead is an inverted file over the codes themselves: k-means centroids, each row in the
list of its nearest centroid, a question's ``nprobe`` nearest lists scanned exactly. It is not in
the index; this tool measures it, as a prototype written here, beside the index's own graph, on the
same vectors:

- the graph: :class:`~mnemo.index.vectors.VectorIndex` loaded in bulk and settled (built), searched
  through its own ``search``;
- the inverted file: ``--lists`` centroids (default 2·√rows) trained by 8 rounds of k-means on a
  sample of 40 rows a centroid, every row assigned to its nearest by usearch's exact int8 kernel,
  a search gathering its lists' codes and scanning them exactly.

Vectors are bench_recall's (its 2,000 template instances embedded by ``--embedder``, a memory each
instance plus Gaussian noise), at the dimensions the daemon keeps. Two sets of queries: its
questions (and each joined to the next), embedded as questions; and 100 memories' own vectors
(what the writer's judge asks: the neighbours of a memory). Printed per size and method: the build
(seconds), the structure's own bytes (usearch's count for the graph; centroids and lists for the
inverted file: the codes themselves are the index's either way), recall@100 against the exact
search (the engine asks each source for 100 candidates) and the latency p50 / p95, all in this
process, one search at a time.

    python tools/bench_vector_search.py --sizes 100000 1000000 --embedder embeddinggemma-300m-int8 \
        [--expansions 256 1024] [--methods graph inverted] [--lists N]

``--expansions``: the graph searched again, wider (the index's ``search_expansion``: how many
candidates a graph search keeps while it walks; the index uses usearch's default, 64).

A caveat the figures carry: each memory here is one of 2,000 instances plus noise, so the rows fall
in 2,000 tight clusters, which favours an inverted file more than real memories would; and the
exact top 100 holds near-ties among a cluster's copies, which any approximate search misses some
of. What compares is the two methods on the same vectors.
"""

from __future__ import annotations

import argparse
import itertools
import os
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

import numpy as np
import numpy.typing as npt
from usearch.index import MetricKind, search  # type: ignore[attr-defined]

from bench_recall import QUESTIONS, percentiles, synthetic
from mnemo.config import load_settings
from mnemo.embed import load_embedder
from mnemo.index.codes import quantise
from mnemo.index.vectors import VectorIndex

K = 100
KMEANS_ROUNDS = 8
SAMPLE_PER_LIST = 40
NPROBES = (8, 16, 32, 64)
ASSIGN_CHUNK = 20_000

Search = Callable[[npt.NDArray[np.float32]], npt.NDArray[np.int64]]


class InvertedFile:
    """The prototype: centroids over int8 codes, and each list's rows contiguous in one order."""

    def __init__(self, codes: npt.NDArray[np.int8], lists: int, seed: int = 0) -> None:
        rng = np.random.default_rng(seed)
        sample = codes[rng.choice(len(codes), min(len(codes), SAMPLE_PER_LIST * lists), replace=False)]
        sample = sample.astype(np.float32)
        centroids = sample[rng.choice(len(sample), lists, replace=False)].copy()
        for _ in range(KMEANS_ROUNDS):
            unit = centroids / np.maximum(np.linalg.norm(centroids, axis=1, keepdims=True), 1e-9)
            nearest = np.argmax(sample @ unit.T, axis=1)
            for c in range(lists):
                members = nearest == c
                if members.any():
                    centroids[c] = sample[members].mean(axis=0)
        self.centroids = quantise(centroids)
        assigned = np.concatenate(  # in chunks: usearch's exact search holds a row a query
            [
                search(
                    self.centroids, codes[i : i + ASSIGN_CHUNK], 1, MetricKind.Cos, exact=True
                ).keys.reshape(-1)
                for i in range(0, len(codes), ASSIGN_CHUNK)
            ]
        )
        self.order = np.argsort(assigned, kind="stable").astype(np.int64)
        self.bounds = np.searchsorted(assigned[self.order], np.arange(lists + 1))
        self.codes = codes

    @property
    def nbytes(self) -> int:
        return int(self.centroids.nbytes + self.order.nbytes + self.bounds.nbytes)

    def search(self, query: npt.NDArray[np.float32], count: int, nprobe: int) -> npt.NDArray[np.int64]:
        code = quantise(query.reshape(1, -1))[0]
        near = search(self.centroids, code, nprobe, MetricKind.Cos, exact=True).keys.astype(np.int64)
        rows = np.concatenate([self.order[self.bounds[c] : self.bounds[c + 1]] for c in near.tolist()])
        found = search(self.codes[rows], code, min(count, len(rows)), MetricKind.Cos, exact=True)
        return rows[found.keys.astype(np.int64)]


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


def graph_rows(
    vectors: npt.NDArray[np.float32],
    namespaces: list[str],
    queries: dict[str, Any],
    truth: dict[str, Any],
    expansions: list[int],
) -> None:
    """The index's own graph: loaded in bulk, settled (built), searched through ``search`` as the
    index does, then searched wider (``search_expansion``) for each of ``expansions``."""
    index = VectorIndex(vectors.shape[1])
    index.put(np.arange(len(vectors), dtype=np.int64), vectors, namespaces, bulk=True)
    started = time.perf_counter()
    index.settle_graph(None)
    built = time.perf_counter() - started
    for expansion in [None, *expansions]:
        index.search_expansion = expansion
        row = measure(lambda q: index.search(q, K)[0], queries, truth)
        label = "HNSW graph" + (f", expansion {expansion}" if expansion else "")
        print(f"| {label} | {built:.1f} s | {index.graph_bytes / 1e6:,.0f} MB | {row}", flush=True)


def bench(size: int, embedder_id: str, lists: int | None, expansions: list[int], methods: list[str]) -> None:
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
    print("| method | build | own bytes | recall@100: questions | memories | latency p50 / p95 |")
    print("|---|---|---|---|---|---|")

    if "graph" in methods:
        graph_rows(vectors, namespaces, queries, truth, expansions)
    del vectors
    if "inverted" not in methods:
        return
    count = lists or int(2 * np.sqrt(size))
    started = time.perf_counter()
    inverted = InvertedFile(codes, count)
    built = time.perf_counter() - started
    sizes = np.diff(inverted.bounds)
    for nprobe in NPROBES:
        row = measure(lambda q, n=nprobe: inverted.search(q, K, n), queries, truth)
        label = f"inverted file, {count:,} lists (median {np.median(sizes):.0f} rows), nprobe {nprobe}"
        print(f"| {label} | {built:.1f} s | {inverted.nbytes / 1e6:,.1f} MB | {row}", flush=True)


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--sizes", type=int, nargs="+", default=[100_000])
    p.add_argument("--embedder", default="embeddinggemma-300m-int8")
    p.add_argument("--lists", type=int, help="the inverted file's centroids (default: 2·√rows)")
    p.add_argument(
        "--expansions",
        type=int,
        nargs="*",
        default=[],
        help="the graph searched again with each of these search expansions (usearch's default: 64)",
    )
    p.add_argument("--methods", nargs="+", choices=["graph", "inverted"], default=["graph", "inverted"])
    args = p.parse_args()
    for size in args.sizes:
        bench(size, args.embedder, args.lists, args.expansions, args.methods)


if __name__ == "__main__":
    main()
