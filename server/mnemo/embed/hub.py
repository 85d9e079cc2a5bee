"""Fetching EmbeddingGemma once from its model hub, on a machine with network access.

The files of ``onnx-community/embeddinggemma-300m-ONNX`` are pinned here by revision, size and
sha256; a download that does not match is refused and nothing is installed. Files are downloaded
into a hidden ``.partial`` directory, verified, and the directory is renamed into place, so an
interrupted fetch leaves nothing half-installed (and re-running it starts over cleanly).
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import httpx2

from mnemo.embed.base import MANIFEST, staged_install
from mnemo.embed.fidelity import Fidelity, vouch
from mnemo.errors import ConfigError


@dataclass(frozen=True, slots=True)
class HubFile:
    path: str
    size: int
    sha256: str


@dataclass(frozen=True, slots=True)
class HubModel:
    """A model published on a hub: where, which revision, which files, how to use it."""

    id: str
    repository: str
    revision: str
    files: tuple[HubFile, ...]
    onnx_file: str
    family: str
    dim: int
    query_prefix: str
    document_prefix: str
    max_tokens: int = 512


EMBEDDINGGEMMA_ONNX_COMMUNITY = HubModel(
    id="embeddinggemma-300m-q8-hub",
    repository="onnx-community/embeddinggemma-300m-ONNX",
    revision="5090578d9565bb06545b4552f76e6bc2c93e4a66",
    files=(
        HubFile(
            "onnx/model_quantized.onnx",
            567_874,
            "172efde319fe1542dc41f31be6154910b05b78f7a861c265c4600eec906bd6d8",
        ),
        HubFile(
            "onnx/model_quantized.onnx_data",
            308_890_624,
            "705626e28e4c23c82ade34566b4197d97f534c12275fa406dfb71e9937d388c0",
        ),
        HubFile(
            "tokenizer.json",
            20_323_312,
            "4dda02faaf32bc91031dc8c88457ac272b00c1016cc679757d1c441b248b9c47",
        ),
    ),
    onnx_file="onnx/model_quantized.onnx",
    family="embeddinggemma",
    dim=768,
    query_prefix="task: question answering | query: ",
    document_prefix="title: none | text: ",
)
HUB_MODELS = {"embeddinggemma": EMBEDDINGGEMMA_ONNX_COMMUNITY}
DEFAULT_HUB_URL = "https://huggingface.co"
_CHUNK_BYTES = 1 << 20


def fetch_model(
    model: HubModel,
    models_dir: Path,
    *,
    hub_url: str = DEFAULT_HUB_URL,
    progress: Callable[[str, int, int], None] | None = None,
    timeout_s: float = 60.0,
    allow_degraded: bool = False,
) -> tuple[Path, Fidelity | None]:
    """Download, verify, check on this CPU (:func:`mnemo.embed.fidelity.vouch`) and install
    ``model`` under ``models_dir``; its directory and how faithful it is here."""
    with staged_install(models_dir, model.id) as partial:
        with httpx2.Client(timeout=timeout_s, follow_redirects=True) as client:
            for item in model.files:
                _download(client, model, item, partial / item.path, hub_url, progress)
        manifest = {
            "id": model.id,
            "family": model.family,
            "dim": model.dim,
            "max_tokens": model.max_tokens,
            "query_prefix": model.query_prefix,
            "document_prefix": model.document_prefix,
            "onnx_file": model.onnx_file,
            "files": {item.path: item.sha256 for item in model.files},
            "source": f"{hub_url.rstrip('/')}/{model.repository}@{model.revision}",
        }
        (partial / MANIFEST).write_text(json.dumps(manifest, indent=2) + "\n", encoding="utf-8")
        files = {item.path: item.sha256 for item in model.files}
        fidelity = vouch(partial, files, model.family, allow_degraded=allow_degraded)
    return models_dir / model.id, fidelity


def _download(
    client: httpx2.Client,
    model: HubModel,
    item: HubFile,
    destination: Path,
    hub_url: str,
    progress: Callable[[str, int, int], None] | None,
) -> None:
    url = f"{hub_url.rstrip('/')}/{model.repository}/resolve/{model.revision}/{item.path}"
    destination.parent.mkdir(parents=True, exist_ok=True)
    digest = hashlib.sha256()
    received = 0
    try:
        with client.stream("GET", url) as response:
            if response.status_code != 200:
                raise ConfigError(f"fetching {url} failed: HTTP {response.status_code}")
            with destination.open("wb") as out:
                for chunk in response.iter_bytes(_CHUNK_BYTES):
                    received += len(chunk)
                    if received > item.size:
                        raise ConfigError(f"{url} is larger than the pinned {item.size:,} bytes; refused")
                    digest.update(chunk)
                    out.write(chunk)
                    if progress is not None:
                        progress(item.path, received, item.size)
    except httpx2.HTTPError as exc:
        raise ConfigError(f"fetching {url} failed: {exc}") from None
    if received != item.size or digest.hexdigest() != item.sha256:
        raise ConfigError(
            f"{url} does not match its pin ({received:,} bytes, sha256 {digest.hexdigest()}; "
            f"expected {item.size:,} bytes, sha256 {item.sha256}); nothing was installed"
        )
