"""Embedding models in processes of their own: the vector kernels and onnxruntime load together,
and ``mnemo models fetch`` refuses files that are not the pinned model."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from mnemo.embed.hub import HUB_MODELS
from tests.helpers import publish_to_hub


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
