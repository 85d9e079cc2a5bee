"""Embedding models in processes of their own: the vector kernels and onnxruntime load together,
and ``mnemo models fetch`` refuses files that are not the pinned model."""

from __future__ import annotations

import os
import subprocess
import sys
from datetime import UTC, datetime
from pathlib import Path

import anyio
import numpy as np
import pytest

from mnemo.api.recall import RecallRequest
from mnemo.client.typed import DaemonClient
from mnemo.config import load_settings
from mnemo.embed import load_embedder
from mnemo.embed.hub import HUB_MODELS
from mnemo.store import open_store
from tests.helpers import GEMMA, HAS_GEMMA, MODELS_DIR, Home, make_memory, publish_to_hub, wait_for_vectors


def test_onnxruntime_and_the_vector_kernels_load_in_either_order() -> None:
    # usearch 2.26.2+ segfaults the process when onnxruntime is imported after it.
    for first, second in (("usearch.index", "onnxruntime"), ("onnxruntime", "usearch.index")):
        done = subprocess.run([sys.executable, "-c", f"import {first}; import {second}"], check=False)
        assert done.returncode == 0, f"importing {first} then {second} crashed ({done.returncode})"


def test_the_cli_fetch_refuses_files_that_are_not_the_pinned_embeddinggemma(
    hub: tuple[str, Path], tmp_path: Path
) -> None:
    url, root = hub
    model = HUB_MODELS["embeddinggemma"]
    publish_to_hub(root, model, {f.path: b"not the model" for f in model.files})
    env = {"MNEMO_HOME": str(tmp_path / "home"), "PATH": os.environ["PATH"]}
    done = subprocess.run(
        [sys.executable, "-m", "mnemo", "models", "fetch", "embeddinggemma", "--hub-url", url, "--quiet"],
        env=env,
        capture_output=True,
        text=True,
        check=False,
    )
    assert done.returncode == 1
    assert "does not match its pin" in done.stderr and "nothing was installed" in done.stderr
    assert not (tmp_path / "home" / "models" / model.id).exists()


@pytest.mark.skipif(
    not HAS_GEMMA, reason="set MNEMO_TEST_MODELS_DIR to a models directory holding EmbeddingGemma"
)
def test_a_daemon_at_512_dimensions_cuts_the_vectors_stored_at_768(home: Home) -> None:
    """A store embedded at 768 dimensions (the default before 512) is not re-embedded: the daemon
    at 512 stores the first 512 dimensions of each vector, re-normalised, and searches them."""
    at = datetime(2026, 11, 3, 9, 30, tzinfo=UTC)
    memories = [
        make_memory(f"m{i:03d}", f"Decision {i}: service {i} runs on port {8000 + i}", at) for i in range(40)
    ]
    whole_model = load_embedder(
        load_settings({"MNEMO_EMBEDDER": GEMMA, "MNEMO_MODELS_DIR": MODELS_DIR, "MNEMO_EMBEDDING_DIMS": "0"})
    )
    assert whole_model is not None and whole_model.dim == 768
    # m017's stored vector is of another text: only the stored vector, cut, can make it the answer.
    texts = [m.what for m in memories]
    texts[17] = "The billing database keeps two replicas in another region."
    whole = whole_model.embed_documents(texts)
    store = open_store(home.settings.store)
    try:
        store.migrate()
        store.put_memories(memories)
        store.put_embeddings(GEMMA, [(m.id, 0) for m in memories], whole)
    finally:
        store.close()
    gemma = home.with_env(MNEMO_EMBEDDER=GEMMA, MNEMO_MODELS_DIR=MODELS_DIR)

    async def run() -> tuple[str, list[str]]:
        async with DaemonClient(gemma.settings) as client:
            await wait_for_vectors(client)
            found = await client.recall(
                RecallRequest(query="how many copies of the billing data do we keep?")
            )
            return (await client.status()).embedder, [hit.memory.id for hit in found.memories]

    embedder, found = anyio.run(run)
    assert embedder == f"{GEMMA}-d512"
    assert found[0] == "m017"
    gemma.mnemo("daemon", "stop")
    store = open_store(home.settings.store)
    try:
        keys, cut = store.embeddings_page(f"{GEMMA}-d512", ("", 0), 100)
    finally:
        store.close()
    assert keys == [(m.id, 0) for m in memories]
    expected = whole[:, :512] / np.linalg.norm(whole[:, :512], axis=1, keepdims=True)
    np.testing.assert_allclose(cut, expected, atol=1e-6)  # the stored vectors, cut: not recomputed
    log = (home.path / "logs" / "daemon.log").read_text()
    assert f"40 vectors of {GEMMA} cut to 512 dimensions" in log
