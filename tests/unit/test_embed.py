"""Embedding models: the fallback that ships with the package, pinned files, installing a model
(in processes of their own: tests/daemon/test_embed.py)."""

from __future__ import annotations

import hashlib
import json
import os
from pathlib import Path

import numpy as np
import pytest

from mnemo.config import load_settings
from mnemo.embed import install_model, installed_models, load_embedder, verify_model
from mnemo.embed.base import MANIFEST, verify_files
from mnemo.embed.fallback import FALLBACK_ID, FallbackEmbedder
from mnemo.embed.hub import HubFile, HubModel, fetch_model
from mnemo.errors import ConfigError
from tests.helpers import publish_to_hub


@pytest.fixture(scope="module")
def fallback() -> FallbackEmbedder:
    return FallbackEmbedder()


def test_the_fallback_embeds_unit_vectors_that_put_paraphrases_close(fallback: FallbackEmbedder) -> None:
    docs = fallback.embed_documents(
        [
            "Deploys happen on Thursday afternoons.",
            "The billing database keeps two replicas.",
            "Los despliegues son los jueves por la tarde.",
        ]
    )
    assert docs.shape == (3, fallback.dim) and docs.dtype == np.float32
    np.testing.assert_allclose(np.linalg.norm(docs, axis=1), 1.0, atol=1e-5)
    question = fallback.embed_queries(["which day do we ship releases?"])[0]
    assert question @ docs[0] > question @ docs[1]
    assert docs[0] @ docs[2] > docs[1] @ docs[2], "the Spanish sentence is closest to its English twin"


def test_the_fallback_gives_the_same_vector_alone_and_in_a_batch(fallback: FallbackEmbedder) -> None:
    texts = ["short one", "a rather longer sentence about the gateway timeout in lb.tf", "tercera frase"]
    batch = fallback.embed_documents(texts)
    alone = np.stack([fallback.embed_documents([t])[0] for t in texts])
    assert np.min(np.sum(batch * alone, axis=1)) > 0.999


def test_a_fresh_install_uses_the_fallback_and_none_turns_vectors_off(tmp_path: Path) -> None:
    settings = load_settings({"MNEMO_HOME": str(tmp_path)})
    assert [m.id for m in installed_models(settings)] == [FALLBACK_ID]
    embedder = load_embedder(settings)
    assert embedder is not None and embedder.model_id == FALLBACK_ID
    assert load_embedder(load_settings({"MNEMO_HOME": str(tmp_path), "MNEMO_EMBEDDER": "none"})) is None
    with pytest.raises(ConfigError, match="not installed .*use-multilingual-v3"):
        load_embedder(
            load_settings({"MNEMO_HOME": str(tmp_path), "MNEMO_EMBEDDER": "embeddinggemma-300m-int8"})
        )


def test_embedding_dims_cut_only_models_trained_for_it(tmp_path: Path) -> None:
    home = {"MNEMO_HOME": str(tmp_path), "MNEMO_EMBEDDING_DIMS": "256"}
    embedder = load_embedder(load_settings(home))  # auto picks the fallback: kept whole
    assert embedder is not None and embedder.model_id == FALLBACK_ID and embedder.dim == 512
    with pytest.raises(ConfigError, match=r"embedding_dims = 256 does not fit use-multilingual-v3"):
        load_embedder(load_settings({**home, "MNEMO_EMBEDDER": FALLBACK_ID}))


@pytest.mark.skipif(not os.environ.get("MNEMO_TEST_MODELS_DIR"), reason="set MNEMO_TEST_MODELS_DIR")
def test_embeddinggemma_keeps_512_dimensions_by_default_and_a_cut_is_its_renormalised_prefix(
    tmp_path: Path,
) -> None:
    env = {
        "MNEMO_HOME": str(tmp_path),
        "MNEMO_MODELS_DIR": os.environ["MNEMO_TEST_MODELS_DIR"],
        "MNEMO_EMBEDDER": "embeddinggemma-300m-int8",
    }
    whole = load_embedder(load_settings({**env, "MNEMO_EMBEDDING_DIMS": "0"}))
    default = load_embedder(load_settings(env))
    cut = load_embedder(load_settings({**env, "MNEMO_EMBEDDING_DIMS": "256"}))
    assert whole is not None and default is not None and cut is not None
    assert (whole.model_id, whole.dim, whole.cut_from) == ("embeddinggemma-300m-int8", 768, None)
    assert (default.model_id, default.dim) == ("embeddinggemma-300m-int8-d512", 512)  # "auto"
    assert (cut.model_id, cut.dim) == ("embeddinggemma-300m-int8-d256", 256)  # never mixed with 768
    assert default.cut_from == cut.cut_from == "embeddinggemma-300m-int8"  # whose stored vectors to cut
    texts = ["Deploys moved to Thursday because QA needs Wednesday.", "¿Qué día desplegamos?"]
    prefix = whole.embed_documents(texts)[:, :256]
    np.testing.assert_allclose(
        cut.embed_documents(texts), prefix / np.linalg.norm(prefix, axis=1, keepdims=True), atol=1e-5
    )
    with pytest.raises(ConfigError, match="trained to be cut to: 512, 256, 128"):
        load_embedder(load_settings({**env, "MNEMO_EMBEDDING_DIMS": "300"}))


