"""Whether an int8 model computes on this CPU what its float model computes.

ONNX Runtime picks its integer kernels by what the CPU has, so the same ``model.onnx`` can give
other vectors on another CPU: int8 weights of the full 8-bit range saturate the 16-bit sums of the
AVX2 kernels of CPUs without VNNI (an AVX2-only AMD EPYC took EmbeddingGemma to cosine 0.71–0.97
from its float model). mnemo ships the float model's vectors of a few texts (the family's
``*-reference.json`` beside this module); a model of that family is checked against them where it
is installed: on this CPU, every text's cosine to the float vector must reach the file's floor.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from functools import cache
from importlib import resources
from pathlib import Path

import numpy as np

from mnemo.embed.onnx import OnnxEmbedder
from mnemo.errors import ConfigError

_REFERENCES = {"embeddinggemma": "embeddinggemma-reference.json"}


@dataclass(frozen=True, slots=True)
class Fidelity:
    cosines: tuple[float, ...]  # per reference text, to the float model's vector
    floor: float

    @property
    def lowest(self) -> float:
        return min(self.cosines)

    @property
    def faithful(self) -> bool:
        return self.lowest >= self.floor

    def describe(self) -> str:
        verdict = "within" if self.faithful else "BELOW"
        shown = ", ".join(f"{c:.4f}" for c in self.cosines)
        return (
            f"cosine to the float model: lowest {self.lowest:.4f} ({verdict} the floor {self.floor}; {shown})"
        )


@cache
def _reference(family: str) -> tuple[tuple[str, ...], np.ndarray, float] | None:
    name = _REFERENCES.get(family)
    if name is None:
        return None
    data = json.loads(resources.files("mnemo.embed").joinpath(name).read_text(encoding="utf-8"))
    return tuple(data["texts"]), np.asarray(data["vectors"], dtype=np.float32), float(data["floor"])


def has_reference(family: str) -> bool:
    return family in _REFERENCES


def check(embedder: OnnxEmbedder, family: str) -> Fidelity | None:
    """``embedder``'s fidelity on this CPU; None for a family with no reference. The reference
    texts carry their prefixes, so they are embedded as they are (``embed_raw``)."""
    reference = _reference(family)
    if reference is None:
        return None
    texts, expected, floor = reference
    got = embedder.embed_raw(list(texts))
    width = got.shape[1]
    cut = expected[:, :width] / np.linalg.norm(expected[:, :width], axis=1, keepdims=True)
    cosines = np.sum(got * cut, axis=1) / np.linalg.norm(got, axis=1)
    return Fidelity(tuple(round(float(c), 4) for c in cosines), floor)


def of_loaded(embedder: object) -> Fidelity | None:
    """The loaded embedder's fidelity on this CPU (the daemon checks at start); None for one that
    is not an int8 ONNX model of a family with a reference."""
    if not isinstance(embedder, OnnxEmbedder):
        return None
    return check(embedder, embedder.family)


def vouch(directory: Path, files: dict[str, str], family: str, *, allow_degraded: bool) -> Fidelity | None:
    """Check the model in ``directory`` on this CPU before it is installed; refuse it (ConfigError)
    when it falls below its floor, unless ``allow_degraded``. None for a family with no reference."""
    if not has_reference(family):
        return None
    fidelity = check(OnnxEmbedder(directory, files, threads=2), family)
    assert fidelity is not None
    if not fidelity.faithful and not allow_degraded:
        raise ConfigError(
            f"this model would be degraded on this CPU: {fidelity.describe()}. ONNX Runtime's int8 "
            "kernels depend on the CPU: without AVX-512 VNNI, int8 weights of the full 8-bit range "
            "saturate its 16-bit sums. Build the model with tools/models/build_embeddinggemma.py (7-bit "
            "weights, exact on every x86-64 CPU) and install that, or pass --allow-degraded to "
            "install this one anyway; nothing was installed"
        )
    return fidelity
