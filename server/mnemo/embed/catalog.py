"""Which embedding models are installed, which one is used, and installing one.

Two kinds of model are known:
- EmbeddingGemma-300m int8 (quality): installed as a directory under ``models_dir``, built by
  ``tools/models/build_embeddinggemma.py`` then ``mnemo models install``, or fetched once from its hub
  with ``mnemo models fetch`` (:mod:`mnemo.embed.hub`);
- the fallback that ships with the package's own dependencies, so a fresh install works offline
  at once (see :mod:`mnemo.embed.fallback`).

``embedder = "auto"`` uses the best installed model; an explicit id must be installed; ``none``
searches by words and entities only.
"""

from __future__ import annotations

import logging
import shutil
from pathlib import Path

from mnemo.config import Settings
from mnemo.embed.base import MANIFEST, Embedder, ModelInfo, staged_install, verify_files
from mnemo.embed.fallback import FALLBACK_ID, FallbackEmbedder, fallback_info
from mnemo.embed.fidelity import Fidelity, check, has_reference, vouch
from mnemo.embed.hub import HUB_MODELS
from mnemo.embed.onnx import Manifest, OnnxEmbedder, read_manifest
from mnemo.errors import ConfigError

logger = logging.getLogger(__name__)
_FAMILY_RANK = {"embeddinggemma": 0}
# Sizes a family's vectors are trained to be cut to (Matryoshka), for the embedding_dims setting.
MATRYOSHKA_DIMS: dict[str, tuple[int, ...]] = {"embeddinggemma": (512, 256, 128)}
# What embedding_dims = "auto" keeps: EmbeddingGemma at 512 holds LoCoMo (R@10 80.5 against 80.6
# at 768) for two thirds of the vector index's RAM (docs/benchmarks/recall.md, memory at a million).
DEFAULT_DIMS: dict[str, int] = {"embeddinggemma": 512}
# Models whose files are known byte for byte: a manifest claiming one of these ids must list
# exactly one of its sets of hashes. tools/models/build_embeddinggemma.py rebuilds model.onnx
# byte-identically with the versions pinned in pyproject's build-model extra; the first set is
# today's build (7-bit weights), the second the build before it (8-bit weights, faithful only on
# CPUs with VNNI: `mnemo models verify` says so on the CPU it runs on).
_GEMMA_TOKENIZER = "6852f8d561078cc0cebe70ca03c5bfdd0d60a45f9d2e0e1e4cc05b68e9ec329e"
PINNED_FILES: dict[str, tuple[dict[str, str], ...]] = {
    "embeddinggemma-300m-int8": (
        {
            "model.onnx": "caca267e6bb777a646840c9cf1edd6b64873711b53fb10d5ede7d3d179728903",
            "tokenizer.json": _GEMMA_TOKENIZER,
        },
        {
            "model.onnx": "42b99d7ec09979a192e854f7f61c86a2d6e9960f73226acb2e551224b433ccf1",
            "tokenizer.json": _GEMMA_TOKENIZER,
        },
    ),
    **{m.id: ({f.path: f.sha256 for f in m.files},) for m in HUB_MODELS.values()},
}


def expected_files(manifest: Manifest) -> dict[str, str]:
    """The hashes a model's files must have: the pins when the model is known, else its manifest's."""
    pinned = PINNED_FILES.get(manifest.id)
    if pinned is not None and manifest.files not in pinned:
        raise ConfigError(
            f"the manifest of {manifest.id} lists other files or hashes than the pinned ones; "
            "rebuild it with tools/models/build_embeddinggemma.py or fetch it again"
        )
    return manifest.files