@pytest.mark.skipif(not os.environ.get("MNEMO_TEST_MODELS_DIR"), reason="set MNEMO_TEST_MODELS_DIR")
def test_embeddinggemma_computes_its_float_models_vectors_on_this_cpu(tmp_path: Path) -> None:
    """The build's 7-bit weights sum exactly on every x86-64 CPU (VNNI or not): installed, the
    model is checked against the float model's vectors and passes the floor with room."""
    settings = load_settings(
        {"MNEMO_HOME": str(tmp_path), "MNEMO_MODELS_DIR": os.environ["MNEMO_TEST_MODELS_DIR"]}
    )
    [gemma] = [m for m in installed_models(settings) if m.family == "embeddinggemma"]
    fidelity = verify_model(gemma)
    assert fidelity is not None and fidelity.faithful and len(fidelity.cosines) == 5
    assert fidelity.lowest >= fidelity.floor == 0.98
    fresh = load_settings({"MNEMO_HOME": str(tmp_path / "fresh")})
    info, again = install_model(Path(gemma.location), fresh)
    assert info.id == gemma.id and again == fidelity


def _model_dir(path: Path, *, model_id: str = "tiny-test-model") -> Path:
    path.mkdir(parents=True)
    files = {"model.onnx": b"not really a graph", "tokenizer.json": b"{}"}
    for name, data in files.items():
        (path / name).write_bytes(data)
    manifest = {
        "id": model_id,
        "family": "test",
        "dim": 8,
        "files": {name: hashlib.sha256(data).hexdigest() for name, data in files.items()},
    }
    (path / MANIFEST).write_text(json.dumps(manifest))
    return path


def test_a_changed_model_file_is_refused_by_name(tmp_path: Path) -> None:
    model = _model_dir(tmp_path / "m")
    expected = json.loads((model / MANIFEST).read_text())["files"]
    verify_files(model, expected)  # passes, and is remembered
    (model / "model.onnx").write_bytes(b"tampered with")
    with pytest.raises(ConfigError, match=r"model\.onnx has sha256 .* expected"):
        verify_files(model, expected)
    (model / "model.onnx").unlink()
    with pytest.raises(ConfigError, match=r"model\.onnx is missing"):
        verify_files(model, expected)


def test_installing_a_model_verifies_it_and_leaves_nothing_behind_on_failure(tmp_path: Path) -> None:
    settings = load_settings({"MNEMO_HOME": str(tmp_path / "home")})
    info, fidelity = install_model(_model_dir(tmp_path / "built"), settings)
    assert fidelity is None  # a family with no float reference is not checked
    assert Path(info.location) == Path(settings.models_dir) / "tiny-test-model"
    assert info.id in [m.id for m in installed_models(settings)]
    with pytest.raises(ConfigError, match="already installed"):
        install_model(tmp_path / "built", settings)
    broken = _model_dir(tmp_path / "broken", model_id="broken-model")
    (broken / "tokenizer.json").write_bytes(b"corrupt")
    with pytest.raises(ConfigError, match="tokenizer.json has sha256"):
        install_model(broken, settings)
    assert sorted(p.name for p in Path(settings.models_dir).iterdir()) == ["tiny-test-model"]
    with pytest.raises(ConfigError, match="is not a model directory"):
        install_model(tmp_path, settings)


def _hub_model(contents: dict[str, bytes]) -> HubModel:
    return HubModel(
        id="tiny-hub-model",
        repository="someone/tiny-ONNX",
        revision="0123abcd",
        files=tuple(HubFile(p, len(d), hashlib.sha256(d).hexdigest()) for p, d in contents.items()),
        onnx_file="onnx/model.onnx",
        family="test",
        dim=8,
        query_prefix="q: ",
        document_prefix="d: ",
    )


def test_a_fetched_model_is_verified_against_its_pins_and_installed_whole(
    hub: tuple[str, Path], tmp_path: Path
) -> None:
    url, root = hub
    contents = {
        "onnx/model.onnx": b"graph" * 1000,
        "onnx/model.onnx_data": b"\x01" * 300_000,
        "tokenizer.json": b"{}",
    }
    model = _hub_model(contents)
    publish_to_hub(root, model, contents)
    models_dir = tmp_path / "models"
    seen: list[tuple[str, int, int]] = []
    location, fidelity = fetch_model(model, models_dir, hub_url=url, progress=lambda *a: seen.append(a))
    assert fidelity is None
    assert location == models_dir / "tiny-hub-model"
    for path, data in contents.items():
        assert (location / path).read_bytes() == data
    manifest = json.loads((location / MANIFEST).read_text())
    assert manifest["files"] == {f.path: f.sha256 for f in model.files}
    assert manifest["onnx_file"] == "onnx/model.onnx"
    assert seen[-1] == ("tokenizer.json", 2, 2)
    settings = load_settings({"MNEMO_HOME": str(tmp_path / "h"), "MNEMO_MODELS_DIR": str(models_dir)})
    assert "tiny-hub-model" in [m.id for m in installed_models(settings)]
    with pytest.raises(ConfigError, match="already installed"):
        fetch_model(model, models_dir, hub_url=url)


def test_a_fetched_file_that_differs_from_its_pin_installs_nothing(
    hub: tuple[str, Path], tmp_path: Path
) -> None:
    url, root = hub
    contents = {"onnx/model.onnx": b"graph", "tokenizer.json": b"{}"}
    model = _hub_model(contents)
    publish_to_hub(root, model, {**contents, "tokenizer.json": b"[]"})
    with pytest.raises(ConfigError, match=r"tokenizer\.json does not match its pin"):
        fetch_model(model, tmp_path / "models", hub_url=url)
    assert list((tmp_path / "models").iterdir()) == []
    with pytest.raises(ConfigError, match="HTTP 404"):
        fetch_model(_hub_model({"missing.bin": b"x"}), tmp_path / "models", hub_url=url)
    assert list((tmp_path / "models").iterdir()) == []
