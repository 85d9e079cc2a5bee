"""The embeddings table: each (owner, part)'s vector, per model, so a model switch keeps the old ones.

An owner is a memory id (part 0) or an episode id (part n: its n-th passage). Vectors are stored
as little-endian float32 bytes.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime
from typing import Literal

import numpy as np
import numpy.typing as npt

from mnemo.clock import as_stored, utc_now
from mnemo.errors import StoreError
from mnemo.store.connection import Tables


def _matrix(blobs: list[bytes]) -> npt.NDArray[np.float32]:
    width = len(blobs[0])
    if any(len(b) != width for b in blobs) or width % 4:
        raise StoreError("stored embeddings of one model have different sizes; re-embed with `mnemo models`")
    return np.frombuffer(b"".join(blobs), dtype="<f4").reshape(len(blobs), width // 4).astype(np.float32)


Owners = Literal["all", "episodes", "memories"]
# Whose vectors: an episode's passages are told apart by the episodes table; a memory's vector is
# part 0 (as is an episode's first passage: the index skips the owners it does not hold).
_OWNERS: dict[str, str] = {
    "all": "",
    "episodes": " AND owner IN (SELECT id FROM episodes)",
    "memories": " AND part = 0",
}


class EmbeddingTables(Tables):
    def put_embeddings(
        self, model: str, keys: Sequence[tuple[str, int]], vectors: npt.NDArray[np.float32]
    ) -> None:
        """Store vectors made by ``model`` for (owner, part) keys."""
        if not keys:
            return
        now = utc_now()
        rows = [
            [model, owner, part, vectors[i].astype("<f4").tobytes(), now]
            for i, (owner, part) in enumerate(keys)
        ]
        with self._db.translated(f"writing {len(rows)} embeddings"):
            self._db.insert(
                "embeddings", rows, column_names=["model", "owner", "part", "vector", "created_at"]
            )

    def embedding_keys_page(
        self, model: str, after: tuple[str, int], limit: int, *, owners: Owners = "all"
    ) -> list[tuple[str, int]]:
        """(owner, part) keys after ``after`` that have a vector of ``model``, in key order
        (of ``owners``: all; episodes' passages; or part 0, memories' — see _OWNERS)."""
        sql = (
            "SELECT DISTINCT owner, part FROM embeddings WHERE model = {model:String} "
            "AND (owner, part) > ({owner:String}, {part:UInt16})"
            f"{_OWNERS[owners]} ORDER BY owner, part LIMIT {limit:d}"
        )
        with self._db.translated("reading embedding keys"):
            rows = self._db.query(
                sql, parameters={"model": model, "owner": after[0], "part": after[1]}
            ).result_rows
        return [(owner, int(part)) for owner, part in rows]

    def embeddings_page(
        self,
        model: str,
        after: tuple[str, int],
        limit: int,
        *,
        owners: Owners = "all",
        since: datetime | None = None,
    ) -> tuple[list[tuple[str, int]], npt.NDArray[np.float32]]:
        """(owner, part) keys after ``after`` and their vectors, for ``model``, in key order (of
        ``owners``: all; episodes' passages; or part 0, memories' — see _OWNERS; written at
        ``since`` or later)."""
        written = "" if since is None else " AND created_at >= {since:DateTime64(3, 'UTC')}"
        sql = (
            "SELECT owner, part, vector FROM embeddings FINAL WHERE model = {model:String} "
            "AND (owner, part) > ({owner:String}, {part:UInt16})"
            f"{_OWNERS[owners]}{written} ORDER BY owner, part LIMIT {limit:d}"
        )
        parameters: dict[str, object] = {"model": model, "owner": after[0], "part": after[1]}
        if since is not None:
            parameters["since"] = as_stored(since)
        with self._db.translated("reading embeddings"):
            rows = self._db.query(
                sql,
                parameters=parameters,
                column_formats={"vector": "bytes"},
            ).result_rows
        if not rows:
            return [], np.zeros((0, 0), dtype=np.float32)
        return [(owner, int(part)) for owner, part, _ in rows], _matrix([blob for _, _, blob in rows])
