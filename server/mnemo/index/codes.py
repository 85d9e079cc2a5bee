"""int8 codes of unit vectors: how the vector index stores them, searches them exactly, and
fingerprints them.

A code is ``round(127·v)`` of an L2-normalised vector: a quarter of float32's RAM, and cosines
between codes stay close to those between the vectors. A :class:`CodeGroup` holds one group's
codes contiguously, so a search of the group reads them in place. Exact search goes through
usearch's brute-force int8 kernel (SIMD inner products), which this module alone calls.
"""

from __future__ import annotations

import numpy as np
import numpy.typing as npt
from usearch.index import MetricKind, search  # type: ignore[attr-defined]

_SCALE = 127.0
_CHUNK_ROWS = 16_384  # queries searched at once by ``nearest``: usearch holds a result row each


def quantise(vectors: npt.NDArray[np.float32]) -> npt.NDArray[np.int8]:
    """int8 codes of unit vectors (rows are re-normalised first, so any scale is accepted)."""
    norms = np.linalg.norm(vectors, axis=1, keepdims=True)
    unit = vectors / np.maximum(norms, 1e-12)
    codes: npt.NDArray[np.int8] = np.clip(np.rint(unit * _SCALE), -127, 127).astype(np.int8)
    return codes


def best(
    codes: npt.NDArray[np.int8], code: npt.NDArray[np.int8], count: int
) -> tuple[npt.NDArray[np.int64], npt.NDArray[np.float32]]:
    """The positions in ``codes`` of the ``count`` nearest to ``code`` (cosine, exact), best
    first, and their cosines."""
    count = min(count, len(codes))
    if count <= 0:
        return np.zeros(0, dtype=np.int64), np.zeros(0, dtype=np.float32)
    found = search(codes, code, count, MetricKind.Cos, exact=True)
    return found.keys.astype(np.int64), (1.0 - found.distances).astype(np.float32)


def nearest(targets: npt.NDArray[np.int8], codes: npt.NDArray[np.int8]) -> npt.NDArray[np.int32]:
    """The position in ``targets`` of the nearest to each of ``codes`` (cosine, exact)."""
    out = np.empty(len(codes), dtype=np.int32)
    for start in range(0, len(codes), _CHUNK_ROWS):
        chunk = codes[start : start + _CHUNK_ROWS]
        found = search(targets, chunk, 1, MetricKind.Cos, exact=True)
        out[start : start + len(chunk)] = np.asarray(found.keys).reshape(-1)
    return out


def fingerprints(codes: npt.NDArray[np.int8]) -> npt.NDArray[np.uint64]:
    """A 64-bit fingerprint of each row of codes (a fixed random linear hash of its bytes): two
    rows with different codes share one with probability ~2⁻⁶⁴."""
    dim = codes.shape[1]
    width = -(-dim // 8) * 8
    multipliers = np.random.default_rng(dim).integers(1, 1 << 63, size=width // 8, dtype=np.uint64) | 1
    padded = np.zeros((len(codes), width), dtype=np.int8)
    padded[:, :dim] = codes
    hashed: npt.NDArray[np.uint64] = (padded.view(np.uint64) * multipliers).sum(axis=1, dtype=np.uint64)
    return hashed


class CodeGroup:
    """One group's codes, contiguous, and the row each slot holds."""

    __slots__ = ("codes", "rows", "size")

    def __init__(self, dim: int) -> None:
        self.codes = np.zeros((0, dim), dtype=np.int8)
        self.rows = np.zeros(0, dtype=np.int64)
        self.size = 0

    @classmethod
    def holding(cls, codes: npt.NDArray[np.int8], rows: npt.NDArray[np.int64]) -> CodeGroup:
        """A group of ``rows`` with ``codes`` (as they are: grown by copy at the next append)."""
        group = cls(codes.shape[1])
        group.codes, group.rows, group.size = codes, rows, len(rows)
        return group

    def append(self, rows: npt.NDArray[np.int64], codes: npt.NDArray[np.int8]) -> npt.NDArray[np.int64]:
        """Store new rows' codes at the end; their slots."""
        needed = self.size + len(rows)
        if needed > len(self.rows):
            # Grow by a quarter, not double: codes are most of the index's RAM.
            capacity = max(needed, len(self.rows) + len(self.rows) // 4, 256)
            grown_codes = np.zeros((capacity, self.codes.shape[1]), dtype=np.int8)
            grown_codes[: self.size] = self.codes[: self.size]
            grown_rows = np.zeros(capacity, dtype=np.int64)
            grown_rows[: self.size] = self.rows[: self.size]
            self.codes, self.rows = grown_codes, grown_rows
        slots = np.arange(self.size, needed, dtype=np.int64)
        self.codes[slots] = codes
        self.rows[slots] = rows
        self.size = needed
        return slots

    def trim(self) -> None:
        """Give back the spare rows growth left (growth by a quarter leaves up to a fifth spare)."""
        if len(self.rows) > self.size:
            self.codes = self.codes[: self.size].copy()
            self.rows = self.rows[: self.size].copy()
