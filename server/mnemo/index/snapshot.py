"""A search index's inverted vector lists saved between daemon runs, read back only if they check out.

Training the lists' centroids and sorting every row into them is most of a large index's start
after its words, and reading saved lists back and checking them is a small part of that, so the
daemon saves each index's lists after making them and at exit, and the next start adopts them
(``VectorIndex.settle_lists``).

Row numbers are the daemon's own and change between runs, so saved lists name each row by its
document key, with a fingerprint of its codes; a row keeps its saved list only where its key now
holds the same codes. Files per index, in the index directory:

    <name>.lists.npz    the centroids, the rows they were trained over, and per row: its
                        fingerprint and its list
    <name>.keys.json    each row's document key, in the same order
    <name>.json         the manifest: format, model, dimensions, row count, each file's sha256

The manifest is removed first and written last, so a save cut short leaves no snapshot, and a
file that does not match its hash is not read: the lists are then made as if there were none.
(Format 1 saved an HNSW graph, ``<name>.usearch`` and ``<name>.nodes.npz``: a save removes them.)
The directory is private to the user (0700), as the store's is: keys and codes come from memories.
"""

from __future__ import annotations

import hashlib
import json
import logging
import os
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt

from mnemo.index.inverted import SavedLists
from mnemo.index.vectors import VectorIndex

logger = logging.getLogger(__name__)

FORMAT = 2
_PARTS = ("lists.npz", "keys.json")
_FORMER_PARTS = ("usearch", "nodes.npz")


def file_sha256(path: Path) -> str:
    """A file's sha256, hex (what a saved index's manifest names its files by)."""
    with path.open("rb") as f:
        return hashlib.file_digest(f, "sha256").hexdigest()


class ListsSnapshot:
    """The saved vector lists of one search index (``name``) made with one embedding model."""

    def __init__(self, directory: Path, name: str, model: str) -> None:
        self.directory = directory
        self.name = name
        self.model = model

    def _path(self, part: str) -> Path:
        return self.directory / f"{self.name}.{part}"

    @property
    def manifest_path(self) -> Path:
        return self._path("json")

    def read(self, rows_of: Callable[[list[str]], npt.NDArray[np.int64]], dim: int) -> SavedLists | None:
        """The saved lists, with the row now holding each saved row's key (``rows_of`` maps keys to
        rows, -1 for a key not indexed); None when there are none or they do not check out (a
        warning says why)."""
        try:
            manifest = json.loads(self.manifest_path.read_text(encoding="utf-8"))
        except FileNotFoundError:
            return None
        except (OSError, ValueError) as exc:
            logger.warning("vector lists snapshot %s unreadable (%s): ignored", self.manifest_path, exc)
            return None
        problem = self._check(manifest, dim)
        if problem:
            logger.warning("vector lists snapshot %s ignored: %s", self.manifest_path, problem)
            return None
        try:
            with np.load(self._path("lists.npz"), allow_pickle=False) as saved:
                centroids = saved["centroids"].astype(np.int8)
                trained_rows = int(saved["trained_rows"])
                fingerprints = saved["fingerprints"].astype(np.uint64)
                lists = saved["lists"].astype(np.int32)
            keys = json.loads(self._path("keys.json").read_text(encoding="utf-8"))
        except (OSError, ValueError, KeyError, TypeError) as exc:
            logger.warning("vector lists snapshot %s ignored: %s", self.manifest_path, exc)
            return None
        if not isinstance(keys, list) or not all(isinstance(k, str) for k in keys):
            logger.warning(
                "vector lists snapshot %s ignored: its keys are not a list of strings", self.manifest_path
            )
            return None
        if not (len(fingerprints) == len(lists) == len(keys) == manifest["rows"]):
            logger.warning("vector lists snapshot %s ignored: its parts disagree on size", self.manifest_path)
            return None
        rows = rows_of(keys)
        return SavedLists(centroids, trained_rows, rows, fingerprints, lists)

    def _check(self, manifest: Any, dim: int) -> str:
        if isinstance(manifest, dict) and manifest.get("format") == 1:
            return "an HNSW graph saved by an earlier version (new lists are made and saved)"
        if not isinstance(manifest, dict) or manifest.get("format") != FORMAT:
            return f"not a format-{FORMAT} manifest"
        made = (manifest.get("model"), manifest.get("dim"))
        if made != (self.model, dim):
            return f"made with {made[0]} ({made[1]} dimensions), not {self.model} ({dim})"
        hashes = manifest.get("sha256")
        if not isinstance(hashes, dict) or not isinstance(manifest.get("rows"), int):
            return "manifest incomplete"
        for part in _PARTS:
            path = self._path(part)
            try:
                if file_sha256(path) != hashes.get(part):
                    return f"{path.name} does not match its sha256"
            except OSError as exc:
                return f"{path.name}: {exc}"
        return ""

    def write(self, vectors: VectorIndex, keys_of_rows: Sequence[str]) -> int:
        """Save ``vectors``' lists, each row named by ``keys_of_rows[row]``; the rows saved."""
        self.directory.mkdir(mode=0o700, parents=True, exist_ok=True)
        self.manifest_path.unlink(missing_ok=True)
        for part in _FORMER_PARTS:
            self._path(part).unlink(missing_ok=True)
        temporary = {part: self._path(part + ".tmp") for part in _PARTS}
        lists, rows = vectors.saved_lists()
        with temporary["lists.npz"].open("wb") as f:
            np.savez(
                f,
                centroids=lists.centroids,
                trained_rows=np.int64(lists.trained_rows),
                fingerprints=vectors.fingerprints_of(rows),
                lists=lists.lists_of(rows),
            )
        keys = [keys_of_rows[row] for row in rows.tolist()]
        temporary["keys.json"].write_text(json.dumps(keys, ensure_ascii=False), encoding="utf-8")
        hashes = {}
        for part, path in temporary.items():
            hashes[part] = file_sha256(path)
            os.replace(path, self._path(part))
        manifest = {
            "format": FORMAT,
            "model": self.model,
            "dim": vectors.dim,
            "rows": len(rows),
            "sha256": hashes,
        }
        staged = self._path("json.tmp")
        staged.write_text(json.dumps(manifest, indent=1), encoding="utf-8")
        os.replace(staged, self.manifest_path)
        vectors.mark_saved()
        return len(rows)
