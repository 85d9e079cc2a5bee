"""Optional: the writer's scenarios against a real model, when MNEMO_TEST_LLM_URL points at one
(e.g. a local llama.cpp server; MNEMO_TEST_LLM_MODEL names the model). Runs
tools/distill_scenarios.py --check: slow, so never in CI."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

from tests.helpers import REPO

URL = os.environ.get("MNEMO_TEST_LLM_URL", "")
TOOL = REPO / "tools" / "distill_scenarios.py"


@pytest.mark.skipif(not URL, reason="set MNEMO_TEST_LLM_URL to an OpenAI-compatible endpoint")
@pytest.mark.timeout(3_600)
def test_the_scenarios_pass_against_a_real_model() -> None:
    model = os.environ.get("MNEMO_TEST_LLM_MODEL", "local")
    done = subprocess.run(
        [sys.executable, str(TOOL), "--llm-url", URL, "--model", model, "--check"],
        capture_output=True,
        text=True,
        timeout=3_500,
        check=False,
    )
    assert done.returncode == 0, done.stdout[-4_000:] + done.stderr[-2_000:]