def installed_models(settings: Settings) -> list[ModelInfo]:
    """Every usable model, best first (manifests are read, files are not hashed here)."""
    found: list[ModelInfo] = []
    root = Path(settings.models_dir)
    if root.is_dir():
        for manifest_path in sorted(root.glob(f"*/{MANIFEST}")):
            try:
                manifest = read_manifest(manifest_path.parent)
            except ConfigError as exc:
                logger.warning("skipping %s: %s", manifest_path.parent, exc)
                continue
            found.append(
                ModelInfo(
                    id=manifest.id,
                    family=manifest.family,
                    dim=manifest.dim,
                    location=str(manifest_path.parent),
                    quality_rank=_FAMILY_RANK.get(manifest.family, 5),
                )
            )
    info = fallback_info()
    if info is not None:
        found.append(info)
    return sorted(found, key=lambda m: (m.quality_rank, m.id))


def load_embedder(settings: Settings) -> Embedder | None:
    """The configured model, loaded and verified; None only when no model is installed at all.

    With ``auto``, a model that fails to load is logged and the next best is tried.
    """
    if settings.embedder == "none":
        return None
    models = installed_models(settings)
    if settings.embedder != "auto":
        chosen = [m for m in models if m.id == settings.embedder]
        if not chosen:
            known = ", ".join(m.id for m in models) or "none"
            raise ConfigError(f"embedder {settings.embedder!r} is not installed (installed: {known})")
        models = chosen
    for info in models:
        try:
            return _load(info, settings)
        except ConfigError as exc:
            if settings.embedder != "auto":
                raise
            logger.error("cannot use embedding model %s: %s", info.id, exc)
    return None


def _load(info: ModelInfo, settings: Settings) -> Embedder:
    dims = settings.embedding_dims
    if dims == "auto":
        dims = DEFAULT_DIMS.get(info.family, 0)
    elif dims and dims != info.dim and dims not in MATRYOSHKA_DIMS.get(info.family, ()):
        allowed = ", ".join(map(str, MATRYOSHKA_DIMS.get(info.family, ()))) or "none"
        problem = (
            f"embedding_dims = {dims} does not fit {info.id} (dimensions it is trained to be cut "
            f"to: {allowed})"
        )
        if settings.embedder != "auto":
            raise ConfigError(f"{problem}; set embedding_dims = 0 to keep all {info.dim}")
        logger.warning("%s: using all %d dimensions", problem, info.dim)  # the best installed
        dims = 0
    if info.id == FALLBACK_ID:
        return FallbackEmbedder()
    prefix = settings.gemma_query_prefix if info.family == "embeddinggemma" else None
    directory = Path(info.location)
    return OnnxEmbedder(
        directory, expected_files(read_manifest(directory)), query_prefix=prefix, dims=dims or None
    )


def verify_model(info: ModelInfo) -> Fidelity | None:
    """Hash every file of an installed model against its pins (ConfigError on a mismatch), and
    say how faithful to its float model it is on this CPU (None when there is no reference)."""
    if info.id == FALLBACK_ID:
        FallbackEmbedder()  # verifies its pinned weights on construction
        return None
    directory = Path(info.location)
    files = expected_files(read_manifest(directory))
    verify_files(directory, files)
    if not has_reference(info.family):
        return None
    return check(OnnxEmbedder(directory, files, threads=2), info.family)


def install_model(
    source: Path, settings: Settings, *, allow_degraded: bool = False
) -> tuple[ModelInfo, Fidelity | None]:
    """Copy a model directory (e.g. from tools/models/build_embeddinggemma.py) into ``models_dir``.

    The source is verified against its manifest first, copied under a temporary name, checked on
    this CPU (:func:`mnemo.embed.fidelity.vouch`), then renamed, so a failed, refused or
    interrupted install leaves no half model behind.
    """
    manifest = read_manifest(source)
    files = expected_files(manifest)
    verify_files(source, files)
    target = Path(settings.models_dir) / manifest.id
    with staged_install(Path(settings.models_dir), manifest.id) as partial:
        for name in [MANIFEST, *files]:
            (partial / name).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(source / name, partial / name)
        verify_files(partial, files)
        fidelity = vouch(partial, files, manifest.family, allow_degraded=allow_degraded)
    info = ModelInfo(
        id=manifest.id,
        family=manifest.family,
        dim=manifest.dim,
        location=str(target),
        quality_rank=_FAMILY_RANK.get(manifest.family, 5),
    )
    return info, fidelity
