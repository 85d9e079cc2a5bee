"""ONNX Runtime embedders: EmbeddingGemma-300m (int8) from an installed model directory.

The directory holds the ONNX graph, ``tokenizer.json`` and ``mnemo-model.json`` (model id, family,
dimension, prefixes, and the sha256 of every file). Files are verified before loading, against
the hashes pinned in :mod:`mnemo.embed.catalog` for known models. Texts are embedded
without padding: texts of the same token length share a batch, others run alone. Padding changes
an int8 model's output (a padded text's vector is not the one it gets alone), while without it
the int8 model keeps the float model's quality.
"""

from __future__ import annotations

import json
import logging
import os
from collections import defaultdict
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt
import onnxruntime
from pydantic import BaseModel, ConfigDict, ValidationError
from tokenizers import Tokenizer

from mnemo.embed.base import MANIFEST, normalised, verify_files
from mnemo.embed.mapped import gather_tables
from mnemo.errors import ConfigError

logger = logging.getLogger(__name__)
_MAX_BATCH = 32
# A run over more tokens than this gives its buffers back to the system when it ends. ONNX
# Runtime's arena otherwise keeps what its largest run took for the process's life (long texts,
# cut to one length, batch together); a question's run stays below, and keeps the arena's speed
# (tools/bench/bench_embed_memory.py measures both; docs/benchmarks/recall.md, the model's arena).
_SHRINK_TOKENS = 512


class Manifest(BaseModel):
    """``mnemo-model.json``: what a model directory holds and how to use it."""

    model_config = ConfigDict(frozen=True, extra="allow")

    id: str
    family: str
    dim: int
    max_tokens: int = 512
    query_prefix: str = ""
    document_prefix: str = ""
    onnx_file: str = "model.onnx"
    related_cosine: float = 0.3
    vector_weight: float = 0.7
    context_weight: float = 0.6
    files: dict[str, str]


def read_manifest(directory: Path) -> Manifest:
    path = directory / MANIFEST
    try:
        return Manifest.model_validate(json.loads(path.read_text(encoding="utf-8")))
    except FileNotFoundError:
        raise ConfigError(f"{directory} is not a model directory: it has no {MANIFEST}") from None
    except (ValueError, ValidationError) as exc:
        raise ConfigError(f"{path} is not a valid model manifest: {exc}") from None


def _mapped(model: Path) -> dict[str, np.memmap]:
    """The model's token tables mapped from its file, or none when its format is not understood
    (ONNX Runtime then loads the file as it is, and says what is wrong with it)."""
    try:
        return gather_tables(model)
    except (OSError, ValueError) as exc:
        logger.warning("%s: its tables are loaded into memory, not mapped: %s", model, exc)
        return {}


class OnnxEmbedder:
    """A transformer embedder whose ONNX graph maps (input_ids, attention_mask) to unit vectors."""

    def __init__(
        self,
        directory: Path,
        expected_files: dict[str, str],
        *,
        query_prefix: str | None = None,
        threads: int = 0,
        dims: int | None = None,
    ) -> None:
        """Load after checking every file against ``expected_files`` (name → sha256).

        ``dims`` keeps that many leading dimensions (Matryoshka models); the model id says so.
        """
        manifest = read_manifest(directory)
        verify_files(directory, expected_files)
        if dims is not None and not 0 < dims <= manifest.dim:
            raise ConfigError(f"{manifest.id} has {manifest.dim} dimensions; cannot keep {dims}")
        self.dim = dims or manifest.dim
        self.model_id = manifest.id if self.dim == manifest.dim else f"{manifest.id}-d{self.dim}"
        self.cut_from = None if self.dim == manifest.dim else manifest.id
        self.family = manifest.family
        self.related_cosine = manifest.related_cosine
        self.vector_weight = manifest.vector_weight
        self.context_weight = manifest.context_weight
        self.is_thread_safe = True  # InferenceSession.run may be called from several threads
        self._query_prefix = manifest.query_prefix if query_prefix is None else query_prefix
        self._document_prefix = manifest.document_prefix
        self._tokenizer = Tokenizer.from_file(str(directory / "tokenizer.json"))
        self._tokenizer.no_padding()
        self._tokenizer.enable_truncation(manifest.max_tokens)
        options = onnxruntime.SessionOptions()
        options.intra_op_num_threads = threads or min(4, os.cpu_count() or 1)
        options.inter_op_num_threads = 1
        options.log_severity_level = 3
        # The pool's threads spin between operators within a run (fast), but stop when the run
        # returns: left spinning, they would take a core from the ranking that follows a
        # question's embedding and from the event loop, slowing both.
        options.add_session_config_entry("session.force_spinning_stop", "1")
        self._shrink = onnxruntime.RunOptions()
        self._shrink.add_run_config_entry("memory.enable_memory_arena_shrinkage", "cpu:0")
        model = directory / manifest.onnx_file
        # The token table read from the file, not copied into the heap (mnemo.embed.mapped); the
        # values must outlive the session.
        self.mapped = _mapped(model)
        self._tables = {n: onnxruntime.OrtValue.ortvalue_from_numpy(t) for n, t in self.mapped.items()}
        for name, table in self._tables.items():
            options.add_initializer(name, table)
        self._session = onnxruntime.InferenceSession(str(model), options, providers=["CPUExecutionProvider"])
        outputs = self._session.get_outputs()
        named = [o.name for o in outputs if o.name == "sentence_embedding"]
        self._output = named[0] if named else outputs[-1].name
        self._inputs = {i.name for i in self._session.get_inputs()}

    def embed_queries(self, texts: Sequence[str]) -> npt.NDArray[np.float32]:
        return self.embed_raw([self._query_prefix + t for t in texts])

    def embed_documents(self, texts: Sequence[str]) -> npt.NDArray[np.float32]:
        return self.embed_raw([self._document_prefix + t for t in texts])

    def embed_raw(self, texts: Sequence[str]) -> npt.NDArray[np.float32]:
        """``texts`` as given, prefixes included (the fidelity check's reference texts have theirs)."""
        out = np.zeros((len(texts), self.dim), dtype=np.float32)
        if not texts:
            return out
        encodings = self._tokenizer.encode_batch(list(texts))
        by_length: dict[int, list[int]] = defaultdict(list)
        for i, encoding in enumerate(encodings):
            by_length[len(encoding.ids)].append(i)
        for positions in by_length.values():
            for start in range(0, len(positions), _MAX_BATCH):
                batch = positions[start : start + _MAX_BATCH]
                ids = np.asarray([encodings[i].ids for i in batch], dtype=np.int64)
                feed: dict[str, Any] = {"input_ids": ids, "attention_mask": np.ones_like(ids)}
                if "token_type_ids" in self._inputs:
                    feed["token_type_ids"] = np.zeros_like(ids)
                options = self._shrink if ids.size > _SHRINK_TOKENS else None
                result = self._session.run([self._output], feed, options)[0]
                if result.ndim == 3:  # token embeddings: mean-pool (no padding, so a plain mean)
                    result = result.mean(axis=1)
                out[batch] = result[:, : self.dim]
        return normalised(out)
