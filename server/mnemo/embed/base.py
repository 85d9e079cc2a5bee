"""What every embedder is: a model id, a dimension, and two ways to embed (questions, documents).

Embeddings are L2-normalised float32 rows. The model id names the exact weights, so vectors made
by different models are never compared: the store keeps each vector with the id of its model.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import shutil
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Protocol

import numpy as np
import numpy.typing as npt

from mnemo.errors import ConfigError

MANIFEST = "mnemo-model.json"
_VERIFIED_STAMP = ".verified.json"


class Embedder(Protocol):
    model_id: str
    dim: int
    # The cosine from which a question and a text count as related: a property of each model,
    # set between where its off-topic questions and its answers fall (docs/recall.md).
    related_cosine: float
    # The id of the whole model when this one keeps only its leading dimensions (Matryoshka), so
    # that vectors stored by the whole model can be cut instead of recomputed; None otherwise.
    cut_from: str | None
    # Whether two threads may embed at once (a question need not wait for a background batch).
    is_thread_safe: bool
    # The recall score's weights for this model, chosen by cross-validation on LoCoMo
    # (tools/fit/tune_recall_weights.py): the vector's share of relevance (BM25 has the rest) and
    # the weight of a neighbouring turn's relevance. A weak model gets a small vector share.
    vector_weight: float
    context_weight: float

    def embed_queries(self, texts: Sequence[str]) -> npt.NDArray[np.float32]: ...

    def embed_documents(self, texts: Sequence[str]) -> npt.NDArray[np.float32]: ...


@dataclass(frozen=True, slots=True)
class ModelInfo:
    """An installed model: what `mnemo models` lists and `mnemo status` names."""

    id: str
    family: str
    dim: int
    location: str
    quality_rank: int  # lower is better; `auto` picks the lowest installed


def sha256_of(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as f:
        while chunk := f.read(1 << 20):
            digest.update(chunk)
    return digest.hexdigest()


def verify_files(directory: Path, expected: dict[str, str]) -> None:
    """Check every file against its pinned sha256; raise ConfigError naming the first mismatch.

    Hashing hundreds of megabytes at every start would be slow, so a successful check is
    remembered in a stamp file keyed by each file's size and mtime, and redone only when a file
    changes.
    """
    stamp_path = directory / _VERIFIED_STAMP
    current = {}
    for name, digest in expected.items():
        path = directory / name
        if not path.is_file():
            raise ConfigError(f"model file {path} is missing")
        stat = path.stat()
        current[name] = [stat.st_size, stat.st_mtime_ns, digest]
    try:
        if json.loads(stamp_path.read_text()) == current:
            return
    except (OSError, ValueError):
        pass
    for name, digest in expected.items():
        actual = sha256_of(directory / name)
        if actual != digest:
            raise ConfigError(
                f"model file {directory / name} has sha256 {actual}, expected {digest}: "
                "it is corrupt or not the pinned file; reinstall the model"
            )
    # A read-only model directory is verified every time instead.
    with contextlib.suppress(OSError):
        stamp_path.write_text(json.dumps(current))


@contextlib.contextmanager
def staged_install(models_dir: Path, model_id: str) -> Iterator[Path]:
    """A hidden directory to assemble a model in: renamed to ``models_dir/model_id`` when the
    block succeeds, removed when it fails, so no half-installed model is ever visible."""
    target = models_dir / model_id
    if target.exists():
        raise ConfigError(f"model {model_id} is already installed at {target}; remove it first")
    models_dir.mkdir(parents=True, exist_ok=True)
    partial = models_dir / f".{model_id}.partial"
    shutil.rmtree(partial, ignore_errors=True)
    partial.mkdir()
    try:
        yield partial
    except BaseException:
        shutil.rmtree(partial, ignore_errors=True)
        raise
    partial.rename(target)


def normalised(matrix: npt.NDArray[np.float32]) -> npt.NDArray[np.float32]:
    norms = np.linalg.norm(matrix, axis=1, keepdims=True)
    unit: npt.NDArray[np.float32] = (matrix / np.maximum(norms, 1e-12)).astype(np.float32)
    return unit
