"""A search index's vector graph saved between daemon runs, and read back only if it checks out.

Building the HNSW graph is most of a large index's start, and reading one back and checking it is
a small part of that, so the daemon saves each index's graph after building it and at exit, and
the next start adopts it (``VectorIndex.settle_graph``).

Row numbers are the daemon's own and change between runs, so a saved graph names each node by its
document key, with a fingerprint of the codes it was built from; a node is kept only where its key
now holds the same codes. Files per index, in the index directory:

    <name>.usearch      the graph (usearch's format)
    <name>.nodes.npz    each node's label (the row it was) and fingerprint
    <name>.keys.json    each node's document key, in the same order
    <name>.json         the manifest: format, model, dimensions, node count, each file's sha256

The manifest is removed first and written last, so a save cut short leaves no snapshot, and a
file that does not match its hash is not read: the graph is then built as if there were none.
The directory is private to the user (0700), as the store's is: keys and codes come from memories.
"""

from __future__ import annotations

import hashlib
import json
import logging
import os
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from mnemo.index.vectors import SavedGraph, VectorIndex

logger = logging.getLogger(__name__)

FORMAT = 1
_PARTS = ("usearch", "nodes.npz", "keys.json")


def _sha256(path: Path) -> str:
    with path.open("rb") as f:
        return hashlib.file_digest(f, "sha256").hexdigest()


class GraphSnapshot:
    """The saved graph of one search index (``name``) made with one embedding model."""

    def __init__(self, directory: Path, name: str, model: str) -> None:
        self.directory = directory
        self.name = name
        self.model = model

    def _path(self, part: str) -> Path:
        return self.directory / f"{self.name}.{part}"

    @property
    def manifest_path(self) -> Path:
        return self._path("json")

    def read(self, row_of: Mapping[str, int], dim: int) -> SavedGraph | None:
        """The saved graph, with the row now holding each node's key; None when there is none or
        it does not check out (a warning says why)."""
        try:
            manifest = json.loads(self.manifest_path.read_text(encoding="utf-8"))
        except FileNotFoundError:
            return None
        except (OSError, ValueError) as exc:
            logger.warning("vector graph snapshot %s unreadable (%s): ignored", self.manifest_path, exc)
            return None
        problem = self._check(manifest, dim)
        if problem:
            logger.warning("vector graph snapshot %s ignored: %s", self.manifest_path, problem)
            return None
        try:
            with np.load(self._path("nodes.npz"), allow_pickle=False) as nodes:
                labels = nodes["labels"].astype(np.uint64)
                fingerprints = nodes["fingerprints"].astype(np.uint64)
            keys = json.loads(self._path("keys.json").read_text(encoding="utf-8"))
        except (OSError, ValueError, KeyError) as exc:
            logger.warning("vector graph snapshot %s ignored: %s", self.manifest_path, exc)
            return None
        if not (len(labels) == len(fingerprints) == len(keys) == manifest["nodes"]):
            logger.warning("vector graph snapshot %s ignored: its parts disagree on size", self.manifest_path)
            return None
        rows = np.fromiter((row_of.get(k, -1) for k in keys), dtype=np.int64, count=len(keys))
        return SavedGraph(self._path("usearch"), labels, rows, fingerprints)

    def _check(self, manifest: Any, dim: int) -> str:
        if not isinstance(manifest, dict) or manifest.get("format") != FORMAT:
            return f"not a format-{FORMAT} manifest"
        made = (manifest.get("model"), manifest.get("dim"))
        if made != (self.model, dim):
            return f"made with {made[0]} ({made[1]} dimensions), not {self.model} ({dim})"
        hashes = manifest.get("sha256")
        if not isinstance(hashes, dict) or not isinstance(manifest.get("nodes"), int):
            return "manifest incomplete"
        for part in _PARTS:
            path = self._path(part)
            try:
                if _sha256(path) != hashes.get(part):
                    return f"{path.name} does not match its sha256"
            except OSError as exc:
                return f"{path.name}: {exc}"
        return ""

    def write(self, vectors: VectorIndex, keys_of_rows: Sequence[str]) -> int:
        """Save ``vectors``' graph, its nodes named by ``keys_of_rows[row]``; the node count."""
        self.directory.mkdir(mode=0o700, parents=True, exist_ok=True)
        self.manifest_path.unlink(missing_ok=True)
        temporary = {part: self._path(part + ".tmp") for part in _PARTS}
        rows = vectors.save_graph(temporary["usearch"])
        fingerprints = vectors.fingerprints_of(rows)
        with temporary["nodes.npz"].open("wb") as f:
            np.savez(f, labels=rows.astype(np.uint64), fingerprints=fingerprints)
        keys = [keys_of_rows[row] for row in rows.tolist()]
        temporary["keys.json"].write_text(json.dumps(keys, ensure_ascii=False), encoding="utf-8")
        hashes = {}
        for part, path in temporary.items():
            hashes[part] = _sha256(path)
            os.replace(path, self._path(part))
        manifest = {
            "format": FORMAT,
            "model": self.model,
            "dim": vectors.dim,
            "nodes": len(rows),
            "sha256": hashes,
        }
        staged = self._path("json.tmp")
        staged.write_text(json.dumps(manifest, indent=1), encoding="utf-8")
        os.replace(staged, self.manifest_path)
        return len(rows)
