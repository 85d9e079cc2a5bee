"""Nearest neighbours over int8-quantised unit vectors.

Rows are stored as int8 (``round(127·v)`` of an L2-normalised vector: a quarter of float32's
RAM, and cosine within ~1 % of it). Search is exact (SIMD int8 inner products through usearch's
brute-force kernel) while the index is small, and through an HNSW graph once it holds more than
``exact_max_rows`` rows. A filter narrows the rows that may be returned: when it allows few rows
those rows are searched exactly; otherwise the search over-fetches and drops what it forbids.
"""

from __future__ import annotations

import numpy as np
import numpy.typing as npt
from usearch.index import Index, MetricKind, ScalarKind, search  # type: ignore[attr-defined]

EXACT_MAX_ROWS = 50_000
_SUBSET_EXACT_MAX_ROWS = 20_000
_SCALE = 127.0


def quantise(vectors: npt.NDArray[np.float32]) -> npt.NDArray[np.int8]:
    """int8 codes of unit vectors (rows are re-normalised first, so any scale is accepted)."""
    norms = np.linalg.norm(vectors, axis=1, keepdims=True)
    unit = vectors / np.maximum(norms, 1e-12)
    codes: npt.NDArray[np.int8] = np.clip(np.rint(unit * _SCALE), -127, 127).astype(np.int8)
    return codes


class VectorIndex:
    def __init__(self, dim: int, *, exact_max_rows: int = EXACT_MAX_ROWS) -> None:
        self.dim = dim
        self._codes = np.zeros((0, dim), dtype=np.int8)
        self._size = 0
        self._present = np.zeros(0, dtype=bool)
        self._exact_max_rows = exact_max_rows
        self._graph: Index | None = None
        self._graph_rows = 0

    @property
    def size(self) -> int:
        return self._size

    def has(self, rows: npt.NDArray[np.int64]) -> npt.NDArray[np.bool_]:
        inside = rows < self._size
        out = np.zeros(len(rows), dtype=bool)
        out[inside] = self._present[rows[inside]]
        return out

    def put(self, rows: npt.NDArray[np.int64], vectors: npt.NDArray[np.float32]) -> None:
        """Set the vectors of ``rows`` (rows beyond the current size grow the index)."""
        if not len(rows):
            return
        if vectors.shape[1] != self.dim:
            raise ValueError(f"vectors have {vectors.shape[1]} dimensions, the index {self.dim}")
        needed = int(rows.max()) + 1
        if needed > len(self._codes):
            capacity = max(needed, 2 * len(self._codes), 1024)
            codes = np.zeros((capacity, self.dim), dtype=np.int8)
            codes[: self._size] = self._codes[: self._size]
            present = np.zeros(capacity, dtype=bool)
            present[: self._size] = self._present[: self._size]
            self._codes, self._present = codes, present
        self._size = max(self._size, needed)
        rows, first = np.unique(rows, return_index=True)  # a row given twice: its first vector
        was_present = self._present[rows].copy()
        self._codes[rows] = quantise(vectors[first])
        self._present[rows] = True
        if self._graph is not None:
            if was_present.any():  # a changed vector: the graph node is replaced
                self._graph.remove(rows[was_present].astype(np.uint64))
            self._graph.add(rows.astype(np.uint64), self._codes[rows].astype(np.float32) / _SCALE)
        elif self._size > self._exact_max_rows:
            self._build_graph()

    def _build_graph(self) -> None:
        graph = Index(ndim=self.dim, metric=MetricKind.Cos, dtype=ScalarKind.I8, connectivity=16)
        rows = np.flatnonzero(self._present[: self._size]).astype(np.uint64)
        graph.add(rows, self._codes[rows.astype(np.int64)].astype(np.float32) / _SCALE)
        self._graph = graph

    def search(
        self,
        query: npt.NDArray[np.float32],
        count: int,
        allowed: npt.NDArray[np.bool_] | None = None,
    ) -> tuple[npt.NDArray[np.int64], npt.NDArray[np.float32]]:
        """Up to ``count`` rows nearest to ``query`` (cosine, best first) among ``allowed`` rows."""
        if self._size == 0 or count <= 0:
            return np.zeros(0, dtype=np.int64), np.zeros(0, dtype=np.float32)
        usable = self._present[: self._size]
        if allowed is not None:
            usable = usable & allowed[: self._size]
        n_usable = int(usable.sum())
        if n_usable == 0:
            return np.zeros(0, dtype=np.int64), np.zeros(0, dtype=np.float32)
        code = quantise(query.reshape(1, -1))[0]
        if self._graph is None or n_usable <= _SUBSET_EXACT_MAX_ROWS:
            return self._exact(code, count, np.flatnonzero(usable))
        wanted = min(n_usable, count)
        # Over-fetch by the share of rows the filter forbids (plus a margin), not by a constant:
        # an HNSW search for 800 neighbours costs several times one for 240.
        share = n_usable / self._size
        fetch = min(self._size, int(count / share * 1.2) + 16)
        while True:
            found = self._graph.search(code.astype(np.float32) / _SCALE, fetch)
            rows = found.keys.astype(np.int64)
            keep = usable[rows]
            if keep.sum() >= wanted or fetch >= self._size:
                rows, distances = rows[keep][:count], found.distances[keep][:count]
                return rows, (1.0 - distances).astype(np.float32)
            fetch = min(self._size, fetch * 4)

    def cosines(self, rows: npt.NDArray[np.int64], query: npt.NDArray[np.float32]) -> npt.NDArray[np.float32]:
        """Cosine of ``query`` to each of ``rows`` (which must hold vectors), int8 on both sides."""
        codes = self._codes[rows].astype(np.float32)
        code = quantise(query.reshape(1, -1))[0].astype(np.float32)
        norms = np.linalg.norm(codes, axis=1) * float(np.linalg.norm(code))
        cosines: npt.NDArray[np.float32] = (codes @ code / np.maximum(norms, 1e-12)).astype(np.float32)
        return cosines

    def _exact(
        self, code: npt.NDArray[np.int8], count: int, rows: npt.NDArray[np.int64]
    ) -> tuple[npt.NDArray[np.int64], npt.NDArray[np.float32]]:
        subset = self._codes[: self._size] if len(rows) == self._size else self._codes[rows]
        count = min(count, len(rows))
        found = search(subset, code, count, MetricKind.Cos, exact=True)
        positions = found.keys.astype(np.int64)
        cosines = (1.0 - found.distances).astype(np.float32)
        return rows[positions], cosines
